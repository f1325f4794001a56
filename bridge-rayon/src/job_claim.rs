//! Who runs a task's job: the pool, or the task's own waiter.
//!
//! A job is shared by its `Task` and by the closure the pool queues. Whoever moves the claim
//! state away from [`QUEUED`](states::QUEUED) first takes the job out of its slot and is the
//! only one ever to touch it:
//!
//! ```text
//!            pool runs its copy, or drops it unrun
//! QUEUED ──────────────────────────────────────────▶ POOL
//!    │
//!    │       the task's waiter, on a worker of the job's pool
//!    └─────────────────────────────────────────────▶ WAITER
//! ```
//!
//! Both are final. The side that loses the race finds the other's state and leaves the job
//! alone: the pool's copy then does nothing, and the waiter blocks on the task's channel like
//! any other waiter.
//!
//! Cancellation is not a claim state. It stays where it always was, in the oneshot: a
//! dropped `Task` closes its receiver, and the job (whoever claimed it) checks the channel
//! before it starts the closure (`job::run`). A waiter cannot cancel: it holds the task.
//! Keeping one source of truth for each decision keeps each one testable on its own.

use crate::coverage_arms::arm;
use crate::home::{self, Home};
use crate::job::{self, CancelFlag, Outcome};
use crate::sync::AtomicU8;
use crate::sync::Ordering::Relaxed;
use bridge_core::__Work;
use bridge_core::oneshot::Sender;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::Waker;
use std::time::{Duration, Instant};

/// The values of a job's claim state.
pub(crate) mod states {
    /// In the pool's queue; nobody has taken the job yet. The only state that moves.
    pub(crate) const QUEUED: u8 = 0;
    /// The pool took the job: its thread runs it, or the pool dropped its copy unrun and
    /// with it the closure and the sender (the task then reports `Lost`).
    pub(crate) const POOL: u8 = 1;
    /// The task's waiter took the job and runs it inline, on its own thread (a rayon
    /// worker).
    pub(crate) const WAITER: u8 = 2;
}

use states::{POOL, QUEUED, WAITER};

/// The closure, the sender of its outcome and the time of the spawn (if its queue wait is
/// sampled, see `metrics.rs`), until one side claims them.
type Parts<F, T> = (F, Sender<Outcome<T>>, Option<Instant>);

/// The job shared by a task and its pool.
pub(crate) struct Job<F, T> {
    /// [`states`]: who took the job.
    state: AtomicU8,
    /// The pool the job was queued on: only a waiter on one of its workers may claim it
    /// (see `home.rs`).
    home: Home,
    /// The job's parts until the claim's winner takes them. A safe cell, not a lock: only
    /// the one winner of the claim ever locks it, so it is never contended, and no user code
    /// runs while it is held (it cannot be poisoned).
    parts: Mutex<Option<Parts<F, T>>>,
}

