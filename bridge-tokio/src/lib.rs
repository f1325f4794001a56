//! Synchronous code runs a future to completion from any tokio context, or none, without the
//! panics and deadlocks of tokio's own primitives.
//!
//! ```
//! // A plain thread, a rayon worker, a tokio task, a current-thread runtime: same call.
//! let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
//! let n = rt.block_on(async {
//!     bridge::run_blocking(async {
//!         tokio::time::sleep(std::time::Duration::from_millis(1)).await;
//!         42
//!     })
//! });
//! assert_eq!(n, 42);
//! ```
//!
//! - [`run_blocking`], [`try_run_blocking`], [`try_run_blocking_timeout`]: run a `Send`
//!   future from synchronous code.
//! - [`route`] and [`Route`]: which way a call made here goes (block in place, hand off,
//!   inline), with the reasons in [`Route`]'s docs.
//! - [`IoRuntime`]: the shared multi-thread runtime that drives I/O for synchronous
//!   callers.
//! - [`spawn_io`] and [`IoRuntime::spawn`]: a `'static` future runs as a task of the I/O
//!   runtime, from any context; its [`Task`](bridge_core::Task) gives the output by
//!   `.await`, a blocking wait (that works in every context) or a sync `try_get`, and
//!   dropping it cancels the future.
//! - [`stream::on_io`] and [`IoRuntime::spawn_stream`]: a `Stream` polled on the I/O
//!   runtime, its items taken on any executor through a bounded buffer.
//! - [`metrics`]: `run_blocking` calls by route, and the handoff pool's threads (see
//!   [Metrics](#metrics)). The handoff pool's cap and keep-alive and the stall warning are
//!   settings of `bridge::configure()`.
//!
//! The crate's modules are layers, each importing only from those below it:
//!
//! 1. `sync`, `trace`, `shutdown`: loom shims, logging, runtime shutdown detection;
//! 2. `context`: the calling thread's runtime, the bridge's marks on its threads, and the
//!    route a call made here takes;
//! 3. `handoff/pool.rs`, the pool of threads a call hands its future to; then `metrics`
//!    (its snapshot reads the pool); then `handoff` proper (the protocol and its stall
//!    warning, which counts in `metrics`);
//! 4. `in_place` (polled on this thread), `watch` (the I/O side's slow polls, and probes of
//!    runtimes), then `io_task` (the I/O side's `Task`, each poll watched);
//! 5. `io_runtime` (the shared runtime and `spawn_io`);
//! 6. `run`: the entry points, which run each call by its route;
//! 7. `iter_blocking`, `stream`.
//!
//! This file only declares and re-exports.
//!
//! The bridge never drops a runtime inside an async context and never blocks the only
//! driver of a runtime while the future needs that runtime. Every poll loop owns its wake
//! flag (as `bridge::block_on` does; never tokio's `Handle::block_on`, whose per-thread
//! parker an outer `block_on` shares), so a call nested under pending siblings (`join!`,
//! `select!`) loses none of their wake-ups. It installs no panic hook and probes nothing
//! by panicking, so it works the same on a panicking thread, in a thread-local destructor
//! and under a hook of yours.
//!
//! # Metrics
//!
//! [`metrics()`](metrics()) takes a snapshot: the calls made by each [`Route`] since the
//! process started, the handoff pool's threads alive, idle and at most, the calls queued for
//! its cap now, and the handoffs that a current-thread runtime waited for past
//! the stall warning ([`IoMetrics::stalled_handoffs`]). Counting a call costs a relaxed increment on a cache line that
//! the calling thread owns (each thread counts on a shard of its own, which a snapshot
//! sums): no lock and no shared write on the call's path. See [`IoMetrics`] for what each
//! field counts.
//!
//! ```
//! let rt = tokio::runtime::Runtime::new().unwrap();
//! let before = bridge_tokio::metrics();
//! rt.block_on(async {
//!     tokio::spawn(async { bridge::run_blocking(async { 1 }) }).await.unwrap()
//! });
//! let after = bridge_tokio::metrics();
//! assert!(after.on_worker > before.on_worker);
//! ```
//!
//! # Tracing
//!
//! With the feature `tracing` (off by default), the [`tracing`](https://docs.rs/tracing)
//! span current where a call is made ([`run_blocking`] in every form, [`spawn_io`]) is current in every poll of its future and at its
//! drop, on every route, a handoff worker and the I/O runtime's workers included. The bridge also logs its notable events:
//!
//! | event | level |
//! | --- | --- |
//! | the handoff pool starts a worker thread | debug |
//! | the handoff pool is at its cap and a call queues (once per burst: when the queue was empty) | info |
//! | a call's multi-thread runtime is shutting down, so its future runs on the I/O runtime | info |
//! | a call made on a current-thread runtime still waits for its handed-off future after the stall warning (5 s by default; once per call, also counted in [`IoMetrics::stalled_handoffs`]): that runtime drives none of its timers, sockets or tasks meanwhile. Without the feature, or with no subscriber installed, the first such call of the process writes the warning to stderr instead | warn |
//! | a call's runtime was lost under it (`Error::is_lost`) | warn |
//! | no handoff thread or runtime could be started | error |
//!
//! Only the handoff and [`spawn_io`] wrap the future in the span: every other route polls and
//! drops it on the calling thread, inside the call, where the span is current already, so the
//! feature adds nothing to those calls. A handoff pays for it one relaxed load (and carries
//! a disabled span) when no subscriber was ever installed, and the lookup of the current
//! span when one was; the [`run` study](https://github.com/bridge-rs/bridge/blob/main/docs/studies/run.md)
//! times the calls with and without the feature. Without the feature the
//! crate does not depend on `tracing` at all.
//!
//! ```
//! let span = tracing::info_span!("request", id = 7);
//! let n = span.in_scope(|| {
//!     bridge::run_blocking(async {
//!         tracing::debug!("fetching"); // inside `request` when the feature is on
//!         42
//!     })
//! });
//! assert_eq!(n, 42);
//! ```
// A loom build has no process-wide handoff pool (loom objects cannot outlive one model run)
// and no I/O-side watch: its protocol is reached only by the crate's own loom models
// (`loom_models`, test builds), and what only the std build uses is left unused there. The std
// build's lints see every item.
#![cfg_attr(bridge_loom, allow(dead_code))]
#![forbid(unsafe_code)]

mod context;
mod handoff;
mod in_place;
mod io_runtime;
mod io_task;
#[cfg(not(bridge_loom))]
mod iter_blocking;
#[cfg(all(test, bridge_loom))]
mod loom_models;
mod metrics;
mod run;
pub mod settings;
mod shutdown;
#[cfg(not(bridge_loom))]
pub mod stream;
mod sync;
mod trace;
#[cfg(not(bridge_loom))]
mod watch;

pub use io_runtime::{IoRuntime, spawn_io};

pub use context::{Route, route};
#[cfg(not(bridge_loom))]
pub use iter_blocking::{IterBlocking, iter_blocking};
pub use metrics::IoMetrics;
#[cfg(not(bridge_loom))]
pub use metrics::metrics;
pub use run::{run_blocking, try_run_blocking, try_run_blocking_timeout};
#[cfg(not(bridge_loom))]
pub use watch::{Watch, watch, watched};
