//! Shared test fixtures: a loopback echo server, the future every context runs (a TCP echo
//! round trip and a timer), and a watchdog.
#![allow(dead_code)]

pub mod child;

use std::net::SocketAddr;
use std::sync::OnceLock;
use std::sync::mpsc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A loopback echo server on its own runtime, started once per test binary.
pub fn echo_addr() -> SocketAddr {
    static ADDR: OnceLock<SocketAddr> = OnceLock::new();
    *ADDR.get_or_init(|| {
        let (tx, rx) = mpsc::channel();
        std::thread::Builder::new()
            .name("echo-server".into())
            .spawn(move || {
                let rt = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(1)
                    .enable_all()
                    .build()
                    .unwrap();
                rt.block_on(async move {
                    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
                    tx.send(listener.local_addr().unwrap()).unwrap();
                    loop {
                        let (mut socket, _) = listener.accept().await.unwrap();
                        tokio::spawn(async move {
                            let mut buf = [0u8; 256];
                            loop {
                                match socket.read(&mut buf).await {
                                    Ok(0) | Err(_) => return,
                                    Ok(n) => {
                                        if socket.write_all(&buf[..n]).await.is_err() {
                                            return;
                                        }
                                    }
                                }
                            }
                        });
                    }
                });
            })
            .unwrap();
        rx.recv().unwrap()
    })
}

/// Real work for every context: a timer, then a TCP echo round trip of `tag`'s bytes.
/// Returns `tag` as echoed.
pub async fn work(tag: u64) -> u64 {
    tokio::time::sleep(Duration::from_millis(1)).await;
    let mut stream = TcpStream::connect(echo_addr()).await.unwrap();
    stream.write_all(&tag.to_le_bytes()).await.unwrap();
    let mut back = [0u8; 8];
    stream.read_exact(&mut back).await.unwrap();
    u64::from_le_bytes(back)
}

/// Runs `f` on its own thread and fails the test if it does not finish within `secs`.
pub fn watchdog<T: Send + 'static>(secs: u64, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    let worker = std::thread::Builder::new()
        .name("under-watchdog".into())
        .spawn(move || {
            let _ = tx.send(std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)));
        })
        .unwrap();
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(Ok(value)) => {
            worker.join().unwrap();
            value
        }
        Ok(Err(payload)) => std::panic::resume_unwind(payload),
        Err(_) => panic!("hung: no result within {secs} s"),
    }
}

/// A multi-thread runtime with 2 workers, I/O and timers enabled.
pub fn multi_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// A current-thread runtime with I/O and timers enabled.
pub fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Runs `body` in a child process (this binary, this test only) and checks that it exited
/// cleanly after printing its marker. In the child itself, runs `body` and prints the marker.
pub fn in_child(test: &str, body: impl FnOnce()) {
    const VAR: &str = "BRIDGE_TEST_CHILD";
    if std::env::var(VAR).as_deref() == Ok(test) {
        body();
        println!("child {test}: done");
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let child = std::process::Command::new(exe)
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(VAR, test)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let output = watchdog(60, move || child.wait_with_output().unwrap());
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success() && stdout.contains(&format!("child {test}: done")),
        "child {test} failed ({}):\n{stdout}\n{stderr}",
        output.status
    );
}
