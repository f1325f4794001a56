//! The differential's cells: the corpus through the entry points, in the contexts and shapes
//! of the context-stack harness (`bridge_fuzz::contexts`); cells run under a watchdog in a
//! child process; the references; the table.

use crate::corpus::{CORPUS, Work, seed_of};
use bridge_fuzz::contexts::{
    BoxFuture, Ctx, Resources, Shape, Site, panic_message as message, register_thread_exit_early,
    site,
};
use std::any::Any;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::panic::{self, AssertUnwindSafe};
use std::sync::{OnceLock, mpsc};
use std::time::{Duration, Instant};

// ---------------------------------------------------------------------------------------
// What a cell is.

/// The contexts of the differential: all of the harness's but the two that only make sense
/// stacked (`bridge_core::block_on` and a nested `run_blocking`: the shape `NestedInJoin`
/// covers the latter), in the order of the tables' rows.
pub fn contexts() -> impl Iterator<Item = Ctx> {
    Ctx::ALL
        .into_iter()
        .filter(|ctx| !matches!(ctx, Ctx::BlockOn | Ctx::Nested))
}

/// The shapes of the differential, in the order of their rotation of the entry points.
const SHAPES: [Shape; 6] = [
    Shape::Plain,
    Shape::JoinedSibling,
    Shape::SelectedSibling,
    Shape::NestedInJoin,
    Shape::DropWhileUnwinding,
    Shape::ThreadLocalDestructor,
];

/// How far the entry point of a future's column rotates in `shape`'s tests.
fn rotation(shape: Shape) -> usize {
    SHAPES
        .iter()
        .position(|&s| s == shape)
        .expect("a shape of the differential")
}

/// How the future is handed to the bridge: the `run_blocking` family, or a crossing entry
/// point (the future run on the I/O runtime or on rayon, or read as a one-item stream).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryPoint {
    RunBlocking,
    TryRunBlocking,
    TryRunBlockingTimeout,
    /// `bridge::spawn_io(work).wait()`.
    SpawnIoWait,
    /// `bridge::spawn_io(work).join()`.
    SpawnIoJoin,
    /// `bridge::cpu::spawn_future(work).wait()`.
    SpawnFutureWait,
    /// `bridge::cpu::spawn_future(work).join()`.
    SpawnFutureJoin,
    /// `bridge::iter_blocking(stream::once(work)).next()`.
    IterBlocking,
    /// `bridge::stream::on_cpu(stream::once(work), 1)`, read through `iter_blocking`
    /// where the call site is sync and with `.next().await` where it is async.
    SpawnCpuStream,
}

impl EntryPoint {
    /// The `run_blocking` family.
    pub const RUN_BLOCKING: [EntryPoint; 3] = [
        EntryPoint::RunBlocking,
        EntryPoint::TryRunBlocking,
        EntryPoint::TryRunBlockingTimeout,
    ];

    /// Both families, the list that the shapes other than the plain one rotate over.
    pub const ALL: [EntryPoint; 9] = [
        EntryPoint::RunBlocking,
        EntryPoint::TryRunBlocking,
        EntryPoint::TryRunBlockingTimeout,
        EntryPoint::SpawnIoWait,
        EntryPoint::SpawnIoJoin,
        EntryPoint::SpawnFutureWait,
        EntryPoint::SpawnFutureJoin,
        EntryPoint::IterBlocking,
        EntryPoint::SpawnCpuStream,
    ];

    /// The crossing entry points: the future on another side, or read as a stream.
    pub const CROSSING: [EntryPoint; 6] = [
        EntryPoint::SpawnIoWait,
        EntryPoint::SpawnIoJoin,
        EntryPoint::SpawnFutureWait,
        EntryPoint::SpawnFutureJoin,
        EntryPoint::IterBlocking,
        EntryPoint::SpawnCpuStream,
    ];

