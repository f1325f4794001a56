//! The cpu-async study: CPU-heavy async pipelines read objects from a store and decode them
//! while a probe beside them sends a small request to the same store every few ms; we
//! measure the probe's latency and the pipelines' throughput. Peers: one tokio runtime (the
//! regression), two runtimes (the dedicated-executor pattern), and the bridge
//! (`stream::on_cpu`, `cpu::spawn_future`, an `IoStore`, `spawn_io`); the probe alone is the
//! reference. The store is object_store's HTTP store against a loopback HTTP/1.1 server.

use super::echo::{pool, serve_http, tcp_server};
use crate::harness::{self, Measurement, Settings, round_order, warm_up_rayon, warm_up_tokio};
use crate::proc::{load_average, os_threads};
use crate::progress;
use crate::report::{BASELINE, Check, Goal, Judged, Measure, Row, ScenarioReport, find, rows};
use crate::stats::{Summary, percentile};
use bridge::cpu::ThreadPoolExt;
use bridge::object_store::IoStore;
use bytes::Bytes;
use futures::StreamExt;
use futures::stream::{BoxStream, Stream};
use object_store::path::Path as StorePath;
use object_store::{ClientOptions, ObjectStore, ObjectStoreExt};
use std::collections::HashMap;
use std::fmt::Write as _;
use std::future::Future;
use std::hint::black_box;
use std::io;
use std::net::SocketAddr;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread;
use std::time::{Duration, Instant};
use tokio::runtime::{Handle, Runtime};

const PIPELINES: usize = 8;
/// Objects in the store; object `k` holds `(1 + k % 4)` x 256 KiB.
const OBJECTS: usize = 16;
/// Bytes of one decoded batch, and its decode's CPU time on an idle thread.
const BATCH: usize = 64 << 10;
const BATCH_CPU: Duration = Duration::from_millis(2);
/// The probe: a `head` of a small object this often.
const PROBE_EVERY: Duration = Duration::from_millis(5);
const PROBE_OBJECT: &str = "probe";
/// Items a crossing or a channel between the sides holds.
const BOUND: usize = 2;
/// Goals: bridge's probe p99 over idle's; bridge's throughput against two runtimes'; one
/// runtime's probe p99 over idle's (the regression).
const IDLE_SLACK: f64 = 1.5;
const THROUGHPUT_SLACK: f64 = 0.95;
const REGRESSION: f64 = 10.0;
/// Longer than this to stop a cell's tasks is a hang.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);
/// DataFusion's I/O latency without, then with CPU work on the I/O runtime (#13692).
const PUBLISHED: &str = "from 2 ms to 5,003 ms";
/// The CPU side's nice value in the low-priority variants.
const LOW_NICE: u8 = 10;

const IDLE: &str = "idle";
const ONE: &str = "one runtime";
const TWO: &str = "two runtimes";
const TWO_LOW: &str = "two runtimes, CPU at nice 10";
const BRIDGE_LOW: &str = "bridge, pool at nice 10, yield after long polls";
const BRIDGE_YIELD: &str = "bridge, yield after long polls";
const BRIDGE_DEFAULT: &str = "bridge, scheduling left alone";

/// How the pipelines and the probe run (see [`varied`] and [`varied_low`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Variant {
    Idle,
    One,
    Two,
    Bridge,
    /// As `Bridge` with `yield_after_long_polls(true)`, on a rayon pool of the study's own.
    BridgeYield,
    TwoLow,
    BridgeLow,
}

use Variant::{Bridge, BridgeLow, BridgeYield, Idle, One, Two, TwoLow};
/// Every variant in run order; those of the default-priority and low-priority scenarios.
const VARIANTS: [Variant; 7] = [Idle, One, Two, Bridge, BridgeYield, TwoLow, BridgeLow];
const AT_DEFAULT: [Variant; 5] = [Idle, One, Two, Bridge, BridgeYield];
const AT_LOW: [Variant; 3] = [Idle, TwoLow, BridgeLow];

impl Variant {
    fn name(self) -> &'static str {
        match self {
            Self::Idle => IDLE,
            Self::One => ONE,
            Self::Two => TWO,
            Self::Bridge => BRIDGE_DEFAULT,
            Self::BridgeYield => BRIDGE_YIELD,
            Self::TwoLow => TWO_LOW,
            Self::BridgeLow => BRIDGE_LOW,
        }
    }

    /// The name in the rows, which the goals name.
    fn row_name(self) -> &'static str {
        match self {
            Self::TwoLow => TWO,
            Self::BridgeYield | Self::BridgeLow => BASELINE,
            other => other.name(),
        }
    }
}

fn object_name(k: usize) -> String {
    format!("objects/{k:02}")
}

