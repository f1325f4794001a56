//! `Task<T>`: the handle on CPU work running on a rayon pool.

use crate::TaskError;
use crate::job::{self, CancelFlag, Outcome};
use crate::job_claim::{Claim, Job, PoolJob, may_help};
use bridge_core::oneshot::{self, Receiver, RecvError, RecvTimeoutError, TryRecvError};
use futures_core::future::FusedFuture;
use std::fmt;
use std::future::Future;
use std::panic::{RefUnwindSafe, UnwindSafe, resume_unwind};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::{Duration, Instant};

/// A closure running (or queued) on a rayon pool, and the way to its result.
///
/// Made by [`spawn`](crate::spawn), [`spawn_fifo`](crate::spawn_fifo),
/// [`spawn_cancellable`](crate::spawn_cancellable) and the
/// `ThreadPoolExt` methods, and `spawn_future`. The result can be taken in any
/// convention:
///
/// - **async**: `task.await` on any executor gives the closure's value and resumes its
///   panic in the awaiting task; [`catch_unwind`](Self::catch_unwind) gives a
///   `Result<T, TaskError>` instead;
/// - **blocking**: [`wait`](Self::wait), [`wait_timeout`](Self::wait_timeout),
///   [`wait_deadline`](Self::wait_deadline), and [`join`](Self::join) (non-panicking);
/// - **sync**: [`try_get`](Self::try_get), and [`is_finished`](Self::is_finished) to ask
///   without taking anything.
///
/// It is a `FusedFuture` too, for futures' `select!` loops.
///
/// **Dropping a `Task` cancels it:** if the job has not started, the closure never runs
/// (its captures are dropped on the pool thread); if it is running, it finishes (a
/// cancellable closure can see the [`CancelFlag`] and stop early) and its result is dropped
/// on the pool thread. A result that had already arrived is dropped with the `Task`, on the
/// dropping thread, inside `catch_unwind`: a panic from its destructor (or from the
/// destructor of the closure's panic payload) is contained there and never escapes the
/// drop, not even while the thread unwinds. [`detach`](Self::detach) lets the job run
/// without anybody waiting.
///
/// # Waiting on a rayon worker
///
/// Whoever waits on a rayon worker runs what it waits for, and only that. A waiter there
/// (a poll of the task, `.await` in `bridge::run_blocking` or `bridge::block_on`,
/// [`wait`](Self::wait), [`join`](Self::join)) runs the task's job itself if no pool thread
/// has started it yet (the pool's copy then finds it taken and does nothing); for a future
/// task it runs the queued poll, and comes back for each later one. Every worker of a pool
/// may wait for tasks queued on that pool at once (a `par_iter` over synchronous calls, a
/// pool of one thread) and they still finish, nested to any depth. A waiter never runs
/// unrelated jobs of the pool, so it builds no wait cycle that a plain blocking wait would
/// not, and it never runs another job on top of its own stack while it holds its locks.
///
/// - **Where the work runs.** On the waiting worker, when it takes the job; on a pool
///   thread otherwise. A waiter that is a worker of another pool may take it too (rayon
///   does not tell which pool a worker belongs to); nested rayon work of the closure then
///   goes to the waiter's pool.
/// - **Off rayon it blocks.** A thread outside rayon (a tokio worker, a plain thread)
///   never runs the job: `spawn` promised a thread of the pool, and CPU work does not
///   belong on an async executor's thread.
/// - **Time limits hold.** [`wait_timeout`](Self::wait_timeout) and
///   [`wait_deadline`](Self::wait_deadline) never run anything (a running closure cannot be
///   interrupted at the limit): they block until the result or the limit, whichever comes
///   first, on every thread. [`try_get`](Self::try_get) never runs anything.
///
/// What can still deadlock is what would deadlock with plain blocking waits: a cycle the
/// program builds, such as a job waiting for a task whose job already runs on another
/// worker that waits, directly or not, for the first; or a thread outside rayon waiting for
/// a task while every worker of its pool is blocked in something else. A wait on a rayon
/// pool that sees no progress for long says so (see the crate docs' section on stalls).
///
/// # Examples
///
/// ```
/// # let rt = tokio::runtime::Runtime::new().unwrap();
/// # rt.block_on(async {
/// let checksum = bridge::spawn(|| (0..1_000u64).sum::<u64>()).await;
/// assert_eq!(checksum, 499_500);
/// # });
/// ```
#[must_use = "dropping a Task cancels it; await it, wait for it, or call .detach()"]
pub struct Task<T> {
    /// Taken by the methods that consume the task (and by its drop), and by every take that
    /// gets the outcome (the poll that completes it, `try_get`, a timed wait): `None` under a
    /// live task means the outcome was taken (the task is terminated, in `FusedFuture`'s
    /// terms).
    rx: Option<Receiver<Outcome<T>>>,
    /// The work, shared with the pool's copy: a waiter on a rayon worker runs it through
    /// this ([`Claim::help`]).
    job: Arc<dyn Claim>,
}

