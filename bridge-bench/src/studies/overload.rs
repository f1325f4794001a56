//! The overload study: an async service offered 0.5x to 2x the CPU work the machine can do,
//! each request one CPU step and one loopback read, with I/O-only probes beside them; the
//! step runs where each variant puts it (see [`varied`] and [`fixed`]). Each (variant, load)
//! cell runs in a fresh process ([`in_child`]), so its peak RSS is its own.

use super::echo::connect;
use crate::busy::kernel;
use crate::harness::{self, Measurement, Settings, warm_up_rayon};
use crate::harness::{child_reply, child_spec, in_child};
use crate::proc::{CpuTicks, load_average, memory_kib, os_threads, thread_nice};
use crate::progress;
use crate::report::{BASELINE, Check, Judged, Measure, ScenarioReport, rows};
use crate::stats::{Summary, percentile};
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::hint::black_box;
use std::io::{self, Read as _, Write as _};
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const STUDY: &str = "overload";
const WORKERS: usize = 2;
/// The backend's answer time; the CPU time of one step on an idle thread.
const DELAY: Duration = Duration::from_millis(2);
const STEP_TARGET: Duration = Duration::from_millis(1);
/// Bytes of a request's body, held until its step ends.
const BODY: usize = 8 * 1024;
const PROBE_RATE: f64 = 200.0;
/// The pool threads' nice value in every cell but the contrast variant's.
const POOL_NICE: u8 = 10;
/// The bounded variants' `Limit::new(4 x rayon threads)`.
const BOUND_PER_THREAD: usize = 4;
/// How long after the window the latencies are read; the longest drain after the cutoff.
const GRACE: Duration = Duration::from_millis(100);
const DRAIN_TIMEOUT: Duration = Duration::from_secs(30);
/// Backend connections opened and used once before a cell starts.
const WARM_CONNECTIONS: usize = 32;
/// Goals: bounded I/O p99 at 2x over 0.5x; bridge's throughput over the bounded variants' at
/// 0.5x-0.9x; the unbounded queue's growth from the window's middle to its end.
const IO_SLACK: f64 = 1.5;
const THROUGHPUT_SLACK: f64 = 1.05;
const GROWTH: f64 = 1.5;

/// The loads of the full run (x capacity) with their scenarios; the quick run's.
const LOADS: [(f64, &str); 5] = [
    (0.5, "io-p99-at-0.5x"),
    (0.9, "io-p99-at-0.9x"),
    (1.0, "io-p99-at-1.0x"),
    (1.5, "io-p99-at-1.5x"),
    (2.0, "io-p99-at-2x"),
];
const QUICK_LOADS: [f64; 3] = [0.5, 0.9, 2.0];

/// Where a request's CPU step runs (see [`varied`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
enum Variant {
    Inline,
    SpawnBlocking,
    Bridge,
    BridgeNice0,
    Wait,
    Shed,
}

use Variant::{Bridge, BridgeNice0, Inline, Shed, SpawnBlocking, Wait};
const VARIANTS: [Variant; 6] = [Bridge, Wait, Shed, BridgeNice0, SpawnBlocking, Inline];

impl Variant {
    fn name(self) -> &'static str {
        match self {
            Self::Inline => "inline",
            Self::SpawnBlocking => "spawn_blocking",
            Self::Bridge => BASELINE,
            Self::BridgeNice0 => "bridge (pool at nice 0)",
            Self::Wait => "bridge limit-wait",
            Self::Shed => "bridge limit-shed",
        }
    }

    fn bounded(self) -> bool {
        matches!(self, Self::Wait | Self::Shed)
    }

    /// The nice value its cell's pool threads ask for.
    fn pool_nice(self) -> Option<u8> {
        (self != Self::BridgeNice0).then_some(POOL_NICE)
    }
}

/// What a cell runs, handed to its child process.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
struct Spec {
    variant: Variant,
    rate: f64,
    window_ms: u64,
    passes: u32,
    bound: usize,
}

/// What one cell measured, handed back by its child. Latencies in ns, memory in KiB; the
/// unfinished count with their latency so far; `queued_*` is arrived, not shed, step not done.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
struct Outcome {
    arrived: f64,
    served_in_window: f64,
    shed: f64,
    errors: f64,
    full_p50: f64,
    full_p99: f64,
    full_unfinished: f64,
    io_p99: f64,
    io_unfinished: f64,
    queued_half: f64,
    queued_end: f64,
    limit_max: f64,
    rss_start_kib: f64,
    hwm_kib: f64,
    threads_end: f64,
    generator_lag: f64,
    /// Shares of all CPUs (percent) of this process and of everything else.
    cpu_this: f64,
    cpu_others: f64,
    /// How late the generator read the queue at the window's middle and end.
    half_late: f64,
    end_late: f64,
    /// The pool threads' nice range as read on them, and those that refused to lower it.
    pool_nice_lo: f64,
    pool_nice_hi: f64,
    pool_refused: f64,
}

/// The passes of [`step`] that take about [`STEP_TARGET`] on this thread.
fn calibrate_passes() -> u32 {
    let mut body = vec![1u8; BODY];
    harness::calibrate(STEP_TARGET, |n| step(&mut body, n as u32)) as u32
}

/// The CPU step: `passes` FNV-1a hashes of the body, each fed back into its first byte.
fn step(body: &mut [u8], passes: u32) -> u64 {
    let mut hash = 0;
    for _ in 0..black_box(passes) {
        hash = kernel(black_box(&*body));
        if let Some(first) = body.first_mut() {
            *first = hash as u8;
        }
    }
    hash
}

