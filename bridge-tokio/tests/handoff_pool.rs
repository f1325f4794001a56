//! The bounded handoff pool from outside: callers on current-thread runtimes hand their
//! futures to the pool, which never runs more threads than its cap, queues the rest in FIFO
//! order, lets a handed-off future hand off again, and lets idle threads retire.
//!
//! A binary of its own, since the cap is process-wide; the tests take one lock so that they
//! run one at a time, and each starts from an empty pool. Not in loom builds, which have no
//! process-wide pool (the loom models, `src/loom_models`, drive pools of their own).
#![cfg(not(bridge_loom))]

mod common;

use bridge_tokio::{run_blocking, try_run_blocking_timeout};
use common::{current_thread, watchdog};
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::{Arc, Mutex, MutexGuard, mpsc};
use std::time::{Duration, Instant};

/// One test at a time: they set the process-wide cap.
fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The pool's workers alive, idle, and the calls queued, as its metrics give them.
fn pool_stats() -> (usize, usize, usize) {
    let metrics = bridge_tokio::metrics();
    (
        metrics.handoff_threads_alive,
        metrics.handoff_threads_idle,
        metrics.handoff_queued,
    )
}

/// Workers alive, as the pool counts them.
fn workers() -> usize {
    pool_stats().0
}

/// Jobs queued for a worker.
fn queued() -> usize {
    pool_stats().2
}

/// Threads named `bridge-handoff` in this process, as the kernel lists them.
fn handoff_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .expect("/proc/self/task")
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
        .filter(|comm| comm.trim_end() == "bridge-handoff")
        .count()
}

/// Waits until `condition` holds; fails the test after 60 s (a liveness limit, not a speed
/// requirement).
fn wait_until(what: &str, condition: impl Fn() -> bool) {
    let give_up = Instant::now() + Duration::from_secs(60);
    while !condition() {
        assert!(Instant::now() < give_up, "still waiting for {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Short idle time, and no worker left from an earlier test.
fn empty_pool() {
    bridge_tokio::settings::set_handoff_keep_alive(Duration::from_millis(50));
    wait_until("the earlier workers to retire", || workers() == 0);
    wait_until("their threads to end", || handoff_threads() == 0);
}

/// `run_blocking(future)` from the body of a fresh current-thread runtime (the handoff route).
fn hand_off<T: Send + 'static>(future: impl Future<Output = T> + Send + 'static) -> T {
    current_thread().block_on(async { run_blocking(future) })
}

/// 2,000 concurrent callers, each on its own thread with its own current-thread runtime, hand
/// off a 5 ms timer through a pool capped at 8: every caller gets its own value back, and the
/// pool never runs more than 8 threads (its own count, and the kernel's list of threads named
/// `bridge-handoff`, sampled every millisecond throughout). The unbounded pool started a
/// thread per concurrent caller.
#[test]
fn two_thousand_callers_share_eight_threads() {
    const CALLERS: usize = 2_000;
    const CAP: usize = 8;
    let _serial = serial();
    empty_pool();
    bridge_tokio::settings::set_handoff_threads(CAP);

    let done = Arc::new(AtomicBool::new(false));
    let sampler = {
        let done = Arc::clone(&done);
        std::thread::spawn(move || {
            let (mut peak_workers, mut peak_threads, mut peak_queued) = (0, 0, 0);
            while !done.load(SeqCst) {
                peak_workers = peak_workers.max(workers());
                peak_threads = peak_threads.max(handoff_threads());
                peak_queued = peak_queued.max(queued());
                std::thread::sleep(Duration::from_millis(1));
            }
            (peak_workers, peak_threads, peak_queued)
        })
    };
    let callers: Vec<_> = (0..CALLERS)
        .map(|index| {
            std::thread::Builder::new()
                .stack_size(512 * 1024)
                .spawn(move || {
                    hand_off(async move {
                        tokio::time::sleep(Duration::from_millis(5)).await;
                        index
                    })
                })
                .expect("a caller thread")
        })
        .collect();
    for (index, caller) in callers.into_iter().enumerate() {
        assert_eq!(caller.join().expect("the caller"), index);
    }
    done.store(true, SeqCst);
    let (peak_workers, peak_threads, peak_queued) = sampler.join().unwrap();

    assert!(peak_workers <= CAP, "{peak_workers} workers alive at once");
    // A retired worker leaves the count a moment before its thread ends.
    assert!(
        peak_threads <= CAP + 2,
        "{peak_threads} handoff threads at once"
    );
    // The cap was reached: calls queued.
    assert!(peak_queued > 0, "no call ever queued");
    bridge_tokio::settings::set_handoff_threads(512);
}

/// With the cap at 1, a handed-off future builds a current-thread runtime on the handoff
/// thread and hands off again from there: the inner call does not wait for the pool's only
/// thread (busy waiting for it) but runs on a thread of its own, beyond the cap.
#[test]
fn nested_handoff_does_not_wait_for_the_pool() {
    let _serial = serial();
    empty_pool();
    bridge_tokio::settings::set_handoff_threads(1);
    let (value, workers_inside) = watchdog(60, || {
        hand_off(async {
            // On the handoff thread: leave the I/O runtime's context to start a runtime.
            tokio::task::block_in_place(|| {
                current_thread().block_on(async {
                    run_blocking(async {
                        tokio::time::sleep(Duration::from_millis(1)).await;
                        (5, workers())
                    })
                })
            })
        })
    });
    assert_eq!(value, 5);
    assert_eq!(workers_inside, 2, "the inner call runs on a second thread");
    bridge_tokio::settings::set_handoff_threads(512);
}

/// With the cap at 1 and its thread held by a first call, the next calls queue and then run
/// in the order they were made.
#[test]
fn queued_calls_run_in_fifo_order() {
    const QUEUED: usize = 8;
    let _serial = serial();
    empty_pool();
    bridge_tokio::settings::set_handoff_threads(1);
    let order = Arc::new(Mutex::new(Vec::new()));
    let (release, gate) = mpsc::channel::<()>();

    let first = {
        let order = Arc::clone(&order);
        std::thread::spawn(move || {
            hand_off(async move {
                // Holds the pool's only thread until the others are queued.
                gate.recv().unwrap();
                order.lock().unwrap().push(0);
            })
        })
    };
    wait_until("the first call to hold the thread", || {
        pool_stats() == (1, 0, 0)
    });
    let mut callers = vec![first];
    for index in 1..=QUEUED {
        let order = Arc::clone(&order);
        callers.push(std::thread::spawn(move || {
            hand_off(async move { order.lock().unwrap().push(index) })
        }));
        wait_until("the call to queue", || queued() == index);
    }
    assert_eq!(workers(), 1, "queued calls start no thread");
    release.send(()).unwrap();
    for caller in callers {
        caller.join().expect("the caller");
    }
    assert_eq!(*order.lock().unwrap(), (0..=QUEUED).collect::<Vec<_>>());
    bridge_tokio::settings::set_handoff_threads(512);
}

/// A worker retires once idle for the idle time: the pool's count and the kernel's list of
/// `bridge-handoff` threads both drop to zero.
#[test]
fn idle_workers_retire() {
    let _serial = serial();
    empty_pool();
    let inside = hand_off(async { (workers(), handoff_threads()) });
    assert_eq!(inside, (1, 1), "the call ran on one handoff thread");
    wait_until("the idle worker to retire", || workers() == 0);
    wait_until("its thread to end", || handoff_threads() == 0);
}

/// Sets the process-wide cap, and puts the default back when dropped (also when the test
/// fails, so that the next test starts from it).
struct Cap;

impl Cap {
    fn set(max: usize) -> Cap {
        bridge_tokio::settings::set_handoff_threads(max);
        Cap
    }
}

impl Drop for Cap {
    fn drop(&mut self) {
        bridge_tokio::settings::set_handoff_threads(512);
    }
}

/// Sets its flag when dropped.
struct DropMark<'a>(&'a AtomicBool);

impl Drop for DropMark<'_> {
    fn drop(&mut self) {
        self.0.store(true, SeqCst);
    }
}

