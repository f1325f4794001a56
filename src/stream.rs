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
//! | `spawn_cpu(stream, bound)` (on your pool: `pool.spawn_stream(stream, bound)`, `bridge::cpu::ThreadPoolExt`) | on the rayon pool, with the `IoRuntime`'s handle entered (feature `rayon`): decoders, record-batch streams | any executor |
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

#[cfg(feature = "tokio")]
mod iter_blocking;

#[doc(inline)]
pub use bridge_core::stream::{CatchUnwind, Crossing};
#[cfg(feature = "tokio")]
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
#[doc(inline)]
pub use bridge_tokio::stream::spawn_io;
#[cfg(feature = "tokio")]
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
pub use iter_blocking::{IterBlocking, iter_blocking};

use futures::Stream;
use std::future::Future;

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
/// The pool thread's scheduling is left as it is, unless
/// [`cpu::set_yield_after_long_polls`](crate::cpu::set_yield_after_long_polls) asked for
/// yields after items that took long to make, and a long time slice.
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
    let (pump, unstarted) =
        bridge_core::stream::__start(stream, bound, bridge_core::stream::__Side::Cpu);
    // One poll per wake-up as a rayon job, with the shared `IoRuntime`'s handle entered
    // during each poll (feature `tokio`); dropping the task cancels the pump.
    unstarted.with_producer(crate::cpu::spawn_future(pump))
}

/// A crossing whose producer the caller polls itself, for the fuzz body of the buffer
/// (`bridge_fuzz::stream`), which drives both sides step by step. Not part of the API.
#[doc(hidden)]
pub fn __manual<S>(stream: S, bound: usize) -> (impl Future<Output = ()> + Send, Crossing<S::Item>)
where
    S: Stream + Send + 'static,
    S::Item: Send + 'static,
{
    let (pump, unstarted) =
        bridge_core::stream::__start(stream, bound, bridge_core::stream::__Side::Io);
    (pump, unstarted.with_producer(()))
}
