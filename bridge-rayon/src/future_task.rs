//! A future on a rayon pool: one poll per wake-up, each poll a rayon job.
//!
//! The future, its sender and its bookkeeping live in one shared cell, reached by the
//! future's wakers, by the pool jobs that poll it and by its [`Task`]. One atomic state says
//! who may touch the future:
//!
//! ```text
//!            wake (queues a poll job)        the job starts
//!   IDLE ──────────────────────────▶ SCHEDULED ──────────────▶ RUNNING ──▶ DONE
//!    ▲                                   ▲       Ready, panic,   │  │      (Ready, panic,
//!    │            Pending                │       or cancelled    │  │       or cancelled)
//!    └───────────────────────────────────┼───────────────────────┘  │ wake
//!                                        │  Pending: one more poll  ▼
//!                                        └────────────────────── NOTIFIED
//! ```
//!
//! - A wake moves `IDLE` to `SCHEDULED` and queues one poll job; `RUNNING` to `NOTIFIED`
//!   (the poll under way ends by queueing one more); anything else is left alone: a poll is
//!   queued already, or the future is gone (`DONE`). So a wake-up never starts a second
//!   poll beside a running one, a wake during a poll is never lost, and wakes after the
//!   end do nothing.
//! - Only the side that moves `SCHEDULED` to `RUNNING` polls (the pool job, or the
//!   [`Task`]'s waiter on a rayon worker: see `help`); a job that finds another state does
//!   nothing. Every move to `SCHEDULED` queues a job, so a poll a waiter took leaves a stale
//!   job behind, never a missing one.
//! - A waiter on a rayon worker leaves its waker in the cell (`helper`); a move to
//!   `SCHEDULED` wakes it after queueing the job, so that the waiter comes back and runs the
//!   poll itself if no pool thread took it: a pool whose every worker waits for its own
//!   future tasks still polls them. The future's slot is a lock that only the owner of
//!   `RUNNING` takes, so it is never contended.
//! - Cancellation lives in the oneshot, as for a closure: a dropped `Task` closes its
//!   receiver, and the drop then wakes the future (`Claim::cancelled`), so that a future
//!   that nothing else would wake is dropped promptly too. A poll job that finds the
//!   receiver closed drops the future, on the pool thread, instead of polling it.
//!
//! Metrics: a future task is *started* at its first poll (the queue wait is the time from
//! the spawn to it), *finished* when it returned `Ready` or was dropped after its start by
//! a cancel, *panicked* when a poll panicked; *cancelled* when its `Task` was dropped
//! before the first poll. So the counts keep the closures' invariants at rest: `spawned ==
//! started + cancelled`, `started == finished + panicked`.

use crate::home;
use crate::job::{self, Outcome};
use crate::metrics;
use crate::sync::AtomicU8;
use crate::sync::Mutex as HelperLock;
use crate::sync::Ordering::{AcqRel, Acquire, Relaxed, Release};
use bridge_core::Task;
use bridge_core::oneshot::{self, SendError, Sender};
use bridge_core::task;
use std::cell::Cell;
use std::future::Future;
use std::panic::{self, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak, mpsc};
use std::task::{Context, Poll, Wake, Waker};
use std::thread;
use std::time::{Duration, Instant};

/// The values of a future task's state.
mod states {
    /// Pending, with no poll queued or running: the next wake queues one.
    pub(super) const IDLE: u8 = 0;
    /// A poll job is queued; nobody polls yet.
    pub(super) const SCHEDULED: u8 = 1;
    /// A poll is under way.
    pub(super) const RUNNING: u8 = 2;
    /// A poll is under way and a wake came during it: it ends by queueing one more.
    pub(super) const NOTIFIED: u8 = 3;
    /// The future returned `Ready`, panicked, or was cancelled, and was dropped. Final.
    pub(super) const DONE: u8 = 4;
}

use states::{DONE, IDLE, NOTIFIED, RUNNING, SCHEDULED};

