//! Measurements into rows, a CSV file and markdown tables with a computed takeaway.

use crate::harness::Measurement;
use crate::progress;
use crate::stats::{Summary, format_ns, ratio};
use serde::Serialize;
use std::fmt::Write as _;
use std::sync::OnceLock;

pub use crate::stats::BASELINE;

/// One variant's result in one scenario; over several runs ([`merge_runs`]) `samples` holds
/// every run's rounds and `ns` the median of the run medians with every round's min and max.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub scenario: String,
    pub variant: String,
    pub rounds: usize,
    pub iters_per_round: u64,
    /// Operations per iteration (1 unless the scenario batches them).
    pub ops_per_iter: u64,
    /// Nanoseconds per operation across rounds.
    pub ns: Summary,
    /// This variant's median over bridge's; above 1 means slower than bridge.
    pub ratio_to_bridge: f64,
    /// The per-round samples in round order, for paired comparisons with bridge.
    pub samples: Vec<f64>,
    /// Each run's median in run order.
    pub run_medians: Vec<f64>,
    /// Under a background load, what the variant's batches left of the background work.
    pub background: Option<Background>,
}

/// The background's kernels per second during a variant's batches (see [`crate::busy`]);
/// over several runs each median is the median of the runs' medians.
#[derive(Debug, Clone, PartialEq)]
pub struct Background {
    /// During the variant's batches, one per round.
    pub samples: Vec<f64>,
    /// During the same rounds' baseline batches, when the background ran alone.
    pub idle_samples: Vec<f64>,
    pub kernels_per_s: f64,
    /// The median over rounds of the variant's kernels/s over the round's baseline.
    pub vs_idle: f64,
    pub idle_kernels_per_s: f64,
    /// Each run's `vs_idle` in run order.
    pub run_vs_idle: Vec<f64>,
}

impl Background {
    /// The background of one run's rounds; `None` if there are none.
    pub fn of(samples: &[f64], idle_samples: &[f64]) -> Option<Self> {
        let mut b = Self {
            samples: samples.to_vec(),
            idle_samples: idle_samples.to_vec(),
            kernels_per_s: Summary::of(samples)?.median,
            vs_idle: 0.0,
            idle_kernels_per_s: Summary::of(idle_samples)?.median,
            run_vs_idle: Vec::new(),
        };
        b.vs_idle = Summary::of(&b.per_round())?.median;
        b.run_vs_idle = vec![b.vs_idle];
        Some(b)
    }

    /// Each round's kernels/s during the variant's batch over the baseline's.
    pub fn per_round(&self) -> Vec<f64> {
        let pairs = self.samples.iter().zip(&self.idle_samples);
        pairs.map(|(&busy, &idle)| ratio(busy, idle)).collect()
    }
}

/// One row per variant of `m`; tells the progress bar that `scenario` is done.
pub fn rows(scenario: &str, m: &Measurement) -> Vec<Row> {
    progress::scenario_done(scenario);
    let load = m.load.as_ref();
    let mut rows: Vec<Row> = m
        .variants
        .iter()
        .filter_map(|v| {
            let ns = Summary::of(&v.samples)?;
            Some(Row {
                scenario: scenario.to_owned(),
                variant: v.name.to_owned(),
                rounds: m.rounds,
                iters_per_round: v.iters,
                ops_per_iter: m.ops_per_iter,
                ns,
                ratio_to_bridge: f64::NAN,
                samples: v.samples.clone(),
                run_medians: vec![ns.median],
                background: load.and_then(|l| Background::of(&v.background, &l.idle_kernels_per_s)),
            })
        })
        .collect();
    set_ratios(&mut rows);
    rows
}

/// Sets every row's ratio to bridge's median (NaN without bridge).
fn set_ratios(rows: &mut [Row]) {
    let bridge = find(rows, BASELINE).map_or(f64::NAN, |r| r.ns.median);
    for row in rows {
        row.ratio_to_bridge = ratio(row.ns.median, bridge);
    }
}

