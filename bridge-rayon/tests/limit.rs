//! `Limit`: the bound holds, room comes back (value, panic, cancel before start, a task
//! dropped while it waits), and waiting tasks get room first come, first served.

mod common;

use bridge_rayon::{Limit, ThreadPoolExt};
use common::watchdog;
use futures::executor::LocalPool;
use futures::task::LocalSpawnExt;
use std::cell::Cell;
use std::panic;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

/// How many callers wait for room (queued, not yet granted), from the limit's `Debug`.
fn queued(limit: &Limit) -> usize {
    let debug = format!("{limit:?}");
    let (_, rest) = debug
        .split_once("waiting: ")
        .expect("Debug shows the waiters");
    rest.trim_end_matches(|c: char| !c.is_ascii_digit())
        .parse()
        .expect("a count of waiters")
}

/// Spins until `done` holds; fails after the watchdog's time.
fn eventually(what: &str, done: impl Fn() -> bool) {
    let start = std::time::Instant::now();
    while !done() {
        assert!(start.elapsed() < common::WATCHDOG, "never: {what}");
        thread::sleep(Duration::from_millis(1));
    }
}

/// A pool of one thread, held by a job until the returned sender is used (or dropped).
fn held_pool() -> (Arc<rayon::ThreadPool>, mpsc::Sender<()>) {
    let pool = Arc::new(
        rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap(),
    );
    let (gate_tx, gate_rx) = mpsc::channel::<()>();
    let (started_tx, started_rx) = mpsc::channel::<()>();
    pool.spawn(move || {
        started_tx.send(()).unwrap();
        let _ = gate_rx.recv();
    });
    started_rx.recv().unwrap();
    (pool, gate_tx)
}

#[test]
fn try_spawn_refuses_when_full_and_room_comes_back_with_the_value() {
    let limit = Limit::new(2);
    let (gate_tx, gate_rx) = mpsc::channel::<()>();
    let gate_rx = Arc::new(Mutex::new(gate_rx));
    let gated = |rx: Arc<Mutex<mpsc::Receiver<()>>>| move || rx.lock().unwrap().recv().is_ok();
    let a = limit.try_spawn(gated(gate_rx.clone())).ok().unwrap();
    let b = limit.try_spawn(gated(gate_rx.clone())).ok().unwrap();
    assert_eq!(limit.in_flight(), 2);
    let refused = limit.try_spawn(|| 9).unwrap_err();
    assert_eq!(refused(), 9, "the closure comes back unrun");
    gate_tx.send(()).unwrap();
    gate_tx.send(()).unwrap();
    assert!(a.wait() && b.wait());
    // The room is given back before the result arrives.
    assert_eq!(limit.in_flight(), 0);
    assert_eq!(limit.try_spawn(|| 3).ok().unwrap().wait(), 3);
}

#[test]
fn a_panic_gives_the_room_back() {
    let limit = Limit::new(1);
    let err = limit
        .spawn_or_wait(|| -> u8 { panic!("bad block") })
        .join()
        .unwrap_err();
    assert!(err.is_panic());
    assert_eq!(limit.in_flight(), 0);
    // `spawn` with room: the closure goes to the pool at once.
    let err = limit
        .spawn(|| -> u8 { panic!("bad block") })
        .join()
        .unwrap_err();
    assert!(err.is_panic());
    assert_eq!(limit.in_flight(), 0);
    // `spawn` that waits for room first: the closure runs in the waiting task's poll.
    let (gate_tx, gate_rx) = mpsc::channel::<()>();
    let held = limit.spawn(move || gate_rx.recv().is_ok());
    let waiting = limit.spawn(|| -> u8 { panic!("bad block") });
    assert_eq!(queued(&limit), 1);
    gate_tx.send(()).unwrap();
    assert!(held.wait());
    let payload = panic::catch_unwind(panic::AssertUnwindSafe(|| waiting.wait())).unwrap_err();
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"bad block"));
    assert_eq!(limit.in_flight(), 0);
    assert_eq!(limit.spawn(|| 7).wait(), 7);
}

