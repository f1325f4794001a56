//! `bridge::stream::on_io`, `spawn_cpu` and `ThreadPoolExt::spawn_stream`: volume through a small bound on every
//! executor, the bound itself (counted at every step), order, cancellation of a producer
//! that waits for ever, panics after items, storms of both with drop and thread counts, and
//! a differential check against reading the stream directly (with `bridge::iter_blocking`
//! too).
#![cfg(all(not(bridge_loom), feature = "tokio", feature = "rayon"))]

use futures::stream::{self, BoxStream, FusedStream};
use futures::{Stream, StreamExt};
use std::future::Future;
use std::panic::{self, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, mpsc};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::io::AsyncReadExt;

/// Runs `f` on its own thread and fails the test if it does not finish within `secs`.
fn watchdog<T: Send + 'static>(secs: u64, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    let worker = std::thread::spawn(move || {
        let _ = tx.send(panic::catch_unwind(AssertUnwindSafe(f)));
    });
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(Ok(value)) => {
            worker.join().unwrap();
            value
        }
        Ok(Err(payload)) => panic::resume_unwind(payload),
        Err(_) => panic!("hung: no result within {secs} s"),
    }
}

/// Waits (bounded) until `done` holds; fails with `what` if it does not within 10 s.
fn eventually(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(Instant::now() < deadline, "not within 10 s: {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Which side drives the producer.
#[derive(Debug, Clone, Copy)]
enum Side {
    Io,
    Cpu,
    /// A rayon pool of the test's own (`ThreadPoolExt::spawn_stream`).
    Pool,
}

const SIDES: [Side; 3] = [Side::Io, Side::Cpu, Side::Pool];

/// The pool of [`Side::Pool`]: two threads, named so that a test can tell them apart.
fn own_pool() -> &'static Arc<rayon::ThreadPool> {
    static POOL: std::sync::OnceLock<Arc<rayon::ThreadPool>> = std::sync::OnceLock::new();
    POOL.get_or_init(|| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .thread_name(|i| format!("own-pool-{i}"))
            .build()
            .unwrap();
        Arc::new(pool)
    })
}

fn cross<S>(side: Side, stream: S, bound: usize) -> bridge::stream::Crossing<S::Item>
where
    S: Stream + Send + 'static,
    S::Item: Send + 'static,
{
    match side {
        Side::Io => bridge::stream::on_io(stream, bound),
        Side::Cpu => bridge::stream::on_cpu(stream, bound),
        Side::Pool => {
            use bridge::cpu::ThreadPoolExt;
            own_pool().spawn_stream(stream, bound)
        }
    }
}

/// The executors the consumer runs on.
#[derive(Debug, Clone, Copy)]
enum Executor {
    TokioMultiThread,
    TokioCurrentThread,
    Futures,
    Bridge,
    /// async-executor (smol's).
    Smol,
}

const EXECUTORS: [Executor; 5] = [
    Executor::TokioMultiThread,
    Executor::TokioCurrentThread,
    Executor::Futures,
    Executor::Bridge,
    Executor::Smol,
];

fn run_on<T: Send + 'static>(executor: Executor, f: impl Future<Output = T> + Send + 'static) -> T {
    match executor {
        Executor::TokioMultiThread => {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async { tokio::spawn(f).await.unwrap() })
        }
        Executor::TokioCurrentThread => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(f),
        Executor::Futures => futures::executor::block_on(f),
        Executor::Bridge => bridge::block_on(f),
        Executor::Smol => {
            let ex = async_executor::Executor::new();
            let task = ex.spawn(f);
            futures::executor::block_on(ex.run(task))
        }
    }
}

/// The numbers `0..n`, counting in `made` each one it yields; every `pending_every` items
/// (if not 0) it returns `Pending` once, waking itself, as a stream waiting on I/O would.
struct Numbers {
    next: u64,
    n: u64,
    pending_every: u64,
    pended: bool,
    made: Arc<AtomicUsize>,
}

