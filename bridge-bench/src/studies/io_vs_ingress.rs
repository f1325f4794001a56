//! The io-vs-ingress study: a loopback UDP dataplane (after a DNS dataplane's `split_io`):
//! blocking ingress threads, a policy step on rayon, and the exchange with a slow upstream on
//! an `IoRuntime` whose worker count we vary. A generator keeps a fixed window of queries
//! outstanding, so QPS is bounded by Little's law. We measure QPS against that bound in
//! `split` mode (ingress hands each query on) and `sync` mode (ingress runs it with
//! `IoRuntime::run_blocking`, bounded by ingress threads / latency instead).

use super::echo::{pool, server_runtime};
use crate::harness::{self, Measurement, Settings};
use crate::proc::{CpuTicks, load_average, os_threads};
use crate::progress;
use crate::report::{BASELINE, Budget, Check, Judged, Measure, ScenarioReport, rows, table};
use crate::stats::Summary;
use bridge::cpu::ThreadPoolExt;
use socket2::{Domain, Protocol, Socket, Type};
use std::hint::black_box;
use std::io;
use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};
use tokio::runtime::Runtime;

/// Queries the generator keeps outstanding.
const WINDOW: usize = 100;
/// The upstream's answer time (published: ~51 ms average latency).
const DELAY: Duration = Duration::from_millis(50);
/// Ingress threads on one socket; policy pool threads.
const INGRESS: usize = 2;
const POLICY: usize = 2;
/// Unanswered this long, a query is lost (longer than sync mode's 2.5 s queue).
const LOST_AFTER: Duration = Duration::from_secs(4);
/// Bytes of a query and its answer: id (u64 LE), verdict (u64 LE), padding.
const QUERY: usize = 32;
/// SO_RCVBUF asked for on every socket (the default holds only 256 small datagrams).
const RCVBUF: usize = 4 << 20;
/// The generator's recv timeout and loss scan period; the ingress recv timeout.
const LOAD_POLL: Duration = Duration::from_millis(1);
const LOSS_SCAN: Duration = Duration::from_millis(5);
const INGRESS_POLL: Duration = Duration::from_millis(20);
const POLICY_PASSES: u32 = 64;
const MAX_QUERIES: u64 = 10_000_000;
/// How far from its bound a mode may be (5%).
const SLACK: f64 = 0.05;
/// The published result: QPS flat across io_workers, at this average latency.
const PUBLISHED_QPS: f64 = 39_100.0;
const PUBLISHED_LATENCY_MS: f64 = 51.0;

const IO_WORKERS: [(usize, &str); 4] = [
    (1, "io-workers-1"),
    (2, "io-workers-2"),
    (4, "io-workers-4"),
    (8, "io-workers-8"),
];

const SYNC: &str = "sync run_blocking";

/// Rounds per io_workers value, how many values run, and the cells' and probe's durations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Plan {
    rounds: usize,
    io_values: usize,
    warm: Duration,
    measure: Duration,
    probe: Duration,
}

impl Plan {
    fn of(settings: &Settings) -> Self {
        let (rounds, io_values, [warm, measure, probe]) = if settings.is_quick() {
            (1, 2, [200, 400, 200])
        } else {
            (3, IO_WORKERS.len(), [500, 2000, 1000])
        };
        let [warm, measure, probe] = [warm, measure, probe].map(Duration::from_millis);
        Self {
            rounds,
            io_values,
            warm,
            measure,
            probe,
        }
    }
}

/// How the dataplane handles a query (see [`varied`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Split,
    Sync,
}

impl Mode {
    fn variant(self) -> &'static str {
        [BASELINE, SYNC][self as usize]
    }
}

/// A UDP socket on 127.0.0.1 with an ephemeral port and [`RCVBUF`] asked for.
fn udp_socket() -> io::Result<UdpSocket> {
    let socket = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP))?;
    socket.set_recv_buffer_size(RCVBUF)?;
    socket.bind(&SocketAddr::from((Ipv4Addr::LOCALHOST, 0)).into())?;
    Ok(socket.into())
}

/// A socket timeout (Unix reports `WouldBlock`).
fn timed_out(e: &io::Error) -> bool {
    use io::ErrorKind::{TimedOut, WouldBlock};
    matches!(e.kind(), WouldBlock | TimedOut)
}

