//! The atomics and locks this crate uses, behind one door: loom's models under
//! `RUSTFLAGS="--cfg bridge_loom"` (so the loom suite explores the claim state and the
//! limit's queue), std's otherwise.
//!
//! Modelled: the claim state, the lock of a [`Limit`](crate::Limit) with the threads its
//! waiters are polled on, and a future task's state with its waiter's waker slot. The `Arc` that shares a job stays std's in both builds (loom's
//! cannot hold a trait object), and the job's slot is a std `Mutex` that is never contended
//! (see `job_claim.rs`).

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
