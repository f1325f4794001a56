//! Interleaved measurement: every round runs every variant for the same batch of iterations,
//! in an order that rotates from round to round, so slow drift of the machine (frequency,
//! other load, a cold cache) spreads over all variants instead of landing on one.

use std::fmt;
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
    /// The wrapping sum of the values received; iteration `i` sends `i`.
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

    /// Runs a batch of `iters` and returns its nanoseconds per iteration.
    ///
    /// # Panics
    ///
    /// If the values received are not exactly `0..iters`: the channel lost or corrupted a
    /// value, and its timing would mean nothing.
    fn ns_per_iter(&mut self, iters: u64) -> (f64, Duration) {
        let batch = (self.run)(iters);
        let expected = (0..iters).fold(0u64, u64::wrapping_add);
        assert_eq!(
            batch.checksum, expected,
            "variant `{}` did not receive the values 0..{iters}",
            self.name
        );
        (
            batch.elapsed.as_nanos() as f64 / iters as f64,
            batch.elapsed,
        )
    }
}

/// The samples of one variant, in nanoseconds per iteration, one per round.
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
    /// Number of rounds.
    pub rounds: usize,
    /// One entry per variant, in the order they were given.
    pub variants: Vec<Measured>,
}

/// Calibrates one batch size for all variants (so the slowest takes about
/// `settings.batch`), then runs `settings.rounds` interleaved rounds.
///
/// Calibration doubles as warm-up: every variant runs until it has taken at least
/// `settings.probe`.
pub fn measure(variants: &mut [Variant<'_>], settings: &Settings) -> Measurement {
    let mut slowest_ns = 0.0f64;
    for variant in variants.iter_mut() {
        let mut iters = 1u64;
        loop {
            let (ns, elapsed) = variant.ns_per_iter(iters);
            if elapsed >= settings.probe || iters >= 1 << 26 {
                slowest_ns = slowest_ns.max(ns);
                break;
            }
            iters *= 2;
        }
    }
    let iters_per_round = (settings.batch.as_nanos() as f64 / slowest_ns.max(1.0)).max(1.0) as u64;

    let n = variants.len();
    let mut samples = vec![Vec::with_capacity(settings.rounds); n];
    for round in 0..settings.rounds {
        for k in 0..n {
            let v = (round + k) % n;
            samples[v].push(variants[v].ns_per_iter(iters_per_round).0);
        }
    }
    Measurement {
        iters_per_round,
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