    fn name(self) -> &'static str {
        match self {
            EntryPoint::RunBlocking => "run_blocking",
            EntryPoint::TryRunBlocking => "try_run_blocking",
            EntryPoint::TryRunBlockingTimeout => "try_run_blocking_timeout",
            EntryPoint::SpawnIoWait => "spawn_io.wait",
            EntryPoint::SpawnIoJoin => "spawn_io.join",
            EntryPoint::SpawnFutureWait => "cpu::spawn_future.wait",
            EntryPoint::SpawnFutureJoin => "cpu::spawn_future.join",
            EntryPoint::IterBlocking => "iter_blocking(once).next",
            EntryPoint::SpawnCpuStream => "stream::on_cpu(once, 1).next",
        }
    }

    /// The future runs as a task of the shared I/O runtime (`spawn_io`: "runs `future` as a
    /// task of the shared I/O runtime", whatever the caller's context), where tokio refuses
    /// what it refuses in any of its tasks: a runtime of the future's own blocked on inside.
    /// A future that tokio's `Runtime::block_on` refuses is then refused the same way, with
    /// the same panic, in every context: that refusal, not the plain-thread value, is what
    /// such a cell must give. (`cpu::spawn_future` only enters the I/O runtime's handle
    /// around its polls, which does not make a runtime inside refuse to block: the value is
    /// expected there.)
    fn runs_as_a_tokio_task(self) -> bool {
        matches!(self, EntryPoint::SpawnIoWait | EntryPoint::SpawnIoJoin)
    }

    /// The entry point of column `future` in a test of `shape` over `list` (one per column).
    pub fn rotated(future: usize, shape: Shape, list: &[EntryPoint]) -> Self {
        list[(future + rotation(shape)) % list.len()]
    }
}

/// The limit given to `try_run_blocking_timeout`: generous, and shorter than the watchdog's,
/// so that a hung call of that entry point shows what the deadline does.
const CALL_LIMIT: Duration = Duration::from_secs(20);

/// How long a cell may take before it is recorded as a hang.
const WATCHDOG: Duration = Duration::from_secs(25);

/// One call: a corpus future through an entry point, in a context and a shape.
#[derive(Debug, Clone, Copy)]
pub struct Cell {
    pub ctx: Ctx,
    pub shape: Shape,
    pub entry: EntryPoint,
    pub future: usize,
    /// Rows of the table: one per context (and entry point, when every entry point of a
    /// context has a row of its own).
    pub row_per_entry: bool,
}

impl Cell {
    fn row(&self) -> String {
        if self.row_per_entry {
            format!("{:?} / {}", self.ctx, self.entry.name())
        } else {
            format!("{:?}", self.ctx)
        }
    }
}

/// Every future through every entry point of `entries` in each of `contexts`, in the plain
/// shape.
pub fn plain(contexts: &[Ctx], entries: &[EntryPoint]) -> Vec<Cell> {
    let mut cells = Vec::new();
    for &ctx in contexts {
        for &entry in entries {
            for future in 0..CORPUS.len() {
                cells.push(Cell {
                    ctx,
                    shape: Shape::Plain,
                    entry,
                    future,
                    row_per_entry: true,
                });
            }
        }
    }
    cells
}

/// Every future in `shape` in each context where the shape exists, one entry point of
/// `entries` per future (rotated by column).
pub fn shaped(shape: Shape, entries: &[EntryPoint]) -> Vec<Cell> {
    let mut cells = Vec::new();
    for ctx in contexts() {
        if shape.needs_async_top() && !ctx.is_async() {
            continue;
        }
        for future in 0..CORPUS.len() {
            cells.push(Cell {
                ctx,
                shape,
                entry: EntryPoint::rotated(future, shape, entries),
                future,
                row_per_entry: false,
            });
        }
    }
    cells
}

// ---------------------------------------------------------------------------------------
// Outcomes.

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Value(u64),
    Panic(String),
    /// A typed error other than a panic.
    Error(String),
    Hang,
    /// No report came: the child process died first.
    Gone(String),
}

impl Outcome {
    fn encode(&self) -> String {
        let clean = |s: &str| s.replace(['\n', '\t'], " ");
        match self {
            Outcome::Value(v) => format!("v\t{v}"),
            Outcome::Panic(m) => format!("p\t{}", clean(m)),
            Outcome::Error(m) => format!("e\t{}", clean(m)),
            Outcome::Hang => "h\t".to_owned(),
            Outcome::Gone(m) => format!("g\t{}", clean(m)),
        }
    }

    fn decode(s: &str) -> Option<Self> {
        let (kind, rest) = s.split_once('\t')?;
        Some(match kind {
            "v" => Outcome::Value(rest.parse().ok()?),
            "p" => Outcome::Panic(rest.to_owned()),
            "e" => Outcome::Error(rest.to_owned()),
            "h" => Outcome::Hang,
            "g" => Outcome::Gone(rest.to_owned()),
            _ => return None,
        })
    }
}

