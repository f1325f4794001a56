//! Whether a runtime is shutting down, and futures that stop waiting on one that is.
//!
//! While a multi-thread runtime shuts down, the values its tasks own are dropped on its
//! worker threads, and a `Drop` that calls the bridge looks exactly like a worker's task to
//! every cheap public query. Blocking there on that runtime's timers or I/O waits forever:
//! nothing drives them any more, and the shutdown waits for this very thread. The one
//! definitive public signal is that the runtime refuses new tasks: a task spawned on it is
//! cancelled at once. Asking costs a task spawn (a few hundred ns), so the bridge asks only
//! where it must: before the first poll on a runtime's non-worker threads (where it also
//! tries a timer, see [`cannot_run`]), and on worker threads only once the future is about
//! to wait.

use crate::BridgeError;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use tokio::runtime::Handle;

/// Whether `handle`'s runtime refuses new tasks because it is shutting down (or shut down).
pub(crate) fn shutting_down(handle: &Handle) -> bool {
    let mut probe = handle.spawn(async {});
    let mut cx = Context::from_waker(Waker::noop());
    matches!(
        Pin::new(&mut probe).poll(&mut cx),
        Poll::Ready(Err(error)) if error.is_cancelled()
    )
}

/// Whether `handle`'s runtime cannot run a future any more: it refuses new tasks, or its
/// timers refuse to start. After `shutdown_background` the timer driver stops before the
/// scheduler refuses tasks, and a timer polled in between panics ("being shutdown"); a
/// runtime built without timers answers the same way, which only sends the future to the I/O
/// runtime. Costs a task spawn and a timer registration.
pub(crate) fn cannot_run(handle: &Handle) -> bool {
    if shutting_down(handle) {
        return true;
    }
    crate::probe::quietly(|| {
        let _context = handle.enter();
        // A deadline in the future: an elapsed one completes without asking the driver.
        let mut timer = std::pin::pin!(tokio::time::sleep(std::time::Duration::from_secs(3600)));
        let mut cx = Context::from_waker(Waker::noop());
        let _ = timer.as_mut().poll(&mut cx);
    })
    .is_err()
}

/// Polls `future`; the first time it is about to wait, checks that `handle`'s runtime is
/// not shutting down, and ends with [`BridgeError::RuntimeGone`] if it is.
pub(crate) async fn unless_shutting_down<F: Future>(
    handle: &Handle,
    future: F,
) -> Result<F::Output, BridgeError> {
    let mut future = std::pin::pin!(future);
    let mut checked = false;
    std::future::poll_fn(|cx| match future.as_mut().poll(cx) {
        Poll::Ready(output) => Poll::Ready(Ok(output)),
        Poll::Pending if checked => Poll::Pending,
        Poll::Pending => {
            checked = true;
            if shutting_down(handle) {
                Poll::Ready(Err(BridgeError::RuntimeGone))
            } else {
                Poll::Pending
            }
        }
    })
    .await
}
