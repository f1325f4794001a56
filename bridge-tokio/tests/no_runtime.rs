//! The no-runtime route: tasks a call spawns keep running between calls, a poll that blocks
//! stalls no other call, sync code in the future may start a runtime of its own, nested
//! calls, time limits, and many threads at once at volume, each checked against tokio's own
//! `block_on`.
#![cfg(not(bridge_loom))]

mod common;

use bridge_tokio::{Route, route, run_blocking, try_run_blocking_timeout};
use common::{current_thread, echo_addr, multi_thread, watchdog, work};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Polls `done` until it holds or `secs` pass; whether it held.
fn eventually(secs: u64, done: impl Fn() -> bool) -> bool {
    let until = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < until {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    done()
}

/// A task spawned by one call ticks while no call runs: the I/O runtime's workers run it.
#[test]
// The call's output is the task's handle, awaited in a later call.
#[allow(clippy::async_yields_async)]
fn a_task_spawned_in_one_call_keeps_running_between_calls() {
    let ticks = Arc::new(AtomicU64::new(0));
    let counted = ticks.clone();
    let task = run_blocking(async move {
        tokio::spawn(async move {
            let mut every = tokio::time::interval(Duration::from_millis(1));
            loop {
                every.tick().await;
                counted.fetch_add(1, SeqCst);
            }
        })
    });
    let after_call = ticks.load(SeqCst);
    assert!(
        eventually(20, || ticks.load(SeqCst) >= after_call + 50),
        "the task stopped ticking between calls ({} ticks)",
        ticks.load(SeqCst)
    );
    // And it is still there for a later call, from another thread.
    std::thread::spawn(move || {
        run_blocking(async move {
            task.abort();
            assert!(task.await.unwrap_err().is_cancelled());
        })
    })
    .join()
    .unwrap();
}

/// One call's poll blocks for a long time; every other call, on every driver, goes on
/// meanwhile (the core is free while a future is polled).
#[test]
fn a_poll_that_blocks_stalls_no_other_call() {
    watchdog(60, || {
        let blocked_until_done = Arc::new(AtomicBool::new(false));
        let released = Arc::new(AtomicBool::new(false));
        let blocker = {
            let (done, released) = (blocked_until_done.clone(), released.clone());
            std::thread::spawn(move || {
                run_blocking(async move {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    // Blocks inside a poll until the others are done (or 20 s).
                    let until = Instant::now() + Duration::from_secs(20);
                    while !done.load(SeqCst) && Instant::now() < until {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    released.store(true, SeqCst);
                })
            })
        };
        std::thread::sleep(Duration::from_millis(20));
        let cpus = std::thread::available_parallelism().map_or(1, usize::from);
        let others: Vec<_> = (0..4 * cpus as u64)
            .map(|t| {
                let released = released.clone();
                std::thread::spawn(move || {
                    for i in 0..20 {
                        assert_eq!(run_blocking(work(t * 100 + i)), t * 100 + i);
                    }
                    assert!(!released.load(SeqCst), "waited for the blocked poll");
                })
            })
            .collect();
        for other in others {
            other.join().unwrap();
        }
        blocked_until_done.store(true, SeqCst);
        blocker.join().unwrap();
    });
}

/// Sync code in the future starts a runtime of its own (both flavours) and calls
/// `run_blocking` from its body: that call is in a runtime, not nested in the driver's.
#[test]
fn a_future_may_start_a_runtime_of_its_own() {
    watchdog(60, || {
        let (current, multi) = run_blocking(async {
            tokio::time::sleep(Duration::from_millis(1)).await;
            // The route a call takes there, and the call.
            let current = current_thread().block_on(async {
                tokio::time::sleep(Duration::from_millis(1)).await;
                (route(), run_blocking(work(7)))
            });
            let multi = multi_thread().block_on(async {
                tokio::spawn(async { (route(), run_blocking(work(8))) })
                    .await
                    .unwrap()
            });
            (current, multi)
        });
        assert_eq!(current, (Route::Handoff, 7));
        assert_eq!(multi, (Route::OnWorker, 8));
    });
}

/// Calls nested three deep, each with a timer and TCP, stay on the route of a call with no
/// runtime.
#[test]
fn nested_calls_drive_too() {
    watchdog(60, || {
        let got = run_blocking(async {
            let outer = work(1).await;
            let (mid, inner) = run_blocking(async {
                let mid = work(2).await;
                let inner = run_blocking(async { (route(), work(3).await) });
                (mid, inner)
            });
            (outer, mid, inner)
        });
        assert_eq!(got, (1, 2, (Route::Inline, 3)));
    });
}

/// A time limit that passes while the call drives: a timeout, the future dropped, and the
/// thread's next calls work.
#[test]
fn a_time_limit_passes_while_driving() {
    struct Dropped(Arc<AtomicBool>);
    impl Drop for Dropped {
        fn drop(&mut self) {
            self.0.store(true, SeqCst);
        }
    }
    watchdog(60, || {
        for i in 0..50 {
            let dropped = Arc::new(AtomicBool::new(false));
            let guard = Dropped(dropped.clone());
            let slow = async move {
                let _guard = guard;
                tokio::time::sleep(Duration::from_secs(60)).await;
            };
            let err = try_run_blocking_timeout(slow, Duration::from_millis(2)).unwrap_err();
            assert!(err.is_timeout(), "{err}");
            assert!(dropped.load(SeqCst), "the future outlived its call");
            assert_eq!(run_blocking(work(i)), i);
        }
    });
}

/// Many threads, more than the CPUs, each making hundreds of calls that do a few dozen
/// tokio operations (timers, channels, a spawned task, TCP on a connection the thread keeps
/// from call to call): every output is what tokio's own current-thread `block_on` gives
/// for the same future.
#[test]
fn many_threads_at_volume() {
    async fn exchange(stream: &mut TcpStream, tag: u64) -> u64 {
        let (tx, mut rx) = tokio::sync::mpsc::channel(4);
        let producer = tokio::spawn(async move {
            for k in 0..8u64 {
                tx.send(tag.wrapping_mul(31).wrapping_add(k)).await.unwrap();
                tokio::task::yield_now().await;
            }
        });
        let mut sum = 0u64;
        while let Some(v) = rx.recv().await {
            stream.write_all(&v.to_le_bytes()).await.unwrap();
            let mut back = [0u8; 8];
            stream.read_exact(&mut back).await.unwrap();
            sum = sum.wrapping_add(u64::from_le_bytes(back));
        }
        producer.await.unwrap();
        tokio::time::sleep(Duration::ZERO).await;
        sum
    }
    watchdog(120, || {
        let reference = current_thread();
        let want: Vec<u64> = (0..300u64)
            .map(|i| {
                reference.block_on(async {
                    let mut stream = TcpStream::connect(echo_addr()).await.unwrap();
                    exchange(&mut stream, i).await
                })
            })
            .collect();
        let want = Arc::new(want);
        let threads: Vec<_> = (0..12)
            .map(|t| {
                let want = want.clone();
                std::thread::spawn(move || {
                    // The connection is made in the first call and reused by the others.
                    let mut stream = Some(run_blocking(async {
                        TcpStream::connect(echo_addr()).await.unwrap()
                    }));
                    for i in (0..300u64).skip(t) {
                        let mut s = stream.take().unwrap();
                        let (got, s) = run_blocking(async move {
                            let got = exchange(&mut s, i).await;
                            (got, s)
                        });
                        stream = Some(s);
                        assert_eq!(got, want[i as usize], "thread {t}, call {i}");
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
    });
}

/// A task spawned in a call with no runtime runs on the shared I/O runtime, a multi-thread
/// one: a sync call made in it leaves the scheduler, so a future that needs that runtime (a
/// socket made in the first call) finishes there.
#[test]
fn a_sync_call_in_a_task_spawned_with_no_runtime_finishes() {
    watchdog(60, || {
        let echoed = run_blocking(async {
            let mut stream = TcpStream::connect(echo_addr()).await.unwrap();
            tokio::spawn(async move {
                assert_eq!(route(), Route::OnWorker);
                let read = async move {
                    stream.write_all(&[7; 8]).await?;
                    let mut back = [0u8; 8];
                    stream.read_exact(&mut back).await.map(|_| back)
                };
                try_run_blocking_timeout(read, Duration::from_secs(30))
            })
            .await
            .unwrap()
        });
        assert_eq!(echoed.unwrap().unwrap(), [7; 8]);
    });
}