/// Query `id`: its id, a zero verdict, and padding that depends on the id.
fn query(id: u64) -> [u8; QUERY] {
    let mut q = [0u8; QUERY];
    q[..8].copy_from_slice(&id.to_le_bytes());
    for (k, b) in q[16..].iter_mut().enumerate() {
        *b = (id as u8).wrapping_add(k as u8);
    }
    q
}

/// The id of a query or an answer; `None` if it is not [`QUERY`] bytes.
fn id_of(datagram: &[u8]) -> Option<u64> {
    let bytes: [u8; QUERY] = datagram.try_into().ok()?;
    Some(u64::from_le_bytes(bytes[..8].try_into().ok()?))
}

/// The policy step: [`POLICY_PASSES`] chained FNV-1a hashes of the query.
fn policy(query: &[u8; QUERY]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for _ in 0..POLICY_PASSES {
        for &b in query {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

/// The upstream: a UDP server on a runtime of its own that echoes each datagram [`DELAY`]
/// after it arrived; its address and runtime.
fn upstream() -> io::Result<(SocketAddr, Runtime)> {
    let runtime = server_runtime("upstream")?;
    let socket = udp_socket()?;
    socket.set_nonblocking(true)?;
    let addr = socket.local_addr()?;
    let socket = {
        let _entered = runtime.enter();
        tokio::net::UdpSocket::from_std(socket)?
    };
    runtime.spawn(answer(Arc::new(socket)));
    Ok((addr, runtime))
}

/// Answers each datagram [`DELAY`] after it arrived; a receive error other than a refused or
/// reset peer ends it (queries are then lost, and counted).
async fn answer(socket: Arc<tokio::net::UdpSocket>) {
    let mut buf = [0u8; 512];
    loop {
        match socket.recv_from(&mut buf).await {
            Ok((n, from)) => {
                let due = tokio::time::Instant::now() + DELAY;
                let (datagram, socket) = (buf[..n].to_vec(), Arc::clone(&socket));
                tokio::spawn(async move {
                    tokio::time::sleep_until(due).await;
                    let _ = socket.send_to(&datagram, from).await;
                });
            }
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {}
            Err(e) if e.kind() == io::ErrorKind::ConnectionReset => {}
            Err(e) => {
                eprintln!("io-vs-ingress: the upstream stops: {e}");
                return;
            }
        }
    }
}

/// One exchange with the upstream `to` on a fresh socket, its answer awaited (at most [`LOST_AFTER`]).
async fn exchange(to: SocketAddr, query: [u8; QUERY], verdict: u64) -> io::Result<[u8; QUERY]> {
    let mut q = query;
    q[8..16].copy_from_slice(&verdict.to_le_bytes());
    let socket = tokio::net::UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).await?;
    socket.connect(to).await?;
    socket.send(&q).await?;
    let mut answer = [0u8; QUERY];
    let n = tokio::time::timeout(LOST_AFTER, socket.recv(&mut answer))
        .await
        .map_err(|_| io::Error::from(io::ErrorKind::TimedOut))??;
    if n == QUERY && answer == q {
        Ok(answer)
    } else {
        Err(io::Error::new(io::ErrorKind::InvalidData, "a wrong answer"))
    }
}

/// The policy step's rayon pool.
type Pool = Arc<rayon::ThreadPool>;

/// What a dataplane's threads share; `io` is a handle ([`Dataplane`] owns the runtime).
struct Shared {
    mode: Mode,
    socket: UdpSocket,
    upstream: SocketAddr,
    pool: Pool,
    io: bridge::rt::IoRuntime,
    stop: AtomicBool,
    failed: AtomicU64,
}

impl Shared {
    /// Replies `answer` to `client`, or counts the query dropped.
    fn reply(&self, answer: io::Result<[u8; QUERY]>, client: SocketAddr) {
        if !answer.is_ok_and(|a| self.socket.send_to(&a, client).is_ok()) {
            self.failed.fetch_add(1, Relaxed);
        }
    }
}

/// An ingress thread until the stop flag is set.
fn ingress(shared: Arc<Shared>) -> io::Result<()> {
    let mut buf = [0u8; 512];
    // ORDERING: only a signal; the join publishes the rest.
    while !shared.stop.load(Relaxed) {
        let (n, client) = match shared.socket.recv_from(&mut buf) {
            Ok(got) => got,
            Err(e) if timed_out(&e) => continue,
            Err(e) => return Err(e),
        };
        let Ok(query) = <[u8; QUERY]>::try_from(&buf[..n]) else {
            continue;
        };
        let verdict = shared.pool.spawn_task(move || policy(&query));
        let upstream = shared.upstream;
        match shared.mode {
            Mode::Split => {
                let shared = Arc::clone(&shared);
                let io = shared.io.handle().clone();
                drop(io.spawn(async move {
                    let answer = exchange(upstream, query, verdict.await).await;
                    shared.reply(answer, client);
                }));
            }
            Mode::Sync => {
                let verdict = verdict.wait();
                let answer = shared.io.spawn(exchange(upstream, query, verdict)).wait();
                shared.reply(answer, client);
            }
        }
    }
    Ok(())
}

/// A running dataplane: [`INGRESS`] threads on one socket and its own `IoRuntime`.
struct Dataplane {
    addr: SocketAddr,
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<io::Result<()>>>,
    io: bridge::rt::IoRuntime,
}

impl Dataplane {
    fn start(mode: Mode, io_workers: usize, upstream: SocketAddr, pool: &Pool) -> io::Result<Self> {
        let socket = udp_socket()?;
        socket.set_read_timeout(Some(INGRESS_POLL))?;
        socket.set_write_timeout(Some(Duration::from_secs(1)))?;
        let addr = socket.local_addr()?;
        let io = bridge::rt::IoRuntime::new(io_workers)?;
        let shared = Arc::new(Shared {
            mode,
            socket,
            upstream,
            pool: Arc::clone(pool),
            io: bridge::rt::IoRuntime::from_handle(io.handle().clone()),
            stop: AtomicBool::new(false),
            failed: AtomicU64::new(0),
        });
        let mut plane = Self {
            addr,
            shared,
            threads: Vec::with_capacity(INGRESS),
            io,
        };
        for k in 0..INGRESS {
            let shared = Arc::clone(&plane.shared);
            let named = thread::Builder::new().name(format!("ingress-{k}"));
            let spawned = named.spawn(move || ingress(shared));
            match spawned {
                Ok(thread) => plane.threads.push(thread),
                Err(e) => {
                    let _ = plane.stop();
                    return Err(e);
                }
            }
        }
        Ok(plane)
    }

    /// Stops and joins the ingress threads, then drops the I/O runtime; the queries dropped.
    fn stop(mut self) -> io::Result<u64> {
        self.shared.stop.store(true, Relaxed);
        let mut first_error = None;
        for thread in self.threads.drain(..) {
            let joined = thread.join();
            let joined =
                joined.unwrap_or_else(|_| Err(io::Error::other("an ingress thread panicked")));
            first_error = first_error.or(joined.err());
        }
        drop(self.io);
        first_error.map_or(Ok(self.shared.failed.load(Relaxed)), Err)
    }
}

/// What a load run counted; `late` are answers after their query was lost, `in_window` and
/// `latency_sum` (s) the measured window's answers.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct LoadOutcome {
    sent: u64,
    completed: u64,
    lost: u64,
    late: u64,
    send_errors: u64,
    in_window: u64,
    latency_sum: f64,
    window: Duration,
}

impl LoadOutcome {
    fn qps(&self) -> f64 {
        self.in_window as f64 / self.window.as_secs_f64()
    }

    /// The average latency (s) in the measured window; NaN if none.
    fn latency(&self) -> f64 {
        self.latency_sum / self.in_window as f64
    }
}

/// The generator: one slot per outstanding query; ids are `generation * window + slot`.
struct Generator {
    socket: UdpSocket,
    slots: Vec<Option<(u64, Instant)>>,
    next_id: Vec<u64>,
    outstanding: usize,
    lost_after: Duration,
    out: LoadOutcome,
}

impl Generator {
    fn send(&mut self, slot: usize) {
        if self.out.sent >= MAX_QUERIES {
            return;
        }
        let id = self.next_id[slot];
        self.next_id[slot] += self.slots.len() as u64;
        if self.socket.send(&query(id)).is_err() {
            self.out.send_errors += 1;
        }
        self.slots[slot] = Some((id, Instant::now()));
        self.outstanding += 1;
        self.out.sent += 1;
    }

    /// Records an answer; returns the slot it freed, if pending.
    fn complete(
        &mut self,
        datagram: &[u8],
        now: Instant,
        measured: (Instant, Instant),
    ) -> Option<usize> {
        let id = id_of(datagram)?;
        let slot = (id % self.slots.len() as u64) as usize;
        let Some((_, sent)) = self.slots[slot].filter(|&(pending, _)| pending == id) else {
            self.out.late += 1;
            return None;
        };
        self.slots[slot] = None;
        self.outstanding -= 1;
        self.out.completed += 1;
        if now >= measured.0 && now < measured.1 {
            self.out.in_window += 1;
            self.out.latency_sum += (now - sent).as_secs_f64();
        }
        Some(slot)
    }

    /// Declares lost the queries older than `lost_after`; returns their slots.
    fn expire(&mut self, now: Instant) -> Vec<usize> {
        let mut freed = Vec::new();
        for (slot, pending) in self.slots.iter_mut().enumerate() {
            if pending.is_some_and(|(_, sent)| now.duration_since(sent) >= self.lost_after) {
                *pending = None;
                freed.push(slot);
            }
        }
        self.outstanding -= freed.len();
        self.out.lost += freed.len() as u64;
        freed
    }
}

/// One load run: `window` queries outstanding, first sent spread over `ramp` (so answers
/// come back spread too), `warm` before the measured window, the loss timeout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Load {
    window: usize,
    ramp: Duration,
    warm: Duration,
    measure: Duration,
    lost_after: Duration,
}

