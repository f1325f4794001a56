//! A runtime-free executor for one future.

use crate::arms::arm;
use crate::parker::Parker;
use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

/// Runs `future` to completion on the calling thread and returns its output.
///
/// This is an executor without a reactor: it polls the future, and parks the thread until
/// the future's waker is called. It suits futures that are woken by other threads (a
/// [`oneshot::Receiver`](crate::oneshot::Receiver), a task on a thread pool, a channel), not
/// futures that need a runtime's I/O driver or timers (a tokio socket or `sleep` needs a
/// tokio runtime to make progress and would wait forever here; use `bridge::run_blocking`
/// for those).
///
/// Calls nest: a future polled by `block_on` may itself call `block_on`, and each call waits
/// on its own wake flag, so a wake-up is never lost to another wait on the same thread. In
/// steady state a call allocates nothing: each thread keeps the wake flags it has used.
///
/// # Panics
///
/// A panic in the future's `poll` propagates to the caller. The thread's cached wake flag is
/// returned to the cache on the way out.
///
/// # Examples
///
/// ```
/// let (tx, rx) = bridge_core::oneshot::channel();
/// std::thread::spawn(move || tx.send("from another thread").unwrap());
/// assert_eq!(bridge_core::block_on(rx), Ok("from another thread"));
/// ```
pub fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    let signal = Lease::take();
    let mut cx = Context::from_waker(&signal.waker);
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            arm!("block_on.ready");
            return output;
        }
        arm!("block_on.parks");
        signal.park();
    }
}

/// The wake flag of one `block_on` call, shared with the wakers it hands out.
#[derive(Debug)]
struct Signal(Parker);

impl Wake for Signal {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

/// A wake flag and its waker, borrowed from the thread's cache for one call.
struct Lease {
    signal: Arc<Signal>,
    waker: Waker,
}

impl Lease {
    fn new() -> Self {
        let signal = Arc::new(Signal(Parker::new()));
        let waker = Waker::from(Arc::clone(&signal));
        Self { signal, waker }
    }
}

impl std::ops::Deref for Lease {
    type Target = Parker;
    fn deref(&self) -> &Parker {
        &self.signal.0
    }
}

#[cfg(not(bridge_loom))]
mod cache {
    use super::Lease;
    use std::cell::RefCell;

    thread_local! {
        /// Wake flags this thread has used and is not using now: one per nesting depth
        /// reached so far.
        static IDLE: RefCell<Vec<Lease>> = const { RefCell::new(Vec::new()) };
    }

    /// Gives the lease back to the thread's cache when the call ends, panicking or not.
    pub(super) struct Guard(Option<Lease>);

    impl Lease {
        pub(super) fn take() -> Guard {
            let cached = IDLE.try_with(|idle| idle.borrow_mut().pop()).ok().flatten();
            let lease = cached.unwrap_or_else(Lease::new);
            lease.reset();
            Guard(Some(lease))
        }
    }

    impl std::ops::Deref for Guard {
        type Target = Lease;
        fn deref(&self) -> &Lease {
            self.0.as_ref().expect("the lease is only taken in drop")
        }
    }

    impl Drop for Guard {
        fn drop(&mut self) {
            if let Some(lease) = self.0.take() {
                // During thread-local destruction the cache is gone; the lease is then
                // simply dropped.
                let _ = IDLE.try_with(|idle| idle.borrow_mut().push(lease));
            }
        }
    }
}

#[cfg(bridge_loom)]
mod cache {
    use super::Lease;

    // loom objects cannot outlive one model execution, so loom builds never cache.
    impl Lease {
        pub(super) fn take() -> Lease {
            let lease = Lease::new();
            lease.reset();
            lease
        }
    }
}
