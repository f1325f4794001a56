//! bridge-core's one setting: how long a wait may last before the bridge names it.
//!
//! The family's other settings live with their crates (bridge-tokio's handoff pool and slow
//! polls, bridge-rayon's courtesy); `bridge::configure()` gathers them all.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

/// The default stall threshold.
const STALL_WARNING: Duration = Duration::from_secs(5);

// A setting read on its own; nothing else is published with it.
static STALL: AtomicU64 = AtomicU64::new(STALL_WARNING.as_secs() * 1_000_000_000);

/// How long a blocking wait may last before the bridge says why it may never end (default
/// 5 s; `Duration::MAX` is off): each such wait logs one warning (feature `tracing` of the
/// crate that names it) with the cause and the remedy, and counts in its crate's metrics.
/// Nothing is cancelled. `bridge::configure().stall_warning` is this setting.
///
/// # Examples
///
/// ```
/// assert!(bridge_core::settings::stall_warning() > std::time::Duration::ZERO);
/// ```
pub fn stall_warning() -> Duration {
    // ORDERING: Relaxed: a setting, read on its own.
    duration(STALL.load(Relaxed))
}

/// Sets [`stall_warning`] for the process, from the next wait that reads it.
///
/// # Examples
///
/// ```
/// use bridge_core::settings::{set_stall_warning, stall_warning};
/// use std::time::Duration;
///
/// let before = stall_warning();
/// set_stall_warning(Duration::from_secs(1));
/// assert_eq!(stall_warning(), Duration::from_secs(1));
/// set_stall_warning(before);
/// ```
pub fn set_stall_warning(threshold: Duration) {
    // ORDERING: Relaxed: a setting, read on its own.
    STALL.store(nanos(threshold), Relaxed);
}

/// A duration as stored: `u64::MAX` stands for `Duration::MAX` (and any duration too long
/// for it). The family's other settings use the same encoding.
fn nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

fn duration(nanos: u64) -> Duration {
    match nanos {
        u64::MAX => Duration::MAX,
        nanos => Duration::from_nanos(nanos),
    }
}

#[cfg(test)]
mod tests {
    use super::{duration, nanos};
    use std::time::Duration;

    #[test]
    fn durations_round_trip_and_max_stays_max() {
        for d in [
            Duration::ZERO,
            Duration::from_millis(10),
            Duration::from_secs(5),
        ] {
            assert_eq!(duration(nanos(d)), d);
        }
        assert_eq!(duration(nanos(Duration::MAX)), Duration::MAX);
        assert_eq!(
            duration(nanos(Duration::from_secs(u64::MAX / 2))),
            Duration::MAX
        );
    }
}
