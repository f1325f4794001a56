//! The hop study: CPU work sent from async code to a pool and awaited back. bridge::spawn
//! against tokio-rayon, a hand-written rayon::spawn + tokio oneshot, and tokio's
//! spawn_blocking, one hop at a time and 1,000 hops in flight, on an idle machine and on a
//! busy one.

use crate::busy::{Load, busy_frame, park_at_once_note};
use crate::harness::warm_up_tokio;
use crate::harness::{Batch, MISSING, Settings, Variant, measure, timed_in_task, warm_up_rayon};
use crate::proc::{ThreadTally, os_threads, threads_note};
use crate::report::{Goal, LoadGoal, ScenarioReport, busy_goals, rows};
use std::cell::RefCell;
use std::future::Future;
use std::io;
use std::time::Instant;
use tokio::runtime::{Builder, Runtime};

/// Hops in flight at once in `concurrent-1000`: one iteration starts them all, then awaits
/// them in order.
const HOPS: u64 = 1_000;

/// The variants that wait for a hop by parking at once: the awaiting task returns Pending at
/// its first poll and its tokio worker, with nothing else to run, parks; the pool threads
/// that run the closure are rayon's (tokio-rayon, rayon+tokio-oneshot: the same as
/// bridge::spawn's) or tokio's blocking pool, whose idle threads wait on a condition variable.
const PARK_AT_ONCE: &[&str] = &["tokio-rayon", "rayon+tokio-oneshot", "spawn_blocking"];

/// Runs the two scenarios and their blocking forms (`.wait()` from a plain thread), then the
/// two again under a background load, each on a fresh tokio
/// runtime so that the threads one leaves behind do not count in the other.
pub fn run(settings: &Settings) -> io::Result<Vec<ScenarioReport>> {
    warm_up_rayon();
    let mut reports = vec![
        one_at_a_time(settings, None)?,
        concurrent(settings, None)?,
        wait_one_at_a_time(settings),
        wait_concurrent(settings),
    ];
    let load = Load::start()?;
    reports.push(one_at_a_time(settings, Some(&load))?);
    reports.push(concurrent(settings, Some(&load))?);
    Ok(reports)
}

/// A multi-thread runtime with the default worker count, every worker started and tokio's
/// blocking pool holding one thread.
fn warm_runtime() -> io::Result<Runtime> {
    let rt = Builder::new_multi_thread().build()?;
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
    let (tx, rx) = tokio::sync::oneshot::channel();
    rayon::spawn(move || {
        let _ = tx.send(k);
    });
    async move { rx.await.unwrap_or(MISSING) }
}

fn hop_spawn_blocking(k: u64) -> impl Future<Output = u64> + Send + 'static {
    let handle = tokio::task::spawn_blocking(move || k);
    async move { handle.await.unwrap_or(MISSING) }
}

/// A batch of `iters` iterations on `rt`; each starts [`HOPS`] hops, then awaits them in
/// order. Hop `j` of iteration `i` returns `i * HOPS + j`.
fn all_at_once<H>(rt: &Runtime, iters: u64, hop: impl Fn(u64) -> H + Copy + Send + 'static) -> Batch
where
    H: Future<Output = u64> + Send + 'static,
{
    timed_in_task(rt, iters, move |i| async move {
        let in_flight: Vec<H> = (0..HOPS).map(|j| hop(i * HOPS + j)).collect();
        let mut sum = 0u64;
        for hop in in_flight {
            sum = sum.wrapping_add(hop.await);
        }
        sum
    })
}

/// The process's thread count before a scenario and around every batch of its variants.
#[derive(Debug)]
struct Census {
    /// Before measuring, with the pools warmed up.
    base: Option<u32>,
    /// One tally per variant, in the order the variants were made.
    tallies: RefCell<Vec<(&'static str, ThreadTally)>>,
}

impl Census {
    /// Reads the thread count now, as the base.
    fn new() -> Self {
        Self {
            base: os_threads(),
            tallies: RefCell::new(Vec::new()),
        }
    }

    /// A variant whose batches are run by `run`, with the thread count read before and
    /// after each batch (outside the timed part).
    fn variant<'a>(
        &'a self,
        name: &'static str,
        mut run: impl FnMut(u64) -> Batch + 'a,
    ) -> Variant<'a> {
        let k = {
            let mut tallies = self.tallies.borrow_mut();
            tallies.push((name, ThreadTally::default()));
            tallies.len() - 1
        };
        Variant::new(name, move |n| {
            let before = os_threads();
            let batch = run(n);
            self.tallies.borrow_mut()[k].1.record(before, os_threads());
            batch
        })
    }

    /// The counts, as one paragraph.
    fn note(&self) -> String {
        threads_note(
            self.base,
            ", pools warmed up",
            self.tallies.borrow().iter().copied(),
        )
    }
}

