//! The crossing API's volume figures, side by side in one run: items per second through a
//! stream of 100,000 `u64` items crossing with bound 8 (`bridge::stream::on_io`,
//! `bridge::stream::on_cpu`) or read by synchronous code (`bridge::iter_blocking` from a
//! plain thread and from a current-thread runtime's `block_on` body), beside the same stream
//! read directly; and what a poll of `bridge::cpu::spawn_future` costs against a task of
//! `bridge::spawn`.
//!
//! `cargo run --release -p bridge-bench --example crossing_figures -- [ROUNDS]`
//!
//! Every variant runs once per round, in an order that rotates from round to round, so that a
//! burst of load from elsewhere on the machine falls on all of them; the tables give each
//! variant's median over the rounds and its range (fastest to slowest round). Every result is
//! checked; a wrong one ends the program with a non-zero status.

use futures::StreamExt;
use std::future::{Future, poll_fn};
use std::hint::black_box;
use std::task::Poll;
use std::time::{Duration, Instant};

/// Items through each stream.
const ITEMS: u64 = 100_000;
/// The crossings' bound.
const BOUND: usize = 8;
/// Polls of the self-waking future (one task).
const POLLS: u32 = 100_000;
/// Tasks in flight at once in the concurrent variants, and how many batches of them.
const CONCURRENT: usize = 1_000;
const BATCHES: usize = 20;
/// Tasks in the one-at-a-time variants.
const SEQUENTIAL: usize = 10_000;

fn items() -> impl futures::Stream<Item = u64> + Send + 'static {
    futures::stream::iter(0..ITEMS)
}

fn expected_sum() -> u64 {
    (0..ITEMS).sum()
}

/// Consumes a stream on this thread with the runtime-free executor, and checks its sum.
fn drain(stream: impl futures::Stream<Item = u64>) {
    let sum = bridge::block_on(stream.fold(0u64, |sum, x| async move { sum + black_box(x) }));
    assert_eq!(sum, expected_sum(), "a stream lost or changed items");
}

fn check_sum(sum: u64) {
    assert_eq!(sum, expected_sum(), "a stream lost or changed items");
}