/// Rayon's pool with, given `nice`, a start handler that lowers each thread to it, counting
/// in `refused` the threads where that failed (off Linux, all).
fn pool_builder(nice: Option<u8>, refused: &Arc<AtomicU64>) -> rayon::ThreadPoolBuilder {
    let builder = rayon::ThreadPoolBuilder::new();
    let Some(nice) = nice else {
        return builder;
    };
    let refused = Arc::clone(refused);
    builder.start_handler(move |_| {
        if bridge::cpu::lower_thread_priority(nice).is_err() {
            refused.fetch_add(1, Relaxed);
        }
    })
}

/// The lowest and highest nice value; NaN for both if any is unread.
fn nice_range(nices: &[Option<i32>]) -> (f64, f64) {
    let read: Option<Vec<f64>> = nices.iter().map(|n| n.map(f64::from)).collect();
    let range = read.and_then(|read| Summary::of(&read));
    range.map_or((f64::NAN, f64::NAN), |s| (s.min, s.max))
}

/// The backend: a thread per connection that echoes each 8-byte request [`DELAY`] later.
struct Backend {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
}

impl Backend {
    fn start() -> io::Result<Self> {
        let listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        let addr = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = Arc::clone(&stop);
        let accept = thread::Builder::new()
            .name("backend-accept".to_owned())
            .spawn(move || {
                for stream in listener.incoming() {
                    if stopped.load(Relaxed) {
                        return;
                    }
                    if let Ok(stream) = stream {
                        let serving = thread::Builder::new().name("backend".to_owned());
                        let _ = serving.stack_size(64 * 1024).spawn(move || serve(stream));
                    }
                }
            })?;
        Ok(Self {
            addr,
            stop,
            accept: Some(accept),
        })
    }
}

/// Answers requests on one connection until the client closes it.
fn serve(mut stream: std::net::TcpStream) {
    let mut request = [0u8; 8];
    if stream.set_nodelay(true).is_ok() {
        while stream.read_exact(&mut request).is_ok() {
            thread::sleep(DELAY);
            if stream.write_all(&request).is_err() {
                return;
            }
        }
    }
}

impl Drop for Backend {
    fn drop(&mut self) {
        self.stop.store(true, Relaxed);
        let _ = std::net::TcpStream::connect(self.addr); // wakes the accept loop
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
    }
}

/// The service's side of the backend: idle connections, reused by one read at a time.
struct Connections {
    addr: SocketAddr,
    idle: Mutex<Vec<tokio::net::TcpStream>>,
}

impl Connections {
    fn idle(&self) -> std::sync::MutexGuard<'_, Vec<tokio::net::TcpStream>> {
        self.idle.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// One loopback read: the id written, and read back [`DELAY`] later.
    async fn read(&self, id: u64) -> io::Result<()> {
        let idle = self.idle().pop();
        let mut stream = match idle {
            Some(stream) => stream,
            None => connect(self.addr).await?,
        };
        stream.write_all(&id.to_le_bytes()).await?;
        let mut reply = [0u8; 8];
        stream.read_exact(&mut reply).await?;
        if u64::from_le_bytes(reply) != id {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "wrong reply"));
        }
        self.idle().push(stream);
        Ok(())
    }
}

/// A latency slot not yet filled, and the slot of a request answered "busy".
const PENDING: u64 = 0;
const SHED: u64 = u64::MAX;

/// What the requests of one cell share.
struct Service {
    variant: Variant,
    passes: u32,
    limit: Option<bridge::cpu::Limit>,
    backend: Connections,
    /// Set after the cutoff: what is still queued skips its step and read.
    stop: AtomicBool,
    shed: AtomicU64,
    steps_done: AtomicU64,
    errors: AtomicU64,
    /// Request tasks spawned and not yet ended.
    outstanding: AtomicU64,
    /// Latency in ns (at least 1), [`PENDING`] or [`SHED`], per request and probe.
    full: Vec<AtomicU64>,
    probes: Vec<AtomicU64>,
}

/// Counts a request task as ended when dropped.
struct Ends(Arc<Service>);

impl Drop for Ends {
    fn drop(&mut self) {
        self.0.outstanding.fetch_sub(1, Relaxed);
    }
}

impl Service {
    /// Of the first `arrived` requests, those not shed whose step is not done.
    fn queued(&self, arrived: usize) -> u64 {
        let done = self.shed.load(Relaxed) + self.steps_done.load(Relaxed);
        (arrived as u64).saturating_sub(done)
    }

    fn run_step(&self, mut body: Vec<u8>) -> u64 {
        if self.stop.load(Relaxed) {
            return 0;
        }
        let hash = step(&mut body, self.passes);
        drop(body);
        self.steps_done.fetch_add(1, Relaxed);
        hash
    }

    /// Ends a request with its read: its latency into `slot`, or an error.
    async fn read(&self, id: u64, slot: &AtomicU64, at: Instant) {
        match self.backend.read(id).await {
            Ok(()) => {
                let ns = at.elapsed().as_nanos().min(u128::from(SHED - 1)) as u64;
                slot.store(ns.max(1), Relaxed);
            }
            Err(_) => _ = self.errors.fetch_add(1, Relaxed),
        }
    }
}

