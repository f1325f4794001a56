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
