//! The corpus: futures that do real amounts of tokio work (a thousand budgeted operations or
//! more each, in a few milliseconds) and return a value that summarises what they did, so that
//! a run that lost, repeated or reordered work gives a different value.
//!
//! Every value depends only on the seed, never on scheduling: messages from one producer are
//! folded in order, those of several producers with a commutative sum, and counts that
//! scheduling could change (ticks of an interval, what a reader saw) are not part of it.

use bytes::Bytes;
use http_body_util::Full;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, UdpSocket};
use tokio::sync::{Barrier, Mutex, Notify, RwLock, Semaphore, broadcast, mpsc, oneshot, watch};
use tokio::task::JoinSet;

/// A corpus future, boxed so that every entry has one type.
pub type Work = Pin<Box<dyn Future<Output = u64> + Send + 'static>>;

/// One corpus entry.
pub struct Entry {
    pub name: &'static str,
    pub make: fn(u64) -> Work,
    /// tokio's own `Runtime::block_on` refuses this future (it starts a runtime of its own):
    /// the bridge's outcomes are compared across contexts instead.
    pub refused_by_tokio: bool,
}

macro_rules! entries {
    ($($name:ident $(, $refused:ident)?;)*) => {
        &[$(Entry {
            name: stringify!($name),
            make: |seed| throttled($name(seed)),
            refused_by_tokio: entries!(@refused $($refused)?),
        }),*]
    };
    (@refused) => { false };
    (@refused refused) => { true };
}

/// Every entry, in column order.
pub const CORPUS: &[Entry] = entries! {
    mpsc_bounded_flood;
    mpsc_unbounded_fan_in;
    mpsc_ping_pong;
    broadcast_flood;
    watch_ping_pong;
    notify_ping_pong;
    tcp_upload_mib;
    tcp_echo_mib;
    tcp_many_connections;
    udp_windows;
    unix_stream_mib;
    duplex_pipe_mib;
    joinset_timers;
    joinset_timer_tree;
    interval_burst;
    select_two_channels;
    select_against_timers;
    spawn_blocking_feeders;
    task_local_scopes;
    yield_storm;
    yield_until_finished;
    join_handle_polled_by_hand;
    select_ready_branch_beside_a_timer;
    timeout_around_a_yield_loop;
    mutex_contention;
    semaphore_contention;
    rwlock_readers_and_writers;
    oneshot_chain;
    timeout_many;
    barrier_rounds;
    nested_run_blocking;
    private_runtime, refused;
    pooled_http_client;
};

/// The seed of column `index`: every run of that column uses it.
pub fn seed_of(index: usize) -> u64 {
    0x5eed_0000 + 7_919 * index as u64
}

// ---------------------------------------------------------------------------------------
// Folding.

/// One step of an ordered fold (splitmix64's finaliser over `h + v`).
pub fn mix(h: u64, v: u64) -> u64 {
    let mut z = h.wrapping_add(v).wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// 1 MiB: what each stream future moves.
const MIB: usize = 1 << 20;

/// Deterministic bytes, made once: a stream of seed `s` is `pattern()[s % 65536..][..MIB]`.
fn pattern() -> &'static [u8] {
    static PATTERN: OnceLock<Vec<u8>> = OnceLock::new();
    PATTERN.get_or_init(|| {
        let mut state = 0x1234_5678_9abc_def0u64;
        let mut bytes = Vec::with_capacity(MIB + 65_536);
        while bytes.len() < MIB + 65_536 {
            state = mix(state, 1);
            bytes.extend_from_slice(&state.to_le_bytes());
        }
        bytes
    })
}

fn stream_of(seed: u64) -> &'static [u8] {
    &pattern()[(seed % 65_536) as usize..][..MIB]
}

/// A checksum of a byte stream fed in chunks of any size: the length, and every 61st byte
/// folded in order with its position (a debug build is too slow to fold every byte of a MiB
/// in a few milliseconds; a lost, repeated or shifted chunk still changes the value).
#[derive(Default)]
struct StreamSum {
    len: u64,
    hash: u64,
}

impl StreamSum {
    const STRIDE: u64 = 61;

    fn feed(&mut self, chunk: &[u8]) {
        let first = (Self::STRIDE - self.len % Self::STRIDE) % Self::STRIDE;
        let mut i = first as usize;
        while i < chunk.len() {
            self.hash = mix(
                self.hash,
                ((self.len + i as u64) << 8) | u64::from(chunk[i]),
            );
            i += Self::STRIDE as usize;
        }
        self.len += chunk.len() as u64;
    }

    fn value(&self) -> u64 {
        mix(self.hash, self.len)
    }
}

fn checksum(bytes: &[u8]) -> u64 {
    let mut sum = StreamSum::default();
    sum.feed(bytes);
    sum.value()
}

