//! Interleaved measurement: every round runs every variant for one batch, in balanced orders
//! ([`round_order`]) so that drift of the machine and what a batch leaves behind spread over
//! all variants. Samples are nanoseconds per operation (an iteration may be several).

use crate::busy::Load;
use crate::progress;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::future::Future;
use std::io;
use std::time::{Duration, Instant};

/// How long and how often to measure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    /// Rounds per scenario; each round gives one sample per variant.
    pub rounds: usize,
    /// Target wall time of one batch of each variant.
    pub batch: Duration,
    /// Wall time a variant must reach during calibration before its cost is estimated.
    pub probe: Duration,
    /// Target wall time of one batch under a background load: long against the scheduler's
    /// time slices. Calibration probes until half of it.
    pub busy_batch: Duration,
}

impl Settings {
    /// The full run: about half a minute for the oneshot study.
    pub fn full() -> Self {
        Self {
            rounds: 51,
            batch: Duration::from_millis(40),
            probe: Duration::from_millis(10),
            busy_batch: Duration::from_millis(40),
        }
    }

    /// The smoke run for CI: every variant runs, with few rounds and short batches.
    pub fn quick() -> Self {
        Self {
            rounds: 5,
            batch: Duration::from_millis(3),
            probe: Duration::from_millis(1),
            busy_batch: Duration::from_millis(15),
        }
    }

    /// Whether these are the quick settings (studies with plans of their own run the quick one).
    pub fn is_quick(&self) -> bool {
        self.rounds <= Self::quick().rounds
    }
}

/// What one batch of iterations reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Batch {
    /// The time the batch took, measured inside it (runtime entry excluded).
    pub elapsed: Duration,
    /// The wrapping sum of the values received; operation `k` of the batch sends `k`.
    pub checksum: u64,
}

/// The value an iteration reports when it received nothing; it breaks the checksum.
pub const MISSING: u64 = u64::MAX;

/// Runs `op(i)` for `i in 0..iters` on this thread and sums what it returns.
pub fn timed(iters: u64, mut op: impl FnMut(u64) -> u64) -> Batch {
    let start = Instant::now();
    let mut checksum = 0u64;
    for i in 0..iters {
        checksum = checksum.wrapping_add(op(i));
    }
    Batch {
        elapsed: start.elapsed(),
        checksum,
    }
}

/// Like [`timed`], but `op` is awaited inside one `block_on` of `rt`.
pub fn timed_on(
    rt: &tokio::runtime::Runtime,
    iters: u64,
    op: impl AsyncFnMut(u64) -> u64,
) -> Batch {
    in_bursts(rt, iters, None, op)
}

/// Calls in one burst of the paused calling pattern ([`in_bursts`]).
pub const BURST: u64 = 400;

/// Awaits `op(i)` for `i in 0..iters` inside one `block_on` of `rt`; with `burst`, in bursts
/// of that many, each after an untimed sleep of 2 to 17 ms (a fixed pseudo-random sequence).
pub fn in_bursts(
    rt: &tokio::runtime::Runtime,
    iters: u64,
    burst: Option<u64>,
    mut op: impl AsyncFnMut(u64) -> u64,
) -> Batch {
    rt.block_on(async {
        let (mut elapsed, mut checksum, mut i) = (Duration::ZERO, 0u64, 0);
        let mut state = 0x9e37_79b9_7f4a_7c15u64 ^ iters;
        while i < iters {
            let end = match burst {
                None => iters,
                Some(burst) => {
                    // xorshift64
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    std::thread::sleep(Duration::from_micros(2_000 + state % 15_000));
                    (i + burst).min(iters)
                }
            };
            let start = Instant::now();
            for k in i..end {
                checksum = checksum.wrapping_add(op(k).await);
            }
            elapsed += start.elapsed();
            i = end;
        }
        Batch { elapsed, checksum }
    })
}