impl Load {
    fn new(window: usize, warm: Duration, measure: Duration) -> Self {
        Self {
            window,
            ramp: DELAY,
            warm,
            measure,
            lost_after: LOST_AFTER,
        }
    }
}

/// Runs `load` against `target`, then waits for what is outstanding; bounded in time and in
/// queries.
fn generate(target: SocketAddr, load: Load) -> io::Result<LoadOutcome> {
    let socket = udp_socket()?;
    socket.connect(target)?;
    socket.set_read_timeout(Some(LOAD_POLL))?;
    let window = load.window;
    let mut g = Generator {
        socket,
        slots: vec![None; window],
        next_id: (0..window as u64).collect(),
        outstanding: 0,
        lost_after: load.lost_after,
        out: LoadOutcome {
            window: load.measure,
            ..LoadOutcome::default()
        },
    };
    let start = Instant::now();
    let measured = (start + load.warm, start + load.warm + load.measure);
    let until = measured.1;
    let hard_end = until + load.lost_after + LOAD_POLL;
    // Slot k starts at `start + ramp * k / window`.
    let mut ramped = 0usize;
    let mut buf = [0u8; 512];
    let mut next_scan = start + LOSS_SCAN;
    loop {
        let now = Instant::now();
        while ramped < window
            && now < until
            && now >= start + load.ramp.mul_f64(ramped as f64 / window as f64)
        {
            g.send(ramped);
            ramped += 1;
        }
        if (now >= until && g.outstanding == 0) || now >= hard_end {
            break;
        }
        match g.socket.recv(&mut buf) {
            Ok(n) => {
                let now = Instant::now();
                if let Some(slot) = g.complete(&buf[..n], now, measured).filter(|_| now < until) {
                    g.send(slot);
                }
            }
            // A refused send (nobody listening yet or any more) comes back on recv.
            Err(e) if timed_out(&e) || e.kind() == io::ErrorKind::ConnectionRefused => {}
            Err(e) => return Err(e),
        }
        let now = Instant::now();
        if now >= next_scan {
            next_scan = now + LOSS_SCAN;
            for slot in g.expire(now) {
                if now < until {
                    g.send(slot);
                }
            }
        }
    }
    g.out.lost += g.outstanding as u64;
    Ok(g.out)
}