/// The bytes of object `k`: `(1 + k % 4)` x 256 KiB of a xorshift sequence seeded by `k`.
fn object_bytes(k: usize) -> Vec<u8> {
    let len = (1 + k % 4) * (256 << 10);
    let mut state = (k as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect()
}

/// The stand-in for decoding: `passes` chained passes of a multiply-rotate hash.
fn decode(batch: &[u8], passes: u32) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for pass in 0..black_box(passes) {
        let words = batch.chunks_exact(8);
        let tail = words.remainder();
        for word in words {
            let w = u64::from_le_bytes(word.try_into().unwrap_or_default());
            h = (h ^ w).wrapping_mul(0x0100_0000_01b3).rotate_left(29);
        }
        for &b in tail {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        h ^= u64::from(pass);
    }
    black_box(h)
}

/// Cuts a body's chunks, whatever their sizes, into batches of [`BATCH`] bytes.
#[derive(Debug, Default)]
struct Batcher {
    pending: Vec<u8>,
}

impl Batcher {
    fn push(&mut self, chunk: &[u8]) {
        self.pending.extend_from_slice(chunk);
    }

    fn full(&mut self) -> Option<Vec<u8>> {
        if self.pending.len() < BATCH {
            return None;
        }
        let rest = self.pending.split_off(BATCH);
        Some(std::mem::replace(&mut self.pending, rest))
    }

    fn rest(&mut self) -> Option<Vec<u8>> {
        (!self.pending.is_empty()).then(|| std::mem::take(&mut self.pending))
    }
}

/// The store's HTTP/1.1 server ([`tcp_server`]), answering GET and HEAD for the objects.
fn server() -> io::Result<(SocketAddr, Runtime)> {
    let mut objects: HashMap<String, Bytes> = (0..OBJECTS)
        .map(|k| (object_name(k), Bytes::from(object_bytes(k))))
        .collect();
    objects.insert(PROBE_OBJECT.to_owned(), Bytes::from_static(&[7; 64]));
    let objects = Arc::new(objects);
    tcp_server("store-server", move |stream| {
        serve_http(stream, Arc::clone(&objects))
    })
}

/// An HTTP store on the server at `addr`, in an `IoStore` with `io`.
fn store(addr: SocketAddr, io: bool) -> io::Result<Arc<dyn ObjectStore>> {
    let store = object_store::http::HttpBuilder::new()
        .with_url(format!("http://{addr}"))
        .with_client_options(ClientOptions::new().with_allow_http(true))
        .build()
        .map_err(io::Error::other)?;
    Ok(if io {
        Arc::new(IoStore::new(store))
    } else {
        Arc::new(store)
    })
}

type Body = BoxStream<'static, object_store::Result<Bytes>>;
/// A decoded batch's length and digest.
type Decoded = object_store::Result<(usize, u64)>;

/// How a pipeline or the probe reaches the store.
#[derive(Debug, Clone)]
enum Access {
    /// Polled wherever the caller is polled.
    Here(Arc<dyn ObjectStore>),
    /// Each request and body in a task on the I/O runtime; chunks back on a channel.
    Spawned(Handle, Arc<dyn ObjectStore>),
}

impl Access {
    async fn get(&self, path: StorePath) -> object_store::Result<Body> {
        let (io, store) = match self {
            Self::Here(store) => return Ok(store.get(&path).await?.into_stream()),
            Self::Spawned(io, store) => (io, Arc::clone(store)),
        };
        let (tx, rx) = tokio::sync::mpsc::channel(BOUND);
        io.spawn(async move {
            let body = store.get(&path).await.map(|result| result.into_stream());
            let mut body = body.unwrap_or_else(|e| futures::stream::iter([Err(e)]).boxed());
            while let Some(chunk) = body.next().await {
                if tx.send(chunk).await.is_err() {
                    return;
                }
            }
        });
        let chunks = futures::stream::unfold(rx, |mut rx| async move {
            rx.recv().await.map(|chunk| (chunk, rx))
        });
        Ok(chunks.boxed())
    }

    async fn head(&self, path: &StorePath) -> object_store::Result<()> {
        match self {
            Self::Here(store) => store.head(path).await.map(drop),
            Self::Spawned(io, store) => {
                let (store, path) = (Arc::clone(store), path.clone());
                let head = io.spawn(async move { store.head(&path).await }).await;
                head.map_err(|e| object_store::Error::Generic {
                    store: "cpu-async",
                    source: Box::new(e),
                })?
                .map(drop)
            }
        }
    }
}

/// What a cell's tasks count, the probe's answers, and the flag that stops them.
#[derive(Debug, Default)]
struct Shared {
    stop: AtomicBool,
    bytes: AtomicU64,
    batches: AtomicU64,
    failures: AtomicU64,
    probes: Mutex<Probes>,
    first_error: Mutex<Option<String>>,
}

impl Shared {
    fn stopped(&self) -> bool {
        self.stop.load(Relaxed) // ORDERING: only a signal to end the loops.
    }

    fn fail(&self, e: &object_store::Error) {
        self.failures.fetch_add(1, Relaxed);
        let first = self.first_error.lock();
        let mut first = first.unwrap_or_else(PoisonError::into_inner);
        first.get_or_insert_with(|| e.to_string());
    }

    fn probes(&self) -> MutexGuard<'_, Probes> {
        self.probes.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn counts(&self) -> (u64, u64) {
        (self.bytes.load(Relaxed), self.batches.load(Relaxed))
    }
}

/// Pipeline `p`: objects from `7p mod OBJECTS` on, each batch decoded in the poll that
/// yields it as (length, digest), until the cell stops.
fn pipeline(
    access: Access,
    p: usize,
    passes: u32,
    shared: Arc<Shared>,
) -> impl Stream<Item = Decoded> + Send + 'static {
    let reader = Reader {
        access,
        next: 7 * p,
        body: None,
        batcher: Batcher::default(),
        shared,
    };
    futures::stream::unfold(Some(reader), move |state| async move {
        let mut reader = state.filter(|r| !r.shared.stopped())?;
        match reader.next_batch().await {
            Ok(Some(batch)) => {
                let digest = decode(&batch, passes);
                Some((Ok((batch.len(), digest)), Some(reader)))
            }
            Ok(None) => None,
            Err(e) => Some((Err(e), None)),
        }
    })
}

