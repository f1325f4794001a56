//! The loom models of this crate's protocols, as unit tests of the crate (they reach its
//! private hooks, `handoff::loom_handoff` and the like): run them with
//!
//! ```sh
//! RUSTFLAGS="--cfg bridge_loom" LOOM_MAX_PREEMPTIONS=3 \
//!     cargo test -p threadbridge-tokio --release --lib loom_models
//! ```

mod handoff;