#[test]
fn a_task_cancelled_before_it_starts_gives_the_room_back_unrun() {
    let (pool, gate) = held_pool();
    let limit = Limit::new(1).pool(pool.clone());
    let ran = Arc::new(AtomicUsize::new(0));
    let counter = ran.clone();
    let task = limit
        .try_spawn(move || counter.fetch_add(1, SeqCst))
        .ok()
        .unwrap();
    assert!(limit.try_spawn(|| 0).is_err());
    drop(task);
    // The job is still in the pool's queue: its room is still taken.
    assert_eq!(limit.in_flight(), 1);
    gate.send(()).unwrap();
    // The pool drops the cancelled job, and the permit with it.
    assert_eq!(limit.spawn_or_wait(|| 5).wait(), 5);
    assert_eq!(pool.spawn_task(|| ()).wait(), ());
    assert_eq!(ran.load(SeqCst), 0, "a cancelled job ran");
    assert_eq!(limit.in_flight(), 0);
}

/// `spawn` returns the task at once, whether there is room or not; the task gives the
/// value with one `.await` (or `wait`), and a task that found the limit full runs only once
/// the running one has finished: the bound holds.
#[test]
fn spawn_returns_a_task_at_once_and_the_task_waits_for_room() {
    watchdog(|| {
        let limit = Limit::new(1);
        let running = Arc::new(AtomicUsize::new(0));
        let peak = Arc::new(AtomicUsize::new(0));
        let (gate_tx, gate_rx) = mpsc::channel::<()>();
        let (started_tx, started_rx) = mpsc::channel::<()>();
        let work = |running: Arc<AtomicUsize>, peak: Arc<AtomicUsize>| {
            let now = running.fetch_add(1, SeqCst) + 1;
            peak.fetch_max(now, SeqCst);
            running.fetch_sub(1, SeqCst);
        };
        let (r, p) = (running.clone(), peak.clone());
        let first = limit.spawn(move || {
            let now = r.fetch_add(1, SeqCst) + 1;
            p.fetch_max(now, SeqCst);
            started_tx.send(()).unwrap();
            let open = gate_rx.recv().is_ok();
            r.fetch_sub(1, SeqCst);
            open
        });
        started_rx.recv().unwrap();
        // The limit is full, held by a running task: this call returns at once all the same.
        let (r, p) = (running.clone(), peak.clone());
        let mut second = limit.spawn(move || {
            work(r, p);
            2
        });
        assert_eq!((limit.in_flight(), queued(&limit)), (1, 1));
        assert_eq!(second.wait_timeout(Duration::from_millis(50)), None);
        gate_tx.send(()).unwrap();
        assert_eq!(
            futures::executor::block_on(async { (first.await, second.await) }),
            (true, 2)
        );
        let (r, p) = (running.clone(), peak.clone());
        let third = limit.spawn(move || {
            work(r, p);
            3
        });
        assert_eq!(third.wait(), 3);
        assert_eq!(
            peak.load(SeqCst),
            1,
            "two tasks of a limit of 1 ran at once"
        );
        assert_eq!(limit.in_flight(), 0);
    });
}

/// The waiting tasks get room in the order of their `spawn` calls (their place is taken in
/// the call, whenever the pool first polls them), behind a task that holds the room, and
/// no newcomer passes them.
#[test]
fn waiting_tasks_get_room_in_the_order_of_their_calls() {
    watchdog(|| {
        let limit = Limit::new(1);
        let (gate_tx, gate_rx) = mpsc::channel::<()>();
        let held = limit.spawn(move || gate_rx.recv().is_ok());
        let order = Arc::new(Mutex::new(Vec::new()));
        let tasks: Vec<_> = (1..=6)
            .map(|n| {
                let order = order.clone();
                limit.spawn(move || order.lock().unwrap().push(n))
            })
            .collect();
        assert_eq!(queued(&limit), 6);
        assert!(limit.try_spawn(|| 0).is_err(), "a newcomer passed the line");
        gate_tx.send(()).unwrap();
        assert!(held.wait());
        for task in tasks {
            task.wait();
        }
        assert_eq!(*order.lock().unwrap(), [1, 2, 3, 4, 5, 6]);
        assert_eq!(limit.in_flight(), 0);
    });
}

