//! The job a task sends to the pool, and the cancellation flag it shares with its `Task`.

use crate::loom::{AtomicBool, Mutex, Ordering};
use bridge_core::oneshot::{SendError, Sender};
use std::any::Any;
use std::panic::{self, AssertUnwindSafe};

/// What the closure produced: its value, or its panic payload.
pub(crate) type Outcome<T> = Result<T, Box<dyn Any + Send + 'static>>;

/// Tells a running closure whether its [`Task`](crate::Task) is still wanted.
///
/// Given to the closure by [`spawn_cancellable`](crate::spawn_cancellable) and
/// [`ThreadPoolExt::spawn_cancellable_task`](crate::ThreadPoolExt::spawn_cancellable_task).
/// Long work can check it between steps and stop early; the value it then returns is
/// dropped on the pool thread, since nobody waits for it.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// let task = bridge_rayon::spawn_cancellable(|flag| {
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
#[derive(Debug)]
pub struct CancelFlag {
    cancelled: AtomicBool,
}

impl CancelFlag {
    /// Whether the task was dropped (without [`detach`](crate::Task::detach)), so nobody
    /// will receive the result.
    ///
    /// # Examples
    ///
    /// ```
    /// let task = bridge_rayon::spawn_cancellable(|flag| flag.is_cancelled());
    /// assert_eq!(task.wait(), false);
    /// ```
    pub fn is_cancelled(&self) -> bool {
        // ORDERING: Relaxed: a cancel that happens-before this load is seen by coherence;
        // no other data is published through the flag.
        self.cancelled.load(Ordering::Relaxed)
    }
}

/// A job: the closure and the sender for its outcome, taken out exactly once by whoever
/// runs it (a pool thread, or a rayon worker that waits on the task and helps).
pub(crate) struct Job<F, T> {
    flag: CancelFlag,
    work: Mutex<Option<(F, Sender<Outcome<T>>)>>,
}

impl<F, T> Job<F, T>
where
    F: FnOnce(&CancelFlag) -> T,
{
    pub(crate) fn new(f: F, tx: Sender<Outcome<T>>) -> Self {
        Self {
            flag: CancelFlag {
                cancelled: AtomicBool::new(false),
            },
            work: Mutex::new(Some((f, tx))),
        }
    }

    /// Runs the closure unless it was cancelled or somebody else already ran it, and sends
    /// the outcome. Never unwinds: a panic of the closure is sent to the task, and a
    /// panicking destructor of a value nobody wants is contained here.
    pub(crate) fn run(&self) {
        let Some((f, tx)) = self.work.with(Option::take) else {
            return;
        };
        // The check comes after the take: a cancel that happened-before this point is seen,
        // and a cancel after it lets the closure finish (it can watch the flag).
        if self.flag.is_cancelled() {
            drop_quietly((f, tx));
            return;
        }
        let outcome = panic::catch_unwind(AssertUnwindSafe(|| f(&self.flag)));
        if let Err(SendError(unwanted)) = tx.send(outcome) {
            drop_quietly(unwanted);
        }
    }
}

/// The type-erased handle a `Task` keeps on its job.
pub(crate) trait Control: Send + Sync {
    /// Marks the job cancelled: it will not start if it has not yet.
    fn cancel(&self);
    /// Runs the job on this thread if nobody has started it.
    fn run_here(&self);
}

impl<F, T> Control for Job<F, T>
where
    F: FnOnce(&CancelFlag) -> T + Send,
    T: Send,
{
    fn cancel(&self) {
        // ORDERING: Relaxed: the job's check after its take sees a store that
        // happens-before the take (through the mutex); nothing else is published.
        self.flag.cancelled.store(true, Ordering::Relaxed);
    }

    fn run_here(&self) {
        self.run();
    }
}

/// Drops `value`, containing a panic from its destructor so that it never reaches the pool's
/// panic handler. A second panic (from dropping the first one's payload) is leaked instead.
fn drop_quietly<V>(value: V) {
    if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(move || drop(value))) {
        std::mem::forget(payload);
    }
}
