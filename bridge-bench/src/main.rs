//! The studies of the bridge crate family: each puts bridge and its peers side by side in one
//! process, writes `DIR/STUDY/results.csv` and prints a markdown table per scenario.
//!
//! ```text
//! cargo run --release -p bridge-bench -- STUDY|all [--quick] [--out DIR]
//! ```
#![forbid(unsafe_code)]

mod harness;
mod report;
mod stats;
mod studies;
mod threads;

use clap::Parser;
use clap::builder::PossibleValuesParser;
use harness::Settings;
use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

/// Runs bridge's studies and writes their results.
#[derive(Debug, Parser)]
#[command(version, about)]
struct Cli {
    /// The study to run, or `all` for every study.
    #[arg(value_parser = study_names())]
    study: String,
    /// Few rounds and short batches: every variant still runs (the CI smoke test).
    #[arg(long)]
    quick: bool,
    /// The output directory; each study writes `DIR/STUDY/results.csv`.
    #[arg(long, value_name = "DIR", default_value = "target/bridge-bench")]
    out: PathBuf,
}

fn study_names() -> PossibleValuesParser {
    PossibleValuesParser::new(studies::ALL.iter().map(|s| s.name).chain(["all"]))
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(&cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: &Cli) -> Result<(), String> {
    let selected: Vec<_> = if cli.study == "all" {
        studies::ALL.iter().collect()
    } else {
        // The value parser only lets known names through.
        studies::find(&cli.study).into_iter().collect()
    };
    let settings = if cli.quick {
        Settings::quick()
    } else {
        Settings::full()
    };
    let stdout_err = |e: io::Error| format!("cannot write to stdout: {e}");
    let mut out = io::stdout().lock();
    writeln!(
        out,
        "# bridge-bench ({}): {} rounds per scenario, batches of ~{} ms, {} CPUs\n",
        if cli.quick { "quick" } else { "full" },
        settings.rounds,
        settings.batch.as_millis(),
        std::thread::available_parallelism().map_or(0, |n| n.get()),
    )
    .map_err(stdout_err)?;
    for study in selected {
        let started = Instant::now();
        let reports =
            (study.run)(&settings).map_err(|e| format!("study `{}` failed: {e}", study.name))?;
        let rows: Vec<_> = reports
            .iter()
            .flat_map(|r| r.rows.iter().cloned())
            .collect();
        let path = cli.out.join(study.name).join("results.csv");
        report::write_csv(&path, &rows)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        for r in &reports {
            writeln!(out, "{}", r.markdown(study.name)).map_err(stdout_err)?;
        }
        writeln!(
            out,
            "Study `{}` took {:.1} s; wrote {}\n",
            study.name,
            started.elapsed().as_secs_f64(),
            path.display()
        )
        .map_err(stdout_err)?;
    }
    Ok(())
}