/// The row of `variant`.
pub fn find<'a>(rows: &'a [Row], variant: &str) -> Option<&'a Row> {
    rows.iter().find(|r| r.variant == variant)
}

/// One line of `results.csv`; the field names are the header. `run_medians_ns` is
/// `;`-separated, `bg_*` are empty on an idle machine, `sample` names the samples' unit.
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
        let medians: Vec<String> = r.run_medians.iter().map(|m| format!("{m:.1}")).collect();
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
            run_medians_ns: medians.join(";"),
            bg_kernels_per_s: b.map(|b| format!("{:.0}", b.kernels_per_s)),
            bg_vs_idle: b.map(|b| format!("{:.3}", b.vs_idle)),
            bg_idle_kernels_per_s: b.map(|b| format!("{:.0}", b.idle_kernels_per_s)),
            sample: Measure {
                unit: "ns",
                ..*measure
            }
            .label(),
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
    String::from_utf8(writer.into_inner().unwrap_or_default()).unwrap_or_default()
}

/// What a scenario's samples are (default: nanoseconds per operation): `what` in `unit`
/// (`ns_per_unit` ns) `per` something, shown with `decimals`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Measure {
    pub what: &'static str,
    pub unit: &'static str,
    pub per: &'static str,
    pub ns_per_unit: f64,
    pub decimals: usize,
    /// How the samples were taken, in place of the sentence on rounds and their order.
    pub sampling: Option<&'static str>,
}

impl Measure {
    /// A duration named `what` (e.g. `read p50`) in milliseconds.
    pub const fn ms(what: &'static str, sampling: Option<&'static str>) -> Self {
        Self {
            what,
            unit: "ms",
            per: "",
            ns_per_unit: 1e6,
            decimals: 2,
            sampling,
        }
    }

    /// The samples' name with their unit, e.g. `ns/op` or `read p50 ms`.
    pub fn label(&self) -> String {
        let label = format!("{} {}{}", self.what, self.unit, self.per);
        label.trim().to_owned()
    }

    /// `ns` nanoseconds in this unit, without the unit, e.g. `2.35`.
    pub fn number(&self, ns: f64) -> String {
        format!("{:.*}", self.decimals, ns / self.ns_per_unit)
    }

    /// `ns` nanoseconds with the unit, e.g. `2.35 ms`; nanoseconds scaled, e.g. `13.4 µs/op`.
    pub fn value(&self, ns: f64) -> String {
        if self.ns_per_unit == 1.0 {
            format!("{}{}", format_ns(ns), self.per)
        } else {
            format!("{} {}{}", self.number(ns), self.unit, self.per)
        }
    }
}

impl Default for Measure {
    /// Nanoseconds per operation.
    fn default() -> Self {
        Self {
            what: "",
            unit: "ns",
            per: "/op",
            ns_per_unit: 1.0,
            decimals: 1,
            sampling: None,
        }
    }
}

/// A target stated as `text`: the `peer`'s median at least `at_least` times bridge's.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Goal {
    pub peer: &'static str,
    pub at_least: f64,
    pub text: &'static str,
}

/// A target stated as `text`: bridge's median at most `max_ns` nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Budget {
    pub max_ns: f64,
    pub text: &'static str,
}

/// The goals under a background load, against the fastest (lowest median) measured variant
/// of [`ScenarioReport::park_at_once`]: background throughput, then hand-off time.
const LOAD_GOALS: [&str; 2] = [
    "under load, bridge's background throughput within 1.05x of the fastest park-at-once peer's",
    "under load, bridge's hand-off no slower than the fastest park-at-once peer's",
];

/// One goal judged on one run: met or not, `value` and `bound` for the summary tables (e.g.
/// `5.45x`, `tokio / bridge >= 5.00x`), and `detail` in words for the takeaway.
#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    pub met: bool,
    pub value: String,
    pub bound: String,
    pub detail: String,
}

