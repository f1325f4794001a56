//! `LocalSet`: tokio's `LocalSet`, marked so that the bridge knows where it is.

use std::cell::Cell;
use std::fmt;
use std::future::Future;
use std::pin::{Pin, pin};
use std::task::{Context, Poll};

thread_local! {
    /// How many marked `LocalSet`s are polling on this thread right now.
    static DEPTH: Cell<usize> = const { Cell::new(0) };
}

pub(crate) fn is_marked() -> bool {
    DEPTH.try_with(Cell::get).unwrap_or(0) > 0
}

/// Raises the mark for the duration of a poll, and lowers it even if the poll panics.
struct Mark;

impl Mark {
    fn enter() -> Self {
        DEPTH.with(|depth| depth.set(depth.get() + 1));
        Mark
    }
}

impl Drop for Mark {
    fn drop(&mut self) {
        let _ = DEPTH.try_with(|depth| depth.set(depth.get() - 1));
    }
}

/// A `tokio::task::LocalSet` that tells the bridge it is running.
///
/// Inside a `LocalSet` on a multi-thread runtime, `block_in_place` panics, yet tokio's public
/// API cannot tell that place from an ordinary `block_on` body. Without this wrapper
/// [`run_blocking`](crate::run_blocking) finds out by trying `block_in_place` and catching
/// its refusal, which works (silently) unless the program is built with `panic = "abort"`.
/// Run local tasks through this type instead and the bridge knows, with no probing: every
/// task of the set, and the future given to [`run_until`](Self::run_until) or
/// [`block_on`](Self::block_on), is polled with the mark raised.
///
/// # Examples
///
/// ```
/// let rt = tokio::runtime::Runtime::new().unwrap();
/// let local = bridge_tokio::LocalSet::new();
/// let value = local.block_on(&rt, async {
///     let task = tokio::task::spawn_local(async {
///         assert_eq!(bridge_tokio::route(), bridge_tokio::Route::Handoff);
///         bridge_tokio::run_blocking(async { 40 + 2 })
///     });
///     task.await.unwrap()
/// });
/// assert_eq!(value, 42);
/// ```
#[derive(Default)]
pub struct LocalSet {
    inner: tokio::task::LocalSet,
}

impl LocalSet {
    /// An empty set.
    ///
    /// # Examples
    ///
    /// ```
    /// let local = bridge_tokio::LocalSet::new();
    /// # drop(local);
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// Spawns a `!Send` task on the set, as `tokio::task::LocalSet::spawn_local` does.
    ///
    /// # Examples
    ///
    /// ```
    /// let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    /// let local = bridge_tokio::LocalSet::new();
    /// let task = local.spawn_local(async { std::rc::Rc::new(5) });
    /// assert_eq!(*local.block_on(&rt, task).unwrap(), 5);
    /// ```
    #[track_caller]
    pub fn spawn_local<F>(&self, future: F) -> tokio::task::JoinHandle<F::Output>
    where
        F: Future + 'static,
        F::Output: 'static,
    {
        self.inner.spawn_local(future)
    }

    /// Runs `future` and the set's tasks until `future` completes.
    ///
    /// # Examples
    ///
    /// ```
    /// # let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    /// # rt.block_on(async {
    /// let local = bridge_tokio::LocalSet::new();
    /// let route = local.run_until(async { bridge_tokio::route() }).await;
    /// assert_eq!(route, bridge_tokio::Route::Handoff);
    /// # });
    /// ```
    pub async fn run_until<F: Future>(&self, future: F) -> F::Output {
        Marked(pin!(self.inner.run_until(future))).await
    }

    /// Runs `future` and the set's tasks on `rt` until `future` completes.
    ///
    /// # Panics
    ///
    /// As `tokio::runtime::Runtime::block_on`: if called from inside a runtime.
    ///
    /// # Examples
    ///
    /// ```
    /// let rt = tokio::runtime::Runtime::new().unwrap();
    /// let local = bridge_tokio::LocalSet::new();
    /// assert_eq!(local.block_on(&rt, async { 7 }), 7);
    /// ```
    #[track_caller]
    pub fn block_on<F: Future>(&self, rt: &tokio::runtime::Runtime, future: F) -> F::Output {
        rt.block_on(self.run_until(future))
    }
}

impl fmt::Debug for LocalSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalSet").finish_non_exhaustive()
    }
}

/// Polls the inner future with the mark raised.
struct Marked<F>(F);

impl<F: Future + Unpin> Future for Marked<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let _mark = Mark::enter();
        Pin::new(&mut self.0).poll(cx)
    }
}
