//! Streams driven on the I/O runtime: [`on_io`] (the shared [`IoRuntime`]) and
//! [`IoRuntime::spawn_stream`] (a given one) poll a `Stream` as a task there and hand its
//! items to a consumer anywhere else through a bounded buffer, a [`Crossing`].
//!
//! The crossing keeps the producer at most `bound` items ahead of the consumer, keeps their
//! order, cancels the producer when the consumer drops it, and carries the producer's panic
//! to the consumer after the items made before it. Its consumer works on any executor.
//!
//! # Examples
//!
//! ```
//! use futures::StreamExt;
//!
//! let io = bridge::rt::IoRuntime::new(1).unwrap();
//! let squares = io.spawn_stream(futures::stream::iter(1..=3u32).map(|n| n * n), 2);
//! assert_eq!(bridge::block_on(squares.collect::<Vec<_>>()), [1, 4, 9]);
//! ```

pub use bridge_core::stream::{CaughtCrossing, Crossing};

use crate::io_runtime::IoRuntime;
use futures_core::Stream;

/// Drives `stream` on the shared [`IoRuntime`] and returns a [`Crossing`]
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
/// synchronous code (`bridge::iter_blocking`). [`IoRuntime::spawn_stream`] does the same on
/// an I/O runtime of your own.
///
/// # Panics
///
/// Only if the shared I/O runtime cannot be built (as [`IoRuntime::global`] panics); the
/// stream's own panics go to the consumer.
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
/// let got: Vec<u32> = bridge::block_on(bridge::stream::on_io(ticks, 2).collect());
/// assert_eq!(got, [0, 1, 2, 3, 4]);
/// ```
#[track_caller]
pub fn on_io<S>(stream: S, bound: usize) -> Crossing<S::Item>
where
    S: Stream + Send + 'static,
    S::Item: Send + 'static,
{
    IoRuntime::global().spawn_stream(stream, bound)
}

impl IoRuntime {
    /// Drives `stream` as a task of this runtime and returns a [`Crossing`] that yields its
    /// items, in order, on any executor: [`on_io`] on this runtime instead of the shared
    /// one, with the same bound, cancellation and panics.
    ///
    /// If this runtime has shut down (or shuts down before the stream ends), the stream is
    /// dropped and the crossing's consumer panics with a message that says so, after the
    /// items made before it ([`Crossing::catch_unwind`] gives it as an `Err` item). The
    /// crossing does not keep the runtime alive.
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
    /// let io = bridge::rt::IoRuntime::new(1).unwrap();
    /// let names = io.spawn_stream(futures::stream::iter(["a", "b"]).map(str::to_uppercase), 8);
    /// let current = tokio::runtime::Builder::new_current_thread().build().unwrap();
    /// assert_eq!(current.block_on(names.collect::<Vec<_>>()), ["A", "B"]);
    /// ```
    #[track_caller]
    pub fn spawn_stream<S>(&self, stream: S, bound: usize) -> Crossing<S::Item>
    where
        S: Stream + Send + 'static,
        S::Item: Send + 'static,
    {
        let (pump, unstarted) = bridge_core::stream::start(stream, bound);
        // A panic of the stream went to the consumer; the I/O task itself ends normally.
        unstarted.with_producer(Some(self.spawn(async move {
            pump.await;
        })))
    }
}