// ---------------------------------------------------------------------------------------
// The throttle.

/// Polls of one corpus future beyond which every further poll first sleeps 1 ms. No corpus
/// future needs more than a few thousand polls; one that spins (a call whose cooperative
/// budget is spent, so every tokio resource returns `Pending` and wakes itself at once) would
/// otherwise burn a core until the process exits and make healthy cells look hung. The
/// throttle changes no outcome: a spinning future still never finishes, a slow one still does.
const THROTTLE_AFTER: u64 = 50_000;

struct Throttled<F> {
    inner: Pin<Box<F>>,
    polls: u64,
}

impl<F: Future> Future for Throttled<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        self.polls += 1;
        if self.polls > THROTTLE_AFTER {
            std::thread::sleep(Duration::from_millis(1));
        }
        self.inner.as_mut().poll(cx)
    }
}

/// Boxes a corpus future behind the throttle.
pub fn throttled(future: impl Future<Output = u64> + Send + 'static) -> Work {
    Box::pin(Throttled {
        inner: Box::pin(future),
        polls: 0,
    })
}

// ---------------------------------------------------------------------------------------
// Channels.

async fn mpsc_bounded_flood(seed: u64) -> u64 {
    bounded_flood(seed, 1_500).await
}

/// `count` messages from a spawned producer through a bounded channel, folded in order.
async fn bounded_flood(seed: u64, count: u64) -> u64 {
    let (tx, mut rx) = mpsc::channel::<u64>(32);
    let producer = tokio::spawn(async move {
        for i in 0..count {
            tx.send(mix(seed, i)).await.unwrap();
        }
    });
    let (mut hash, mut received) = (seed, 0);
    while let Some(v) = rx.recv().await {
        hash = mix(hash, v);
        received += 1;
    }
    producer.await.unwrap();
    mix(hash, received)
}

async fn mpsc_unbounded_fan_in(seed: u64) -> u64 {
    let (tx, mut rx) = mpsc::unbounded_channel::<u64>();
    let producers: Vec<_> = (0..4u64)
        .map(|p| {
            let tx = tx.clone();
            tokio::spawn(async move {
                for i in 0..500 {
                    tx.send(mix(seed ^ p, i)).unwrap();
                    if i % 50 == 0 {
                        tokio::task::yield_now().await;
                    }
                }
            })
        })
        .collect();
    drop(tx);
    let (mut sum, mut received) = (0u64, 0u64);
    while let Some(v) = rx.recv().await {
        sum = sum.wrapping_add(mix(0, v));
        received += 1;
    }
    for producer in producers {
        producer.await.unwrap();
    }
    mix(sum, received)
}

/// 250 round trips of four messages each with a spawned echo task, through channels of 4.
async fn mpsc_ping_pong(seed: u64) -> u64 {
    let (to_tx, mut to_rx) = mpsc::channel::<u64>(4);
    let (back_tx, mut back_rx) = mpsc::channel::<u64>(4);
    let echo = tokio::spawn(async move {
        while let Some(v) = to_rx.recv().await {
            back_tx.send(mix(v, 7)).await.unwrap();
        }
    });
    let mut hash = seed;
    for round in 0..250 {
        for k in 0..4 {
            to_tx.send(mix(hash, round * 4 + k)).await.unwrap();
        }
        for _ in 0..4 {
            hash = mix(hash, back_rx.recv().await.unwrap());
        }
    }
    drop(to_tx);
    echo.await.unwrap();
    hash
}

async fn broadcast_flood(seed: u64) -> u64 {
    const COUNT: u64 = 1_200;
    let (tx, mut own) = broadcast::channel::<u64>(2_048);
    let receivers: Vec<_> = (0..3)
        .map(|_| {
            let mut rx = tx.subscribe();
            tokio::spawn(async move {
                let mut hash = 0;
                while let Ok(v) = rx.recv().await {
                    hash = mix(hash, v);
                }
                hash
            })
        })
        .collect();
    for i in 0..COUNT {
        tx.send(mix(seed, i)).unwrap();
    }
    drop(tx);
    let mut hash = seed;
    while let Ok(v) = own.recv().await {
        hash = mix(hash, v);
    }
    for receiver in receivers {
        hash = mix(hash, receiver.await.unwrap());
    }
    hash
}

