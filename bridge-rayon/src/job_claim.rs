//! A closure's job and its task's outcome, in one cell: who runs the job (the pool, or the
//! task's own waiter), and how its outcome reaches the task.
//!
//! The cell is shared by the `Task` and by the closure the pool queues, and it is the only
//! allocation of a hop besides rayon's own job box: a hop costs what `rayon::spawn` of a
//! closure that sends on a oneshot costs. One lock guards its stage:
//!
//! ```text
//!            pool runs its copy             outcome handed over          task takes it
//! QUEUED ─────────────────────────▶ RUNNING ─────────────────────▶ DONE ───────────────▶ TAKEN
//!    │      (or the task's waiter,     ▲
//!    │       on a worker of its pool)  │
//!    └─────────────────────────────────┘
//!    pool drops its copy unrun (rayon never does) ─────────────────▶ LOST
//! ```
//!
//! Whoever moves the stage away from `QUEUED` first takes the closure and is the only one
//! ever to run it; the side that loses finds the stage moved and leaves the job alone: the
//! pool's copy then does nothing, and the waiter waits for the outcome like any other waiter.
//!
//! The task's interest is a second, lock-free state (`interest`), because the running closure
//! reads it (its [`CancelFlag`]): a dropped task cancels the job (a job that has not started
//! never starts) and drops an outcome already handed over; a detached one lets it run on.
//! In both cases an outcome handed over later is dropped by the job, quietly. The lock is
//! never held while user code runs (a closure, a value's drop, a waker's `wake`: see
//! `wake_after_unlock`), so it is never contended for long and never poisoned.

use crate::home::{self, Home};
use crate::job::{self, CancelFlag, Outcome, Outlet, ReceiverGone};
use crate::sync::Mutex;
use crate::sync::{AtomicU8, Ordering::Acquire, Ordering::Relaxed, Ordering::Release};
use bridge_core::oneshot::{RecvError, TryRecvError};
use bridge_core::task::{Cell, Runner};
use std::mem;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

/// The values of a task's interest in its outcome.
mod interest {
    /// The task may take the outcome.
    pub(super) const WANTED: u8 = 0;
    /// The task was dropped: the job is cancelled.
    pub(super) const CANCELLED: u8 = 1;
    /// The task was detached: the job runs on, its outcome dropped where it ends.
    pub(super) const DETACHED: u8 = 2;
}

use interest::{CANCELLED, DETACHED, WANTED};

/// Where the job is.
enum Stage<F, T> {
    /// In the pool's queue; nobody has taken the closure yet. With the time of a sampled
    /// spawn (see `metrics.rs`).
    Queued(F, Option<Instant>),
    /// Taken by the pool or by the waiter: its closure runs, or ran and its outcome is on
    /// the way.
    Running,
    /// The outcome, for the task to take.
    Done(Outcome<T>),
    /// The task took the outcome (or no longer wants it).
    Taken,
    /// The pool dropped its copy unrun: there will be no outcome.
    Lost,
}

/// The stage, and the waker of the task's latest poll that found no outcome.
struct Slot<F, T> {
    stage: Stage<F, T>,
    waker: Option<Waker>,
}

/// A closure's job and its task's outcome.
pub(crate) struct Job<F, T> {
    /// The pool the job was queued on: only a waiter on one of its workers may claim it
    /// (see `home.rs`).
    home: Home,
    /// See [`interest`]: the task's side, read by the running closure without the lock.
    interest: AtomicU8,
    slot: Mutex<Slot<F, T>>,
}

