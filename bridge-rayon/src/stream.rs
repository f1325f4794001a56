//! Streams driven on rayon: [`on_cpu`] (the global pool) and
//! [`ThreadPoolExt::spawn_stream`](crate::ThreadPoolExt::spawn_stream) (a pool of yours).

use bridge_core::stream::Crossing;
use futures_core::Stream;
use std::pin::Pin;
use std::task::{Context, Poll};

/// Drives `stream` on rayon's global pool, one poll per wake-up as a rayon job, and returns
/// a [`Crossing`] that yields its items, in order, on any executor.
///
/// For CPU-heavy streams (decoders, compression, record batches): their polls take a rayon
/// thread, not an I/O worker. With feature `tokio` the shared I/O runtime is entered during
/// each poll, so tokio timers and sockets inside the stream work, driven by that runtime.
///
/// At most `bound` items are made ahead of the consumer (`bound` 0: one, only while the
/// consumer waits for it); dropping the crossing drops the stream on the pool; the stream's
/// panic resumes in the consumer after its items, and rayon never sees it. A consumer on a
/// rayon worker that finds nothing buffered runs the stream's queued poll itself, so a pool
/// of one thread never waits for itself.
///
/// # Examples
///
/// ```
/// use futures::StreamExt;
///
/// let blocks = futures::stream::iter(0..4u64).map(|i| (0..100_000u64).map(|x| x ^ i).sum::<u64>());
/// let mut sums = bridge::stream::on_cpu(blocks, 1);
/// let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
/// assert_eq!(rt.block_on(sums.next()), Some((0..100_000u64).sum()));
/// ```
pub fn on_cpu<S>(stream: S, bound: usize) -> Crossing<S::Item>
where
    S: Stream + Send + 'static,
    S::Item: Send + 'static,
{
    let (pump, unstarted) = bridge_core::stream::start(Courteous(Box::pin(stream)), bound);
    unstarted.with_producer(Some(crate::spawn_future(ending_as_it_ended(pump))))
}

/// The payload of the panic a pump on the pool ends with when its stream panicked (the
/// stream's own payload went to the consumer).
const PANICKED: &str = "bridge::stream: the stream panicked (its payload went to the consumer)";

/// The pump as the pool's future task: a stream that panicked ends it as a panicking poll,
/// so that the pool's metrics count the panic; a resumed panic reaches no panic hook.
pub(crate) async fn ending_as_it_ended(pump: impl Future<Output = bool>) {
    if pump.await {
        std::panic::resume_unwind(Box::new(PANICKED));
    }
}

/// A stream polled on the pool: with the courtesy on (see `courtesy.rs`), a long poll of it
/// (a batch decoded) is followed by a yield of its thread's CPU.
pub(crate) struct Courteous<S>(pub(crate) Pin<Box<S>>);

impl<S: Stream> Stream for Courteous<S> {
    type Item = S::Item;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<S::Item>> {
        let polled = self.0.as_mut().poll_next(cx);
        crate::courtesy::after_poll();
        polled
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.0.size_hint()
    }
}
