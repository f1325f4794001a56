//! A closure's job and its task's outcome, in one cell: who runs the job (the pool, or the
//! task's own waiter), and how its outcome reaches the task.
//!
//! The cell is shared by the `Task` and by the closure the pool queues, and it is the only
//! allocation of a hop besides rayon's own job box. A hop costs what `rayon::spawn` of a
//! closure that sends on tokio's oneshot costs: two allocations, and besides the `Arc`'s
//! counts one atomic read-modify-write to claim the job, one to hand its outcome over, and one
//! more only when the task's poll comes first and stores its waker. One atomic byte, `state`,
//! orders the cells beside it, as tokio's oneshot orders its own:
//!
//! ```text
//!  CLAIMED    set by whoever runs the closure: the pool's copy, or the task's waiter on a
//!             worker of the job's pool. The one whose fetch_or set it takes the closure and
//!             is the only one ever to run it; the other leaves the job alone (the pool's copy
//!             then does nothing; the waiter waits for the outcome like any other waiter).
//!  WAKER      set by the task's side once its waker is in `waker`, cleared by it to replace
//!             the waker (only while DONE is clear). The claimer reads the waker only if the
//!             exchange that set DONE found WAKER set; the task's side writes it only while
//!             WAKER is clear, or once it let go with DONE clear (DONE then never comes).
//!  DONE       set by the claimer once the outcome is in `outcome` (or, if the pool dropped its
//!             copy unrun, once there will be none), unless the task let go first. From then
//!             on the outcome is the task's side's, and the waker is only read (woken by the
//!             claimer if WAKER was set with DONE) until the job is dropped.
//!  CANCELLED  set by a dropped task: the job is cancelled (a job that has not started never
//!             starts); its running closure reads it (its `CancelFlag`).
//!  DETACHED   set by a detached task: the job runs on, its outcome dropped where it ends.
//! ```
//!
//! The hand-over and the task's letting go race once: whichever of DONE and CANCELLED /
//! DETACHED is set second finds the other, and that side drops the outcome, quietly. The
//! claimer wakes the task after DONE, as tokio's oneshot does, so a poll may take the outcome
//! before the wake-up arrives; the wake-up is spurious then, which every executor and
//! `bridge_core::block_on` tolerate (a parked thread may get one spurious unpark, as
//! `std::thread::park` allows). The task's side is one thread at a time (`Task`'s receiving
//! methods take `&mut self` or `self`). The user code that runs inside a step of the protocol,
//! a waker's `clone` and `wake_by_ref` and the drops of what nobody wants, cannot break it: a
//! clone that panics leaves WAKER clear, and a wake-up or a drop that panics is contained.

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
    pub(super) const DONE: u8 = 4;
    pub(super) const CANCELLED: u8 = 8;
    pub(super) const DETACHED: u8 = 16;
    /// The task let go of the outcome, one way or the other.
    pub(super) const LET_GO: u8 = CANCELLED | DETACHED;
}

use bits::{CANCELLED, CLAIMED, DETACHED, DONE, LET_GO, WAKER};

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
    /// The outcome: written by the claimer before DONE, taken by the task's side after.
    outcome: UnsafeCell<Option<Outcome<T>>>,
    /// The waker of the task's latest poll that found no outcome (see WAKER).
    waker: UnsafeCell<Option<Waker>>,
}

// SAFETY: the cells are reached only as the module's protocol allows: the closure by the one
// claimer (it moves to that thread: `F: Send`); the outcome by the claimer before DONE (and
// after the task let go first, to drop it) and by the task's side after DONE (it moves
// between them: `T: Send`); the waker written by the task's side only while the claimer
// cannot read it, and read by shared reference (`Waker` is `Send + Sync`). The other fields
// are `Sync` on their own (checked below).
unsafe impl<F: Send, T: Send> Sync for Job<F, T> {}