/// The call itself, from sync code: `work` through `entry`, every panic caught.
pub fn call(entry: EntryPoint, work: Work) -> Outcome {
    let result = panic::catch_unwind(AssertUnwindSafe(move || match entry {
        EntryPoint::RunBlocking => Outcome::Value(bridge_tokio::run_blocking(work)),
        EntryPoint::TryRunBlocking => bridge_outcome(bridge_tokio::try_run_blocking(work)),
        EntryPoint::TryRunBlockingTimeout => {
            bridge_outcome(bridge_tokio::try_run_blocking_timeout(work, CALL_LIMIT))
        }
        EntryPoint::SpawnIoWait => Outcome::Value(bridge::spawn_io(work).wait()),
        EntryPoint::SpawnIoJoin => bridge_outcome(bridge::spawn_io(work).join()),
        EntryPoint::SpawnFutureWait => Outcome::Value(bridge::cpu::spawn_future(work).wait()),
        EntryPoint::SpawnFutureJoin => task_outcome(bridge::cpu::spawn_future(work).join()),
        EntryPoint::IterBlocking => {
            item_outcome(bridge::iter_blocking(futures::stream::once(work)).next())
        }
        EntryPoint::SpawnCpuStream => {
            let crossing = bridge::stream::on_cpu(futures::stream::once(work), 1);
            item_outcome(bridge::iter_blocking(crossing).next())
        }
    }));
    result.unwrap_or_else(|payload| panic_outcome(&*payload))
}

/// The `run_blocking` family's typed result (and `spawn_io`'s `Task::join`): the panic as a panic,
/// any other error (a lost runtime, a deadline) as an error.
fn bridge_outcome(result: Result<u64, bridge_core::Error>) -> Outcome {
    match result {
        Ok(value) => Outcome::Value(value),
        Err(error) => match error.try_into_panic() {
            Ok(payload) => Outcome::Panic(message(&*payload)),
            Err(error) => Outcome::Error(format!("{error:?}")),
        },
    }
}

/// The call from an async call site (the sibling shapes): the stream entry point is read with
/// `.await`, as a user writes it there; every other entry point is a blocking call, as from
/// sync code.
pub fn call_async(entry: EntryPoint, work: Work) -> BoxFuture<Outcome> {
    use futures::{FutureExt, StreamExt};
    match entry {
        EntryPoint::SpawnCpuStream => Box::pin(async move {
            let mut crossing = bridge::stream::on_cpu(futures::stream::once(work), 1);
            match AssertUnwindSafe(crossing.next()).catch_unwind().await {
                Ok(item) => item_outcome(item),
                Err(payload) => panic_outcome(&*payload),
            }
        }),
        _ => Box::pin(async move { call(entry, work) }),
    }
}

/// The crossing's panic when its producer was dropped before its stream ended (its side shut
/// down): the crossing carries it as a panic, but it means a lost runtime, as `Lost` does.
const PRODUCER_LOST: &str = "bridge::stream: the producer was dropped";

fn panic_outcome(payload: &(dyn Any + Send)) -> Outcome {
    let text = message(payload);
    if text.starts_with(PRODUCER_LOST) {
        Outcome::Error(text)
    } else {
        Outcome::Panic(text)
    }
}

/// The one item of a one-item stream.
fn item_outcome(item: Option<u64>) -> Outcome {
    match item {
        Some(value) => Outcome::Value(value),
        None => Outcome::Error("the one-item stream ended without its item".to_owned()),
    }
}

/// A rayon `Task`'s `join`: the panic as a panic, a lost job as an error.
fn task_outcome(result: Result<u64, bridge::Error>) -> Outcome {
    match result {
        Ok(value) => Outcome::Value(value),
        Err(error) => match error.try_into_panic() {
            Ok(payload) => Outcome::Panic(message(&*payload)),
            Err(error) => Outcome::Error(format!("{error:?}")),
        },
    }
}

// ---------------------------------------------------------------------------------------
// The cell's site.