fn varied() -> String {
    "how the closure reaches a pool and its result comes back: bridge::spawn; \
     tokio_rayon::spawn (tokio-rayon 2.1); rayon::spawn of a job that sends on a tokio \
     oneshot, then await the receiver (rayon+tokio-oneshot); tokio::task::spawn_blocking \
     (tokio's blocking pool instead of rayon)."
        .to_owned()
}

fn frame(rt: &Runtime, per_op: &str) -> String {
    format!(
        "a tokio multi-thread runtime with {} workers; the awaiting code is a task spawned on \
         it, so each wake goes through tokio's scheduler; rayon's global pool of {} threads; \
         both warmed up first. {per_op}",
        rt.metrics().num_workers(),
        rayon::current_num_threads(),
    )
}

#[allow(clippy::too_many_arguments)]
fn scenario(
    name: &'static str,
    fixed: String,
    goals: Vec<Goal>,
    ops_per_iter: u64,
    variants: &mut [Variant<'_>],
    census: &Census,
    settings: &Settings,
    load: Option<&Load>,
) -> ScenarioReport {
    let m = measure(variants, ops_per_iter, settings, load);
    let (goals, load_goals, mut notes): (_, Vec<LoadGoal>, _) = match load {
        None => (goals, Vec::new(), Vec::new()),
        Some(_) => (
            Vec::new(),
            busy_goals(PARK_AT_ONCE),
            vec![park_at_once_note(
                PARK_AT_ONCE,
                "the awaiting task returns Pending at its first poll and its tokio worker, \
                 with nothing else to run, parks; the closures run on rayon's global pool \
                 (tokio-rayon and rayon+tokio-oneshot, like bridge::spawn) or on tokio's \
                 blocking pool, whose idle threads wait on a condition variable.",
            )],
        ),
    };
    notes.insert(0, census.note());
    ScenarioReport {
        name,
        varied: varied(),
        fixed,
        goals,
        load_goals,
        notes,
        rows: rows(name, &m),
        ..Default::default()
    }
}

fn peer_goals() -> Vec<Goal> {
    vec![
        Goal {
            peer: "tokio-rayon",
            at_least: 1.0,
            text: "bridge no slower than tokio-rayon",
        },
        Goal {
            peer: "rayon+tokio-oneshot",
            at_least: 1.0,
            text: "bridge no slower than rayon::spawn + tokio oneshot",
        },
    ]
}

fn one_at_a_time(settings: &Settings, load: Option<&Load>) -> io::Result<ScenarioReport> {
    let rt = warm_runtime()?;
    let census = Census::new();
    let mut variants = [
        census.variant("bridge", |n| timed_in_task(&rt, n, hop_bridge)),
        census.variant("tokio-rayon", |n| timed_in_task(&rt, n, hop_tokio_rayon)),
        census.variant("rayon+tokio-oneshot", |n| {
            timed_in_task(&rt, n, hop_rayon_oneshot)
        }),
        census.variant("spawn_blocking", |n| {
            timed_in_task(&rt, n, hop_spawn_blocking)
        }),
    ];
    let (name, fixed) = busy_frame(
        "one-at-a-time",
        "one-at-a-time-busy",
        frame(
            &rt,
            "Per operation: hop a closure that returns the operation's index, and await it \
             before the next hop.",
        ),
        load,
    );
    Ok(scenario(
        name,
        fixed,
        peer_goals(),
        1,
        &mut variants,
        &census,
        settings,
        load,
    ))
}

fn concurrent(settings: &Settings, load: Option<&Load>) -> io::Result<ScenarioReport> {
    let rt = warm_runtime()?;
    let census = Census::new();
    let mut variants = [
        census.variant("bridge", |n| all_at_once(&rt, n, hop_bridge)),
        census.variant("tokio-rayon", |n| all_at_once(&rt, n, hop_tokio_rayon)),
        census.variant("rayon+tokio-oneshot", |n| {
            all_at_once(&rt, n, hop_rayon_oneshot)
        }),
        census.variant("spawn_blocking", |n| {
            all_at_once(&rt, n, hop_spawn_blocking)
        }),
    ];
    let (name, fixed) = busy_frame(
        "concurrent-1000",
        "concurrent-1000-busy",
        frame(
            &rt,
            &format!(
                "Per iteration: start {HOPS} hops (closures returning their index), then \
                 await them in the order started; one operation is one hop (batch time / \
                 (iterations x {HOPS})), including its share of the Vec that holds the \
                 handles."
            ),
        ),
        load,
    );
    let mut goals = peer_goals();
    goals.push(Goal {
        peer: "spawn_blocking",
        at_least: 10.0,
        text: "bridge at least 10x cheaper than spawn_blocking",
    });
    Ok(scenario(
        name,
        fixed,
        goals,
        HOPS,
        &mut variants,
        &census,
        settings,
        load,
    ))
}

// The blocking forms: the caller is the study's own thread (no runtime), and it waits for each
// hop with the variant's blocking wait.

/// `bridge::spawn(..).wait()`.
fn wait_bridge(k: u64) -> bridge::Task<u64> {
    bridge::spawn(move || k)
}

/// `rayon::spawn` of a job that sends on a tokio oneshot, then `blocking_recv`.
fn wait_rayon_oneshot(k: u64) -> tokio::sync::oneshot::Receiver<u64> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    rayon::spawn(move || {
        let _ = tx.send(k);
    });
    rx
}