/// A full request: its CPU step where the variant runs it, then its read.
async fn full_request(service: Arc<Service>, id: usize, at: Instant, body: Vec<u8>) {
    let _ends = Ends(Arc::clone(&service));
    let s = Arc::clone(&service);
    let work = move || s.run_step(body);
    let hash = match (service.variant, &service.limit) {
        (Inline, _) => Some(work()),
        (SpawnBlocking, _) => tokio::task::spawn_blocking(work).await.ok(),
        (Bridge | BridgeNice0, _) => Some(bridge::spawn(work).await),
        (Wait, Some(limit)) => Some(limit.spawn(work).await),
        (Shed, Some(limit)) => match limit.try_spawn(work) {
            Ok(task) => Some(task.await),
            Err(_) => {
                service.shed.fetch_add(1, Relaxed);
                return service.full[id].store(SHED, Relaxed);
            }
        },
        (Wait | Shed, None) => None,
    };
    if hash.is_none() {
        service.errors.fetch_add(1, Relaxed);
        return;
    }
    black_box(hash);
    if !service.stop.load(Relaxed) {
        service.read(id as u64, &service.full[id], at).await;
    }
}

/// An I/O-only probe: the read alone.
async fn probe(service: Arc<Service>, id: usize, at: Instant) {
    let _ends = Ends(Arc::clone(&service));
    service
        .read(1 << 40 | id as u64, &service.probes[id], at)
        .await;
}

/// The sorted latencies of `slots` at the cutoff `at`, the unfinished with their wait so far (and
/// counted), the shed left out.
fn latencies(slots: &[AtomicU64], due: impl Fn(usize) -> Instant, at: Instant) -> (Vec<f64>, f64) {
    let mut unfinished = 0.0;
    let mut out: Vec<f64> = slots
        .iter()
        .enumerate()
        .filter_map(|(k, slot)| match slot.load(Relaxed) {
            SHED => None,
            PENDING => {
                unfinished += 1.0;
                Some((at - due(k)).as_nanos() as f64)
            }
            ns => Some(ns as f64),
        })
        .collect();
    out.sort_by(f64::total_cmp);
    (out, unfinished)
}

/// Runs one cell: a backend, the service, the open-loop generator here, the cutoff, a drain.
fn run_cell(spec: &Spec) -> io::Result<Outcome> {
    let backend = Backend::start()?;
    let rt = harness::runtime(WORKERS, "service")?;
    let window = Duration::from_millis(spec.window_ms);
    let n_full = (spec.rate * window.as_secs_f64()).floor() as usize;
    let n_probes = (PROBE_RATE * window.as_secs_f64()).floor() as usize;
    let slots = |n| (0..n).map(|_| AtomicU64::new(PENDING)).collect();
    let service = Arc::new(Service {
        variant: spec.variant,
        passes: spec.passes,
        limit: (spec.variant.bounded()).then(|| bridge::cpu::Limit::new(spec.bound)),
        backend: Connections {
            addr: backend.addr,
            idle: Mutex::new(Vec::with_capacity(WARM_CONNECTIONS)),
        },
        stop: AtomicBool::new(false),
        shed: AtomicU64::new(0),
        steps_done: AtomicU64::new(0),
        errors: AtomicU64::new(0),
        outstanding: AtomicU64::new(0),
        full: slots(n_full),
        probes: slots(n_probes),
    });
    // At once, so that each read opens a connection of its own.
    rt.block_on(async {
        let reads: Vec<_> = (0..WARM_CONNECTIONS as u64)
            .map(|k| {
                let service = Arc::clone(&service);
                tokio::spawn(async move { service.backend.read(1 << 41 | k).await })
            })
            .collect();
        for read in reads {
            read.await.map_err(io::Error::other)??;
        }
        io::Result::Ok(())
    })?;

    let handle = rt.handle().clone();
    let mut out = Outcome {
        rss_start_kib: memory_kib(false).map_or(f64::NAN, |k| k as f64),
        ..Outcome::default()
    };
    let t0 = Instant::now() + Duration::from_millis(5);
    let full_at = |k: usize| t0 + Duration::from_secs_f64(k as f64 / spec.rate);
    let probe_at = |k: usize| t0 + Duration::from_secs_f64((k as f64 + 0.5) / PROBE_RATE);
    let (half, end) = (t0 + window / 2, t0 + window);
    let (mut next_full, mut next_probe, mut half_seen) = (0, 0, false);
    let cpu_start = CpuTicks::now();
    loop {
        let now = Instant::now();
        while next_full < n_full && full_at(next_full) <= now {
            let at = full_at(next_full);
            out.generator_lag = out.generator_lag.max((now - at).as_nanos() as f64);
            let body = vec![next_full as u8 | 1; BODY];
            service.outstanding.fetch_add(1, Relaxed);
            handle.spawn(full_request(Arc::clone(&service), next_full, at, body));
            next_full += 1;
        }
        while next_probe < n_probes && probe_at(next_probe) <= now {
            let at = probe_at(next_probe);
            out.generator_lag = out.generator_lag.max((now - at).as_nanos() as f64);
            service.outstanding.fetch_add(1, Relaxed);
            handle.spawn(probe(Arc::clone(&service), next_probe, at));
            next_probe += 1;
        }
        let queued = service.queued(next_full) as f64;
        let sampled = Instant::now();
        if let Some(limit) = &service.limit {
            out.limit_max = out.limit_max.max(limit.in_flight() as f64);
        }
        if !half_seen && now >= half {
            (out.queued_half, out.half_late) = (queued, (sampled - half).as_nanos() as f64);
            half_seen = true;
        }
        if now >= end {
            (out.queued_end, out.end_late) = (queued, (sampled - end).as_nanos() as f64);
            break;
        }
        let mut due = if half_seen { end } else { half };
        if next_full < n_full {
            due = due.min(full_at(next_full));
        }
        if next_probe < n_probes {
            due = due.min(probe_at(next_probe));
        }
        thread::sleep(due.saturating_duration_since(Instant::now()));
    }
    out.threads_end = os_threads().map_or(f64::NAN, f64::from);
    (out.cpu_this, out.cpu_others) = CpuTicks::now()
        .zip(cpu_start)
        .map_or((f64::NAN, f64::NAN), |(now, start)| {
            now.since(start).shares()
        });
    thread::sleep((end + GRACE).saturating_duration_since(Instant::now()));
    let cutoff = Instant::now();
    out.hwm_kib = memory_kib(true).map_or(f64::NAN, |k| k as f64);
    let (full, full_unfinished) = latencies(&service.full, full_at, cutoff);
    let (io, io_unfinished) = latencies(&service.probes, probe_at, cutoff);
    out.served_in_window = service
        .full
        .iter()
        .enumerate()
        .filter(|(k, slot)| {
            let ns = slot.load(Relaxed);
            ns != SHED && ns != PENDING && full_at(*k) + Duration::from_nanos(ns) <= end
        })
        .count() as f64;
    out.arrived = n_full as f64;
    out.shed = service.shed.load(Relaxed) as f64;
    (out.full_p50, out.full_p99) = (percentile(&full, 0.5), percentile(&full, 0.99));
    out.io_p99 = percentile(&io, 0.99);
    (out.full_unfinished, out.io_unfinished) = (full_unfinished, io_unfinished);

    service.stop.store(true, Relaxed);
    let drain = Instant::now();
    while service.outstanding.load(Relaxed) > 0 {
        if drain.elapsed() > DRAIN_TIMEOUT {
            return Err(io::Error::other(format!(
                "{} requests of {:?} did not drain in {DRAIN_TIMEOUT:?}",
                service.outstanding.load(Relaxed),
                spec.variant
            )));
        }
        thread::sleep(Duration::from_millis(1));
    }
    out.errors = service.errors.load(Relaxed) as f64;
    drop(service);
    drop(rt);
    drop(backend);
    Ok(out)
}

