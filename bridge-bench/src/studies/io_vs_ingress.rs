//! The io-vs-ingress study: a loopback UDP dataplane built from this crate family, after the
//! DNS dataplane's `split_io` runtime. Ingress threads receive queries with a blocking
//! `recv_from`, a policy step runs on a rayon pool through bridge's `Task`, and the exchange
//! with a slow upstream runs on a `bridge::rt::IoRuntime` whose worker count we vary. A load
//! generator keeps a fixed window of queries outstanding, so the ceiling is Little's law:
//! QPS = window / latency, whatever the I/O workers.
//!
//! Two modes: `split` (the ingress thread hands each query on and goes back to receiving; the
//! I/O runtime owns the wait and sends the reply) and `sync` (each ingress thread runs the
//! policy and the upstream exchange itself, with `IoRuntime::run_blocking`, one query at a
//! time), whose ceiling is ingress threads / latency instead.
//!
//! All traffic stays on 127.0.0.1. Every cell builds its own upstream, dataplane and load
//! generator and shuts all of them down (threads joined, runtimes dropped) before the next.

use crate::harness::{self, Measurement, Settings};
use crate::proc::{CpuTicks, load_average, os_threads};
use crate::progress;
use crate::report::{
    BASELINE, Budget, Check, Judged, Measure, ScenarioReport, rows, table as table_of,
};
use crate::stats::Summary;
use bridge::cpu::ThreadPoolExt;
use socket2::{Domain, Protocol, Socket, Type};
use std::hint::black_box;
use std::io;
use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};
use tokio::runtime::{Builder, Runtime};

/// Queries the load generator keeps outstanding: a new one goes out when one is answered or
/// declared lost.
const WINDOW: usize = 100;

/// How long the upstream waits before it answers a query (a tokio timer, no CPU burnt). The
/// published study saw ~51 ms average latency; a long delay also keeps the few hundred
/// microseconds that the rig itself adds under load (generator, upstream, thread hops on a
/// small machine) small against the 5% goal.
const DELAY: Duration = Duration::from_millis(50);

/// Ingress threads of the dataplane, all receiving on one socket.
const INGRESS: usize = 2;

/// Threads of the rayon pool that runs the policy step.
const POLICY: usize = 2;

/// A query unanswered this long after it was sent is lost. It is longer than the queue that
/// sync mode builds (window x delay / ingress threads, 2.5 s), so a query that is merely
/// slow is not counted as lost; see `lost_after_outlasts_the_sync_queue`.
const LOST_AFTER: Duration = Duration::from_secs(4);

/// Bytes of a query and of its answer: the query's id (u64 LE), the policy's verdict (u64 LE,
/// filled in by the dataplane), padding.
const QUERY: usize = 32;

/// The receive buffer asked for on every socket of the study (Linux doubles it and caps it at
/// `net.core.rmem_max`). The default (208 KiB) holds only 256 small datagrams; sync mode
/// queues a whole window on the ingress socket, and the upstream takes bursts.
const RCVBUF: usize = 4 << 20;

/// How long the load generator's `recv` waits before it looks at the clock (to start the
/// next query of its ramp, or to end).
const LOAD_POLL: Duration = Duration::from_millis(1);

/// How often the load generator looks for lost queries.
const LOSS_SCAN: Duration = Duration::from_millis(5);

/// How long an ingress thread's `recv_from` waits before it looks at the stop flag.
const INGRESS_POLL: Duration = Duration::from_millis(20);

/// Passes of the policy's hash over the query: a few microseconds of dependent multiplies.
const POLICY_PASSES: u32 = 64;

/// The most queries one load run sends, whatever the clock says.
const MAX_QUERIES: u64 = 10_000_000;

/// How far from its bound a mode may be (5%).
const SLACK: f64 = 0.05;

/// The published result: QPS flat at this value across io_workers.
const PUBLISHED_QPS: f64 = 39_100.0;

/// The published average latency, in milliseconds.
const PUBLISHED_LATENCY_MS: f64 = 51.0;

/// The io_workers values, each with its scenario's name.
const IO_WORKERS: [(usize, &str); 4] = [
    (1, "io-workers-1"),
    (2, "io-workers-2"),
    (4, "io-workers-4"),
    (8, "io-workers-8"),
];

/// The name of sync mode's rows; split mode's rows are [`BASELINE`].
const SYNC: &str = "sync run_blocking";

