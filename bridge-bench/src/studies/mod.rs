//! The registry of studies. To add one, write `studies/<name>.rs` with a
//! `run(&Settings) -> io::Result<Vec<ScenarioReport>>` and list it in [`ALL`].

use crate::busy::Load;
use crate::harness::{Batch, Settings, Variant, measure};
use crate::proc::Census;
pub use crate::proc::cpus;
use crate::report::{Row, ScenarioReport, rows};
use crate::stats::{Summary, ratio};
use std::io;
use tokio::runtime::Runtime;

pub mod cpu_async;
pub mod echo;
pub mod fan_out;
pub mod hop;
pub mod io_vs_ingress;
pub mod no_runtime;
pub mod oneshot;
pub mod overload;
pub mod run;
pub mod wrong_pool;

/// A named study: a set of scenarios that share one results file.
#[derive(Debug, Clone, Copy)]
pub struct Study {
    /// The name given on the command line and used as the output subdirectory.
    pub name: &'static str,
    /// Runs every scenario of the study.
    pub run: fn(&Settings) -> io::Result<Vec<ScenarioReport>>,
}

const fn study(name: &'static str, run: fn(&Settings) -> io::Result<Vec<ScenarioReport>>) -> Study {
    Study { name, run }
}

/// Every study, in the order `all` runs them.
pub const ALL: &[Study] = &[
    study("oneshot", oneshot::run),
    study("hop", hop::run),
    study("run", run::run),
    study("no-runtime", no_runtime::run),
    study("fan-out", fan_out::run),
    study("io-vs-ingress", io_vs_ingress::run),
    study("wrong-pool", wrong_pool::run),
    study("overload", overload::run),
    study("cpu-async", cpu_async::run),
];

/// `report` with the rows of `variants` measured ([`measure`]).
pub fn measured(
    report: ScenarioReport,
    variants: &mut [Variant<'_>],
    ops_per_iter: u64,
    settings: &Settings,
    load: Option<&Load>,
) -> ScenarioReport {
    let m = measure(variants, ops_per_iter, settings, load);
    ScenarioReport {
        rows: rows(report.name, &m),
        ..report
    }
}

/// A variant run by `run`, with `census` reading the thread count around each batch.
pub fn counted<'a>(
    census: &'a Census,
    name: &'static str,
    run: impl FnMut(u64) -> Batch + 'a,
) -> Variant<'a> {
    Variant::new(name, census.around(name, run))
}

/// A current-thread runtime with I/O and timers, as bridge builds them.
pub fn current_thread() -> io::Result<Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
}

thread_local! {
    /// A current-thread runtime per thread, built on first use.
    pub static CACHED: Runtime = current_thread().expect("cannot build a current-thread runtime");
}

/// The published penalty (percent) of a shared multi-thread runtime against a runtime per
/// thread.
pub const PUBLISHED_PENALTY: (f64, f64) = (6.0, 17.0);

/// Where a penalty in percent lies against the published range.
pub fn placement(percent: f64) -> &'static str {
    let (low, high) = PUBLISHED_PENALTY;
    match percent {
        p if p.is_nan() => "not measured",
        p if p <= 0.0 => "none (no slower than the runtime per thread)",
        p if p < low => "below the published range",
        p if p <= high => "within the published range",
        _ => "above the published range",
    }
}

/// `a` against `b`: the ratio of medians, the median per-round ratio, the rounds where `a` was
/// slower and all rounds.
pub fn paired(a: &Row, b: &Row) -> (f64, f64, usize, usize) {
    let per_round: Vec<f64> = a
        .samples
        .iter()
        .zip(&b.samples)
        .map(|(&x, &y)| ratio(x, y))
        .collect();
    let slower = per_round.iter().filter(|&&r| r > 1.0).count();
    let median = Summary::of(&per_round).map_or(f64::NAN, |s| s.median);
    (
        ratio(a.ns.median, b.ns.median),
        median,
        slower,
        per_round.len(),
    )
}

/// The route a `run_blocking` call made here takes, as a note.
pub fn route_note() -> String {
    format!(
        "Route: bridge_tokio::route() from the calling code returns {:?}.",
        bridge_tokio::route()
    )
}

/// Under a `load`, renames `report` to `busy_name`, names the load in its frame and trades its
/// goals for the load goals against `park_at_once`, noted with `why`.
pub fn under_load(
    report: ScenarioReport,
    busy_name: &'static str,
    load: Option<&Load>,
    park_at_once: &[&'static str],
    why: &str,
) -> ScenarioReport {
    let Some(load) = load else {
        return report;
    };
    let mut notes = report.notes;
    notes.push(format!(
        "Park-at-once peers (the fastest of them is the reference of the goals under \
         load): {}; {why}",
        park_at_once.join(", ")
    ));
    ScenarioReport {
        name: busy_name,
        fixed: format!("{} All of it on {}", report.fixed, load.describe()),
        goals: Vec::new(),
        park_at_once: park_at_once.to_vec(),
        notes,
        ..report
    }
}
