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

/// The side a crossing's pump runs on, which decides whether it yields after long items.
/// Used by bridge-rayon and bridge-tokio.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum __Side {
    /// The I/O side: the pump never yields (a long poll there is the caller's to split).
    Io,
    /// The CPU side: the pump yields its thread's CPU after each item whose poll ran long
    /// (see `__courtesy`).
    Cpu,
}

/// Builds a crossing over `stream` without starting its producer: the pump (the future that
/// polls `stream` into the buffer, for `side`) and the consumer's half, which becomes a
/// [`Crossing`] once the pump has been given to that side. Used by bridge-rayon
/// (`on_cpu`), bridge-tokio (`on_io`) and the fuzz body, which polls the pump itself.
#[doc(hidden)]
pub fn __start<S>(
    stream: S,
    bound: usize,
    side: __Side,
) -> (
    impl Future<Output = ()> + Send + 'static,
    __Unstarted<S::Item>,
)
where
    S: Stream + Send + 'static,
    S::Item: Send + 'static,
{
    let buffer = Arc::new(Buffer::new(bound));
    (
        pump::pump(stream, Arc::clone(&buffer), side == __Side::Cpu),
        __Unstarted { buffer },
    )
}

/// The consumer's half of a crossing whose pump has not been given to a side yet (see
/// [`__start`]). Used by bridge-rayon and bridge-tokio.
#[doc(hidden)]
pub struct __Unstarted<T> {
    buffer: Arc<Buffer<T>>,
}

impl<T> __Unstarted<T> {
    /// The crossing, keeping `producer` (the task running the pump, or `None` when the
    /// caller polls it) until the consumer is dropped: dropping it cancels that task.
    pub fn with_producer(self, producer: Option<crate::Task<()>>) -> Crossing<T> {
        Crossing::new(self.buffer, producer)
    }
}

impl<T> fmt::Debug for __Unstarted<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Unstarted").finish_non_exhaustive()
    }
}
