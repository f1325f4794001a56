//! Summary statistics over the per-round samples of one variant.

/// The variant every ratio is taken against.
pub const BASELINE: &str = "bridge";

/// The median, minimum and maximum of a set of samples (nanoseconds per operation).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    /// The middle sample; the mean of the two middle samples for an even count.
    pub median: f64,
    /// The smallest sample.
    pub min: f64,
    /// The largest sample.
    pub max: f64,
}

impl Summary {
    /// Summarizes `samples`, or returns `None` if there are none (or any is NaN).
    pub fn of(samples: &[f64]) -> Option<Self> {
        let (mut s, n) = (samples.to_vec(), samples.len());
        if n == 0 || s.iter().any(|x| x.is_nan()) {
            return None;
        }
        s.sort_by(f64::total_cmp);
        let median = match n % 2 {
            1 => s[n / 2],
            _ => (s[n / 2 - 1] + s[n / 2]) / 2.0,
        };
        let (min, max) = (s[0], s[n - 1]);
        Some(Self { median, min, max })
    }
}

/// How many times slower `value` is than `baseline` (above 1: slower; below 1: faster).
pub fn ratio(value: f64, baseline: f64) -> f64 {
    if baseline > 0.0 {
        value / baseline
    } else {
        f64::NAN
    }
}

/// The nearest-rank percentile `p` (0 < p <= 1) of samples sorted ascending; NaN if empty.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = (p * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// `value` nanoseconds to three significant digits in the largest unit that keeps it at 1 or
/// more: `11.0 ns`, `123 ns`, `1.00 µs`; not finite: `n/a`.
pub fn format_ns(value: f64) -> String {
    const UNITS: [(f64, &str); 4] = [(1.0, "ns"), (1e3, "µs"), (1e6, "ms"), (1e9, "s")];
    let fits = |&(scale, _): &(f64, &str)| value.abs() >= scale * 0.9995;
    let (scale, unit) = UNITS.into_iter().rfind(fits).unwrap_or(UNITS[0]);
    let x = value / scale;
    if !x.is_finite() {
        return "n/a".to_owned();
    }
    let digits = 2 - usize::from(x >= 10.0) - usize::from(x >= 100.0);
    format!("{x:.digits$} {unit}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries_percentiles_and_ratios() {
        let sorted: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&sorted, 0.99), 99.0);
        assert_eq!(percentile(&[1.0, 2.0, 3.0], 0.5), 2.0);
        assert!(percentile(&[], 0.5).is_nan());
        let odd = Summary::of(&[9.0, 1.0, 5.0, 3.0, 7.0]).unwrap();
        assert_eq!((odd.median, odd.min, odd.max), (5.0, 1.0, 9.0));
        assert_eq!(Summary::of(&[4.0, 10.0, 1.0, 2.0]).unwrap().median, 3.0);
        assert_eq!(Summary::of(&[]), None);
        assert_eq!(Summary::of(&[1.0, f64::NAN]), None);
        assert_eq!(ratio(50.0, 10.0), 5.0);
        assert!(ratio(5.0, 0.0).is_nan());
    }
}