/// 500 rounds of a question and an answer over two watch channels, both sides in the future
/// (one `join!`), and 150 more with a spawned responder.
async fn watch_ping_pong(seed: u64) -> u64 {
    async fn respond(mut asked: watch::Receiver<u64>, answer: watch::Sender<u64>) {
        while asked.changed().await.is_ok() {
            let v = *asked.borrow_and_update();
            answer.send(mix(v, 3)).unwrap();
        }
    }
    async fn ask(
        rounds: u64,
        start: u64,
        ask: watch::Sender<u64>,
        mut answered: watch::Receiver<u64>,
    ) -> u64 {
        let mut v = start;
        for _ in 0..rounds {
            ask.send(v).unwrap();
            answered.changed().await.unwrap();
            v = *answered.borrow_and_update();
        }
        v
    }
    let (ask_tx, asked) = watch::channel(0u64);
    let (answer, answered) = watch::channel(0u64);
    let (local, ()) = tokio::join!(ask(500, seed, ask_tx, answered), respond(asked, answer));
    let (ask_tx, asked) = watch::channel(0u64);
    let (answer, answered) = watch::channel(0u64);
    let responder = tokio::spawn(respond(asked, answer));
    let remote = ask(150, local, ask_tx, answered).await;
    responder.await.unwrap();
    remote
}

/// Notify ping-pong: 1,000 rounds with a partner in the same future (one `join!`), and 200
/// with a spawned partner task.
async fn notify_ping_pong(seed: u64) -> u64 {
    type Pair = Arc<(Notify, Notify, AtomicU64)>;
    async fn partner(pair: Pair, rounds: u64) {
        for i in 0..rounds {
            pair.0.notified().await;
            let v = pair.2.load(Ordering::Acquire);
            pair.2.store(mix(v, i), Ordering::Release);
            pair.1.notify_one();
        }
    }
    async fn lead(pair: Pair, rounds: u64) -> u64 {
        for _ in 0..rounds {
            pair.0.notify_one();
            pair.1.notified().await;
        }
        pair.2.load(Ordering::Acquire)
    }
    let pair: Pair = Arc::new((Notify::new(), Notify::new(), AtomicU64::new(seed)));
    let (local, ()) = tokio::join!(lead(pair.clone(), 1_000), partner(pair.clone(), 1_000));
    let pair: Pair = Arc::new((Notify::new(), Notify::new(), AtomicU64::new(local)));
    let remote = tokio::spawn(partner(pair.clone(), 200));
    let value = lead(pair, 200).await;
    remote.await.unwrap();
    value
}

// ---------------------------------------------------------------------------------------
// Sockets and streams.

/// A listener on loopback, in the future itself.
async fn listener() -> (TcpListener, SocketAddr) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    (listener, addr)
}

/// 1 MiB up to a server task spawned by the future, in 2 KiB writes; the server answers
/// with its checksum of what it read in 2 KiB reads.
async fn tcp_upload_mib(seed: u64) -> u64 {
    let (listener, addr) = listener().await;
    let server = tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut sum = StreamSum::default();
        let mut buf = [0u8; 2_048];
        loop {
            let n = socket.read(&mut buf).await.unwrap();
            if n == 0 {
                break;
            }
            sum.feed(&buf[..n]);
        }
        socket.write_all(&sum.value().to_le_bytes()).await.unwrap();
    });
    let data = stream_of(seed);
    let mut stream = TcpStream::connect(addr).await.unwrap();
    for chunk in data.chunks(2_048) {
        stream.write_all(chunk).await.unwrap();
    }
    stream.shutdown().await.unwrap();
    let mut back = [0u8; 8];
    stream.read_exact(&mut back).await.unwrap();
    server.await.unwrap();
    let theirs = u64::from_le_bytes(back);
    mix(theirs, u64::from(theirs == checksum(data)))
}

/// 1 MiB through an echo server task, written and read back by the future at once (both
/// halves in one `join!`, so every operation spends the future's own budget).
async fn tcp_echo_mib(seed: u64) -> u64 {
    let (listener, addr) = listener().await;
    let server = tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let (mut read, mut write) = socket.split();
        tokio::io::copy(&mut read, &mut write).await.unwrap();
    });
    let stream = TcpStream::connect(addr).await.unwrap();
    let (mut read, mut write) = stream.into_split();
    let data = stream_of(seed);
    let writer = async move {
        for chunk in data.chunks(2_048) {
            write.write_all(chunk).await.unwrap();
        }
        write.shutdown().await.unwrap();
    };
    let reader = async move {
        let mut sum = StreamSum::default();
        let mut buf = [0u8; 2_048];
        loop {
            let n = read.read(&mut buf).await.unwrap();
            if n == 0 {
                break sum.value();
            }
            sum.feed(&buf[..n]);
        }
    };
    let ((), echoed) = tokio::join!(writer, reader);
    server.await.unwrap();
    mix(echoed, u64::from(echoed == checksum(data)))
}

