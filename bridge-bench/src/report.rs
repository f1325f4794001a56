//! Turning measurements into rows, a CSV file and markdown tables with a computed takeaway.

use crate::harness::Measurement;
use crate::progress;
use crate::stats::{Summary, ratio};
use std::fmt::Write as _;
use std::io;
use std::path::Path;

/// The variant every ratio is taken against.
pub const BASELINE: &str = "bridge";

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
    /// The per-round samples in round order, for paired comparisons with the baseline.
    pub samples: Vec<f64>,
}

/// Summarizes a measurement into one row per variant, and tells the study's progress bar (if
/// any) that `scenario` is done.
///
/// Variants with no samples are skipped; the ratio is NaN if the baseline is missing.
pub fn rows(scenario: &str, m: &Measurement) -> Vec<Row> {
    progress::scenario_done(scenario);
    let summaries: Vec<_> = m
        .variants
        .iter()
        .filter_map(|v| Some((v.name, Summary::of(&v.samples)?, &v.samples)))
        .collect();
    let baseline = summaries
        .iter()
        .find(|(name, ..)| *name == BASELINE)
        .map_or(f64::NAN, |(_, s, _)| s.median);
    summaries
        .into_iter()
        .map(|(name, ns, samples)| Row {
            scenario: scenario.to_owned(),
            variant: name.to_owned(),
            rounds: m.rounds,
            iters_per_round: m.iters_per_round,
            ops_per_iter: m.ops_per_iter,
            ns,
            ratio_to_bridge: ratio(ns.median, baseline),
            samples: samples.clone(),
        })
        .collect()
}

/// The CSV header line, without the line break.
pub const CSV_HEADER: &str = "scenario,variant,rounds,iters_per_round,ops_per_iter,median_ns,\
     min_ns,max_ns,ratio_to_bridge";

/// Renders rows as CSV: a header, then one line per row; nanoseconds with 1 decimal,
/// ratios with 3.
pub fn csv(rows: &[Row]) -> String {
    let mut out = format!("{CSV_HEADER}\n");
    for r in rows {
        // Writing to a String cannot fail.
        let _ = writeln!(
            out,
            "{},{},{},{},{},{:.1},{:.1},{:.1},{:.3}",
            csv_field(&r.scenario),
            csv_field(&r.variant),
            r.rounds,
            r.iters_per_round,
            r.ops_per_iter,
            r.ns.median,
            r.ns.min,
            r.ns.max,
            r.ratio_to_bridge
        );
    }
    out
}

/// Quotes a field if it holds a comma, a quote or a line break (RFC 4180).
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
}

/// Writes [`csv`] of `rows` to `path`, creating its parent directories.
///
/// # Errors
///
/// Any I/O error from creating the directories or writing the file.
pub fn write_csv(path: &Path, rows: &[Row]) -> io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(path, csv(rows))
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

/// A scenario's results with its frame, ready to print.
#[derive(Debug, Clone, PartialEq)]
pub struct ScenarioReport {
    /// The scenario, e.g. `same-thread`.
    pub name: &'static str,
    /// What differs between the variants.
    pub varied: String,
    /// What is the same for every variant.
    pub fixed: String,
    /// The goals against peers quoted for this scenario, if any.
    pub goals: Vec<Goal>,
    /// The absolute goals for bridge's median quoted for this scenario, if any.
    pub budgets: Vec<Budget>,
    /// Further observations measured alongside the timings (e.g. thread counts), one
    /// paragraph each, printed after the table.
    pub notes: Vec<String>,
    /// One row per variant.
    pub rows: Vec<Row>,
}

impl ScenarioReport {
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

    /// Each goal and budget in words with its verdict, goals first: met (`Some(true)`),
    /// missed (`Some(false)`) or not measured (`None`), as the [`takeaway`](Self::takeaway)
    /// judges them.
    pub fn verdicts(&self) -> Vec<(&'static str, Option<bool>)> {
        let bridge = self.rows.iter().find(|r| r.variant == BASELINE);
        let goals = self.goals.iter().map(|goal| {
            let peer = self.rows.iter().find(|r| r.variant == goal.peer);
            let met = bridge
                .and(peer)
                .map(|peer| peer.ratio_to_bridge >= goal.at_least);
            (goal.text, met)
        });
        let budgets = self
            .budgets
            .iter()
            .map(|budget| (budget.text, bridge.map(|b| b.ns.median <= budget.max_ns)));
        goals.chain(budgets).collect()
    }