/// Runs `fut` on rayon's global pool and returns the [`Task`] that yields its output.
///
/// Every wake-up of the future queues one poll of it as a job on the global pool (whatever
/// thread or executor wakes it); polls never overlap, a wake during a poll brings exactly
/// one more poll after it, and nothing polls the future after it completed. Rayon
/// parallelism inside a poll (`rayon::join`, `par_iter`) runs on the pool, as in any job.
///
/// The [`Task`] has all its conventions: `.await`, [`wait`](Task::wait),
/// [`join`](Task::join), [`wait_timeout`](Task::wait_timeout), [`try_get`](Task::try_get),
/// [`catch_unwind`](Task::catch_unwind). A panic in a poll is caught on the pool thread and
/// comes back to whoever takes the result. **Dropping the `Task` cancels the future** at its
/// next poll point: the drop queues a job that drops the future on the pool, even if the
/// future would never be woken again. [`detach`](Task::detach) lets it run to the end.
///
/// The future is polled as given: here nothing enters a tokio runtime. Through the facade
/// with its feature `tokio`, `bridge::cpu::spawn_future` enters the shared `IoRuntime`
/// during each poll, so that tokio's timers, sockets and channels work inside.
///
/// **Waiting on a worker.** A waiter on a worker of the task's pool (a poll of the `Task`,
/// `.await` in `bridge::run_blocking` or `bridge::block_on`, [`wait`](Task::wait),
/// [`join`](Task::join), [`wait_timeout`](Task::wait_timeout)) runs the future's queued poll
/// itself when no pool thread has taken it, and comes back for each later one: every worker
/// of a pool may wait for its own future tasks at once (a `par_iter` over sync calls, a pool
/// of one thread) and they still finish. It runs nothing else. A waiter on a worker of
/// another pool, or inside a tokio runtime's `block_on`, runs no poll: it blocks.
///
/// Metrics count a future task as started at its first poll, finished when it completes
/// (or is dropped by a cancel after its first poll), panicked when a poll panics, and
/// cancelled when its `Task` was dropped before the first poll. With the feature `tracing`,
/// the span current here is current during every poll.
///
/// The pool thread's scheduling is left as it is, unless
/// `bridge::configure().yield_after_long_polls(true)` asked for yields after long polls and
/// a long time slice. With feature `tokio` each poll enters the shared I/O runtime, so
/// tokio's timers and sockets work in the future.
///
/// # Examples
///
/// ```
/// let task = bridge::cpu::spawn_future(async {
///     let half = bridge::spawn(|| (0..500u64).sum::<u64>()).await;
///     half + (500..1_000u64).sum::<u64>()
/// });
/// assert_eq!(task.wait(), 499_500);
/// ```
pub fn spawn_future<F>(fut: F) -> Task<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    launch(fut, Runner::Global)
}

/// [`spawn_future`] on `pool`: the body of [`ThreadPoolExt::spawn_future_task`](crate::ThreadPoolExt::spawn_future_task).
pub(crate) fn spawn_future_on<F>(pool: &Arc<rayon_core::ThreadPool>, fut: F) -> Task<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    launch(fut, Runner::Custom(Arc::clone(pool)))
}

/// Makes the task and queues its first poll.
fn launch<F>(fut: F, pool: Runner) -> Task<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    crate::stall::watch_workers();
    let (task, shared) = make(fut, pool);
    shared.pool.submit(poll_job(shared.clone()));
    task
}

/// The task and its shared cell, `SCHEDULED`: the caller queues the first poll.
fn make<F>(fut: F, pool: Runner) -> (Task<F::Output>, Arc<FutureTask<F>>)
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let (tx, rx) = oneshot::channel();
    let spawned_at = metrics::spawned();
    let running = Running {
        fut: Box::pin(fut),
        tx,
        spawned_at,
        started: false,
        #[cfg(feature = "tracing")]
        span: tracing::dispatcher::has_been_set()
            .then(tracing::Span::current)
            .filter(|span| !span.is_disabled()),
    };
    let shared = Arc::new_cyclic(|me| FutureTask {
        state: AtomicU8::new(SCHEDULED),
        me: me.clone(),
        pool,
        helper: HelperLock::new(None),
        slot: Mutex::new(Some(running)),
    });
    let task = task::new(rx, shared.clone() as Arc<dyn task::Runner>);
    (task, shared)
}

/// The job that polls once (or finds itself stale).
fn poll_job<F>(shared: Arc<FutureTask<F>>) -> impl FnOnce() + Send + 'static
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    move || shared.run()
}

/// What the state guards: the future and where its outcome goes.
struct Running<F: Future> {
    fut: Pin<Box<F>>,
    tx: Sender<Outcome<F::Output>>,
    /// The time of the spawn, if its queue wait is sampled; taken at the first poll.
    spawned_at: Option<Instant>,
    /// Whether the first poll began (for the metrics).
    started: bool,
    /// The span current at the spawn, entered during every poll.
    #[cfg(feature = "tracing")]
    span: Option<tracing::Span>,
}

