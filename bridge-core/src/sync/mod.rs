//! Every synchronization primitive bridge-core uses, behind one door.
//!
//! With `RUSTFLAGS="--cfg bridge_loom"` the names below resolve to loom's models, so the loom
//! suite (`tests/loom.rs`) explores the real code. The cfg is prefixed on purpose: a bare
//! `--cfg loom` would also rewire tokio, which the tests use.
//!
//! Both sides expose the same API. Where std and loom differ (`UnsafeCell::with`, timed
//! parking, allocation tracking) the std side wraps std so the callers need no `cfg`.

#[cfg(not(bridge_loom))]
mod std;
#[cfg(not(bridge_loom))]
pub(crate) use self::std::*;

#[cfg(bridge_loom)]
mod mocked;
#[cfg(bridge_loom)]
pub(crate) use self::mocked::*;

/// Whether a timed park returned because its deadline had passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Parked {
    /// Woken (or spuriously returned) before the deadline: look at the state again.
    Early,
    /// The deadline has passed: give up waiting.
    Expired,
}
