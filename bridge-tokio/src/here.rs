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
use tokio::runtime::Handle;

/// Polls `future` to completion on this thread with `handle` entered. The thread must not be
/// a multi-thread runtime's worker that holds its core (leave the scheduler first, with
/// `block_in_place`), and `handle` must be a multi-thread runtime's, whose workers drive its
/// I/O and timers.
pub(crate) fn poll_here<F: Future>(handle: &Handle, future: F) -> Result<F::Output, BridgeError> {
    let _context = handle.enter();
    panic::catch_unwind(AssertUnwindSafe(|| bridge_core::block_on(future)))
        .map_err(shutdown::classify)
}
