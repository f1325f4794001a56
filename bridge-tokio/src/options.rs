//! `RunBlocking`: `run_blocking` with choices: how to drive a future when there is no
//! runtime, which I/O runtime to use, and a time limit.

use crate::route::{Ambient, ambient};
use crate::shutdown::classify;
use crate::{BridgeError, IoRuntime, Route};
use std::cell::RefCell;
use std::future::Future;
use std::panic::{self, AssertUnwindSafe};
use std::time::{Duration, Instant};

/// How a call with no ambient runtime (a plain thread, a rayon worker) drives its future.
///
/// | strategy | a ready future costs | loopback TCP round trips | tasks the future spawns |
/// | --- | --- | --- | --- |
/// | [`Drive`](Self::Drive) (default) | one poll with a driver's handle entered | this thread waits in the reactor itself, as with a runtime of its own | run on the driver: by later calls and, between calls, by its backstop thread |
/// | [`Shared`](Self::Shared) | one poll with the I/O runtime's handle entered | each I/O event a wake-up across threads | run on the I/O runtime's workers, between calls too |
/// | [`RuntimePerThread`](Self::RuntimePerThread) | one poll inside this thread's runtime's `block_on` | the quickest: this thread polls its own driver | run only while a later call on this thread drives the runtime: stranded in between |
/// | [`RuntimePerCall`](Self::RuntimePerCall) | a runtime built and dropped, its I/O and timer drivers with it | as `Shared` or slower: the driver is built for each call | killed when the call ends |
///
/// `Drive` shares a few current-thread runtimes, one per CPU (the drivers), between every
/// call with no runtime in the process: a call polls its future on its own thread and, while
/// it waits, drives its driver's reactor, timers and tasks for every call on that driver. A
/// driver nobody drives for a short while (a grace derived from what a wake-up costs on the
/// machine, at most 5 ms) is driven by its backstop thread, so the tasks the calls spawned
/// keep running between calls. With `Shared` every I/O event is a wake-up across threads,
/// since the I/O runtime's workers own the reactor. The
/// [`run`](https://github.com/bridge-rs/bridge/blob/main/docs/studies/run.md) and
/// [`no-runtime`](https://github.com/bridge-rs/bridge/blob/main/docs/studies/no-runtime.md)
/// studies have the numbers of one machine; rerun them on yours.
///
/// `Drive` and `Shared` are safe for clients that keep background tasks (connection pools of
/// HTTP and object-store clients), made in one call and used in others, from any thread:
/// with the other two, a pooled connection whose driver task lives on a runtime nobody
/// drives hangs (per thread) or fails (per call) on reuse. Pick `Shared` where the spawned
/// tasks need the I/O runtime's workers (CPU-heavy tasks that would delay the other calls on
/// a driver), and the last two only for futures that spawn nothing, where the saving,
/// measured on your machine, matters. With [`RunBlocking::io`], a call with no runtime uses
/// that I/O runtime as `Shared` does, whichever strategy is set.
///
/// # Examples
///
/// ```
/// use bridge::rt::{InlineStrategy, RunBlocking};
///
/// // A self-contained future: no background tasks, so a runtime per thread is safe.
/// let n = RunBlocking::new()
///     .inline(InlineStrategy::RuntimePerThread)
///     .run(async { tokio::task::yield_now().await; 3 });
/// assert_eq!(n, 3);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum InlineStrategy {
    /// Poll the future on this thread and, while it waits, drive one of the drivers (shared
    /// current-thread runtimes, one per CPU) with this thread.
    #[default]
    Drive,
    /// Poll the future on this thread with the I/O runtime's handle; the runtime's workers
    /// drive I/O, timers and spawned tasks.
    Shared,
    /// Drive the future with a current-thread runtime kept for this thread.
    RuntimePerThread,
    /// Drive the future with a current-thread runtime built for this call, then dropped.
    RuntimePerCall,
}

/// [`run_blocking`](crate::run_blocking) with options.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// let io = bridge::IoRuntime::new(1).unwrap();
/// let n = bridge::rt::RunBlocking::new()
///     .io(&io)
///     .timeout(Duration::from_secs(30))
///     .try_run(async { 5 })
///     .unwrap();
/// assert_eq!(n, 5);
/// ```
#[derive(Debug, Clone, Default)]
#[must_use = "a RunBlocking does nothing until .run() or .try_run()"]
pub struct RunBlocking<'a> {
    inline: InlineStrategy,
    io: Option<&'a IoRuntime>,
    deadline: Option<Instant>,
}

impl<'a> RunBlocking<'a> {
    /// The defaults: [`InlineStrategy::Drive`], [`IoRuntime::global`], no time limit.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(bridge::rt::RunBlocking::new().run(async { 1 }), 1);
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// How to drive the future when the caller has no runtime.
    ///
    /// # Examples
    ///
    /// ```
    /// use bridge::rt::{InlineStrategy, RunBlocking};
    ///
    /// let n = RunBlocking::new().inline(InlineStrategy::RuntimePerCall).run(async { 2 });
    /// assert_eq!(n, 2);
    /// ```
    pub fn inline(mut self, strategy: InlineStrategy) -> Self {
        self.inline = strategy;
        self
    }