    /// The takeaway, computed from the rows: the ranking, then each goal met or missed.
    pub fn takeaway(&self) -> String {
        let mut out = self.ranking();
        if self.rows.is_empty() {
            return out;
        }
        let bridge = self.rows.iter().find(|r| r.variant == BASELINE);
        for goal in &self.goals {
            let peer = self.rows.iter().find(|r| r.variant == goal.peer);
            let (Some(bridge), Some(peer)) = (bridge, peer) else {
                let _ = write!(out, " Goal \"{}\": not measured.", goal.text);
                continue;
            };
            let met = peer.ratio_to_bridge >= goal.at_least;
            let _ = write!(
                out,
                " Goal \"{}\": {} ({} at {:.2}x bridge's median, needed {:.2}x",
                goal.text,
                if met { "met" } else { "NOT met" },
                peer.variant,
                peer.ratio_to_bridge,
                goal.at_least
            );
            if goal.at_least < 1.0 {
                let _ = write!(
                    out,
                    ", i.e. bridge at most {:.2}x {}",
                    1.0 / goal.at_least,
                    peer.variant
                );
            }
            // Rounds are interleaved, so round k of bridge and of the peer ran side by side:
            // counting the rounds that reach the goal is robust to drift across rounds.
            let reached = bridge
                .samples
                .iter()
                .zip(&peer.samples)
                .filter(|&(&b, &p)| ratio(p, b) >= goal.at_least)
                .count();
            let _ = write!(
                out,
                "; reached in {reached} of {} rounds",
                bridge.samples.len().min(peer.samples.len())
            );
            out.push_str(").");
        }
        for budget in &self.budgets {
            let Some(bridge) = bridge else {
                let _ = write!(out, " Goal \"{}\": not measured.", budget.text);
                continue;
            };
            let met = bridge.ns.median <= budget.max_ns;
            let reached = bridge
                .samples
                .iter()
                .filter(|&&ns| ns <= budget.max_ns)
                .count();
            let _ = write!(
                out,
                " Goal \"{}\": {} (bridge's median {:.1} ns, needed at most {:.1} ns; reached in \
                 {reached} of {} rounds).",
                budget.text,
                if met { "met" } else { "NOT met" },
                bridge.ns.median,
                budget.max_ns,
                bridge.samples.len()
            );
        }
        out
    }

