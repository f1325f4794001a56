//! The CPU side's courtesy to the threads it shares CPUs with: after a poll of CPU-side async
//! work that ran long, the pool thread yields its CPU to the OS scheduler (`sched_yield`).
//!
//! Internal to the bridge crates (hidden from the docs, no stability promise).
//!
//! A thread woken while a CPU-bound thread runs on its CPU (an I/O worker whose socket became
//! ready, a runtime's timer) waits for that thread's time slice to end unless the scheduler
//! preempts it, and at equal priority it often does not: on a machine whose CPUs are all busy
//! each step of an I/O request can wait milliseconds. A poll boundary is where the CPU side
//! can hand the CPU over at no risk (nothing of the poll is half done), and `sched_yield`
//! costs a system call when nobody waits. So at the end of a poll, a thread that has run
//! for at least [`threshold`] since it last checked yields: the woken thread runs now, and
//! the pool thread carries on after it.
//!
//! The threshold bounds what the yields cost: a hundred times what one `sched_yield` costs on
//! this machine, measured at first use (the fastest of a few calls, which is the call without
//! a switch), so the yields take at most about 1% of the CPU work they follow. Bounds keep a
//! measurement taken on a saturated machine from making it useless: at least
//! [`MIN_THRESHOLD`] (short polls never pay), at most [`MAX_THRESHOLD`] (below a time slice).
//!
//! A yield can only come between polls, and one poll of CPU work may last milliseconds (a
//! batch decoded). So a thread that runs the CPU side's polls also asks the OS, at its first
//! such poll, for the longest time slice it grants ([`__os::MAX_SLICE`](crate::__os::MAX_SLICE),
//! Linux 6.12 and later; older kernels ignore it). The slice does not change the thread's
//! share of the CPU (its nice value does that); it changes who goes first among threads that
//! want a CPU: a thread at the default slice that wakes has an earlier deadline than the pool
//! thread, so the scheduler preempts the pool thread for it instead of letting it wait for the
//! pool thread's poll to end. The thread keeps the slice after the poll (rayon's threads are
//! the CPU side for the life of the pool); the threads it starts begin with the default (a
//! runtime built lazily in a poll is no CPU side). A thread at a raised priority (a negative
//! nice value) is left as it is.
//!
//! Under `--cfg bridge_loom` nothing yields, no clock is read and no slice is asked for: the
//! models explore the task's states, not the OS scheduler.

use crate::__counters::{Counters, Local};
#[cfg(not(bridge_loom))]
use std::cell::Cell;
#[cfg(not(bridge_loom))]
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// A yield costs at most this share of the poll it follows (as a divisor: 1%).
pub const COST_SHARE: u32 = 100;

/// The least threshold: polls shorter than this never yield.
pub const MIN_THRESHOLD: Duration = Duration::from_micros(10);

/// The greatest threshold: a poll this long always yields (an OS time slice is a few ms).
pub const MAX_THRESHOLD: Duration = Duration::from_millis(1);

/// How many `sched_yield` calls the first use times; the fastest one counts.
#[cfg(not(bridge_loom))]
const CALIBRATION_CALLS: u32 = 16;

/// The yields made here, process-wide (bridge-rayon's metrics report them).
static YIELDS: Counters<1> = Counters::new();

thread_local! {
    static SHARD: Local<1> = Local::new(&YIELDS);
}

/// How many times a thread has yielded after a poll, since the process started.
pub fn yields() -> u64 {
    YIELDS.snapshot()[0]
}

#[cfg(not(bridge_loom))]
thread_local! {
    /// When this thread last checked here: the end of its last poll of CPU-side work, or its
    /// last yield. Only the end of a poll is read from the clock (a read costs about 40 ns on
    /// a virtual machine, a tenth of a cheap poll); the time since the last check covers the
    /// poll that just ended, and whatever the thread did between the two.
    static CHECKED_AT: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// The time a poll must have run for the thread to yield after it (see the module docs).
#[cfg(not(bridge_loom))]
pub fn threshold() -> Duration {
    static THRESHOLD: OnceLock<Duration> = OnceLock::new();
    *THRESHOLD.get_or_init(|| {
        let fastest = (0..CALIBRATION_CALLS)
            .map(|_| {
                let start = Instant::now();
                std::thread::yield_now();
                start.elapsed()
            })
            .min()
            .unwrap_or(Duration::ZERO);
        bounded(fastest * COST_SHARE)
    })
}

/// The threshold for a measured yield cost already multiplied by [`COST_SHARE`].
#[cfg(not(bridge_loom))]
fn bounded(threshold: Duration) -> Duration {
    threshold.clamp(MIN_THRESHOLD, MAX_THRESHOLD)
}

/// Whether a thread that last checked at `checked_at` (never: `None`) has run long enough at
/// `now` to yield: at least `threshold` since that check. A thread that never checked, nor
/// passed [`before_poll`], has nothing to measure from and does not yield.
pub fn due(checked_at: Option<Instant>, now: Instant, threshold: Duration) -> bool {
    checked_at.is_some_and(|at| now.saturating_duration_since(at) >= threshold)
}

/// Called at the end of each poll of CPU-side work (a future task's poll, a CPU-side
/// stream's item): yields this thread's CPU if at least [`threshold`] passed since its last
/// check here. Returns whether it yielded.
///
/// The time since the last check is the poll's own when the thread polls CPU-side work back
/// to back (a busy pool, a stream's items). After the thread did something else in
/// between, or slept, it is longer than the poll, and a short poll may yield once: a
/// `sched_yield` with nobody waiting costs about a microsecond, at most one per threshold.
#[cfg(not(bridge_loom))]
pub fn after_poll() -> bool {
    let now = Instant::now();
    if !due(CHECKED_AT.get(), now, threshold()) {
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
pub fn before_poll() {
    if CHECKED_AT.get().is_none() {
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
    let _ = crate::__os::set_thread_slice(crate::__os::MAX_SLICE);
    CHECKED_AT.set(Some(Instant::now()));
}

/// Under loom: nothing to measure.
#[cfg(bridge_loom)]
#[inline]
pub fn before_poll() {}

/// Under loom: never yields.
#[cfg(bridge_loom)]
pub fn after_poll() -> bool {
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

    #[test]
    fn the_threshold_stays_within_its_bounds() {
        assert_eq!(bounded(Duration::ZERO), MIN_THRESHOLD);
        assert_eq!(bounded(Duration::from_millis(50)), MAX_THRESHOLD);
        let t = threshold();
        assert!((MIN_THRESHOLD..=MAX_THRESHOLD).contains(&t), "{t:?}");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_thread_asks_for_the_longest_slice_at_its_first_poll() {
        use crate::__os::{MAX_SLICE, thread_slice};
        let caller = thread_slice().unwrap();
        let (before, after) = std::thread::spawn(|| {
            let before = thread_slice().unwrap();
            before_poll();
            (before, thread_slice().unwrap())
        })
        .join()
        .unwrap();
        // A kernel before 6.12 reports no slice and keeps the default.
        assert_eq!(after, before.map(|_| MAX_SLICE));
        assert_eq!(thread_slice().unwrap(), caller, "only the polling thread's");
    }

    #[test]
    fn a_long_poll_yields_and_a_short_one_does_not() {
        before_poll();
        let long = Instant::now();
        while long.elapsed() < MAX_THRESHOLD {
            std::hint::spin_loop();
        }
        let before = yields();
        assert!(after_poll());
        assert_eq!(yields(), before + 1);
        // Measured from the yield just made: nothing has run since.
        assert!(!after_poll());
    }
}
