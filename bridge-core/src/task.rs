//! The family's one handle for work running elsewhere, [`Task`], and the contract through
//! which a side of the family makes one: a [`Runner`] and, for its outcome, a
//! [`oneshot`](crate::oneshot) receiver ([`new`]) or a [`Cell`] of its own ([`with_cell`]).

use crate::Error;
use crate::oneshot::{Receiver, RecvError, RecvTimeoutError, TryRecvError};
use crate::workers::Here;
use futures_core::future::FusedFuture;
use std::any::Any;
use std::fmt;
use std::future::{Future, poll_fn};
use std::panic::{self, AssertUnwindSafe, RefUnwindSafe, UnwindSafe};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker, ready};
use std::time::{Duration, Instant};

/// What a task's work sends: its value, or its panic's payload.
///
/// # Examples
///
/// ```
/// let outcome: bridge_core::task::Outcome<u8> = std::panic::catch_unwind(|| 7);
/// assert_eq!(outcome.unwrap(), 7);
/// ```
pub type Outcome<T> = Result<T, Box<dyn Any + Send + 'static>>;

/// The side that runs a task's work, as its [`Task`] sees it: how a waiter may help it, how
/// a dropped task stops it, and how a blocking wait blocks there.
///
/// The family's sides implement it (bridge-rayon: a pool's job or future task; bridge-tokio:
/// a task of an I/O runtime); every method has a default that suits a side whose work runs
/// on threads of its own, so such a side implements none of them. A task made with
/// [`new`] gets its outcome from a [`oneshot`](crate::oneshot) receiver; one made with
/// [`with_cell`] from a [`Cell`] that is also its runner.
///
/// # Examples
///
/// A side that runs each work on a thread of its own:
///
/// ```
/// use bridge_core::task::{self, Runner};
/// use std::sync::Arc;
///
/// struct OwnThread;
/// impl Runner for OwnThread {}
///
/// let (tx, rx) = bridge_core::oneshot::channel();
/// std::thread::spawn(move || tx.send(std::panic::catch_unwind(|| 6 * 7)));
/// let task = task::new(rx, Arc::new(OwnThread));
/// assert_eq!(task.wait(), 42);
/// ```
pub trait Runner: Send + Sync {
    /// Runs here the task's queued work that no other thread has taken, where this side
    /// allows it (a rayon worker), and wakes `waker` when more is queued. Whether it ran any.
    fn help(&self, waker: &Waker) -> bool {
        let _ = waker;
        false
    }

    /// The waiter took the outcome or dropped the task: its waker is not woken again.
    fn stop_helping(&self) {}

    /// The task was dropped before its outcome was taken: stop the work.
    fn cancel(&self) {}

    /// A blocking join waits by polling the task here (on a rayon worker it runs the work).
    fn joins_by_polling(&self) -> bool {
        false
    }

    /// Blocks this thread in `wait` the way this side needs (inside `block_in_place` on a
    /// tokio worker); `false` when waiting here could hang (a worker of the runtime that is
    /// shutting down under the task), and `wait` did not run.
    fn block(&self, wait: &mut dyn FnMut()) -> bool {
        wait();
        true
    }

    /// Whether a blocking wait is split at the stall threshold ([`settings::stall_warning`](crate::settings::stall_warning)) to
    /// call [`waited`](Self::waited). A split wait parks with a timeout, which costs a timer.
    fn checks_stalls(&self) -> bool {
        false
    }

    /// A blocking wait has waited for the stall threshold (see
    /// [`checks_stalls`](Self::checks_stalls)).
    fn waited(&self, waited: Duration) {
        let _ = waited;
    }

    /// The error for the work's panic with `payload`.
    fn error(&self, payload: Box<dyn Any + Send + 'static>) -> Error {
        Error::panicked(payload)
    }
}

