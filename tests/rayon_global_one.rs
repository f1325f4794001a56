//! The global pool with one thread, in a fresh process: its only worker waits for CPU-side
//! work queued on that pool (a future task, a stream, a closure), with no call before that
//! could have taught the bridge anything about the pool. Each shape must finish.
#![cfg(all(not(bridge_loom), feature = "tokio", feature = "rayon"))]

use futures::StreamExt;
use std::panic::{self, AssertUnwindSafe};
use std::sync::{Once, mpsc};
use std::time::Duration;

fn one_thread_global_pool() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build_global()
            .expect("this test binary builds the global pool first");
    });
}

/// Runs `f` on the global pool's only worker and fails the test if it does not finish within
/// a minute.
fn on_the_worker<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    one_thread_global_pool();
    let (tx, rx) = mpsc::channel();
    rayon::spawn(move || {
        let _ = tx.send(panic::catch_unwind(AssertUnwindSafe(f)));
    });
    match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(Ok(value)) => value,
        Ok(Err(payload)) => panic::resume_unwind(payload),
        Err(_) => panic!("{what}: hung (no result within 60 s)"),
    }
}

#[test]
fn the_only_worker_waits_for_its_work() {
    // In one test, in this order: the first call is the future task's wait, in a fresh
    // process.
    assert_eq!(
        on_the_worker("spawn_future.wait", || bridge::cpu::spawn_future(async {
            1
        })
        .wait()),
        1
    );
    assert_eq!(
        on_the_worker("run_blocking(spawn_future)", || {
            bridge::run_blocking(bridge::cpu::spawn_future(async {
                tokio::time::sleep(Duration::from_millis(1)).await;
                2
            }))
        }),
        2
    );
    assert_eq!(
        on_the_worker("run_blocking(spawn_cpu.next)", || {
            bridge::run_blocking(async {
                bridge::stream::on_cpu(futures::stream::iter([3u64]), 1)
                    .next()
                    .await
            })
        }),
        Some(3)
    );
    assert_eq!(
        on_the_worker("iter_blocking(spawn_cpu)", || {
            bridge::iter_blocking(bridge::stream::on_cpu(futures::stream::iter(0..500u64), 2))
                .sum::<u64>()
        }),
        (0..500u64).sum::<u64>()
    );
    assert_eq!(
        on_the_worker("broadcast", || {
            rayon::broadcast(|_| bridge::run_blocking(bridge::cpu::spawn_future(async { 4u64 })))
        }),
        vec![4]
    );
    // A task spawned from outside the pool and waited for by its only worker.
    let task = bridge::spawn(|| 5);
    assert_eq!(on_the_worker("spawned outside", move || task.wait()), 5);
}
