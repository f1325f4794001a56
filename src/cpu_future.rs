//! Futures on rayon with the shared `IoRuntime` entered during their polls (features `rayon`
//! and `tokio`): `bridge::cpu::spawn_future` and the facade's `bridge::cpu::ThreadPoolExt`,
//! which shadow threadbridge-rayon's (that crate knows nothing of tokio).

use bridge_core::stream::Crossing;
use bridge_rayon::{CancelFlag, Task};
use futures::Stream;
use std::future::Future;
use std::sync::Arc;

/// `fut`, with the shared [`IoRuntime`](crate::IoRuntime)'s handle entered around each of
/// its polls, so that tokio resources created or polled inside (timers, sockets, channels,
/// `tokio::spawn`) find a runtime, whose reactor drives their I/O and timers.
/// [`spawn_future`] and [`ThreadPoolExt::spawn_future_task`] wrap their futures in it; wrap
/// a future in it yourself where another entry point polls it with no runtime entered
/// ([`Limit::spawn_future`](crate::Limit::spawn_future), an executor of your own).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// # futures::executor::block_on(async {
/// let limit = bridge::Limit::new(4);
/// let nap = bridge::cpu::io_entered(async {
///     tokio::time::sleep(Duration::from_millis(1)).await;
///     "rested"
/// });
/// assert_eq!(limit.spawn_future(nap).await.await, "rested");
/// # });
/// ```
pub fn io_entered<F: Future>(fut: F) -> impl Future<Output = F::Output> {
    let mut fut = Box::pin(fut);
    std::future::poll_fn(move |cx| {
        let _io = bridge_tokio::__enter_cpu_poll(crate::IoRuntime::global().handle());
        fut.as_mut().poll(cx)
    })
}

/// Runs `fut` on rayon's global pool, one poll per wake-up as a rayon job, with the shared
/// [`IoRuntime`](crate::IoRuntime)'s handle entered during each poll, and returns the
/// [`Task`] that yields its output.
///
/// CPU-heavy async code (a decoder over an async reader, a stream of record batches) runs
/// here instead of on the I/O runtime's workers, and the tokio resources it uses still
/// work: the `IoRuntime`'s reactor drives their I/O and timers. Rayon parallelism inside a
/// poll (`rayon::join`, `par_iter`) works as in any rayon job.
///
/// Polls never overlap; a wake during a poll brings exactly one more poll after it; nothing
/// polls the future after it completed. The pool thread's scheduling is left as it is,
/// unless [`set_yield_after_long_polls`](crate::cpu::set_yield_after_long_polls) asked for
/// yields after long polls and a long time slice. A panic in a poll comes back to whoever takes the
/// result (`.await` and [`wait`](Task::wait) resume it, [`join`](Task::join) gives it as a
/// [`TaskError`](crate::TaskError)). **Dropping the `Task` cancels the future** at its next
/// poll point, and drops it on the pool, even if nothing would wake it again;
/// [`detach`](Task::detach) lets it run to the end. The metrics and the tracing span are
/// those of threadbridge-rayon's `spawn_future`. A waiter on a rayon worker (`run_blocking`
/// of the task, [`wait`](Task::wait), [`join`](Task::join)) runs the future's queued poll
/// itself when no pool thread has taken it (see [`Task`]'s section on waiting on a rayon
/// worker), and a synchronous call made inside a poll stays on the polling thread.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// let task = bridge::cpu::spawn_future(async {
///     tokio::time::sleep(Duration::from_millis(1)).await; // on the IoRuntime's timer
///     bridge::spawn(|| (1..=10u64).product::<u64>()).await
/// });
/// assert_eq!(task.wait(), 3_628_800);
/// ```
pub fn spawn_future<F>(fut: F) -> Task<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    bridge_rayon::spawn_future(io_entered(fut))
}

mod sealed {
    /// threadbridge-rayon's trait is sealed to `rayon::ThreadPool`, so this is too.
    pub trait Sealed {}
    impl Sealed for rayon_core::ThreadPool {}
}

