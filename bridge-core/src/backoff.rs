//! How every blocking wait of the family waits: a bounded spin with exponential backoff, then
//! a park. Used by the oneshot's blocking receive and `block_on` here, and by bridge-tokio's
//! handoff worker.
//!
//! A wait whose event comes within the spin saves a park and an unpark (a futex wait, a futex
//! wake and a switch on each side: microseconds). The spin is crossbeam-utils' `Backoff`, the
//! one its channels use: step `k` spins `2^k` times ([`std::hint::spin_loop`]), up to step
//! [`SPIN_STEPS`], 127 hints in all: one to a few microseconds whatever the CPU, less than a
//! park and an unpark cost.
//!
//! Unlike crossbeam's, the wait does not yield the thread between the spin and the park. On a
//! machine whose CPUs are all busy at the same priority, a `yield_now` hands the CPU to a
//! busy thread for the rest of its time slice (milliseconds), long after the event came; a
//! park is woken as soon as the event comes, and gives a partner that shares this CPU the CPU
//! just as well.
//!
//! The constants are fixed: the most a wait spends before it parks is the same on every
//! machine, and nothing is measured at run time. Under `--cfg bridge_loom` the spin is one
//! step with no hint (one more look at the event), so the models explore "caught while
//! spinning" and "parked" without a branch point per hint.

/// The last step; step `k` spins `2^k` times.
///
/// # Examples
///
/// ```
/// let mut backoff = bridge_core::backoff::Backoff::new();
/// let steps = std::iter::from_fn(|| backoff.snooze().then_some(())).count();
/// assert_eq!(steps, bridge_core::backoff::SPIN_STEPS as usize + 1);
/// ```
pub const SPIN_STEPS: u32 = 6;

/// One wait's progress through the spin.
///
/// # Examples
///
/// ```
/// use bridge_core::backoff::Backoff;
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
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(bridge_core::backoff::Backoff::new().snooze());
    /// ```
    pub const fn new() -> Self {
        Self { step: 0 }
    }

    /// Spins one step and returns `true`; or, once the steps are spent, does nothing and
    /// returns `false`: time to park.
    ///
    /// # Examples
    ///
    /// See [`Backoff`].
    pub fn snooze(&mut self) -> bool {
        if cfg!(bridge_loom) {
            // One step with no hint: the waiter looks once more, then parks. A loom yield here
            // would let the other side run to its end before every park, and the models would
            // never see a park outlast its deadline.
            if self.step > 0 {
                return false;
            }
            self.step = 1;
            return true;
        }
        if self.step > SPIN_STEPS {
            return false;
        }
        for _ in 0..1u32 << self.step {
            std::hint::spin_loop();
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
/// use bridge_core::backoff::spin_until;
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

#[cfg(all(test, not(bridge_loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_wait_spins_seven_steps_then_says_park_and_keeps_saying_it() {
        let mut backoff = Backoff::new();
        let steps = std::iter::from_fn(|| backoff.snooze().then_some(())).count();
        assert_eq!(steps, SPIN_STEPS as usize + 1);
        assert!(!backoff.snooze());
        assert!(!backoff.snooze());
    }

    #[test]
    fn spin_until_stops_at_the_first_answer() {
        let mut looks = 0;
        let found = spin_until(|| {
            looks += 1;
            (looks == 4).then_some("found")
        });
        assert_eq!((found, looks), (Some("found"), 4));
        let mut looks = 0;
        assert_eq!(
            spin_until(|| {
                looks += 1;
                None::<()>
            }),
            None
        );
        assert_eq!(
            looks,
            SPIN_STEPS as usize + 2,
            "a look before each step and after the last"
        );
    }
}