fn run_load(target: SocketAddr, load: Load) -> io::Result<LoadOutcome> {
    let load_thread = thread::Builder::new().name("load".to_owned());
    let handle = load_thread.spawn(move || generate(target, load))?;
    handle
        .join()
        .map_err(|_| io::Error::other("the load generator panicked"))?
}

/// One run of one mode at one io_workers value.
#[derive(Debug, Clone, Copy)]
struct Cell {
    mode: Mode,
    io_workers: usize,
    load: LoadOutcome,
    /// Queries the dataplane dropped.
    failed: u64,
    threads_before: Option<u32>,
    threads_after: Option<u32>,
    cpu: Option<CpuTicks>,
    wall: Duration,
}

fn run_cell(mode: Mode, io_workers: usize, plan: &Plan, pool: &Pool) -> io::Result<Cell> {
    let threads_before = os_threads();
    let cpu_before = CpuTicks::now();
    let started = Instant::now();
    let (to, upstream) = upstream()?;
    let plane = Dataplane::start(mode, io_workers, to, pool)?;
    let outcome = run_load(plane.addr, Load::new(WINDOW, plan.warm, plan.measure));
    let failed = plane.stop();
    drop(upstream);
    let cpu = CpuTicks::now().zip(cpu_before);
    Ok(Cell {
        mode,
        io_workers,
        load: outcome?,
        failed: failed?,
        threads_before,
        threads_after: os_threads(),
        cpu: cpu.map(|(after, before)| after.since(before)),
        wall: started.elapsed(),
    })
}

