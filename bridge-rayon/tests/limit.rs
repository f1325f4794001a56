//! `Limit`: the bound holds, room comes back (value, panic, cancel before start, a dropped
//! waiter), and waiters get room first come, first served.

use bridge_rayon::{Limit, ThreadPoolExt};
use futures::FutureExt;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

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
