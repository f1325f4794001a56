//! A runtime-free executor for one future.

use crate::parker::Parker;
use crate::sync::thread;
use crate::workers::Here;
use std::future::{Future, IntoFuture};
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Instant;

/// Runs `future` to completion on the calling thread and returns its output.
///
/// This is an executor without a reactor: it polls the future, and parks the thread until
/// the future's waker is called. It suits futures that are woken by other threads (a
/// [`oneshot::Receiver`](crate::oneshot::Receiver), a task on a thread pool, a channel), not
/// futures that need a runtime's I/O driver or timers (a tokio socket or `sleep` needs a
/// tokio runtime to make progress and would wait forever here; use `bridge::run_blocking`
/// for those).
///
/// A future that wakes itself while it is polled (to ask for another poll, as
/// `tokio::task::yield_now` does outside a runtime's scheduler) is polled again at once, and
/// every 32nd time in a row after the thread yields: a short run of self-wakes costs no system
/// call, and whatever a longer one waits for (a oneshot sender between its two steps, say)
/// gets a chance to run.
///
/// It takes anything that turns into a future (`IntoFuture`), as `.await` does.
///
/// Calls nest: a future polled by `block_on` may itself call `block_on`, and each call waits
/// on its own wake flag, so a wake-up is never lost to another wait on the same thread. In
/// steady state a call allocates nothing: each thread keeps the wake flags it has used.
///
/// # Panics
///
/// A panic in the future's `poll` propagates to the caller. The thread's cached wake flag is
/// returned to the cache on the way out.
///
/// # Examples
///
/// ```
/// let (tx, rx) = bridge::oneshot::channel();
/// std::thread::spawn(move || tx.send("from another thread").unwrap());
/// assert_eq!(bridge::block_on(rx), Ok("from another thread"));
/// ```
pub fn block_on<F: IntoFuture>(future: F) -> F::Output {
    match poll_until(future.into_future(), None) {
        Some(output) => output,
        None => unreachable!("without a deadline, only the output ends the wait"),
    }
}

/// [`block_on`] with a deadline: `None` if it passes first, the future then dropped here
/// (so it may borrow from the caller).
///
/// # Examples
///
/// ```
/// use std::time::{Duration, Instant};
///
/// let soon = Instant::now() + Duration::from_millis(10);
/// assert_eq!(bridge_core::block_on_deadline(std::future::pending::<()>(), soon), None);
/// assert_eq!(bridge_core::block_on_deadline(async { 1 }, soon), Some(1));
/// ```
pub fn block_on_deadline<F: Future>(future: F, deadline: Instant) -> Option<F::Output> {
    poll_until(future, Some(deadline))
}

/// Self-wakes in a row that [`block_on`] answers by polling again at once; the next one
/// yields the thread first. Fixed: a short run of self-wakes (a few `yield_now`s) costs no
/// system call, and a sender descheduled mid-send gets the CPU within this many polls.
const SELF_WAKES_PER_YIELD: u32 = 32;

