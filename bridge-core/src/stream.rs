//! The runtime-agnostic half of a stream crossing: the bounded buffer between a stream's
//! producer and its consumer, the pump that polls the stream into it, and [`Crossing`], the
//! consumer's `Stream`.
//!
//! Nothing here spawns: the family's `on_io` (on the I/O runtime) and `on_cpu` (on rayon)
//! start the pump on their side and hand the consumer a [`Crossing`]. The buffer needs only
//! a lock and the wakers of both sides, so the consumer may poll it on any executor, and the
//! crates of both sides share it.
//!
//! # Examples
//!
//! ```
//! use futures::StreamExt;
//!
//! let crossing: bridge::stream::Crossing<u8> = bridge::stream::on_io(futures::stream::iter([1, 2]), 1);
//! assert_eq!(bridge::block_on(crossing.collect::<Vec<_>>()), [1, 2]);
//! ```
//
// Maintainers: the buffer keeps its state under a std `Mutex` and has no atomics, so it is
// not under `crate::sync` (the module is left out of loom builds); the fuzz body
// `bridge_fuzz::stream` checks it against a sequential model instead.

mod buffer;
mod crossing;
mod pump;

pub use crossing::{CaughtCrossing, Crossing};

use buffer::Buffer;
use futures_core::Stream;
use std::fmt;
use std::future::Future;
use std::sync::Arc;

/// Builds a crossing over `stream` without starting its producer: the pump, a future that
/// polls `stream` into a buffer of `bound` items (0: one, only while the consumer waits for
/// it), and the consumer's half, which becomes a [`Crossing`] once the pump has been handed to
/// the side that runs it. The pump's output says whether the stream panicked (its payload goes
/// to the consumer, after the items made before it). Dropping the pump unfinished ends the
/// crossing as lost.
///
/// The family's `stream::on_io` and `stream::on_cpu` are this, with the pump spawned on
/// their side.
///
/// # Examples
///
/// A pump driven by a thread of its own:
///
/// ```
/// use futures::StreamExt;
///
/// let (pump, unstarted) = bridge_core::stream::start(futures::stream::iter([1, 2, 3]), 1);
/// let producer = std::thread::spawn(move || bridge_core::block_on(pump));
/// let crossing = unstarted.with_producer(None);
/// assert_eq!(bridge_core::block_on(crossing.collect::<Vec<_>>()), [1, 2, 3]);
/// assert!(!producer.join().unwrap(), "the stream did not panic");
/// ```
pub fn start<S>(
    stream: S,
    bound: usize,
) -> (
    impl Future<Output = bool> + Send + 'static,
    Unstarted<S::Item>,
)
where
    S: Stream + Send + 'static,
    S::Item: Send + 'static,
{
    let buffer = Arc::new(Buffer::new(bound));
    (
        pump::pump(stream, Arc::clone(&buffer)),
        Unstarted { buffer },
    )
}

/// The consumer's half of a crossing whose pump has not been handed to a side yet (see
/// [`start`]).
///
/// # Examples
///
/// ```
/// use futures::StreamExt;
///
/// let (pump, unstarted) = bridge_core::stream::start(futures::stream::iter([7u8]), 0);
/// let mut crossing = unstarted.with_producer(None).catch_unwind();
/// // The pump is dropped before the stream ended: the crossing ends as lost.
/// drop(pump);
/// let end = bridge_core::block_on(crossing.next()).unwrap();
/// assert!(end.unwrap_err().is_lost());
/// ```
pub struct Unstarted<T> {
    buffer: Arc<Buffer<T>>,
}

impl<T> Unstarted<T> {
    /// The crossing, keeping `producer` (the task running the pump, or `None` when the
    /// caller drives it) until the consumer is dropped: dropping it cancels that task.
    ///
    /// # Examples
    ///
    /// See [`start`].
    pub fn with_producer(self, producer: Option<crate::Task<()>>) -> Crossing<T> {
        Crossing::new(self.buffer, producer)
    }
}

impl<T> fmt::Debug for Unstarted<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Unstarted").finish_non_exhaustive()
    }
}
