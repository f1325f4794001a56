//! The family's histogram of durations, by powers of two of microseconds: [`Histogram`], and
//! the bucket layout with which bridge-rayon and bridge-tokio fill theirs.

use std::time::Duration;

/// Buckets: below 1 µs, then one per power of two of microseconds up to 2^20 µs (about
/// 1.05 s), then one for everything longer.
///
/// # Examples
///
/// ```
/// let never = bridge_core::histogram::from_counts([0; bridge_core::histogram::BUCKETS]);
/// assert_eq!(never.buckets().count(), bridge_core::histogram::BUCKETS);
/// ```
pub const BUCKETS: usize = 22;

/// The bucket of a duration: 0 below 1 µs, `k` for `[2^(k-1), 2^k)` µs, the last one above.
///
/// # Examples
///
/// ```
/// use bridge_core::histogram::{BUCKETS, bucket};
/// use std::time::Duration;
///
/// assert_eq!(bucket(Duration::from_nanos(500)), 0);
/// assert_eq!(bucket(Duration::from_micros(3)), 2);
/// assert_eq!(bucket(Duration::from_secs(60)), BUCKETS - 1);
/// ```
pub fn bucket(duration: Duration) -> usize {
    let micros = duration.as_micros();
    let k = (u128::BITS - micros.leading_zeros()) as usize;
    k.min(BUCKETS - 1)
}

/// The upper bound (exclusive) of bucket `k`; `Duration::MAX` for the last one.
fn upper_bound(k: usize) -> Duration {
    if k + 1 < BUCKETS {
        Duration::from_micros(1 << k)
    } else {
        Duration::MAX
    }
}

/// A histogram of durations: the queue wait of CPU tasks (`bridge::metrics().cpu.queue_wait`)
/// and the polls of the I/O side (`bridge::metrics().io.poll_durations`).
///
/// **Resolution:** a duration lands in one of 22 buckets by powers of two: below 1 µs, then
/// `[1, 2)` µs, `[2, 4)` µs, ... up to `[2^19, 2^20)` µs (0.52 to 1.05 s), then everything
/// from 1.05 s on. [`percentile`](Self::percentile) answers with a bucket's upper bound, so
/// it may be up to twice the true value, never less.
///
/// # Examples
///
/// ```
/// let waits = bridge::metrics().cpu.queue_wait;
/// if let Some(p99) = waits.percentile(99.0) {
///     println!("p99 queue wait below {p99:?}, from {} samples", waits.samples());
/// }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Histogram {
    counts: [u64; BUCKETS],
}

impl Histogram {
    /// How many durations it holds.
    ///
    /// # Examples
    ///
    /// ```
    /// let waits = bridge::metrics().cpu.queue_wait;
    /// assert_eq!(waits.samples(), waits.buckets().map(|(_, n)| n).sum::<u64>());
    /// ```
    pub fn samples(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// The buckets, shortest first: each one's upper bound (exclusive) and how many sampled
    /// waits fell in it. The first bucket holds the waits below 1 µs; the last one, whose
    /// bound is `Duration::MAX`, those of about 1.05 s (2^20 µs) and more.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let waits = bridge::metrics().cpu.queue_wait;
    /// let bounds: Vec<Duration> = waits.buckets().map(|(bound, _)| bound).collect();
    /// assert_eq!(bounds[0], Duration::from_micros(1));
    /// assert_eq!(bounds[1], Duration::from_micros(2));
    /// assert_eq!(bounds[20], Duration::from_micros(1 << 20));
    /// assert_eq!(bounds.last(), Some(&Duration::MAX));
    /// ```
    pub fn buckets(&self) -> impl Iterator<Item = (Duration, u64)> + '_ {
        self.counts
            .iter()
            .enumerate()
            .map(|(k, &count)| (upper_bound(k), count))
    }

    /// The wait that `p` percent of the samples did not exceed, as the upper bound of the
    /// bucket that holds it (`Duration::MAX` if that is the last bucket, above 1.05 s);
    /// `None` without samples. `percentile(50.0)` is the median, `percentile(100.0)` bounds
    /// the longest wait sampled.
    ///
    /// # Panics
    ///
    /// If `p` is not within `0.0..=100.0`.
    ///
    /// # Examples
    ///
    /// ```
    /// let waits = bridge::metrics().cpu.queue_wait;
    /// match (waits.percentile(50.0), waits.percentile(99.0)) {
    ///     (Some(p50), Some(p99)) => assert!(p50 <= p99),
    ///     (p50, p99) => assert!(p50.is_none() && p99.is_none() && waits.samples() == 0),
    /// }
    /// ```
    pub fn percentile(&self, p: f64) -> Option<Duration> {
        assert!(
            (0.0..=100.0).contains(&p),
            "bridge::Histogram: a percentile must be within 0..=100, not {p}"
        );
        let samples = self.samples();
        if samples == 0 {
            return None;
        }
        // The rank (1-based) of the sample at `p`: at least the first one.
        let rank = ((p / 100.0 * samples as f64).ceil() as u64).clamp(1, samples);
        let mut seen = 0;
        self.buckets().find_map(|(bound, count)| {
            seen += count;
            (seen >= rank).then_some(bound)
        })
    }

