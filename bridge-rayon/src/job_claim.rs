//! A closure's job and its task's outcome, in one cell: who runs the job (the pool, or the
//! task's own waiter), and how its outcome reaches the task.
//!
//! The cell is shared by the `Task` and by the closure the pool queues, and it is the only
//! allocation of a hop besides rayon's own job box: a hop costs what `rayon::spawn` of a
//! closure that sends on a oneshot costs. One atomic byte, `state`, orders everything:
//!
//! ```text
//!  CLAIMED    set by whoever runs the closure: the pool's copy, or the task's waiter on a
//!             worker of its pool. The one whose fetch_or set it takes the closure, and is the
//!             only one ever to run it; the other leaves the job alone (the pool's copy then
//!             does nothing; the waiter waits for the outcome like any other waiter).
//!  WAKER      set by the task's side once its waker is in `waker`, cleared by it (only while
//!             UNPARKING and DONE are clear) to replace the waker: while it is clear, the task's
//!             side owns the waker.
//!  UNPARKING  set by the claimer, only over WAKER, once the outcome is in `outcome`: it is
//!             waking the task's waker, and then sets DONE and clears UNPARKING in one step.
//!  DONE       set by the claimer once the outcome is in `outcome` (or, if the pool dropped its
//!             copy unrun, once there will be none) and the task's waker, if any, was woken:
//!             from then on the task's side owns every cell, and the claimer touches none.
//!  CANCELLED  set by a dropped task: the job is cancelled (a job that has not started never
//!             starts); its running closure reads it (its `CancelFlag`).
//!  DETACHED   set by a detached task: the job runs on, its outcome dropped where it ends.
//! ```
//!
//! So a task's side that sees DONE took its last wake-up: no wake-up reaches a waiter that
//! has taken the outcome and moved on (a parked thread that now waits for something else, as
//! the loom models check). The outcome and the task's interest race once: whichever of DONE
//! and CANCELLED / DETACHED is set second finds the other, and that side drops the outcome,
//! quietly. The task's side is one thread at a time (`Task`'s receiving methods take
//! `&mut self` or `self`). No user code runs inside a step of the protocol but the waker's
//! `wake_by_ref`, and drops, which are contained.

use crate::home::{self, Home};
use crate::job::{self, CancelFlag, Outcome, Outlet, ReceiverGone};
use crate::sync::UnsafeCell;
use crate::sync::{AtomicU8, Ordering::AcqRel, Ordering::Acquire, Ordering::Relaxed};
use bridge_core::oneshot::{RecvError, TryRecvError};
use bridge_core::task::{Cell, Runner};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

/// The bits of a job's `state` (see the module's docs).
mod bits {
    pub(super) const CLAIMED: u8 = 1;
    pub(super) const WAKER: u8 = 2;
    pub(super) const UNPARKING: u8 = 4;
    pub(super) const DONE: u8 = 8;
    pub(super) const CANCELLED: u8 = 16;
    pub(super) const DETACHED: u8 = 32;
    /// The task let go of the outcome, one way or the other.
    pub(super) const LET_GO: u8 = CANCELLED | DETACHED;
}

use bits::{CANCELLED, CLAIMED, DETACHED, DONE, LET_GO, UNPARKING, WAKER};

/// A closure's job and its task's outcome.
pub(crate) struct Job<F, T> {
    /// The pool the job was queued on: only a waiter on one of its workers may claim it
    /// (see `home.rs`).
    home: Home,
    /// See the module's docs.
    state: AtomicU8,
    /// The closure, with the time of a sampled spawn (see `metrics.rs`), until the claimer
    /// takes it.
    closure: UnsafeCell<Option<(F, Option<Instant>)>>,
    /// The outcome: written by the claimer before `DONE`, taken by the task after.
    outcome: UnsafeCell<Option<Outcome<T>>>,
    /// The waker of the task's latest poll that found no outcome (see `WAKER`).
    waker: UnsafeCell<Option<Waker>>,
}

// SAFETY: the cells are reached only as the protocol above allows: the closure by the one
// claimer (it moves to that thread: `F: Send`), the outcome by the claimer before `DONE` and
// by the task after (it moves between them: `T: Send`), the waker by the task while `WAKER`
// is clear and by reference from both sides while it is set (`Waker` is `Send + Sync`).
unsafe impl<F: Send, T: Send> Sync for Job<F, T> {}

