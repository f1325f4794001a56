//! The wrong-pool study: concurrent queries read from a slow object store (a loopback TCP
//! server that answers after a fixed delay) and decode every block they read. Decode runs
//! inline on the tokio workers that drive the reads, in `spawn_blocking`, through
//! `bridge::spawn` or through tokio-rayon; we report the wall time, how long each read
//! really took against its nominal delay, and the process's thread count.

use super::echo::{connect, tcp_server};
use crate::harness;
use crate::harness::{MISSING, Measurement, Settings, Variant, measure, timed_on, warm_up_rayon};
use crate::proc::Census;
use crate::report::{
    BASELINE, Budget, Check, Goal, Judged, Measure, Row, ScenarioReport, find, rows, table,
};
use crate::stats::{Summary, percentile};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::hint::black_box;
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::runtime::Runtime;
use tokio::sync::oneshot;

/// Query runtime workers; queries per iteration; sequential reads per query.
const WORKERS: usize = 2;
const QUERIES: usize = 64;
const READS: usize = 8;
/// The store's answer time; a decode's CPU time on an idle thread.
const DELAY: Duration = Duration::from_millis(2);
const DECODE_TARGET: Duration = Duration::from_micros(300);
/// Bytes of a request (query, read) and of a response (request, decode seed, padding).
const REQUEST: usize = 16;
const RESPONSE: usize = 64;
/// Goals: bridge's read p50 over the nominal delay; its wall time over tokio-rayon's.
const READ_SLACK: f64 = 1.5;
const WALL_SLACK: f64 = 1.05;
const ITERATION_TIMEOUT: Duration = Duration::from_secs(30);
const TIMER_MAX_WAIT: Duration = Duration::from_millis(100);
/// The `watch` scenario's decode CPU time and queries.
const WATCH_DECODE: Duration = Duration::from_millis(20);
const WATCH_QUERIES: usize = 8;
/// Sequential queries without decode for the unloaded read latency.
const FLOOR_QUERIES: usize = 16;

const TOKIO_RAYON: &str = "tokio-rayon";
const SPAWN_BLOCKING: &str = "spawn_blocking";
const INLINE: &str = "inline";

/// Where a query's decode runs (see [`varied`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Decode {
    Inline,
    SpawnBlocking,
    Bridge,
    TokioRayon,
}

impl Decode {
    /// Decodes a block seeded with `seed` in `rounds` rounds, where this variant runs it.
    async fn run(self, seed: u64, rounds: u64) -> io::Result<u64> {
        match self {
            Self::Inline => Ok(decode(seed, rounds)),
            Self::SpawnBlocking => tokio::task::spawn_blocking(move || decode(seed, rounds))
                .await
                .map_err(io::Error::other),
            Self::Bridge => Ok(bridge::spawn(move || decode(seed, rounds)).await),
            Self::TokioRayon => Ok(tokio_rayon::spawn(move || decode(seed, rounds)).await),
        }
    }
}

/// The stand-in for decoding a block: `rounds` dependent xorshift-multiply steps.
fn decode(seed: u64, rounds: u64) -> u64 {
    let mut x = seed | 1;
    for _ in 0..black_box(rounds) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x = x.wrapping_mul(0x2545_f491_4f6c_dd1d);
    }
    black_box(x)
}

/// The CPU time (ns) of this process's live threads, from `/proc/self/task/*/schedstat`.
fn process_cpu_ns() -> Option<u64> {
    let mut total = 0u64;
    for entry in std::fs::read_dir("/proc/self/task").ok()? {
        let Ok(entry) = entry else { continue };
        if let Ok(text) = std::fs::read_to_string(entry.path().join("schedstat")) {
            total += text.split_whitespace().next()?.parse::<u64>().ok()?;
        }
    }
    Some(total)
}

/// The little-endian u64 at `bytes[at..at + 8]`.
fn word(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap_or_default())
}

