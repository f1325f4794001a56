//! A call made on a current-thread runtime whose future needs a task of that runtime can
//! never finish: the runtime cannot run while its thread waits in the call. Past the stall
//! threshold such a call is named: a warning (feature `tracing`), a count in
//! `metrics().stalled_handoffs`, and a timeout whose message gives the cause and the
//! remedy. Calls made anywhere else, and calls that finish in time, are not.
//!
//! The threshold, the counters and the recorded events are the process's: each test holds
//! `SERIAL` and puts the threshold back when it ends.
// Not under loom: these use the std build of the bridge (metrics, settings, real runtimes).
#![cfg(not(bridge_loom))]

#[cfg(feature = "tracing")]
mod trace_recorder;

use bridge_core::Error;
use bridge_tokio::Route;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// One test at a time. A tokio mutex: the `#[tokio::test]` bodies hold it across awaits.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The start of the bridge's warning.
#[cfg(feature = "tracing")]
const WARNING: &str = "run_blocking: a call made on a current-thread runtime is still waiting";

/// The stall threshold for one test; the previous one is back when it drops, panic or not.
struct Threshold(Duration);

impl Threshold {
    fn set(threshold: Duration) -> Self {
        let before = bridge_core::settings::stall_warning();
        bridge_core::settings::set_stall_warning(threshold);
        Self(before)
    }
}

impl Drop for Threshold {
    fn drop(&mut self) {
        bridge_core::settings::set_stall_warning(self.0);
    }
}

fn stalled() -> u64 {
    bridge_tokio::metrics().stalled_handoffs
}

/// The bridge's stall warnings logged so far in this binary.
#[cfg(feature = "tracing")]
fn warnings() -> Vec<trace_recorder::Seen> {
    trace_recorder::install();
    trace_recorder::seen_prefix(WARNING)
}

/// A mock server, as a test spawns one: a task of the calling runtime that answers each
/// connection's 4 bytes with `pong`.
async fn spawn_server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(serve(listener, Duration::ZERO));
    addr
}

/// The same server on a runtime of its own (on a thread of its own, kept until the process
/// exits), answering after `delay`.
fn server_elsewhere(delay: Duration) -> SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async { serve(TcpListener::from_std(listener).unwrap(), delay).await });
    });
    addr
}

async fn serve(listener: TcpListener, delay: Duration) {
    while let Ok((mut socket, _)) = listener.accept().await {
        let mut ping = [0u8; 4];
        if socket.read_exact(&mut ping).await.is_ok() {
            tokio::time::sleep(delay).await;
            let _ = socket.write_all(b"pong").await;
        }
    }
}

/// The client's request.
async fn connect_write_read(addr: SocketAddr) -> std::io::Result<[u8; 4]> {
    let mut stream = TcpStream::connect(addr).await?;
    stream.write_all(b"ping").await?;
    let mut reply = [0u8; 4];
    stream.read_exact(&mut reply).await?;
    Ok(reply)
}

/// A synchronous client, as a library offers one: it blocks on the request, for 2 s at most.
fn sync_client(addr: SocketAddr) -> Result<std::io::Result<[u8; 4]>, Error> {
    bridge_tokio::try_run_blocking_timeout(connect_write_read(addr), Duration::from_secs(2))
}

/// The message of a timeout on a stalled current-thread runtime gives the cause and the
/// remedy.
fn assert_names_the_stall(err: &Error) {
    assert!(err.is_timeout(), "not a timeout: {err:?}");
    let message = err.to_string();
    for part in [
        "the deadline passed",
        "current-thread runtime",
        "runs none of its tasks",
        "a server spawned there",
        "Await the future there instead of calling run_blocking",
        "another runtime",
        "#[tokio::test(flavor = \"multi_thread\")]",
    ] {
        assert!(message.contains(part), "{part:?} missing from: {message}");
    }
}

/// The shape as users write it: a `#[tokio::test]` (current-thread) spawns a mock server,
/// then calls a sync client. The server cannot run while the test's only thread waits in the
/// call: past the threshold the call is counted and logged once, and its timeout says why.
#[tokio::test]
async fn a_server_spawned_on_the_blocked_runtime_is_named() {
    let _serial = SERIAL.lock().await;
    let _threshold = Threshold::set(Duration::from_millis(200));
    #[cfg(feature = "tracing")]
    let warned = warnings().len();
    let addr = spawn_server().await;
    assert_eq!(bridge_tokio::route(), Route::Handoff);
    let before = stalled();

    let err = sync_client(addr).unwrap_err();

    assert_names_the_stall(&err);
    assert_eq!(stalled() - before, 1, "one stalled call");
    #[cfg(feature = "tracing")]
    {
        let new = &warnings()[warned..];
        assert_eq!(new.len(), 1, "one warning: {new:?}");
        assert_eq!(new[0].level, tracing::Level::WARN);
        for part in [
            "a server spawned there",
            "Create the future inside the async block given to run_blocking",
            "await it there instead of calling run_blocking",
            "#[tokio::test(flavor = \"multi_thread\")]",
            "try_run_blocking_timeout",
            "bridge::spawn_io",
        ] {
            assert!(new[0].message.contains(part), "{part:?}: {new:?}");
        }
    }
    // The remedy: awaited, the same request gets its answer from the same server.
    assert_eq!(connect_write_read(addr).await.unwrap(), *b"pong");
}

