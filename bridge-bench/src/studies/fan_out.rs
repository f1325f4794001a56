//! The fan-out study: N suspended consumers, each waiting on its own bridge oneshot, fed by a
//! few producer threads. The primitive is the same in every row; only the driver of the
//! consumers differs: tasks on a fixed async-executor pool, tokio tasks, or one OS thread per
//! consumer blocked in `recv_blocking`.

use crate::harness::{Batch, MISSING, Settings, Variant, measure};
use crate::proc::os_threads;
use crate::report::{BASELINE, Check, Goal, Judged, Measure, Row, ScenarioReport};
use crate::report::{find, rows, table};
use async_executor::Executor;
use bridge::oneshot::{self, Receiver, Sender};
use futures::future::join_all;
use std::cell::RefCell;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release};
use std::thread::{self, JoinHandle, Thread};
use std::time::{Duration, Instant};

/// The consumer counts with their scenarios; `--quick` leaves out 1,000.
const FULL: &[(u64, &str)] = &[
    (100, "consumers-100"),
    (1_000, "consumers-1000"),
    (10_000, "consumers-10000"),
    (100_000, "consumers-100000"),
];

const PRODUCERS: u64 = 2;
/// The most consumer threads, and their stack.
const THREAD_LIMIT: u64 = 10_000;
const THREAD_STACK: usize = 64 * 1024;
/// Before a blocking wave: wait until the runnable threads settle (at most [`QUIET_LIMIT`]),
/// then [`SETTLE`] more.
const SETTLE: Duration = Duration::from_millis(1);
const QUIET_LIMIT: Duration = Duration::from_millis(100);
/// Rounds per scenario at most (10,000 threads per batch are slow).
const MAX_ROUNDS: usize = 21;
/// Batches are this many times the harness's, for the fast drivers' sake.
const BATCH_SCALE: u32 = 5;
/// A controller wait longer than this is a lost consumer.
const STALL: Duration = Duration::from_secs(120);
/// Goals: the pool's rate at every N over its rate at the smallest N; its rate over
/// thread-per-consumer's at [`GAP_AT`].
const HOLD: f64 = 0.5;
const GAP: f64 = 10.0;
const GAP_AT: u64 = 10_000;

const POOL: &str = BASELINE;
const TOKIO: &str = "tokio";
const THREADS: &str = "thread-per-consumer";

/// What runs the consumers (see [`varied`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Driver {
    Pool,
    Tokio,
    Threads,
}

impl Driver {
    const ALL: [Self; 3] = [Self::Pool, Self::Tokio, Self::Threads];

    fn name(self) -> &'static str {
        [POOL, TOKIO, THREADS][self as usize]
    }
}

/// What the consumers, producers and controller share during a batch; the times are ns
/// since `epoch`.
#[derive(Debug)]
struct Shared {
    n: u64,
    epoch: Instant,
    waiting: AtomicU64,
    received: AtomicU64,
    done: AtomicU64,
    released: AtomicU64,
    aborted: AtomicBool,
    first_send: AtomicU64,
    last_receipt: AtomicU64,
    controller: Thread,
}

impl Shared {
    fn new(n: u64) -> Self {
        Self {
            n,
            epoch: Instant::now(),
            waiting: AtomicU64::new(0),
            received: AtomicU64::new(0),
            done: AtomicU64::new(0),
            released: AtomicU64::new(0),
            aborted: AtomicBool::new(false),
            first_send: AtomicU64::new(u64::MAX),
            last_receipt: AtomicU64::new(0),
            controller: thread::current(),
        }
    }

