//! `IoTask<T>`: the handle on a future running as a task of an `IoRuntime`.

use crate::route::{Ambient, ambient};
use crate::{BridgeError, IoRuntime, shutdown};
use bridge_core::oneshot::{self, Receiver, RecvError, RecvTimeoutError, Sender, TryRecvError};
use futures_core::future::FusedFuture;
use std::any::Any;
use std::fmt;
use std::future::{Future, poll_fn};
use std::panic::{self, AssertUnwindSafe, RefUnwindSafe, UnwindSafe};
use std::pin::{Pin, pin};
use std::task::{Context, Poll, ready};
use std::time::{Duration, Instant};
use tokio::runtime::Handle;
use tokio::task::JoinHandle;

/// What the task sends back: the future's output, or its panic's payload.
type Outcome<T> = Result<T, Box<dyn Any + Send + 'static>>;

/// Runs `future` as a task of the shared I/O runtime ([`IoRuntime::global`]) and returns
/// the handle on it, from any context: a plain thread, a rayon job, a task or `block_on`
/// body of either tokio flavour, a `LocalSet`, a `spawn_blocking` thread, a thread-local
/// destructor.
///
/// The future runs on the I/O runtime's workers, whatever the caller's context: the caller
/// goes on at once, and takes the output when it wants it, in the convention that suits it
/// (`.await`, a blocking [`wait`](IoTask::wait), a sync [`try_get`](IoTask::try_get); see
/// [`IoTask`]). A panic of the future is caught on the runtime and comes back to whoever
/// takes the output. Dropping the [`IoTask`] cancels the future; [`detach`](IoTask::detach)
/// lets it run.
///
/// With the feature `tracing`, the span current here is current in every poll of the future
/// and at its drop.
///
/// # Panics
///
/// If the shared I/O runtime cannot be built on first use (its threads cannot be started),
/// as [`IoRuntime::global`] does. The future's own panic does not escape here: it goes to
/// the [`IoTask`].
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// // From synchronous code: the future runs on the I/O runtime, this thread waits.
/// let n = bridge::spawn_io(async {
///     tokio::time::sleep(Duration::from_millis(1)).await;
///     6 * 7
/// })
/// .wait();
/// assert_eq!(n, 42);
///
/// // From a current-thread runtime: awaited there, run on the I/O runtime's workers.
/// let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
/// assert_eq!(rt.block_on(bridge::spawn_io(async { 7 })), 7);
/// ```
pub fn spawn_io<F>(future: F) -> IoTask<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    IoRuntime::global().spawn(future)
}

/// Spawns `future` on `handle`'s runtime: the body of [`spawn_io`] and [`IoRuntime::spawn`].
pub(crate) fn spawn_on<F>(handle: &Handle, future: F) -> IoTask<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let (tx, rx) = oneshot::channel();
    // The span current here follows the future (feature `tracing`), into every poll and its
    // drop, on whichever worker runs them.
    let future = crate::trace::instrument(future);
    // A runtime that is shut down drops the task (and the sender with it) at once, here: the
    // task then reports `Lost`.
    let task = handle.spawn(run(future, tx));
    IoTask {
        rx: Some(rx),
        task: Some(task),
        handle: handle.clone(),
    }
}

/// The tokio task: polls `future` inside `catch_unwind`, drops it, and only then sends its
/// outcome, so that whoever receives the output finds everything the future owned dropped.
async fn run<F: Future>(future: F, tx: Sender<Outcome<F::Output>>) {
    let mut slot = pin!(Some(future));
    let mut outcome = poll_fn(|cx| {
        let Some(future) = slot.as_mut().as_pin_mut() else {
            // Never: the slot is emptied only after this poll_fn completed.
            return Poll::Pending;
        };
        match panic::catch_unwind(AssertUnwindSafe(|| future.poll(cx))) {
            Ok(Poll::Ready(output)) => Poll::Ready(Ok(output)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(payload) => Poll::Ready(Err(payload)),
        }
    })
    .await;
    // A panic from the future's destructor is the future's panic, unless it panicked before.
    if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(|| slot.set(None))) {
        match outcome {
            Ok(output) => {
                contain(move || drop(output));
                outcome = Err(payload);
            }
            Err(_) => contain(move || drop(payload)),
        }
    }
    if let Err(unwanted) = tx.send(outcome) {
        // Nobody waits (the IoTask was dropped as the future finished): the output and its
        // destructor stay here, on the runtime's worker, whatever they do.
        contain(move || drop(unwanted));
    }
}

