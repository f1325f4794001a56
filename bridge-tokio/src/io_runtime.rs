//! `IoRuntime`: the process's shared multi-thread runtime for I/O.

use crate::route::ambient;
use crate::run::Plan;
use crate::{BridgeError, IoTask};
use std::fmt;
use std::future::Future;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};
use tokio::runtime::{Handle, Runtime, RuntimeFlavor};

/// A multi-thread tokio runtime that drives I/O for synchronous callers, and the narrower
/// contract on top of it: [`run_blocking`](Self::run_blocking) always drives the future
/// *here*, whatever the calling context, using `block_in_place` only where that context needs
/// it.
///
/// Futures whose resources (sockets, connection pools, background tasks of clients) belong to
/// this runtime should be run through it: its workers keep driving those resources between
/// calls, from whichever threads the calls come.
///
/// [`IoRuntime::global`] is the one that [`run_blocking`](crate::run_blocking) uses when the
/// caller has no runtime or cannot be blocked in place. Cloning is cheap and shares the
/// runtime.
///
/// # Examples
///
/// ```
/// let io = bridge::IoRuntime::new(2).unwrap();
/// let n = io.run_blocking(async {
///     tokio::time::sleep(std::time::Duration::from_millis(1)).await;
///     7
/// });
/// assert_eq!(n, 7);
/// ```
#[derive(Clone)]
pub struct IoRuntime {
    handle: Handle,
    /// Keeps an owned runtime alive; `None` when wrapping somebody else's handle.
    _owned: Option<Arc<Owned>>,
}