/// Where the cell's call is made: the harness's site of its shape, in its context; the
/// outcome goes to `report` (a shape's own failure as a panic).
fn cell_site(cell: Cell, report: Report) -> Site<()> {
    let Cell { entry, future, .. } = cell;
    let work = move || (CORPUS[future].make)(seed_of(future));
    let at_async_site = move || call_async(entry, work());
    let call = move || call(entry, work());
    let report = move |outcome: Result<Outcome, String>| {
        report.send(outcome.unwrap_or_else(Outcome::Panic));
    };
    let (tick, helper_first) = (Duration::from_millis(1), future % 2 == 0);
    let top = Some(cell.ctx);
    site(
        cell.shape,
        top,
        tick,
        helper_first,
        call,
        at_async_site,
        report,
    )
}

// ---------------------------------------------------------------------------------------
// The watchdog: jobs on threads of their own.

/// Where a job sends its outcome.
#[derive(Clone)]
struct Report {
    index: usize,
    tx: mpsc::Sender<(usize, Outcome)>,
}

impl Report {
    fn send(&self, outcome: Outcome) {
        let _ = self.tx.send((self.index, outcome));
    }
}

type Job = Box<dyn FnOnce(Report) + Send>;

/// Jobs started while fewer than this many started less than `YOUNG` ago.
const SLOTS: usize = 4;

/// A job running longer than this no longer holds a slot (it is probably hung; it still
/// has until `WATCHDOG` to report).
const YOUNG: Duration = Duration::from_millis(500);

/// Runs every job on a thread of its own and returns their outcomes: a job that reports
/// nothing within `WATCHDOG` of its start is a `Hang` (its thread is left behind).
fn run_jobs(jobs: Vec<Job>) -> Vec<Outcome> {
    let (tx, rx) = mpsc::channel();
    let mut outcomes: Vec<Option<Outcome>> = vec![None; jobs.len()];
    let mut running: Vec<(usize, Instant)> = Vec::new();
    let mut pending = jobs.into_iter().enumerate();
    let mut next = pending.next();
    while next.is_some() || !running.is_empty() {
        let now = Instant::now();
        let young = running
            .iter()
            .filter(|(_, start)| now - *start < YOUNG)
            .count();
        if young < SLOTS {
            if let Some((index, job)) = next.take() {
                let report = Report {
                    index,
                    tx: tx.clone(),
                };
                std::thread::Builder::new()
                    .name(format!("diff-job-{index}"))
                    .spawn(move || job(report))
                    .unwrap();
                running.push((index, now));
                next = pending.next();
                continue;
            }
        }
        let mut wake = running.iter().map(|(_, start)| *start + WATCHDOG).min();
        if next.is_some() {
            let aging = running
                .iter()
                .map(|(_, start)| *start + YOUNG)
                .filter(|at| *at > now)
                .min();
            wake = wake.into_iter().chain(aging).min();
        }
        let wait = wake.map_or(Duration::ZERO, |at| at.saturating_duration_since(now));
        if let Ok((index, outcome)) = rx.recv_timeout(wait) {
            if let Some(at) = running.iter().position(|(i, _)| *i == index) {
                running.swap_remove(at);
                outcomes[index] = Some(outcome);
            }
        }
        let now = Instant::now();
        running.retain(|(index, start)| {
            let hung = now - *start >= WATCHDOG;
            if hung {
                outcomes[*index] = Some(Outcome::Hang);
            }
            !hung
        });
    }
    outcomes.into_iter().map(Option::unwrap).collect()
}

fn cell_job(cell: Cell) -> Job {
    Box::new(move |report: Report| {
        let thread_local = cell.shape == Shape::ThreadLocalDestructor;
        if thread_local && cell.future % 2 == 0 {
            // Registered before anything of tokio on this thread, so the destructor runs
            // after tokio's own (on the threads the job owns; the others register at the
            // call site, and run before).
            register_thread_exit_early();
        }
        // Every runtime and pool fresh for the thread-local destructor shape (their threads
        // must exit); otherwise the process's one multi-thread runtime.
        let resources = if thread_local {
            Resources::Fresh
        } else {
            Resources::SharedMultiThread
        };
        let site = cell_site(cell, report.clone());
        let entered = panic::catch_unwind(AssertUnwindSafe(|| cell.ctx.enter(site, resources, 0)));
        if let Err(payload) = entered {
            report.send(Outcome::Panic(format!(
                "the harness: {}",
                message(&*payload)
            )));
        }
    })
}

