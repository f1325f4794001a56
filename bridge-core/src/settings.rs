//! bridge-core's one setting: how long a wait may last before the bridge names it.
//!
//! The family's other settings live with their crates (bridge-tokio's handoff pool and slow
//! polls, bridge-rayon's courtesy); `bridge::configure()` gathers them all.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

/// A duration setting of the process, read on its own (no other memory is published with
/// it): one atomic, `Duration::MAX` (and any duration too long for it) stored as `u64::MAX`.
/// bridge-core's stall threshold is one; bridge-tokio keeps its own with it.
///
/// # Examples
///
/// ```
/// use bridge_core::settings::DurationSetting;
/// use std::time::Duration;
///
/// static PATIENCE: DurationSetting = DurationSetting::new(Duration::from_secs(5));
/// PATIENCE.set(Duration::MAX);
/// assert_eq!(PATIENCE.get(), Duration::MAX);
/// ```
#[derive(Debug)]
pub struct DurationSetting(AtomicU64);

impl DurationSetting {
    /// A setting whose value is `default` until [`set`](Self::set).
    ///
    /// # Examples
    ///
    /// ```
    /// let slow = bridge_core::settings::DurationSetting::new(std::time::Duration::from_millis(10));
    /// assert_eq!(slow.get().as_millis(), 10);
    /// ```
    pub const fn new(default: Duration) -> Self {
        let nanos = default.as_nanos();
        Self(AtomicU64::new(if nanos > u64::MAX as u128 {
            u64::MAX
        } else {
            nanos as u64
        }))
    }

    /// The value in force.
    ///
    /// # Examples
    ///
    /// See [`DurationSetting`].
    pub fn get(&self) -> Duration {
        // ORDERING: Relaxed: a setting, read on its own.
        match self.0.load(Relaxed) {
            u64::MAX => Duration::MAX,
            nanos => Duration::from_nanos(nanos),
        }
    }

    /// Makes `value` the value in force, from the next read.
    ///
    /// # Examples
    ///
    /// See [`DurationSetting`].
    pub fn set(&self, value: Duration) {
        let nanos = u64::try_from(value.as_nanos()).unwrap_or(u64::MAX);
        // ORDERING: Relaxed: a setting, read on its own.
        self.0.store(nanos, Relaxed);
    }
}

/// The default stall threshold.
const STALL_WARNING: Duration = Duration::from_secs(5);

static STALL: DurationSetting = DurationSetting::new(STALL_WARNING);

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
    STALL.get()
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
    STALL.set(threshold);
}

#[cfg(test)]
mod tests {
    use super::DurationSetting;
    use std::time::Duration;

    #[test]
    fn durations_round_trip_and_max_stays_max() {
        let setting = DurationSetting::new(Duration::MAX);
        assert_eq!(setting.get(), Duration::MAX);
        for d in [
            Duration::ZERO,
            Duration::from_millis(10),
            Duration::from_secs(5),
        ] {
            setting.set(d);
            assert_eq!(setting.get(), d);
        }
        setting.set(Duration::from_secs(u64::MAX / 2));
        assert_eq!(setting.get(), Duration::MAX);
    }
}