/// The cell a future task's wakers, poll jobs and `Task` share.
struct FutureTask<F: Future> {
    /// [`states`]: who may touch the future.
    state: AtomicU8,
    /// This cell, for the wakers and jobs that a poll run by the waiter makes.
    me: Weak<Self>,
    /// Where the polls run.
    pool: Runner,
    /// The waker of the task's waiter on a rayon worker, if it waits: woken (and taken) when
    /// a poll is queued, so that the waiter runs it if no pool thread does.
    helper: HelperLock<Option<Waker>>,
    /// The future until it is done. A safe cell, not a lock that anyone waits on: only the
    /// owner of `RUNNING` takes it.
    slot: Mutex<Option<Running<F>>>,
}

impl<F> FutureTask<F>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    /// A wake-up (or a cancel): queues one poll unless one is queued or running already.
    ///
    /// Every wake that finds the future alive is a read-modify-write of the state, even
    /// one that changes nothing (a poll already queued, or one more already due): so what
    /// the waking side did before the wake (a value put where the future looks, a closed
    /// receiver) happens-before the poll that follows, whichever wake queued it. A wake
    /// that only looked would let that poll miss it, return `Pending`, and nothing would
    /// poll again: a lost wake-up (the loom model `cancel_vs_wake_vs_poll` finds it).
    fn schedule(&self) {
        // ORDERING: Relaxed for the first look: every change below is a compare-exchange
        // that re-reads the state.
        let mut state = self.state.load(Relaxed);
        loop {
            let to = match state {
                IDLE => SCHEDULED,
                RUNNING => NOTIFIED,
                SCHEDULED | NOTIFIED => state,
                _ => return,
            };
            // ORDERING: AcqRel. Release: what the waking side did before the wake happens-
            // before the poll that the job (or the running poll's end) brings, which
            // acquires the state; the exchange joins the release sequence, so this holds
            // for the no-op exchanges too. Acquire: a wake orders after the wakes before it
            // (nothing depends on it but the uniform rule). Relaxed on failure: the loop
            // only retries with the value found.
            match self.state.compare_exchange(state, to, AcqRel, Relaxed) {
                Ok(IDLE) => {
                    self.submit_poll();
                    return;
                }
                Ok(_) => return,
                Err(found) => state = found,
            }
        }
    }

    /// Queues a poll job, and wakes the waiter on a rayon worker, if one waits, to run it
    /// if no pool thread does.
    fn submit_poll(&self) {
        if let Some(me) = self.me.upgrade() {
            self.pool.submit(poll_job(me));
        }
        // Woken under the slot's lock: once the waiter has stopped waiting
        // (`stop_helping`), no wake of its is still under way.
        let mut helper = self.helper.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(waker) = helper.take() {
            waker.wake();
        }
    }

    /// The pool job: polls once if the poll is still queued.
    fn run(self: Arc<Self>) {
        // ORDERING: Acquire: the wake (or the previous poll's end) that queued this poll
        // released the state, and with it what it did before; the slot's lock carries the
        // future itself.
        if self
            .state
            .compare_exchange(SCHEDULED, RUNNING, Acquire, Relaxed)
            .is_err()
        {
            // A waiter ran this poll; a later wake queued its own job.
            return;
        }
        if let Runner::Global = self.pool {
            mark_global_worker();
        }
        self.poll_once();
    }

    /// Polls the future once; the caller moved the state to `RUNNING`. With feature `tokio`
    /// the shared I/O runtime is entered meanwhile, so tokio's timers and sockets work in the
    /// future. With the courtesy on (see `courtesy.rs`), after a long poll the thread hands its
    /// CPU to whoever was woken on it meanwhile before it goes on, with nothing of the task
    /// locked.
    fn poll_once(self: &Arc<Self>) {
        crate::courtesy::before_poll();
        #[cfg(feature = "tokio")]
        let _io = bridge_tokio::IoRuntime::global().enter();
        self.poll_and_settle();
        crate::courtesy::after_poll();
    }

    /// [`poll_once`](Self::poll_once)'s poll, and what its outcome changes.
    fn poll_and_settle(self: &Arc<Self>) {
        let mut slot = self.slot.lock().unwrap_or_else(PoisonError::into_inner);
        let running = slot
            .as_mut()
            .expect("bridge_rayon: a future task polled after it ended");
        if running.tx.is_closed() {
            // The task was dropped: the future is dropped here, on this pool thread.
            let running = slot.take().expect("the future");
            drop(slot);
            if running.started {
                metrics::ended(false);
            } else {
                metrics::cancelled();
            }
            job::drop_quietly(running);
            self.finish();
            return;
        }
        if !running.started {
            running.started = true;
            metrics::started(running.spawned_at.take());
        }
        let waker = Waker::from(self.clone());
        let mut cx = Context::from_waker(&waker);
        let fut = running.fut.as_mut();
        #[cfg(feature = "tracing")]
        let polled = {
            let span = running.span.clone();
            panic::catch_unwind(AssertUnwindSafe(|| match span {
                Some(span) => span.in_scope(|| fut.poll(&mut cx)),
                None => fut.poll(&mut cx),
            }))
        };
        #[cfg(not(feature = "tracing"))]
        let polled = panic::catch_unwind(AssertUnwindSafe(|| fut.poll(&mut cx)));
        let outcome = match polled {
            Ok(Poll::Pending) => {
                drop(slot);
                // ORDERING: Release: the future is back in its slot (the lock's release
                // carries it) before the state says another poll may run. Acquire on
                // failure: the wake that moved it to NOTIFIED released what it did, which
                // the poll queued below must see.
                match self.state.compare_exchange(RUNNING, IDLE, Release, Acquire) {
                    Ok(_) => {}
                    Err(_) => {
                        // NOTIFIED: a wake came during the poll; it gets one more poll.
                        // A swap, not a store: every change of the state is a
                        // read-modify-write, so each one sees the one before it (a wake
                        // racing here finds NOTIFIED and does nothing).
                        // ORDERING: AcqRel: Release for the job that acquires it, as
                        // above; Acquire for the wakes since the failed exchange.
                        self.state.swap(SCHEDULED, AcqRel);
                        self.submit_poll();
                    }
                }
                return;
            }
            Ok(Poll::Ready(value)) => Ok(value),
            Err(payload) => Err(payload),
        };
        let running = slot.take().expect("the future");
        drop(slot);
        metrics::ended(outcome.is_err());
        let Running { fut, tx, .. } = running;
        // The future's own resources (a `Limit`'s room among them) go before the outcome
        // does, so whoever receives it finds them released.
        job::drop_quietly(fut);
        if let Err(SendError(unwanted)) = tx.send(outcome) {
            job::drop_quietly(unwanted);
        }
        self.finish();
    }

    /// The future is gone: no poll ever again. The outcome went through the oneshot,
    /// which wakes the waiter itself.
    fn finish(&self) {
        // A swap, not a store, as in `poll_once`: a wake racing this finds RUNNING or
        // NOTIFIED before it, or DONE after it.
        // ORDERING: Release: nothing is published through it (the outcome travels through
        // the oneshot); a uniform rule for the state's writes.
        self.state.swap(DONE, Release);
    }
}

