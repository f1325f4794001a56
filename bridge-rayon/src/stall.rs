//! A wait for a task that never starts is named, not silent.
//!
//! A thread outside rayon that waits for a task (`wait`, `join`) blocks: it never runs the
//! job (a waiter on a rayon worker does, see `job_claim.rs`). If every thread of the task's
//! pool is blocked in something the bridge cannot see (waiting for this very thread, a lock,
//! a channel), the job never starts and the wait never ends. The wait is split at the
//! family's stall threshold (`bridge::rt::stall_warning`, 5 s by default): a task still
//! queued then is counted in [`Metrics::stalled_waits`](crate::Metrics::stalled_waits) and
//! named by one warning (feature `tracing`). It only warns: the wait goes on.

use crate::job_claim::Claim;
use bridge_core::oneshot::{Receiver, RecvError, RecvTimeoutError};
use std::time::Duration;

/// Receives the task's outcome, blocking; past the stall threshold with the task's work
/// still queued, counts and warns once, then waits on.
pub(crate) fn recv<T>(mut rx: Receiver<T>, job: &dyn Claim) -> Result<T, RecvError> {
    let threshold = bridge_core::__stall::get();
    if threshold == Duration::MAX || rx.is_ready() {
        return rx.recv_blocking();
    }
    match rx.recv_timeout(threshold) {
        Ok(value) => return Ok(value),
        Err(RecvTimeoutError::Closed) => return Err(RecvError),
        Err(RecvTimeoutError::Timeout) => {}
    }
    if job.queued() {
        stalled(threshold);
    }
    rx.recv_blocking()
}

#[cold]
#[inline(never)]
fn stalled(waited: Duration) {
    crate::metrics::stalled_wait();
    #[cfg(not(feature = "tracing"))]
    let _ = waited;
    #[cfg(feature = "tracing")]
    tracing::warn!(
        ?waited,
        "bridge::cpu: a task waited for from outside rayon has not started: every thread of \
         its rayon pool is busy or blocked (in something the bridge cannot see: a lock, a \
         channel, a wait for this thread), so the wait may never end. Wait from a thread of \
         the pool (a waiter there runs the work it waits for), give the pool more threads, \
         or bound the wait with wait_timeout"
    );
}