/// Like [`timed_on`], but `op` is awaited inside a task spawned on `rt` (on a worker thread).
pub fn timed_in_task<F, Fut>(rt: &tokio::runtime::Runtime, iters: u64, mut op: F) -> Batch
where
    F: FnMut(u64) -> Fut + Send + 'static,
    Fut: Future<Output = u64> + Send,
{
    let task = rt.spawn(async move {
        let start = Instant::now();
        let mut checksum = 0u64;
        for i in 0..iters {
            checksum = checksum.wrapping_add(op(i).await);
        }
        Batch {
            elapsed: start.elapsed(),
            checksum,
        }
    });
    // A panic in the task resumes here (`into_panic` itself panics if it was cancelled).
    rt.block_on(task)
        .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()))
}

/// Seconds that `work(arg)` takes.
fn secs<R>(work: &mut impl FnMut(u64) -> R, arg: u64) -> f64 {
    let start = Instant::now();
    std::hint::black_box(work(arg));
    start.elapsed().as_secs_f64()
}

/// How many units of `work` take about `target`: doubles them until a run takes 1 ms, then
/// scales by the fastest of 20 runs.
pub fn calibrate<R>(target: Duration, mut work: impl FnMut(u64) -> R) -> u64 {
    let mut time = |units| secs(&mut work, units);
    let mut units = 1u64;
    while units < 1 << 40 && time(units) < 1e-3 {
        units *= 2;
    }
    let fastest = (0..20).map(|_| time(units)).fold(f64::INFINITY, f64::min);
    (target.as_secs_f64() / fastest * units as f64).max(1.0) as u64
}

/// The median time of `runs` runs of `work` on this thread.
pub fn median_time<R>(runs: usize, mut work: impl FnMut(u64) -> R) -> Duration {
    let mut times: Vec<f64> = (0..runs as u64).map(|k| secs(&mut work, k)).collect();
    times.sort_by(f64::total_cmp);
    Duration::from_secs_f64(times[times.len() / 2])
}

/// A multi-thread runtime of `workers` threads named `name`, with I/O and timers, warmed up.
pub fn runtime(workers: usize, name: &str) -> io::Result<tokio::runtime::Runtime> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .thread_name(name)
        .enable_all()
        .build()?;
    warm_up_tokio(rt.handle());
    Ok(rt)
}

/// Starts every worker of the runtime behind `handle` and one blocking thread.
pub fn warm_up_tokio(handle: &tokio::runtime::Handle) {
    handle.block_on(async {
        let tasks: Vec<_> = (0..1_000)
            .map(|_| tokio::spawn(tokio::task::yield_now()))
            .collect();
        for task in tasks {
            let _ = task.await;
        }
        let _ = tokio::task::spawn_blocking(|| ()).await;
    });
}

/// Starts every worker of rayon's global pool.
pub fn warm_up_rayon() {
    for _ in 0..100 {
        rayon::broadcast(|_| std::hint::black_box(()));
    }
}

/// The environment variable (`STUDY:SPEC`) that makes a copy started by [`in_child`] run one
/// cell of a study.
pub const CHILD_ENV: &str = "BRIDGE_BENCH_CHILD";

/// The start of the line on a child's stdout that carries its result.
const CHILD_RESULT: &str = "bridge-bench child result: ";

/// `value` as one line of CSV without a header: how specs and results cross to a child.
fn to_line(value: &impl Serialize) -> io::Result<String> {
    let mut writer = csv::WriterBuilder::new()
        .has_headers(false)
        .from_writer(Vec::new());
    writer.serialize(value).map_err(io::Error::other)?;
    let bytes = writer.into_inner().map_err(io::Error::other)?;
    Ok(String::from_utf8_lossy(&bytes).trim_end().to_owned())
}

fn from_line<T: DeserializeOwned>(line: &str) -> io::Result<T> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(line.as_bytes());
    let parsed = reader
        .deserialize()
        .next()
        .unwrap_or_else(|| Err(csv::Error::from(io::Error::other("empty"))));
    parsed.map_err(|e| io::Error::other(format!("a bad line `{line}`: {e}")))
}

