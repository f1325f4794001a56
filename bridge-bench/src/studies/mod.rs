//! The registry of studies. To add one, write `studies/<name>.rs` with a
//! `run(&Settings) -> io::Result<Vec<ScenarioReport>>` and list it in [`ALL`].

use crate::busy::Load;
use crate::harness::{Settings, Variant, measure};
use crate::report::ScenarioReport;
use std::io;

pub mod cpu_async;
mod echo;
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

/// Every study, in the order `all` runs them.
pub const ALL: &[Study] = &[
    Study {
        name: "oneshot",
        run: oneshot::run,
    },
    Study {
        name: "hop",
        run: hop::run,
    },
    Study {
        name: "run",
        run: run::run,
    },
    Study {
        name: "no-runtime",
        run: no_runtime::run,
    },
    Study {
        name: "fan-out",
        run: fan_out::run,
    },
    Study {
        name: "io-vs-ingress",
        run: io_vs_ingress::run,
    },
    Study {
        name: "wrong-pool",
        run: wrong_pool::run,
    },
    Study {
        name: "overload",
        run: overload::run,
    },
    Study {
        name: "cpu-async",
        run: cpu_async::run,
    },
];

/// Measures `variants` (under `load`, if any) and frames the result as scenario `name`.
pub fn measured(
    name: &'static str,
    varied: impl Into<String>,
    fixed: impl Into<String>,
    variants: &mut [Variant<'_>],
    settings: &Settings,
    load: Option<&Load>,
) -> ScenarioReport {
    let m = measure(variants, 1, settings, load);
    ScenarioReport::measured(name, varied, fixed, &m)
}

/// The route a `run_blocking` call made here takes, as a note: the one place the studies
/// ask bridge-tokio for it.
pub fn route_note() -> String {
    format!(
        "Route: bridge_tokio::route() from the calling code returns {:?}.",
        bridge_tokio::route()
    )
}

/// Looks a study up by name.
pub fn find(name: &str) -> Option<&'static Study> {
    ALL.iter().find(|s| s.name == name)
}