/// A task dropped while it waits in line leaves it (its future is dropped on the pool),
/// its closure never runs, and no room is lost: the room comes back to 0 and a later task
/// runs.
#[test]
fn a_task_dropped_while_it_waits_gives_its_place_up_and_runs_nothing() {
    watchdog(|| {
        let limit = Limit::new(1);
        let (gate_tx, gate_rx) = mpsc::channel::<()>();
        let held = limit.spawn(move || gate_rx.recv().is_ok());
        let ran = Arc::new(AtomicUsize::new(0));
        let counter = ran.clone();
        let waiting = limit.spawn(move || counter.fetch_add(1, SeqCst));
        assert_eq!(queued(&limit), 1);
        drop(waiting);
        eventually("the dropped task left the line", || queued(&limit) == 0);
        assert_eq!(limit.in_flight(), 1);
        gate_tx.send(()).unwrap();
        assert!(held.wait());
        assert_eq!(limit.in_flight(), 0);
        assert_eq!(limit.spawn(|| 5).wait(), 5);
        assert_eq!(ran.load(SeqCst), 0, "a dropped task's closure ran");
        assert_eq!(limit.in_flight(), 0);
    });
}

/// A task dropped after room was handed to it, before its closure started, hands the room
/// on to the next task in line. The waiting tasks' polls run on a pool held by a job, so
/// that the grant stays untaken while the test looks; the room is held through a clone of
/// the limit on the global pool (clones share the bound).
#[test]
fn a_task_dropped_after_its_grant_hands_the_room_on() {
    watchdog(|| {
        let global = Limit::new(1);
        let (pool, pool_gate) = held_pool();
        let limit = global.clone().pool(pool.clone());
        let (gate_tx, gate_rx) = mpsc::channel::<()>();
        let held = global.spawn(move || gate_rx.recv().is_ok());
        let order = Arc::new(Mutex::new(Vec::new()));
        let [first, second] = [1, 2].map(|n| {
            let order = order.clone();
            limit.spawn(move || order.lock().unwrap().push(n))
        });
        assert_eq!(queued(&limit), 2);
        gate_tx.send(()).unwrap();
        assert!(held.wait());
        // The room went to `first`, which cannot take it while the pool is held.
        assert_eq!((limit.in_flight(), queued(&limit)), (1, 1));
        drop(first);
        pool_gate.send(()).unwrap();
        second.wait();
        assert_eq!(*order.lock().unwrap(), [2]);
        assert_eq!(limit.in_flight(), 0);
        assert_eq!(limit.spawn(|| 3).wait(), 3);
    });
}

/// `spawn_future` waits in the same line: it returns its task at once, and the future runs
/// once the room comes back, holding it until it completes.
#[test]
fn spawn_future_waits_in_the_same_line() {
    watchdog(|| {
        let limit = Limit::new(1);
        let (gate_tx, gate_rx) = mpsc::channel::<()>();
        let held = limit.spawn(move || gate_rx.recv().is_ok());
        let order = Arc::new(Mutex::new(Vec::new()));
        let (a, b) = (order.clone(), order.clone());
        let fut = limit.spawn_future(async move {
            a.lock().unwrap().push("future");
            40
        });
        let closure = limit.spawn(move || {
            b.lock().unwrap().push("closure");
            2
        });
        assert_eq!(queued(&limit), 2);
        gate_tx.send(()).unwrap();
        assert!(held.wait());
        let sum = futures::executor::block_on(async { fut.await + closure.await });
        assert_eq!(sum, 42);
        assert_eq!(*order.lock().unwrap(), ["future", "closure"]);
        assert_eq!(limit.in_flight(), 0);
    });
}

