//! What tokio promises a future run by its own `block_on`, kept by the no-runtime route,
//! checked as users write it, from plain threads:
//!
//! - a future that wakes itself (`yield_now` loops, `select!` with an always-ready branch, a
//!   `JoinHandle` polled by hand) lets the tasks it spawned and its timers progress while it
//!   polls (the I/O runtime's workers run them, as a multi-thread runtime's do under
//!   tokio's `Handle::block_on`: how many polls that takes depends on how soon a worker
//!   picks the task up);
//! - a call from a thread-local destructor at thread exit completes, and a panic hook that
//!   counts every panic sees none.
#![cfg(not(bridge_loom))]

mod common;

use bridge_tokio::run_blocking;
use common::watchdog;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};

use std::time::{Duration, Instant};

/// One test at a time: the timers and yield counts here are not shared with another test's
/// load.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Runs `make()` under tokio's own current-thread `block_on` and through the bridge from a
/// plain thread; both outputs.
fn beside_tokio<F, T>(make: impl Fn() -> F + Send + Sync + 'static) -> (T, T)
where
    F: std::future::Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let reference = rt.block_on(make());
    let bridged = watchdog(60, move || run_blocking(make()));
    (reference, bridged)
}

/// A task spawned by the future finishes while the future only yields: polls of the
/// `JoinHandle` (`is_finished`) between `yield_now`s, as a progress loop does.
#[test]
fn a_yield_now_loop_lets_its_spawned_task_finish() {
    let _serial = serial();
    let (tokio_yields, bridge_yields) = beside_tokio(|| async {
        let task = tokio::spawn(async { (0..1_000u64).sum::<u64>() });
        let mut yields = 0u64;
        while !task.is_finished() {
            yields += 1;
            tokio::task::yield_now().await;
        }
        assert_eq!(task.await.unwrap(), 499_500);
        yields
    });
    // Under tokio's current-thread `block_on` one yield is enough: the task runs before the
    // next poll. Through the bridge a worker of the I/O runtime runs it meanwhile (perhaps
    // before the first look); the loop finishing with the task's value is the promise (the
    // watchdog fails a loop that never does).
    assert_eq!(tokio_yields, 1);
    let _ = bridge_yields;
}

/// A `JoinHandle` polled by hand, with a waker that wakes the future itself each time.
#[test]
fn a_join_handle_polled_by_hand_finishes() {
    let _serial = serial();
    let (tokio_polls, bridge_polls) = beside_tokio(|| async {
        let mut task = tokio::spawn(async { 7u8 });
        let mut polls = 0u64;
        let value = std::future::poll_fn(|cx| {
            polls += 1;
            let noop = std::task::Context::from_waker(std::task::Waker::noop());
            let mut noop = noop;
            match std::pin::Pin::new(&mut task).poll(&mut noop) {
                std::task::Poll::Ready(value) => std::task::Poll::Ready(value.unwrap()),
                std::task::Poll::Pending => {
                    cx.waker().wake_by_ref();
                    std::task::Poll::Pending
                }
            }
        })
        .await;
        assert_eq!(value, 7);
        polls
    });
    // As for the yields above: under tokio one poll by hand after the first.
    assert_eq!(tokio_polls, 2);
    let _ = bridge_polls;
}

/// A loop that spends tokio's budget (`consume_budget`) until a task it spawned finishes.
/// Outside a runtime's scheduler tokio gives a poll no budget, so the loop never yields: a
/// worker of the I/O runtime runs the task meanwhile.
/// (Not in the differential corpus: a poll loop on a multi-thread runtime's worker, which
/// runs unconstrained so as not to spend its task's budget, spins the same way, and holds
/// the worker whose queue has the task.)
#[test]
fn a_consume_budget_loop_lets_its_spawned_task_finish() {
    let _serial = serial();
    let (reference, bridged) = beside_tokio(|| async {
        let task = tokio::spawn(async { (0..1_000u64).sum::<u64>() });
        while !task.is_finished() {
            tokio::task::consume_budget().await;
        }
        task.await.unwrap()
    });
    assert_eq!(reference, bridged);
}

/// A tokio `timeout` around a loop that only yields fires at its time: the timer is turned
/// between the polls.
#[test]
fn a_timeout_around_a_yielding_loop_fires() {
    let _serial = serial();
    let outcome = watchdog(60, || {
        let started = Instant::now();
        let timed = run_blocking(async {
            tokio::time::timeout(Duration::from_millis(50), async {
                loop {
                    tokio::task::yield_now().await;
                }
            })
            .await
        });
        (timed.is_err(), started.elapsed())
    });
    assert!(outcome.0, "the loop cannot end by itself");
    // Under tokio it fires within a millisecond or two of 50 ms; a runtime whose timers never turned
    // its timer between polls fired after 0.5 to 10 s. The bound only has to tell those
    // apart on a loaded machine.
    assert!(
        outcome.1 < Duration::from_millis(400),
        "fired after {:?}",
        outcome.1
    );
}

/// `select!` with an always-ready branch beside a timer, in a loop: the timer's branch wins
/// once its time comes.
#[test]
fn select_with_an_always_ready_branch_lets_the_timer_fire() {
    let _serial = serial();
    let (tokio_rounds, bridge_rounds) = beside_tokio(|| async {
        let started = Instant::now();
        let sleep = tokio::time::sleep(Duration::from_millis(20));
        tokio::pin!(sleep);
        let mut rounds = 0u64;
        loop {
            tokio::select! {
                _ = &mut sleep => break,
                _ = tokio::task::yield_now() => rounds += 1,
            }
        }
        (rounds, started.elapsed())
    });
    assert!(tokio_rounds.0 > 0 && bridge_rounds.0 > 0);
    // The timer's 20 ms, give or take scheduling on a loaded machine; a runtime that never
    // turned its timer between polls fired it after seconds.
    assert!(
        bridge_rounds.1 < Duration::from_millis(400),
        "fired after {:?}",
        bridge_rounds.1
    );
}

/// A thread-local destructor that flushes through `run_blocking` at thread exit, on threads
/// that made calls before: every flush completes, and a panic hook that counts every panic sees none.
#[test]
fn thread_exit_flushes_complete_with_no_panic_any_hook_sees() {
    let _serial = serial();
    static PANICS: AtomicUsize = AtomicUsize::new(0);
    static FLUSHED: AtomicUsize = AtomicUsize::new(0);
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        PANICS.fetch_add(1, SeqCst);
        previous(info);
    }));

    struct Flush;
    impl Drop for Flush {
        fn drop(&mut self) {
            let n = run_blocking(async {
                tokio::time::sleep(Duration::from_millis(1)).await;
                1
            });
            FLUSHED.fetch_add(n, SeqCst);
        }
    }
    thread_local! {
        static FLUSH: Flush = const { Flush };
    }

    let threads: Vec<_> = (0..8)
        .map(|_| {
            std::thread::spawn(|| {
                // Thread-locals are destroyed in the reverse order of their first use: tokio's
                // runtime context outlives the flush, its per-thread parker does not.
                run_blocking(async { tokio::time::sleep(Duration::from_millis(1)).await });
                FLUSH.with(|_| {});
                let rt = tokio::runtime::Runtime::new().unwrap();
                rt.block_on(async { tokio::time::sleep(Duration::from_millis(1)).await });
                drop(rt);
                std::thread::sleep(Duration::from_millis(50));
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    let _ = std::panic::take_hook();
    assert_eq!(FLUSHED.load(SeqCst), 8);
    assert_eq!(PANICS.load(SeqCst), 0, "a panic reached the hook");
}
