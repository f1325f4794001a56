//! The overload study: an async service offered more CPU work than the machine can do.
//!
//! A tokio multi-thread runtime with [`WORKERS`] workers serves requests that each carry an
//! [`BODY`]-byte body, run one CPU step over it (hashing it, calibrated at start to about
//! [`STEP_TARGET`]) and then make one loopback read that a backend answers [`DELAY`] later.
//! The machine's capacity is known from the calibration: the CPU threads that can run steps
//! at once (the CPUs, rayon's threads and the runtime's workers, whichever is fewest) over
//! the step's time. Requests arrive at a fixed rate from 0.5x to 2x that capacity, open
//! loop: a generator thread outside the runtime spawns each request as its own task when it
//! is due, whatever became of the earlier ones, and every latency is measured from the
//! request's scheduled arrival, so a generator that fell behind cannot hide queueing
//! (coordinated omission). Alongside, I/O-only probe requests (the read alone) arrive at
//! [`PROBE_RATE`] per second on the same runtime: their latency shows whether the runtime's
//! workers stay responsive under the CPU load.
//!
//! Where the CPU step runs is what we vary: inline on the tokio worker, on tokio's blocking
//! pool (`spawn_blocking`), on rayon through `bridge::spawn` without a bound, and through a
//! `bridge::cpu::Limit` that either waits for room (`limit.spawn(f).await`: the task waits
//! in line) or sheds (`try_spawn`, answering "busy" at once when full).
//!
//! Every cell's process builds rayon's global pool before anything uses it, as the guide
//! advises for a service's CPU pool: with a start handler that lowers each pool thread to
//! nice [`POOL_NICE`] (`bridge::cpu::lower_thread_priority`), so that a tokio worker that
//! wakes gets a CPU before the pool's threads. One contrast variant, `bridge::spawn` on a
//! pool built without the handler (nice 0, the default), shows what the priority changes.
//!
//! Each (variant, load) cell runs in a fresh copy of this binary ([`in_child`]), so that its
//! peak memory (`VmHWM` of /proc/self/status) is its own, and no thread, queue or kept heap
//! of one cell is left for the next.

use crate::busy::kernel;
use crate::harness::{self, warm_up_tokio};
use crate::harness::{Measurement, Settings, child_reply, child_spec, in_child, warm_up_rayon};
use crate::proc::{CpuTicks, load_average, os_threads, self_status, thread_nice};
use crate::progress;
use crate::report::{BASELINE, Check, Judged, Measure, ScenarioReport, rows};
use crate::stats::percentile;
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
use tokio::runtime::{Builder, Runtime};

/// The study's name, on the command line and for its child processes.
const STUDY: &str = "overload";

/// Workers of the service's tokio runtime.
const WORKERS: usize = 2;

/// The backend's answer time: it replies this long after it received a request.
const DELAY: Duration = Duration::from_millis(2);

/// The CPU time one step is calibrated to on an idle thread.
const STEP_TARGET: Duration = Duration::from_millis(1);

/// Bytes of a request's body: allocated (and written) when the request arrives, hashed by
/// its CPU step and freed after it, so every request waiting for its step holds one.
const BODY: usize = 8 * 1024;

/// I/O-only probe requests per second, whatever the load.
const PROBE_RATE: f64 = 200.0;

/// The nice value of rayon's pool threads in every cell but the contrast variant's.
const POOL_NICE: u8 = 10;

/// The bound of the limited variants per rayon thread: `Limit::new(4 x threads)`.
const BOUND_PER_THREAD: usize = 4;

/// How long after the arrival window closes the requests still in flight may finish before
/// the latencies are read; one still unfinished counts with its latency so far.
const GRACE: Duration = Duration::from_millis(100);

/// The longest a cell waits for its requests to drain once they are told to stop.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(30);

/// Connections to the backend opened (and used once) before a cell starts; more are opened
/// when a read finds none idle.
const WARM_CONNECTIONS: usize = 32;

/// The most the bounded variants' I/O-only p99 at 2x may exceed their own at 0.5x (goal).
const IO_SLACK: f64 = 1.5;

/// The most the unbounded `bridge::spawn`'s throughput may exceed the bounded variants' at
/// 0.5x-0.9x (goal).
const THROUGHPUT_SLACK: f64 = 1.05;

/// How much an unbounded variant's queue at the end of the window must exceed the one at its
/// middle to count as growing with the run's length (goal); a queue that grows linearly
/// from empty doubles.
const GROWTH: f64 = 1.5;

/// The offered loads of the full run, as multiples of capacity, with the name of the
/// scenario that charts each one's I/O-only p99.
const LOADS: [(f64, &str); 5] = [
    (0.5, "io-p99-at-0.5x"),
    (0.9, "io-p99-at-0.9x"),
    (1.0, "io-p99-at-1.0x"),
    (1.5, "io-p99-at-1.5x"),
    (2.0, "io-p99-at-2x"),
];

/// The loads of the quick run: those the goals need.
const QUICK_LOADS: [f64; 3] = [0.5, 0.9, 2.0];

/// Where a request's CPU step runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
enum Variant {
    /// On the tokio worker that polls the request.
    Inline,
    /// On tokio's blocking pool, `spawn_blocking`.
    SpawnBlocking,
    /// On rayon's global pool, `bridge::spawn`, no bound.
    Bridge,
    /// As [`Bridge`](Self::Bridge), with the pool's threads at the default priority (nice 0):
    /// the contrast to the pool at [`POOL_NICE`] that every other variant runs on.
    BridgeNice0,
    /// Through a `bridge::cpu::Limit`: `limit.spawn(f).await`, whose task waits for room.
    Wait,
    /// Through a `bridge::cpu::Limit`: `try_spawn`, answering "busy" at once when full.
    Shed,
}

