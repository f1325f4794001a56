//! The studies of the bridge crate family.
#![forbid(unsafe_code)]

fn main() {}
