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
//! 2. **Never on a saturated machine.** On Linux the number of runnable threads
//!    (`/proc/loadavg`, read at most every [`SAMPLE`]) above the CPU count plus one means
//!    some thread is waiting for a CPU; a spin would take that CPU from it, and the other side
//!    of the hand-off is as likely as anyone to be the thread that waits. (Plus one: the
//!    reading counts the waiter and its partner, both runnable when a spin can win, so on two
//!    CPUs a third runnable thread for a moment, a runtime worker that wakes, is no reason to
//!    stop.)
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
    /// Nanoseconds since `EPOCH` of the next sample, and the last answer in the low bit.
    static STATE: AtomicU64 = AtomicU64::new(0);
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    let epoch = *EPOCH.get_or_init(Instant::now);
    let now = u64::try_from(epoch.elapsed().as_nanos()).unwrap_or(u64::MAX) | 1;
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
    // The waiter and the side it waits for are both runnable when a spin can win; a thread
    // beyond those two and one per CPU means somebody is kept from a CPU.
    let busy = runnable().is_some_and(|runnable| runnable > cpus() + 1);
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
    #[cfg(target_os = "linux")]
    fn the_load_is_read_where_the_kernel_offers_it() {
        // This thread is running, so at least one thread is runnable.
        assert!(runnable().expect("/proc/loadavg") >= 1);
    }
}
