//! Waiting for a task on a rayon worker: the waiter runs the unstarted job it waits for, or
//! blocks; it never runs unrelated jobs, and time limits hold.
//!
//! Each test runs its body under a watchdog: a wait that deadlocks fails the test after
//! 20 s instead of hanging the suite.

mod common;

use bridge_rayon::{Error, Task, ThreadPoolExt};
use common::{WATCHDOG, drain, gate, pool, watchdog};
use std::cell::Cell;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex, mpsc};
use std::thread;
use std::time::{Duration, Instant};

/// A time-limited wait of `LIMIT` must return within this (the rest is scheduling noise on a
/// loaded machine).
const LIMIT: Duration = Duration::from_millis(10);
const LIMIT_WITH_NOISE: Duration = Duration::from_millis(500);
/// What a slow job sleeps: well past `LIMIT_WITH_NOISE`.
const SLOW: Duration = Duration::from_millis(1_000);

fn named_pool(threads: usize, name: &'static str) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(move |i| format!("{name}-{i}"))
        .build()
        .unwrap()
}

/// Counts its drops.
struct Counted(Arc<AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, SeqCst);
    }
}

/// Pool of two. Job X (on one worker) spawns A and waits for it; the other worker has
/// started A, which sleeps 300 ms; job B, which waits for X, sits in the pool's queue. A
/// wait that ran queued jobs would run B on top of X's frame: B waits for X, X cannot
/// resume until B returns. A plain blocking wait (what X must do) finishes once A does.
#[test]
fn a_wait_never_runs_a_queued_job_that_waits_for_the_waiter() {
    watchdog(|| {
        let pool = pool(2);
        let (a_started_tx, a_started) = mpsc::channel();
        let (b_queued_tx, b_queued) = mpsc::channel::<()>();
        let x = pool.spawn_task(move || {
            let a = bridge_rayon::spawn(move || {
                a_started_tx.send(()).unwrap();
                thread::sleep(Duration::from_millis(300));
                1
            });
            // This worker blocks outside rayon here, so the other worker takes A.
            b_queued.recv().unwrap();
            a.wait() + 1
        });
        a_started.recv().unwrap();
        // Both workers are busy: B goes into the pool's queue.
        let b = pool.spawn_task(move || x.wait() * 10);
        b_queued_tx.send(()).unwrap();
        assert_eq!(b.wait(), 20);
    });
}

/// Nested waits 32 deep on a pool of one thread: each level is a job that spawns the next
/// and waits for it, so each wait claims its own unstarted job and runs it inline. Through
/// `wait`, and through a poll (`bridge_core::block_on`).
#[test]
fn nested_waits_32_deep_on_a_one_thread_pool_finish() {
    watchdog(|| {
        fn by_wait(n: u32) -> u32 {
            if n == 0 {
                return 0;
            }
            bridge_rayon::spawn(move || by_wait(n - 1)).wait() + 1
        }
        fn by_poll(n: u32) -> u32 {
            if n == 0 {
                return 0;
            }
            bridge_core::block_on(bridge_rayon::spawn(move || by_poll(n - 1))) + 1
        }
        let pool = pool(1);
        assert_eq!(pool.spawn_task(|| by_wait(32)).wait(), 32);
        assert_eq!(pool.spawn_task(|| by_poll(32)).wait(), 32);
    });
}

thread_local! {
    /// Set while a job of the lock test holds the lock and waits.
    static HOLDING: Cell<bool> = const { Cell::new(false) };
}

/// Pool of two, one thread held at a gate. Job J locks a mutex and waits (with `wait`) for
/// a task queued behind an unrelated job U that takes the same lock. A wait that ran queued
/// jobs would run U on J's thread, on top of J's frame, while J holds the lock (a blocking
/// `lock` there deadlocks; U's `try_lock` records it instead). J must block until the
/// other thread, once released, has run U and then the task.
#[test]
fn a_job_holding_a_lock_never_runs_an_unrelated_job_while_it_waits() {
    waits_while_holding_a_lock(Task::wait);
}

/// The same through a poll on the worker (`bridge_core::block_on`).
#[test]
fn a_job_holding_a_lock_never_runs_an_unrelated_job_while_it_polls() {
    waits_while_holding_a_lock(bridge_core::block_on);
}