#[test]
fn blocking_and_async_callers_never_exceed_the_bound() {
    let limit = Limit::new(3);
    let running = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let work = |running: Arc<AtomicUsize>, peak: Arc<AtomicUsize>| {
        move || {
            let now = running.fetch_add(1, SeqCst) + 1;
            peak.fetch_max(now, SeqCst);
            let sum = (0..20_000u64).fold(0u64, |a, n| a.wrapping_add(n * n));
            running.fetch_sub(1, SeqCst);
            sum
        }
    };
    std::thread::scope(|s| {
        for _ in 0..3 {
            let (limit, running, peak) = (limit.clone(), running.clone(), peak.clone());
            s.spawn(move || {
                for _ in 0..30 {
                    limit
                        .spawn_or_wait(work(running.clone(), peak.clone()))
                        .detach();
                }
            });
        }
        let (limit, running, peak) = (limit.clone(), running.clone(), peak.clone());
        s.spawn(move || {
            futures::executor::block_on(async {
                let mut tasks = Vec::new();
                for _ in 0..30 {
                    tasks.push(limit.spawn(work(running.clone(), peak.clone())));
                }
                for task in tasks {
                    task.await;
                }
            })
        });
    });
    assert!(peak.load(SeqCst) <= 3, "peak {}", peak.load(SeqCst));
    // The detached tasks finish on their own; every permit comes back.
    while limit.in_flight() > 0 {
        std::thread::yield_now();
    }
    for _ in 0..3 {
        limit.try_spawn(|| ()).ok().unwrap().detach();
    }
}

#[test]
#[should_panic(expected = "max_in_flight must be at least 1")]
fn a_limit_of_zero_panics() {
    let _ = Limit::new(0);
}

/// The deadlock shape that `spawn_or_wait`'s exception to first come, first served is
/// for: a limit on a pool of one thread, whose only worker spawns a task through the limit
/// when it is full (the task queues for room, and its polls can only run on this worker),
/// then calls `spawn_or_wait` (queued behind the task) and blocks. The room freed next
/// cannot go to the task: nothing can poll it while its worker blocks. The blocking call
/// gets it instead (it passes the waiters of its own thread), and the task gets the room
/// after.
#[test]
fn spawn_or_wait_on_a_worker_passes_a_task_it_queued_whose_polls_are_its_own() {
    watchdog(|| {
        let global = Limit::new(1);
        let pool = Arc::new(common::pool(1));
        let limit = global.clone().pool(pool.clone());
        let (gate_tx, gate_rx) = mpsc::channel::<()>();
        // The room is held by a task on the global pool (clones share the bound).
        let held = global.spawn(move || gate_rx.recv().is_ok());
        // Frees the room once the worker's blocking call queued behind its task.
        let opener = {
            let limit = limit.clone();
            thread::spawn(move || {
                while queued(&limit) < 2 {
                    thread::yield_now();
                }
                gate_tx.send(()).unwrap();
            })
        };
        let inner = limit.clone();
        let (first, second) = pool
            .spawn_task(move || {
                let first = inner.spawn(|| 1);
                let second = inner.spawn_or_wait(|| 2);
                (first, second)
            })
            .wait();
        opener.join().unwrap();
        assert!(held.wait());
        assert_eq!((second.wait(), first.wait()), (2, 1));
        assert_eq!(limit.in_flight(), 0);
    });
}

