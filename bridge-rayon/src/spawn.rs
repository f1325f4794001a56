//! Putting closures on a pool: the global one, or any `rayon::ThreadPool`.

use crate::CancelFlag;
use crate::home;
use bridge_core::Task;
#[cfg(not(bridge_loom))]
use bridge_core::stream::Crossing;
#[cfg(not(bridge_loom))]
use futures_core::Stream;
use std::future::Future;
use std::sync::Arc;

/// Runs `f` on rayon's global pool and returns the [`Task`] that yields its result.
///
/// The job goes on rayon's usual LIFO path: from a rayon worker it lands on that worker's
/// own deque (and runs in the pool that worker belongs to), from any other thread on the
/// global pool's queue. A panic in `f` is caught on the pool thread and comes back through
/// the task; rayon's panic handler never sees it.
///
/// `f` runs on a thread of the pool it was queued on, or on a worker of that same pool that
/// waits for the task before any other thread started it, inline in the wait; see
/// [`Task`]'s section on waiting on a rayon worker. A waiter anywhere else (off rayon, a
/// worker of another pool, a worker inside a tokio runtime's `block_on`) blocks: `f` always
/// runs as its pool's work, with its threads, stack size and start handler.
/// With the feature `tracing`, the span current here is current while `f` runs, wherever it
/// runs (see the crate docs' [Tracing](crate#tracing) section).
///
/// # Examples
///
/// ```
/// # futures::executor::block_on(async {
/// let digest = bridge::spawn(|| [3u8; 4].iter().map(|b| *b as u32).sum::<u32>()).await;
/// assert_eq!(digest, 12);
/// # });
/// ```
pub fn spawn<F, T>(f: F) -> Task<T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    let (task, job) = crate::task::new(move |_: CancelFlag<'_>| f(), home::of_spawn());
    rayon_core::spawn(job);
    task
}

/// Like [`spawn`], but the job takes rayon's FIFO path: jobs spawned from one worker start
/// in the order they were spawned (a job a waiting worker takes starts then, ahead of its
/// turn).
///
/// # Examples
///
/// ```
/// let task = bridge::spawn_fifo(|| "first in");
/// assert_eq!(task.wait(), "first in");
/// ```
pub fn spawn_fifo<F, T>(f: F) -> Task<T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    let (task, job) = crate::task::new(move |_: CancelFlag<'_>| f(), home::of_spawn());
    rayon_core::spawn_fifo(job);
    task
}