impl Numbers {
    fn new(n: u64, pending_every: u64, made: &Arc<AtomicUsize>) -> Self {
        Self {
            next: 0,
            n,
            pending_every,
            pended: false,
            made: Arc::clone(made),
        }
    }
}

impl Stream for Numbers {
    type Item = u64;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<u64>> {
        if self.next == self.n {
            return Poll::Ready(None);
        }
        if self.pending_every != 0 && self.next % self.pending_every == 0 && !self.pended {
            self.pended = true;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        self.pended = false;
        let item = self.next;
        self.next += 1;
        self.made.fetch_add(1, SeqCst);
        Poll::Ready(Some(item))
    }
}

/// Consumes `crossing`, checking at every item its order and that no more than `bound`
/// items were made ahead of this consumer (`bound` 0: none).
async fn consume_checked(
    mut crossing: bridge::stream::Crossing<u64>,
    made: Arc<AtomicUsize>,
    bound: usize,
) -> usize {
    let mut consumed = 0usize;
    while let Some(item) = crossing.next().await {
        assert_eq!(item, consumed as u64, "out of order");
        consumed += 1;
        let ahead = made.load(SeqCst) - consumed;
        assert!(
            ahead <= bound,
            "{ahead} items made ahead of the consumer, bound {bound}"
        );
    }
    assert!(crossing.is_terminated());
    assert!(crossing.next().await.is_none(), "a value after the end");
    consumed
}

#[test]
fn a_hundred_thousand_items_through_bound_8_on_every_executor() {
    const N: u64 = 100_000;
    watchdog(120, || {
        for side in SIDES {
            for executor in EXECUTORS {
                let made = Arc::new(AtomicUsize::new(0));
                let crossing = cross(side, Numbers::new(N, 1_000, &made), 8);
                let consumed = run_on(executor, consume_checked(crossing, Arc::clone(&made), 8));
                assert_eq!(consumed as u64, N, "{side:?} consumed on {executor:?}");
                assert_eq!(made.load(SeqCst) as u64, N);
            }
        }
    });
}

#[test]
fn the_bound_holds_at_every_step_for_small_bounds() {
    watchdog(60, || {
        for side in SIDES {
            for bound in [0, 1, 2, 3, 17] {
                for pending_every in [0, 1, 5] {
                    let made = Arc::new(AtomicUsize::new(0));
                    let crossing = cross(side, Numbers::new(2_000, pending_every, &made), bound);
                    let consumed =
                        bridge::block_on(consume_checked(crossing, Arc::clone(&made), bound));
                    assert_eq!(consumed, 2_000, "{side:?} bound {bound}");
                }
            }
        }
    });
}

#[test]
fn a_producer_waits_while_the_buffer_is_full_and_goes_on_when_room_appears() {
    watchdog(60, || {
        for side in SIDES {
            for bound in [1, 4] {
                let made = Arc::new(AtomicUsize::new(0));
                let mut crossing = cross(side, Numbers::new(100, 0, &made), bound);
                // Nobody consumes: the producer fills the buffer, then must stop.
                eventually("the buffer fills", || made.load(SeqCst) == bound);
                std::thread::sleep(Duration::from_millis(20));
                assert_eq!(
                    made.load(SeqCst),
                    bound,
                    "{side:?}: made past a full buffer"
                );
                // One item taken: exactly one more is made.
                assert_eq!(bridge::block_on(crossing.next()), Some(0));
                eventually("room is filled again", || made.load(SeqCst) == bound + 1);
                std::thread::sleep(Duration::from_millis(20));
                assert_eq!(
                    made.load(SeqCst),
                    bound + 1,
                    "{side:?}: made past a full buffer"
                );
            }
            // Bound 0: nothing is made until the consumer asks.
            let made = Arc::new(AtomicUsize::new(0));
            let mut crossing = cross(side, Numbers::new(100, 0, &made), 0);
            std::thread::sleep(Duration::from_millis(20));
            assert_eq!(
                made.load(SeqCst),
                0,
                "{side:?}: bound 0 made an item unasked"
            );
            assert_eq!(bridge::block_on(crossing.next()), Some(0));
            std::thread::sleep(Duration::from_millis(20));
            assert_eq!(
                made.load(SeqCst),
                1,
                "{side:?}: bound 0 made an item unasked"
            );
            assert_eq!(crossing.bound(), 0);
        }
    });
}

/// Counts its drops.
struct DropCount(Arc<AtomicUsize>);

impl Drop for DropCount {
    fn drop(&mut self) {
        self.0.fetch_add(1, SeqCst);
    }
}

/// Yields `items` numbers, then is pending for ever (never wakes anyone); counts its own drop.
fn then_pending_forever(items: u64, dropped: Arc<AtomicUsize>) -> impl Stream<Item = u64> + Send {
    let guard = DropCount(dropped);
    stream::iter(0..items).chain(stream::poll_fn(move |_| {
        let _keep = &guard;
        Poll::Pending
    }))
}

#[test]
fn dropping_the_consumer_drops_a_producer_that_is_pending_for_ever() {
    watchdog(60, || {
        for side in SIDES {
            // Waiting for its own wake-up, which never comes.
            let dropped = Arc::new(AtomicUsize::new(0));
            let mut crossing = cross(side, then_pending_forever(2, Arc::clone(&dropped)), 8);
            assert_eq!(bridge::block_on(crossing.next()), Some(0));
            assert_eq!(bridge::block_on(crossing.next()), Some(1));
            assert_eq!(dropped.load(SeqCst), 0);
            drop(crossing);
            eventually("the pending producer's stream is dropped", || {
                dropped.load(SeqCst) == 1
            });

            // Waiting for room in a full buffer, never consumed.
            let dropped = Arc::new(AtomicUsize::new(0));
            let made = Arc::new(AtomicUsize::new(0));
            let guard = DropCount(Arc::clone(&dropped));
            let numbers = Numbers::new(u64::MAX, 0, &made).map(move |n| {
                let _keep = &guard;
                n
            });
            let crossing = cross(side, numbers, 3);
            eventually("the buffer fills", || made.load(SeqCst) == 3);
            drop(crossing);
            eventually("the full producer's stream is dropped", || {
                dropped.load(SeqCst) == 1
            });

            // Dropped before the producer ever ran far: with bound 0, never polled.
            let dropped = Arc::new(AtomicUsize::new(0));
            drop(cross(
                side,
                then_pending_forever(5, Arc::clone(&dropped)),
                0,
            ));
            eventually("the unpolled producer's stream is dropped", || {
                dropped.load(SeqCst) == 1
            });
        }
    });
}

fn panics_after(items: u64) -> impl Stream<Item = u64> + Send {
    stream::iter(0..items).chain(stream::poll_fn(|_| -> Poll<Option<u64>> {
        panic::panic_any("producer panic".to_string())
    }))
}

#[test]
fn a_producer_panic_reaches_the_consumer_after_its_items() {
    watchdog(60, || {
        for side in SIDES {
            for executor in EXECUTORS {
                let outcome = run_on(executor, async move {
                    let mut crossing = cross(side, panics_after(3), 1);
                    let mut got = Vec::new();
                    let payload = loop {
                        match futures::FutureExt::catch_unwind(AssertUnwindSafe(crossing.next()))
                            .await
                        {
                            Ok(Some(item)) => got.push(item),
                            Ok(None) => panic!("the stream ended without its panic"),
                            Err(payload) => break payload,
                        }
                    };
                    assert!(crossing.is_terminated());
                    assert_eq!(crossing.next().await, None, "items after the panic");
                    (got, payload.downcast_ref::<String>().cloned())
                });
                assert_eq!(outcome.0, [0, 1, 2], "{side:?} on {executor:?}");
                assert_eq!(outcome.1.as_deref(), Some("producer panic"));
            }
            // And as an error item.
            let results: Vec<_> =
                bridge::block_on(cross(side, panics_after(2), 0).catch_unwind().collect());
            assert_eq!(results.len(), 3);
            assert!(matches!(results[..2], [Ok(0), Ok(1)]));
            let Some(Err(err)) = results.into_iter().nth(2) else {
                panic!("no panic item")
            };
            assert_eq!(
                err.into_panic()
                    .downcast_ref::<String>()
                    .map(String::as_str),
                Some("producer panic")
            );
        }
    });
}

/// An item that counts its drops, made by a stream that counts its own.
struct Item(#[allow(dead_code)] u64, Arc<AtomicUsize>);

impl Drop for Item {
    fn drop(&mut self) {
        self.1.fetch_add(1, SeqCst);
    }
}

fn thread_count() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("Threads:")).unwrap();
    line["Threads:".len()..].trim().parse().unwrap()
}