/// The rig without the dataplane: the upstream's unloaded latency (s) and the generator's
/// full window against it directly.
#[derive(Debug, Clone, Copy)]
struct Baseline {
    unloaded: f64,
    direct: LoadOutcome,
}

impl Baseline {
    fn measure(plan: &Plan) -> io::Result<Self> {
        let (to, _upstream) = upstream()?;
        let unloaded = run_load(to, Load::new(1, Duration::ZERO, plan.probe))?;
        let direct = run_load(to, Load::new(WINDOW, plan.warm, plan.measure))?;
        Ok(Self {
            unloaded: unloaded.latency(),
            direct,
        })
    }

    /// The mode's bound in QPS: window or ingress threads over latency.
    fn bound(&self, mode: Mode) -> f64 {
        let in_flight = match mode {
            Mode::Split => WINDOW,
            Mode::Sync => INGRESS,
        };
        in_flight as f64 / self.unloaded
    }
}

/// One mode's runs at one io_workers value, summed, with each round's QPS.
#[derive(Debug, Clone, PartialEq)]
struct Tally {
    mode: Mode,
    io_workers: usize,
    qps: Vec<f64>,
    load: LoadOutcome,
    failed: u64,
    cpu: CpuTicks,
}

impl Tally {
    fn of(mode: Mode, io_workers: usize, cells: &[Cell]) -> Self {
        let mine: Vec<&Cell> = cells
            .iter()
            .filter(|c| c.mode == mode && c.io_workers == io_workers)
            .collect();
        let sum = |f: fn(&LoadOutcome) -> u64| mine.iter().map(|c| f(&c.load)).sum::<u64>();
        let cpu = mine.iter().filter_map(|c| c.cpu);
        Self {
            mode,
            io_workers,
            qps: mine.iter().map(|c| c.load.qps()).collect(),
            load: LoadOutcome {
                sent: sum(|l| l.sent),
                completed: sum(|l| l.completed),
                lost: sum(|l| l.lost),
                late: sum(|l| l.late),
                send_errors: sum(|l| l.send_errors),
                in_window: sum(|l| l.in_window),
                latency_sum: mine.iter().map(|c| c.load.latency_sum).sum(),
                window: Duration::ZERO,
            },
            failed: mine.iter().map(|c| c.failed).sum(),
            cpu: cpu.fold(CpuTicks::default(), CpuTicks::add),
        }
    }

    fn qps(&self) -> f64 {
        Summary::of(&self.qps).map_or(f64::NAN, |s| s.median)
    }
}

fn shares(ticks: CpuTicks) -> String {
    match ticks.shares() {
        (this, _) if this.is_nan() => "not read".to_owned(),
        (this, others) => format!("{this:.0}% / {others:.0}%"),
    }
}

fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

