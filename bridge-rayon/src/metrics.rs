//! Counts of the tasks spawned, started, finished, panicked and cancelled, and how long they
//! waited between their spawn and their start.
//!
//! Every count goes to the counting thread's shard of bridge-core's `counters`: a relaxed
//! load and store on a cache line that thread owns. Counted where it happens: a spawn in
//! `Task::new`, the rest in `job::run`, on whichever thread runs the job (a pool thread, or
//! the waiter that claimed it).

use bridge_core::Histogram;
use bridge_core::counters::{Counters, Local};
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
use std::time::Instant;

/// The counters, by index in the set.
const SPAWNED: usize = 0;
const STARTED: usize = 1;
const FINISHED: usize = 2;
const PANICKED: usize = 3;
const CANCELLED: usize = 4;
const STALLED: usize = 5;
/// The first of the queue-wait histogram's buckets.
const WAIT: usize = 6;
/// Buckets of the queue-wait histogram (see `bridge_core::Histogram`).
const BUCKETS: usize = bridge_core::histogram::BUCKETS;
const COUNT: usize = WAIT + BUCKETS;

static COUNTERS: Counters<COUNT> = Counters::new();

thread_local! {
    static SHARD: Local<COUNT> = Local::new(&COUNTERS);
}

/// One spawn in this many, per spawning thread, is timed; a power of two, less one.
static SAMPLING_MASK: AtomicU32 = AtomicU32::new(DEFAULT_SAMPLING - 1);

/// The default sampling period of the queue wait. Reading the clock at a spawn and at the
/// start is a visible share of the cheapest hop (a task claimed and run inline by its
/// waiter) when every task is timed; at one in 64 the timing costs no more than the counts
/// alone (the hop study measures it).
const DEFAULT_SAMPLING: u32 = 64;

#[inline]
fn count(counter: usize) -> u64 {
    COUNTERS.add(&SHARD, counter, 1)
}

/// Counts a spawn; the time of the spawn if this task's queue wait is to be sampled: the
/// first spawn of each thread, then one in [`DEFAULT_SAMPLING`] (or what the test hook set).
/// A clock read is a visible share of a hop, so timing every task would cost more than the
/// metrics are allowed.
#[inline]
pub(crate) fn spawned() -> Option<Instant> {
    let before = count(SPAWNED);
    // ORDERING: Relaxed: a setting read on its own; a spawn that sees the old period after
    // a change merely samples by the old one.
    let mask = SAMPLING_MASK.load(Relaxed);
    (u64::from(mask) & before == 0).then(Instant::now)
}

/// Counts a job that found its task dropped and never ran the closure.
#[inline]
pub(crate) fn cancelled() {
    count(CANCELLED);
}

/// Counts a start, and the queue wait of a sampled task.
#[inline]
pub(crate) fn started(spawned_at: Option<Instant>) {
    count(STARTED);
    if let Some(at) = spawned_at {
        count(WAIT + bridge_core::histogram::bucket(at.elapsed()));
    }
}

/// Counts a wait that passed the stall threshold with its task still queued.
pub(crate) fn stalled_wait() {
    count(STALLED);
}

/// Counts the closure's return, or its panic.
#[inline]
pub(crate) fn ended(panicked: bool) {
    count(if panicked { PANICKED } else { FINISHED });
}