// A `Task` is unwind-safe whatever `T` is, as tokio's `JoinHandle` is: nothing a panic can
// interrupt leaves it half-updated. Its state lives in the oneshot and the claim state, both
// changed by single atomic steps; a panic of the closure is caught where it runs and only
// resumed after the outcome was taken out of the channel, and a later use of the task then
// reports the value gone (a lost `TaskError`, or a panic saying so) instead of seeing broken
// state. Through `&Task` only `Debug` can be called.
impl<T> UnwindSafe for Task<T> {}
impl<T> RefUnwindSafe for Task<T> {}

impl<T: Send + 'static> Task<T> {
    /// Makes a task and the job that fulfils it; the caller hands the job to a pool.
    pub(crate) fn new<F>(f: F) -> (Self, impl FnOnce() + Send + 'static)
    where
        F: FnOnce(CancelFlag<'_>) -> T + Send + 'static,
    {
        Self::with_job(
            f,
            #[cfg(bridge_loom)]
            true,
        )
    }

    /// [`new`](Self::new); under loom, `helpable: false` stands for a task waited for off
    /// the pool (its waiters never claim the job).
    pub(crate) fn with_job<F>(
        f: F,
        #[cfg(bridge_loom)] helpable: bool,
    ) -> (Self, impl FnOnce() + Send + 'static)
    where
        F: FnOnce(CancelFlag<'_>) -> T + Send + 'static,
    {
        // The span current at the spawn follows the closure (see `trace.rs`).
        #[cfg(feature = "tracing")]
        let f = crate::trace::in_current_span(f);
        let (tx, rx) = oneshot::channel();
        let parts = (f, tx, crate::metrics::spawned());
        let job = Job::new(
            parts,
            #[cfg(bridge_loom)]
            helpable,
        );
        let pool_job = PoolJob::new(Arc::clone(&job));
        let task = Self { rx: Some(rx), job };
        (task, move || pool_job.run())
    }
}

impl<T> Task<T> {
    /// A task over `rx`, with the shared state its waiter and its drop reach (a future
    /// task's: see `future_task.rs`).
    pub(crate) fn from_parts(rx: Receiver<Outcome<T>>, job: Arc<dyn Claim>) -> Self {
        Self { rx: Some(rx), job }
    }
}

impl<T> Task<T> {
    /// Blocks this thread until the closure finishes, and returns its value.
    ///
    /// On a rayon worker, the task's work that no pool thread has taken runs here, inline;
    /// nothing else of the pool does (see [Waiting on a rayon
    /// worker](Self#waiting-on-a-rayon-worker)).
    ///
    /// # Panics
    ///
    /// Resumes the closure's panic; panics if the job was lost (see [`TaskError::is_lost`]).
    ///
    /// # Examples
    ///
    /// ```
    /// let task = bridge::spawn(|| "hash".len());
    /// assert_eq!(task.wait(), 4);
    /// ```
    #[track_caller]
    pub fn wait(self) -> T {
        unwrap(self.join())
    }

    /// Blocks this thread until the closure finishes, and returns its value or why there is
    /// none: the non-panicking [`wait`](Self::wait). Runs the job inline where `wait` does.
    ///
    /// # Errors
    ///
    /// A [`TaskError`] that [is a panic](TaskError::is_panic), with the payload, if the
    /// closure panicked; one that [is lost](TaskError::is_lost) if the job was lost.
    ///
    /// # Examples
    ///
    /// ```
    /// let err = bridge::spawn(|| -> u8 { panic!("corrupt block") }).join().unwrap_err();
    /// assert_eq!(err.to_string(), "the task panicked: corrupt block");
    /// ```
    pub fn join(mut self) -> Result<T, TaskError> {
        if may_help() {
            // A waiter on a rayon worker polls: each poll runs the work queued for the task
            // (see `Claim::help`), and the task's waker brings it back for the next.
            return bridge_core::block_on(std::future::poll_fn(|cx| self.poll_outcome(cx)));
        }
        match self.rx.take() {
            Some(rx) => outcome(crate::stall::recv(rx, &*self.job)),
            // A poll, `try_get` or a timed wait already took the outcome.
            None => Err(closed()),
        }
    }

    /// Blocks this thread for at most `timeout`; `None` if the closure has not finished.
    /// The task stays usable after a timeout. Once it gave the value (or resumed the
    /// closure's panic), the task is terminated, as after the poll that completes it: a
    /// `select!` loop skips it.
    ///
    /// The limit holds on every thread, a rayon worker included: this never runs the job (or
    /// anything else) inline, it only blocks. On the worker that spawned the task, a job
    /// that no other thread of the pool starts meanwhile stays queued until the limit; only
    /// [`wait`](Self::wait), [`join`](Self::join) or a poll run it there.
    ///
    /// # Panics
    ///
    /// Resumes the closure's panic; panics if the job was lost, or if the value was
    /// already taken.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let mut task = bridge::spawn(|| 7);
    /// assert_eq!(task.wait_timeout(Duration::from_secs(60)), Some(7));
    /// ```
    #[track_caller]
    pub fn wait_timeout(&mut self, timeout: Duration) -> Option<T> {
        let received = self.rx.as_mut().map(|rx| rx.recv_timeout(timeout));
        self.timed(received)
    }

    /// Blocks this thread until `deadline` at the latest; `None` if the closure has not
    /// finished. The task stays usable after a timeout, and is terminated once it gave the
    /// value, as after [`wait_timeout`](Self::wait_timeout).
    ///
    /// Like [`wait_timeout`](Self::wait_timeout), it never runs anything inline, so the
    /// deadline holds on every thread.
    ///
    /// # Panics
    ///
    /// Resumes the closure's panic; panics if the job was lost, or if the value was
    /// already taken.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// let (gate_tx, gate_rx) = std::sync::mpsc::channel::<()>();
    /// let mut task = bridge::spawn(move || gate_rx.recv().is_ok());
    /// assert_eq!(task.wait_deadline(Instant::now() + Duration::from_millis(5)), None);
    /// gate_tx.send(()).unwrap();
    /// assert_eq!(task.wait(), true);
    /// ```
    #[track_caller]
    pub fn wait_deadline(&mut self, deadline: Instant) -> Option<T> {
        let received = self.rx.as_mut().map(|rx| rx.recv_deadline(deadline));
        self.timed(received)
    }

    /// The value if the closure has finished, without blocking; `None` otherwise. It never
    /// runs the job. Once it gave the value (or resumed the closure's panic), the task is
    /// terminated, as after the poll that completes it: a `select!` loop skips it.
    ///
    /// # Panics
    ///
    /// Resumes the closure's panic; panics if the job was lost, or if the value was
    /// already taken.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut task = bridge::spawn(|| 1 + 1);
    /// let value = loop {
    ///     if let Some(v) = task.try_get() {
    ///         break v;
    ///     }
    ///     std::thread::yield_now();
    /// };
    /// assert_eq!(value, 2);
    /// ```
    #[track_caller]
    pub fn try_get(&mut self) -> Option<T> {
        let received = match self.rx.as_mut().map(Receiver::try_recv) {
            Some(Err(TryRecvError::Empty)) => return None,
            Some(Ok(outcome)) => Ok(outcome),
            Some(Err(TryRecvError::Closed)) | None => Err(RecvError),
        };
        Some(unwrap(self.took(received)))
    }

    /// Whether the closure has finished (with its value or a panic) or its job is lost: a
    /// wait now returns at once, and a poll is ready. It never blocks and never runs the
    /// job. Once the value has been taken (by [`try_get`](Self::try_get), a timed wait or a
    /// poll), it stays `true`.
    ///
    /// # Examples
    ///
    /// ```
    /// let (gate_tx, gate_rx) = std::sync::mpsc::channel::<()>();
    /// let task = bridge::spawn(move || gate_rx.recv().is_ok());
    /// assert!(!task.is_finished());
    /// gate_tx.send(()).unwrap();
    /// while !task.is_finished() {
    ///     std::thread::yield_now();
    /// }
    /// assert!(task.wait());
    /// ```
    pub fn is_finished(&self) -> bool {
        self.rx.as_ref().is_none_or(Receiver::is_ready)
    }

    /// The non-panicking async form: a future of `Result<T, TaskError>` that carries the
    /// closure's panic payload instead of resuming it.
    ///
    /// # Examples
    ///
    /// ```
    /// # futures::executor::block_on(async {
    /// let result = bridge::spawn(|| -> u8 { panic!("bad input") }).catch_unwind().await;
    /// assert!(result.unwrap_err().is_panic());
    /// # });
    /// ```
    pub fn catch_unwind(self) -> CatchUnwind<T> {
        CatchUnwind { task: self }
    }

    /// Lets the job run to the end with nobody waiting: it is not cancelled, its
    /// [`CancelFlag`] stays clear, and its result (or panic) is dropped on the pool thread.
    /// A result that arrived before the call is dropped here instead, inside
    /// `catch_unwind`, as a dropped `Task` drops it: a panic from its destructor never
    /// escapes `detach`.
    ///
    /// # Examples
    ///
    /// ```
    /// let (tx, rx) = std::sync::mpsc::channel();
    /// bridge::spawn(move || tx.send("flushed").unwrap()).detach();
    /// assert_eq!(rx.recv().unwrap(), "flushed");
    /// ```
    pub fn detach(mut self) {
        if let Some(rx) = self.rx.take() {
            // Abandoning a channel that holds the outcome drops it, user destructors and all.
            job::contain(move || rx.abandon());
        }
    }

    /// Polls for the outcome; on a rayon worker, first runs the task's work that no pool
    /// thread has taken (see [`Claim::help`]). The poll that returns the outcome drops the
    /// receiver: the task is then terminated, and a later poll reports the value gone.
    fn poll_outcome(&mut self, cx: &mut Context<'_>) -> Poll<Result<T, TaskError>> {
        let Some(rx) = self.rx.as_mut() else {
            return Poll::Ready(Err(closed()));
        };
        self.job.help(cx.waker());
        let received = ready!(Pin::new(rx).poll(cx));
        Poll::Ready(self.took(received))
    }

    /// What a timed wait gives: `None` at the limit, the value (or the closure's panic,
    /// resumed) otherwise, the task terminated first.
    #[track_caller]
    fn timed(&mut self, received: Option<Result<Outcome<T>, RecvTimeoutError>>) -> Option<T> {
        let received = match received {
            Some(Err(RecvTimeoutError::Timeout)) => return None,
            Some(Ok(outcome)) => Ok(outcome),
            Some(Err(RecvTimeoutError::Closed)) | None => Err(RecvError),
        };
        Some(unwrap(self.took(received)))
    }

    /// Ends a take that got the outcome (or found the channel closed): every take goes
    /// through here, the poll that completes the task as much as `try_get` and the timed
    /// waits, so that each leaves the task terminated (`is_terminated`), before a panic of
    /// the closure is resumed.
    fn took(&mut self, received: Result<Outcome<T>, RecvError>) -> Result<T, TaskError> {
        // The outcome is out of the channel, so this drop runs no destructor of the user's.
        self.rx = None;
        self.job.stop_helping();
        outcome(received)
    }
}

/// A task that pumps a stream into a crossing (`spawn_stream`, `bridge::stream::spawn_cpu`):
/// its consumer, finding nothing buffered, runs the pump's queued poll where a waiter of
/// the task would (see [Waiting on a rayon worker](Task#waiting-on-a-rayon-worker)).
#[cfg(not(bridge_loom))]
impl<T: Send> bridge_core::stream::__Producer for Task<T> {
    fn help(&self, waker: &std::task::Waker) -> bool {
        self.rx.is_some() && self.job.help(waker)
    }
}

impl<T> Drop for Task<T> {
    /// Closes the channel, which cancels a job that has not started (a future task's drop
    /// also queues the poll job that drops its future); a result that already arrived is
    /// dropped here, inside `catch_unwind`.
    fn drop(&mut self) {
        if let Some(rx) = self.rx.take() {
            job::drop_quietly(rx);
            self.job.stop_helping();
            self.job.cancelled();
        }
    }
}

impl<T> Future for Task<T> {
    type Output = T;

    /// # Panics
    ///
    /// Resumes the closure's panic; panics if the job was lost or if the task is polled
    /// again after it completed.
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        self.get_mut().poll_outcome(cx).map(unwrap)
    }
}

/// A `select!` loop (futures') skips a task that already gave its outcome: to a poll, to
/// [`try_get`](Task::try_get), or to a timed wait ([`wait_timeout`](Task::wait_timeout),
/// [`wait_deadline`](Task::wait_deadline)).
///
/// # Examples
///
/// ```
/// use futures::future::FusedFuture;
///
/// let mut task = bridge::spawn(|| 5);
/// assert!(!task.is_terminated());
/// assert_eq!(futures::executor::block_on(&mut task), 5);
/// assert!(task.is_terminated());
/// ```
impl<T> FusedFuture for Task<T> {
    fn is_terminated(&self) -> bool {
        self.rx.is_none()
    }
}

impl<T> fmt::Debug for Task<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Task")
            .field("is_finished", &self.is_finished())
            .finish()
    }
}

