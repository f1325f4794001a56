//! The consumer's side of a crossing: [`Crossing`], a `Stream` of the items that the
//! producer's stream yields on the other side, and [`CaughtCrossing`], the same with the
//! producer's panic as an item.

use super::buffer::{Buffer, Next};
use futures_core::Stream;
use futures_core::stream::FusedStream;
use std::fmt;
use std::panic;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

/// A stream driven on another side of the process, as the functions of
/// `bridge::stream` return it (`on_io`, `on_cpu`): it yields the producer's items
/// in their order, at most `bound` of them made ahead of this consumer.
///
/// - It works on any executor (tokio of either flavor, `futures::executor`,
///   [`bridge::block_on`](crate::block_on), async-executor ...): it needs nothing but the
///   waker of the task that polls it.
/// - A panic in the producer's stream resumes in this consumer's `poll_next`, once the items
///   made before it have been taken; [`catch_unwind`](Self::catch_unwind) gives it as an
///   `Err` item instead. After the panic, or the end, the stream is terminated
///   ([`FusedStream`]) and yields `None`.
/// - Dropping it cancels the producer: its stream is dropped on its side at once if it is
///   waiting (for room, or for its own wake-up, even one that never comes), or as soon as
///   its current `poll_next` returns. Items still buffered are dropped here.
///
/// Each item made happens-before the poll that yields it.
///
/// # Examples
///
/// ```
/// use futures::StreamExt;
///
/// let numbers = futures::stream::iter(1..=3);
/// let mut crossing: bridge::stream::Crossing<u32> = bridge::stream::on_io(numbers, 2);
/// assert_eq!(bridge::block_on(crossing.next()), Some(1));
/// assert_eq!(bridge::block_on(crossing.collect::<Vec<_>>()), [2, 3]);
/// ```
#[must_use = "a crossing does nothing useful unless polled; dropping it cancels the producer"]
pub struct Crossing<T> {
    buffer: Arc<Buffer<T>>,
    terminated: bool,
    // Dropped after the buffer's cancel (in `Drop`): it cancels the producer's task too.
    producer: Producer,
}

/// The task running the pump (`None` when the caller polls the pump itself, as the fuzz
/// body does), kept by the consumer and dropped with it, which cancels the pump on its side
/// (the buffer's cancel, which wakes the pump, stops it in any case).
pub(crate) type Producer = Option<crate::Task<()>>;

impl<T> Crossing<T> {
    pub(crate) fn new(buffer: Arc<Buffer<T>>, producer: Producer) -> Self {
        Self {
            buffer,
            terminated: false,
            producer,
        }
    }

    /// The same stream with the producer's panic as its last item, an `Err` with the
    /// [`Error`](crate::Error) that carries it, instead of a panic in this poll.
    ///
    /// The items are `Ok`; after an `Err` the stream ends. A producer that was dropped
    /// before its stream ended (its executor shut down) gives an `Err` that
    /// [`is_lost`](crate::Error::is_lost); the plain crossing panics with its message.
    ///
    /// # Examples
    ///
    /// ```
    /// use futures::StreamExt;
    ///
    /// let items = futures::stream::iter([1, 2]).chain(futures::stream::poll_fn(|_| -> std::task::Poll<Option<i32>> {
    ///     panic!("corrupt block")
    /// }));
    /// let mut results = bridge::stream::on_io(items, 8).catch_unwind();
    /// assert_eq!(bridge::block_on(results.next()).unwrap().unwrap(), 1);
    /// assert_eq!(bridge::block_on(results.next()).unwrap().unwrap(), 2);
    /// let err = bridge::block_on(results.next()).unwrap().unwrap_err();
    /// assert_eq!(err.into_panic().downcast_ref::<&str>(), Some(&"corrupt block"));
    /// assert!(bridge::block_on(results.next()).is_none());
    /// ```
    pub fn catch_unwind(self) -> CaughtCrossing<T> {
        CaughtCrossing { inner: self }
    }