const STORM_CHILD: &str = "BRIDGE_STREAM_STORM_CHILD";

/// The storms run in a child process of this binary, alone, so that no other test's
/// threads disturb its thread count.
#[test]
fn panic_and_cancellation_storms_lose_nothing_and_leak_no_thread() {
    if std::env::var_os(STORM_CHILD).is_some() {
        storms();
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let test = "panic_and_cancellation_storms_lose_nothing_and_leak_no_thread";
    let mut child = std::process::Command::new(exe)
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(STORM_CHILD, "1")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(90);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the storm child hung");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let output = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        status.success() && stdout.contains("1 passed"),
        "storm child failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

fn storms() {
    const STREAMS: u64 = 500;
    // Quiet: the panic storm's producers panic on purpose.
    panic::set_hook(Box::new(|_| {}));
    // Start both sides' threads before the count.
    for side in SIDES {
        let all: Vec<u64> = bridge::block_on(cross(side, stream::iter(0..4), 1).collect());
        assert_eq!(all.len(), 4);
    }
    let threads = thread_count();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    for storm in ["panic", "cancellation"] {
        let panics = storm == "panic";
        let made = Arc::new(AtomicUsize::new(0));
        let items_dropped = Arc::new(AtomicUsize::new(0));
        let streams_dropped = Arc::new(AtomicUsize::new(0));
        let mut consumers = Vec::new();
        for i in 0..STREAMS {
            let side = SIDES[(i / 3 % 3) as usize];
            let (made, items_dropped) = (Arc::clone(&made), Arc::clone(&items_dropped));
            let guard = DropCount(Arc::clone(&streams_dropped));
            // The panic storm's streams panic after `i % 7` items; the cancellation storm's
            // never end, and every third is pending for ever after `i % 5` items.
            let panic_at = panics.then_some(i % 7);
            let stall_at = (!panics && i % 3 == 0).then_some(i % 5);
            let numbers = stream::iter(0..u64::MAX)
                .take_while(move |&n| std::future::ready(Some(n) != stall_at))
                .chain(stream::pending())
                .map(move |n| {
                    let _keep = &guard;
                    if Some(n) == panic_at {
                        panic::panic_any(n);
                    }
                    made.fetch_add(1, SeqCst);
                    if n % 3 == 0 {
                        std::thread::yield_now();
                    }
                    Item(n, Arc::clone(&items_dropped))
                });
            let mut crossing = cross(side, numbers, (i % 5) as usize).catch_unwind();
            // The panic storm reads to the panic; the cancellation storm takes a few items
            // (none, for some) and drops the crossing.
            let take = if panics {
                u64::MAX
            } else {
                (i % 11).min(stall_at.unwrap_or(u64::MAX))
            };
            consumers.push(rt.spawn(async move {
                let mut got = 0;
                while got < take {
                    match crossing.next().await {
                        Some(Ok(item)) => {
                            assert_eq!(item.0, got, "stream {i} out of order");
                            got += 1;
                        }
                        Some(Err(err)) => {
                            let payload = err.into_panic();
                            assert_eq!(payload.downcast_ref::<u64>(), panic_at.as_ref());
                            assert_eq!(Some(got), panic_at, "stream {i}: panic before its items");
                            assert!(crossing.next().await.is_none());
                            return got;
                        }
                        None => panic!("stream {i} ended"),
                    }
                }
                assert!(!panics, "stream {i} never panicked");
                got
            }));
        }
        let consumed: u64 = rt.block_on(async {
            let mut consumed = 0;
            for consumer in consumers {
                consumed += consumer.await.unwrap();
            }
            consumed
        });
        assert!(consumed > 0, "{storm} storm: nothing consumed");
        eventually("every stream of the storm is dropped", || {
            streams_dropped.load(SeqCst) == STREAMS as usize
        });
        // Every item made was dropped exactly once, by the consumer or the producer.
        eventually("every item of the storm is dropped", || {
            items_dropped.load(SeqCst) == made.load(SeqCst)
        });
        assert_eq!(
            items_dropped.load(SeqCst),
            made.load(SeqCst),
            "{storm} storm"
        );
        assert_eq!(
            streams_dropped.load(SeqCst),
            STREAMS as usize,
            "{storm} storm"
        );
    }
    drop(rt);
    eventually("the storm's runtime threads are gone", || {
        thread_count() == threads
    });
    assert_eq!(
        thread_count(),
        threads,
        "the storms changed the thread count"
    );
    let _ = panic::take_hook();
}

// The differential check: each shape of stream yields the same items, in the same order,
// read directly, through spawn_io, through spawn_cpu and through iter_blocking.

#[derive(Debug, Clone, Copy)]
enum Shape {
    Ready,
    Yields,
    Timers,
    Tcp,
}

/// Returns `Pending` once, waking itself first: an executor-agnostic yield.
async fn yield_once() {
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
    .await
}

/// A server on loopback that writes one MiB (a byte pattern) to every connection.
fn mib_server() -> std::net::SocketAddr {
    static ADDR: std::sync::OnceLock<std::net::SocketAddr> = std::sync::OnceLock::new();
    *ADDR.get_or_init(|| {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let mut conn = conn.unwrap();
                std::thread::spawn(move || {
                    use std::io::Write;
                    let _ = conn.write_all(&pattern());
                });
            }
        });
        addr
    })
}

