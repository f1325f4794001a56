//! Running a task's job (on the pool, or inline by the waiter that claimed it), and the
//! cancellation flag the closure reads.

use crate::metrics;
use std::any::Any;
use std::fmt;
use std::panic::{self, AssertUnwindSafe};
use std::time::Instant;

/// What the closure produced: its value, or its panic payload.
pub(crate) type Outcome<T> = Result<T, Box<dyn Any + Send + 'static>>;

/// Tells a running closure whether its [`Task`](crate::Task) is still wanted.
///
/// Given to the closure by [`spawn_cancellable`](crate::spawn_cancellable) and
/// `ThreadPoolExt::spawn_cancellable_task`.
/// Long work can check it between steps and stop early; the value it then returns is
/// dropped on the pool thread, since nobody waits for it.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// let task = bridge::spawn_cancellable(|flag| {
///     let mut steps = 0u64;
///     while !flag.is_cancelled() && steps < 1_000_000 {
///         steps += 1;
///         std::thread::sleep(Duration::from_micros(10));
///     }
///     steps
/// });
/// std::thread::sleep(Duration::from_millis(5));
/// drop(task); // the closure sees the flag and stops within a step
/// ```
///
/// The flag is `Copy`, `Send` and `Sync`, so the closure can read it from the jobs it fans
/// out, inside `par_iter` for instance:
///
/// ```
/// use rayon::prelude::*;
///
/// let task = bridge::spawn_cancellable(|flag| {
///     (0..10_000u64)
///         .into_par_iter()
///         .filter(|_| !flag.is_cancelled())
///         .map(|n| n * n)
///         .sum::<u64>()
/// });
/// assert_eq!(task.wait(), (0..10_000u64).map(|n| n * n).sum::<u64>());
/// ```
#[derive(Clone, Copy)]
pub struct CancelFlag<'a> {
    // `Sync`, so that the flag is `Send` and `Sync`: the sender it points to is, since the
    // only `&self` method it answers is a single atomic load (`Sender::is_closed`).
    receiver_gone: &'a (dyn ReceiverGone + Sync),
}

impl CancelFlag<'_> {
    /// Whether the task was dropped (not [detached](crate::Task::detach)), so nobody will
    /// receive the result.
    ///
    /// # Examples
    ///
    /// ```
    /// let task = bridge::spawn_cancellable(|flag| flag.is_cancelled());
    /// assert_eq!(task.wait(), false);
    /// ```
    pub fn is_cancelled(&self) -> bool {
        self.receiver_gone.receiver_gone()
    }
}

impl fmt::Debug for CancelFlag<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CancelFlag")
            .field("is_cancelled", &self.is_cancelled())
            .finish()
    }
}

/// The job's view of its task, without the value type.
pub(crate) trait ReceiverGone {
    /// Whether the task was dropped (not detached): nobody will take the outcome.
    fn receiver_gone(&self) -> bool;
}

/// Where a job's outcome goes: its task's cell (see `job_claim.rs`).
pub(crate) trait Outlet<T>: ReceiverGone + Sync {
    /// Hands the outcome to the task, or drops it (quietly) if nobody will take it.
    fn deliver(&self, outcome: Outcome<T>);
}

/// Runs the job: `f` unless its task was dropped before this point, with the outcome handed
/// to the task. Called by whichever side claimed the job (see `job_claim.rs`): a pool
/// thread, or the task's waiter. Never unwinds: a panic of `f` travels to the task, and
/// dropping what nobody wants (`f` itself, its value, a panic payload) happens inside
/// `catch_unwind`.
///
/// Counts the job in the metrics: cancelled, or started (with its queue wait if `spawned_at`
/// is the time of a sampled spawn) and then finished or panicked, before the outcome is
/// handed over, so that whoever takes it sees the counts.
pub(crate) fn run<F, T>(f: F, outlet: &impl Outlet<T>, spawned_at: Option<Instant>)
where
    F: FnOnce(CancelFlag<'_>) -> T,
    T: Send,
{
    // A drop of the task that happened-before this check is seen here, so a cancelled job
    // never starts.
    if outlet.receiver_gone() {
        metrics::cancelled();
        drop_quietly(f);
        return;
    }
    metrics::started(spawned_at);
    let flag = CancelFlag {
        receiver_gone: outlet,
    };
    let outcome = panic::catch_unwind(AssertUnwindSafe(|| f(flag)));
    metrics::ended(outcome.is_err());
    outlet.deliver(outcome);
}

/// Drops `value`, containing a panic from its destructor so that it never reaches the pool's
/// panic handler. The panic's payload is dropped too, under a second `catch_unwind`; only if
/// that drop panics as well (a payload whose own destructor panics) is the second payload
/// forgotten: a leak of one payload per such double panic, and none otherwise.
pub(crate) fn drop_quietly<V>(value: V) {
    contain(move || drop(value));
}

/// Runs `f`, which only drops things (a value, a channel holding one), containing a panic
/// from it as [`drop_quietly`] does.
pub(crate) fn contain(f: impl FnOnce()) {
    // Under loom a panic here is a race that the model found (no model's value panics when
    // dropped): it goes on, so that the model fails, instead of being dropped unseen.
    if cfg!(bridge_loom) {
        return f();
    }
    if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(f)) {
        if let Err(second) = panic::catch_unwind(AssertUnwindSafe(move || drop(payload))) {
            std::mem::forget(second);
        }
    }
}
