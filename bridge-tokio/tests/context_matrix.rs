//! The context matrix: `run_blocking` from every place synchronous code can find itself,
//! each doing a loopback TCP round trip and a timer, each under a watchdog. Every row checks
//! the value and the route `route()` reports.
//!
//! Written out by hand, as a user meets them: several contexts of one runtime in turn, the
//! global rayon pool and a broadcast, `async_executor`, runtimes that shut down or die under
//! a call. The generated matrix (every context of the context-stack harness, alone and
//! stacked, in every shape) is bridge-fuzz's (`fuzz/tests/proptest.rs`), which this crate's
//! tests cannot use: bridge-fuzz depends on the facade.

mod common;

use bridge_tokio::{Route, route, run_blocking};
use common::{current_thread, multi_thread, watchdog, work};

/// The check every row makes: the route is the one expected, and real work comes back.
fn call(expected: Route, tag: u64) {
    assert_eq!(route(), expected, "route for tag {tag}");
    assert_eq!(run_blocking(work(tag)), tag);
}

#[test]
fn plain_thread() {
    watchdog(30, || call(Route::Inline, 1));
}

#[test]
fn rayon_workers_of_the_global_and_a_custom_pool() {
    watchdog(30, || {
        rayon::scope(|s| s.spawn(|_| call(Route::Inline, 2)));
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        pool.install(|| call(Route::Inline, 3));
        // Many at once, on every worker.
        pool.broadcast(|ctx| call(Route::Inline, 100 + ctx.index() as u64));
    });
}

#[test]
fn multi_thread_task_body_and_spawn_blocking() {
    watchdog(30, || {
        let rt = multi_thread();
        rt.block_on(async {
            call(Route::Handoff, 4);
            tokio::spawn(async { call(Route::OnWorker, 5) })
                .await
                .unwrap();
            tokio::task::spawn_blocking(|| call(Route::Handoff, 6))
                .await
                .unwrap();
        });
    });
}

#[test]
fn current_thread_body_task_and_spawn_blocking() {
    watchdog(30, || {
        let rt = current_thread();
        rt.block_on(async {
            call(Route::Handoff, 7);
            tokio::spawn(async { call(Route::Handoff, 8) })
                .await
                .unwrap();
            tokio::task::spawn_blocking(|| call(Route::Handoff, 9))
                .await
                .unwrap();
        });
    });
}

#[test]
fn tokio_local_set_on_current_thread() {
    watchdog(30, || {
        let rt = current_thread();
        let local = tokio::task::LocalSet::new();
        local.block_on(&rt, async {
            call(Route::Handoff, 10);
            tokio::task::spawn_local(async { call(Route::Handoff, 11) })
                .await
                .unwrap();
        });
    });
}

/// A `LocalSet` on a multi-thread runtime's `block_on` body, where `block_in_place` panics:
/// the future runs on a handoff worker with that runtime's handle (outside the `LocalSet`'s
/// task, its budget and its entered runtime).
#[test]
fn tokio_local_set_on_multi_thread() {
    watchdog(30, || {
        let rt = multi_thread();
        let local = tokio::task::LocalSet::new();
        local.block_on(&rt, async {
            call(Route::Handoff, 12);
            tokio::task::spawn_local(async { call(Route::Handoff, 13) })
                .await
                .unwrap();
        });
        // The runtime is fine afterwards, in and out of the LocalSet.
        rt.block_on(async { call(Route::Handoff, 14) });
    });
}

#[test]
fn inside_runtime_free_executors() {
    watchdog(30, || {
        bridge_core::block_on(async { call(Route::Inline, 17) });
        futures::executor::block_on(async { call(Route::Inline, 18) });
        let ex = async_executor::Executor::new();
        let task = ex.spawn(async { call(Route::Inline, 19) });
        futures::executor::block_on(ex.run(task));
    });
}

/// Sixteen levels, each `run_blocking` called from inside the future of the one above, and
/// every third level from a current-thread runtime on a fresh thread, so the routes mix.
#[test]
fn nested_sixteen_deep_mixing_routes() {
    fn nest(depth: u64, routes: std::sync::Arc<std::sync::Mutex<Vec<Route>>>) -> u64 {
        routes.lock().unwrap().push(route());
        if depth == 0 {
            return run_blocking(work(99));
        }
        if depth % 3 == 0 {
            let routes = routes.clone();
            return std::thread::spawn(move || {
                current_thread().block_on(async move {
                    routes.lock().unwrap().push(route());
                    run_blocking(async move { nest(depth - 1, routes) }) + 1
                })
            })
            .join()
            .unwrap();
        }
        run_blocking(async move { nest(depth - 1, routes) }) + 1
    }
    let routes = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = routes.clone();
    let got = watchdog(60, move || nest(16, routes));
    assert_eq!(got, 99 + 16);
    let seen = seen.lock().unwrap();
    assert!(seen.contains(&Route::Inline));
    assert!(seen.contains(&Route::Handoff));
}

#[test]
fn a_panicking_future_is_resumed_and_everything_still_works() {
    watchdog(30, || {
        let caught = std::panic::catch_unwind(|| run_blocking(async { panic!("in the future") }));
        assert_eq!(
            caught.unwrap_err().downcast_ref::<&str>(),
            Some(&"in the future")
        );
        call(Route::Inline, 20);

        let rt = multi_thread();
        rt.block_on(async {
            let caught = std::panic::catch_unwind(|| run_blocking(async { panic!("mt") }));
            assert!(caught.is_err());
            call(Route::Handoff, 21);
        });
        let rt = current_thread();
        rt.block_on(async {
            let caught = std::panic::catch_unwind(|| run_blocking(async { panic!("ct") }));
            assert!(caught.is_err());
            call(Route::Handoff, 22);
        });
    });
}