/// A side's own cell for its task's outcome, shared with the work: bridge-rayon's closure
/// job holds its claim and its outcome in one allocation. See [`with_cell`].
///
/// # Examples
///
/// A cell under a lock, filled by a thread of its own:
///
/// ```
/// use bridge_core::oneshot::{RecvError, TryRecvError};
/// use bridge_core::task::{self, Cell, Outcome, Runner};
/// use std::sync::{Arc, Mutex};
/// use std::task::{Context, Poll, Waker};
///
/// #[derive(Default)]
/// struct Slot(Mutex<(Option<Outcome<u32>>, Option<Waker>)>);
///
/// impl Runner for Slot {}
///
/// impl Cell<u32> for Slot {
///     fn poll_take(&self, cx: &mut Context<'_>) -> Poll<Result<Outcome<u32>, RecvError>> {
///         let mut slot = self.0.lock().unwrap();
///         match slot.0.take() {
///             Some(outcome) => Poll::Ready(Ok(outcome)),
///             None => {
///                 slot.1 = Some(cx.waker().clone());
///                 Poll::Pending
///             }
///         }
///     }
///     fn try_take(&self) -> Result<Outcome<u32>, TryRecvError> {
///         self.0.lock().unwrap().0.take().ok_or(TryRecvError::Empty)
///     }
///     fn is_ready(&self) -> bool {
///         self.0.lock().unwrap().0.is_some()
///     }
///     fn close(&self) {}
///     fn abandon(&self) {}
/// }
///
/// let slot = Arc::new(Slot::default());
/// let task = task::with_cell(slot.clone());
/// std::thread::spawn(move || {
///     let mut filled = slot.0.lock().unwrap();
///     filled.0 = Some(Ok(42));
///     filled.1.take().map(Waker::wake);
/// });
/// assert_eq!(task.wait(), 42);
/// ```
pub trait Cell<T>: Send + Sync {
    /// Takes the outcome if it is there; leaves `cx`'s waker to be woken when it is
    /// otherwise. `Err` if the work was lost.
    ///
    /// A cell is its task's runner, and the task polls it without asking
    /// [`Runner::help`] first: where its side lets this thread run the work (a worker of the
    /// work's rayon pool), a poll that finds the work still queued runs it here, then takes
    /// its outcome. A poll that finds the outcome there asks nothing of the thread.
    fn poll_take(&self, cx: &mut Context<'_>) -> Poll<Result<Outcome<T>, RecvError>>;

    /// Takes the outcome if it is there, without waiting.
    fn try_take(&self) -> Result<Outcome<T>, TryRecvError>;

    /// Whether the outcome is there (or the work was lost).
    fn is_ready(&self) -> bool;

    /// The task was dropped with its outcome not taken: the work is cancelled.
    fn close(&self);

    /// The task was detached: the work runs on, and its outcome is dropped where it ends.
    fn abandon(&self);
}

/// A task whose outcome arrives on `rx`, run by `runner`: the task handle of a side of the
/// family.
///
/// # Examples
///
/// A side whose work was lost (its sender dropped unsent):
///
/// ```
/// use bridge_core::task::{self, Runner};
/// use std::sync::Arc;
///
/// struct Gone;
/// impl Runner for Gone {}
///
/// let (tx, rx) = bridge_core::oneshot::channel::<task::Outcome<u8>>();
/// drop(tx);
/// assert!(task::new(rx, Arc::new(Gone)).join().unwrap_err().is_lost());
/// ```
pub fn new<T>(rx: Receiver<Outcome<T>>, runner: Arc<dyn Runner>) -> Task<T> {
    Task {
        rx: Some(Source::Channel(rx)),
        work: runner,
    }
}

/// A task whose outcome arrives in `cell`, which is also its runner: one shared allocation
/// for the work's state and its outcome (see [`Cell`]'s example).
///
/// # Examples
///
/// See [`Cell`]'s.
pub fn with_cell<T, C: Cell<T> + Runner + 'static>(cell: Arc<C>) -> Task<T> {
    Task {
        rx: Some(Source::Cell(cell_of::<C, T>)),
        work: cell,
    }
}

