//! `Limit`: a bound on the CPU tasks in flight, with a FIFO queue of the callers waiting for
//! room.
//!
//! A limit holds one lock over its whole state: the number of permits out (`in_flight`), the
//! queue of waiters that have no permit yet, and the waiters that were granted one but have
//! not taken it. A permit is a value: whoever holds it holds one unit of room, and dropping
//! it gives the room back, to the oldest waiter if there is one (the count then does not
//! change: the permit moves), or to the pool of free room otherwise.
//!
//! ```text
//!                      room                        polled again
//! first poll ──────────────────────────────────────────────────────────▶ has the permit
//!      │ full                                           ▲
//!      ▼          a permit is dropped (oldest first)    │
//!   QUEUED ──────────────────────────────────────▶ GRANTED
//!      │ dropped: leaves the queue                      │ dropped: hands the permit on
//!      ▼                                                ▼
//!   gone, nothing held                              gone, nothing held
//! ```
//!
//! While a waiter is queued, `in_flight == max`: a permit dropped with waiters queued moves
//! to the oldest of them (but see below), never back to free room, so a newcomer can never
//! pass the queue.
//! The permit of a spawned task is captured by the closure the pool runs: it is dropped when
//! the closure returns or unwinds, or with the closure if the job is cancelled before it
//! starts. Ownership makes that exactly once.
//!
//! A task of `spawn` or `spawn_future` that finds no room takes its place in the queue at
//! once, under the lock, in the call (`line_up`): a waiter with no waker yet, which the
//! task's future (a future task on the limit's pool) polls, at its first poll and at each
//! wake-up, and then holds the permit in its own state. So the queue's order is the order of
//! the calls, whenever the pool gets to the first polls; a grant to a waiter never polled
//! wakes nobody (its first poll is queued already) and is found by that poll. Dropping the
//! task drops its future on the pool, and with it the waiter (see `Acquire`'s drop).
//!
//! One exception to first come, first served, so that a blocking caller cannot deadlock its
//! own thread: a waiter of `spawn_or_wait` blocks its thread until it has a permit, and an
//! async waiter last polled on that thread (a waiting task whose polls run there: on a pool
//! of one worker, a task that this worker spawned; before its first poll, a waiter counts as
//! its caller's thread's) cannot be polled meanwhile, so it could never take a permit handed to it, and the
//! blocking waiter behind it would wait forever. So while a blocking waiter of a thread is
//! queued (its thread is in `blocked`), a permit passes over the async waiters last polled
//! on that thread to the oldest waiter that can take it (the blocking one at the latest);
//! and a blocking waiter that finds a permit granted to an async waiter of its own thread,
//! not yet taken, takes it over and puts that waiter back into the queue, in its place.
//! Passed-over waiters keep their place: they get the first permit once their thread runs
//! again. Either way the permit moves between waiters, so `in_flight` and the bound are
//! untouched.
//!
//! No atomics: every change happens under the lock, and wakers are woken after it is
//! released, so no user code runs while it is held.

use crate::sync::thread::{self, ThreadId};
use crate::sync::{Mutex, MutexGuard};
use crate::{Task, ThreadPoolExt};
use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, PoisonError};
use std::task::{Context, Poll, Waker};

/// A bound on the CPU tasks in flight on a rayon pool: at most `max_in_flight` tasks
/// spawned through this limit are queued or running at once; the others wait for room,
/// first come, first served.
///
/// rayon's own queue is unbounded: a service that receives more CPU work than its pool can
/// do keeps queueing it, and every request's latency grows without end. A `Limit` makes the
/// work wait for room (or refuses it) instead:
///
/// - [`spawn`](Self::spawn) and [`spawn_future`](Self::spawn_future) return a [`Task`] at
///   once, as [`bridge::spawn`](crate::spawn) does; the task waits for room in line, then
///   runs. Awaiting the task (or [`wait`](Task::wait)ing for it) gives the value, whatever
///   the wait for room took;
/// - [`spawn_or_wait`](Self::spawn_or_wait) blocks the calling thread for room, then spawns;
/// - [`try_spawn`](Self::try_spawn) never waits: it gives the closure back when full.
///
/// The waiting tasks and the blocking callers share one FIFO line, with one exception that
/// keeps a blocking caller from deadlocking its own thread: it passes the waiters last
/// polled on its thread, which cannot run while it blocks (see "Blocking" under
/// [`spawn_or_wait`](Self::spawn_or_wait)).
/// A task takes its room when it leaves the line (at once if there is room) and gives it
/// back when its closure returns or panics (its future completes), or when the pool drops
/// the job of a task that was cancelled (dropped) before it started. Until then the room
/// stays taken, even if the [`Task`] itself was dropped: the job is still in the pool's
/// queue. A task dropped while it waits in line leaves the line and takes no room.
///
/// Cloning a `Limit` shares it: the clones count against one bound.
///
/// # Examples
///
/// ```
/// # futures::executor::block_on(async {
/// let limit = bridge::cpu::Limit::new(2);
/// // Eight tasks at once, never more than 2 of them queued on the pool or running.
/// let tasks: Vec<_> = (0..8u64)
///     .map(|n| limit.spawn(move || (0..=n).sum::<u64>()))
///     .collect();
/// let mut sums = Vec::new();
/// for task in tasks {
///     sums.push(task.await);
/// }
/// assert_eq!(sums, [0, 1, 3, 6, 10, 15, 21, 28]);
/// # });
/// ```
#[derive(Clone)]
pub struct Limit {
    shared: Arc<Shared>,
    pool: Option<Arc<rayon_core::ThreadPool>>,
}

