//! The handoff: the future runs as a task of a multi-thread runtime while the caller blocks
//! on a oneshot for its outcome.

use crate::BridgeError;
use bridge_core::oneshot::{self, Receiver, RecvError, RecvTimeoutError};
use std::any::Any;
use std::future::{Future, poll_fn};
use std::panic::{self, AssertUnwindSafe};
use std::pin::pin;
use std::task::Poll;
use std::time::Instant;

/// The future's output, or its panic payload.
pub(crate) type Outcome<T> = Result<T, Box<dyn Any + Send + 'static>>;

/// Polls `future` to completion, turning a panic in any poll into an `Err` with its payload.
pub(crate) async fn catch_unwind<F: Future>(future: F) -> Outcome<F::Output> {
    let mut future = pin!(future);
    poll_fn(
        |cx| match panic::catch_unwind(AssertUnwindSafe(|| future.as_mut().poll(cx))) {
            Ok(Poll::Ready(output)) => Poll::Ready(Ok(output)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(payload) => Poll::Ready(Err(payload)),
        },
    )
    .await
}

/// The caller's side of a handoff: where the outcome arrives.
pub(crate) struct Waiting<T> {
    rx: Receiver<Outcome<T>>,
}

/// Splits `future` into the job to run on a runtime and the caller's side.
///
/// The job sends the outcome (output or panic) when the future finishes. If the job is
/// dropped unfinished (its runtime shut down), the caller gets [`BridgeError::RuntimeGone`];
/// if the caller stopped waiting (deadline), the output is dropped where the job runs.
pub(crate) fn split<F>(
    future: F,
) -> (
    Waiting<F::Output>,
    impl Future<Output = ()> + Send + 'static,
)
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let (tx, rx) = oneshot::channel();
    let job = async move {
        let outcome = catch_unwind(future).await;
        // A refused send means the caller gave up: the outcome is dropped here.
        drop(tx.send(outcome));
    };
    (Waiting { rx }, job)
}

impl<T> Waiting<T> {
    /// Blocks this thread until the outcome arrives, or `deadline` passes (then `cancel`
    /// runs, to stop the job).
    pub(crate) fn wait(
        mut self,
        deadline: Option<Instant>,
        cancel: impl FnOnce(),
    ) -> Result<T, BridgeError> {
        // A handed-off future often finishes within microseconds, while putting this thread
        // to sleep and waking it costs tens of microseconds where the wake-up crosses CPUs:
        // watch the channel for a while first. It only reads the state, so the loom models
        // (where every read is a branch point) skip it.
        // The watch is worth it only where it has been catching outcomes, on a machine with a
        // CPU to spare (bridge-core's spin policy).
        #[cfg(not(bridge_loom))]
        {
            static WATCH: bridge_core::__spin::Site = bridge_core::__spin::Site::new();
            if WATCH.should_spin() {
                let watch_until = Instant::now() + std::time::Duration::from_micros(20);
                while !self.rx.is_ready() && Instant::now() < watch_until {
                    std::hint::spin_loop();
                }
                WATCH.record(self.rx.is_ready());
            }
        }
        let received = match deadline {
            None => self
                .rx
                .recv_blocking()
                .map_err(|RecvError| RecvTimeoutError::Closed),
            Some(deadline) => self.rx.recv_deadline(deadline),
        };
        match received {
            Ok(Ok(output)) => Ok(output),
            Ok(Err(payload)) => Err(crate::shutdown::classify(payload)),
            Err(RecvTimeoutError::Closed) => Err(BridgeError::RuntimeGone),
            Err(RecvTimeoutError::Timeout) => {
                cancel();
                Err(BridgeError::TimedOut)
            }
        }
    }
}

/// Runs `future` away from this thread, driven by `handle`'s runtime, and blocks this thread
/// for its outcome: on a worker of the handoff pool (polled there with `handle` entered), or,
/// with a deadline, as a task on `handle`'s runtime (which can be aborted when the deadline
/// passes).
///
/// The caller must be allowed to block: outside any runtime, inside `block_in_place`, or on a
/// thread whose own runtime does not drive `handle`'s.
pub(crate) fn run<F>(
    handle: &tokio::runtime::Handle,
    future: F,
    deadline: Option<Instant>,
) -> Result<F::Output, BridgeError>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    #[cfg(not(bridge_loom))]
    if deadline.is_none() {
        return on_worker(handle, future);
    }
    // (loom builds have no global pool: loom objects cannot outlive one model run, and the
    // models drive the pool directly.)
    let (waiting, job) = split(future);
    let task = handle.spawn(job);
    waiting.wait(deadline, || task.abort())
}

/// Runs `future` on a worker of the handoff pool, polled there with `handle` entered and a
/// wake flag of its own (see [`here`](crate::here)), and blocks this thread for its outcome. The worker is back in the idle list before the outcome is
/// sent, so the caller's next handoff finds it.
#[cfg(not(bridge_loom))]
fn on_worker<F>(handle: &tokio::runtime::Handle, future: F) -> Result<F::Output, BridgeError>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    let (tx, rx) = oneshot::channel();
    let handle = handle.clone();
    let job = catch_unwind(future);
    // Whether a worker took the job: a job the pool dropped unrun (no worker thread could be
    // started) closes the channel without it.
    let started = Arc::new(AtomicBool::new(false));
    let taken = Arc::clone(&started);
    crate::workers::Pool::submit(
        crate::workers::Pool::global(),
        Box::new(move |back_to_idle: &dyn Fn()| {
            // ORDERING: Relaxed: the caller reads it only after the channel closed, and the
            // close (the drop of `tx`, below, on this thread) happens-before that read.
            taken.store(true, Ordering::Relaxed);
            let outcome = {
                let _context = handle.enter();
                bridge_core::block_on(job)
            };
            back_to_idle();
            // A refused send means the caller gave up: the outcome is dropped here.
            drop(tx.send(outcome));
        }),
    );
    let waiting = Waiting { rx };
    match waiting.wait(None, || ()) {
        // ORDERING: Relaxed: see the store above.
        Err(BridgeError::RuntimeGone) if !started.load(Ordering::Relaxed) => {
            Err(BridgeError::Unavailable(std::io::Error::other(
                "no handoff worker thread could be started",
            )))
        }
        result => result,
    }
}

/// Test hook for the loom models: the two sides of a handoff, without a runtime. Not part of
/// the API.
#[cfg(bridge_loom)]
#[doc(hidden)]
pub fn __loom_handoff<F>(
    future: F,
) -> (
    impl FnOnce(Option<Instant>) -> Result<F::Output, BridgeError>,
    impl Future<Output = ()> + Send + 'static,
)
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let (waiting, job) = split(future);
    (move |deadline| waiting.wait(deadline, || ()), job)
}
