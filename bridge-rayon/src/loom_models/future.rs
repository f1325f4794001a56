//! loom models of a future task's state machine (`future_task.rs`): schedule, poll, wake,
//! cancel, with loom threads standing in for the pool (`LoomPool`, a queue of poll jobs)
//! and for the thread that wakes the future. The task's waiter (`join`, or a poll of the
//! task) counts as a waiter on a rayon worker, so it runs queued polls itself and is woken
//! (through the waker it leaves in the cell) when the next one is queued.
//!
//! ```sh
//! RUSTFLAGS="--cfg bridge_loom" CARGO_TARGET_DIR=target/loom LOOM_MAX_PREEMPTIONS=2 \
//!     cargo test -p threadbridge-rayon --release --lib loom_models::future
//! ```
//!
//! Each model is a few hundred to a few thousand executions at bound 2 (seconds in release);
//! bound 3, as `.ci/loom-coverage` runs them, takes longer but stays under a minute.
use crate::future_task::loom_pool::{LoomPool, loom_future_task};
use loom::thread;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

/// A loom thread whose end the model waits for by looking at a flag before it joins it.
///
/// A waiter's wake flag may still be unparked after the waiter has left (the oneshot's send
/// publishes the value, then wakes the receiver's waker: a receiver that polls in between
/// takes the value and goes on). On a real thread the stray unpark only makes a later
/// `park` return early, which every park loop tolerates; loom instead treats it as the end
/// of whatever the thread blocks in, a join included, and fails the model. A thread that
/// has set its flag has made all its wakes, so the join after it cannot be cut short.
struct Tracked {
    handle: thread::JoinHandle<()>,
    done: Arc<loom::sync::atomic::AtomicBool>,
}

impl Tracked {
    fn spawn(f: impl FnOnce() + 'static) -> Self {
        let done = Arc::new(loom::sync::atomic::AtomicBool::new(false));
        let flag = done.clone();
        let handle = thread::spawn(move || {
            f();
            flag.store(true, SeqCst);
        });
        Self { handle, done }
    }

    fn join(self) {
        while !self.done.load(SeqCst) {
            thread::yield_now();
        }
        self.handle.join().unwrap();
    }
}

/// Counts its drops.
struct Counted(Arc<AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, SeqCst);
    }
}

/// A future whose first poll starts a loom thread that wakes it `wakes` times (by reference,
/// then by value), and returns `Pending`; its second poll is `Ready` if `finishes`, `Pending`
/// forever otherwise. It asserts that no two polls overlap, and counts them.
struct WokenFromAThread {
    wakes: usize,
    finishes: bool,
    in_poll: Arc<AtomicBool>,
    polls: Arc<AtomicUsize>,
    waker_thread: Arc<Mutex<Option<Tracked>>>,
    kept_waker: Arc<Mutex<Option<Waker>>>,
    _drops: Counted,
}

impl Future for WokenFromAThread {
    type Output = usize;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<usize> {
        assert!(!self.in_poll.swap(true, SeqCst), "two polls at once");
        let n = self.polls.fetch_add(1, SeqCst) + 1;
        let polled = if n == 1 {
            *self.kept_waker.lock().unwrap() = Some(cx.waker().clone());
            let (waker, wakes) = (cx.waker().clone(), self.wakes);
            let handle = Tracked::spawn(move || {
                for _ in 1..wakes {
                    waker.wake_by_ref();
                }
                waker.wake();
            });
            *self.waker_thread.lock().unwrap() = Some(handle);
            Poll::Pending
        } else if self.finishes {
            Poll::Ready(n)
        } else {
            Poll::Pending
        };
        self.in_poll.store(false, SeqCst);
        polled
    }
}

/// The shared probes of one model run.
#[derive(Default)]
struct Probes {
    polls: Arc<AtomicUsize>,
    drops: Arc<AtomicUsize>,
    waker_thread: Arc<Mutex<Option<Tracked>>>,
    /// A clone of the first poll's waker, which keeps the shared cell (and a future that
    /// nothing dropped) alive until the model lets it go.
    kept_waker: Arc<Mutex<Option<Waker>>>,
}

impl Probes {
    fn future(&self, wakes: usize, finishes: bool) -> WokenFromAThread {
        WokenFromAThread {
            wakes,
            finishes,
            in_poll: Arc::default(),
            polls: self.polls.clone(),
            waker_thread: self.waker_thread.clone(),
            kept_waker: self.kept_waker.clone(),
            _drops: Counted(self.drops.clone()),
        }
    }

    /// Joins the waker thread (if a poll started it) and runs what it queued.
    fn settle(&self, pool: &LoomPool) {
        let handle = self.waker_thread.lock().unwrap().take();
        if let Some(handle) = handle {
            handle.join();
        }
        pool.run_all();
    }
}