    /// The I/O runtime for calls with no runtime or that must hand off from a current-thread
    /// runtime (instead of [`IoRuntime::global`]).
    ///
    /// # Examples
    ///
    /// ```
    /// let io = bridge::IoRuntime::new(1).unwrap();
    /// assert_eq!(bridge::rt::RunBlocking::new().io(&io).run(async { 3 }), 3);
    /// ```
    pub fn io(mut self, io: &'a IoRuntime) -> Self {
        self.io = Some(io);
        self
    }

    /// Cancels the future and returns [`BridgeError::TimedOut`] if it has not finished by
    /// then, as [`try_run_blocking_timeout`](crate::try_run_blocking_timeout) does.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let slow = async { tokio::time::sleep(Duration::from_secs(60)).await };
    /// let err = bridge::rt::RunBlocking::new()
    ///     .timeout(Duration::from_millis(5))
    ///     .try_run(slow)
    ///     .unwrap_err();
    /// assert!(matches!(err, bridge::BridgeError::TimedOut(_)));
    /// ```
    ///
    /// A timeout so long that the deadline cannot be represented (`Duration::MAX`, say) means
    /// no limit: the call then runs as if no timeout had been given, as
    /// [`try_run_blocking_timeout`](crate::try_run_blocking_timeout) and
    /// [`IoRuntime::try_run_blocking_timeout`] do.
    pub fn timeout(self, timeout: Duration) -> Self {
        match Instant::now().checked_add(timeout) {
            Some(deadline) => self.deadline(deadline),
            None => self,
        }
    }

    /// As [`timeout`](Self::timeout), with an instant.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// let deadline = Instant::now() + Duration::from_secs(30);
    /// let n = bridge::rt::RunBlocking::new().deadline(deadline).run(async { 4 });
    /// assert_eq!(n, 4);
    /// ```
    pub fn deadline(mut self, deadline: Instant) -> Self {
        self.deadline = Some(deadline);
        self
    }

    /// Runs `future` to completion and returns its output.
    ///
    /// # Panics
    ///
    /// Resumes the future's panic; panics if the runtime shut down first or the time limit
    /// passed ([`try_run`](Self::try_run) returns those as errors).
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(bridge::rt::RunBlocking::new().run(async { 6 }), 6);
    /// ```
    #[track_caller]
    pub fn run<F>(self, future: F) -> F::Output
    where
        F: Future + Send,
        F::Output: Send,
    {
        crate::run::unwrap(self.try_run(future))
    }

    /// Runs `future` to completion, with typed errors.
    ///
    /// # Errors
    ///
    /// [`BridgeError::Panicked`], [`BridgeError::Lost`], [`BridgeError::TimedOut`].
    ///
    /// # Examples
    ///
    /// ```
    /// let err = bridge::rt::RunBlocking::new().try_run(async { panic!("x") }).unwrap_err();
    /// assert!(matches!(err, bridge::BridgeError::Panicked(_)));
    /// ```
    pub fn try_run<F>(self, future: F) -> Result<F::Output, BridgeError>
    where
        F: Future + Send,
        F::Output: Send,
    {
        match (ambient(), self.inline, self.deadline) {
            (Ambient::None, InlineStrategy::RuntimePerCall, None) => {
                crate::metrics::call(Route::Inline);
                per_call(future)
            }
            // A thread-local destructor after this thread's runtime is gone takes the
            // default route instead.
            (Ambient::None, InlineStrategy::RuntimePerThread, None) if per_thread_alive() => {
                crate::metrics::call(Route::Inline);
                per_thread(future)
            }
            (ambient, _, deadline) => {
                crate::run::dispatch_with(self.io, self.inline, ambient, future, deadline)
            }
        }
    }
}

fn per_call<F: Future>(future: F) -> Result<F::Output, BridgeError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(crate::trace::unavailable)?;
    panic::catch_unwind(AssertUnwindSafe(|| runtime.block_on(future))).map_err(classify)
}

thread_local! {
    /// This thread's runtime for `InlineStrategy::RuntimePerThread`.
    static RUNTIME: RefCell<Option<tokio::runtime::Runtime>> = const { RefCell::new(None) };
}

/// Whether this thread's runtime slot is still there (it is not during thread exit).
fn per_thread_alive() -> bool {
    RUNTIME.try_with(|_| ()).is_ok()
}

fn per_thread<F: Future>(future: F) -> Result<F::Output, BridgeError> {
    RUNTIME.with(|cell| {
        // A nested call finds a runtime entered and never reaches here, so the cell is
        // never borrowed twice.
        let mut slot = cell.borrow_mut();
        let runtime = match &mut *slot {
            Some(runtime) => runtime,
            empty => empty.insert(
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(crate::trace::unavailable)?,
            ),
        };
        panic::catch_unwind(AssertUnwindSafe(|| runtime.block_on(future))).map_err(classify)
    })
}