/// What the clones of a limit, its waiters and its permits share.
struct Shared {
    max: usize,
    state: Mutex<State>,
}

struct State {
    /// Permits out: held, travelling with a job, or granted to a waiter not yet polled.
    in_flight: usize,
    /// The waiters without a permit, in id order (oldest first).
    queue: VecDeque<Waiter>,
    /// The waiters granted a permit that they have not taken yet: id, and who polls it.
    granted: Vec<(u64, Poller)>,
    /// The threads whose blocking waiter is queued: blocked until it gets a permit, so the
    /// async waiters last polled on them are passed over. At most one entry per thread.
    blocked: Vec<ThreadId>,
    /// The id of the next waiter to queue.
    next_id: u64,
}

/// A queued waiter.
struct Waiter {
    id: u64,
    /// The waker of its last poll; `None` after a take-over, until its next poll (which the
    /// wake of the grant it lost brings: see `Acquire::poll`), and before its first poll if
    /// a spawn's call queued it (`Limit::line_up`: that poll is queued already).
    waker: Option<Waker>,
    poller: Poller,
}

/// Who polls a waiter, and what its thread does between polls.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Poller {
    /// An async waiter (the task of a `spawn` or `spawn_future`), last polled on this
    /// thread; before its first poll, the thread of the call that queued it.
    Async(ThreadId),
    /// A blocking waiter (`spawn_or_wait`): this thread blocks until it has a permit.
    Blocking(ThreadId),
}

impl State {
    /// Whether a waiter polled by `poller` can take a permit now: not an async waiter whose
    /// thread is blocked in `spawn_or_wait`.
    fn can_take(&self, poller: Poller) -> bool {
        match poller {
            Poller::Async(thread) => !self.blocked.contains(&thread),
            Poller::Blocking(_) => true,
        }
    }

    /// Takes `waiter` out of the queue's books: a blocking waiter's thread is no longer
    /// blocked behind it.
    fn unqueued(&mut self, waiter: &Waiter) {
        if let Poller::Blocking(thread) = waiter.poller {
            self.blocked.retain(|&t| t != thread);
        }
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // No user code runs under the lock (wakers are woken, and old ones dropped, after
        // it), so it is never poisoned with the state half-changed.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Gives one permit back: to the oldest waiter that can take it now, or to free room.
    /// Returns the waker to wake once the lock is released.
    fn release(state: &mut State) -> Option<Waker> {
        // With no thread blocked, the oldest waiter can take it. Otherwise the blocked
        // thread's own waiter, queued, is one that can.
        let at = if state.blocked.is_empty() {
            0
        } else {
            let can_take = state.queue.iter().position(|w| state.can_take(w.poller));
            can_take.expect("a blocked thread's waiter is not queued")
        };
        match state.queue.remove(at) {
            Some(waiter) => {
                state.unqueued(&waiter);
                state.granted.push((waiter.id, waiter.poller));
                waiter.waker
            }
            None => {
                state.in_flight -= 1;
                None
            }
        }
    }
}

impl Limit {
    /// A limit of `max_in_flight` tasks at once, on rayon's global pool.
    ///
    /// # Panics
    ///
    /// Panics if `max_in_flight` is 0: nothing could ever run.
    ///
    /// # Examples
    ///
    /// ```
    /// let limit = bridge::cpu::Limit::new(4);
    /// assert_eq!(limit.max_in_flight(), 4);
    /// assert_eq!(limit.in_flight(), 0);
    /// ```
    #[track_caller]
    pub fn new(max_in_flight: usize) -> Self {
        assert!(
            max_in_flight > 0,
            "bridge_rayon::Limit::new: max_in_flight must be at least 1"
        );
        Self {
            shared: Arc::new(Shared {
                max: max_in_flight,
                state: Mutex::new(State {
                    in_flight: 0,
                    queue: VecDeque::new(),
                    granted: Vec::new(),
                    blocked: Vec::new(),
                    next_id: 0,
                }),
            }),
            pool: None,
        }
    }