/// A goal a study judges itself: its text and its check on each run (`None`: not measured).
#[derive(Debug, Clone, PartialEq)]
pub struct Judged {
    pub text: String,
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

/// Names the machine for [`not_met`], e.g. `Intel Xeon, 2 CPUs`; the first call wins.
pub fn set_machine(label: String) {
    let _ = MACHINE.set(label);
}

/// The label of a missed goal, e.g. `not met on this machine (Intel Xeon, 2 CPUs)`.
pub fn not_met() -> String {
    match MACHINE.get() {
        Some(machine) => format!("not met on this machine ({machine})"),
        None => "not met on this machine".to_owned(),
    }
}

/// `; reached in N of M rounds`: the rounds, paired by index, where `ok(a, b)` holds.
fn reached(a: &[f64], b: &[f64], ok: impl Fn(f64, f64) -> bool) -> String {
    let n = a.iter().zip(b).filter(|&(&x, &y)| ok(x, y)).count();
    format!("; reached in {n} of {} rounds", a.len().min(b.len()))
}

impl Goal {
    pub const fn new(peer: &'static str, at_least: f64, text: &'static str) -> Self {
        Self {
            peer,
            at_least,
            text,
        }
    }

    fn check(&self, rows: &[Row]) -> Option<Check> {
        let bridge = find(rows, BASELINE)?;
        let peer = find(rows, self.peer)?;
        let (name, r, at_least) = (&peer.variant, peer.ratio_to_bridge, self.at_least);
        let inverse = format!(", i.e. bridge at most {:.2}x {name}", 1.0 / at_least);
        let inverse = if at_least < 1.0 { inverse.as_str() } else { "" };
        let reached = reached(&bridge.samples, &peer.samples, |b, p| {
            ratio(p, b) >= at_least
        });
        let detail =
            format!("{name} at {r:.2}x bridge's median, needed {at_least:.2}x{inverse}{reached}");
        Some(Check {
            met: r >= at_least,
            value: format!("{r:.2}x"),
            bound: format!("{name} / bridge >= {at_least:.2}x"),
            detail,
        })
    }
}

impl Budget {
    fn check(&self, rows: &[Row], m: &Measure) -> Option<Check> {
        let bridge = find(rows, BASELINE)?;
        let (median, max) = (m.value(bridge.ns.median), m.value(self.max_ns));
        let reached = reached(&bridge.samples, &bridge.samples, |b, _| b <= self.max_ns);
        Some(Check {
            met: bridge.ns.median <= self.max_ns,
            detail: format!("bridge's median {median}, needed at most {max}{reached}"),
            value: median,
            bound: format!("bridge <= {max}"),
        })
    }
}

/// Goal `LOAD_GOALS[1]` if `latency`, else `LOAD_GOALS[0]`, on one run.
fn load_check(rows: &[Row], park_at_once: &[&str], latency: bool, m: &Measure) -> Option<Check> {
    let bridge = find(rows, BASELINE)?;
    let bridge_bg = bridge.background.as_ref()?;
    let (peer, peer_bg) = park_at_once
        .iter()
        .filter_map(|name| {
            let row = find(rows, name)?;
            Some((row, row.background.as_ref()?))
        })
        .filter(|(row, b)| !b.vs_idle.is_nan() && !row.ns.median.is_nan())
        .min_by(|(a, _), (b, _)| a.ns.median.total_cmp(&b.ns.median))?;
    let name = &peer.variant;
    let slack = 1.05;
    Some(match latency {
        false => {
            let (b, p) = (bridge_bg.vs_idle, peer_bg.vs_idle);
            let needed = p / slack;
            let (mine, theirs) = (bridge_bg.per_round(), peer_bg.per_round());
            let reached = reached(&mine, &theirs, |b, p| b * slack >= p);
            Check {
                met: b >= needed,
                value: format!("{b:.3}x"),
                bound: format!("background / idle >= {needed:.3}x; {name} {p:.3}x"),
                detail: format!(
                    "background / idle-baseline: bridge {b:.3}x, the fastest park-at-once \
                     peer, {name}, {p:.3}x, needed at least {needed:.3}x{reached}"
                ),
            }
        }
        true => {
            let (b, p) = (m.value(bridge.ns.median), m.value(peer.ns.median));
            let reached = reached(&bridge.samples, &peer.samples, |b, p| b <= p);
            Check {
                met: bridge.ns.median <= peer.ns.median,
                detail: format!(
                    "bridge's median {b}, that of {name}, the fastest park-at-once peer, \
                     {p}{reached}"
                ),
                bound: format!("bridge <= {name} {p}"),
                value: b,
            }
        }
    })
}

/// A scenario's results with its frame (what was varied, what held fixed), goals and notes
/// (one paragraph each, after the table).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ScenarioReport {
    pub name: &'static str,
    pub varied: String,
    pub fixed: String,
    pub measure: Measure,
    pub goals: Vec<Goal>,
    pub budgets: Vec<Budget>,
    /// Under a load, the variants that park at once, for the load goals (none: no such goals).
    pub park_at_once: Vec<&'static str>,
    /// The goals the study judged itself; over several runs, each with every run's check.
    pub judged: Vec<Judged>,
    pub notes: Vec<String>,
    /// One row per variant; over several runs, merged by [`merge_runs`].
    pub rows: Vec<Row>,
    /// Over several runs, each run's rows in run order; empty for a single run.
    pub runs: Vec<Vec<Row>>,
}