/// Where a task's outcome arrives: bridge-core's oneshot, or its side's own cell, which is
/// the task's work itself (found from it, so that a task holds one shared pointer).
///
/// Every method takes the task's work (`Task::work`), which for a `Cell` source is the
/// `Arc<C>` that [`with_cell`] stored beside `cell_of::<C, T>`; a task never replaces its work.
enum Source<T> {
    Channel(Receiver<Outcome<T>>),
    Cell(CellOf<T>),
}

/// The cell a task's work is: see [`cell_of`].
type CellOf<T> = unsafe fn(&dyn Runner) -> &dyn Cell<T>;

/// The cell `C` that a task's work is: its data pointer, without the runner's vtable.
///
/// # Safety
///
/// `work` points to a `C`.
unsafe fn cell_of<C: Cell<T> + Runner + 'static, T>(work: &dyn Runner) -> &dyn Cell<T> {
    // SAFETY: `work` points to a `C` (the caller's promise); the cast drops the vtable and
    // keeps the address, and the borrow keeps `work`'s lifetime.
    unsafe { &*std::ptr::from_ref(work).cast::<C>() }
}

impl<T> Source<T> {
    /// A `Cell` source's cell, found from the task's `work`.
    fn cell(cell: CellOf<T>, work: &dyn Runner) -> &dyn Cell<T> {
        // SAFETY: `work` is the task's work (see `Source`): for a `Cell` source, the `C`
        // that `with_cell` stored beside `cell_of::<C, T>`.
        unsafe { cell(work) }
    }

    fn try_recv(&mut self, work: &dyn Runner) -> Result<Outcome<T>, TryRecvError> {
        match self {
            Self::Channel(rx) => rx.try_recv(),
            Self::Cell(cell) => Self::cell(*cell, work).try_take(),
        }
    }

    fn recv_timeout(
        &mut self,
        work: &dyn Runner,
        timeout: Duration,
    ) -> Result<Outcome<T>, RecvTimeoutError> {
        match self {
            Self::Channel(rx) => rx.recv_timeout(timeout),
            Self::Cell(_) => self.recv_until(work, Instant::now().checked_add(timeout)),
        }
    }

    fn recv_deadline(
        &mut self,
        work: &dyn Runner,
        deadline: Instant,
    ) -> Result<Outcome<T>, RecvTimeoutError> {
        match self {
            Self::Channel(rx) => rx.recv_deadline(deadline),
            Self::Cell(_) => self.recv_until(work, Some(deadline)),
        }
    }

    /// A cell's blocking receive: its poll, on this thread.
    fn recv_until(
        &mut self,
        work: &dyn Runner,
        deadline: Option<Instant>,
    ) -> Result<Outcome<T>, RecvTimeoutError> {
        let polled = poll_fn(|cx| self.poll(work, cx));
        let received = match deadline {
            Some(deadline) => crate::block_on_deadline(polled, deadline),
            None => Some(crate::block_on(polled)),
        };
        match received {
            Some(Ok(outcome)) => Ok(outcome),
            Some(Err(RecvError)) => Err(RecvTimeoutError::Closed),
            None => Err(RecvTimeoutError::Timeout),
        }
    }

