// The README is the crate's front page; its examples use both halves, so a build without one
// of them (`default-features = false`) shows a shorter page instead.
#![cfg_attr(all(feature = "tokio", feature = "rayon"), doc = include_str!("../README.md"))]
#![cfg_attr(
    not(all(feature = "tokio", feature = "rayon")),
    doc = "Synchronous code, async I/O and CPU-heavy work in one process, without any of them \
           starving the others (this build has only some of the features: see the README on \
           [docs.rs](https://docs.rs/threadbridge) for the whole picture)."
)]
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
#![cfg_attr(
    feature = "tokio",
    doc = "- [`spawn_io`] and [`IoTask`] (feature `tokio`): a future run as a task of the shared
  [`IoRuntime`], from any context; its output taken by `.await`, `wait` or `try_get`, its
  panic carried to whoever takes it; dropping the `IoTask` cancels the future."
)]
#![cfg_attr(
    feature = "rayon",
    doc = "- [`cpu::spawn_future`] (feature `rayon`): CPU-heavy async code (a decoder, a stream of
  record batches) polled on rayon, one poll per wake-up as a job, and awaited through a
  [`Task`]; with feature `tokio` the shared `IoRuntime` is entered in each poll, so tokio
  timers and sockets work inside."
)]
#![cfg_attr(
    any(feature = "tokio", feature = "rayon"),
    doc = "- [`stream`]: a `Stream` driven on the I/O side (`stream::spawn_io`, feature `tokio`)
  or on rayon (`stream::spawn_cpu`, feature `rayon`) and consumed on any executor through a
  bounded buffer ([`stream::Crossing`]): backpressure, order kept, the producer cancelled
  when the consumer is dropped, its panic carried to the consumer."
)]
#![cfg_attr(
    feature = "tokio",
    doc = "- [`iter_blocking`] and [`IterBlocking`] (feature `tokio`): synchronous code's
  `Iterator` over a `Stream`, from any context, each item taken by `run_blocking`'s route."
)]
#![cfg_attr(
    feature = "object_store",
    doc = "- [`object_store`] (feature `object_store`, off by default): `IoStore`, an
  `ObjectStore` whose every method and streamed body runs on the I/O runtime, so a store
  can be used from CPU-side tasks and synchronous code without its requests running there."
)]
//! - [`metrics()`]: a cheap snapshot of the bridge's counters: CPU tasks spawned, started,
//!   finished, panicked, cancelled, queued and their queue wait; `run_blocking` calls by
//!   route, the handoff pool's threads, and the handoffs that a current-thread runtime
//!   waited for past the stall threshold (`io.stalled_handoffs`; the threshold is
//!   `rt::set_stall_warning`'s). Counting costs a relaxed increment on a cache line the
//!   counting thread owns.
//! - Feature `tracing` (off by default): the [`tracing`](https://docs.rs/tracing) span
//!   current at a spawn is current while its closure runs, and the span current at a
//!   `run_blocking` call is current in every poll of its future, on every route; the bridge
//!   logs its notable events (handoff-pool growth and queueing, a call moved off a dying
//!   runtime, a call on a current-thread runtime still waiting for its handed-off future
//!   after `rt::stall_warning()`, `Lost`, `Unavailable`). See the Tracing sections of
//!   `threadbridge-rayon` and `threadbridge-tokio`. Without it, nothing of `tracing` is
//!   compiled in.
//!
//! The modules with everything of each half are named `rt` (tokio) and `cpu` (rayon), not
//! `tokio` and `rayon`: `use bridge::*;` brings in no name that would hide your own `tokio`
//! and `rayon` crates.
#![cfg_attr(
    feature = "tokio",
    doc = r#"
# Running a future from synchronous code

