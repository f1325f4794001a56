//! The stall threshold that the family's waits share: how long a wait that may never finish
//! (a handoff that a current-thread runtime waits for, a task queued on a rayon pool whose
//! every thread is blocked) waits before it says so. Set and read through the facade
//! (`bridge::rt::set_stall_warning`, `bridge::rt::stall_warning`); not part of this crate's
//! API.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The default threshold, in nanoseconds: 5 s.
const DEFAULT_NANOS: u64 = 5_000_000_000;

/// The stored threshold that stands for [`Duration::MAX`]: no warning.
const OFF: u64 = u64::MAX;

/// The threshold in nanoseconds ([`OFF`]: none).
static THRESHOLD: AtomicU64 = AtomicU64::new(DEFAULT_NANOS);

/// Sets the threshold; returns the previous one. `Duration::MAX` (or anything too large for
/// the clock) turns the warnings off.
pub fn set(threshold: Duration) -> Duration {
    // 2^64 ns is 584 years: anything longer is never reached.
    let nanos = u64::try_from(threshold.as_nanos()).unwrap_or(OFF);
    // ORDERING: Relaxed: a setting, read on its own by later waits; nothing else is published
    // with it (a wait that reads the old value warns by the old threshold, as one that
    // started waiting before the change does).
    from_nanos(THRESHOLD.swap(nanos, Ordering::Relaxed))
}

/// The threshold: 5 s unless [`set`] changed it.
pub fn get() -> Duration {
    // ORDERING: Relaxed: see `set`.
    from_nanos(THRESHOLD.load(Ordering::Relaxed))
}

fn from_nanos(nanos: u64) -> Duration {
    match nanos {
        OFF => Duration::MAX,
        nanos => Duration::from_nanos(nanos),
    }
}