/// A future running as a task of an [`IoRuntime`], and the way to its output: made by
/// [`spawn_io`] (the shared I/O runtime) and [`IoRuntime::spawn`] (a given one).
///
/// The output can be taken in any convention, as from `bridge::Task`:
///
/// - **async**: `task.await` on any executor (tokio of either flavour, a `LocalSet`,
///   `futures::executor`, `bridge::block_on`) gives the future's output and resumes its
///   panic in the awaiting task; [`catch_unwind`](Self::catch_unwind) gives a
///   `Result<T, BridgeError>` instead;
/// - **blocking**: [`wait`](Self::wait), [`wait_timeout`](Self::wait_timeout),
///   [`wait_deadline`](Self::wait_deadline), and [`join`](Self::join) (non-panicking);
/// - **sync**: [`try_get`](Self::try_get), and [`is_finished`](Self::is_finished) to ask
///   without taking anything.
///
/// It is a `FusedFuture` too, for futures' `select!` loops. The output is sent when the
/// future has finished and been dropped: whatever the future wrote (and dropped) before it
/// finished is visible to whoever takes the output.
///
/// **Dropping an `IoTask` cancels the future:** the task is aborted, and the runtime drops
/// the future on one of its workers, at once if it is waiting (a future stuck on a
/// `pending()` forever included), or as soon as its current poll returns. An output that had
/// already arrived is dropped with the `IoTask`, on the dropping thread, inside
/// `catch_unwind`: a panic from its destructor never escapes the drop. One that arrives when
/// nobody waits any more is dropped on the runtime's worker. [`detach`](Self::detach) lets
/// the future run to its end with nobody waiting.
///
/// # Blocking waits, in every context
///
/// The future never runs on the waiting thread: a wait only blocks this thread until the
/// output arrives, so it cannot deadlock on anything of the caller's but what the future
/// itself waits for. Where blocking this thread would stop more than this thread, the wait
/// arranges for the rest to go on:
///
/// | where the wait is | what it does |
/// | --- | --- |
/// | a worker of a multi-thread runtime (a task there, a `LocalSet` or `spawn_local` task inside one), the I/O runtime's own workers included | leaves the scheduler first (`block_in_place`), so that the worker's other tasks move to another thread: a task queued on this worker (one spawned from here sits in its LIFO slot, which no other worker steals), even the very future waited for on a one-worker `IoRuntime`, runs meanwhile |
/// | the `block_on` body of a multi-thread runtime, a `LocalSet` there, a `spawn_blocking` thread, a plain thread, a rayon worker, a thread-local destructor | blocks this thread |
/// | a current-thread runtime (its `block_on` body, a task, a `LocalSet`) | blocks its thread, and with it the runtime: it runs none of its tasks while it waits |
/// | a worker of a runtime that is shutting down, for a task of a runtime that is shutting down ([`wait`](Self::wait) and [`join`](Self::join)) | does not block: the output if it is there, [`BridgeError::Lost`] otherwise (the thread may be the one that would drop the future, so waiting could hang) |
///
/// `block_in_place` is only called on a worker that holds its scheduler, where it cannot
/// panic: never on a current-thread runtime, in a `LocalSet` of a `block_on` body or on a
/// thread outside the runtime, where it would. No wait panics because of where it is made.
///
/// So a future that needs the waiting current-thread runtime (a task spawned there, a socket
/// created there) never finishes while that runtime's thread waits for it; `.await` it there
/// instead, or bound the wait with [`wait_timeout`](Self::wait_timeout). Time limits are hard:
/// the future runs elsewhere, so [`wait_timeout`](Self::wait_timeout) and
/// [`wait_deadline`](Self::wait_deadline) return at the limit whatever it does.
///
/// # Examples
///
/// ```
/// # let rt = tokio::runtime::Runtime::new().unwrap();
/// # rt.block_on(async {
/// let listener = bridge::spawn_io(async {
///     tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap()
/// });
/// let addr = listener.await.local_addr().unwrap();
/// assert!(addr.ip().is_loopback());
/// # });
/// ```
#[must_use = "dropping an IoTask cancels its future; await it, wait for it, or call .detach()"]
pub struct IoTask<T> {
    /// Taken by the methods that consume the task (and by its drop), and by every take that
    /// gets the outcome (the poll that completes it, `try_get`, a timed wait): `None` under a
    /// live task means the outcome was taken (the task is terminated, in `FusedFuture`'s
    /// terms).
    rx: Option<Receiver<Outcome<T>>>,
    /// The tokio task, aborted by the drop; `None` once `detach` let it go.
    task: Option<JoinHandle<()>>,
    /// The runtime the future runs on: a wait on a worker of a dying runtime asks whether
    /// this one is dying too.
    handle: Handle,
}

