//! `run_blocking` and its typed and `!Send` forms: pick the route, run the future there.

use crate::in_place::{self, Here};
use crate::route::{Ambient, ambient};
use crate::{BridgeError, InlineStrategy, IoRuntime, handoff};
use std::borrow::Cow;
use std::future::Future;
use std::panic;
use std::time::{Duration, Instant};
use tokio::runtime::Handle;

/// Runs `future` to completion from synchronous code, wherever this is called: a plain
/// thread, a rayon worker, a task or `block_on` body of any tokio runtime, a `spawn_blocking`
/// thread, a `LocalSet`, or inside another `run_blocking`.
///
/// The route (see [`Route`](crate::Route) and [`route`](crate::route)):
///
/// - in a **multi-thread runtime's task** the future is polled here with that runtime's
///   handle, so its I/O stays where it lives; the worker polls it once first and leaves the
///   scheduler (`block_in_place`) only if it is not ready;
/// - on a multi-thread runtime's **other threads** (the `block_on` body, as in
///   `#[tokio::main]`, a `LocalSet` there, a `spawn_blocking` thread) the future runs on a
///   handoff worker with that runtime's handle while this thread blocks on a oneshot;
/// - on a **current-thread runtime** (its body, a task, a `LocalSet`, a `spawn_blocking`
///   thread), which must not be blocked while the future needs it, the future runs on a
///   handoff worker with [`IoRuntime::global`]'s handle while this thread blocks on a
///   oneshot;
/// - with **no runtime**, the future is polled on this thread and [`IoRuntime::global`]'s
///   workers drive its I/O and timers, so that background tasks that clients spawn (pooled
///   connections) live on a runtime that is always driven; a multi-thread runtime that is
///   shutting down (a value dropped by its shutdown calls from its worker) is treated the
///   same way.
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
/// call blocks that runtime's thread. Such a call is not silent: once it has waited
/// [`stall_warning`](crate::stall_warning) (5 s by default, see
/// [`set_stall_warning`](crate::set_stall_warning)) it logs a warning (feature `tracing`)
/// and counts in [`Metrics::stalled_handoffs`](crate::Metrics::stalled_handoffs), and a
/// deadline that passes gives [`BridgeError::TimedOut`] with a
/// [`Timeout`](crate::Timeout) that names the cause. Await the future there instead, run
/// the server on another runtime (in a test, `#[tokio::test(flavor = "multi_thread")]`), or
/// bound the wait with [`try_run_blocking_timeout`].
///
/// Background tasks that the future spawns (the connection drivers of a pooled HTTP or
/// object-store client) live on the runtime that drives it: on the `BlockInPlace` route the
/// caller's own runtime, which must then outlive the connections that other threads reuse.
/// For a client shared beyond one runtime's life, drive its calls with
/// [`IoRuntime::run_blocking`], which always uses the I/O runtime.
///
/// # Panics
///
/// Resumes the future's panic in the caller. Panics with the error's message if the runtime
/// running the future shuts down before it finishes ([`BridgeError::Lost`]) or a
/// handoff worker cannot be started ([`BridgeError::Unavailable`]); [`try_run_blocking`]
/// returns all of them as errors instead.
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
/// [`BridgeError::Panicked`] with the payload if the future panicked;
/// [`BridgeError::Lost`] if the runtime running it shut down first;
/// [`BridgeError::Unavailable`] if a handoff worker could not be started.
///
/// # Examples
///
/// ```
/// let err = bridge::try_run_blocking(async { panic!("corrupt header") }).unwrap_err();
/// assert_eq!(err.to_string(), "the future panicked: corrupt header");
/// ```
pub fn try_run_blocking<F>(future: F) -> Result<F::Output, BridgeError>
where
    F: Future + Send,
    F::Output: Send,
{
    dispatch(future, None)
}