    /// The waits sampled after `earlier`, an older snapshot's histogram (bucket by bucket,
    /// saturating at 0).
    ///
    /// # Examples
    ///
    /// ```
    /// let before = bridge::metrics().cpu.queue_wait;
    /// let now = bridge::metrics().cpu.queue_wait;
    /// assert!(now.since(&before).samples() <= now.samples());
    /// ```
    #[must_use]
    pub fn since(&self, earlier: &Histogram) -> Histogram {
        Histogram {
            counts: std::array::from_fn(|k| self.counts[k].saturating_sub(earlier.counts[k])),
        }
    }
}

/// A histogram of these bucket counts (see [`bucket`]): how bridge-rayon and bridge-tokio
/// make theirs.
///
/// # Examples
///
/// ```
/// use bridge_core::histogram::{BUCKETS, bucket, from_counts};
/// use std::time::Duration;
///
/// let mut counts = [0; BUCKETS];
/// counts[bucket(Duration::from_micros(3))] += 1;
/// let waits = from_counts(counts);
/// assert_eq!(waits.samples(), 1);
/// assert_eq!(waits.percentile(0.5), Some(Duration::from_micros(4)));
/// ```
pub fn from_counts(counts: [u64; BUCKETS]) -> Histogram {
    Histogram { counts }
}

#[cfg(test)]
mod tests {
    use super::{BUCKETS, Histogram, bucket, upper_bound};
    use std::time::Duration;

    #[test]
    fn each_wait_lands_in_the_bucket_whose_bounds_hold_it() {
        assert_eq!(bucket(Duration::ZERO), 0);
        assert_eq!(bucket(Duration::from_nanos(999)), 0);
        assert_eq!(bucket(Duration::from_micros(1)), 1);
        assert_eq!(bucket(Duration::from_nanos(1999)), 1);
        assert_eq!(bucket(Duration::from_micros(2)), 2);
        assert_eq!(bucket(Duration::from_micros(3)), 2);
        assert_eq!(bucket(Duration::from_micros(4)), 3);
        assert_eq!(bucket(Duration::from_micros((1 << 20) - 1)), 20);
        assert_eq!(bucket(Duration::from_micros(1 << 20)), 21);
        assert_eq!(bucket(Duration::MAX), BUCKETS - 1);
        for micros in [
            0,
            1,
            2,
            3,
            5,
            100,
            999,
            1000,
            65_535,
            1 << 19,
            (1 << 20) - 1,
        ] {
            let wait = Duration::from_micros(micros);
            let k = bucket(wait);
            assert!(wait < upper_bound(k), "{wait:?} in bucket {k}");
            assert!(
                k == 0 || wait >= upper_bound(k - 1),
                "{wait:?} in bucket {k}"
            );
        }
    }

    #[test]
    fn percentiles_answer_with_the_bound_of_the_bucket_holding_the_rank() {
        let mut counts = [0; BUCKETS];
        counts[0] = 90; // below 1 µs
        counts[10] = 9; // [512, 1024) µs
        counts[BUCKETS - 1] = 1; // over a second
        let waits = Histogram { counts };
        assert_eq!(waits.samples(), 100);
        assert_eq!(waits.percentile(0.0), Some(Duration::from_micros(1)));
        assert_eq!(waits.percentile(50.0), Some(Duration::from_micros(1)));
        assert_eq!(waits.percentile(90.0), Some(Duration::from_micros(1)));
        assert_eq!(waits.percentile(90.5), Some(Duration::from_micros(1024)));
        assert_eq!(waits.percentile(99.0), Some(Duration::from_micros(1024)));
        assert_eq!(waits.percentile(99.5), Some(Duration::MAX));
        assert_eq!(waits.percentile(100.0), Some(Duration::MAX));
        assert_eq!(
            Histogram {
                counts: [0; BUCKETS]
            }
            .percentile(50.0),
            None
        );
        let earlier = Histogram {
            counts: std::array::from_fn(|k| u64::from(k == 10)),
        };
        assert_eq!(waits.since(&earlier).samples(), 99);
        assert_eq!(earlier.since(&waits).samples(), 0);
    }

    #[test]
    #[should_panic(expected = "within 0..=100")]
    fn a_percentile_out_of_range_panics() {
        let _ = Histogram {
            counts: [0; BUCKETS],
        }
        .percentile(101.0);
    }
}
