//! When a waiter should spin before it sleeps: a policy shared by every spin of the bridge
//! crates (the oneshot's blocking receive, the handoff caller's watch, the handoff worker's
//! wait for its next job).
//!
//! Internal to the bridge crates (hidden from the docs, no stability promise).
//!
//! A spin wins when the other side finishes within it: the waiter then skips a park and the
//! other side an unpark, two cross-thread wake-ups that cost microseconds each. It loses when
//! the other side cannot be running, and then every microsecond spun is taken from other work.
//! A [`Site`] spins only while spinning can win:
//!
//! 1. **Never with one CPU.** `available_parallelism()` counts the CPUs this process may run
//!    on (its affinity mask and cgroup quota): with one, the other side shares the CPU and
//!    cannot run while this thread spins.
//! 2. **Never on a saturated machine.** On Linux more runnable threads than CPUs
//!    (`/proc/loadavg`, read at most every [`SAMPLE`]) means some thread is waiting for a
//!    CPU; a spin would take that CPU from it, and the other side of the hand-off is as likely
//!    as anyone to be the thread that waits. The count includes the waiter that samples and,
//!    right after a hand-over, the partner just woken for it: with one CPU to spare for the
//!    two, it is over the CPUs whenever both run, and a spin there takes the CPU its partner
//!    needs (see [`saturated`]).
//! 3. **Only where spins have been catching.** Each site keeps a score of its recent outcomes:
//!    a spin that caught its event raises it by [`HIT`], one that expired lowers it by
//!    [`MISS`]; at zero the site stops spinning and only every [`PROBE`]th wait tries a spin
//!    again, so a site whose partner became fast again learns it back. With equal steps, the
//!    score stays up while at least half the spins catch: a caught spin saves about as much
//!    as an expired one wastes (a park and an unpark against a spin budget of the same order),
//!    so below half the spin loses on average.
//!
//! Under `--cfg bridge_loom` the policy always says yes and records nothing, so the models
//! explore the same branches as before (the spins themselves are one round there).

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

/// A score step for a spin that caught its event.
pub const HIT: u32 = 16;
/// A score step for a spin that expired.
pub const MISS: u32 = 16;
/// The highest score: four expired spins in a row stop a site that was sure.
pub const MAX: u32 = 64;
/// A site that stopped spinning tries once every this many waits.
pub const PROBE: u32 = 8;
/// How often the machine's load is read, at most.
pub const SAMPLE: Duration = Duration::from_millis(10);

/// How every site decides; [`Mode::Adaptive`] unless a test says otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The policy above.
    Adaptive = 0,
    /// Always spin: tests that must reach the spin's arms whatever the machine's load.
    Always = 1,
    /// Never spin.
    Never = 2,
}

static MODE: AtomicU32 = AtomicU32::new(Mode::Adaptive as u32);

/// Sets the mode of every site in the process (for tests).
///
/// # Examples
///
/// ```
/// use bridge_core::__spin::{Mode, Site, set_mode};
///
/// set_mode(Mode::Never);
/// assert!(!Site::new().should_spin());
/// set_mode(Mode::Adaptive);
/// ```
pub fn set_mode(mode: Mode) {
    // ORDERING: Relaxed: a test sets it before the waits it is about.
    MODE.store(mode as u32, Relaxed);
}

/// One place that spins, with the score of its recent spins.
///
/// # Examples
///
/// ```
/// use bridge_core::__spin::Site;
///
/// static WATCH: Site = Site::new();
///
/// let ready = || true;
/// if WATCH.should_spin() {
///     let caught = ready();
///     WATCH.record(caught);
/// }
/// ```
#[derive(Debug)]
pub struct Site {
    /// Recent outcomes, 0 to [`MAX`]; starts at [`MAX`].
    score: AtomicU32,
    /// Waits seen while the score was zero, for the probes.
    skipped: AtomicU32,
}

impl Site {
    /// A site that starts out spinning.
    pub const fn new() -> Self {
        Self {
            score: AtomicU32::new(MAX),
            skipped: AtomicU32::new(0),
        }
    }

    /// Whether the wait about to start should spin first.
    pub fn should_spin(&self) -> bool {
        if cfg!(bridge_loom) {
            return true;
        }
        // ORDERING: Relaxed: see `set_mode`.
        match MODE.load(Relaxed) {
            1 => return true,
            2 => return false,
            _ => {}
        }
        if cpus() <= 1 || saturated() {
            return false;
        }
        // ORDERING: Relaxed throughout: the score is a statistic; a lost update costs one
        // spin more or less, never correctness.
        if self.score.load(Relaxed) > 0 {
            return true;
        }
        self.skipped.fetch_add(1, Relaxed) % PROBE == PROBE - 1
    }

