//! `run_blocking` and its typed and `!Send` forms: pick the route, run the future there.

use crate::route::{Ambient, ambient};
use crate::{BridgeError, IoRuntime, handoff, probe, shutdown};
use std::future::Future;
use std::panic::{self, AssertUnwindSafe};
use std::time::{Duration, Instant};

/// Runs `future` to completion from synchronous code, wherever this is called: a plain
/// thread, a rayon worker, a task or `block_on` body of any tokio runtime, a `spawn_blocking`
/// thread, a `LocalSet`, or inside another `run_blocking`.
///
/// The route (see [`Route`](crate::Route) and [`route`](crate::route)):
///
/// - on a **multi-thread runtime** the thread leaves the scheduler (`block_in_place`) and
///   polls the future here with that runtime's handle, so its I/O stays where it lives;
/// - on a **current-thread runtime** or in a **`LocalSet`**, which must not be blocked in
///   place, the future runs as a task of a multi-thread runtime (the ambient one under a
///   `LocalSet` on a multi-thread runtime, else [`IoRuntime::global`]) while this thread
///   blocks on a oneshot;
/// - with **no runtime**, the future is polled on this thread and [`IoRuntime::global`]'s
///   workers drive its I/O and timers, so that background tasks that clients spawn (pooled
///   connections) live on a runtime that is always driven.
///
/// A future that needs resources bound to the calling current-thread runtime (a socket
/// created on it) cannot finish while that runtime is blocked by this call: use
/// [`try_run_blocking_timeout`] to bound such a wait, or await the future instead.
///
/// Background tasks that the future spawns (the connection drivers of a pooled HTTP or
/// object-store client) live on the runtime that drives it: on the `BlockInPlace` route the
/// caller's own runtime, which must then outlive the connections that other threads reuse.
/// For a client shared beyond one runtime's life, drive its calls with
/// [`IoRuntime::run_blocking`], which always uses the I/O runtime.
///
/// # Panics
///
/// Resumes the future's panic in the caller. Panics if the runtime running the future shuts
/// down before it finishes (see [`BridgeError::RuntimeGone`]); [`try_run_blocking`] returns
/// both as errors instead.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// // Synchronous code, no runtime in sight:
/// let n = bridge_tokio::run_blocking(async {
///     tokio::time::sleep(Duration::from_millis(1)).await;
///     6 * 7
/// });
/// assert_eq!(n, 42);
///
/// // The same call inside a current-thread runtime, where tokio's own block_on would panic:
/// let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
/// assert_eq!(rt.block_on(async { bridge_tokio::run_blocking(async { 1 }) }), 1);
/// ```
#[track_caller]
pub fn run_blocking<F>(future: F) -> F::Output
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    unwrap(try_run_blocking(future))
}

/// [`run_blocking`] with typed errors instead of panics.
///
/// # Errors
///
/// [`BridgeError::Panicked`] with the payload if the future panicked;
/// [`BridgeError::RuntimeGone`] if the runtime running it shut down first.
///
/// # Examples
///
/// ```
/// let err = bridge_tokio::try_run_blocking(async { panic!("corrupt header") }).unwrap_err();
/// assert_eq!(err.to_string(), "the future panicked: corrupt header");
/// ```
pub fn try_run_blocking<F>(future: F) -> Result<F::Output, BridgeError>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    dispatch(future, None)
}

/// [`try_run_blocking`] with a time limit: when it passes, the future is cancelled and the
/// call returns [`BridgeError::TimedOut`].
///
/// With a limit the future always runs as a task (of the ambient multi-thread runtime, or of
/// [`IoRuntime::global`]), so that it can be cancelled while this thread waits.
///
/// # Errors
///
/// As [`try_run_blocking`], and [`BridgeError::TimedOut`].
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// let slow = async { tokio::time::sleep(Duration::from_secs(60)).await };
/// let err = bridge_tokio::try_run_blocking_timeout(slow, Duration::from_millis(5)).unwrap_err();
/// assert!(matches!(err, bridge_tokio::BridgeError::TimedOut));
/// ```
pub fn try_run_blocking_timeout<F>(future: F, timeout: Duration) -> Result<F::Output, BridgeError>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    dispatch(future, Instant::now().checked_add(timeout))
}