fn waits_while_holding_a_lock(wait: fn(Task<u32>) -> u32) {
    watchdog(move || {
        let pool = pool(2);
        let lock = Arc::new(Mutex::new(0u32));
        // (U ran on a thread whose job held the lock and waited, U's try_lock succeeded)
        let unrelated = Arc::new(Mutex::new(None::<(bool, bool)>));
        let (task_tx, task_rx) = mpsc::channel::<Task<u32>>();
        let (locked_tx, locked) = mpsc::channel();
        let j_lock = Arc::clone(&lock);
        let j = pool.spawn_task(move || {
            let mut guard = j_lock.lock().unwrap();
            locked_tx.send(()).unwrap();
            let task = task_rx.recv().unwrap();
            HOLDING.with(|h| h.set(true));
            *guard += wait(task);
            HOLDING.with(|h| h.set(false));
            *guard
        });
        locked.recv().unwrap();
        let open = gate(&pool);
        let (u_lock, u_seen) = (Arc::clone(&lock), Arc::clone(&unrelated));
        pool.spawn(move || {
            let nested = HOLDING.with(Cell::get);
            let took = u_lock.try_lock().is_ok();
            *u_seen.lock().unwrap() = Some((nested, took));
        });
        let task = pool.spawn_task(|| 5);
        task_tx.send(task).unwrap();
        // Let J reach its wait while U and the task are queued, then release the other thread.
        thread::sleep(Duration::from_millis(50));
        drop(open);
        assert_eq!(j.wait(), 5);
        drain(&pool);
        let seen = unrelated
            .lock()
            .unwrap()
            .expect("the unrelated job never ran");
        assert!(
            !seen.0,
            "the unrelated job ran on the waiting job's thread while it held the lock"
        );
    });
}

/// Pool of one. Its only worker waits with a limit for a task queued (from outside) behind
/// an unrelated job that sleeps a second. The wait runs the task it waits for, and only that:
/// it gets the value while the unrelated job is still queued.
#[test]
fn a_timed_wait_on_a_worker_runs_its_task_not_a_slow_job_queued_before_it() {
    watchdog(|| {
        let pool = pool(1);
        let slow_started = Arc::new(AtomicUsize::new(0));
        let (task_tx, task_rx) = mpsc::channel::<Task<u32>>();
        let (started_tx, started) = mpsc::channel();
        let seen = Arc::clone(&slow_started);
        let waiter = pool.spawn_task(move || {
            started_tx.send(()).unwrap();
            let mut task = task_rx.recv().unwrap();
            let got = task.wait_timeout(WATCHDOG / 4);
            (got, seen.load(SeqCst))
        });
        started.recv().unwrap();
        let flag = Arc::clone(&slow_started);
        pool.spawn(move || {
            flag.fetch_add(1, SeqCst);
            thread::sleep(SLOW);
        });
        task_tx.send(pool.spawn_task(|| 7)).unwrap();
        let (got, slow_before) = waiter.wait();
        assert_eq!(
            got,
            Some(7),
            "the timed wait did not run the task it waits for"
        );
        assert_eq!(slow_before, 0, "the timed wait ran an unrelated queued job");
    });
}

/// A pool's only worker, inside `install`, spawns a task and waits for it with a limit (and
/// with a deadline): nobody else can run the job, so the wait runs it, as `wait` does, and
/// gets the value instead of `None` at the limit. The limit bounds the waiting, not the work
/// the waiter runs itself: a job slower than the limit still gives its value.
#[test]
fn timed_waits_on_a_pools_only_worker_run_the_task() {
    watchdog(|| {
        use bridge_rayon::ThreadPoolExt;
        let pool = named_pool(1, "only");
        let limit = Duration::from_secs(2);
        let got = pool.install(|| {
            let by_timeout = pool.spawn_task(|| 42).wait_timeout(limit);
            let by_deadline = pool.spawn_task(|| 43).wait_deadline(Instant::now() + limit);
            let global_api = bridge_rayon::spawn(|| 44).wait_timeout(limit);
            let fifo = bridge_rayon::spawn_fifo(|| 45).wait_deadline(Instant::now() + limit);
            let future = bridge_rayon::spawn_future(async { 46 }).wait_timeout(limit);
            let ran_on = pool
                .spawn_task(|| thread::current().name().map(String::from))
                .wait_timeout(limit);
            let slow = pool
                .spawn_task(|| {
                    thread::sleep(Duration::from_millis(50));
                    47
                })
                .wait_timeout(Duration::from_millis(1));
            (
                by_timeout,
                by_deadline,
                global_api,
                fifo,
                future,
                ran_on,
                slow,
            )
        });
        assert_eq!(got.0, Some(42), "wait_timeout");
        assert_eq!(got.1, Some(43), "wait_deadline");
        assert_eq!(got.2, Some(44), "bridge_rayon::spawn + wait_timeout");
        assert_eq!(got.3, Some(45), "bridge_rayon::spawn_fifo + wait_deadline");
        // Not this pool's: the global pool polls it, this worker only waits.
        assert_eq!(got.4, Some(46), "a future task of the global pool");
        assert_eq!(got.5, Some(Some("only-0".to_string())));
        assert_eq!(got.6, Some(47), "a job slower than the limit");
    });
}