    /// Records whether a spin caught its event.
    pub fn record(&self, caught: bool) {
        if cfg!(bridge_loom) {
            return;
        }
        // ORDERING: Relaxed: see `should_spin`. A plain load and store, not a read-modify-
        // write: concurrent waiters may overwrite each other's step, which only blurs the
        // statistic; and a saturated score is not written at all, so a site that keeps
        // catching does not bounce its cache line between CPUs.
        let score = self.score.load(Relaxed);
        let next = if caught {
            (score + HIT).min(MAX)
        } else {
            score.saturating_sub(MISS)
        };
        if next != score {
            self.score.store(next, Relaxed);
        }
    }

    /// Records a spin's outcome, with where its partner ran: a catch counts as a miss when
    /// the partner delivered from this thread's own CPU. Such a partner could not run while
    /// the spin ran; it ran only once the scheduler took the CPU from the spin (a time slice,
    /// a wake-up that preempts), so the spin cost its partner the time it spun and saved
    /// nothing. This is the regime of a machine with one CPU to spare for two hand-off
    /// partners: the load reading does not call it saturated, yet the partners share a CPU.
    pub fn record_beside(&self, caught: bool, partner: &Stamp) {
        self.record(caught && !partner.shared_with_me());
    }
}

impl Default for Site {
    fn default() -> Self {
        Self::new()
    }
}

/// The CPUs this process may run on.
pub fn cpus() -> usize {
    static CPUS: OnceLock<usize> = OnceLock::new();
    *CPUS.get_or_init(|| std::thread::available_parallelism().map_or(1, usize::from))
}

/// Whether more threads are runnable than there are CPUs, as last sampled.
pub fn saturated() -> bool {
    /// The [`now_ns`] of the next sample, and the last answer in the low bit.
    static STATE: AtomicU64 = AtomicU64::new(0);
    let now = coarse_now_ns();
    // ORDERING: Relaxed: the answer is a hint; the one thread whose exchange wins samples.
    let state = STATE.load(Relaxed);
    if now < state & !1 {
        return state & 1 == 1;
    }
    let sampling_until = (now + duration_nanos(SAMPLE)) & !1;
    // ORDERING: Relaxed, as above: whoever wins the exchange reads the file; the others keep
    // the old answer meanwhile.
    if STATE
        .compare_exchange(state, sampling_until | (state & 1), Relaxed, Relaxed)
        .is_err()
    {
        return state & 1 == 1;
    }
    // More runnable threads than CPUs means somebody is kept from a CPU. The count includes
    // this thread (a waiter about to spin) and, when it samples right after handing work
    // over, the partner just woken for it: with one CPU to spare for the two, the count is
    // over the CPUs whenever both run, and a spin there takes the CPU its partner needs.
    let busy = runnable().is_some_and(|runnable| runnable > cpus());
    // ORDERING: Relaxed, as above.
    STATE.store(sampling_until | u64::from(busy), Relaxed);
    busy
}

fn duration_nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

/// The runnable threads of the machine right now (Linux: the fourth field of
/// `/proc/loadavg`, "runnable/total"); `None` where that cannot be read.
fn runnable() -> Option<usize> {
    let loadavg = std::fs::read_to_string("/proc/loadavg").ok()?;
    let field = loadavg.split_whitespace().nth(3)?;
    field.split('/').next()?.parse().ok()
}

/// A monotonic clock in nanoseconds that is cheap to read and only as fine as the OS's tick
/// (Linux: `CLOCK_MONOTONIC_COARSE`, a few milliseconds): enough to space the load samples
/// [`SAMPLE`] apart, which every wait asks about. Elsewhere, [`now_ns`].
fn coarse_now_ns() -> u64 {
    #[cfg(target_os = "linux")]
    {
        let mut now = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `now` is a live, writable `timespec` that the call fills; the clock id is
        // one Linux has had since 2.6.32, and a failure is a nonzero return, checked below.
        let read = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_COARSE, &mut now) };
        if read == 0 {
            let secs = u64::try_from(now.tv_sec).unwrap_or(0);
            let nanos = u64::try_from(now.tv_nsec).unwrap_or(0);
            return secs.saturating_mul(1_000_000_000).saturating_add(nanos);
        }
    }
    now_ns()
}

/// Nanoseconds since this process first asked (never 0, so 0 can mean "no stamp"): the
/// stamps that [`record_wake`] takes the difference of.
pub fn now_ns() -> u64 {
    ns_at(Instant::now())
}

