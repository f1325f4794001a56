//! The loom models of this crate's protocols, as unit tests of the crate (they reach its
//! private hooks, `spawn::loom_task` and the like): run them with
//!
//! ```sh
//! RUSTFLAGS="--cfg bridge_loom" LOOM_MAX_PREEMPTIONS=3 \
//!     cargo test -p threadbridge-rayon --release --lib loom_models
//! ```

mod future;
mod task;
