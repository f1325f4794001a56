//! `bridge_rayon::metrics()`: exact counts after known sequences.
//!
//! The counters are process-wide, so every test here takes `SERIAL` and asserts on the
//! difference between a snapshot before and one after its sequence; no other test of this
//! binary spawns a task meanwhile.

mod common;

use bridge_rayon::{CpuMetrics as Metrics, ThreadPoolExt};
use common::{gate, pool};
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread;
use std::time::Duration;

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The five task counters of `after.since(before)`, in the order spawned, started, finished,
/// panicked, cancelled.
fn delta(before: &Metrics) -> [u64; 5] {
    let d = bridge_rayon::metrics().since(before);
    [d.spawned, d.started, d.finished, d.panicked, d.cancelled]
}

#[test]
fn tasks_that_finish_count_as_spawned_started_and_finished() {
    let _serial = serial();
    let pool = pool(2);
    let before = bridge_rayon::metrics();
    let tasks: Vec<_> = (0..10u64).map(|n| pool.spawn_task(move || n * 2)).collect();
    let sum: u64 = tasks.into_iter().map(|task| task.wait()).sum();
    assert_eq!(sum, 90);
    assert_eq!(delta(&before), [10, 10, 10, 0, 0]);
    assert_eq!(bridge_rayon::metrics().queued(), before.queued());
    assert_eq!(bridge_rayon::metrics().running(), before.running());
}

#[test]
fn a_panic_counts_as_started_and_panicked_not_finished() {
    let _serial = serial();
    let pool = pool(1);
    let before = bridge_rayon::metrics();
    let err = pool
        .spawn_task(|| -> u8 { panic!("bad block") })
        .join()
        .unwrap_err();
    assert!(err.is_panic());
    assert_eq!(delta(&before), [1, 1, 0, 1, 0]);
}

#[test]
fn a_task_dropped_before_it_starts_counts_as_cancelled_once_the_pool_reaches_it() {
    let _serial = serial();
    let pool = pool(1);
    let open = gate(&pool);
    let before = bridge_rayon::metrics();
    let ran = Arc::new(AtomicBool::new(false));
    let cancelled = pool.spawn_task({
        let ran = Arc::clone(&ran);
        move || ran.store(true, SeqCst)
    });
    drop(cancelled);
    // Not reached yet: still queued behind the gate.
    assert_eq!(delta(&before), [1, 0, 0, 0, 0]);
    assert_eq!(bridge_rayon::metrics().queued(), before.queued() + 1);
    open.send(()).unwrap();
    // Jobs spawned from outside the pool start in order: this one after the cancelled one.
    pool.spawn_task(|| ()).wait();
    assert!(!ran.load(SeqCst), "a cancelled task ran");
    assert_eq!(delta(&before), [2, 1, 1, 0, 1]);
    assert_eq!(bridge_rayon::metrics().queued(), before.queued());
}

#[test]
fn tasks_behind_a_busy_pool_count_as_queued() {
    let _serial = serial();
    let pool = pool(1);
    let open = gate(&pool);
    let before = bridge_rayon::metrics();
    let tasks: Vec<_> = (0..5u32).map(|n| pool.spawn_fifo_task(move || n)).collect();
    let queued = bridge_rayon::metrics();
    assert_eq!(queued.queued(), before.queued() + 5);
    assert_eq!(queued.running(), before.running());
    open.send(()).unwrap();
    let values: Vec<u32> = tasks.into_iter().map(|task| task.wait()).collect();
    assert_eq!(values, [0, 1, 2, 3, 4]);
    let after = bridge_rayon::metrics();
    assert_eq!(after.queued(), before.queued());
    assert_eq!(delta(&before), [5, 5, 5, 0, 0]);
}

#[test]
fn a_job_its_waiter_runs_inline_counts_as_started() {
    let _serial = serial();
    // One thread, busy with the outer job: only the inline claim can run the inner one.
    let pool = pool(1);
    let before = bridge_rayon::metrics();
    let (outer_thread, inner_thread) = pool
        .spawn_task(|| {
            let inner = bridge_rayon::spawn(|| thread::current().id());
            (thread::current().id(), inner.wait())
        })
        .wait();
    assert_eq!(outer_thread, inner_thread);
    assert_eq!(delta(&before), [2, 2, 2, 0, 0]);
}

#[test]
fn every_way_to_spawn_is_counted_once() {
    let _serial = serial();
    let pool = pool(2);
    let global_limit = bridge_rayon::Limit::new(2);
    let limit = bridge_rayon::Limit::new(2).pool(Arc::new(common::pool(1)));
    let before = bridge_rayon::metrics();
    let values = [
        bridge_rayon::spawn(|| 1).wait(),
        bridge_rayon::spawn_fifo(|| 1).wait(),
        bridge_rayon::spawn_cancellable(|_| 1).wait(),
        pool.spawn_task(|| 1).wait(),
        pool.spawn_fifo_task(|| 1).wait(),
        pool.spawn_cancellable_task(|_| 1).wait(),
        global_limit.spawn_or_wait(|| 1).wait(),
        limit.spawn_or_wait(|| 1).wait(),
        limit.spawn(|| 1).wait(),
        limit.try_spawn(|| 1).ok().unwrap().wait(),
    ];
    assert_eq!(values.iter().sum::<i32>(), 10);
    assert_eq!(delta(&before), [10, 10, 10, 0, 0]);
}

#[test]
fn counts_made_on_threads_that_have_exited_are_kept() {
    let _serial = serial();
    let pool = Arc::new(pool(2));
    let before = bridge_rayon::metrics();
    // Each thread spawns (counted on its own shard) and exits before the snapshot; joined,
    // so its thread-local destructors have run.
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let pool = Arc::clone(&pool);
            thread::spawn(move || {
                for _ in 0..3 {
                    pool.spawn_task(|| ()).wait();
                }
                let cancelled = pool.spawn_task(|| ());
                drop(cancelled);
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    // The pool's threads, which count the starts and the cancels, exit too; a dropped pool
    // still runs (or finds cancelled) the jobs it was given.
    drop(pool);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let reached = || {
        let [_, started, _, _, cancelled] = delta(&before);
        started + cancelled
    };
    while reached() < 16 && std::time::Instant::now() < deadline {
        thread::sleep(Duration::from_millis(1));
    }
    // Each dropped task was cancelled, unless the pool started it before the drop.
    let [spawned, started, finished, panicked, cancelled] = delta(&before);
    assert_eq!((spawned, panicked), (16, 0));
    assert_eq!(started + cancelled, 16);
    assert!((12..=16).contains(&started), "{started} started");
    assert_eq!(finished, started);
}