/// [`now_ns`] of an instant already read (one clock read for a deadline and a stamp).
///
/// # Examples
///
/// ```
/// use bridge_core::__spin::{now_ns, ns_at};
/// use std::time::Instant;
///
/// let before = now_ns();
/// let at = ns_at(Instant::now());
/// assert!(at >= before & !1 && at <= now_ns());
/// ```
pub fn ns_at(at: Instant) -> u64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    let epoch = *EPOCH.get_or_init(|| at);
    u64::try_from(at.saturating_duration_since(epoch).as_nanos()).unwrap_or(u64::MAX) | 1
}

/// A moving figure of measured wake-ups (none until the first sample): the
/// machine's ([`record_wake`], [`wake_estimate`]), or one kind of wake-up's of a caller's.
///
/// It follows the low end of the samples: a lower sample moves it half-way down, a higher
/// one an eighth of the way up. A wake-up that came late because its CPU was busy (the
/// waker itself spinning there, another thread's time slice) is not what parking costs
/// where a spin could have won, and one such sample must not double every budget.
///
/// # Examples
///
/// ```
/// use bridge_core::__spin::{Estimate, now_ns};
///
/// static HAND_BACKS: Estimate = Estimate::new();
/// let woken_at = now_ns();
/// // ... another thread runs again, having been woken at `woken_at` ...
/// HAND_BACKS.record(woken_at);
/// assert!(cfg!(bridge_loom) || HAND_BACKS.get().is_some());
/// ```
#[derive(Debug)]
pub struct Estimate(AtomicU64);

impl Estimate {
    /// No sample yet.
    pub const fn new() -> Self {
        Self(AtomicU64::new(0))
    }

    /// Feeds one measured wake-up into the figure: `woken_at` is the waker's [`now_ns`]
    /// stamp taken just before it woke the thread that calls this, which has just run again.
    /// A stamp of 0 (none) is ignored, a sample above [`WAKE_SAMPLE_MAX`] too, and
    /// everything under loom.
    pub fn record(&self, woken_at: u64) {
        if cfg!(bridge_loom) || woken_at == 0 {
            return;
        }
        let sample = now_ns().saturating_sub(woken_at);
        if sample > duration_nanos(WAKE_SAMPLE_MAX) {
            return;
        }
        // ORDERING: Relaxed: a statistic; concurrent samples may overwrite each other, which
        // only drops one of them.
        let old = self.0.load(Relaxed);
        // ORDERING: Relaxed, as above.
        self.0.store(next_estimate(old, sample), Relaxed);
    }

    /// The figure, once a sample was taken.
    pub fn get(&self) -> Option<Duration> {
        // ORDERING: Relaxed: a statistic.
        match self.0.load(Relaxed) {
            0 => None,
            ns => Some(Duration::from_nanos(ns)),
        }
    }
}

impl Default for Estimate {
    fn default() -> Self {
        Self::new()
    }
}

/// What a wake-up costs on this machine, as recently measured: the time from one thread's
/// unpark of another (or its send to a parked receiver) until the woken thread runs.
static WAKE: Estimate = Estimate::new();

/// Samples above this are dropped: the woken thread was descheduled for a time slice or
/// more, which says nothing about a wake-up.
pub const WAKE_SAMPLE_MAX: Duration = Duration::from_millis(1);

/// Feeds one measured wake-up into the estimate: `unparked_at` is the waker's [`now_ns`]
/// stamp taken just before it unparked (or sent to) this thread, which has just run again.
/// A stamp of 0 (none) is ignored, and so is nothing under loom.
///
/// # Examples
///
/// ```
/// use bridge_core::__spin::{now_ns, record_wake, wake_estimate};
///
/// let unparked_at = now_ns();
/// // ... this thread parks, another unparks it ...
/// record_wake(unparked_at);
/// assert!(cfg!(bridge_loom) || wake_estimate().is_some());
/// ```
pub fn record_wake(unparked_at: u64) {
    WAKE.record(unparked_at);
}

/// The estimate after `sample` (both in nanoseconds; `old` 0 for none yet): half-way down to
/// a lower sample, an eighth of the way up to a higher one; never 0.
fn next_estimate(old: u64, sample: u64) -> u64 {
    let next = match old {
        0 => sample,
        _ if sample < old => old - (old - sample) / 2,
        _ => old + (sample - old) / 8,
    };
    next.max(1)
}

/// The current estimate of a wake-up's cost, once one was measured.
///
/// # Examples
///
/// ```
/// if let Some(cost) = bridge_core::__spin::wake_estimate() {
///     assert!(cost <= bridge_core::__spin::WAKE_SAMPLE_MAX);
/// }
/// ```
pub fn wake_estimate() -> Option<Duration> {
    WAKE.get()
}

