//! The producer's side of a crossing: a future that polls the stream into the buffer while
//! there is room, and ends when the stream ends, panics, or the consumer is gone.

use super::buffer::{Buffer, End, Reserve};
use futures_core::Stream;
use std::future::{Future, poll_fn};
use std::panic::{self, AssertUnwindSafe};
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::task::{Context, Poll};

/// Items one poll of the pump may move before it yields to its executor, as tokio's
/// cooperative budget makes a task do: a stream that is always ready, beside a consumer that
/// keeps making room, would otherwise hold its thread for good.
const ITEMS_PER_POLL: usize = 64;

/// The future that drives `stream` into `buffer`. It owns the stream and drops it when it
/// returns (the stream ended or panicked, or the consumer is gone) or is dropped. Its output:
/// whether the stream panicked (its payload went to the consumer).
pub(crate) fn pump<S>(stream: S, buffer: Arc<Buffer<S::Item>>) -> impl Future<Output = bool> + Send
where
    S: Stream + Send + 'static,
    S::Item: Send + 'static,
{
    // Made outside the async block, so that a pump dropped before its first poll has it too:
    // a pump dropped before its stream ended (its executor shut down) tells the consumer,
    // which would otherwise wait for ever.
    let lost = Lost(buffer);
    async move {
        let lost = lost;
        let mut stream = pin!(stream);
        poll_fn(|cx| poll_pump(stream.as_mut(), &lost.0, cx)).await
    }
}

struct Lost<T>(Arc<Buffer<T>>);

impl<T> Drop for Lost<T> {
    fn drop(&mut self) {
        // Changes nothing once the stream has ended or the consumer is gone.
        self.0.close(End::Lost);
    }
}

fn poll_pump<S: Stream>(
    mut stream: Pin<&mut S>,
    buffer: &Buffer<S::Item>,
    cx: &mut Context<'_>,
) -> Poll<bool> {
    for _ in 0..ITEMS_PER_POLL {
        match buffer.reserve(cx.waker()) {
            Reserve::Room => {}
            Reserve::Full => return Poll::Pending,
            Reserve::Gone => return Poll::Ready(false),
        }
        // The stream is not used again after a panic: the pump returns and drops it.
        let polled = panic::catch_unwind(AssertUnwindSafe(|| stream.as_mut().poll_next(cx)));
        match polled {
            Ok(Poll::Ready(Some(item))) => {
                if let Err(item) = buffer.push(item) {
                    // The consumer left while the item was made: dropped here, where it was.
                    drop(item);
                    return Poll::Ready(false);
                }
            }
            Ok(Poll::Ready(None)) => {
                buffer.close(End::Finished);
                return Poll::Ready(false);
            }
            Ok(Poll::Pending) => {
                return if buffer.park(cx.waker()) {
                    Poll::Pending
                } else {
                    Poll::Ready(false)
                };
            }
            Err(payload) => {
                buffer.close(End::Panicked(Some(payload)));
                return Poll::Ready(true);
            }
        }
    }
    cx.waker().wake_by_ref();
    Poll::Pending
}