/// A snapshot of the CPU tasks' counters, from `bridge::metrics().cpu`.
///
/// The counters count from the start of the process, across every pool (the global one and
/// every `rayon::ThreadPool` the `ThreadPoolExt` methods use) and
/// every way to spawn ([`spawn`](crate::spawn), [`spawn_fifo`](crate::spawn_fifo),
/// [`spawn_cancellable`](crate::spawn_cancellable), `spawn_future`, `ThreadPoolExt`,
/// [`Limit`](crate::Limit)).
///
/// Every task is spawned once, then either starts (and then finishes or panics) or is
/// cancelled: at rest, `spawned == started + cancelled` and `started == finished +
/// panicked`. A snapshot taken while tasks run is eventually consistent: each thread counts
/// on its own shard, and the snapshot reads the shards one after the other, so it may see a
/// task's start (counted on the thread that ran it) without its spawn (counted on the
/// thread that spawned it). [`queued`](Self::queued) and [`running`](Self::running)
/// saturate at zero for that reason. Whatever happened-before the snapshot is in
/// the snapshot: after `task.wait()` returns, the task's start and finish are counted.
///
/// # Examples
///
/// ```
/// let before = bridge::metrics().cpu;
/// assert_eq!(bridge::spawn(|| 2 + 2).wait(), 4);
/// let after = bridge::metrics().cpu;
/// assert!(after.spawned > before.spawned);
/// assert!(after.finished > before.finished);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CpuMetrics {
    /// Tasks spawned: counted on the spawning thread when the task is made, before its job
    /// goes to the pool.
    pub spawned: u64,
    /// Tasks whose closure started: counted on the thread that runs it (a pool thread, or
    /// the spawning worker that waits for the task and runs its job inline) just before the
    /// closure is called.
    pub started: u64,
    /// Started tasks whose closure returned a value, counted when it returns (before the
    /// value is sent to the task, so a waiter that has the value sees it counted). A task
    /// dropped while its closure runs still counts here when the closure returns.
    pub finished: u64,
    /// Started tasks whose closure panicked, counted when the panic is caught on the
    /// thread that ran it.
    pub panicked: u64,
    /// Tasks cancelled before they started: their job found the task dropped (not
    /// [detached](crate::Task::detach)) and never called the closure. Counted when the pool
    /// gets to the job, not at the drop. A job that rayon would drop without running it
    /// (rayon never does) counts here too.
    pub cancelled: u64,
    /// How long sampled tasks waited between their spawn and the start of their closure.
    pub queue_wait: Histogram,
    /// Times a pool thread yielded its CPU to the OS scheduler after a long poll of a future
    /// task (`spawn_future`, `spawn_future_task`) or a long poll of a CPU-side stream's item
    /// (`spawn_stream`, and the facade's `bridge::stream::on_cpu`), with
    /// `bridge::configure().yield_after_long_polls` on (0 otherwise): a
    /// thread woken meanwhile on that CPU (an I/O worker, a timer's thread) ran before the
    /// pool thread went on. Closures (`spawn`, `spawn_task` ...) never yield.
    pub yielded: u64,
    /// Waits from outside rayon (`wait`, `join` on a thread that is not a rayon worker) that
    /// reached the stall threshold (`bridge::configure().stall_warning`, 5 s by default) with their
    /// task still queued: every thread of its pool was busy or blocked. Each also logs one
    /// warning (feature `tracing`). A waiter on a rayon worker runs the work it waits for,
    /// so it never counts here.
    pub stalled_waits: u64,
}

impl CpuMetrics {
    /// Tasks spawned and neither started nor cancelled yet: queued in a pool, or, for a
    /// cancelled task, not yet reached by it (`spawned - started - cancelled`, 0 if the
    /// snapshot saw a start before its spawn).
    ///
    /// # Examples
    ///
    /// ```
    /// use bridge::cpu::ThreadPoolExt;
    ///
    /// let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    /// let (open, gate) = std::sync::mpsc::channel::<()>();
    /// let (started, has_started) = std::sync::mpsc::channel();
    /// let blocker = pool.spawn_task(move || {
    ///     started.send(()).unwrap();
    ///     gate.recv().unwrap();
    /// });
    /// has_started.recv().unwrap();
    ///
    /// // Behind the blocker on the pool's only thread, the task is queued.
    /// let waiting = pool.spawn_task(|| 1);
    /// println!("{} CPU tasks queued", bridge::metrics().cpu.queued());
    /// open.send(()).unwrap();
    /// blocker.wait();
    /// assert_eq!(waiting.wait(), 1);
    /// ```
    pub fn queued(&self) -> u64 {
        self.spawned
            .saturating_sub(self.started)
            .saturating_sub(self.cancelled)
    }

    /// Tasks whose closure has started and not yet returned or panicked (`started - finished
    /// - panicked`, saturating at 0).
    ///
    /// # Examples
    ///
    /// ```
    /// let (started, has_started) = std::sync::mpsc::channel();
    /// let (open, gate) = std::sync::mpsc::channel::<()>();
    /// let task = bridge::spawn(move || {
    ///     started.send(()).unwrap();
    ///     gate.recv().unwrap();
    /// });
    /// has_started.recv().unwrap();
    /// println!("{} CPU tasks running", bridge::metrics().cpu.running());
    /// open.send(()).unwrap();
    /// task.wait();
    /// ```
    pub fn running(&self) -> u64 {
        self.started
            .saturating_sub(self.finished)
            .saturating_sub(self.panicked)
    }

    /// What was counted after `earlier`, an older snapshot: each counter's difference, and
    /// the queue waits sampled since (for a rate, or the percentiles of the last interval).
    /// Saturates at 0, so a snapshot passed in the wrong order gives zeros, not a panic.
    ///
    /// # Examples
    ///
    /// ```
    /// let before = bridge::metrics().cpu;
    /// bridge::spawn(|| ()).wait();
    /// let delta = bridge::metrics().cpu.since(&before);
    /// // This thread's spawn and start are in; other threads may have added theirs.
    /// assert!(delta.spawned >= 1 && delta.finished >= 1);
    /// ```
    #[must_use]
    pub fn since(&self, earlier: &CpuMetrics) -> CpuMetrics {
        CpuMetrics {
            spawned: self.spawned.saturating_sub(earlier.spawned),
            started: self.started.saturating_sub(earlier.started),
            finished: self.finished.saturating_sub(earlier.finished),
            panicked: self.panicked.saturating_sub(earlier.panicked),
            cancelled: self.cancelled.saturating_sub(earlier.cancelled),
            queue_wait: self.queue_wait.since(&earlier.queue_wait),
            yielded: self.yielded.saturating_sub(earlier.yielded),
            stalled_waits: self.stalled_waits.saturating_sub(earlier.stalled_waits),
        }
    }
}