struct Reader {
    access: Access,
    next: usize,
    body: Option<Body>,
    batcher: Batcher,
    shared: Arc<Shared>,
}

impl Reader {
    /// The next batch, opening the next object as one ends; `None` once stopped.
    async fn next_batch(&mut self) -> object_store::Result<Option<Vec<u8>>> {
        loop {
            if let Some(batch) = self.batcher.full() {
                return Ok(Some(batch));
            }
            if let Some(body) = &mut self.body {
                match body.next().await {
                    Some(chunk) => self.batcher.push(&chunk?),
                    None => {
                        self.body = None;
                        if let Some(batch) = self.batcher.rest() {
                            return Ok(Some(batch));
                        }
                    }
                }
                continue;
            }
            if self.shared.stopped() {
                return Ok(None);
            }
            let path = StorePath::from(object_name(self.next % OBJECTS));
            self.next += 1;
            self.body = Some(self.access.get(path).await?);
        }
    }
}

async fn consume(batches: impl Stream<Item = Decoded>, shared: Arc<Shared>) {
    let mut batches = pin!(batches);
    let mut digest = 0u64;
    while let Some(batch) = batches.next().await {
        match batch {
            Ok((len, d)) => {
                digest ^= d;
                shared.bytes.fetch_add(len as u64, Relaxed);
                shared.batches.fetch_add(1, Relaxed);
            }
            Err(e) => shared.fail(&e),
        }
    }
    black_box(digest);
}

/// The probe: a `head` due every [`PROBE_EVERY`], one at a time, its latency from when it
/// was due, so the wait for its runtime counts.
async fn probe(access: Access, shared: Arc<Shared>) {
    let path = StorePath::from(PROBE_OBJECT);
    let mut due = Instant::now() + PROBE_EVERY;
    shared.probes().due = Some(due);
    loop {
        tokio::time::sleep_until(due.into()).await;
        if shared.stopped() {
            return;
        }
        let answer = access.head(&path).await;
        let now = Instant::now();
        let mut probes = shared.probes();
        match answer {
            Ok(()) => probes.done.push((due, (now - due).as_secs_f64() * 1e9)),
            Err(e) => {
                drop(probes);
                shared.fail(&e);
                probes = shared.probes();
            }
        }
        due = (due + PROBE_EVERY).max(now);
        probes.due = Some(due);
    }
}

/// The probes answered (due, latency ns) and when the next is due.
#[derive(Debug, Default)]
struct Probes {
    done: Vec<(Instant, f64)>,
    due: Option<Instant>,
}

impl Probes {
    /// The sorted latencies (ns) of the probes due in `[start, end)`, with the one still
    /// out at `end` at its wait so far.
    fn in_window(&self, start: Instant, end: Instant) -> Vec<f64> {
        let overdue = self.due.filter(|&due| due < end);
        let overdue = overdue.map(|due| (end - due).as_secs_f64() * 1e9);
        let answered = self
            .done
            .iter()
            .filter(|&&(due, _)| due >= start && due < end);
        let mut out: Vec<f64> = answered.map(|&(_, ns)| ns).chain(overdue).collect();
        out.sort_by(f64::total_cmp);
        out
    }
}

/// Everything the variants run on; the runtimes drop before the server.
struct Rig {
    one_store: Arc<dyn ObjectStore>,
    two_store: Arc<dyn ObjectStore>,
    bridge_store: Arc<dyn ObjectStore>,
    one: Runtime,
    cpu: Runtime,
    io: Runtime,
    cpu_low: Runtime,
    pool_yield: Arc<rayon::ThreadPool>,
    pool_low: Arc<rayon::ThreadPool>,
    cpu_workers: usize,
    io_workers: usize,
    passes: u32,
    _server: Runtime,
}

