//! `bridge_tokio::metrics()`: exact counts of calls by route, and the handoff pool's threads,
//! after known sequences.
//!
//! The counters and the pool are process-wide, so every test here takes `SERIAL`, starts
//! from an empty pool, and asserts on differences between snapshots. Not in loom builds,
//! which have no process-wide pool.
#![cfg(not(bridge_loom))]

mod common;

use bridge_tokio::IoMetrics;
use common::{current_thread, multi_thread};
use std::sync::{Arc, Barrier, Mutex, MutexGuard, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

/// How long an idle handoff thread lives in this binary: long enough to see it idle, short
/// enough to wait for it to retire.
const IDLE: Duration = Duration::from_millis(300);

/// One test at a time, each starting from an empty handoff pool.
fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    let guard = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    bridge_tokio::settings::set_handoff_keep_alive(IDLE);
    wait_until("the earlier handoff threads to retire", || {
        bridge_tokio::metrics().handoff_threads_alive == 0
    });
    guard
}

/// Waits until `condition` holds; fails the test after 30 s (a liveness limit).
fn wait_until(what: &str, condition: impl Fn() -> bool) {
    let give_up = Instant::now() + Duration::from_secs(30);
    while !condition() {
        assert!(Instant::now() < give_up, "still waiting for {what}");
        thread::sleep(Duration::from_millis(1));
    }
}

/// The calls counted since `before`: block in place, handoff, inline.
fn calls_since(before: &IoMetrics) -> [u64; 3] {
    let now = bridge_tokio::metrics();
    assert_eq!(now.calls(), now.on_worker + now.handoff + now.inline);
    [
        now.on_worker - before.on_worker,
        now.handoff - before.handoff,
        now.inline - before.inline,
    ]
}

#[test]
fn each_call_counts_once_by_the_route_of_its_context() {
    let _serial = serial();
    let multi = multi_thread();
    let current = current_thread();

    let before = bridge_tokio::metrics();
    assert_eq!(bridge_tokio::run_blocking(async { 1 }), 1);
    assert_eq!(calls_since(&before), [0, 0, 1], "a plain thread: inline");

    let before = bridge_tokio::metrics();
    let n = multi.block_on(async {
        tokio::spawn(async { bridge_tokio::run_blocking(async { 2 }) })
            .await
            .unwrap()
    });
    assert_eq!(n, 2);
    assert_eq!(calls_since(&before), [1, 0, 0], "a worker: block in place");

    let before = bridge_tokio::metrics();
    assert_eq!(
        current.block_on(async { bridge_tokio::run_blocking(async { 3 }) }),
        3
    );
    assert_eq!(
        calls_since(&before),
        [0, 1, 0],
        "a current-thread runtime: handoff"
    );

    // A call nested in a handed-off future counts on its own: the handoff thread polls
    // with the I/O runtime (multi-thread) entered and no runtime of its own, so the nested
    // call is polled right there (`Inline`).
    let before = bridge_tokio::metrics();
    let n = current.block_on(async {
        bridge_tokio::run_blocking(async { bridge_tokio::run_blocking(async { 4 }) })
    });
    assert_eq!(n, 4);
    assert_eq!(calls_since(&before), [0, 1, 1]);
}

#[test]
fn every_form_of_the_call_counts_once() {
    let _serial = serial();
    let before = bridge_tokio::metrics();
    let results = [
        bridge_tokio::run_blocking(async { 1 }),
        bridge_tokio::try_run_blocking(async { 1 }).unwrap(),
        bridge_tokio::try_run_blocking_timeout(async { 1 }, Duration::from_secs(60)).unwrap(),
    ];
    assert_eq!(results.iter().sum::<i32>(), 3);
    assert_eq!(calls_since(&before), [0, 0, 3]);

    // Failed calls count too: a panic, a timeout, a panic handed off from a current-thread
    // runtime.
    let before = bridge_tokio::metrics();
    assert!(bridge_tokio::try_run_blocking(async { panic!("bad frame") }).is_err());
    let slow = async { tokio::time::sleep(Duration::from_secs(60)).await };
    assert!(bridge_tokio::try_run_blocking_timeout(slow, Duration::from_millis(1)).is_err());
    let handed_off = current_thread()
        .block_on(async { bridge_tokio::try_run_blocking(async { panic!("bad frame") }) });
    assert!(handed_off.is_err_and(|err| err.is_panic()));
    assert_eq!(calls_since(&before), [0, 1, 2]);
}

