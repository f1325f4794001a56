//! Blocking waits on the worker threads of a thread pool.
//!
//! A worker that blocks (in [`block_on`](crate::block_on), or waiting for a [`Task`]) stops
//! running its pool's queue, and the work it waits for may need a job queued there, behind
//! it: a task of the I/O side that awaits a CPU task, on a pool whose every worker waits
//! that way, never finishes. A pool crate implements [`Workers`] for its threads and
//! [registers](register_workers) it; bridge-rayon does so for rayon's workers at its first
//! spawn. A wait on such a thread is then split at the stall threshold
//! (`settings::stall_warning`, 5 s by default): each time it passes with the wait not over,
//! the wait is [named](Workers::stalled) (once per wait) and the worker
//! [runs its pool's queued work](Workers::help) before it waits again.
//!
//! Only at the threshold: a worker that ran its pool's jobs at every wait would nest them on
//! its stack (a `par_iter` of a thousand waits, one inside the other) and finish none until
//! the innermost does.

use std::sync::OnceLock;
use std::time::Duration;

/// The worker threads of a thread pool, as the family's blocking waits see them.
///
/// # Examples
///
/// ```
/// use bridge_core::Workers;
/// use std::time::Duration;
///
/// /// Threads named "crunch-*" are the workers of a hand-made pool that cannot help.
/// struct Crunchers;
///
/// impl Workers for Crunchers {
///     fn is_worker(&self) -> bool {
///         std::thread::current().name().is_some_and(|name| name.starts_with("crunch-"))
///     }
///     fn help(&self) -> bool {
///         false
///     }
///     fn stalled(&self, waited: Duration) {
///         eprintln!("a cruncher has waited {waited:?}");
///     }
/// }
///
/// static CRUNCHERS: Crunchers = Crunchers;
/// bridge_core::register_workers(&CRUNCHERS);
/// ```
pub trait Workers: Sync {
    /// Whether the calling thread is a worker of one of the pools.
    fn is_worker(&self) -> bool;

    /// Runs one job queued on the calling worker's pool, here, if the pool has one and this
    /// thread may run it now: whether it ran one. Called on a worker whose blocking wait has
    /// passed the stall threshold.
    fn help(&self) -> bool;

    /// The calling worker's blocking wait has lasted `waited`, past the stall threshold:
    /// count it and say so. Called once per wait, before [`help`](Self::help).
    fn stalled(&self, waited: Duration);
}

static WORKERS: OnceLock<&'static dyn Workers> = OnceLock::new();

/// Registers the pool threads whose blocking waits are watched (see [`Workers`]). The first
/// registration in the process stays; a later one is ignored (`false`).
///
/// # Examples
///
/// ```
/// use bridge_core::{Workers, register_workers};
/// use std::time::Duration;
///
/// struct NoPool;
/// impl Workers for NoPool {
///     fn is_worker(&self) -> bool {
///         false
///     }
///     fn help(&self) -> bool {
///         false
///     }
///     fn stalled(&self, _: Duration) {}
/// }
///
/// static NONE: NoPool = NoPool;
/// let first = register_workers(&NONE);
/// assert!(!register_workers(&NONE) || first);
/// ```
#[inline]
pub fn register_workers(workers: &'static dyn Workers) -> bool {
    if WORKERS.get().is_some() {
        return false;
    }
    WORKERS.set(workers).is_ok()
}

/// What the calling thread is, as far as the registered [`Workers`] tell.
#[derive(Clone, Copy)]
pub(crate) enum Here {
    /// A worker of a registered pool.
    Worker(&'static dyn Workers),
    /// No worker of one.
    Elsewhere,
    /// Nothing is registered yet: a pool crate's first spawn may come while this thread
    /// waits (the work its wait needs, queued by the other side), so a wait here is checked
    /// at the threshold too.
    Unknown,
}

/// What the calling thread is.
pub(crate) fn here() -> Here {
    // The loom models have no pool: their waits park as they always did.
    if cfg!(bridge_loom) {
        return Here::Elsewhere;
    }
    match WORKERS.get() {
        Some(workers) if workers.is_worker() => Here::Worker(*workers),
        Some(_) => Here::Elsewhere,
        None => Here::Unknown,
    }
}