/// One goal of one scenario in a summary table: the runs that met it, measured it and in
/// all, and its figure, e.g. `5.45x / 4.90x (tokio / bridge >= 5.00x)`.
#[derive(Debug, Clone, PartialEq)]
pub struct GoalLine {
    pub scenario: &'static str,
    pub goal: String,
    pub met: usize,
    pub measured: usize,
    pub runs: usize,
    pub figure: String,
}

impl GoalLine {
    /// As [`ScenarioReport::verdicts`]: met in every run, missed in some, or never measured.
    pub fn verdict(&self) -> Option<bool> {
        (self.measured > 0).then_some(self.met == self.runs)
    }

    /// `met in N of M runs`, then `: not met on this machine` if missed; or `not measured`.
    fn met_in(&self) -> String {
        let s = if self.runs == 1 { "" } else { "s" };
        let count = format!("met in {} of {} run{s}", self.met, self.runs);
        match self.verdict() {
            Some(true) => count,
            Some(false) => format!("{count}: not met on this machine"),
            None => "not measured".to_owned(),
        }
    }
}

/// Each run's value with its bound, a shared bound once, e.g. `2.73x / 1.43x (tokio / bridge
/// >= 2.00x)`.
fn figure(runs: &[Option<Check>]) -> String {
    let checks: Vec<&Check> = runs.iter().flatten().collect();
    let Some(first) = checks.first() else {
        return "-".to_owned();
    };
    if checks.iter().all(|c| c.bound == first.bound) {
        let values: Vec<&str> = checks.iter().map(|c| c.value.as_str()).collect();
        format!("{} ({})", values.join(" / "), first.bound)
    } else {
        let each: Vec<String> = checks
            .iter()
            .map(|c| format!("{} ({})", c.value, c.bound))
            .collect();
        each.join("; ")
    }
}

/// The summary table of `lines`, a row per goal, with the study column if `with_study`.
pub fn goals_table(lines: &[(&str, GoalLine)], with_study: bool) -> String {
    if lines.is_empty() {
        return String::new();
    }
    let skip = usize::from(!with_study);
    let head = ["study", "scenario", "goal", "met in N of M runs", "figure"];
    let rows: Vec<Vec<String>> = lines
        .iter()
        .map(|(study, l)| {
            let row = [study, l.scenario, &l.goal, &l.met_in(), &l.figure];
            row[skip..].iter().map(|c| c.to_string()).collect()
        })
        .collect();
    table(&head[skip..], "---", &rows)
}