/// The non-panicking future of a [`Task`]: made by [`Task::catch_unwind`].
///
/// It gives `Err` for what the closure or the pool did (a panic, a lost job), never for a
/// misuse of the future: polled again after it completed, it panics, as the `Task` does.
/// Dropping it cancels the task, as dropping the `Task` would.
///
/// # Examples
///
/// ```
/// # futures::executor::block_on(async {
/// let ok = bridge::spawn(|| 3).catch_unwind().await;
/// assert_eq!(ok.unwrap(), 3);
/// # });
/// ```
#[must_use = "futures do nothing unless awaited; dropping this cancels the task"]
#[derive(Debug)]
pub struct CatchUnwind<T> {
    task: Task<T>,
}

/// Terminated once it gave the outcome, as for [`Task`].
///
/// # Examples
///
/// ```
/// use futures::future::FusedFuture;
///
/// let mut result = bridge::spawn(|| 5).catch_unwind();
/// assert_eq!(futures::executor::block_on(&mut result).unwrap(), 5);
/// assert!(result.is_terminated());
/// ```
impl<T> FusedFuture for CatchUnwind<T> {
    fn is_terminated(&self) -> bool {
        self.task.is_terminated()
    }
}

impl<T> Future for CatchUnwind<T> {
    type Output = Result<T, TaskError>;

