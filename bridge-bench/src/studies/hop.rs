//! The hop study: CPU work sent from async code to a pool and awaited back. bridge::spawn
//! against tokio-rayon, a hand-written rayon::spawn + tokio oneshot, and tokio's
//! spawn_blocking, one hop at a time and 1,000 hops in flight, on an idle machine and on a
//! busy one.

use super::{counted, measured, under_load};
use crate::busy::Load;
use crate::harness::{Batch, MISSING, Settings, timed, timed_in_task};
use crate::harness::{warm_up_rayon, warm_up_tokio};
use crate::proc::Census;
use crate::report::{Goal, ScenarioReport, table};
use crate::stats::percentile;
use std::future::Future;
use std::io;
use std::thread;
use std::time::{Duration, Instant};
use tokio::runtime::Runtime;

/// Hops in flight at once in `concurrent-1000`: one iteration starts them all, then awaits
/// them in order.
const HOPS: u64 = 1_000;

/// What runs when a scenario's thread count is read before measuring.
const WARM: &str = ", pools warmed up";

/// The variants that wait for a hop by parking at once (see [`PARKS`]).
const PARK_AT_ONCE: &[&str] = &["tokio-rayon", "rayon+tokio-oneshot", "spawn_blocking"];

const PARKS: &str = "the awaiting task returns Pending at its first poll and its tokio worker, \
                     with nothing else to run, parks; the closures run on rayon's global pool \
                     (tokio-rayon and rayon+tokio-oneshot, like bridge::spawn) or on tokio's \
                     blocking pool, whose idle threads wait on a condition variable.";

/// Runs the two scenarios and their blocking forms (`.wait()` from a plain thread), then the
/// two again under a background load, each on a fresh tokio runtime so that the threads one
/// leaves behind do not count in the other.
pub fn run(settings: &Settings) -> io::Result<Vec<ScenarioReport>> {
    warm_up_rayon();
    let mut reports = vec![
        awaiting(settings, 1, None)?,
        awaiting(settings, HOPS, None)?,
        blocking(settings, 1),
        blocking(settings, HOPS),
    ];
    let split = split_note(
        &warm_runtime()?,
        if settings.is_quick() { 100 } else { 400 },
    )?;
    let load = Load::start()?;
    let mut busy = awaiting(settings, 1, Some(&load))?;
    busy.notes.push(split);
    reports.push(busy);
    reports.push(awaiting(settings, HOPS, Some(&load))?);
    Ok(reports)
}

/// Where the time of `hops` hops of `bridge::spawn` from a task of `rt` goes, under background
/// work of four shapes, as a note (the note says how).
fn split_note(rt: &Runtime, hops: usize) -> io::Result<String> {
    let cpus = super::cpus();
    let shapes = [
        ("idle", 0, 0),
        ("busy, every CPU", cpus, 0),
        ("busy, every CPU, at nice 10", cpus, 10),
        ("busy, one CPU free", cpus - 1, 0),
    ];
    split_hops(rt, hops)?;
    let mut rows = Vec::new();
    for (name, threads, nice) in shapes {
        let load = (threads > 0)
            .then(|| Load::start_threads(threads, nice))
            .transpose()?;
        thread::sleep(Duration::from_millis(50));
        let (start, before) = (Instant::now(), load.as_ref().map_or(0, Load::kernels));
        let (pickup, back) = split_hops(rt, hops)?;
        let done = load.as_ref().map_or(0, Load::kernels) - before;
        let kernels_per_s = done as f64 / start.elapsed().as_secs_f64();
        drop(load);
        let hop: Vec<f64> = pickup.iter().zip(&back).map(|(a, b)| a + b).collect();
        let us = |v: &[f64], p| {
            let mut sorted = v.to_vec();
            sorted.sort_by(f64::total_cmp);
            format!("{:.1}", percentile(&sorted, p) / 1e3)
        };
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        let mut row = vec![name.to_owned()];
        row.extend(
            [&pickup, &back, &hop]
                .map(|v| [us(v, 0.5), us(v, 0.99)])
                .concat(),
        );
        row.push(format!("{:.1}", mean(&hop) / 1e3));
        row.push(format!("{:.0}%", 100.0 * mean(&pickup) / mean(&hop)));
        row.push(format!("{kernels_per_s:.0}"));
        rows.push(row);
    }
    let head = [
        "background",
        "pickup p50",
        "pickup p99",
        "return p50",
        "return p99",
        "hop p50",
        "hop p99",
        "hop mean",
        "pickup's share of the mean",
        "background kernels/s",
    ];
    Ok(format!(
        "Where a hop's time goes ({hops} hops of bridge::spawn, one at a time from a task; \
         µs): the pool's pickup (from the spawn to the closure's start on a rayon thread) and \
         the return (from the closure's end to the awaiting task running again), under \
         background threads hashing in a loop: none; one per CPU, as in this scenario; one \
         per CPU at nice 10 (bridge::cpu::lower_thread_priority); one fewer than the CPUs. \
         The split says which side waits, the shapes what it waits for.\n\n{}",
        table(&head, "---:", &rows).trim_end()
    ))
}