    fn now(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// A consumer waits for its item of the current wave; the last one wakes the controller.
    fn waiting(&self) {
        // ORDERING: Release pairs with the controller's Acquire: the wait is registered
        // before the producers are released.
        let k = self.waiting.fetch_add(1, Release) + 1;
        if k % self.n == 0 {
            self.controller.unpark();
        }
    }

    /// A consumer has its item; the wave's last stamps the time and wakes the controller.
    fn receipt(&self) {
        // ORDERING: AcqRel carries every producer's `first_send` to the last consumer.
        let k = self.received.fetch_add(1, AcqRel) + 1;
        if k % self.n == 0 {
            self.last_receipt.store(self.now(), Relaxed);
            // ORDERING: Release pairs with the controller's Acquire load of `done`.
            self.done.store(k / self.n, Release);
            self.controller.unpark();
        }
    }
}

/// Parks the controller until `ready`; panics after [`STALL`].
fn wait_for(what: &str, mut ready: impl FnMut() -> bool) {
    let deadline = Instant::now() + STALL;
    while !ready() {
        let now = Instant::now();
        assert!(
            now < deadline,
            "fan-out: {what} did not happen within {} s",
            STALL.as_secs()
        );
        thread::park_timeout(deadline - now);
    }
}

/// A receiver that says the consumer waits after its first poll.
fn waiting(mut rx: Receiver<u64>, shared: &Shared) -> impl Future<Output = u64> + '_ {
    let mut reported = false;
    std::future::poll_fn(move |cx| {
        let poll = Pin::new(&mut rx).poll(cx).map(|r| r.unwrap_or(MISSING));
        if !reported {
            reported = true;
            shared.waiting();
        }
        poll
    })
}

/// A consumer's receivers: one per wave, then `end`, so none finishes inside a timed wave.
type Receivers = (Vec<Receiver<u64>>, Receiver<u64>);

/// An async consumer: one item per wave; returns their sum.
async fn consume(shared: Arc<Shared>, (waves, end): Receivers) -> u64 {
    let mut sum = 0u64;
    for rx in waves {
        sum = sum.wrapping_add(waiting(rx, &shared).await);
        shared.receipt();
    }
    let _ = end.await;
    sum
}

fn consume_blocking(shared: &Shared, (waves, end): Receivers) -> u64 {
    let mut sum = 0u64;
    for rx in waves {
        shared.waiting();
        sum = sum.wrapping_add(rx.recv_blocking().unwrap_or(MISSING));
        shared.receipt();
    }
    let _ = end.recv_blocking();
    sum
}

/// A producer: each released wave, sends `wave * n + i` to consumer `i` of its share.
fn produce(shared: &Shared, first: u64, waves: Vec<Vec<Sender<u64>>>) {
    for (wave, senders) in (0u64..).zip(waves) {
        // ORDERING: Acquire pairs with the controller's Release (the `first_send` reset).
        while shared.released.load(Acquire) <= wave {
            thread::park();
        }
        // ORDERING: Acquire pairs with the Release store in `Producers::abort`.
        if shared.aborted.load(Acquire) {
            return;
        }
        // ORDERING: Relaxed; the sends below (Release) carry it to the consumers.
        shared.first_send.fetch_min(shared.now(), Relaxed);
        for (i, tx) in (first..).zip(senders) {
            let _ = tx.send(wave * shared.n + i);
        }
    }
}

struct Producers {
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
}

impl Producers {
    /// Starts the producers; `senders[p][w]` are producer `p`'s of wave `w`.
    fn start(shared: &Arc<Shared>, senders: Vec<Vec<Vec<Sender<u64>>>>) -> io::Result<Self> {
        let mut producers = Self {
            shared: Arc::clone(shared),
            threads: Vec::new(),
        };
        for (p, waves) in (0u64..).zip(senders) {
            let shared = Arc::clone(shared);
            let first = share_start(p, shared.n);
            let named = thread::Builder::new().name(format!("fan-out-producer-{p}"));
            let spawned = named.spawn(move || produce(&shared, first, waves));
            match spawned {
                Ok(t) => producers.threads.push(t),
                Err(e) => {
                    producers.abort();
                    return Err(e);
                }
            }
        }
        Ok(producers)
    }

    fn release(&self, wave: u64) {
        // ORDERING: Relaxed; the Release store of `released` publishes it.
        self.shared.first_send.store(u64::MAX, Relaxed);
        // ORDERING: Release pairs with the producers' Acquire load.
        self.shared.released.store(wave + 1, Release);
        for t in &self.threads {
            t.thread().unpark();
        }
    }

    /// Stops the producers early (senders dropped unsent) and joins them.
    fn abort(self) {
        // ORDERING: Release pairs with the producers' Acquire loads.
        self.shared.aborted.store(true, Release);
        self.shared.released.store(u64::MAX, Release);
        for t in &self.threads {
            t.thread().unpark();
        }
        self.join();
    }

