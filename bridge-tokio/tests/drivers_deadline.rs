//! A time limit is the caller's own: with a task blocked in a sync call on every one of the
//! no-runtime route's drivers (a misbehaving background task of some client), a
//! time-limited call from unrelated sync code returns a timeout at its limit, not when the
//! blockers let go. Alone in its test binary: it holds every driver of the process.
#![cfg(not(bridge_loom))]

mod common;

use bridge_tokio::{run_blocking, try_run_blocking_timeout};
use common::watchdog;
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

/// Every driver has a task blocked in a sync call (a misbehaving background task of some
/// client): a time-limited call from unrelated sync code returns a timeout at its limit,
/// not when the blockers let go.
#[test]
fn a_time_limit_holds_beside_blocked_tasks_on_every_driver() {
    let drivers = std::thread::available_parallelism().map_or(1, usize::from);
    let release = Arc::new(Mutex::new(()));
    let held = release.lock().unwrap();
    let (blocked_tx, blocked) = mpsc::channel();
    // Blocking tasks on every driver: new threads take the drivers in turn, and each call
    // spawns a task on its driver and returns at its first poll; each driver's backstop
    // then runs its first such task, which blocks its thread on the lock the test holds.
    let spawners: Vec<_> = (0..drivers * 4)
        .map(|_| {
            let (release, blocked_tx) = (release.clone(), blocked_tx.clone());
            std::thread::spawn(move || {
                run_blocking(async move {
                    drop(tokio::spawn(async move {
                        let _ = blocked_tx.send(());
                        drop(release.lock().unwrap());
                    }));
                });
            })
        })
        .collect();
    for spawner in spawners {
        spawner.join().unwrap();
    }
    for _ in 0..drivers {
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
}