    /// The bound given at the start: how many items the producer may make ahead of this
    /// consumer (0: one, and only while this consumer waits for it).
    ///
    /// # Examples
    ///
    /// ```
    /// let crossing = bridge::stream::on_io(futures::stream::iter([1u8]), 8);
    /// assert_eq!(crossing.bound(), 8);
    /// ```
    pub fn bound(&self) -> usize {
        self.buffer.snapshot().1
    }

    fn poll_result(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<T, crate::Error>>> {
        if self.terminated {
            return Poll::Ready(None);
        }
        let next = match self.buffer.poll_next(cx.waker()) {
            Poll::Ready(next) => next,
            // Nothing buffered: a producer whose work may run here (a rayon worker waiting
            // for its own pool) runs it, and the buffer is looked at again.
            Poll::Pending if self.producer.as_ref().is_some_and(|p| p.help(cx.waker())) => {
                match self.buffer.poll_next(cx.waker()) {
                    Poll::Ready(next) => next,
                    Poll::Pending => return Poll::Pending,
                }
            }
            Poll::Pending => return Poll::Pending,
        };
        Poll::Ready(match next {
            Next::Item(item) => Some(Ok(item)),
            Next::Finished => {
                self.terminated = true;
                None
            }
            Next::Panicked(payload) => {
                self.terminated = true;
                Some(Err(crate::Error::panicked(payload)))
            }
            Next::Lost => {
                self.terminated = true;
                Some(Err(crate::Error::lost()))
            }
        })
    }
}

impl<T> Drop for Crossing<T> {
    fn drop(&mut self) {
        self.buffer.cancel();
    }
}

impl<T> Stream for Crossing<T> {
    type Item = T;

    /// The next item; resumes the producer's panic once its items have been taken.
    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        match self.get_mut().poll_result(cx) {
            Poll::Ready(Some(Ok(item))) => Poll::Ready(Some(item)),
            // Resumed, not raised: the panic hook saw the producer's panic where it happened,
            // and a lost producer is no panic of this thread.
            Poll::Ready(Some(Err(err))) => match err.try_into_panic() {
                Ok(payload) => panic::resume_unwind(payload),
                Err(err) => panic::resume_unwind(Box::new(format!("bridge::stream: {err}"))),
            },
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<T> FusedStream for Crossing<T> {
    fn is_terminated(&self) -> bool {
        self.terminated
    }
}

impl<T> fmt::Debug for Crossing<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (buffered, bound, stream) = self.buffer.snapshot();
        f.debug_struct("Crossing")
            .field("bound", &bound)
            .field("buffered", &buffered)
            .field("stream", &stream)
            .field("terminated", &self.terminated)
            .finish()
    }
}

/// A [`Crossing`] whose producer's panic is an `Err` item, from
/// [`Crossing::catch_unwind`]. Dropping it cancels the producer, as dropping the crossing
/// does.
///
/// # Examples
///
/// ```
/// use futures::StreamExt;
///
/// let results = bridge::stream::on_cpu(futures::stream::iter([7]), 1).catch_unwind();
/// let all: Vec<_> = bridge::block_on(results.collect());
/// assert!(matches!(all[..], [Ok(7)]));
/// ```
#[must_use = "a crossing does nothing useful unless polled; dropping it cancels the producer"]
pub struct CaughtCrossing<T> {
    inner: Crossing<T>,
}

impl<T> Stream for CaughtCrossing<T> {
    type Item = Result<T, crate::Error>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.get_mut().inner.poll_result(cx)
    }
}

impl<T> FusedStream for CaughtCrossing<T> {
    fn is_terminated(&self) -> bool {
        self.inner.terminated
    }
}

impl<T> fmt::Debug for CaughtCrossing<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("CaughtCrossing").field(&self.inner).finish()
    }
}