/// The head line of a summary table, e.g. `5 of 7 goals met in every run; 2 not met on ...`.
pub fn goals_count(lines: &[(&str, GoalLine)]) -> String {
    let count = |v| lines.iter().filter(|(_, l)| l.verdict() == v).count();
    let (met, missed) = (count(Some(true)), count(Some(false)));
    let mut out = format!("{met} of {} goals met in every run", lines.len());
    if missed > 0 {
        let _ = write!(
            out,
            "; {missed} {}: a finding of this machine, not a failure of the run",
            not_met()
        );
    }
    let unmeasured = lines.len() - met - missed;
    if unmeasured > 0 {
        let _ = write!(out, "; {unmeasured} not measured");
    }
    out + "."
}

/// The summary that ends a study's markdown: the count of its goals met and their table.
pub fn study_summary(study: &str, lines: &[(&str, GoalLine)]) -> String {
    let (count, table) = (goals_count(lines), goals_table(lines, false));
    format!("### {study} / goals\n\n{count}\n\n{table}")
}

/// A markdown table: `head`, a rule (`---`, then `rule` for the other columns), then `rows`,
/// with `|` escaped and line breaks as spaces.
pub fn table(head: &[&str], rule: &str, rows: &[Vec<String>]) -> String {
    let line = |cells: &mut dyn Iterator<Item = &str>| {
        let cells: Vec<String> = cells
            .map(|c| c.replace('|', "\\|").replace(['\n', '\r'], " "))
            .collect();
        format!("| {} |\n", cells.join(" | "))
    };
    let rules = (0..head.len()).map(|k| if k == 0 { "---" } else { rule });
    let mut out = line(&mut head.iter().copied()) + &line(&mut rules.into_iter());
    for row in rows {
        out += &line(&mut row.iter().map(String::as_str));
    }
    out
}

