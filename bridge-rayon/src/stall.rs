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
    crate::metrics::stalled_wait();
    #[cfg(not(feature = "tracing"))]
    let _ = waited;
    #[cfg(feature = "tracing")]
    tracing::warn!(
        ?waited,
        "bridge::cpu: a task waited for from outside its rayon pool (or from inside a tokio \
         runtime) has not started: every thread of its pool is busy or blocked (in something \
         the bridge cannot see: a lock, a channel, a wait for this thread), so the wait may \
         never end. Wait from a thread of the pool outside any runtime (a waiter there runs \
         the work it waits for), give the pool more threads, or bound the wait with \
         wait_timeout"
    );
}
