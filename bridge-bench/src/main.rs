//! The studies of the bridge crate family: bridge and its peers side by side, a markdown table
//! per scenario with its frame and takeaway, written with a CSV file and a chart to
//! `DIR/STUDY/` (see `--help`). A missed goal fails the run only with `--strict`.
#![forbid(unsafe_code)]

mod busy;
mod chart;
mod docs;
mod harness;
mod proc;
mod progress;
mod report;
mod stats;
mod studies;

use clap::Parser;
use clap::builder::PossibleValuesParser;
use harness::Settings;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

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
    /// Run each study N times in a row and report the spread across the runs; a goal is met
    /// only when it is met in every run. The reference pages use 3.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    runs: u32,
    /// Exit with status 1 when a goal was not met in some run (after printing and writing
    /// everything). Without it a missed goal is a finding of this machine, and the exit
    /// status is 0.
    #[arg(long)]
    strict: bool,
    /// The output directory; each study writes `DIR/STUDY/results.csv`, `results.md` and
    /// `chart.svg`.
    #[arg(long, value_name = "DIR", default_value = "target/bridge-bench")]
    out: PathBuf,
    /// Also write each study's reference page, `DOCS/STUDY.md`, with the command, the
    /// machine, the tables and the chart (copied to `DOCS/STUDY.svg`), e.g. `--docs
    /// docs/studies`.
    #[arg(long, value_name = "DOCS")]
    docs: Option<PathBuf>,
}

fn study_names() -> PossibleValuesParser {
    PossibleValuesParser::new(studies::ALL.iter().map(|s| s.name).chain(["all"]))
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(&cli) {
        Ok(missed) if cli.strict && missed > 0 => {
            eprintln!(
                "error: {missed} goal{} not met (--strict)",
                if missed == 1 { " was" } else { "s were" }
            );
            ExitCode::FAILURE
        }
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Runs the selected studies and returns how many goals were not met.
fn run(cli: &Cli) -> Result<usize, String> {
    let all = cli.study == "all";
    let selected: Vec<_> = studies::ALL
        .iter()
        .filter(|s| all || s.name == cli.study)
        .collect();
    let (settings, name) = match cli.quick {
        true => (Settings::quick(), "quick"),
        false => (Settings::full(), "full"),
    };
    let mode = format!(
        "{name}: {} rounds per scenario, batches of ~{} ms (~{} ms under a background load), {} \
         run{}",
        settings.rounds,
        settings.batch.as_millis(),
        settings.busy_batch.as_millis(),
        cli.runs,
        if cli.runs == 1 { "" } else { "s" },
    );
    // Read before the studies run, so that a page's facts are those of its run.
    let machine = docs::Machine::detect();
    report::set_machine(machine.short());
    let command = docs::command_line(std::env::args_os().skip(1));
    let stdout_err = |e: io::Error| format!("cannot write to stdout: {e}");
    let cannot = |path: &Path, e: io::Error| format!("cannot write {}: {e}", path.display());
    let mut out = io::stdout().lock();
    writeln!(out, "# bridge-bench ({mode}, {})\n", machine.cpus_text()).map_err(stdout_err)?;
    let studies = selected.len();
    let mut goals = Vec::new();
    for study in selected {
        let mut runs = Vec::new();
        let mut took = std::time::Duration::ZERO;
        for run in 1..=cli.runs {
            let label = match cli.runs {
                1 => study.name.to_owned(),
                runs => format!("{} {run}/{runs}", study.name),
            };
            let bar = progress::start(&label);
            let reports = (study.run)(&settings)
                .map_err(|e| format!("study `{}` failed: {e}", study.name))?;
            took += bar.finish(reports.len());
            runs.push(reports);
        }
        let reports = report::merge_runs(runs);
        let mut markdown: String = reports
            .iter()
            .map(|r| r.markdown(study.name) + "\n")
            .collect();
        let lines = reports.iter().flat_map(report::ScenarioReport::goal_lines);
        let lines: Vec<_> = lines.map(|line| (study.name, line)).collect();
        if !lines.is_empty() {
            markdown += &(report::study_summary(study.name, &lines) + "\n");
        }
        goals.extend(lines);
        write!(out, "{markdown}").map_err(stdout_err)?;
        let dir = cli.out.join(study.name);
        let svg = chart::svg(study.name, &reports).map_err(|e| format!("a chart: {e}"))?;
        let results = format!("{}\n\n{markdown}", machine.summary(&mode));
        let files = [
            ("results.csv", report::csv(&reports)),
            ("results.md", results),
            ("chart.svg", svg.clone()),
        ];
        std::fs::create_dir_all(&dir).map_err(|e| cannot(&dir, e))?;
        for (name, text) in files {
            let path = dir.join(name);
            std::fs::write(&path, text).map_err(|e| cannot(&path, e))?;
        }
        writeln!(
            out,
            "Study `{}` took {:.1} s; wrote results.csv, results.md and chart.svg in {}\n",
            study.name,
            took.as_secs_f64(),
            dir.display()
        )
        .map_err(stdout_err)?;
        if let Some(docs_dir) = &cli.docs {
            let page = docs::Page {
                study: study.name,
                command: &command,
                machine: &machine,
                mode: &mode,
                took_secs: took.as_secs_f64(),
                markdown: &markdown,
            };
            let path = docs::write(docs_dir, &page, &svg).map_err(|e| cannot(docs_dir, e))?;
            writeln!(out, "Wrote the reference page {}\n", path.display()).map_err(stdout_err)?;
        }
    }
    if studies > 1 && !goals.is_empty() {
        write!(
            out,
            "## Goals of every study\n\n{}\n\n{}",
            report::goals_count(&goals),
            report::goals_table(&goals, true)
        )
        .map_err(stdout_err)?;
    }
    Ok(goals
        .iter()
        .filter(|(_, line)| line.verdict() == Some(false))
        .count())
}