#[derive(Debug, Clone, Copy)]
struct Cell {
    variant: Variant,
    load: f64,
    window: Duration,
    out: Outcome,
}

impl Cell {
    fn throughput(&self) -> f64 {
        self.out.served_in_window / self.window.as_secs_f64()
    }
}

fn find(cells: &[Cell], variant: Variant, load: f64) -> Option<&Cell> {
    let at = |c: &&Cell| c.variant == variant && (c.load - load).abs() < 1e-9;
    cells.iter().find(at)
}

fn all_at<'a>(cells: &'a [Cell], variants: &[Variant], load: f64) -> Option<Vec<&'a Cell>> {
    variants.iter().map(|&v| find(cells, v, load)).collect()
}

/// A queue length read `late` ns after its moment, with the delay when it is over 10 ms.
fn sample(queued: f64, late: f64) -> String {
    if late > 10e6 {
        format!("{queued:.0} (read {} ms late)", ms(late))
    } else {
        format!("{queued:.0}")
    }
}

fn ms(ns: f64) -> String {
    format!("{:.2}", ns / 1e6)
}

fn mib(kib: f64) -> String {
    format!("{:.1}", kib / 1024.0)
}

/// The table of one load: a line per variant.
fn table(cells: &[Cell], load: f64, capacity: f64, bound: usize) -> String {
    let mut out = format!(
        "At {load}x capacity ({:.0} full requests/s offered, {PROBE_RATE:.0} I/O-only probes/s):\n\n\
         | variant | completed req/s | busy req/s | full p50 ms | full p99 ms | unfinished | \
         I/O-only p99 ms | queued at ½ window | queued at end | in the limit, max (bound \
         {bound}) | OS threads | peak RSS MiB (growth) | CPU: this process / others |\n\
         | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | \
         ---: |",
        load * capacity,
    );
    for c in VARIANTS.into_iter().filter_map(|v| find(cells, v, load)) {
        let o = &c.out;
        let in_limit = c.variant.bounded().then(|| format!("{:.0}", o.limit_max));
        let in_limit = in_limit.unwrap_or_else(|| "-".to_owned());
        let _ = write!(
            out,
            "\n| {} | {:.0} | {:.0} | {} | {} | {:.0} | {} | {} | {} | {in_limit} | {:.0} | {} \
             (+{}) | {:.0}% / {:.0}% |",
            c.variant.name(),
            c.throughput(),
            o.shed / c.window.as_secs_f64(),
            ms(o.full_p50),
            ms(o.full_p99),
            o.full_unfinished,
            ms(o.io_p99),
            sample(o.queued_half, o.half_late),
            sample(o.queued_end, o.end_late),
            o.threads_end,
            mib(o.hwm_kib),
            mib(o.hwm_kib - o.rss_start_kib),
            o.cpu_this,
            o.cpu_others,
        );
    }
    out
}

/// `; others' CPU in these cells up to N%`, empty if not read.
fn others(cells: &[&Cell]) -> String {
    let others = cells.iter().map(|c| c.out.cpu_others);
    match others.filter(|x| x.is_finite()).fold(f64::NAN, f64::max) {
        max if max.is_finite() => format!("; others' CPU in these cells up to {max:.0}%"),
        _ => String::new(),
    }
}