    fn join(self) {
        for t in self.threads {
            let _ = t.join();
        }
    }
}

fn share_start(p: u64, n: u64) -> u64 {
    p * n / PRODUCERS
}

/// A fixed async-executor pool, each thread in `Executor::run` under `bridge::block_on`.
struct Pool {
    executor: Arc<Executor<'static>>,
    stops: Vec<Sender<()>>,
    threads: Vec<JoinHandle<()>>,
}

impl Pool {
    fn start(workers: usize) -> io::Result<Self> {
        let mut pool = Self {
            executor: Arc::new(Executor::new()),
            stops: Vec::new(),
            threads: Vec::new(),
        };
        for k in 0..workers {
            let (stop, stopped) = oneshot::channel::<()>();
            let executor = Arc::clone(&pool.executor);
            let thread = thread::Builder::new()
                .name(format!("fan-out-pool-{k}"))
                .spawn(move || {
                    bridge::block_on(executor.run(async move {
                        let _ = stopped.await;
                    }));
                })?;
            pool.stops.push(stop);
            pool.threads.push(thread);
        }
        Ok(pool)
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        for stop in self.stops.drain(..) {
            let _ = stop.send(());
        }
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

enum Consumers {
    Pool(Pool, Vec<async_executor::Task<u64>>),
    Tokio(tokio::runtime::Runtime, Vec<tokio::task::JoinHandle<u64>>),
    Threads(Vec<JoinHandle<u64>>),
}

impl Consumers {
    fn new(driver: Driver) -> io::Result<Self> {
        Ok(match driver {
            Driver::Pool => Self::Pool(Pool::start(super::cpus())?, Vec::new()),
            Driver::Tokio => {
                let mut rt = tokio::runtime::Builder::new_multi_thread();
                Self::Tokio(rt.worker_threads(super::cpus()).build()?, Vec::new())
            }
            Driver::Threads => Self::Threads(Vec::new()),
        })
    }

    /// Starts one consumer per entry of `receivers`.
    fn spawn_all(&mut self, shared: &Arc<Shared>, receivers: Vec<Receivers>) -> io::Result<()> {
        for waves in receivers {
            let shared = Arc::clone(shared);
            match self {
                Self::Pool(pool, tasks) => tasks.push(pool.executor.spawn(consume(shared, waves))),
                Self::Tokio(rt, handles) => handles.push(rt.spawn(consume(shared, waves))),
                Self::Threads(handles) => {
                    let thread = thread::Builder::new().stack_size(THREAD_STACK);
                    handles.push(thread.spawn(move || consume_blocking(&shared, waves))?);
                }
            }
        }
        Ok(())
    }

    /// Waits for every consumer, stops the driver; returns the sum received.
    fn finish(self) -> u64 {
        let add = |sum: u64, x: u64| sum.wrapping_add(x);
        match self {
            Self::Pool(_pool, tasks) => bridge::block_on(join_all(tasks)).into_iter().fold(0, add),
            Self::Tokio(rt, handles) => {
                let all = rt.block_on(join_all(handles)).into_iter();
                all.map(|h| h.unwrap_or(MISSING)).fold(0, add)
            }
            Self::Threads(handles) => {
                let all = handles.into_iter().map(|h| h.join().unwrap_or(MISSING));
                all.fold(0, add)
            }
        }
    }
}

/// The process's threads before a batch and when all its consumers first waited.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Census {
    before: Option<u32>,
    peak: Option<u32>,
}

/// The thread count once it stops moving (a joined thread lingers a moment).
fn settled_threads() -> Option<u32> {
    let mut last = os_threads();
    for _ in 0..20 {
        thread::sleep(Duration::from_millis(1));
        let now = os_threads();
        if now == last {
            break;
        }
        last = now;
    }
    last
}

/// The machine's runnable threads (/proc/loadavg's fourth field).
fn runnable() -> Option<u64> {
    let loadavg = std::fs::read_to_string("/proc/loadavg").ok()?;
    let (runnable, _total) = loadavg.split_whitespace().nth(3)?.split_once('/')?;
    runnable.parse().ok()
}

/// Waits (at most [`QUIET_LIMIT`]) until at most `idle + 1` threads are runnable; whether
/// it got there.
fn quiet(idle: u64) -> bool {
    let deadline = Instant::now() + QUIET_LIMIT;
    loop {
        match runnable() {
            Some(n) if n > idle + 1 => {}
            _ => return true,
        }
        if Instant::now() >= deadline {
            return false;
        }
        thread::sleep(Duration::from_micros(100));
    }
}

/// One batch of `waves` waves to `n` fresh consumers, timed from each wave's first send to
/// its last receipt.
fn batch(driver: Driver, n: u64, waves: u64) -> io::Result<(Batch, Census)> {
    let before = settled_threads();
    let mut idle = runnable(); // `None` once a wait to settle timed out
    let shared = Arc::new(Shared::new(n));
    // receivers[i].0[w], senders[p][w][k], ends[i].
    let capacity = usize::try_from(waves).unwrap_or(0);
    let (ends, mut receivers): (Vec<Sender<u64>>, Vec<Receivers>) = (0..n)
        .map(|_| {
            let (end, ended) = oneshot::channel();
            (end, (Vec::with_capacity(capacity), ended))
        })
        .unzip();
    let senders: Vec<Vec<Vec<Sender<u64>>>> = (0..PRODUCERS)
        .map(|p| {
            let share = &mut receivers[share_start(p, n) as usize..share_start(p + 1, n) as usize];
            let channel = |(rx, _): &mut Receivers| {
                let (tx, r) = oneshot::channel();
                rx.push(r);
                tx
            };
            (0..waves)
                .map(|_| share.iter_mut().map(channel).collect())
                .collect()
        })
        .collect();

    let mut consumers = Consumers::new(driver)?;
    let producers = Producers::start(&shared, senders)?;
    if let Err(e) = consumers.spawn_all(&shared, receivers) {
        producers.abort();
        drop(ends);
        consumers.finish();
        return Err(e);
    }

    let mut census = Census { before, peak: None };
    let mut elapsed = 0u64;
    for wave in 0..waves {
        // ORDERING: Acquire pairs with the consumers' Release in `Shared::waiting`.
        wait_for("every consumer waiting", || {
            shared.waiting.load(Acquire) >= (wave + 1) * n
        });
        if driver == Driver::Threads {
            idle = idle.filter(|&n| quiet(n));
            thread::sleep(SETTLE);
        }
        if wave == 0 {
            census.peak = os_threads();
        }
        producers.release(wave);
        // ORDERING: Acquire pairs with the last consumer's Release in `Shared::receipt`.
        wait_for("every item received", || shared.done.load(Acquire) > wave);
        let first = shared.first_send.load(Relaxed);
        let last = shared.last_receipt.load(Relaxed);
        elapsed += last.saturating_sub(first);
    }
    drop(ends);
    let checksum = consumers.finish();
    producers.join();
    let elapsed = Duration::from_nanos(elapsed);
    Ok((Batch { elapsed, checksum }, census))
}

/// One driver's thread counts over its batches: started (peak - before), and peak.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Threads {
    started_min: Option<u32>,
    started_max: Option<u32>,
    peak_max: Option<u32>,
}

