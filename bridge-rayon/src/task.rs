//! `Task<T>`: the handle on CPU work running on a rayon pool.

use crate::TaskError;
use crate::job::{self, CancelFlag, Outcome};
use bridge_core::oneshot::{self, Receiver, RecvError, RecvTimeoutError, TryRecvError};
use std::fmt;
use std::future::Future;
use std::panic::resume_unwind;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// A closure running (or queued) on a rayon pool, and the way to its result.
///
/// Made by [`spawn`](crate::spawn), [`spawn_fifo`](crate::spawn_fifo),
/// [`spawn_cancellable`](crate::spawn_cancellable) and the
/// [`ThreadPoolExt`](crate::ThreadPoolExt) methods. The result can be taken in any
/// convention:
///
/// - **async**: `task.await` on any executor gives the closure's value and resumes its
///   panic in the awaiting task; [`catch_unwind`](Self::catch_unwind) gives a
///   `Result<T, TaskError>` instead;
/// - **blocking**: [`wait`](Self::wait), [`wait_timeout`](Self::wait_timeout),
///   [`wait_deadline`](Self::wait_deadline), and [`join`](Self::join) (non-panicking);
/// - **sync**: [`try_get`](Self::try_get).
///
/// **Dropping a `Task` cancels it:** if the job has not started, the closure never runs
/// (its captures are dropped on the pool thread); if it is running, it finishes (a
/// cancellable closure can see the [`CancelFlag`] and stop early) and its result is dropped
/// on the pool thread. [`detach`](Self::detach) lets the job run without anybody waiting.
///
/// **On a rayon worker**, waiting for a task (or polling it, as `bridge::block_on` does)
/// first runs the pool's pending work on this thread until the result is there, so a
/// worker that blocks on a task it spawned (or a pool whose every thread does) still makes
/// progress instead of deadlocking.
///
/// # Examples
///
/// ```
/// # let rt = tokio::runtime::Runtime::new().unwrap();
/// # rt.block_on(async {
/// let checksum = bridge_rayon::spawn(|| (0..1_000u64).sum::<u64>()).await;
/// assert_eq!(checksum, 499_500);
/// # });
/// ```
#[must_use = "dropping a Task cancels it; await it, wait for it, or call .detach()"]
pub struct Task<T> {
    rx: Receiver<Outcome<T>>,
}

