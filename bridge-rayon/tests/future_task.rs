//! Futures on rayon (`spawn_future`, `ThreadPoolExt::spawn_future_task`): one poll per
//! wake-up, never two at once, none lost, none after the end; panics carried; a dropped task
//! drops its future on the pool; the spawning worker's wait runs the polls it waits for.
//!
//! Each test runs its body under a watchdog: a lost wake-up or a deadlock fails the test
//! after 20 s instead of hanging the suite.
#![cfg(not(bridge_loom))]

mod common;

use common::{WATCHDOG, watchdog};

use bridge_rayon::{Limit, Task, ThreadPoolExt, spawn_future};
use std::future::Future;
use std::panic;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex, mpsc};
use std::task::{Context, Poll, Waker};
use std::thread;
use std::time::{Duration, Instant};

/// Waits until `done()` holds, for at most the watchdog's time (a bounded loop, not a timing
/// assertion: it fails only if the thing never happens).
fn eventually(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + WATCHDOG;
    while !done() {
        assert!(Instant::now() < deadline, "never happened: {what}");
        thread::sleep(Duration::from_millis(1));
    }
}

/// Counts its drops, and records whether the drop ran on a rayon worker.
struct DropProbe {
    drops: Arc<AtomicUsize>,
    on_pool: Arc<AtomicUsize>,
}

impl Drop for DropProbe {
    fn drop(&mut self) {
        if rayon::current_thread_index().is_some() {
            self.on_pool.fetch_add(1, SeqCst);
        }
        self.drops.fetch_add(1, SeqCst);
    }
}

/// Pending until `ready` is set; keeps its latest waker where the test can wake it.
#[derive(Clone, Default)]
struct Gate {
    ready: Arc<AtomicBool>,
    waker: Arc<Mutex<Option<Waker>>>,
}

impl Gate {
    fn open(&self) {
        self.ready.store(true, SeqCst);
        self.wake();
    }

