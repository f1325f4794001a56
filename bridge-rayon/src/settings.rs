//! bridge-rayon's one setting: whether its polls on rayon yield after a long one.
//! `bridge::configure()` gathers it with the family's other settings.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

// A setting read on its own; nothing else is published with it.
static YIELD: AtomicBool = AtomicBool::new(false);

/// Whether the bridge's polls on rayon (`spawn_future`, the CPU side of streams) yield their
/// thread's CPU after a poll that ran long, so that the threads of the process's other work
/// get it sooner; such a thread also asks the OS for the longest time slice (default
/// `false`: the bridge leaves the scheduling of every thread as it found it).
///
/// # Examples
///
/// ```
/// assert!(!bridge_rayon::settings::yield_after_long_polls());
/// ```
pub fn yield_after_long_polls() -> bool {
    // ORDERING: Relaxed: a setting, read on its own.
    YIELD.load(Relaxed)
}

/// Sets [`yield_after_long_polls`], from the next poll that reads it.
///
/// # Examples
///
/// ```
/// use bridge_rayon::settings::{set_yield_after_long_polls, yield_after_long_polls};
///
/// set_yield_after_long_polls(true);
/// assert!(yield_after_long_polls());
/// set_yield_after_long_polls(false);
/// ```
pub fn set_yield_after_long_polls(on: bool) {
    // ORDERING: Relaxed: a setting, read on its own.
    YIELD.store(on, Relaxed);
}