const MIB: usize = 1 << 20;
const CHUNK: usize = 16 * 1024;

fn pattern() -> Vec<u8> {
    (0..MIB).map(|i| (i * 31 % 251) as u8).collect()
}

fn shape(shape: Shape) -> BoxStream<'static, Vec<u8>> {
    match shape {
        Shape::Ready => stream::iter(0..5_000u32)
            .map(|i| i.to_le_bytes().to_vec())
            .boxed(),
        Shape::Yields => stream::iter(0..2_000u32)
            .then(|i| async move {
                if i % 3 == 0 {
                    yield_once().await;
                }
                i.to_le_bytes().to_vec()
            })
            .boxed(),
        Shape::Timers => stream::iter(0..100u32)
            .then(|i| async move {
                tokio::time::sleep(Duration::from_micros(200)).await;
                i.to_le_bytes().to_vec()
            })
            .boxed(),
        Shape::Tcp => {
            let addr = mib_server();
            stream::once(async move { tokio::net::TcpStream::connect(addr).await.unwrap() })
                .flat_map(|socket| {
                    stream::unfold((socket, 0usize), |(mut socket, read)| async move {
                        if read == MIB {
                            return None;
                        }
                        let mut chunk = vec![0; CHUNK];
                        socket.read_exact(&mut chunk).await.unwrap();
                        Some((chunk, (socket, read + CHUNK)))
                    })
                })
                .boxed()
        }
    }
}

