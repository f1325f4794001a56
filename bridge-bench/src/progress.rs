//! One progress bar per study on stderr, advanced between batches only (no ticking thread);
//! indicatif hides it when stderr is not a terminal.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The bar of the study that is running, if any, and when its scenario in flight started.
static CURRENT: Mutex<Option<(ProgressBar, Instant)>> = Mutex::new(None);

fn current() -> MutexGuard<'static, Option<(ProgressBar, Instant)>> {
    CURRENT.lock().unwrap_or_else(|e| e.into_inner())
}

/// The bar of one study; it stops taking reports when dropped.
#[derive(Debug)]
pub struct StudyBar {
    bar: ProgressBar,
}

/// Shows a bar for `study` on stderr and routes the harness's reports to it.
pub fn start(study: &str) -> StudyBar {
    // Hidden until the first measurement gives it a length: an empty bar would draw as full.
    let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::hidden());
    let style = ProgressStyle::with_template(
        "{prefix:>10.bold} [{bar:24.yellow/blue}] {pos:>4}/{len:<4} {elapsed:>3} {wide_msg}",
    );
    bar.set_style(style.unwrap_or_else(|_| ProgressStyle::default_bar()));
    bar.set_prefix(study.to_owned());
    *current() = Some((bar.clone(), Instant::now()));
    StudyBar { bar }
}

impl StudyBar {
    /// Leaves the bar full with a summary of `scenarios` scenarios and the time taken.
    pub fn finish(self, scenarios: usize) -> Duration {
        let took = self.bar.elapsed();
        let secs = took.as_secs_f64();
        self.bar
            .finish_with_message(format!("{scenarios} scenarios in {secs:.1} s"));
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

/// A measurement of `rounds` rounds of `variants` starts (plus one calibration step).
pub fn measurement_started<'a>(rounds: usize, variants: impl Iterator<Item = &'a str>) {
    if let Some((bar, started)) = current().as_mut() {
        *started = Instant::now();
        if bar.length() == Some(0) {
            bar.set_draw_target(ProgressDrawTarget::stderr());
        }
        bar.inc_length(rounds as u64 + 1);
        let variants: Vec<&str> = variants.collect();
        bar.set_message(format!("calibrating ({})", variants.join(", ")));
    }
}

/// Calibration, or one round of every variant, is done.
pub fn step_done(calibration: bool) {
    if let Some((bar, _)) = current().as_ref() {
        if !calibration {
            bar.set_message("measuring");
        }
        bar.inc(1);
    }
}

/// The rows of scenario `name` were made: it is done.
pub fn scenario_done(name: &str) {
    if let Some((bar, started)) = current().as_ref() {
        let secs = started.elapsed().as_secs_f64();
        bar.println(format!("{:>10}   {name} ({secs:.1} s)", "done"));
        bar.set_message(format!("after {name}"));
    }
}
