//! Whether a runtime is shutting down, found without waiting on it.
//!
//! While a multi-thread runtime shuts down, the values its tasks own are dropped on its
//! worker threads, and a `Drop` that calls the bridge looks like a worker's task to every
//! public query but two:
//!
//! - a worker that polls a task holds its scheduler core, while one that drops tasks for the
//!   shutdown does not; `tokio::task::yield_now` tells which, at no cost worth measuring: with
//!   a core it defers the waker to the scheduler, without one it wakes it at once
//!   ([`worker_without_core`]);
//! - a runtime that shuts down refuses new tasks: a task spawned on it is cancelled at once
//!   ([`shutting_down`]). That answer is definitive but costs a task spawn (an allocation
//!   and a trip through the scheduler), so a worker asks only when it holds no core (a
//!   shutdown, or a call nested in `block_in_place`).
//!
//! A future polled with a runtime that shuts down under it is woken with tokio's "being
//! shutdown" panic by its timers, which [`classify`] turns into
//! a lost [`Error`].

use bridge_core::Error;
use std::any::Any;
use std::cell::RefCell;
use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use tokio::runtime::Handle;

/// Whether `handle`'s runtime refuses new tasks because it is shutting down (or shut down).
pub(crate) fn shutting_down(handle: &Handle) -> bool {
    let mut probe = pin!(handle.spawn(async {}));
    let mut cx = Context::from_waker(Waker::noop());
    matches!(
        probe.as_mut().poll(&mut cx),
        Poll::Ready(Err(error)) if error.is_cancelled()
    )
}

/// Set when `yield_now` wakes its waker at once.
#[derive(Debug, Default)]
struct WokenAtOnce(AtomicBool);

impl Wake for WokenAtOnce {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        // ORDERING: Relaxed: the flag is only read back by this thread, in the same call.
        // (A deferred wake-up that the scheduler delivers later sets it too; `arm` clears
        // it before each use.)
        self.0.store(true, Ordering::Relaxed);
    }
}

thread_local! {
    static WOKEN: RefCell<Option<(Arc<WokenAtOnce>, Waker)>> = const { RefCell::new(None) };
}

/// On a multi-thread runtime's worker thread: whether it holds no scheduler core now, as
/// while it drops tasks for a shutdown (or runs inside `block_in_place`). `false` where it
/// cannot tell.
pub(crate) fn worker_without_core() -> bool {
    let answer = WOKEN.try_with(|slot| {
        let mut slot = slot.borrow_mut();
        let (flag, waker) = slot.get_or_insert_with(|| {
            let flag = Arc::new(WokenAtOnce::default());
            let waker = Waker::from(Arc::clone(&flag));
            (flag, waker)
        });
        // ORDERING: Relaxed: see `wake_by_ref`.
        flag.0.store(false, Ordering::Relaxed);
        let mut yielded = pin!(tokio::task::yield_now());
        let _ = yielded.as_mut().poll(&mut Context::from_waker(waker));
        // ORDERING: Relaxed: a wake-up at once ran on this thread, inside the poll above.
        flag.0.load(Ordering::Relaxed)
    });
    answer.unwrap_or(false)
}

/// tokio's panic message when a timer or an I/O resource is used after its runtime shut
/// down.
const SHUTDOWN_PANIC: &str = "A Tokio 1.x context was found, but it is being shutdown";

/// The panic message of `payload`, if it is a string.
pub(crate) fn message(payload: &(dyn Any + Send)) -> Option<&str> {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
}

/// A panic caught while polling a future: tokio's "being shutdown" panic means the runtime
/// died under the future (a lost [`Error`]); any other is the future's own.
pub(crate) fn classify(payload: Box<dyn Any + Send + 'static>) -> Error {
    if message(&*payload).is_some_and(|message| message.starts_with(SHUTDOWN_PANIC)) {
        crate::trace::lost()
    } else {
        Error::panicked(payload)
    }
}
