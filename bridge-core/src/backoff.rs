//! How every blocking wait of the family waits: spin with exponential backoff, then yield
//! the thread a few times, then park. Used by the oneshot's blocking receive and
//! `block_on` here, by bridge-tokio's handoff (caller and worker) and drivers' hand-over.
//!
//! A wait whose event comes within the spin saves a park and an unpark (a futex wait, a
//! futex wake and a switch on each side: microseconds). The policy is crossbeam-utils'
//! `Backoff`, the one its channels use, with its constants:
//!
//! - [`SPIN_STEPS`]: step `k` spins `2^k` times ([`std::hint::spin_loop`]), so the whole spin
//!   is 127 hints: one to a few microseconds, whatever the CPU, and less than a park costs.
//! - [`YIELD_STEPS`]: then, up to step 10, each step yields the thread
//!   ([`std::thread::yield_now`]): a partner that shares this CPU (one CPU, or more runnable
//!   threads than CPUs) gets to run and deliver before this thread sleeps.
//!
//! The constants are fixed: the bound on what a wait spends before it parks is the same on
//! every machine, and nothing is measured at run time. Under `--cfg bridge_loom` the spin is
//! one step (a loom yield), so the models explore "caught while spinning" and "parked"
//! without a branch point per hint.

/// The last step that spins; step `k` spins `2^k` times.
pub const SPIN_STEPS: u32 = 6;

/// The last step; the steps after [`SPIN_STEPS`] yield the thread.
pub const YIELD_STEPS: u32 = 10;

/// One wait's progress through the policy.
///
/// # Examples
///
/// ```
/// use bridge_core::__backoff::Backoff;
/// use std::sync::atomic::{AtomicBool, Ordering};
///
/// let ready = AtomicBool::new(true);
/// let mut backoff = Backoff::new();
/// while !ready.load(Ordering::Acquire) {
///     if !backoff.snooze() {
///         std::thread::park(); // the event's side unparks this thread
///     }
/// }
/// ```
#[derive(Debug, Default)]
pub struct Backoff {
    step: u32,
}

impl Backoff {
    /// A wait at its first step.
    pub const fn new() -> Self {
        Self { step: 0 }
    }

    /// Waits one step: spins or yields and returns `true`; or, once the steps are spent,
    /// does nothing and returns `false`: time to park.
    pub fn snooze(&mut self) -> bool {
        if cfg!(bridge_loom) {
            if self.step > 0 {
                return false;
            }
            self.step = 1;
            crate::sync::thread::yield_now();
            return true;
        }
        if self.step > YIELD_STEPS {
            return false;
        }
        if self.step <= SPIN_STEPS {
            for _ in 0..1u32 << self.step {
                std::hint::spin_loop();
            }
        } else {
            std::thread::yield_now();
        }
        self.step += 1;
        true
    }
}

/// Checks `ready` before each step of a [`Backoff`]: its answer, or `None` once the steps
/// are spent and the caller should park.
///
/// # Examples
///
/// ```
/// use bridge_core::__backoff::spin_until;
///
/// let mut looks = 0;
/// assert_eq!(spin_until(|| { looks += 1; (looks == 3).then_some(looks) }), Some(3));
/// assert_eq!(spin_until(|| None::<()>), None);
/// ```
pub fn spin_until<T>(mut ready: impl FnMut() -> Option<T>) -> Option<T> {
    let mut backoff = Backoff::new();
    loop {
        if let Some(found) = ready() {
            return Some(found);
        }
        if !backoff.snooze() {
            return None;
        }
    }
}
