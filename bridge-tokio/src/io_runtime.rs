//! `IoRuntime`, the process's shared multi-thread runtime for I/O, and `spawn_io`.

use bridge_core::Task;
use std::fmt;
use std::future::Future;
use std::sync::{Arc, OnceLock};
use tokio::runtime::{Handle, Runtime, RuntimeFlavor};

/// A multi-thread tokio runtime that drives I/O for synchronous callers: a future given to
/// [`spawn`](Self::spawn) always runs *here*, whatever the calling context.
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
/// let io = bridge::rt::IoRuntime::new(2).unwrap();
/// let n = io
///     .spawn(async {
///         tokio::time::sleep(std::time::Duration::from_millis(1)).await;
///         7
///     })
///     .wait();
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
    /// let io = bridge::rt::IoRuntime::new(1).unwrap();
    /// assert_eq!(io.spawn(async { 1 }).wait(), 1);
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
    /// main runtime, say). Its tasks are lost once it shuts down.
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
    /// let io = bridge::rt::IoRuntime::from_handle(rt.handle().clone());
    /// assert_eq!(io.spawn(async { 2 }).wait(), 2);
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
    /// let io = bridge::rt::IoRuntime::global();
    /// assert_eq!(io.spawn(async { 3 }).wait(), 3);
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
    /// let io = bridge::rt::IoRuntime::new(1).unwrap();
    /// let task = io.handle().spawn(async { 4 });
    /// assert_eq!(io.spawn(task).wait().unwrap(), 4);
    /// ```
    pub fn handle(&self) -> &Handle {
        &self.handle
    }

    /// Enters this runtime on the calling thread until the guard is dropped, as tokio's
    /// `Runtime::enter` does, for a poll made on a thread of a CPU pool: tokio's timers and
    /// sockets made meanwhile belong to this runtime, and a `run_blocking` nested meanwhile
    /// on a thread that no runtime had entered runs its future here, where a waiter runs the
    /// CPU work it waits for, instead of handing it to a thread of the bridge.
    /// `bridge::cpu::spawn_future` enters the shared runtime this way around every poll.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let io = bridge::rt::IoRuntime::global();
    /// let _entered = io.enter();
    /// // A timer needs a runtime entered to be made; this one's workers drive it.
    /// let nap = tokio::time::sleep(Duration::from_millis(1));
    /// bridge::block_on(nap);
    /// ```
    #[must_use = "the runtime is entered until the guard is dropped"]
    pub fn enter(&self) -> impl Sized + '_ {
        crate::in_place::enter_cpu_poll(&self.handle)
    }

    /// Runs `future` as a task of this runtime and returns the handle on it, from any
    /// context: [`spawn_io`](crate::spawn_io) on this runtime instead of the shared one. See
    /// [`Task`] for the ways to take the output; dropping the task aborts the future.
    ///
    /// If this runtime has shut down (or shuts down before the future finishes), the future
    /// is dropped and the task reports a lost [`Error`](bridge_core::Error). The `Task` does
    /// not keep the runtime alive: keep an `IoRuntime` (a clone is cheap) for as long as its tasks should
    /// run.
    ///
    /// # Examples
    ///
    /// ```
    /// let io = bridge::rt::IoRuntime::new(1).unwrap();
    /// let task = io.spawn(async {
    ///     tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    ///     8
    /// });
    /// assert_eq!(task.wait(), 8);
    /// ```
    #[track_caller]
    pub fn spawn<F>(&self, future: F) -> Task<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        crate::io_task::spawn_on(&self.handle, future, std::panic::Location::caller())
    }
}

/// Runs `future` as a task of the shared I/O runtime ([`IoRuntime::global`]) and returns
/// the handle on it, from any context: a plain thread, a rayon job, a task or `block_on`
/// body of either tokio flavour, a `LocalSet`, a `spawn_blocking` thread, a thread-local
/// destructor.
///
/// The future runs on the I/O runtime's workers, whatever the caller's context: the caller
/// goes on at once, and takes the output when it wants it, in the convention that suits it
/// (`.await`, a blocking `wait`, a sync `try_get`; see [`Task`]). A panic of the future is caught on the runtime and comes back to whoever
/// takes the output. Dropping the [`Task`] cancels the future; `detach` lets it run.
///
/// With the feature `tracing`, the span current here is current in every poll of the future
/// and at its drop.
///
/// # Panics
///
/// If the shared I/O runtime cannot be built on first use (its threads cannot be started),
/// as [`IoRuntime::global`] does. The future's own panic does not escape here: it goes to
/// the [`Task`].
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// // From synchronous code: the future runs on the I/O runtime, this thread waits.
/// let n = bridge::spawn_io(async {
///     tokio::time::sleep(Duration::from_millis(1)).await;
///     6 * 7
/// })
/// .wait();
/// assert_eq!(n, 42);
///
/// // From a current-thread runtime: awaited there, run on the I/O runtime's workers.
/// let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
/// assert_eq!(rt.block_on(bridge::spawn_io(async { 7 })), 7);
/// ```
#[track_caller]
pub fn spawn_io<F>(future: F) -> Task<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    IoRuntime::global().spawn(future)
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
