#![doc = include_str!("../README.md")]
//!
//! # What is here
//!
//! - [`spawn`], [`spawn_fifo`], [`spawn_cancellable`] and [`Task`] (feature `rayon`): CPU
//!   work on rayon, awaited (or waited for) through a oneshot; panics come back to whoever
//!   takes the result, and a dropped task cancels work that has not started.
//!   [`rayon::ThreadPoolExt`] does the same on a pool of your own.
//! - [`oneshot`]: one value from one thread or task to another, received with `try_recv`
//!   (sync), `recv_blocking` / `recv_timeout` / `recv_deadline` (blocking) or `.await`
//!   (async, on any executor).
//! - [`block_on`]: run a future to completion on this thread, with no runtime.
#![forbid(unsafe_code)]

#[doc(inline)]
pub use bridge_core::block_on;
#[doc(inline)]
pub use bridge_core::oneshot;

#[cfg(feature = "rayon")]
#[doc(inline)]
pub use bridge_rayon::{
    CancelFlag, CatchUnwind, Task, TaskError, spawn, spawn_cancellable, spawn_fifo,
};

/// CPU work on rayon pools: everything of `bridge-rayon`, including [`ThreadPoolExt`](bridge_rayon::ThreadPoolExt)
/// (`pool.spawn_task(f)`) for pools of your own.
///
/// # Examples
///
/// ```
/// use bridge::rayon::ThreadPoolExt;
///
/// let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
/// assert_eq!(pool.spawn_task(|| 2 + 2).wait(), 4);
/// ```
#[cfg(feature = "rayon")]
pub mod rayon {
    #[doc(inline)]
    pub use bridge_rayon::*;
}
