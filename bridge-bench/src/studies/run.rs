//! The run study: what one `bridge::run_blocking` call costs against the raw ways of running a
//! future from synchronous code, in four contexts: a plain thread (a ready future, then
//! loopback TCP), a task of a multi-thread runtime, and a current-thread runtime; the
//! loopback TCP and the current-thread runtime again on a busy machine.

use super::echo::{MESSAGE, connect, echo_server, io_workers, round_trip};
use super::{
    PUBLISHED_PENALTY, cpus, current_thread, measured, paired, placement, route_note, under_load,
};
use crate::busy::Load;
use crate::harness::{self, MISSING, Settings, Variant, timed, timed_in_task, timed_on};
use crate::report::{BASELINE, Budget, Goal, Row, ScenarioReport, find};
use std::future::Future;
use std::hint::black_box;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::mpsc;
use std::thread::{self, JoinHandle};
use tokio::runtime::{Handle, Runtime};

/// Round trips per call in `no-runtime-tcp`, on the connection the call opens.
const ROUND_TRIPS: u64 = 4;
const TASK_WORKERS: usize = 2;
/// `bridge::run_blocking`'s budget for a ready future; its slack in the task scenarios.
const READY_BUDGET_NS: f64 = 150.0;
const TASK_SLACK: f64 = 1.2;

const HANDLE: &str = "handle.block_on";
const THREAD_LOCAL: &str = "thread-local rt.block_on";
const PER_CALL: &str = "rt per call";
const BLOCK_IN_PLACE: &str = "block_in_place+block_on";
const PRE_SPAWNED: &str = "pre-spawned worker";
const PRE_SPAWNED_MPSC: &str = "pre-spawned worker (mpsc)";
const FRESH_THREAD: &str = "thread per call";

/// The variants of the busy scenarios that wait by parking at once (see their notes).
const TCP_PARK_AT_ONCE: &[&str] = &[HANDLE, THREAD_LOCAL, PER_CALL];
const TASK_PARK_AT_ONCE: &[&str] = &[PRE_SPAWNED_MPSC, FRESH_THREAD];

/// Runs the scenarios idle, then with all CPUs but one busy, then with every CPU busy.
pub fn run(settings: &Settings) -> io::Result<Vec<ScenarioReport>> {
    let shared = harness::runtime(cpus(), "shared")?;
    harness::warm_up_tokio(bridge::rt::IoRuntime::global().handle());
    let paused = Settings {
        rounds: (settings.rounds / 4).max(3),
        ..*settings
    };
    let mut reports = vec![
        no_runtime_ready(settings, &shared),
        no_runtime_tcp(settings, &shared, None)?,
        multi_thread_task(settings)?,
        current_thread_task(settings, None, Pattern::Batches)?,
        current_thread_task(settings, None, Pattern::Steady)?,
        current_thread_task(&paused, None, Pattern::Paused)?,
    ];
    if cpus() > 1 {
        let one_free = Load::start_threads(cpus() - 1, 0)?;
        let report = current_thread_task(settings, Some(&one_free), Pattern::Steady)?;
        reports.push(report);
    }
    let load = Load::start()?;
    reports.push(no_runtime_tcp(settings, &shared, Some(&load))?);
    let report = current_thread_task(settings, Some(&load), Pattern::Batches)?;
    reports.push(report);
    Ok(reports)
}

/// A future ready at its first poll.
fn ready(i: u64) -> impl Future<Output = u64> + Send + 'static {
    let i = black_box(i);
    async move { i }
}

/// `a` against `b` in the same run, in words (see [`paired`]).
fn compare(a: &Row, b: &Row) -> String {
    let (r, median, slower, rounds) = paired(a, b);
    let (a, b) = (&a.variant, &b.variant);
    format!(
        "{a} / {b} = {r:.2}x (per-round ratios: median {median:.2}x; {a} slower in {slower} of \
         {rounds} rounds)"
    )
}