/// A future task of the pool, waited for with a limit on the pool's only worker: the waiter
/// runs its queued polls.
#[test]
fn a_timed_wait_on_a_pools_only_worker_polls_its_future_task() {
    watchdog(|| {
        use bridge_rayon::ThreadPoolExt;
        let pool = Arc::new(pool(1));
        let inner = Arc::clone(&pool);
        let got = pool.install(move || {
            let mut task = inner.spawn_future_task(async {
                let half = bridge_rayon::spawn(|| 20).await;
                half + bridge_rayon::spawn(|| 22).await
            });
            (
                task.wait_timeout(Duration::from_secs(2)),
                inner
                    .spawn_future_task(async { 1 })
                    .wait_deadline(Instant::now() + Duration::from_secs(2)),
            )
        });
        assert_eq!(got, (Some(42), Some(1)));
    });
}

/// Every worker of a pool of two waits at once, with a limit, for a task it spawned: each
/// runs its own, and every wait gets its value.
#[test]
fn every_worker_of_a_pool_waiting_with_a_limit_gets_its_value() {
    watchdog(|| {
        let pool = pool(2);
        let barrier = std::sync::Barrier::new(2);
        let got = pool.broadcast(|ctx| {
            let index = ctx.index();
            let mut task = bridge_rayon::spawn(move || index * 10);
            // Both workers are here (neither is free to take the other's job) before
            // either waits.
            barrier.wait();
            task.wait_timeout(Duration::from_secs(2))
        });
        assert_eq!(got, [Some(0), Some(10)]);
    });
}

/// Off the pool, a timed wait for a queued task gives up at its limit too.
#[test]
fn timed_waits_off_a_worker_hold_their_limit() {
    watchdog(|| {
        let pool = pool(1);
        let open = gate(&pool);
        let mut task = pool.spawn_task(|| 3);
        let start = Instant::now();
        assert_eq!(task.wait_timeout(LIMIT), None);
        assert_eq!(task.wait_deadline(Instant::now() + LIMIT), None);
        let took = start.elapsed();
        assert!(took < 2 * LIMIT_WITH_NOISE, "two 10 ms waits took {took:?}");
        drop(open);
        assert_eq!(task.wait(), 3);
    });
}

/// A task dropped on the worker that spawned it, before its job started (after a look with
/// `try_get`, or straight away), never runs, and its captures are dropped once.
#[test]
fn a_task_dropped_on_its_spawning_worker_never_runs() {
    watchdog(|| {
        let pool = pool(1);
        let ran = Arc::new(AtomicUsize::new(0));
        let captures = Arc::new(AtomicUsize::new(0));
        let (job_ran, job_captures) = (Arc::clone(&ran), Arc::clone(&captures));
        pool.spawn_task(move || {
            for i in 0..1_000 {
                let ran = Arc::clone(&job_ran);
                let capture = Counted(Arc::clone(&job_captures));
                let mut task = bridge_rayon::spawn(move || {
                    let _keep = &capture;
                    ran.fetch_add(1, SeqCst);
                });
                if i % 100 == 0 {
                    // A look that does not wait runs nothing.
                    assert_eq!(task.try_get(), None);
                }
                drop(task);
            }
        })
        .wait();
        drain(&pool);
        assert_eq!(ran.load(SeqCst), 0, "a dropped task's job ran");
        assert_eq!(captures.load(SeqCst), 1_000, "captures dropped != spawned");
    });
}

