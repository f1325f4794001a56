//! Feature `tracing`: the handoff pool logs a new worker (debug) and the start of a burst of
//! queued calls at its cap (info, once per burst). Its own binary: the pool starts empty.
#![cfg(feature = "tracing")]

mod trace_recorder;

use std::time::{Duration, Instant};
use trace_recorder::{install, seen, seen_prefix};
use tracing::{Level, info_span};

#[test]
fn pool_growth_and_a_burst_of_queued_calls_are_logged() {
    install();
    // The pool of this binary starts empty, and this is its only test. At a cap of one
    // thread, a call that holds the only worker and three more behind it: the queue goes
    // from empty to non-empty once, so one event.
    bridge_tokio::settings::set_handoff_threads(1);
    let (release, hold) = tokio::sync::oneshot::channel::<()>();
    let holder = std::thread::spawn(move || {
        current_thread().block_on(async move {
            bridge_tokio::run_blocking(async move { hold.await.unwrap() });
        })
    });
    // Wait until the holder occupies the worker.
    let deadline = Instant::now() + Duration::from_secs(10);
    while pool_stats() != (1, 0, 0) {
        assert!(Instant::now() < deadline, "the holder never started");
        std::thread::sleep(Duration::from_millis(5));
    }
    let queued: Vec<_> = (0..3)
        .map(|_| {
            std::thread::spawn(|| {
                current_thread().block_on(async {
                    info_span!("queued_caller").in_scope(|| bridge_tokio::run_blocking(async { 1 }))
                })
            })
        })
        .collect();
    while pool_stats().2 < 3 {
        assert!(Instant::now() < deadline, "the calls never queued");
        std::thread::sleep(Duration::from_millis(5));
    }
    release.send(()).unwrap();
    holder.join().unwrap();
    for caller in queued {
        assert_eq!(caller.join().unwrap(), 1);
    }
    bridge_tokio::settings::set_handoff_threads(512);
    let bursts: Vec<_> = seen_prefix("handoff pool at its cap")
        .into_iter()
        .filter(|seen| seen.span == Some("queued_caller"))
        .collect();
    assert_eq!(bursts.len(), 1, "{bursts:?}");
    assert_eq!(bursts[0].level, Level::INFO);
    // The holder's call started the pool's one worker, in its own span (none).
    let started = seen("handoff pool: a new worker thread started");
    assert_eq!(started.len(), 1, "{started:?}");
    assert_eq!(started[0].level, Level::DEBUG);
}

fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
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
