//! The watch reports the delay that work woken on a held runtime sees: a socket's readiness
//! and a timer reach their tasks only when a worker turns the runtime's I/O driver, which a
//! worker busy with many short polls does only every few dozen polls, though it picks up a
//! task woken from another thread after every poll or two. Alone in its test binary: it sets
//! the process's slow-poll threshold.
#![cfg(not(bridge_loom))]

use std::net::Ipv4Addr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A service on 2 workers whose handler computes for 5 ms inline, 32 requests in flight
/// (the shape of an HTTP service that hashes in its handler): the workers run the handlers
/// whose sockets are ready, and turn the I/O driver for the others only between bursts. A
/// task woken from another thread runs within a poll or two (about 5 ms, under the 50 ms
/// threshold here); work woken by a socket waits for the turn (tens of milliseconds), which
/// is what the watch must report.
#[test]
fn a_service_computing_inline_is_named_by_the_delay_its_sockets_see() {
    bridge_tokio::settings::set_slow_poll(Duration::from_millis(50));
    let service = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let _watch = bridge_tokio::watch(service.handle());
    let listener = service
        .block_on(TcpListener::bind((Ipv4Addr::LOCALHOST, 0)))
        .unwrap();
    let addr = listener.local_addr().unwrap();
    service.spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = [0u8; 8];
                while conn.read_exact(&mut buf).await.is_ok() {
                    let start = Instant::now();
                    while start.elapsed() < Duration::from_millis(5) {
                        std::hint::spin_loop();
                    }
                    if conn.write_all(&buf).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    let before = bridge_tokio::metrics().held_runtimes;
    let clients = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    // The load runs until the watch names the service, for 10 s at most: on a busy machine
    // the first long turn may take a while to come.
    let named = Arc::new(AtomicBool::new(false));
    let end = Instant::now() + Duration::from_secs(10);
    clients.block_on(async move {
        let mut load = Vec::new();
        for _ in 0..32 {
            let named = Arc::clone(&named);
            load.push(tokio::spawn(async move {
                let mut conn = TcpStream::connect(addr).await.unwrap();
                let mut buf = [7u8; 8];
                while Instant::now() < end && !named.load(Relaxed) {
                    conn.write_all(&buf).await.unwrap();
                    conn.read_exact(&mut buf).await.unwrap();
                }
            }));
        }
        while Instant::now() < end && !named.load(Relaxed) {
            tokio::time::sleep(Duration::from_millis(50)).await;
            if bridge_tokio::metrics().held_runtimes > before {
                named.store(true, Relaxed);
            }
        }
        for task in load {
            task.await.unwrap();
        }
    });
    assert!(
        bridge_tokio::metrics().held_runtimes > before,
        "a service whose sockets waited tens of milliseconds for their turn was not named"
    );
}