/// Lowers the calling thread to [`LOW_NICE`] where the OS allows.
fn lower_priority() {
    let _ = bridge::cpu::lower_thread_priority(LOW_NICE);
}

/// Waits for one task of a cell until the deadline; tells whether it finished.
type Joiner = Box<dyn FnOnce(Instant) -> bool>;

fn bridge_joiner(mut task: bridge::Task<()>) -> Joiner {
    Box::new(move |deadline: Instant| {
        task.wait_timeout(deadline.saturating_duration_since(Instant::now()))
            .is_some()
    })
}

/// Spawns `task` on `rt`; its joiner.
fn tokio_joiner(rt: &Runtime, task: impl Future<Output = ()> + Send + 'static) -> Joiner {
    let (handle, task) = (rt.handle().clone(), rt.spawn(task));
    Box::new(move |deadline: Instant| {
        let left = deadline.saturating_duration_since(Instant::now());
        let joined = handle.block_on(async move { tokio::time::timeout(left, task).await });
        matches!(joined, Ok(Ok(())))
    })
}

impl Rig {
    fn start(passes: u32) -> io::Result<Self> {
        warm_up_rayon();
        let (addr, server) = server()?;
        // The tokio variants get the bridge's thread counts.
        let cpu_workers = rayon::current_num_threads();
        let io_workers = super::cpus();
        warm_up_tokio(bridge::rt::IoRuntime::global().handle());
        let cpu_low = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(cpu_workers)
            .thread_name("cpu-runtime-low")
            .on_thread_start(lower_priority)
            .enable_all()
            .build()?;
        warm_up_tokio(cpu_low.handle());
        Ok(Self {
            one_store: store(addr, false)?,
            two_store: store(addr, false)?,
            bridge_store: store(addr, true)?,
            one: harness::runtime(cpu_workers + io_workers, "one-runtime")?,
            cpu: harness::runtime(cpu_workers, "cpu-runtime")?,
            io: harness::runtime(io_workers, "io-runtime")?,
            cpu_low,
            pool_yield: Arc::new(pool(cpu_workers, "pool-yield", || ())?),
            pool_low: Arc::new(pool(cpu_workers, "pool-low", lower_priority)?),
            cpu_workers,
            io_workers,
            passes,
            _server: server,
        })
    }

    fn start_cell(&self, variant: Variant, shared: &Arc<Shared>) -> Vec<Joiner> {
        let here = |store: &Arc<dyn ObjectStore>| Access::Here(Arc::clone(store));
        let probe = |store| probe(here(store), Arc::clone(shared));
        let mut joiners: Vec<Joiner> = vec![match variant {
            Idle | Bridge | BridgeYield | BridgeLow => {
                bridge_joiner(bridge::spawn_io(probe(&self.bridge_store)))
            }
            One => tokio_joiner(&self.one, probe(&self.one_store)),
            Two | TwoLow => tokio_joiner(&self.io, probe(&self.two_store)),
        }];
        if variant == Idle {
            return joiners;
        }
        for p in 0..PIPELINES {
            let shared = Arc::clone(shared);
            let batches_of = |access| pipeline(access, p, self.passes, Arc::clone(&shared));
            joiners.push(match variant {
                Idle => unreachable!("idle runs no pipeline"),
                One => {
                    let batches = batches_of(here(&self.one_store));
                    tokio_joiner(&self.one, consume(batches, shared))
                }
                Two | TwoLow => {
                    let cpu = [&self.cpu, &self.cpu_low][usize::from(variant == TwoLow)];
                    let access = Access::Spawned(self.io.handle().clone(), self.two_store.clone());
                    let batches = batches_of(access);
                    tokio_joiner(cpu, consume(batches, shared))
                }
                BridgeLow | BridgeYield => {
                    let pool =
                        [&self.pool_yield, &self.pool_low][usize::from(variant == BridgeLow)];
                    let batches = pool.spawn_stream(batches_of(here(&self.bridge_store)), BOUND);
                    bridge_joiner(pool.spawn_future_task(consume(batches, shared)))
                }
                Bridge => {
                    let batches = batches_of(here(&self.bridge_store));
                    let batches = bridge::stream::on_cpu(batches, BOUND);
                    bridge_joiner(bridge::cpu::spawn_future(consume(batches, shared)))
                }
            });
        }
        joiners
    }

