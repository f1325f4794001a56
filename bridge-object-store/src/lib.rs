#![doc = include_str!("../README.md")]
//!
//! # What is here
//!
//! - [`IoStore`]: the wrapper. [`IoStore::new`] runs the store on the shared I/O runtime
//!   (`bridge::rt::IoRuntime::global`), [`IoStore::with_runtime`] on one of yours.
//!   Its streams read 16 items ahead of their consumer unless [`IoStore::with_bound`] says
//!   otherwise.
//!
//! # Why
//!
//! A program that keeps I/O and CPU work on separate pools must run each request of its
//! object-store client, and each read of a response body, where the client's connections
//! live: on the I/O runtime. A hand-written wrapper that forwards some methods and leaves
//! others to the trait's defaults runs those others wherever they are called. `IoStore`
//! forwards every method of the trait, the provided ones included, each to the same method
//! of the wrapped store, and runs it on the I/O runtime.
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod deferred;
mod error;
mod store;
mod upload;

pub use store::IoStore;
