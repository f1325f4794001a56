//! The handoff: the future runs on a worker of the handoff pool, polled there with a
//! multi-thread runtime's handle entered, while the caller blocks until the worker is done
//! with it.
//!
//! The future may borrow from the caller's stack: bridge-core's `run_elsewhere` hands the
//! work over with its lifetime erased and returns only once the worker has run it to its end
//! or dropped it. A deadline does not cut that wait short: when it passes, the caller asks
//! the worker to stop (the future is dropped at its next wake-up or between two polls) and
//! then waits for the drop. A job still queued for the pool's cap at the deadline is taken
//! back out of the queue instead, and dropped unpolled on the calling thread.

pub(crate) mod pool;
mod stall;

use crate::sync::Arc;
use bridge_core::Error;
use bridge_core::oneshot::{self, Receiver, RecvTimeoutError};
use bridge_core::scoped::{Erased, run_elsewhere};
use pool::Pool;
use std::any::Any;
use std::cell::Cell;
use std::future::{Future, poll_fn};
use std::panic::{self, AssertUnwindSafe};
use std::pin::{Pin, pin};
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::Poll;
use std::time::Instant;
use tokio::runtime::Handle;

/// How the work ended on the worker.
enum Ended<T> {
    /// The future's output.
    Finished(T),
    /// The future's panic payload.
    Panicked(Box<dyn Any + Send + 'static>),
    /// The caller's deadline passed and the worker dropped the future unfinished.
    Cancelled,
}

/// Polls `future` until it finishes, panics, or `cancel` delivers.
async fn until_cancelled<F: Future>(future: F, mut cancel: Receiver<()>) -> Ended<F::Output> {
    let mut future = pin!(future);
    poll_fn(|cx| {
        // The cancel first: it registers the waker that the caller's send wakes.
        if let Poll::Ready(Ok(())) = Pin::new(&mut cancel).poll(cx) {
            return Poll::Ready(Ended::Cancelled);
        }
        match panic::catch_unwind(AssertUnwindSafe(|| future.as_mut().poll(cx))) {
            Ok(Poll::Ready(output)) => Poll::Ready(Ended::Finished(output)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(payload) => Poll::Ready(Ended::Panicked(payload)),
        }
    })
    .await
}

/// Runs `future` on a handoff worker with `handle` entered (with its own wake flag, see
/// [`in_place`](crate::in_place)), and blocks this thread until the worker is done with it. The
/// future takes the span current here with it (feature `tracing`): this is the one route
/// whose polls (and drop) happen on another thread.
///
/// Never inlined, and the span is put around the future here rather than by the caller: a
/// handoff costs microseconds, and inlined into the call's dispatch its code (larger with
/// the feature `tracing`) changed how the compiler laid out the nanosecond routes beside it.
#[inline(never)]
pub(crate) fn run<F>(
    handle: &Handle,
    future: F,
    deadline: Option<Instant>,
) -> Result<F::Output, Error>
where
    F: Future + Send,
    F::Output: Send,
{
    let future = crate::trace::instrument(future);
    #[cfg(not(bridge_loom))]
    {
        via_pool(Pool::global(), Some(handle.clone()), future, deadline)
    }
    // loom builds have no global pool (loom objects cannot outlive one model run): the models
    // drive the protocol through `loom_handoff`, `Pool::loom_handoff` and the pool
    // directly.
    #[cfg(bridge_loom)]
    {
        let _ = (handle, future, deadline);
        unreachable!("loom builds drive the handoff through loom_handoff")
    }
}

/// The handoff through `pool`: the job is submitted there, and taken back out of its queue
/// at the deadline if no worker has taken it yet.
fn via_pool<F>(
    pool: &Arc<Pool>,
    handle: Option<Handle>,
    future: F,
    deadline: Option<Instant>,
) -> Result<F::Output, Error>
where
    F: Future + Send,
    F::Output: Send,
{
    hand_off(
        handle,
        future,
        deadline,
        |job| {
            Pool::submit(
                pool,
                Box::new(move |back_to_idle: &dyn Fn()| job.run(back_to_idle)),
            )
        },
        // Dropped here, on the calling thread, while what the future borrows is alive.
        |ticket| pool.withdraw(ticket).map(drop).is_some(),
    )
}

/// The handoff protocol: `hand_over` gets the work as a [`Erased`] to run (or drop) on another
/// thread; this thread waits for its outcome, and at `deadline` first offers `take_back` what
/// `hand_over` returned (it returns whether it took the job back unrun and dropped it), else
/// asks the job to stop. It returns only once the job is done with the future.
fn hand_off<F, Q>(
    handle: Option<Handle>,
    future: F,
    deadline: Option<Instant>,
    hand_over: impl FnOnce(Erased) -> Q,
    take_back: impl FnOnce(Q) -> bool,
) -> Result<F::Output, Error>
where
    F: Future + Send,
    F::Output: Send,
{
    let (cancel_tx, cancel_rx) = oneshot::channel();
    // Whether a worker took the job: a job dropped unrun (no worker thread could be started)
    // closes the channel without it.
    let started = AtomicBool::new(false);
    let work = || {
        // ORDERING: Relaxed: read by the caller once `run_elsewhere` returned, which
        // happens-after the job's end.
        started.store(true, Ordering::Relaxed);
        let _context = handle.as_ref().map(Handle::enter);
        bridge_core::block_on(until_cancelled(future, cancel_rx))
    };
    let placed = Cell::new(None);
    let hand_over = |job| placed.set(Some(hand_over(job)));
    let ended = run_elsewhere(work, hand_over, |pending| {
        match stall::recv_until(pending, deadline) {
            Err(RecvTimeoutError::Timeout) => {
                // A job still queued, unstarted, leaves the queue: dropped, it closes the
                // channel, and the call ends at its deadline.
                if placed.take().is_some_and(take_back) {
                    return Ok(Ended::Cancelled);
                }
                // Stop the future, then wait for the worker to drop it: it may borrow from
                // this stack. An output that came meanwhile is taken all the same.
                drop(cancel_tx.send(()));
                pending.recv_until(None)
            }
            received => received,
        }
    });
    match ended {
        Ok(Ended::Finished(output)) => Ok(output),
        Ok(Ended::Panicked(payload)) => Err(crate::shutdown::classify(payload)),
        Ok(Ended::Cancelled) => Err(stall::timed_out()),
        // ORDERING: Relaxed: see the store.
        Err(_) if !started.load(Ordering::Relaxed) => Err(crate::trace::unavailable(
            std::io::Error::other("no handoff worker thread could be started"),
        )),
        Err(_) => Err(crate::trace::lost()),
    }
}

/// Test hook for the loom models: a handoff whose job goes to `hand_over` (a loom thread
/// runs or drops it) instead of the pool, with no runtime handle.
#[cfg(all(test, bridge_loom))]
pub(crate) fn loom_handoff<F>(
    future: F,
    deadline: Option<Instant>,
    hand_over: impl FnOnce(Erased),
) -> Result<F::Output, Error>
where
    F: Future + Send,
    F::Output: Send,
{
    hand_off(None, future, deadline, hand_over, |()| false)
}

#[cfg(all(test, bridge_loom))]
impl Pool {
    /// Test hook for the loom models: a handoff through `pool`, as `run_blocking`'s through
    /// the process's pool, with no runtime handle.
    pub(crate) fn loom_handoff<F>(
        pool: &Arc<Self>,
        future: F,
        deadline: Option<Instant>,
    ) -> Result<F::Output, Error>
    where
        F: Future + Send,
        F::Output: Send,
    {
        via_pool(pool, None, future, deadline)
    }
}