/// The decode seed the store answers a request with.
fn seed_of(request: &[u8; REQUEST]) -> u64 {
    (word(request, 0) << 32 | word(request, 8)).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

/// Deadlines fired in order by a thread that sleeps on a condvar (no 1 ms tokio tick).
struct Timer {
    shared: Arc<TimerShared>,
    thread: Option<JoinHandle<()>>,
}

#[derive(Debug, Default)]
struct TimerShared {
    state: Mutex<TimerState>,
    changed: Condvar,
}

#[derive(Debug, Default)]
struct TimerState {
    due: BTreeMap<(Instant, u64), oneshot::Sender<()>>,
    next: u64,
    closed: bool,
}

impl TimerShared {
    fn lock(&self) -> MutexGuard<'_, TimerState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A receiver that completes at `at` (or fails once the timer is closed).
    fn at(&self, at: Instant) -> oneshot::Receiver<()> {
        let (tx, rx) = oneshot::channel();
        let mut state = self.lock();
        if state.closed {
            return rx;
        }
        let seq = state.next;
        state.next += 1;
        let next = state.due.first_key_value();
        let first = next.is_none_or(|(&key, _)| (at, seq) < key);
        state.due.insert((at, seq), tx);
        drop(state);
        if first {
            self.changed.notify_one();
        }
        rx
    }

    fn run(&self) {
        let mut state = self.lock();
        while !state.closed {
            let now = Instant::now();
            while let Some(entry) = state.due.first_entry() {
                if entry.key().0 > now {
                    break;
                }
                let _ = entry.remove().send(());
            }
            let next = state.due.first_key_value().map(|(&(at, _), _)| at - now);
            let wait = next.map_or(TIMER_MAX_WAIT, |d| d.min(TIMER_MAX_WAIT));
            let waited = self.changed.wait_timeout(state, wait);
            state = waited.unwrap_or_else(PoisonError::into_inner).0;
        }
        // Dropping the senders fails every pending wait.
        state.due.clear();
    }
}

impl Timer {
    fn start() -> io::Result<Self> {
        let shared = Arc::new(TimerShared::default());
        let named = thread::Builder::new().name("delay-timer".into());
        let timer = Arc::clone(&shared);
        let thread = named.spawn(move || timer.run())?;
        Ok(Self {
            shared,
            thread: Some(thread),
        })
    }
}

impl Drop for Timer {
    fn drop(&mut self) {
        self.shared.lock().closed = true;
        self.shared.changed.notify_one();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The object store ([`tcp_server`]), answering each request [`DELAY`] after it arrived; the
/// runtime drops before the timer.
struct DelayServer {
    addr: SocketAddr,
    _runtime: Runtime,
    _timer: Timer,
}

impl DelayServer {
    fn start() -> io::Result<Self> {
        let timer = Timer::start()?;
        let shared = Arc::clone(&timer.shared);
        let serving = move |stream| serve(stream, Arc::clone(&shared));
        let (addr, runtime) = tcp_server("delay-server", serving)?;
        Ok(Self {
            addr,
            _runtime: runtime,
            _timer: timer,
        })
    }
}

/// Answers [`READS`] requests, then waits for the close and resets the connection.
async fn serve(mut stream: TcpStream, timer: Arc<TimerShared>) {
    if stream.set_nodelay(true).is_err() || stream.set_zero_linger().is_err() {
        return;
    }
    let mut request = [0u8; REQUEST];
    let mut response = [0u8; RESPONSE];
    for _ in 0..READS {
        if stream.read_exact(&mut request).await.is_err() {
            return;
        }
        if timer.at(Instant::now() + DELAY).await.is_err() {
            return;
        }
        response[..REQUEST].copy_from_slice(&request);
        response[REQUEST..REQUEST + 8].copy_from_slice(&seed_of(&request).to_le_bytes());
        if stream.write_all(&response).await.is_err() {
            return;
        }
    }
    let _ = stream.read(&mut request).await;
}

/// One query: [`READS`] reads, each followed by a decode by `how`; returns each read's ns.
async fn query(addr: SocketAddr, q: u64, how: Decode, rounds: u64) -> io::Result<Vec<f64>> {
    let mut stream = connect(addr).await?;
    let mut reads = Vec::with_capacity(READS);
    let mut request = [0u8; REQUEST];
    let mut response = [0u8; RESPONSE];
    let mut digest = 0u64;
    request[..8].copy_from_slice(&q.to_le_bytes());
    for r in 0..READS as u64 {
        request[8..].copy_from_slice(&r.to_le_bytes());
        let issued = Instant::now();
        stream.write_all(&request).await?;
        stream.read_exact(&mut response).await?;
        reads.push(issued.elapsed().as_secs_f64() * 1e9);
        let seed = word(&response, REQUEST);
        if response[..REQUEST] != request || seed != seed_of(&request) {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "wrong response"));
        }
        digest ^= how.run(seed, rounds).await?;
    }
    black_box(digest);
    Ok(reads)
}

/// `queries` queries at once; every read's ns, or `None` if one failed or it timed out.
async fn iteration(addr: SocketAddr, queries: usize, how: Decode, rounds: u64) -> Option<Vec<f64>> {
    let run = async {
        let tasks: Vec<_> = (0..queries as u64)
            .map(|q| tokio::spawn(query(addr, q, how, rounds)))
            .collect();
        let mut reads = Vec::with_capacity(queries * READS);
        let mut failed = false;
        for task in tasks {
            match task.await {
                Ok(Ok(r)) => reads.extend(r),
                Ok(Err(e)) => {
                    eprintln!("wrong-pool: a {how:?} query failed: {e}");
                    failed = true;
                }
                Err(e) => {
                    eprintln!("wrong-pool: a {how:?} query did not finish: {e}");
                    failed = true;
                }
            }
        }
        (!failed).then_some(reads)
    };
    match tokio::time::timeout(ITERATION_TIMEOUT, run).await {
        Ok(reads) => reads,
        Err(_) => {
            eprintln!("wrong-pool: a {how:?} iteration took over {ITERATION_TIMEOUT:?}");
            None
        }
    }
}

/// What one variant saw per batch: every read's ns (sorted), and the CPU ns per iteration.
#[derive(Debug)]
struct Log {
    name: &'static str,
    batches: Vec<Vec<f64>>,
    cpu: Vec<f64>,
}

/// The reads of every variant and the thread counts around its batches.
#[derive(Debug)]
struct Recorder {
    census: Census,
    logs: RefCell<Vec<Log>>,
}

impl Recorder {
    fn new() -> Self {
        Self {
            census: Census::new(),
            logs: RefCell::new(Vec::new()),
        }
    }

    fn variant<'a>(
        &'a self,
        name: &'static str,
        rt: &'a Runtime,
        addr: SocketAddr,
        how: Decode,
        rounds: u64,
    ) -> Variant<'a> {
        let k = {
            let mut logs = self.logs.borrow_mut();
            let (batches, cpu) = (Vec::new(), Vec::new());
            logs.push(Log { name, batches, cpu });
            logs.len() - 1
        };
        super::counted(&self.census, name, move |n| {
            let cpu_before = process_cpu_ns();
            let mut reads = Vec::new();
            let batch = timed_on(rt, n, async |i| {
                match iteration(addr, QUERIES, how, rounds).await {
                    Some(r) => {
                        reads.extend(r);
                        i
                    }
                    None => MISSING,
                }
            });
            let cpu = match (cpu_before, process_cpu_ns()) {
                (Some(a), Some(b)) => b.saturating_sub(a) as f64 / n.max(1) as f64,
                _ => f64::NAN,
            };
            reads.sort_by(f64::total_cmp);
            let mut logs = self.logs.borrow_mut();
            logs[k].batches.push(reads);
            logs[k].cpu.push(cpu);
            batch
        })
    }

    /// Per variant, the percentile `p` of each measured round's reads.
    fn read_percentiles(&self, m: &Measurement, p: f64) -> Measurement {
        let logs = self.logs.borrow();
        let variants = logs.iter().map(|log| {
            let skip = log.batches.len().saturating_sub(m.rounds);
            let samples = log.batches[skip..].iter().map(|r| percentile(r, p));
            (log.name, samples.collect())
        });
        let mut reads = Measurement {
            ops_per_iter: (QUERIES * READS) as u64,
            ..Measurement::of(m.rounds, variants)
        };
        for (read, timed) in reads.variants.iter_mut().zip(&m.variants) {
            read.iters = timed.iters;
        }
        reads
    }

    /// The median CPU ns per iteration of `name` over the measured rounds.
    fn cpu_of(&self, name: &str, rounds: usize) -> f64 {
        let logs = self.logs.borrow();
        let Some(log) = logs.iter().find(|log| log.name == name) else {
            return f64::NAN;
        };
        let skip = log.cpu.len().saturating_sub(rounds);
        Summary::of(&log.cpu[skip..]).map_or(f64::NAN, |s| s.median)
    }
}