    /// Runs `variant` for `warm`, then measures it for `window`, then stops its tasks.
    fn cell(&self, variant: Variant, warm: Duration, window: Duration) -> io::Result<Cell> {
        let shared = Arc::new(Shared::default());
        let courtesy = matches!(variant, BridgeYield | BridgeLow);
        bridge::configure().yield_after_long_polls(courtesy).apply();
        let joiners = self.start_cell(variant, &shared);
        thread::sleep(warm);
        let (bytes0, batches0) = shared.counts();
        let start = Instant::now();
        thread::sleep(window);
        let (bytes1, batches1) = shared.counts();
        let end = Instant::now();
        let probes = shared.probes().in_window(start, end);
        shared.stop.store(true, Relaxed);
        let deadline = Instant::now() + STOP_TIMEOUT;
        let stuck = joiners.into_iter().map(|join| join(deadline));
        let stuck = stuck.filter(|done| !done).count();
        bridge::configure().yield_after_long_polls(false).apply();
        if stuck > 0 {
            return Err(io::Error::other(format!(
                "{stuck} task(s) of the {} variant did not stop within {STOP_TIMEOUT:?}",
                variant.name()
            )));
        }
        let first_error = shared.first_error.lock();
        let first_error = first_error.unwrap_or_else(PoisonError::into_inner).take();
        Ok(Cell {
            variant,
            probes,
            bytes: bytes1 - bytes0,
            batches: batches1 - batches0,
            window: end - start,
            failures: shared.failures.load(Relaxed),
            first_error,
        })
    }
}

/// One variant's measured window in one round.
#[derive(Debug, Clone)]
struct Cell {
    variant: Variant,
    probes: Vec<f64>,
    bytes: u64,
    batches: u64,
    window: Duration,
    failures: u64,
    first_error: Option<String>,
}

impl Cell {
    fn probe(&self, p: f64) -> f64 {
        percentile(&self.probes, p)
    }

    /// Ns of the window per MiB decoded (infinite if none); `None` for idle.
    fn ns_per_mib(&self) -> Option<f64> {
        let mib = self.bytes as f64 / f64::from(1u32 << 20);
        (self.variant != Idle).then_some(self.window.as_secs_f64() * 1e9 / mib)
    }
}

/// The regression goal on the probe-p99 rows.
fn regression_check(rows: &[Row]) -> Option<Check> {
    let one = find(rows, ONE)?.ns.median;
    let idle = find(rows, IDLE)?.ns.median;
    if idle.is_nan() || idle <= 0.0 || one.is_nan() {
        return None;
    }
    let times = one / idle;
    Some(Check {
        met: times >= REGRESSION,
        value: format!("{times:.1}x"),
        bound: format!("{ONE} / {IDLE} >= {REGRESSION:.0}x"),
        detail: format!(
            "{ONE}'s probe p99 {:.2} ms against {IDLE}'s {:.2} ms, {times:.1}x, needed \
             {REGRESSION:.0}x",
            one / 1e6,
            idle / 1e6
        ),
    })
}

/// Why one runtime's probe waits, and why a missed regression goal was missed.
fn regression_note(check: Option<&Check>, rig: &Rig, batch: Duration) -> String {
    let mut out = format!(
        "Why one runtime is slow: its {} workers run the {PIPELINES} pipelines' decodes, \
         {:.1} ms per poll, and its I/O (the probe, the HTTP client's connections, the \
         reactor) gets a worker only between two such polls. DataFusion measured I/O latency \
         rising {PUBLISHED} when CPU work shared the I/O runtime (apache/datafusion#13692).",
        rig.cpu_workers + rig.io_workers,
        batch.as_secs_f64() * 1e3,
    );
    if let Some(check) = check.filter(|c| !c.met) {
        let _ = write!(
            out,
            " The regression goal was not met in this run ({}): with a long idle round trip \
             (a busy machine, a slow loopback) a few polls per step are fewer than \
             {REGRESSION:.0} round trips.",
            check.detail,
        );
    }
    out
}

