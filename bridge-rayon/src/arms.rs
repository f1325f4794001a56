//! The arms of bridge-rayon's state machine (a job's claim), for the coverage count (see
//! `bridge_core::__coverage`). `.ci/loom-coverage` fails on every arm here that no loom
//! model reached.

use bridge_core::__coverage::Decl;

/// Every arm of the claim (`claim.rs`).
pub const ARMS: &[Decl] = &[
    // A waiter (`wait`, `join`, a poll).
    Decl::loom("claim.waiter.not_home"),
    Decl::loom("claim.waiter.claims"),
    Decl::loom("claim.waiter.finds_pool"),
    // The pool's copy.
    Decl::loom("claim.pool.starts"),
    Decl::loom("claim.pool.finds_waiter"),
    Decl::loom("claim.pool.drops_unrun"),
    Decl::loom("claim.pool.copy_ran"),
    Decl::loom("claim.pool.copy_after_waiter"),
];

/// Marks an arm of this crate: `arm!("claim.waiter.claims")`.
macro_rules! arm {
    ($name:expr) => {
        bridge_core::__arm!($crate::arms::ARMS, $name)
    };
}
pub(crate) use arm;