fn ms(ns: f64) -> f64 {
    ns / 1e6
}

fn summary(wall: &[Row], p50: &[Row], p99: &[Row], recorder: &Recorder) -> String {
    let nominal = DELAY.as_secs_f64() * 1e9;
    let rows: Vec<Vec<String>> = wall
        .iter()
        .filter_map(|w| {
            let (med, lo, hi) = (ms(w.ns.median), ms(w.ns.min), ms(w.ns.max));
            let a = find(p50, &w.variant)?.ns.median;
            let b = find(p99, &w.variant)?.ns.median;
            Some(vec![
                w.variant.clone(),
                format!("{med:.1} ({lo:.1}-{hi:.1})"),
                format!("{:.2} ({:.2}x)", ms(a), a / nominal),
                format!("{:.2} ({:.2}x)", ms(b), b / nominal),
                format!("{:.1}", ms(recorder.cpu_of(&w.variant, w.rounds))),
                recorder.census.of(&w.variant),
            ])
        })
        .collect();
    let head = [
        "variant",
        "wall ms/iteration (min-max)",
        "read p50 ms (/ nominal)",
        "read p99 ms (/ nominal)",
        "CPU ms/iteration",
        "threads after its batches",
    ];
    format!(
        "Summary (medians over rounds; CPU is the process's CPU time per iteration, from \
         /proc/self/task/*/schedstat):\n\n{}",
        table(&head, "---:", &rows).trim_end()
    )
}