/// The fields `Job`'s `Sync` vouches for without a cell.
const _: fn() = || {
    fn sync<X: Sync>() {}
    sync::<Home>();
    sync::<AtomicU8>();
};

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

    /// Sets CLAIMED: the closure if this call set it.
    fn claim(&self) -> Option<(F, Option<Instant>)> {
        // ORDERING: Relaxed: the closure was written before the job was shared, which
        // happened-before any claim; the bit only decides who takes it.
        if self.state.fetch_or(CLAIMED, Relaxed) & CLAIMED != 0 {
            return None;
        }
        // SAFETY: this call set CLAIMED, so it is the only one ever to reach the closure.
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

    /// Whether a waiter on this thread may run the job: a worker of its pool, with no tokio
    /// runtime entered (see `home.rs`).
    fn may_run_here(&self) -> bool {
        home::is_home(self.home) && home::outside_runtimes()
    }

    /// Ends the job: hands `outcome` to the task (`None` if the pool dropped the job unrun)
    /// and wakes it, or drops the outcome if the task let go of it. Called once, by the
    /// claimer.
    fn finish(&self, outcome: Option<Outcome<T>>) {
        if outcome.is_some() {
            // SAFETY: DONE is clear (only this call, the claimer's one, sets it), so the
            // task's side does not touch the outcome.
            self.outcome.with_mut(|cell| unsafe { *cell = outcome });
        }
        // ORDERING: Acquire: what the task's thread did before letting go happened-before
        // the outcome is dropped here.
        let mut state = self.state.load(Acquire);
        loop {
            if state & LET_GO != 0 {
                // The task let go first: it never takes the outcome.
                // SAFETY: DONE is clear and stays so: the outcome is this side's.
                let unwanted = self.outcome.with_mut(|cell| unsafe { (*cell).take() });
                job::drop_quietly(unwanted);
                return;
            }
            // ORDERING: success AcqRel: Release publishes the outcome with DONE (the task's
            // side takes it after an Acquire), Acquire for the waker the task's side stored
            // before setting WAKER; failure Acquire, as the load.
            match self
                .state
                .compare_exchange(state, state | DONE, AcqRel, Acquire)
            {
                Ok(_) => break,
                Err(now) => state = now,
            }
        }
        if state & WAKER != 0 {
            // SAFETY: WAKER was set with DONE: the waker is stored, and the task's side no
            // longer writes it (it clears WAKER only while DONE is clear).
            self.waker.with(|waker| unsafe {
                if let Some(waker) = &*waker {
                    // A waker that panics never reaches the pool (this runs after the
                    // closure's `catch_unwind`); the outcome is there either way.
                    job::contain(|| waker.wake_by_ref());
                }
            });
        }
    }

    /// Takes the outcome, which DONE (read with Acquire) published: `Err` if the job was lost.
    fn take(&self) -> Result<Outcome<T>, RecvError> {
        // SAFETY: the task's side saw DONE: the claimer no longer touches the outcome, and
        // the task's side is one thread at a time.
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
    /// Takes the outcome; or, on a worker of the job's pool with no runtime entered, claims a
    /// job still queued and runs it here first (the task's poll asks no `help` of its cell).
    fn poll_take(&self, cx: &mut Context<'_>) -> Poll<Result<Outcome<T>, RecvError>> {
        // ORDERING: Acquire pairs with `finish`'s Release of DONE (the outcome).
        let mut state = self.state.load(Acquire);
        if state & CLAIMED == 0 && self.may_run_here() {
            // ORDERING (both loads): Acquire, as above.
            state = match self.claim() {
                Some((work, queued_at)) => {
                    // Claimed by the waiter: it runs here, and its outcome is in the cell.
                    job::run(work, self, queued_at);
                    self.state.load(Acquire)
                }
                // The pool's copy claimed it first: wait for its outcome.
                None => self.state.load(Acquire),
            };
        }
        if state & DONE != 0 {
            return Poll::Ready(self.take());
        }
        if state & WAKER != 0 {
            // SAFETY: WAKER is set: either side may read the waker, neither writes it.
            let kept = self.waker.with(|waker| unsafe {
                (*waker)
                    .as_ref()
                    .is_some_and(|kept| kept.will_wake(cx.waker()))
            });
            if kept {
                return Poll::Pending;
            }
            // Take the waker back to replace it, unless the outcome came meanwhile.
            loop {
                // ORDERING: success Relaxed: the waker is this side's own again; failure
                // Acquire, as the load above.
                match self
                    .state
                    .compare_exchange(state, state & !WAKER, Relaxed, Acquire)
                {
                    Ok(_) => break,
                    Err(now) if now & DONE != 0 => return Poll::Ready(self.take()),
                    Err(now) => state = now,
                }
            }
        }
        // SAFETY: WAKER is clear (only this side sets or clears it), and the claimer reads the
        // waker only after setting DONE over WAKER.
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
        // ORDERING: Relaxed: a hint; taking the outcome reads DONE again with Acquire.
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
    /// over is dropped here, quietly; so is the waker, unless the claimer may be waking it.
    fn let_go(&self, how: u8) {
        // ORDERING: AcqRel: Release pairs with `receiver_gone`'s Acquire and `finish`'s;
        // Acquire for the outcome if DONE came first.
        let before = self.state.fetch_or(how, AcqRel);
        if before & DONE != 0 {
            // SAFETY: DONE is set: the outcome is this side's. The waker stays (the claimer
            // may be waking it) and goes with the job.
            let unwanted = self.outcome.with_mut(|cell| unsafe { (*cell).take() });
            job::drop_quietly(unwanted);
        } else {
            // SAFETY: DONE is clear and stays so (the claimer finds the task gone), so the
            // claimer never reads the waker.
            let waker = self.waker.with_mut(|waker| unsafe { (*waker).take() });
            job::drop_quietly(waker);
        }
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