// ---------------------------------------------------------------------------------------
// The references.

/// What every cell of a column must give.
struct Expected {
    /// Each future under `Runtime::block_on` on a fresh multi-thread runtime.
    reference: Vec<Outcome>,
    /// Each future through `run_blocking` on a plain thread (where no runtime is entered and
    /// nothing can refuse): the expectation where tokio refuses the future.
    anchor: Vec<Outcome>,
}

impl Expected {
    /// The value column `future` must give, and what is wrong with the references.
    fn want(&self, future: usize) -> (Option<u64>, Option<String>) {
        let entry = &CORPUS[future];
        let anchor = match &self.anchor[future] {
            Outcome::Value(v) => Some(*v),
            _ => None,
        };
        match (&self.reference[future], entry.refused_by_tokio) {
            (Outcome::Value(v), false) => (Some(*v), None),
            (Outcome::Value(v), true) => (
                Some(*v),
                Some(format!(
                    "marked as refused by tokio, but Runtime::block_on gave {v:#x}"
                )),
            ),
            (Outcome::Panic(_), true) if anchor.is_some() => (anchor, None),
            (Outcome::Panic(_), true) => (
                None,
                Some(format!(
                    "the plain-thread anchor gave {:?}",
                    self.anchor[future]
                )),
            ),
            (other, _) => (anchor, Some(format!("Runtime::block_on gave {other:?}"))),
        }
    }
}

fn expected() -> &'static Expected {
    static EXPECTED: OnceLock<Expected> = OnceLock::new();
    EXPECTED.get_or_init(|| {
        // The anchors first: each reference's runtime is dropped after it, with the drivers
        // of the pooled connections it made, which nothing in this process uses afterwards.
        let mut jobs: Vec<Job> = Vec::new();
        for (future, entry) in CORPUS.iter().enumerate() {
            let make = entry.make;
            jobs.push(Box::new(move |report: Report| {
                report.send(call(EntryPoint::RunBlocking, make(seed_of(future))));
            }));
        }
        for (future, entry) in CORPUS.iter().enumerate() {
            let make = entry.make;
            jobs.push(Box::new(move |report: Report| {
                // `Runtime::block_on` of a fresh multi-thread runtime, dropped after it.
                let work = Site::Async(make(seed_of(future)));
                let outcome = match panic::catch_unwind(AssertUnwindSafe(|| {
                    Ctx::MultiBody.enter(work, Resources::Fresh, 0)
                })) {
                    Ok(value) => Outcome::Value(value),
                    Err(payload) => Outcome::Panic(message(&*payload)),
                };
                report.send(outcome);
            }));
        }
        let mut anchor = run_jobs(jobs);
        let reference = anchor.split_off(CORPUS.len());
        Expected { reference, anchor }
    })
}

// ---------------------------------------------------------------------------------------
// The child process, and the check.

const CHILD_VAR: &str = "BRIDGE_DIFF_CHILD";
const CELL_LINE: &str = "@@cell\t";

/// How long a child may take for all its cells.
const CHILD_LIMIT: Duration = Duration::from_secs(600);

/// Runs `cells` (in a child process: a hang leaves threads behind and an abort must not take
/// the test binary down) and checks every outcome against the references; fails with the
/// table if any differs, and prints it anyway under `BRIDGE_DIFF_TABLE=1`.
pub fn check(test: &str, title: &str, cells: Vec<Cell>) {
    if std::env::var(CHILD_VAR).as_deref() == Ok(test) {
        let outcomes = run_jobs(cells.into_iter().map(cell_job).collect());
        let mut out = std::io::stdout().lock();
        for (index, outcome) in outcomes.iter().enumerate() {
            writeln!(out, "{CELL_LINE}{index}\t{}", outcome.encode()).unwrap();
        }
        out.flush().unwrap();
        // The threads of hung cells are still there: end the process, not the test.
        std::process::exit(0);
    }
    let expected = expected();
    let outcomes = run_child(test, cells.len());
    let table = Table::new(title, &cells, &outcomes, expected);
    let (failed, references) = (table.failed, table.broken_references);
    let text = table.render();
    let verdict = format!("{test}: {failed} cells differ, {references} references failed");
    if std::env::var("BRIDGE_DIFF_TABLE").as_deref() == Ok("1") {
        println!("{text}");
        assert!(failed + references == 0, "{verdict} (the table is above)");
    }
    assert!(failed + references == 0, "{verdict}\n{text}");
}

