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
//! Each item has one path.
#![cfg_attr(
    all(feature = "tokio", feature = "rayon"),
    doc = "The [`guide`] says which call to make where, with examples."
)]
//!
#![cfg_attr(
    feature = "rayon",
    doc = "- [`spawn`], [`spawn_fifo`], [`spawn_cancellable`] (feature `rayon`): CPU work on
  rayon's global pool; [`cpu`] has async CPU work ([`cpu::spawn_future`]), pools of your own
  ([`cpu::ThreadPoolExt`]) and a bound on the work in flight ([`cpu::Limit`])."
)]
#![cfg_attr(
    feature = "tokio",
    doc = "- [`run_blocking`], [`try_run_blocking`], [`try_run_blocking_timeout`] (feature
  `tokio`): a future run to completion from synchronous code, in any context or none;
  [`spawn_io`]: a future run on the shared I/O runtime ([`rt::IoRuntime`]) from anywhere;
  [`rt::watch`]: a runtime of yours watched for polls that hold its workers."
)]
//! - [`Task`]: the one handle of work running elsewhere (awaited, waited for, polled, or
//!   dropped to cancel it), and [`Error`], the one error: a panic, a time limit, work lost.
#![cfg_attr(
    any(feature = "tokio", feature = "rayon"),
    doc = "- [`stream`]: a `Stream` made on one side and consumed on the other through a bounded
  buffer."
)]
#![cfg_attr(
    feature = "tokio",
    doc = "- [`iter_blocking`]: a `Stream` read as an `Iterator` by synchronous code."
)]
//! - [`oneshot`]: one value from one thread or task to another, received sync, blocking or
//!   async; [`block_on`]: a future run on this thread with no runtime.
//! - [`configure()`]: the process's settings, to read or change; [`metrics()`]: the counters.
//! - `object_store` (feature `object_store`, off by default): `IoStore`, an `ObjectStore`
//!   whose requests run on the I/O runtime whoever calls it.
//! - Feature `tracing` (off by default): the span current where work is handed over is
//!   current where it runs, and the bridge logs its notable events (a slow poll on the I/O
//!   side, a stall, a lost runtime, the handoff pool at its cap).
//!
//! The modules of each half are named `rt` (tokio) and `cpu` (rayon), not `tokio` and
//! `rayon`: `use bridge::*;` brings in no name that would hide your own `tokio` and `rayon`.
#![forbid(unsafe_code)]
// docs.rs builds with `--cfg docsrs` on nightly: each feature-gated item gets a badge naming
// its feature.
#![cfg_attr(docsrs, feature(doc_cfg))]

#[doc(inline)]
pub use bridge_core::{CatchUnwind, Error, Histogram, Task, block_on, oneshot};

mod config;
pub use config::{Config, configure};

#[cfg(feature = "rayon")]
#[cfg_attr(docsrs, doc(cfg(feature = "rayon")))]
#[doc(inline)]
pub use bridge_rayon::{CancelFlag, CpuMetrics, spawn, spawn_cancellable, spawn_fifo};

#[cfg(feature = "tokio")]
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
#[doc(inline)]
pub use bridge_tokio::{
    IoMetrics, IterBlocking, iter_blocking, run_blocking, spawn_io, try_run_blocking,
    try_run_blocking_timeout,
};

/// CPU work on rayon beyond [`spawn`]: async CPU work, pools of your own, a
/// bound on the work in flight, a lower priority for a pool's threads. (Named `cpu`, not
/// `rayon`, so that `use bridge::*` does not hide the `rayon` crate.)
///
/// With feature `tokio`, every poll of [`spawn_future`](cpu::spawn_future)'s future (and of
/// [`ThreadPoolExt`](cpu::ThreadPoolExt)'s `spawn_future_task` and `spawn_stream`) runs
/// with the shared I/O runtime entered, so tokio's timers and sockets work inside.
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
    pub use bridge_rayon::{Limit, ThreadPoolExt, lower_thread_priority, spawn_future};
}

