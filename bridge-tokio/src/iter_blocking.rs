//! [`IterBlocking`]: synchronous code iterates over a stream, each item taken by
//! `run_blocking`'s route from wherever the iterator is advanced.

use bridge_core::Error;
use futures_core::Stream;
use std::fmt;
use std::future::poll_fn;
use std::iter::FusedIterator;
use std::pin::Pin;

/// Synchronous code's `Iterator` over a `Stream`, from any context: each
/// [`next`](Iterator::next) takes one item as
/// [`bridge::run_blocking`](crate::run_blocking) would run `stream.next()` there.
///
/// The route is chosen for each item from the thread that asks for it (a plain thread or a
/// rayon worker: polled here, the I/O runtime's workers driving its I/O while it waits;
/// a multi-thread runtime's task: polled here, leaving the scheduler; a current-thread
/// runtime, a `#[tokio::main]` body, a `LocalSet`: polled on a handoff worker while this
/// thread waits), so the iterator may move between threads and contexts as it goes. Its
/// polls never spend the cooperative budget of a task that the iterator sits in, so no
/// number of items makes it hang.
///
/// Each item is one `run_blocking` call, so on the handoff route each costs a round trip to
/// a handoff worker. The iterator never reads ahead of what it is asked for; for a stream
/// of many small items read on such a thread, batch them in the stream
/// (`StreamExt::ready_chunks`), or read them through a crossing
/// ([`stream::on_io`](crate::stream::on_io)) whose producer runs ahead by its bound.
///
/// The stream may borrow (a client, a buffer), as `run_blocking`'s future may; it needs to
/// be `Send` (a handoff may poll it on another thread), and so do its items. It is kept in a
/// `Box`, so any stream will do, `Unpin` or not.
///
/// # Panics
///
/// `next` resumes the stream's panic; the iterator is then done and yields `None`. It panics
/// as [`run_blocking`](crate::run_blocking) does when the runtime driving the stream shuts
/// down first or no handoff worker can be started; [`try_next`](Self::try_next) returns
/// those as errors instead.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// let ticks = futures::stream::unfold(0, |n| async move {
///     tokio::time::sleep(Duration::from_millis(1)).await;
///     (n < 3).then_some((n, n + 1))
/// });
/// // Synchronous code, here inside a current-thread runtime, where tokio would refuse to block.
/// let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
/// let got: Vec<u32> = rt.block_on(async { bridge::iter_blocking(ticks).collect() });
/// assert_eq!(got, [0, 1, 2]);
/// ```
#[must_use = "iterators are lazy and do nothing unless consumed"]
pub struct IterBlocking<S> {
    stream: Pin<Box<S>>,
    done: bool,
}

/// An `Iterator` over `stream` for synchronous code in any context; see [`IterBlocking`].
///
/// # Panics
///
/// Not here; the iterator's `next` resumes the stream's panics (see [`IterBlocking`]).
///
/// # Examples
///
/// ```
/// // Borrowing: the stream reads from the caller's data, no 'static needed.
/// let words = vec!["a".to_string(), "bc".to_string()];
/// let lens = futures::stream::iter(words.iter().map(String::len));
/// let total: usize = bridge::iter_blocking(lens).sum();
/// assert_eq!(total, 3);
/// ```
pub fn iter_blocking<S>(stream: S) -> IterBlocking<S>
where
    S: Stream + Send,
    S::Item: Send,
{
    IterBlocking {
        stream: Box::pin(stream),
        done: false,
    }
}

impl<S> IterBlocking<S>
where
    S: Stream + Send,
    S::Item: Send,
{
    /// The next item with a typed error instead of a panic, as
    /// [`try_run_blocking`](crate::try_run_blocking) gives it: `Ok(None)` at the end (and
    /// after an error: the iterator is then done).
    ///
    /// # Errors
    ///
    /// The stream's panic ([`Error::is_panic`]); the runtime driving the stream shut down
    /// first ([`Error::is_lost`]); no handoff worker could be started.
    ///
    /// # Examples
    ///
    /// ```
    /// use futures::StreamExt;
    ///
    /// let bad = futures::stream::iter([1]).chain(futures::stream::poll_fn(|_| -> std::task::Poll<Option<i32>> {
    ///     panic!("torn page")
    /// }));
    /// let mut items = bridge::iter_blocking(bad);
    /// assert_eq!(items.try_next().unwrap(), Some(1));
    /// assert!(items.try_next().unwrap_err().is_panic());
    /// assert_eq!(items.try_next().unwrap(), None);
    /// ```
    pub fn try_next(&mut self) -> Result<Option<S::Item>, Error> {
        if self.done {
            return Ok(None);
        }
        // Done until this item is known not to be the end: a panic leaves it done.
        self.done = true;
        let stream = &mut self.stream;
        let next = crate::run::try_run_blocking(poll_fn(|cx| stream.as_mut().poll_next(cx)))?;
        self.done = next.is_none();
        Ok(next)
    }

    /// The stream, to be read on with `.await` (or by another `iter_blocking`).
    ///
    /// # Examples
    ///
    /// ```
    /// use futures::StreamExt;
    ///
    /// let mut items = bridge::iter_blocking(futures::stream::iter([1, 2]));
    /// assert_eq!(items.next(), Some(1));
    /// let rest: Vec<i32> = bridge::block_on(items.into_inner().collect());
    /// assert_eq!(rest, [2]);
    /// ```
    pub fn into_inner(self) -> Pin<Box<S>> {
        self.stream
    }
}

impl<S> Iterator for IterBlocking<S>
where
    S: Stream + Send,
    S::Item: Send,
{
    type Item = S::Item;

    #[track_caller]
    fn next(&mut self) -> Option<S::Item> {
        if self.done {
            return None;
        }
        self.done = true;
        let stream = &mut self.stream;
        let next = crate::run::run_blocking(poll_fn(|cx| stream.as_mut().poll_next(cx)));
        self.done = next.is_none();
        next
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        if self.done {
            (0, Some(0))
        } else {
            self.stream.size_hint()
        }
    }
}

impl<S> FusedIterator for IterBlocking<S>
where
    S: Stream + Send,
    S::Item: Send,
{
}

impl<S> fmt::Debug for IterBlocking<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IterBlocking")
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}
