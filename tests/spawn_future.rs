//! `bridge::cpu::spawn_future` and the facade's `ThreadPoolExt::spawn_future_task`: the
//! shared `IoRuntime` is entered during every poll, so tokio timers, channels, sockets and
//! `tokio::spawn` work inside a future that runs on rayon.
//!
//! Each test runs its body under a watchdog: a future whose tokio resource never wakes it
//! fails the test after 20 s instead of hanging the suite.
#![cfg(not(bridge_loom))]
#![cfg(all(feature = "rayon", feature = "tokio"))]

use bridge::cpu::ThreadPoolExt;
use std::panic;
use std::sync::Arc;
use std::sync::mpsc;
use std::thread;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const WATCHDOG: Duration = Duration::from_secs(20);

/// Runs `body` on a thread of its own; fails if it takes longer than [`WATCHDOG`].
fn watchdog<R: Send + 'static>(body: impl FnOnce() -> R + Send + 'static) -> R {
    let (done_tx, done) = mpsc::channel::<()>();
    let handle = thread::spawn(move || {
        let result = body();
        let _ = done_tx.send(());
        result
    });
    match done.recv_timeout(WATCHDOG) {
        Ok(()) | Err(mpsc::RecvTimeoutError::Disconnected) => match handle.join() {
            Ok(result) => result,
            Err(payload) => panic::resume_unwind(payload),
        },
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("hung: not done within {WATCHDOG:?}"),
    }
}

/// A future pending on tokio timers, polled on the global pool: every poll runs on a rayon
/// worker, and 100 sleeps in a row all wake it.
#[test]
fn tokio_timers_wake_a_future_on_the_pool() {
    watchdog(|| {
        let task = bridge::cpu::spawn_future(async {
            let mut on_pool = 0;
            for _ in 0..100 {
                tokio::time::sleep(Duration::from_micros(200)).await;
                on_pool += usize::from(rayon::current_thread_index().is_some());
            }
            on_pool
        });
        assert_eq!(task.wait(), 100);
    });
}

/// A tokio channel fed by a task of the shared runtime (spawned from inside the future with
/// `tokio::spawn`, which finds the entered handle), 10,000 messages: the future on the pool
/// receives them all, in order.
#[test]
fn a_tokio_channel_fed_from_the_io_runtime() {
    watchdog(|| {
        let task = bridge::cpu::spawn_future(async {
            let (tx, mut rx) = tokio::sync::mpsc::channel::<u32>(16);
            let producer = tokio::spawn(async move {
                for n in 0..10_000 {
                    tx.send(n).await.unwrap();
                }
            });
            let mut expected = 0;
            while let Some(n) = rx.recv().await {
                assert_eq!(n, expected);
                expected += 1;
            }
            producer.await.unwrap();
            expected
        });
        assert_eq!(task.wait(), 10_000);
    });
}

/// A TCP loopback: a server task on the shared runtime echoes 1 MiB that a future on the
/// pool writes and reads back through a socket registered with the shared runtime's reactor
/// (it was created inside the poll).
#[test]
fn a_tcp_loopback_round_trip_of_a_mebibyte() {
    watchdog(|| {
        const LEN: usize = 1 << 20;
        let task = bridge::cpu::spawn_future(async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let server = tokio::spawn(async move {
                let (mut socket, _) = listener.accept().await.unwrap();
                let (mut read, mut write) = socket.split();
                tokio::io::copy(&mut read, &mut write).await.unwrap();
            });
            let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
            let (mut read, mut write) = stream.into_split();
            let sent: Vec<u8> = (0..LEN).map(|i| (i % 251) as u8).collect();
            let expected = sent.clone();
            let writer = tokio::spawn(async move {
                write.write_all(&sent).await.unwrap();
                write.shutdown().await.unwrap();
            });
            let mut back = Vec::with_capacity(LEN);
            read.read_to_end(&mut back).await.unwrap();
            writer.await.unwrap();
            server.await.unwrap();
            // CPU work on the bytes, in the same future, on the pool.
            let checksum = back.iter().map(|&b| u64::from(b)).sum::<u64>();
            (
                back == expected,
                checksum,
                rayon::current_thread_index().is_some(),
            )
        });
        let expected: u64 = (0..LEN).map(|i| (i % 251) as u64).sum();
        assert_eq!(task.wait(), (true, expected, true));
    });
}

/// The facade's `spawn_future_task` enters the shared runtime too; and on a pool of one
/// thread, a job that spawns a future pending on a tokio timer and waits for it finishes
/// (the wait runs the queued polls inline, on that worker, and blocks between them).
#[test]
fn the_only_worker_of_a_pool_waits_for_its_future_on_a_tokio_timer() {
    watchdog(|| {
        let pool = Arc::new(
            rayon::ThreadPoolBuilder::new()
                .num_threads(1)
                .build()
                .unwrap(),
        );
        let inner = pool.clone();
        let threads = pool.install(move || {
            inner
                .spawn_future_task(async {
                    let mut threads = Vec::new();
                    for _ in 0..3 {
                        tokio::time::sleep(Duration::from_millis(2)).await;
                        threads.push(rayon::current_thread_index());
                    }
                    threads
                })
                .wait()
        });
        assert_eq!(threads, vec![Some(0); 3]);
        // The delegating methods of the facade's trait still work.
        assert_eq!(pool.spawn_task(|| 1).wait(), 1);
        assert_eq!(pool.spawn_fifo_task(|| 2).wait(), 2);
        assert!(!pool.spawn_cancellable_task(|f| f.is_cancelled()).wait());
    });
}

/// Dropping the task of a future pending on a tokio timer far away cancels it: the future
/// is dropped on the pool, promptly, without waiting for the timer.
#[test]
fn dropping_the_task_drops_a_future_pending_on_a_timer() {
    watchdog(|| {
        struct OnDrop(mpsc::Sender<bool>);
        impl Drop for OnDrop {
            fn drop(&mut self) {
                let _ = self.0.send(rayon::current_thread_index().is_some());
            }
        }
        let (dropped_tx, dropped) = mpsc::channel();
        let (polled_tx, polled) = mpsc::channel::<()>();
        let task = bridge::cpu::spawn_future(async move {
            let _guard = OnDrop(dropped_tx);
            polled_tx.send(()).unwrap();
            tokio::time::sleep(Duration::from_secs(3_600)).await;
        });
        polled.recv().unwrap();
        drop(task);
        let on_pool = dropped
            .recv_timeout(WATCHDOG)
            .expect("the future was not dropped");
        assert!(on_pool, "the future was dropped off the pool");
    });
}

/// 1,000 future tasks on tokio timers, awaited from a current-thread runtime's task: all
/// complete.
#[test]
fn a_thousand_future_tasks_on_timers_awaited_from_a_current_thread_runtime() {
    watchdog(|| {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let sum = rt.block_on(async {
            let tasks: Vec<_> = (0..1_000u64)
                .map(|n| {
                    bridge::cpu::spawn_future(async move {
                        tokio::time::sleep(Duration::from_millis(n % 5)).await;
                        n
                    })
                })
                .collect();
            let mut sum = 0;
            for task in tasks {
                sum += task.await;
            }
            sum
        });
        assert_eq!(sum, 999 * 1_000 / 2);
    });
}
