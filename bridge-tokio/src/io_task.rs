//! A future run as a task of an I/O runtime, handed back as the family's [`Task`].

use crate::context::{Plan, plan};
use crate::shutdown;
use bridge_core::oneshot::{self, Sender};
use bridge_core::task::{self, Outcome, Runner};
use bridge_core::{Error, Task};
use std::any::Any;
use std::future::{Future, poll_fn};
use std::panic::{self, AssertUnwindSafe, Location};
use std::pin::pin;
use std::sync::Arc;
use std::task::Poll;
use tokio::runtime::Handle;
use tokio::task::AbortHandle;

/// A future run as a task of the runtime of `handle`, spawned at `site`: the body of
/// `IoRuntime::spawn`.
pub(crate) fn spawn_on<F>(
    handle: &Handle,
    future: F,
    site: &'static Location<'static>,
) -> Task<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let (tx, rx) = oneshot::channel();
    let future = crate::trace::instrument(future);
    let task = handle.spawn(run(future, tx, site));
    let work = IoWork {
        abort: task.abort_handle(),
        handle: handle.clone(),
    };
    task::new(rx, Arc::new(work))
}

/// The tokio task: polls `future` inside `catch_unwind`, each poll timed and watched (see
/// `watch.rs`), drops it, and only then sends its outcome, so that whoever receives the
/// output finds everything the future owned dropped.
async fn run<F: Future>(
    future: F,
    tx: Sender<Outcome<F::Output>>,
    site: &'static Location<'static>,
) {
    let mut slot = pin!(Some(future));
    let mut outcome = poll_fn(|cx| {
        let Some(future) = slot.as_mut().as_pin_mut() else {
            // Never: the slot is emptied only after this poll_fn completed.
            return Poll::Pending;
        };
        let polled = || panic::catch_unwind(AssertUnwindSafe(|| future.poll(cx)));
        #[cfg(not(bridge_loom))]
        let polled = crate::watch::poll(site, polled);
        #[cfg(bridge_loom)]
        let polled = {
            let _ = site;
            polled()
        };
        match polled {
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
                drop_quietly(output);
                outcome = Err(payload);
            }
            Err(_) => drop_quietly(payload),
        }
    }
    if let Err(unwanted) = tx.send(outcome) {
        // Nobody waits (the Task was dropped as the future finished): the output and its
        // destructor stay here, on the runtime's worker, whatever they do.
        drop_quietly(unwanted);
    }
}

/// Drops `value`, containing a panic from its destructor (and from dropping that panic's
/// payload): a user's value dropped on the bridge's own path never unwinds a worker.
fn drop_quietly<V>(value: V) {
    if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(move || drop(value))) {
        if let Err(second) = panic::catch_unwind(AssertUnwindSafe(move || drop(payload))) {
            std::mem::forget(second);
        }
    }
}

/// A task of an I/O runtime as its [`Task`] sees it.
struct IoWork {
    abort: AbortHandle,
    handle: Handle,
}

impl Runner for IoWork {
    fn cancel(&self) {
        self.abort.abort();
    }

    /// On a runtime's worker, the wait leaves the scheduler first (`block_in_place`). On a
    /// worker of a runtime that is shutting down, for a task of a runtime that is shutting
    /// down, it does not wait: that thread may be the one that would drop the future.
    fn block(&self, wait: &mut dyn FnMut()) -> bool {
        match plan() {
            Plan::OnWorker(_) => tokio::task::block_in_place(wait),
            Plan::Inline { dying: true, .. } if shutdown::shutting_down(&self.handle) => {
                return false;
            }
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
