//! What Linux's /proc tells of this process and machine, for the studies' notes; elsewhere
//! every reading is `None` (or NaN).

use crate::harness::{Batch, Variant};
use std::cell::RefCell;
use std::fmt;

fn read(path: &str) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

/// The number in field `name` of a `/proc/<pid>/status` text, e.g. `Threads` or `VmHWM`.
fn status_field(status: &str, name: &str) -> Option<f64> {
    let value = status
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))?;
    value.trim().trim_end_matches("kB").trim().parse().ok()
}

/// Field `name` of /proc/self/status; NaN where it cannot be read.
pub fn self_status(name: &str) -> f64 {
    let status = read("/proc/self/status");
    status
        .and_then(|s| status_field(&s, name))
        .unwrap_or(f64::NAN)
}

/// The number of OS threads in this process now.
pub fn os_threads() -> Option<u32> {
    Some(status_field(&read("/proc/self/status")?, "Threads")? as u32)
}

/// Field `n` (3 or more, as in proc(5)) of a `/proc/.../stat` text, counted after the
/// command's closing parenthesis (the command may hold spaces).
fn stat_field(stat: &str, n: usize) -> Option<&str> {
    let after_command = stat.rsplit_once(')')?.1;
    after_command.split_whitespace().nth(n.checked_sub(3)?)
}

/// The calling thread's nice value (field 19 of /proc/thread-self/stat).
pub fn thread_nice() -> Option<i32> {
    stat_field(&read("/proc/thread-self/stat")?, 19)?
        .parse()
        .ok()
}

/// The first three fields of `/proc/loadavg` (1, 5 and 15 minutes).
pub fn load_average() -> Option<String> {
    let text = read("/proc/loadavg")?;
    let fields: Vec<&str> = text.split_whitespace().take(3).collect();
    (fields.len() == 3).then(|| fields.join(" "))
}

/// The CPU model: the first of the keys architectures use for it in /proc/cpuinfo.
pub fn cpu_model() -> Option<String> {
    let info = read("/proc/cpuinfo")?;
    let keys = "model name,cpu model,Processor,Hardware,uarch,cpu".split(',');
    keys.into_iter().find_map(|wanted| {
        info.lines().find_map(|line| {
            let (key, value) = line.split_once(':')?;
            (key.trim() == wanted && !value.trim().is_empty()).then(|| value.trim().to_owned())
        })
    })
}

/// CPU time in clock ticks: of all CPUs (busy and in all) and of this process.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTicks {
    pub busy: u64,
    pub total: u64,
    pub this: u64,
}

impl CpuTicks {
    pub fn now() -> Option<Self> {
        Self::parse(&read("/proc/stat")?, &read("/proc/self/stat")?)
    }

    fn parse(stat: &str, this: &str) -> Option<Self> {
        let cpu: Vec<u64> = stat
            .lines()
            .next()?
            .strip_prefix("cpu ")?
            .split_whitespace()
            .map(|v| v.parse().ok())
            .collect::<Option<_>>()?;
        // user nice system idle iowait irq softirq steal: idle and iowait are not busy.
        let total: u64 = cpu.iter().take(8).sum();
        let idle = cpu.get(3)? + cpu.get(4).copied().unwrap_or(0);
        let ticks = |n| stat_field(this, n)?.parse::<u64>().ok();
        Some(Self {
            busy: total - idle,
            total,
            this: ticks(14)? + ticks(15)?,
        })
    }

    /// The ticks from `earlier` to `self`.
    pub fn since(self, earlier: Self) -> Self {
        Self {
            busy: self.busy.saturating_sub(earlier.busy),
            total: self.total.saturating_sub(earlier.total),
            this: self.this.saturating_sub(earlier.this),
        }
    }

    pub fn add(self, other: Self) -> Self {
        Self {
            busy: self.busy + other.busy,
            total: self.total + other.total,
            this: self.this + other.this,
        }
    }

    /// The percent of all CPUs' time used by this process and by everything else.
    pub fn shares(self) -> (f64, f64) {
        if self.total == 0 {
            return (f64::NAN, f64::NAN);
        }
        let share = |t: u64| 100.0 * t as f64 / self.total as f64;
        (share(self.this), share(self.busy.saturating_sub(self.this)))
    }
}