fn shared_frame(shared: &Runtime) -> String {
    format!(
        "the shared multi-thread runtime of handle.block_on is this study's own, with {} \
         workers, like bridge's IoRuntime::global ({} workers); both warmed up first. \
         thread-local rt.block_on keeps a current-thread runtime per thread, rt per call \
         builds one per call.",
        shared.metrics().num_workers(),
        io_workers(),
    )
}

/// The no-runtime scenarios' variants: a plain thread runs `call(i)` by four of the
/// no-runtime study's strategies.
fn from_a_plain_thread<'a, F>(
    handle: &'a Handle,
    call: impl Fn(u64) -> F + Copy + 'a,
) -> [Variant<'a>; 4]
where
    F: Future<Output = u64> + Send + 'static,
{
    use super::no_runtime::Strategy;
    let ways = [
        (BASELINE, Strategy::Bridge),
        (HANDLE, Strategy::Global),
        (THREAD_LOCAL, Strategy::PerThread),
        (PER_CALL, Strategy::PerCall),
    ];
    ways.map(|(name, way)| {
        Variant::new(name, move |n| {
            timed(n, |i| way.drive(handle, call(i)).map_or(MISSING, black_box))
        })
    })
}

fn no_runtime_ready(settings: &Settings, shared: &Runtime) -> ScenarioReport {
    let mut variants = from_a_plain_thread(shared.handle(), ready);
    let report = ScenarioReport {
        name: "no-runtime-ready",
        varied: "how a plain thread runs the future: bridge::run_blocking (polled here with the \
                 handle of bridge's shared multi-thread I/O runtime); raw Handle::block_on of a \
                 shared multi-thread runtime; a current-thread runtime cached in a \
                 thread_local!; a current-thread runtime built per call."
            .to_owned(),
        fixed: format!(
            "the main thread, no runtime entered; per call: a future that is ready at its first \
             poll (async move {{ i }}, i through black_box), its output through black_box; {}",
            shared_frame(shared)
        ),
        budgets: vec![Budget {
            max_ns: READY_BUDGET_NS,
            text: "bridge::run_blocking at most 150 ns per call",
        }],
        notes: vec![route_note()],
        ..Default::default()
    };
    let mut report = measured(report, &mut variants, 1, settings, None);
    if let (Some(bridge), Some(raw)) = (find(&report.rows, BASELINE), find(&report.rows, HANDLE)) {
        let absolute = format!(
            "Absolute: bridge::run_blocking {:.1} ns per call (median; min-max {:.1}-{:.1}), \
             raw handle.block_on {:.1} ns; {}.",
            bridge.ns.median,
            bridge.ns.min,
            bridge.ns.max,
            raw.ns.median,
            compare(bridge, raw)
        );
        report.notes.push(absolute);
    }
    report
}

/// One call of `no-runtime-tcp`: connect, [`ROUND_TRIPS`] checked echoes, close; `i`, or
/// [`MISSING`] on any error.
async fn exchange(addr: SocketAddr, i: u64) -> u64 {
    let trips = async {
        let mut stream = connect(addr).await?;
        for trip in 0..ROUND_TRIPS {
            round_trip(&mut stream, i, trip).await?;
        }
        io::Result::Ok(i)
    };
    trips.await.unwrap_or_else(|e| {
        eprintln!("run/no-runtime-tcp: call {i} failed: {e}");
        MISSING
    })
}

fn penalty_note(rows: &[Row]) -> String {
    let (low, high) = PUBLISHED_PENALTY;
    let out = format!(
        "Shared-runtime penalty against the thread-local current-thread runtime (published \
         as {low:.0}-{high:.0}%), from the medians of this run:"
    );
    let Some(local) = find(rows, THREAD_LOCAL) else {
        return out + " not measured.";
    };
    let each = [HANDLE, BASELINE].map(|name| find(rows, name));
    let each = each.into_iter().flatten().map(|row| {
        let percent = (paired(row, local).0 - 1.0) * 100.0;
        let (name, placed, compared) = (&row.variant, placement(percent), compare(row, local));
        format!(" {name} {percent:+.1}%, {placed}; {compared}")
    });
    out + &each.collect::<Vec<_>>().join(";") + "."
}

fn no_runtime_tcp(
    settings: &Settings,
    shared: &Runtime,
    load: Option<&Load>,
) -> io::Result<ScenarioReport> {
    let (addr, server) = echo_server()?;
    let mut variants = from_a_plain_thread(shared.handle(), move |i| exchange(addr, i));
    let report = ScenarioReport {
        name: "no-runtime-tcp",
        varied: "which runtime drives the call's socket from a plain thread: \
                 bridge::run_blocking (polled here, the socket on bridge's shared multi-thread \
                 I/O runtime, whose workers wake this thread); raw Handle::block_on of a \
                 shared multi-thread runtime (polled here, the socket on the study's own \
                 runtime, whose workers wake this thread); a current-thread runtime cached in \
                 a thread_local! (this thread polls its own epoll); a current-thread runtime \
                 built per call."
            .to_owned(),
        fixed: format!(
            "the main thread, no runtime entered; per call: connect to an echo server on \
             127.0.0.1 (in this process, on a runtime of its own), {ROUND_TRIPS} sequential \
             round trips of {MESSAGE}-byte messages, then close; {}",
            shared_frame(shared)
        ),
        notes: vec![route_note()],
        ..Default::default()
    };
    let why = "Handle::block_on parks the calling thread after one poll until a worker of the \
               shared runtime wakes it, and a current-thread runtime, kept or built per call, \
               parks the thread in its own epoll wait; none spins.";
    let report = under_load(report, "no-runtime-tcp-busy", load, TCP_PARK_AT_ONCE, why);
    let mut report = measured(report, &mut variants, 1, settings, load);
    report.notes.insert(1, penalty_note(&report.rows));
    drop(server);
    Ok(report)
}

fn multi_thread_task(settings: &Settings) -> io::Result<ScenarioReport> {
    let rt = harness::runtime(TASK_WORKERS, "task")?;
    let route = rt.block_on(rt.spawn(async { route_note() }));
    let mut variants = [
        Variant::new(BASELINE, |n| {
            timed_in_task(&rt, n, |i| async move {
                black_box(bridge::run_blocking(ready(i)))
            })
        }),
        Variant::new(BLOCK_IN_PLACE, |n| {
            timed_in_task(&rt, n, |i| async move {
                let raw = || Handle::current().block_on(ready(i));
                black_box(tokio::task::block_in_place(raw))
            })
        }),
    ];
    let goal = "bridge at most 1.2x raw block_in_place + Handle::block_on";
    let report = ScenarioReport {
        name: "multi-thread-task",
        varied: "bridge::run_blocking (on a worker: block_in_place, then the ambient handle's \
                 block_on) against the raw tokio::task::block_in_place(|| \
                 Handle::current().block_on(..))."
            .to_owned(),
        fixed: format!(
            "a tokio multi-thread runtime with {TASK_WORKERS} workers and enable_all, warmed \
             up first (1,000 tasks ran on its workers, its blocking pool ran a closure); the \
             calling code is a task spawned on it; per call: a future that is ready at its \
             first poll. A batch runs in one poll of that task, so after the first call's \
             block_in_place has handed the worker's core off, the later calls find none to \
             hand off: the numbers are the cost around a block_in_place with nothing to hand \
             off, the same for both variants."
        ),
        goals: vec![Goal::new(BLOCK_IN_PLACE, 1.0 / TASK_SLACK, goal)],
        notes: vec![route.map_err(io::Error::other)?],
        ..Default::default()
    };
    Ok(measured(report, &mut variants, 1, settings, None))
}

const WAKE_NOTE: &str = "Caution: every call here is two cross-thread wake-ups, which cost a \
     few µs when the threads share a CPU and tens of µs when an idle CPU must wake (slow in a \
     virtual machine); a gap far larger than the code paths explain should be checked in a \
     second run.";

type Job = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

/// A dedicated thread with a current-thread runtime, running the futures it receives.
struct Worker {
    jobs: Option<mpsc::Sender<Job>>,
    thread: Option<JoinHandle<()>>,
}

impl Worker {
    fn start() -> io::Result<Self> {
        let runtime = current_thread()?;
        let (jobs, queue) = mpsc::channel::<Job>();
        let thread = thread::Builder::new()
            .name("pre-spawned".to_owned())
            .spawn(move || queue.into_iter().for_each(|job| runtime.block_on(job)))?;
        Ok(Self {
            jobs: Some(jobs),
            thread: Some(thread),
        })
    }

    /// Runs `future` on the worker and waits for its output on a bridge oneshot or, with
    /// `std_mpsc`, a std mpsc channel; `None` if the worker is gone.
    fn run<F>(&self, future: F, std_mpsc: bool) -> Option<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let send = |job: Job| self.jobs.as_ref()?.send(job).ok();
        if std_mpsc {
            let (tx, rx) = mpsc::channel();
            send(Box::pin(async move {
                let _ = tx.send(future.await);
            }))?;
            rx.recv().ok()
        } else {
            let (tx, rx) = bridge::oneshot::channel();
            send(Box::pin(async move {
                let _ = tx.send(future.await);
            }))?;
            rx.recv_blocking().ok()
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        drop(self.jobs.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A new thread with a new current-thread runtime per call, joined.
fn on_fresh_thread<F>(future: F) -> Option<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let thread =
        thread::Builder::new().spawn(move || current_thread().ok().map(|rt| rt.block_on(future)));
    thread.ok()?.join().ok().flatten()
}

/// How the `block_on` body of current-thread-task calls: batches one variant's after
/// another's, a steady loop, or bursts after pauses (no thread per call in the last two).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pattern {
    Batches,
    Steady,
    Paused,
}

const STEADY_WARM: u64 = 1_000;

fn current_thread_task(
    settings: &Settings,
    load: Option<&Load>,
    pattern: Pattern,
) -> io::Result<ScenarioReport> {
    let rt = current_thread()?;
    let worker = Worker::start()?;
    let _ = worker.run(async {}, false);
    let route = rt.block_on(async { route_note() });
    let calls = |n, op: &mut dyn FnMut(u64) -> u64| match pattern {
        Pattern::Batches => timed_on(&rt, n, async |i| op(i)),
        Pattern::Steady => {
            let _ = timed_on(&rt, STEADY_WARM, async |i| op(i));
            timed_on(&rt, n, async |i| op(i))
        }
        Pattern::Paused => harness::in_bursts(&rt, n, Some(harness::BURST), async |i| op(i)),
    };
    let mut variants = vec![
        Variant::new(BASELINE, |n| {
            calls(n, &mut |i| black_box(bridge::run_blocking(ready(i))))
        }),
        Variant::new(PRE_SPAWNED, |n| {
            calls(n, &mut |i| {
                black_box(worker.run(ready(i), false).unwrap_or(MISSING))
            })
        }),
        Variant::new(PRE_SPAWNED_MPSC, |n| {
            calls(n, &mut |i| {
                black_box(worker.run(ready(i), true).unwrap_or(MISSING))
            })
        }),
    ];
    if pattern == Pattern::Batches {
        variants.push(Variant::new(FRESH_THREAD, |n| {
            calls(n, &mut |i| {
                black_box(on_fresh_thread(ready(i)).unwrap_or(MISSING))
            })
        }));
    }
    let all_busy = load.is_some_and(|load| load.threads() >= cpus());
    let in_batches = "in batches, one variant's after another's";
    let steady = "in a steady loop (each batch after 1,000 untimed calls)";
    let (name, how) = match (pattern, load) {
        (Pattern::Batches, None) => ("current-thread-task", in_batches),
        (Pattern::Steady, None) => ("current-thread-task-steady", steady),
        (Pattern::Paused, None) => (
            "current-thread-task-paused",
            "in bursts of 400 calls, each after a pause of 2-17 ms in which the caller sleeps \
             (the pauses are not timed)",
        ),
        (_, Some(_)) if all_busy => ("current-thread-task", in_batches),
        (_, Some(_)) => ("current-thread-task-one-busy", steady),
    };
    let goal = "bridge at most 1.2x a pre-spawned worker thread";
    let report = ScenarioReport {
        name,
        varied: "how the block_on body of a current-thread runtime (which must not be blocked \
                 in place) gets a future run elsewhere: bridge::run_blocking (a pooled handoff \
                 worker polls it; the caller waits on a bridge oneshot); a pre-spawned worker \
                 (a std thread with its own current-thread runtime, fed boxed futures over a \
                 std mpsc channel, answering on a bridge oneshot); the same answering on a std \
                 mpsc channel; where the batches allow it, a thread per call."
            .to_owned(),
        fixed: format!(
            "a tokio current-thread runtime with enable_all, the calling code is its block_on \
             body on the main thread, calling {how}; per call: a future that is ready at its \
             first poll (async move {{ i }}, i through black_box), its output through \
             black_box; bridge's IoRuntime::global has {} workers, warmed up first; the \
             pre-spawned worker (one thread for both of its variants) ran one job first.",
            io_workers()
        ),
        goals: vec![Goal::new(PRE_SPAWNED, 1.0 / TASK_SLACK, goal)],
        notes: vec![route, WAKE_NOTE.to_owned()],
        ..Default::default()
    };
    const BUSY: &str = "current-thread-task-busy";
    let why = "the pre-spawned worker with std mpsc both ways parks in recv on both sides, and \
               a thread per call is joined, which parks the caller; the pre-spawned worker \
               that answers on a bridge oneshot does not count, as its recv_blocking spins \
               first.";
    let report = match load {
        // One CPU left free: the goals of an idle machine, the load named in the frame.
        Some(load) if !all_busy => ScenarioReport {
            fixed: format!("{} All of it on {}", report.fixed, load.describe()),
            ..report
        },
        _ => under_load(report, BUSY, load, TASK_PARK_AT_ONCE, why),
    };
    Ok(measured(report, &mut variants, 1, settings, load))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::Measurement;

    #[test]
    fn penalty_placement_and_paired_rounds() {
        assert_eq!(placement(3.0), "below the published range");
        assert_eq!(placement(17.0), "within the published range");
        let m = Measurement::of(3, [("a", vec![2.0, 4.0, 3.0]), ("b", vec![1.0, 2.0, 4.0])]);
        let rows = crate::report::rows("s", &m);
        assert_eq!(
            compare(&rows[0], &rows[1]),
            "a / b = 1.50x (per-round ratios: median 2.00x; a slower in 2 of 3 rounds)"
        );
    }

    #[test]
    fn exchange_round_trips_through_the_echo_server() {
        let (addr, _server) = echo_server().unwrap();
        let rt = current_thread().unwrap();
        assert_eq!(rt.block_on(exchange(addr, 7)), 7);
        assert_eq!(bridge::run_blocking(exchange(addr, 8)), 8);
    }

    #[test]
    fn raw_alternatives_return_the_output() {
        let worker = Worker::start().unwrap();
        assert_eq!(worker.run(ready(3), false), Some(3));
        assert_eq!(worker.run(ready(4), true), Some(4));
        assert_eq!(on_fresh_thread(ready(5)), Some(5));
    }
}