/// The study's goals in words, in the order [`goals`] checks them.
const GOALS: [&str; 4] = [
    "at 2x capacity the bounded variants keep I/O-only p99 within 1.5x of their own at 0.5x",
    "at 2x capacity the bounded variants' work in the pool stays under the bound",
    "the unbounded variants' queue grows with the run's length at 2x capacity",
    "at 0.5x-0.9x capacity the bounded variants cost at most 1.05x bridge::spawn's throughput",
];

/// The goals of [`GOALS`] on this run's cells (`None` where not measured).
fn goals(cells: &[Cell], bound: usize) -> Vec<Option<Check>> {
    let bounded = [Wait, Shed];
    let check = |met, each: Vec<String>, needed: String, involved: &[&Cell], (value, bound)| {
        let detail = format!("{}; {needed}{}", each.join(", "), others(involved));
        Some(Check {
            met,
            value,
            bound,
            detail,
        })
    };
    let io = all_at(cells, &bounded, 0.5).zip(all_at(cells, &bounded, 2.0));
    let io = io.and_then(|(lo, hi)| {
        let pairs: Vec<(&Cell, &Cell)> = lo.iter().copied().zip(hi.iter().copied()).collect();
        let ratio = |&(l, h): &(&Cell, &Cell)| h.out.io_p99 / l.out.io_p99;
        let each = pairs.iter().map(|p @ (l, h)| {
            let (lo, hi, name) = (ms(l.out.io_p99), ms(h.out.io_p99), h.variant.name());
            let r = ratio(p);
            format!("{name} {hi} ms at 2x against {lo} ms at 0.5x = {r:.2}x")
        });
        let worst = pairs.iter().map(ratio).fold(f64::NAN, f64::max);
        let met = pairs.iter().all(|p| ratio(p) <= IO_SLACK);
        let needed = format!("needed at most {IO_SLACK:.2}x");
        let vl = (format!("highest {worst:.2}x"), format!("<= {IO_SLACK:.2}x"));
        check(met, each.collect(), needed, &[lo, hi].concat(), vl)
    });
    let in_limit = all_at(cells, &bounded, 2.0).and_then(|hi| {
        let worst = hi.iter().map(|c| c.out.limit_max).fold(f64::NAN, f64::max);
        let each = hi
            .iter()
            .map(|c| format!("{} at most {:.0}", c.variant.name(), c.out.limit_max));
        let mut each: Vec<String> = each.collect();
        let head = "tasks in the limit, queued or running, at every generator tick: ";
        each[0].insert_str(0, head);
        let met = hi.iter().all(|c| c.out.limit_max <= bound as f64);
        let vl = (format!("highest {worst:.0}"), format!("<= {bound}"));
        check(met, each, format!("bound {bound}"), &hi, vl)
    });
    let unbounded = [Bridge, BridgeNice0, SpawnBlocking, Inline];
    let growing = all_at(cells, &unbounded, 2.0).and_then(|grow| {
        let growth = |c: &Cell| c.out.queued_end / c.out.queued_half;
        let each = grow.iter().map(|c| {
            let (o, name) = (&c.out, c.variant.name());
            let h = sample(o.queued_half, o.half_late);
            let e = sample(o.queued_end, o.end_late);
            format!("{name} {h} at ½ window, {e} at its end ({:.2}x)", growth(c))
        });
        let worst = grow.iter().map(|c| growth(c)).fold(f64::NAN, f64::min);
        let met = grow.iter().all(|c| {
            c.out.queued_end >= GROWTH * c.out.queued_half && c.out.queued_end > 4.0 * bound as f64
        });
        let needed = format!(
            "needed at least {GROWTH:.1}x from the middle to the end, and over 4x the bound"
        );
        let value = format!("lowest {worst:.2}x");
        let limit = format!(">= {GROWTH:.1}x, to over {}", 4 * bound);
        check(met, each.collect(), needed, &grow, (value, limit))
    });
    let (mut costs, mut each, mut involved) = (Vec::new(), Vec::new(), Vec::new());
    for load in [0.5, 0.9] {
        for v in bounded {
            if let Some([base, c]) = all_at(cells, &[Bridge, v], load).as_deref() {
                involved.extend([*base, *c]);
                let (base, mine, name) = (base.throughput(), c.throughput(), v.name());
                let cost = base / mine;
                costs.push(cost);
                each.push(format!(
                    "{name} at {load}x: {mine:.0} req/s against {base:.0}, {cost:.3}x"
                ));
            }
        }
    }
    let worst = costs.iter().copied().fold(f64::NAN, f64::max);
    let throughput = (!costs.is_empty()).then(|| {
        let met = costs.iter().all(|&c| c <= THROUGHPUT_SLACK);
        let needed = format!("needed at most {THROUGHPUT_SLACK:.2}x");
        let value = format!("highest {worst:.3}x");
        let limit = format!("<= {THROUGHPUT_SLACK:.2}x");
        check(met, each, needed, &involved, (value, limit))
    });
    vec![io, in_limit, growing, throughput.flatten()]
}

