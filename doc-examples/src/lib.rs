//! The doc examples of threadbridge-core, -rayon, -tokio and -object-store, as this crate's
//! doctests (`cargo test -p bridge-doc-examples --doc`); build.rs collects them. The crate
//! has nothing else: outside `cargo test --doc` it is empty.
#![cfg(doctest)]
#![allow(missing_docs)]

include!(concat!(env!("OUT_DIR"), "/examples.rs"));
