//! A time limit is the caller's own: with a task blocked in a sync call on every worker of
//! the shared I/O runtime (misbehaving background tasks of some client), which drives the
//! I/O and timers of calls with no runtime, a time-limited call from unrelated sync code
//! returns a timeout at its limit, not when the blockers let go. Alone in its test binary:
//! it holds every worker of the I/O runtime.
#![cfg(not(bridge_loom))]

mod common;

use bridge_tokio::{spawn_io, try_run_blocking_timeout};
use common::watchdog;
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

/// Every worker of the I/O runtime has a task blocked in a sync call (a misbehaving
/// background task of some client): a time-limited call from unrelated sync code returns a
/// timeout at its limit, not when the blockers let go.
#[test]
fn a_time_limit_holds_beside_blocked_tasks_on_every_io_worker() {
    let workers = std::thread::available_parallelism().map_or(1, usize::from);
    let release = Arc::new(Mutex::new(()));
    let held = release.lock().unwrap();
    let (blocked_tx, blocked) = mpsc::channel();
    let blockers: Vec<_> = (0..workers)
        .map(|_| {
            let (release, blocked_tx) = (release.clone(), blocked_tx.clone());
            spawn_io(async move {
                let _ = blocked_tx.send(());
                drop(release.lock().unwrap());
            })
        })
        .collect();
    for _ in 0..workers {
        blocked.recv_timeout(Duration::from_secs(30)).unwrap();
    }
    for _ in 0..3 {
        let started = Instant::now();
        let result = watchdog(60, || {
            try_run_blocking_timeout(
                async { tokio::time::sleep(Duration::from_secs(60)).await },
                Duration::from_millis(300),
            )
        });
        let took = started.elapsed();
        assert!(result.as_ref().is_err_and(|e| e.is_timeout()), "{result:?}");
        assert!(took < Duration::from_secs(3), "returned after {took:?}");
    }
    drop(held);
    for blocker in blockers {
        blocker.wait();
    }
}