impl<F, T> Job<F, T>
where
    F: FnOnce(CancelFlag<'_>) -> T + Send + 'static,
    T: Send + 'static,
{
    /// A queued job.
    pub(crate) fn new(f: F, spawned_at: Option<Instant>, home: Home) -> Arc<Self> {
        Arc::new(Self {
            home,
            interest: AtomicU8::new(WANTED),
            slot: Mutex::new(Slot {
                stage: Stage::Queued(f, spawned_at),
                waker: None,
            }),
        })
    }

    /// Moves the stage from `QUEUED` to `RUNNING`: the closure if this call won.
    fn claim(&self) -> Option<(F, Option<Instant>)> {
        let mut slot = self.lock_slot();
        match mem::replace(&mut slot.stage, Stage::Running) {
            Stage::Queued(f, spawned_at) => Some((f, spawned_at)),
            other => {
                slot.stage = other;
                None
            }
        }
    }

    /// Whether a waiter on this thread may run the job: a worker of its pool, with no tokio
    /// runtime entered (see `home.rs`).
    fn may_run_here(&self) -> bool {
        home::is_home(self.home) && home::outside_runtimes()
    }

    /// Runs the closure here if this call claims it: whether it did.
    fn run_if_queued(&self) -> bool {
        match self.claim() {
            Some((f, spawned_at)) => {
                job::run(f, self, spawned_at);
                true
            }
            None => false,
        }
    }

    /// Ends the job with no outcome (its pool dropped it unrun): the task's waiter is woken
    /// to find it lost.
    fn lose(&self) {
        let mut slot = self.lock_slot();
        slot.stage = Stage::Lost;
        wake_after_unlock(slot);
    }
}

/// Puts `stage` back and keeps `cx`'s waker (unless the kept one wakes the same task).
fn pending<F, T, R>(
    mut slot: crate::sync::MutexGuard<'_, Slot<F, T>>,
    stage: Stage<F, T>,
    cx: &Context<'_>,
) -> Poll<R> {
    slot.stage = stage;
    match &slot.waker {
        Some(kept) if kept.will_wake(cx.waker()) => {}
        _ => slot.waker = Some(cx.waker().clone()),
    }
    Poll::Pending
}

/// Releases the lock, then wakes the task's waiter, if any, as tokio's oneshot wakes after
/// its state is set: a waiter woken under the lock would find it held when it polls at once
/// (its thread runs while this one is still in the wake's system call) and block on it. A
/// poll may then take the outcome before the wake-up arrives; the wake-up is spurious then,
/// which every executor and `bridge_core::block_on` tolerate (a parked thread may get one
/// spurious unpark, as `std::thread::park` allows).
fn wake_after_unlock<F, T>(mut slot: crate::sync::MutexGuard<'_, Slot<F, T>>) {
    let waker = slot.waker.take();
    drop(slot);
    if let Some(waker) = waker {
        waker.wake();
    }
}

impl<F, T> ReceiverGone for Job<F, T> {
    fn receiver_gone(&self) -> bool {
        // ORDERING: Acquire pairs with `close`'s Release store: what the task's thread did
        // before dropping it is visible to a closure that sees the cancel. Nothing else is
        // published through it (the outcome travels under the lock).
        self.interest.load(Acquire) == CANCELLED
    }
}

impl<F, T> Outlet<T> for Job<F, T>
where
    F: Send,
    T: Send,
{
    fn deliver(&self, outcome: Outcome<T>) {
        let mut slot = self.lock_slot();
        // ORDERING: Relaxed: the interest only changes under the lock, which orders it.
        if self.interest.load(Relaxed) != WANTED {
            drop(slot);
            job::drop_quietly(outcome);
            return;
        }
        slot.stage = Stage::Done(outcome);
        wake_after_unlock(slot);
    }
}

impl<F, T> Cell<T> for Job<F, T>
where
    F: FnOnce(CancelFlag<'_>) -> T + Send + 'static,
    T: Send + 'static,
{
    /// Takes the outcome; or, on a worker of the job's pool with no runtime entered, claims a
    /// job still queued and runs it here first (the task's poll asks no `help` of its cell).
    fn poll_take(&self, cx: &mut Context<'_>) -> Poll<Result<Outcome<T>, RecvError>> {
        let mut slot = self.lock_slot();
        loop {
            match mem::replace(&mut slot.stage, Stage::Taken) {
                Stage::Done(outcome) => return Poll::Ready(Ok(outcome)),
                Stage::Lost => return Poll::Ready(Err(RecvError)),
                Stage::Taken => panic!("bridge_rayon: a task's outcome was taken twice"),
                Stage::Queued(work, queued_at) if self.may_run_here() => {
                    // Claimed by the waiter: it runs here, and its outcome is in the cell.
                    slot.stage = Stage::Running;
                    drop(slot);
                    job::run(work, self, queued_at);
                    slot = self.lock_slot();
                }
                // A pool thread has it (running, or its outcome on the way): wait for it.
                Stage::Running => return pending(slot, Stage::Running, cx),
                // Still queued, and this thread may not run it: the pool will.
                queued => return pending(slot, queued, cx),
            }
        }
    }

    fn try_take(&self) -> Result<Outcome<T>, TryRecvError> {
        let mut slot = self.lock_slot();
        match mem::replace(&mut slot.stage, Stage::Taken) {
            Stage::Done(outcome) => Ok(outcome),
            Stage::Lost => Err(TryRecvError::Closed),
            Stage::Taken => panic!("bridge_rayon: a task's outcome was taken twice"),
            waiting => {
                slot.stage = waiting;
                Err(TryRecvError::Empty)
            }
        }
    }

    fn is_ready(&self) -> bool {
        matches!(
            self.lock_slot().stage,
            Stage::Done(_) | Stage::Lost | Stage::Taken
        )
    }

    fn close(&self) {
        self.let_go(CANCELLED);
    }

    fn abandon(&self) {
        self.let_go(DETACHED);
    }
}

impl<F, T> Job<F, T> {
    /// The task is gone, `interest` says how: its waker and an outcome already handed over
    /// are dropped here, quietly, outside the lock.
    fn let_go(&self, interest: u8) {
        let (waker, unwanted) = {
            let mut slot = self.lock_slot();
            // ORDERING: Release pairs with `receiver_gone`'s Acquire.
            self.interest.store(interest, Release);
            let unwanted = match slot.stage {
                Stage::Done(_) => Some(mem::replace(&mut slot.stage, Stage::Taken)),
                _ => None,
            };
            (slot.waker.take(), unwanted)
        };
        job::drop_quietly((waker, unwanted));
    }

    fn lock_slot(&self) -> crate::sync::MutexGuard<'_, Slot<F, T>> {
        // Never poisoned: no user code runs while it is held.
        self.slot
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
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
impl<F, T> Runner for Job<F, T>
where
    F: FnOnce(CancelFlag<'_>) -> T + Send + 'static,
    T: Send + 'static,
{
    /// Runs the closure here, to the end, if this thread may (a worker of the job's pool,
    /// with no runtime entered) and no pool thread has taken it. (The task's own polls claim
    /// the job in `poll_take`.)
    fn help(&self, _: &Waker) -> bool {
        self.may_run_here() && self.run_if_queued()
    }

    fn joins_by_polling(&self) -> bool {
        self.may_run_here()
    }

    fn checks_stalls(&self) -> bool {
        true
    }

    fn waited(&self, waited: Duration) {
        if matches!(self.lock_slot().stage, Stage::Queued(..)) {
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
    /// `None` once run.
    job: Option<Arc<Job<F, T>>>,
}

impl<F, T> PoolJob<F, T>
where
    F: FnOnce(CancelFlag<'_>) -> T + Send + 'static,
    T: Send + 'static,
{
    pub(crate) fn new(job: Arc<Job<F, T>>) -> Self {
        Self { job: Some(job) }
    }

    /// Runs the job on this pool thread unless its waiter claimed it. Never unwinds.
    pub(crate) fn run(mut self) {
        let Some(job) = self.job.take() else { return };
        // The closure runs here (or finds its task dropped), unless the waiter claimed it:
        // then the waiter runs (or ran) it, and there is nothing to do.
        job.run_if_queued();
        job::drop_quietly(job);
    }
}

impl<F, T> Drop for PoolJob<F, T>
where
    F: FnOnce(CancelFlag<'_>) -> T + Send + 'static,
    T: Send + 'static,
{
    fn drop(&mut self) {
        let Some(job) = self.job.take() else { return };
        // The pool discarded the job without running it (rayon never does). The closure is
        // dropped here, quietly, and the task's waiter finds the job lost instead of
        // waiting for good.
        if let Some(unrun) = job.claim() {
            crate::metrics::cancelled();
            job::drop_quietly(unrun);
            job.lose();
        }
        job::drop_quietly(job);
    }
}