// An `IoTask` is unwind-safe whatever `T` is, as tokio's `JoinHandle` is: its state lives in
// the oneshot, changed by single atomic steps; a panic of the future is caught where it runs
// and only resumed after the outcome was taken out of the channel, and a later use of the
// task then reports the value gone instead of seeing broken state. Through `&IoTask` only
// `is_finished` and `Debug` can be called.
impl<T> UnwindSafe for IoTask<T> {}
impl<T> RefUnwindSafe for IoTask<T> {}

impl<T> IoTask<T> {
    /// Blocks this thread until the future finishes, and returns its output.
    ///
    /// On a worker of a multi-thread runtime it leaves the scheduler first; elsewhere it only
    /// blocks (see [Blocking waits](Self#blocking-waits-in-every-context)).
    ///
    /// # Panics
    ///
    /// Resumes the future's panic. Panics if the runtime shut down before the future
    /// finished ([`BridgeError::Lost`]; [`join`](Self::join) returns it instead), or if the
    /// output was already taken. It never panics because of where it is called.
    ///
    /// # Examples
    ///
    /// ```
    /// let task = bridge::spawn_io(async { "fetched".len() });
    /// assert_eq!(task.wait(), 7);
    /// ```
    #[track_caller]
    pub fn wait(mut self) -> T {
        if self.rx.is_none() {
            already_taken();
        }
        unwrap(self.join_inner())
    }

    /// Blocks this thread until the future finishes, and returns its output or why there is
    /// none: the non-panicking [`wait`](Self::wait), in the same contexts.
    ///
    /// # Errors
    ///
    /// [`BridgeError::Panicked`] with the payload if the future panicked;
    /// [`BridgeError::Lost`] if the runtime shut down before the future finished, or is
    /// shutting down when the call is made on a worker of a runtime that is shutting down
    /// (see [Blocking waits](Self#blocking-waits-in-every-context)); `Lost` too if the output
    /// was already taken by a poll, [`try_get`](Self::try_get) or a timed wait.
    ///
    /// # Examples
    ///
    /// ```
    /// let err = bridge::spawn_io(async { panic!("corrupt frame") }).join().unwrap_err();
    /// assert_eq!(err.to_string(), "the future panicked: corrupt frame");
    /// ```
    pub fn join(mut self) -> Result<T, BridgeError> {
        self.join_inner()
    }

