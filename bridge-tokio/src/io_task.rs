//! [`spawn_io`]: a future run as a task of an I/O runtime, handed back as the family's
//! [`Task`].

use crate::io_runtime::IoRuntime;
use crate::run::{Ambient, ambient};
use crate::shutdown;
use bridge_core::oneshot::{self, Sender};
use bridge_core::{__Outcome, __Work, __contain as contain, Error, Task};
use std::any::Any;
use std::future::{Future, poll_fn};
use std::panic::{self, AssertUnwindSafe};
use std::pin::pin;
use std::sync::Arc;
use std::task::Poll;
use tokio::runtime::Handle;
use tokio::task::AbortHandle;

/// Runs `future` as a task of the shared I/O runtime ([`IoRuntime::global`]) and returns
/// the handle on it, from any context: a plain thread, a rayon job, a task or `block_on`
/// body of either tokio flavour, a `LocalSet`, a `spawn_blocking` thread, a thread-local
/// destructor.
///
/// The future runs on the I/O runtime's workers, whatever the caller's context: the caller
/// goes on at once, and takes the output when it wants it, in the convention that suits it
/// (`.await`, a blocking `wait`, a sync `try_get`; see [`Task`]). A panic of the future is caught on the runtime and comes back to whoever
/// takes the output. Dropping the [`Task`] cancels the future; `detach` lets it run.
///
/// With the feature `tracing`, the span current here is current in every poll of the future
/// and at its drop.
///
/// # Panics
///
/// If the shared I/O runtime cannot be built on first use (its threads cannot be started),
/// as [`IoRuntime::global`] does. The future's own panic does not escape here: it goes to
/// the [`Task`].
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// // From synchronous code: the future runs on the I/O runtime, this thread waits.
/// let n = bridge::spawn_io(async {
///     tokio::time::sleep(Duration::from_millis(1)).await;
///     6 * 7
/// })
/// .wait();
/// assert_eq!(n, 42);
///
/// // From a current-thread runtime: awaited there, run on the I/O runtime's workers.
/// let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
/// assert_eq!(rt.block_on(bridge::spawn_io(async { 7 })), 7);
/// ```
pub fn spawn_io<F>(future: F) -> Task<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    IoRuntime::global().spawn(future)
}

/// [`spawn_io`] on the runtime of `handle`: the body of [`IoRuntime::spawn`].
pub(crate) fn spawn_on<F>(handle: &Handle, future: F) -> Task<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let (tx, rx) = oneshot::channel();
    let future = crate::trace::instrument(future);
    let task = handle.spawn(run(future, tx));
    let work = IoWork {
        abort: task.abort_handle(),
        handle: handle.clone(),
    };
    Task::__new(rx, Arc::new(work))
}

/// The tokio task: polls `future` inside `catch_unwind`, drops it, and only then sends its
/// outcome, so that whoever receives the output finds everything the future owned dropped.
async fn run<F: Future>(future: F, tx: Sender<__Outcome<F::Output>>) {
    let mut slot = pin!(Some(future));
    let mut outcome = poll_fn(|cx| {
        let Some(future) = slot.as_mut().as_pin_mut() else {
            // Never: the slot is emptied only after this poll_fn completed.
            return Poll::Pending;
        };
        match panic::catch_unwind(AssertUnwindSafe(|| future.poll(cx))) {
            Ok(Poll::Ready(output)) => Poll::Ready(Ok(output)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(payload) => Poll::Ready(Err(payload)),
        }
    })
    .await;
    // A panic from the future's destructor is the future's panic, unless it panicked before.
    if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(|| slot.set(None))) {
        match outcome {
            Ok(output) => {
                contain(move || drop(output));
                outcome = Err(payload);
            }
            Err(_) => contain(move || drop(payload)),
        }
    }
    if let Err(unwanted) = tx.send(outcome) {
        // Nobody waits (the IoTask was dropped as the future finished): the output and its
        // destructor stay here, on the runtime's worker, whatever they do.
        contain(move || drop(unwanted));
    }
}

/// A task of an I/O runtime as its [`Task`] sees it.
struct IoWork {
    abort: AbortHandle,
    handle: Handle,
}

impl __Work for IoWork {
    fn cancel(&self) {
        self.abort.abort();
    }

    /// On a runtime's worker, the wait leaves the scheduler first (`block_in_place`). On a
    /// worker of a runtime that is shutting down, for a task of a runtime that is shutting
    /// down, it does not wait: that thread may be the one that would drop the future.
    fn block(&self, wait: &mut dyn FnMut()) -> bool {
        match ambient() {
            Ambient::Worker(_) => tokio::task::block_in_place(wait),
            Ambient::Dying if shutdown::shutting_down(&self.handle) => return false,
            _ => wait(),
        }
        true
    }

    /// tokio's "being shut down" panic under the future is the runtime lost, not the
    /// future's panic.
    fn error(&self, payload: Box<dyn Any + Send + 'static>) -> Error {
        shutdown::classify(payload)
    }
}