fn tally_table(tallies: &[Tally], base: &Baseline) -> String {
    let rows: Vec<Vec<String>> = tallies
        .iter()
        .map(|t| {
            let (min, max) = Summary::of(&t.qps).map_or((f64::NAN, f64::NAN), |s| (s.min, s.max));
            let (bound, l) = (base.bound(t.mode), &t.load);
            vec![
                t.io_workers.to_string(),
                ["split", "sync"][t.mode as usize].to_owned(),
                format!("{:.0} ({min:.0}-{max:.0})", t.qps()),
                format!("{:.2}", l.latency() * 1e3),
                format!("{} / {} / {}", l.sent, l.completed, l.lost),
                format!("{bound:.0}"),
                pct(t.qps() / bound),
                format!("{:.1}", t.qps() * l.latency()),
                shares(t.cpu),
            ]
        })
        .collect();
    let head = [
        "io_workers",
        "mode",
        "QPS (median; min-max of rounds)",
        "average latency ms",
        "sent / completed / lost",
        "bound QPS",
        "achieved / bound",
        "QPS x latency",
        "CPU: this process / others",
    ];
    table(&head, "---:", &rows).trim_end().to_owned()
}

/// The study's goals, judged on the tallies.
fn goals(tallies: &[Tally], base: &Baseline) -> Vec<Judged> {
    let of = |mode| -> Vec<&Tally> { tallies.iter().filter(|t| t.mode == mode).collect() };
    let (split, sync) = (of(Mode::Split), of(Mode::Sync));
    // A mode's bound, its achieved / bound furthest from 1, and the numbers in words.
    let against = |ts: &[&Tally], mode| {
        let bound = base.bound(mode);
        let lost: u64 = ts.iter().map(|t| t.load.lost).sum();
        let ratios = ts.iter().map(|t| t.qps() / bound);
        let worst = ratios.max_by(|a, b| (a - 1.0).abs().total_cmp(&(b - 1.0).abs()));
        let each: Vec<String> = (ts.iter())
            .map(|t| format!("{} at io_workers={}", pct(t.qps() / bound), t.io_workers))
            .collect();
        let (width, ms) = ([WINDOW, INGRESS][mode as usize], base.unloaded * 1e3);
        let detail = format!(
            "achieved / bound {}, bound {width} / {ms:.2} ms = {bound:.0} QPS; lost {lost}",
            each.join(", "),
        );
        (bound, lost, worst.map_or("-".to_owned(), pct), detail)
    };

    let (bound, lost, furthest, detail) = against(&split, Mode::Split);
    let near = split.iter().all(|t| t.qps() >= (1.0 - SLACK) * bound);
    let within = (!split.is_empty()).then(|| Check {
        met: near && lost == 0,
        value: format!("{furthest} of the bound, {lost} lost"),
        bound: format!(">= {}, 0 lost", pct(1.0 - SLACK)),
        detail,
    });

    let qps: Vec<f64> = split.iter().map(|t| t.qps()).collect();
    let lo = qps.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = qps.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let spread = (hi - lo) / hi;
    let workers: Vec<String> = split.iter().map(|t| t.io_workers.to_string()).collect();
    let flat = (split.len() > 1).then(|| Check {
        met: spread <= SLACK,
        value: format!("spread {}", pct(spread)),
        bound: format!("<= {}", pct(SLACK)),
        detail: format!(
            "median QPS {lo:.0} to {hi:.0} over io_workers {}, a spread of {}",
            workers.join(", "),
            pct(spread),
        ),
    });

    let (bound, _, furthest, detail) = against(&sync, Mode::Sync);
    let bounded = (!sync.is_empty()).then(|| Check {
        met: sync.iter().all(|t| (t.qps() / bound - 1.0).abs() <= SLACK),
        value: format!("{furthest} of the bound"),
        bound: format!("{}-{}", pct(1.0 - SLACK), pct(1.0 + SLACK)),
        detail,
    });
    let split_goal =
        "split mode within 5% of the Little's-law bound (window / latency) with 0 lost";
    let sync_goal = "sync mode bounded by ingress threads / latency (at it, within 5%)";
    vec![
        Judged::once(split_goal, within),
        Judged::once("split mode flat across io_workers (within 5%)", flat),
        Judged::once(sync_goal, bounded),
    ]
}

