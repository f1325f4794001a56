//! Interleaved measurement: every round runs every variant for the same batch of iterations,
//! in an order that rotates from round to round, so slow drift of the machine (frequency,
//! other load, a cold cache) spreads over all variants instead of landing on one.
//!
//! An iteration is one operation unless the scenario says otherwise ([`measure_ops`]): a
//! scenario that starts 1,000 hops and then awaits them counts 1,000 operations per
//! iteration, and reports nanoseconds per hop.

use crate::progress;
use std::fmt;
use std::future::Future;
use std::time::{Duration, Instant};

/// How long and how often to measure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    /// Rounds per scenario; each round gives one sample per variant.
    pub rounds: usize,
    /// Target wall time of one batch of the slowest variant.
    pub batch: Duration,
    /// Wall time a variant must reach during calibration before its cost is estimated.
    pub probe: Duration,
}

impl Settings {
    /// The full run: about half a minute for the oneshot study.
    pub fn full() -> Self {
        Self {
            rounds: 51,
            batch: Duration::from_millis(40),
            probe: Duration::from_millis(10),
        }
    }

    /// The smoke run for CI: every variant runs, with few rounds and short batches.
    pub fn quick() -> Self {
        Self {
            rounds: 5,
            batch: Duration::from_millis(3),
            probe: Duration::from_millis(1),
        }
    }
}

/// What one batch of iterations reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Batch {
    /// The time the batch took, measured inside the batch (so runtime entry is excluded).
    pub elapsed: Duration,
    /// The wrapping sum of the values received; operation `k` of the batch sends `k` (with
    /// one operation per iteration, iteration `i` sends `i`).
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
    mut op: impl AsyncFnMut(u64) -> u64,
) -> Batch {
    rt.block_on(async {
        let start = Instant::now();
        let mut checksum = 0u64;
        for i in 0..iters {
            checksum = checksum.wrapping_add(op(i).await);
        }
        Batch {
            elapsed: start.elapsed(),
            checksum,
        }
    })
}

/// Like [`timed_on`], but `op` is awaited inside a task spawned on `rt`, so the batch runs on
/// one of the runtime's worker threads (on a multi-thread runtime, not on the thread that
/// calls `block_on`) and wakes go through the runtime's scheduler.
///
/// # Panics
///
/// If the measuring task panics; its panic is resumed here.
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
    match rt.block_on(task) {
        Ok(batch) => batch,
        Err(e) => match e.try_into_panic() {
            Ok(payload) => std::panic::resume_unwind(payload),
            Err(e) => panic!("the measuring task did not finish: {e}"),
        },
    }
}

/// Starts every worker of rayon's global pool, so that no measurement pays for thread
/// creation.
pub fn warm_up_rayon() {
    for _ in 0..100 {
        rayon::broadcast(|_| std::hint::black_box(()));
    }
}

/// One contender: a name and a function that runs a batch of `n` iterations.
pub struct Variant<'a> {
    name: &'static str,
    run: Box<dyn FnMut(u64) -> Batch + 'a>,
}

impl fmt::Debug for Variant<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Variant")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl<'a> Variant<'a> {
    /// A variant whose batches are run by `run`.
    pub fn new(name: &'static str, run: impl FnMut(u64) -> Batch + 'a) -> Self {
        Self {
            name,
            run: Box::new(run),
        }
    }

    /// Runs a batch of `iters` iterations of `ops_per_iter` operations each, and returns its
    /// nanoseconds per operation.
    ///
    /// # Panics
    ///
    /// If the values received do not sum to those of `0..iters * ops_per_iter`: the variant
    /// lost or corrupted a value, and its timing would mean nothing.
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
fn sum_below(n: u64) -> u64 {
    // The even one of n and n - 1 is halved first, so only the final product wraps.
    let (a, b) = if n % 2 == 0 {
        (n / 2, n.wrapping_sub(1))
    } else {
        (n, (n - 1) / 2)
    };
    a.wrapping_mul(b)
}