/// Pool of two, the other thread held: a job's wait for a task it spawned runs the closure
/// inline, on the job's own thread, and the pool's copy of the job does nothing afterwards.
/// The value comes back; a panic comes back as the payload (`join`, `catch_unwind` on a
/// poll) or resumed (`wait`).
#[test]
fn a_claimed_job_runs_once_inline_and_gives_its_value_or_panic() {
    watchdog(|| {
        let pool = pool(2);
        let open = gate(&pool);
        let runs = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&runs);
        let outcome = pool.spawn_task(move || {
            let here = thread::current().id();
            let count = || {
                let counter = Arc::clone(&counter);
                move || counter.fetch_add(1, SeqCst)
            };
            let ran_on = bridge_rayon::spawn({
                let count = count();
                move || {
                    count();
                    thread::current().id()
                }
            })
            .wait();
            let joined = bridge_rayon::spawn({
                let count = count();
                move || -> u8 {
                    count();
                    panic::panic_any(9u32)
                }
            })
            .join();
            let polled = bridge_core::block_on(
                bridge_rayon::spawn({
                    let count = count();
                    move || -> u8 {
                        count();
                        panic::panic_any(10u32)
                    }
                })
                .catch_unwind(),
            );
            let task = bridge_rayon::spawn({
                let count = count();
                move || -> u8 {
                    count();
                    panic::panic_any(11u32)
                }
            });
            let resumed = panic::catch_unwind(AssertUnwindSafe(|| task.wait()));
            (ran_on == here, joined, polled, resumed)
        });
        let (inline, joined, polled, resumed) = outcome.wait();
        assert!(inline, "the closure did not run on the waiting worker");
        let payload = |result: Result<u8, Error>| {
            *result
                .unwrap_err()
                .try_into_panic()
                .unwrap()
                .downcast::<u32>()
                .unwrap()
        };
        assert_eq!(payload(joined), 9);
        assert_eq!(payload(polled), 10);
        assert_eq!(*resumed.unwrap_err().downcast::<u32>().unwrap(), 11);
        drop(open);
        drain(&pool);
        assert_eq!(runs.load(SeqCst), 4, "a closure ran twice, or not at all");
    });
}

/// A task spawned on a worker and waited for anywhere else (another worker of its pool, a
/// worker of another pool) is not run by that waiter: the waiter blocks, and the closure
/// runs on the pool it was spawned on, on the thread the pool gives it.
/// Whoever waits on a worker of the task's pool runs the job it waits for if no pool thread
/// took it, whichever thread spawned it (here the main thread did). A thread outside rayon
/// never runs it, nor does a worker of another pool: they block until a thread of the
/// task's pool does.
#[test]
fn a_waiter_off_the_pool_blocks_instead_of_running_the_job() {
    watchdog(|| {
        let home = named_pool(1, "home");
        let other = named_pool(1, "other");
        let name = || thread::current().name().map(String::from);

        // The pool's only worker is held: the task stays queued.
        let hold = gate(&home);
        let task = home.spawn_task(name);
        let waiter = thread::Builder::new()
            .name("plain".into())
            .spawn(move || task.wait())
            .unwrap();
        thread::sleep(Duration::from_millis(50));
        assert!(!waiter.is_finished(), "a thread outside rayon ran the job");
        drop(hold);
        assert_eq!(waiter.join().unwrap().as_deref(), Some("home-0"));

        // The same on a worker of another pool, with and without a limit: it blocks.
        let hold = gate(&home);
        let mut task = home.spawn_task(name);
        let limited = other.install(|| task.wait_timeout(Duration::from_millis(50)));
        assert_eq!(limited, None, "a worker of another pool ran the job");
        let task = other.spawn_task(move || task.wait());
        thread::sleep(Duration::from_millis(50));
        assert!(!task.is_finished(), "a worker of another pool ran the job");
        drop(hold);
        assert_eq!(task.wait().as_deref(), Some("home-0"));

        // On a worker of its own pool, it runs the job.
        let task = home.spawn_task(name);
        assert_eq!(home.install(|| task.wait()).as_deref(), Some("home-0"));
    });
}