    /// This limit, spawning on `pool` instead of rayon's global pool. Clones made before
    /// this call keep their pool, and share the bound.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// let pool = Arc::new(rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap());
    /// let limit = bridge::cpu::Limit::new(2).pool(pool.clone());
    /// let task = limit.spawn_or_wait(rayon::current_num_threads);
    /// assert_eq!(task.wait(), 2);
    /// ```
    pub fn pool(mut self, pool: Arc<rayon_core::ThreadPool>) -> Self {
        self.pool = Some(pool);
        self
    }

    /// The bound given to [`new`](Self::new).
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(bridge::cpu::Limit::new(3).max_in_flight(), 3);
    /// ```
    pub fn max_in_flight(&self) -> usize {
        self.shared.max
    }

    /// How many tasks of this limit hold room now (queued or running, or granted room that
    /// their caller has not taken yet). Never more than [`max_in_flight`](Self::max_in_flight).
    ///
    /// # Examples
    ///
    /// ```
    /// let limit = bridge::cpu::Limit::new(2);
    /// let (gate_tx, gate_rx) = std::sync::mpsc::channel::<()>();
    /// let task = limit.spawn_or_wait(move || gate_rx.recv().is_ok());
    /// assert_eq!(limit.in_flight(), 1);
    /// gate_tx.send(()).unwrap();
    /// assert!(task.wait());
    /// ```
    pub fn in_flight(&self) -> usize {
        self.shared.lock().in_flight
    }

    /// Runs `f` on the pool once there is room, and returns its [`Task`] at once, as
    /// [`bridge::spawn`](crate::spawn) does: the wait for room is the task's, never the
    /// caller's. The task holds the room until the closure returns or panics (or the pool
    /// drops the job of a task cancelled before it started).
    ///
    /// With room free and nobody waiting, `f` goes to the pool at once, as a closure of
    /// [`bridge::spawn`](crate::spawn). Otherwise the call takes the task's place at the end
    /// of the line, in the call itself (the same line as the waiters of
    /// [`spawn_future`](Self::spawn_future), [`spawn_or_wait`](Self::spawn_or_wait) and
    /// [`try_spawn`](Self::try_spawn)'s check), and the task waits there as a future task on
    /// the pool, taking no thread while it waits; once room is handed to it, `f` runs on the
    /// pool, within that future's poll (so, with feature `tokio`, with the shared I/O
    /// runtime's handle entered, as in every poll of
    /// [`cpu::spawn_future`](crate::spawn_future)). Tasks get room in the order of their
    /// calls (blocking callers of [`spawn_or_wait`](Self::spawn_or_wait) pass the waiters
    /// last polled on their own thread, which cannot run while they block).
    ///
    /// Dropping the task while it waits gives its place up: it leaves the line and `f`
    /// never runs; dropped after room was handed to it but before `f` started, it hands the
    /// room on to the next waiter. A panic in `f` comes back through the task, as for
    /// [`spawn`](crate::spawn), and gives the room back.
    ///
    /// # Examples
    ///
    /// ```
    /// # futures::executor::block_on(async {
    /// let limit = bridge::cpu::Limit::new(1);
    /// let first = limit.spawn(|| 1);
    /// // Full: this task waits for room until `first`'s closure has returned.
    /// let second = limit.spawn(|| 2);
    /// assert_eq!(first.await + second.await, 3);
    /// assert_eq!(limit.in_flight(), 0);
    /// # });
    /// ```
    pub fn spawn<F, T>(&self, f: F) -> Task<T>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        match self.line_up() {
            Ok(permit) => self.launch(permit, f),
            // The task's future waits in line, then runs `f` within the poll that takes the
            // room: the permit is dropped when `f` returns or unwinds, or with the future
            // (its waiter leaving the line, or handing the room on) if the task is dropped.
            Err(waiter) => self.launch_future(async move { holding(waiter.await, f)() }),
        }
    }

