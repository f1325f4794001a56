//! The streams between IoStore and the wrapped store: [`Deferred`], which makes the wrapped
//! store's stream at its first poll (so on the I/O runtime, where the crossing's producer
//! polls it), [`ended_by_errors`], which turns the crossing's panic into an error item, and
//! [`Empty`], the placeholder body.

use crate::error::stream_ended;
use bridge_tokio::stream::{CaughtCrossing, Crossing};
use futures_core::Stream;
use futures_core::stream::BoxStream;
use std::pin::Pin;
use std::task::{Context, Poll};

/// A stream made by `make` at its first poll, then polled through.
pub(crate) struct Deferred<T> {
    make: Option<Box<dyn FnOnce() -> BoxStream<'static, T> + Send>>,
    stream: Option<BoxStream<'static, T>>,
    method: &'static str,
}

impl<T> Deferred<T> {
    pub(crate) fn new(
        method: &'static str,
        make: impl FnOnce() -> BoxStream<'static, T> + Send + 'static,
    ) -> Self {
        Self {
            make: Some(Box::new(make)),
            stream: None,
            method,
        }
    }
}

impl<T> Stream for Deferred<T> {
    type Item = T;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let this = self.get_mut();
        if let Some(make) = this.make.take() {
            this.stream = Some(make());
        }
        match &mut this.stream {
            Some(stream) => stream.as_mut().poll_next(cx),
            // Only if `make` panicked, which ended the stream (the crossing polls no more).
            None => unreachable!(
                "IoStore: {} polled after its stream failed to start",
                this.method
            ),
        }
    }
}

/// The items of `crossing`; its producer's panic, or loss, as a last `Generic` error item
/// instead of a panic in the consumer.
pub(crate) fn ended_by_errors<T: Send + 'static>(
    method: &'static str,
    crossing: Crossing<object_store::Result<T>>,
) -> EndedByErrors<T> {
    EndedByErrors {
        inner: crossing.catch_unwind(),
        method,
    }
}

/// See [`ended_by_errors`].
pub(crate) struct EndedByErrors<T> {
    inner: CaughtCrossing<object_store::Result<T>>,
    method: &'static str,
}

impl<T> Stream for EndedByErrors<T> {
    type Item = object_store::Result<T>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        match Pin::new(&mut this.inner).poll_next(cx) {
            Poll::Ready(Some(Ok(item))) => Poll::Ready(Some(item)),
            Poll::Ready(Some(Err(payload))) => {
                Poll::Ready(Some(Err(stream_ended(this.method, &payload))))
            }
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// A stream with no items: the body a `GetResult` holds while its own is moved to the I/O
/// side.
pub(crate) struct Empty;

impl Stream for Empty {
    type Item = object_store::Result<bytes::Bytes>;

    fn poll_next(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        Poll::Ready(None)
    }
}