/// Like [`spawn`], for long work that should stop once nobody waits for it: `f` gets a
/// [`CancelFlag`] that turns on when the task is dropped.
///
/// # Examples
///
/// ```
/// let task = bridge::spawn_cancellable(|flag| {
///     (0..1_000u32).take_while(|_| !flag.is_cancelled()).count()
/// });
/// assert_eq!(task.wait(), 1_000);
/// ```
pub fn spawn_cancellable<F, T>(f: F) -> Task<T>
where
    F: FnOnce(CancelFlag<'_>) -> T + Send + 'static,
    T: Send + 'static,
{
    let (task, job) = crate::task::new(f, home::of_spawn());
    rayon_core::spawn(job);
    task
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for rayon_core::ThreadPool {}
}

/// [`spawn`], [`spawn_fifo`], [`spawn_cancellable`] and [`spawn_future`](crate::spawn_future)
/// for a pool of your own.
///
/// # Examples
///
/// ```
/// use bridge::cpu::ThreadPoolExt;
///
/// let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
/// let task = pool.spawn_task(|| rayon::current_thread_index().is_some());
/// assert!(task.wait());
/// ```
pub trait ThreadPoolExt: sealed::Sealed {
    /// Runs `f` on this pool (LIFO path); see [`spawn`].
    ///
    /// # Examples
    ///
    /// ```
    /// use bridge::cpu::ThreadPoolExt;
    ///
    /// let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    /// assert_eq!(pool.spawn_task(|| 6 * 7).wait(), 42);
    /// ```
    fn spawn_task<F, T>(&self, f: F) -> Task<T>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static;

    /// Runs `f` on this pool (FIFO path); see [`spawn_fifo`].
    ///
    /// # Examples
    ///
    /// ```
    /// use bridge::cpu::ThreadPoolExt;
    ///
    /// let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    /// assert_eq!(pool.spawn_fifo_task(|| 1).wait(), 1);
    /// ```
    fn spawn_fifo_task<F, T>(&self, f: F) -> Task<T>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static;

    /// Runs `f` on this pool with a [`CancelFlag`]; see [`spawn_cancellable`].
    ///
    /// # Examples
    ///
    /// ```
    /// use bridge::cpu::ThreadPoolExt;
    ///
    /// let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    /// assert!(!pool.spawn_cancellable_task(|flag| flag.is_cancelled()).wait());
    /// ```
    fn spawn_cancellable_task<F, T>(&self, f: F) -> Task<T>
    where
        F: FnOnce(CancelFlag<'_>) -> T + Send + 'static,
        T: Send + 'static;

    /// Runs the future `fut` on this pool, one poll per wake-up as a job of the pool; see
    /// [`spawn_future`](crate::spawn_future). A waiter on a rayon worker runs its queued
    /// polls itself when no pool thread takes them.
    ///
    /// The pool is shared (`Arc`): the future's wakers, which may fire on any thread long
    /// after this call, queue its polls on it, so they keep it alive.
    ///
    /// # Examples
    ///
    /// ```
    /// use bridge::cpu::ThreadPoolExt;
    /// use std::sync::Arc;
    ///
    /// let pool = Arc::new(rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap());
    /// let task = pool.spawn_future_task(async { rayon::current_thread_index() });
    /// assert_eq!(task.wait(), Some(0));
    /// ```
    fn spawn_future_task<F>(self: &Arc<Self>, fut: F) -> Task<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static;

    /// Drives `stream` on this pool, one poll per wake-up as a job of the pool (a
    /// [`spawn_future_task`](Self::spawn_future_task) of its pump), and returns a
    /// [`Crossing`] that yields its items, in order, on any executor: at most `bound` made
    /// ahead of the consumer, the stream dropped on the pool when the crossing is, its panic
    /// resumed in the consumer after its items. [`stream::on_cpu`](crate::stream::on_cpu)
    /// does the same on rayon's global pool.
    ///
    /// # Examples
    ///
    /// ```
    /// use bridge::cpu::ThreadPoolExt;
    /// use futures::StreamExt;
    /// use std::sync::Arc;
    ///
    /// let pool = Arc::new(rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap());
    /// let squares = pool.spawn_stream(futures::stream::iter(1..=3u64).map(|n| n * n), 1);
    /// assert_eq!(futures::executor::block_on(squares.collect::<Vec<_>>()), [1, 4, 9]);
    /// ```
    // Not in loom builds, which have no crossing (bridge-core's `stream` is not modelled).
    #[cfg(not(bridge_loom))]
    fn spawn_stream<S>(self: &Arc<Self>, stream: S, bound: usize) -> Crossing<S::Item>
    where
        S: Stream + Send + 'static,
        S::Item: Send + 'static;
}

impl ThreadPoolExt for rayon_core::ThreadPool {
    fn spawn_task<F, T>(&self, f: F) -> Task<T>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        let (task, job) = crate::task::new(move |_: CancelFlag<'_>| f(), home::of(self));
        self.spawn(job);
        task
    }

    fn spawn_fifo_task<F, T>(&self, f: F) -> Task<T>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        let (task, job) = crate::task::new(move |_: CancelFlag<'_>| f(), home::of(self));
        self.spawn_fifo(job);
        task
    }

    fn spawn_cancellable_task<F, T>(&self, f: F) -> Task<T>
    where
        F: FnOnce(CancelFlag<'_>) -> T + Send + 'static,
        T: Send + 'static,
    {
        let (task, job) = crate::task::new(f, home::of(self));
        self.spawn(job);
        task
    }

    fn spawn_future_task<F>(self: &Arc<Self>, fut: F) -> Task<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        crate::future_task::spawn_future_on(self, fut)
    }

    #[cfg(not(bridge_loom))]
    fn spawn_stream<S>(self: &Arc<Self>, stream: S, bound: usize) -> Crossing<S::Item>
    where
        S: Stream + Send + 'static,
        S::Item: Send + 'static,
    {
        let (pump, unstarted) =
            bridge_core::stream::start(crate::stream::Courteous(Box::pin(stream)), bound);
        // Dropping the task (with the crossing) cancels the pump on the pool.
        let pump = crate::stream::ending_as_it_ended(pump);
        unstarted.with_producer(Some(self.spawn_future_task(pump)))
    }
}

/// Test hook for the loom models: a task and the job that fulfils it, to be run on a loom
/// thread standing in for the pool. Its waiters never claim the job: they block, as a thread
/// outside the pool does. Not part of the API.
#[cfg(all(test, bridge_loom))]
pub(crate) fn loom_task<F, T>(f: F) -> (Task<T>, impl FnOnce() + Send + 'static)
where
    F: FnOnce(CancelFlag<'_>) -> T + Send + 'static,
    T: Send + 'static,
{
    crate::task::new(f, false)
}

/// Test hook for the loom models: like [`loom_task`], but a waiter on any loom thread of
/// the model claims the job if it has not started, as a waiter on a rayon worker does.
/// Not part of the API.
#[cfg(all(test, bridge_loom))]
pub(crate) fn loom_claimable_task<F, T>(f: F) -> (Task<T>, impl FnOnce() + Send + 'static)
where
    F: FnOnce(CancelFlag<'_>) -> T + Send + 'static,
    T: Send + 'static,
{
    crate::task::new(f, true)
}
