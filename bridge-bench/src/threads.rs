//! The process's OS thread count, as Linux reports it on the `Threads:` line of
//! `/proc/self/status`, and a tally of it across the batches of one variant; and the
//! machine's load average, which the studies print next to their thread counts.

use std::fmt;

/// The number on the `Threads:` line of a `/proc/<pid>/status` text; `None` if there is no
/// such line or its value is not a number.
pub fn parse_threads(status: &str) -> Option<u32> {
    status
        .lines()
        .find_map(|line| line.strip_prefix("Threads:"))
        .and_then(|value| value.trim().parse().ok())
}

/// The number of OS threads in this process now; `None` where `/proc/self/status` cannot be
/// read (not Linux) or has no `Threads:` line.
pub fn os_threads() -> Option<u32> {
    parse_threads(&std::fs::read_to_string("/proc/self/status").ok()?)
}

/// The thread counts seen around the batches of one variant.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ThreadTally {
    /// The fewest threads right after one of its batches.
    pub min_after: Option<u32>,
    /// The most threads right after one of its batches.
    pub max_after: Option<u32>,
    /// The growth during its batches, summed: after minus before for each batch that ended
    /// with more threads than it began with. Threads that other code starts or ends
    /// meanwhile count too, so this is an upper bound on the threads the variant started
    /// when it is the only thing running.
    pub grew_by: u32,
}

impl ThreadTally {
    /// Records one batch that began with `before` threads and ended with `after`; a count
    /// that could not be read is skipped.
    pub fn record(&mut self, before: Option<u32>, after: Option<u32>) {
        let Some(after) = after else {
            return;
        };
        self.min_after = Some(self.min_after.map_or(after, |m| m.min(after)));
        self.max_after = Some(self.max_after.map_or(after, |m| m.max(after)));
        if let Some(before) = before {
            self.grew_by += after.saturating_sub(before);
        }
    }
}

impl fmt::Display for ThreadTally {
    /// `MIN-MAX (+GROWTH during its batches)`, or `not read`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.min_after, self.max_after) {
            (Some(min), Some(max)) if min == max => write!(f, "{min}")?,
            (Some(min), Some(max)) => write!(f, "{min}-{max}")?,
            _ => return f.write_str("not read"),
        }
        write!(f, " (+{} during its batches)", self.grew_by)
    }
}

/// The first three fields of `/proc/loadavg` (1, 5 and 15 minutes); `None` where it cannot
/// be read.
pub fn load_average() -> Option<String> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    let fields: Vec<&str> = text.split_whitespace().take(3).collect();
    (fields.len() == 3).then(|| fields.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The head of a real `/proc/self/status` (Linux 6.x), cut after the line we read.
    const STATUS: &str = "Name:\tbridge-bench\nUmask:\t0022\nState:\tR (running)\n\
        Tgid:\t4242\nNgid:\t0\nPid:\t4242\nPPid:\t17\nTracerPid:\t0\nUid:\t0\t0\t0\t0\n\
        VmRSS:\t   10240 kB\nRssAnon:\t    2048 kB\nThreads:\t517\nSigQ:\t0/95413\n";

    #[test]
    fn parses_the_threads_line() {
        assert_eq!(parse_threads(STATUS), Some(517));
        assert_eq!(parse_threads("Threads: 3"), Some(3));
    }

    #[test]
    fn no_threads_line_or_garbage_is_none() {
        assert_eq!(parse_threads(""), None);
        assert_eq!(parse_threads("Name:\tx\nPid:\t1\n"), None);
        assert_eq!(parse_threads("Threads:\tmany\n"), None);
        // A line that merely mentions threads is not the field.
        assert_eq!(parse_threads("Name:\tThreads: 9\n"), None);
    }

    #[test]
    fn this_process_has_at_least_one_thread() {
        if cfg!(target_os = "linux") {
            assert!(os_threads().is_some_and(|n| n >= 1));
        }
    }

    #[test]
    fn tally_tracks_range_and_growth() {
        let mut t = ThreadTally::default();
        assert_eq!(t.to_string(), "not read");
        t.record(Some(5), Some(5));
        assert_eq!(t.to_string(), "5 (+0 during its batches)");
        t.record(Some(5), Some(300));
        t.record(Some(300), Some(290)); // idle threads left: no negative growth
        t.record(Some(290), Some(310));
        t.record(None, None);
        t.record(None, Some(310)); // the range counts, the growth cannot
        assert_eq!(
            t,
            ThreadTally {
                min_after: Some(5),
                max_after: Some(310),
                grew_by: 315
            }
        );
        assert_eq!(t.to_string(), "5-310 (+315 during its batches)");
    }
}