/// Runs one cell of `study`, described by `spec`, in a fresh copy of this binary (`EXE STUDY`
/// with [`CHILD_ENV`] set) and returns what the child passed to [`child_reply`].
pub fn in_child<R: DeserializeOwned>(study: &str, spec: &impl Serialize) -> io::Result<R> {
    let spec = to_line(spec)?;
    let out = std::process::Command::new(std::env::current_exe()?)
        .arg(study)
        .env(CHILD_ENV, format!("{study}:{spec}"))
        .stdin(std::process::Stdio::null())
        .output()?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    match stdout.lines().find_map(|l| l.strip_prefix(CHILD_RESULT)) {
        Some(result) if out.status.success() => from_line(result),
        _ => {
            let stderr = String::from_utf8_lossy(&out.stderr);
            let tail: String = stderr.lines().rev().take(5).collect::<Vec<_>>().join(" / ");
            Err(io::Error::other(format!(
                "the child for `{study}` ({spec}) ended with {} and no result: {tail}",
                out.status
            )))
        }
    }
}

/// The spec this process was started with by [`in_child`] for `study`; `None` in the parent.
pub fn child_spec<S: DeserializeOwned>(study: &str) -> Option<io::Result<S>> {
    let value = std::env::var(CHILD_ENV).ok()?;
    let (name, spec) = value.split_once(':')?;
    (name == study).then(|| from_line(spec))
}

/// Hands `result` to the parent that ran [`in_child`], and ends this process.
pub fn child_reply(result: &impl Serialize) -> ! {
    use std::io::Write as _;
    let line = to_line(result).unwrap_or_else(|e| e.to_string());
    let mut out = io::stdout().lock();
    let _ = writeln!(out, "{CHILD_RESULT}{line}");
    let _ = out.flush();
    std::process::exit(0)
}

/// One contender: a name and a function that runs a batch of `n` iterations.
pub struct Variant<'a> {
    name: &'static str,
    run: Box<dyn FnMut(u64) -> Batch + 'a>,
}

impl<'a> Variant<'a> {
    /// A variant whose batches are run by `run`.
    pub fn new(name: &'static str, run: impl FnMut(u64) -> Batch + 'a) -> Self {
        Self {
            name,
            run: Box::new(run),
        }
    }

    /// Runs a batch of `iters` iterations; returns nanoseconds per operation and the time.
    fn ns_per_op(&mut self, iters: u64, ops_per_iter: u64) -> (f64, Duration) {
        let batch = (self.run)(iters);
        let ops = iters * ops_per_iter;
        assert_eq!(
            batch.checksum,
            sum_below(ops),
            "variant `{}` did not receive the values 0..{ops}",
            self.name
        );
        (batch.elapsed.as_nanos() as f64 / ops as f64, batch.elapsed)
    }
}

/// The wrapping sum of `0..n`, the checksum of a batch of `n` operations.
pub fn sum_below(n: u64) -> u64 {
    // The even one of n and n - 1 is halved first, so only the final product wraps.
    let (a, b) = if n % 2 == 0 {
        (n / 2, n.wrapping_sub(1))
    } else {
        (n, (n - 1) / 2)
    };
    a.wrapping_mul(b)
}

/// One variant's samples (ns per operation, one per round), its iterations per batch and,
/// under a [`Load`], the background's kernels per second during each of its batches.
#[derive(Debug, Clone, PartialEq)]
pub struct Measured {
    pub name: &'static str,
    pub samples: Vec<f64>,
    /// Iterations per batch: calibrated for this variant on an idle machine, the median of
    /// its batches under a load (they run for a set wall time).
    pub iters: u64,
    pub background: Vec<f64>,
}

/// The outcome of [`measure`]: one entry per variant in the order given.
#[derive(Debug, Clone, PartialEq)]
pub struct Measurement {
    pub ops_per_iter: u64,
    pub rounds: usize,
    pub variants: Vec<Measured>,
    pub load: Option<LoadMeasurement>,
}

impl Measurement {
    /// Samples taken outside [`measure`]: one per round of each named variant.
    pub fn of(rounds: usize, variants: impl IntoIterator<Item = (&'static str, Vec<f64>)>) -> Self {
        let variants = variants.into_iter().map(|(name, samples)| Measured {
            name,
            samples,
            iters: 1,
            background: Vec::new(),
        });
        Self {
            ops_per_iter: 1,
            rounds,
            variants: variants.collect(),
            load: None,
        }
    }
}

/// The part of a [`Measurement`] that only a [`Load`] has.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadMeasurement {
    /// The background's kernels per second during each round's baseline batch (alone).
    pub idle_kernels_per_s: Vec<f64>,
}

