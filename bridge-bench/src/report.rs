//! Turning measurements into rows, a CSV file and markdown tables with a computed takeaway.

use crate::chart::{self, Bar, Panel};
use crate::harness::Measurement;
use crate::progress;
use crate::stats::{Summary, ratio};
use serde::Serialize;
use std::fmt::Write as _;
use std::io;
use std::path::Path;
use std::sync::OnceLock;

pub use crate::stats::BASELINE;

/// One variant's result in one scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The scenario, e.g. `same-thread`.
    pub scenario: String,
    /// The variant, e.g. `tokio`.
    pub variant: String,
    /// Rounds measured.
    pub rounds: usize,
    /// Iterations per batch.
    pub iters_per_round: u64,
    /// Operations per iteration (1 unless the scenario batches them, e.g. 1,000 hops).
    pub ops_per_iter: u64,
    /// Nanoseconds per operation across rounds.
    pub ns: Summary,
    /// This variant's median over the baseline's median; above 1 means slower than bridge.
    pub ratio_to_bridge: f64,
    /// The per-round samples in round order, for paired comparisons with the baseline (over
    /// several runs, the runs' samples one after the other).
    pub samples: Vec<f64>,
    /// Each run's median in run order: one entry for a single run.
    pub run_medians: Vec<f64>,
    /// Under a background load, what the variant's batches left of the background work.
    pub background: Option<Background>,
}

/// The background work's throughput during a variant's batches (see [`crate::busy`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Background {
    /// Background kernels per second during the variant's batches, one per round (over
    /// several runs, the runs' rounds one after the other).
    pub samples: Vec<f64>,
    /// Background kernels per second during the same rounds' baseline batches, when the
    /// background ran alone.
    pub idle_samples: Vec<f64>,
    /// The median over rounds of [`samples`](Self::samples); over several runs, the median of
    /// the runs' medians.
    pub kernels_per_s: f64,
    /// The median over rounds of the variant's kernels/s over the same round's baseline; over
    /// several runs, the median of the runs' medians.
    pub vs_idle: f64,
    /// The median over rounds of [`idle_samples`](Self::idle_samples); over several runs,
    /// the median of the runs' medians.
    pub idle_kernels_per_s: f64,
    /// Each run's [`vs_idle`](Self::vs_idle) in run order: one entry for a single run.
    pub run_vs_idle: Vec<f64>,
}

impl Background {
    /// The background of one run's rounds: `samples` during the variant's batches and
    /// `idle_samples` during the baseline batches of the same rounds; `None` if there are
    /// none.
    pub fn of(samples: &[f64], idle_samples: &[f64]) -> Option<Self> {
        let kernels = Summary::of(samples)?;
        let idle = Summary::of(idle_samples)?;
        let vs_idle = Summary::of(&per_round_vs_idle(samples, idle_samples))?;
        Some(Self {
            samples: samples.to_vec(),
            idle_samples: idle_samples.to_vec(),
            kernels_per_s: kernels.median,
            vs_idle: vs_idle.median,
            idle_kernels_per_s: idle.median,
            run_vs_idle: vec![vs_idle.median],
        })
    }

    /// Each round's kernels/s during the variant's batch over the baseline's.
    pub fn per_round(&self) -> Vec<f64> {
        per_round_vs_idle(&self.samples, &self.idle_samples)
    }
}

fn per_round_vs_idle(samples: &[f64], idle_samples: &[f64]) -> Vec<f64> {
    samples
        .iter()
        .zip(idle_samples)
        .map(|(&busy, &idle)| ratio(busy, idle))
        .collect()
}

/// Summarizes a measurement into one row per variant, and tells the study's progress bar (if
/// any) that `scenario` is done.
pub fn rows(scenario: &str, m: &Measurement) -> Vec<Row> {
    progress::scenario_done(scenario);
    let summaries: Vec<_> = m
        .variants
        .iter()
        .enumerate()
        .filter_map(|(k, v)| {
            let iters = m
                .load
                .as_ref()
                .and_then(|load| load.iters_per_round.get(k).copied())
                .unwrap_or(m.iters_per_round);
            Some((
                v.name,
                Summary::of(&v.samples)?,
                &v.samples,
                &v.background,
                iters,
            ))
        })
        .collect();
    let baseline = summaries
        .iter()
        .find(|(name, ..)| *name == BASELINE)
        .map_or(f64::NAN, |(_, s, ..)| s.median);
    summaries
        .into_iter()
        .map(|(name, ns, samples, background, iters_per_round)| Row {
            scenario: scenario.to_owned(),
            variant: name.to_owned(),
            rounds: m.rounds,
            iters_per_round,
            ops_per_iter: m.ops_per_iter,
            ns,
            ratio_to_bridge: ratio(ns.median, baseline),
            samples: samples.clone(),
            run_medians: vec![ns.median],
            background: m
                .load
                .as_ref()
                .and_then(|load| Background::of(background, &load.idle_kernels_per_s)),
        })
        .collect()
}

/// One line of `results.csv`: a row of one scenario; the field names are the header. The
/// columns after `ratio_to_bridge` came later, so they come last: `runs` and `run_medians_ns`
/// (each run's median, `;`-separated; `median_ns` is then the median of those), under a
/// background load `bg_kernels_per_s` (background kernels per second during the variant's
/// batches), `bg_vs_idle` (that over the baseline with the background alone) and
/// `bg_idle_kernels_per_s` (the baseline), empty on an idle machine; and `sample`, what each
/// sample whose median, min and max the `*_ns` columns hold is (e.g. `ns/op`, or `I/O-only
/// p99 ns` where a scenario's sample is a latency percentile). Nanoseconds have 1 decimal,
/// ratios 3, kernels per second none.
#[derive(Debug, Serialize)]
struct CsvLine<'a> {
    scenario: &'a str,
    variant: &'a str,
    rounds: usize,
    iters_per_round: u64,
    ops_per_iter: u64,
    median_ns: String,
    min_ns: String,
    max_ns: String,
    ratio_to_bridge: String,
    runs: usize,
    run_medians_ns: String,
    bg_kernels_per_s: Option<String>,
    bg_vs_idle: Option<String>,
    bg_idle_kernels_per_s: Option<String>,
    sample: String,
}