impl Threads {
    fn record(&mut self, census: Census) {
        let Some(peak) = census.peak else {
            return;
        };
        self.peak_max = Some(self.peak_max.map_or(peak, |m| m.max(peak)));
        if let Some(before) = census.before {
            let started = peak.saturating_sub(before);
            self.started_min = Some(self.started_min.map_or(started, |m| m.min(started)));
            self.started_max = Some(self.started_max.map_or(started, |m| m.max(started)));
        }
    }

    fn text(&self) -> String {
        let started = match (self.started_min, self.started_max) {
            (Some(a), Some(b)) if a == b => grouped(a.into()),
            (Some(a), Some(b)) => format!("{}-{}", grouped(a.into()), grouped(b.into())),
            _ => "not read".to_owned(),
        };
        match self.peak_max {
            Some(peak) => format!("{started} ({} in the process)", grouped(peak.into())),
            None => started,
        }
    }
}

/// One driver at one consumer count, with its items/s from the median ns per item.
#[derive(Debug, Clone, PartialEq)]
struct Cell {
    n: u64,
    driver: Driver,
    rate: Option<f64>,
    threads: Threads,
    skipped: Option<String>,
}

/// Runs the scenario of each consumer count.
pub fn run(settings: &Settings) -> io::Result<Vec<ScenarioReport>> {
    let mut counts = FULL.to_vec();
    counts.retain(|&(n, _)| !settings.is_quick() || n != 1_000);
    let settings = Settings {
        rounds: settings.rounds.min(MAX_ROUNDS),
        batch: settings.batch * BATCH_SCALE,
        ..*settings
    };
    let mut reports = Vec::new();
    let mut cells = Vec::new();
    for &(n, name) in &counts {
        let (report, mut at_n) = scenario(name, n, &settings)?;
        reports.push(report);
        cells.append(&mut at_n);
    }
    if let Some(last) = reports.last_mut() {
        last.notes.push(summary(&cells));
        last.notes.push(PUBLISHED.to_owned());
        last.judged.push(hold_goal(&cells, &counts));
    }
    Ok(reports)
}

