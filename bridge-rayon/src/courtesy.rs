//! The CPU side's courtesy to the threads it shares CPUs with, **off unless the user turns it
//! on** (`bridge::configure().yield_after_long_polls(true)`): after a poll of CPU-side async work that
//! ran long, the pool thread yields its CPU to the OS scheduler (`sched_yield`), and a pool
//! thread asks, at its first such poll, for the longest time slice the OS grants.
//!
//! bridge-rayon calls it around its polls (future tasks, stream crossings); the switch is
//! `settings::yield_after_long_polls`.
//!
//! A thread woken while a CPU-bound thread runs on its CPU (an I/O worker whose socket became
//! ready, a runtime's timer) waits for that thread's time slice to end unless the scheduler
//! preempts it, and at equal priority it often does not. A poll boundary is where the CPU side
//! can hand the CPU over at no risk (nothing of the poll is half done), and `sched_yield`
//! costs a system call when nobody waits. So at the end of a poll, a thread that has run
//! for at least [`THRESHOLD`] since it last checked yields: the woken thread runs now, and
//! the pool thread carries on after it. The threshold is fixed and long next to the cost of a
//! `sched_yield` with nobody waiting, so the yields take a small share of the work they follow.
//!
//! A yield can only come between polls, and one poll may last milliseconds. So a thread that
//! runs the CPU side's polls also asks for the longest slice
//! ([`os::MAX_SLICE`](crate::os::MAX_SLICE), Linux 6.12 and later; older kernels ignore
//! it): its share of the CPU is unchanged, but a thread at the default slice that wakes then
//! preempts it. The thread keeps the slice for its life. Both change how the OS schedules
//! threads the bridge did not create (rayon's pools are the application's), which is why
//! neither happens unless asked for.
//!
//! Under `--cfg bridge_loom` nothing yields, no clock is read and no slice is asked for.

use bridge_core::counters::{Counters, Local};
#[cfg(not(bridge_loom))]
use std::cell::Cell;
use std::time::{Duration, Instant};

/// A poll (with what the thread did since its last check) that ran this long is followed
/// by a yield.
pub(crate) const THRESHOLD: Duration = Duration::from_micros(100);

/// Whether the courtesy is on (`settings::yield_after_long_polls`).
pub(crate) fn enabled() -> bool {
    crate::settings::yield_after_long_polls()
}

/// The yields made here, process-wide (bridge-rayon's metrics report them).
static YIELDS: Counters<1> = Counters::new();

thread_local! {
    static SHARD: Local<1> = Local::new(&YIELDS);
}

/// How many times a thread has yielded after a poll, since the process started.
pub(crate) fn yields() -> u64 {
    YIELDS.snapshot()[0]
}