/// A batch of `iters` iterations of [`HOPS`] hops started at once (`hops` of them when
/// `hops` is 1: one at a time), each then waited for in order with `wait`.
fn blocking_batch<H>(
    iters: u64,
    hops: u64,
    start: impl Fn(u64) -> H,
    wait: impl Fn(H) -> u64,
) -> Batch {
    let began = Instant::now();
    let mut checksum = 0u64;
    let mut in_flight = Vec::with_capacity(hops as usize);
    for i in 0..iters {
        in_flight.extend((0..hops).map(|j| start(i * hops + j)));
        for hop in in_flight.drain(..) {
            checksum = checksum.wrapping_add(wait(hop));
        }
    }
    Batch {
        elapsed: began.elapsed(),
        checksum,
    }
}

fn blocking_variants<'a>(census: &'a Census, hops: u64) -> [Variant<'a>; 3] {
    [
        census.variant("bridge", move |n| {
            blocking_batch(n, hops, wait_bridge, bridge::Task::wait)
        }),
        census.variant("tokio-rayon", move |n| {
            blocking_batch(n, hops, hop_tokio_rayon, futures::executor::block_on)
        }),
        census.variant("rayon+tokio-oneshot", move |n| {
            blocking_batch(n, hops, wait_rayon_oneshot, |rx| {
                rx.blocking_recv().unwrap_or(MISSING)
            })
        }),
    ]
}

fn blocking_frame(per_op: &str) -> String {
    format!(
        "the caller is a plain thread (no runtime) that waits with each variant's blocking \
         wait: Task::wait, tokio's oneshot blocking_recv, tokio-rayon's handle under futures' \
         block_on; rayon's global pool of {} threads, warmed up first. {per_op}",
        rayon::current_num_threads(),
    )
}

fn wait_one_at_a_time(settings: &Settings) -> ScenarioReport {
    let census = Census::new();
    let mut variants = blocking_variants(&census, 1);
    scenario(
        "wait-one-at-a-time",
        blocking_frame(
            "Per operation: hop a closure that returns the operation's index, and wait for \
             it before the next hop.",
        ),
        peer_goals(),
        1,
        &mut variants,
        &census,
        settings,
        None,
    )
}

fn wait_concurrent(settings: &Settings) -> ScenarioReport {
    let census = Census::new();
    let mut variants = blocking_variants(&census, HOPS);
    scenario(
        "wait-concurrent-1000",
        blocking_frame(&format!(
            "Per iteration: start {HOPS} hops, then wait for them in the order started; one \
             operation is one hop."
        )),
        peer_goals(),
        HOPS,
        &mut variants,
        &census,
        settings,
        None,
    )
}