    /// # Panics
    ///
    /// Panics if polled again after it completed (a `select!` loop never does: see
    /// [`is_terminated`](FusedFuture::is_terminated)).
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let task = &mut self.get_mut().task;
        // Only a completed poll terminates the task inside: the methods that take the value
        // otherwise consume the `Task`, which `catch_unwind` took.
        assert!(
            !task.is_terminated(),
            "bridge_rayon::CatchUnwind: no value: the future was polled after it completed"
        );
        task.poll_outcome(cx)
    }
}

fn outcome<T>(received: Result<Outcome<T>, RecvError>) -> Result<T, TaskError> {
    match received {
        Ok(outcome) => outcome.map_err(TaskError::panicked),
        Err(RecvError) => Err(closed()),
    }
}

/// A closed channel under a live `Task`: the job was dropped unrun, or the value was
/// already taken by this handle.
fn closed() -> TaskError {
    TaskError::lost()
}

#[track_caller]
fn unwrap<T>(result: Result<T, TaskError>) -> T {
    match result {
        Ok(value) => value,
        Err(err) => match err.try_into_panic() {
            Ok(payload) => resume_unwind(payload),
            Err(_) => panic!(
                "bridge_rayon::Task: no value: the task was polled after it completed, or its \
                 job was dropped by the pool before it ran"
            ),
        },
    }
}
