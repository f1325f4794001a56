//! A job runs as its own pool's work, whoever waits for it: a worker of another pool that
//! waits blocks (it is no worker of the job's pool), and so does a worker inside a tokio
//! runtime's `block_on`, where a job that starts a runtime of its own could not.
//!
//! Each test runs its body under a watchdog: a wait that deadlocks fails the test after
//! 20 s instead of hanging the suite.
#![cfg(not(bridge_loom))]

mod common;

use bridge_rayon::ThreadPoolExt;
use common::{gate, watchdog};
use std::cell::Cell;
use std::thread;
use std::time::Duration;

thread_local! {
    /// Set by pool B's start handler on each of its threads.
    static STARTED_BY_B: Cell<bool> = const { Cell::new(false) };
}

/// What a job sees of the thread it runs on.
#[derive(Debug, PartialEq)]
struct Seen {
    threads: usize,
    name: Option<String>,
    started_by_b: bool,
}

fn seen() -> Seen {
    Seen {
        threads: rayon::current_num_threads(),
        name: thread::current().name().map(String::from),
        started_by_b: STARTED_BY_B.with(Cell::get),
    }
}

fn pool_a() -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .thread_name(|i| format!("a-{i}"))
        .build()
        .unwrap()
}

/// Three threads with a 64 MiB stack, named, and a start handler (as the guide suggests for
/// a lower priority).
fn pool_b() -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(3)
        .stack_size(64 << 20)
        .thread_name(|i| format!("b-{i}"))
        .start_handler(|_| STARTED_BY_B.with(|b| b.set(true)))
        .build()
        .unwrap()
}

/// Holds every thread of `pool` until the returned senders are dropped.
fn hold_all(pool: &rayon::ThreadPool) -> Vec<std::sync::mpsc::Sender<()>> {
    (0..pool.current_num_threads())
        .map(|_| gate(pool))
        .collect()
}

/// A job spawned on pool B, queued while B's threads are busy, and waited for by pool A's
/// worker (with `wait`, a timed wait, a poll), sees B: B's thread count, thread name and
/// start handler. A's worker waits until a thread of B runs it.
#[test]
fn a_job_waited_for_by_another_pools_worker_runs_on_its_own_pool() {
    watchdog(|| {
        let (a, b) = (pool_a(), pool_b());
        let expected = |name: &str| Seen {
            threads: 3,
            name: Some(name.to_string()),
            started_by_b: true,
        };

        let hold = hold_all(&b);
        let task = b.spawn_task(seen);
        let waiter = a.spawn_task(move || task.wait());
        thread::sleep(Duration::from_millis(50));
        assert!(!waiter.is_finished(), "pool A's worker ran B's job");
        drop(hold);
        let got = waiter.wait();
        assert!(got.name.as_deref().unwrap().starts_with("b-"), "{got:?}");
        assert_eq!(got, expected(got.name.as_deref().unwrap()));

        for how in ["wait_timeout", "block_on", "join"] {
            let hold = hold_all(&b);
            let mut task = b.spawn_task(seen);
            let waiter = a.spawn_task(move || match how {
                "wait_timeout" => task.wait_timeout(Duration::from_secs(10)).unwrap(),
                "block_on" => bridge_core::block_on(task),
                _ => task.join().unwrap(),
            });
            thread::sleep(Duration::from_millis(50));
            drop(hold);
            let got = waiter.wait();
            assert_eq!(got.threads, 3, "{how}: {got:?}");
            assert!(got.started_by_b, "{how}: {got:?}");
        }

        // A global spawn from B's worker is B's too.
        let got = b.install(|| {
            let task = bridge_rayon::spawn(seen);
            a.install(move || task.wait())
        });
        assert_eq!(got.threads, 3, "{got:?}");
    });
}

/// Recursion that needs about 16 MiB of stack: more than rayon's default, well within B's.
fn deep(n: u32) -> u64 {
    let frame = std::hint::black_box([n as u8; 4096]);
    if n == 0 {
        return u64::from(frame[0]);
    }
    deep(n - 1) + u64::from(frame[4095] & 1)
}

/// A deep recursion spawned on pool B (64 MiB stacks), waited for from pool A's worker (a
/// default stack): it runs on B's stack. Run on A's thread, it would overflow its stack and
/// abort the process.
#[test]
fn a_job_of_a_pool_with_a_large_stack_keeps_it_when_another_pool_waits() {
    watchdog(|| {
        let (a, b) = (pool_a(), pool_b());
        let hold = hold_all(&b);
        let task = b.spawn_task(|| deep(4_000));
        let waiter = a.spawn_task(move || task.wait());
        thread::sleep(Duration::from_millis(50));
        drop(hold);
        assert_eq!(waiter.wait(), 2_000);
    });
}

/// A job that builds a runtime and blocks on it, spawned on a pool: run where a runtime is
/// entered it would panic ("Cannot start a runtime from within a runtime").
fn starts_a_runtime() -> u32 {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(async { 5 })
}

fn in_a_runtime<R>(body: impl std::future::Future<Output = R>) -> R {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(body)
}

/// The job above, spawned on pool B and waited for from inside a current-thread runtime's
/// `block_on` on pool A's worker (with `wait`, and with a timed wait): it returns its value.
#[test]
fn a_job_that_starts_a_runtime_waited_for_from_a_runtime_on_another_pool_returns() {
    watchdog(|| {
        let (a, b) = (pool_a(), pool_b());
        let hold = hold_all(&b);
        let task = b.spawn_task(starts_a_runtime);
        let mut timed = b.spawn_task(starts_a_runtime);
        let waiter = a.spawn_task(move || {
            in_a_runtime(async move { (task.wait(), timed.wait_timeout(Duration::from_secs(10))) })
        });
        thread::sleep(Duration::from_millis(50));
        drop(hold);
        assert_eq!(waiter.wait(), (5, Some(5)));
    });
}

/// The same on one pool of two threads: its worker inside a runtime's `block_on` waits for a
/// job of its own pool that the other worker runs once free. The waiter must not run it
/// inside the runtime. Only with the feature `tokio`, which tells the waiter that a runtime
/// is entered on its thread (without it nothing tells, and the waiter helps).
#[cfg(feature = "tokio")]
#[test]
fn a_worker_inside_a_runtime_leaves_a_job_that_starts_a_runtime_to_its_pool() {
    watchdog(|| {
        let pool = common::pool(2);
        let (queued_tx, queued) = std::sync::mpsc::channel();
        let (open_tx, open) = std::sync::mpsc::channel::<()>();
        let waiter = pool.spawn_task(move || {
            in_a_runtime(async move {
                // The other worker is held (below) before the job is queued.
                let _ = open.recv();
                let task = bridge_rayon::spawn(starts_a_runtime);
                queued_tx.send(()).unwrap();
                task.wait()
            })
        });
        let hold = gate(&pool);
        open_tx.send(()).unwrap();
        queued.recv().unwrap();
        thread::sleep(Duration::from_millis(50));
        drop(hold);
        assert_eq!(waiter.wait(), 5);
    });
}