/// `hops` hops of `bridge::spawn` one at a time from a task of `rt`: each one's pickup and
/// return, in ns.
fn split_hops(rt: &Runtime, hops: usize) -> io::Result<(Vec<f64>, Vec<f64>)> {
    let task = rt.spawn(async move {
        let (mut pickup, mut back) = (Vec::with_capacity(hops), Vec::with_capacity(hops));
        for k in 0..hops {
            let spawned = Instant::now();
            let ran = bridge::spawn(move || {
                std::hint::black_box(k);
                Instant::now()
            })
            .await;
            let resumed = Instant::now();
            pickup.push((ran - spawned).as_nanos() as f64);
            back.push((resumed - ran).as_nanos() as f64);
        }
        (pickup, back)
    });
    rt.block_on(task).map_err(io::Error::other)
}

/// A multi-thread runtime with the default worker count, every worker started and tokio's
/// blocking pool holding one thread.
fn warm_runtime() -> io::Result<Runtime> {
    let rt = tokio::runtime::Builder::new_multi_thread().build()?;
    warm_up_tokio(rt.handle());
    Ok(rt)
}

// The four ways to hop: each starts the closure `move || k` on its pool at once and returns
// the future of `k`. A lost value turns into MISSING, which breaks the batch's checksum.

fn hop_bridge(k: u64) -> bridge::Task<u64> {
    bridge::spawn(move || k)
}

fn hop_tokio_rayon(k: u64) -> tokio_rayon::AsyncRayonHandle<u64> {
    tokio_rayon::spawn(move || k)
}

fn hop_rayon_oneshot(k: u64) -> impl Future<Output = u64> + Send + 'static {
    let rx = rayon_oneshot(k);
    async move { rx.await.unwrap_or(MISSING) }
}

/// `rayon::spawn` of a job that sends `k` on a tokio oneshot; its receiver.
fn rayon_oneshot(k: u64) -> tokio::sync::oneshot::Receiver<u64> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    rayon::spawn(move || {
        let _ = tx.send(k);
    });
    rx
}

fn hop_spawn_blocking(k: u64) -> impl Future<Output = u64> + Send + 'static {
    let handle = tokio::task::spawn_blocking(move || k);
    async move { handle.await.unwrap_or(MISSING) }
}

/// A batch of `iters` iterations in a task of `rt`: one hop awaited each (`hops` 1), or
/// [`HOPS`] hops started, then awaited in order. Hop `j` of iteration `i` returns `i * HOPS + j`.
fn in_task<H>(
    rt: &Runtime,
    iters: u64,
    hops: u64,
    hop: impl Fn(u64) -> H + Copy + Send + 'static,
) -> Batch
where
    H: Future<Output = u64> + Send + 'static,
{
    if hops == 1 {
        return timed_in_task(rt, iters, hop);
    }
    timed_in_task(rt, iters, move |i| async move {
        let in_flight: Vec<H> = (0..HOPS).map(|j| hop(i * HOPS + j)).collect();
        let mut sum = 0u64;
        for hop in in_flight {
            sum = sum.wrapping_add(hop.await);
        }
        sum
    })
}

const VARIED: &str = "how the closure reaches a pool and its result comes back: bridge::spawn; \
                      tokio_rayon::spawn (tokio-rayon 2.1); rayon::spawn of a job that sends on \
                      a tokio oneshot, then await the receiver (rayon+tokio-oneshot); \
                      tokio::task::spawn_blocking (tokio's blocking pool instead of rayon).";

/// bridge no slower than each rayon peer; with `spawn_blocking`, also 10x cheaper than it.
fn peer_goals(spawn_blocking: bool) -> Vec<Goal> {
    let goal = Goal::new;
    let mut goals = vec![
        goal("tokio-rayon", 1.0, "bridge no slower than tokio-rayon"),
        goal(
            "rayon+tokio-oneshot",
            1.0,
            "bridge no slower than rayon::spawn + tokio oneshot",
        ),
    ];
    if spawn_blocking {
        let text = "bridge at least 10x cheaper than spawn_blocking";
        goals.push(goal("spawn_blocking", 10.0, text));
    }
    goals
}