    /// Polls for the outcome, running the queued work here first where its side allows:
    /// asked of the runner before a channel's poll, and of the cell itself by its poll.
    fn poll(
        &mut self,
        work: &dyn Runner,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Outcome<T>, RecvError>> {
        match self {
            Self::Channel(rx) => {
                work.help(cx.waker());
                Pin::new(rx).poll(cx)
            }
            Self::Cell(cell) => Self::cell(*cell, work).poll_take(cx),
        }
    }

    fn is_ready(&self, work: &dyn Runner) -> bool {
        match self {
            Self::Channel(rx) => rx.is_ready(),
            Self::Cell(cell) => Self::cell(*cell, work).is_ready(),
        }
    }

    /// Detached: the work runs on, its outcome dropped where it ends.
    fn abandon(self, work: &dyn Runner) {
        match self {
            Self::Channel(rx) => rx.abandon(),
            Self::Cell(cell) => Self::cell(cell, work).abandon(),
        }
    }

    /// Dropped with the outcome not taken: the work is cancelled.
    fn close(self, work: &dyn Runner) {
        match self {
            Self::Channel(rx) => drop(rx),
            Self::Cell(cell) => Self::cell(cell, work).close(),
        }
    }
}

/// A handle for work running elsewhere: a closure or future on rayon ([`spawn`],
/// [`cpu::spawn_future`]) or a future on the I/O runtime ([`spawn_io`]). Its value is taken
/// once, by `.await` (any executor), [`wait`](Self::wait) or [`join`](Self::join) (blocking),
/// [`wait_timeout`](Self::wait_timeout) / [`wait_deadline`](Self::wait_deadline) (blocking,
/// bounded) or [`try_get`](Self::try_get) (never blocks).
///
/// - **Panics** come back to whoever takes the value: `.await`, `wait` and the bounded
///   waits resume them; [`join`](Self::join) and [`catch_unwind`](Self::catch_unwind)
///   return them as an [`Error`].
/// - **Dropping** the task cancels its work: a closure that has not started never starts,
///   a future is dropped at its next wake-up. [`detach`](Self::detach) lets it run on.
/// - **Waiting on a rayon worker** of the task's pool runs the task's queued work on that
///   worker, with a time limit or without, so the workers of a pool (even a pool of one
///   thread) never wait for work queued behind them. A waiter anywhere else (off rayon, a
///   worker of another pool, a worker inside a tokio runtime's `block_on`) blocks: it is
///   no worker of the task's pool, and the work runs there. A wait on any pool's worker that
///   lasts the stall threshold (`stall_warning`, 5 s by default) is counted and named, and
///   the worker then runs its own pool's queued jobs, which may be what the wait needs (an
///   I/O task that awaits CPU work queued behind the waiter).
///
/// [`spawn`]: https://docs.rs/threadbridge/latest/bridge/fn.spawn.html
/// [`cpu::spawn_future`]: https://docs.rs/threadbridge/latest/bridge/cpu/fn.spawn_future.html
/// [`spawn_io`]: https://docs.rs/threadbridge/latest/bridge/fn.spawn_io.html
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let cpu = bridge::spawn(|| (1..=10u64).product::<u64>());
/// let io = bridge::spawn_io(async { 7 });
/// assert_eq!(cpu.await + io.wait(), 3_628_807);
/// # }
/// ```
#[must_use = "dropping a Task cancels it; await it, wait for it, or call .detach()"]
pub struct Task<T> {
    rx: Option<Source<T>>,
    work: Arc<dyn Runner>,
}

impl<T> UnwindSafe for Task<T> {}
impl<T> RefUnwindSafe for Task<T> {}

impl<T> Task<T> {
    /// Blocks until the task finishes and returns its value.
    ///
    /// # Panics
    ///
    /// Resumes the work's panic; panics if the work was lost (see [`Error::is_lost`]).
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(bridge::spawn(|| 6 * 7).wait(), 42);
    /// ```
    #[track_caller]
    pub fn wait(self) -> T {
        unwrap(self.join())
    }

    /// Blocks until the task finishes: its value, or why there is none.
    ///
    /// # Errors
    ///
    /// The work panicked ([`Error::is_panic`]) or was lost ([`Error::is_lost`]).
    ///
    /// # Examples
    ///
    /// ```
    /// let err = bridge::spawn(|| -> u8 { panic!("corrupt page") }).join().unwrap_err();
    /// assert_eq!(err.to_string(), "the work panicked: corrupt page");
    /// ```
    pub fn join(mut self) -> Result<T, Error> {
        if let Some(received) = self.take_finished() {
            return self.took(received);
        }
        if self.joins_by_polling() {
            return self
                .poll_blocking(None)
                .unwrap_or_else(|| unreachable!("without a deadline, only the outcome ends it"));
        }
        let Some(mut rx) = self.rx.take() else {
            return Err(Error::lost());
        };
        let threshold = if self.work.checks_stalls() {
            crate::settings::stall_warning()
        } else {
            Duration::MAX
        };
        let work = &*self.work;
        let mut received = None;
        work.block(&mut || {
            received = Some(match rx.recv_timeout(work, threshold) {
                Ok(outcome) => Ok(outcome),
                Err(RecvTimeoutError::Closed) => Err(RecvError),
                Err(RecvTimeoutError::Timeout) => {
                    work.waited(threshold);
                    recv_forever(&mut rx, work)
                }
            });
        });
        self.work.stop_helping();
        match received {
            Some(received) => self.outcome(received),
            None => rx
                .try_recv(&*self.work)
                .map_or_else(|_| Err(Error::lost()), |o| self.outcome(Ok(o))),
        }
    }