/// A result that arrived but was never taken is dropped with its `Task`, inside
/// `catch_unwind`: a destructor that panics (the value's, or the closure's panic
/// payload's) does not escape the drop, on a thread going about its business or on one
/// that is unwinding (where an escaping panic would abort the process).
#[test]
fn dropping_a_task_contains_a_panicking_destructor_of_its_result() {
    struct PanicOnDrop(Arc<AtomicUsize>);
    impl Drop for PanicOnDrop {
        fn drop(&mut self) {
            self.0.fetch_add(1, SeqCst);
            panic!("a result's destructor panicked");
        }
    }
    fn finished<T>(task: &Task<T>) -> bool {
        format!("{task:?}").contains("true")
    }
    fn arrived<T>(task: Task<T>) -> Task<T> {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !finished(&task) {
            assert!(Instant::now() < deadline, "the task never finished");
            thread::sleep(Duration::from_millis(1));
        }
        task
    }
    watchdog(|| {
        let drops = Arc::new(AtomicUsize::new(0));
        let value = |drops: &Arc<AtomicUsize>| {
            let drops = Arc::clone(drops);
            arrived(bridge_rayon::spawn(move || PanicOnDrop(drops)))
        };
        let payload = |drops: &Arc<AtomicUsize>| {
            let drops = Arc::clone(drops);
            arrived(bridge_rayon::spawn(move || -> u8 {
                panic::panic_any(PanicOnDrop(drops))
            }))
        };
        drop(value(&drops));
        drop(payload(&drops));
        assert_eq!(drops.load(SeqCst), 2);

        let (value, payload) = (value(&drops), payload(&drops));
        let unwound = thread::spawn(move || {
            let _held = (value, payload);
            panic::panic_any("the holder panicked");
        })
        .join()
        .unwrap_err();
        assert_eq!(unwound.downcast_ref::<&str>(), Some(&"the holder panicked"));
        assert_eq!(drops.load(SeqCst), 4);
    });
}

/// On the spawning worker, the first poll claims the job and is ready at once; a poll after
/// that finds its own claim, runs nothing, and panics with the "no value" message, as a
/// re-poll of a completed task does anywhere.
#[test]
fn a_poll_after_an_inline_claim_runs_nothing_and_reports_no_value() {
    use std::future::Future;
    use std::task::{Context, Poll, Waker};
    watchdog(|| {
        let pool = pool(1);
        let runs = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&runs);
        let (first, again) = pool
            .spawn_task(move || {
                let mut task = bridge_rayon::spawn(move || counter.fetch_add(1, SeqCst) + 40);
                let mut cx = Context::from_waker(Waker::noop());
                let first = std::pin::Pin::new(&mut task).poll(&mut cx);
                let again = panic::catch_unwind(AssertUnwindSafe(|| {
                    let _ = std::pin::Pin::new(&mut task).poll(&mut cx);
                }));
                (first, again.unwrap_err())
            })
            .wait();
        assert_eq!(first, Poll::Ready(40));
        let message = again
            .downcast_ref::<&str>()
            .copied()
            .or_else(|| again.downcast_ref::<String>().map(String::as_str))
            .unwrap_or("");
        assert!(
            message.contains("no value"),
            "unexpected panic: {message:?}"
        );
        drain(&pool);
        assert_eq!(runs.load(SeqCst), 1);
    });
}

/// A panic payload that counts its drops.
struct Payload(Arc<AtomicUsize>);

impl Drop for Payload {
    fn drop(&mut self) {
        self.0.fetch_add(1, SeqCst);
    }
}

/// A result whose destructor panics with a [`Payload`].
struct PanicsWithPayload(Arc<AtomicUsize>);

impl Drop for PanicsWithPayload {
    fn drop(&mut self) {
        panic::panic_any(Payload(Arc::clone(&self.0)));
    }
}

#[test]
fn detaching_a_task_whose_result_arrived_contains_its_destructor_panic() {
    // The result is in the channel before `detach`: the detaching thread drops it, and its
    // destructor's panic must stay inside `detach` (as in a `Task`'s drop), payload dropped.
    watchdog(|| {
        let payload_drops = Arc::new(AtomicUsize::new(0));
        let drops = Arc::clone(&payload_drops);
        let task = bridge_rayon::spawn(move || PanicsWithPayload(drops));
        while !task.is_finished() {
            thread::sleep(Duration::from_millis(1));
        }
        let detached = panic::catch_unwind(AssertUnwindSafe(move || task.detach()));
        assert!(detached.is_ok(), "the destructor's panic escaped detach");
        assert_eq!(
            payload_drops.load(SeqCst),
            1,
            "the panic payload was not dropped"
        );
    });
}

/// A result nobody takes, whose destructor panics with a payload of its own: the pool drops
/// the result quietly and then the payload too (counted), instead of leaking it.
#[test]
fn the_payload_of_a_panicking_result_destructor_is_dropped_not_leaked() {
    watchdog(|| {
        let payload_drops = Arc::new(AtomicUsize::new(0));
        let pool = pool(1);
        for _ in 0..10 {
            let drops = Arc::clone(&payload_drops);
            // Detached: the result is unwanted, and the pool thread drops it.
            pool.spawn_task(move || PanicsWithPayload(drops)).detach();
        }
        drain(&pool);
        let deadline = Instant::now() + Duration::from_secs(10);
        while payload_drops.load(SeqCst) < 10 {
            assert!(
                Instant::now() < deadline,
                "payloads leaked: {}",
                payload_drops.load(SeqCst)
            );
            thread::sleep(Duration::from_millis(1));
        }
    });
}