/// Calibrates and runs `settings.rounds` interleaved rounds: on an idle machine each variant
/// runs a set number of iterations per batch, sized for its own cost to take about
/// `settings.batch` (so that a fast variant's samples are no shorter, and no noisier, than a
/// slow one's); under a `load` batches of a set wall time.
pub fn measure(
    variants: &mut [Variant<'_>],
    ops_per_iter: u64,
    settings: &Settings,
    load: Option<&Load>,
) -> Measurement {
    progress::measurement_started(settings.rounds, variants.iter().map(|v| v.name));
    let (batch, probe) = match load {
        None => (settings.batch, settings.probe),
        Some(_) => (
            settings.busy_batch.max(settings.batch),
            (settings.busy_batch / 2).max(settings.probe),
        ),
    };
    let fresh = Chunk {
        iters: 1,
        worst_ns_per_iter: 0.0,
    };
    let mut chunks = vec![fresh; variants.len()];
    let iters: Vec<u64> = match load {
        // Doubles a variant's iterations until a batch takes `probe`, then sizes its batches
        // by the fastest of three probes of that size (one slow probe would shrink them all).
        None => (variants.iter_mut())
            .map(|variant| {
                let mut iters = 1u64;
                let mut ns = loop {
                    let (ns, elapsed) = variant.ns_per_op(iters, ops_per_iter);
                    if elapsed >= probe || iters * ops_per_iter >= 1 << 26 {
                        break ns;
                    }
                    iters *= 2;
                };
                for _ in 0..2 {
                    ns = ns.min(variant.ns_per_op(iters, ops_per_iter).0);
                }
                let ns_per_iter = ns * ops_per_iter as f64;
                (batch.as_nanos() as f64 / ns_per_iter.max(1.0)).max(1.0) as u64
            })
            .collect(),
        Some(_) => {
            for (variant, chunk) in variants.iter_mut().zip(&mut chunks) {
                for_at_least(variant, chunk, ops_per_iter, probe);
            }
            vec![0; variants.len()]
        }
    };
    progress::step_done(true);

    let n = variants.len();
    let mut samples = vec![Vec::with_capacity(settings.rounds); n];
    let mut background = vec![Vec::new(); n];
    let mut used_iters = vec![Vec::with_capacity(settings.rounds); n];
    let mut idle_kernels_per_s = Vec::new();
    let mut baseline_wall = batch;
    // Under a load, slot n of a round is the baseline batch.
    let slots = n + usize::from(load.is_some());
    for round in 0..settings.rounds {
        let mut walls = Duration::ZERO;
        for v in round_order(round, slots) {
            let before = load.map(|load| (load.kernels(), Instant::now()));
            if v == n {
                std::thread::sleep(baseline_wall);
            } else if load.is_some() {
                let (ns, used) =
                    for_at_least(&mut variants[v], &mut chunks[v], ops_per_iter, batch);
                samples[v].push(ns);
                used_iters[v].push(used);
            } else {
                samples[v].push(variants[v].ns_per_op(iters[v], ops_per_iter).0);
                used_iters[v].push(iters[v]);
            }
            if let (Some(load), Some((kernels, start))) = (load, before) {
                let wall = start.elapsed();
                let rate = (load.kernels() - kernels) as f64 / wall.as_secs_f64();
                if v == n {
                    idle_kernels_per_s.push(rate);
                } else {
                    walls += wall;
                    background[v].push(rate);
                }
            }
        }
        if n > 0 && load.is_some() {
            baseline_wall = walls / n as u32;
        }
        progress::step_done(false);
    }
    Measurement {
        ops_per_iter,
        rounds: settings.rounds,
        load: load.map(|_| LoadMeasurement { idle_kernels_per_s }),
        variants: (variants.iter())
            .zip(samples)
            .zip(background)
            .zip(used_iters)
            .map(|(((v, samples), background), mut used)| {
                used.sort_unstable();
                Measured {
                    name: v.name,
                    samples,
                    iters: used.get(used.len() / 2).copied().unwrap_or(1),
                    background,
                }
            })
            .collect(),
    }
}

/// The order of a round's `slots` batches: a balanced (Williams) design, in which each slot
/// follows each other once per `slots` rounds (even), or per `2 * slots` (odd, mirrored).
pub fn round_order(round: usize, slots: usize) -> impl Iterator<Item = usize> {
    let period = if slots % 2 == 0 { slots } else { 2 * slots };
    let row = round % period.max(1);
    let (shift, mirrored) = (row % slots.max(1), row >= slots);
    (0..slots).map(move |j| {
        let j = if mirrored { slots - 1 - j } else { j };
        let base = if j % 2 == 1 {
            j.div_ceil(2)
        } else {
            (slots - j / 2) % slots
        };
        (base + shift) % slots
    })
}

/// A variant's next chunk size under a load, and its slowest chunk so far.
#[derive(Debug, Clone, Copy)]
struct Chunk {
    iters: u64,
    worst_ns_per_iter: f64,
}

/// Runs chunks of `variant` for `target`; returns ns per operation and the iterations run.
fn for_at_least(
    variant: &mut Variant<'_>,
    chunk: &mut Chunk,
    ops_per_iter: u64,
    target: Duration,
) -> (f64, u64) {
    let start = Instant::now();
    let mut elapsed = Duration::ZERO;
    let mut iters = 0u64;
    loop {
        let (_, took) = variant.ns_per_op(chunk.iters, ops_per_iter);
        elapsed += took;
        iters += chunk.iters;
        let per_iter = took.as_nanos() as f64 / chunk.iters as f64;
        chunk.worst_ns_per_iter = chunk.worst_ns_per_iter.max(per_iter);
        if took > target / 16 {
            chunk.iters /= 2;
        } else if took < target / 64 {
            chunk.iters = chunk.iters.saturating_mul(2);
        }
        let cap = (target.as_nanos() as f64 / 8.0 / chunk.worst_ns_per_iter.max(1.0)) as u64;
        chunk.iters = chunk.iters.min(cap).clamp(1, 1 << 26);
        if start.elapsed() >= target {
            break;
        }
    }
    (
        elapsed.as_nanos() as f64 / (iters * ops_per_iter) as f64,
        iters,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn round_orders_are_permutations_where_each_slot_follows_each_other_equally_often() {
        for slots in 1..=9 {
            let period = if slots % 2 == 0 { slots } else { 2 * slots };
            let mut follows: HashMap<(usize, usize), usize> = HashMap::new();
            let mut first = vec![0; slots];
            for round in 0..period {
                let order: Vec<usize> = round_order(round, slots).collect();
                let mut sorted = order.clone();
                sorted.sort_unstable();
                assert_eq!(
                    sorted,
                    (0..slots).collect::<Vec<_>>(),
                    "{slots} slots: {order:?}"
                );
                first[order[0]] += 1;
                for pair in order.windows(2) {
                    *follows.entry((pair[0], pair[1])).or_default() += 1;
                }
                // The design repeats with its period.
                assert!(round_order(round + period, slots).eq(order.iter().copied()));
            }
            // Every ordered pair of distinct slots, the same number of times.
            let each = if slots % 2 == 0 { 1 } else { 2 };
            assert_eq!(follows.len(), slots * (slots - 1), "{slots} slots");
            assert!(
                follows.values().all(|&k| k == each),
                "{slots} slots: {follows:?}"
            );
            // And every slot opens a round equally often.
            assert!(
                first.iter().all(|&k| k == period / slots),
                "{slots} slots: {first:?}"
            );
        }
    }

    #[test]
    fn values_cross_to_a_child_as_one_line() {
        let value = (String::from("a b,c"), 2.5f64, f64::NAN, 7u64);
        let line = to_line(&value).unwrap();
        assert!(!line.contains('\n'));
        let back: (String, f64, f64, u64) = from_line(&line).unwrap();
        assert_eq!((back.0.as_str(), back.1, back.3), ("a b,c", 2.5, 7));
        assert!(back.2.is_nan());
        assert!(from_line::<(u64, u64)>("1").is_err());
    }

    /// Settings of `rounds` rounds, with batches (idle and busy) and probes of the given µs.
    fn settings(rounds: usize, batch_us: u64, probe_us: u64) -> Settings {
        Settings {
            rounds,
            batch: Duration::from_micros(batch_us),
            probe: Duration::from_micros(probe_us),
            busy_batch: Duration::from_micros(batch_us),
        }
    }

    /// A variant that reports `per_iter` per iteration without running anything.
    fn steady(name: &'static str, per_iter: Duration) -> Variant<'static> {
        Variant::new(name, move |n| Batch {
            elapsed: per_iter * n as u32,
            checksum: sum_below(n),
        })
    }

    #[test]
    fn measure_ops_reports_per_operation_samples() {
        // Each iteration is 4 operations worth k = 4i..4i + 4, in 1 µs per iteration.
        let mut variants = [Variant::new("fake", |n| Batch {
            elapsed: Duration::from_micros(n),
            checksum: sum_below(4 * n),
        })];
        let m = measure(&mut variants, 4, &settings(3, 100, 10), None);
        assert_eq!(m.ops_per_iter, 4);
        assert_eq!(m.variants[0].iters, 100);
        assert_eq!(m.variants[0].samples, vec![250.0; 3]);
    }

    #[test]
    fn each_variant_gets_batches_sized_for_its_own_cost() {
        // 1 µs and 1 ms per iteration: a 10 ms batch is 10,000 of the first and 10 of the
        // second, not 10 of each (sized for the slowest, the fast one's batches would last
        // 10 µs and carry its noise).
        let mut variants = [
            steady("fast", Duration::from_micros(1)),
            steady("slow", Duration::from_millis(1)),
        ];
        let m = measure(&mut variants, 1, &settings(3, 10_000, 1_000), None);
        let iters: Vec<u64> = m.variants.iter().map(|v| v.iters).collect();
        assert_eq!(iters, [10_000, 10]);
        assert_eq!(m.variants[0].samples, vec![1_000.0; 3]);
        assert_eq!(m.variants[1].samples, vec![1_000_000.0; 3]);
    }

    #[test]
    fn a_slow_probe_does_not_shrink_the_batches() {
        // The first probe of the calibrated size takes 10x as long (a preempted batch); the
        // batches are sized by the fastest of the probes.
        let mut calls = 0u32;
        let mut variants = [Variant::new("hiccup", |n| {
            calls += 1;
            let per_iter = if n == 1024 && calls == 11 { 10 } else { 1 };
            Batch {
                elapsed: Duration::from_micros(n * per_iter),
                checksum: sum_below(n),
            }
        })];
        let m = measure(&mut variants, 1, &settings(1, 10_000, 1_000), None);
        assert_eq!(m.variants[0].iters, 10_000);
    }

    #[test]
    fn under_a_load_batches_run_for_the_target_and_count_the_background() {
        // Each iteration sleeps 100 µs, so a batch must run many of them to fill 20 ms. Their
        // checksums, a fold of 0..n for each chunk size n, check `sum_below` too.
        let mut variants = [Variant::new("sleepy", |n| {
            timed(n, |i| {
                std::thread::sleep(Duration::from_micros(100));
                i
            })
        })];
        let settings = Settings {
            rounds: 3,
            batch: Duration::from_millis(1),
            probe: Duration::from_millis(1),
            busy_batch: Duration::from_millis(20),
        };
        let load = Load::start().unwrap();
        let m = measure(&mut variants, 1, &settings, Some(&load));
        drop(load);
        let load = m.load.expect("a load was given");
        assert_eq!(load.idle_kernels_per_s.len(), 3);
        assert!(load.idle_kernels_per_s.iter().all(|&k| k > 0.0));
        assert_eq!(m.variants[0].background.len(), 3);
        assert!(m.variants[0].background.iter().all(|&k| k > 0.0));
        // A batch under load is sized to fill 20 ms, not one 1 ms probe: several of the 100 µs
        // iterations, however far a busy machine makes each sleep overshoot (up to ~6 ms).
        assert!(m.variants[0].iters >= 3, "{:?}", m.variants[0].iters);
        assert!(m.variants[0].samples.iter().all(|&ns| ns >= 100_000.0));
    }
}
