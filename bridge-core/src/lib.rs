//! The runtime-agnostic core of bridge: a oneshot channel with sync, blocking and async
//! receive, and a runtime-free [`block_on`].
//!
//! ```
//! use bridge::{block_on, oneshot};
//!
//! let (tx, rx) = oneshot::channel();
//! std::thread::spawn(move || tx.send(21 * 2).unwrap());
//! // The same receiver could be awaited in an async task, or waited on with a timeout.
//! assert_eq!(block_on(rx), Ok(42));
//! ```
//!
//! - [`oneshot`]: one value from one thread or task to another. One heap cell, no locks;
//!   the receiver is a `Future` on any executor and also offers `try_recv`,
//!   `recv_blocking`, `recv_timeout` and `recv_deadline`.
//! - [`block_on`]: drive a future to completion on the calling thread without any runtime.
//! - [`Task`] and [`Error`]: the family's one handle for work running elsewhere and its one
//!   error; bridge-rayon and bridge-tokio plug their sides in.
//! - [`settings`]: the stall threshold of the family's waits, to read or change.
//! - [`stream`]: the bounded buffer of a stream crossing and its consumer,
//!   [`stream::Crossing`]; the family's `stream::on_io` and `stream::on_cpu` start its
//!   producer.
//!
//! This crate knows nothing of tokio or rayon; `bridge-tokio` and `bridge-rayon` build on it,
//! and the `bridge` crate re-exports all of them. It is the only crate of the family with
//! `unsafe` code; every block says why it is sound (`// SAFETY:`) and every atomic operation
//! why its ordering is enough (`// ORDERING:`). The loom models in `tests/loom.rs` run the
//! same code with `RUSTFLAGS="--cfg bridge_loom"`.

pub mod backoff;
mod block_on;
pub mod counters;
mod error;
pub mod histogram;
pub mod oneshot;
mod parker;
pub mod scoped;
pub mod settings;
#[cfg(not(bridge_loom))]
pub mod stream;
mod sync;
pub mod task;
mod workers;

pub use block_on::{block_on, block_on_deadline};
pub use error::Error;
pub use histogram::Histogram;
pub use task::{CatchUnwind, Task};
pub use workers::{Workers, register_workers};

/// Compile-time checks of the handles' auto traits and variance, run as doctests.
///
/// The handles cross threads when the value can:
///
/// ```
/// let (tx, rx) = bridge_core::oneshot::channel::<Vec<u8>>();
/// std::thread::spawn(move || tx.send(vec![1]).unwrap());
/// std::thread::spawn(move || rx.recv_blocking().unwrap()).join().unwrap();
/// ```
///
/// Both handles are unwind safe whatever the value, as tokio's `JoinHandle` is, so a
/// closure that holds one can go through `catch_unwind` without `AssertUnwindSafe`:
///
/// ```
/// use std::panic::{RefUnwindSafe, UnwindSafe, catch_unwind};
///
/// fn unwind_safe<H: UnwindSafe + RefUnwindSafe>(_: &H) {}
/// // `Cell` is neither `RefUnwindSafe` nor, behind a reference, `UnwindSafe`.
/// let (tx, mut rx) = bridge_core::oneshot::channel::<std::cell::Cell<u8>>();
/// unwind_safe(&tx);
/// unwind_safe(&rx);
/// tx.send(std::cell::Cell::new(1)).unwrap();
/// assert_eq!(catch_unwind(move || rx.try_recv().unwrap().get()).unwrap(), 1);
/// ```
///
/// A sender of a `!Send` value cannot:
///
/// ```compile_fail
/// let (tx, _rx) = bridge_core::oneshot::channel::<std::rc::Rc<u8>>();
/// std::thread::spawn(move || drop(tx));
/// ```
///
/// Nor can its receiver:
///
/// ```compile_fail
/// let (_tx, rx) = bridge_core::oneshot::channel::<std::rc::Rc<u8>>();
/// std::thread::spawn(move || drop(rx));
/// ```
///
/// A sender is invariant in `T`: one made for `&'static str` cannot be used to send a
/// shorter-lived reference to a receiver that expects `'static`:
///
/// ```compile_fail
/// fn shorten<'a>(
///     tx: bridge_core::oneshot::Sender<&'static str>,
/// ) -> bridge_core::oneshot::Sender<&'a str> {
///     tx
/// }
/// ```
#[cfg(doctest)]
pub struct CompileFail;