    /// Blocks for at most `timeout`: `Some(value)` if the task finished by then, `None` if
    /// not (the task goes on; wait again or drop it).
    ///
    /// On a rayon worker of the task's pool the wait runs the task's queued work, as
    /// [`wait`](Self::wait) does: the limit bounds the waiting, not the work run here.
    ///
    /// # Panics
    ///
    /// As [`wait`](Self::wait) does, and if the value was already taken.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let mut task = bridge::spawn(|| 5);
    /// assert_eq!(task.wait_timeout(Duration::from_secs(10)), Some(5));
    /// ```
    #[track_caller]
    pub fn wait_timeout(&mut self, timeout: Duration) -> Option<T> {
        self.wait_until(Instant::now().checked_add(timeout))
    }

    /// Blocks until `deadline` at the latest: as [`wait_timeout`](Self::wait_timeout).
    ///
    /// # Panics
    ///
    /// As [`wait`](Self::wait) does, and if the value was already taken.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// let mut task = bridge::spawn_io(std::future::pending::<()>());
    /// assert_eq!(task.wait_deadline(Instant::now() + Duration::from_millis(5)), None);
    /// ```
    #[track_caller]
    pub fn wait_deadline(&mut self, deadline: Instant) -> Option<T> {
        self.wait_until(Some(deadline))
    }

    #[track_caller]
    fn wait_until(&mut self, deadline: Option<Instant>) -> Option<T> {
        if self.rx.is_none() {
            taken();
        }
        if let Some(received) = self.take_finished() {
            return Some(unwrap(self.took(received)));
        }
        if self.joins_by_polling() {
            // On a worker of the task's pool: wait as `join` does, by polling, so that the
            // waiter runs the task's queued work (a pool's only worker would otherwise wait
            // for the full limit for work queued behind it). On any pool's worker: the wait
            // is watched at the stall threshold (see `workers.rs`).
            let received = self.poll_blocking(deadline);
            if received.is_none() {
                // Timed out: the task goes on; its waker is not woken again.
                self.work.stop_helping();
            }
            return received.map(unwrap);
        }
        let Some(rx) = self.rx.as_mut() else {
            taken();
        };
        let work = &*self.work;
        let mut received = None;
        let waited = work.block(&mut || {
            received = Some(match deadline {
                Some(deadline) => rx.recv_deadline(work, deadline),
                None => rx.recv_timeout(work, Duration::MAX),
            });
        });
        if !waited {
            received = Some(Err(RecvTimeoutError::Closed));
        }
        let received = match received? {
            Err(RecvTimeoutError::Timeout) => return None,
            Ok(outcome) => Ok(outcome),
            Err(RecvTimeoutError::Closed) => Err(RecvError),
        };
        Some(unwrap(self.took(received)))
    }

    /// The value if the task has finished, `None` if not; never blocks.
    ///
    /// # Panics
    ///
    /// As [`wait`](Self::wait) does, and if the value was already taken.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut task = bridge::spawn(|| 1);
    /// while !task.is_finished() {
    ///     std::thread::yield_now();
    /// }
    /// assert_eq!(task.try_get(), Some(1));
    /// ```
    #[track_caller]
    pub fn try_get(&mut self) -> Option<T> {
        let Some(rx) = self.rx.as_mut() else {
            taken();
        };
        let received = match rx.try_recv(&*self.work) {
            Err(TryRecvError::Empty) => return None,
            Ok(outcome) => Ok(outcome),
            Err(TryRecvError::Closed) => Err(RecvError),
        };
        Some(unwrap(self.took(received)))
    }

