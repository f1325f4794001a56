//! `run_blocking` and its typed forms: the one place that decides a call's route from the
//! calling thread's context ([`Ambient`], see `context.rs`), and runs the future there.

use crate::context::{Plan, plan};
use crate::io_runtime::IoRuntime;
use crate::{handoff, in_place};
use bridge_core::Error;
use std::future::Future;
use std::panic;
use std::time::{Duration, Instant};
use tokio::runtime::Handle;

/// Runs `future` to completion from synchronous code, wherever this is called: a plain
/// thread, a rayon worker, a task or `block_on` body of any tokio runtime, a `spawn_blocking`
/// thread, a `LocalSet`, or inside another `run_blocking`.
///
/// The route:
///
/// - in a **multi-thread runtime's task** the future is polled here with that runtime's
///   handle, so its I/O stays where it lives; the worker polls it once first and leaves the
///   scheduler (`block_in_place`) only if it is not ready;
/// - on a multi-thread runtime's **other threads** (the `block_on` body, as in
///   `#[tokio::main]`, a `LocalSet` there, a `spawn_blocking` thread) the future runs on a
///   handoff worker with that runtime's handle while this thread blocks on a oneshot;
/// - on a **current-thread runtime** (its body, a task, a `LocalSet`, a `spawn_blocking`
///   thread), which must not be blocked while the future needs it, the future runs on a
///   handoff worker with the shared I/O runtime's handle while this thread blocks on a
///   oneshot;
/// - with **no runtime** (a plain thread, a rayon worker), the future is polled on this
///   thread with the shared [`IoRuntime`]'s handle entered, as tokio's `Handle::block_on`
///   does: that runtime's workers drive its I/O and timers, and tasks it spawns (a pooled
///   client's connections) live there, so they keep running between calls and serve every
///   thread; a multi-thread runtime that is shutting down (a value dropped by its shutdown
///   calls from its worker) is treated as no runtime.
///
/// With the feature `tracing`, the span current here is current in every poll of the future,
/// wherever it runs (see the crate docs' [Tracing](crate#tracing) section).
///
/// The future may borrow from the caller (a client, a buffer, a `&str`), as a closure given
/// to `std::thread::scope` may: the call does not return, nor unwind, before the future has
/// been dropped, on every route and every path (finished, panicked, timed out, its runtime
/// gone, its handoff worker unable to start). A handoff worker that never gave the future
/// back would make the call wait forever; nothing is freed under the future.
///
/// The future runs as if on a thread of its own, as under tokio's own `Runtime::block_on`
/// on a fresh runtime: none of its polls spends the cooperative budget of a task that the
/// call sits in (one call may do thousands of tokio operations, one task poll may make
/// hundreds of calls), and sync code in it may start a runtime of its own, except in the
/// first poll on a worker, which runs with the worker's runtime entered (see *Panics*).
///
/// Every route polls with a wake flag of its own, so the call may sit in one branch of a
/// `join!` or `select!` whose other branches wait on timers, nested to any depth; it works
/// in a `Drop` while a panic unwinds and in a thread-local destructor at thread exit, and it
/// installs no panic hook and raises no panic of its own on the way.
///
/// A future that needs the calling current-thread runtime (a task spawned on it, such as a
/// mock server in a `#[tokio::test]`, or a socket created on it) cannot finish while this
/// call blocks that runtime's thread. Such a call is not silent: once it has waited the
/// stall warning (`bridge::configure().stall_warning`, 5 s by default) it logs a warning
/// (feature `tracing`) and counts in
/// [`IoMetrics::stalled_handoffs`](crate::IoMetrics::stalled_handoffs), and a deadline that
/// passes gives a timeout [`Error`] whose message names the cause. Await the future there instead, run
/// the server on another runtime (in a test, `#[tokio::test(flavor = "multi_thread")]`), or
/// bound the wait with [`try_run_blocking_timeout`].
///
/// Background tasks that the future spawns (the connection drivers of a pooled HTTP or
/// object-store client) live on the runtime that drives it: on the `OnWorker` route the
/// caller's own runtime, which must then outlive the connections that other threads reuse;
/// with no runtime, the shared I/O runtime.
/// For a client shared beyond one runtime's life, run its calls with
/// [`spawn_io`](crate::spawn_io)`(fut).wait()`, which always uses the I/O runtime.
///
/// # Panics
///
/// Resumes the future's panic in the caller. Panics with the error's message if the runtime
/// running the future shuts down before it finishes ([`Error::is_lost`]) or a handoff
/// worker cannot be started; [`try_run_blocking`] returns all of them as errors instead.
///
/// In a multi-thread runtime's task, sync code in the future that starts a runtime of its
/// own (`Runtime::block_on`) before the future's first `.await` panics with tokio's "Cannot
/// start a runtime from within a runtime", as it would in the task itself: that first poll
/// happens before the worker leaves the scheduler, which costs a hand-over of the worker's
/// core to another thread. Call `tokio::task::block_in_place(|| run_blocking(future))`
/// there, and the whole call runs outside the runtime.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// // A future that borrows from the caller: no clones, no 'static.
/// let names = vec!["a".to_string(), "bc".to_string()];
/// let total = bridge::run_blocking(async { names.iter().map(String::len).sum::<usize>() });
/// assert_eq!(total, 3);
///
/// // Synchronous code, no runtime in sight:
/// let n = bridge::run_blocking(async {
///     tokio::time::sleep(Duration::from_millis(1)).await;
///     6 * 7
/// });
/// assert_eq!(n, 42);
///
/// // The same call inside a current-thread runtime, where tokio's own block_on would panic:
/// let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
/// assert_eq!(rt.block_on(async { bridge::run_blocking(async { 1 }) }), 1);
/// ```
///
/// A borrow must outlive the call, as with any borrow:
///
/// ```compile_fail
/// let name = String::from("a");
/// let future = async { name.len() };
/// drop(name); // error: cannot move out of `name` because it is borrowed
/// bridge::run_blocking(future);
/// ```
#[track_caller]
pub fn run_blocking<F>(future: F) -> F::Output
where
    F: Future + Send,
    F::Output: Send,
{
    unwrap(try_run_blocking(future))
}

