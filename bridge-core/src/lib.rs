//! The runtime-agnostic core of bridge: a oneshot channel with sync, blocking and async
//! receive, and a runtime-free [`block_on`].
//!
//! ```
//! use bridge_core::{block_on, oneshot};
//!
//! let (tx, rx) = oneshot::channel();
//! std::thread::spawn(move || tx.send(21 * 2).unwrap());
//! // The same receiver could be awaited in an async task, or waited on with a timeout.
//! assert_eq!(block_on(rx), Ok(42));
//! ```
//!
//! - [`oneshot`]: one value from one thread or task to another. One allocation, no locks;
//!   the receiver is a `Future` on any executor and also offers `try_recv`,
//!   `recv_blocking`, `recv_timeout` and `recv_deadline`.
//! - [`block_on`]: drive a future to completion on the calling thread without any runtime.
//!
//! This crate knows nothing of tokio or rayon; `bridge-tokio` and `bridge-rayon` build on it,
//! and the `bridge` crate re-exports all of them. It is the only crate of the family with
//! `unsafe` code; every block says why it is sound (`// SAFETY:`) and every atomic operation
//! why its ordering is enough (`// ORDERING:`). The loom models in `tests/loom.rs` run the
//! same code with `RUSTFLAGS="--cfg bridge_loom"`.

#[doc(hidden)]
#[path = "coverage.rs"]
pub mod __coverage;
mod arms;
mod block_on;
mod loom;
pub mod oneshot;
mod parker;

pub use block_on::block_on;

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