#[test]
fn calls_from_threads_that_have_exited_are_kept() {
    let _serial = serial();
    let before = bridge_tokio::metrics();
    let threads: Vec<_> = (0..4)
        .map(|_| {
            thread::spawn(|| {
                for _ in 0..5 {
                    bridge_tokio::run_blocking(async {});
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    assert_eq!(calls_since(&before), [0, 0, 20]);
}

/// Starts `n` threads that each hand off one call from a current-thread runtime, its future
/// holding its handoff thread at `hold` (shared with the test, `n + 1` parties) until the
/// test meets it there a second time.
fn held_handoffs(n: usize, hold: &Arc<Barrier>) -> Vec<thread::JoinHandle<()>> {
    (0..n)
        .map(|_| {
            let hold = Arc::clone(hold);
            thread::spawn(move || {
                current_thread().block_on(async {
                    bridge_tokio::run_blocking(async {
                        hold.wait();
                        hold.wait();
                    })
                });
            })
        })
        .collect()
}

#[test]
fn handoff_threads_alive_idle_and_peak_follow_a_burst() {
    let _serial = serial();
    let before = bridge_tokio::metrics();
    assert_eq!(before.handoff_threads_alive, 0);
    let hold = Arc::new(Barrier::new(4));
    let callers = held_handoffs(3, &hold);
    hold.wait();
    // Three calls at once, each on a thread of its own.
    let busy = bridge_tokio::metrics();
    assert_eq!(busy.handoff_threads_alive, 3);
    assert_eq!(busy.handoff_threads_idle, 0);
    assert_eq!(busy.handoff_queued, 0);
    assert!(busy.handoff_threads_peak >= 3);
    hold.wait();
    for caller in callers {
        caller.join().unwrap();
    }
    // A handoff thread goes back to the pool before it sends the outcome: all three are
    // idle once the calls have returned (and retire after `IDLE`).
    let idle = bridge_tokio::metrics();
    assert_eq!(idle.handoff_threads_alive, 3);
    assert_eq!(idle.handoff_threads_idle, 3);
    assert_eq!(calls_since(&before), [0, 3, 0]);
    wait_until("the burst's threads to retire", || {
        bridge_tokio::metrics().handoff_threads_alive == 0
    });
    let after = bridge_tokio::metrics();
    assert_eq!(after.handoff_threads_idle, 0);
    assert_eq!(after.handoff_threads_peak, busy.handoff_threads_peak);
}

#[test]
fn calls_waiting_for_the_cap_count_as_queued() {
    let _serial = serial();
    let cap = bridge_tokio::settings::handoff_threads();
    bridge_tokio::settings::set_handoff_threads(1);
    let hold = Arc::new(Barrier::new(2));
    // The first call takes the only thread and holds it.
    let first = held_handoffs(1, &hold);
    hold.wait();
    // Two more wait for it.
    let queued: Vec<_> = (0..2)
        .map(|_| {
            thread::spawn(|| {
                current_thread().block_on(async { bridge_tokio::run_blocking(async { 5 }) })
            })
        })
        .collect();
    wait_until("two calls to queue", || {
        bridge_tokio::metrics().handoff_queued == 2
    });
    let m = bridge_tokio::metrics();
    assert_eq!((m.handoff_threads_alive, m.handoff_threads_idle), (1, 0));
    hold.wait();
    for caller in first {
        caller.join().unwrap();
    }
    for caller in queued {
        assert_eq!(caller.join().unwrap(), 5);
    }
    bridge_tokio::settings::set_handoff_threads(cap);
    assert_eq!(bridge_tokio::metrics().handoff_queued, 0);
}