fn bounds_note(cost: Duration, cpus: usize) -> String {
    let decodes = (QUERIES * READS) as f64;
    let cpu_bound = decodes * cost.as_secs_f64() * 1e3 / cpus.max(1) as f64;
    let path = READS as f64 * (DELAY + cost).as_secs_f64() * 1e3;
    format!(
        "Bounds: the {decodes:.0} decodes of an iteration need at least {cpu_bound:.1} ms of \
         wall on {cpus} CPUs; one query's critical path is {READS} x (read + decode) = \
         {path:.1} ms. {} Load average before measuring: {}.",
        if cpu_bound > path {
            "The CPU bound is the larger, so wall times should be close; what differs is where \
             the queue forms: inline, responses wait for a decoding worker (reads grow); \
             offloaded, decodes wait in the pool's queue."
        } else {
            "The critical path is the larger: a variant that delays reads delays the iteration."
        },
        crate::proc::load_average().unwrap_or_else(|| "not read".to_owned()),
    )
}

fn varied() -> String {
    "where each read's decode runs: bridge::spawn (rayon's global pool, awaited through \
     bridge's Task); tokio_rayon::spawn (tokio-rayon 2.1, the same pool); \
     tokio::task::spawn_blocking (tokio's blocking pool); inline (on the tokio worker that \
     polls the query, between its reads)."
        .to_owned()
}

/// What the `watch` scenario saw of one run, with the spawn line the bridge names.
struct Watched {
    slow_polls: u64,
    held: u64,
    longest_poll: Option<Duration>,
    reads: Vec<f64>,
    line: u32,
}

