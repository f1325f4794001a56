//! One progress bar per study on stderr, advanced once per round of each scenario.
//!
//! The harness reports its progress here between batches, never inside a timed one, and the
//! bar has no ticking thread of its own: it redraws (at most 20 times a second) only on those
//! calls, so it adds no thread and no work to a measurement. When stderr is not a terminal, or
//! `TERM` is `dumb`, indicatif hides the bar and every call here does nothing visible, so CI
//! logs only get the markdown on stdout.
//!
//! A study does not say how many scenarios it has, so the bar grows by one scenario's rounds
//! (plus one step for calibration) each time a measurement starts. A scenario is named once
//! its rows are made ([`crate::report::rows`]), so the bar calls the scenario in flight by
//! its number and the variants it measures, and prints each finished one's name above it.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The bar of the study that is running, if any.
static CURRENT: Mutex<Option<State>> = Mutex::new(None);

#[derive(Debug)]
struct State {
    bar: ProgressBar,
    /// Scenarios whose rows have been made.
    named: usize,
    /// The rounds of the measurement in flight, and how many of them are done.
    rounds: usize,
    round: usize,
    /// The variants of the measurement in flight, e.g. `bridge, tokio, futures`.
    variants: String,
    /// When the measurement in flight started.
    started: Instant,
}

impl State {
    fn message(&self) -> String {
        let scenario = self.named + 1;
        let step = if self.round == 0 {
            "calibrating".to_owned()
        } else {
            format!("round {}/{}", self.round, self.rounds)
        };
        format!("scenario {scenario}: {step} ({})", self.variants)
    }
}

fn current() -> MutexGuard<'static, Option<State>> {
    // A panic elsewhere while holding the lock leaves nothing half-updated that matters.
    CURRENT.lock().unwrap_or_else(|e| e.into_inner())
}

/// The bar of one study; it stops taking reports when dropped.
#[derive(Debug)]
pub struct StudyBar {
    bar: ProgressBar,
    started: Instant,
}

/// Shows a bar for `study` on stderr (hidden if stderr is not a terminal) and routes the
/// harness's reports to it until the returned bar is finished or dropped.
pub fn start(study: &str) -> StudyBar {
    // Hidden until the first measurement gives it a length: an empty bar would draw as full.
    let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::hidden());
    bar.set_style(
        ProgressStyle::with_template(
            "{prefix:>10.bold} [{bar:24.yellow/blue}] {pos:>4}/{len:<4} {elapsed:>3} {wide_msg}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> "),
    );
    bar.set_prefix(study.to_owned());
    *current() = Some(State {
        bar: bar.clone(),
        named: 0,
        rounds: 0,
        round: 0,
        variants: String::new(),
        started: Instant::now(),
    });
    StudyBar {
        bar,
        started: Instant::now(),
    }
}

impl StudyBar {
    /// Leaves the bar full with a summary of `scenarios` scenarios and the time taken.
    pub fn finish(self, scenarios: usize) -> Duration {
        let took = self.started.elapsed();
        self.bar.finish_with_message(format!(
            "{scenarios} scenarios in {:.1} s",
            took.as_secs_f64()
        ));
        took
    }
}

impl Drop for StudyBar {
    fn drop(&mut self) {
        *current() = None;
        if !self.bar.is_finished() {
            self.bar.abandon();
        }
    }
}

/// A measurement of `rounds` rounds of `variants` starts: the bar grows by its rounds and one
/// calibration step.
pub fn measurement_started<'a>(rounds: usize, variants: impl Iterator<Item = &'a str>) {
    if let Some(state) = current().as_mut() {
        state.rounds = rounds;
        state.round = 0;
        state.variants = variants.collect::<Vec<_>>().join(", ");
        state.started = Instant::now();
        let first = state.bar.length() == Some(0);
        state.bar.inc_length(rounds as u64 + 1);
        if first {
            state.bar.set_draw_target(ProgressDrawTarget::stderr());
        }
        state.bar.set_message(state.message());
    }
}

/// Calibration, or one round of every variant, is done.
pub fn step_done(calibration: bool) {
    if let Some(state) = current().as_mut() {
        if !calibration {
            state.round += 1;
        }
        state.bar.set_message(state.message());
        state.bar.inc(1);
    }
}

/// The rows of scenario `name` were made: it is done.
pub fn scenario_done(name: &str) {
    if let Some(state) = current().as_mut() {
        state.named += 1;
        state.bar.println(format!(
            "{:>10}   {name} ({:.1} s)",
            "done",
            state.started.elapsed().as_secs_f64()
        ));
        state.round = 0;
        state.variants.clear();
        state.bar.set_message(format!("after {name}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_names_the_scenario_step_and_variants() {
        let mut state = State {
            bar: ProgressBar::hidden(),
            named: 2,
            rounds: 51,
            round: 0,
            variants: "bridge, tokio".to_owned(),
            started: Instant::now(),
        };
        assert_eq!(state.message(), "scenario 3: calibrating (bridge, tokio)");
        state.round = 17;
        assert_eq!(state.message(), "scenario 3: round 17/51 (bridge, tokio)");
    }
}