fn scenario(
    name: &'static str,
    n: u64,
    settings: &Settings,
) -> io::Result<(ScenarioReport, Vec<Cell>)> {
    let tallies: [RefCell<Threads>; 3] = Default::default();
    let variant = |driver: Driver| {
        let tally = &tallies[driver as usize];
        Variant::new(driver.name(), move |waves| {
            let (batch, census) = batch(driver, n, waves).unwrap_or_else(|e| {
                panic!("fan-out: {} at N = {n} could not start: {e}", driver.name())
            });
            tally.borrow_mut().record(census);
            batch
        })
    };
    for driver in [Driver::Pool, Driver::Tokio] {
        batch(driver, n.min(100), 1)?;
    }
    let mut variants = vec![variant(Driver::Pool), variant(Driver::Tokio)];
    let threads_skipped = if n > THREAD_LIMIT {
        Some(format!(
            "impractical: {} threads would reserve {} MiB of stacks; the study stops at {} threads",
            grouped(n),
            grouped(n * THREAD_STACK as u64 / (1024 * 1024)),
            grouped(THREAD_LIMIT)
        ))
    } else {
        match batch(Driver::Threads, n, 1) {
            Ok(_) => None,
            Err(e) => Some(format!("could not start {} threads: {e}", grouped(n))),
        }
    };
    if threads_skipped.is_none() {
        variants.push(variant(Driver::Threads));
    }
    let m = measure(&mut variants, n, settings, None);
    drop(variants);
    let rows = rows(name, &m);
    let cells: Vec<Cell> = Driver::ALL
        .into_iter()
        .map(|driver| Cell {
            n,
            driver,
            rate: find(&rows, driver.name()).map(|r| 1e9 / r.ns.median),
            threads: *tallies[driver as usize].borrow(),
            skipped: threads_skipped
                .clone()
                .filter(|_| driver == Driver::Threads),
        })
        .collect();
    let gap = "the fixed pool at least 10x the items/s of thread-per-consumer at 10,000 consumers";
    let goals = (n == GAP_AT).then(|| Goal::new(THREADS, GAP, gap));
    let report = ScenarioReport {
        name,
        varied: varied(),
        fixed: fixed(n),
        measure: Measure {
            per: "/item",
            ..Measure::default()
        },
        goals: goals.into_iter().collect(),
        notes: scenario_notes(&cells, &rows),
        rows,
        ..Default::default()
    };
    Ok((report, cells))
}

fn varied() -> String {
    format!(
        "only the driver of the consumers; the primitive is bridge::oneshot in every row. \
         `{POOL}` (the baseline): each consumer a task on a fixed async-executor pool of {p} \
         threads, awaiting its receiver. `{TOKIO}`: a task on a tokio multi-thread runtime \
         with {p} workers. `{THREADS}`: an OS thread per consumer ({} KiB stack) blocked in \
         recv_blocking, up to {} consumers.",
        THREAD_STACK / 1024,
        grouped(THREAD_LIMIT),
        p = super::cpus(),
    )
}