/// With the cap at 1 and its thread held by a first call, a second call with a 50 ms timeout
/// queues, and returns a timeout while the first call still holds the thread: its job leaves
/// the queue, and its future is dropped unpolled before the call returns. The pool then runs
/// calls as before, with nothing left queued. The order of events shows it, not the clock:
/// the first call is released only once the second returned, or after a 10 s liveness limit
/// (the queued call used to wait for the thread to free up, so it returned only after the
/// release).
#[test]
fn a_queued_call_returns_at_its_deadline() {
    let _serial = serial();
    empty_pool();
    let _cap = Cap::set(1);
    let events = Arc::new(Mutex::new(Vec::new()));
    let (release, gate) = mpsc::channel::<()>();

    let first = {
        let events = Arc::clone(&events);
        std::thread::spawn(move || {
            hand_off(async move {
                // Holds the pool's only thread until the second call is done.
                gate.recv().unwrap();
                events.lock().unwrap().push("the first call ends");
            })
        })
    };
    wait_until("the first call to hold the thread", || {
        pool_stats() == (1, 0, 0)
    });

    let (returned, has_returned) = mpsc::channel();
    let second = {
        let events = Arc::clone(&events);
        std::thread::spawn(move || {
            let (polled, dropped) = (AtomicBool::new(false), AtomicBool::new(false));
            let mark = DropMark(&dropped);
            let future = async {
                let _mark = mark;
                polled.store(true, SeqCst);
            };
            let got = current_thread()
                .block_on(async { try_run_blocking_timeout(future, Duration::from_millis(50)) });
            events.lock().unwrap().push("the second call returns");
            let seen = (got, polled.load(SeqCst), dropped.load(SeqCst));
            returned.send(()).unwrap();
            seen
        })
    };
    // A liveness limit, not a speed requirement.
    let _ = has_returned.recv_timeout(Duration::from_secs(10));
    events.lock().unwrap().push("the first call is released");
    release.send(()).unwrap();
    first.join().expect("the first call");
    let (got, polled, dropped) = second.join().expect("the second call");

    assert_eq!(
        *events.lock().unwrap(),
        [
            "the second call returns",
            "the first call is released",
            "the first call ends"
        ],
        "the queued call waited for the thread instead of its deadline"
    );
    assert!(
        got.as_ref().is_err_and(|e| e.is_timeout()),
        "expected a timeout, got {got:?}"
    );
    assert!(!polled, "the queued future was polled");
    assert!(
        dropped,
        "the queued future was not dropped before the call returned"
    );
    assert_eq!(queued(), 0, "the job left the queue");
    // The pool works on.
    assert_eq!(hand_off(async { 5 }), 5);
    assert_eq!(queued(), 0);
}