/// [`try_run_blocking`] with a time limit: when it passes, the future is cancelled and the
/// call returns [`BridgeError::TimedOut`].
///
/// The future runs by the same route as without a limit, and is dropped where it runs when
/// the limit passes: between two polls, so a future that blocks inside a poll delays the
/// return by as long. On the handoff route the call then waits for the worker to drop it,
/// since the future may borrow from the caller. A limit so long that the deadline cannot be
/// represented (`Duration::MAX`, say) means no limit: the call is then a plain
/// [`try_run_blocking`], as with [`RunBlocking::timeout`](crate::RunBlocking::timeout) and
/// [`IoRuntime::try_run_blocking_timeout`].
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
/// let err = bridge::try_run_blocking_timeout(slow, Duration::from_millis(5)).unwrap_err();
/// assert!(matches!(err, bridge::BridgeError::TimedOut(_)));
/// ```
pub fn try_run_blocking_timeout<F>(future: F, timeout: Duration) -> Result<F::Output, BridgeError>
where
    F: Future + Send,
    F::Output: Send,
{
    dispatch(future, Instant::now().checked_add(timeout))
}

/// Runs a `!Send` future to completion on this thread, where that is possible: with no
/// runtime (polled here, this thread driving one of the drivers while it waits, see
/// [`InlineStrategy::Drive`]) and on a multi-thread runtime
/// (inside `block_in_place` on a worker, with the ambient handle). The future may borrow from
/// the caller's stack.
///
/// Its polls never spend the budget of the task the call sits in. On a multi-thread
/// runtime's threads other than its workers (the `block_on` body, a `LocalSet` there), where
/// [`run_blocking`] hands a `Send` future to a thread of its own, this one is polled right
/// here, and that runtime stays entered: sync code in the future cannot start a runtime of
/// its own there.
///
/// # Errors
///
/// [`BridgeError::NotSendOnHandoff`] on a current-thread runtime (or in a thread-local
/// destructor after tokio's), where only a handoff to another thread could run it;
/// [`BridgeError::Panicked`] with the payload if the future panicked;
/// [`BridgeError::Lost`] if its runtime shut down under it.
///
/// # Examples
///
/// ```
/// use std::rc::Rc;
///
/// let shared = Rc::new(5);
/// let n = bridge::run_blocking_local(async move { *shared + 1 }).unwrap();
/// assert_eq!(n, 6);
///
/// let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
/// let err = rt.block_on(async { bridge::run_blocking_local(async { Rc::new(1) }) });
/// assert!(matches!(err, Err(bridge::BridgeError::NotSendOnHandoff)));
/// ```
pub fn run_blocking_local<F: Future>(future: F) -> Result<F::Output, BridgeError> {
    match ambient() {
        // A runtime's other threads hand `Send` futures off; this one cannot move, so it is
        // polled here, unconstrained, with that runtime still entered.
        Ambient::RuntimeThread(handle) => {
            crate::metrics::call(crate::Route::BlockInPlace);
            in_place::poll_here(Here::Any, &handle, future, None)
        }
        ambient => match Plan::of(ambient, None, InlineStrategy::default()) {
            Plan::Here(handle, here) => in_place::poll_here(here, &handle, future, None),
            Plan::Drive => drive(future, None),
            Plan::Handoff(_) => Err(BridgeError::NotSendOnHandoff),
        },
    }
}

fn dispatch<F>(future: F, deadline: Option<Instant>) -> Result<F::Output, BridgeError>
where
    F: Future + Send,
    F::Output: Send,
{
    dispatch_with(None, InlineStrategy::default(), ambient(), future, deadline)
}

