//! Test helpers shared by the suites: counting wakers and drop-counted values.
#![allow(dead_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Wake, Waker};

/// A waker that counts how often it was woken.
#[derive(Debug, Default)]
pub struct CountingWaker {
    wakes: AtomicUsize,
}

impl CountingWaker {
    /// A fresh counter and a `Waker` that bumps it.
    pub fn new() -> (Arc<Self>, Waker) {
        let counter = Arc::new(Self::default());
        let waker = Waker::from(Arc::clone(&counter));
        (counter, waker)
    }

    /// How often the waker was woken so far.
    pub fn wakes(&self) -> usize {
        self.wakes.load(Ordering::SeqCst)
    }
}

impl Wake for CountingWaker {
    fn wake(self: Arc<Self>) {
        self.wakes.fetch_add(1, Ordering::SeqCst);
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.wakes.fetch_add(1, Ordering::SeqCst);
    }
}

/// Counts the drops of the values made from it.
#[derive(Debug, Default, Clone)]
pub struct DropCounter(Arc<AtomicUsize>);

impl DropCounter {
    /// A new value whose drop bumps this counter.
    pub fn value(&self, id: usize) -> Counted {
        Counted {
            id,
            drops: Arc::clone(&self.0),
        }
    }

    /// How many values made from this counter were dropped so far.
    pub fn drops(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

/// A value that counts its drop.
#[derive(Debug)]
pub struct Counted {
    /// Which value this is.
    pub id: usize,
    drops: Arc<AtomicUsize>,
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
    }
}

/// What a [`counted_waker`] has seen.
#[derive(Debug, Default)]
pub struct WakerCounts {
    clones: AtomicUsize,
    wakes: AtomicUsize,
}

impl WakerCounts {
    /// How often the waker (or a clone) was cloned so far.
    pub fn clones(&self) -> usize {
        self.clones.load(Ordering::SeqCst)
    }

    /// How often the waker (or a clone) was woken so far.
    pub fn wakes(&self) -> usize {
        self.wakes.load(Ordering::SeqCst)
    }
}

/// A waker that counts its clones and its wake-ups. The counts are leaked (a few bytes per
/// call), so the waker and its clones need no reference counting of their own.
pub fn counted_waker() -> (&'static WakerCounts, Waker) {
    use std::task::{RawWaker, RawWakerVTable};

    static VTABLE: RawWakerVTable = RawWakerVTable::new(clone, wake, wake, drop);
    fn counts(data: *const ()) -> &'static WakerCounts {
        // SAFETY: every RawWaker with this vtable points at a leaked `WakerCounts`.
        unsafe { &*data.cast::<WakerCounts>() }
    }
    fn clone(data: *const ()) -> RawWaker {
        counts(data).clones.fetch_add(1, Ordering::SeqCst);
        RawWaker::new(data, &VTABLE)
    }
    fn wake(data: *const ()) {
        counts(data).wakes.fetch_add(1, Ordering::SeqCst);
    }
    fn drop(_: *const ()) {}

    let counts: &'static WakerCounts = Box::leak(Box::default());
    let data = std::ptr::from_ref(counts).cast::<()>();
    // SAFETY: the vtable keeps RawWaker's contract: `clone` makes a waker of the same
    // 'static data, wake and wake_by_ref only count, and drop owns nothing.
    (counts, unsafe {
        Waker::from_raw(RawWaker::new(data, &VTABLE))
    })
}