/// Every variant, in the order of the tables.
const VARIANTS: [Variant; 6] = [
    Variant::Bridge,
    Variant::Wait,
    Variant::Shed,
    Variant::BridgeNice0,
    Variant::SpawnBlocking,
    Variant::Inline,
];

impl Variant {
    /// The variant's name in the tables.
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

    /// Whether it goes through a `bridge::cpu::Limit`.
    fn bounded(self) -> bool {
        matches!(self, Self::Wait | Self::Shed)
    }

    /// The nice value its cell's process asks for rayon's pool threads: `None` leaves them at
    /// the default priority.
    fn pool_nice(self) -> Option<u8> {
        (self != Self::BridgeNice0).then_some(POOL_NICE)
    }
}

/// How long and which loads: the full run and the quick one.
#[derive(Debug, Clone, PartialEq)]
struct Plan {
    /// The offered loads, as multiples of capacity.
    loads: Vec<f64>,
    /// The arrival window of every cell.
    window: Duration,
}

impl Plan {
    /// The quick plan for the quick settings (few rounds), the full plan otherwise.
    fn of(settings: &Settings) -> Self {
        if settings.rounds <= Settings::quick().rounds {
            Self {
                loads: QUICK_LOADS.to_vec(),
                window: Duration::from_millis(600),
            }
        } else {
            Self {
                loads: LOADS.iter().map(|&(load, _)| load).collect(),
                window: Duration::from_secs(4),
            }
        }
    }
}

/// What a cell runs, handed to its child process.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
struct Spec {
    variant: Variant,
    /// Full requests per second.
    rate: f64,
    /// The arrival window.
    window_ms: u64,
    /// Passes of [`kernel`] over the body in one CPU step.
    passes: u32,
    /// The limit of the bounded variants.
    bound: usize,
}

impl Spec {
    fn window(&self) -> Duration {
        Duration::from_millis(self.window_ms)
    }
}

/// What one cell measured; its child hands it back to the parent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
struct Outcome {
    /// Full requests that arrived (all of them in the window).
    arrived: f64,
    /// Full requests served (CPU step and read done) within the window.
    served_in_window: f64,
    /// Full requests answered "busy" (shed variant), of those that arrived.
    shed: f64,
    /// Requests (full or probe) whose read or step failed.
    errors: f64,
    /// Latency percentiles of the served full requests, ns; those unfinished at the cutoff
    /// count with their latency so far.
    full_p50: f64,
    full_p99: f64,
    /// Full requests (not shed) still unfinished at the cutoff.
    full_unfinished: f64,
    /// Latency percentiles of the I/O-only probes, ns, likewise.
    io_p50: f64,
    io_p99: f64,
    io_unfinished: f64,
    /// Requests that arrived and were not shed, whose CPU step had not finished: at the
    /// middle of the window, at its end, and the most seen at any generator tick.
    queued_half: f64,
    queued_end: f64,
    queued_max: f64,
    /// The most tasks the limit held at any generator tick (bounded variants; else 0).
    limit_max: f64,
    /// VmRSS when the arrival window opened, and VmHWM (peak RSS) at the cutoff, KiB.
    rss_start_kib: f64,
    hwm_kib: f64,
    /// The process's OS threads when the window closed.
    threads_end: f64,
    /// The most the generator spawned a request after it was due, ns.
    generator_lag: f64,
    /// The share of all CPUs' time during the window used by this process and by everything
    /// else (other processes, the kernel's own work), in percent; NaN if not read.
    cpu_this: f64,
    cpu_others: f64,
    /// How long after the middle and the end of the window the generator read the queue,
    /// ns: a generator starved of CPU reads it late, when more steps have finished.
    half_late: f64,
    end_late: f64,
    /// The lowest and the highest nice value of rayon's pool threads, each read on its
    /// thread once the pool had started; NaN if not read.
    pool_nice_lo: f64,
    pool_nice_hi: f64,
    /// Pool threads on which lowering the priority failed (always 0 for a pool left at the
    /// default priority, which does not ask).
    pool_refused: f64,
}

/// The passes of [`step`] that take about [`STEP_TARGET`] on this thread.
fn calibrate_passes() -> u32 {
    let mut body = vec![1u8; BODY];
    harness::calibrate(STEP_TARGET, |n| step(&mut body, n as u32)) as u32
}

/// The CPU step: `passes` FNV-1a hashes of the body, each fed back into its first byte so
/// that no pass can be skipped or hoisted.
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

/// Rayon's pool as a cell's process builds it: rayon's default thread count, and with `nice`
/// a start handler that lowers each thread to it with `bridge::cpu::lower_thread_priority`,
/// counting in `refused` the threads where that failed (off Linux, every one: the pool then
/// runs at the default priority, and the cell still runs).
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

/// The lowest and the highest of the pool threads' nice values; NaN for both if any of them
/// could not be read.
fn nice_range(nices: &[Option<i32>]) -> (f64, f64) {
    let read: Option<Vec<f64>> = nices.iter().map(|n| n.map(f64::from)).collect();
    match read {
        Some(read) if !read.is_empty() => (
            read.iter().copied().fold(f64::INFINITY, f64::min),
            read.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        ),
        _ => (f64::NAN, f64::NAN),
    }
}

/// Builds rayon's global pool for a cell of `variant` ([`pool_builder`]) and starts its
/// threads; returns the lowest and highest nice value they run at, each read on its thread,
/// and the threads on which lowering the priority failed.
fn set_up_global_pool(variant: Variant) -> io::Result<(f64, f64, f64)> {
    let refused = Arc::new(AtomicU64::new(0));
    pool_builder(variant.pool_nice(), &refused)
        .build_global()
        .map_err(io::Error::other)?;
    // A thread runs its start handler before any job, so after a broadcast every handler has
    // run.
    warm_up_rayon();
    let (lo, hi) = nice_range(&rayon::broadcast(|_| thread_nice()));
    Ok((lo, hi, refused.load(Relaxed) as f64))
}

