//! `Limit`: the bound holds, room comes back (value, panic, cancel before start, a dropped
//! waiter), and waiters get room first come, first served.

mod common;

use bridge_rayon::{Limit, ThreadPoolExt};
use common::watchdog;
use futures::FutureExt;
use futures::executor::LocalPool;
use futures::task::LocalSpawnExt;
use std::cell::Cell;
use std::panic;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::thread;

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

#[test]
fn async_waiters_get_room_in_order_and_a_dropped_waiter_passes_it_on() {
    let limit = Limit::new(1);
    let mut cx = Context::from_waker(Waker::noop());
    let (gate_tx, gate_rx) = mpsc::channel::<()>();
    let held = limit
        .try_spawn(move || gate_rx.recv().is_ok())
        .ok()
        .unwrap();
    let mut first = Box::pin(limit.spawn(|| 1));
    let mut second = Box::pin(limit.spawn(|| 2));
    let mut third = Box::pin(limit.spawn(|| 3));
    assert!(first.poll_unpin(&mut cx).is_pending());
    assert!(second.poll_unpin(&mut cx).is_pending());
    assert!(third.poll_unpin(&mut cx).is_pending());
    assert!(
        limit.try_spawn(|| 0).is_err(),
        "a newcomer passed the queue"
    );
    gate_tx.send(()).unwrap();
    assert!(held.wait());
    // The room went to `first`, not to `second` or `third`.
    assert!(third.poll_unpin(&mut cx).is_pending());
    assert!(second.poll_unpin(&mut cx).is_pending());
    // `first` is dropped after the grant, before it takes it: the room goes to `second`.
    drop(first);
    let Poll::Ready(task) = second.poll_unpin(&mut cx) else {
        panic!("the dropped waiter's room did not pass on");
    };
    assert_eq!(task.wait(), 2);
    let task = futures::executor::block_on(third);
    assert_eq!(task.wait(), 3);
    assert_eq!(limit.in_flight(), 0);
}

#[test]
fn a_waiter_dropped_while_queued_takes_nothing_and_runs_nothing() {
    let limit = Limit::new(1);
    let mut cx = Context::from_waker(Waker::noop());
    let (gate_tx, gate_rx) = mpsc::channel::<()>();
    let held = limit
        .try_spawn(move || gate_rx.recv().is_ok())
        .ok()
        .unwrap();
    let ran = Arc::new(AtomicUsize::new(0));
    let counter = ran.clone();
    let mut waiting = Box::pin(limit.spawn(move || counter.fetch_add(1, SeqCst)));
    assert!(waiting.poll_unpin(&mut cx).is_pending());
    drop(waiting);
    gate_tx.send(()).unwrap();
    assert!(held.wait());
    assert_eq!(limit.in_flight(), 0);
    assert_eq!(ran.load(SeqCst), 0);
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
                    tasks.push(limit.spawn(work(running.clone(), peak.clone())).await);
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

/// The deadlock shape of a blocking caller on an executor's thread: a task of a
/// current-thread executor awaits room first (queued), then the same thread calls
/// `spawn_or_wait` (queued behind it) and blocks. The room freed next cannot go to the
/// task: its executor is this blocked thread. The blocking call must get it instead (it
/// passes the async waiters of its own thread), and the task gets the room after.
#[test]
fn spawn_or_wait_passes_a_queued_async_waiter_of_its_own_thread() {
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
            .spawn_local(async move { result.set(waiter.spawn(|| 1).await.await) })
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

/// The same shape, with the room already handed to the executor's task (it was woken, but
/// its executor has not run since) when its thread calls `spawn_or_wait`: the blocking call
/// takes that room over, the task queues again at the front and gets the next room.
#[test]
fn spawn_or_wait_takes_over_room_granted_to_an_async_waiter_of_its_own_thread() {
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
            .spawn_local(async move { result.set(waiter.spawn(|| 1).await.await) })
            .unwrap();
        executor.run_until_stalled();
        gate_tx.send(()).unwrap();
        // The room comes back before the value: now it is granted to the task.
        assert!(held.wait());
        assert_eq!((limit.in_flight(), queued(&limit)), (1, 0));
        assert_eq!(limit.spawn_or_wait(|| 2).wait(), 2);
        executor.run();
        assert_eq!(got.get(), 1, "the task never got the room");
        assert_eq!(limit.in_flight(), 0);
    });
}

/// The shape as it comes in async code on a tokio current-thread runtime: a spawned task
/// awaits room first, then the `block_on` body (same thread) calls `spawn_or_wait`.
#[test]
fn spawn_or_wait_in_a_current_thread_runtime_passes_its_own_spawned_waiter() {
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
            let spawned = tokio::spawn(async move { waiter.spawn(|| 1).await.await });
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