/// The summary table per variant.
fn summary(cells: &[Cell]) -> String {
    let pooled = |v: Variant| {
        let mine = cells.iter().filter(|c| c.variant == v);
        let mut all: Vec<f64> = mine.flat_map(|c| c.probes.iter().copied()).collect();
        all.sort_by(f64::total_cmp);
        all
    };
    let idle_p99 = percentile(&pooled(Idle), 0.99);
    let mut out = String::from(
        "Summary (the probes of every measured window of the variant pooled; throughput is \
         the median over rounds):\n\n\
         | variant | probes | probe p50 ms | probe p99 ms | probe max ms | p99 / idle's | \
         pipeline MiB/s | batches decoded | failures |\n\
         | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    );
    for v in VARIANTS {
        let mine: Vec<&Cell> = cells.iter().filter(|c| c.variant == v).collect();
        let all = pooled(v);
        let per_mib = mine.iter().filter_map(|c| c.ns_per_mib());
        let mib_s: Vec<f64> = per_mib.map(|ns| 1e9 / ns).collect();
        let throughput = Summary::of(&mib_s).map_or("-".to_owned(), |s| format!("{:.1}", s.median));
        let failures: u64 = mine.iter().map(|c| c.failures).sum();
        let batches = match mine.iter().map(|c| c.batches).sum::<u64>() {
            _ if v == Idle => "-".to_owned(),
            n => n.to_string(),
        };
        let p = |q| percentile(&all, q) / 1e6;
        let _ = write!(
            out,
            "\n| {} | {} | {:.2} | {:.2} | {:.2} | {:.1}x | {throughput} | {batches} | \
             {failures} |",
            v.name(),
            all.len(),
            p(0.5),
            p(0.99),
            all.last().copied().unwrap_or(f64::NAN) / 1e6,
            percentile(&all, 0.99) / idle_p99,
        );
    }
    if let Some(e) = cells.iter().find_map(|c| c.first_error.as_deref()) {
        let _ = write!(out, "\n\nThe first failure: {e}");
    }
    out
}

fn varied() -> String {
    format!(
        "where the pipelines, their store reads and the probe run. `{IDLE}`: the probe alone \
         (the reference). `{ONE}`: all of it as tasks of one tokio multi-thread runtime. \
         `{TWO}`: the dedicated-executor pattern: the pipelines on a CPU runtime, each read \
         sent to an I/O runtime with `io_handle.spawn` and its chunks sent back on a bounded \
         channel ({BOUND}), the probe on the I/O runtime. `{BRIDGE_DEFAULT}`: each pipeline \
         driven on rayon's global pool by `bridge::stream::on_cpu` (bound {BOUND}) and \
         consumed by a `bridge::cpu::spawn_future` task; `{BASELINE}` (`{BRIDGE_YIELD}` in the \
         summary): the same on a pool of the study's own with \
         `bridge::configure().yield_after_long_polls(true)`, the guide's set-up for this \
         workload; in both, every read through `bridge::object_store::IoStore` on the shared \
         IoRuntime, and the probe a `bridge::spawn_io` task there."
    )
}

fn fixed(rig: &Rig, batch: Duration, warm: Duration, window: Duration) -> String {
    format!(
        "{} CPUs. Threads: `{ONE}` {} workers; `{TWO}` {} CPU-runtime and {} I/O-runtime \
         workers; the bridge variants rayon's pool and the IoRuntime, as many. The store: \
         object_store's HTTP store against a loopback HTTP/1.1 server in this process, \
         {OBJECTS} objects of 256 KiB to 1 MiB in memory. {PIPELINES} pipelines at once, each \
         reading objects one after the other and decoding {} KiB batches ({} passes of a \
         hash, {:.2} ms each on an idle thread) in the poll that yields them. The probe: a \
         `head` of a small object due every {} ms, its latency from when it was due to the \
         answer (a probe unanswered at the window's end counts with its wait so far). Per \
         round each variant runs once, in an order balanced across rounds: {} ms to settle, \
         then a measured window of {} ms.",
        super::cpus(),
        rig.cpu_workers + rig.io_workers,
        rig.cpu_workers,
        rig.io_workers,
        BATCH >> 10,
        rig.passes,
        batch.as_secs_f64() * 1e3,
        PROBE_EVERY.as_millis(),
        warm.as_millis(),
        window.as_millis(),
    )
}

/// Runs the study: every variant once per round, reported as the probe's p99 and p50 and
/// the pipeline's time per MiB.
pub fn run(settings: &Settings) -> io::Result<Vec<ScenarioReport>> {
    let (rounds, warm, window) = if settings.is_quick() {
        (1, Duration::from_millis(150), Duration::from_millis(300))
    } else {
        (5, Duration::from_millis(300), Duration::from_millis(1_500))
    };
    let full = object_bytes(0)[..BATCH].to_vec();
    let passes = harness::calibrate(BATCH_CPU, |n| decode(&full, n as u32)) as u32;
    let batch = harness::median_time(21, |_| decode(&full, passes));
    let rig = Rig::start(passes)?;
    let load_before = load_average();
    let threads_before = os_threads();
    progress::measurement_started(rounds, VARIANTS.iter().map(|v| v.name()));
    for v in VARIANTS {
        rig.cell(v, warm, warm)?;
    }
    progress::step_done(true);
    let mut cells = Vec::new();
    for round in 0..rounds {
        for k in round_order(round, VARIANTS.len()) {
            cells.push(rig.cell(VARIANTS[k], warm, window)?);
        }
        progress::step_done(false);
    }
    // A scenario of the default-priority variants, or with `low` of the low-priority ones.
    // `sample` is a cell's sample, `None` where the variant has none.
    let scenario = |name, fixed, measure, low: bool, sample: fn(&Cell) -> Option<f64>| {
        let variants: &[Variant] = if low { &AT_LOW } else { &AT_DEFAULT };
        let of = |v: Variant| cells.iter().filter(move |c| c.variant == v);
        let samples = |&v: &Variant| (v.row_name(), of(v).filter_map(sample).collect());
        let m = Measurement::of(rounds, variants.iter().map(samples));
        ScenarioReport {
            name,
            varied: if low { varied_low() } else { varied() },
            fixed,
            measure,
            rows: rows(name, &m),
            ..Default::default()
        }
    };
    let same = || "the same rounds as `probe-p99`.".to_owned();
    let per_mib = Cell::ns_per_mib;
    let as_in = "the same rounds as `probe-p99`, measured as in `throughput`.".to_owned();
    let p99 = Measure::ms("probe p99", Some(P99));
    let p99_of = |c: &Cell| Some(c.probe(0.99));
    let fixed = fixed(&rig, batch, warm, window);
    let probe_p99 = scenario("probe-p99", fixed, p99, false, p99_of);
    let regression = regression_check(&probe_p99.rows);
    let cpus = super::cpus();
    let batch_ms = batch.as_secs_f64() * 1e3;
    let throughput = format!(
        "the same rounds as `probe-p99`; the pipelines' wall time per MiB decoded (lower is \
         faster; idle has no pipeline). Every batch is {} KiB of {batch_ms:.2} ms decode, so \
         the {cpus} CPU-side threads bound it at about {:.1} ms/MiB.",
        BATCH >> 10,
        batch_ms * (1 << 20) as f64 / BATCH as f64 / cpus as f64,
    );
    let threads = format!(
        "Threads: {} in the process before measuring (everything started: the runtimes, \
         rayon's pool, the IoRuntime, the server, and what earlier studies left); load \
         average (/proc/loadavg, 1/5/15 min) {} before and {} after: anything else running \
         competes for the same CPUs.",
        threads_before.map_or("not read".to_owned(), |n| n.to_string()),
        load_before.as_deref().unwrap_or("not read"),
        load_average().as_deref().unwrap_or("not read"),
    );
    let per_window = window.as_millis() / PROBE_EVERY.as_millis();
    let notes = vec![
        format!("About {per_window} probes per window."),
        regression_note(regression.as_ref(), &rig, batch),
        slices_note(),
        threads,
    ];
    let p50 = Measure::ms("probe p50", Some(P50));
    let p50_of = |c: &Cell| Some(c.probe(0.5));
    let regression_goal = "one runtime shows the regression: its probe p99 at least 10x idle's";
    let reports = vec![
        ScenarioReport {
            goals: probe_goals(),
            judged: vec![Judged::once(regression_goal, regression)],
            notes,
            ..probe_p99
        },
        scenario("probe-p50", same(), p50, false, p50_of),
        ScenarioReport {
            goals: vec![throughput_goal()],
            notes: vec![summary(&cells)],
            ..scenario("throughput", throughput, THROUGHPUT, false, per_mib)
        },
        ScenarioReport {
            goals: probe_goals(),
            notes: vec![low_note()],
            ..scenario("probe-p99-low-priority", same(), p99, true, p99_of)
        },
        ScenarioReport {
            goals: vec![throughput_goal()],
            ..scenario("throughput-low-priority", as_in, THROUGHPUT, true, per_mib)
        },
    ];
    drop(rig);
    Ok(reports)
}

const P99: &str = "One sample per round and variant: the 99th percentile latency of the probes \
                   due in that round's measured window (about one every 5 ms).";
const P50: &str = "One sample per round and variant: the median latency of the probes due in \
                   that round's measured window.";

fn probe_goals() -> Vec<Goal> {
    let idle = "bridge's probe p99 within 1.5x of idle's";
    let two = "bridge's probe p99 at or below two runtimes'";
    vec![
        Goal::new(IDLE, 1.0 / IDLE_SLACK, idle),
        Goal::new(TWO, 1.0, two),
    ]
}

fn throughput_goal() -> Goal {
    let text = "bridge's pipeline throughput at least 0.95x two runtimes'";
    Goal::new(TWO, THROUGHPUT_SLACK, text)
}

const THROUGHPUT: Measure = Measure {
    what: "pipeline",
    unit: "ms",
    per: "/MiB",
    ns_per_unit: 1e6,
    decimals: 2,
    sampling: Some(
        "One sample per round and variant: the measured window's wall time over the MiB its \
         pipelines decoded in it.",
    ),
};

fn varied_low() -> String {
    format!(
        "as in `probe-p99`, with the CPU side's threads at nice {LOW_NICE} \
         (`bridge::cpu::lower_thread_priority` from each thread's start hook). `{TWO}` here \
         is `{TWO_LOW}`: the CPU runtime's threads lowered by `on_thread_start`. \
         `{BASELINE}` here is `{BRIDGE_LOW}`: a rayon pool of the study's own lowered by \
         `start_handler`, driven by `pool.spawn_stream` and consumed by \
         `pool.spawn_future_task` (`bridge::cpu::ThreadPoolExt`), with \
         `yield_after_long_polls(true)`. The cells run in the same rounds, interleaved."
    )
}

/// The time slices of a global pool thread and of a plain thread.
fn slices_note() -> String {
    let pool = bridge::cpu::spawn_future(async { thread_slice() }).wait();
    let plain = thread::spawn(thread_slice).join().ok().flatten();
    let shown =
        |slice: Option<f64>| slice.map_or("not reported".to_owned(), |ms| format!("{ms:.1} ms"));
    format!(
        "Time slices (`se.slice` of /proc/thread-self/sched): a thread of rayon's global \
         pool, after the bridge's polls ran there, {}; a plain thread, as every thread of the \
         other variants, {}. The slice changes who runs first among threads that want a CPU, \
         not their shares: a thread at the default slice that wakes preempts one with a \
         longer slice.",
        shown(pool),
        shown(plain),
    )
}

fn thread_slice() -> Option<f64> {
    let sched = std::fs::read_to_string("/proc/thread-self/sched").ok()?;
    let line = sched.lines().find(|l| l.starts_with("se.slice"))?;
    let ns: f64 = line.split(':').nth(1)?.trim().parse().ok()?;
    Some(ns / 1e6)
}

fn low_note() -> String {
    format!(
        "What this isolates: at the default priority an I/O thread woken while the CPU side \
         keeps every CPU busy runs at once only if the scheduler preempts a CPU thread for \
         it, which it does for the bridge's pool threads (a longer time slice) and not for \
         the CPU runtime's. At nice {LOW_NICE} a CPU thread weighs about a tenth of a nice-0 \
         one, so a woken I/O thread takes a CPU at once in both patterns."
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batcher_cuts_any_chunks_into_full_batches_and_a_short_last_one() {
        let body = object_bytes(1);
        let mut batcher = Batcher::default();
        let mut batches = Vec::new();
        for chunk in body.chunks(10_007) {
            batcher.push(chunk);
            while let Some(batch) = batcher.full() {
                batches.push(batch);
            }
        }
        batches.extend(batcher.rest());
        assert!(batcher.rest().is_none());
        assert_eq!(batches.concat(), body);
        assert!(batches.iter().all(|b| b.len() == BATCH));
        let mut odd = Batcher::default();
        odd.push(&body[..BATCH + 5]);
        assert_eq!(odd.full().map(|b| b.len()), Some(BATCH));
        assert_eq!(odd.full(), None);
        assert_eq!(odd.rest().map(|b| b.len()), Some(5));
    }

    #[test]
    fn the_window_counts_its_probes_and_the_one_overdue_at_its_end() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let mut probes = Probes {
            done: vec![(at(1), 9.0), (at(10), 3.0), (at(15), 1.0), (at(20), 5.0)],
            due: Some(at(25)),
        };
        assert_eq!(probes.in_window(at(10), at(20)), vec![1.0, 3.0]);
        assert_eq!(probes.in_window(at(20), at(40)), vec![5.0, 15e6]);
        assert_eq!(probes.in_window(at(10), at(25)), vec![1.0, 3.0, 5.0]);
        assert_eq!(probes.in_window(at(30), at(40)), vec![15e6]);
        probes.due = None;
        assert!(probes.in_window(at(30), at(40)).is_empty());
    }

    #[test]
    fn every_access_decodes_whole_objects_until_stopped_and_answers_the_probe() {
        let (addr, _server) = server().unwrap();
        let io = harness::runtime(1, "test-io").unwrap();
        let cpu = harness::runtime(1, "test-cpu").unwrap();
        // Pipeline 0 reads object 0 (4 batches), then object 1 (8).
        let expect: Vec<(usize, u64)> = [0, 1]
            .into_iter()
            .flat_map(|k| {
                object_bytes(k)
                    .chunks(BATCH)
                    .map(|b| (b.len(), decode(b, 1)))
                    .collect::<Vec<_>>()
            })
            .collect();
        let accesses = [
            Access::Here(store(addr, false).unwrap()),
            Access::Spawned(io.handle().clone(), store(addr, false).unwrap()),
            Access::Here(store(addr, true).unwrap()),
        ];
        for access in accesses {
            let shared = Arc::new(Shared::default());
            let batches = pipeline(access.clone(), 0, 1, Arc::clone(&shared)).take(12);
            let got: Vec<(usize, u64)> = cpu.block_on(batches.map(|b| b.unwrap()).collect());
            assert!(got == expect, "{access:?}");
            cpu.block_on(access.head(&StorePath::from(PROBE_OBJECT)))
                .unwrap();
            let missing = cpu.block_on(access.head(&StorePath::from("nothing")));
            assert!(missing.is_err(), "{access:?}");
            shared.stop.store(true, Relaxed);
            assert_eq!(cpu.block_on(pipeline(access, 0, 1, shared).count()), 0);
        }
    }
}