    /// The scenario as markdown: a heading, the frame, a table and the takeaway.
    pub fn markdown(&self, study: &str) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "### {study} / {}\n", self.name);
        let _ = writeln!(out, "What we varied: {}\n", self.varied);
        let _ = writeln!(out, "Held fixed: {}\n", self.fixed);
        out.push_str("| variant | median ns/op | min-max ns/op | median / bridge |\n");
        out.push_str("| --- | ---: | ---: | ---: |\n");
        for r in &self.rows {
            let _ = writeln!(
                out,
                "| {} | {:.1} | {:.1}-{:.1} | {:.2}x |",
                r.variant, r.ns.median, r.ns.min, r.ns.max, r.ratio_to_bridge
            );
        }
        if let Some(r) = self.rows.first() {
            let _ = write!(
                out,
                "\n{} rounds of {} iterations",
                r.rounds, r.iters_per_round
            );
            if r.ops_per_iter != 1 {
                let _ = write!(out, " of {} operations each", r.ops_per_iter);
            }
            out.push_str(" per variant, order rotated per round.\n");
        }
        for note in &self.notes {
            let _ = writeln!(out, "\n{note}");
        }
        let _ = writeln!(out, "\nTakeaway: {}", self.takeaway());
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::Measured;

    fn measurement() -> Measurement {
        Measurement {
            iters_per_round: 1000,
            ops_per_iter: 1,
            rounds: 3,
            variants: vec![
                Measured {
                    name: "bridge",
                    samples: vec![12.0, 10.0, 11.0],
                },
                Measured {
                    name: "tokio",
                    samples: vec![60.0, 55.0, 70.0],
                },
            ],
        }
    }

    #[test]
    fn csv_has_header_and_formatted_rows() {
        let rows = rows("same-thread", &measurement());
        assert_eq!(
            csv(&rows),
            "scenario,variant,rounds,iters_per_round,ops_per_iter,median_ns,min_ns,max_ns,\
             ratio_to_bridge\n\
             same-thread,bridge,3,1000,1,11.0,10.0,12.0,1.000\n\
             same-thread,tokio,3,1000,1,60.0,55.0,70.0,5.455\n"
        );
    }

    #[test]
    fn csv_quotes_fields_with_commas_and_quotes() {
        assert_eq!(csv_field("bounded(1)"), "bounded(1)");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
    }

    #[test]
    fn markdown_names_operations_per_iteration_and_prints_notes() {
        let mut m = measurement();
        let report = |m: &Measurement| ScenarioReport {
            name: "s",
            varied: String::new(),
            fixed: String::new(),
            goals: Vec::new(),
            budgets: Vec::new(),
            notes: vec!["Threads: 5.".to_owned()],
            rows: rows("s", m),
        };
        let one = report(&m).markdown("study");
        assert!(one.contains("\n3 rounds of 1000 iterations per variant, order rotated"));
        assert!(one.contains("order rotated per round.\n\nThreads: 5.\n\nTakeaway: "));
        m.ops_per_iter = 1000;
        let batched = report(&m).markdown("study");
        assert!(batched.contains("3 rounds of 1000 iterations of 1000 operations each per"));
    }

    #[test]
    fn takeaway_reports_goals_from_the_numbers() {
        let report = ScenarioReport {
            name: "s",
            varied: String::new(),
            fixed: String::new(),
            goals: vec![
                Goal {
                    peer: "tokio",
                    at_least: 5.0,
                    text: "5x faster than tokio",
                },
                Goal {
                    peer: "tokio",
                    at_least: 6.0,
                    text: "6x faster than tokio",
                },
            ],
            budgets: Vec::new(),
            notes: Vec::new(),
            rows: rows("s", &measurement()),
        };
        assert_eq!(
            report.takeaway(),
            "bridge is fastest; the next, tokio, takes 5.45x as long. \
             Goal \"5x faster than tokio\": met (tokio at 5.45x bridge's median, needed 5.00x; \
             reached in 3 of 3 rounds). \
             Goal \"6x faster than tokio\": NOT met (tokio at 5.45x bridge's median, needed \
             6.00x; reached in 1 of 3 rounds)."
        );
    }

    #[test]
    fn ranking_and_verdicts_match_the_takeaway() {
        let report = ScenarioReport {
            name: "s",
            varied: String::new(),
            fixed: String::new(),
            goals: vec![
                Goal {
                    peer: "tokio",
                    at_least: 6.0,
                    text: "6x faster than tokio",
                },
                Goal {
                    peer: "crossbeam",
                    at_least: 1.0,
                    text: "no slower than crossbeam",
                },
            ],
            budgets: vec![Budget {
                max_ns: 11.5,
                text: "at most 11.5 ns",
            }],
            notes: Vec::new(),
            rows: rows("s", &measurement()),
        };
        assert_eq!(
            report.ranking(),
            "bridge is fastest; the next, tokio, takes 5.45x as long."
        );
        assert!(report.takeaway().starts_with(&report.ranking()));
        assert_eq!(
            report.verdicts(),
            vec![
                ("6x faster than tokio", Some(false)),
                ("no slower than crossbeam", None),
                ("at most 11.5 ns", Some(true)),
            ]
        );
        let empty = ScenarioReport {
            rows: Vec::new(),
            ..report
        };
        assert_eq!(empty.ranking(), "No results.");
        assert_eq!(empty.takeaway(), "No results.");
        assert_eq!(empty.verdicts()[2], ("at most 11.5 ns", None));
    }

    #[test]
    fn takeaway_reports_budgets_and_at_most_goals() {
        let report = ScenarioReport {
            name: "s",
            varied: String::new(),
            fixed: String::new(),
            goals: vec![Goal {
                peer: "tokio",
                at_least: 1.0 / 1.25,
                text: "at most 1.25x tokio",
            }],
            budgets: vec![
                Budget {
                    max_ns: 11.5,
                    text: "at most 11.5 ns",
                },
                Budget {
                    max_ns: 10.5,
                    text: "at most 10.5 ns",
                },
            ],
            notes: Vec::new(),
            rows: rows("s", &measurement()),
        };
        assert_eq!(
            report.takeaway(),
            "bridge is fastest; the next, tokio, takes 5.45x as long. \
             Goal \"at most 1.25x tokio\": met (tokio at 5.45x bridge's median, needed 0.80x, \
             i.e. bridge at most 1.25x tokio; reached in 3 of 3 rounds). \
             Goal \"at most 11.5 ns\": met (bridge's median 11.0 ns, needed at most 11.5 ns; \
             reached in 2 of 3 rounds). \
             Goal \"at most 10.5 ns\": NOT met (bridge's median 11.0 ns, needed at most 10.5 ns; \
             reached in 1 of 3 rounds)."
        );
    }
}