/// How long a spin that may save a park should last: as long as a wake-up costs here (the
/// estimate), and no longer than `cap`, the site's ceiling (what it spins before the first
/// sample).
///
/// Spinning for as long as the wait it may save is the rule that never loses more than
/// half: a spin that expires wasted what a park would have cost, and one that catches saved
/// at least what it spent.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// let cap = Duration::from_micros(20);
/// assert!(bridge_core::__spin::budget(cap) <= cap);
/// ```
pub fn budget(cap: Duration) -> Duration {
    wake_estimate().map_or(cap, |estimate| estimate.min(cap))
}

/// The CPU this thread runs on right now, where the OS tells (Linux: `sched_getcpu`, a read
/// of a per-thread value the kernel keeps, no system call).
///
/// # Examples
///
/// ```
/// if let Some(cpu) = bridge_core::__spin::current_cpu() {
///     assert!((cpu as usize) < 4096);
/// }
/// ```
pub fn current_cpu() -> Option<u32> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: `sched_getcpu` takes no arguments and has no preconditions; a failure is a
        // negative return.
        let cpu = unsafe { libc::sched_getcpu() };
        u32::try_from(cpu).ok()
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}

/// A test build's slower wake-up, for the experiment that shows the budgets follow what a
/// wake-up costs (docs/design.md): the nanoseconds in `BRIDGE_SLOW_WAKE_NS` when the crate
/// was built (0, the default, adds nothing), spent busy by every waker of the bridge's
/// parked waits (a oneshot's blocked receiver, an idle handoff worker) just before its
/// unpark, as if the wake-up itself had taken that much longer to arrive.
pub const SLOW_WAKE: Duration = Duration::from_nanos(parse_ns(option_env!("BRIDGE_SLOW_WAKE_NS")));

/// A decimal number of nanoseconds, at compile time; 0 for none. A build with anything
/// else in the variable fails.
const fn parse_ns(text: Option<&str>) -> u64 {
    let Some(text) = text else { return 0 };
    let bytes = text.as_bytes();
    let mut ns = 0u64;
    let mut i = 0;
    while i < bytes.len() {
        assert!(
            bytes[i].is_ascii_digit(),
            "BRIDGE_SLOW_WAKE_NS takes nanoseconds, in digits"
        );
        ns = ns * 10 + (bytes[i] - b'0') as u64;
        i += 1;
    }
    ns
}

/// Called by the bridge's wakers right before they unpark a parked waiter: nothing, unless
/// this is a test build with a [`SLOW_WAKE`].
///
/// # Examples
///
/// ```
/// bridge_core::__spin::before_unpark(); // free in a normal build
/// ```
#[inline]
pub fn before_unpark() {
    if !SLOW_WAKE.is_zero() {
        let until = Instant::now() + SLOW_WAKE;
        while Instant::now() < until {
            std::hint::spin_loop();
        }
    }
}

/// What a partner stamps just before it delivers to a waiter: when (for the wake-up
/// estimate, [`Stamp::record_wake_after`]) and on which CPU (a catch is only a win when the
/// partner ran beside the spin, on another CPU: [`Site::record_beside`]).
///
/// # Examples
///
/// ```
/// use bridge_core::__spin::{Stamp, current_cpu, now_ns};
///
/// let stamp = Stamp::new();
/// let parked_at = now_ns();
/// stamp.stamp(); // on the partner, just before it delivers
/// assert_eq!(stamp.shared_with_me(), current_cpu().is_some());
/// stamp.record_wake_after(parked_at); // on the waiter, woken
/// ```
#[derive(Debug)]
pub struct Stamp {
    /// The [`now_ns`] of the last delivery; 0 before the first.
    at: AtomicU64,
    /// The CPU of the last delivery; [`Stamp::NO_CPU`] before the first or where the OS does
    /// not tell.
    cpu: AtomicU32,
}

impl Stamp {
    const NO_CPU: u32 = u32::MAX;

    /// No delivery yet.
    pub const fn new() -> Self {
        Self {
            at: AtomicU64::new(0),
            cpu: AtomicU32::new(Self::NO_CPU),
        }
    }

    /// Records the time and the CPU this thread runs on, just before it delivers.
    pub fn stamp(&self) {
        // ORDERING: Relaxed, both: the waiter reads them after it saw the delivery that
        // follows these stores (an Acquire read of a Release write, or a lock), or reads them
        // stale, which only blurs a statistic.
        self.cpu
            .store(current_cpu().unwrap_or(Self::NO_CPU), Relaxed);
        self.at.store(now_ns(), Relaxed);
    }

