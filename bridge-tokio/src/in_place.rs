//! Polling a future on the calling thread, with a runtime's handle entered and a wake flag
//! of its own.
//!
//! tokio's `Handle::block_on` parks on a per-thread parker that an outer `Runtime::block_on`
//! on the same thread shares: nested inside a body whose siblings (`join!`, `select!`) wait
//! on timers, it consumes their wake-up and the outer body never wakes. It also needs that
//! parker's thread-local, which is gone in a thread-local destructor at thread exit. The
//! bridge never uses it: every poll loop is bridge-core's `block_on`, whose wake flag belongs
//! to the call, with the handle entered so that the future's I/O, timers and spawns go to
//! that runtime (whose workers drive them).

use crate::BridgeError;
use crate::shutdown;
use std::future::Future;
use std::panic::{self, AssertUnwindSafe};
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use std::time::Instant;
use tokio::runtime::Handle;

/// Polls `future` to completion on this thread with `handle` entered, or until `deadline`
/// (then the future is dropped here: [`BridgeError::TimedOut`]). The thread must not be a
/// multi-thread runtime's worker that holds its core (leave the scheduler first, with
/// `block_in_place`), and `handle` must be a multi-thread runtime's, whose workers drive its
/// I/O and timers.
pub(crate) fn poll_here<F: Future>(
    handle: &Handle,
    future: F,
    deadline: Option<Instant>,
) -> Result<F::Output, BridgeError> {
    let _context = handle.enter();
    let polled = panic::catch_unwind(AssertUnwindSafe(|| match deadline {
        None => Some(bridge_core::block_on(future)),
        Some(deadline) => bridge_core::__block_on_deadline(future, deadline),
    }));
    match polled {
        Ok(Some(output)) => Ok(output),
        Ok(None) => Err(BridgeError::TimedOut),
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
/// Never inlined, whatever else the call's dispatch holds: the route's cost then does not
/// depend on how the compiler weighs the other routes (with the feature `tracing` it had
/// inlined this one and the ready call cost 39.7 ns against 37.1 ns).
#[inline(never)]
pub(crate) fn poll_on_worker<F: Future>(
    handle: &Handle,
    future: F,
    deadline: Option<Instant>,
) -> Result<F::Output, BridgeError> {
    let mut future = pin!(future);
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
        Ok(Poll::Pending) => tokio::task::block_in_place(|| poll_here(handle, future, deadline)),
        Err(payload) => Err(shutdown::classify(payload)),
    }
}