impl<'a> CsvLine<'a> {
    fn of(r: &'a Row, measure: &Measure) -> Self {
        let b = r.background.as_ref();
        Self {
            scenario: &r.scenario,
            variant: &r.variant,
            rounds: r.rounds,
            iters_per_round: r.iters_per_round,
            ops_per_iter: r.ops_per_iter,
            median_ns: format!("{:.1}", r.ns.median),
            min_ns: format!("{:.1}", r.ns.min),
            max_ns: format!("{:.1}", r.ns.max),
            ratio_to_bridge: format!("{:.3}", r.ratio_to_bridge),
            runs: r.run_medians.len(),
            run_medians_ns: r
                .run_medians
                .iter()
                .map(|m| format!("{m:.1}"))
                .collect::<Vec<_>>()
                .join(";"),
            bg_kernels_per_s: b.map(|b| format!("{:.0}", b.kernels_per_s)),
            bg_vs_idle: b.map(|b| format!("{:.3}", b.vs_idle)),
            bg_idle_kernels_per_s: b.map(|b| format!("{:.0}", b.idle_kernels_per_s)),
            sample: measure.label_in_ns(),
        }
    }
}

/// Renders the rows of `reports` as CSV: a header, then one line per row (see [`CsvLine`]).
pub fn csv(reports: &[ScenarioReport]) -> String {
    let mut writer = csv::Writer::from_writer(Vec::new());
    for report in reports {
        for row in &report.rows {
            // Serializing strings and numbers into memory cannot fail.
            let _ = writer.serialize(CsvLine::of(row, &report.measure));
        }
    }
    let bytes = writer.into_inner().unwrap_or_default();
    String::from_utf8(bytes).unwrap_or_default()
}

/// Writes [`csv()`] of `reports` to `path`, creating its parent directories.
pub fn write_csv(path: &Path, reports: &[ScenarioReport]) -> io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(path, csv(reports))
}

/// What a scenario's samples are, for its table's headers and its goals' figures: by default
/// nanoseconds per operation, the median over rounds of each round's time per operation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Measure {
    /// What a sample is, before its unit, e.g. `I/O-only p99`; empty for a time per operation.
    pub what: &'static str,
    /// The unit a sample is shown in, e.g. `ns` or `ms`.
    pub unit: &'static str,
    /// What the unit is per, e.g. `/op`; empty for a latency.
    pub per: &'static str,
    /// Nanoseconds in one `unit`.
    pub ns_per_unit: f64,
    /// Decimals a value is shown with.
    pub decimals: usize,
    /// How the samples were taken, in place of the sentence on rounds and their order, where
    /// that sentence would not fit (e.g. one sample per variant, each in its own process).
    pub sampling: Option<&'static str>,
}

impl Measure {
    /// Nanoseconds per operation, the default.
    pub const NS_PER_OP: Self = Self {
        what: "",
        unit: "ns",
        per: "/op",
        ns_per_unit: 1.0,
        decimals: 1,
        sampling: None,
    };

    /// A duration named `what` (e.g. `read p50`) shown in milliseconds.
    pub const fn ms(what: &'static str) -> Self {
        Self {
            what,
            unit: "ms",
            per: "",
            ns_per_unit: 1e6,
            decimals: 2,
            sampling: None,
        }
    }

    /// The samples' name with their unit, e.g. `ns/op` or `read p50 ms`.
    pub fn label(&self) -> String {
        format!("{} {}{}", self.what, self.unit, self.per)
            .trim()
            .to_owned()
    }

    /// The samples' name with nanoseconds as the unit, for the CSV, e.g. `read p50 ns`.
    fn label_in_ns(&self) -> String {
        format!("{} ns{}", self.what, self.per).trim().to_owned()
    }

    /// `ns` nanoseconds in this unit, without the unit, e.g. `2.35`.
    pub fn number(&self, ns: f64) -> String {
        format!("{:.*}", self.decimals, ns / self.ns_per_unit)
    }

    /// `ns` nanoseconds in this unit, with the unit, e.g. `2.35 ms`; in nanoseconds, scaled
    /// to three significant digits, e.g. `11.0 ns/op` or `13.4 µs/op`.
    pub fn value(&self, ns: f64) -> String {
        if self.ns_per_unit == 1.0 {
            format!("{}{}", chart::format_ns(ns), self.per)
        } else {
            format!("{} {}{}", self.number(ns), self.unit, self.per)
        }
    }
}

impl Default for Measure {
    fn default() -> Self {
        Self::NS_PER_OP
    }
}

/// A target for bridge against one peer: the peer's median must be at least `at_least`
/// times bridge's.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Goal {
    /// The peer variant.
    pub peer: &'static str,
    /// The minimum ratio of the peer's median to bridge's.
    pub at_least: f64,
    /// The goal in words, e.g. "bridge no slower than the oneshot crate".
    pub text: &'static str,
}

/// A target for bridge's own cost: its median must be at most `max_ns` nanoseconds per
/// operation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Budget {
    /// The most nanoseconds per operation bridge's median may take.
    pub max_ns: f64,
    /// The goal in words, e.g. "bridge::run_blocking at most 150 ns per call".
    pub text: &'static str,
}

/// What a [`LoadGoal`] holds bridge to, against the fastest park-at-once peer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LoadTarget {
    /// bridge's background / idle-baseline at least the peer's divided by `slack`.
    Background {
        /// How many times more background work the peer may leave than bridge, e.g. 1.05.
        slack: f64,
    },
    /// bridge's median hand-off time at most the peer's.
    Latency,
}

/// A target for bridge under a background load, against the fastest park-at-once peer: of
/// the `park_at_once` variants measured, the one with the lowest median time per hand-off,
/// the alternative a user would pick instead of bridge. A park-at-once peer waits for the
/// hand-off by parking its thread at once, without spinning first.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadGoal {
    /// The variants that count as park-at-once peers.
    pub park_at_once: Vec<&'static str>,
    /// What bridge is held to.
    pub target: LoadTarget,
    /// The goal in words.
    pub text: &'static str,
}