fn fixed(n: u64) -> String {
    format!(
        "N = {} consumers fed by {PRODUCERS} producer threads; {} CPUs. Each batch starts its \
         driver, the producers and the consumers afresh. One iteration is one wave: every \
         consumer waits on a fresh oneshot and the producers send one u64 to each. A wave \
         starts when all consumers wait (an async one after its first poll; a blocking one \
         once the machine's runnable threads settle, at most {} ms, then {} ms more). Timed: \
         from a wave's first send to its last receipt, summed over the waves. One operation \
         is one item. Threads are read from /proc/self/status when all consumers first wait.",
        grouped(n),
        super::cpus(),
        QUIET_LIMIT.as_millis(),
        SETTLE.as_millis(),
    )
}

/// A rate with a unit: `4.12 M/s`, `312 k/s`.
fn rate_text(per_s: f64) -> String {
    if per_s >= 1e6 {
        format!("{:.2} M/s", per_s / 1e6)
    } else {
        format!("{:.0} k/s", per_s / 1e3)
    }
}

/// `n` with thousands separators: `100,000`.
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (k, c) in digits.chars().enumerate() {
        if k > 0 && (digits.len() - k) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn scenario_notes(cells: &[Cell], rows: &[Row]) -> Vec<String> {
    let threads: Vec<String> = cells
        .iter()
        .map(|c| match (&c.skipped, c.rate) {
            (Some(why), _) => format!("{} not run ({why})", c.driver.name()),
            (None, Some(_)) => format!("{} {}", c.driver.name(), c.threads.text()),
            (None, None) => format!("{} not measured", c.driver.name()),
        })
        .collect();
    let mut notes = vec![format!(
        "OS threads started by a batch (and in the process) at peak: {}.",
        threads.join("; ")
    )];
    notes.extend(rows.first().map(|r| {
        let waves: Vec<String> = (rows.iter())
            .map(|r| format!("{} {}", r.variant, grouped(r.iters_per_round)))
            .collect();
        format!(
            "Waves of {} consumers per batch: {}.",
            grouped(r.ops_per_iter),
            waves.join(", ")
        )
    }));
    notes
}

fn cell(cells: &[Cell], n: u64, driver: Driver) -> Option<&Cell> {
    cells.iter().find(|c| c.n == n && c.driver == driver)
}

fn summary(cells: &[Cell]) -> String {
    let mut head = vec!["N".to_owned()];
    for d in Driver::ALL {
        let name = d.name();
        head.extend([format!("{name} items/s"), format!("{name} threads")]);
    }
    let mut counts: Vec<u64> = cells.iter().map(|c| c.n).collect();
    counts.dedup();
    let rows: Vec<Vec<String>> = counts
        .into_iter()
        .map(|n| {
            let mut row = vec![grouped(n)];
            for d in Driver::ALL {
                row.extend(match cell(cells, n, d) {
                    Some(c) if c.skipped.is_some() => ["not run".to_owned(), "-".to_owned()],
                    Some(Cell {
                        rate: Some(median),
                        threads,
                        ..
                    }) => [rate_text(*median), threads.text()],
                    _ => ["-".to_owned(), "-".to_owned()],
                });
            }
            row
        })
        .collect();
    let head: Vec<&str> = head.iter().map(String::as_str).collect();
    format!(
        "Across N (items/s: 10^9 / the median ns/item; threads started by a batch, the \
         process's total at peak in parentheses):\n\n{}",
        table(&head, "---:", &rows).trim_end()
    )
}

const PUBLISHED: &str = "Published for an IPC crate: a fixed pool held 4.5-5 M items/s on ~20 OS \
                         threads from 1,000 to 100,000 consumers, one thread per consumer \
                         stayed below 1 M items/s; the gap is the durable part, not the digits.";

/// The goal that the pool holds its rate across N.
fn hold_goal(cells: &[Cell], counts: &[(u64, &str)]) -> Judged {
    let text = format!(
        "the fixed pool holds its rate with a constant thread count to 100,000 consumers \
         (its items/s at every N at least {HOLD:.1}x its items/s at the smallest N, and the \
         same number of threads started at every N)"
    );
    let pool: Vec<&Cell> = counts
        .iter()
        .filter_map(|&(n, _)| cell(cells, n, Driver::Pool))
        .collect();
    let rates: Option<Vec<(u64, f64)>> = pool.iter().map(|c| Some((c.n, c.rate?))).collect();
    let check = match (rates, pool.first(), pool.last()) {
        (Some(rates), Some(first), Some(last)) if last.n >= 100_000 && first.n < last.n => {
            let base = rates[0].1;
            let ratios = rates.iter().map(|&(_, r)| r / base);
            let worst = ratios.min_by(f64::total_cmp).unwrap_or(f64::NAN);
            let relative: Vec<String> = rates[1..]
                .iter()
                .map(|&(n, r)| format!("{:.2}x at {}", r / base, grouped(n)))
                .collect();
            let started: Vec<Option<u32>> = pool
                .iter()
                .flat_map(|c| [c.threads.started_min, c.threads.started_max])
                .collect();
            let constant = started.iter().all(|s| s.is_some() && *s == started[0]);
            let started = first.threads.started_max.map(|s| s.to_string());
            let threads = if constant {
                format!("{} at every N", started.as_deref().unwrap_or("?"))
            } else {
                let per_n: Vec<String> = pool
                    .iter()
                    .map(|c| format!("{} at {}", c.threads.text(), grouped(c.n)))
                    .collect();
                format!("not constant: {}", per_n.join(", "))
            };
            let kind = if constant { "constant" } else { "not constant" };
            Some(Check {
                met: worst >= HOLD && constant,
                value: format!("lowest {worst:.2}x, threads {kind}"),
                bound: format!(">= {HOLD:.2}x, threads constant"),
                detail: format!(
                    "its {} at {} taken as 1: {}; lowest {worst:.2}x, needed {HOLD:.2}x; \
                     threads started {threads}",
                    rate_text(base),
                    grouped(first.n),
                    relative.join(", "),
                ),
            })
        }
        _ => None,
    };
    Judged::once(text, check)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::sum_below;

    #[test]
    fn every_driver_delivers_every_item() {
        for driver in Driver::ALL {
            for (n, waves) in [(1, 1), (5, 3), (64, 4)] {
                let (b, census) = batch(driver, n, waves).unwrap();
                assert_eq!(b.checksum, sum_below(n * waves), "{driver:?} n = {n}");
                if os_threads().is_some() {
                    // At least this thread, the producers and the driver's threads.
                    let expected = 1
                        + PRODUCERS
                        + match driver {
                            Driver::Threads => n,
                            _ => crate::studies::cpus() as u64,
                        };
                    let peak = u64::from(census.peak.unwrap());
                    assert!(peak >= expected, "{driver:?}: {peak} threads at peak");
                }
            }
        }
    }

    #[test]
    fn runnable_threads_are_read_on_linux() {
        if cfg!(target_os = "linux") {
            assert!(runnable().is_some_and(|n| n >= 1));
            assert!(quiet(u64::MAX - 1));
        }
    }

    fn cell_of(n: u64, driver: Driver, rate: f64, started: u32) -> Cell {
        Cell {
            n,
            driver,
            rate: Some(rate),
            threads: Threads {
                started_min: Some(started),
                started_max: Some(started),
                peak_max: Some(started + 2),
            },
            skipped: None,
        }
    }

    #[test]
    fn goals_come_from_the_numbers() {
        let mut cells = vec![
            cell_of(100, Driver::Pool, 4e6, 4),
            cell_of(1_000, Driver::Pool, 5e6, 4),
            cell_of(10_000, Driver::Pool, 4.5e6, 4),
            cell_of(100_000, Driver::Pool, 3e6, 4),
            cell_of(10_000, Driver::Threads, 2e5, 10_002),
        ];
        let check = |cells: &[Cell]| hold_goal(cells, FULL).runs[0].clone();
        let met = check(&cells).unwrap();
        assert!(met.met, "{met:?}");
        assert_eq!(met.value, "lowest 0.75x, threads constant");
        assert!(met.detail.contains("1.25x at 1,000, 1.12x at 10,000"));
        // Too slow at 100,000, then a thread more at 100,000.
        for (rate, threads) in [(1e6, 4), (4e6, 5)] {
            cells[3] = cell_of(100_000, Driver::Pool, rate, threads);
            assert!(!check(&cells).unwrap().met, "{rate} {threads}");
        }
        assert_eq!(check(&cells[..1]), None);
    }
}