/// 32 connections to a listener of the future's, all at once from the future itself
/// (`join_all`), four small round trips on each.
async fn tcp_many_connections(seed: u64) -> u64 {
    const CONNECTIONS: u64 = 32;
    let (listener, addr) = listener().await;
    let server = tokio::spawn(async move {
        let mut handlers = JoinSet::new();
        for _ in 0..CONNECTIONS {
            let (mut socket, _) = listener.accept().await.unwrap();
            handlers.spawn(async move {
                let mut buf = [0u8; 16];
                while socket.read_exact(&mut buf).await.is_ok() {
                    buf.reverse();
                    socket.write_all(&buf).await.unwrap();
                }
            });
        }
        handlers.join_all().await;
    });
    let clients = (0..CONNECTIONS).map(|c| async move {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        let mut hash = c;
        for r in 0..4 {
            let mut msg = [0u8; 16];
            msg[..8].copy_from_slice(&mix(seed, c * 4 + r).to_le_bytes());
            stream.write_all(&msg).await.unwrap();
            stream.read_exact(&mut msg).await.unwrap();
            hash = mix(hash, u64::from_le_bytes(msg[8..].try_into().unwrap()));
        }
        hash
    });
    let hashes = futures::future::join_all(clients).await;
    server.await.unwrap();
    hashes.into_iter().fold(seed, mix)
}

/// 512 datagrams each way through an echo task, in windows of 32 (never more in flight
/// than a loopback socket buffers).
async fn udp_windows(seed: u64) -> u64 {
    let here = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let there = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    here.connect(there.local_addr().unwrap()).await.unwrap();
    let echo = tokio::spawn(async move {
        let mut buf = [0u8; 256];
        loop {
            let (n, from) = there.recv_from(&mut buf).await.unwrap();
            if n == 0 {
                return;
            }
            buf[..8].reverse();
            there.send_to(&buf[..n], from).await.unwrap();
        }
    });
    let mut sum = 0u64;
    let mut buf = [0u8; 256];
    for window in 0..16u64 {
        for k in 0..32 {
            let mut msg = [0u8; 64];
            msg[..8].copy_from_slice(&mix(seed, window * 32 + k).to_le_bytes());
            here.send(&msg).await.unwrap();
        }
        for _ in 0..32 {
            let n = here.recv(&mut buf).await.unwrap();
            assert_eq!(n, 64);
            sum = sum.wrapping_add(mix(0, u64::from_be_bytes(buf[..8].try_into().unwrap())));
        }
    }
    here.send(&[]).await.unwrap();
    echo.await.unwrap();
    sum
}

/// 1 MiB through a Unix socket pair, written by a spawned task in 2 KiB writes.
async fn unix_stream_mib(seed: u64) -> u64 {
    let (mut a, mut b) = tokio::net::UnixStream::pair().unwrap();
    let data = stream_of(seed);
    let writer = tokio::spawn(async move {
        for chunk in data.chunks(2_048) {
            a.write_all(chunk).await.unwrap();
        }
    });
    let mut sum = StreamSum::default();
    let mut buf = [0u8; 2_048];
    loop {
        let n = b.read(&mut buf).await.unwrap();
        if n == 0 {
            break;
        }
        sum.feed(&buf[..n]);
    }
    writer.await.unwrap();
    mix(sum.value(), u64::from(sum.value() == checksum(data)))
}

/// 1 MiB through an in-memory duplex pipe of 1 KiB: a thousand reads and as many writes, all
/// in the future itself.
async fn duplex_pipe_mib(seed: u64) -> u64 {
    let (mut a, mut b) = tokio::io::duplex(1_024);
    let data = stream_of(seed ^ 0x55);
    let writer = async move {
        for chunk in data.chunks(4_096) {
            a.write_all(chunk).await.unwrap();
        }
    };
    let reader = async move {
        let mut sum = StreamSum::default();
        let mut buf = [0u8; 1_024];
        loop {
            let n = b.read(&mut buf).await.unwrap();
            if n == 0 {
                break sum.value();
            }
            sum.feed(&buf[..n]);
        }
    };
    let ((), got) = tokio::join!(writer, reader);
    mix(got, u64::from(got == checksum(data)))
}

// ---------------------------------------------------------------------------------------
// Timers.

/// A `JoinSet` of 400 timer tasks, each reporting through a channel and its result.
async fn joinset_timers(seed: u64) -> u64 {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut set = JoinSet::new();
    for i in 0..400u64 {
        let tx = tx.clone();
        set.spawn(async move {
            tokio::time::sleep(Duration::from_micros(20 + mix(seed, i) % 500)).await;
            tx.send(i).unwrap();
            mix(seed, i)
        });
    }
    drop(tx);
    let mut sum = 0u64;
    while let Some(result) = set.join_next().await {
        sum = sum.wrapping_add(result.unwrap());
    }
    let mut reported = 0u64;
    while let Some(i) = rx.recv().await {
        reported = reported.wrapping_add(i);
    }
    mix(sum, reported)
}