impl ScenarioReport {
    /// The scenario `name` measured as `m`, unframed: for tests.
    #[cfg(test)]
    pub fn of(name: &'static str, m: &Measurement) -> Self {
        Self {
            name,
            rows: rows(name, m),
            ..Default::default()
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

    /// Every goal, budget, load goal and judged goal, in that order, with its check per run.
    fn checks(&self) -> Vec<(String, Vec<Option<Check>>)> {
        let (runs, m) = (self.run_rows(), &self.measure);
        let each = |text: &str, check: &dyn Fn(&[Row]) -> Option<Check>| {
            (
                text.to_owned(),
                runs.iter().map(|rows| check(rows)).collect(),
            )
        };
        let mut out: Vec<_> = (self.goals.iter())
            .map(|g| each(g.text, &|rows| g.check(rows)))
            .collect();
        out.extend((self.budgets.iter()).map(|b| each(b.text, &|rows| b.check(rows, m))));
        if !self.park_at_once.is_empty() {
            for (k, text) in LOAD_GOALS.into_iter().enumerate() {
                out.push(each(text, &|rows| {
                    load_check(rows, &self.park_at_once, k == 1, m)
                }));
            }
        }
        out.extend(self.judged.iter().map(|j| (j.text.clone(), j.runs.clone())));
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

    /// Where bridge ranks, e.g. "bridge is fastest; the next, tokio, takes 5.45x as long."
    pub fn ranking(&self) -> String {
        let mut ranked: Vec<&Row> = self.rows.iter().collect();
        ranked.sort_by(|a, b| a.ns.median.total_cmp(&b.ns.median));
        let Some(fastest) = ranked.first() else {
            return "No results.".to_owned();
        };
        match ranked.iter().position(|r| r.variant == BASELINE) {
            None => "bridge was not measured.".to_owned(),
            Some(0) => match ranked.get(1) {
                Some(next) => format!(
                    "bridge is fastest; the next, {}, takes {:.2}x as long.",
                    next.variant, next.ratio_to_bridge
                ),
                None => "bridge is the only variant.".to_owned(),
            },
            Some(i) => format!(
                "bridge ranks {} of {}; the fastest, {}, takes {:.2}x bridge's time.",
                i + 1,
                ranked.len(),
                fastest.variant,
                fastest.ratio_to_bridge
            ),
        }
    }

    /// Each goal with its verdict: met in every run (`Some(true)`), missed in some
    /// (`Some(false)`) or measured in none (`None`).
    pub fn verdicts(&self) -> Vec<(String, Option<bool>)> {
        self.goal_lines()
            .into_iter()
            .map(|line| (line.goal.clone(), line.verdict()))
            .collect()
    }

    /// The ranking, then each goal met or missed (over several runs, met only in every run).
    pub fn takeaway(&self) -> String {
        let mut out = self.ranking();
        if self.rows.is_empty() {
            return out;
        }
        for (text, runs) in self.checks() {
            let _ = write!(out, " Goal \"{text}\": ");
            let (n, met_in) = (runs.len(), runs.iter().flatten().filter(|c| c.met).count());
            match runs.as_slice() {
                _ if runs.iter().all(Option::is_none) => out.push_str("not measured."),
                [Some(check)] => {
                    let verdict = if check.met {
                        "met".to_owned()
                    } else {
                        not_met()
                    };
                    let _ = write!(out, "{verdict}: {}.", check.detail);
                }
                _ => {
                    let each: Vec<String> = (runs.iter().enumerate())
                        .map(|(k, check)| match check {
                            Some(c) if c.met => format!("run {}: met, {}", k + 1, c.detail),
                            Some(c) => format!("run {}: not met, {}", k + 1, c.detail),
                            None => format!("run {}: not measured", k + 1),
                        })
                        .collect();
                    let head = match met_in == n {
                        true => format!("met in all {n} runs"),
                        false => format!("{}: met in {met_in} of {n} runs", not_met()),
                    };
                    let _ = write!(out, "{head} ({}).", each.join("; "));
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
        // With one sample per run, min-max is that sample: the column is left out.
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
            head.extend(["background kernels/s", "background / idle-baseline"].map(String::from));
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
            let baseline = ", with one baseline batch (the background alone) per round";
            let _ = match m.sampling {
                Some(sampling) => writeln!(out, "\n{sampling}"),
                None => writeln!(
                    out,
                    "\n{} per variant, in orders balanced across rounds (each runs right after \
                     each other one equally often){}.",
                    self.rounds_text(r.rounds, r.ops_per_iter, background),
                    when(background, baseline)
                ),
            };
            if runs > 1 {
                let (values, spans) = match one_round {
                    true => ("values", ""),
                    false => ("medians", ", min-max spans every round of every run"),
                };
                let bg = "; background kernels/s and background / idle-baseline are medians of \
                          the runs' medians, the latter with the range across runs";
                let _ = writeln!(
                    out,
                    "\nOver the {runs} runs: {value} is the median of the runs' {values}{spans}, \
                     {each_run} lists them in run order, and range across runs is the lowest to \
                     the highest, with its width as a share of the median in parentheses{}. A \
                     goal is met only when it is met in every run.",
                    when(background, bg)
                );
            }
        }
        if let Some(idle) = self.rows.iter().find_map(|r| r.background.as_ref()) {
            let range = Summary::of(&idle.idle_samples)
                .map(|s| format!(", min-max {:.0}-{:.0}", s.min, s.max));
            let _ = writeln!(
                out,
                "\nBackground alone (the baseline batches): median {:.0} kernels/s{}.",
                idle.idle_kernels_per_s,
                range.unwrap_or_default()
            );
        }
        for note in &self.notes {
            let _ = writeln!(out, "\n{note}");
        }
        let _ = writeln!(out, "\nTakeaway: {}", self.takeaway());
        out
    }

    /// The runs, rounds and iterations each variant ran, e.g. `51 rounds of 1000 iterations`;
    /// under a background load, batches run for a set wall time.
    fn rounds_text(&self, rounds: usize, ops_per_iter: u64, loaded: bool) -> String {
        let ops = format!(" of {ops_per_iter} operations each");
        let ops = when(ops_per_iter != 1, &ops);
        let (runs, many) = (self.run_rows(), self.runs.len() > 1);
        let per_row: Vec<(&str, String)> = (self.rows.iter())
            .map(|row| {
                let iters = runs.iter().filter_map(|rows| find(rows, &row.variant));
                let iters: Vec<String> = iters.map(|r| r.iters_per_round.to_string()).collect();
                (row.variant.as_str(), iters.join("/"))
            })
            .collect();
        let head = match many {
            true => format!("{} runs, each of {rounds} rounds", runs.len()),
            false => format!("{rounds} rounds"),
        };
        let each = || {
            let each: Vec<String> = (per_row.iter())
                .map(|(name, iters)| format!("{name} {iters}"))
                .collect();
            each.join(", ")
        };
        let by_run = when(many, ", by run");
        match per_row.split_first() {
            _ if loaded => format!(
                "{head} of a batch that runs for a set wall time (median iterations per \
                 batch{ops}{by_run}: {})",
                each()
            ),
            Some(((_, first), rest)) if rest.iter().all(|(_, iters)| iters == first) => {
                let calibrated = when(many, " (calibrated per run)");
                format!("{head} of {first} iterations{ops}{calibrated}")
            }
            _ => format!(
                "{head} of a batch sized for each variant's own cost (iterations per \
                 batch{ops}{by_run}: {})",
                each()
            ),
        }
    }
}

/// `text` if `cond`, else nothing.
fn when(cond: bool, text: &str) -> &str {
    if cond { text } else { "" }
}

/// The lowest and highest of `values`; `None` if empty or any is NaN.
fn range_of(values: &[f64]) -> Option<(f64, f64)> {
    Summary::of(values).map(|s| (s.min, s.max))
}

/// `MIN-MAX (W%)`: the range of the run medians and its width against `median`.
fn spread(run_medians: &[f64], median: f64, m: &Measure) -> String {
    match range_of(run_medians) {
        Some((min, max)) => {
            let width = ratio(max - min, median) * 100.0;
            format!("{}-{} ({width:.0}%)", m.number(min), m.number(max))
        }
        None => "-".to_owned(),
    }
}

/// The median of `values`, NaN if there are none.
fn median(values: &[f64]) -> f64 {
    Summary::of(values).map_or(f64::NAN, |s| s.median)
}

/// Merges the runs of one study: per scenario of the first run, each variant's rows merged
/// (see [`Row::run_medians`]) and each run's rows kept for the goals.
pub fn merge_runs(mut runs: Vec<Vec<ScenarioReport>>) -> Vec<ScenarioReport> {
    if runs.len() <= 1 {
        return runs.pop().unwrap_or_default();
    }
    (runs[0].iter())
        .map(|first| {
            let same: Vec<&ScenarioReport> = runs
                .iter()
                .filter_map(|run| run.iter().find(|r| r.name == first.name))
                .collect();
            merge_scenario(first, &same)
        })
        .collect()
}

fn merge_scenario(first: &ScenarioReport, runs: &[&ScenarioReport]) -> ScenarioReport {
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
    set_ratios(&mut rows);
    let notes = if runs.iter().all(|run| run.notes == first.notes) {
        first.notes.clone()
    } else {
        runs.iter()
            .enumerate()
            .flat_map(|(k, run)| run.notes.iter().map(move |n| format!("Run {}: {n}", k + 1)))
            .collect()
    };
    let judged = first
        .judged
        .iter()
        .map(|goal| Judged {
            text: goal.text.clone(),
            runs: runs
                .iter()
                .map(|run| {
                    let same = run.judged.iter().find(|j| j.text == goal.text);
                    same.and_then(|j| j.runs.first().cloned().flatten())
                })
                .collect(),
        })
        .collect();
    ScenarioReport {
        notes,
        rows,
        judged,
        runs: runs.iter().map(|run| run.rows.clone()).collect(),
        ..first.clone()
    }
}

fn merge_row(first: &Row, each: &[&Row]) -> Row {
    let run_medians: Vec<f64> = each.iter().map(|r| r.ns.median).collect();
    let bgs: Vec<&Background> = each.iter().filter_map(|r| r.background.as_ref()).collect();
    let background = (!bgs.is_empty() && bgs.len() == each.len()).then(|| {
        let pick =
            |f: fn(&Background) -> f64| median(&bgs.iter().map(|b| f(b)).collect::<Vec<_>>());
        let concat =
            |f: fn(&Background) -> &[f64]| bgs.iter().flat_map(|b| f(b).iter().copied()).collect();
        Background {
            samples: concat(|b| &b.samples),
            idle_samples: concat(|b| &b.idle_samples),
            kernels_per_s: pick(|b| b.kernels_per_s),
            vs_idle: pick(|b| b.vs_idle),
            idle_kernels_per_s: pick(|b| b.idle_kernels_per_s),
            run_vs_idle: bgs.iter().map(|b| b.vs_idle).collect(),
        }
    });
    Row {
        ns: Summary {
            median: median(&run_medians),
            min: each.iter().map(|r| r.ns.min).fold(f64::NAN, f64::min),
            max: each.iter().map(|r| r.ns.max).fold(f64::NAN, f64::max),
        },
        samples: each
            .iter()
            .flat_map(|r| r.samples.iter().copied())
            .collect(),
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
        let mut m = Measurement::of(
            3,
            [
                ("bridge", vec![12.0, 10.0, 11.0]),
                ("tokio", vec![60.0, 55.0, 70.0]),
            ],
        );
        for v in &mut m.variants {
            v.iters = 1000;
        }
        m
    }

    fn goal(at_least: f64, text: &'static str) -> Goal {
        Goal::new("tokio", at_least, text)
    }

    #[test]
    fn csv_has_header_and_formatted_rows() {
        assert_eq!(
            csv(&[ScenarioReport::of("s", &measurement())]),
            "scenario,variant,rounds,iters_per_round,ops_per_iter,median_ns,min_ns,max_ns,\
             ratio_to_bridge,runs,run_medians_ns,bg_kernels_per_s,bg_vs_idle,\
             bg_idle_kernels_per_s,sample\n\
             s,bridge,3,1000,1,11.0,10.0,12.0,1.000,1,11.0,,,,ns/op\n\
             s,tokio,3,1000,1,60.0,55.0,70.0,5.455,1,60.0,,,,ns/op\n"
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
            ..ScenarioReport::of("s", &measurement())
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
        assert_eq!(
            table(&["a|b", "c"], "---:", &[vec!["1\n2".into(), "3".into()]]),
            "| a\\|b | c |\n| --- | ---: |\n| 1 2 | 3 |\n"
        );
    }

    #[test]
    fn the_rounds_text_names_each_variants_batch_when_they_differ() {
        let mut m = measurement();
        m.variants[1].iters = 40;
        let md = ScenarioReport::of("s", &m).markdown("study");
        assert!(
            md.contains(
                "\n3 rounds of a batch sized for each variant's own cost (iterations per \
                 batch: bridge 1000, tokio 40) per variant, in orders balanced"
            ),
            "{md}"
        );
    }

    #[test]
    fn load_goals_judge_bridge_against_the_fastest_park_at_once_peer() {
        let idle = [100.0; 3];
        let row = |name: &'static str, ns: f64, bg: f64| Measured {
            name,
            samples: vec![ns; 3],
            iters: 10,
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
            }),
            ..measurement()
        };
        let r = ScenarioReport {
            park_at_once: vec!["crawler", "parker", "absent"],
            ..ScenarioReport::of("s", &m)
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
                ..ScenarioReport::of("s", &m)
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
        let lines: Vec<_> = r.goal_lines().into_iter().map(|l| ("study", l)).collect();
        let summary = study_summary("study", &lines);
        assert!(summary.contains(
            "| s | 2x faster than tokio | met in 2 of 3 runs: not met on this machine | \
             2.73x / 1.43x / 4.00x (tokio / bridge >= 2.00x) |\n"
        ));
        assert!(summary.contains("; 1 not measured."), "{summary}");
    }
}
