//! Program shapes, not only contexts: `run_blocking` beside sibling futures of the same task
//! (`join!`, `select!`), nested in a future that joins such a sibling, in a `Drop` that runs
//! while a panic unwinds, in a thread-local destructor at thread exit, under a panic hook of
//! the user's, and in `#[tokio::main]` and `#[tokio::test]` bodies written as users write
//! them.
//!
//! What could abort the process (a panic escaping a thread-local destructor or a `Drop`
//! during unwinding) runs in a child process: the test re-runs this binary for one test with
//! `BRIDGE_TEST_CHILD` set, and checks that the child exits cleanly and printed its
//! marker. Everything runs under a watchdog, so a lost wake-up fails instead of hanging.
//!
//! Written out by hand, as users write them (macro bodies, the process's first call in a
//! `Drop`, panics escaping a task or a thread, thread-locals registered before and after
//! tokio's, a user's panic hook); every shape in every context of the context-stack harness,
//! generated, is bridge-fuzz's (`fuzz/tests/proptest.rs`, `fuzz/tests/differential.rs`).

mod common;

use bridge_tokio::{Route, route, run_blocking, try_run_blocking};
use common::{current_thread, in_child, multi_thread, watchdog, work};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Duration;

/// Synchronous code as users write it: it knows nothing of the context it is called from.
fn sync_helper(tag: u64) -> u64 {
    run_blocking(async move {
        tokio::time::sleep(Duration::from_millis(30)).await;
        work(tag).await
    })
}

/// A sibling that ticks on a tokio timer until `done`, and counts its ticks.
async fn ticker(done: Arc<AtomicBool>) -> u32 {
    let mut ticks = 0;
    while !done.load(Ordering::Acquire) {
        tokio::time::sleep(Duration::from_millis(5)).await;
        ticks += 1;
    }
    ticks
}

/// One branch of a `join!` calls synchronous code that blocks on the bridge while the other
/// branch waits on a timer whose wake-up comes during that block. Returns the helper's
/// value; the join must complete. `join!` rotates which branch it polls first, and the wake-up
/// is lost only when the ticker was polled before the helper in the poll that blocks, so the
/// shape runs four times, the branches in both orders.
async fn joined_with_ticker(tag: u64) -> u64 {
    let mut value = 0;
    for round in 0..4 {
        let done = Arc::new(AtomicBool::new(false));
        let finished = done.clone();
        let helper = async move {
            tokio::time::sleep(Duration::from_millis(5)).await;
            let value = sync_helper(tag);
            finished.store(true, Ordering::Release);
            value
        };
        let ticks = if round % 2 == 0 {
            let (ticks, got) = tokio::join!(ticker(done), helper);
            value = got;
            ticks
        } else {
            let (got, ticks) = tokio::join!(helper, ticker(done));
            value = got;
            ticks
        };
        assert!(ticks >= 1);
    }
    value
}

/// The same with `select!`: the helper's branch wins, and the timer branch was woken while
/// it blocked.
async fn selected_against_a_timer(tag: u64) -> u64 {
    let mut slow = std::pin::pin!(tokio::time::sleep(Duration::from_secs(30)));
    tokio::select! {
        value = async { sync_helper(tag) } => {
            // The sibling is still pending and still wakes up later.
            tokio::time::sleep(Duration::from_millis(1)).await;
            value
        }
        () = &mut slow => panic!("the timer branch won"),
    }
}

#[tokio::main]
async fn tokio_main_multi_thread() -> u64 {
    joined_with_ticker(1).await + selected_against_a_timer(2).await
}

#[tokio::main(flavor = "current_thread")]
async fn tokio_main_current_thread() -> u64 {
    joined_with_ticker(3).await + selected_against_a_timer(4).await
}

#[test]
fn tokio_main_bodies_with_ticking_siblings() {
    assert_eq!(watchdog(30, tokio_main_multi_thread), 3);
    assert_eq!(watchdog(30, tokio_main_current_thread), 7);
}

