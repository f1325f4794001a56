//! Counts of the `run_blocking` calls by route, and the handoff pool's threads.
//!
//! A call counts on the calling thread's shard of bridge-core's `counters` (a relaxed
//! load and store on a cache line that thread owns), once, where its route is decided
//! (`run::run`).
//! A handoff made on a current-thread runtime that waits past the stall threshold counts on
//! the same shard, once, where its wait passes the threshold (`stall`).
//! The pool's numbers are read under its lock at snapshot time.

use crate::context::Route;
use bridge_core::Histogram;
use bridge_core::counters::{Counters, Local};
use std::time::Duration;

/// The counters, by index in the set.
const ON_WORKER: usize = 0;
const HANDOFF: usize = 1;
const INLINE: usize = 2;
const STALLED: usize = 3;
const SLOW_POLLS: usize = 4;
const HELD_RUNTIMES: usize = 5;
/// The first of the poll-duration histogram's buckets.
const POLLS: usize = 6;
const COUNT: usize = POLLS + bridge_core::histogram::BUCKETS;

static COUNTERS: Counters<COUNT> = Counters::new();

thread_local! {
    static SHARD: Local<COUNT> = Local::new(&COUNTERS);
}

/// Counts a call that takes `route`.
#[inline]
pub(crate) fn call(route: Route) {
    let counter = match route {
        Route::OnWorker => ON_WORKER,
        Route::Handoff => HANDOFF,
        Route::Inline => INLINE,
    };
    COUNTERS.add(&SHARD, counter, 1);
}

/// Counts a handoff made on a current-thread runtime that waited past the stall threshold.
pub(crate) fn stalled_handoff() {
    COUNTERS.add(&SHARD, STALLED, 1);
}

/// Records the duration of a poll made on the I/O side.
#[inline]
pub(crate) fn polled(duration: Duration) {
    let bucket = bridge_core::histogram::bucket(duration);
    COUNTERS.add(&SHARD, POLLS + bucket, 1);
}

/// Counts a poll on the I/O side reported as slow.
pub(crate) fn slow_poll() {
    COUNTERS.add(&SHARD, SLOW_POLLS, 1);
}

/// Counts a watched runtime reported as held.
pub(crate) fn held_runtime() {
    COUNTERS.add(&SHARD, HELD_RUNTIMES, 1);
}

/// A snapshot of the I/O side's counters, from `bridge::metrics().io`.
///
/// The call counters count from the start of the process, every public form of the call
/// alike: [`run_blocking`](crate::run_blocking), [`try_run_blocking`](crate::try_run_blocking),
/// [`try_run_blocking_timeout`](crate::try_run_blocking_timeout). A call is counted once,
/// when it starts, by the route it takes from the calling
/// context, whatever the call's outcome (a panic, a timeout, its runtime lost). Each thread
/// counts on a shard
/// of its own, which the snapshot sums: a call made on another thread at the moment of the
/// snapshot may or may not be in it, one that happened-before it always is.
///
/// The handoff pool's numbers are read under its lock: a consistent view of the pool at
/// one moment (with the peak read just after).
///
/// # Examples
///
/// ```
/// let before = bridge::metrics().io;
/// bridge::run_blocking(async { 1 }); // a plain thread: no runtime, inline
/// let after = bridge::metrics().io;
/// assert!(after.inline > before.inline);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct IoMetrics {
    /// Calls made in a task of a live multi-thread runtime (route `OnWorker`): polled on its
    /// worker, which leaves the scheduler with `block_in_place` only if the future is not
    /// ready at its first poll.
    pub on_worker: u64,
    /// Calls made on a current-thread runtime, its `LocalSet`s and `spawn_blocking` threads,
    /// on a multi-thread runtime's threads other than its workers (its `block_on` body, a
    /// `LocalSet` there, a `spawn_blocking` thread), or in a thread-local destructor after
    /// tokio's (route `Handoff`): the future went to a handoff thread.
    pub handoff: u64,
    /// Calls made with no runtime, on a multi-thread runtime that is shutting down, or
    /// nested in a future that the bridge polls on a thread of its own (a handoff worker,
    /// another call's poll loop) (route `Inline`): the future was polled on the calling
    /// thread.
    pub inline: u64,
    /// Handoff threads alive now, busy or idle (a thread counts from the moment the pool
    /// decides to start it until it retires after its keep-alive,
    /// `bridge::configure().handoff_keep_alive`).
    pub handoff_threads_alive: usize,
    /// Handoff threads idle now, waiting for a call.
    pub handoff_threads_idle: usize,
    /// The most handoff threads alive at once since the process started.
    pub handoff_threads_peak: usize,
    /// Handoff calls waiting now for a thread: the pool is at its cap
    /// (`bridge::configure().handoff_threads`) and none is idle.
    pub handoff_queued: usize,
    /// Calls made on a current-thread runtime (its `block_on` body, a task, a `LocalSet` or a
    /// `spawn_blocking` thread there) that waited for their handed-off future longer than
    /// the stall warning (`bridge::configure().stall_warning`), counted once each when the wait passed it
    /// (and logged, feature `tracing`, to an installed subscriber; otherwise the first one of
    /// the process writes the warning to stderr). That runtime drives none of its timers,
    /// sockets or tasks while such a call waits: a future that needs one of them (a
    /// `tokio::time::sleep` created in its body) never finishes. Each is one of the
    /// [`handoff`](Self::handoff) calls too ([`calls`](Self::calls) does not count it twice).
    pub stalled_handoffs: u64,
    /// How long the polls of the futures the bridge runs on the I/O side took
    /// (`bridge::spawn_io`, `IoRuntime::spawn`, `stream::on_io`, `IoStore`): every poll, on
    /// every I/O runtime. A poll holds its worker for as long: the tail of this histogram is
    /// the I/O latency that CPU work on the I/O side adds.
    pub poll_durations: Histogram,
    /// Polls of those futures that held their worker past the slow-poll threshold
    /// (`bridge::configure().slow_poll`), each counted once, while it ran (and logged, feature
    /// `tracing`, with its spawn site).
    pub slow_polls: u64,
    /// Times a runtime under `bridge::rt::watch` scheduled its probe later than the
    /// slow-poll threshold: its workers were held (each late probe counted once, and logged,
    /// feature `tracing`).
    pub held_runtimes: u64,
}