impl<F> Wake for FutureTask<F>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    fn wake(self: Arc<Self>) {
        self.schedule();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.schedule();
    }
}

/// A future task as its `Task` sees it: the rules of the closure's job (see `job_claim.rs`),
/// for the one poll queued at a time.
impl<F> task::Runner for FutureTask<F>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    /// On a worker of the task's pool: leaves `waker` to be woken at the next queued poll,
    /// then runs the poll queued now, if any, here (unless a tokio runtime is entered here,
    /// see `home.rs`).
    fn help(&self, waker: &Waker) -> bool {
        if !self.pool.is_home() {
            return false;
        }
        // Whether a runtime is entered here costs more than a look at the state: asked only
        // when a poll is queued. One queued later wakes the waiter, which asks then.
        // ORDERING: Relaxed: a look; the claim below re-reads the state.
        if self.state.load(Relaxed) == SCHEDULED && !home::outside_runtimes() {
            return false;
        }
        let Some(me) = self.me.upgrade() else {
            return false;
        };
        // The waker first, the look at the state second: a poll queued after the look wakes
        // the waker (`submit_poll` takes it after its move to SCHEDULED), and one queued
        // before it is found here. Either way the waiter runs it or is woken for it.
        {
            let mut helper = self.helper.lock().unwrap_or_else(PoisonError::into_inner);
            match &*helper {
                Some(kept) if kept.will_wake(waker) => {}
                _ => *helper = Some(waker.clone()),
            }
        }
        // ORDERING: Acquire, as the pool job's claim (see `run`). Relaxed on failure: the
        // waiter then only waits (for the outcome through the oneshot, or for its waker).
        match self
            .state
            .compare_exchange(SCHEDULED, RUNNING, Acquire, Relaxed)
        {
            Ok(_) => {
                me.poll_once();
                true
            }
            Err(_) => false,
        }
    }

    fn joins_by_polling(&self) -> bool {
        self.pool.is_home() && home::outside_runtimes()
    }

    fn checks_stalls(&self) -> bool {
        true
    }

    fn waited(&self, waited: Duration) {
        // ORDERING: Relaxed: a look for a warning, which orders nothing.
        if self.state.load(Relaxed) == SCHEDULED {
            crate::stall::stalled(waited);
        }
    }

    fn stop_helping(&self) {
        self.helper
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
    }

    /// The task was dropped (its receiver closed): a poll job drops the future.
    fn cancel(&self) {
        self.schedule();
    }
}