/// The awaiting scenarios: from a task, one hop at a time (`hops` 1) or [`HOPS`] at once.
fn awaiting(settings: &Settings, hops: u64, load: Option<&Load>) -> io::Result<ScenarioReport> {
    let rt = warm_runtime()?;
    let census = Census::new();
    let mut variants = [
        counted(&census, "bridge", |n| in_task(&rt, n, hops, hop_bridge)),
        counted(&census, "tokio-rayon", |n| {
            in_task(&rt, n, hops, hop_tokio_rayon)
        }),
        counted(&census, "rayon+tokio-oneshot", |n| {
            in_task(&rt, n, hops, hop_rayon_oneshot)
        }),
        counted(&census, "spawn_blocking", |n| {
            in_task(&rt, n, hops, hop_spawn_blocking)
        }),
    ];
    let (name, busy_name, per_op) = if hops == 1 {
        (
            "one-at-a-time",
            "one-at-a-time-busy",
            "Per operation: hop a closure that returns the operation's index, and await it \
             before the next hop."
                .to_owned(),
        )
    } else {
        (
            "concurrent-1000",
            "concurrent-1000-busy",
            format!(
                "Per iteration: start {HOPS} hops (closures returning their index), then await \
                 them in the order started; one operation is one hop (batch time / (iterations \
                 x {HOPS})), including its share of the Vec that holds the handles."
            ),
        )
    };
    let report = ScenarioReport {
        name,
        varied: VARIED.to_owned(),
        fixed: format!(
            "a tokio multi-thread runtime with {} workers; the awaiting code is a task spawned \
             on it, so each wake goes through tokio's scheduler; rayon's global pool of {} \
             threads; both warmed up first. {per_op}",
            rt.metrics().num_workers(),
            rayon::current_num_threads(),
        ),
        goals: peer_goals(hops > 1),
        ..Default::default()
    };
    let report = under_load(report, busy_name, load, PARK_AT_ONCE, PARKS);
    let mut report = measured(report, &mut variants, hops, settings, load);
    report.notes.insert(0, census.note(WARM));
    Ok(report)
}

/// A batch of `iters` iterations of `hops` hops started at once (one at a time when `hops`
/// is 1), each then waited for in order with `wait`.
fn blocking_batch<H>(
    iters: u64,
    hops: u64,
    start: impl Fn(u64) -> H,
    wait: impl Fn(H) -> u64,
) -> Batch {
    let mut in_flight = Vec::with_capacity(hops as usize);
    timed(iters, |i| {
        in_flight.extend((0..hops).map(|j| start(i * hops + j)));
        in_flight.drain(..).map(&wait).fold(0, u64::wrapping_add)
    })
}

/// The blocking forms: the caller is the study's own thread (no runtime), and it waits for
/// each hop with the variant's blocking wait; `hops` at once.
fn blocking(settings: &Settings, hops: u64) -> ScenarioReport {
    let census = Census::new();
    let mut variants = [
        counted(&census, "bridge", move |n| {
            blocking_batch(n, hops, hop_bridge, bridge::Task::wait)
        }),
        counted(&census, "tokio-rayon", move |n| {
            blocking_batch(n, hops, hop_tokio_rayon, futures::executor::block_on)
        }),
        counted(&census, "rayon+tokio-oneshot", move |n| {
            blocking_batch(n, hops, rayon_oneshot, |rx| {
                rx.blocking_recv().unwrap_or(MISSING)
            })
        }),
    ];
    let (name, per_op) = if hops == 1 {
        (
            "wait-one-at-a-time",
            "Per operation: hop a closure that returns the operation's index, and wait for \
             it before the next hop."
                .to_owned(),
        )
    } else {
        (
            "wait-concurrent-1000",
            format!(
                "Per iteration: start {HOPS} hops, then wait for them in the order started; \
                 one operation is one hop."
            ),
        )
    };
    let report = ScenarioReport {
        name,
        varied: VARIED.to_owned(),
        fixed: format!(
            "the caller is a plain thread (no runtime) that waits with each variant's \
             blocking wait: Task::wait, tokio's oneshot blocking_recv, tokio-rayon's handle \
             under futures' block_on; rayon's global pool of {} threads, warmed up first. \
             {per_op}",
            rayon::current_num_threads(),
        ),
        goals: peer_goals(false),
        ..Default::default()
    };
    let mut report = measured(report, &mut variants, hops, settings, None);
    report.notes.insert(0, census.note(WARM));
    report
}