/// A stream variant: its name, and a run of the whole stream that gives the time it took.
type StreamVariant = (&'static str, fn() -> Duration);

const STREAMS: [StreamVariant; 5] = [
    ("read directly (bridge::block_on, no crossing)", direct),
    ("stream::spawn_io, consumed on a plain thread", crossing_io),
    (
        "stream::spawn_cpu, consumed on a plain thread",
        crossing_cpu,
    ),
    ("iter_blocking from a plain thread (Inline)", iter_plain),
    (
        "iter_blocking in a current-thread block_on body (Handoff)",
        iter_current_thread,
    ),
];

fn direct() -> Duration {
    let started = Instant::now();
    drain(items());
    started.elapsed()
}

fn crossing_io() -> Duration {
    let started = Instant::now();
    drain(bridge::stream::on_io(items(), BOUND));
    started.elapsed()
}

fn crossing_cpu() -> Duration {
    let started = Instant::now();
    drain(bridge::stream::on_cpu(items(), BOUND));
    started.elapsed()
}

fn iter_plain() -> Duration {
    assert_eq!(bridge_tokio::route(), bridge_tokio::Route::Inline);
    let started = Instant::now();
    check_sum(bridge::iter_blocking(items()).map(black_box).sum());
    started.elapsed()
}

fn iter_current_thread() -> Duration {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread runtime");
    rt.block_on(async {
        assert_eq!(bridge_tokio::route(), bridge_tokio::Route::Handoff);
        let started = Instant::now();
        check_sum(bridge::iter_blocking(items()).map(black_box).sum());
        started.elapsed()
    })
}

/// A future that wakes itself and returns `Pending` `polls - 1` times, then `Ready`: each
/// wake-up queues one more poll job.
fn self_waking(polls: u32) -> impl Future<Output = u32> + Send + 'static {
    let mut left = polls;
    poll_fn(move |cx| {
        left -= 1;
        if left == 0 {
            Poll::Ready(polls)
        } else {
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    })
}

/// A task variant: its name, its unit, and a run that gives the time per unit (a poll, or a
/// task) in nanoseconds.
type TaskVariant = (&'static str, &'static str, fn() -> f64);

const TASKS: [TaskVariant; 5] = [
    (
        "cpu::spawn_future, one future waking itself",
        "per poll",
        future_polls,
    ),
    (
        "bridge::spawn of a closure, 1,000 in flight",
        "per task",
        closures_in_flight,
    ),
    (
        "cpu::spawn_future of a ready future, 1,000 in flight",
        "per task",
        futures_in_flight,
    ),
    (
        "bridge::spawn of a closure, one at a time (spawn, wait)",
        "per task",
        closures_one_by_one,
    ),
    (
        "cpu::spawn_future of a ready future, one at a time",
        "per task",
        futures_one_by_one,
    ),
];

fn future_polls() -> f64 {
    let started = Instant::now();
    let polls = bridge::cpu::spawn_future(self_waking(POLLS)).wait();
    let elapsed = started.elapsed();
    assert_eq!(polls, POLLS);
    elapsed.as_nanos() as f64 / f64::from(POLLS)
}

/// `BATCHES` times: `CONCURRENT` tasks made by `spawn`, then waited for, their sum checked.
fn in_flight(spawn: fn(usize) -> bridge::Task<usize>) -> f64 {
    let started = Instant::now();
    for batch in 0..BATCHES {
        let tasks: Vec<_> = (0..CONCURRENT).map(|i| spawn(i + batch)).collect();
        let sum: usize = tasks.into_iter().map(bridge::Task::wait).sum();
        assert_eq!(sum, (0..CONCURRENT).sum::<usize>() + CONCURRENT * batch);
    }
    started.elapsed().as_nanos() as f64 / (BATCHES * CONCURRENT) as f64
}

fn closures_in_flight() -> f64 {
    in_flight(|n| bridge::spawn(move || black_box(n)))
}

fn futures_in_flight() -> f64 {
    in_flight(|n| bridge::cpu::spawn_future(async move { black_box(n) }))
}

/// `SEQUENTIAL` tasks made by `spawn`, each waited for before the next.
fn one_by_one(spawn: fn(usize) -> bridge::Task<usize>) -> f64 {
    let started = Instant::now();
    for i in 0..SEQUENTIAL {
        assert_eq!(spawn(i).wait(), i);
    }
    started.elapsed().as_nanos() as f64 / SEQUENTIAL as f64
}

fn closures_one_by_one() -> f64 {
    one_by_one(|n| bridge::spawn(move || black_box(n)))
}

fn futures_one_by_one() -> f64 {
    one_by_one(|n| bridge::cpu::spawn_future(async move { black_box(n) }))
}

/// The median and the range of `values`.
fn summary(values: &mut [f64]) -> (f64, f64, f64) {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    let median = if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    };
    (median, values[0], values[n - 1])
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|line| line.starts_with("model name"))
                .and_then(|line| line.split_once(':'))
                .map(|(_, model)| model.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown (no /proc/cpuinfo)".to_owned())
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|load| {
            load.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_else(|_| "unknown".to_owned())
}

fn main() {
    let rounds: usize = match std::env::args().nth(1) {
        Some(arg) => arg.parse().expect("ROUNDS: a number of rounds"),
        None => 7,
    };
    assert!(rounds > 0, "ROUNDS: at least one round");
    println!(
        "crossing figures: {} (threads available: {}), load average {} at the start",
        cpu_model(),
        std::thread::available_parallelism().map_or(0, usize::from),
        load_average(),
    );
    println!(
        "{rounds} rounds; {ITEMS} u64 items per stream, bound {BOUND}; {POLLS} polls of one \
         self-waking future; {CONCURRENT} tasks in flight x {BATCHES}; {SEQUENTIAL} tasks one at \
         a time; rayon threads: {}",
        rayon::current_num_threads(),
    );

    // Warm-up: the pools, the I/O runtime and a handoff worker start here, not in round 1.
    for (_, run) in STREAMS {
        run();
    }
    for (_, _, run) in TASKS {
        run();
    }

    let mut stream_times = vec![Vec::with_capacity(rounds); STREAMS.len()];
    let mut task_times = vec![Vec::with_capacity(rounds); TASKS.len()];
    for round in 0..rounds {
        for k in 0..STREAMS.len() {
            let variant = (k + round) % STREAMS.len();
            let elapsed = (STREAMS[variant].1)();
            stream_times[variant].push(ITEMS as f64 / elapsed.as_secs_f64());
        }
        for k in 0..TASKS.len() {
            let variant = (k + round) % TASKS.len();
            task_times[variant].push((TASKS[variant].2)());
        }
    }

    println!("\nitems/s through a stream of {ITEMS} items (median, and range over the rounds)");
    println!("| variant | median | range |\n| --- | --- | --- |");
    for ((name, _), times) in STREAMS.iter().zip(&mut stream_times) {
        let (median, low, high) = summary(times);
        println!(
            "| {name} | {:.2} M/s | {:.2}-{:.2} M/s |",
            median / 1e6,
            low / 1e6,
            high / 1e6
        );
    }
    println!("\nns per poll or per task (median, and range over the rounds)");
    println!("| variant | unit | median | range |\n| --- | --- | --- | --- |");
    for ((name, unit, _), times) in TASKS.iter().zip(&mut task_times) {
        let (median, low, high) = summary(times);
        println!("| {name} | {unit} | {median:.0} ns | {low:.0}-{high:.0} ns |");
    }
    println!("\nload average {} at the end", load_average());
}
