//! Streams driven on rayon: [`on_cpu`] (the global pool) and
//! [`ThreadPoolExt::spawn_stream`](crate::ThreadPoolExt::spawn_stream) (a pool of yours).

use bridge_core::stream::Crossing;
use bridge_core::stream::{__Side, __start};
use futures_core::Stream;

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
    let (pump, unstarted) = __start(stream, bound, __Side::Cpu);
    unstarted.with_producer(Some(crate::spawn_future(pump)))
}