/// The I/O side: [`IoRuntime`](rt::IoRuntime), the shared multi-thread runtime that runs
/// [`spawn_io`]'s futures and drives the I/O of synchronous callers, or one of your own;
/// [`watch`](rt::watch), which says when a runtime of yours is held, and
/// [`watched`](rt::watched), which names the future of yours whose polls hold it. (Named
/// `rt`, not `tokio`, so that `use bridge::*` does not hide the `tokio` crate.)
///
/// The bridge times every poll of the futures it runs on the I/O side
/// (`bridge::metrics().io.poll_durations`) and names one that holds its worker past
/// `bridge::configure().slow_poll` (10 ms by default), once, with the site of its spawn: CPU
/// work on the I/O side delays every read behind it. See the guide's section "Is CPU work on
/// my I/O side?".
///
/// # Examples
///
/// ```
/// let io = bridge::rt::IoRuntime::new(1).unwrap();
/// assert_eq!(io.spawn(async { 3 }).wait(), 3);
/// ```
#[cfg(feature = "tokio")]
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
pub mod rt {
    #[doc(inline)]
    pub use bridge_tokio::{IoRuntime, Watch, watch, watched};
}

/// Streams across sides: make a `Stream` on the I/O runtime (`on_io`, feature `tokio`) or on
/// rayon (`on_cpu`, feature `rayon`) and consume its items anywhere else through a bounded
/// buffer, a [`Crossing`](stream::Crossing).
///
/// A crossing keeps the producer at most `bound` items ahead of the consumer, keeps their
/// order, cancels the producer when the consumer drops it, and carries the producer's panic
/// to the consumer after the items made before it. The consumer may poll it on any
/// executor; `bridge::iter_blocking` (feature `tokio`) reads it from synchronous code.
///
/// # Examples
///
/// Bytes read on the I/O side, decoded on the CPU side, summed by synchronous code:
///
/// ```
/// # #[cfg(all(feature = "tokio", feature = "rayon"))] {
/// use futures::StreamExt;
///
/// let chunks = futures::stream::iter((0..100u8).map(|i| vec![i; 1024]));
/// let read = bridge::stream::on_io(chunks, 4);
/// let sums = read.map(|chunk| chunk.iter().map(|&b| u64::from(b)).sum::<u64>());
/// let decoded = bridge::stream::on_cpu(sums, 4);
/// let total: u64 = bridge::iter_blocking(decoded).sum();
/// assert_eq!(total, 1024 * (0..100).sum::<u64>());
/// # }
/// ```
#[cfg(any(feature = "tokio", feature = "rayon"))]
#[cfg_attr(docsrs, doc(cfg(any(feature = "tokio", feature = "rayon"))))]
pub mod stream {
    #[doc(inline)]
    pub use bridge_core::stream::{CaughtCrossing, Crossing};
    #[cfg(feature = "rayon")]
    #[cfg_attr(docsrs, doc(cfg(feature = "rayon")))]
    #[doc(inline)]
    pub use bridge_rayon::stream::on_cpu;
    #[cfg(feature = "tokio")]
    #[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
    #[doc(inline)]
    pub use bridge_tokio::stream::on_io;
}

#[cfg(feature = "object_store")]
#[cfg_attr(docsrs, doc(cfg(feature = "object_store")))]
#[doc(inline)]
pub use bridge_object_store as object_store;

/// The guide: which call to make where, how to read the metrics and steer the load, and
/// the traps of mixing sync code, tokio and rayon. Its examples run as doctests.
#[cfg(all(feature = "tokio", feature = "rayon"))]
#[doc = include_str!("guide.md")]
pub mod guide {}

/// A snapshot of the bridge's counters, from [`metrics()`]: one part per half of the bridge
/// that this build has.
///
/// Each part counts from the start of the process. Counting costs the hot paths a relaxed
/// increment on a cache line that the counting thread owns (each thread counts on a shard of
/// its own, which a snapshot sums): no lock and no shared write on a spawn, a task's run or
/// a `run_blocking` call. A snapshot taken while work runs is eventually consistent: the
/// shards are read one after the other, so counts made on other threads at that moment may
/// or may not be in it; whatever happened-before the call to [`metrics()`] is.
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
    /// queue wait.
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
    pub cpu: CpuMetrics,
    /// The `run_blocking` calls by route, the handoff pool's threads, and the waits past
    /// the stall warning.
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
    pub io: IoMetrics,
}

/// A snapshot of the bridge's counters; see [`Metrics`] for the parts and what each field
/// counts. Cheap: it sums one small block of counters per thread that has counted, and
/// takes the handoff pool's lock for a moment.
///
/// For an export, call it every few seconds from a thread of your own and log the fields
/// or set gauges from them; `cpu.since(&earlier)` gives the CPU counts of an interval.
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