    fn join_inner(&mut self) -> Result<T, BridgeError> {
        let Some(mut rx) = self.rx.take() else {
            return Err(BridgeError::Lost);
        };
        match rx.try_recv() {
            Ok(outcome) => return into_result(Ok(outcome)),
            Err(TryRecvError::Closed) => return into_result(Err(RecvError)),
            Err(TryRecvError::Empty) => {}
        }
        match ambient() {
            Ambient::Worker(_) => into_result(tokio::task::block_in_place(|| rx.recv_blocking())),
            // This thread may be the dying runtime's last worker, the one that would drop
            // the future: blocking here could wait for ever.
            Ambient::Dying if shutdown::shutting_down(&self.handle) => match rx.try_recv() {
                Ok(outcome) => into_result(Ok(outcome)),
                Err(_) => Err(BridgeError::Lost),
            },
            _ => into_result(rx.recv_blocking()),
        }
    }

    /// Blocks this thread for at most `timeout`; `None` if the future has not finished by
    /// then. The limit is hard: the future runs on the runtime, never here, so the call
    /// returns at the limit whatever the future does. The task stays usable after a timeout.
    /// Once it gave the output (or resumed the future's panic), the task is terminated, as
    /// after the poll that completes it: a `select!` loop skips it.
    ///
    /// A limit too long for the clock (`Duration::MAX`) means no limit.
    ///
    /// # Panics
    ///
    /// Resumes the future's panic; panics if the runtime shut down before the future
    /// finished, or if the output was already taken.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let mut stuck = bridge::spawn_io(std::future::pending::<()>());
    /// assert_eq!(stuck.wait_timeout(Duration::from_millis(5)), None);
    ///
    /// let mut quick = bridge::spawn_io(async { 7 });
    /// assert_eq!(quick.wait_timeout(Duration::from_secs(60)), Some(7));
    /// ```
    #[track_caller]
    pub fn wait_timeout(&mut self, timeout: Duration) -> Option<T> {
        self.wait_until(Instant::now().checked_add(timeout))
    }

    /// Blocks this thread until `deadline` at the latest; `None` if the future has not
    /// finished by then. A hard limit, as for [`wait_timeout`](Self::wait_timeout); the task
    /// stays usable after a timeout, and is terminated once it gave the output.
    ///
    /// # Panics
    ///
    /// Resumes the future's panic; panics if the runtime shut down before the future
    /// finished, or if the output was already taken.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// let (gate_tx, gate_rx) = tokio::sync::oneshot::channel::<()>();
    /// let mut task = bridge::spawn_io(async move { gate_rx.await.is_ok() });
    /// assert_eq!(task.wait_deadline(Instant::now() + Duration::from_millis(5)), None);
    /// gate_tx.send(()).unwrap();
    /// assert!(task.wait());
    /// ```
    #[track_caller]
    pub fn wait_deadline(&mut self, deadline: Instant) -> Option<T> {
        self.wait_until(Some(deadline))
    }

    #[track_caller]
    fn wait_until(&mut self, deadline: Option<Instant>) -> Option<T> {
        let Some(rx) = self.rx.as_mut() else {
            already_taken();
        };
        let received = match rx.try_recv() {
            Ok(outcome) => Ok(outcome),
            Err(TryRecvError::Closed) => Err(RecvTimeoutError::Closed),
            Err(TryRecvError::Empty) => {
                let mut wait = || match deadline {
                    Some(deadline) => rx.recv_deadline(deadline),
                    // No deadline the clock can represent: no limit.
                    None => rx.recv_timeout(Duration::MAX),
                };
                if matches!(ambient(), Ambient::Worker(_)) {
                    tokio::task::block_in_place(wait)
                } else {
                    wait()
                }
            }
        };
        let received = match received {
            Err(RecvTimeoutError::Timeout) => return None,
            Ok(outcome) => Ok(outcome),
            Err(RecvTimeoutError::Closed) => Err(RecvError),
        };
        Some(unwrap(self.took(received)))
    }

