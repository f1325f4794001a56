//! bridge-tokio's settings for the process: the handoff pool's size and keep-alive, and the
//! slow-poll threshold of the I/O side's watch. `bridge::configure()` gathers them with the
//! family's other settings.

use bridge_core::settings::DurationSetting;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::time::Duration;

/// The default cap on handoff threads: tokio's default for its blocking pool.
pub(crate) const HANDOFF_THREADS: usize = 512;
/// The default keep-alive of an idle handoff thread: tokio's for its blocking threads.
pub(crate) const HANDOFF_KEEP_ALIVE: Duration = Duration::from_secs(10);
/// The default slow-poll threshold.
const SLOW_POLL: Duration = Duration::from_millis(10);

// Each is a setting read on its own; nothing else is published with it.
static THREADS: AtomicUsize = AtomicUsize::new(HANDOFF_THREADS);
static KEEP_ALIVE: DurationSetting = DurationSetting::new(HANDOFF_KEEP_ALIVE);
static SLOW: DurationSetting = DurationSetting::new(SLOW_POLL);

/// The most threads the handoff pool keeps at once (at least 1; default 512). A
/// `run_blocking` call that finds none free at the cap waits for the first to finish; calls
/// made on a handoff thread never wait for one.
///
/// # Examples
///
/// ```
/// assert!(bridge_tokio::settings::handoff_threads() >= 1);
/// ```
pub fn handoff_threads() -> usize {
    // ORDERING: Relaxed: a setting, read on its own.
    THREADS.load(Relaxed)
}

/// Sets [`handoff_threads`] (0 counts as 1), from the next handoff thread started.
///
/// # Examples
///
/// ```
/// use bridge_tokio::settings::{handoff_threads, set_handoff_threads};
///
/// let before = handoff_threads();
/// set_handoff_threads(0);
/// assert_eq!(handoff_threads(), 1);
/// set_handoff_threads(before);
/// ```
pub fn set_handoff_threads(threads: usize) {
    // ORDERING: Relaxed: a setting, read on its own.
    THREADS.store(threads.max(1), Relaxed);
}

/// How long an idle handoff thread waits for its next call before it ends (default 10 s).
///
/// # Examples
///
/// ```
/// assert!(bridge_tokio::settings::handoff_keep_alive() > std::time::Duration::ZERO);
/// ```
pub fn handoff_keep_alive() -> Duration {
    KEEP_ALIVE.get()
}

/// Sets [`handoff_keep_alive`], from the next handoff thread that goes idle.
///
/// # Examples
///
/// ```
/// use bridge_tokio::settings::{handoff_keep_alive, set_handoff_keep_alive};
/// use std::time::Duration;
///
/// let before = handoff_keep_alive();
/// set_handoff_keep_alive(Duration::from_secs(1));
/// assert_eq!(handoff_keep_alive(), Duration::from_secs(1));
/// set_handoff_keep_alive(before);
/// ```
pub fn set_handoff_keep_alive(keep_alive: Duration) {
    KEEP_ALIVE.set(keep_alive);
}

/// How long one poll may hold an I/O worker before the bridge names it (default 10 ms;
/// `Duration::MAX` is off): a poll of a future the bridge runs on the I/O side that runs
/// this long, or a watched runtime that schedules a small task this late, is reported once,
/// while it holds the worker: a warning (feature `tracing`) with the spawn site and the
/// remedy, and a count in the I/O side's metrics.
///
/// # Examples
///
/// ```
/// assert!(bridge_tokio::settings::slow_poll() > std::time::Duration::ZERO);
/// ```
pub fn slow_poll() -> Duration {
    SLOW.get()
}

/// Sets [`slow_poll`]; `Duration::MAX` turns the watch off.
///
/// # Examples
///
/// ```
/// use bridge_tokio::settings::{set_slow_poll, slow_poll};
/// use std::time::Duration;
///
/// let before = slow_poll();
/// set_slow_poll(Duration::MAX);
/// assert_eq!(slow_poll(), Duration::MAX);
/// set_slow_poll(before);
/// ```
pub fn set_slow_poll(threshold: Duration) {
    SLOW.set(threshold);
}