    /// Runs the future `fut` on the pool once there is room, one poll per wake-up (as
    /// [`cpu::spawn_future`](crate::spawn_future) does), and returns its [`Task`] at once.
    /// The room is held from the moment the task gets it (in the call, if there is room)
    /// until the future completes (its output or a panic) or is dropped by the cancel of its
    /// task, and it comes back before the task receives the output.
    ///
    /// The task waits in the same line as [`spawn`](Self::spawn)'s, its place taken in the
    /// call, and gives it up in the same way when dropped. A limit made with
    /// [`pool`](Self::pool) runs the future there. With feature `tokio` each poll enters the
    /// shared I/O runtime, as `spawn_future`'s do.
    ///
    /// # Examples
    ///
    /// ```
    /// # futures::executor::block_on(async {
    /// let limit = bridge::cpu::Limit::new(1);
    /// let first = limit.spawn_future(async { 20 });
    /// // Full until the first future has completed.
    /// let second = limit.spawn_future(async { 22 });
    /// assert_eq!(first.await + second.await, 42);
    /// assert_eq!(limit.in_flight(), 0);
    /// # });
    /// ```
    pub fn spawn_future<F>(&self, fut: F) -> Task<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let room = self.line_up();
        // The permit lives in the future: dropped when it completes or is dropped unrun.
        self.launch_future(async move {
            let _room = match room {
                Ok(permit) => permit,
                Err(waiter) => waiter.await,
            };
            fut.await
        })
    }

    /// Blocks this thread until there is room, then runs `f` on the pool and returns the
    /// [`Task`]. It queues in the same FIFO line as [`spawn`](Self::spawn), with one
    /// exception (below).
    ///
    /// # Blocking
    ///
    /// While it blocks, this thread runs nothing else: a task of the limit waiting for room
    /// ([`spawn`](Self::spawn), [`spawn_future`](Self::spawn_future)) whose wait was last
    /// polled on this thread, or that a call here queued and nothing has polled yet (on a
    /// pool of one worker, a task that this worker spawned: its polls can run nowhere else)
    /// cannot take room until the call returns. So the call passes such waiters, even those
    /// queued before it: room freed meanwhile goes to the oldest waiter that can take it
    /// (this call at the latest), and room already handed to such a waiter and not yet taken
    /// is taken over by this call. The waiters passed keep their place and get the next room
    /// once they are polled again. Waiters of other threads are never passed.
    ///
    /// What can still deadlock: a call from a job of the limit's own pool while every
    /// worker may be doing the same (the room it waits for is given back by jobs of that
    /// pool), and a call whose room can only come back through this thread (a task of the
    /// limit that waits, directly or not, for something this thread would do after the
    /// call).
    ///
    /// # Examples
    ///
    /// ```
    /// let limit = bridge::cpu::Limit::new(2);
    /// let tasks: Vec<_> = (0..6u32).map(|n| limit.spawn_or_wait(move || n * n)).collect();
    /// let squares: Vec<u32> = tasks.into_iter().map(|t| t.wait()).collect();
    /// assert_eq!(squares, [0, 1, 4, 9, 16, 25]);
    /// ```
    pub fn spawn_or_wait<F, T>(&self, f: F) -> Task<T>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        let permit = bridge_core::block_on(self.acquire_blocking());
        self.launch(permit, f)
    }

    /// Runs `f` on the pool if there is room now (and nobody waits for it); otherwise gives
    /// `f` back, unrun.
    ///
    /// # Errors
    ///
    /// `Err(f)` when the limit is full.
    ///
    /// # Examples
    ///
    /// ```
    /// let limit = bridge::cpu::Limit::new(1);
    /// let (gate_tx, gate_rx) = std::sync::mpsc::channel::<()>();
    /// let held = limit.try_spawn(move || gate_rx.recv().is_ok()).ok().unwrap();
    /// let refused = limit.try_spawn(|| "shed").unwrap_err();
    /// assert_eq!(refused(), "shed"); // the closure, back to the caller
    /// gate_tx.send(()).unwrap();
    /// assert!(held.wait());
    /// ```
    pub fn try_spawn<F, T>(&self, f: F) -> Result<Task<T>, F>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        match self.try_acquire() {
            Some(permit) => Ok(self.launch(permit, f)),
            None => Err(f),
        }
    }

    /// Spawns `f` with `permit` moved into the closure, so that the room comes back exactly
    /// when the pool is done with the closure: run (to its value or its panic) or dropped.
    fn launch<F, T>(&self, permit: Permit, f: F) -> Task<T>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        let f = holding(permit, f);
        match &self.pool {
            Some(pool) => pool.spawn_task(f),
            None => crate::spawn(f),
        }
    }

    /// Runs `fut` as a future task on the limit's pool.
    fn launch_future<F>(&self, fut: F) -> Task<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        match &self.pool {
            Some(pool) => pool.spawn_future_task(fut),
            None => crate::spawn_future(fut),
        }
    }

    /// A permit if there is room now (and so nobody waits); otherwise a waiter queued now,
    /// at the end of the line, under the same lock: a spawn's place is taken by its call,
    /// not by the first poll of its task, which may come later. The waiter has no waker
    /// until that poll, and counts as an async waiter of this thread until then.
    pub(crate) fn line_up(&self) -> Result<Permit, Acquire> {
        let mut state = self.shared.lock();
        // While a waiter is queued, in_flight == max: a free unit never passes the queue.
        if state.in_flight < self.shared.max {
            state.in_flight += 1;
            return Ok(Permit {
                shared: Some(self.shared.clone()),
            });
        }
        let poller = Poller::Async(thread::current().id());
        let id = queue(&mut state, poller, None);
        Err(Acquire {
            shared: self.shared.clone(),
            id: Some(id),
            done: false,
            blocking: false,
        })
    }

    /// A permit if there is room now.
    pub(crate) fn try_acquire(&self) -> Option<Permit> {
        let mut state = self.shared.lock();
        // While a waiter is queued, in_flight == max: a free unit never passes the queue.
        if state.in_flight < self.shared.max {
            state.in_flight += 1;
            Some(Permit {
                shared: Some(self.shared.clone()),
            })
        } else {
            None
        }
    }

    /// A future of a permit, queued at its first poll.
    pub(crate) fn acquire(&self) -> Acquire {
        Acquire {
            shared: self.shared.clone(),
            id: None,
            done: false,
            blocking: false,
        }
    }

    /// The future of a permit that [`spawn_or_wait`](Self::spawn_or_wait) blocks on: its
    /// caller blocks the thread of its polls until it is ready, so it passes the async
    /// waiters of that thread.
    pub(crate) fn acquire_blocking(&self) -> Acquire {
        let mut acquire = self.acquire();
        acquire.blocking = true;
        acquire
    }

    /// Test hook for the loom models: [`spawn`](Self::spawn), with the work queued on a
    /// [`LoomPool`](crate::future_task::loom_pool::LoomPool) that loom threads drain, standing in for the pool:
    /// with room now, the closure's job (the permit in it); without, the polls of the
    /// future task that waits in line, then runs the closure. Not part of the API.
    #[cfg(all(test, bridge_loom))]
    pub(crate) fn loom_spawn<F, T>(
        &self,
        f: F,
    ) -> (Task<T>, crate::future_task::loom_pool::LoomPool)
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        match self.line_up() {
            Ok(permit) => {
                let f = holding(permit, f);
                let (task, job) = crate::spawn::loom_task(move |_| f());
                let pool = crate::future_task::loom_pool::LoomPool::default();
                pool.push(Box::new(job));
                (task, pool)
            }
            Err(waiter) => crate::future_task::loom_pool::loom_future_task(async move {
                holding(waiter.await, f)()
            }),
        }
    }
}