/// The thread counts right after one variant's batches (fewest, most) and the growth during
/// them, summed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ThreadTally {
    pub min_after: Option<u32>,
    pub max_after: Option<u32>,
    pub grew_by: u32,
}

impl ThreadTally {
    /// Records one batch that began with `before` threads and ended with `after`.
    pub fn record(&mut self, before: Option<u32>, after: Option<u32>) {
        let Some(after) = after else {
            return;
        };
        self.min_after = Some(self.min_after.map_or(after, |m| m.min(after)));
        self.max_after = Some(self.max_after.map_or(after, |m| m.max(after)));
        self.grew_by += before.map_or(0, |before| after.saturating_sub(before));
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

/// The thread count before a scenario is measured and a tally per variant around its batches.
#[derive(Debug)]
pub struct Census {
    base: Option<u32>,
    tallies: RefCell<Vec<(&'static str, ThreadTally)>>,
}

impl Census {
    pub fn new() -> Self {
        Self {
            base: os_threads(),
            tallies: RefCell::new(Vec::new()),
        }
    }

    /// A variant run by `run`, with the thread count read around each batch.
    pub fn variant<'a>(
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

    /// The tally of the variant `name`, in words.
    pub fn of(&self, name: &str) -> String {
        let tallies = self.tallies.borrow();
        let tally = tallies.iter().find(|(n, _)| *n == name);
        tally.map_or_else(|| "not measured".to_owned(), |(_, t)| t.to_string())
    }

    /// The thread counts as a note; `holds` says what was running before measuring.
    pub fn note(&self, holds: &str) -> String {
        let each: Vec<String> = (self.tallies.borrow().iter())
            .map(|(n, t)| format!("{n} {t}"))
            .collect();
        format!(
            "Threads (/proc/self/status, outside the timed part): {} before measuring{holds}; \
             right after each variant's batches, min-max (growth during its own batches): {}. \
             The count is process-wide and tokio keeps an idle blocking thread for 10 s, so \
             compare the growth, not the totals.",
            self.base
                .map_or_else(|| "not read".to_owned(), |n| n.to_string()),
            each.join("; ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_and_stat_fields() {
        let status = "Name:\tx\nVmHWM:\t   20480 kB\nThreads:\t517\n";
        assert_eq!(status_field(status, "VmHWM"), Some(20480.0));
        assert_eq!(status_field(status, "Threads"), Some(517.0));
        assert_eq!(status_field(status, "VmSwap"), None);
        let stat = "7 (a b) S 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20";
        assert_eq!(stat_field(stat, 19), Some("19"));
        assert_eq!(stat_field("7 (a) S", 4), None);
        if cfg!(target_os = "linux") {
            assert!(os_threads().is_some_and(|n| n >= 1));
            assert!(thread_nice().is_some());
        }
    }

    #[test]
    fn cpu_ticks_parse_proc_stat_and_this_process() {
        let stat = "cpu  100 5 50 800 20 3 2 0 0 0\ncpu0 50 2 25 400 10 1 1 0 0 0\n";
        let this = "4242 (bridge bench) S 1 2 3 4 5 6 7 8 9 10 30 12 0 0 20 0 3 0\n";
        let t = CpuTicks::parse(stat, this).unwrap();
        assert_eq!((t.total, t.busy, t.this), (980, 160, 42));
        let later = CpuTicks {
            total: t.total + 200,
            busy: t.busy + 150,
            this: t.this + 100,
        };
        assert_eq!(later.since(t).shares(), (50.0, 25.0));
        assert!(CpuTicks::default().shares().0.is_nan());
    }

    #[test]
    fn tally_tracks_range_and_growth() {
        let mut tally = ThreadTally::default();
        assert_eq!(tally.to_string(), "not read");
        tally.record(Some(5), Some(7));
        tally.record(Some(7), Some(6));
        tally.record(None, Some(9));
        assert_eq!(tally.to_string(), "6-9 (+2 during its batches)");
    }
}
