//! The family's [`Task`] over a closure's job on rayon.

use crate::home::Home;
use crate::job::CancelFlag;
use crate::job_claim::{Job, PoolJob};
use bridge_core::{__Work, Task, oneshot};
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
    let (tx, rx) = oneshot::channel();
    let parts = (f, tx, crate::metrics::spawned());
    let job = Job::new(parts, home);
    let pool_job = PoolJob::new(Arc::clone(&job));
    (Task::__new(rx, job as Arc<dyn __Work>), move || {
        pool_job.run()
    })
}