/// `f`, holding `permit` until it returns or unwinds, or is dropped unrun.
fn holding<F, T>(permit: Permit, f: F) -> impl FnOnce() -> T + Send + 'static
where
    F: FnOnce() -> T + Send + 'static,
{
    move || {
        let _room = permit;
        f()
    }
}

impl fmt::Debug for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.shared.lock();
        f.debug_struct("Limit")
            .field("max_in_flight", &self.shared.max)
            .field("in_flight", &state.in_flight)
            .field("waiting", &state.queue.len())
            .finish()
    }
}

/// One unit of a limit's room; dropping it gives the room back. Crate-private (the loom
/// models reach it).
pub struct Permit {
    /// `None` only for the permit a `Permit::drop` is about to give back.
    shared: Option<Arc<Shared>>,
}

impl Drop for Permit {
    fn drop(&mut self) {
        if let Some(shared) = self.shared.take() {
            let waker = Shared::release(&mut shared.lock());
            if let Some(waker) = waker {
                waker.wake();
            }
        }
    }
}

impl fmt::Debug for Permit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Permit").finish_non_exhaustive()
    }
}

/// The future of a permit: queued at its first poll, ready once a permit was handed to it.
/// Crate-private (the loom models reach it).
#[must_use = "futures do nothing unless polled"]
pub struct Acquire {
    shared: Arc<Shared>,
    /// Its place in the queue (or in `granted`), from its first poll until it is ready.
    id: Option<u64>,
    done: bool,
    /// Whether its caller blocks the thread of its polls until it is ready.
    blocking: bool,
}