    /// Whether the task has finished (or its value was taken): a wait would not block.
    ///
    /// # Examples
    ///
    /// ```
    /// let task = bridge::spawn(|| 1);
    /// let _ = task.is_finished(); // true once the closure has run
    /// assert_eq!(task.wait(), 1);
    /// ```
    pub fn is_finished(&self) -> bool {
        self.rx.as_ref().is_none_or(|rx| rx.is_ready(&*self.work))
    }

    /// A future that returns the value, or the [`Error`] that [`join`](Self::join) would,
    /// instead of resuming a panic.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let result = bridge::spawn(|| -> u8 { panic!("no") }).catch_unwind().await;
    /// assert!(result.unwrap_err().is_panic());
    /// # }
    /// ```
    pub fn catch_unwind(self) -> CatchUnwind<T> {
        CatchUnwind { task: self }
    }

    /// Lets the work run on with nobody to take its value (dropping the task would cancel
    /// it). A panic of detached work is dropped.
    ///
    /// # Examples
    ///
    /// ```
    /// let (tx, rx) = bridge::oneshot::channel();
    /// bridge::spawn(move || tx.send(3).unwrap()).detach();
    /// assert_eq!(rx.recv_blocking(), Ok(3));
    /// ```
    pub fn detach(mut self) {
        if let Some(rx) = self.rx.take() {
            self.work.stop_helping();
            let work = &*self.work;
            contain(move || rx.abandon(work));
        }
    }

    /// Whether a blocking wait polls the task (see `join`): on a worker of the task's pool,
    /// and on any pool's worker (or wherever none is known yet), whose wait `block_on` watches
    /// at the stall threshold (see `workers.rs`).
    fn joins_by_polling(&self) -> bool {
        self.work.joins_by_polling() || !matches!(crate::workers::here(), Here::Elsewhere)
    }

    /// Polls the task to its outcome on this thread, inside its side's `block`: `None` if
    /// `deadline` passed first.
    fn poll_blocking(&mut self, deadline: Option<Instant>) -> Option<Result<T, Error>> {
        let Self { rx, work } = self;
        let work = &**work;
        let mut received = None;
        let blocked = work.block(&mut || {
            let polled = poll_fn(|cx| poll_parts(rx, work, cx));
            received = match deadline {
                Some(deadline) => crate::block_on_deadline(polled, deadline),
                None => Some(crate::block_on(polled)),
            };
        });
        if !blocked {
            // Waiting here could hang (see `Runner::block`): the outcome is lost to this wait.
            return Some(took(rx, work, Err(RecvError)));
        }
        received
    }

    fn poll_outcome(&mut self, cx: &mut Context<'_>) -> Poll<Result<T, Error>> {
        poll_parts(&mut self.rx, &*self.work, cx)
    }

    /// The outcome if the work has finished (or was lost): a blocking wait takes it at once,
    /// wherever it runs, before it asks how to wait here.
    fn take_finished(&mut self) -> Option<Result<Outcome<T>, RecvError>> {
        match self.rx.as_mut()?.try_recv(&*self.work) {
            Ok(outcome) => Some(Ok(outcome)),
            Err(TryRecvError::Closed) => Some(Err(RecvError)),
            Err(TryRecvError::Empty) => None,
        }
    }

    fn took(&mut self, received: Result<Outcome<T>, RecvError>) -> Result<T, Error> {
        took(&mut self.rx, &*self.work, received)
    }

    fn outcome(&self, received: Result<Outcome<T>, RecvError>) -> Result<T, Error> {
        outcome(&*self.work, received)
    }

