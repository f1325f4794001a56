//! The pool threads keep the OS's default time slice, unless the user turns on
//! `set_yield_after_long_polls`: then a pool thread that runs the CPU side's polls asks for
//! the longest slice (Linux 6.12 and later), keeps its nice value, and keeps the slice after
//! the poll; the caller and the threads a poll starts keep the default.
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

/// The slices of a future task's poll on `pool` (with the slice of a thread it starts, and
/// its nice value), of a stream's items made there, and of the pool thread afterwards.
struct Seen {
    poll: Option<Duration>,
    nice: i32,
    started: Option<Duration>,
    items: Vec<Option<Duration>>,
    after: Option<Duration>,
}

fn look(pool: &Arc<rayon::ThreadPool>) -> Seen {
    let (poll, nice, started) = pool
        .spawn_future_task(async {
            let started = std::thread::spawn(|| thread_slice().unwrap())
                .join()
                .unwrap();
            (thread_slice().unwrap(), thread_nice().unwrap(), started)
        })
        .wait();
    let items = futures::stream::iter(0..100).map(|_| thread_slice().unwrap());
    let items: Vec<Option<Duration>> =
        futures::executor::block_on(pool.spawn_stream(items, 8).collect());
    assert_eq!(items.len(), 100);
    Seen {
        poll,
        nice,
        started,
        items,
        after: pool.install(|| thread_slice().unwrap()),
    }
}

/// One test: the setting is the process's.
#[test]
fn the_pool_threads_slice_changes_only_when_the_user_asks() {
    watchdog(|| {
        let default = default_slice();
        let caller = thread_slice().unwrap();
        let long = default.map(|_| MAX_SLICE);

        // Off (the default): closures, future tasks and streams leave the slice alone.
        let pool = pool_at_nice_3();
        assert_eq!(pool.install(|| bridge_rayon::spawn(|| 1).wait()), 1);
        let seen = look(&pool);
        assert_eq!(seen.poll, default);
        assert!(seen.items.iter().all(|&slice| slice == default));
        assert_eq!(seen.after, default);
        assert_eq!(seen.nice, 3);

        // On: a future task's poll and a stream's items run with the longest slice, at the
        // same nice value; a thread started in a poll has the default; the pool thread keeps
        // the slice afterwards; the caller's never changes.
        bridge_core::configure()
            .yield_after_long_polls(true)
            .apply();
        let pool = pool_at_nice_3();
        assert_eq!(pool.install(|| thread_slice().unwrap()), default);
        let seen = look(&pool);
        bridge_core::configure()
            .yield_after_long_polls(false)
            .apply();
        assert_eq!(seen.poll, long);
        assert_eq!(seen.nice, 3);
        assert_eq!(seen.started, default);
        assert!(seen.items.iter().all(|&slice| slice == long));
        assert_eq!(seen.after, long);
        assert_eq!(
            thread_slice().unwrap(),
            caller,
            "the caller's slice did not change"
        );
    });
}