/// 20 tasks, each with a `JoinSet` of 20 timers of its own: 400 timers in a tree, each
/// reporting to the future through a channel too.
async fn joinset_timer_tree(seed: u64) -> u64 {
    let (tx, mut rx) = mpsc::unbounded_channel::<u64>();
    let mut outer = JoinSet::new();
    for t in 0..20u64 {
        let tx = tx.clone();
        outer.spawn(async move {
            let mut inner = JoinSet::new();
            for i in 0..20u64 {
                let tx = tx.clone();
                inner.spawn(async move {
                    tokio::time::sleep(Duration::from_micros(mix(seed, t * 20 + i) % 800)).await;
                    tokio::task::yield_now().await;
                    tx.send(mix(seed, t * 20 + i)).unwrap();
                    mix(t, i)
                });
            }
            let mut sum = 0u64;
            while let Some(v) = inner.join_next().await {
                sum = sum.wrapping_add(v.unwrap());
            }
            sum
        });
    }
    drop(tx);
    let mut reported = 0u64;
    while let Some(v) = rx.recv().await {
        reported = reported.wrapping_add(v);
    }
    let mut sum = seed;
    while let Some(v) = outer.join_next().await {
        sum = sum.wrapping_add(v.unwrap());
    }
    mix(sum, reported)
}

/// 1,500 ticks of an interval whose period has passed (it bursts): each tick polls a timer.
async fn interval_burst(seed: u64) -> u64 {
    let mut interval = tokio::time::interval(Duration::from_micros(1));
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let mut hash = seed;
    for i in 0..1_500 {
        interval.tick().await;
        hash = mix(hash, i);
    }
    hash
}

// ---------------------------------------------------------------------------------------
// select! loops.

async fn select_two_channels(seed: u64) -> u64 {
    let (a_tx, mut a) = mpsc::channel::<u64>(4);
    let (b_tx, mut b) = mpsc::channel::<u64>(4);
    let feed = |tx: mpsc::Sender<u64>, salt: u64| {
        tokio::spawn(async move {
            for i in 0..600 {
                tx.send(mix(seed ^ salt, i)).await.unwrap();
            }
        })
    };
    let (fa, fb) = (feed(a_tx, 1), feed(b_tx, 2));
    let never = tokio::time::sleep(Duration::from_secs(3_600));
    tokio::pin!(never);
    // Each channel's messages are folded in order, whatever the interleaving of the two.
    let (mut hash_a, mut hash_b) = (0u64, 0u64);
    let (mut a_open, mut b_open) = (true, true);
    while a_open || b_open {
        tokio::select! {
            v = a.recv(), if a_open => match v {
                Some(v) => hash_a = mix(hash_a, v),
                None => a_open = false,
            },
            v = b.recv(), if b_open => match v {
                Some(v) => hash_b = mix(hash_b, v),
                None => b_open = false,
            },
            () = &mut never => unreachable!("an hour passed"),
        }
    }
    fa.await.unwrap();
    fb.await.unwrap();
    mix(hash_a, hash_b)
}

/// 1,000 receives, each raced in a `select!` against a fresh timer of its own.
async fn select_against_timers(seed: u64) -> u64 {
    let (tx, mut rx) = mpsc::channel::<u64>(16);
    let producer = tokio::spawn(async move {
        for i in 0..1_000 {
            tx.send(mix(seed, i)).await.unwrap();
        }
    });
    let mut hash = seed;
    loop {
        tokio::select! {
            v = rx.recv() => match v {
                Some(v) => hash = mix(hash, v),
                None => break,
            },
            () = tokio::time::sleep(Duration::from_secs(60)) => unreachable!("a minute passed"),
        }
    }
    producer.await.unwrap();
    hash
}

// ---------------------------------------------------------------------------------------
// Blocking threads and task-locals.

/// 20 `spawn_blocking` closures, each sending 50 messages with `blocking_send`.
async fn spawn_blocking_feeders(seed: u64) -> u64 {
    let (tx, mut rx) = mpsc::channel::<u64>(64);
    let feeders: Vec<_> = (0..20u64)
        .map(|f| {
            let tx = tx.clone();
            tokio::task::spawn_blocking(move || {
                for i in 0..50 {
                    tx.blocking_send(mix(seed, f * 50 + i)).unwrap();
                }
                f
            })
        })
        .collect();
    drop(tx);
    let mut sum = 0u64;
    while let Some(v) = rx.recv().await {
        sum = sum.wrapping_add(mix(0, v));
    }
    for (f, feeder) in feeders.into_iter().enumerate() {
        assert_eq!(feeder.await.unwrap(), f as u64);
    }
    sum
}