    /// The output if the future has finished, without blocking; `None` otherwise. Once it
    /// gave the output (or resumed the future's panic), the task is terminated, as after the
    /// poll that completes it: a `select!` loop skips it.
    ///
    /// # Panics
    ///
    /// Resumes the future's panic; panics if the runtime shut down before the future
    /// finished, or if the output was already taken.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut task = bridge::spawn_io(async { 1 + 1 });
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
        let Some(rx) = self.rx.as_mut() else {
            already_taken();
        };
        let received = match rx.try_recv() {
            Err(TryRecvError::Empty) => return None,
            Ok(outcome) => Ok(outcome),
            Err(TryRecvError::Closed) => Err(RecvError),
        };
        Some(unwrap(self.took(received)))
    }

    /// Whether the future has finished (with its output or a panic) or its runtime dropped
    /// it: a wait now returns at once, and a poll is ready. It never blocks. Once the output
    /// has been taken (by [`try_get`](Self::try_get), a timed wait or a poll), it stays
    /// `true`.
    ///
    /// # Examples
    ///
    /// ```
    /// let (gate_tx, gate_rx) = tokio::sync::oneshot::channel::<()>();
    /// let task = bridge::spawn_io(async move { gate_rx.await.is_ok() });
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

    /// The non-panicking async form: a future of `Result<T, BridgeError>` that carries the
    /// future's panic payload ([`BridgeError::Panicked`]) instead of resuming it, and
    /// [`BridgeError::Lost`] if the runtime shut down first.
    ///
    /// # Examples
    ///
    /// ```
    /// # futures::executor::block_on(async {
    /// let result = bridge::spawn_io(async { panic!("bad reply") }).catch_unwind().await;
    /// assert!(result.unwrap_err().is_panic());
    /// # });
    /// ```
    pub fn catch_unwind(self) -> IoCatchUnwind<T> {
        IoCatchUnwind { task: self }
    }

    /// Lets the future run to its end with nobody waiting: it is not cancelled, and its
    /// output (or panic) is dropped on the runtime's worker. An output that arrived before
    /// the call is dropped here instead, inside `catch_unwind`, as a dropped `IoTask` drops
    /// it: a panic from its destructor never escapes `detach`.
    ///
    /// # Examples
    ///
    /// ```
    /// let (tx, rx) = std::sync::mpsc::channel();
    /// bridge::spawn_io(async move { tx.send("flushed").unwrap() }).detach();
    /// assert_eq!(rx.recv().unwrap(), "flushed");
    /// ```
    pub fn detach(mut self) {
        // Dropping a JoinHandle does not abort its task.
        drop(self.task.take());
        if let Some(rx) = self.rx.take() {
            contain(move || rx.abandon());
        }
    }

    /// Polls for the outcome. The poll that returns it drops the receiver: the task is then
    /// terminated.
    fn poll_outcome(&mut self, cx: &mut Context<'_>) -> Poll<Result<T, BridgeError>> {
        let Some(rx) = self.rx.as_mut() else {
            polled_after_completion();
        };
        let received = ready!(Pin::new(rx).poll(cx));
        Poll::Ready(self.took(received))
    }

    /// Ends a take that got the outcome (or found the channel closed): every take goes
    /// through here, so that each leaves the task terminated before a panic of the future
    /// is resumed.
    fn took(&mut self, received: Result<Outcome<T>, RecvError>) -> Result<T, BridgeError> {
        // The outcome is out of the channel, so this drop runs no destructor of the user's.
        self.rx = None;
        into_result(received)
    }
}

/// A channel's answer as the task's result.
fn into_result<T>(received: Result<Outcome<T>, RecvError>) -> Result<T, BridgeError> {
    match received {
        Ok(Ok(output)) => Ok(output),
        // tokio's "being shutdown" panic (a timer of a runtime that shut down under the
        // future) is `Lost`; any other panic is the future's own.
        Ok(Err(payload)) => Err(shutdown::classify(payload)),
        // The runtime dropped the task (and the sender) before the future finished.
        Err(RecvError) => Err(BridgeError::Lost),
    }
}

/// A task that pumps a stream into a crossing (`stream::spawn_io`): its work runs on the I/O
/// runtime only, so its consumer has nothing to help with.
#[cfg(not(bridge_loom))]
impl<T: Send> bridge_core::stream::__Producer for IoTask<T> {}