/// A snapshot of the CPU tasks' counters: spawned, started, finished, panicked, cancelled
/// before they started, queued now, and a histogram of their queue wait. See [`CpuMetrics`]
/// for what each counts.
///
/// Cheap to call (it sums one small block of counters per thread that has spawned or run a
/// task), and cheap to feed: each count is a relaxed increment on a cache line that the
/// counting thread owns, with no lock and no shared write on the spawn or run path.
///
/// # Examples
///
/// ```
/// let before = bridge::metrics().cpu;
/// let task = bridge::spawn(|| -> u8 { panic!("bad input") });
/// assert!(task.join().is_err());
/// let after = bridge::metrics().cpu;
/// assert!(after.panicked > before.panicked);
/// println!(
///     "cpu tasks: {} spawned, {} queued, p99 queue wait {:?}",
///     after.spawned,
///     after.queued(),
///     after.queue_wait.percentile(99.0),
/// );
/// ```
pub fn metrics() -> CpuMetrics {
    let counts = COUNTERS.snapshot();
    CpuMetrics {
        spawned: counts[SPAWNED],
        started: counts[STARTED],
        finished: counts[FINISHED],
        panicked: counts[PANICKED],
        cancelled: counts[CANCELLED],
        queue_wait: bridge_core::histogram::from_counts(std::array::from_fn(|k| counts[WAIT + k])),
        yielded: crate::courtesy::yields(),
        stalled_waits: counts[STALLED],
    }
}

/// For the tests: each spawning thread times one task in `period` (rounded up to a power of
/// two; 0 counts as 1) from its next spawn on; returns the previous period. `1` times every
/// task, for exact tests.
#[cfg(all(test, not(bridge_loom)))]
fn set_queue_wait_sampling(period: u32) -> u32 {
    let mask = period.max(1).checked_next_power_of_two().unwrap_or(1 << 31) - 1;
    // ORDERING: Relaxed: see `spawned`.
    SAMPLING_MASK.swap(mask, Relaxed) + 1
}

/// The sampling period's tests: unit tests, since the period is no API (no other unit test
/// of this crate spawns tasks, so the process-wide counters see only these).
#[cfg(all(test, not(bridge_loom)))]
mod sampling_tests {
    use super::set_queue_wait_sampling;
    use crate::ThreadPoolExt;
    use std::sync::{Arc, Mutex, mpsc};
    use std::thread;
    use std::time::Duration;

    /// The two tests change the period: one at a time.
    static SERIAL: Mutex<()> = Mutex::new(());

    fn pool(threads: usize) -> rayon::ThreadPool {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
    }

    #[test]
    fn queue_waits_are_timed_for_every_task_when_the_period_is_one() {
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let period = set_queue_wait_sampling(1);
        let pool = pool(1);
        // Occupy the pool's one thread until told.
        let (open, gate) = mpsc::channel::<()>();
        let (started_tx, started) = mpsc::channel();
        pool.spawn(move || {
            started_tx.send(()).unwrap();
            let _ = gate.recv();
        });
        started.recv().unwrap();
        let before = crate::metrics();
        let queued = pool.spawn_task(|| ());
        let wait = Duration::from_millis(20);
        thread::sleep(wait);
        open.send(()).unwrap();
        queued.wait();
        let quick = pool.spawn_task(|| ());
        quick.wait();
        let waits = crate::metrics().since(&before).queue_wait;
        set_queue_wait_sampling(period);
        assert_eq!(waits.samples(), 2);
        // The slower of the two waited at least the sleep; its bucket's bound is above that.
        let longest = waits.percentile(100.0).unwrap();
        assert!(longest >= wait, "{longest:?}");
        let nonempty: Vec<_> = waits.buckets().filter(|&(_, n)| n > 0).collect();
        assert!(!nonempty.is_empty() && nonempty.iter().map(|&(_, n)| n).sum::<u64>() == 2);
        assert!(waits.percentile(0.0).unwrap() <= longest);
    }

    #[test]
    fn each_thread_times_its_first_spawn_and_then_one_in_sixty_four() {
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        // The default (every test that changes it puts it back).
        let period = set_queue_wait_sampling(64);
        assert_eq!(period, 64);
        let pool = Arc::new(pool(2));
        let before = crate::metrics();
        // Fresh threads: their first spawn is sampled, and then the 65th.
        let threads: Vec<_> = (0..2)
            .map(|_| {
                let pool = Arc::clone(&pool);
                thread::spawn(move || {
                    let tasks: Vec<_> = (0..70).map(|_| pool.spawn_task(|| ())).collect();
                    tasks.into_iter().for_each(crate::Task::wait);
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        let after = crate::metrics().since(&before);
        set_queue_wait_sampling(period);
        assert_eq!(after.spawned, 140);
        assert_eq!(after.queue_wait.samples(), 4);
    }
}