/// Every context of a current-thread runtime counts: a task, a `LocalSet`, a
/// `spawn_blocking` thread (whose runtime may be blocked waiting for it), once per call.
#[tokio::test]
async fn each_context_of_a_current_thread_runtime_counts_once() {
    let _serial = SERIAL.lock().await;
    let _threshold = Threshold::set(Duration::from_millis(100));
    #[cfg(feature = "tracing")]
    let warned = warnings().len();
    let before = stalled();
    let past_threshold = || {
        bridge_tokio::run_blocking(async {
            tokio::time::sleep(Duration::from_millis(300)).await;
            7
        })
    };

    let task = tokio::spawn(async move { past_threshold() });
    assert_eq!(task.await.unwrap(), 7);
    let local = tokio::task::LocalSet::new();
    assert_eq!(local.run_until(async { past_threshold() }).await, 7);
    let blocking = tokio::task::spawn_blocking(past_threshold);
    assert_eq!(blocking.await.unwrap(), 7);

    assert_eq!(stalled() - before, 3);
    #[cfg(feature = "tracing")]
    assert_eq!(warnings().len() - warned, 3);
}

/// The remedy, and a call that finishes before the threshold: the server on a runtime of its
/// own answers after 100 ms, far under the threshold. Nothing is logged or counted.
#[tokio::test]
async fn a_call_that_finishes_before_the_threshold_is_not_named() {
    let _serial = SERIAL.lock().await;
    let _threshold = Threshold::set(Duration::from_secs(10));
    #[cfg(feature = "tracing")]
    let warned = warnings().len();
    let addr = server_elsewhere(Duration::from_millis(100));
    assert_eq!(bridge_tokio::route(), Route::Handoff);
    let before = stalled();

    assert_eq!(sync_client(addr).unwrap().unwrap(), *b"pong");

    assert_eq!(stalled() - before, 0);
    #[cfg(feature = "tracing")]
    assert_eq!(warnings().len() - warned, 0);
}

/// A deadline that comes before the threshold on a current-thread runtime: no warning and
/// no count (the threshold was never reached), but the timeout names the stall all the same.
#[tokio::test]
async fn a_timeout_before_the_threshold_still_names_the_stall() {
    let _serial = SERIAL.lock().await;
    let _threshold = Threshold::set(Duration::from_secs(10));
    #[cfg(feature = "tracing")]
    let warned = warnings().len();
    let addr = spawn_server().await;
    let before = stalled();

    let limit = Duration::from_millis(50);
    let err = bridge_tokio::try_run_blocking_timeout(connect_write_read(addr), limit).unwrap_err();

    assert_names_the_stall(&err);
    assert_eq!(stalled() - before, 0);
    #[cfg(feature = "tracing")]
    assert_eq!(warnings().len() - warned, 0);
}

/// Calls made off current-thread runtimes that run past the threshold: a plain thread, and
/// a multi-thread runtime's worker task, `block_on` body and `spawn_blocking` thread. None
/// warns or counts, and a timeout there is a plain one.
#[test]
fn calls_off_current_thread_runtimes_are_not_named() {
    let _serial = SERIAL.blocking_lock();
    let _threshold = Threshold::set(Duration::from_millis(100));
    #[cfg(feature = "tracing")]
    let warned = warnings().len();
    let before = stalled();
    let past_threshold = || {
        bridge_tokio::run_blocking(async {
            tokio::time::sleep(Duration::from_millis(300)).await;
            7
        })
    };

    let plain = std::thread::spawn(past_threshold).join().unwrap();
    assert_eq!(plain, 7, "a plain thread");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    assert_eq!(rt.block_on(async { past_threshold() }), 7, "block_on body");
    let task = rt.block_on(async { tokio::spawn(async move { past_threshold() }).await });
    assert_eq!(task.unwrap(), 7, "a worker's task");
    let blocking = rt.block_on(async { tokio::task::spawn_blocking(past_threshold).await });
    assert_eq!(blocking.unwrap(), 7, "a spawn_blocking thread");
    let slow = async { tokio::time::sleep(Duration::from_secs(60)).await };
    let limit = Duration::from_millis(200);
    let err = rt
        .block_on(async { bridge_tokio::try_run_blocking_timeout(slow, limit) })
        .unwrap_err();
    assert!(err.is_timeout(), "not a timeout: {err:?}");
    assert!(!err.to_string().contains("current-thread runtime"), "{err}");
    assert_eq!(
        err.to_string(),
        "the deadline passed before the future finished"
    );

    assert_eq!(stalled() - before, 0);
    #[cfg(feature = "tracing")]
    assert_eq!(warnings().len() - warned, 0);
}

/// A server that accepts and never answers, reached from a `#[tokio::test]` with a socket
/// created inside the future (so on the I/O runtime): nothing of the caller's runtime was
/// needed, nothing of it was stalled, and the timeout is the plain one.
#[tokio::test]
async fn a_silent_server_elsewhere_gives_the_plain_timeout() {
    let _serial = SERIAL.lock().await;
    let _threshold = Threshold::set(Duration::from_secs(10));
    let addr = server_elsewhere(Duration::from_secs(3600));
    assert_eq!(bridge_tokio::route(), Route::Handoff);

    let limit = Duration::from_millis(200);
    let err = bridge_tokio::try_run_blocking_timeout(connect_write_read(addr), limit).unwrap_err();

    assert!(err.is_timeout(), "not a timeout: {err:?}");
    assert_eq!(
        err.to_string(),
        "the deadline passed before the future finished"
    );
}