/// The two goals every busy scenario states: bridge costs the background work no more than
/// the fastest park-at-once peer (within 1.05x), and its hand-off is no slower than that
/// peer's.
pub fn busy_goals(park_at_once: &[&'static str]) -> Vec<LoadGoal> {
    vec![
        LoadGoal {
            park_at_once: park_at_once.to_vec(),
            target: LoadTarget::Background { slack: 1.05 },
            text: "under load, bridge's background throughput within 1.05x of the fastest \
                   park-at-once peer's",
        },
        LoadGoal {
            park_at_once: park_at_once.to_vec(),
            target: LoadTarget::Latency,
            text: "under load, bridge's hand-off no slower than the fastest park-at-once \
                   peer's",
        },
    ]
}

/// One goal judged on one run: met or not, the measured value and the bound it was held to
/// (short, for the summary tables), and the numbers behind it (for the takeaway).
#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    /// Whether the goal was met.
    pub met: bool,
    /// The measured value, e.g. `5.45x`.
    pub value: String,
    /// What the value is and the bound it was held to, e.g. `tokio / bridge >= 5.00x`.
    pub bound: String,
    /// The numbers behind the verdict, in words.
    pub detail: String,
}

/// A goal a study judges itself, on numbers the generic goals do not see (e.g. a table of its
/// own): its text and its check on each run (`None` where it was not measured).
#[derive(Debug, Clone, PartialEq)]
pub struct Judged {
    /// The goal in words.
    pub text: String,
    /// Its check on each run, in run order: one entry for a single run.
    pub runs: Vec<Option<Check>>,
}

impl Judged {
    /// The goal `text` judged on one run.
    pub fn once(text: impl Into<String>, check: Option<Check>) -> Self {
        Self {
            text: text.into(),
            runs: vec![check],
        }
    }
}

static MACHINE: OnceLock<String> = OnceLock::new();

/// Names the machine the goals are judged on, e.g. `Intel(R) Xeon(R) Processor, 2 CPUs`,
/// for [`not_met`]; the first call wins.
pub fn set_machine(label: String) {
    let _ = MACHINE.set(label);
}

/// How a goal that was missed is labelled: a finding of this machine, not a failure, e.g.
/// `not met on this machine (Intel(R) Xeon(R) Processor, 2 CPUs)`.
pub fn not_met() -> String {
    match MACHINE.get() {
        Some(machine) => format!("not met on this machine ({machine})"),
        None => "not met on this machine".to_owned(),
    }
}

/// The row of `variant`.
pub fn find<'a>(rows: &'a [Row], variant: &str) -> Option<&'a Row> {
    rows.iter().find(|r| r.variant == variant)
}

impl Goal {
    fn check(&self, rows: &[Row]) -> Option<Check> {
        let bridge = find(rows, BASELINE)?;
        let peer = find(rows, self.peer)?;
        let met = peer.ratio_to_bridge >= self.at_least;
        let mut detail = format!(
            "{} at {:.2}x bridge's median, needed {:.2}x",
            peer.variant, peer.ratio_to_bridge, self.at_least
        );
        if self.at_least < 1.0 {
            let _ = write!(
                detail,
                ", i.e. bridge at most {:.2}x {}",
                1.0 / self.at_least,
                peer.variant
            );
        }
        // Rounds are interleaved, so round k of bridge and of the peer ran side by side:
        // counting the rounds that reach the goal is robust to drift across rounds.
        let reached = bridge
            .samples
            .iter()
            .zip(&peer.samples)
            .filter(|&(&b, &p)| ratio(p, b) >= self.at_least)
            .count();
        let _ = write!(
            detail,
            "; reached in {reached} of {} rounds",
            bridge.samples.len().min(peer.samples.len())
        );
        Some(Check {
            met,
            value: format!("{:.2}x", peer.ratio_to_bridge),
            bound: format!("{} / bridge >= {:.2}x", peer.variant, self.at_least),
            detail,
        })
    }
}

impl Budget {
    fn check(&self, rows: &[Row], measure: &Measure) -> Option<Check> {
        let bridge = find(rows, BASELINE)?;
        let met = bridge.ns.median <= self.max_ns;
        let reached = bridge
            .samples
            .iter()
            .filter(|&&ns| ns <= self.max_ns)
            .count();
        Some(Check {
            met,
            value: measure.value(bridge.ns.median),
            bound: format!("bridge <= {}", measure.value(self.max_ns)),
            detail: format!(
                "bridge's median {}, needed at most {}; reached in {reached} of {} rounds",
                measure.value(bridge.ns.median),
                measure.value(self.max_ns),
                bridge.samples.len()
            ),
        })
    }
}

impl LoadGoal {
    /// The park-at-once peer with the lowest median in `rows`, among those with a measured
    /// background.
    fn fastest_peer<'a>(&self, rows: &'a [Row]) -> Option<(&'a Row, &'a Background)> {
        self.park_at_once
            .iter()
            .filter_map(|name| {
                let row = find(rows, name)?;
                Some((row, row.background.as_ref()?))
            })
            .filter(|(row, b)| !b.vs_idle.is_nan() && !row.ns.median.is_nan())
            .min_by(|(a, _), (b, _)| a.ns.median.total_cmp(&b.ns.median))
    }

    fn check(&self, rows: &[Row], measure: &Measure) -> Option<Check> {
        let bridge = find(rows, BASELINE)?;
        let bridge_bg = bridge.background.as_ref()?;
        let (peer, peer_bg) = self.fastest_peer(rows)?;
        let check = match self.target {
            LoadTarget::Background { slack } => {
                let needed = peer_bg.vs_idle / slack;
                let reached = bridge_bg
                    .per_round()
                    .iter()
                    .zip(peer_bg.per_round())
                    .filter(|&(&b, p)| b * slack >= p)
                    .count();
                Check {
                    met: bridge_bg.vs_idle >= needed,
                    value: format!("{:.3}x", bridge_bg.vs_idle),
                    bound: format!(
                        "background / idle >= {needed:.3}x; {} {:.3}x",
                        peer.variant, peer_bg.vs_idle
                    ),
                    detail: format!(
                        "background / idle-baseline: bridge {:.3}x, the fastest \
                         park-at-once peer, {}, {:.3}x, needed at least {needed:.3}x; reached \
                         in {reached} of {} rounds",
                        bridge_bg.vs_idle,
                        peer.variant,
                        peer_bg.vs_idle,
                        bridge_bg.samples.len().min(peer_bg.samples.len())
                    ),
                }
            }
            LoadTarget::Latency => {
                let reached = bridge
                    .samples
                    .iter()
                    .zip(&peer.samples)
                    .filter(|&(&b, &p)| b <= p)
                    .count();
                Check {
                    met: bridge.ns.median <= peer.ns.median,
                    value: measure.value(bridge.ns.median),
                    bound: format!(
                        "bridge <= {} {}",
                        peer.variant,
                        measure.value(peer.ns.median)
                    ),
                    detail: format!(
                        "bridge's median {}, that of {}, the fastest park-at-once peer, {}; \
                         reached in {reached} of {} rounds",
                        measure.value(bridge.ns.median),
                        peer.variant,
                        measure.value(peer.ns.median),
                        bridge.samples.len().min(peer.samples.len())
                    ),
                }
            }
        };
        Some(check)
    }
}

