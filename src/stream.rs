//! Streams across sides: drive a `Stream` on the I/O runtime (`spawn_io`, feature `tokio`)
//! or on the rayon pool (`spawn_cpu`, feature `rayon`) and consume its items anywhere else
//! through a bounded buffer ([`Crossing`]); or read one from synchronous code
//! (`iter_blocking`, feature `tokio`).
//!
//! A crossing keeps the producer at most `bound` items ahead of the consumer (the producer's
//! stream is not polled while the buffer is full), keeps their order, cancels the producer
//! when the consumer drops it, and carries the producer's panic to the consumer, after the
//! items made before it. The buffer knows no runtime: the consumer may poll it on any
//! executor, and the producer runs on whichever side was asked for.
//!
//! | call | the stream runs | the consumer |
//! | --- | --- | --- |
//! | `spawn_io(stream, bound)` | on the shared `IoRuntime` (feature `tokio`): sockets, object-store bodies | any executor |
//! | `spawn_cpu(stream, bound)` | on the rayon pool, with the `IoRuntime`'s handle entered (feature `rayon`): decoders, record-batch streams | any executor |
//! | `iter_blocking(stream)` (also `bridge::iter_blocking`) | where `run_blocking` would run it (feature `tokio`) | synchronous code, as an `Iterator` |
//!
//! # Examples
//!
//! Bytes read on the I/O side, decoded on the CPU side, summed by synchronous code:
//!
//! ```
//! # #[cfg(all(feature = "tokio", feature = "rayon"))] {
//! use futures::StreamExt;
//!
//! let chunks = futures::stream::iter((0..100u8).map(|i| vec![i; 1024]));
//! let read = bridge::stream::spawn_io(chunks, 4);
//! let decoded = bridge::stream::spawn_cpu(read.map(|chunk| chunk.iter().map(|&b| u64::from(b)).sum::<u64>()), 4);
//! let total: u64 = bridge::iter_blocking(decoded).sum();
//! assert_eq!(total, 1024 * (0..100).sum::<u64>());
//! # }
//! ```

mod buffer;
mod crossing;
#[cfg(feature = "tokio")]
mod iter_blocking;
mod pump;
mod side;

pub use crossing::{CatchUnwind, Crossing};
#[cfg(feature = "tokio")]
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
pub use iter_blocking::{IterBlocking, iter_blocking};

use buffer::Buffer;
use futures::Stream;
use std::future::Future;
use std::sync::Arc;

/// Drives `stream` on the shared [`IoRuntime`](crate::IoRuntime) and returns a [`Crossing`]
/// that yields its items, in order, on any executor.
///
/// The producer starts at once and makes at most `bound` items ahead of the consumer: while
/// `bound` items wait in the buffer, the stream is not polled. With `bound` 0 the stream is
/// polled only while the consumer waits for an item, and makes that one item (a rendezvous:
/// nothing is made before it is asked for).
///
/// Dropping the crossing cancels the producer: its stream is dropped on the I/O runtime at
/// once if it waits (for room, or for a wake-up that never comes), or when its current
/// `poll_next` returns. A panic in the stream's `poll_next` resumes in the consumer's poll,
/// after the items made before it ([`Crossing::catch_unwind`] gives it as an `Err` item);
/// the I/O runtime never sees it.
///
/// Use it for streams whose resources live on the I/O runtime (a socket, a connection
/// pool's response body), read from a CPU-side task, a current-thread runtime's task or
/// synchronous code ([`iter_blocking`]).
///
/// # Panics
///
/// Only if the shared I/O runtime cannot be built (as [`IoRuntime::global`](crate::IoRuntime::global)
/// panics); the stream's own panics go to the consumer.
///
/// # Examples
///
/// ```
/// use futures::StreamExt;
/// use std::time::Duration;
///
/// let ticks = futures::stream::unfold(0u32, |n| async move {
///     tokio::time::sleep(Duration::from_millis(1)).await; // a timer of the I/O runtime
///     (n < 5).then_some((n, n + 1))
/// });
/// // Consumed on a runtime-free executor: the timers run on the I/O side.
/// let got: Vec<u32> = bridge::block_on(bridge::stream::spawn_io(ticks, 2).collect());
/// assert_eq!(got, [0, 1, 2, 3, 4]);
/// ```
#[cfg(feature = "tokio")]
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
pub fn spawn_io<S>(stream: S, bound: usize) -> Crossing<S::Item>
where
    S: Stream + Send + 'static,
    S::Item: Send + 'static,
{
    let (pump, buffer) = start(stream, bound);
    Crossing::new(buffer, side::io(pump))
}

/// Drives `stream` on the rayon pool, one poll per wake-up as a rayon job, and returns a
/// [`Crossing`] that yields its items, in order, on any executor.
///
/// For CPU-heavy streams (decoders, compression, record batches): their polls take a rayon
/// thread, not an I/O worker. With feature `tokio` the shared
/// `IoRuntime`'s handle is entered during each poll, so tokio timers and
/// sockets inside the stream work, driven by the I/O runtime.
///
/// Bound, order, cancellation and panics as for `spawn_io`: at most `bound` items made
/// ahead of the consumer (`bound` 0: one, only while the consumer waits for it); dropping the
/// crossing drops the stream on the pool; the stream's panic resumes in the consumer after
/// its items, and rayon never sees it.
///
/// # Panics
///
/// Never here; the stream's panics go to the consumer.
///
/// # Examples
///
/// ```
/// use futures::StreamExt;
///
/// let blocks = futures::stream::iter(0..4u64).map(|i| (0..100_000u64).map(|x| x ^ i).sum::<u64>());
/// let mut sums = bridge::stream::spawn_cpu(blocks, 1);
/// let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
/// let first = rt.block_on(sums.next());
/// assert_eq!(first, Some((0..100_000u64).sum()));
/// ```
#[cfg(feature = "rayon")]
#[cfg_attr(docsrs, doc(cfg(feature = "rayon")))]
pub fn spawn_cpu<S>(stream: S, bound: usize) -> Crossing<S::Item>
where
    S: Stream + Send + 'static,
    S::Item: Send + 'static,
{
    let (pump, buffer) = start(stream, bound);
    Crossing::new(buffer, side::cpu(pump))
}

fn start<S>(stream: S, bound: usize) -> (impl Future<Output = ()> + Send, Arc<Buffer<S::Item>>)
where
    S: Stream + Send + 'static,
    S::Item: Send + 'static,
{
    let buffer = Arc::new(Buffer::new(bound));
    (pump::pump(stream, Arc::clone(&buffer)), buffer)
}

/// A crossing whose producer the caller polls itself, for the fuzz body of the buffer
/// (`bridge_fuzz::stream`), which drives both sides step by step. Not part of the API.
#[doc(hidden)]
pub fn __manual<S>(stream: S, bound: usize) -> (impl Future<Output = ()> + Send, Crossing<S::Item>)
where
    S: Stream + Send + 'static,
    S::Item: Send + 'static,
{
    let (pump, buffer) = start(stream, bound);
    (pump, Crossing::new(buffer, side::Producer::Manual))
}