fn diagnosis(tallies: &[Tally], base: &Baseline) -> String {
    let sum = |f: fn(&Tally) -> u64| tallies.iter().map(f).sum::<u64>();
    let (failed, late) = (sum(|t| t.failed), sum(|t| t.load.late));
    let send_errors = sum(|t| t.load.send_errors);
    format!(
        "Reading the numbers: without the dataplane (the generator straight to the upstream, \
         same window) the rig reaches {:.0} QPS, {} of the bound, at {:.2} ms: the ceiling of \
         the generator, the upstream and this machine. Where split mode falls short with \
         QPS x latency near the window, the window stays full and the latency grew (queued in \
         the dataplane or waiting for a CPU). Sync mode's latency is queueing: {INGRESS} \
         queries are served at a time and the rest wait in the ingress socket (window / QPS \
         = {:.0} ms in steady state). Over all cells: {failed} queries dropped in the \
         dataplane, {late} answers after their query was declared lost, {send_errors} failed \
         sends.",
        base.direct.qps(),
        pct(base.direct.qps() / base.bound(Mode::Split)),
        base.direct.latency() * 1e3,
        WINDOW as f64 / base.bound(Mode::Sync) * 1e3,
    )
}

fn threads_note(cells: &[Cell], first: Option<u32>, load: [Option<String>; 2]) -> String {
    let grew =
        |c: &&Cell| matches!((c.threads_before, c.threads_after), (Some(b), Some(a)) if a > b);
    let leaked = cells.iter().filter(grew).count();
    let [before, after] = load.map(|x| x.unwrap_or_else(|| "not read".to_owned()));
    format!(
        "Threads: {} before the first cell; {leaked} of {} cells ended with more threads than \
         they began with (each joins its ingress threads, IoRuntime, upstream and load \
         thread). Load average (1/5/15 min) before the first cell {before}, after the last \
         {after}.",
        first.map_or("not read".to_owned(), |n| n.to_string()),
        cells.len(),
    )
}

fn varied(io_workers: usize) -> String {
    format!(
        "the mode. `{BASELINE}` is split mode: an ingress thread receives a query, starts the \
         policy on the rayon pool (pool.spawn_task) and spawns one task on the IoRuntime that \
         awaits the policy, exchanges with the upstream and answers, while the ingress thread \
         receives the next. `{SYNC}` is sync mode: the ingress thread waits for the policy \
         (Task::wait), runs the exchange with IoRuntime::run_blocking and replies before it \
         receives the next. This scenario: io_workers = {io_workers}."
    )
}

fn fixed(plan: &Plan, base: &Baseline, rcvbuf: usize) -> String {
    format!(
        "everything on 127.0.0.1, in this process, {} CPUs. Ingress = {INGRESS} threads on one \
         UDP socket; policy = a rayon pool of {POLICY} threads, a hash of the query ({:.1} µs \
         on an idle thread). Upstream = a UDP server on its own tokio runtime that answers \
         each datagram {} ms after it arrived. Load generator = one thread keeping {WINDOW} \
         queries outstanding (ramped up over {} ms), a query lost if unanswered after {} s; \
         per cell {} ms of load before a measured window of {} ms. QPS and latency count the \
         answers of the measured window. SO_RCVBUF {} KiB granted. Each cell builds and shuts \
         down its own upstream, dataplane and IoRuntime; {} rounds, modes alternating. Bound: \
         window / latency for split, ingress threads / latency for sync, with the upstream's \
         unloaded round trip {:.2} ms. The published study: flat ~{:.1}k QPS at \
         ~{PUBLISHED_LATENCY_MS:.0} ms and 0 lost at every io_workers value. The table's \
         samples are ns per answered query in each round's window; in the notes, QPS x \
         latency is the mean queries in flight (Little's law).",
        super::cpus(),
        harness::median_time(201, |i| black_box(policy(black_box(&query(i))))).as_secs_f64() * 1e6,
        DELAY.as_millis(),
        DELAY.as_millis(),
        LOST_AFTER.as_secs(),
        plan.warm.as_millis(),
        plan.measure.as_millis(),
        rcvbuf >> 10,
        plan.rounds,
        base.unloaded * 1e3,
        PUBLISHED_QPS / 1e3,
    )
}