impl<T> Drop for IoTask<T> {
    /// Aborts the task if its future has not finished (the runtime drops the future); an
    /// output that already arrived is dropped here, inside `catch_unwind`.
    fn drop(&mut self) {
        let Some(rx) = self.rx.take() else {
            return;
        };
        if !rx.is_ready() {
            if let Some(task) = &self.task {
                task.abort();
            }
        }
        contain(move || drop(rx));
    }
}

impl<T> Future for IoTask<T> {
    type Output = T;

    /// # Panics
    ///
    /// Resumes the future's panic; panics if the runtime shut down before the future
    /// finished, or if the task is polled again after it completed.
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        self.get_mut().poll_outcome(cx).map(unwrap)
    }
}

/// A `select!` loop (futures') skips a task that already gave its output: to a poll, to
/// [`try_get`](IoTask::try_get), or to a timed wait.
///
/// # Examples
///
/// ```
/// use futures::future::FusedFuture;
///
/// let mut task = bridge::spawn_io(async { 5 });
/// assert!(!task.is_terminated());
/// assert_eq!(futures::executor::block_on(&mut task), 5);
/// assert!(task.is_terminated());
/// ```
impl<T> FusedFuture for IoTask<T> {
    fn is_terminated(&self) -> bool {
        self.rx.is_none()
    }
}

impl<T> fmt::Debug for IoTask<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IoTask")
            .field("is_finished", &self.is_finished())
            .finish_non_exhaustive()
    }
}

/// The non-panicking future of an [`IoTask`]: made by [`IoTask::catch_unwind`].
///
/// It gives `Err` for what the future or its runtime did (a panic, a shutdown), never for a
/// misuse: polled again after it completed, it panics, as the `IoTask` does. Dropping it
/// cancels the future, as dropping the `IoTask` would.
///
/// # Examples
///
/// ```
/// # futures::executor::block_on(async {
/// let ok = bridge::spawn_io(async { 3 }).catch_unwind().await;
/// assert_eq!(ok.unwrap(), 3);
/// # });
/// ```
#[must_use = "futures do nothing unless awaited; dropping this cancels the future"]
#[derive(Debug)]
pub struct IoCatchUnwind<T> {
    task: IoTask<T>,
}

/// Terminated once it gave the outcome, as for [`IoTask`].
///
/// # Examples
///
/// ```
/// use futures::future::FusedFuture;
///
/// let mut result = bridge::spawn_io(async { 5 }).catch_unwind();
/// assert_eq!(futures::executor::block_on(&mut result).unwrap(), 5);
/// assert!(result.is_terminated());
/// ```
impl<T> FusedFuture for IoCatchUnwind<T> {
    fn is_terminated(&self) -> bool {
        self.task.is_terminated()
    }
}

impl<T> Future for IoCatchUnwind<T> {
    type Output = Result<T, BridgeError>;

    /// # Panics
    ///
    /// Panics if polled again after it completed (a `select!` loop never does: see
    /// [`is_terminated`](FusedFuture::is_terminated)).
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.get_mut().task.poll_outcome(cx)
    }
}

/// Runs `f`, which only drops things, containing a panic from it (and from its payload's
/// destructor).
fn contain(f: impl FnOnce()) {
    if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(f)) {
        if let Err(second) = panic::catch_unwind(AssertUnwindSafe(move || drop(payload))) {
            std::mem::forget(second);
        }
    }
}

#[track_caller]
fn unwrap<T>(result: Result<T, BridgeError>) -> T {
    match result {
        Ok(output) => output,
        Err(BridgeError::Panicked(panic)) => panic::resume_unwind(panic.into_payload()),
        Err(other) => panic!("IoTask: {other}"),
    }
}

#[track_caller]
fn already_taken() -> ! {
    panic!("IoTask: no output: it was already taken (by a poll, try_get or a timed wait)")
}

#[track_caller]
fn polled_after_completion() -> ! {
    panic!("IoTask: no output: the future was polled after it completed")
}