    /// Whether the last delivery came from the CPU this thread runs on now (`false` where the
    /// OS does not tell).
    pub fn shared_with_me(&self) -> bool {
        // ORDERING: Relaxed: see `stamp`.
        let theirs = self.cpu.load(Relaxed);
        theirs != Self::NO_CPU && current_cpu() == Some(theirs)
    }

    /// Feeds the wake-up estimate with the time since the last delivery, if it came after
    /// `since` (the [`now_ns`] at which this thread stopped spinning and went to park): it
    /// woke this thread.
    pub fn record_wake_after(&self, since: u64) {
        // ORDERING: Relaxed: see `stamp`.
        let at = self.at.load(Relaxed);
        if at > since {
            record_wake(at);
        }
    }
}

impl Default for Stamp {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_site_stops_after_misses_and_probes_back() {
        let site = Site::new();
        for _ in 0..MAX / MISS {
            site.record(false);
        }
        // At zero: only one wait in PROBE spins (when the machine lets any spin at all).
        let spins = (0..PROBE * 4).filter(|_| site.should_spin()).count();
        if cpus() > 1 && !saturated() {
            assert!(
                (1..=4).contains(&spins),
                "{spins} spins in {} waits",
                PROBE * 4
            );
        }
        // A probe that catches brings the site back.
        site.record(true);
        assert_eq!(site.score.load(Relaxed), HIT);
    }

    #[test]
    fn the_estimate_follows_the_low_end_of_the_samples() {
        assert_eq!(next_estimate(0, 8_000), 8_000);
        // Half-way down to a lower sample, an eighth of the way up to a higher one.
        assert_eq!(next_estimate(8_000, 2_000), 5_000);
        assert_eq!(next_estimate(8_000, 16_000), 9_000);
        assert_eq!(next_estimate(8_000, 8_000), 8_000);
        assert_eq!(next_estimate(1, 0), 1);
        // Ten low samples after a high one bring it within 1% of the low; ten high samples
        // after a low one take it only 74% of the way up.
        let mut estimate = 30_000;
        for _ in 0..10 {
            estimate = next_estimate(estimate, 2_000);
        }
        assert!(estimate < 2_030, "{estimate}");
        let mut estimate = 2_000;
        for _ in 0..10 {
            estimate = next_estimate(estimate, 30_000);
        }
        assert!((20_000..23_000).contains(&estimate), "{estimate}");
    }

    #[test]
    fn a_budget_is_the_estimate_up_to_the_cap() {
        let cap = Duration::from_micros(20);
        let budget = budget(cap);
        assert!(budget <= cap);
        match wake_estimate() {
            Some(estimate) => assert_eq!(budget, estimate.min(cap)),
            None => assert_eq!(budget, cap),
        }
        // A stamp from before a park feeds the estimate; one from before it does not.
        let stamp = Stamp::new();
        stamp.record_wake_after(0);
        stamp.stamp();
        let since = now_ns();
        stamp.record_wake_after(since);
        stamp.record_wake_after(0);
        assert!(wake_estimate().is_some());
        assert!(wake_estimate().unwrap() <= WAKE_SAMPLE_MAX);
    }

    #[test]
    fn a_catch_from_this_cpu_counts_as_a_miss() {
        let site = Site::new();
        let elsewhere = Stamp::new(); // never stamped: no CPU known, as off Linux
        site.record_beside(true, &elsewhere);
        assert_eq!(site.score.load(Relaxed), MAX);
        // Stamped here: a miss, unless the thread moved to another CPU in between.
        for _ in 0..100 {
            let site = Site::new();
            let here = Stamp::new();
            let before = current_cpu();
            here.stamp();
            site.record_beside(true, &here);
            if before.is_some() && current_cpu() == before {
                assert_eq!(site.score.load(Relaxed), MAX - MISS);
                return;
            }
        }
        assert!(
            current_cpu().is_none(),
            "this thread never stayed on one CPU"
        );
    }

    #[test]
    fn a_normal_build_adds_nothing_before_an_unpark() {
        assert_eq!(parse_ns(None), 0);
        assert_eq!(parse_ns(Some("10000")), 10_000);
        if option_env!("BRIDGE_SLOW_WAKE_NS").is_none() {
            assert!(SLOW_WAKE.is_zero());
        }
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn the_load_is_read_where_the_kernel_offers_it() {
        // This thread is running, so at least one thread is runnable.
        assert!(runnable().expect("/proc/loadavg") >= 1);
    }
}