fn run_child(test: &str, cells: usize) -> Vec<Outcome> {
    let crate::common::child::Running {
        mut child,
        lines: rx,
        stderr,
    } = crate::common::child::spawn(test, CHILD_VAR);
    let mut outcomes: Vec<Option<Outcome>> = vec![None; cells];
    let deadline = Instant::now() + CHILD_LIMIT;
    let mut killed = false;
    loop {
        match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(line) => {
                // The harness may have printed the test's name on the same line.
                let Some(at) = line.find(CELL_LINE) else {
                    continue;
                };
                let rest = &line[at + CELL_LINE.len()..];
                let (index, outcome) = rest.split_once('\t').unwrap();
                let index: usize = index.parse().unwrap();
                outcomes[index] = Some(Outcome::decode(outcome).unwrap());
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let _ = child.kill();
                killed = true;
                break;
            }
        }
    }
    let status = child.wait().unwrap();
    let stderr = stderr.join().unwrap();
    let why = if killed {
        format!(
            "the child ran past {} s and was killed",
            CHILD_LIMIT.as_secs()
        )
    } else {
        let tail: String = stderr
            .chars()
            .rev()
            .take(600)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        format!("the child exited ({status}) before reporting: {tail}")
    };
    outcomes
        .into_iter()
        .map(|o| o.unwrap_or_else(|| Outcome::Gone(why.clone())))
        .collect()
}

// ---------------------------------------------------------------------------------------
// The table.

struct Table {
    title: String,
    columns: usize,
    rows: Vec<(String, Vec<String>)>,
    notes: BTreeMap<String, usize>,
    legend: Vec<String>,
    references: Vec<String>,
    counts: BTreeMap<&'static str, usize>,
    /// Cells that are not `ok`.
    failed: usize,
    /// Columns whose reference is not what it must be.
    broken_references: usize,
}

impl Table {
    fn new(title: &str, cells: &[Cell], outcomes: &[Outcome], expected: &Expected) -> Self {
        let columns = CORPUS.len();
        let mut table = Table {
            title: title.to_owned(),
            columns,
            rows: Vec::new(),
            notes: BTreeMap::new(),
            legend: Vec::new(),
            references: Vec::new(),
            counts: BTreeMap::new(),
            failed: 0,
            broken_references: 0,
        };
        let mut wants = Vec::new();
        let refusing = |future: usize| {
            cells
                .iter()
                .filter(|c| c.future == future && c.entry.runs_as_a_tokio_task())
                .map(|c| c.entry.name())
                .fold(Vec::new(), |mut names, name| {
                    if !names.contains(&name) {
                        names.push(name);
                    }
                    names
                })
        };
        for (future, entry) in CORPUS.iter().enumerate() {
            let (want, problem) = expected.want(future);
            if let Some(problem) = problem {
                table.broken_references += 1;
                table
                    .references
                    .push(format!("  f{future:02} {}: {problem}", entry.name));
            } else if entry.refused_by_tokio {
                table.references.push(format!(
                    "  f{future:02} {}: refused by Runtime::block_on ({:?}); compared with the plain-thread run_blocking value {:#x}",
                    entry.name,
                    expected.reference[future],
                    want.unwrap_or_default()
                ));
                let refusing = refusing(future);
                if !refusing.is_empty() {
                    table.references.push(format!(
                        "  f{future:02} {}: through {} (a task of the I/O runtime) it must be refused as by Runtime::block_on: `refused`",
                        entry.name,
                        refusing.join(", ")
                    ));
                }
            }
            wants.push(want);
        }
        let rotated = cells.iter().any(|c| !c.row_per_entry);
        for (future, corpus_entry) in CORPUS.iter().enumerate() {
            let entry = cells
                .iter()
                .find(|c| c.future == future && !c.row_per_entry)
                .map(|c| format!(" (entry point: {})", c.entry.name()));
            table.legend.push(format!(
                "  f{future:02} {}{}",
                corpus_entry.name,
                if rotated {
                    entry.unwrap_or_default()
                } else {
                    String::new()
                }
            ));
        }
        for (cell, outcome) in cells.iter().zip(outcomes) {
            let row = cell.row();
            if table.rows.last().is_none_or(|(label, _)| *label != row) {
                table.rows.push((row, vec!["-".to_owned(); columns]));
            }
            // The one expected difference (see `EntryPoint::runs_as_a_tokio_task`): tokio's
            // refusal, as the reference gave it, in place of the value.
            let refusal = match &expected.reference[cell.future] {
                Outcome::Panic(m)
                    if CORPUS[cell.future].refused_by_tokio
                        && cell.entry.runs_as_a_tokio_task() =>
                {
                    Some(m.as_str())
                }
                _ => None,
            };
            let text = table.cell_text(outcome, wants[cell.future], refusal);
            table.rows.last_mut().unwrap().1[cell.future] = text;
        }
        table
    }