/// Where a call runs its future; the handle is the ambient runtime's or an I/O runtime's
/// (borrowed, which spares the hot path of a call with no runtime a reference count).
#[derive(Debug)]
pub(crate) enum Plan<'a> {
    /// Polled on this thread with this handle entered.
    Here(Cow<'a, Handle>, Here),
    /// Run on another thread with this handle, while this thread blocks.
    Handoff(Cow<'a, Handle>),
    /// Polled on this thread, which drives one of the drivers between polls (see
    /// `drivers.rs`).
    Drive,
}

impl<'a> Plan<'a> {
    /// The plan of [`run_blocking`] in `ambient`; `io` serves the calls that have no live
    /// multi-thread runtime of their own.
    ///
    /// Every call but those that [`RunBlocking`](crate::RunBlocking) runs on a runtime of
    /// its own makes its plan here or in [`on`](Self::on), once: the place where it is
    /// counted in the metrics, by its route. (Counted here rather than where the context is
    /// read: a wrapper that counted and returned the context made the caller copy it just
    /// after `ambient` stored it, a store-forwarding stall on every ready call.)
    ///
    /// A call with no runtime drives a driver by [`InlineStrategy::Drive`] unless `io`
    /// names an I/O runtime of its own; otherwise it polls here with that runtime's handle.
    pub(crate) fn of(ambient: Ambient, io: Option<&'a IoRuntime>, inline: InlineStrategy) -> Self {
        crate::metrics::call(ambient.route());
        if matches!(ambient, Ambient::Dying) {
            crate::trace::moved_off_dying_runtime();
        }
        let drive = inline == InlineStrategy::Drive && io.is_none();
        let io = || io.unwrap_or_else(|| IoRuntime::global());
        match ambient {
            Ambient::None if drive => Plan::Drive,
            Ambient::None => Plan::Here(Cow::Borrowed(io().handle()), Here::Free),
            Ambient::Dying => Plan::Here(Cow::Borrowed(io().handle()), Here::Any),
            Ambient::Worker(handle) => Plan::Here(Cow::Owned(handle), Here::Worker),
            Ambient::MultiThread(handle) => Plan::Here(Cow::Owned(handle), Here::Any),
            Ambient::RuntimeThread(handle) => Plan::Handoff(Cow::Owned(handle)),
            Ambient::CurrentThread | Ambient::Exiting => {
                Plan::Handoff(Cow::Borrowed(io().handle()))
            }
        }
    }

    /// The plan of [`IoRuntime`]'s calls, which always drive the future with `io`.
    pub(crate) fn on(ambient: Ambient, io: &'a IoRuntime) -> Self {
        crate::metrics::call(ambient.route());
        let handle = Cow::Borrowed(io.handle());
        match ambient {
            Ambient::Worker(_) => Plan::Here(handle, Here::Worker),
            Ambient::None => Plan::Here(handle, Here::Free),
            Ambient::MultiThread(_) | Ambient::Dying => Plan::Here(handle, Here::Any),
            Ambient::RuntimeThread(_) | Ambient::CurrentThread | Ambient::Exiting => {
                Plan::Handoff(handle)
            }
        }
    }

    /// Runs `future` by this plan. At `deadline` the future is dropped where it runs (here,
    /// or on the handoff worker, which this call waits for).
    pub(crate) fn run<F>(
        self,
        future: F,
        deadline: Option<Instant>,
    ) -> Result<F::Output, BridgeError>
    where
        F: Future + Send,
        F::Output: Send,
    {
        match self {
            Plan::Here(handle, here) => in_place::poll_here(here, &handle, future, deadline),
            // The one route whose polls (and drop) happen on another thread: the future
            // takes the caller's span with it (feature `tracing`, in `handoff::run`). The
            // routes above poll it on this thread, inside this call, where that span is
            // current already.
            Plan::Handoff(handle) => handoff::run(&handle, future, deadline),
            Plan::Drive => drive(future, deadline),
        }
    }
}

/// Runs `future` on a driver; where none could be started, polls it here with the I/O
/// runtime's handle (the `Shared` route).
fn drive<F: Future>(future: F, deadline: Option<Instant>) -> Result<F::Output, BridgeError> {
    crate::drivers::run(future, deadline).unwrap_or_else(|future| {
        in_place::poll_here(Here::Free, IoRuntime::global().handle(), future, deadline)
    })
}

/// Runs `future` by the route of `ambient`, the caller's context (read once per call);
/// `io` (default [`IoRuntime::global`], only built when needed) serves
/// the calls that have no multi-thread runtime of their own.
pub(crate) fn dispatch_with<F>(
    io: Option<&IoRuntime>,
    inline: InlineStrategy,
    ambient: Ambient,
    future: F,
    deadline: Option<Instant>,
) -> Result<F::Output, BridgeError>
where
    F: Future + Send,
    F::Output: Send,
{
    Plan::of(ambient, io, inline).run(future, deadline)
}

#[track_caller]
pub(crate) fn unwrap<T>(result: Result<T, BridgeError>) -> T {
    match result {
        Ok(output) => output,
        Err(BridgeError::Panicked(panic)) => panic::resume_unwind(panic.into_payload()),
        Err(other) => panic!("run_blocking: {other}"),
    }
}