/// A take that gives the value (or the closure's panic) without a poll terminates the task,
/// as the poll that completes it does: `try_get`, `wait_timeout` and `wait_deadline` leave
/// `is_terminated()` true, and a later take reports the value gone. A timed wait that gives
/// up takes nothing: the task stays live.
#[test]
fn a_take_by_try_get_or_a_timed_wait_terminates_the_task() {
    use futures::future::FusedFuture;
    watchdog(|| {
        let mut task = bridge_rayon::spawn(|| 1u8);
        let value = loop {
            if let Some(value) = task.try_get() {
                break value;
            }
            thread::yield_now();
        };
        assert_eq!(value, 1);
        assert!(
            task.is_terminated(),
            "try_get took the value, yet the task is live"
        );
        assert!(task.is_finished());
        let again = panic::catch_unwind(AssertUnwindSafe(|| task.try_get())).unwrap_err();
        assert!(
            message(&*again).contains("no value"),
            "{:?}",
            message(&*again)
        );

        let mut task = bridge_rayon::spawn(|| 2u8);
        assert_eq!(task.wait_timeout(WATCHDOG), Some(2));
        assert!(
            task.is_terminated(),
            "wait_timeout took the value, yet the task is live"
        );

        let mut task = bridge_rayon::spawn(|| 3u8);
        assert_eq!(task.wait_deadline(Instant::now() + WATCHDOG), Some(3));
        assert!(
            task.is_terminated(),
            "wait_deadline took the value, yet the task is live"
        );

        // The closure's panic, resumed by try_get, is taken too.
        let mut task = bridge_rayon::spawn(|| -> u8 { panic::panic_any(4u32) });
        while !task.is_finished() {
            thread::yield_now();
        }
        let payload = panic::catch_unwind(AssertUnwindSafe(|| task.try_get())).unwrap_err();
        assert_eq!(payload.downcast_ref::<u32>(), Some(&4));
        assert!(
            task.is_terminated(),
            "try_get resumed the panic, yet the task is live"
        );

        // A timed wait that gives up takes nothing.
        let pool = pool(1);
        let open = gate(&pool);
        let mut task = pool.spawn_task(|| 5u8);
        assert_eq!(task.wait_timeout(LIMIT), None);
        assert!(!task.is_terminated());
        drop(open);
        assert_eq!(futures::executor::block_on(&mut task), 5);
        assert!(task.is_terminated());
    });
}

/// A `select!` loop as users write it: a task beside a stream of ticks, where a tick takes
/// the task's value once it is there (with `try_get`, or a timed wait). Once a branch took
/// it, the loop must skip the task (it is terminated): polling it again panics. The loop
/// ends through `complete` when the ticks run out.
#[test]
fn a_select_loop_skips_a_task_whose_value_a_branch_took() {
    fn by_try_get(task: &mut Task<u32>) -> u32 {
        loop {
            if let Some(value) = task.try_get() {
                break value;
            }
            thread::yield_now();
        }
    }
    fn by_wait_timeout(task: &mut Task<u32>) -> u32 {
        task.wait_timeout(WATCHDOG)
            .expect("the task did not finish")
    }
    for take in [by_try_get as fn(&mut Task<u32>) -> u32, by_wait_timeout] {
        watchdog(move || {
            use futures::StreamExt;
            let pool = pool(1);
            // The task stays queued until the first tick opens the gate.
            let mut open = Some(gate(&pool));
            let mut task = pool.spawn_task(|| 7u32);
            let (tick_tx, mut ticks) = futures::channel::mpsc::unbounded::<u32>();
            for n in 0..4 {
                tick_tx.unbounded_send(n).unwrap();
            }
            drop(tick_tx);
            let mut got = Vec::new();
            futures::executor::block_on(async {
                loop {
                    futures::select! {
                        value = task => got.push(("awaited", value)),
                        tick = ticks.select_next_some() => {
                            if tick == 0 {
                                drop(open.take());
                                got.push(("taken", take(&mut task)));
                            }
                        }
                        complete => break,
                    }
                }
            });
            assert_eq!(got, [("taken", 7)]);
        });
    }
}

/// The message of a panic payload, if it is a string.
fn message(payload: &(dyn std::any::Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("")
}