/// A scenario's results with its frame, ready to print.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ScenarioReport {
    /// The scenario, e.g. `same-thread`.
    pub name: &'static str,
    /// What differs between the variants.
    pub varied: String,
    /// What is the same for every variant.
    pub fixed: String,
    /// What the samples are, for the table's headers (nanoseconds per operation unless said).
    pub measure: Measure,
    /// The goals against peers quoted for this scenario, if any.
    pub goals: Vec<Goal>,
    /// The absolute goals for bridge's median quoted for this scenario, if any.
    pub budgets: Vec<Budget>,
    /// The goals under a background load quoted for this scenario, if any.
    pub load_goals: Vec<LoadGoal>,
    /// The goals the study judged itself, on numbers of its own; over several runs, each
    /// with every run's check.
    pub judged: Vec<Judged>,
    /// Further observations measured alongside the timings (e.g. thread counts), one
    /// paragraph each, printed after the table.
    pub notes: Vec<String>,
    /// One row per variant; over several runs, merged by [`merge_runs`].
    pub rows: Vec<Row>,
    /// Over several runs, each run's rows in run order; empty for a single run (then
    /// [`rows`](Self::rows) is the run).
    pub runs: Vec<Vec<Row>>,
}

/// One goal of one scenario in a summary table: its verdict over the runs and its figure.
#[derive(Debug, Clone, PartialEq)]
pub struct GoalLine {
    /// The scenario.
    pub scenario: &'static str,
    /// The goal in words.
    pub goal: String,
    /// Runs that met it.
    pub met: usize,
    /// Runs that measured it.
    pub measured: usize,
    /// Runs in all.
    pub runs: usize,
    /// The measured value of each run against the bound, e.g. `5.45x (tokio / bridge >=
    /// 5.00x)`, or with several runs `5.45x / 4.90x (tokio / bridge >= 5.00x)`.
    pub figure: String,
}

impl GoalLine {
    /// Met in every run (`Some(true)`), missed or unmeasured in some run (`Some(false)`),
    /// or measured in no run (`None`), as [`ScenarioReport::verdicts`] judges it.
    pub fn verdict(&self) -> Option<bool> {
        (self.measured > 0).then_some(self.met == self.runs)
    }

    /// `met in N of M runs`, followed by the verdict when it is not met: `not met on this
    /// machine` (the table's caption names the machine) or `not measured`.
    fn met_in(&self) -> String {
        let count = format!(
            "met in {} of {} run{}",
            self.met,
            self.runs,
            if self.runs == 1 { "" } else { "s" }
        );
        match self.verdict() {
            Some(true) => count,
            Some(false) => format!("{count}: not met on this machine"),
            None => "not measured".to_owned(),
        }
    }
}

