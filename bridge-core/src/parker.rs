//! A one-waiter wake flag: the part of `block_on` that can race.

use crate::backoff::spin_until;
use crate::coverage_arms::arm;
use crate::sync::atomic::AtomicBool;
use crate::sync::atomic::Ordering::{self, Acquire, Relaxed, Release};
use crate::sync::thread::{self, Thread};

/// One blocking wait's own wake flag, bound to the thread that waits on it.
///
/// `thread::park` alone cannot carry a wake-up: anything else that parks the same thread
/// (a nested `block_on`, a blocking receive, a mutex) may consume the unpark, and the outer
/// wait then sleeps through its own wake-up. The flag carries the wake-up; the unpark only
/// shortens the sleep, and a stray one costs a spurious check.
#[derive(Debug)]
pub(crate) struct Parker {
    notified: Flag,
    thread: Thread,
}

/// The wake flag. Its `swap` is the atomic's, and in counting builds it also counts the
/// parker's arms: the swap's outcome is what picks each arm of `park` and `unpark`.
#[derive(Debug)]
struct Flag {
    value: AtomicBool,
    /// Whether the owner's last swap in `park` found the flag clear, so that it parked:
    /// another such swap means it woke without a wake-up. A plain std atomic touched only
    /// by the owner thread, and only in counting builds: not a loom branch point.
    #[cfg(any(bridge_loom, bridge_coverage))]
    parked: std::sync::atomic::AtomicBool,
}

impl Flag {
    fn new() -> Self {
        Self {
            value: AtomicBool::new(false),
            #[cfg(any(bridge_loom, bridge_coverage))]
            parked: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// `swap(true, _)` is `unpark`'s, `swap(false, _)` `park`'s (and only theirs).
    fn swap(&self, new: bool, order: Ordering) -> bool {
        // ORDERING: the caller's (`park`, `unpark`), which says why.
        let old = self.value.swap(new, order);
        #[cfg(any(bridge_loom, bridge_coverage))]
        match (new, old) {
            (true, false) => arm!("parker.unpark.first"),
            (true, true) => arm!("parker.unpark.already_set"),
            (false, true) => {
                arm!("parker.park.woken");
                // ORDERING: Relaxed: owner-thread bookkeeping for the count; orders nothing.
                self.parked
                    .store(false, std::sync::atomic::Ordering::Relaxed);
            }
            (false, false) => {
                // ORDERING: Relaxed, as above.
                if self.parked.swap(true, std::sync::atomic::Ordering::Relaxed) {
                    // Woken by an unpark meant for another wait on this thread, or spuriously.
                    arm!("parker.park.spurious");
                } else {
                    arm!("parker.park.parks");
                }
            }
        }
        old
    }
}

impl Parker {
    /// A parker for the calling thread.
    pub(crate) fn new() -> Self {
        Self {
            notified: Flag::new(),
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
        let _ = spin_until(|| self.notified.value.load(Relaxed).then_some(()));
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
            if self.notified.value.swap(false, Acquire) {
                arm!("parker.park_deadline.woken");
                return true;
            }
            if thread::park_deadline(deadline) == crate::sync::Parked::Expired {
                // ORDERING: Acquire, as above: a wake-up that came with the deadline counts.
                let woken = self.notified.value.swap(false, Acquire);
                if woken {
                    arm!("parker.park_deadline.woken_at_deadline");
                } else {
                    arm!("parker.park_deadline.expired");
                }
                return woken;
            }
        }
    }

    /// Takes a wake-up that is already there, without blocking: whether there was one.
    pub(crate) fn take(&self) -> bool {
        // ORDERING: Acquire, as in `park`: a wake-up taken here is consumed the same way, so
        // what the waker's thread wrote before waking is visible to the poll that follows.
        self.notified.value.swap(false, Acquire)
    }

    /// Forgets a wake-up left over from an earlier use (a waker that outlived its future).
    pub(crate) fn reset(&self) {
        // ORDERING: Acquire, as in `park`: a consumed wake-up is consumed the same way.
        if self.notified.value.swap(false, Acquire) {
            // Not in loom builds: they make a fresh flag per call instead of caching one.
            arm!("parker.reset.stale");
        } else {
            arm!("parker.reset.clean");
        }
    }
}