/// The samples of one variant, in nanoseconds per operation, one per round.
#[derive(Debug, Clone, PartialEq)]
pub struct Measured {
    /// The variant's name.
    pub name: &'static str,
    /// One sample per round.
    pub samples: Vec<f64>,
}

/// The outcome of [`measure`].
#[derive(Debug, Clone, PartialEq)]
pub struct Measurement {
    /// Iterations in every batch of every variant.
    pub iters_per_round: u64,
    /// Operations in one iteration; samples are per operation.
    pub ops_per_iter: u64,
    /// Number of rounds.
    pub rounds: usize,
    /// One entry per variant, in the order they were given.
    pub variants: Vec<Measured>,
}

/// Calibrates one batch size for all variants (so the slowest takes about
/// `settings.batch`), then runs `settings.rounds` interleaved rounds; one operation per
/// iteration.
///
/// Calibration doubles as warm-up: every variant runs until it has taken at least
/// `settings.probe`. Variants are calibrated one after the other, in the order given.
pub fn measure(variants: &mut [Variant<'_>], settings: &Settings) -> Measurement {
    measure_ops(variants, 1, settings)
}

/// Like [`measure`], but every iteration is `ops_per_iter` operations: batches report the
/// checksum of `0..iters * ops_per_iter`, and samples are nanoseconds per operation.
pub fn measure_ops(
    variants: &mut [Variant<'_>],
    ops_per_iter: u64,
    settings: &Settings,
) -> Measurement {
    // Progress is reported between batches only, never inside a timed one.
    progress::measurement_started(settings.rounds, variants.iter().map(|v| v.name));
    let mut slowest_ns_per_iter = 0.0f64;
    for variant in variants.iter_mut() {
        let mut iters = 1u64;
        loop {
            let (ns, elapsed) = variant.ns_per_op(iters, ops_per_iter);
            if elapsed >= settings.probe || iters * ops_per_iter >= 1 << 26 {
                slowest_ns_per_iter = slowest_ns_per_iter.max(ns * ops_per_iter as f64);
                break;
            }
            iters *= 2;
        }
    }
    let iters_per_round =
        (settings.batch.as_nanos() as f64 / slowest_ns_per_iter.max(1.0)).max(1.0) as u64;
    progress::step_done(true);

    let n = variants.len();
    let mut samples = vec![Vec::with_capacity(settings.rounds); n];
    for round in 0..settings.rounds {
        for k in 0..n {
            let v = (round + k) % n;
            samples[v].push(variants[v].ns_per_op(iters_per_round, ops_per_iter).0);
        }
        progress::step_done(false);
    }
    Measurement {
        iters_per_round,
        ops_per_iter,
        rounds: settings.rounds,
        variants: variants
            .iter()
            .zip(samples)
            .map(|(v, samples)| Measured {
                name: v.name,
                samples,
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sum_below_matches_a_fold() {
        for n in [0, 1, 2, 3, 10, 1_000, 40_001] {
            assert_eq!(
                sum_below(n),
                (0..n).fold(0u64, u64::wrapping_add),
                "n = {n}"
            );
        }
        // Wraps like the fold would: the sum of 0..2^33 is 2^65 - 2^32.
        assert_eq!(sum_below(1 << 33), 0u64.wrapping_sub(1 << 32));
    }

    #[test]
    fn measure_ops_reports_per_operation_samples() {
        // Each iteration is 4 operations worth k = 4i..4i + 4, in 1 µs per iteration.
        let mut variants = [Variant::new("fake", |n| Batch {
            elapsed: Duration::from_micros(n),
            checksum: sum_below(4 * n),
        })];
        let settings = Settings {
            rounds: 3,
            batch: Duration::from_micros(100),
            probe: Duration::from_micros(10),
        };
        let m = measure_ops(&mut variants, 4, &settings);
        assert_eq!(m.ops_per_iter, 4);
        assert_eq!(m.iters_per_round, 100);
        assert_eq!(m.variants[0].samples, vec![250.0; 3]);
    }
}