/// [`run_blocking`] with typed errors instead of panics.
///
/// # Errors
///
/// The future panicked ([`Error::is_panic`], with the payload); the runtime running it shut
/// down first ([`Error::is_lost`]); a handoff worker could not be started.
///
/// # Examples
///
/// ```
/// let err = bridge::try_run_blocking(async { panic!("corrupt header") }).unwrap_err();
/// assert_eq!(err.to_string(), "the work panicked: corrupt header");
/// ```
pub fn try_run_blocking<F>(future: F) -> Result<F::Output, Error>
where
    F: Future + Send,
    F::Output: Send,
{
    run(future, None)
}

/// [`try_run_blocking`] with a time limit: when it passes, the future is cancelled and the
/// call returns an [`Error`] that [`is_timeout`](Error::is_timeout).
///
/// The future runs by the same route as without a limit, and is dropped where it runs when
/// the limit passes: between two polls, so a future that blocks inside a poll delays the
/// return by as long. On the handoff route the call then waits for the worker to drop it,
/// since the future may borrow from the caller. A limit so long that the deadline cannot be
/// represented (`Duration::MAX`, say) means no limit: the call is then a plain
/// [`try_run_blocking`].
///
/// # Errors
///
/// As [`try_run_blocking`], and the time limit ([`Error::is_timeout`]).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// let slow = async { tokio::time::sleep(Duration::from_secs(60)).await };
/// let err = bridge::try_run_blocking_timeout(slow, Duration::from_millis(5)).unwrap_err();
/// assert!(err.is_timeout());
/// ```
pub fn try_run_blocking_timeout<F>(future: F, timeout: Duration) -> Result<F::Output, Error>
where
    F: Future + Send,
    F::Output: Send,
{
    run(future, Instant::now().checked_add(timeout))
}

/// `handle`, or the shared I/O runtime's where the plan names none (borrowed: no clone).
fn or_io(handle: &Option<Handle>) -> &Handle {
    match handle {
        Some(handle) => handle,
        None => IoRuntime::global().handle(),
    }
}

/// Runs `future` by the route of this thread's context, until `deadline`.
fn run<F>(future: F, deadline: Option<Instant>) -> Result<F::Output, Error>
where
    F: Future + Send,
    F::Output: Send,
{
    let plan = plan();
    crate::metrics::call(plan.route());
    match &plan {
        Plan::Inline {
            handle, free: true, ..
        } => in_place::poll_free(or_io(handle), future, deadline),
        Plan::Inline { handle, dying, .. } => {
            if *dying {
                crate::trace::moved_off_dying_runtime();
            }
            in_place::poll_any(or_io(handle), future, deadline)
        }
        Plan::OnWorker(handle) => in_place::poll_on_worker(handle, future, deadline),
        Plan::Handoff(handle) => handoff::run(or_io(handle), future, deadline),
    }
}

#[track_caller]
fn unwrap<T>(result: Result<T, Error>) -> T {
    match result {
        Ok(output) => output,
        Err(err) => match err.try_into_panic() {
            Ok(payload) => panic::resume_unwind(payload),
            Err(err) => panic!("run_blocking: {err}"),
        },
    }
}
