//! A pool thread that runs the CPU side's polls asks the OS for the longest time slice
//! (Linux 6.12 and later), keeps its nice value, and keeps the slice after the poll; a pool
//! thread that ran only closures keeps the default, and so do the caller and the threads a
//! poll starts.
#![cfg(all(not(bridge_loom), target_os = "linux"))]

mod common;

use bridge_core::__os::{MAX_SLICE, thread_nice, thread_slice};
use bridge_rayon::ThreadPoolExt;
use common::watchdog;
use futures::StreamExt;
use std::sync::Arc;
use std::time::Duration;

/// The slice a thread that never asked for one has (`None` before Linux 6.12).
fn default_slice() -> Option<Duration> {
    std::thread::spawn(|| thread_slice().unwrap())
        .join()
        .unwrap()
}

/// A pool of one thread at nice 3 (lower than the default, so that the test sees whether
/// asking for a slice kept it).
fn pool_at_nice_3() -> Arc<rayon::ThreadPool> {
    Arc::new(
        rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .start_handler(|_| bridge_rayon::lower_thread_priority(3).unwrap())
            .build()
            .unwrap(),
    )
}

#[test]
fn a_future_tasks_thread_asks_for_the_longest_slice_and_a_closures_thread_does_not() {
    watchdog(|| {
        let default = default_slice();
        let caller = thread_slice().unwrap();
        let long = default.map(|_| MAX_SLICE);

        let pool = pool_at_nice_3();
        // Closures only: the default.
        assert_eq!(pool.install(|| thread_slice().unwrap()), default);
        assert_eq!(pool.install(|| bridge_rayon::spawn(|| 1).wait()), 1);
        assert_eq!(pool.install(|| thread_slice().unwrap()), default);

        // In a future task's poll, the longest slice, at the same nice value; a thread started
        // there (a runtime built lazily in a poll, a blocking pool's thread) has the default.
        let (slice, nice, started) = pool
            .spawn_future_task(async {
                let started = std::thread::spawn(|| thread_slice().unwrap())
                    .join()
                    .unwrap();
                (thread_slice().unwrap(), thread_nice().unwrap(), started)
            })
            .wait();
        assert_eq!(slice, long);
        assert_eq!(nice, 3);
        assert_eq!(started, default);
        // Kept after the poll, for the closures that thread runs next.
        assert_eq!(pool.install(|| thread_slice().unwrap()), long);
        assert_eq!(
            thread_slice().unwrap(),
            caller,
            "the caller's slice did not change"
        );
    });
}

#[test]
fn a_streams_pump_asks_for_it_too() {
    watchdog(|| {
        let long = default_slice().map(|_| MAX_SLICE);
        let pool = pool_at_nice_3();
        let items = futures::stream::iter(0..100).map(|i| (i, thread_slice().unwrap()));
        let crossed: Vec<(i32, Option<Duration>)> =
            futures::executor::block_on(pool.spawn_stream(items, 8).collect());
        assert_eq!(crossed.len(), 100);
        for (k, (i, slice)) in crossed.into_iter().enumerate() {
            assert_eq!(i, k as i32);
            assert_eq!(slice, long, "item {i}");
        }
        assert_eq!(pool.install(|| thread_nice().unwrap()), 3);
    });
}
