//! Who waits for whom on rayon: every worker of a pool (1, 2 and 8 threads) blocks at once in
//! a synchronous call that waits for CPU-side work queued on that same pool (a future task, a
//! stream pumped on the pool, a closure), the shape of a `par_iter` over sync queries. Each
//! waiter must run what it waits for; under a watchdog, every shape gives the right answer.
#![cfg(all(not(bridge_loom), feature = "tokio", feature = "rayon"))]

use bridge::cpu::ThreadPoolExt;
use futures::StreamExt;
use rayon::prelude::*;
use std::panic::{self, AssertUnwindSafe};
use std::sync::{Arc, mpsc};
use std::time::Duration;

/// Runs `f` on its own thread and fails the test if it does not finish within a minute.
fn watchdog<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(panic::catch_unwind(AssertUnwindSafe(f)));
    });
    match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(Ok(value)) => value,
        Ok(Err(payload)) => panic::resume_unwind(payload),
        Err(_) => panic!("{what}: hung (no result within 60 s)"),
    }
}

fn pool(threads: usize) -> Arc<rayon::ThreadPool> {
    Arc::new(
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap(),
    )
}

/// Every worker of a pool of each size runs `call` at once (a broadcast), and then a
/// `par_iter` of 4 calls per worker does; each result must be `expected`.
fn every_worker_waits(
    what: &'static str,
    expected: u64,
    call: impl Fn(&Arc<rayon::ThreadPool>) -> u64 + Send + Sync + Clone + 'static,
) {
    for threads in [1, 2, 8] {
        let call = call.clone();
        let results = watchdog(what, move || {
            let pool = pool(threads);
            let mut all = pool.broadcast(|_| call(&pool));
            all.extend(pool.install(|| {
                (0..4 * threads)
                    .into_par_iter()
                    .map(|_| call(&pool))
                    .collect::<Vec<_>>()
            }));
            all
        });
        assert_eq!(results.len(), 5 * threads, "{what} on {threads} threads");
        assert!(
            results.iter().all(|&r| r == expected),
            "{what} on {threads} threads: {results:?}"
        );
    }
}

/// The items of a CPU-side stream that every test sums.
const ITEMS: u64 = 300;
const SUM: u64 = ITEMS * (ITEMS - 1) / 2;

#[test]
fn run_blocking_of_a_future_task() {
    every_worker_waits("run_blocking(spawn_future_task)", 42, |pool| {
        bridge::run_blocking(pool.spawn_future_task(async {
            tokio::task::yield_now().await;
            42
        }))
    });
}

#[test]
fn run_blocking_of_a_closure_task() {
    every_worker_waits("run_blocking(spawn_task)", 7, |pool| {
        let pool = Arc::clone(pool);
        bridge::run_blocking(async move { pool.spawn_task(|| 7).await })
    });
}

#[test]
fn wait_and_join_of_a_future_task() {
    every_worker_waits("spawn_future_task(..).wait()", 3, |pool| {
        let waited = pool
            .spawn_future_task(async {
                tokio::time::sleep(Duration::from_millis(1)).await;
                1
            })
            .wait();
        let joined = pool.spawn_future_task(async { 2 }).join().unwrap();
        waited + joined
    });
}

#[test]
fn run_blocking_of_a_cpu_stream() {
    every_worker_waits("run_blocking(spawn_stream)", SUM, |pool| {
        let items = pool.spawn_stream(futures::stream::iter(0..ITEMS), 4);
        bridge::run_blocking(items.fold(0, |sum, n| async move { sum + n }))
    });
}

#[test]
fn iter_blocking_of_a_cpu_stream() {
    every_worker_waits("iter_blocking(spawn_stream)", SUM, |pool| {
        bridge::iter_blocking(pool.spawn_stream(futures::stream::iter(0..ITEMS), 1)).sum()
    });
}

#[test]
fn io_side_feeding_a_cpu_stream() {
    // The shape of a query over an object store: reads on the I/O side, each decoded on the
    // pool, consumed by the synchronous call.
    every_worker_waits("spawn_io -> spawn_stream", SUM * 2, |pool| {
        let reads = bridge::stream::on_io(
            futures::stream::iter(0..ITEMS).then(|n| async move {
                tokio::task::yield_now().await;
                n
            }),
            8,
        );
        let decoded = pool.spawn_stream(reads.map(|n| n * 2), 4);
        bridge::run_blocking(decoded.fold(0, |sum, n| async move { sum + n }))
    });
}