/// A pool thread runs the first queued job while the waiter (`join` on a rayon worker)
/// claims what is queued and blocks between polls, and the first poll's thread wakes the
/// future twice: during that poll, after it, during the second poll, or after the end. The
/// future is polled exactly twice, never twice at once, and the waiter gets its output.
///
/// Catches: `lost-wake-during-poll` (a poll that ends `Pending` and moves the state to IDLE
/// without looking for a wake that came during it: the waiter blocks forever, loom's
/// deadlock report); a wake that queues a poll beside a running one (the overlap assertion,
/// or three polls); a waiter that misses the signal of a queued poll (deadlock).
#[test]
fn wake_vs_poll_vs_waiter() {
    loom::model(|| {
        let probes = Probes::default();
        let (task, pool) = loom_future_task(probes.future(2, true));
        let runner = pool.clone();
        let pool_thread = Tracked::spawn(move || {
            runner.run_one();
        });
        assert_eq!(task.join().expect("the output"), 2);
        pool_thread.join();
        probes.settle(&pool);
        assert_eq!(probes.polls.load(SeqCst), 2, "polled once per wake-up");
        assert_eq!(probes.drops.load(SeqCst), 1, "the future dropped once");
    });
}

/// The waiter polls the task (as `bridge::run_blocking`'s loop, `.await` and a stream
/// crossing's consumer do, whose producer is such a task) instead of `join`: each poll runs
/// the queued poll of the future if the pool thread has not taken it, and leaves its waker
/// to be woken when the next is queued. The pool thread races it for every queued poll.
///
/// Catches: a waiter that misses the queued poll (its waker left after the move to
/// SCHEDULED was signalled, with nobody left to run it: deadlock); a poll claimed by both
/// sides (the overlap assertion, or three polls).
#[test]
fn poll_waiter_vs_pool_thread() {
    loom::model(|| {
        let probes = Probes::default();
        let (task, pool) = loom_future_task(probes.future(1, true));
        let runner = pool.clone();
        let pool_thread = Tracked::spawn(move || {
            runner.run_one();
            runner.run_one();
        });
        assert_eq!(bridge_core::block_on(task), 2);
        pool_thread.join();
        probes.settle(&pool);
        assert_eq!(probes.polls.load(SeqCst), 2, "polled once per wake-up");
        assert_eq!(probes.drops.load(SeqCst), 1, "the future dropped once");
    });
}

/// The task of a future that never completes is dropped while the pool runs its first poll
/// (and the poll that the wake queues) and the first poll's thread wakes it: every order of
/// the cancel, the wake and the polls.
/// The future is dropped exactly once, by a poll job (the cancel queues one when nothing
/// else would), while a waker clone still keeps the shared cell alive, and never polled
/// after the job that saw the cancel.
///
/// Catches: `cancel-without-schedule` (a drop that closes the channel but queues no job: a
/// future already woken and idle is never dropped, the drop count stays 0);
/// `wake-that-only-looks` (a wake or cancel that finds a poll queued and leaves the state
/// unwritten: that poll may miss the closed receiver, end `Pending`, and nothing drops the
/// future: the drop count stays 0); a cancelled future polled instead of dropped (three
/// polls).
#[test]
fn cancel_vs_wake_vs_poll() {
    loom::model(|| {
        let probes = Probes::default();
        let (task, pool) = loom_future_task(probes.future(1, false));
        let runner = pool.clone();
        // Two jobs at most: the first poll, and the one its wake queues (if in time).
        let pool_thread = Tracked::spawn(move || {
            runner.run_one();
            runner.run_one();
        });
        drop(task);
        pool_thread.join();
        pool.run_all();
        probes.settle(&pool);
        // A waker is still alive: only a poll job can have dropped the future.
        assert_eq!(
            probes.drops.load(SeqCst),
            1,
            "the future dropped once, by a job"
        );
        assert!(probes.polls.load(SeqCst) <= 2);
        drop(probes.kept_waker.lock().unwrap().take());
    });
}

/// A poll that panics, against the waiter's claim: the payload reaches the waiter
/// whichever side polled, and the future is dropped once.
///
/// Catches: a poll run outside `catch_unwind` (the pool thread or the waiter unwinds with
/// the payload); a panicked future left in its slot (the drop count).
#[test]
fn panic_vs_waiter() {
    loom::model(|| {
        let drops = Arc::new(AtomicUsize::new(0));
        let held = Counted(drops.clone());
        let (task, pool) = loom_future_task(async move {
            let _held = held;
            std::panic::panic_any(7u32)
        });
        let runner = pool.clone();
        let pool_thread = Tracked::spawn(move || {
            runner.run_one();
        });
        let err = task.join().unwrap_err();
        assert_eq!(err.into_panic().downcast_ref::<u32>(), Some(&7));
        pool_thread.join();
        pool.run_all();
        assert_eq!(drops.load(SeqCst), 1);
    });
}