/// Where a future task's polls run.
enum Runner {
    /// rayon's global pool.
    Global,
    /// A pool of the caller's, kept alive by its future tasks.
    Custom(Arc<rayon_core::ThreadPool>),
    /// The loom models' stand-in: a queue that model threads drain.
    #[cfg(all(test, bridge_loom))]
    Loom(loom_pool::LoomPool),
}

impl Runner {
    /// Whether this thread is one of the pool's workers, whose waiters run its queued polls.
    /// The loom models' threads all stand for its workers.
    fn is_home(&self) -> bool {
        match self {
            Self::Global => home::on_global_pool(),
            Self::Custom(pool) => pool.current_thread_index().is_some(),
            #[cfg(all(test, bridge_loom))]
            Self::Loom(_) => true,
        }
    }

    fn submit(&self, job: impl FnOnce() + Send + 'static) {
        match self {
            Self::Global => submit_global(job),
            Self::Custom(pool) => pool.spawn(job),
            #[cfg(all(test, bridge_loom))]
            Self::Loom(queue) => queue.push(Box::new(job)),
        }
    }
}

thread_local! {
    /// Whether this thread is known to be a worker of the global pool: it ran a poll job
    /// queued there.
    static ON_GLOBAL_POOL: Cell<bool> = const { Cell::new(false) };
}

fn on_global_pool() -> bool {
    ON_GLOBAL_POOL.with(Cell::get)
}

fn mark_global_worker() {
    ON_GLOBAL_POOL.with(|on| on.set(true));
}

/// Queues `job` on the global pool. `rayon_core::spawn` goes to the pool of the calling
/// worker, if this is one, so a wake on a worker not known to be the global pool's (a
/// worker of another pool, say) goes through a relay thread outside rayon instead.
fn submit_global(job: impl FnOnce() + Send + 'static) {
    if rayon_core::current_thread_index().is_none() || on_global_pool() {
        rayon_core::spawn(job);
    } else {
        relay(Box::new(job));
    }
}

type PollJob = Box<dyn FnOnce() + Send + 'static>;

/// Hands `job` to the relay thread, started at the first need, which spawns it from outside
/// rayon: onto the global pool. A worker that runs a poll job of the global pool is marked
/// as one of its own (see `run`), so that its wakes skip the relay from then on.
fn relay(job: PollJob) {
    static RELAY: OnceLock<Option<mpsc::Sender<PollJob>>> = OnceLock::new();
    let relay = RELAY.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<PollJob>();
        let started = thread::Builder::new()
            .name("bridge-rayon-relay".into())
            .spawn(move || {
                for job in rx {
                    rayon_core::spawn(job);
                }
            });
        started.ok().map(|_| tx)
    });
    match relay {
        Some(tx) => {
            if let Err(mpsc::SendError(job)) = tx.send(job) {
                rayon_core::spawn(job);
            }
        }
        // No thread could be started: the job goes to this worker's pool, which still polls
        // it once (on the wrong pool, rather than never).
        None => rayon_core::spawn(job),
    }
}

/// The loom models' stand-in for a pool: a queue of poll jobs that model threads drain.
#[cfg(all(test, bridge_loom))]
pub(crate) mod loom_pool {
    use super::{Future, PollJob, Runner, Task, make, poll_job};
    use std::sync::Arc;

    /// A future task whose polls are queued on a [`LoomPool`]. Its waiters on any loom
    /// thread run the queued polls, as a waiter on a rayon worker does.
    pub(crate) fn loom_future_task<F>(fut: F) -> (Task<F::Output>, LoomPool)
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let pool = LoomPool::default();
        let (task, shared) = make(fut, Runner::Loom(pool.clone()));
        pool.push(Box::new(poll_job(shared)));
        (task, pool)
    }

    /// The queue.
    #[derive(Clone, Default)]
    pub(crate) struct LoomPool(Arc<loom::sync::Mutex<std::collections::VecDeque<PollJob>>>);

    impl LoomPool {
        pub(crate) fn push(&self, job: PollJob) {
            self.0.lock().unwrap().push_back(job);
        }

        /// Runs the oldest queued job; `false` if none was queued.
        pub(crate) fn run_one(&self) -> bool {
            let job = self.0.lock().unwrap().pop_front();
            job.map(|job| job()).is_some()
        }

        /// Runs queued jobs until none is left.
        pub(crate) fn run_all(&self) {
            while self.run_one() {}
        }
    }
}
