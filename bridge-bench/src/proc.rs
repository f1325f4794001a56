//! What Linux's /proc tells of this process and machine, for the studies' notes, parsed by
//! `procfs-core`; elsewhere the files are missing and every reading is `None`.

use procfs_core::process::{Stat, Status};
use procfs_core::{CpuInfo, ExplicitSystemInfo, FromRead, FromReadSI, KernelStats, LoadAverage};
use std::cell::RefCell;
use std::fmt;

/// The CPUs this process may run on (1 where that cannot be read).
pub fn cpus() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// This process's resident set in KiB: now (`VmRSS`), or at its peak (`VmHWM`).
pub fn memory_kib(peak: bool) -> Option<u64> {
    let status = Status::from_file("/proc/self/status").ok()?;
    if peak { status.vmhwm } else { status.vmrss }
}

/// The number of OS threads in this process now.
pub fn os_threads() -> Option<u32> {
    u32::try_from(Stat::from_file("/proc/self/stat").ok()?.num_threads).ok()
}

/// The calling thread's nice value.
pub fn thread_nice() -> Option<i32> {
    i32::try_from(Stat::from_file("/proc/thread-self/stat").ok()?.nice).ok()
}

/// The load averages over 1, 5 and 15 minutes, as /proc/loadavg shows them.
pub fn load_average() -> Option<String> {
    let load = LoadAverage::from_file("/proc/loadavg").ok()?;
    let [one, five, fifteen] = [load.one, load.five, load.fifteen];
    Some(format!("{one:.2} {five:.2} {fifteen:.2}"))
}

/// The CPU model: the first of the keys architectures use for it in /proc/cpuinfo.
pub fn cpu_model() -> Option<String> {
    let info = CpuInfo::from_file("/proc/cpuinfo").ok()?;
    let keys = "model name,cpu model,Processor,Hardware,uarch,cpu".split(',');
    let value = |key| {
        info.get_field(0, key)
            .or(info.fields.get(key).map(|v| v.as_str()))
    };
    let model = keys
        .filter_map(value)
        .find(|model| !model.trim().is_empty())?;
    Some(model.trim().to_owned())
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
        // Only the raw tick counts are read; the system's facts would only convert them.
        let facts = ExplicitSystemInfo {
            boot_time_secs: 0,
            ticks_per_second: 100,
            page_size: 4096,
            is_little_endian: cfg!(target_endian = "little"),
        };
        let all = KernelStats::from_file("/proc/stat", &facts).ok()?.total;
        let idle = all.idle + all.iowait.unwrap_or(0);
        let others = [all.irq, all.softirq, all.steal].map(|t| t.unwrap_or(0));
        let busy = all.user + all.nice + all.system + others.iter().sum::<u64>();
        let this = Stat::from_file("/proc/self/stat").ok()?;
        Some(Self {
            busy,
            total: busy + idle,
            this: this.utime + this.stime,
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

    /// `run`, a variant's batches, with the thread count read around each.
    pub fn around<'a, B>(
        &'a self,
        name: &'static str,
        mut run: impl FnMut(u64) -> B + 'a,
    ) -> impl FnMut(u64) -> B + 'a {
        let k = {
            let mut tallies = self.tallies.borrow_mut();
            tallies.push((name, ThreadTally::default()));
            tallies.len() - 1
        };
        move |n| {
            let before = os_threads();
            let batch = run(n);
            self.tallies.borrow_mut()[k].1.record(before, os_threads());
            batch
        }
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
    fn readings_on_linux_and_shares_of_ticks() {
        if cfg!(target_os = "linux") {
            assert!(os_threads().is_some_and(|n| n >= 1));
            assert!(thread_nice().is_some());
            // The peak, read later, is at least the resident set read first.
            let rss = memory_kib(false);
            assert!(rss.is_some() && memory_kib(true) >= rss);
            let ticks = CpuTicks::now().unwrap();
            assert!(ticks.busy <= ticks.total && ticks.total > 0);
        }
        let t = CpuTicks {
            total: 980,
            busy: 160,
            this: 42,
        };
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