impl<T: Send + 'static> Task<T> {
    /// Makes a task and the job that fulfils it; the caller hands the job to a pool.
    pub(crate) fn new<F>(f: F) -> (Self, impl FnOnce() + Send + 'static)
    where
        F: FnOnce(CancelFlag<'_>) -> T + Send + 'static,
    {
        let (tx, rx) = oneshot::channel();
        (Self { rx }, move || job::run(f, tx))
    }
}

impl<T> Task<T> {
    /// Blocks this thread until the closure finishes, and returns its value.
    ///
    /// On a rayon worker it first runs the pool's pending work here until the result is there
    /// (see [`Task`]).
    ///
    /// # Panics
    ///
    /// Resumes the closure's panic; panics if the job was lost (see [`TaskError::Lost`]).
    ///
    /// # Examples
    ///
    /// ```
    /// let task = bridge_rayon::spawn(|| "hash".len());
    /// assert_eq!(task.wait(), 4);
    /// ```
    #[track_caller]
    pub fn wait(self) -> T {
        unwrap(self.join())
    }

    /// Blocks this thread until the closure finishes, and returns its value or why there is
    /// none: the non-panicking [`wait`](Self::wait).
    ///
    /// # Errors
    ///
    /// [`TaskError::Panicked`] with the payload if the closure panicked;
    /// [`TaskError::Lost`] if the job was lost.
    ///
    /// # Examples
    ///
    /// ```
    /// let err = bridge_rayon::spawn(|| -> u8 { panic!("corrupt block") }).join().unwrap_err();
    /// assert_eq!(err.to_string(), "the task panicked: corrupt block");
    /// ```
    pub fn join(mut self) -> Result<T, TaskError> {
        self.help();
        loop {
            // A timeout too large for the clock waits without a deadline.
            match self.rx.recv_timeout(Duration::MAX) {
                Ok(outcome) => return outcome.map_err(TaskError::Panicked),
                Err(RecvTimeoutError::Closed) => return Err(closed()),
                Err(RecvTimeoutError::Timeout) => continue,
            }
        }
    }

    /// Blocks this thread for at most `timeout`; `None` if the closure has not finished.
    /// The task stays usable after a timeout.
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
    /// let mut task = bridge_rayon::spawn(|| 7);
    /// assert_eq!(task.wait_timeout(Duration::from_secs(60)), Some(7));
    /// ```
    #[track_caller]
    pub fn wait_timeout(&mut self, timeout: Duration) -> Option<T> {
        self.help();
        timed(self.rx.recv_timeout(timeout))
    }

    /// Blocks this thread until `deadline` at the latest; `None` if the closure has not
    /// finished. The task stays usable after a timeout.
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
    /// let mut task = bridge_rayon::spawn(move || gate_rx.recv().is_ok());
    /// assert_eq!(task.wait_deadline(Instant::now() + Duration::from_millis(5)), None);
    /// gate_tx.send(()).unwrap();
    /// assert_eq!(task.wait(), true);
    /// ```
    #[track_caller]
    pub fn wait_deadline(&mut self, deadline: Instant) -> Option<T> {
        self.help();
        timed(self.rx.recv_deadline(deadline))
    }

    /// The value if the closure has finished, without blocking; `None` otherwise.
    ///
    /// # Panics
    ///
    /// Resumes the closure's panic; panics if the job was lost, or if the value was
    /// already taken.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut task = bridge_rayon::spawn(|| 1 + 1);
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
        match self.rx.try_recv() {
            Ok(outcome) => Some(unwrap(outcome.map_err(TaskError::Panicked))),
            Err(TryRecvError::Empty) => None,
            Err(TryRecvError::Closed) => Some(unwrap(Err(closed()))),
        }
    }

    /// The non-panicking async form: a future of `Result<T, TaskError>` that carries the
    /// closure's panic payload instead of resuming it.
    ///
    /// # Examples
    ///
    /// ```
    /// # futures::executor::block_on(async {
    /// let result = bridge_rayon::spawn(|| -> u8 { panic!("bad input") }).catch_unwind().await;
    /// assert!(result.unwrap_err().is_panic());
    /// # });
    /// ```
    pub fn catch_unwind(self) -> CatchUnwind<T> {
        CatchUnwind { task: self }
    }

    /// Lets the job run to the end with nobody waiting: it is not cancelled, its
    /// [`CancelFlag`] stays clear, and its result (or panic) is dropped on the pool thread.
    ///
    /// # Examples
    ///
    /// ```
    /// let (tx, rx) = std::sync::mpsc::channel();
    /// bridge_rayon::spawn(move || tx.send("flushed").unwrap()).detach();
    /// assert_eq!(rx.recv().unwrap(), "flushed");
    /// ```
    pub fn detach(self) {
        self.rx.abandon();
    }

    /// Polls for the outcome, helping the pool first if this is a rayon worker.
    fn poll_outcome(&mut self, cx: &mut Context<'_>) -> Poll<Result<T, TaskError>> {
        self.help();
        Pin::new(&mut self.rx).poll(cx).map(outcome)
    }

    /// On a rayon worker, runs pending rayon work until the outcome is here or the pool has
    /// nothing this thread can run: a job queued behind this worker (spawned from it, or
    /// waiting in its pool's queue) is then run here instead of deadlocking the pool. A job
    /// that another thread already runs is left to it.
    fn help(&self) {
        if rayon::current_thread_index().is_none() {
            return;
        }
        while !self.rx.is_ready() {
            if rayon::yield_now() != Some(rayon::Yield::Executed) {
                return;
            }
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

impl<T> fmt::Debug for Task<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Task")
            .field("is_finished", &self.rx.is_ready())
            .finish()
    }
}

/// The non-panicking future of a [`Task`]: made by [`Task::catch_unwind`].
///
/// Dropping it cancels the task, as dropping the `Task` would.
///
/// # Examples
///
/// ```
/// # futures::executor::block_on(async {
/// let ok = bridge_rayon::spawn(|| 3).catch_unwind().await;
/// assert_eq!(ok.unwrap(), 3);
/// # });
/// ```
#[must_use = "futures do nothing unless awaited; dropping this cancels the task"]
#[derive(Debug)]
pub struct CatchUnwind<T> {
    task: Task<T>,
}

impl<T> Future for CatchUnwind<T> {
    type Output = Result<T, TaskError>;

    /// # Panics
    ///
    /// Panics if polled again after it completed.
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.get_mut().task.poll_outcome(cx)
    }
}

fn outcome<T>(received: Result<Outcome<T>, RecvError>) -> Result<T, TaskError> {
    match received {
        Ok(outcome) => outcome.map_err(TaskError::Panicked),
        Err(RecvError) => Err(closed()),
    }
}

fn timed<T>(received: Result<Outcome<T>, RecvTimeoutError>) -> Option<T> {
    match received {
        Ok(outcome) => Some(unwrap(outcome.map_err(TaskError::Panicked))),
        Err(RecvTimeoutError::Timeout) => None,
        Err(RecvTimeoutError::Closed) => Some(unwrap(Err(closed()))),
    }
}

/// A closed channel under a live `Task`: the job was dropped unrun, or the value was
/// already taken by this handle.
fn closed() -> TaskError {
    TaskError::Lost
}

#[track_caller]
fn unwrap<T>(result: Result<T, TaskError>) -> T {
    match result {
        Ok(value) => value,
        Err(TaskError::Panicked(payload)) => resume_unwind(payload),
        Err(TaskError::Lost) => panic!(
            "bridge_rayon::Task: no value: the task was polled after it completed, or its \
             job was dropped by the pool before it ran"
        ),
    }
}
