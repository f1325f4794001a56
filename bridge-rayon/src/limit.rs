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
//! to the oldest of them, never back to free room, so a newcomer can never pass the queue.
//! The permit of a spawned task is captured by the closure the pool runs: it is dropped when
//! the closure returns or unwinds, or with the closure if the job is cancelled before it
//! starts. Ownership makes that exactly once.
//!
//! No atomics: every change happens under the lock, and wakers are woken after it is
//! released, so no user code runs while it is held.

use crate::arms::arm;
use crate::loom::{Mutex, MutexGuard};
use crate::{Task, ThreadPoolExt};
use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, PoisonError};
use std::task::{Context, Poll, Waker};

/// A bound on the CPU tasks in flight on a rayon pool: at most `max_in_flight` tasks
/// spawned through this limit are queued or running at once; further callers wait for room,
/// first come, first served.
///
/// rayon's own queue is unbounded: a service that receives more CPU work than its pool can
/// do keeps queueing it, and every request's latency grows without end. A `Limit` makes the
/// caller wait (or refuse the work) instead:
///
/// - [`spawn`](Self::spawn) waits for room asynchronously, then spawns;
/// - [`spawn_or_wait`](Self::spawn_or_wait) blocks the calling thread for room, then spawns;
/// - [`try_spawn`](Self::try_spawn) never waits: it gives the closure back when full.
///
/// Async and blocking callers share one FIFO queue. A task takes its room from the moment
/// it is spawned and gives it back when its closure returns or panics, or when the pool
/// drops the job of a task that was cancelled (dropped) before it started. Until then the
/// room stays taken, even if the [`Task`] itself was dropped: the job is still in the pool's
/// queue.
///
/// Cloning a `Limit` shares it: the clones count against one bound.
///
/// # Examples
///
/// ```
/// # futures::executor::block_on(async {
/// let limit = bridge_rayon::Limit::new(2);
/// let mut tasks = Vec::new();
/// for n in 0..8u64 {
///     // Never more than 2 of these queued or running at once.
///     tasks.push(limit.spawn(move || (0..=n).sum::<u64>()).await);
/// }
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
    /// The waiters without a permit, oldest first, with the waker of their last poll.
    queue: VecDeque<(u64, Option<Waker>)>,
    /// The waiters granted a permit that they have not taken yet.
    granted: Vec<u64>,
    /// The id of the next waiter to queue.
    next_id: u64,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // No user code runs under the lock (wakers are woken, and old ones dropped, after
        // it), so it is never poisoned with the state half-changed.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Gives one permit back: to the oldest waiter, or to free room. Returns the waker to
    /// wake once the lock is released.
    fn release(state: &mut State) -> Option<Waker> {
        match state.queue.pop_front() {
            Some((id, waker)) => {
                arm!("limit.release.to_waiter");
                state.granted.push(id);
                waker
            }
            None => {
                arm!("limit.release.frees");
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
    /// let limit = bridge_rayon::Limit::new(4);
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
    /// let limit = bridge_rayon::Limit::new(2).pool(pool.clone());
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
    /// assert_eq!(bridge_rayon::Limit::new(3).max_in_flight(), 3);
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
    /// let limit = bridge_rayon::Limit::new(2);
    /// let (gate_tx, gate_rx) = std::sync::mpsc::channel::<()>();
    /// let task = limit.spawn_or_wait(move || gate_rx.recv().is_ok());
    /// assert_eq!(limit.in_flight(), 1);
    /// gate_tx.send(()).unwrap();
    /// assert!(task.wait());
    /// ```
    pub fn in_flight(&self) -> usize {
        self.shared.lock().in_flight
    }

    /// Waits for room, then runs `f` on the pool; the future gives the [`Task`], which
    /// holds the room until the closure finishes (or the pool drops the job of a cancelled
    /// task).
    ///
    /// Callers get room in the order in which their futures were first polled (blocking
    /// callers of [`spawn_or_wait`](Self::spawn_or_wait) queue in the same line). The
    /// future is cancel-safe: dropped while it waits, it leaves the queue and nothing runs;
    /// dropped after room was handed to it but before it was polled again, it hands the room
    /// on to the next waiter. It holds no borrow of the limit (`'static` if `f` is).
    ///
    /// A panic in `f` comes back through the task, as for [`spawn`](crate::spawn), and gives
    /// the room back.
    ///
    /// # Examples
    ///
    /// ```
    /// # futures::executor::block_on(async {
    /// let limit = bridge_rayon::Limit::new(1);
    /// let first = limit.spawn(|| 1).await;
    /// // Full: this waits until `first`'s closure has returned.
    /// let second = limit.spawn(|| 2).await;
    /// assert_eq!(first.await + second.await, 3);
    /// # });
    /// ```
    // The future gives the Task, itself a future, on purpose: the caller keeps the handle
    // (and with it cancellation) instead of only the value.
    #[allow(clippy::async_yields_async)]
    pub fn spawn<F, T>(&self, f: F) -> impl Future<Output = Task<T>> + Send + 'static
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        let limit = self.clone();
        let acquire = self.__acquire();
        async move { limit.launch(acquire.await, f) }
    }

    /// Blocks this thread until there is room, then runs `f` on the pool and returns the
    /// [`Task`]. It queues in the same FIFO line as [`spawn`](Self::spawn).
    ///
    /// Don't call it from a job of the limit's own pool while every worker may be doing the
    /// same: the room it waits for is given back by jobs of that pool.
    ///
    /// # Examples
    ///
    /// ```
    /// let limit = bridge_rayon::Limit::new(2);
    /// let tasks: Vec<_> = (0..6u32).map(|n| limit.spawn_or_wait(move || n * n)).collect();
    /// let squares: Vec<u32> = tasks.into_iter().map(|t| t.wait()).collect();
    /// assert_eq!(squares, [0, 1, 4, 9, 16, 25]);
    /// ```
    pub fn spawn_or_wait<F, T>(&self, f: F) -> Task<T>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        let permit = bridge_core::block_on(self.__acquire());
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
    /// let limit = bridge_rayon::Limit::new(1);
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
        match self.__try_acquire() {
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

    /// A permit if there is room now. Internal, for the tests; not part of the API.
    #[doc(hidden)]
    pub fn __try_acquire(&self) -> Option<Permit> {
        let mut state = self.shared.lock();
        // While a waiter is queued, in_flight == max: a free unit never passes the queue.
        if state.in_flight < self.shared.max {
            arm!("limit.try.takes");
            state.in_flight += 1;
            Some(Permit {
                shared: Some(self.shared.clone()),
            })
        } else {
            arm!("limit.try.full");
            None
        }
    }

    /// A future of a permit, queued at its first poll. Internal, for the tests; not part of
    /// the API.
    #[doc(hidden)]
    pub fn __acquire(&self) -> Acquire {
        Acquire {
            shared: self.shared.clone(),
            id: None,
            done: false,
        }
    }

    /// Test hook for the loom models: waits for room like [`spawn`](Self::spawn), then
    /// gives the task and its job (with the permit in it) to run on a loom thread standing
    /// in for the pool. Not part of the API.
    #[cfg(bridge_loom)]
    #[doc(hidden)]
    #[allow(clippy::async_yields_async)]
    pub fn __loom_spawn<F, T>(
        &self,
        f: F,
    ) -> impl Future<Output = (Task<T>, impl FnOnce() + Send + 'static)> + 'static
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        let acquire = self.__acquire();
        async move {
            let f = holding(acquire.await, f);
            crate::__loom_task(move |_| f())
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

/// One unit of a limit's room; dropping it gives the room back. Internal, for the tests;
/// not part of the API.
#[doc(hidden)]
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
/// Internal, for the tests; not part of the API.
#[doc(hidden)]
#[must_use = "futures do nothing unless polled"]
pub struct Acquire {
    shared: Arc<Shared>,
    /// Its place in the queue (or in `granted`), from its first poll until it is ready.
    id: Option<u64>,
    done: bool,
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
                arm!("limit.acquire.immediate");
                state.in_flight += 1;
                old_waker = None;
            }
            None => {
                arm!("limit.acquire.queues");
                let id = state.next_id;
                state.next_id += 1;
                state.queue.push_back((id, Some(cx.waker().clone())));
                this.id = Some(id);
                return Poll::Pending;
            }
            Some(id) => match state.granted.iter().position(|&g| g == id) {
                Some(at) => {
                    arm!("limit.acquire.granted");
                    state.granted.swap_remove(at);
                    old_waker = None;
                }
                None => {
                    arm!("limit.acquire.still_waiting");
                    // The queue is in id order (ids grow, and only removals happen inside
                    // it): a binary search, not a scan of every waiter.
                    let at = state.queue.binary_search_by_key(&id, |&(q, _)| q);
                    let slot = &mut state.queue[at.expect("a waiter neither queued nor granted")].1;
                    old_waker = slot.replace(cx.waker().clone());
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

impl Drop for Acquire {
    /// Leaves the queue; a permit granted and not taken goes on to the next waiter.
    fn drop(&mut self) {
        let Some(id) = self.id else { return };
        let mut state = self.shared.lock();
        // A binary search: the queue is in id order (see `poll`).
        let (old_waker, to_wake) = match state.queue.binary_search_by_key(&id, |&(q, _)| q).ok() {
            Some(at) => {
                arm!("limit.drop.queued");
                (state.queue.remove(at).and_then(|(_, w)| w), None)
            }
            None => {
                arm!("limit.drop.granted");
                let at = state.granted.iter().position(|&g| g == id);
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