Every entry point works from any context (a plain thread, a rayon worker, a task or
`block_on` body of either tokio flavor, a `spawn_blocking` thread, a `LocalSet`, another
call's future) and picks its route there ([`route`]); they differ in what they promise.

| entry point | use it when |
| --- | --- |
| [`run_blocking`] | the default: sync code needs a future's output; the future's panic resumes in the caller |
| [`try_run_blocking`] | the same, with a [`BridgeError`] instead of a panic (the future panicked, its runtime shut down, no thread could be started) |
| [`try_run_blocking_timeout`] | the same with a time limit: when it passes, the future is dropped and the call returns [`BridgeError::TimedOut`] |
| [`run_blocking_local`] | the future is `!Send`: it is polled on this thread, and refused ([`BridgeError::NotSendOnHandoff`]) where only a handoff to another thread could run it (a current-thread runtime) |
| [`rt::RunBlocking`] | `run_blocking` or `try_run_blocking` with options: how a thread with no runtime drives the future ([`rt::InlineStrategy`]), which I/O runtime serves the calls that need one (an [`IoRuntime`] of yours instead of [`IoRuntime::global`]), a timeout or a deadline |
| [`IoRuntime`]'s `run_blocking`, `try_run_blocking`, `try_run_blocking_timeout` | the narrower contract: the future always runs on that I/O runtime, whatever the caller's context; for clients shared beyond one runtime's life (a pooled HTTP or object-store client), whose background tasks must go on running between calls from any thread |

The free functions drive the future where its resources live: in a multi-thread runtime's
task, that runtime, which must then outlive whatever the future leaves behind. A call made on
a current-thread runtime blocks it while a handoff worker runs the future, so a future that
needs that runtime's tasks never finishes: once it has waited [`rt::stall_warning`] (5 s
unless [`rt::set_stall_warning`] changed it), the call logs a warning (feature `tracing`) and
counts in [`rt::Metrics::stalled_handoffs`].

```
use std::time::Duration;

// The default, from synchronous code wherever it runs.
let n = bridge::run_blocking(async { 1 });

// With options: an I/O runtime of your own and a time limit.
let io = bridge::IoRuntime::new(1).unwrap();
let limited = bridge::rt::RunBlocking::new().io(&io).timeout(Duration::from_secs(30));
let m = limited.try_run(async { 2 }).unwrap();

// Always on the shared I/O runtime, here from a task of another runtime.
let rt = tokio::runtime::Runtime::new().unwrap();
let task = async { bridge::IoRuntime::global().run_blocking(async { 3 }) };
let k = rt.block_on(async { tokio::spawn(task).await.unwrap() });
assert_eq!(n + m + k, 6);
```
"#
)]
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

#[cfg(all(feature = "rayon", feature = "tokio"))]
mod cpu_future;

/// CPU work on rayon pools: everything of `threadbridge-rayon`, including
/// [`ThreadPoolExt`] (`pool.spawn_task(f)`) for pools of your own, and
/// [`spawn_future`](cpu::spawn_future) for async code that belongs on the CPU side (with
/// feature `tokio`, it and `ThreadPoolExt::spawn_future_task` enter the shared `IoRuntime`
/// during each poll). (Named `cpu`, not `rayon`, so that `use bridge::*` does not hide the
/// `rayon` crate.)
///
/// # Examples
///
/// ```
/// use bridge::cpu::ThreadPoolExt;
///
/// let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
/// assert_eq!(pool.spawn_task(|| 2 + 2).wait(), 4);
/// ```
///
/// [`ThreadPoolExt`]: cpu::ThreadPoolExt
#[cfg(feature = "rayon")]
#[cfg_attr(docsrs, doc(cfg(feature = "rayon")))]
pub mod cpu {
    #[doc(inline)]
    pub use bridge_rayon::*;
    // With tokio, these shadow the glob's: the same, with the IoRuntime entered in polls.
    #[cfg(feature = "tokio")]
    #[doc(inline)]
    pub use crate::cpu_future::{ThreadPoolExt, io_entered, spawn_future};
}

