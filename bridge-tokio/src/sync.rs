//! The synchronization primitives of the handoff pool, behind one door: std normally, loom's
//! models under `--cfg bridge_loom` (see bridge-core's shim for why the cfg is prefixed).

pub(crate) use std::sync::atomic::Ordering;

#[cfg(bridge_loom)]
pub(crate) use loom::sync::{Arc, atomic::AtomicBool};
#[cfg(not(bridge_loom))]
pub(crate) use std::sync::{Arc, atomic::AtomicBool};

/// Declares a thread-local `Cell<bool>`, `false` on every new thread: std's, or loom's under
/// loom (where the model's threads share one OS thread).
macro_rules! thread_flag {
    ($(#[$attr:meta])* static $name:ident;) => {
        #[cfg(not(bridge_loom))]
        std::thread_local! {
            $(#[$attr])*
            static $name: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
        }
        #[cfg(bridge_loom)]
        loom::thread_local! {
            $(#[$attr])*
            static $name: std::cell::Cell<bool> = std::cell::Cell::new(false);
        }
    };
}
pub(crate) use thread_flag;

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

pub(crate) mod thread {
    use std::time::Instant;

    #[cfg(bridge_loom)]
    pub(crate) use loom::thread::{Builder, Thread, current};
    #[cfg(not(bridge_loom))]
    pub(crate) use std::thread::{Builder, Thread, current};

    #[cfg(bridge_loom)]
    loom::thread_local! {
        /// How many of this model thread's next spawns fail (see `fail_spawns`).
        static FAIL_SPAWNS: std::cell::Cell<usize> = std::cell::Cell::new(0);
    }

    /// Under loom: the next `n` spawns made from this model thread fail, as std's do when
    /// the OS refuses a thread (which a model cannot make it do).
    #[cfg(bridge_loom)]
    pub(crate) fn fail_spawns(n: usize) {
        FAIL_SPAWNS.with(|left| left.set(n));
    }

    /// Starts a thread named `name` that runs `f`. If no thread can be started, `f` is
    /// dropped unrun (as std's `Builder::spawn` drops it) and the error returned. Under loom
    /// the same, with the failure injected by `fail_spawns`.
    pub(crate) fn spawn(name: &str, f: impl FnOnce() + Send + 'static) -> std::io::Result<()> {
        #[cfg(bridge_loom)]
        if FAIL_SPAWNS.with(|left| left.replace(left.get().saturating_sub(1)) > 0) {
            drop(f);
            return Err(std::io::Error::other(
                "a spawn failure injected by the model",
            ));
        }
        Builder::new().name(name.into()).spawn(f).map(drop)
    }

    /// Waits (checking `ready`) with the family's backoff (bridge-core's `backoff`), then
    /// parks until `deadline`. Returns whether the deadline has passed: `false` means "look
    /// in the mailbox again".
    ///
    /// The std version has three exits: `ready` seen during the backoff (`false`), the
    /// deadline already passed after it (`true`), a park that ends early or on time (`false`).
    /// The loom stand-in takes the same exits, branch for branch as far as a model can:
    /// - it checks `ready` once, and returns `false` when it is set: the backoff's exit (its
    ///   many checks with no progress in between are one check at its last moment);
    /// - otherwise it yields and returns `true`: the deadline-passed exit. The park's exit
    ///   (`false`) only leads back to the mailbox and this wait; the deadline exit is the one
    ///   with a decision in it (retire, or take the job a caller delivered meanwhile).
    ///
    /// A stand-in that skipped the `ready` check would hide a flag left set with an empty
    /// mailbox, which makes the std worker spin without end instead of sleeping or retiring.
    pub(crate) fn wait(ready: impl Fn() -> bool, deadline: Instant) -> bool {
        #[cfg(not(bridge_loom))]
        {
            // A caller that hands off in a loop sends the next job within microseconds:
            // caught awake, it costs no wake-up.
            if bridge_core::backoff::spin_until(|| ready().then_some(())).is_some() {
                return false;
            }
            let now = Instant::now();
            if now >= deadline {
                return true;
            }
            std::thread::park_timeout(deadline - now);
            false
        }
        #[cfg(bridge_loom)]
        {
            // The std backoff's exit: `ready` seen.
            if ready() {
                return false;
            }
            // The std exit after the backoff: the deadline has passed.
            let _ = deadline;
            loom::thread::yield_now();
            true
        }
    }
}