fn poll_until<F: Future>(future: F, deadline: Option<Instant>) -> Option<F::Output> {
    let mut future = pin!(future);
    let signal = Lease::take();
    let mut cx = Context::from_waker(&signal.waker);
    // Self-wakes in a row since the last park or yield.
    let mut self_wakes = 0u32;
    // On a pool's worker: when its wait began, when it is next checked, whether it was named.
    let mut here = crate::workers::here();
    let threshold = crate::settings::stall_warning();
    let mut waiting_since = None;
    let mut next_check: Option<Option<Instant>> = None;
    let mut named = false;
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return Some(output);
        }
        if signal.take() {
            // Woken already, most likely by the poll itself: a oneshot receiver whose sender
            // is between taking the old waker and its final store wakes the poll's waker
            // and asks to be polled again, and so does `yield_now` outside a runtime's
            // scheduler. It is polled again at once, as tokio's own `block_on` does; but a
            // loop of such polls would spin for as long as that sender is descheduled, so
            // every `SELF_WAKES_PER_YIELD`-th one in a row yields the thread first, as a
            // blocking receive waits the same hand-over out, and the sender can finish.
            // A future that wakes itself at every poll never lets this loop park: the
            // deadline is checked here too, or it would never pass.
            if deadline.is_some_and(|deadline| Instant::now() >= deadline) {
                return None;
            }
            self_wakes += 1;
            // Under loom every one yields: a model's spin must yield to its other threads.
            if cfg!(bridge_loom) || self_wakes == SELF_WAKES_PER_YIELD {
                self_wakes = 0;
                thread::yield_now();
            }
            continue;
        }
        self_wakes = 0;
        if !matches!(here, Here::Elsewhere) {
            // A pool's worker (or nobody knows yet): the wait is split at the stall threshold
            // (see `workers.rs`).
            let now = Instant::now();
            let since = *waiting_since.get_or_insert(now);
            let check = *next_check.get_or_insert_with(|| now.checked_add(threshold));
            let until = match (deadline, check) {
                (Some(deadline), Some(check)) => Some(deadline.min(check)),
                (deadline, check) => deadline.or(check),
            };
            match until {
                Some(until) if signal.park_deadline(until) => {}
                Some(_) if deadline.is_some_and(|deadline| Instant::now() >= deadline) => {
                    return None;
                }
                Some(_) => {
                    let now = Instant::now();
                    next_check = Some(now.checked_add(threshold));
                    here = crate::workers::here();
                    if let Here::Worker(workers) = here {
                        // The threshold passed with the wait not over: named once, then the
                        // worker runs what its pool has queued (it may be what the wait
                        // needs) and polls again.
                        if !named {
                            named = true;
                            workers.stalled(now.saturating_duration_since(since));
                        }
                        while workers.help() {
                            if signal.take() {
                                break;
                            }
                        }
                    }
                }
                None => signal.park(),
            }
        } else if let Some(deadline) = deadline {
            if !signal.park_deadline(deadline) {
                return None;
            }
        } else {
            signal.park();
        }
    }
}

/// The wake flag of one `block_on` call, shared with the wakers it hands out.
#[derive(Debug)]
struct Signal(Parker);

impl Wake for Signal {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

/// A wake flag and its waker, borrowed from the thread's cache for one call.
struct Lease {
    signal: Arc<Signal>,
    waker: Waker,
}

impl Lease {
    fn new() -> Self {
        let signal = Arc::new(Signal(Parker::new()));
        let waker = Waker::from(Arc::clone(&signal));
        Self { signal, waker }
    }
}

impl std::ops::Deref for Lease {
    type Target = Parker;
    fn deref(&self) -> &Parker {
        &self.signal.0
    }
}

#[cfg(not(bridge_loom))]
mod cache {
    use super::Lease;
    use std::cell::RefCell;

    thread_local! {
        /// Wake flags this thread has used and is not using now: one per nesting depth
        /// reached so far.
        static IDLE: RefCell<Vec<Lease>> = const { RefCell::new(Vec::new()) };
    }

    /// Gives the lease back to the thread's cache when the call ends, panicking or not.
    pub(super) struct Guard(Option<Lease>);

    impl Lease {
        pub(super) fn take() -> Guard {
            let cached = IDLE.try_with(|idle| idle.borrow_mut().pop()).ok().flatten();
            let lease = cached.unwrap_or_else(Lease::new);
            lease.reset();
            Guard(Some(lease))
        }
    }

    impl std::ops::Deref for Guard {
        type Target = Lease;
        fn deref(&self) -> &Lease {
            self.0.as_ref().expect("the lease is only taken in drop")
        }
    }

    impl Drop for Guard {
        fn drop(&mut self) {
            if let Some(lease) = self.0.take() {
                // During thread-local destruction the cache is gone; the lease is then
                // simply dropped.
                let _ = IDLE.try_with(|idle| idle.borrow_mut().push(lease));
            }
        }
    }
}

#[cfg(bridge_loom)]
mod cache {
    use super::Lease;

    // loom objects cannot outlive one model execution, so loom builds never cache.
    impl Lease {
        pub(super) fn take() -> Lease {
            let lease = Lease::new();
            lease.reset();
            lease
        }
    }
}