#[test]
fn every_shape_yields_the_same_items_directly_and_across() {
    watchdog(120, || {
        for s in [Shape::Ready, Shape::Yields, Shape::Timers, Shape::Tcp] {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            let direct: Vec<Vec<u8>> = rt.block_on(shape(s).collect());
            match s {
                Shape::Tcp => assert_eq!(direct.concat(), pattern()),
                _ => assert!(!direct.is_empty()),
            }
            let io: Vec<_> = bridge::block_on(bridge::stream::on_io(shape(s), 8).collect());
            assert_eq!(io, direct, "{s:?} through spawn_io");
            let cpu: Vec<_> =
                futures::executor::block_on(bridge::stream::on_cpu(shape(s), 8).collect());
            assert_eq!(cpu, direct, "{s:?} through spawn_cpu");
            let sync: Vec<_> = bridge::iter_blocking(shape(s)).collect();
            assert_eq!(sync, direct, "{s:?} through iter_blocking");
            // Across twice, the second hop consumed by sync code on a rayon worker.
            let hops: Vec<_> = bridge::spawn(move || {
                let io = bridge::stream::on_io(shape(s), 3);
                bridge::iter_blocking(bridge::stream::on_cpu(io, 0)).collect::<Vec<_>>()
            })
            .wait();
            assert_eq!(
                hops, direct,
                "{s:?} through spawn_io, spawn_cpu and iter_blocking"
            );
        }
    });
}