/// The pool threads' nice value per cell, naming the cells not as set up.
fn pool_note(cells: &[Cell]) -> String {
    let off: Vec<String> = cells
        .iter()
        .filter(|c| {
            let want = c.variant.pool_nice().map_or(0.0, f64::from);
            !(c.out.pool_nice_lo == want && c.out.pool_nice_hi == want)
        })
        .map(|c| {
            let (name, lo, hi) = (c.variant.name(), c.out.pool_nice_lo, c.out.pool_nice_hi);
            format!("{name} at {}x: nice {lo:.0} to {hi:.0}", c.load)
        })
        .collect();
    let refused: f64 = cells.iter().map(|c| c.out.pool_refused).sum();
    let named = (!off.is_empty()).then(|| format!(" (not in {})", off.join(", ")));
    let named = named.unwrap_or_default();
    format!(
        "The pool's priority, read on each of its threads (/proc/thread-self/stat): as set up \
         (nice {POOL_NICE}, nice 0 for `{}`) in {} of {} cells{named}; \
         lower_thread_priority({POOL_NICE}) failed on {refused:.0} pool threads.",
        BridgeNice0.name(),
        cells.len() - off.len(),
        cells.len(),
    )
}

/// What the numbers say beyond the goals, computed from them.
fn reading(cells: &[Cell]) -> String {
    let mut out = String::from("Reading the numbers:");
    let at_2x = |v: Variant| find(cells, v, 2.0);
    if let (Some(n10), Some(n0)) = (at_2x(Bridge), at_2x(BridgeNice0)) {
        let _ = write!(
            out,
            " at 2x, bridge::spawn's I/O-only p99 was {} ms with the pool at nice {POOL_NICE} \
             and {} ms at nice 0 (completed {:.0} and {:.0} req/s): a pool at a lower \
             priority yields the CPUs to a tokio worker that wakes.",
            ms(n10.out.io_p99),
            ms(n0.out.io_p99),
            n10.throughput(),
            n0.throughput(),
        );
    }
    if let Some(c) = at_2x(Wait) {
        let _ = write!(
            out,
            " A limit bounds the work in rayon's queue, not the requests: `bridge limit-wait` \
             held at most {:.0} tasks in the limit while {:.0} requests waited for room at the \
             end; only shedding or back-pressure upstream bounds them.",
            c.out.limit_max, c.out.queued_end,
        );
    }
    if let Some(c) = at_2x(Shed) {
        let _ = write!(
            out,
            " `bridge limit-shed` answered {:.0} of {:.0} requests \"busy\" and served the rest \
             with a p99 of {} ms.",
            c.out.shed,
            c.out.arrived,
            ms(c.out.full_p99),
        );
    }
    if let (Some(i), Some(b)) = (at_2x(Inline), at_2x(SpawnBlocking)) {
        let _ = write!(
            out,
            " Inline, the probes queue behind the CPU steps on the same workers (I/O-only p99 \
             {} ms, {:.0} unfinished); spawn_blocking starts a thread per step that finds none \
             idle ({:.0} OS threads at the end).",
            ms(i.out.io_p99),
            i.out.io_unfinished,
            b.out.threads_end,
        );
    }
    let busy = cells.iter().filter(|c| c.out.cpu_others > 10.0).count();
    let errors: f64 = cells.iter().map(|c| c.out.errors).sum();
    let lags = cells.iter().map(|c| c.out.generator_lag);
    let lag = lags.fold(0.0, f64::max);
    let _ = write!(
        out,
        " Other work took over 10% of the CPUs in {busy} of {} cells (there a nominal load was \
         higher); {errors:.0} requests failed; the generator was at most {} ms late, and \
         latencies count from the due time.",
        cells.len(),
        ms(lag),
    );
    out
}

fn varied(table: &str) -> String {
    format!(
        "where a request's CPU step runs: `{}` is bridge::spawn (rayon's global pool at nice \
         {POOL_NICE}, no bound); `{}` awaits bridge::cpu::Limit::spawn (waits for room, FIFO), `{}` \
         calls Limit::try_spawn and answers \"busy\" at once when the limit is full (both on \
         the same pool); `{}` is bridge::spawn again, no bound, on a global pool built without \
         the priority handler, so its threads run at the default priority (nice 0) like every \
         other thread: the contrast; `{}` is tokio::task::spawn_blocking; `{}` runs it on the \
         tokio worker that polls the request (tokio's workers and blocking threads run at the \
         default priority in every cell). This table: the p99 latency of {table}, in ms.",
        Bridge.name(),
        Wait.name(),
        Shed.name(),
        BridgeNice0.name(),
        SpawnBlocking.name(),
        Inline.name(),
    )
}

fn fixed(
    loads: &[f64],
    window: Duration,
    passes: u32,
    cost: Duration,
    capacity: f64,
    bound: usize,
) -> String {
    let cpus = super::cpus();
    let loads: Vec<String> = loads.iter().map(f64::to_string).collect();
    format!(
        "{cpus} CPUs; the service is a tokio multi-thread runtime with {WORKERS} workers; \
         rayon's global pool has {} threads, built in each cell's process with a start handler \
         that calls bridge::cpu::lower_thread_priority({POOL_NICE}) (as the guide advises for \
         a service's CPU pool), except for `{}`. A full request carries a {} KiB body, runs \
         one CPU step over it ({passes} passes of FNV-1a, {:.3} ms on an idle thread), then \
         one loopback read that a backend thread answers {} ms later. Capacity = min(CPUs, \
         rayon threads, tokio workers) / step = {capacity:.0} requests/s. Offered loads: {} x \
         capacity, open loop (a generator thread spawns each request when due); I/O-only \
         probes (the read alone) arrive at {PROBE_RATE:.0}/s. Latency counts from the \
         scheduled arrival. Each cell: {} ms of arrivals, queues read at the middle and the \
         end, latencies {} ms later (unanswered requests count with their wait so far). The \
         bounded variants use Limit::new({bound}). Every cell runs in a fresh process, so peak \
         RSS is its VmHWM (growth over the window's start in parentheses); CPU is the share of \
         all CPUs used by this process and by everything else (/proc/stat).",
        rayon::current_num_threads(),
        BridgeNice0.name(),
        BODY / 1024,
        cost.as_secs_f64() * 1e3,
        DELAY.as_millis(),
        loads.join(", "),
        window.as_millis(),
        GRACE.as_millis(),
    )
}

