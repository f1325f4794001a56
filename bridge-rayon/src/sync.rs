//! The atomics and locks this crate uses, behind one door: loom's models under
//! `RUSTFLAGS="--cfg bridge_loom"` (so the loom suite explores the claim state and the
//! limit's queue), std's otherwise.
//!
//! Modelled: a job's claim state and its cells (closure, outcome, waker), the lock of a
//! [`Limit`](crate::Limit) with the threads its waiters are polled on, and a future task's
//! state with its waiter's waker slot. The `Arc` that shares a job stays std's in both builds
//! (loom's cannot hold a trait object).

#[cfg(bridge_loom)]
pub(crate) use loom::cell::UnsafeCell;
#[cfg(bridge_loom)]
pub(crate) use loom::sync::atomic::{AtomicU8, Ordering};
#[cfg(bridge_loom)]
pub(crate) use loom::sync::{Mutex, MutexGuard};
/// The thread a limit's waiter is polled on (loom's threads share one OS thread).
#[cfg(bridge_loom)]
pub(crate) use loom::thread;
#[cfg(not(bridge_loom))]
pub(crate) use std::sync::atomic::{AtomicU8, Ordering};
#[cfg(not(bridge_loom))]
pub(crate) use std::sync::{Mutex, MutexGuard};
#[cfg(not(bridge_loom))]
pub(crate) use std::thread;

/// `std::cell::UnsafeCell` with loom's closure-based access, so that loom checks every access
/// to a job's cells in the models.
#[cfg(not(bridge_loom))]
pub(crate) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

#[cfg(not(bridge_loom))]
impl<T> UnsafeCell<T> {
    pub(crate) const fn new(value: T) -> Self {
        Self(std::cell::UnsafeCell::new(value))
    }

    /// Shared access to the value.
    #[inline(always)]
    pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
        f(self.0.get())
    }

    /// Exclusive access to the value.
    #[inline(always)]
    pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.0.get())
    }
}