/// Values dropped while a multi-thread runtime shuts down call the bridge from its worker
/// threads. The dying runtime's timers will never fire again, so the call finishes the
/// future on the I/O runtime: every cleanup gets its value (a timer and a TCP round trip),
/// and the route says so.
#[test]
fn values_dropped_while_a_multi_thread_runtime_shuts_down() {
    struct CallsOnDrop(u64, std::sync::mpsc::Sender<(u64, Route, String)>);
    impl Drop for CallsOnDrop {
        fn drop(&mut self) {
            let tag = self.0;
            let route = route();
            let waited = match bridge_tokio::try_run_blocking(work(tag)) {
                Ok(echoed) if echoed == tag => "value".to_string(),
                other => format!("{other:?}"),
            };
            let ready = run_blocking(async move { tag });
            let io = bridge_tokio::IoRuntime::global().spawn(work(tag)).wait();
            let _ = self.1.send((
                tag,
                route,
                format!("{waited}, ready {}, io {}", ready == tag, io == tag),
            ));
        }
    }
    let reports = watchdog(60, || {
        let (tx, rx) = std::sync::mpsc::channel();
        let rt = multi_thread();
        for tag in 0..8u64 {
            let value = CallsOnDrop(1_000 + tag, tx.clone());
            rt.spawn(async move {
                let _value = value;
                std::future::pending::<()>().await;
            });
        }
        drop(tx);
        // Let the tasks start (so their values live on the workers), then shut down.
        std::thread::sleep(std::time::Duration::from_millis(20));
        drop(rt);
        rx.iter().collect::<Vec<_>>()
    });
    assert_eq!(reports.len(), 8);
    for (tag, route, report) in reports {
        assert_eq!(report, "value, ready true, io true", "tag {tag}");
        assert_eq!(route, Route::Inline, "tag {tag}");
    }
}

/// An `IoRuntime` dropped while its tasks wait on its timers: each task's join ends with
/// `Lost`, never with a panic that the future did not raise; and so does a task spawned
/// after the drop through a handle of it.
#[test]
fn an_io_runtime_dropped_with_calls_in_flight() {
    watchdog(60, || {
        let io = bridge_tokio::IoRuntime::new(1).unwrap();
        let handle = io.handle().clone();
        let callers: Vec<_> = (0..4)
            .map(|i| {
                // Borrowed handles: the one owner below drops the runtime.
                let io = bridge_tokio::IoRuntime::from_handle(handle.clone());
                std::thread::spawn(move || {
                    let slow =
                        async { tokio::time::sleep(std::time::Duration::from_secs(30)).await };
                    // Joined from three contexts: a plain thread, a multi-thread runtime's
                    // body, and a current-thread runtime.
                    match i % 3 {
                        0 => io.spawn(slow).join(),
                        1 => multi_thread().block_on(async move { io.spawn(slow).join() }),
                        _ => current_thread().block_on(async move { io.spawn(slow).join() }),
                    }
                })
            })
            .collect();
        std::thread::sleep(std::time::Duration::from_millis(100));
        drop(io);
        for caller in callers {
            let result = caller.join().unwrap();
            assert!(result.as_ref().is_err_and(|e| e.is_lost()), "{result:?}");
        }
        let late = bridge_tokio::IoRuntime::from_handle(handle);
        let result = late.spawn(work(31)).join();
        assert!(result.as_ref().is_err_and(|e| e.is_lost()), "{result:?}");
    });
}

/// A thread still holds an entered guard of a runtime that was shut down in the background:
/// the call notices the dead runtime and drives the future with the I/O runtime instead of
/// panicking ("being shutdown").
#[test]
fn a_stale_guard_of_a_runtime_shut_down_in_the_background() {
    watchdog(30, || {
        let rt = multi_thread();
        let handle = rt.handle().clone();
        rt.shutdown_background();
        // The shutdown finishes on the runtime's own threads; a stale guard is one used after
        // that. (A runtime that dies during the call fails the call: see `Error::is_lost`.)
        std::thread::sleep(std::time::Duration::from_millis(100));
        let _guard = handle.enter();
        assert_eq!(run_blocking(work(23)), 23);
    });
}

/// The last handle on an owned `IoRuntime` dropped inside a task: tokio would panic on a
/// blocking shutdown there ("Cannot drop a runtime in a context where blocking is not
/// allowed"); the bridge shuts it down in the background instead.
#[test]
fn an_io_runtime_dropped_inside_an_async_context() {
    watchdog(30, || {
        let io = bridge_tokio::IoRuntime::new(1).unwrap();
        assert_eq!(io.spawn(work(30)).wait(), 30);
        let rt = multi_thread();
        rt.block_on(async move { tokio::spawn(async move { drop(io) }).await.unwrap() });
        let io = bridge_tokio::IoRuntime::new(1).unwrap();
        current_thread().block_on(async move { drop(io) });
    });
}

/// A limit too long for an `Instant` means no limit, the same way for the free function and
/// a wait on an `IoRuntime`'s task, on every route.
#[test]
fn limits_too_long_to_represent_mean_no_limit() {
    use std::time::Duration;
    let calls = |tag: u64| {
        let io = bridge_tokio::IoRuntime::global();
        assert_eq!(
            bridge_tokio::try_run_blocking_timeout(work(tag), Duration::MAX).unwrap(),
            tag
        );
        let mut task = io.spawn(work(tag));
        assert_eq!(task.wait_timeout(Duration::MAX), Some(tag));
    };
    watchdog(30, move || {
        calls(40);
        multi_thread().block_on(async move {
            tokio::spawn(async move { calls(41) }).await.unwrap();
        });
        current_thread().block_on(async move { calls(42) });
    });
}