fn scenario_name(load: f64) -> &'static str {
    let named = LOADS.iter().find(|&&(l, _)| (l - load).abs() < 1e-9);
    named.map_or("io-p99", |&(_, name)| name)
}

const SAMPLING: &str = "One cell per variant and load (and per run), each in a fresh process, \
                        its value from all of that cell's requests; variants run in an order \
                        rotated per load.";

fn measurement(cells: &[Cell], load: f64, value: fn(&Outcome) -> f64) -> Measurement {
    let variants = VARIANTS
        .into_iter()
        .filter_map(|v| Some((v.name(), vec![value(&find(cells, v, load)?.out)])));
    Measurement::of(1, variants)
}

/// Runs every variant at every load, each cell in a child process; in a child, its cell.
pub fn run(settings: &Settings) -> io::Result<Vec<ScenarioReport>> {
    if let Some(spec) = child_spec(STUDY) {
        let spec: Spec = spec?;
        let refused = Arc::new(AtomicU64::new(0));
        let builder = pool_builder(spec.variant.pool_nice(), &refused);
        builder.build_global().map_err(io::Error::other)?;
        // A thread runs its start handler before any job, so after a broadcast all have run.
        warm_up_rayon();
        let (pool_nice_lo, pool_nice_hi) = nice_range(&rayon::broadcast(|_| thread_nice()));
        child_reply(&Outcome {
            pool_nice_lo,
            pool_nice_hi,
            pool_refused: refused.load(Relaxed) as f64,
            ..run_cell(&spec)?
        });
    }
    let (loads, window) = if settings.is_quick() {
        (QUICK_LOADS.to_vec(), Duration::from_millis(600))
    } else {
        (LOADS.map(|(load, _)| load).to_vec(), Duration::from_secs(4))
    };
    warm_up_rayon();
    let passes = calibrate_passes();
    let mut body = vec![1u8; BODY];
    let cost = harness::median_time(51, |_| step(&mut body, passes));
    let cpus = super::cpus();
    let cpu_threads = cpus.min(rayon::current_num_threads()).min(WORKERS);
    let capacity = cpu_threads as f64 / cost.as_secs_f64();
    let bound = BOUND_PER_THREAD * rayon::current_num_threads();
    let load_before = load_average();

    let mut cells = Vec::new();
    for (k, &load) in loads.iter().enumerate() {
        progress::measurement_started(VARIANTS.len(), VARIANTS.iter().map(|v| v.name()));
        progress::step_done(true);
        for j in 0..VARIANTS.len() {
            let variant = VARIANTS[(j + k) % VARIANTS.len()];
            let spec = Spec {
                variant,
                rate: load * capacity,
                window_ms: window.as_millis() as u64,
                passes,
                bound,
            };
            let out = in_child(STUDY, &spec)?;
            cells.push(Cell {
                variant,
                load,
                window,
                out,
            });
            progress::step_done(false);
        }
    }
    let load_after = load_average();

    let first = fixed(&loads, window, passes, cost, capacity, bound);
    let mut reports: Vec<ScenarioReport> = loads
        .iter()
        .enumerate()
        .map(|(k, &load)| {
            let name = scenario_name(load);
            let fixed = if k == 0 {
                first.clone()
            } else {
                format!(
                    "as in `{}`, at {load}x capacity ({:.0} full requests/s offered).",
                    scenario_name(loads[0]),
                    load * capacity
                )
            };
            ScenarioReport {
                name,
                varied: varied("the I/O-only probes"),
                fixed,
                measure: Measure::ms("I/O-only p99", Some(SAMPLING)),
                notes: vec![table(&cells, load, capacity, bound)],
                rows: rows(name, &measurement(&cells, load, |o| o.io_p99)),
                ..Default::default()
            }
        })
        .collect();
    let name = "full-p99-at-2x";
    let judged = GOALS.iter().zip(goals(&cells, bound));
    reports.push(ScenarioReport {
        name,
        varied: varied("the full requests served (not shed)"),
        fixed: "the cells at 2x capacity of the scenarios above; a request still unanswered at \
                the cutoff counts with its latency so far."
            .to_owned(),
        measure: Measure::ms("full-request p99", Some(SAMPLING)),
        judged: judged
            .map(|(text, check)| Judged::once(*text, check))
            .collect(),
        notes: vec![
            pool_note(&cells),
            reading(&cells),
            format!(
                "Load average (/proc/loadavg, 1/5/15 min) before the first cell {}, after the \
                 last {}: anything else running on this machine competes for the same CPUs \
                 and lowers the true capacity.",
                load_before.as_deref().unwrap_or("not read"),
                load_after.as_deref().unwrap_or("not read"),
            ),
        ],
        rows: rows(name, &measurement(&cells, 2.0, |o| o.full_p99)),
        ..Default::default()
    });
    Ok(reports)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pool_threads_run_at_the_nice_value_asked_for() {
        assert_eq!(nice_range(&[Some(10), Some(12)]), (10.0, 12.0));
        assert!(nice_range(&[Some(10), None]).0.is_nan());
        assert!(nice_range(&[]).1.is_nan());
        let own = thread_nice();
        for nice in [Some(POOL_NICE), None] {
            // A process already above POOL_NICE cannot lower its threads to it.
            if nice.is_some_and(|n| own.is_some_and(|own| own > i32::from(n))) {
                continue;
            }
            let refused = Arc::new(AtomicU64::new(0));
            let pool = pool_builder(nice, &refused).num_threads(2).build().unwrap();
            let nices = pool.broadcast(|_| thread_nice());
            // Off Linux every thread refuses, and the pool still runs.
            let Some(own) = own else {
                assert_eq!(refused.load(Relaxed), if nice.is_some() { 2 } else { 0 });
                continue;
            };
            let want = f64::from(nice.map_or(own, i32::from));
            assert_eq!(nice_range(&nices), (want, want));
            assert_eq!(refused.load(Relaxed), 0, "{nice:?}");
        }
        // The pool's threads were lowered, not this one.
        assert_eq!(thread_nice(), own);
    }

    #[test]
    fn goals_judge_the_cells_of_a_run() {
        // (served, I/O p99) at 0.5x-0.9x; (queued at ½, at the end, limit max, I/O p99) at 2x.
        let cell = |variant, load: f64, out| Cell {
            variant,
            load,
            window: Duration::from_secs(1),
            out,
        };
        let mut cells = Vec::new();
        for load in [0.5, 0.9] {
            // Shed costs 1.11x at 0.9x; nice 0 serves 3x (were it the baseline, 3x).
            let shed = if load < 0.7 { 1000.0 } else { 900.0 };
            for (v, served) in [(Bridge, 1e3), (Wait, 1e3), (Shed, shed), (BridgeNice0, 3e3)] {
                let (served_in_window, io_p99) = (served * load, 2e6);
                let out = Outcome {
                    served_in_window,
                    io_p99,
                    ..Outcome::default()
                };
                cells.push(cell(v, load, out));
            }
        }
        for (v, (queued_half, queued_end, limit_max, io_p99)) in [
            (Wait, (400.0, 800.0, 8.0, 2.5e6)),
            (Shed, (8.0, 7.0, 8.0, 3.5e6)),
            (Bridge, (400.0, 800.0, 0.0, 2e6)),
            (BridgeNice0, (410.0, 820.0, 0.0, 6e6)),
            (SpawnBlocking, (400.0, 790.0, 0.0, 9e6)),
            (Inline, (400.0, 700.0, 0.0, 9e8)),
        ] {
            let out = Outcome {
                queued_half,
                queued_end,
                limit_max,
                io_p99,
                ..Outcome::default()
            };
            cells.push(cell(v, 2.0, out));
        }
        let verdicts = |cells: &[Cell]| -> Vec<Option<bool>> {
            goals(cells, 8)
                .iter()
                .map(|g| g.as_ref().map(|c| c.met))
                .collect()
        };
        let all = [Some(false), Some(true), Some(true), Some(false)];
        assert_eq!(verdicts(&cells), all);
        // A queue of the pool at nice 0 that does not grow misses the growth goal.
        let mut flat = cells.clone();
        let nice0 = flat
            .iter_mut()
            .find(|c| c.variant == BridgeNice0 && c.load == 2.0);
        let nice0 = nice0.unwrap();
        nice0.out.queued_end = nice0.out.queued_half;
        assert_eq!(verdicts(&flat)[2], Some(false));
        // Without the cells at 2x, those goals are not measured.
        cells.retain(|c| c.load < 1.0);
        assert_eq!(verdicts(&cells), [None, None, None, Some(false)]);
    }

    #[test]
    fn the_step_is_deterministic_and_depends_on_its_body() {
        let (mut a, mut b) = (vec![3u8; 64], vec![3u8; 64]);
        assert_eq!(step(&mut a, 5), step(&mut b, 5));
        let mut c = vec![4u8; 64];
        assert_ne!(step(&mut a, 5), step(&mut c, 5));
        assert!(calibrate_passes() >= 1);
    }

    #[test]
    fn every_variant_serves_a_light_load_and_sheds_only_when_full() {
        warm_up_rayon();
        for variant in VARIANTS {
            let spec = Spec {
                variant,
                rate: 100.0,
                window_ms: 200,
                passes: 1,
                bound: 8,
            };
            let out = run_cell(&spec).unwrap();
            // Nothing fails, is shed or left unfinished; every read takes the backend's delay
            // at least; all are served but the last few, which may still be in flight when
            // the window closes.
            let delay = DELAY.as_nanos() as f64;
            let clean =
                (out.arrived, out.errors, out.shed, out.full_unfinished) == (20.0, 0.0, 0.0, 0.0);
            let slow = out.full_p50 >= delay;
            let served = out.served_in_window >= 10.0;
            assert!(clean && slow && served, "{variant:?}: {out:?}");
        }
        // A limit of 1 with steps far longer than the gap between arrivals must shed.
        let spec = Spec {
            variant: Shed,
            rate: 400.0,
            window_ms: 200,
            passes: calibrate_passes() * 5,
            bound: 1,
        };
        let out = run_cell(&spec).unwrap();
        assert!(out.shed > 0.0, "{out:?}");
        assert!(out.limit_max <= 1.0, "{out:?}");
    }
}