/// [`WATCH_QUERIES`] queries, each started by `spawn` (with the line of its spawn site) and
/// awaited by `wait`.
fn watched<T>(spawn: impl Fn(u64) -> (T, u32), wait: impl Fn(T) -> Option<Vec<f64>>) -> Watched {
    let before = bridge::metrics().io;
    let tasks: Vec<_> = (0..WATCH_QUERIES as u64).map(spawn).collect();
    let line = tasks.first().map_or(0, |&(_, line)| line);
    let reads = tasks
        .into_iter()
        .flat_map(|(task, _)| wait(task).unwrap_or_default());
    Watched::since(&before, reads.collect(), line)
}

impl Watched {
    fn since(before: &bridge::IoMetrics, mut reads: Vec<f64>, line: u32) -> Self {
        reads.sort_by(f64::total_cmp);
        let after = bridge::metrics().io;
        let polls = after.poll_durations.since(&before.poll_durations);
        Watched {
            slow_polls: after.slow_polls - before.slow_polls,
            held: after.held_runtimes - before.held_runtimes,
            longest_poll: polls.percentile(100.0),
            reads,
            line,
        }
    }
}

/// The `watch` scenario; see its `varied` text.
fn watch_scenario(addr: SocketAddr, rounds: u64, cost: Duration) -> io::Result<ScenarioReport> {
    let rt = harness::runtime(WORKERS, "queries")?;
    let io = bridge::rt::IoRuntime::from_handle(rt.handle().clone());
    let _watch = bridge::rt::watch(rt.handle());
    let big = ((WATCH_DECODE.as_secs_f64() / cost.as_secs_f64()) * rounds as f64).max(1.0) as u64;
    let slow = bridge::configure().slow_poll;
    // Each spawn and its `line!()` on one line: the bridge names the spawn site.
    let on_io = |how| {
        watched(
            |q| (io.spawn(query(addr, q, how, big)), line!()),
            |t| t.wait().ok(),
        )
    };
    let inline = on_io(Decode::Inline);
    let bridged = on_io(Decode::Bridge);
    // The same queries, decode inline, as tasks of `rt` each wrapped in `bridge::rt::watched`.
    let inline_query = |q| query(addr, q, Decode::Inline, big);
    let users = watched(
        |q| (rt.spawn(bridge::rt::watched(inline_query(q))), line!()),
        |t| rt.block_on(t).ok().and_then(Result::ok),
    );
    drop(_watch);
    drop(rt);
    let nominal_ns = DELAY.as_secs_f64() * 1e9;
    let describe = |name: &str, w: &Watched| {
        format!(
            "{name}: {} slow polls named, {} held-runtime reports, longest I/O-side poll \
             below {}, reads p50 {:.2} ms / p99 {:.2} ms (nominal {:.2} ms)",
            w.slow_polls,
            w.held,
            w.longest_poll
                .map_or_else(|| "-".to_string(), |d| format!("{d:?}")),
            ms(percentile(&w.reads, 0.5)),
            ms(percentile(&w.reads, 0.99)),
            ms(nominal_ns),
        )
    };
    let site = format!("bridge-bench/src/studies/wrong_pool.rs:{}", inline.line);
    let named = Judged::once(
        format!(
            "with the decode inline on the I/O side, the bridge names the slow polls (their \
             spawn site, {site}, in its warning with feature tracing)"
        ),
        Some(Check {
            met: inline.slow_polls > 0,
            value: format!("{} named", inline.slow_polls),
            bound: "slow polls named >= 1".into(),
            detail: describe(INLINE, &inline),
        }),
    );
    let users_site = format!("bridge-bench/src/studies/wrong_pool.rs:{}", users.line);
    let users_named = Judged::once(
        format!(
            "with the decode inline in tasks of the user's own runtime, each wrapped in \
             bridge::rt::watched, the bridge names the slow polls (the watched call's site, \
             {users_site}, in its warning with feature tracing) and the held runtime"
        ),
        Some(Check {
            met: users.slow_polls > 0 && users.held > 0,
            value: format!("{} named, {} held", users.slow_polls, users.held),
            bound: "slow polls named >= 1 and held-runtime reports >= 1".into(),
            detail: describe("inline, user's runtime", &users),
        }),
    );
    let silent = Judged::once(
        "with the same decode on rayon (bridge::spawn), the bridge names nothing",
        Some(Check {
            met: bridged.slow_polls == 0 && bridged.held == 0,
            value: format!("{} named", bridged.slow_polls + bridged.held),
            bound: "slow polls and held-runtime reports == 0".into(),
            detail: describe(BASELINE, &bridged),
        }),
    );
    let (b_reads, i_reads) = (bridged.reads.clone(), inline.reads.clone());
    let m = Measurement::of(1, [(BASELINE, b_reads), (INLINE, i_reads)]);
    Ok(ScenarioReport {
        name: "watch",
        varied: format!(
            "where a decode of a row group's size (calibrated to {} ms of CPU) runs: inline on \
             the I/O runtime's workers (inline), or on rayon through bridge::spawn (bridge); \
             the bridge's watch of the I/O side on (slow-poll threshold {slow:?})",
            WATCH_DECODE.as_millis()
        ),
        fixed: format!(
            "the query runtime of `wall`, wrapped as an IoRuntime (IoRuntime::from_handle) and \
             under bridge::rt::watch; {WATCH_QUERIES} queries spawned at once with \
             IoRuntime::spawn (at {site}), each {READS} reads of the same object store, each \
             read followed by the decode; one run per variant, inline first; then the inline \
             decode again as tasks of the same runtime spawned with tokio (no IoRuntime), \
             each wrapped in bridge::rt::watched (at {users_site})."
        ),
        measure: Measure::ms("read", None),
        rows: rows("watch", &m),
        judged: vec![named, users_named, silent],
        notes: vec![
            describe(INLINE, &inline),
            describe(BASELINE, &bridged),
            describe("inline, user's runtime", &users),
        ],
        ..Default::default()
    })
}