#[test]
fn nested_waits() {
    // A future task whose poll makes a synchronous call that waits for another future task
    // and a closure of the same pool, waited for from every worker.
    every_worker_waits("nested", 6, |pool| {
        let inner_pool = Arc::clone(pool);
        bridge::run_blocking(pool.spawn_future_task(async move {
            let nested = bridge::run_blocking(inner_pool.spawn_future_task(async { 2 }));
            let closure = inner_pool.spawn_task(|| 3).wait();
            nested + closure + 1
        }))
    });
}

/// What one synchronous call waits for, nested `depth` levels deep: each level is CPU-side
/// work of the pool (a closure, a future task, a stream pumped on the pool) whose body makes
/// the next level's synchronous call; or a closure waited for with a time limit; or a closure
/// of another pool (its own threads run it, and the levels below run on that pool).
#[derive(Debug, Clone, Copy)]
enum Work {
    Closure,
    Future,
    Stream,
    Timed,
    OtherPool,
}

/// The threads of the other pool of [`Work::OtherPool`]: more than any pool of the cases, so
/// that a job that sees them ran on its own pool.
const OTHER_THREADS: usize = 5;

/// The other pool, shared by every case.
fn other_pool() -> Arc<rayon::ThreadPool> {
    static OTHER: std::sync::OnceLock<Arc<rayon::ThreadPool>> = std::sync::OnceLock::new();
    Arc::clone(OTHER.get_or_init(|| pool(OTHER_THREADS)))
}

fn nested_call(pool: &Arc<rayon::ThreadPool>, work: &[Work]) -> u64 {
    let Some((&first, rest)) = work.split_first() else {
        return 1;
    };
    let inner_pool = Arc::clone(pool);
    let rest = rest.to_vec();
    match first {
        Work::Closure => pool
            .spawn_task(move || nested_call(&inner_pool, &rest) + 1)
            .wait(),
        Work::Future => bridge::run_blocking(pool.spawn_future_task(async move {
            tokio::task::yield_now().await;
            nested_call(&inner_pool, &rest) + 1
        })),
        Work::Stream => {
            let items =
                futures::stream::iter(0..3u64).map(move |_| nested_call(&inner_pool, &rest) + 1);
            bridge::iter_blocking(pool.spawn_stream(items, 1)).sum::<u64>() / 3
        }
        // A time limit far beyond the work: a timed wait on a worker runs what it waits for
        // as an untimed one does, so it always gets the value.
        Work::Timed => pool
            .spawn_task(move || nested_call(&inner_pool, &rest) + 1)
            .wait_timeout(Duration::from_secs(50))
            .unwrap_or(0),
        // The job runs as the other pool's work: it sees that pool's threads (a 0 fails the
        // case), whoever waits for it.
        Work::OtherPool => {
            let other = other_pool();
            let inner = Arc::clone(&other);
            other
                .spawn_task(move || {
                    if rayon::current_num_threads() != OTHER_THREADS {
                        return 0;
                    }
                    nested_call(&inner, &rest) + 1
                })
                .wait()
        }
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]

    /// Random pool sizes, numbers of waiters at once (beyond the pool's threads: a
    /// `par_iter` queues the rest) and nesting of the kinds of work, timed waits and a
    /// second pool among them: every call gives its depth plus one, under a watchdog.
    #[test]
    fn waiters_on_their_own_pool_finish(
        threads in 1usize..=4,
        waiters in 1usize..=12,
        work in proptest::collection::vec(
            proptest::prop_oneof![
                proptest::strategy::Just(Work::Closure),
                proptest::strategy::Just(Work::Future),
                proptest::strategy::Just(Work::Stream),
                proptest::strategy::Just(Work::Timed),
                proptest::strategy::Just(Work::OtherPool),
            ],
            0..=3,
        ),
    ) {
        let expected = work.len() as u64 + 1;
        let description = format!("{threads} threads, {waiters} waiters, {work:?}");
        let results = watchdog("random waiters", move || {
            let pool = pool(threads);
            pool.install(|| {
                (0..waiters)
                    .into_par_iter()
                    .map(|_| nested_call(&pool, &work))
                    .collect::<Vec<_>>()
            })
        });
        proptest::prop_assert!(
            results.iter().all(|&r| r == expected),
            "{}: {:?}",
            description,
            results
        );
    }
}
