//! The family's [`Task`] over a closure's job on rayon: one cell for the job and its
//! outcome (see `job_claim.rs`).

use crate::home::Home;
use crate::job::CancelFlag;
use crate::job_claim::{Job, PoolJob};
use bridge_core::Task;
use std::sync::Arc;

/// Makes a task and the job that fulfils it; the caller hands the job to the pool `home`
/// stands for. (Under loom, `home: false` stands for a task waited for off the pool: its
/// waiters never claim the job.)
pub(crate) fn new<F, T>(f: F, home: Home) -> (Task<T>, impl FnOnce() + Send + 'static)
where
    F: FnOnce(CancelFlag<'_>) -> T + Send + 'static,
    T: Send + 'static,
{
    // The span current at the spawn follows the closure (see `trace.rs`).
    #[cfg(feature = "tracing")]
    let f = crate::trace::in_current_span(f);
    crate::stall::watch_workers();
    let job = Job::new(f, crate::metrics::spawned(), home);
    let pool_job = PoolJob::new(Arc::clone(&job));
    (bridge_core::task::with_cell(job), move || pool_job.run())
}