/// The backend: a TCP server on 127.0.0.1 in this process, with a plain thread per
/// connection (none of the service runtime's workers), that answers each 8-byte request
/// with the same 8 bytes [`DELAY`] after it arrived.
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
        let accept = thread::Builder::new()
            .name("backend-accept".to_owned())
            .spawn({
                let stop = Arc::clone(&stop);
                move || {
                    for stream in listener.incoming() {
                        if stop.load(Relaxed) {
                            return;
                        }
                        let Ok(stream) = stream else { continue };
                        // A connection whose thread cannot start is dropped: its reads fail
                        // and are counted as errors.
                        let _ = thread::Builder::new()
                            .name("backend".to_owned())
                            .stack_size(64 * 1024)
                            .spawn(move || serve(stream));
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
    if stream.set_nodelay(true).is_err() {
        return;
    }
    let mut request = [0u8; 8];
    while stream.read_exact(&mut request).is_ok() {
        thread::sleep(DELAY);
        if stream.write_all(&request).is_err() {
            return;
        }
    }
}

impl Drop for Backend {
    fn drop(&mut self) {
        self.stop.store(true, Relaxed);
        // Wakes the accept loop so that it sees the flag.
        let _ = std::net::TcpStream::connect(self.addr);
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
    /// One loopback read: write the request's id, read it back [`DELAY`] later.
    async fn read(&self, id: u64) -> io::Result<()> {
        let idle = self
            .idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        let mut stream = match idle {
            Some(stream) => stream,
            None => {
                let stream = tokio::net::TcpStream::connect(self.addr).await?;
                stream.set_nodelay(true)?;
                stream
            }
        };
        stream.write_all(&id.to_le_bytes()).await?;
        let mut reply = [0u8; 8];
        stream.read_exact(&mut reply).await?;
        if u64::from_le_bytes(reply) != id {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "wrong reply"));
        }
        self.idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(stream);
        Ok(())
    }
}

/// A latency slot not yet filled.
const PENDING: u64 = 0;
/// The slot of a request answered "busy".
const SHED: u64 = u64::MAX;

/// What the requests of one cell share.
struct Service {
    variant: Variant,
    passes: u32,
    limit: Option<bridge::cpu::Limit>,
    backend: Connections,
    /// Set after the cutoff: what is still queued skips its step and read, so the cell
    /// drains at once.
    stop: AtomicBool,
    /// Full requests spawned so far.
    arrived: AtomicU64,
    shed: AtomicU64,
    /// CPU steps finished.
    steps_done: AtomicU64,
    errors: AtomicU64,
    /// Request tasks spawned and not yet ended.
    outstanding: AtomicU64,
    /// Each full request's latency in ns (at least 1), [`PENDING`] or [`SHED`].
    full: Vec<AtomicU64>,
    /// Each probe's latency in ns (at least 1), or [`PENDING`].
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
    /// Requests that arrived, were not shed, and whose step has not finished.
    fn queued(&self) -> u64 {
        let done = self.shed.load(Relaxed) + self.steps_done.load(Relaxed);
        self.arrived.load(Relaxed).saturating_sub(done)
    }

    /// The CPU step of one request, where the pool runs it.
    fn run_step(&self, mut body: Vec<u8>) -> u64 {
        if self.stop.load(Relaxed) {
            return 0;
        }
        let hash = step(&mut body, self.passes);
        drop(body);
        self.steps_done.fetch_add(1, Relaxed);
        hash
    }

    /// Records a latency into `slot`.
    fn record(slot: &AtomicU64, at: Instant) {
        let ns = at.elapsed().as_nanos().min(u128::from(SHED - 1)) as u64;
        slot.store(ns.max(1), Relaxed);
    }
}

/// A full request: its CPU step where the variant runs it, then its read.
async fn full_request(service: Arc<Service>, id: usize, at: Instant, body: Vec<u8>) {
    let _ends = Ends(Arc::clone(&service));
    let s = Arc::clone(&service);
    let hash = match service.variant {
        Variant::Inline => service.run_step(body),
        Variant::SpawnBlocking => {
            match tokio::task::spawn_blocking(move || s.run_step(body)).await {
                Ok(hash) => hash,
                Err(_) => {
                    service.errors.fetch_add(1, Relaxed);
                    return;
                }
            }
        }
        Variant::Bridge | Variant::BridgeNice0 => bridge::spawn(move || s.run_step(body)).await,
        Variant::Wait | Variant::Shed => {
            let Some(limit) = &service.limit else {
                service.errors.fetch_add(1, Relaxed);
                return;
            };
            if service.variant == Variant::Wait {
                limit.spawn(move || s.run_step(body)).await
            } else {
                match limit.try_spawn(move || s.run_step(body)) {
                    Ok(task) => task.await,
                    Err(refused) => {
                        drop(refused);
                        service.shed.fetch_add(1, Relaxed);
                        service.full[id].store(SHED, Relaxed);
                        return;
                    }
                }
            }
        }
    };
    black_box(hash);
    if service.stop.load(Relaxed) {
        return;
    }
    match service.backend.read(id as u64).await {
        Ok(()) => Service::record(&service.full[id], at),
        Err(_) => {
            service.errors.fetch_add(1, Relaxed);
        }
    }
}

/// An I/O-only probe: the read alone.
async fn probe(service: Arc<Service>, id: usize, at: Instant) {
    let _ends = Ends(Arc::clone(&service));
    match service.backend.read(1 << 40 | id as u64).await {
        Ok(()) => Service::record(&service.probes[id], at),
        Err(_) => {
            service.errors.fetch_add(1, Relaxed);
        }
    }
}

/// The service's runtime: [`WORKERS`] workers, every worker started, its blocking pool
/// holding one thread.
fn service_runtime() -> io::Result<Runtime> {
    let rt = Builder::new_multi_thread()
        .worker_threads(WORKERS)
        .thread_name("service")
        .enable_all()
        .build()?;
    warm_up_tokio(rt.handle());
    Ok(rt)
}

/// Runs one cell in this process: a backend, a service runtime, the open-loop generator on
/// this thread, then the cutoff and a drain.
fn run_cell(spec: &Spec) -> io::Result<Outcome> {
    let backend = Backend::start()?;
    let rt = service_runtime()?;
    let window = spec.window().as_secs_f64();
    let n_full = (spec.rate * window).floor() as usize;
    let n_probes = (PROBE_RATE * window).floor() as usize;
    let connections = rt.block_on(async {
        let mut idle = Vec::with_capacity(WARM_CONNECTIONS);
        for _ in 0..WARM_CONNECTIONS {
            let stream = tokio::net::TcpStream::connect(backend.addr).await?;
            stream.set_nodelay(true)?;
            idle.push(stream);
        }
        io::Result::Ok(Connections {
            addr: backend.addr,
            idle: Mutex::new(idle),
        })
    })?;
    let service = Arc::new(Service {
        variant: spec.variant,
        passes: spec.passes,
        limit: spec
            .variant
            .bounded()
            .then(|| bridge::cpu::Limit::new(spec.bound)),
        backend: connections,
        stop: AtomicBool::new(false),
        arrived: AtomicU64::new(0),
        shed: AtomicU64::new(0),
        steps_done: AtomicU64::new(0),
        errors: AtomicU64::new(0),
        outstanding: AtomicU64::new(0),
        full: (0..n_full).map(|_| AtomicU64::new(PENDING)).collect(),
        probes: (0..n_probes).map(|_| AtomicU64::new(PENDING)).collect(),
    });
    // Every warm connection makes one read, so the backend's threads are running.
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
    let full_at = |k: usize| Duration::from_secs_f64(k as f64 / spec.rate);
    let probe_at = |k: usize| Duration::from_secs_f64((k as f64 + 0.5) / PROBE_RATE);
    let rss_start_kib = self_status("VmRSS");
    let t0 = Instant::now() + Duration::from_millis(5);
    let half = t0 + spec.window() / 2;
    let end = t0 + spec.window();
    let (mut next_full, mut next_probe) = (0usize, 0usize);
    let mut out = Outcome {
        rss_start_kib,
        ..Outcome::default()
    };
    let mut half_seen = false;
    let cpu_start = CpuTicks::now();
    loop {
        let now = Instant::now();
        while next_full < n_full && t0 + full_at(next_full) <= now {
            let at = t0 + full_at(next_full);
            out.generator_lag = out.generator_lag.max((now - at).as_nanos() as f64);
            // The body arrives with the request: written here, on the generator's thread.
            let body = vec![next_full as u8 | 1; BODY];
            service.arrived.fetch_add(1, Relaxed);
            service.outstanding.fetch_add(1, Relaxed);
            handle.spawn(full_request(Arc::clone(&service), next_full, at, body));
            next_full += 1;
        }
        while next_probe < n_probes && t0 + probe_at(next_probe) <= now {
            let at = t0 + probe_at(next_probe);
            out.generator_lag = out.generator_lag.max((now - at).as_nanos() as f64);
            service.outstanding.fetch_add(1, Relaxed);
            handle.spawn(probe(Arc::clone(&service), next_probe, at));
            next_probe += 1;
        }
        let queued = service.queued() as f64;
        let sampled = Instant::now();
        out.queued_max = out.queued_max.max(queued);
        if let Some(limit) = &service.limit {
            out.limit_max = out.limit_max.max(limit.in_flight() as f64);
        }
        if !half_seen && now >= half {
            out.queued_half = queued;
            out.half_late = (sampled - half).as_nanos() as f64;
            half_seen = true;
        }
        if now >= end {
            out.queued_end = queued;
            out.end_late = (sampled - end).as_nanos() as f64;
            break;
        }
        let mut due = end;
        if next_full < n_full {
            due = due.min(t0 + full_at(next_full));
        }
        if next_probe < n_probes {
            due = due.min(t0 + probe_at(next_probe));
        }
        if !half_seen {
            due = due.min(half);
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

    // The cutoff: what has not finished counts with its latency so far.
    let cutoff = Instant::now();
    out.hwm_kib = self_status("VmHWM");
    let so_far = |at: Instant| (cutoff - at).as_nanos() as f64;
    let mut full = Vec::with_capacity(n_full);
    for (k, slot) in service.full.iter().enumerate() {
        let at = t0 + full_at(k);
        match slot.load(Relaxed) {
            SHED => {}
            PENDING => {
                out.full_unfinished += 1.0;
                full.push(so_far(at));
            }
            ns => {
                if full_at(k) + Duration::from_nanos(ns) <= spec.window() {
                    out.served_in_window += 1.0;
                }
                full.push(ns as f64);
            }
        }
    }
    let mut io = Vec::with_capacity(n_probes);
    for (k, slot) in service.probes.iter().enumerate() {
        match slot.load(Relaxed) {
            PENDING => {
                out.io_unfinished += 1.0;
                io.push(so_far(t0 + probe_at(k)));
            }
            ns => io.push(ns as f64),
        }
    }
    full.sort_by(f64::total_cmp);
    io.sort_by(f64::total_cmp);
    out.arrived = n_full as f64;
    out.shed = service.shed.load(Relaxed) as f64;
    out.full_p50 = percentile(&full, 0.5);
    out.full_p99 = percentile(&full, 0.99);
    out.io_p50 = percentile(&io, 0.5);
    out.io_p99 = percentile(&io, 0.99);

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

/// One cell as measured by its child process, with what it was.
#[derive(Debug, Clone, Copy)]
struct Cell {
    variant: Variant,
    load: f64,
    rate: f64,
    window: Duration,
    out: Outcome,
}

impl Cell {
    fn throughput(&self) -> f64 {
        self.out.served_in_window / self.window.as_secs_f64()
    }

    fn busy_per_s(&self) -> f64 {
        self.out.shed / self.window.as_secs_f64()
    }
}

fn find(cells: &[Cell], variant: Variant, load: f64) -> Option<&Cell> {
    cells
        .iter()
        .find(|c| c.variant == variant && (c.load - load).abs() < 1e-9)
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
fn table(cells: &[Cell], load: f64, bound: usize) -> String {
    let mut out = format!(
        "At {load}x capacity ({:.0} full requests/s offered, {PROBE_RATE:.0} I/O-only probes/s):\n\n\
         | variant | completed req/s | busy req/s | full p50 ms | full p99 ms | unfinished | \
         I/O-only p99 ms | queued at ½ window | queued at end | in the limit, max (bound \
         {bound}) | OS threads | peak RSS MiB (growth) | CPU: this process / others |\n\
         | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | \
         ---: |\n",
        cells
            .iter()
            .find(|c| (c.load - load).abs() < 1e-9)
            .map_or(f64::NAN, |c| c.rate),
    );
    for variant in VARIANTS {
        let Some(c) = find(cells, variant, load) else {
            continue;
        };
        let o = &c.out;
        let _ = writeln!(
            out,
            "| {} | {:.0} | {:.0} | {} | {} | {:.0} | {} | {} | {} | {} | {:.0} | {} (+{}) | \
             {:.0}% / {:.0}% |",
            variant.name(),
            c.throughput(),
            c.busy_per_s(),
            ms(o.full_p50),
            ms(o.full_p99),
            o.full_unfinished,
            ms(o.io_p99),
            sample(o.queued_half, o.half_late),
            sample(o.queued_end, o.end_late),
            if variant.bounded() {
                format!("{:.0}", o.limit_max)
            } else {
                "-".to_owned()
            },
            o.threads_end,
            mib(o.hwm_kib),
            mib(o.hwm_kib - o.rss_start_kib),
            o.cpu_this,
            o.cpu_others,
        );
    }
    out.pop();
    out
}

/// How much of the CPUs everything else took during `cells`: `; others' CPU in these cells
/// up to N%`, empty if not read.
fn others(cells: &[&Cell]) -> String {
    let max = cells
        .iter()
        .map(|c| c.out.cpu_others)
        .filter(|x| x.is_finite())
        .fold(f64::NAN, f64::max);
    if max.is_finite() {
        format!("; others' CPU in these cells up to {max:.0}%")
    } else {
        String::new()
    }
}

/// The study's goals in words, in the order [`goals`] checks them.
const GOALS: [&str; 4] = [
    "at 2x capacity the bounded variants keep I/O-only p99 within 1.5x of their own at 0.5x",
    "at 2x capacity the bounded variants' work in the pool stays under the bound",
    "the unbounded variants' queue grows with the run's length at 2x capacity",
    "at 0.5x-0.9x capacity the bounded variants cost at most 1.05x bridge::spawn's throughput",
];

/// The study's goals, checked against the cells of this run: each met (`Some(true)`), missed
/// or not measured (`None`), with the numbers behind it, then the short figure: the value
/// (the worst case among the cells it judges) and the bound.
fn goals(cells: &[Cell], bound: usize) -> Vec<(Option<bool>, String, String, String)> {
    let bounded = [Variant::Wait, Variant::Shed];
    let unbounded = [
        Variant::Bridge,
        Variant::BridgeNice0,
        Variant::SpawnBlocking,
        Variant::Inline,
    ];
    let at = |vs: &[Variant], load| -> Option<Vec<&Cell>> {
        vs.iter().map(|&v| find(cells, v, load)).collect()
    };
    let joined = |parts: Vec<String>| parts.join(", ");
    let none = || (None, String::new(), String::new(), String::new());
    let mut out = Vec::new();

    out.push(match (at(&bounded, 0.5), at(&bounded, 2.0)) {
        (Some(lo), Some(hi)) => {
            let pairs: Vec<(&Cell, f64, f64)> = lo
                .iter()
                .zip(&hi)
                .map(|(l, h)| (*h, l.out.io_p99, h.out.io_p99))
                .collect();
            let detail = pairs.iter().map(|&(c, l, h)| {
                let name = c.variant.name();
                format!(
                    "{name} {} ms at 2x against {} ms at 0.5x = {:.2}x",
                    ms(h),
                    ms(l),
                    h / l
                )
            });
            let worst = pairs
                .iter()
                .map(|&(_, l, h)| h / l)
                .fold(f64::NAN, f64::max);
            (
                Some(pairs.iter().all(|&(_, l, h)| h <= IO_SLACK * l)),
                format!(
                    "{}; needed at most {IO_SLACK:.2}x{}",
                    joined(detail.collect()),
                    others(&[lo, hi].concat())
                ),
                format!("highest {worst:.2}x"),
                format!("<= {IO_SLACK:.2}x"),
            )
        }
        _ => none(),
    });

    out.push(match at(&bounded, 2.0) {
        Some(hi) => {
            let worst = hi.iter().map(|c| c.out.limit_max).fold(f64::NAN, f64::max);
            let detail = hi
                .iter()
                .map(|c| format!("{} at most {:.0}", c.variant.name(), c.out.limit_max));
            (
                Some(hi.iter().all(|c| c.out.limit_max <= bound as f64)),
                format!(
                    "tasks in the limit, queued or running, at every generator tick: {}; bound \
                     {bound}{}",
                    joined(detail.collect()),
                    others(&hi)
                ),
                format!("highest {worst:.0}"),
                format!("<= {bound}"),
            )
        }
        None => none(),
    });

    out.push(match at(&unbounded, 2.0) {
        Some(grow) => {
            let growth = |c: &Cell| c.out.queued_end / c.out.queued_half;
            let detail = grow.iter().map(|c| {
                format!(
                    "{} {} at ½ window, {} at its end ({:.2}x)",
                    c.variant.name(),
                    sample(c.out.queued_half, c.out.half_late),
                    sample(c.out.queued_end, c.out.end_late),
                    growth(c)
                )
            });
            let worst = grow.iter().map(|c| growth(c)).fold(f64::NAN, f64::min);
            (
                Some(grow.iter().all(|c| {
                    c.out.queued_end >= GROWTH * c.out.queued_half
                        && c.out.queued_end > 4.0 * bound as f64
                })),
                format!(
                    "{}; needed at least {GROWTH:.1}x from the middle to the end, and over 4x the \
                     bound{}",
                    joined(detail.collect()),
                    others(&grow)
                ),
                format!("lowest {worst:.2}x"),
                format!(">= {GROWTH:.1}x, to over {}", 4 * bound),
            )
        }
        None => none(),
    });

    let mut detail = Vec::new();
    let mut involved = Vec::new();
    for load in [0.5, 0.9] {
        for v in bounded {
            if let (Some(base), Some(c)) =
                (find(cells, Variant::Bridge, load), find(cells, v, load))
            {
                involved.extend([base, c]);
                let cost = base.throughput() / c.throughput();
                detail.push((
                    cost,
                    format!(
                        "{} at {load}x: {:.0} req/s against {:.0}, {cost:.3}x",
                        v.name(),
                        c.throughput(),
                        base.throughput()
                    ),
                ));
            }
        }
    }
    out.push(if detail.is_empty() {
        none()
    } else {
        let worst = detail.iter().map(|d| d.0).fold(f64::NAN, f64::max);
        (
            Some(detail.iter().all(|d| d.0 <= THROUGHPUT_SLACK)),
            format!(
                "{}; needed at most {THROUGHPUT_SLACK:.2}x{}",
                joined(detail.into_iter().map(|d| d.1).collect()),
                others(&involved)
            ),
            format!("highest {worst:.3}x"),
            format!("<= {THROUGHPUT_SLACK:.2}x"),
        )
    });
    out
}

/// The study's goals on this run, for the report (which counts them over the runs).
fn judged(cells: &[Cell], bound: usize) -> Vec<Judged> {
    GOALS
        .iter()
        .zip(goals(cells, bound))
        .map(|(text, (verdict, detail, value, bound))| {
            Judged::once(
                *text,
                verdict.map(|met| Check {
                    met,
                    value,
                    bound,
                    detail,
                }),
            )
        })
        .collect()
}

/// The nice value the pool threads of each cell ran at, as read on them: the cells whose
/// pool did not run as set up are named.
fn pool_note(cells: &[Cell]) -> String {
    let off: Vec<String> = cells
        .iter()
        .filter(|c| {
            let want = c.variant.pool_nice().map_or(0.0, f64::from);
            !(c.out.pool_nice_lo == want && c.out.pool_nice_hi == want)
        })
        .map(|c| {
            let (lo, hi) = (c.out.pool_nice_lo, c.out.pool_nice_hi);
            format!(
                "{} at {}x: nice {lo:.0} to {hi:.0}",
                c.variant.name(),
                c.load
            )
        })
        .collect();
    let refused: f64 = cells.iter().map(|c| c.out.pool_refused).sum();
    format!(
        "The pool's priority, read on each of its threads (/proc/thread-self/stat): as set up \
         (nice {POOL_NICE}, nice 0 for `{}`) in {} of {} cells{}; \
         lower_thread_priority({POOL_NICE}) failed on {refused:.0} pool threads.",
        Variant::BridgeNice0.name(),
        cells.len() - off.len(),
        cells.len(),
        if off.is_empty() {
            String::new()
        } else {
            format!(" (not in {})", off.join(", "))
        },
    )
}

/// What the numbers say beyond the goals, computed from them.
fn reading(cells: &[Cell]) -> String {
    let mut out = String::from("Reading the numbers:");
    let at_2x = |v: Variant| find(cells, v, 2.0);
    if let (Some(n10), Some(n0)) = (at_2x(Variant::Bridge), at_2x(Variant::BridgeNice0)) {
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
    if let Some(c) = at_2x(Variant::Wait) {
        let _ = write!(
            out,
            " A limit bounds the work in rayon's queue, not the requests: `bridge limit-wait` \
             held at most {:.0} tasks in the limit while {:.0} requests waited for room at the \
             end; only shedding or back-pressure upstream bounds them.",
            c.out.limit_max, c.out.queued_end,
        );
    }
    if let Some(c) = at_2x(Variant::Shed) {
        let _ = write!(
            out,
            " `bridge limit-shed` answered {:.0} of {:.0} requests \"busy\" and served the rest \
             with a p99 of {} ms.",
            c.out.shed,
            c.out.arrived,
            ms(c.out.full_p99),
        );
    }
    if let (Some(i), Some(b)) = (at_2x(Variant::Inline), at_2x(Variant::SpawnBlocking)) {
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
    let lag = cells
        .iter()
        .map(|c| c.out.generator_lag)
        .fold(0.0, f64::max);
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

fn varied() -> String {
    format!(
        "where a request's CPU step runs: `{}` is bridge::spawn (rayon's global pool at nice \
         {POOL_NICE}, no bound); `{}` awaits bridge::cpu::Limit::spawn (waits for room, FIFO), `{}` \
         calls Limit::try_spawn and answers \"busy\" at once when the limit is full (both on \
         the same pool); `{}` is bridge::spawn again, no bound, on a global pool built without \
         the priority handler, so its threads run at the default priority (nice 0) like every \
         other thread: the contrast; `{}` is tokio::task::spawn_blocking; `{}` runs it on the \
         tokio worker that polls the request (tokio's workers and blocking threads run at the \
         default priority in every cell). This table: the p99 latency of the I/O-only probes, \
         in ms.",
        Variant::Bridge.name(),
        Variant::Wait.name(),
        Variant::Shed.name(),
        Variant::BridgeNice0.name(),
        Variant::SpawnBlocking.name(),
        Variant::Inline.name(),
    )
}

fn fixed(plan: &Plan, passes: u32, cost: Duration, capacity: f64, bound: usize) -> String {
    let cpus = thread::available_parallelism().map_or(0, usize::from);
    let loads: Vec<String> = plan.loads.iter().map(f64::to_string).collect();
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
        Variant::BridgeNice0.name(),
        BODY / 1024,
        cost.as_secs_f64() * 1e3,
        DELAY.as_millis(),
        loads.join(", "),
        plan.window.as_millis(),
        GRACE.as_millis(),
    )
}

/// The scenario name of the I/O-only p99 at `load`.
fn scenario_name(load: f64) -> &'static str {
    LOADS
        .iter()
        .find(|&&(l, _)| (l - load).abs() < 1e-9)
        .map_or("io-p99", |&(_, name)| name)
}

/// How the tables of the scenarios sample: one cell per variant and run, each in its own
/// process.
const SAMPLING: &str = "One cell per variant and load (and per run), each in a fresh process, \
                        its value from all of that cell's requests; variants run in an order \
                        rotated per load.";

/// The samples of the scenarios: one p99 per cell.
const IO_P99: Measure = Measure::ms("I/O-only p99", Some(SAMPLING));
const FULL_P99: Measure = Measure::ms("full-request p99", Some(SAMPLING));

/// The measurement of one value per variant (one sample each) from the cells at `load`.
fn measurement(cells: &[Cell], load: f64, value: fn(&Outcome) -> f64) -> Measurement {
    let variants = VARIANTS
        .into_iter()
        .filter_map(|v| Some((v.name(), vec![value(&find(cells, v, load)?.out)])));
    Measurement::of(1, variants)
}

/// Runs the study: every variant at every load of the plan, each cell in a child process.
/// In a child (see [`in_child`]), runs its one cell and ends the process.
pub fn run(settings: &Settings) -> io::Result<Vec<ScenarioReport>> {
    if let Some(spec) = child_spec(STUDY) {
        let spec: Spec = spec?;
        // Before anything uses rayon: the pool is built once per process.
        let (nice_lo, nice_hi, refused) = set_up_global_pool(spec.variant)?;
        let out = Outcome {
            pool_nice_lo: nice_lo,
            pool_nice_hi: nice_hi,
            pool_refused: refused,
            ..run_cell(&spec)?
        };
        child_reply(&out);
    }
    let plan = Plan::of(settings);
    warm_up_rayon();
    let passes = calibrate_passes();
    let mut body = vec![1u8; BODY];
    let cost = harness::median_time(51, |_| step(&mut body, passes));
    let cpus = thread::available_parallelism().map_or(1, usize::from);
    let cpu_threads = cpus.min(rayon::current_num_threads()).min(WORKERS);
    let capacity = cpu_threads as f64 / cost.as_secs_f64();
    let bound = BOUND_PER_THREAD * rayon::current_num_threads();
    let load_before = load_average();

    let mut cells = Vec::new();
    for (k, &load) in plan.loads.iter().enumerate() {
        progress::measurement_started(VARIANTS.len(), VARIANTS.iter().map(|v| v.name()));
        progress::step_done(true);
        for j in 0..VARIANTS.len() {
            let variant = VARIANTS[(j + k) % VARIANTS.len()];
            let spec = Spec {
                variant,
                rate: load * capacity,
                window_ms: plan.window.as_millis() as u64,
                passes,
                bound,
            };
            let out = in_child(STUDY, &spec)?;
            cells.push(Cell {
                variant,
                load,
                rate: spec.rate,
                window: plan.window,
                out,
            });
            progress::step_done(false);
        }
    }
    let load_after = load_average();

    let fixed = fixed(&plan, passes, cost, capacity, bound);
    let mut reports: Vec<ScenarioReport> = plan
        .loads
        .iter()
        .enumerate()
        .map(|(k, &load)| {
            let name = scenario_name(load);
            ScenarioReport {
                name,
                varied: varied(),
                fixed: if k == 0 {
                    fixed.clone()
                } else {
                    format!(
                        "as in `{}`, at {load}x capacity ({:.0} full requests/s offered).",
                        scenario_name(plan.loads[0]),
                        load * capacity
                    )
                },
                measure: IO_P99,
                notes: vec![table(&cells, load, bound)],
                rows: rows(name, &measurement(&cells, load, |o| o.io_p99)),
                ..Default::default()
            }
        })
        .collect();
    // Both plans end at 2x.
    let top = 2.0;
    let name = "full-p99-at-2x";
    reports.push(ScenarioReport {
        name,
        varied: varied().replace(
            "This table: the p99 latency of the I/O-only probes, in ms.",
            "This table: the p99 latency of the full requests served (not shed), in ms.",
        ),
        fixed: format!(
            "the cells at {top}x capacity of the scenarios above; a request still unanswered \
             at the cutoff counts with its latency so far."
        ),
        goals: Vec::new(),
        budgets: Vec::new(),
        measure: FULL_P99,
        judged: judged(&cells, bound),
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
        rows: rows(name, &measurement(&cells, top, |o| o.full_p99)),
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
        if !cfg!(target_os = "linux") {
            // The call is refused on every thread, and the pool still runs.
            let refused = Arc::new(AtomicU64::new(0));
            let pool = pool_builder(Some(POOL_NICE), &refused)
                .num_threads(2)
                .build()
                .unwrap();
            assert_eq!(pool.broadcast(|_| 1), [1, 1]);
            assert_eq!(refused.load(Relaxed), 2);
            return;
        }
        let own = thread_nice().unwrap();
        for nice in [Some(POOL_NICE), None] {
            // A process already running above POOL_NICE cannot lower its threads to it.
            if nice.is_some_and(|n| own > i32::from(n)) {
                continue;
            }
            let refused = Arc::new(AtomicU64::new(0));
            let pool = pool_builder(nice, &refused).num_threads(2).build().unwrap();
            let want = f64::from(nice.map_or(own, i32::from));
            assert_eq!(nice_range(&pool.broadcast(|_| thread_nice())), (want, want));
            assert_eq!(refused.load(Relaxed), 0, "{nice:?}");
        }
        // The pool's threads were lowered, not this one.
        assert_eq!(thread_nice(), Some(own));
    }

    #[test]
    fn goals_judge_the_cells_of_a_run() {
        let window = Duration::from_secs(1);
        let cell = |variant, load, out: Outcome| Cell {
            variant,
            load,
            rate: 1000.0 * load,
            window,
            out,
        };
        let healthy = |served: f64, io_p99: f64| Outcome {
            served_in_window: served,
            io_p99,
            ..Outcome::default()
        };
        let mut cells = Vec::new();
        for load in [0.5, 0.9] {
            cells.push(cell(Variant::Bridge, load, healthy(1000.0 * load, 2e6)));
            cells.push(cell(Variant::Wait, load, healthy(1000.0 * load, 2e6)));
            // Sheds a tenth at 0.9x: costs 1.11x the unbounded throughput.
            let shed = if load < 0.7 { 500.0 } else { 810.0 };
            cells.push(cell(Variant::Shed, load, healthy(shed, 2e6)));
        }
        let queue = |half: f64, end: f64, limit_max: f64, io_p99: f64| Outcome {
            queued_half: half,
            queued_end: end,
            limit_max,
            io_p99,
            ..Outcome::default()
        };
        cells.push(cell(Variant::Wait, 2.0, queue(400.0, 800.0, 8.0, 2.5e6)));
        cells.push(cell(Variant::Shed, 2.0, queue(8.0, 7.0, 8.0, 3.5e6)));
        cells.push(cell(Variant::Bridge, 2.0, queue(400.0, 800.0, 0.0, 2e6)));
        cells.push(cell(
            Variant::BridgeNice0,
            2.0,
            queue(410.0, 820.0, 0.0, 6e6),
        ));
        cells.push(cell(
            Variant::SpawnBlocking,
            2.0,
            queue(400.0, 790.0, 0.0, 9e6),
        ));
        cells.push(cell(Variant::Inline, 2.0, queue(400.0, 700.0, 0.0, 9e8)));
        // The pool at nice 0, three times bridge's throughput at 0.5x-0.9x: were it the
        // throughput goal's baseline, the bounded variants would cost 3x.
        for load in [0.5, 0.9] {
            cells.push(cell(
                Variant::BridgeNice0,
                load,
                healthy(3000.0 * load, 2e6),
            ));
        }
        let checked = goals(&cells, 8);
        let verdicts: Vec<Option<bool>> = checked.iter().map(|g| g.0).collect();
        assert_eq!(verdicts, [Some(false), Some(true), Some(true), Some(false)]);
        let detail = &checked[0].1;
        assert!(
            detail.contains("bridge limit-shed 3.50 ms at 2x against 2.00 ms at 0.5x = 1.75x"),
            "{detail}"
        );
        // A queue of the pool at nice 0 that does not grow misses the growth goal.
        let mut flat = cells.clone();
        for c in &mut flat {
            if c.variant == Variant::BridgeNice0 && c.load == 2.0 {
                c.out.queued_end = c.out.queued_half;
            }
        }
        assert_eq!(goals(&flat, 8)[2].0, Some(false));
        // Without the cells at 2x, those goals are not measured.
        cells.retain(|c| c.load < 1.0);
        let verdicts: Vec<Option<bool>> = goals(&cells, 8).into_iter().map(|g| g.0).collect();
        assert_eq!(verdicts, [None, None, None, Some(false)]);
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
            assert_eq!(out.arrived, 20.0, "{variant:?}");
            assert_eq!(out.errors, 0.0, "{variant:?}");
            assert_eq!(out.shed, 0.0, "{variant:?}");
            assert_eq!(out.full_unfinished, 0.0, "{variant:?}");
            // Every read takes the backend's delay at least.
            assert!(
                out.full_p50 >= DELAY.as_nanos() as f64,
                "{variant:?}: {out:?}"
            );
            assert!(
                out.io_p50 >= DELAY.as_nanos() as f64,
                "{variant:?}: {out:?}"
            );
            // All but the last few, which may still be in flight when the window closes.
            assert!(out.served_in_window >= 10.0, "{variant:?}: {out:?}");
        }
        // A limit of 1 with steps far longer than the gap between arrivals must shed.
        let spec = Spec {
            variant: Variant::Shed,
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