#[test]
fn a_crossing_is_debug_send_sync_unpin_and_fused() {
    fn check<X: Send + Sync + Unpin + FusedStream + std::fmt::Debug>(_: &X) {}
    let crossing = bridge::stream::on_io(stream::iter([1u8, 2]), 4);
    check(&crossing);
    let shown = format!("{crossing:?}");
    assert!(shown.starts_with("Crossing { bound: 4"), "{shown}");
    let results = bridge::stream::on_cpu(stream::iter([1u8]), 1).catch_unwind();
    check(&results);
}

#[test]
fn spawn_stream_polls_on_the_given_pool_with_the_io_runtime_entered() {
    use bridge::cpu::ThreadPoolExt;
    watchdog(60, || {
        let pool = own_pool();
        let seen = stream::iter(0..200u64).then(|n| async move {
            // A timer of the IoRuntime every tenth item: it needs the handle entered.
            if n % 10 == 0 {
                tokio::time::sleep(Duration::from_micros(100)).await;
            }
            let name = std::thread::current().name().map(str::to_owned);
            (n, name, tokio::runtime::Handle::try_current().is_ok())
        });
        let items: Vec<_> = bridge::iter_blocking(pool.spawn_stream(seen, 2)).collect();
        assert_eq!(items.len(), 200);
        for (k, (n, name, entered)) in items.into_iter().enumerate() {
            assert_eq!(n, k as u64, "order");
            let name = name.unwrap_or_default();
            assert!(name.starts_with("own-pool-"), "item {n} made on {name:?}");
            assert!(entered, "item {n}: no runtime entered");
        }
        // The global pool's spawn_cpu does not land there.
        let name = bridge::iter_blocking(bridge::stream::on_cpu(
            stream::once(async { std::thread::current().name().map(str::to_owned) }),
            0,
        ))
        .next()
        .unwrap()
        .unwrap_or_default();
        assert!(!name.starts_with("own-pool-"), "{name}");
    });
}

/// A panic in a CPU-side stream comes back to the consumer and counts in the CPU metrics
/// (`panicked`), as a panic of a future task does.
#[test]
fn a_cpu_side_stream_panic_counts_in_the_cpu_metrics() {
    let before = bridge::metrics().cpu.panicked;
    let items = stream::iter([1u8]).chain(stream::poll_fn(|_| -> Poll<Option<u8>> {
        panic!("corrupt block")
    }));
    let crossing = bridge::stream::on_cpu(items, 1);
    let taken = panic::catch_unwind(AssertUnwindSafe(|| {
        bridge::iter_blocking(crossing).collect::<Vec<_>>()
    }));
    let payload = taken.expect_err("the stream's panic comes back to the consumer");
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"corrupt block"));
    // The pump's task counts the panic when its poll ends, which may come just after the
    // consumer took the payload.
    eventually("the CPU metrics count the stream's panic", || {
        bridge::metrics().cpu.panicked > before
    });
}