/// The figure of a goal over its runs: each run's value, then the bound; runs' values that
/// share a bound are listed once with it, e.g. `2.73x / 1.43x / 4.00x (tokio / bridge >=
/// 2.00x)`.
fn figure(runs: &[Option<Check>]) -> String {
    let checks: Vec<&Check> = runs.iter().flatten().collect();
    let Some(first) = checks.first() else {
        return "-".to_owned();
    };
    if checks.iter().all(|c| c.bound == first.bound) {
        let values: Vec<&str> = checks.iter().map(|c| c.value.as_str()).collect();
        format!("{} ({})", values.join(" / "), first.bound)
    } else {
        checks
            .iter()
            .map(|c| format!("{} ({})", c.value, c.bound))
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// The summary table of `lines`: a row per goal, with `study` as the first column when it is
/// given (the closing table of every study); empty when there are no goals.
pub fn goals_table(lines: &[(&str, GoalLine)], with_study: bool) -> String {
    if lines.is_empty() {
        return String::new();
    }
    let head = ["study", "scenario", "goal", "met in N of M runs", "figure"];
    let rows: Vec<Vec<String>> = lines
        .iter()
        .map(|(study, l)| {
            let row = [study, l.scenario, &l.goal, &l.met_in(), &l.figure];
            row[usize::from(!with_study)..]
                .iter()
                .map(|c| c.to_string())
                .collect()
        })
        .collect();
    table(&head[usize::from(!with_study)..], "---", &rows)
}

/// The head line of a summary table: how many goals were met, e.g. `5 of 7 goals met in
/// every run; 2 not met on this machine (Intel Xeon, 2 CPUs), a finding of this machine
/// rather than a failure of the run.`
pub fn goals_count(lines: &[(&str, GoalLine)]) -> String {
    let met = lines
        .iter()
        .filter(|(_, l)| l.verdict() == Some(true))
        .count();
    let missed = lines
        .iter()
        .filter(|(_, l)| l.verdict() == Some(false))
        .count();
    let unmeasured = lines.len() - met - missed;
    let mut out = format!("{met} of {} goals met in every run", lines.len());
    if missed > 0 {
        let _ = write!(
            out,
            "; {missed} {}: a finding of this machine, not a failure of the run",
            not_met()
        );
    }
    if unmeasured > 0 {
        let _ = write!(out, "; {unmeasured} not measured");
    }
    out.push('.');
    out
}

/// The summary that ends a study's markdown: the count of goals met and their table; empty
/// when the study states no goals.
pub fn study_summary(study: &str, reports: &[ScenarioReport]) -> String {
    let lines: Vec<(&str, GoalLine)> = reports
        .iter()
        .flat_map(ScenarioReport::goal_lines)
        .map(|line| (study, line))
        .collect();
    if lines.is_empty() {
        return String::new();
    }
    format!(
        "### {study} / goals\n\n{}\n\n{}",
        goals_count(&lines),
        goals_table(&lines, false)
    )
}

/// `text` made safe for a markdown table cell: `|` escaped, line breaks as spaces.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace(['\n', '\r'], " ")
}

/// A markdown table: the header `head`, a rule (`---` for the first column, `rule` for the
/// others, e.g. `---:` to right-align numbers), then `rows`, every cell made safe.
pub fn table(head: &[&str], rule: &str, rows: &[Vec<String>]) -> String {
    let line = |cells: Vec<String>| format!("| {} |\n", cells.join(" | "));
    let mut out = line(head.iter().map(|h| cell(h)).collect());
    out += &line(
        (0..head.len())
            .map(|k| if k == 0 { "---" } else { rule }.to_owned())
            .collect(),
    );
    for row in rows {
        out += &line(row.iter().map(|c| cell(c)).collect());
    }
    out
}

impl ScenarioReport {
    /// The scenario `name` measured as `m`, framed by what was varied and what was held fixed;
    /// goals and notes are added with struct update syntax.
    pub fn measured(
        name: &'static str,
        varied: impl Into<String>,
        fixed: impl Into<String>,
        m: &Measurement,
    ) -> Self {
        Self {
            name,
            varied: varied.into(),
            fixed: fixed.into(),
            rows: rows(name, m),
            ..Default::default()
        }
    }

    /// The scenario's panel of the chart: the ranking, each goal's verdict, a bar per row.
    pub fn panel(&self) -> Panel {
        let mut lines = vec![(self.ranking(), None)];
        lines.extend(self.verdicts().into_iter().map(|(text, met)| match met {
            Some(true) => (format!("Goal met: {text}"), Some(true)),
            Some(false) => (format!("Goal not met on this machine: {text}"), Some(false)),
            None => (format!("Goal not measured: {text}"), Some(false)),
        }));
        let bars = self.rows.iter().map(|r| Bar {
            variant: r.variant.clone(),
            median: r.ns.median,
            min: r.ns.min,
            max: r.ns.max,
            ratio: r.ratio_to_bridge,
            background: r.background.as_ref().map(|b| b.vs_idle),
            rounds: r.rounds,
            runs: r.run_medians.len(),
        });
        Panel {
            name: self.name.to_owned(),
            lines,
            bars: bars.collect(),
        }
    }

    /// The rows of each run.
    fn run_rows(&self) -> Vec<&[Row]> {
        if self.runs.is_empty() {
            vec![&self.rows]
        } else {
            self.runs.iter().map(Vec::as_slice).collect()
        }
    }

    /// Every goal, budget, load goal and judged goal in words with its check on each run, in
    /// that order.
    fn checks(&self) -> Vec<(String, Vec<Option<Check>>)> {
        let runs = self.run_rows();
        let measure = &self.measure;
        let each = |check: &dyn Fn(&[Row]) -> Option<Check>| -> Vec<Option<Check>> {
            runs.iter().map(|rows| check(rows)).collect()
        };
        let mut out = Vec::new();
        for goal in &self.goals {
            out.push((goal.text.to_owned(), each(&|rows| goal.check(rows))));
        }
        for budget in &self.budgets {
            out.push((
                budget.text.to_owned(),
                each(&|rows| budget.check(rows, measure)),
            ));
        }
        for goal in &self.load_goals {
            out.push((
                goal.text.to_owned(),
                each(&|rows| goal.check(rows, measure)),
            ));
        }
        for judged in &self.judged {
            out.push((judged.text.clone(), judged.runs.clone()));
        }
        out
    }

    /// Each goal of the scenario as a line of the summary tables.
    pub fn goal_lines(&self) -> Vec<GoalLine> {
        self.checks()
            .into_iter()
            .map(|(goal, runs)| GoalLine {
                scenario: self.name,
                met: runs.iter().flatten().filter(|c| c.met).count(),
                measured: runs.iter().flatten().count(),
                runs: runs.len(),
                figure: figure(&runs),
                goal,
            })
            .collect()
    }

    /// The first sentence of the [`takeaway`](Self::takeaway): where bridge ranks, e.g.
    /// "bridge is fastest; the next, tokio, takes 5.45x as long."
    pub fn ranking(&self) -> String {
        let mut ranked: Vec<&Row> = self.rows.iter().collect();
        ranked.sort_by(|a, b| a.ns.median.total_cmp(&b.ns.median));
        let Some(fastest) = ranked.first() else {
            return "No results.".to_owned();
        };
        let mut out = String::new();
        match ranked.iter().position(|r| r.variant == BASELINE) {
            None => out.push_str("bridge was not measured."),
            Some(0) => match ranked.get(1) {
                Some(next) => {
                    let _ = write!(
                        out,
                        "bridge is fastest; the next, {}, takes {:.2}x as long.",
                        next.variant, next.ratio_to_bridge
                    );
                }
                None => out.push_str("bridge is the only variant."),
            },
            Some(i) => {
                let _ = write!(
                    out,
                    "bridge ranks {} of {}; the fastest, {}, takes {:.2}x bridge's time.",
                    i + 1,
                    ranked.len(),
                    fastest.variant,
                    fastest.ratio_to_bridge
                );
            }
        }
        out
    }

    /// Each goal, budget and load goal in words with its verdict, in that order: met
    /// (`Some(true)`, over several runs only when met in every run), missed (`Some(false)`)
    /// or not measured in any run (`None`), as the [`takeaway`](Self::takeaway) judges them.
    pub fn verdicts(&self) -> Vec<(String, Option<bool>)> {
        self.checks()
            .into_iter()
            .map(|(text, runs)| (text, verdict(&runs)))
            .collect()
    }

    /// The takeaway, computed from the rows: the ranking, then each goal met or missed (over
    /// several runs, met only when met in every run).
    pub fn takeaway(&self) -> String {
        let mut out = self.ranking();
        if self.rows.is_empty() {
            return out;
        }
        for (text, runs) in self.checks() {
            let _ = write!(out, " Goal \"{text}\": ");
            match (verdict(&runs), runs.as_slice()) {
                (None, _) => out.push_str("not measured."),
                (Some(met), [Some(check)]) => {
                    let verdict = if met { "met".to_owned() } else { not_met() };
                    let _ = write!(out, "{verdict}: {}.", check.detail);
                }
                (Some(met), _) => {
                    let n = runs.len();
                    let met_in = runs.iter().flatten().filter(|c| c.met).count();
                    if met {
                        let _ = write!(out, "met in all {n} runs (");
                    } else {
                        let _ = write!(out, "{}: met in {met_in} of {n} runs (", not_met());
                    }
                    for (k, check) in runs.iter().enumerate() {
                        let sep = if k == 0 { "" } else { "; " };
                        match check {
                            Some(c) => {
                                let _ = write!(
                                    out,
                                    "{sep}run {}: {}, {}",
                                    k + 1,
                                    if c.met { "met" } else { "not met" },
                                    c.detail
                                );
                            }
                            None => {
                                let _ = write!(out, "{sep}run {}: not measured", k + 1);
                            }
                        }
                    }
                    out.push_str(").");
                }
            }
        }
        out
    }

    /// The scenario as markdown: a heading, the frame, a table and the takeaway.
    pub fn markdown(&self, study: &str) -> String {
        let runs = self.runs.len().max(1);
        let background = self.rows.iter().any(|r| r.background.is_some());
        let m = &self.measure;
        let label = m.label();
        // With one sample per run the min-max of a run's rounds is that sample: the column
        // is left out, and the value is the sample (or the median of the runs' samples).
        let one_round = self.rows.iter().all(|r| r.rounds == 1);
        let (value, ratio_head, each_run) = match (one_round, runs > 1) {
            (false, _) => (
                format!("median {label}"),
                "median / bridge's",
                format!("run medians {label}"),
            ),
            (true, true) => (
                format!("{label}, median of runs"),
                "median / bridge's",
                format!("each run's {label}"),
            ),
            (true, false) => (label.clone(), "ratio to bridge's", String::new()),
        };
        let mut head = vec!["variant".to_owned(), value.clone()];
        if !one_round {
            head.push(format!("min-max {label}"));
        }
        head.push(ratio_head.to_owned());
        if runs > 1 {
            head.extend([each_run.clone(), format!("range across runs {label}")]);
        }
        if background {
            head.extend([
                "background kernels/s".into(),
                "background / idle-baseline".into(),
            ]);
        }
        let rows: Vec<Vec<String>> = self
            .rows
            .iter()
            .map(|r| {
                let mut row = vec![r.variant.clone(), m.number(r.ns.median)];
                if !one_round {
                    row.push(format!("{}-{}", m.number(r.ns.min), m.number(r.ns.max)));
                }
                row.push(format!("{:.2}x", r.ratio_to_bridge));
                if runs > 1 {
                    let medians: Vec<String> = r.run_medians.iter().map(|&x| m.number(x)).collect();
                    row.extend([medians.join(" / "), spread(&r.run_medians, r.ns.median, m)]);
                }
                if background {
                    row.extend(match &r.background {
                        Some(b) => {
                            let range = range_of(&b.run_vs_idle)
                                .filter(|_| runs > 1)
                                .map(|(lo, hi)| format!(" ({lo:.3}-{hi:.3}x)"));
                            [
                                format!("{:.0}", b.kernels_per_s),
                                format!("{:.3}x{}", b.vs_idle, range.unwrap_or_default()),
                            ]
                        }
                        None => ["-".to_owned(), "-".to_owned()],
                    });
                }
                row
            })
            .collect();
        let head: Vec<&str> = head.iter().map(String::as_str).collect();
        let mut out = format!(
            "### {study} / {}\n\nWhat we varied: {}\n\nHeld fixed: {}\n\n{}",
            self.name,
            self.varied,
            self.fixed,
            table(&head, "---:", &rows)
        );
        if let Some(r) = self.rows.first() {
            match m.sampling {
                Some(sampling) => {
                    let _ = writeln!(out, "\n{sampling}");
                }
                None => {
                    let _ = write!(out, "\n{}", self.rounds_text(r.rounds, r.ops_per_iter));
                    out.push_str(
                        " per variant, in orders balanced across rounds (each runs right after \
                         each other one equally often)",
                    );
                    if background {
                        out.push_str(", with one baseline batch (the background alone) per round");
                    }
                    out.push_str(".\n");
                }
            }
            if runs > 1 {
                let _ = writeln!(
                    out,
                    "\nOver the {runs} runs: {value} is the median of the runs' {}{}, {each_run} \
                     lists them in run order, and range across runs is the lowest to the \
                     highest, with its width as a share of the median in parentheses{}. A goal \
                     is met only when it is met in every run.",
                    if one_round { "values" } else { "medians" },
                    if one_round {
                        ""
                    } else {
                        ", min-max spans every round of every run"
                    },
                    if background {
                        "; background kernels/s and background / idle-baseline are medians of \
                         the runs' medians, the latter with the range across runs"
                    } else {
                        ""
                    }
                );
            }
        }
        if let Some(idle) = self.rows.iter().find_map(|r| r.background.as_ref()) {
            let all = Summary::of(&idle.idle_samples);
            let _ = writeln!(
                out,
                "\nBackground alone (the baseline batches): median {:.0} kernels/s{}.",
                idle.idle_kernels_per_s,
                all.map_or(String::new(), |s| format!(
                    ", min-max {:.0}-{:.0}",
                    s.min, s.max
                ))
            );
        }
        for note in &self.notes {
            let _ = writeln!(out, "\n{note}");
        }
        let _ = writeln!(out, "\nTakeaway: {}", self.takeaway());
        out
    }
}

impl ScenarioReport {
    /// How many runs and rounds of how many iterations each variant ran, e.g. `51 rounds of
    /// 1000 iterations`, or with iterations that differ by variant or run, `3 runs, each of
    /// 51 rounds, of a batch calibrated per variant and run (iterations: bridge 10/12/11,
    /// tokio 2400/2390/2500)`.
    fn rounds_text(&self, rounds: usize, ops_per_iter: u64) -> String {
        let ops = if ops_per_iter == 1 {
            String::new()
        } else {
            format!(" of {ops_per_iter} operations each")
        };
        let runs = self.run_rows();
        let per_row: Vec<(&str, Vec<u64>)> = self
            .rows
            .iter()
            .map(|row| {
                let iters = runs
                    .iter()
                    .filter_map(|rows| find(rows, &row.variant))
                    .map(|r| r.iters_per_round)
                    .collect();
                (row.variant.as_str(), iters)
            })
            .collect();
        let list = |iters: &[u64]| {
            iters
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join("/")
        };
        let mut out = if runs.len() > 1 {
            format!("{} runs, each of {rounds} rounds", runs.len())
        } else {
            format!("{rounds} rounds")
        };
        match per_row.split_first() {
            Some(((_, first), rest)) if rest.iter().all(|(_, iters)| iters == first) => {
                let _ = write!(out, " of {} iterations{ops}", list(first));
                if runs.len() > 1 {
                    out.push_str(" (calibrated per run)");
                }
            }
            _ => {
                let each = per_row
                    .iter()
                    .map(|(name, iters)| format!("{name} {}", list(iters)))
                    .collect::<Vec<_>>()
                    .join(", ");
                let _ = write!(
                    out,
                    " of a batch that runs for a set wall time (median iterations per \
                     batch{ops}{}: {each})",
                    if runs.len() > 1 { ", by run" } else { "" }
                );
            }
        }
        out
    }
}

/// Met in every run (`Some(true)`), missed or unmeasured in some run (`Some(false)`), or
/// measured in no run (`None`).
fn verdict(runs: &[Option<Check>]) -> Option<bool> {
    if runs.iter().all(Option::is_none) {
        None
    } else {
        Some(runs.iter().all(|c| c.as_ref().is_some_and(|c| c.met)))
    }
}

/// The lowest and highest of `values`; `None` if empty or any is NaN.
fn range_of(values: &[f64]) -> Option<(f64, f64)> {
    Summary::of(values).map(|s| (s.min, s.max))
}

/// `MIN-MAX (W%)`: the range of the run medians and its width against `median`.
fn spread(run_medians: &[f64], median: f64, m: &Measure) -> String {
    match range_of(run_medians) {
        Some((min, max)) => format!(
            "{}-{} ({:.0}%)",
            m.number(min),
            m.number(max),
            ratio(max - min, median) * 100.0
        ),
        None => "-".to_owned(),
    }
}

/// The median of `values`, NaN if there are none.
fn median(values: &[f64]) -> f64 {
    Summary::of(values).map_or(f64::NAN, |s| s.median)
}

/// Merges the reports of `runs` runs of one study, each a list of its scenarios: one report
/// per scenario of the first run, with each variant's rows of every run merged (see
/// [`Row::run_medians`]) and each run's rows kept for the goals. A single run comes back as
/// it is.
pub fn merge_runs(mut runs: Vec<Vec<ScenarioReport>>) -> Vec<ScenarioReport> {
    if runs.len() <= 1 {
        return runs.pop().unwrap_or_default();
    }
    let first = runs[0].clone();
    first
        .into_iter()
        .map(|report| {
            let same: Vec<&ScenarioReport> = runs
                .iter()
                .filter_map(|run| run.iter().find(|r| r.name == report.name))
                .collect();
            merge_scenario(report, &same)
        })
        .collect()
}

fn merge_scenario(first: ScenarioReport, runs: &[&ScenarioReport]) -> ScenarioReport {
    let mut rows: Vec<Row> = first
        .rows
        .iter()
        .map(|row| {
            let each: Vec<&Row> = runs
                .iter()
                .filter_map(|run| find(&run.rows, &row.variant))
                .collect();
            merge_row(row, &each)
        })
        .collect();
    let bridge = find(&rows, BASELINE).map_or(f64::NAN, |r| r.ns.median);
    for row in &mut rows {
        row.ratio_to_bridge = ratio(row.ns.median, bridge);
    }
    let notes = if runs.iter().all(|run| run.notes == first.notes) {
        first.notes.clone()
    } else {
        runs.iter()
            .enumerate()
            .flat_map(|(k, run)| run.notes.iter().map(move |n| format!("Run {}: {n}", k + 1)))
            .collect()
    };
    // Each judged goal of the first run, with its check on every run (by its text).
    let judged = first
        .judged
        .iter()
        .map(|goal| Judged {
            text: goal.text.clone(),
            runs: runs
                .iter()
                .map(|run| {
                    run.judged
                        .iter()
                        .find(|j| j.text == goal.text)
                        .and_then(|j| j.runs.first().cloned().flatten())
                })
                .collect(),
        })
        .collect();
    ScenarioReport {
        notes,
        rows,
        judged,
        runs: runs.iter().map(|run| run.rows.clone()).collect(),
        ..first
    }
}

fn merge_row(first: &Row, each: &[&Row]) -> Row {
    let run_medians: Vec<f64> = each.iter().map(|r| r.ns.median).collect();
    let samples: Vec<f64> = each
        .iter()
        .flat_map(|r| r.samples.iter().copied())
        .collect();
    let fold = |pick: fn(&Row) -> f64, min: bool| {
        each.iter().map(|r| pick(r)).fold(
            f64::NAN,
            |acc, x| {
                if min { acc.min(x) } else { acc.max(x) }
            },
        )
    };
    let backgrounds: Vec<&Background> = each.iter().filter_map(|r| r.background.as_ref()).collect();
    let background = (!backgrounds.is_empty() && backgrounds.len() == each.len()).then(|| {
        let pick = |f: fn(&Background) -> f64| {
            median(&backgrounds.iter().map(|b| f(b)).collect::<Vec<_>>())
        };
        Background {
            samples: backgrounds
                .iter()
                .flat_map(|b| b.samples.iter().copied())
                .collect(),
            idle_samples: backgrounds
                .iter()
                .flat_map(|b| b.idle_samples.iter().copied())
                .collect(),
            kernels_per_s: pick(|b| b.kernels_per_s),
            vs_idle: pick(|b| b.vs_idle),
            idle_kernels_per_s: pick(|b| b.idle_kernels_per_s),
            run_vs_idle: backgrounds.iter().map(|b| b.vs_idle).collect(),
        }
    });
    Row {
        ns: Summary {
            median: median(&run_medians),
            min: fold(|r| r.ns.min, true),
            max: fold(|r| r.ns.max, false),
        },
        samples,
        run_medians,
        background,
        ..first.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::Measured;

    fn measurement() -> Measurement {
        let variant = |name, samples: &[f64]| Measured {
            name,
            samples: samples.to_vec(),
            background: Vec::new(),
        };
        Measurement {
            iters_per_round: 1000,
            ops_per_iter: 1,
            rounds: 3,
            variants: vec![
                variant("bridge", &[12.0, 10.0, 11.0]),
                variant("tokio", &[60.0, 55.0, 70.0]),
            ],
            load: None,
        }
    }

    fn goal(at_least: f64, text: &'static str) -> Goal {
        Goal {
            peer: "tokio",
            at_least,
            text,
        }
    }

    #[test]
    fn csv_has_header_and_formatted_rows() {
        let mut rows = rows("a,b", &measurement());
        rows[1].variant = "say \"hi\"".to_owned();
        let report = ScenarioReport {
            rows,
            ..Default::default()
        };
        assert_eq!(
            csv(&[report]),
            "scenario,variant,rounds,iters_per_round,ops_per_iter,median_ns,min_ns,max_ns,\
             ratio_to_bridge,runs,run_medians_ns,bg_kernels_per_s,bg_vs_idle,\
             bg_idle_kernels_per_s,sample\n\
             \"a,b\",bridge,3,1000,1,11.0,10.0,12.0,1.000,1,11.0,,,,ns/op\n\
             \"a,b\",\"say \"\"hi\"\"\",3,1000,1,60.0,55.0,70.0,5.455,1,60.0,,,,ns/op\n"
        );
    }

    #[test]
    fn takeaway_ranks_and_judges_goals_and_budgets_from_the_numbers() {
        let report = ScenarioReport {
            goals: vec![
                goal(5.0, "5x faster than tokio"),
                goal(6.0, "6x faster than tokio"),
            ],
            budgets: vec![Budget {
                max_ns: 10.5,
                text: "at most 10.5 ns",
            }],
            ..ScenarioReport::measured("s", "", "", &measurement())
        };
        assert_eq!(
            report.takeaway(),
            "bridge is fastest; the next, tokio, takes 5.45x as long. \
             Goal \"5x faster than tokio\": met: tokio at 5.45x bridge's median, needed 5.00x; \
             reached in 3 of 3 rounds. \
             Goal \"6x faster than tokio\": not met on this machine: tokio at 5.45x bridge's \
             median, needed 6.00x; reached in 1 of 3 rounds. \
             Goal \"at most 10.5 ns\": not met on this machine: bridge's median 11.0 ns/op, \
             needed at most 10.5 ns/op; reached in 1 of 3 rounds."
        );
        let md = report.markdown("study");
        assert!(
            md.contains("| bridge | 11.0 | 10.0-12.0 | 1.00x |\n"),
            "{md}"
        );
        assert!(md.contains("\n3 rounds of 1000 iterations per variant, in orders balanced"));
    }

    #[test]
    fn load_goals_judge_bridge_against_the_fastest_park_at_once_peer() {
        let idle = [100.0; 3];
        let row = |name: &'static str, ns: f64, bg: f64| Measured {
            name,
            samples: vec![ns; 3],
            background: vec![bg; 3],
        };
        let m = Measurement {
            variants: vec![
                row("bridge", 10.0, 90.0),
                // Spins: not a park-at-once peer, so never the reference.
                row("spinner", 5.0, 99.0),
                row("parker", 12.0, 94.0),
                // Leaves the background more by being slow: not the reference either.
                row("crawler", 900.0, 99.0),
            ],
            load: Some(crate::harness::LoadMeasurement {
                idle_kernels_per_s: idle.to_vec(),
                iters_per_round: vec![10; 4],
            }),
            ..measurement()
        };
        let r = ScenarioReport {
            load_goals: busy_goals(&["crawler", "parker", "absent"]),
            ..ScenarioReport::measured("s", "", "", &m)
        };
        let takeaway = r.takeaway();
        assert!(
            takeaway.contains(
                "background / idle-baseline: bridge 0.900x, the fastest park-at-once peer, \
                 parker, 0.940x, needed at least 0.895x; reached in 3 of 3 rounds"
            ),
            "{takeaway}"
        );
        assert_eq!(r.verdicts()[1].1, Some(true));
        assert!(
            r.markdown("s")
                .contains("| bridge | 10.0 | 10.0-10.0 | 1.00x | 90 | 0.900x |")
        );
    }

    #[test]
    fn runs_merge_into_medians_of_run_medians_and_goals_need_every_run() {
        let run = |bridge: &[f64], tokio: &[f64]| {
            let mut m = measurement();
            m.variants[0].samples = bridge.to_vec();
            m.variants[1].samples = tokio.to_vec();
            vec![ScenarioReport {
                goals: vec![goal(2.0, "2x faster than tokio")],
                judged: vec![Judged::once("judged", None)],
                ..ScenarioReport::measured("s", "", "", &m)
            }]
        };
        let merged = merge_runs(vec![
            run(&[10.0, 11.0, 12.0], &[30.0; 3]),
            run(&[20.0, 21.0, 22.0], &[30.0; 3]),
            run(&[9.0, 10.0, 50.0], &[40.0; 3]),
        ]);
        let r = &merged[0];
        let bridge = &r.rows[0];
        assert_eq!(bridge.run_medians, vec![11.0, 21.0, 10.0]);
        assert_eq!(
            (bridge.ns.median, bridge.ns.min, bridge.ns.max),
            (11.0, 9.0, 50.0)
        );
        assert_eq!(r.rows[1].ratio_to_bridge, 30.0 / 11.0);
        // Met in runs 1 and 3 (30/11, 40/10), not in run 2 (30/21).
        assert_eq!(
            r.verdicts()[0],
            ("2x faster than tokio".to_owned(), Some(false))
        );
        assert_eq!(r.verdicts()[1].1, None);
        assert!(r.markdown("study").contains(
            "| bridge | 11.0 | 9.0-50.0 | 1.00x | 11.0 / 21.0 / 10.0 | 10.0-21.0 (100%) |"
        ));
        let summary = study_summary("study", &merged);
        assert!(summary.contains(
            "| s | 2x faster than tokio | met in 2 of 3 runs: not met on this machine | \
             2.73x / 1.43x / 4.00x (tokio / bridge >= 2.00x) |\n"
        ));
        assert!(summary.contains("; 1 not measured."), "{summary}");
    }
}
