//! Where a hop's time goes on a busy machine: `bridge::spawn` from a task of a tokio
//! multi-thread runtime, one hop at a time, split into the pool's pickup (from the spawn to
//! the closure's start on a rayon thread) and the return (from the closure's end to the
//! awaiting task running again), under background CPU work of several shapes. No peer is
//! involved: the split says which side waits, the shapes say what it waits for.
//!
//! `cargo run --release --manifest-path bridge-bench/Cargo.toml --example hop_under_load -- [HOPS]`
//!
//! The shapes: `idle` (nothing else runs); `busy, every CPU` (one background thread per CPU,
//! each hashing its own buffer in a tight loop, at the default priority, as in the hop
//! study's busy scenarios); `busy, every CPU, at nice 10` (the same threads at a lower
//! priority, `bridge::cpu::lower_thread_priority`); `busy, one CPU free` (one background
//! thread fewer than CPUs). docs/design.md has the runs.

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

/// The background: `threads` threads hashing their own buffer until stopped, each at
/// `nice` (0: the default priority).
struct Background {
    stop: Arc<AtomicBool>,
    kernels: Arc<AtomicU64>,
    threads: Vec<thread::JoinHandle<()>>,
}

impl Background {
    fn start(threads: usize, nice: u8) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let kernels = Arc::new(AtomicU64::new(0));
        let threads = (0..threads)
            .map(|i| {
                let (stop, kernels) = (Arc::clone(&stop), Arc::clone(&kernels));
                thread::Builder::new()
                    .name(format!("background-{i}"))
                    .spawn(move || {
                        if nice > 0 {
                            bridge::cpu::lower_thread_priority(nice)
                                .expect("a thread may always lower its own priority");
                        }
                        let buffer: Vec<u8> = (0..4096u32).map(|b| b as u8 ^ i as u8).collect();
                        // ORDERING: a stop signal and a counter; nothing else is published.
                        while !stop.load(Ordering::Relaxed) {
                            black_box(fnv1a(black_box(&buffer)));
                            kernels.fetch_add(1, Ordering::Relaxed);
                        }
                    })
                    .expect("a background thread")
            })
            .collect();
        Self {
            stop,
            kernels,
            threads,
        }
    }

    /// Kernels finished so far.
    fn kernels(&self) -> u64 {
        // ORDERING: a counter sampled at the edges of the hops; a kernel counted a moment
        // late moves across an edge, which thousands of kernels dwarf.
        self.kernels.load(Ordering::Relaxed)
    }

    fn stop(self) {
        // ORDERING: a signal; nothing else is published.
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads {
            t.join().expect("a background thread");
        }
    }
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// One hop's parts, in ns: the pool's pickup and the return to the awaiting task.
fn hops(rt: &tokio::runtime::Runtime, n: usize) -> (Vec<f64>, Vec<f64>) {
    rt.block_on(async move {
        tokio::spawn(async move {
            let mut pickup = Vec::with_capacity(n);
            let mut back = Vec::with_capacity(n);
            for k in 0..n {
                let spawned = Instant::now();
                let ran = bridge::spawn(move || {
                    black_box(k);
                    Instant::now()
                })
                .await;
                let resumed = Instant::now();
                pickup.push((ran - spawned).as_nanos() as f64);
                back.push((resumed - ran).as_nanos() as f64);
            }
            (pickup, back)
        })
        .await
        .expect("the hopping task")
    })
}

fn quantile(sorted: &[f64], q: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .map_or(400, |a| a.parse().expect("HOPS is a number"));
    let cpus = thread::available_parallelism().map_or(1, usize::from);
    let rt = tokio::runtime::Runtime::new().expect("a multi-thread runtime");
    // Warm: the runtime's workers and every rayon worker ran once.
    let _ = hops(&rt, 100);
    rayon::broadcast(|_| ());
    let shapes: [(&str, usize, u8); 4] = [
        ("idle", 0, 0),
        ("busy, every CPU", cpus, 0),
        ("busy, every CPU, at nice 10", cpus, 10),
        ("busy, one CPU free", cpus.saturating_sub(1), 0),
    ];
    println!("{cpus} CPUs; {n} hops per shape, one at a time; percentiles and means in us\n");
    println!(
        "| background | pickup p50 | pickup p99 | return p50 | return p99 | hop p50 | hop p99 | \
         hop mean | pickup's share of the mean | background kernels/s |"
    );
    println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    for (name, threads, nice) in shapes {
        let background = Background::start(threads, nice);
        thread::sleep(Duration::from_millis(50));
        let start = Instant::now();
        let before = background.kernels();
        let (mut pickup, mut back) = hops(&rt, n);
        let kernels = background.kernels() - before;
        let took = start.elapsed();
        background.stop();
        let mut hop: Vec<f64> = pickup.iter().zip(&back).map(|(a, b)| a + b).collect();
        for v in [&mut pickup, &mut back, &mut hop] {
            v.sort_by(f64::total_cmp);
        }
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        println!(
            "| {name} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.0}% | {:.0} |",
            quantile(&pickup, 0.5) / 1e3,
            quantile(&pickup, 0.99) / 1e3,
            quantile(&back, 0.5) / 1e3,
            quantile(&back, 0.99) / 1e3,
            quantile(&hop, 0.5) / 1e3,
            quantile(&hop, 0.99) / 1e3,
            mean(&hop) / 1e3,
            100.0 * mean(&pickup) / mean(&hop),
            kernels as f64 / took.as_secs_f64(),
        );
    }
}
