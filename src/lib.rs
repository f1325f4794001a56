#![doc = include_str!("../README.md")]
//!
//! # What is here
//!
//! - [`oneshot`]: one value from one thread or task to another, received with `try_recv`
//!   (sync), `recv_blocking` / `recv_timeout` / `recv_deadline` (blocking) or `.await`
//!   (async, on any executor).
//! - [`block_on`]: run a future to completion on this thread, with no runtime.
#![cfg_attr(
    feature = "tokio",
    doc = "- [`run_blocking`], [`try_run_blocking`], [`try_run_blocking_timeout`],
  [`run_blocking_local`] (feature `tokio`): synchronous code runs a future to completion
  from any context, or none; [`route`] tells which way a call goes, and [`IoRuntime`] is
  the shared runtime that drives I/O for synchronous callers. [`rt`] has the rest
  ([`rt::RunBlocking`], [`rt::InlineStrategy`])."
)]
#![cfg_attr(
    not(feature = "tokio"),
    doc = "- `run_blocking` and the rest of module `rt`: feature `tokio` (on by default, off in
  this build)."
)]
#![cfg_attr(
    feature = "rayon",
    doc = "- [`spawn`], [`spawn_fifo`], [`spawn_cancellable`] and [`Task`] (feature `rayon`): CPU
  work on rayon, awaited (or waited for) through a oneshot; panics come back to whoever
  takes the result, and a dropped task cancels work that has not started.
  [`cpu::ThreadPoolExt`] does the same on a pool of your own. [`Limit`] bounds the
  CPU tasks in flight: callers wait for room (async or blocking, first come, first served)
  or are refused."
)]
#![cfg_attr(
    not(feature = "rayon"),
    doc = "- `spawn`, `Task` and the rest of module `cpu`: feature `rayon` (on by default, off in
  this build)."
)]
//! - Feature `tracing` (off by default): the [`tracing`](https://docs.rs/tracing) span
//!   current at a spawn is current while its closure runs, and the span current at a
//!   `run_blocking` call is current in every poll of its future, on every route; the bridge
//!   logs its notable events (handoff-pool growth and queueing, a call moved off a dying
//!   runtime, `Lost`, `Unavailable`). See the Tracing sections of `threadbridge-rayon` and
//!   `threadbridge-tokio`. Without it, nothing of `tracing` is compiled in.
//!
//! The modules with everything of each half are named `rt` (tokio) and `cpu` (rayon), not
//! `tokio` and `rayon`: `use bridge::*;` brings in no name that would hide your own `tokio`
//! and `rayon` crates.
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
    CancelFlag, CatchUnwind, Limit, Task, TaskError, spawn, spawn_cancellable, spawn_fifo,
};

/// CPU work on rayon pools: everything of `threadbridge-rayon`, including
/// [`ThreadPoolExt`](bridge_rayon::ThreadPoolExt) (`pool.spawn_task(f)`) for pools of your
/// own. (Named `cpu`, not `rayon`, so that `use bridge::*` does not hide the `rayon` crate.)
///
/// # Examples
///
/// ```
/// use bridge::cpu::ThreadPoolExt;
///
/// let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
/// assert_eq!(pool.spawn_task(|| 2 + 2).wait(), 4);
/// ```
#[cfg(feature = "rayon")]
#[cfg_attr(docsrs, doc(cfg(feature = "rayon")))]
pub mod cpu {
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

/// Synchronous code and tokio: everything of `threadbridge-tokio`, including
/// [`RunBlocking`](bridge_tokio::RunBlocking), `run_blocking` with options. (Named `rt`, not
/// `tokio`, so that `use bridge::*` does not hide the `tokio` crate.)
///
/// # Examples
///
/// ```
/// let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
/// let local = tokio::task::LocalSet::new();
/// let n = local.block_on(&rt, async { bridge::rt::RunBlocking::new().run(async { 3 }) });
/// assert_eq!(n, 3);
/// ```
#[cfg(feature = "tokio")]
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
pub mod rt {
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
