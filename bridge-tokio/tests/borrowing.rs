//! Futures that borrow from the caller, on every route and every path: finished, timed out,
//! panicked, their runtime dropped mid-call. The borrowed value is marked dead as soon as the
//! call returns; the future checks the mark on every poll and when it is dropped, and counts
//! each time it finds the value dead. Any count is a use after the caller's frame moved on.

mod common;

use bridge_tokio::{IoRuntime, Route, route};
use common::{current_thread, multi_thread, watchdog, work};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::time::{Duration, Instant};

/// Uses of a borrowed value after its call returned, across the whole test binary.
static LATE: AtomicUsize = AtomicUsize::new(0);

/// A value on the caller's stack, marked dead when the caller is done with it.
struct Stack {
    alive: AtomicBool,
    tag: u64,
}

impl Stack {
    fn new(tag: u64) -> Self {
        Self {
            alive: AtomicBool::new(true),
            tag,
        }
    }

    fn check(&self) {
        if !self.alive.load(SeqCst) {
            LATE.fetch_add(1, SeqCst);
        }
    }

    /// Marks the value dead: the call that borrowed it has returned.
    fn done(&self) {
        self.alive.store(false, SeqCst);
    }
}

/// Holds the borrow for the future's whole life, and checks it when dropped.
struct Borrow<'a>(&'a Stack);

impl Drop for Borrow<'_> {
    fn drop(&mut self) {
        self.0.check();
    }
}

/// A future that borrows `stack`, checks it around a real wait, and returns its tag.
async fn borrowing(stack: &Stack, wait: Duration) -> u64 {
    let borrow = Borrow(stack);
    borrow.0.check();
    tokio::time::sleep(wait).await;
    borrow.0.check();
    let echoed = work(borrow.0.tag).await;
    borrow.0.check();
    echoed
}

/// Every call form on the route of the calling context: finished, timed out, panicked.
fn every_path(expected: Route, tag: u64) {
    assert_eq!(route(), expected);
    let finished = Stack::new(tag);
    assert_eq!(
        bridge_tokio::run_blocking(borrowing(&finished, Duration::from_millis(1))),
        tag
    );
    finished.done();

    let timed_out = Stack::new(tag + 1);
    let started = Instant::now();
    let result = bridge_tokio::try_run_blocking_timeout(
        borrowing(&timed_out, Duration::from_secs(60)),
        Duration::from_millis(20),
    );
    timed_out.done();
    assert!(result.as_ref().is_err_and(|e| e.is_timeout()), "{result:?}");
    assert!(started.elapsed() < Duration::from_secs(30));

    let panicked = Stack::new(tag + 2);
    let result = bridge_tokio::try_run_blocking(async {
        let _borrow = Borrow(&panicked);
        tokio::time::sleep(Duration::from_millis(1)).await;
        panic!("after a wait")
    });
    panicked.done();
    assert!(result.unwrap_err().is_panic());
}

#[test]
fn every_route_keeps_the_borrow_alive() {
    watchdog(60, || {
        every_path(Route::Inline, 10);
        let rt = multi_thread();
        rt.block_on(async {
            every_path(Route::Handoff, 20);
            tokio::spawn(async { every_path(Route::OnWorker, 30) })
                .await
                .unwrap();
        });
        current_thread().block_on(async { every_path(Route::Handoff, 40) });
        rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap()
            .install(|| every_path(Route::Inline, 50));
        // Give any straggler a moment to show itself.
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(
            LATE.load(SeqCst),
            0,
            "a future used its borrow after the call"
        );
    });
}

/// The I/O runtime is dropped while borrowing futures wait on its timers, on the routes that
/// run a future with that runtime's handle: a handoff from a thread that entered it, a
/// call in place in one of its tasks, and a call nested in a handed-off future (polled in
/// place on the handoff worker). Each call ends with `Lost` only once the future is gone.
#[test]
fn a_runtime_dropped_mid_call_keeps_the_borrow_alive() {
    watchdog(60, || {
        let io = IoRuntime::new(1).unwrap();
        let handle = io.handle().clone();
        let (tx, results) = std::sync::mpsc::channel();
        for i in 0..3u64 {
            let tx = tx.clone();
            let entered = handle.clone();
            let caller = move || {
                let stack = Stack::new(60 + i);
                let result = match i {
                    0 => {
                        let _entered = entered.enter();
                        assert_eq!(route(), Route::Handoff);
                        bridge_tokio::try_run_blocking(borrowing(&stack, Duration::from_secs(30)))
                    }
                    1 => {
                        assert_eq!(route(), Route::OnWorker);
                        bridge_tokio::try_run_blocking(borrowing(&stack, Duration::from_secs(30)))
                    }
                    _ => {
                        let _entered = entered.enter();
                        bridge_tokio::try_run_blocking(async {
                            assert_eq!(route(), Route::Inline);
                            bridge_tokio::try_run_blocking(borrowing(
                                &stack,
                                Duration::from_secs(30),
                            ))
                        })
                        .and_then(|inner| inner)
                    }
                };
                stack.done();
                let _ = tx.send((i, result));
            };
            if i == 1 {
                handle.spawn(async move { caller() });
            } else {
                std::thread::spawn(caller);
            }
        }
        drop(tx);
        std::thread::sleep(Duration::from_millis(100));
        drop(io);
        let results: Vec<_> = results.iter().collect();
        assert_eq!(results.len(), 3, "{results:?}");
        for (i, result) in results {
            assert!(
                result.as_ref().is_err_and(|e| e.is_lost()),
                "caller {i}: {result:?}"
            );
        }
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(
            LATE.load(SeqCst),
            0,
            "a future used its borrow after the call"
        );
    });
}