    fn wake(&self) {
        let waker = self.waker.lock().unwrap().clone();
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    fn has_waker(&self) -> bool {
        self.waker.lock().unwrap().is_some()
    }

    /// A future that completes once the gate is open.
    fn wait(&self) -> impl Future<Output = ()> + Send + 'static {
        let gate = self.clone();
        std::future::poll_fn(move |cx| {
            *gate.waker.lock().unwrap() = Some(cx.waker().clone());
            if gate.ready.load(SeqCst) {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
    }
}

/// A future that asserts its polls never overlap and counts them, and runs a step per poll.
struct Probed<S> {
    in_poll: Arc<AtomicBool>,
    polls: Arc<AtomicUsize>,
    step: S,
}

impl<S: FnMut(usize, &mut Context<'_>) -> Poll<usize> + Unpin> Future for Probed<S> {
    type Output = usize;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<usize> {
        assert!(!self.in_poll.swap(true, SeqCst), "two polls at once");
        let n = self.polls.fetch_add(1, SeqCst) + 1;
        let polled = (self.step)(n, cx);
        self.in_poll.store(false, SeqCst);
        polled
    }
}

/// Rounds of wakes from 4 threads at once, 500 each (by reference and by value, from
/// clones): each round falls either during a poll (which blocks until the round is over) or
/// after one. Each round brings exactly one poll after it (the next poll starts only after
/// the round started, never before: no extra poll; and it does start: no lost wake), and no
/// two polls overlap.
#[test]
fn wake_storms_from_several_threads_bring_one_poll_each_never_two_at_once() {
    watchdog(|| {
        const ROUNDS: usize = 20;
        let rounds_started = Arc::new(AtomicUsize::new(0));
        let waker_slot: Arc<Mutex<Option<Waker>>> = Arc::default();
        let (polled_tx, polled) = mpsc::channel::<usize>();
        let (round_over_tx, round_over) = mpsc::channel::<()>();
        let round_over = Mutex::new(round_over);
        let (started, slot) = (rounds_started.clone(), waker_slot.clone());
        let future = Probed {
            in_poll: Arc::default(),
            polls: Arc::default(),
            step: move |n: usize, cx: &mut Context<'_>| {
                // Poll n comes after round n - 1 started and before round n did.
                assert_eq!(
                    started.load(SeqCst),
                    n - 1,
                    "poll {n} came without its round"
                );
                *slot.lock().unwrap() = Some(cx.waker().clone());
                if n > ROUNDS {
                    return Poll::Ready(n);
                }
                polled_tx.send(n).unwrap();
                if n % 2 == 1 {
                    // Odd rounds wake during this poll.
                    round_over.lock().unwrap().recv().unwrap();
                }
                Poll::Pending
            },
        };
        let task = spawn_future(future);
        for n in 1..=ROUNDS {
            assert_eq!(polled.recv().unwrap(), n);
            let waker = waker_slot.lock().unwrap().clone().unwrap();
            rounds_started.fetch_add(1, SeqCst);
            let storm: Vec<_> = (0..4)
                .map(|_| {
                    let waker = waker.clone();
                    thread::spawn(move || {
                        for i in 0..500 {
                            if i % 2 == 0 {
                                waker.wake_by_ref();
                            } else {
                                // By value, from a clone of its own.
                                let clone = waker.clone();
                                clone.wake();
                            }
                        }
                    })
                })
                .collect();
            for thread in storm {
                thread.join().unwrap();
            }
            if n % 2 == 1 {
                round_over_tx.send(()).unwrap();
            }
        }
        assert_eq!(task.wait(), ROUNDS + 1);
        // Wakes after the end do nothing (and do not panic).
        let waker = waker_slot.lock().unwrap().take().unwrap();
        waker.wake_by_ref();
        waker.wake();
    });
}

/// A future that wakes itself in every poll is polled once per wake: 1,000 wakes, 1,001 polls.
#[test]
fn a_self_waking_future_is_polled_once_per_wake() {
    watchdog(|| {
        let polls = Arc::new(AtomicUsize::new(0));
        let future = Probed {
            in_poll: Arc::default(),
            polls: polls.clone(),
            step: |n: usize, cx: &mut Context<'_>| {
                if n > 1_000 {
                    return Poll::Ready(n);
                }
                cx.waker().wake_by_ref();
                // A second wake in the same poll adds nothing.
                cx.waker().wake_by_ref();
                Poll::Pending
            },
        };
        assert_eq!(spawn_future(future).wait(), 1_001);
        assert_eq!(polls.load(SeqCst), 1_001);
    });
}

/// Wakers cloned into other executors work: the future waits on a oneshot fed by a task of a
/// tokio runtime (the wake comes from a tokio worker), and on an async-executor task's output
/// (the wake comes from the thread that runs that executor).
#[test]
fn wakers_from_other_executors_and_threads_work() {
    watchdog(|| {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_time()
            .build()
            .unwrap();
        let (tx, rx) = bridge_core::oneshot::channel::<u32>();
        let task = spawn_future(async move { rx.await.unwrap() + 1 });
        rt.spawn(async move {
            tokio::time::sleep(Duration::from_millis(5)).await;
            tx.send(41).unwrap();
        });
        assert_eq!(task.wait(), 42);

        // The future awaits a task of an async-executor that another thread runs.
        let executor = Arc::new(async_executor::Executor::new());
        let (stop_tx, stop_rx) = bridge_core::oneshot::channel::<()>();
        let ex = executor.clone();
        let driver = thread::spawn(move || {
            futures::executor::block_on(ex.run(async {
                let _ = stop_rx.await;
            }))
        });
        let theirs = executor.spawn(async {
            async_io_yield().await;
            7u8
        });
        assert_eq!(spawn_future(theirs).wait(), 7);
        stop_tx.send(()).unwrap();
        driver.join().unwrap();
    });
}

/// Yields once to the executor polling it.
async fn async_io_yield() {
    let mut yielded = false;
    std::future::poll_fn(|cx| {
        if yielded {
            Poll::Ready(())
        } else {
            yielded = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    })
    .await;
}

/// Rayon's parallelism works inside a poll: `rayon::join` and `par_iter`, between awaits.
#[test]
fn rayon_join_and_par_iter_work_inside_a_poll() {
    use rayon::prelude::*;
    watchdog(|| {
        let task = spawn_future(async {
            let (a, b) = rayon::join(|| (0..1_000u64).sum::<u64>(), || 7u64);
            async_io_yield().await;
            let squares: u64 = (0..10_000u64).into_par_iter().map(|n| n * n % 7).sum();
            async_io_yield().await;
            (a, b, squares, rayon::current_thread_index().is_some())
        });
        let expected: u64 = (0..10_000u64).map(|n| n * n % 7).sum();
        assert_eq!(task.wait(), (499_500, 7, expected, true));
    });
}

/// A panic in a poll (the first, or a later one) comes back to whoever takes the result:
/// `wait` and `.await` resume it, `join` and `catch_unwind` give it with its payload. The
/// future is dropped after the panic.
#[test]
fn a_panic_in_a_poll_reaches_whoever_takes_the_result() {
    watchdog(|| {
        let first = spawn_future(async { panic!("first poll") });
        let err = first.join().unwrap_err();
        assert!(err.is_panic());
        assert_eq!(err.to_string(), "the work panicked: first poll");

        let (drops, on_pool) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let probe = DropProbe {
            drops: drops.clone(),
            on_pool: on_pool.clone(),
        };
        let later = spawn_future(async move {
            let _probe = probe;
            async_io_yield().await;
            std::panic::panic_any(5u32)
        });
        let payload = panic::catch_unwind(panic::AssertUnwindSafe(|| later.wait())).unwrap_err();
        assert_eq!(payload.downcast_ref::<u32>(), Some(&5));
        assert_eq!(drops.load(SeqCst), 1);
        assert_eq!(on_pool.load(SeqCst), 1, "dropped off the pool");

        let awaited = futures::executor::block_on(spawn_future(async { 1u8 }).catch_unwind());
        assert_eq!(awaited.unwrap(), 1);
        async fn boom() -> u8 {
            panic!("awaited")
        }
        let awaited = futures::executor::block_on(spawn_future(boom()).catch_unwind());
        assert!(awaited.unwrap_err().is_panic());
    });
}

/// Dropping the task of a future that nothing will ever wake again drops the future, on a
/// thread of the pool, promptly: the drop queues the poll job that drops it.
#[test]
fn dropping_the_task_drops_a_never_woken_future_on_the_pool() {
    watchdog(|| {
        let pool = Arc::new(common::pool(2));
        for on_custom_pool in [false, true] {
            let (drops, on_pool) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
            let probe = DropProbe {
                drops: drops.clone(),
                on_pool: on_pool.clone(),
            };
            let (polled_tx, polled) = mpsc::channel::<()>();
            let future = async move {
                let _probe = probe;
                polled_tx.send(()).unwrap();
                std::future::pending::<()>().await;
            };
            let task: Task<()> = if on_custom_pool {
                pool.spawn_future_task(future)
            } else {
                spawn_future(future)
            };
            polled.recv().unwrap();
            assert!(!task.is_finished());
            drop(task);
            eventually("the cancelled future is dropped", || {
                drops.load(SeqCst) == 1
            });
            assert_eq!(
                on_pool.load(SeqCst),
                1,
                "the future was dropped off the pool"
            );
        }
    });
}

/// A detached future task runs to its end with nobody waiting.
#[test]
fn a_detached_future_runs_to_the_end() {
    watchdog(|| {
        let gate = Gate::default();
        let (tx, rx) = mpsc::channel();
        let wait = gate.wait();
        spawn_future(async move {
            wait.await;
            tx.send("done").unwrap();
        })
        .detach();
        eventually("the first poll registered a waker", || gate.has_waker());
        gate.open();
        assert_eq!(rx.recv().unwrap(), "done");
    });
}

/// On a pool of one thread, a job that spawns a future task and waits for it while the
/// future waits for a wake from outside (a timer thread here) finishes: the wait runs the
/// queued polls inline on the worker that spawned the task, and blocks between them. Every
/// poll runs on that worker.
#[test]
fn the_spawning_worker_of_a_one_thread_pool_runs_the_polls_it_waits_for() {
    watchdog(|| {
        let pool = Arc::new(common::pool(1));
        let inner = pool.clone();
        let result = pool.install(move || {
            let gate = Gate::default();
            let wait = gate.wait();
            let task = inner.spawn_future_task(async move {
                let mut threads = vec![rayon::current_thread_index()];
                for _ in 0..3 {
                    async_io_yield().await;
                    threads.push(rayon::current_thread_index());
                }
                wait.await;
                threads.push(rayon::current_thread_index());
                threads
            });
            let timer = gate.clone();
            let opener = thread::spawn(move || {
                while !timer.has_waker() {
                    thread::sleep(Duration::from_millis(1));
                }
                thread::sleep(Duration::from_millis(5));
                timer.open();
            });
            let threads = task.wait();
            opener.join().unwrap();
            threads
        });
        assert_eq!(result, vec![Some(0); 5]);
    });
}

/// A waiter that is not the spawning worker (here: a thread outside the pool, waiting for a
/// task spawned from a job of the pool) never polls inline: every poll runs on the pool.
#[test]
fn a_waiter_off_the_pool_never_polls_inline() {
    watchdog(|| {
        let pool = Arc::new(common::pool(2));
        let inner = pool.clone();
        let task = pool.install(move || {
            inner.spawn_future_task(async {
                let mut on_pool = true;
                for _ in 0..10 {
                    on_pool &= rayon::current_thread_index().is_some();
                    async_io_yield().await;
                }
                on_pool
            })
        });
        assert!(task.wait(), "a poll ran off the pool");
    });
}

/// 10,000 future tasks in flight at once, each yielding and handing CPU work to a closure
/// task, all awaited from one async block: every output arrives, every future is dropped.
#[test]
fn ten_thousand_concurrent_future_tasks_all_complete() {
    watchdog(|| {
        let drops = Arc::new(AtomicUsize::new(0));
        let on_pool = Arc::new(AtomicUsize::new(0));
        let tasks: Vec<Task<u64>> = (0..10_000u64)
            .map(|n| {
                let probe = DropProbe {
                    drops: drops.clone(),
                    on_pool: on_pool.clone(),
                };
                spawn_future(async move {
                    let _probe = probe;
                    async_io_yield().await;
                    let doubled = bridge_rayon::spawn(move || n * 2).await;
                    async_io_yield().await;
                    doubled + 1
                })
            })
            .collect();
        let outputs = futures::executor::block_on(futures::future::join_all(tasks));
        assert_eq!(outputs.len(), 10_000);
        assert!(
            outputs
                .iter()
                .enumerate()
                .all(|(n, &v)| v == n as u64 * 2 + 1)
        );
        eventually("every future dropped", || drops.load(SeqCst) == 10_000);
    });
}

/// 1,000 future tasks: a third panic, a third are dropped while pending (woken later, or
/// never), a third complete. Every future is dropped exactly once, on the pool, and each
/// task's outcome is the one it should be.
#[test]
fn a_cancel_and_panic_storm_drops_every_future_once_on_the_pool() {
    watchdog(|| {
        let drops = Arc::new(AtomicUsize::new(0));
        let on_pool = Arc::new(AtomicUsize::new(0));
        let gates: Vec<Gate> = (0..1_000).map(|_| Gate::default()).collect();
        let mut kept = Vec::new();
        for (n, gate) in gates.iter().enumerate() {
            let probe = DropProbe {
                drops: drops.clone(),
                on_pool: on_pool.clone(),
            };
            let wait = gate.wait();
            let task = spawn_future(async move {
                let _probe = probe;
                async_io_yield().await;
                if n % 3 == 0 {
                    panic!("storm {n}");
                }
                wait.await;
                n
            });
            match n % 3 {
                1 => drop(task), // cancelled, at whatever point it reached
                _ => kept.push((n, task)),
            }
        }
        // Wake half of the cancelled ones later (a wake after the cancel is harmless), and
        // open the gates of those that should complete.
        for (n, gate) in gates.iter().enumerate() {
            if n % 3 == 2 || n % 6 == 1 {
                gate.open();
            }
        }
        for (n, task) in kept {
            match task.join() {
                Ok(v) => assert_eq!((n % 3, v), (2, n)),
                Err(err) => assert!(n % 3 == 0 && err.is_panic(), "task {n}: {err}"),
            }
        }
        eventually("every future dropped", || drops.load(SeqCst) == 1_000);
        assert_eq!(
            on_pool.load(SeqCst),
            1_000,
            "a future was dropped off the pool"
        );
    });
}

/// The metrics count a future task as for a closure: spawned, started at its first poll,
/// finished or panicked at its end, cancelled when dropped before its first poll.
#[test]
fn metrics_count_future_tasks_like_closures() {
    watchdog(|| {
        let pool = Arc::new(common::pool(1));
        let before = bridge_rayon::metrics();
        pool.spawn_future_task(async { async_io_yield().await })
            .wait();
        assert!(
            pool.spawn_future_task(async { panic!("counted") })
                .join()
                .is_err()
        );
        // Dropped before its first poll: the pool's only thread is busy.
        let open = common::gate(&pool);
        drop(pool.spawn_future_task(async {}));
        open.send(()).unwrap();
        // Counted when the pool gets to the job, on the pool thread.
        eventually("the cancel is counted", || {
            bridge_rayon::metrics().since(&before).cancelled >= 1
        });
        let delta = bridge_rayon::metrics().since(&before);
        // Other tests of this binary count too: at least these.
        assert!(delta.spawned >= 3, "{delta:?}");
        assert!(delta.started >= 2, "{delta:?}");
        assert!(delta.finished >= 1, "{delta:?}");
        assert!(delta.panicked >= 1, "{delta:?}");
        assert!(delta.cancelled >= 1, "{delta:?}");
    });
}

/// A `Limit` holds the room of a future task until the future completes (or is dropped by a
/// cancel), not just until its first poll.
#[test]
fn a_limit_holds_the_room_of_a_future_task_until_it_ends() {
    watchdog(|| {
        let limit = Limit::new(1);
        let gate = Gate::default();
        let wait = gate.wait();
        let task = limit.spawn_future(async move {
            wait.await;
            3
        });
        eventually("the first poll registered a waker", || gate.has_waker());
        assert_eq!(limit.in_flight(), 1);
        assert!(
            limit.try_spawn(|| ()).is_err(),
            "room while the future waits"
        );
        gate.open();
        assert_eq!(task.wait(), 3);
        assert_eq!(limit.in_flight(), 0);

        let pool = Arc::new(common::pool(1));
        let limit = Limit::new(1).pool(pool.clone());
        let task = limit.spawn_future(std::future::pending::<()>());
        assert_eq!(limit.in_flight(), 1);
        drop(task);
        eventually("the cancel gives the room back", || limit.in_flight() == 0);
    });
}

/// Feature `tracing`: the span current at the spawn is current during every poll, on
/// whichever pool thread runs it.
#[cfg(feature = "tracing")]
#[test]
fn the_spawning_span_is_current_in_every_poll() {
    use tracing_subscriber::layer::{Context as LayerContext, Layer, SubscriberExt};
    use tracing_subscriber::registry::{LookupSpan, Registry};

    /// The name of the span current at each event.
    static SEEN: Mutex<Vec<Option<&'static str>>> = Mutex::new(Vec::new());
    struct Recorder;
    impl<S: tracing::Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Recorder {
        fn on_event(&self, event: &tracing::Event<'_>, ctx: LayerContext<'_, S>) {
            let span = ctx.event_span(event).map(|span| span.name());
            SEEN.lock().unwrap().push(span);
        }
    }
    // This binary's only subscriber: other tests log nothing.
    tracing::subscriber::set_global_default(Registry::default().with(Recorder)).unwrap();

    watchdog(|| {
        let task = tracing::info_span!("future_caller").in_scope(|| {
            spawn_future(async {
                for _ in 0..5 {
                    tracing::info!("poll");
                    async_io_yield().await;
                }
                tracing::info!("last poll");
            })
        });
        tracing::info!("outside");
        task.wait();
        let seen = SEEN.lock().unwrap();
        let in_span = seen.iter().filter(|s| **s == Some("future_caller")).count();
        assert_eq!(in_span, 6, "{seen:?}");
        assert!(seen.contains(&None), "the spawning thread left the span");
    });
}

/// A future of the global pool woken from a worker of another pool (where `rayon::spawn`
/// would queue on that other pool) is still polled on the global pool.
#[test]
fn a_wake_from_a_worker_of_another_pool_polls_on_the_global_pool() {
    watchdog(|| {
        let other = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .thread_name(|_| "other-pool".into())
            .build()
            .unwrap();
        for _ in 0..20 {
            let gate = Gate::default();
            let wait = gate.wait();
            let task = spawn_future(async move {
                wait.await;
                thread::current().name().map(str::to_owned)
            });
            eventually("the first poll registered a waker", || gate.has_waker());
            other.install(|| gate.open());
            let polled_on = task.wait();
            assert_ne!(polled_on.as_deref(), Some("other-pool"));
        }
    });
}

#[test]
fn spawn_stream_runs_on_the_pool_keeps_order_and_bound_and_cancels_on_drop() {
    use futures::StreamExt;
    watchdog(move || {
        let pool = Arc::new(
            rayon::ThreadPoolBuilder::new()
                .num_threads(2)
                .build()
                .unwrap(),
        );
        let made = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&made);
        let on_pool = Arc::clone(&pool);
        let numbers = futures::stream::iter(0..10_000u64).map(move |n| {
            assert!(
                on_pool.current_thread_index().is_some(),
                "item {n} off the pool"
            );
            counter.fetch_add(1, SeqCst);
            n
        });
        let mut crossing = pool.spawn_stream(numbers, 4);
        let mut next = 0;
        while let Some(n) = futures::executor::block_on(crossing.next()) {
            assert_eq!(n, next);
            next += 1;
            // At most the bound ahead of what was taken (and the one being made).
            assert!(made.load(SeqCst) as u64 <= next + 4 + 1);
        }
        assert_eq!(next, 10_000);

        // Dropping the crossing drops the stream on the pool even if it waits for ever.
        struct Dropped(Arc<AtomicUsize>);
        impl Drop for Dropped {
            fn drop(&mut self) {
                self.0.fetch_add(1, SeqCst);
            }
        }
        let dropped = Arc::new(AtomicUsize::new(0));
        let guard = Dropped(Arc::clone(&dropped));
        let forever = futures::stream::once(async move {
            let _keep = guard;
            1u8
        })
        .chain(futures::stream::pending());
        let mut crossing = pool.spawn_stream(forever, 1);
        assert_eq!(futures::executor::block_on(crossing.next()), Some(1));
        drop(crossing);
        eventually("the stream is dropped on the pool", || {
            dropped.load(SeqCst) == 1
        });
    });
}