/// How long and how often: the full run and the quick one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Plan {
    /// Runs of each mode per io_workers value; the order of the modes alternates.
    rounds: usize,
    /// How many of [`IO_WORKERS`] are run.
    io_values: usize,
    /// Load before the measured window of a cell.
    warm: Duration,
    /// The measured window of a cell: QPS and latency count the answers received in it.
    measure: Duration,
    /// How long the unloaded upstream latency is probed, one query at a time.
    probe: Duration,
}

impl Plan {
    /// The quick plan for the quick settings (few rounds), the full plan otherwise.
    fn of(settings: &Settings) -> Self {
        if settings.is_quick() {
            Self {
                rounds: 1,
                io_values: 2,
                warm: Duration::from_millis(200),
                measure: Duration::from_millis(400),
                probe: Duration::from_millis(200),
            }
        } else {
            Self {
                rounds: 3,
                io_values: IO_WORKERS.len(),
                warm: Duration::from_millis(500),
                measure: Duration::from_millis(2000),
                probe: Duration::from_millis(1000),
            }
        }
    }
}

/// How the dataplane handles a query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Ingress hands the query on (policy task on rayon, exchange task on the I/O runtime,
    /// which awaits the policy, then the upstream, then replies) and receives the next.
    Split,
    /// Ingress waits for the policy (`Task::wait`), runs the exchange with
    /// `IoRuntime::run_blocking`, replies, then receives the next.
    Sync,
}

impl Mode {
    /// The mode in the study's table.
    fn label(self) -> &'static str {
        match self {
            Mode::Split => "split",
            Mode::Sync => "sync",
        }
    }

    /// The variant in the scenario's rows.
    fn variant(self) -> &'static str {
        match self {
            Mode::Split => BASELINE,
            Mode::Sync => SYNC,
        }
    }
}

/// A UDP socket on 127.0.0.1 with an ephemeral port and [`RCVBUF`] asked for.
fn udp_socket() -> io::Result<UdpSocket> {
    let socket = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP))?;
    socket.set_recv_buffer_size(RCVBUF)?;
    socket.bind(&SocketAddr::from((Ipv4Addr::LOCALHOST, 0)).into())?;
    Ok(socket.into())
}

/// The receive buffer the kernel gave a socket of [`udp_socket`], in bytes.
fn granted_rcvbuf() -> io::Result<usize> {
    Socket::from(udp_socket()?).recv_buffer_size()
}

