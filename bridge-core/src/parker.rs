//! A one-waiter wake flag: the part of `block_on` that can race.

use crate::backoff::spin_until;
use crate::sync::atomic::AtomicBool;
use crate::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use crate::sync::thread::{self, Thread};

/// One blocking wait's own wake flag, bound to the thread that waits on it.
///
/// `thread::park` alone cannot carry a wake-up: anything else that parks the same thread
/// (a nested `block_on`, a blocking receive, a mutex) may consume the unpark, and the outer
/// wait then sleeps through its own wake-up. The flag carries the wake-up; the unpark only
/// shortens the sleep, and a stray one costs a spurious check.
#[derive(Debug)]
pub(crate) struct Parker {
    notified: AtomicBool,
    thread: Thread,
}

impl Parker {
    /// A parker for the calling thread.
    pub(crate) fn new() -> Self {
        Self {
            notified: AtomicBool::new(false),
            thread: thread::current(),
        }
    }

    /// Sets the flag and unparks the owner. Callable from any thread, any number of times.
    pub(crate) fn unpark(&self) {
        // ORDERING: Release: what the waker's thread wrote before waking happens-before the
        // owner's Acquire swap that consumes the flag. A swap (not a store) tells whether the
        // flag was already set, in which case the owner has not consumed that earlier
        // wake-up yet, and its unpark already went out.
        if !self.notified.swap(true, Release) {
            self.thread.unpark();
        }
    }

    /// The family's backoff (`backoff`) before a park: it ends early once the flag is set,
    /// and leaves the flag for the park's swap to consume.
    fn spin(&self) {
        // ORDERING: Relaxed: the load only ends the spin; the swap that follows consumes the
        // wake-up with Acquire.
        let _ = spin_until(|| self.notified.load(Relaxed).then_some(()));
    }

    /// Blocks the owner thread until the flag is set, and clears it.
    pub(crate) fn park(&self) {
        self.spin();
        // ORDERING: Acquire pairs with `unpark`'s Release. Checking the flag before each
        // park makes an unpark taken by somebody else harmless.
        while !self.notified.swap(false, Acquire) {
            thread::park();
        }
    }

    /// Blocks the owner thread until the flag is set (then clears it: `true`) or `deadline`
    /// passes with the flag still clear (`false`).
    pub(crate) fn park_deadline(&self, deadline: std::time::Instant) -> bool {
        self.spin();
        loop {
            // ORDERING: Acquire, as in `park`.
            if self.notified.swap(false, Acquire) {
                return true;
            }
            if thread::park_deadline(deadline) == crate::sync::Parked::Expired {
                // ORDERING: Acquire, as above: a wake-up that came with the deadline counts.
                return self.notified.swap(false, Acquire);
            }
        }
    }

    /// Takes a wake-up that is already there, without blocking: whether there was one.
    pub(crate) fn take(&self) -> bool {
        // ORDERING: Acquire, as in `park`: a wake-up taken here is consumed the same way, so
        // what the waker's thread wrote before waking is visible to the poll that follows.
        self.notified.swap(false, Acquire)
    }

    /// Forgets a wake-up left over from an earlier use (a waker that outlived its future).
    pub(crate) fn reset(&self) {
        // ORDERING: Acquire, as in `park`: a consumed wake-up is consumed the same way.
        self.notified.swap(false, Acquire);
    }
}