impl Future for Acquire {
    type Output = Permit;

    /// # Panics
    ///
    /// Panics if polled again after it gave its permit.
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Permit> {
        let this = self.get_mut();
        assert!(
            !this.done,
            "bridge_rayon: a Limit's wait polled after it completed"
        );
        let mut state = this.shared.lock();
        let old_waker;
        match this.id {
            None if state.in_flight < this.shared.max => {
                state.in_flight += 1;
                old_waker = None;
            }
            None => {
                let me = thread::current().id();
                let own = Poller::Async(me);
                let taken_over = if this.blocking {
                    state.granted.iter().position(|&(_, p)| p == own)
                } else {
                    None
                };
                let Some(at) = taken_over else {
                    let poller = if this.blocking {
                        Poller::Blocking(me)
                    } else {
                        own
                    };
                    this.id = Some(queue(&mut state, poller, Some(cx.waker().clone())));
                    return Poll::Pending;
                };
                // Room granted to an async waiter of this thread, which cannot take it while
                // this thread blocks: take it over, and put that waiter back into the queue
                // in its place (in id order). The wake of its grant was given, or is about
                // to be (or, never polled, its first poll is queued already), and it has not
                // been polled since: the poll that follows finds it queued and leaves its
                // waker there.
                let (id, poller) = state.granted.swap_remove(at);
                let back = state.queue.partition_point(|w| w.id < id);
                let waker = None;
                state.queue.insert(back, Waiter { id, waker, poller });
                old_waker = None;
            }
            Some(id) => match state.granted.iter().position(|&(g, _)| g == id) {
                Some(at) => {
                    state.granted.swap_remove(at);
                    old_waker = None;
                }
                None => {
                    // The queue is in id order (ids grow, only removals happen inside it,
                    // and a waiter put back goes to its place): a binary search, not a scan
                    // of every waiter.
                    let at = state.queue.binary_search_by_key(&id, |w| w.id);
                    let waiter = &mut state.queue[at.expect("a waiter neither queued nor granted")];
                    old_waker = waiter.waker.replace(cx.waker().clone());
                    if let Poller::Async(thread) = &mut waiter.poller {
                        *thread = thread::current().id();
                    }
                    drop(state);
                    drop(old_waker);
                    return Poll::Pending;
                }
            },
        }
        drop(state);
        drop(old_waker);
        this.id = None;
        this.done = true;
        Poll::Ready(Permit {
            shared: Some(this.shared.clone()),
        })
    }
}

/// Queues a waiter polled by `poller`, with the waker of its first poll (or none yet: see
/// [`Limit::line_up`]), when there is no room; gives its id.
fn queue(state: &mut State, poller: Poller, waker: Option<Waker>) -> u64 {
    let id = state.next_id;
    state.next_id += 1;
    state.queue.push_back(Waiter { id, waker, poller });
    if let Poller::Blocking(thread) = poller {
        state.blocked.push(thread);
    }
    id
}

impl Drop for Acquire {
    /// Leaves the queue; a permit granted and not taken goes on to the next waiter.
    fn drop(&mut self) {
        let Some(id) = self.id else { return };
        let mut state = self.shared.lock();
        // A binary search: the queue is in id order (see `poll`).
        let (old_waker, to_wake) = match state.queue.binary_search_by_key(&id, |w| w.id).ok() {
            Some(at) => {
                let waiter = state.queue.remove(at).expect("a queued waiter");
                state.unqueued(&waiter);
                (waiter.waker, None)
            }
            None => {
                let at = state.granted.iter().position(|&(g, _)| g == id);
                state
                    .granted
                    .swap_remove(at.expect("a waiter neither queued nor granted"));
                (None, Shared::release(&mut state))
            }
        };
        drop(state);
        drop(old_waker);
        if let Some(waker) = to_wake {
            waker.wake();
        }
    }
}

impl fmt::Debug for Acquire {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Acquire")
            .field("queued", &self.id.is_some())
            .finish()
    }
}

// Under loom the queue is the models' (`loom_models`).
#[cfg(all(test, not(bridge_loom)))]
mod tests;