/// If a tokio runtime, the delay server or its timer thread cannot be started.
pub fn run(settings: &Settings) -> io::Result<Vec<ScenarioReport>> {
    warm_up_rayon();
    let rounds = harness::calibrate(DECODE_TARGET, |n| decode(n, n));
    let cost = harness::median_time(101, |k| decode(k, rounds));
    let server = DelayServer::start()?;
    let addr = server.addr;
    let rt = harness::runtime(WORKERS, "queries")?;
    // The unloaded reads: queries one at a time, without decode.
    let floor =
        (0..FLOOR_QUERIES).filter_map(|_| rt.block_on(iteration(addr, 1, Decode::Inline, 0)));
    let mut floor: Vec<f64> = floor.flatten().collect();
    floor.sort_by(f64::total_cmp);

    let cpus = super::cpus();
    let bounds = bounds_note(cost, cpus);
    let recorder = Recorder::new();
    let mut variants = [
        recorder.variant(BASELINE, &rt, addr, Decode::Bridge, rounds),
        recorder.variant(TOKIO_RAYON, &rt, addr, Decode::TokioRayon, rounds),
        recorder.variant(SPAWN_BLOCKING, &rt, addr, Decode::SpawnBlocking, rounds),
        recorder.variant(INLINE, &rt, addr, Decode::Inline, rounds),
    ];
    let m = measure(&mut variants, 1, settings, None);
    drop(variants);

    let nominal_ns = DELAY.as_secs_f64() * 1e9;
    let fixed = format!(
        "a tokio multi-thread runtime with {WORKERS} workers drives the queries; rayon's \
         global pool has {} threads; {cpus} CPUs; all warmed up. Per iteration: {QUERIES} \
         queries spawned at once, each connecting to the object store on 127.0.0.1 and making \
         {READS} sequential reads ({REQUEST}-byte request, {RESPONSE}-byte response), each \
         followed by a decode ({rounds} xorshift-multiply rounds, {:.0} µs on an idle \
         thread). The store, in this process, answers each request {:.1} ms after it arrived \
         (a timer thread of its own, no rounding to tokio's tick). A read's duration runs from \
         writing the request to having the response, so a response that waits for a busy \
         worker counts. Unloaded read ({FLOOR_QUERIES} queries one at a time, no decode): p50 \
         {:.2} ms, p99 {:.2} ms.",
        rayon::current_num_threads(),
        cost.as_secs_f64() * 1e6,
        ms(nominal_ns),
        ms(percentile(&floor, 0.5)),
        ms(percentile(&floor, 0.99)),
    );

    let wall_goal = "bridge wall time at most 1.05x tokio-rayon's";
    let read_scenario = |name, which, what, rows| ScenarioReport {
        name,
        varied: varied(),
        fixed: format!(
            "the same rounds as `wall`; one sample per round and variant: the {which} duration \
             of that round's {} reads, in ms (nominal {:.2} ms).",
            QUERIES * READS,
            ms(nominal_ns)
        ),
        measure: Measure::ms(what, None),
        rows,
        ..Default::default()
    };
    let wall = rows("wall", &m);
    let p50 = rows("read-p50", &recorder.read_percentiles(&m, 0.5));
    let p99 = rows("read-p99", &recorder.read_percentiles(&m, 0.99));
    let table = summary(&wall, &p50, &p99, &recorder);
    drop(rt);
    let watch = watch_scenario(addr, rounds, cost)?;
    drop(server);

    Ok(vec![
        ScenarioReport {
            name: "wall",
            varied: varied(),
            fixed: format!(
                "{fixed} One operation is one iteration ({QUERIES} queries x {READS} reads): \
                 the table is its wall time in ms."
            ),
            measure: Measure {
                what: "wall",
                per: "/iteration",
                ..Measure::ms("", None)
            },
            goals: vec![Goal::new(TOKIO_RAYON, 1.0 / WALL_SLACK, wall_goal)],
            notes: vec![bounds, recorder.census.note(", everything warmed up")],
            rows: wall,
            ..Default::default()
        },
        ScenarioReport {
            budgets: vec![Budget {
                max_ns: READ_SLACK * nominal_ns,
                text: "bridge read p50 at most 1.5x the nominal 2 ms",
            }],
            ..read_scenario("read-p50", "median", "read p50", p50)
        },
        ScenarioReport {
            notes: vec![table],
            ..read_scenario("read-p99", "99th percentile", "read p99", p99)
        },
        watch,
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timer_fires_in_deadline_order_and_not_early() {
        let timer = Timer::start().unwrap();
        let start = Instant::now();
        let late = timer.shared.at(start + Duration::from_millis(6));
        let early = timer.shared.at(start + Duration::from_millis(3));
        futures::executor::block_on(early).unwrap();
        assert!(start.elapsed() >= Duration::from_millis(3));
        futures::executor::block_on(late).unwrap();
        assert!(start.elapsed() >= Duration::from_millis(6));
        let pending = timer.shared.at(start + Duration::from_secs(60));
        drop(timer);
        assert!(futures::executor::block_on(pending).is_err());
    }

    #[test]
    fn every_decode_route_reads_through_the_delay_server() {
        let server = DelayServer::start().unwrap();
        let rt = harness::runtime(WORKERS, "queries").unwrap();
        warm_up_rayon();
        use Decode::*;
        for how in [Bridge, TokioRayon, SpawnBlocking, Inline] {
            let reads = rt.block_on(iteration(server.addr, 3, how, 1_000)).unwrap();
            assert_eq!(reads.len(), 3 * READS, "{how:?}");
            let nominal = DELAY.as_secs_f64() * 1e9;
            assert!(reads.iter().all(|&ns| ns >= nominal), "{how:?}: {reads:?}");
        }
    }
}
