//! Calls with no runtime while every thread that could drive their I/O is busy with a long
//! call of its own, as users write them: a call whose future makes a nested call that needs
//! a task it spawned, calls nested three deep, and the same nested calls while every worker
//! of the shared I/O runtime sits in a long call. Each finishes on time, with and without a
//! time limit (the limits here only turn a hang into a failure).
//!
//! Alone in its test binary: it keeps the process's I/O side busy.
#![cfg(not(bridge_loom))]

mod common;

use bridge_tokio::{run_blocking, spawn_io, try_run_blocking_timeout};
use common::watchdog;
use std::thread;
use std::time::{Duration, Instant};

/// The busy callers' calls.
const LONG: Duration = Duration::from_millis(400);
/// A timer that the calls under test wait for: it fires after the busy callers' calls end.
const OUTLASTS: Duration = Duration::from_millis(500);

fn cpus() -> usize {
    thread::available_parallelism().map_or(1, usize::from)
}

/// One long timer call per CPU on threads of their own, started and given time to begin.
fn busy_callers() -> Vec<thread::JoinHandle<()>> {
    let busy: Vec<_> = (0..cpus())
        .map(|_| thread::spawn(|| run_blocking(async { tokio::time::sleep(LONG).await })))
        .collect();
    thread::sleep(Duration::from_millis(50));
    busy
}

/// The future sleeps, then makes a nested call that needs a task it spawned, whose timer
/// fires after the busy callers' calls end: the value at about the task's end (0.5 s), not
/// at a time limit.
fn sleep_then_nested_call_on_a_spawned_task() -> Result<u64, bridge_core::Error> {
    try_run_blocking_timeout(
        async {
            let task = tokio::spawn(async {
                tokio::time::sleep(OUTLASTS).await;
                7u64
            });
            tokio::time::sleep(Duration::from_millis(100)).await;
            try_run_blocking_timeout(async { task.await.unwrap() }, Duration::from_secs(5))
        },
        Duration::from_secs(10),
    )
    .and_then(|nested| nested)
}

/// Three calls nested in each other: the outermost waits on a timer first, then makes the
/// nested calls, the innermost on a timer that fires after the busy callers' calls end.
fn three_deep() -> u64 {
    run_blocking(async {
        tokio::time::sleep(Duration::from_millis(100)).await;
        run_blocking(async {
            run_blocking(async {
                tokio::time::sleep(OUTLASTS).await;
                3u64
            })
        })
    })
}

#[test]
fn a_woken_call_that_makes_a_nested_call_finishes_while_every_caller_is_busy() {
    watchdog(60, || {
        for _ in 0..3 {
            let busy = busy_callers();
            let started = Instant::now();
            let got = sleep_then_nested_call_on_a_spawned_task();
            let took = started.elapsed();
            assert_eq!(got.ok(), Some(7));
            assert!(took < Duration::from_secs(2), "took {took:?}");
            for b in busy {
                b.join().unwrap();
            }
        }
    });
}

#[test]
fn three_nested_calls_finish_while_every_caller_is_busy() {
    for _ in 0..3 {
        let busy = busy_callers();
        let started = Instant::now();
        let (tx, rx) = std::sync::mpsc::channel();
        thread::spawn(move || tx.send(three_deep()));
        let got = rx.recv_timeout(Duration::from_secs(5));
        let took = started.elapsed();
        assert_eq!(got.ok(), Some(3), "after {took:?}");
        assert!(took < Duration::from_secs(2), "took {took:?}");
        for b in busy {
            b.join().unwrap();
        }
    }
}

/// Every worker of the shared I/O runtime in a long call of its own (a task that calls
/// `run_blocking`, which leaves the scheduler): nested calls from plain threads go on.
#[test]
fn nested_calls_finish_while_every_io_worker_is_in_a_long_call() {
    watchdog(60, || {
        let long: Vec<_> = (0..cpus())
            .map(|_| spawn_io(async { run_blocking(tokio::time::sleep(LONG)) }))
            .collect();
        thread::sleep(Duration::from_millis(50));
        let started = Instant::now();
        let callers: Vec<_> = (0..4 * cpus()).map(|_| thread::spawn(three_deep)).collect();
        for c in callers {
            assert_eq!(c.join().unwrap(), 3);
        }
        assert_eq!(sleep_then_nested_call_on_a_spawned_task().ok(), Some(7));
        let took = started.elapsed();
        assert!(took < Duration::from_secs(2), "took {took:?}");
        for t in long {
            t.wait();
        }
    });
}
