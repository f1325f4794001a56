//! `spawn_io` and `IoRuntime::spawn`: every entry point of their `Task` (`wait`, `join`,
//! `.await`, `catch_unwind`, `wait_timeout`, `wait_deadline`, `try_get`) in every context, panics,
//! cancellation on drop, hard deadlines, `Lost` after a shutdown, and volume.

#![cfg(not(bridge_loom))]

mod common;

use bridge_core::Task;
use bridge_tokio::{IoRuntime, spawn_io};
use common::{current_thread, multi_thread, watchdog, work};
use futures::future::FusedFuture;
use std::cell::RefCell;
use std::future::Future;
use std::panic::{self, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// Long enough never to pass in a healthy run; only a hang reaches it.
const LIMIT: Duration = Duration::from_secs(10);

/// Every blocking and sync entry point, from wherever this runs; `base` tags the values.
fn blocking_entry_points(base: u64) {
    assert_eq!(spawn_io(work(base)).wait(), base);
    assert_eq!(spawn_io(work(base + 1)).join().unwrap(), base + 1);
    let mut task = spawn_io(work(base + 2));
    assert_eq!(task.wait_timeout(LIMIT), Some(base + 2));
    assert!(task.is_terminated() && task.is_finished());
    let mut task = spawn_io(work(base + 3));
    assert_eq!(task.wait_deadline(Instant::now() + LIMIT), Some(base + 3));
    let mut task = spawn_io(work(base + 4));
    assert_eq!(try_get_within(&mut task), base + 4);
    assert!(task.is_terminated());
    // The runtime-free poll loop: `.await` where no executor runs.
    assert_eq!(bridge_core::block_on(spawn_io(work(base + 5))), base + 5);
}

/// The async entry points, then the blocking ones, from inside an async context.
async fn async_entry_points(base: u64) {
    assert_eq!(spawn_io(work(base)).await, base);
    assert_eq!(
        spawn_io(work(base + 1)).catch_unwind().await.unwrap(),
        base + 1
    );
    let mut task = spawn_io(work(base + 2));
    let deadline = Instant::now() + LIMIT;
    let value = loop {
        if let Some(value) = task.try_get() {
            break value;
        }
        assert!(
            Instant::now() < deadline,
            "try_get: no value within {LIMIT:?}"
        );
        tokio::task::yield_now().await;
    };
    assert_eq!(value, base + 2);
    blocking_entry_points(base + 10);
}

/// `try_get` until it gives the value; fails the test after [`LIMIT`].
fn try_get_within<T>(task: &mut Task<T>) -> T {
    let deadline = Instant::now() + LIMIT;
    loop {
        if let Some(value) = task.try_get() {
            return value;
        }
        assert!(
            Instant::now() < deadline,
            "try_get: no value within {LIMIT:?}"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Waits (bounded) until `done` holds.
fn eventually(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + LIMIT;
    while !done() {
        assert!(Instant::now() < deadline, "{what}: not within {LIMIT:?}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// The names of the threads that drops ran on, in order.
type Threads = Arc<Mutex<Vec<Option<String>>>>;

/// Counts its drops, and records the name of the thread each drop ran on.
struct Counted {
    drops: Arc<AtomicUsize>,
    threads: Threads,
}

impl Counted {
    fn new(drops: &Arc<AtomicUsize>, threads: &Threads) -> Self {
        Self {
            drops: Arc::clone(drops),
            threads: Arc::clone(threads),
        }
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        let name = std::thread::current().name().map(String::from);
        self.threads.lock().unwrap().push(name);
        self.drops.fetch_add(1, Ordering::SeqCst);
    }
}

fn counters() -> (Arc<AtomicUsize>, Threads) {
    (Arc::default(), Arc::default())
}

// ---------------------------------------------------------------------------------------------
// Contexts

#[test]
fn from_a_plain_thread() {
    watchdog(30, || blocking_entry_points(100));
}

#[test]
fn from_rayon_workers() {
    watchdog(30, || {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        pool.install(|| {
            assert!(rayon::current_thread_index().is_some());
            blocking_entry_points(200);
        });
        // A job that spawns and waits while the pool's other thread does the same.
        pool.broadcast(|ctx| blocking_entry_points(210 + 10 * ctx.index() as u64));
    });
}

#[test]
fn from_a_current_thread_runtime_body_and_task() {
    watchdog(30, || {
        let rt = current_thread();
        rt.block_on(async_entry_points(300));
        rt.block_on(async { tokio::spawn(async_entry_points(320)).await.unwrap() });
    });
}

#[test]
fn from_a_multi_thread_runtime_body_and_task() {
    watchdog(30, || {
        let rt = multi_thread();
        rt.block_on(async_entry_points(400));
        rt.block_on(async { tokio::spawn(async_entry_points(420)).await.unwrap() });
    });
}

#[test]
fn from_a_local_set_on_either_flavour() {
    watchdog(30, || {
        for (rt, base) in [(current_thread(), 500), (multi_thread(), 550)] {
            let local = tokio::task::LocalSet::new();
            // The LocalSet's body, then a `spawn_local` task, holding a `!Send` value.
            local.block_on(&rt, async_entry_points(base));
            local.block_on(&rt, async move {
                let not_send = std::rc::Rc::new(base + 20);
                tokio::task::spawn_local(async move {
                    async_entry_points(*not_send).await;
                })
                .await
                .unwrap();
            });
        }
    });
}

#[test]
fn from_spawn_blocking_threads_of_either_flavour() {
    watchdog(30, || {
        for (rt, base) in [(current_thread(), 600), (multi_thread(), 650)] {
            rt.block_on(async move {
                tokio::task::spawn_blocking(move || blocking_entry_points(base))
                    .await
                    .unwrap();
            });
        }
    });
}

thread_local! {
    static AT_EXIT: RefCell<Option<OnExit>> = const { RefCell::new(None) };
}

/// Runs the entry points in a thread-local destructor and reports how it went.
struct OnExit {
    base: u64,
    report: mpsc::Sender<Result<u64, String>>,
}

impl Drop for OnExit {
    fn drop(&mut self) {
        let base = self.base;
        let result = panic::catch_unwind(move || {
            blocking_entry_points(base);
            // A dropped task is cancelled there too.
            let (drops, threads) = counters();
            let counted = Counted::new(&drops, &threads);
            drop(spawn_io(async move {
                let _counted = counted;
                std::future::pending::<()>().await
            }));
            eventually("the drop in a destructor", || {
                drops.load(Ordering::SeqCst) == 1
            });
            base
        });
        let _ = self
            .report
            .send(result.map_err(|payload| format!("{:?}", panic_message(&*payload))));
    }
}

#[test]
fn from_thread_local_destructors_before_and_after_tokios() {
    watchdog(30, || {
        let (tx, rx) = mpsc::channel();
        for (base, register_first) in [(700, true), (750, false)] {
            let report = tx.clone();
            std::thread::spawn(move || {
                let on_exit = OnExit { base, report };
                if register_first {
                    // Registered before tokio's thread-locals: runs after they are gone.
                    AT_EXIT.with(|slot| *slot.borrow_mut() = Some(on_exit));
                    let _ = tokio::runtime::Handle::try_current();
                    assert_eq!(spawn_io(async { 1 }).wait(), 1);
                } else {
                    assert_eq!(spawn_io(async { 1 }).wait(), 1);
                    let _ = tokio::runtime::Handle::try_current();
                    AT_EXIT.with(|slot| *slot.borrow_mut() = Some(on_exit));
                }
            })
            .join()
            .unwrap();
        }
        drop(tx);
        let mut seen: Vec<_> = rx.iter().collect();
        seen.sort_by_key(|result| format!("{result:?}"));
        assert_eq!(seen, vec![Ok(700), Ok(750)]);
    });
}

/// A worker of a one-worker `IoRuntime` waits for a task of that same runtime: the task
/// spawned from the worker sits in its LIFO slot, which nothing steals, so a wait that did
/// not leave the scheduler would wait for ever.
#[test]
fn a_worker_of_a_one_worker_io_runtime_waits_for_its_own_task() {
    watchdog(30, || {
        let io = IoRuntime::new(1).unwrap();
        let inner = io.clone();
        let outer = io.spawn(async move {
            let on_the_worker = tokio::runtime::worker_index();
            assert_eq!(inner.spawn(work(800)).wait(), 800);
            assert_eq!(inner.spawn(work(801)).join().unwrap(), 801);
            // A hard deadline that the task beats: it runs while this worker waits.
            let mut task = inner.spawn(async { 802 });
            assert_eq!(task.wait_timeout(LIMIT), Some(802));
            let mut task = inner.spawn(async { 803 });
            assert_eq!(task.wait_deadline(Instant::now() + LIMIT), Some(803));
            // A panic comes back through a wait there too.
            let err = inner
                .spawn(async { panic!("own runtime") })
                .join()
                .unwrap_err();
            assert_eq!(err.to_string(), "the work panicked: own runtime");
            assert_eq!(inner.spawn(work(804)).await, 804);
            let mut task = inner.spawn(async { 805 });
            let deadline = Instant::now() + LIMIT;
            let value = loop {
                if let Some(value) = task.try_get() {
                    break value;
                }
                assert!(Instant::now() < deadline, "try_get on the worker");
                tokio::task::yield_now().await;
            };
            assert_eq!(value, 805);
            on_the_worker
        });
        assert_eq!(outer.wait(), Some(0));
    });
}

/// A task of a multi-thread runtime with one worker waits for an I/O task whose future needs
/// a task queued on that worker (in its LIFO slot): the wait must leave the scheduler.
#[test]
fn a_wait_on_a_worker_lets_the_workers_other_tasks_run() {
    watchdog(30, || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let n = rt.block_on(async {
            tokio::spawn(async {
                let (tx, rx) = tokio::sync::oneshot::channel();
                tokio::spawn(async move { tx.send(9).unwrap() });
                spawn_io(async move { rx.await.unwrap() }).wait()
            })
            .await
            .unwrap()
        });
        assert_eq!(n, 9);
    });
}

// ---------------------------------------------------------------------------------------------
// Panics

fn panic_message(payload: &(dyn std::any::Any + Send)) -> Option<String> {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
}

#[test]
fn a_panic_resumes_in_wait_and_await_and_is_a_panicked_error_in_join() {
    watchdog(30, || {
        let payload =
            panic::catch_unwind(|| spawn_io(async { panic!("corrupt frame") }).wait()).unwrap_err();
        assert_eq!(panic_message(&*payload).as_deref(), Some("corrupt frame"));

        let err = spawn_io(async { panic::panic_any(7u8) })
            .join()
            .unwrap_err();
        assert!(err.is_panic());
        assert_eq!(err.into_panic().downcast_ref::<u8>(), Some(&7));

        let payload = panic::catch_unwind(AssertUnwindSafe(|| {
            let mut task = spawn_io(async { panic!("timed") });
            task.wait_timeout(LIMIT)
        }))
        .unwrap_err();
        assert_eq!(panic_message(&*payload).as_deref(), Some("timed"));

        let mut task = spawn_io(async { panic!("polled") });
        eventually("the panic arrives", || task.is_finished());
        let payload = panic::catch_unwind(AssertUnwindSafe(|| task.try_get())).unwrap_err();
        assert_eq!(panic_message(&*payload).as_deref(), Some("polled"));
        // The task is terminated: the panic was taken once.
        assert!(task.is_terminated());
        let again = panic::catch_unwind(AssertUnwindSafe(|| task.try_get())).unwrap_err();
        assert!(panic_message(&*again).unwrap().contains("already taken"));

        // `.await` resumes it in the awaiting task, which tokio reports as that task's panic.
        let rt = multi_thread();
        let joined = rt.block_on(async {
            tokio::spawn(async { spawn_io(async { panic!("awaited") }).await }).await
        });
        let payload = joined.unwrap_err().into_panic();
        assert_eq!(panic_message(&*payload).as_deref(), Some("awaited"));

        let result = rt.block_on(spawn_io(async { panic!("caught") }).catch_unwind());
        match result {
            Err(err) if err.is_panic() => {
                assert_eq!(err.to_string(), "the work panicked: caught");
                let payload = err.into_panic();
                assert_eq!(panic_message(&*payload).as_deref(), Some("caught"));
            }
            other => panic!("{other:?}"),
        }
    });
}

/// A future whose output is ready but whose destructor panics.
struct PanicsOnDrop;

impl Future for PanicsOnDrop {
    type Output = u8;
    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<u8> {
        Poll::Ready(1)
    }
}

impl Drop for PanicsOnDrop {
    fn drop(&mut self) {
        panic!("dropping the future");
    }
}

#[test]
fn a_panic_of_the_futures_destructor_is_its_panic() {
    watchdog(30, || {
        let err = spawn_io(PanicsOnDrop).join().unwrap_err();
        assert_eq!(err.to_string(), "the work panicked: dropping the future");
    });
}

// ---------------------------------------------------------------------------------------------
// Cancellation

#[test]
fn dropping_the_task_drops_a_pending_future_promptly_on_the_runtime() {
    watchdog(30, || {
        let (drops, threads) = counters();
        let (started_tx, started_rx) = mpsc::channel();
        let counted = Counted::new(&drops, &threads);
        let task = spawn_io(async move {
            let _counted = counted;
            started_tx.send(()).unwrap();
            std::future::pending::<()>().await
        });
        started_rx.recv_timeout(LIMIT).unwrap();
        assert!(!task.is_finished());
        assert_eq!(drops.load(Ordering::SeqCst), 0);
        drop(task);
        eventually("the pending future's drop", || {
            drops.load(Ordering::SeqCst) == 1
        });
        assert_eq!(
            threads.lock().unwrap().as_slice(),
            [Some("bridge-io".to_string())]
        );

        // One that never started is dropped too, and one dropped from a runtime's task.
        let (drops, threads) = counters();
        let counted = Counted::new(&drops, &threads);
        drop(spawn_io(async move {
            let _counted = counted;
            std::future::pending::<()>().await
        }));
        let counted = Counted::new(&drops, &threads);
        current_thread().block_on(async move {
            let task = spawn_io(async move {
                let _counted = counted;
                tokio::time::sleep(Duration::from_secs(3600)).await
            });
            tokio::task::yield_now().await;
            drop(task);
        });
        eventually("both drops", || drops.load(Ordering::SeqCst) == 2);
    });
}

#[test]
fn catch_unwind_dropped_cancels_too_and_detach_lets_the_future_run() {
    watchdog(30, || {
        let (drops, threads) = counters();
        let counted = Counted::new(&drops, &threads);
        let pending = spawn_io(async move {
            let _counted = counted;
            std::future::pending::<()>().await
        })
        .catch_unwind();
        drop(pending);
        eventually("the drop", || drops.load(Ordering::SeqCst) == 1);

        let (gate_tx, gate_rx) = tokio::sync::oneshot::channel::<()>();
        let (done_tx, done_rx) = mpsc::channel();
        spawn_io(async move {
            gate_rx.await.unwrap();
            done_tx.send("ran").unwrap();
        })
        .detach();
        gate_tx.send(()).unwrap();
        assert_eq!(done_rx.recv_timeout(LIMIT), Ok("ran"));
    });
}

#[test]
fn an_output_nobody_takes_is_dropped_once() {
    watchdog(30, || {
        let (drops, threads) = counters();
        // Arrived before the drop: dropped with the task, here.
        let counted = Counted::new(&drops, &threads);
        let task = spawn_io(async move { counted });
        eventually("the output", || task.is_finished());
        drop(task);
        assert_eq!(drops.load(Ordering::SeqCst), 1);
        // Detached: dropped on the runtime when it arrives.
        let counted = Counted::new(&drops, &threads);
        spawn_io(async move { counted }).detach();
        eventually("the detached output", || drops.load(Ordering::SeqCst) == 2);
    });
}

/// A future that is ready at once but owns a value until it is dropped.
struct OwnsUntilDropped(#[allow(dead_code)] Counted);

impl Future for OwnsUntilDropped {
    type Output = u8;
    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<u8> {
        Poll::Ready(4)
    }
}

/// The output is sent after the future was dropped: whoever takes it finds what the future
/// owned dropped already.
#[test]
fn the_future_is_dropped_before_its_output_arrives() {
    watchdog(30, || {
        let (drops, threads) = counters();
        for round in 1..=200 {
            let task = spawn_io(OwnsUntilDropped(Counted::new(&drops, &threads)));
            assert_eq!(task.wait(), 4);
            assert_eq!(drops.load(Ordering::SeqCst), round);
        }
    });
}

// ---------------------------------------------------------------------------------------------
// Hard deadlines

/// `wait_timeout` on a future that never finishes returns `None` at the limit (not before),
/// and the task stays usable.
fn times_out_and_stays_usable() {
    let (drops, threads) = counters();
    let counted = Counted::new(&drops, &threads);
    let mut task = spawn_io(async move {
        let _counted = counted;
        std::future::pending::<()>().await
    });
    let limit = Duration::from_millis(30);
    let start = Instant::now();
    assert_eq!(task.wait_timeout(limit), None);
    assert!(start.elapsed() >= limit);
    assert_eq!(task.wait_deadline(Instant::now() + limit), None);
    assert!(!task.is_finished() && !task.is_terminated());
    assert_eq!(task.try_get(), None);
    drop(task);
    eventually("the drop", || drops.load(Ordering::SeqCst) == 1);
}

#[test]
fn wait_timeout_on_a_future_that_never_finishes_returns_at_the_limit() {
    watchdog(30, || {
        times_out_and_stays_usable();
        multi_thread().block_on(async {
            tokio::spawn(async { times_out_and_stays_usable() })
                .await
                .unwrap()
        });
        current_thread().block_on(async { times_out_and_stays_usable() });
        let io = IoRuntime::new(1).unwrap();
        let inner = io.clone();
        io.spawn(async move {
            let mut task = inner.spawn(std::future::pending::<()>());
            assert_eq!(task.wait_timeout(Duration::from_millis(30)), None);
        })
        .wait();
    });
}

/// A future that blocks its worker inside a poll (which no cancellation can interrupt) does
/// not hold a timed wait past its limit.
#[test]
fn wait_timeout_returns_while_the_future_blocks_its_worker() {
    watchdog(30, || {
        let io = IoRuntime::new(1).unwrap();
        let (gate_tx, gate_rx) = mpsc::channel::<()>();
        let mut task = io.spawn(async move { gate_rx.recv().is_ok() });
        assert_eq!(task.wait_timeout(Duration::from_millis(30)), None);
        // Returned while the future still blocked: the gate is still shut.
        assert!(!task.is_finished());
        gate_tx.send(()).unwrap();
        assert!(task.wait());
    });
}

// ---------------------------------------------------------------------------------------------
// Shutdown

#[test]
fn lost_when_the_io_runtime_shuts_down_first() {
    watchdog(30, || {
        let (drops, threads) = counters();
        let io = IoRuntime::new(1).unwrap();
        let mut tasks: Vec<Task<()>> = (0..4)
            .map(|_| {
                let counted = Counted::new(&drops, &threads);
                io.spawn(async move {
                    let _counted = counted;
                    tokio::time::sleep(Duration::from_secs(3600)).await
                })
            })
            .collect();
        let late = io.handle().clone();
        drop(io);
        assert_eq!(drops.load(Ordering::SeqCst), 4);

        let err = tasks.pop().unwrap().join().unwrap_err();
        assert!(err.is_lost(), "{err:?}");
        assert!(
            err.to_string()
                .starts_with("what ran the work was lost before it finished"),
            "{err}"
        );
        let payload =
            panic::catch_unwind(AssertUnwindSafe(|| tasks.pop().unwrap().wait())).unwrap_err();
        assert!(panic_message(&*payload).unwrap().contains("shut down"));
        let mut task = tasks.pop().unwrap();
        assert!(task.is_finished());
        assert!(panic::catch_unwind(AssertUnwindSafe(|| task.try_get())).is_err());
        let awaited = current_thread().block_on(tasks.pop().unwrap().catch_unwind());
        assert!(awaited.is_err_and(|e| e.is_lost()));

        // A runtime already shut down takes no task: the future is dropped unpolled.
        let late = IoRuntime::from_handle(late);
        let counted = Counted::new(&drops, &threads);
        let task = late.spawn(async move { drop(counted) });
        assert!(task.join().unwrap_err().is_lost());
        assert_eq!(drops.load(Ordering::SeqCst), 5);
    });
}

/// A value dropped by a one-worker runtime's shutdown waits for another task of that
/// runtime: that worker is the one that would drop the other future, so the wait reports
/// `Lost` instead of waiting for ever (tried many times: the shutdown drops the two tasks in
/// a random order).
#[test]
fn a_wait_in_a_drop_during_its_runtimes_shutdown_reports_lost() {
    struct JoinsOnDrop(Option<Task<()>>, mpsc::Sender<bool>);
    impl Drop for JoinsOnDrop {
        fn drop(&mut self) {
            if let Some(task) = self.0.take() {
                let _ = self.1.send(task.join().unwrap_err().is_lost());
            }
        }
    }
    watchdog(30, || {
        for _ in 0..16 {
            let io = IoRuntime::new(1).unwrap();
            let (task_tx, task_rx) = tokio::sync::oneshot::channel::<Task<()>>();
            let (ready_tx, ready_rx) = mpsc::channel();
            let (lost_tx, lost_rx) = mpsc::channel();
            let holder = io.spawn(async move {
                let _joins = JoinsOnDrop(Some(task_rx.await.unwrap()), lost_tx);
                ready_tx.send(()).unwrap();
                std::future::pending::<()>().await
            });
            let other = io.spawn(std::future::pending::<()>());
            task_tx.send(other).unwrap();
            ready_rx.recv_timeout(LIMIT).unwrap();
            holder.detach();
            drop(io);
            assert_eq!(lost_rx.recv_timeout(LIMIT), Ok(true));
        }
    });
}

// ---------------------------------------------------------------------------------------------
// Volume

/// Real tokio work: a timer, then a channel fed by a task spawned on the runtime.
async fn timers_and_channels(i: u64) -> u64 {
    tokio::time::sleep(Duration::from_millis(1)).await;
    let (tx, mut rx) = tokio::sync::mpsc::channel(4);
    tokio::spawn(async move {
        for k in 0..16 {
            tx.send(i + k).await.unwrap();
        }
    });
    let mut sum = 0;
    while let Some(v) = rx.recv().await {
        sum += v;
    }
    sum
}

fn expected(i: u64) -> u64 {
    16 * i + 120
}

#[test]
fn a_thousand_tasks_awaited_from_a_current_thread_runtime() {
    watchdog(30, || {
        let sums = current_thread().block_on(async {
            let tasks: Vec<_> = (0..1000)
                .map(|i| spawn_io(timers_and_channels(i)))
                .collect();
            let mut sums = Vec::with_capacity(tasks.len());
            for task in tasks {
                sums.push(task.await);
            }
            sums
        });
        assert_eq!(sums, (0..1000).map(expected).collect::<Vec<_>>());
    });
}

#[test]
fn a_thousand_tasks_waited_from_rayon_workers() {
    use rayon::prelude::*;
    watchdog(30, || {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        let sums: Vec<u64> = pool.install(|| {
            (0..1000u64)
                .into_par_iter()
                .map(|i| spawn_io(timers_and_channels(i)))
                .collect::<Vec<_>>()
                .into_par_iter()
                .map(Task::wait)
                .collect()
        });
        assert_eq!(sums, (0..1000).map(expected).collect::<Vec<_>>());
    });
}

/// 500 tasks dropped at every stage (unstarted, waiting on a timer, waiting for ever, with
/// their output there): every future and every output is dropped exactly once, none is
/// left on the runtime.
#[test]
fn a_storm_of_dropped_tasks_leaves_nothing_behind() {
    watchdog(30, || {
        let io = IoRuntime::new(2).unwrap();
        let (drops, threads) = counters();
        let mut tasks = Vec::new();
        for i in 0..500u64 {
            let counted = Counted::new(&drops, &threads);
            let task = io.spawn(async move {
                let counted = counted;
                match i % 4 {
                    0 => std::future::pending::<()>().await,
                    1 => tokio::time::sleep(Duration::from_millis(i % 7)).await,
                    2 => tokio::task::yield_now().await,
                    _ => {}
                }
                // The output carries the counter out: dropped once, wherever it ends.
                counted
            });
            tasks.push(task);
            if i % 3 == 0 {
                drop(tasks.swap_remove(tasks.len() / 2));
            }
        }
        std::thread::sleep(Duration::from_millis(2));
        drop(tasks);
        eventually("500 drops", || drops.load(Ordering::SeqCst) == 500);
        eventually("no task left on the runtime", || {
            io.handle().metrics().num_alive_tasks() == 0
        });
        std::thread::sleep(Duration::from_millis(10));
        assert_eq!(drops.load(Ordering::SeqCst), 500);
    });
}

#[test]
fn io_task_is_send_sync_unwind_safe_and_debug() {
    fn check<T: Send + Sync + panic::UnwindSafe + panic::RefUnwindSafe + std::fmt::Debug>(_: &T) {}
    let task = spawn_io(async { std::cell::Cell::new(1) });
    check(&task);
    let debug = format!("{task:?}");
    assert!(debug.starts_with("Task"), "{debug}");
    assert_eq!(task.wait().get(), 1);
}

// ---------------------------------------------------------------------------------------------
// Tracing

#[cfg(feature = "tracing")]
mod trace_recorder;

#[cfg(feature = "tracing")]
#[test]
fn the_span_at_spawn_io_is_current_in_every_poll_and_at_the_drop() {
    use trace_recorder::{install, seen};
    struct OnDrop(&'static str);
    impl Drop for OnDrop {
        fn drop(&mut self) {
            tracing::info!("{} dropped", self.0);
        }
    }
    async fn probe(tag: &'static str, finish: bool) -> u8 {
        let _on_drop = OnDrop(tag);
        tracing::info!("{tag} first poll");
        tokio::task::yield_now().await;
        tracing::info!("{tag} later poll");
        if !finish {
            std::future::pending::<()>().await;
        }
        3
    }
    install();
    watchdog(30, || {
        let span = tracing::info_span!("spawner");
        let task = span.in_scope(|| spawn_io(probe("io finished", true)));
        assert_eq!(task.wait(), 3);
        let task = span.in_scope(|| spawn_io(probe("io cancelled", false)));
        eventually("the later poll", || {
            !seen("io cancelled later poll").is_empty()
        });
        drop(task);
        eventually("the drop", || !seen("io cancelled dropped").is_empty());
        for tag in ["io finished", "io cancelled"] {
            for what in ["first poll", "later poll", "dropped"] {
                let events = seen(&format!("{tag} {what}"));
                assert_eq!(events.len(), 1, "{tag} {what}: {events:?}");
                assert_eq!(events[0].span, Some("spawner"), "{tag} {what}");
                assert_eq!(
                    events[0].thread.as_deref(),
                    Some("bridge-io"),
                    "{tag} {what}"
                );
            }
        }
    });
}