impl IoMetrics {
    /// Every call counted, whatever its route.
    ///
    /// # Examples
    ///
    /// ```
    /// let m = bridge::metrics().io;
    /// assert_eq!(m.calls(), m.on_worker + m.handoff + m.inline);
    /// ```
    pub fn calls(&self) -> u64 {
        self.on_worker
            .wrapping_add(self.handoff)
            .wrapping_add(self.inline)
    }
}

/// A snapshot of the synchronous side's counters: `run_blocking` calls by route, the
/// handoff pool's threads alive, idle and at most, calls queued for its cap, and handoffs
/// that a current-thread runtime waited for past the stall threshold. See
/// [`IoMetrics`] for what each counts.
///
/// Cheap to call: it sums one small block of counters per thread that has made a call and
/// takes the handoff pool's lock for a moment. Counting costs each call a relaxed
/// increment on a cache line that the calling thread owns: no lock, no shared write.
///
/// # Examples
///
/// ```
/// let m = bridge::metrics().io;
/// println!(
///     "io: calls on_worker={} handoff={} inline={}; handoff threads alive={} idle={} peak={} queued={}",
///     m.on_worker, m.handoff, m.inline,
///     m.handoff_threads_alive, m.handoff_threads_idle, m.handoff_threads_peak, m.handoff_queued,
/// );
/// assert!(m.handoff_threads_peak >= m.handoff_threads_alive);
/// ```
#[cfg(not(bridge_loom))]
pub fn metrics() -> IoMetrics {
    let counts = COUNTERS.snapshot();
    let pool = crate::handoff::pool::Pool::global();
    let (alive, idle, queued) = pool.stats();
    // After `stats`: the peak only grows, so it is at least the `alive` just read.
    let peak = pool.peak();
    IoMetrics {
        on_worker: counts[ON_WORKER],
        handoff: counts[HANDOFF],
        inline: counts[INLINE],
        handoff_threads_alive: alive,
        handoff_threads_idle: idle,
        handoff_threads_peak: peak,
        handoff_queued: queued,
        stalled_handoffs: counts[STALLED],
        poll_durations: bridge_core::histogram::from_counts(std::array::from_fn(|k| {
            counts[POLLS + k]
        })),
        slow_polls: counts[SLOW_POLLS],
        held_runtimes: counts[HELD_RUNTIMES],
    }
}