tokio::task_local! {
    static TAG: u64;
}

/// A task-local scope around 1,000 yields, and eight spawned tasks with scopes of their own.
async fn task_local_scopes(seed: u64) -> u64 {
    let tasks: Vec<_> = (0..8u64)
        .map(|t| {
            tokio::spawn(TAG.scope(seed ^ t, async move {
                let mut hash = 0;
                for i in 0..100 {
                    tokio::task::yield_now().await;
                    hash = mix(hash, TAG.get() + i);
                }
                hash
            }))
        })
        .collect();
    let own = TAG
        .scope(seed, async {
            let mut hash = 0;
            for i in 0..1_000 {
                tokio::task::yield_now().await;
                hash = mix(hash, TAG.get() + i);
            }
            hash
        })
        .await;
    let mut hash = own;
    for task in tasks {
        hash = mix(hash, task.await.unwrap());
    }
    // Outside every scope the task-local is not set.
    mix(hash, u64::from(TAG.try_with(|_| ()).is_err()))
}

/// 2,000 `yield_now`s here and 4 x 250 in spawned tasks.
async fn yield_storm(seed: u64) -> u64 {
    let count = Arc::new(AtomicU64::new(0));
    let tasks: Vec<_> = (0..4)
        .map(|_| {
            let count = count.clone();
            tokio::spawn(async move {
                for _ in 0..250 {
                    tokio::task::yield_now().await;
                    count.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    let mut hash = seed;
    for i in 0..2_000 {
        tokio::task::yield_now().await;
        hash = mix(hash, i);
    }
    for task in tasks {
        task.await.unwrap();
    }
    mix(hash, count.load(Ordering::Relaxed))
}

// Self-waking futures: between two of their polls the executor must run the tasks they
// spawned and turn its timers, or they never finish (a million polls and seconds, or for
// ever without the throttle).

/// A spawned task's result, awaited by polling `is_finished` between `yield_now`s.
async fn yield_until_finished(seed: u64) -> u64 {
    let task = tokio::spawn(async move { (0..2_000u64).fold(seed, mix) });
    while !task.is_finished() {
        tokio::task::yield_now().await;
    }
    task.await.unwrap()
}

/// A `JoinHandle` polled by hand with a waker that does nothing, the future waking itself.
async fn join_handle_polled_by_hand(seed: u64) -> u64 {
    let mut task = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(1)).await;
        mix(seed, 11)
    });
    std::future::poll_fn(|cx| {
        let mut noop = Context::from_waker(std::task::Waker::noop());
        match Pin::new(&mut task).poll(&mut noop) {
            Poll::Ready(value) => Poll::Ready(value.unwrap()),
            Poll::Pending => {
                cx.waker().wake_by_ref();
                Poll::Pending
            }
        }
    })
    .await
}

/// `select!` in a loop with an always-ready branch beside a timer: the timer's branch must
/// win once its time comes. The rounds depend on scheduling and are not in the value.
async fn select_ready_branch_beside_a_timer(seed: u64) -> u64 {
    let sleep = tokio::time::sleep(Duration::from_millis(5));
    tokio::pin!(sleep);
    let mut rounds = 0u64;
    loop {
        tokio::select! {
            _ = &mut sleep => break,
            _ = tokio::task::yield_now() => rounds += 1,
        }
    }
    // The rounds (none, if the timer is due by the first poll) depend on scheduling.
    let _ = rounds;
    mix(seed, 5)
}

/// A tokio `timeout` around a loop that only yields: it must fire.
async fn timeout_around_a_yield_loop(seed: u64) -> u64 {
    let timed = tokio::time::timeout(Duration::from_millis(5), async {
        loop {
            tokio::task::yield_now().await;
        }
    })
    .await;
    mix(seed, u64::from(timed.is_err()))
}

// ---------------------------------------------------------------------------------------
// Locks.

/// Eight tasks take one async mutex 100 times each and the future itself 200 times, holding
/// it across a yield.
async fn mutex_contention(seed: u64) -> u64 {
    let state = Arc::new(Mutex::new((0u64, 0u64)));
    let bump = |state: Arc<Mutex<(u64, u64)>>, who: u64, times: u64| async move {
        for i in 0..times {
            let mut guard = state.lock().await;
            guard.0 = guard.0.wrapping_add(mix(seed ^ who, i));
            tokio::task::yield_now().await;
            guard.1 += 1;
        }
    };
    let tasks: Vec<_> = (0..8)
        .map(|who| tokio::spawn(bump(state.clone(), who, 100)))
        .collect();
    bump(state.clone(), 99, 200).await;
    for task in tasks {
        task.await.unwrap();
    }
    let (sum, count) = *state.lock().await;
    mix(sum, count)
}

/// Twelve tasks acquire a semaphore of 3 permits 64 times each and the future itself 256
/// times; how many held one at once never exceeds 3.
async fn semaphore_contention(seed: u64) -> u64 {
    type Shared = (Semaphore, AtomicUsize, AtomicUsize);
    async fn acquire(shared: Arc<Shared>, who: u64, times: u64) -> u64 {
        let (permits, inside, most) = &*shared;
        let mut sum = 0u64;
        for i in 0..times {
            let _permit = permits.acquire().await.unwrap();
            let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
            most.fetch_max(now, Ordering::SeqCst);
            tokio::task::yield_now().await;
            inside.fetch_sub(1, Ordering::SeqCst);
            sum = sum.wrapping_add(mix(who, i));
        }
        sum
    }
    let shared = Arc::new((Semaphore::new(3), AtomicUsize::new(0), AtomicUsize::new(0)));
    let tasks: Vec<_> = (0..12u64)
        .map(|t| tokio::spawn(acquire(shared.clone(), seed ^ t, 64)))
        .collect();
    let mut sum = acquire(shared.clone(), seed, 256).await;
    for task in tasks {
        sum = sum.wrapping_add(task.await.unwrap());
    }
    mix(sum, u64::from(shared.2.load(Ordering::SeqCst) <= 3))
}

/// Four writers push 100 values each while four readers take 150 read locks each; every read
/// sees the vector and its count agree.
async fn rwlock_readers_and_writers(seed: u64) -> u64 {
    let lock = Arc::new(RwLock::new((Vec::<u64>::new(), 0u64)));
    let mut tasks = JoinSet::new();
    for w in 0..4u64 {
        let lock = lock.clone();
        tasks.spawn(async move {
            for i in 0..100 {
                let mut guard = lock.write().await;
                guard.0.push(mix(seed ^ w, i));
                tokio::task::yield_now().await;
                guard.1 += 1;
            }
            0u64
        });
    }
    for _ in 0..4 {
        let lock = lock.clone();
        tasks.spawn(async move {
            let mut torn = 0;
            for _ in 0..150 {
                let guard = lock.read().await;
                if guard.0.len() as u64 != guard.1 {
                    torn += 1;
                }
                drop(guard);
                tokio::task::yield_now().await;
            }
            torn
        });
    }
    let mut torn = 0;
    while let Some(t) = tasks.join_next().await {
        torn += t.unwrap();
    }
    let guard = lock.read().await;
    let sum = guard.0.iter().fold(0u64, |s, v| s.wrapping_add(mix(0, *v)));
    mix(sum, guard.1 + 1_000_000 * torn)
}

// ---------------------------------------------------------------------------------------
// Oneshots, timeouts, barriers.

/// A chain of 600 spawned tasks, each waiting on a oneshot and passing its value on to the
/// next.
async fn oneshot_chain(seed: u64) -> u64 {
    let (first_tx, mut rx) = oneshot::channel::<u64>();
    let mut tasks = Vec::new();
    for i in 0..600u64 {
        let (tx, next_rx) = oneshot::channel();
        tasks.push(tokio::spawn(async move {
            let v = rx.await.unwrap();
            tx.send(mix(v, i)).unwrap();
        }));
        rx = next_rx;
    }
    first_tx.send(seed).unwrap();
    let last = rx.await.unwrap();
    for task in tasks {
        task.await.unwrap();
    }
    last
}

/// 700 receives, each under `tokio::time::timeout`, and four timeouts that must expire.
async fn timeout_many(seed: u64) -> u64 {
    let (tx, mut rx) = mpsc::channel::<u64>(256);
    let producer = tokio::spawn(async move {
        for i in 0..700 {
            tx.send(mix(seed, i)).await.unwrap();
        }
    });
    let mut hash = seed;
    while let Some(v) = tokio::time::timeout(Duration::from_secs(60), rx.recv())
        .await
        .expect("a receive timed out")
    {
        hash = mix(hash, v);
    }
    producer.await.unwrap();
    let mut expired = 0u64;
    for i in 0..4 {
        let slow = tokio::time::sleep(Duration::from_secs(60));
        if tokio::time::timeout(Duration::from_micros(100 * i + 50), slow)
            .await
            .is_err()
        {
            expired += 1;
        }
    }
    mix(hash, expired)
}

/// Four tasks and the future meet at a barrier 150 times: one leader per round.
async fn barrier_rounds(seed: u64) -> u64 {
    const ROUNDS: u64 = 150;
    let barrier = Arc::new(Barrier::new(5));
    let leaders = Arc::new(AtomicU64::new(0));
    let tasks: Vec<_> = (0..4)
        .map(|_| {
            let (barrier, leaders) = (barrier.clone(), leaders.clone());
            tokio::spawn(async move {
                for _ in 0..ROUNDS {
                    if barrier.wait().await.is_leader() {
                        leaders.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();
    for _ in 0..ROUNDS {
        if barrier.wait().await.is_leader() {
            leaders.fetch_add(1, Ordering::Relaxed);
        }
    }
    for task in tasks {
        task.await.unwrap();
    }
    mix(seed, leaders.load(Ordering::Relaxed))
}

// ---------------------------------------------------------------------------------------
// The bridge and runtimes inside.

/// Sync code in the future calls `run_blocking` three times, each on a future that does 600
/// messages of its own, between floods of the outer future's.
async fn nested_run_blocking(seed: u64) -> u64 {
    let mut hash = seed;
    for k in 0..3 {
        hash = mix(hash, bounded_flood(seed ^ k, 300).await);
        let inner = throttled(bounded_flood(seed + k, 600));
        hash = mix(hash, bridge_tokio::run_blocking(inner));
    }
    hash
}

/// After its first await point, sync code in the future builds a current-thread runtime of
/// its own and `block_on`s real work on it (a flood, a timer and a TCP round trip on its own
/// listener), drops it, and goes on with work on the caller's runtime.
async fn private_runtime(seed: u64) -> u64 {
    tokio::time::sleep(Duration::from_millis(1)).await;
    let private = {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let value = runtime.block_on(async move {
            let flood = bounded_flood(seed, 600).await;
            tokio::time::sleep(Duration::from_micros(300)).await;
            let (listener, addr) = listener().await;
            let server = tokio::spawn(async move {
                let (mut socket, _) = listener.accept().await.unwrap();
                let mut buf = [0u8; 8];
                socket.read_exact(&mut buf).await.unwrap();
                socket.write_all(&buf).await.unwrap();
            });
            let mut stream = TcpStream::connect(addr).await.unwrap();
            stream.write_all(&flood.to_le_bytes()).await.unwrap();
            let mut back = [0u8; 8];
            stream.read_exact(&mut back).await.unwrap();
            server.await.unwrap();
            u64::from_le_bytes(back)
        });
        drop(runtime);
        value
    };
    mix(private, bounded_flood(seed ^ 9, 300).await)
}

// ---------------------------------------------------------------------------------------
// A pooled HTTP client.

/// One `reqwest::Client` for the whole process: every call of `pooled_http_client`, in every
/// context, reuses its connection pool.
fn http_client() -> &'static reqwest::Client {
    static CLIENT: OnceLock<reqwest::Client> = OnceLock::new();
    CLIENT.get_or_init(|| reqwest::Client::builder().no_proxy().build().unwrap())
}

/// A loopback HTTP/1.1 server with keep-alive on a runtime of its own, started once per
/// process. `GET /<offset>/<len>` answers `len` bytes of the pattern from `offset`.
fn http_server() -> SocketAddr {
    static ADDR: OnceLock<SocketAddr> = OnceLock::new();
    *ADDR.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("diff-http-server")
            .enable_all()
            .build()
            .unwrap();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        runtime.spawn(async move {
            let listener = TcpListener::from_std(listener).unwrap();
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(|request| async move {
                        let mut parts = request.uri().path().trim_matches('/').split('/');
                        let mut number = || parts.next().and_then(|p| p.parse::<usize>().ok());
                        let (offset, len) = (number().unwrap_or(0), number().unwrap_or(0));
                        let body = Bytes::from_static(&pattern()[offset..][..len]);
                        Ok::<_, std::convert::Infallible>(hyper::Response::new(Full::new(body)))
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .keep_alive(true)
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        // The server outlives every test of the process.
        std::mem::forget(runtime);
        addr
    })
}

/// 12 requests of 8-40 KiB through the process's one pooled client, each body streamed in
/// chunks and checked.
async fn pooled_http_client(seed: u64) -> u64 {
    let addr = http_server();
    let client = http_client();
    let mut hash = seed;
    for r in 0..12u64 {
        let offset = (mix(seed, r) % 65_536) as usize;
        let len = 8_192 + (mix(r, seed) % 32_768) as usize;
        let mut response = client
            .get(format!("http://{addr}/{offset}/{len}"))
            .send()
            .await
            .unwrap();
        assert!(response.status().is_success());
        let mut sum = StreamSum::default();
        while let Some(chunk) = response.chunk().await.unwrap() {
            sum.feed(&chunk);
        }
        let want = checksum(&pattern()[offset..][..len]);
        hash = mix(hash, sum.value() ^ u64::from(sum.value() != want));
    }
    hash
}