/// Runs a `!Send` future to completion on this thread, where that is possible: with no
/// runtime (polled here, I/O driven by [`IoRuntime::global`]) and on a multi-thread runtime
/// (inside `block_in_place`, with the ambient handle).
///
/// # Errors
///
/// [`BridgeError::NotSendOnHandoff`] on a current-thread runtime or in a `LocalSet`, where
/// only a handoff to another thread could run it; [`BridgeError::Panicked`] with the payload
/// if the future panicked.
///
/// # Examples
///
/// ```
/// use std::rc::Rc;
///
/// let shared = Rc::new(5);
/// let n = bridge_tokio::run_blocking_local(async move { *shared + 1 }).unwrap();
/// assert_eq!(n, 6);
///
/// let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
/// let err = rt.block_on(async { bridge_tokio::run_blocking_local(async { Rc::new(1) }) });
/// assert!(matches!(err, Err(bridge_tokio::BridgeError::NotSendOnHandoff)));
/// ```
pub fn run_blocking_local<F: Future>(future: F) -> Result<F::Output, BridgeError> {
    match ambient() {
        Ambient::None => IoRuntime::global().block_on_here(future),
        Ambient::Worker(handle) | Ambient::MultiThread(handle) => {
            let attempt = probe::try_block_in_place(move || {
                panic::catch_unwind(AssertUnwindSafe(|| handle.block_on(future)))
                    .map_err(BridgeError::Panicked)
            });
            attempt.unwrap_or(Err(BridgeError::NotSendOnHandoff))
        }
        Ambient::CurrentThread | Ambient::Local(_) | Ambient::Exiting => {
            Err(BridgeError::NotSendOnHandoff)
        }
    }
}

fn dispatch<F>(future: F, deadline: Option<Instant>) -> Result<F::Output, BridgeError>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    dispatch_with(None, future, deadline)
}

/// Runs `future` by the route of this context; `io` (default [`IoRuntime::global`], only
/// built when needed) serves the calls that have no multi-thread runtime of their own.
pub(crate) fn dispatch_with<F>(
    io: Option<&IoRuntime>,
    future: F,
    deadline: Option<Instant>,
) -> Result<F::Output, BridgeError>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let io = || io.unwrap_or_else(|| IoRuntime::global());
    let ambient = ambient();
    match &ambient {
        Ambient::None => io().drive(future, deadline),
        // The hot path: a worker thread, where block_in_place is always allowed. It checks
        // for a shutdown only once the future is about to wait (it can no longer move
        // elsewhere then, so it ends with RuntimeGone).
        Ambient::Worker(handle) => tokio::task::block_in_place(|| match deadline {
            Some(_) => handoff::run(handle, future, deadline),
            None => panic::catch_unwind(AssertUnwindSafe(|| {
                handle.block_on(shutdown::unless_shutting_down(handle, future))
            }))
            .unwrap_or_else(|payload| Err(BridgeError::Panicked(payload))),
        }),
        Ambient::MultiThread(handle) => {
            let mut slot = Some(future);
            let attempt = probe::try_block_in_place(|| {
                let future = slot.take().expect("taken once");
                match deadline {
                    Some(_) => handoff::run(handle, future, deadline),
                    // A block_on body, a spawn_blocking thread, a stale guard of a runtime
                    // that shut down: a dead runtime is found before the first poll, and the
                    // future runs with the I/O runtime instead.
                    None if shutdown::cannot_run(handle) => io().block_on_here(future),
                    None => panic::catch_unwind(AssertUnwindSafe(|| handle.block_on(future)))
                        .map_err(BridgeError::Panicked),
                }
            });
            match attempt {
                Ok(result) => result,
                // A LocalSet on a multi-thread runtime: hand off to that runtime's workers.
                Err(()) => {
                    let future = slot.take().expect("not taken by a refused attempt");
                    handoff::run(handle, future, deadline)
                }
            }
        }
        Ambient::Local(Some(handle)) => handoff::run(handle, future, deadline),
        Ambient::Local(None) | Ambient::CurrentThread | Ambient::Exiting => {
            handoff::run(io().handle(), future, deadline)
        }
    }
}

#[track_caller]
pub(crate) fn unwrap<T>(result: Result<T, BridgeError>) -> T {
    match result {
        Ok(output) => output,
        Err(BridgeError::Panicked(payload)) => panic::resume_unwind(payload),
        Err(other) => panic!("bridge_tokio::run_blocking: {other}"),
    }
}
