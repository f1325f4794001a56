#![doc = include_str!("../README.md")]
//!
//! # What is here
//!
//! - [`oneshot`]: one value from one thread or task to another, received with `try_recv`
//!   (sync), `recv_blocking` / `recv_timeout` / `recv_deadline` (blocking) or `.await`
//!   (async, on any executor).
//! - [`block_on`]: run a future to completion on this thread, with no runtime.
#![forbid(unsafe_code)]

#[doc(inline)]
pub use bridge_core::block_on;
#[doc(inline)]
pub use bridge_core::oneshot;