    /// On a consumer's empty poll: runs the producing task's queued work here where its side
    /// allows it. Used by the stream crossing (not in loom builds).
    #[cfg(not(bridge_loom))]
    pub(crate) fn help(&self, waker: &Waker) -> bool {
        self.rx.is_some() && self.work.help(waker)
    }
}

/// [`Task::poll_outcome`] over the task's parts, for a wait that lends them out separately.
fn poll_parts<T>(
    rx: &mut Option<Source<T>>,
    work: &dyn Runner,
    cx: &mut Context<'_>,
) -> Poll<Result<T, Error>> {
    let Some(receiver) = rx.as_mut() else {
        taken();
    };
    let received = ready!(receiver.poll(work, cx));
    Poll::Ready(took(rx, work, received))
}

/// The outcome is taken: the task's value, or why there is none.
fn took<T>(
    rx: &mut Option<Source<T>>,
    work: &dyn Runner,
    received: Result<Outcome<T>, RecvError>,
) -> Result<T, Error> {
    *rx = None;
    work.stop_helping();
    outcome(work, received)
}

fn outcome<T>(work: &dyn Runner, received: Result<Outcome<T>, RecvError>) -> Result<T, Error> {
    match received {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(payload)) => Err(work.error(payload)),
        Err(RecvError) => Err(Error::lost()),
    }
}

impl<T> Drop for Task<T> {
    fn drop(&mut self) {
        if let Some(rx) = self.rx.take() {
            let work = &*self.work;
            contain(move || rx.close(work));
            self.work.stop_helping();
            self.work.cancel();
        }
    }
}

impl<T> Future for Task<T> {
    type Output = T;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        self.get_mut().poll_outcome(cx).map(unwrap)
    }
}

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

/// The future of [`Task::catch_unwind`]: the task's value, or the [`Error`] saying why there
/// is none. Dropping it cancels the task.
///
/// # Examples
///
/// ```
/// let err = bridge::block_on(bridge::spawn(|| -> () { panic!("x") }).catch_unwind());
/// assert!(err.unwrap_err().is_panic());
/// ```
#[must_use = "futures do nothing unless awaited; dropping this cancels the task"]
#[derive(Debug)]
pub struct CatchUnwind<T> {
    task: Task<T>,
}

impl<T> Future for CatchUnwind<T> {
    type Output = Result<T, Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let task = &mut self.get_mut().task;
        assert!(
            !task.is_terminated(),
            "bridge::CatchUnwind: no value: the future was polled after it completed"
        );
        task.poll_outcome(cx)
    }
}

impl<T> FusedFuture for CatchUnwind<T> {
    fn is_terminated(&self) -> bool {
        self.task.is_terminated()
    }
}

/// Runs `f`, dropping a panic from it (and a panic from dropping that panic's payload):
/// where a user's value is dropped on the bridge's own path.
fn contain(f: impl FnOnce()) {
    // Under loom a panic here is a race that the model found (no model's value panics when
    // dropped): it goes on, so that the model fails, instead of being dropped unseen.
    if cfg!(bridge_loom) {
        return f();
    }
    if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(f)) {
        if let Err(second) = panic::catch_unwind(AssertUnwindSafe(move || drop(payload))) {
            std::mem::forget(second);
        }
    }
}

#[track_caller]
fn unwrap<T>(result: Result<T, Error>) -> T {
    match result {
        Ok(value) => value,
        Err(err) => match err.try_into_panic() {
            Ok(payload) => panic::resume_unwind(payload),
            Err(err) => panic!("bridge::Task: no value: {err}"),
        },
    }
}

fn recv_forever<T>(rx: &mut Source<T>, work: &dyn Runner) -> Result<Outcome<T>, RecvError> {
    loop {
        match rx.recv_timeout(work, Duration::MAX) {
            Ok(value) => return Ok(value),
            Err(RecvTimeoutError::Closed) => return Err(RecvError),
            Err(RecvTimeoutError::Timeout) => {}
        }
    }
}

#[cold]
#[track_caller]
fn taken() -> ! {
    panic!("bridge::Task: no value: it was already taken (the task was polled after it completed)")
}