impl<F, T> Job<F, T>
where
    F: FnOnce(CancelFlag<'_>) -> T + Send + 'static,
    T: Send + 'static,
{
    /// A queued job.
    pub(crate) fn new(parts: Parts<F, T>, home: Home) -> Arc<Self> {
        Arc::new(Self {
            state: AtomicU8::new(QUEUED),
            home,
            parts: Mutex::new(Some(parts)),
        })
    }

    /// Moves the state from `QUEUED` to `to`: the job's parts if this call won, the state
    /// found otherwise.
    fn claim(&self, to: u8) -> Result<Parts<F, T>, u8> {
        // ORDERING: Relaxed is enough: the compare-exchange only elects the one side that
        // takes the parts, and a read-modify-write on one location is atomic at any order
        // (two sides can never both see QUEUED). Nothing is published through the state:
        // the parts were put in the slot before the job was shared (the pool's queue, or the
        // task's own thread, synchronizes that), the slot's lock carries them to the winner,
        // and the outcome travels through the oneshot, whose send happens-before the receive.
        self.state.compare_exchange(QUEUED, to, Relaxed, Relaxed)?;
        let parts = self
            .parts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        Ok(parts.expect("bridge_rayon: a task's job was claimed twice"))
    }
}

/// A closure's job as its `Task` sees it. The waiting rules of the rayon side: a waiter on
/// a worker of the job's pool runs the job if it is still queued (its blocking waits, timed
/// or not, poll to do so), and a wait elsewhere that finds the job still queued at the
/// stall threshold is reported.
///
/// Only there: a waiter on a worker of that pool could starve it (every worker of a pool
/// waiting at once, a pool of one thread); a thread outside the pool (off rayon, or a worker
/// of another pool) would run the job where `spawn` did not promise it (see `home.rs`), and
/// the pool's threads take it there. Nor while a tokio runtime is entered on the waiter's
/// thread, where a job that starts a runtime of its own would panic.
impl<F, T> __Work for Job<F, T>
where
    F: FnOnce(CancelFlag<'_>) -> T + Send + 'static,
    T: Send + 'static,
{
    /// Runs the closure here, to the end, if this thread may (a worker of the job's pool,
    /// with no runtime entered) and no pool thread has taken it.
    fn help(&self, _: &Waker) -> bool {
        if !home::is_home(self.home) || !home::outside_runtimes() {
            arm!("claim.waiter.not_worker");
            return false;
        }
        match self.claim(WAITER) {
            // Not started: it runs here and sends its outcome to the channel this waiter is
            // about to read.
            Ok((f, tx, spawned_at)) => {
                arm!("claim.waiter.claims");
                job::run(f, tx, spawned_at);
                true
            }
            // A worker has it (running, or finished): wait for it.
            Err(POOL) => {
                arm!("claim.waiter.finds_pool");
                false
            }
            // This handle claimed it before. Not reached today: a claim delivers its outcome
            // before `help` returns, the poll (or wait) that claimed takes it at once, and a
            // terminated task never calls again. Nothing to do if it ever is: the outcome is
            // in the channel, or was taken.
            Err(_) => false,
        }
    }

    fn joins_by_polling(&self) -> bool {
        home::is_home(self.home) && home::outside_runtimes()
    }

    fn checks_stalls(&self) -> bool {
        true
    }

    fn waited(&self, waited: Duration) {
        // ORDERING: Relaxed: a look for a warning, which orders nothing.
        if self.state.load(Relaxed) == QUEUED {
            crate::stall::stalled(waited);
        }
    }
}

/// The pool's copy of a job: what `rayon::spawn` gets, boxed in a closure.
pub(crate) struct PoolJob<F, T>
where
    F: FnOnce(CancelFlag<'_>) -> T + Send + 'static,
    T: Send + 'static,
{
    job: Arc<Job<F, T>>,
}

impl<F, T> PoolJob<F, T>
where
    F: FnOnce(CancelFlag<'_>) -> T + Send + 'static,
    T: Send + 'static,
{
    pub(crate) fn new(job: Arc<Job<F, T>>) -> Self {
        Self { job }
    }

    /// Runs the job on this pool thread unless its waiter claimed it. Never unwinds.
    pub(crate) fn run(self) {
        match self.job.claim(POOL) {
            // The closure runs here, unless the task was dropped.
            Ok((f, tx, spawned_at)) => {
                arm!("claim.pool.starts");
                job::run(f, tx, spawned_at);
            }
            // The waiter runs (or ran) it; nothing to do. The pool runs its copy once, so it
            // cannot find its own claim.
            Err(found) => {
                arm!("claim.pool.finds_waiter");
                debug_assert_eq!(found, WAITER, "the pool ran a job twice");
            }
        }
    }
}

impl<F, T> Drop for PoolJob<F, T>
where
    F: FnOnce(CancelFlag<'_>) -> T + Send + 'static,
    T: Send + 'static,
{
    fn drop(&mut self) {
        match self.job.claim(POOL) {
            // The pool discarded the job without running it (rayon never does). The closure
            // is dropped here, quietly, and the sender with it, which wakes the task with
            // `Lost` instead of leaving it waiting.
            Ok(parts) => {
                arm!("claim.pool.drops_unrun");
                crate::metrics::cancelled();
                job::drop_quietly(parts);
            }
            // Dropped after `run` took the job.
            Err(POOL) => arm!("claim.pool.copy_ran"),
            // The waiter claimed the job; `run` did nothing.
            Err(_) => arm!("claim.pool.copy_after_waiter"),
        }
    }
}
