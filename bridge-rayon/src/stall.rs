//! A wait for a task that never starts is named, not silent.
//!
//! A thread outside the task's pool that waits for a task (`wait`, `join`) blocks: it never
//! runs the job (a waiter on a worker of the pool does, see `job_claim.rs`; one inside a
//! tokio runtime's `block_on` blocks too). If every thread of the task's
//! pool is blocked in something the bridge cannot see (waiting for this very thread, a lock,
//! a channel), the job never starts and the wait never ends. The wait is split at the
//! family's stall threshold (`bridge::configure().stall_warning`, 5 s by default): a task still
//! queued then is counted in [`CpuMetrics::stalled_waits`](crate::CpuMetrics::stalled_waits) and
//! named by one warning (feature `tracing`). It only warns: the wait goes on.

use std::time::Duration;

/// A wait has passed the stall threshold with the task's work still queued: counts it and
/// warns once; the wait goes on.
#[cold]
#[inline(never)]
pub(crate) fn stalled(waited: Duration) {
    count_and_warn(
        waited,
        "bridge::cpu: a task waited for from outside its rayon pool (or from inside a tokio \
         runtime) has not started: every thread of its pool is busy or blocked (in something \
         the bridge cannot see: a lock, a channel, a wait for this thread), so the wait may \
         never end. Wait from a thread of the pool outside any runtime (a waiter there runs \
         the work it waits for), give the pool more threads, or bound the wait with \
         wait_timeout",
    );
}

/// Counts a stalled wait in `cpu.stalled_waits` and names it with `message` (feature
/// `tracing`).
fn count_and_warn(waited: Duration, message: &'static str) {
    crate::metrics::stalled_wait();
    #[cfg(not(feature = "tracing"))]
    let _ = (waited, message);
    #[cfg(feature = "tracing")]
    tracing::warn!(?waited, "{message}");
}

/// rayon's workers, as the family's blocking waits see them (see bridge-core's `Workers`): a
/// worker whose wait (for an I/O task, a `run_blocking`, a crossing) passes the stall
/// threshold is counted and named, then runs its own pool's queued work, which may be the
/// CPU work that wait needs. Not in loom builds, whose models have no pool.
#[cfg(not(bridge_loom))]
struct RayonWorkers;

#[cfg(not(bridge_loom))]
impl bridge_core::Workers for RayonWorkers {
    fn is_worker(&self) -> bool {
        rayon_core::current_thread_index().is_some()
    }

    /// `rayon::yield_now` runs a job of this worker's own pool, never another's; not while a
    /// tokio runtime is entered here (see `home.rs`).
    fn help(&self) -> bool {
        crate::home::outside_runtimes()
            && rayon_core::yield_now() == Some(rayon_core::Yield::Executed)
    }

    #[cold]
    #[inline(never)]
    fn stalled(&self, waited: Duration) {
        count_and_warn(
            waited,
            "bridge::cpu: a rayon worker has been blocked in a wait (a task of the I/O side, \
             run_blocking, a crossing) past the stall threshold; if what it waits for needs \
             CPU work queued on its own pool, behind it, the wait never ends while every \
             worker waits so. It now runs its pool's queued work between checks. Await the \
             CPU task in the same future instead, or wait from a thread outside the pool",
        );
    }
}

/// Registers rayon's workers with bridge-core (once per process; at each spawn, a load).
#[inline]
pub(crate) fn watch_workers() {
    #[cfg(not(bridge_loom))]
    {
        static WORKERS: RayonWorkers = RayonWorkers;
        bridge_core::register_workers(&WORKERS);
    }
}
