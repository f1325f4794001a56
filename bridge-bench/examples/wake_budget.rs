//! The handoff's spin budgets follow what a wake-up costs: `bridge::run_blocking` from a
//! current-thread runtime's `block_on` body against a pre-spawned worker thread, in a steady
//! loop and in bursts after pauses, with the wake-up cost the bridge measured
//! (`bridge::rt::metrics().wake_up`) printed beside.
//!
//! `cargo run --release -p bridge-bench --example wake_budget -- [steady|paused] [ROUNDS]`
//!
//! Change what a wake-up costs and run it again: pinned to one CPU (`taskset -c 0`), beside a
//! busy thread (`sh -c 'while :; do :; done' &`), or built with a slower park
//! (`BRIDGE_SLOW_WAKE_NS=10000 cargo run ...`, whose wakers spend 10 µs before every unpark of the
//! bridge's waits). docs/design.md has the runs.

use std::future::Future;
use std::hint::black_box;
use std::pin::Pin;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

type Job = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

/// A dedicated thread with its own current-thread runtime, taking boxed futures from a std
/// mpsc channel (the study's pre-spawned worker).
struct Worker {
    jobs: mpsc::Sender<Job>,
}

impl Worker {
    fn start() -> Self {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a current-thread runtime");
        let (jobs, queue) = mpsc::channel::<Job>();
        thread::Builder::new()
            .name("pre-spawned".into())
            .spawn(move || {
                for job in queue {
                    rt.block_on(job);
                }
            })
            .expect("a thread");
        Self { jobs }
    }

    /// One call, answered on a std mpsc channel: both sides park at once.
    fn run_mpsc(&self, i: u64) -> u64 {
        let (tx, rx) = mpsc::channel();
        let job: Job = Box::pin(async move {
            let _ = tx.send(black_box(i));
        });
        self.jobs.send(job).expect("the worker runs");
        rx.recv().expect("the worker answers")
    }

    /// One call, answered on a bridge oneshot.
    fn run_oneshot(&self, i: u64) -> u64 {
        let (tx, rx) = bridge::oneshot::channel();
        let job: Job = Box::pin(async move {
            let _ = tx.send(black_box(i));
        });
        self.jobs.send(job).expect("the worker runs");
        rx.recv_blocking().expect("the worker answers")
    }
}

const NAMES: [&str; 3] = ["bridge", "pre-spawned (mpsc)", "pre-spawned (oneshot)"];

fn call(variant: usize, worker: &Worker, i: u64) -> u64 {
    match variant {
        0 => bridge::run_blocking(async move { black_box(i) }),
        1 => worker.run_mpsc(i),
        _ => worker.run_oneshot(i),
    }
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let steady = args.get(1).is_none_or(|mode| mode == "steady");
    let rounds: usize = args
        .get(2)
        .map_or(if steady { 15 } else { 60 }, |r| r.parse().expect("ROUNDS"));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread runtime");
    let worker = Worker::start();
    let mut per_call: Vec<Vec<f64>> = vec![Vec::new(); NAMES.len()];
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut pause = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        Duration::from_micros(2_000 + seed % 15_000)
    };
    rt.block_on(async {
        // Warm-up: the I/O runtime, a handoff worker, the pre-spawned worker.
        for i in 0..2_000 {
            for variant in 0..NAMES.len() {
                black_box(call(variant, &worker, i));
            }
        }
        for round in 0..rounds {
            for k in 0..NAMES.len() {
                let variant = (round + k) % NAMES.len();
                let calls = if steady {
                    5_000
                } else {
                    thread::sleep(pause());
                    400
                };
                let start = Instant::now();
                let mut sum = 0u64;
                for i in 0..calls {
                    sum = sum.wrapping_add(call(variant, &worker, i));
                }
                black_box(sum);
                per_call[variant].push(start.elapsed().as_secs_f64() * 1e6 / calls as f64);
            }
        }
    });
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|line| line.starts_with("model name"))
                .and_then(|line| line.split(':').nth(1))
                .map(|name| name.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".to_owned());
    let mode = if steady { "steady" } else { "paused" };
    println!("{mode}, {rounds} rounds, {cpu}; µs a call, median of the rounds [min-max]:");
    let mut medians = [0.0; NAMES.len()];
    for (variant, samples) in per_call.iter_mut().enumerate() {
        medians[variant] = median(samples);
        println!(
            "  {:<22} {:7.2} [{:.2}-{:.2}]",
            NAMES[variant],
            medians[variant],
            samples[0],
            samples[samples.len() - 1]
        );
    }
    println!(
        "  bridge / pre-spawned (mpsc) {:.2}x, / pre-spawned (oneshot) {:.2}x; wake-up as measured: {:?}",
        medians[0] / medians[1],
        medians[0] / medians[2],
        bridge::rt::metrics().wake_up
    );
}