#[cfg(feature = "tokio")]
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
#[doc(inline)]
pub use bridge_tokio::{
    BridgeError, IoRuntime, IoTask, Route, route, run_blocking, run_blocking_local, spawn_io,
    try_run_blocking, try_run_blocking_timeout,
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

#[cfg(any(feature = "tokio", feature = "rayon"))]
#[cfg_attr(docsrs, doc(cfg(any(feature = "tokio", feature = "rayon"))))]
pub mod stream;

#[cfg(feature = "object_store")]
#[cfg_attr(docsrs, doc(cfg(feature = "object_store")))]
#[doc(inline)]
pub use bridge_object_store as object_store;
#[cfg(feature = "tokio")]
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
pub use stream::{IterBlocking, iter_blocking};

/// A snapshot of the bridge's counters, from [`metrics()`]: one part per half of the bridge
/// that this build has.
///
/// Each part counts from the start of the process. Counting costs the hot paths a relaxed
/// increment on a cache line that the counting thread owns (each thread counts on a shard of
/// its own, which a snapshot sums): no lock and no shared write on a spawn, a task's run or
/// a `run_blocking` call. A snapshot taken while work runs is eventually consistent: the
/// shards are read one after the other, so counts made on other threads at that moment may
/// or may not be in it; whatever happened-before the call to [`metrics()`] is.
#[cfg_attr(
    feature = "rayon",
    doc = "
- [`cpu`](Self::cpu): the CPU tasks (feature `rayon`); see [`cpu::Metrics`]."
)]
#[cfg_attr(
    feature = "tokio",
    doc = "
- [`io`](Self::io): the `run_blocking` calls and the handoff pool (feature `tokio`); see
  [`rt::Metrics`]."
)]
///
/// # Examples
///
/// ```
/// // One line for a log, whatever the features.
/// println!("bridge metrics: {:?}", bridge::metrics());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Metrics {
    /// The CPU tasks: spawned, started, finished, panicked, cancelled, queued, and their
    /// queue wait (see [`cpu::Metrics`]).
    ///
    /// # Examples
    ///
    /// ```
    /// let before = bridge::metrics().cpu;
    /// bridge::spawn(|| 1).wait();
    /// assert!(bridge::metrics().cpu.since(&before).finished >= 1);
    /// ```
    #[cfg(feature = "rayon")]
    #[cfg_attr(docsrs, doc(cfg(feature = "rayon")))]
    pub cpu: bridge_rayon::Metrics,
    /// The `run_blocking` calls by route, the handoff pool's threads, and the handoffs that
    /// a current-thread runtime waited for past the stall threshold (see [`rt::Metrics`]).
    ///
    /// # Examples
    ///
    /// ```
    /// let before = bridge::metrics().io;
    /// bridge::run_blocking(async {}); // no runtime here: inline
    /// assert!(bridge::metrics().io.inline > before.inline);
    /// ```
    #[cfg(feature = "tokio")]
    #[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
    pub io: bridge_tokio::Metrics,
}

/// A snapshot of the bridge's counters; see [`Metrics`] for the parts and what each field
/// counts. Cheap: it sums one small block of counters per thread that has counted, and
/// takes the handoff pool's lock for a moment.
///
/// For an export, call it every few seconds from a thread of your own and log the fields
/// or set gauges from them (the example program `metrics_export` in the repository's
/// `examples/` does this); `cpu.since(&earlier)` gives the CPU counts of an interval.
///
/// # Examples
///
/// ```
/// # #[cfg(all(feature = "rayon", feature = "tokio"))] {
/// let m = bridge::metrics();
/// println!(
///     "cpu spawned={} queued={} p99_wait={:?} | io inline={} handoff={} handoff_threads={}",
///     m.cpu.spawned,
///     m.cpu.queued(),
///     m.cpu.queue_wait.percentile(99.0),
///     m.io.inline,
///     m.io.handoff,
///     m.io.handoff_threads_alive,
/// );
/// # }
/// ```
pub fn metrics() -> Metrics {
    Metrics {
        #[cfg(feature = "rayon")]
        cpu: bridge_rayon::metrics(),
        #[cfg(feature = "tokio")]
        io: bridge_tokio::metrics(),
    }
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
