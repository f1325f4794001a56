//! The synchronization primitives of bridge-rayon, behind one door: std normally, loom's
//! models under `--cfg bridge_loom` (see bridge-core's shim for why the cfg is prefixed).

#[cfg(bridge_loom)]
pub(crate) use loom::sync::atomic::AtomicBool;
#[cfg(not(bridge_loom))]
pub(crate) use std::sync::atomic::AtomicBool;

pub(crate) use std::sync::atomic::Ordering;

/// A mutex whose `lock` ignores poisoning: nothing panics while holding one of ours.
#[derive(Debug)]
pub(crate) struct Mutex<T>(
    #[cfg(not(bridge_loom))] std::sync::Mutex<T>,
    #[cfg(bridge_loom)] loom::sync::Mutex<T>,
);

impl<T> Mutex<T> {
    pub(crate) fn new(value: T) -> Self {
        #[cfg(not(bridge_loom))]
        return Self(std::sync::Mutex::new(value));
        #[cfg(bridge_loom)]
        return Self(loom::sync::Mutex::new(value));
    }

    /// Runs `f` with the lock held.
    pub(crate) fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        let mut guard = self
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        f(&mut guard)
    }
}