impl IoRuntime {
    /// Builds a multi-thread runtime with `worker_threads` workers, I/O and timers enabled,
    /// threads named `bridge-io`.
    ///
    /// # Errors
    ///
    /// What tokio's `Builder::build` returns (the threads could not be started).
    ///
    /// # Panics
    ///
    /// If `worker_threads` is 0, as tokio's builder does.
    ///
    /// # Examples
    ///
    /// ```
    /// let io = bridge::IoRuntime::new(1).unwrap();
    /// assert_eq!(io.run_blocking(async { 1 }), 1);
    /// ```
    #[track_caller]
    pub fn new(worker_threads: usize) -> std::io::Result<Self> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(worker_threads)
            .thread_name("bridge-io")
            .enable_all()
            .build()?;
        Ok(Self {
            handle: runtime.handle().clone(),
            _owned: Some(Arc::new(Owned(Some(runtime)))),
        })
    }

    /// Wraps the handle of a multi-thread runtime that somebody else owns (an application's
    /// main runtime, say). Calls fail with [`BridgeError::Lost`] once it shuts down.
    ///
    /// # Panics
    ///
    /// If `handle` is not a multi-thread runtime's: a current-thread runtime drives its I/O
    /// only while its owner is inside `block_on`, so calls from other threads could hang.
    ///
    /// # Examples
    ///
    /// ```
    /// let rt = tokio::runtime::Runtime::new().unwrap();
    /// let io = bridge::IoRuntime::from_handle(rt.handle().clone());
    /// assert_eq!(io.run_blocking(async { 2 }), 2);
    /// ```
    #[track_caller]
    pub fn from_handle(handle: Handle) -> Self {
        assert!(
            matches!(handle.runtime_flavor(), RuntimeFlavor::MultiThread),
            "IoRuntime::from_handle needs a multi-thread runtime's handle: a \
             current-thread runtime drives its I/O only inside its own block_on"
        );
        Self {
            handle,
            _owned: None,
        }
    }

    /// The process's shared I/O runtime, built on first use: a multi-thread runtime with one
    /// worker per available core, I/O and timers enabled, threads named `bridge-io`. It lives
    /// until the process ends.
    ///
    /// # Panics
    ///
    /// If the runtime cannot be built on first use (its threads cannot be started).
    ///
    /// # Examples
    ///
    /// ```
    /// let io = bridge::IoRuntime::global();
    /// assert_eq!(io.run_blocking(async { 3 }), 3);
    /// ```
    pub fn global() -> &'static IoRuntime {
        static GLOBAL: OnceLock<IoRuntime> = OnceLock::new();
        GLOBAL.get_or_init(|| {
            let workers = std::thread::available_parallelism().map_or(1, usize::from);
            IoRuntime::new(workers).expect("bridge_tokio: cannot start the shared I/O runtime")
        })
    }

    /// The runtime's handle, to spawn on it or to build clients on it.
    ///
    /// # Examples
    ///
    /// ```
    /// let io = bridge::IoRuntime::new(1).unwrap();
    /// let task = io.handle().spawn(async { 4 });
    /// assert_eq!(io.run_blocking(task).unwrap(), 4);
    /// ```
    pub fn handle(&self) -> &Handle {
        &self.handle
    }

    /// Runs `future` as a task of this runtime and returns the handle on it, from any
    /// context: [`spawn_io`](crate::spawn_io) on this runtime instead of the shared one. See
    /// [`IoTask`] for the ways to take the output, where a wait blocks, and cancellation
    /// (dropping the `IoTask` aborts the task).
    ///
    /// If this runtime has shut down (or shuts down before the future finishes), the future
    /// is dropped and the task reports [`BridgeError::Lost`]. The `IoTask` does not keep the
    /// runtime alive: keep an `IoRuntime` (a clone is cheap) for as long as its tasks should
    /// run.
    ///
    /// # Examples
    ///
    /// ```
    /// let io = bridge::IoRuntime::new(1).unwrap();
    /// let task = io.spawn(async {
    ///     tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    ///     8
    /// });
    /// assert_eq!(task.wait(), 8);
    /// ```
    pub fn spawn<F>(&self, future: F) -> IoTask<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        crate::io_task::spawn_on(&self.handle, future)
    }

    /// Runs `future` to completion on this runtime and returns its output; callable from any
    /// synchronous context (a plain thread, a rayon worker, a task of any runtime, a
    /// `LocalSet`).
    ///
    /// The future is polled on this thread with this runtime's handle entered (a worker of
    /// another multi-thread runtime first leaves its scheduler, if the future is not ready at
    /// once); where this thread must not block while the future runs (a current-thread
    /// runtime), it runs on a handoff worker with this runtime's handle while this thread
    /// waits. The future may borrow from the caller, as with
    /// [`run_blocking`](crate::run_blocking).
    ///
    /// # Panics
    ///
    /// Resumes the future's panic. Panics if this runtime shuts down before the future
    /// finishes.
    ///
    /// # Examples
    ///
    /// ```
    /// let io = bridge::IoRuntime::new(1).unwrap();
    /// let current = tokio::runtime::Builder::new_current_thread().build().unwrap();
    /// // From inside a current-thread runtime, where Handle::block_on would panic.
    /// let n = current.block_on(async { io.run_blocking(async { 5 }) });
    /// assert_eq!(n, 5);
    /// ```
    #[track_caller]
    pub fn run_blocking<F>(&self, future: F) -> F::Output
    where
        F: Future + Send,
        F::Output: Send,
    {
        crate::run::unwrap(self.try_run_blocking(future))
    }

    /// [`run_blocking`](Self::run_blocking) with typed errors instead of panics.
    ///
    /// # Errors
    ///
    /// [`BridgeError::Panicked`] with the payload; [`BridgeError::Lost`] if this runtime
    /// shut down first.
    ///
    /// # Examples
    ///
    /// ```
    /// let io = bridge::IoRuntime::new(1).unwrap();
    /// assert!(io.try_run_blocking(async { panic!("no") }).is_err());
    /// ```
    pub fn try_run_blocking<F>(&self, future: F) -> Result<F::Output, BridgeError>
    where
        F: Future + Send,
        F::Output: Send,
    {
        self.drive(future, None)
    }

    /// [`try_run_blocking`](Self::try_run_blocking) with a time limit; the future is
    /// cancelled when it passes. A limit so long that the deadline cannot be represented
    /// (`Duration::MAX`, say) means no limit, as for
    /// [`try_run_blocking_timeout`](crate::try_run_blocking_timeout).
    ///
    /// # Errors
    ///
    /// As [`try_run_blocking`](Self::try_run_blocking), and [`BridgeError::TimedOut`].
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let io = bridge::IoRuntime::new(1).unwrap();
    /// let slow = async { tokio::time::sleep(Duration::from_secs(60)).await };
    /// let err = io.try_run_blocking_timeout(slow, Duration::from_millis(5)).unwrap_err();
    /// assert!(matches!(err, bridge::BridgeError::TimedOut(_)));
    /// ```
    pub fn try_run_blocking_timeout<F>(
        &self,
        future: F,
        timeout: Duration,
    ) -> Result<F::Output, BridgeError>
    where
        F: Future + Send,
        F::Output: Send,
    {
        self.drive(future, Instant::now().checked_add(timeout))
    }

    /// Drives `future` on this runtime from whatever context calls.
    pub(crate) fn drive<F>(
        &self,
        future: F,
        deadline: Option<Instant>,
    ) -> Result<F::Output, BridgeError>
    where
        F: Future + Send,
        F::Output: Send,
    {
        Plan::on(ambient(), self).run(future, deadline)
    }
}

impl fmt::Debug for IoRuntime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IoRuntime")
            .field("owned", &self._owned.is_some())
            .finish_non_exhaustive()
    }
}

/// An owned runtime, shut down without blocking when it is dropped in an async context
/// (where tokio would panic on a blocking shutdown).
struct Owned(Option<Runtime>);

impl Drop for Owned {
    fn drop(&mut self) {
        if let Some(runtime) = self.0.take() {
            if Handle::try_current().is_ok() {
                runtime.shutdown_background();
            } else {
                drop(runtime);
            }
        }
    }
}