/// Runs every io_workers value of the plan, both modes per round.
pub fn run(settings: &Settings) -> io::Result<Vec<ScenarioReport>> {
    let plan = Plan::of(settings);
    let pool = Arc::new(pool(POLICY, "policy", || ())?);
    for _ in 0..100 {
        pool.broadcast(|_| black_box(()));
    }
    let rcvbuf = Socket::from(udp_socket()?).recv_buffer_size()?;
    const MODES: [Mode; 2] = [Mode::Split, Mode::Sync];
    let variants = MODES.map(Mode::variant);
    progress::measurement_started(plan.rounds, variants.into_iter());
    let base = Baseline::measure(&plan)?;
    progress::step_done(true);
    let fixed = fixed(&plan, &base, rcvbuf);
    let (first_threads, first_load) = (os_threads(), load_average());

    let (mut cells, mut reports, mut tallies) = (Vec::new(), Vec::new(), Vec::new());
    for (k, &(io_workers, name)) in IO_WORKERS[..plan.io_values].iter().enumerate() {
        if k > 0 {
            progress::measurement_started(plan.rounds, variants.into_iter());
            progress::step_done(true);
        }
        let mut mine = Vec::new();
        for round in 0..plan.rounds {
            for mode in [MODES[round % 2], MODES[1 - round % 2]] {
                mine.push(run_cell(mode, io_workers, &plan, &pool)?);
            }
            progress::step_done(false);
        }
        let here = MODES.map(|mode| Tally::of(mode, io_workers, &mine));
        let samples = |mode| {
            (mine.iter().filter(|c| c.mode == mode))
                .map(|c| c.load.window.as_nanos() as f64 / c.load.in_window as f64)
                .collect()
        };
        let per_mode = MODES.map(|mode| (mode.variant(), samples(mode)));
        let m = Measurement::of(plan.rounds, per_mode);
        let wall: f64 = mine.iter().map(|c| c.wall.as_secs_f64()).sum();
        reports.push(ScenarioReport {
            name,
            varied: varied(io_workers),
            fixed: fixed.clone(),
            measure: Measure {
                per: "/query",
                ..Measure::default()
            },
            budgets: vec![Budget {
                max_ns: 1e9 / ((1.0 - SLACK) * base.bound(Mode::Split)),
                text: "split mode (bridge) within 5% of the Little's-law bound window / latency",
            }],
            notes: vec![format!(
                "{}\n\nThis scenario's {} cells took {wall:.1} s.",
                tally_table(&here, &base),
                mine.len()
            )],
            rows: rows(name, &m),
            ..Default::default()
        });
        tallies.extend(here);
        cells.extend(mine);
    }
    if let Some(last) = reports.last_mut() {
        let all = tally_table(&tallies, &base);
        last.notes.push(format!("All io_workers values:\n\n{all}"));
        last.judged = goals(&tallies, &base);
        last.notes.push(diagnosis(&tallies, &base));
        let load = [first_load, load_average()];
        last.notes.push(threads_note(&cells, first_threads, load));
    }
    Ok(reports)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_carry_their_id_and_policy_depends_on_them() {
        assert_eq!(id_of(&query(7)), Some(7));
        assert_eq!(id_of(&query(u64::MAX)), Some(u64::MAX));
        assert_eq!(id_of(&[0u8; 8]), None);
        assert_eq!(policy(&query(3)), policy(&query(3)));
        assert_ne!(policy(&query(3)), policy(&query(4)));
    }

    #[test]
    fn both_modes_answer_every_query() {
        let plan = Plan {
            rounds: 1,
            io_values: 1,
            warm: Duration::from_millis(20),
            measure: Duration::from_millis(100),
            probe: Duration::ZERO,
        };
        let pool = Arc::new(pool(POLICY, "test", || ()).unwrap());
        for mode in [Mode::Split, Mode::Sync] {
            let cell = run_cell(mode, 1, &plan, &pool).unwrap();
            assert_eq!(cell.load.lost, 0, "{mode:?}");
            assert_eq!(cell.load.sent, cell.load.completed, "{mode:?}");
            assert_eq!(cell.failed, 0, "{mode:?}");
            // Every answer takes the upstream's delay.
            assert!(cell.load.latency() >= DELAY.as_secs_f64(), "{mode:?}");
        }
    }

    #[test]
    fn lost_queries_are_counted_resent_and_the_run_ends() {
        let silent = udp_socket().unwrap();
        let load = Load {
            window: 2,
            ramp: Duration::ZERO,
            warm: Duration::ZERO,
            measure: Duration::from_millis(200),
            lost_after: Duration::from_millis(50),
        };
        let started = Instant::now();
        let out = generate(silent.local_addr().unwrap(), load).unwrap();
        assert!(started.elapsed() < Duration::from_millis(200 + 50 + 200));
        assert_eq!(out.completed, 0);
        assert_eq!(out.lost, out.sent);
        assert!(out.sent >= 2 * 3, "sent {}", out.sent);
    }
}