/// The same shape, with the room already handed to the worker's task (not yet polled: its
/// poll waits behind the job on the worker) when the worker calls `spawn_or_wait`: the
/// blocking call takes that room over, the task queues again at the front and gets the
/// next room.
#[test]
fn spawn_or_wait_on_a_worker_takes_over_room_granted_to_a_task_it_queued() {
    watchdog(|| {
        let global = Limit::new(1);
        let pool = Arc::new(common::pool(1));
        let limit = global.clone().pool(pool.clone());
        let (gate_tx, gate_rx) = mpsc::channel::<()>();
        let held = global.spawn(move || gate_rx.recv().is_ok());
        let inner = limit.clone();
        let (first, second) = pool
            .spawn_task(move || {
                let first = inner.spawn(|| 1);
                gate_tx.send(()).unwrap();
                // The room comes back before the value: now it is granted to `first`.
                assert!(held.wait());
                assert_eq!((inner.in_flight(), queued(&inner)), (1, 0));
                let second = inner.spawn_or_wait(|| 2);
                (first, second)
            })
            .wait();
        assert_eq!((second.wait(), first.wait()), (2, 1));
        assert_eq!(limit.in_flight(), 0);
    });
}

/// A task of a current-thread executor that awaits a limit's task, and then the executor's
/// own thread calling `spawn_or_wait`: the task's wait for room runs on the pool, not on
/// the executor, so the blocking call never waits on something its own thread would have
/// to poll. Both get their room, in turn.
#[test]
fn spawn_or_wait_on_an_executor_thread_whose_task_awaits_a_waiting_task() {
    watchdog(|| {
        let limit = Limit::new(1);
        let (gate_tx, gate_rx) = mpsc::channel::<()>();
        let held = limit
            .try_spawn(move || gate_rx.recv().is_ok())
            .ok()
            .unwrap();
        let mut executor = LocalPool::new();
        let got = Rc::new(Cell::new(0));
        let (waiter, result) = (limit.clone(), got.clone());
        executor
            .spawner()
            .spawn_local(async move { result.set(waiter.spawn(|| 1).await) })
            .unwrap();
        executor.run_until_stalled();
        assert_eq!(queued(&limit), 1, "the task is not queued for room");
        // Frees the room once this thread's blocking call queued behind the task.
        let opener = {
            let limit = limit.clone();
            thread::spawn(move || {
                while queued(&limit) < 2 {
                    thread::yield_now();
                }
                gate_tx.send(()).unwrap();
            })
        };
        assert_eq!(limit.spawn_or_wait(|| 2).wait(), 2);
        opener.join().unwrap();
        assert!(held.wait());
        executor.run();
        assert_eq!(got.get(), 1, "the task never got the room");
        assert_eq!(limit.in_flight(), 0);
    });
}

/// The shape as it comes in async code on a tokio current-thread runtime: a spawned task
/// awaits a limit's task that waits for room, then the `block_on` body (same thread) calls
/// `spawn_or_wait`.
#[test]
fn spawn_or_wait_in_a_current_thread_runtime_beside_its_own_waiting_task() {
    watchdog(|| {
        let limit = Limit::new(1);
        let (gate_tx, gate_rx) = mpsc::channel::<()>();
        let held = limit
            .try_spawn(move || gate_rx.recv().is_ok())
            .ok()
            .unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let (first, second) = runtime.block_on(async {
            let waiter = limit.clone();
            let spawned = tokio::spawn(async move { waiter.spawn(|| 1).await });
            while queued(&limit) < 1 {
                tokio::task::yield_now().await;
            }
            let opener = {
                let limit = limit.clone();
                thread::spawn(move || {
                    while queued(&limit) < 2 {
                        thread::yield_now();
                    }
                    gate_tx.send(()).unwrap();
                })
            };
            let second = limit.spawn_or_wait(|| 2).wait();
            opener.join().unwrap();
            (spawned.await.unwrap(), second)
        });
        assert!(held.wait());
        assert_eq!((first, second), (1, 2));
        assert_eq!(limit.in_flight(), 0);
    });
}
