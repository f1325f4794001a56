//! A rayon worker that waits for something of the I/O side (a task, a `run_blocking`) which
//! needs CPU work queued on the worker's own pool, behind it: with every worker of the pool
//! waiting so, nothing would ever run that work. At the stall threshold the wait is counted
//! in `cpu.stalled_waits` and named, and the worker runs its pool's queued work: the wait
//! finishes. A wait that ends before the threshold is not counted.
//!
//! The threshold and the count are the process's: the tests of this file take turns (a
//! lock) and set the threshold to 100 ms. Each runs under a watchdog that fails it at 20 s.
#![cfg(all(not(bridge_loom), feature = "tokio", feature = "rayon"))]

use bridge::cpu::ThreadPoolExt;
use rayon::prelude::*;
use std::panic::{self, AssertUnwindSafe};
use std::sync::{Mutex, PoisonError, mpsc};
use std::time::{Duration, Instant};

const THRESHOLD: Duration = Duration::from_millis(100);

/// Runs `f` alone among this file's tests, with the threshold at [`THRESHOLD`], on a thread
/// of its own; fails if it takes 20 s. Returns the result and how many waits were counted.
fn watched<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> (T, u64) {
    static TURN: Mutex<()> = Mutex::new(());
    let _turn = TURN.lock().unwrap_or_else(PoisonError::into_inner);
    bridge::configure().stall_warning(THRESHOLD).apply();
    let before = bridge::metrics().cpu.stalled_waits;
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(panic::catch_unwind(AssertUnwindSafe(f)));
    });
    let result = match rx.recv_timeout(Duration::from_secs(20)) {
        Ok(Ok(value)) => value,
        Ok(Err(payload)) => panic::resume_unwind(payload),
        Err(_) => panic!("hung: not done within 20 s"),
    };
    (result, bridge::metrics().cpu.stalled_waits - before)
}

fn one_thread_pool() -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap()
}

#[test]
fn a_pools_only_worker_waiting_for_an_io_task_that_awaits_its_queued_work_finishes() {
    let (value, stalled) = watched(|| {
        let pool = one_thread_pool();
        pool.install(|| {
            let cpu = bridge::spawn(|| 5);
            bridge::spawn_io(async move { cpu.await + 1 }).wait()
        })
    });
    assert_eq!(value, 6);
    assert_eq!(stalled, 1, "the wait is named once");
}

#[test]
fn a_timed_wait_finishes_too() {
    let (value, stalled) = watched(|| {
        let pool = one_thread_pool();
        pool.install(|| {
            let cpu = bridge::spawn(|| 5);
            bridge::spawn_io(cpu).wait_timeout(Duration::from_secs(10))
        })
    });
    assert_eq!(value, Some(5));
    assert_eq!(stalled, 1);
}

#[test]
fn a_run_blocking_on_the_worker_finishes() {
    let (value, stalled) = watched(|| {
        let pool = one_thread_pool();
        pool.install(|| {
            let cpu = bridge::spawn(|| 5);
            bridge::run_blocking(async move { bridge::spawn_io(cpu).await })
        })
    });
    assert_eq!(value, 5);
    assert_eq!(stalled, 1);
}

#[test]
fn a_par_iter_whose_items_wait_so_finishes() {
    let (sum, stalled) = watched(|| {
        (0..16u64)
            .into_par_iter()
            .map(|n| {
                let cpu = bridge::spawn(move || n * n);
                bridge::spawn_io(cpu).wait()
            })
            .sum::<u64>()
    });
    assert_eq!(sum, (0..16u64).map(|n| n * n).sum::<u64>());
    assert!(stalled >= 1, "no wait was named");
}

/// The CPU work is queued by the I/O task, after the workers began to wait: it lands in the
/// global pool's queue, not on a worker's own deque.
#[test]
fn a_par_iter_whose_io_tasks_queue_the_cpu_work_later_finishes() {
    let (sum, stalled) = watched(|| {
        (0..16u64)
            .into_par_iter()
            .map(|n| bridge::spawn_io(async move { bridge::spawn(move || n + 1).await }).wait())
            .sum::<u64>()
    });
    assert_eq!(sum, (1..=16u64).sum::<u64>());
    assert!(stalled >= 1, "no wait was named");
}

/// A wait on a worker that ends before the threshold is not counted, and another pool's
/// queued work is never run by it.
#[test]
fn a_prompt_wait_is_not_counted() {
    let (ran_on, stalled) = watched(|| {
        let pool = one_thread_pool();
        let other = one_thread_pool();
        let queued_elsewhere = other.spawn_task(rayon::current_thread_index);
        let started = Instant::now();
        let waited = pool.install(|| {
            bridge::spawn_io(async {
                tokio::time::sleep(Duration::from_millis(10)).await;
                7
            })
            .wait()
        });
        assert_eq!(waited, 7);
        assert!(started.elapsed() < THRESHOLD * 5);
        queued_elsewhere.wait()
    });
    assert_eq!(ran_on, Some(0));
    assert_eq!(stalled, 0);
}