/// A timeout of a socket with a read or write timeout (Unix reports `WouldBlock`).
fn timed_out(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
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

/// The policy step: an FNV-1a hash over the query, [`POLICY_PASSES`] times (a few µs of
/// CPU that cannot be skipped: every step depends on the last).
fn policy(query: &[u8; QUERY]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for _ in 0..POLICY_PASSES {
        for &b in query {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

// ---------------------------------------------------------------------------------------
// The upstream: answers every datagram after DELAY.

/// A UDP server on its own tokio runtime (1 worker) that echoes each datagram [`DELAY`]
/// after it arrived. Dropping it shuts the runtime down and joins its thread.
struct Upstream {
    addr: SocketAddr,
    _runtime: Runtime,
}

impl Upstream {
    fn start() -> io::Result<Self> {
        let runtime = Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("upstream")
            .enable_all()
            .build()?;
        let socket = udp_socket()?;
        socket.set_nonblocking(true)?;
        let addr = socket.local_addr()?;
        let socket = {
            let _entered = runtime.enter();
            tokio::net::UdpSocket::from_std(socket)?
        };
        runtime.spawn(answer(Arc::new(socket)));
        Ok(Self {
            addr,
            _runtime: runtime,
        })
    }
}

/// Receives until the runtime shuts down; each datagram gets a task that sleeps until
/// [`DELAY`] after its arrival, then sends it back. A receive error other than a refused
/// or reset peer ends the loop: queries are then lost and the table shows it.
async fn answer(socket: Arc<tokio::net::UdpSocket>) {
    let mut buf = [0u8; 512];
    loop {
        match socket.recv_from(&mut buf).await {
            Ok((n, from)) => {
                let due = tokio::time::Instant::now() + DELAY;
                let datagram = buf[..n].to_vec();
                let socket = Arc::clone(&socket);
                tokio::spawn(async move {
                    tokio::time::sleep_until(due).await;
                    let _ = socket.send_to(&datagram, from).await;
                });
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::ConnectionRefused | io::ErrorKind::ConnectionReset
                ) => {}
            Err(e) => {
                eprintln!("io-vs-ingress: the upstream stops: {e}");
                return;
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// The dataplane: ingress threads, policy on rayon, upstream exchange on an IoRuntime.

/// One upstream exchange on the I/O runtime: a fresh socket on an ephemeral port, the query
/// (with the verdict in it) sent to the upstream, its answer awaited (at most
/// [`LOST_AFTER`]) and checked.
async fn exchange(
    upstream: SocketAddr,
    query: [u8; QUERY],
    verdict: u64,
) -> io::Result<[u8; QUERY]> {
    let mut q = query;
    q[8..16].copy_from_slice(&verdict.to_le_bytes());
    let socket = tokio::net::UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).await?;
    socket.connect(upstream).await?;
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

/// What a dataplane's threads share.
struct Shared {
    mode: Mode,
    /// The ingress socket; replies go out on it too, so they come from the address the
    /// client sent to.
    socket: UdpSocket,
    upstream: SocketAddr,
    pool: Arc<rayon::ThreadPool>,
    /// The dataplane's I/O runtime, by handle: the [`Dataplane`] owns it, so that no task
    /// left on it can keep it alive.
    io: bridge::rt::IoRuntime,
    stop: AtomicBool,
    /// Queries the dataplane dropped: an exchange or a reply failed.
    failed: AtomicU64,
}

impl Shared {
    fn fail(&self) {
        // ORDERING: a counter read after the threads are joined (the join synchronizes).
        self.failed.fetch_add(1, Ordering::Relaxed);
    }
}

/// Split mode's work on the I/O runtime: await the policy task, exchange with the upstream,
/// send the answer to the client from the ingress socket. (A blocking `send_to` on a UDP
/// socket: on loopback it hands the datagram to the receiver's queue, or drops it, and never
/// waits.)
async fn forward(
    shared: Arc<Shared>,
    query: [u8; QUERY],
    verdict: bridge::Task<u64>,
    client: SocketAddr,
) {
    let verdict = verdict.await;
    match exchange(shared.upstream, query, verdict).await {
        Ok(answer) if shared.socket.send_to(&answer, client).is_ok() => {}
        _ => shared.fail(),
    }
}

/// An ingress thread: blocking receive until the stop flag is set; returns the queries it
/// received.
fn ingress(shared: Arc<Shared>) -> io::Result<u64> {
    let mut buf = [0u8; 512];
    let mut received = 0u64;
    // ORDERING: only a signal to end the loop; what the thread did is published by its join.
    while !shared.stop.load(Ordering::Relaxed) {
        let (n, client) = match shared.socket.recv_from(&mut buf) {
            Ok(got) => got,
            Err(e) if timed_out(&e) => continue,
            Err(e) => return Err(e),
        };
        let Ok(query) = <[u8; QUERY]>::try_from(&buf[..n]) else {
            continue;
        };
        received += 1;
        let verdict = shared.pool.spawn_task(move || policy(&query));
        match shared.mode {
            Mode::Split => {
                let task = forward(Arc::clone(&shared), query, verdict, client);
                drop(shared.io.handle().spawn(task));
            }
            Mode::Sync => {
                let verdict = verdict.wait();
                let upstream = shared.upstream;
                match shared.io.spawn(exchange(upstream, query, verdict)).wait() {
                    Ok(answer) if shared.socket.send_to(&answer, client).is_ok() => {}
                    _ => shared.fail(),
                }
            }
        }
    }
    Ok(received)
}

/// A running dataplane: [`INGRESS`] threads on one socket and its own `IoRuntime`.
struct Dataplane {
    addr: SocketAddr,
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<io::Result<u64>>>,
    /// The owner of the I/O runtime.
    io: bridge::rt::IoRuntime,
}

/// What a dataplane reports when it stops.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct PlaneCounts {
    received: u64,
    failed: u64,
}

impl Dataplane {
    fn start(
        mode: Mode,
        io_workers: usize,
        upstream: SocketAddr,
        pool: &Arc<rayon::ThreadPool>,
    ) -> io::Result<Self> {
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
            let spawned = thread::Builder::new()
                .name(format!("ingress-{k}"))
                .spawn(move || ingress(shared));
            match spawned {
                Ok(thread) => plane.threads.push(thread),
                Err(e) => {
                    // Joins the threads already started.
                    let _ = plane.stop();
                    return Err(e);
                }
            }
        }
        Ok(plane)
    }

    /// Stops the ingress threads (within [`INGRESS_POLL`]), joins them, then drops the I/O
    /// runtime, which joins its workers.
    fn stop(mut self) -> io::Result<PlaneCounts> {
        // ORDERING: see `ingress`; the joins below publish everything else.
        self.shared.stop.store(true, Ordering::Relaxed);
        let mut counts = PlaneCounts::default();
        let mut first_error = None;
        for thread in self.threads.drain(..) {
            match thread.join() {
                Ok(Ok(n)) => counts.received += n,
                Ok(Err(e)) => first_error = first_error.or(Some(e)),
                Err(_) => {
                    first_error =
                        first_error.or_else(|| Some(io::Error::other("an ingress thread panicked")))
                }
            }
        }
        // Shuts the runtime down and joins its workers; a task still on it is dropped.
        drop(self.io);
        // ORDERING: every thread that counted is joined (the ingress threads above, the
        // runtime's workers by the drop).
        counts.failed = self.shared.failed.load(Ordering::Relaxed);
        match first_error {
            Some(e) => Err(e),
            None => Ok(counts),
        }
    }
}

// ---------------------------------------------------------------------------------------
// The load generator.

/// What a load run counted.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct LoadOutcome {
    /// Queries sent.
    sent: u64,
    /// Queries answered before [`LOST_AFTER`].
    completed: u64,
    /// Queries not answered before [`LOST_AFTER`] (or before the run's end).
    lost: u64,
    /// Answers to queries already declared lost.
    late: u64,
    /// Sends that failed (the query then counts as lost).
    send_errors: u64,
    /// Answers received in the measured window.
    in_window: u64,
    /// The summed latency of those answers, in seconds.
    latency_sum: f64,
    /// The measured window.
    window: Duration,
}

impl LoadOutcome {
    /// Answers per second in the measured window.
    fn qps(&self) -> f64 {
        self.in_window as f64 / self.window.as_secs_f64()
    }

    /// The measured window's nanoseconds per answer (the inverse of QPS); infinite if none.
    fn ns_per_query(&self) -> f64 {
        if self.in_window == 0 {
            f64::INFINITY
        } else {
            self.window.as_nanos() as f64 / self.in_window as f64
        }
    }

    /// The average latency of the answers in the measured window, in seconds; NaN if none.
    fn latency(&self) -> f64 {
        self.latency_sum / self.in_window as f64
    }
}

/// A query in flight.
#[derive(Debug, Clone, Copy)]
struct Pending {
    id: u64,
    sent: Instant,
}

/// The generator's state: one slot per outstanding query. Query ids are
/// `generation * window + slot`, so an answer finds its slot.
struct Generator {
    socket: UdpSocket,
    slots: Vec<Option<Pending>>,
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
        self.slots[slot] = Some(Pending {
            id,
            sent: Instant::now(),
        });
        self.outstanding += 1;
        self.out.sent += 1;
    }

    /// Records an answer received at `now`; returns the slot it freed, if it was pending.
    fn complete(
        &mut self,
        datagram: &[u8],
        now: Instant,
        measured: (Instant, Instant),
    ) -> Option<usize> {
        let id = id_of(datagram)?;
        let slot = (id % self.slots.len() as u64) as usize;
        match self.slots[slot] {
            Some(p) if p.id == id => {
                self.slots[slot] = None;
                self.outstanding -= 1;
                self.out.completed += 1;
                if now >= measured.0 && now < measured.1 {
                    self.out.in_window += 1;
                    self.out.latency_sum += (now - p.sent).as_secs_f64();
                }
                Some(slot)
            }
            _ => {
                self.out.late += 1;
                None
            }
        }
    }

    /// Declares lost the queries sent `lost_after` or more before `now`; returns their slots.
    fn expire(&mut self, now: Instant) -> Vec<usize> {
        let mut freed = Vec::new();
        for (slot, pending) in self.slots.iter_mut().enumerate() {
            if pending.is_some_and(|p| now.duration_since(p.sent) >= self.lost_after) {
                *pending = None;
                freed.push(slot);
            }
        }
        self.outstanding -= freed.len();
        self.out.lost += freed.len() as u64;
        freed
    }
}

/// The shape of one load run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Load {
    /// Queries kept outstanding.
    window: usize,
    /// The first `window` queries go out evenly spread over this time, not at once: then the
    /// answers come back spread as well, instead of in bursts of a whole window that a
    /// measured window would count a whole burst more or less of.
    ramp: Duration,
    /// Load before the measured window (the ramp included).
    warm: Duration,
    /// The measured window.
    measure: Duration,
    /// A query unanswered this long is lost ([`LOST_AFTER`] in the study).
    lost_after: Duration,
}

impl Load {
    /// `window` queries outstanding, ramped up over one upstream [`DELAY`], with the study's
    /// loss timeout.
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

/// Keeps `load.window` queries outstanding against `target` for `warm + measure` (after a
/// ramp that starts them one by one), then waits for the outstanding ones (each at most
/// `lost_after`). Bounded in time (`warm + measure + lost_after`, plus one poll) and in
/// queries ([`MAX_QUERIES`]).
fn generate(target: SocketAddr, load: Load) -> io::Result<LoadOutcome> {
    let Load {
        window,
        ramp,
        warm,
        measure,
        lost_after,
    } = load;
    let socket = udp_socket()?;
    socket.connect(target)?;
    socket.set_read_timeout(Some(LOAD_POLL))?;
    let mut g = Generator {
        socket,
        slots: vec![None; window],
        next_id: (0..window as u64).collect(),
        outstanding: 0,
        lost_after,
        out: LoadOutcome {
            window: measure,
            ..LoadOutcome::default()
        },
    };
    let start = Instant::now();
    let measured = (start + warm, start + warm + measure);
    let until = measured.1;
    let hard_end = until + lost_after + LOAD_POLL;
    // Slots below `ramped` have been started; slot k starts at `start + ramp * k / window`.
    let mut ramped = 0usize;
    let mut buf = [0u8; 512];
    let mut next_scan = start + LOSS_SCAN;
    loop {
        let now = Instant::now();
        while ramped < window
            && now < until
            && now >= start + ramp.mul_f64(ramped as f64 / window as f64)
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
                if let Some(slot) = g.complete(&buf[..n], now, measured) {
                    if now < until {
                        g.send(slot);
                    }
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

/// [`generate`] on a thread of its own, joined.
fn run_load(target: SocketAddr, load: Load) -> io::Result<LoadOutcome> {
    thread::Builder::new()
        .name("load".to_owned())
        .spawn(move || generate(target, load))?
        .join()
        .map_err(|_| io::Error::other("the load generator panicked"))?
}

// ---------------------------------------------------------------------------------------
// Cells, rounds and the report.

/// `this process / others` as shares of all CPUs over an interval, e.g. `12% / 3%`.
fn shares(ticks: CpuTicks) -> String {
    match ticks.shares() {
        (this, _) if this.is_nan() => "not read".to_owned(),
        (this, others) => format!("{this:.0}% / {others:.0}%"),
    }
}

/// One run of one mode at one io_workers value.
#[derive(Debug, Clone, Copy)]
struct Cell {
    mode: Mode,
    io_workers: usize,
    load: LoadOutcome,
    plane: PlaneCounts,
    threads_before: Option<u32>,
    threads_after: Option<u32>,
    /// The CPU time of the machine and of this process during the cell.
    cpu: Option<CpuTicks>,
    wall: Duration,
}

/// Starts an upstream and a dataplane, runs the load against it, stops both.
fn run_cell(
    mode: Mode,
    io_workers: usize,
    plan: &Plan,
    pool: &Arc<rayon::ThreadPool>,
) -> io::Result<Cell> {
    let threads_before = os_threads();
    let cpu_before = CpuTicks::now();
    let started = Instant::now();
    let upstream = Upstream::start()?;
    let plane = Dataplane::start(mode, io_workers, upstream.addr, pool)?;
    let outcome = run_load(plane.addr, Load::new(WINDOW, plan.warm, plan.measure));
    let counts = plane.stop();
    drop(upstream);
    let (load, plane) = (outcome?, counts?);
    Ok(Cell {
        mode,
        io_workers,
        load,
        plane,
        threads_before,
        threads_after: os_threads(),
        cpu: CpuTicks::now()
            .zip(cpu_before)
            .map(|(after, before)| after.since(before)),
        wall: started.elapsed(),
    })
}

/// The rig measured without the dataplane: the upstream's unloaded latency (one query at a
/// time) and what the generator reaches against it directly with the full window.
#[derive(Debug, Clone, Copy)]
struct Baseline {
    /// Latency of one query at a time, straight to the upstream, in seconds.
    unloaded: f64,
    /// The full window straight to the upstream.
    direct: LoadOutcome,
}

impl Baseline {
    fn measure(plan: &Plan) -> io::Result<Self> {
        let upstream = Upstream::start()?;
        let unloaded = run_load(upstream.addr, Load::new(1, Duration::ZERO, plan.probe))?;
        let direct = run_load(upstream.addr, Load::new(WINDOW, plan.warm, plan.measure))?;
        Ok(Self {
            unloaded: unloaded.latency(),
            direct,
        })
    }

    /// Split mode's Little's-law bound: window / latency, in queries per second.
    fn split_bound(&self) -> f64 {
        WINDOW as f64 / self.unloaded
    }

    /// Sync mode's bound: ingress threads / latency.
    fn sync_bound(&self) -> f64 {
        INGRESS as f64 / self.unloaded
    }

    fn bound(&self, mode: Mode) -> f64 {
        match mode {
            Mode::Split => self.split_bound(),
            Mode::Sync => self.sync_bound(),
        }
    }
}

/// One mode's runs at one io_workers value, summed and summarized.
#[derive(Debug, Clone, PartialEq)]
struct Tally {
    mode: Mode,
    io_workers: usize,
    /// QPS of each round, in round order.
    qps: Vec<f64>,
    sent: u64,
    completed: u64,
    lost: u64,
    late: u64,
    send_errors: u64,
    failed: u64,
    in_window: u64,
    latency_sum: f64,
    /// The CPU time of its cells, summed over those where it could be read.
    cpu: CpuTicks,
}

impl Tally {
    fn of(mode: Mode, io_workers: usize, cells: &[Cell]) -> Self {
        let mine: Vec<&Cell> = cells
            .iter()
            .filter(|c| c.mode == mode && c.io_workers == io_workers)
            .collect();
        let sum = |f: fn(&Cell) -> u64| mine.iter().map(|c| f(c)).sum::<u64>();
        Self {
            mode,
            io_workers,
            qps: mine.iter().map(|c| c.load.qps()).collect(),
            sent: sum(|c| c.load.sent),
            completed: sum(|c| c.load.completed),
            lost: sum(|c| c.load.lost),
            late: sum(|c| c.load.late),
            send_errors: sum(|c| c.load.send_errors),
            failed: sum(|c| c.plane.failed),
            in_window: sum(|c| c.load.in_window),
            latency_sum: mine.iter().map(|c| c.load.latency_sum).sum(),
            cpu: mine
                .iter()
                .filter_map(|c| c.cpu)
                .fold(CpuTicks::default(), CpuTicks::add),
        }
    }

    /// The median QPS over rounds (NaN if there were none).
    fn qps(&self) -> f64 {
        Summary::of(&self.qps).map_or(f64::NAN, |s| s.median)
    }

    /// The average latency over every answer of the measured windows, in seconds.
    fn latency(&self) -> f64 {
        self.latency_sum / self.in_window as f64
    }
}

/// The table of the study: one line per mode and io_workers value.
fn table(tallies: &[Tally], base: &Baseline) -> String {
    let rows: Vec<Vec<String>> = tallies
        .iter()
        .map(|t| {
            let s = Summary::of(&t.qps);
            let bound = base.bound(t.mode);
            vec![
                t.io_workers.to_string(),
                t.mode.label().to_owned(),
                format!(
                    "{:.0} ({:.0}-{:.0})",
                    t.qps(),
                    s.map_or(f64::NAN, |s| s.min),
                    s.map_or(f64::NAN, |s| s.max)
                ),
                format!("{:.2}", t.latency() * 1e3),
                format!("{} / {} / {}", t.sent, t.completed, t.lost),
                format!("{bound:.0}"),
                pct(t.qps() / bound),
                format!("{:.1}", t.qps() * t.latency()),
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
    table_of(&head, "---:", &rows).trim_end().to_owned()
}

/// The study's goals, judged on the tallies.
fn goals(tallies: &[Tally], base: &Baseline) -> Vec<Judged> {
    let split: Vec<&Tally> = tallies.iter().filter(|t| t.mode == Mode::Split).collect();
    let sync: Vec<&Tally> = tallies.iter().filter(|t| t.mode == Mode::Sync).collect();
    let percents = |ts: &[&Tally], bound: f64| {
        ts.iter()
            .map(|t| format!("{} at io_workers={}", pct(t.qps() / bound), t.io_workers))
            .collect::<Vec<_>>()
            .join(", ")
    };
    // The achieved / bound furthest from 1 among `ts`, as the figure of a goal.
    let furthest = |ts: &[&Tally], bound: f64| {
        ts.iter()
            .map(|t| t.qps() / bound)
            .max_by(|a, b| (a - 1.0).abs().total_cmp(&(b - 1.0).abs()))
            .map_or("-".to_owned(), pct)
    };
    let mut out = Vec::new();

    let bound = base.split_bound();
    let lost: u64 = split.iter().map(|t| t.lost).sum();
    let near = split.iter().all(|t| t.qps() >= (1.0 - SLACK) * bound);
    out.push(Judged::once(
        "split mode within 5% of the Little's-law bound (window / latency) with 0 lost",
        (!split.is_empty()).then(|| Check {
            met: near && lost == 0,
            value: format!("{} of the bound, {lost} lost", furthest(&split, bound)),
            bound: format!(">= {}, 0 lost", pct(1.0 - SLACK)),
            detail: format!(
                "achieved / bound {}, bound {WINDOW} / {:.2} ms = {bound:.0} QPS; lost {lost}",
                percents(&split, bound),
                base.unloaded * 1e3,
            ),
        }),
    ));

    let qps: Vec<f64> = split.iter().map(|t| t.qps()).collect();
    let (lo, hi) = qps
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &q| {
            (lo.min(q), hi.max(q))
        });
    let spread = (hi - lo) / hi;
    out.push(Judged::once(
        "split mode flat across io_workers (within 5%)",
        (split.len() > 1).then(|| Check {
            met: spread <= SLACK,
            value: format!("spread {}", pct(spread)),
            bound: format!("<= {}", pct(SLACK)),
            detail: format!(
                "median QPS {lo:.0} to {hi:.0} over io_workers {}, a spread of {}",
                split
                    .iter()
                    .map(|t| t.io_workers.to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
                pct(spread),
            ),
        }),
    ));

    let bound = base.sync_bound();
    let at_bound = sync.iter().all(|t| (t.qps() / bound - 1.0).abs() <= SLACK);
    out.push(Judged::once(
        "sync mode bounded by ingress threads / latency (at it, within 5%)",
        (!sync.is_empty()).then(|| Check {
            met: at_bound,
            value: format!("{} of the bound", furthest(&sync, bound)),
            bound: format!("{}-{}", pct(1.0 - SLACK), pct(1.0 + SLACK)),
            detail: format!(
                "achieved / bound {}, bound {INGRESS} / {:.2} ms = {bound:.0} QPS; lost {}",
                percents(&sync, bound),
                base.unloaded * 1e3,
                sync.iter().map(|t| t.lost).sum::<u64>(),
            ),
        }),
    ));
    out
}

fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

/// What the counts show beyond the goals, from the numbers.
fn diagnosis(tallies: &[Tally], base: &Baseline) -> String {
    let failed: u64 = tallies.iter().map(|t| t.failed).sum();
    let late: u64 = tallies.iter().map(|t| t.late).sum();
    let send_errors: u64 = tallies.iter().map(|t| t.send_errors).sum();
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
        pct(base.direct.qps() / base.split_bound()),
        base.direct.latency() * 1e3,
        WINDOW as f64 / base.sync_bound() * 1e3,
    )
}

/// The OS thread counts around the cells and the machine's load, as one paragraph.
fn threads_note(cells: &[Cell], first: Option<u32>, load: [Option<String>; 2]) -> String {
    let leaked = cells
        .iter()
        .filter(|c| matches!((c.threads_before, c.threads_after), (Some(b), Some(a)) if a > b))
        .count();
    let read = |x: Option<String>| x.unwrap_or_else(|| "not read".to_owned());
    format!(
        "Threads: {} before the first cell; {leaked} of {} cells ended with more threads than \
         they began with (each joins its ingress threads, IoRuntime, upstream and load \
         thread). Load average (1/5/15 min) before the first cell {}, after the last {}.",
        read(first.map(|n| n.to_string())),
        cells.len(),
        read(load[0].clone()),
        read(load[1].clone()),
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
        thread::available_parallelism().map_or(0, usize::from),
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
    let pool = Arc::new(
        rayon::ThreadPoolBuilder::new()
            .num_threads(POLICY)
            .thread_name(|k| format!("policy-{k}"))
            .build()
            .map_err(io::Error::other)?,
    );
    // Every policy thread runs a job before anything is measured.
    for _ in 0..100 {
        pool.broadcast(|_| black_box(()));
    }
    let rcvbuf = granted_rcvbuf()?;
    let variants = [Mode::Split.variant(), Mode::Sync.variant()];
    // The progress bar: the baseline counts as the first scenario's calibration step, then
    // one step per round.
    progress::measurement_started(plan.rounds, variants.into_iter());
    let base = Baseline::measure(&plan)?;
    progress::step_done(true);
    let fixed = fixed(&plan, &base, rcvbuf);
    let first_threads = os_threads();
    let first_load = load_average();

    let mut cells = Vec::new();
    let mut reports = Vec::new();
    let mut tallies = Vec::new();
    for (k, &(io_workers, name)) in IO_WORKERS[..plan.io_values].iter().enumerate() {
        if k > 0 {
            progress::measurement_started(plan.rounds, variants.into_iter());
            progress::step_done(true);
        }
        let mut mine = Vec::new();
        for round in 0..plan.rounds {
            let order = if round % 2 == 0 {
                [Mode::Split, Mode::Sync]
            } else {
                [Mode::Sync, Mode::Split]
            };
            for mode in order {
                mine.push(run_cell(mode, io_workers, &plan, &pool)?);
            }
            progress::step_done(false);
        }
        let here: Vec<Tally> = [Mode::Split, Mode::Sync]
            .into_iter()
            .map(|mode| Tally::of(mode, io_workers, &mine))
            .collect();
        let samples = |mode: Mode| -> Vec<f64> {
            mine.iter()
                .filter(|c| c.mode == mode)
                .map(|c| c.load.ns_per_query())
                .collect()
        };
        let modes = [Mode::Split, Mode::Sync].map(|mode| (mode.variant(), samples(mode)));
        let m = Measurement::of(plan.rounds, modes);
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
                max_ns: 1e9 / ((1.0 - SLACK) * base.split_bound()),
                text: "split mode (bridge) within 5% of the Little's-law bound window / latency",
            }],
            notes: vec![format!(
                "{}\n\nThis scenario's {} cells took {wall:.1} s.",
                table(&here, &base),
                mine.len()
            )],
            rows: rows(name, &m),
            ..Default::default()
        });
        tallies.extend(here);
        cells.extend(mine);
    }
    if let Some(last) = reports.last_mut() {
        last.notes.push(format!(
            "All io_workers values:\n\n{}",
            table(&tallies, &base)
        ));
        last.judged = goals(&tallies, &base);
        last.notes.push(diagnosis(&tallies, &base));
        last.notes.push(threads_note(
            &cells,
            first_threads,
            [first_load, load_average()],
        ));
    }
    Ok(reports)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool() -> Arc<rayon::ThreadPool> {
        Arc::new(
            rayon::ThreadPoolBuilder::new()
                .num_threads(POLICY)
                .build()
                .unwrap(),
        )
    }

    #[test]
    fn queries_carry_their_id_and_policy_depends_on_them() {
        assert_eq!(id_of(&query(7)), Some(7));
        assert_eq!(id_of(&query(u64::MAX)), Some(u64::MAX));
        assert_eq!(id_of(&[0u8; 8]), None);
        assert_eq!(policy(&query(3)), policy(&query(3)));
        assert_ne!(policy(&query(3)), policy(&query(4)));
    }

    #[test]
    fn generator_keeps_its_window_against_the_upstream() {
        let upstream = Upstream::start().unwrap();
        let load = Load::new(8, Duration::from_millis(30), Duration::from_millis(100));
        let out = run_load(upstream.addr, load).unwrap();
        assert_eq!(out.lost, 0);
        assert_eq!(out.sent, out.completed);
        assert!(out.in_window > 0);
        // Every answer takes the upstream's delay.
        assert!(out.latency() >= DELAY.as_secs_f64());
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
        let pool = pool();
        for mode in [Mode::Split, Mode::Sync] {
            let cell = run_cell(mode, 1, &plan, &pool).unwrap();
            assert_eq!(cell.load.lost, 0, "{mode:?}");
            assert_eq!(cell.load.sent, cell.load.completed, "{mode:?}");
            assert_eq!(cell.plane.failed, 0, "{mode:?}");
            assert!(cell.plane.received >= cell.load.completed, "{mode:?}");
        }
    }

    #[test]
    fn lost_queries_are_counted_resent_and_the_run_ends() {
        // Nobody answers at this address: every query is lost after `lost_after`, its slot
        // gets a new query until the measured window ends, and the run ends within its bound.
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