/// Aborts the process if the test is still running after `secs`: a `#[tokio::test]` body
/// cannot be moved under the watchdog, and a lost wake-up would hang it.
fn abort_if_hung(secs: u64) -> mpsc::Sender<()> {
    let (tx, rx) = mpsc::channel::<()>();
    std::thread::spawn(move || {
        if let Err(mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(Duration::from_secs(secs)) {
            eprintln!("hung for {secs} s: aborting");
            std::process::abort();
        }
    });
    tx
}

#[tokio::test]
async fn tokio_test_current_thread_with_ticking_siblings() {
    let _alive = abort_if_hung(30);
    assert_eq!(joined_with_ticker(5).await, 5);
    assert_eq!(selected_against_a_timer(6).await, 6);
    assert_eq!(route(), Route::Handoff);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokio_test_multi_thread_with_ticking_siblings() {
    let _alive = abort_if_hung(30);
    assert_eq!(joined_with_ticker(7).await, 7);
    assert_eq!(selected_against_a_timer(8).await, 8);
    // And in a task of the same runtime, on a worker.
    let task = tokio::spawn(async { joined_with_ticker(9).await });
    assert_eq!(task.await.unwrap(), 9);
}

/// The call nested in a future that joins a pending sibling, the future itself run by
/// `run_blocking` (or another executor) from every kind of synchronous context.
#[test]
fn nested_in_a_future_that_joins_a_ticking_sibling() {
    let nested = |tag: u64| run_blocking(joined_with_ticker(tag));
    watchdog(60, move || {
        // A plain thread.
        assert_eq!(nested(10), 10);
        // A rayon worker.
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        assert_eq!(pool.install(move || nested(11)), 11);
        // A spawn_blocking thread of either flavor.
        for rt in [multi_thread(), current_thread()] {
            let got = rt.block_on(async move {
                tokio::task::spawn_blocking(move || nested(12))
                    .await
                    .unwrap()
            });
            assert_eq!(got, 12);
        }
        // block_on bodies: runtime-free, and both runtime flavors.
        assert_eq!(bridge_core::block_on(async { nested(13) }), 13);
        assert_eq!(multi_thread().block_on(async { nested(14) }), 14);
        assert_eq!(current_thread().block_on(async { nested(15) }), 15);
        // Two levels: the nested future's helper itself nests the same shape.
        assert_eq!(
            run_blocking(async move {
                let inner = tokio::spawn(async { 0 });
                inner.await.unwrap() + nested(16)
            }),
            16
        );
    });
}

// ---------------------------------------------------------------------------------------
// Child processes, for the shapes that could abort.

/// Makes a real call when dropped and reports what it got.
struct CallsOnDrop {
    tag: u64,
    report: mpsc::Sender<(u64, Result<u64, String>)>,
}

impl Drop for CallsOnDrop {
    fn drop(&mut self) {
        let got = try_run_blocking(work(self.tag)).map_err(|error| format!("{error:?}"));
        let _ = self.report.send((self.tag, got));
    }
}

/// Checks that every report carries its own tag back, and that `expected` reports came.
fn expect_reports(rx: mpsc::Receiver<(u64, Result<u64, String>)>, expected: usize) {
    let mut seen = 0;
    while seen < expected {
        let (tag, got) = rx
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("{seen} of {expected} reports came"));
        assert_eq!(got, Ok(tag), "tag {tag}");
        seen += 1;
    }
}

/// A `Drop` that calls the bridge while a panic unwinds through it, in every context. The
/// first call of the process is one of them (no bridge call came before it).
#[test]
fn drop_during_unwinding_in_every_context() {
    in_child("drop_during_unwinding_in_every_context", || {
        let (tx, rx) = mpsc::channel();
        let unwind_with = |tag: u64, tx: mpsc::Sender<_>| {
            let caught = std::panic::catch_unwind(move || {
                let _calls = CallsOnDrop { tag, report: tx };
                panic!("unwinding through a bridge call {tag}");
            });
            assert!(caught.is_err());
        };
        // The first call of the process: a multi-thread runtime's block_on body.
        let rt = multi_thread();
        let tx1 = tx.clone();
        rt.block_on(async move { unwind_with(20, tx1) });
        // A task on a worker: the panic ends the task (tokio catches it).
        let tx2 = tx.clone();
        let task = rt.spawn(async move {
            let _calls = CallsOnDrop {
                tag: 21,
                report: tx2,
            };
            panic!("a task panics");
        });
        assert!(rt.block_on(task).unwrap_err().is_panic());
        // A LocalSet on the multi-thread runtime.
        let tx3 = tx.clone();
        tokio::task::LocalSet::new().block_on(&rt, async move { unwind_with(22, tx3) });
        // A current-thread runtime's body and task.
        let ct = current_thread();
        let tx4 = tx.clone();
        ct.block_on(async move { unwind_with(23, tx4) });
        let tx5 = tx.clone();
        let task = ct.spawn(async move {
            let _calls = CallsOnDrop {
                tag: 24,
                report: tx5,
            };
            panic!("a current-thread task panics");
        });
        assert!(ct.block_on(task).unwrap_err().is_panic());
        // A plain thread and a rayon worker.
        unwind_with(25, tx.clone());
        let tx6 = tx.clone();
        rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap()
            .install(move || unwind_with(26, tx6));
        // A thread that panics all the way out: the value drops while it unwinds.
        let tx7 = tx.clone();
        let ended = std::thread::spawn(move || {
            let _calls = CallsOnDrop {
                tag: 27,
                report: tx7,
            };
            panic!("the thread panics");
        })
        .join();
        assert!(ended.is_err());
        expect_reports(rx, 8);
    });
}

thread_local! {
    static AT_EXIT: std::cell::RefCell<Option<CallsOnDrop>> = const { std::cell::RefCell::new(None) };
}

/// Registers `calls` to run in a thread-local destructor of this thread.
fn at_exit(calls: CallsOnDrop) {
    AT_EXIT.with(|slot| *slot.borrow_mut() = Some(calls));
}

/// A thread-local destructor that calls the bridge at thread exit: registered before the
/// thread touched tokio (so it runs after tokio's thread-locals are gone) and after (so it
/// runs while they are still there), with and without an earlier bridge call on the thread,
/// on plain threads, rayon workers, runtime workers and a current-thread runtime's thread.
#[test]
fn thread_local_destructors_at_thread_exit() {
    in_child("thread_local_destructors_at_thread_exit", || {
        let (tx, rx) = mpsc::channel();
        // Plain threads, four ways.
        for (tag, call_first, register_first) in [
            (30, false, true),
            (31, true, true),
            (32, true, false),
            (33, false, false),
        ] {
            let tx = tx.clone();
            std::thread::spawn(move || {
                let calls = CallsOnDrop { tag, report: tx };
                if register_first {
                    at_exit(calls);
                    if call_first {
                        assert_eq!(run_blocking(work(tag)), tag);
                    }
                } else {
                    if call_first {
                        assert_eq!(run_blocking(work(tag)), tag);
                    }
                    let _ = route();
                    at_exit(calls);
                }
            })
            .join()
            .unwrap();
        }
        // Rayon workers: their destructors run when the pool's threads exit.
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        let tx1 = tx.clone();
        pool.broadcast(move |ctx| {
            let tag = 40 + ctx.index() as u64;
            if ctx.index() == 0 {
                assert_eq!(run_blocking(work(tag)), tag);
            }
            at_exit(CallsOnDrop {
                tag,
                report: tx1.clone(),
            });
        });
        drop(pool);
        // Runtime workers and a spawn_blocking thread: at the runtime's shutdown.
        let rt = multi_thread();
        let tx2 = tx.clone();
        rt.block_on(async move {
            let tx3 = tx2.clone();
            tokio::spawn(async move {
                assert_eq!(sync_helper(50), 50);
                at_exit(CallsOnDrop {
                    tag: 51,
                    report: tx3,
                });
            })
            .await
            .unwrap();
            tokio::task::spawn_blocking(move || {
                at_exit(CallsOnDrop {
                    tag: 52,
                    report: tx2,
                })
            })
            .await
            .unwrap();
        });
        drop(rt);
        // A thread that ran a current-thread runtime.
        let tx4 = tx.clone();
        std::thread::spawn(move || {
            current_thread().block_on(async move {
                assert_eq!(sync_helper(60), 60);
                at_exit(CallsOnDrop {
                    tag: 61,
                    report: tx4,
                });
            });
        })
        .join()
        .unwrap();
        expect_reports(rx, 4 + 2 + 2 + 1);
    });
}

/// A panic hook the user installs after the bridge's first call sees exactly the user's
/// panics: none of the bridge's own, in every context (a `LocalSet` on a multi-thread
/// runtime included, where `block_in_place` refuses).
#[test]
fn a_panic_hook_installed_after_the_first_call_sees_only_user_panics() {
    in_child(
        "a_panic_hook_installed_after_the_first_call_sees_only_user_panics",
        || {
            assert_eq!(run_blocking(async { 1 }), 1);
            let hooked = Arc::new(AtomicUsize::new(0));
            let count = hooked.clone();
            std::panic::set_hook(Box::new(move |_| {
                count.fetch_add(1, Ordering::SeqCst);
            }));
            let rt = multi_thread();
            for _ in 0..50 {
                tokio::task::LocalSet::new().block_on(&rt, async {
                    assert_eq!(route(), Route::Handoff);
                    assert_eq!(run_blocking(async { 2 }), 2);
                });
                rt.block_on(async {
                    assert_eq!(run_blocking(async { 3 }), 3);
                    tokio::spawn(async { run_blocking(async { 4 }) })
                        .await
                        .unwrap();
                });
                current_thread().block_on(async { assert_eq!(run_blocking(async { 5 }), 5) });
            }
            assert_eq!(
                hooked.load(Ordering::SeqCst),
                0,
                "the hook saw the bridge's panics"
            );
            // The user's own panic, through the bridge: seen once.
            let err = try_run_blocking(async { panic!("the user's") }).unwrap_err();
            assert_eq!(err.to_string(), "the work panicked: the user's");
            assert_eq!(hooked.load(Ordering::SeqCst), 1);
            let _ = std::panic::take_hook();
        },
    );
}