#[cfg(not(bridge_loom))]
thread_local! {
    /// When this thread last checked here: the end of its last poll of CPU-side work, or its
    /// last yield. Only the end of a poll is read from the clock (one read per poll, not
    /// two); the time since the last check covers the poll that just ended, and whatever the
    /// thread did between the two.
    static CHECKED_AT: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// Whether a thread that last checked at `checked_at` (never: `None`) has run long enough at
/// `now` to yield: at least `threshold` since that check. A thread that never checked, nor
/// passed [`before_poll`], has nothing to measure from and does not yield.
pub(crate) fn due(checked_at: Option<Instant>, now: Instant, threshold: Duration) -> bool {
    checked_at.is_some_and(|at| now.saturating_duration_since(at) >= threshold)
}

/// Called at the end of each poll of CPU-side work (a future task's poll, a CPU-side
/// stream's item): if the courtesy is on, yields this thread's CPU if at least [`THRESHOLD`] passed since its last
/// check here. Returns whether it yielded.
///
/// The time since the last check is the poll's own when the thread polls CPU-side work back
/// to back (a busy pool, a stream's items). After the thread did something else in
/// between, or slept, it is longer than the poll, and a short poll may yield once: a
/// `sched_yield` with nobody waiting is cheap, and there is at most one per threshold.
#[cfg(not(bridge_loom))]
pub(crate) fn after_poll() -> bool {
    if !enabled() {
        return false;
    }
    let now = Instant::now();
    if !due(CHECKED_AT.get(), now, THRESHOLD) {
        CHECKED_AT.set(Some(now));
        return false;
    }
    std::thread::yield_now();
    CHECKED_AT.set(Some(Instant::now()));
    YIELDS.add(&SHARD, 0, 1);
    true
}

/// Called at the start of a poll of CPU-side work: on a thread that has never checked, the
/// poll is measured from here (a thread's first poll would otherwise never yield), and the
/// thread asks for a long time slice (see the module docs). A thread-local read otherwise.
#[cfg(not(bridge_loom))]
#[inline]
pub(crate) fn before_poll() {
    if enabled() && CHECKED_AT.get().is_none() {
        first_poll();
    }
}

/// A thread's first poll of CPU-side work: the start of its first measured poll, and its
/// request for the longest time slice (see the module docs). The request's outcome is not
/// needed: off Linux, on a kernel without custom slices or for a real-time thread the thread
/// keeps what it has.
#[cfg(not(bridge_loom))]
#[cold]
fn first_poll() {
    let _ = crate::os::set_thread_slice(crate::os::MAX_SLICE);
    CHECKED_AT.set(Some(Instant::now()));
}

/// Under loom: nothing to measure.
#[cfg(bridge_loom)]
#[inline]
pub(crate) fn before_poll() {}

/// Under loom: never yields.
#[cfg(bridge_loom)]
pub(crate) fn after_poll() -> bool {
    false
}

#[cfg(all(test, not(bridge_loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_thread_yields_once_the_threshold_passed_since_its_last_check() {
        let t0 = Instant::now();
        let th = Duration::from_micros(100);
        assert!(!due(None, t0, th));
        assert!(!due(Some(t0), t0 + Duration::from_micros(99), th));
        assert!(due(Some(t0), t0 + th, th));
    }

    /// Runs a poll of `length` on a fresh thread: its time slice before and after, and
    /// whether it yielded after the poll.
    fn poll_on_a_fresh_thread(length: Duration) -> (Option<Duration>, Option<Duration>, bool) {
        std::thread::spawn(move || {
            let before = slice();
            before_poll();
            let start = Instant::now();
            while start.elapsed() < length {
                std::hint::spin_loop();
            }
            let yielded = after_poll();
            (before, slice(), yielded)
        })
        .join()
        .unwrap()
    }

    /// The thread's time slice (`None` where the OS has none to report).
    fn slice() -> Option<Duration> {
        crate::os::thread_slice().ok().flatten()
    }

    /// One test, since the switch is the process's: off by default (no slice asked for, no
    /// yield), on when set (the longest slice, a yield after a long poll and none after a
    /// short one), off again.
    #[test]
    fn the_courtesy_changes_nothing_unless_turned_on() {
        let long = THRESHOLD * 3;
        let mine = slice();
        let yields_before = yields();
        let (before, after, yielded) = poll_on_a_fresh_thread(long);
        assert_eq!(after, before, "off: the slice is left alone");
        assert!(!yielded, "off: no yield");
        assert_eq!(yields(), yields_before);

        crate::settings::set_yield_after_long_polls(true);
        let (before, after, yielded) = poll_on_a_fresh_thread(long);
        // A kernel before 6.12 reports no slice and keeps the default.
        assert_eq!(after, before.map(|_| crate::os::MAX_SLICE));
        assert!(yielded, "on: a long poll yields");
        assert_eq!(yields(), yields_before + 1);
        let (_, _, yielded) = poll_on_a_fresh_thread(Duration::ZERO);
        assert!(!yielded, "on: a short poll does not");
        crate::settings::set_yield_after_long_polls(false);
        assert_eq!(slice(), mine, "only the polling threads' slices change");

        on_a_pool();
    }

    /// A pool of one thread at nice 3 (lower than the default, so that the test sees whether
    /// asking for a slice kept it).
    fn pool_at_nice_3() -> std::sync::Arc<rayon_core::ThreadPool> {
        std::sync::Arc::new(
            rayon_core::ThreadPoolBuilder::new()
                .num_threads(1)
                .start_handler(|_| crate::lower_thread_priority(3).unwrap())
                .build()
                .unwrap(),
        )
    }

    /// The slices of a future task's poll on `pool` (with the slice of a thread it starts,
    /// and its nice value), of a stream's items made there, and of the pool thread after.
    struct Seen {
        poll: Option<Duration>,
        nice: i32,
        started: Option<Duration>,
        items: Vec<Option<Duration>>,
        after: Option<Duration>,
    }

    fn look(pool: &std::sync::Arc<rayon_core::ThreadPool>) -> Seen {
        use crate::ThreadPoolExt;
        use futures::StreamExt;

        let (poll, nice, started) = pool
            .spawn_future_task(async {
                let started = std::thread::spawn(slice).join().unwrap();
                (slice(), crate::os::thread_nice().unwrap(), started)
            })
            .wait();
        let items = futures::stream::iter(0..100).map(|_| slice());
        let items: Vec<Option<Duration>> =
            futures::executor::block_on(pool.spawn_stream(items, 8).collect());
        Seen {
            poll,
            nice,
            started,
            items,
            after: pool.install(slice),
        }
    }

    /// On a pool: off, closures, future tasks and streams leave the slice alone; on, a future
    /// task's poll and a stream's items run with the longest slice at the same nice value, a
    /// thread started in a poll has the default, the pool thread keeps the slice afterwards,
    /// and the caller's never changes.
    fn on_a_pool() {
        let default = std::thread::spawn(slice).join().unwrap();
        let caller = slice();
        let long = default.map(|_| crate::os::MAX_SLICE);
        // The pool asks for nice 3; a test run already nicer than that (`nice cargo test`)
        // stays as nice as it is.
        let nice = crate::os::thread_nice().unwrap().max(3);

        let pool = pool_at_nice_3();
        assert_eq!(pool.install(|| crate::spawn(|| 1).wait()), 1);
        let seen = look(&pool);
        assert_eq!(seen.poll, default);
        assert_eq!(seen.items.len(), 100);
        assert!(seen.items.iter().all(|&s| s == default));
        assert_eq!(seen.after, default);
        assert_eq!(seen.nice, nice);

        crate::settings::set_yield_after_long_polls(true);
        let pool = pool_at_nice_3();
        assert_eq!(pool.install(slice), default);
        let seen = look(&pool);
        crate::settings::set_yield_after_long_polls(false);
        assert_eq!(seen.poll, long);
        assert_eq!(seen.nice, nice);
        assert_eq!(seen.started, default);
        assert_eq!(seen.items.len(), 100);
        assert!(seen.items.iter().all(|&s| s == long));
        assert_eq!(seen.after, long);
        assert_eq!(slice(), caller, "the caller's slice did not change");
    }
}