/// [`spawn`](crate::spawn), [`spawn_fifo`](crate::spawn_fifo),
/// [`spawn_cancellable`](crate::spawn_cancellable) and [`spawn_future`] for a pool of your
/// own; [`spawn_future_task`](Self::spawn_future_task) enters the shared
/// [`IoRuntime`](crate::IoRuntime) during each poll, as [`spawn_future`] does.
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
    /// Runs `f` on this pool (LIFO path); see [`spawn`](crate::spawn).
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

    /// Runs `f` on this pool (FIFO path); see [`spawn_fifo`](crate::spawn_fifo).
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

    /// Runs `f` on this pool with a [`CancelFlag`]; see
    /// [`spawn_cancellable`](crate::spawn_cancellable).
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

    /// Runs the future `fut` on this pool, one poll per wake-up as a job of the pool, with
    /// the shared [`IoRuntime`](crate::IoRuntime)'s handle entered during each poll; see
    /// [`spawn_future`]. The pool is shared (`Arc`): the future's wakers, which may fire on
    /// any thread long after this call, queue its polls there and keep it alive.
    ///
    /// # Examples
    ///
    /// ```
    /// use bridge::cpu::ThreadPoolExt;
    /// use std::sync::Arc;
    ///
    /// let pool = Arc::new(rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap());
    /// let task = pool.spawn_future_task(async {
    ///     tokio::task::yield_now().await;
    ///     rayon::current_thread_index()
    /// });
    /// assert_eq!(task.wait(), Some(0));
    /// ```
    fn spawn_future_task<F>(self: &Arc<Self>, fut: F) -> Task<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static;

    /// Drives `stream` on this pool, one poll per wake-up as a job of the pool, with the
    /// shared [`IoRuntime`](crate::IoRuntime)'s handle entered during each poll, and returns
    /// a [`Crossing`] that yields its items on any executor; see
    /// [`stream::spawn_cpu`](crate::stream::spawn_cpu), which does the same on rayon's
    /// global pool. A pool of your own serves where its threads must differ from the global
    /// pool's: fewer of them, or a lower OS priority
    /// ([`lower_thread_priority`](crate::cpu::lower_thread_priority)) so that the I/O
    /// runtime's threads get a CPU at once when they wake.
    ///
    /// # Examples
    ///
    /// ```
    /// use bridge::cpu::ThreadPoolExt;
    /// use futures::StreamExt;
    /// use std::sync::Arc;
    /// use std::time::Duration;
    ///
    /// let pool = Arc::new(rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap());
    /// let ticks = futures::stream::iter(1..=3u64).then(|n| async move {
    ///     tokio::time::sleep(Duration::from_millis(1)).await; // the IoRuntime's timer
    ///     n * n
    /// });
    /// let squares = pool.spawn_stream(ticks, 1);
    /// assert_eq!(bridge::iter_blocking(squares).collect::<Vec<_>>(), [1, 4, 9]);
    /// ```
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
        bridge_rayon::ThreadPoolExt::spawn_task(self, f)
    }

    fn spawn_fifo_task<F, T>(&self, f: F) -> Task<T>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        bridge_rayon::ThreadPoolExt::spawn_fifo_task(self, f)
    }

    fn spawn_cancellable_task<F, T>(&self, f: F) -> Task<T>
    where
        F: FnOnce(CancelFlag<'_>) -> T + Send + 'static,
        T: Send + 'static,
    {
        bridge_rayon::ThreadPoolExt::spawn_cancellable_task(self, f)
    }

    fn spawn_future_task<F>(self: &Arc<Self>, fut: F) -> Task<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        bridge_rayon::ThreadPoolExt::spawn_future_task(self, io_entered(fut))
    }

    fn spawn_stream<S>(self: &Arc<Self>, stream: S, bound: usize) -> Crossing<S::Item>
    where
        S: Stream + Send + 'static,
        S::Item: Send + 'static,
    {
        let (pump, unstarted) =
            bridge_core::stream::__start(stream, bound, bridge_core::stream::__Side::Cpu);
        // Dropping the task (with the crossing) cancels the pump on the pool.
        unstarted.with_producer(self.spawn_future_task(pump))
    }
}
