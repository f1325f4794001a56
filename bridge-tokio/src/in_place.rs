//! Polling a future on the calling thread, as if on a thread of its own: a runtime's handle
//! entered, a wake flag of its own, and nothing of the caller's task.
//!
//! tokio's `Handle::block_on` parks on a per-thread parker that an outer `Runtime::block_on`
//! on the same thread shares: nested inside a body whose siblings (`join!`, `select!`) wait
//! on timers, it consumes their wake-up and the outer body never wakes. It also needs that
//! parker's thread-local, which is gone in a thread-local destructor at thread exit. The
//! bridge never uses it: every poll loop is bridge-core's `block_on`, whose wake flag belongs
//! to the call, with the handle entered so that the future's I/O, timers and spawns go to
//! that runtime (whose workers drive them).
//!
//! A poll loop nested in a task's poll must not spend that task's cooperative budget: tokio
//! gives a task a budget per poll, and a loop that spends it inside one poll never gets it
//! back, so every tokio resource then answers `Pending` (and wakes itself) for good. Every
//! poll made here runs unconstrained (`tokio::task::unconstrained`), as inside
//! `block_in_place`. The other half of a thread of its own, no runtime entered (so that sync
//! code in the future may start a runtime of its own), only `block_in_place` can give on a
//! thread that a runtime has entered; the route sends the future elsewhere where it cannot
//! be had here (see `run.rs`), and a free loop mark (`MarkFree`) marks the loops that run on a thread no
//! runtime has entered, so that a call nested in them may stay on this thread.

use crate::context::{MarkFree, Plan, plan};
use crate::shutdown;
use bridge_core::Error;
use std::future::Future;
use std::panic::{self, AssertUnwindSafe};
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use std::time::Instant;
use tokio::runtime::Handle;
use tokio::task::unconstrained;

/// Enters `handle` (the I/O runtime's) around a poll that the bridge's CPU side makes on a
/// thread of its own pool (`bridge::cpu::spawn_future`): where a call made here
/// would have stayed on this thread (no runtime entered, or only one of the bridge's own
/// poll loops), the thread is marked as a free loop's, so that a call nested in
/// the poll still stays on this thread (where a waiter runs the CPU work it waits for)
/// instead of going to a handoff worker. See [`IoRuntime::enter`](crate::IoRuntime::enter).
pub(crate) fn enter_cpu_poll(handle: &Handle) -> impl Sized + '_ {
    let free = matches!(plan(), Plan::Inline { dying: false, .. }).then(MarkFree::new);
    (free, handle.enter())
}

/// Runs `future` to completion (or until `deadline`: then it is dropped here, a timeout
/// [`Error`]) on this thread with `handle` entered, which must be a multi-thread runtime's,
/// whose workers drive its I/O and timers: a thread no runtime has entered (marked as a free
/// loop's, so that a call nested in it stays here).
pub(crate) fn poll_free<F: Future>(
    handle: &Handle,
    future: F,
    deadline: Option<Instant>,
) -> Result<F::Output, Error> {
    let _free = MarkFree::new();
    poll_loop(handle, future, deadline)
}

/// [`poll_free`] on a thread a runtime may have entered (a handoff worker, a free loop, a
/// dying runtime's thread): unconstrained, so that no task's budget is spent.
pub(crate) fn poll_any<F: Future>(
    handle: &Handle,
    future: F,
    deadline: Option<Instant>,
) -> Result<F::Output, Error> {
    poll_loop(handle, unconstrained(future), deadline)
}

/// The poll loop: `future` polled with `handle` entered and a wake flag of its own.
pub(crate) fn poll_loop<F: Future>(
    handle: &Handle,
    future: F,
    deadline: Option<Instant>,
) -> Result<F::Output, Error> {
    let _context = handle.enter();
    let polled = panic::catch_unwind(AssertUnwindSafe(|| match deadline {
        None => Some(bridge_core::block_on(future)),
        Some(deadline) => bridge_core::block_on_deadline(future, deadline),
    }));
    match polled {
        Ok(Some(output)) => Ok(output),
        Ok(None) => Err(Error::timed_out()),
        Err(payload) => Err(shutdown::classify(payload)),
    }
}

/// Runs `future` to completion (or until `deadline`) on a multi-thread runtime's worker that
/// holds its core: one poll right here, and only if the future is not ready,
/// `block_in_place` and the rest of the polls with `handle` entered.
///
/// Most futures that synchronous code hands over from a task are ready at once or nearly:
/// polled before leaving the scheduler they cost no core hand-off at all, and the worker keeps
/// its core for the next call (a worker that gave it away would have to ask whether its
/// runtime is shutting down at every later call in the same poll). The first poll gets a
/// waker that does nothing: the polls inside `block_in_place` pass their own, and a future
/// must direct its wake-ups to the waker of its latest poll.
///
/// That first poll runs unconstrained like every other, but with the worker's runtime still
/// entered: leaving it takes `block_in_place`, which hands the worker's core to another
/// thread, a cross-thread wake-up that the fast path exists to avoid. Sync code in the
/// future that starts a runtime of its own before its first `.await` therefore meets
/// tokio's "Cannot start a runtime from within a runtime" there, as it would in the task
/// itself; the caller can leave the scheduler first (`tokio::task::block_in_place` around
/// the call), and the call then runs entirely outside the runtime.
#[inline(never)]
pub(crate) fn poll_on_worker<F: Future>(
    handle: &Handle,
    future: F,
    deadline: Option<Instant>,
) -> Result<F::Output, Error> {
    let mut future = pin!(unconstrained(future));
    let first = {
        let _context = handle.enter();
        panic::catch_unwind(AssertUnwindSafe(|| {
            future
                .as_mut()
                .poll(&mut Context::from_waker(Waker::noop()))
        }))
    };
    match first {
        Ok(Poll::Ready(output)) => Ok(output),
        Ok(Poll::Pending) => tokio::task::block_in_place(|| poll_loop(handle, future, deadline)),
        Err(payload) => Err(shutdown::classify(payload)),
    }
}