impl<F, T> Job<F, T>
where
    F: FnOnce(CancelFlag<'_>) -> T + Send + 'static,
    T: Send + 'static,
{
    /// A queued job.
    pub(crate) fn new(f: F, spawned_at: Option<Instant>, home: Home) -> Arc<Self> {
        Arc::new(Self {
            home,
            state: AtomicU8::new(0),
            closure: UnsafeCell::new(Some((f, spawned_at))),
            outcome: UnsafeCell::new(None),
            waker: UnsafeCell::new(None),
        })
    }

    /// Sets `CLAIMED`: the closure if this call set it.
    fn claim(&self) -> Option<(F, Option<Instant>)> {
        // ORDERING: Relaxed: the closure was written before the job was shared, which
        // happened-before any claim; the bit only decides who takes it.
        if self.state.fetch_or(CLAIMED, Relaxed) & CLAIMED != 0 {
            return None;
        }
        // SAFETY: this call set `CLAIMED`, so it is the only one ever to reach the closure.
        self.closure
            .with_mut(|closure| unsafe { (*closure).take() })
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

    /// Ends the job: hands `outcome` to the task (`None` if the pool dropped the job unrun)
    /// and wakes it, or drops the outcome if the task let go of it. Called once, by the
    /// claimer.
    fn finish(&self, outcome: Option<Outcome<T>>) {
        if outcome.is_some() {
            // SAFETY: DONE is not set (only this, the claimer's one call, sets it), so the
            // task's side does not touch the outcome.
            self.outcome.with_mut(|cell| unsafe { *cell = outcome });
        }
        // ORDERING: Acquire: the waker the task's side stored before setting WAKER, and what
        // it did before letting go.
        let mut state = self.state.load(Acquire);
        loop {
            if state & LET_GO != 0 {
                // The task let go first: it never takes the outcome, nor wants a wake-up.
                // SAFETY: DONE is not set and never will be: the outcome is this side's.
                let unwanted = self.outcome.with_mut(|cell| unsafe { (*cell).take() });
                job::drop_quietly(unwanted);
                return;
            }
            // ORDERING (both exchanges): success AcqRel: Release publishes the outcome with
            // DONE (the task's side reads it with Acquire), Acquire as for the load above;
            // failure Acquire, as the load.
            if state & WAKER == 0 {
                match self
                    .state
                    .compare_exchange(state, state | DONE, AcqRel, Acquire)
                {
                    Ok(_) => return,
                    Err(now) => state = now,
                }
            } else {
                match self
                    .state
                    .compare_exchange(state, state | UNPARKING, AcqRel, Acquire)
                {
                    Ok(_) => break,
                    Err(now) => state = now,
                }
            }
        }
        // SAFETY: WAKER was set when UNPARKING was, so the waker is stored; the task's side
        // only reads it until DONE (it clears WAKER to replace it only while UNPARKING is
        // clear).
        self.waker.with(|waker| unsafe {
            if let Some(waker) = &*waker {
                waker.wake_by_ref();
            }
        });
        // ORDERING: AcqRel: Release publishes the outcome and ends this side's reads of the
        // waker; Acquire for a let-go that came during the wake-up. The XOR sets DONE and
        // clears UNPARKING (set above, DONE clear) at once, keeping the task's bits.
        let before = self.state.fetch_xor(UNPARKING | DONE, AcqRel);
        if before & LET_GO != 0 {
            // The task let go during the wake-up: it saw UNPARKING without DONE, and left the
            // outcome to this side.
            // SAFETY: as in the loop above: the task's side never takes it.
            let unwanted = self.outcome.with_mut(|cell| unsafe { (*cell).take() });
            job::drop_quietly(unwanted);
        }
    }

    /// Takes the outcome, which `DONE` (read with Acquire) published: `Err` if the job was
    /// lost.
    fn take(&self) -> Result<Outcome<T>, RecvError> {
        // SAFETY: the task's side saw DONE: the claimer no longer touches the outcome,
        // and the task's side is one thread at a time.
        self.outcome
            .with_mut(|cell| unsafe { (*cell).take() })
            .ok_or(RecvError)
    }
}

impl<F, T> ReceiverGone for Job<F, T> {
    fn receiver_gone(&self) -> bool {
        // ORDERING: Acquire pairs with `let_go`'s Release: what the task's thread did before
        // dropping it is visible to a closure that sees the cancel.
        self.state.load(Acquire) & CANCELLED != 0
    }
}

impl<F, T> Outlet<T> for Job<F, T>
where
    F: FnOnce(CancelFlag<'_>) -> T + Send + 'static,
    T: Send + 'static,
{
    fn deliver(&self, outcome: Outcome<T>) {
        self.finish(Some(outcome));
    }
}

impl<F, T> Cell<T> for Job<F, T>
where
    F: FnOnce(CancelFlag<'_>) -> T + Send + 'static,
    T: Send + 'static,
{
    fn poll_take(&self, cx: &mut Context<'_>) -> Poll<Result<Outcome<T>, RecvError>> {
        // ORDERING: Acquire pairs with `finish`'s Release of DONE (the outcome).
        let mut state = self.state.load(Acquire);
        if state & WAKER != 0 && state & (UNPARKING | DONE) == 0 {
            // SAFETY: WAKER is set: the claimer may read the waker, and so may this side.
            let kept = self.waker.with(|waker| unsafe {
                (*waker)
                    .as_ref()
                    .is_some_and(|waker| waker.will_wake(cx.waker()))
            });
            if kept {
                return Poll::Pending;
            }
            // Take the waker back to replace it, unless the claimer is waking it.
            while state & (UNPARKING | DONE) == 0 {
                // ORDERING: success Relaxed: the waker is this side's own; failure Acquire,
                // as the load above.
                match self
                    .state
                    .compare_exchange(state, state & !WAKER, Relaxed, Acquire)
                {
                    Ok(_) => {
                        state &= !WAKER;
                        break;
                    }
                    Err(now) => state = now,
                }
            }
        }
        if state & DONE != 0 {
            return Poll::Ready(self.take());
        }
        if state & UNPARKING != 0 {
            // The claimer is a few instructions from DONE and is waking the waker it has;
            // ask to be polled again rather than spin here.
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        // SAFETY: WAKER is clear (this side is the only one to set or clear it), and the
        // claimer reads the waker only once it set UNPARKING over WAKER.
        let replaced = self
            .waker
            .with_mut(|waker| unsafe { (*waker).replace(cx.waker().clone()) });
        // ORDERING: AcqRel: Release publishes the waker to `finish`'s Acquire; Acquire for
        // the outcome if DONE came first.
        let before = self.state.fetch_or(WAKER, AcqRel);
        job::drop_quietly(replaced);
        if before & DONE != 0 {
            // Finished before the waker was there: nothing wakes it, and the outcome is here.
            return Poll::Ready(self.take());
        }
        Poll::Pending
    }

    fn try_take(&self) -> Result<Outcome<T>, TryRecvError> {
        // ORDERING: Acquire, as in `poll_take`.
        if self.state.load(Acquire) & DONE == 0 {
            return Err(TryRecvError::Empty);
        }
        self.take().map_err(|RecvError| TryRecvError::Closed)
    }

    fn is_ready(&self) -> bool {
        // ORDERING: Relaxed: a hint; taking the outcome reads `DONE` again with Acquire.
        self.state.load(Relaxed) & DONE != 0
    }

    fn close(&self) {
        self.let_go(CANCELLED);
    }

    fn abandon(&self) {
        self.let_go(DETACHED);
    }
}

impl<F, T> Job<F, T> {
    /// The task is gone, `how` says how (CANCELLED or DETACHED): an outcome already handed
    /// over, and the waker unless the claimer is waking it, are dropped here, quietly.
    fn let_go(&self, how: u8) {
        // ORDERING: AcqRel: Release pairs with `receiver_gone`'s Acquire and `finish`'s;
        // Acquire for the outcome if DONE came first.
        let before = self.state.fetch_or(how, AcqRel);
        if before & UNPARKING != 0 {
            // The claimer is waking the waker, and will find the task gone and drop the
            // outcome: both stay, and go with the job.
            return;
        }
        // SAFETY: the claimer reads the waker only if it set UNPARKING, which it no longer
        // can: DONE is set, or it will find the task gone first.
        let waker = self.waker.with_mut(|waker| unsafe { (*waker).take() });
        let unwanted = if before & DONE != 0 {
            // SAFETY: DONE is set: the outcome is this side's. (Before DONE it is the
            // claimer's, which will find the task gone and drop it.)
            self.outcome.with_mut(|cell| unsafe { (*cell).take() })
        } else {
            None
        };
        job::drop_quietly((waker, unwanted));
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
    /// with no runtime entered) and no pool thread has taken it.
    fn help(&self, _: &Waker) -> bool {
        if !home::is_home(self.home) || !home::outside_runtimes() {
            return false;
        }
        if self.run_if_queued() {
            // Not started: it ran here, and its outcome is in the cell.
            true
        } else {
            // A worker has it (running, or finished): wait for it.
            false
        }
    }

    fn joins_by_polling(&self) -> bool {
        home::is_home(self.home) && home::outside_runtimes()
    }

    fn checks_stalls(&self) -> bool {
        true
    }

    /// The job is its task's cell.
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn waited(&self, waited: Duration) {
        // ORDERING: Relaxed: a report; the wait goes on whatever it finds.
        if self.state.load(Relaxed) & CLAIMED == 0 {
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
            job.finish(None);
        }
        job::drop_quietly(job);
    }
}
