#![doc = include_str!("../README.md")]
//!
//! # What is here
//!
//! - [`run_blocking`], [`try_run_blocking`], [`try_run_blocking_timeout`],
//!   [`run_blocking_local`] (feature `tokio`): synchronous code runs a future to completion
//!   from any context, or none; [`route`] tells which way a call goes, and [`IoRuntime`] is
//!   the shared runtime that drives I/O for synchronous callers. [`tokio`] has the rest
//!   ([`tokio::RunBlocking`], [`tokio::InlineStrategy`]).
//! - [`spawn`], [`spawn_fifo`], [`spawn_cancellable`] and [`Task`] (feature `rayon`): CPU
//!   work on rayon, awaited (or waited for) through a oneshot; panics come back to whoever
//!   takes the result, and a dropped task cancels work that has not started.
//!   [`rayon::ThreadPoolExt`] does the same on a pool of your own.
//! - [`oneshot`]: one value from one thread or task to another, received with `try_recv`
//!   (sync), `recv_blocking` / `recv_timeout` / `recv_deadline` (blocking) or `.await`
//!   (async, on any executor).
//! - [`block_on`]: run a future to completion on this thread, with no runtime.
#![forbid(unsafe_code)]
// docs.rs builds with `--cfg docsrs` on nightly: each feature-gated item gets a badge naming
// its feature.
#![cfg_attr(docsrs, feature(doc_cfg))]

#[doc(inline)]
pub use bridge_core::block_on;
#[doc(inline)]
pub use bridge_core::oneshot;

#[cfg(feature = "rayon")]
#[cfg_attr(docsrs, doc(cfg(feature = "rayon")))]
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
#[cfg_attr(docsrs, doc(cfg(feature = "rayon")))]
pub mod rayon {
    #[doc(inline)]
    pub use bridge_rayon::*;
}

#[cfg(feature = "tokio")]
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
#[doc(inline)]
pub use bridge_tokio::{
    BridgeError, IoRuntime, Route, route, run_blocking, run_blocking_local, try_run_blocking,
    try_run_blocking_timeout,
};

/// Synchronous code and tokio: everything of `bridge-tokio`, including
/// [`RunBlocking`](bridge_tokio::RunBlocking), `run_blocking` with options.
///
/// # Examples
///
/// ```
/// let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
/// let local = tokio::task::LocalSet::new();
/// let n = local.block_on(&rt, async { bridge::tokio::RunBlocking::new().run(async { 3 }) });
/// assert_eq!(n, 3);
/// ```
#[cfg(feature = "tokio")]
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
pub mod tokio {
    #[doc(inline)]
    pub use bridge_tokio::*;
}

/// `docs/guide.md`, compiled and run as doctests.
#[cfg(all(doctest, feature = "rayon", feature = "tokio"))]
#[doc = include_str!("../docs/guide.md")]
pub struct Guide;

/// `bridge-core/README.md`, compiled and run as doctests (the crate's own docs do not
/// include it).
#[cfg(doctest)]
#[doc = include_str!("../bridge-core/README.md")]
pub struct CoreReadme;

/// `bridge-tokio/README.md`, compiled and run as doctests (the crate's own docs do not
/// include it).
#[cfg(all(doctest, feature = "tokio"))]
#[doc = include_str!("../bridge-tokio/README.md")]
pub struct TokioReadme;