    fn note(&mut self, kind: &'static str, text: String) -> String {
        let next = self.notes.len() + 1;
        let number = *self.notes.entry(text).or_insert(next);
        format!("{kind}[{number}]")
    }

    /// `refusal`: the cell must give this panic (tokio's refusal) instead of a value.
    fn cell_text(&mut self, outcome: &Outcome, want: Option<u64>, refusal: Option<&str>) -> String {
        if let Some(refusal) = refusal {
            if matches!(outcome, Outcome::Panic(m) if m == refusal) {
                *self.counts.entry("refused").or_default() += 1;
                return "refused".to_owned();
            }
            if let Outcome::Value(v) = outcome {
                *self.counts.entry("wrong").or_default() += 1;
                self.failed += 1;
                return self.note(
                    "wrong",
                    format!("wrong: got {v:#x}, want tokio's refusal ({refusal})"),
                );
            }
        }
        let kind = match outcome {
            Outcome::Value(v) if Some(*v) == want => "ok",
            Outcome::Value(_) => "wrong",
            Outcome::Panic(_) => "panic",
            Outcome::Error(_) => "error",
            Outcome::Hang => "hang",
            Outcome::Gone(_) => "gone",
        };
        *self.counts.entry(kind).or_default() += 1;
        if kind != "ok" {
            self.failed += 1;
        }
        match outcome {
            Outcome::Value(v) if Some(*v) == want => "ok".to_owned(),
            Outcome::Value(v) => match want {
                Some(w) => self.note("wrong", format!("wrong: got {v:#x} vs want {w:#x}")),
                None => self.note("wrong", format!("got {v:#x}, no reference to compare with")),
            },
            Outcome::Panic(m) => self.note("panic", format!("panic: {m}")),
            Outcome::Error(m) => self.note("error", format!("error: {m}")),
            Outcome::Hang => "hang".to_owned(),
            Outcome::Gone(m) => self.note("gone", format!("gone: {m}")),
        }
    }

    fn render(&self) -> String {
        let label_width = self.rows.iter().map(|(l, _)| l.len()).max().unwrap_or(0);
        let width = self
            .rows
            .iter()
            .flat_map(|(_, cells)| cells.iter().map(String::len))
            .max()
            .unwrap_or(3)
            .max(3);
        let mut out = String::new();
        let cells: usize = self.counts.values().sum();
        let counts: Vec<_> = self
            .counts
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        writeln!(
            out,
            "== {}: {cells} cells: {}",
            self.title,
            counts.join(", ")
        )
        .unwrap();
        write!(out, "{:label_width$} ", "").unwrap();
        for future in 0..self.columns {
            write!(out, " {:width$}", format!("f{future:02}")).unwrap();
        }
        writeln!(out).unwrap();
        for (label, cells) in &self.rows {
            write!(out, "{label:label_width$} ").unwrap();
            for cell in cells {
                write!(out, " {cell:width$}").unwrap();
            }
            writeln!(out).unwrap();
        }
        if !self.notes.is_empty() {
            writeln!(out, "notes:").unwrap();
            let mut notes: Vec<_> = self.notes.iter().collect();
            notes.sort_by_key(|(_, n)| **n);
            for (text, n) in notes {
                writeln!(out, "  [{n}] {text}").unwrap();
            }
        }
        if !self.references.is_empty() {
            writeln!(out, "references:").unwrap();
            for line in &self.references {
                writeln!(out, "{line}").unwrap();
            }
        }
        writeln!(out, "futures:").unwrap();
        for line in &self.legend {
            writeln!(out, "{line}").unwrap();
        }
        out
    }
}
