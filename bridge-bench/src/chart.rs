//! A study's results as one SVG chart: a panel per scenario, a horizontal bar per variant at
//! its median with a min-max whisker, bridge's bar highlighted and every bar labelled.
//!
//! Only plotters' SVG backend is used, without its `ttf` feature: text goes into the SVG as
//! `<text font-family="sans-serif">` and the viewer picks the font, so neither building nor
//! running needs a system font or font library. Plotters' own text measurement is then a crude
//! estimate, so the layout here never asks for it and reserves room with [`text_width`].

//!
//! It takes plain data ([`Panel`], [`Bar`]): the report module makes it from its rows.

use crate::stats::BASELINE;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::io;
use std::path::Path;

/// Width of the whole chart, in pixels.
const WIDTH: i32 = 960;
/// Blank space at the left and right edges.
const MARGIN: i32 = 20;
/// Height of the header: title, how to read the chart, legend.
const HEADER: i32 = 106;
/// Height of one variant's row, and the thickness of its bar.
const ROW: i32 = 24;
const BAR: i32 = 14;
/// Panels whose largest median is more than this many times their smallest get a log axis.
const LOG_SPAN: f64 = 30.0;
/// How far past the largest median (and, on a log axis, below the smallest) a whisker may
/// reach and still stretch the axis.
const WHISKER_ROOM: f64 = 2.0;

/// Text sizes in pixels as a reader sees them. plotters' SVG backend divides a font size by
/// 1.24 when it writes it out, so [`font`] multiplies it back.
const TITLE_PX: f64 = 20.0;
const PANEL_PX: f64 = 15.0;
const BODY_PX: f64 = 13.0;
const SMALL_PX: f64 = 12.0;

const INK: RGBColor = RGBColor(33, 37, 41);
const MUTED: RGBColor = RGBColor(100, 106, 115);
const GRID: RGBColor = RGBColor(226, 229, 233);
/// bridge with its defaults: the one variant every ratio is taken against.
const BRIDGE: RGBColor = RGBColor(213, 94, 0);
/// bridge with other settings (a variant whose name starts with `bridge `).
const BRIDGE_OTHER: RGBColor = RGBColor(242, 172, 120);
const PEER: RGBColor = RGBColor(122, 140, 163);
const WHISKER: RGBColor = RGBColor(45, 45, 45);
const MET: RGBColor = RGBColor(0, 120, 60);
const MISSED: RGBColor = RGBColor(190, 30, 30);

/// One scenario's panel: its name, the lines under its title (each with whether it tells of
/// a goal met, missed, or neither) and a bar per variant.
#[derive(Debug, Clone, PartialEq)]
pub struct Panel {
    pub name: String,
    pub lines: Vec<(String, Option<bool>)>,
    pub bars: Vec<Bar>,
}

/// One variant's bar: its median, the min-max whisker and its ratio to bridge's median (ns).
#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    pub variant: String,
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub ratio: f64,
    /// Under a background load, the background's work over its baseline's.
    pub background: Option<f64>,
    pub rounds: usize,
    pub runs: usize,
}

/// How an axis maps nanoseconds to the width of a panel.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scale {
    /// From 0 up to the last tick.
    Linear,
    /// Logarithmic, for values that span more than [`LOG_SPAN`] times.
    Log,
}

/// One panel's value axis: its scale, its ends and where the ticks go, in nanoseconds.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    /// Linear or logarithmic.
    pub scale: Scale,
    /// The value at the left end (0 for a linear axis).
    pub lo: f64,
    /// The value at the right end.
    pub hi: f64,
    /// Gridline values, ascending, all within `lo..=hi`.
    pub ticks: Vec<f64>,
}

impl Axis {
    /// The axis for bars at `medians` with whiskers reaching down to `lows` and up to `highs`:
    /// logarithmic when the largest median is more than [`LOG_SPAN`] times the smallest,
    /// otherwise linear from 0. Values that are not positive and finite are ignored.
    pub fn fit(medians: &[f64], lows: &[f64], highs: &[f64]) -> Self {
        let positive = |xs: &[f64]| -> Vec<f64> {
            xs.iter()
                .copied()
                .filter(|x| x.is_finite() && *x > 0.0)
                .collect()
        };
        let (medians, lows, highs) = (positive(medians), positive(lows), positive(highs));
        let min_median = medians.iter().copied().fold(f64::INFINITY, f64::min);
        let max_median = medians.iter().copied().fold(0.0, f64::max);
        if max_median <= 0.0 {
            return Self::linear(1.0);
        }
        let highest = highs
            .iter()
            .copied()
            .filter(|&h| h <= WHISKER_ROOM * max_median)
            .fold(max_median, f64::max);
        let lowest = lows
            .iter()
            .copied()
            .filter(|&l| l >= min_median / WHISKER_ROOM)
            .fold(min_median, f64::min);
        if max_median > LOG_SPAN * min_median {
            Self::log(lowest, highest)
        } else {
            Self::linear(highest)
        }
    }

    /// A linear axis from 0 whose last tick is the first round step at or above `max`.
    fn linear(max: f64) -> Self {
        let step = nice_step(max / 5.0);
        let steps = (max / step - 1e-9).ceil().max(1.0) as u32;
        let ticks: Vec<f64> = (0..=steps).map(|k| f64::from(k) * step).collect();
        Self {
            scale: Scale::Linear,
            lo: 0.0,
            hi: f64::from(steps) * step,
            ticks,
        }
    }

    /// A log axis from below `min / 1.5` (so the shortest bar still shows) to a little above
    /// `max`. Up to three decades it starts at a 1-2-5 value and has ticks at 1, 2 and 5
    /// times each power of ten; wider, it starts at a power of ten and ticks only those.
    fn log(min: f64, max: f64) -> Self {
        let hi = max * 1.05;
        let (lo, mantissas): (f64, &[f64]) = if hi / (min / 1.5) <= 1_000.0 {
            (nice_floor(min / 1.5), &[1.0, 2.0, 5.0])
        } else {
            (10f64.powf((min / 1.5).log10().floor()), &[1.0])
        };
        let mut ticks = Vec::new();
        let mut decade = 10f64.powi(lo.log10().floor() as i32);
        while decade <= hi {
            for m in mantissas {
                let t = m * decade;
                // lo is itself a tick value: compare with slack for rounding.
                if t >= lo * (1.0 - 1e-9) && t <= hi {
                    ticks.push(t);
                }
            }
            decade *= 10.0;
        }
        Self {
            scale: Scale::Log,
            lo,
            hi,
            ticks,
        }
    }

    /// Where `value` sits between the left (0) and right (1) ends, clamped to that range.
    pub fn frac(&self, value: f64) -> f64 {
        let f = match self.scale {
            Scale::Linear => value / self.hi,
            Scale::Log if value > 0.0 => (value / self.lo).log10() / (self.hi / self.lo).log10(),
            Scale::Log => 0.0,
        };
        if f.is_nan() { 0.0 } else { f.clamp(0.0, 1.0) }
    }

    /// The axis caption, e.g. `time per operation (log scale)`.
    pub fn caption(&self) -> &'static str {
        match self.scale {
            Scale::Linear => "time per operation",
            Scale::Log => "time per operation (log scale)",
        }
    }
}

/// The smallest of 1, 2 and 5 times a power of ten that is at least `raw` (positive).
fn nice_step(raw: f64) -> f64 {
    let decade = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * decade)
        .find(|&s| s >= raw * (1.0 - 1e-9))
        .unwrap_or(10.0 * decade)
}

/// The largest of 1, 2 and 5 times a power of ten that is at most `x` (positive).
fn nice_floor(x: f64) -> f64 {
    let decade = 10f64.powf(x.log10().floor());
    [5.0, 2.0, 1.0]
        .into_iter()
        .map(|m| m * decade)
        .find(|&s| s <= x * (1.0 + 1e-9))
        .unwrap_or(decade)
}

/// `value` nanoseconds with three significant digits in the largest unit that keeps it at 1
/// or more: `11.0 ns`, `123 ns`, `1.23 µs`, `45.0 ms`. Not finite: `n/a`.
pub fn format_ns(value: f64) -> String {
    let (x, unit) = scaled(value);
    if !x.is_finite() {
        return "n/a".to_owned();
    }
    let digits = if x >= 100.0 {
        0
    } else if x >= 10.0 {
        1
    } else {
        2
    };
    format!("{x:.digits$} {unit}")
}

/// Like [`format_ns`] but without trailing zeros, for ticks: `0`, `50 ns`, `2.5 µs`.
pub fn format_tick(value: f64) -> String {
    if value == 0.0 {
        return "0".to_owned();
    }
    let s = format_ns(value);
    let Some((number, unit)) = s.split_once(' ') else {
        return s;
    };
    let number = if number.contains('.') {
        number.trim_end_matches('0').trim_end_matches('.')
    } else {
        number
    };
    format!("{number} {unit}")
}

/// `value` nanoseconds in ns, µs, ms or s, moving up a unit when three significant digits
/// would round it to 1000.
fn scaled(value: f64) -> (f64, &'static str) {
    const UNITS: [(f64, &str); 4] = [(1.0, "ns"), (1e3, "µs"), (1e6, "ms"), (1e9, "s")];
    let mut chosen = UNITS[0];
    for unit in UNITS {
        if value.abs() >= unit.0 * 0.9995 {
            chosen = unit;
        }
    }
    (value / chosen.0, chosen.1)
}

/// The label after a bar: the median, and for any variant but bridge its ratio to bridge's
/// median, e.g. `61.0 ns (5.45x)`.
pub fn value_label(variant: &str, median: f64, ratio_to_bridge: f64) -> String {
    if variant == BASELINE || !ratio_to_bridge.is_finite() {
        format_ns(median)
    } else {
        format!("{} ({ratio_to_bridge:.2}x)", format_ns(median))
    }
}

/// The label after a bar: [`value_label`], and under a background load the background's
/// throughput during the variant's batches over the baseline's, e.g. `61.0 ns (5.45x), bg 0.83x`.
fn bar_label(bar: &Bar) -> String {
    let label = value_label(&bar.variant, bar.median, bar.ratio);
    match bar.background {
        Some(b) if b.is_finite() => format!("{label}, bg {b:.2}x"),
        _ => label,
    }
}

/// A generous estimate of the width of `text` at `px` pixels in a sans-serif font: wide
/// enough that reserved space is not overrun, whatever font the viewer picks.
pub fn text_width(text: &str, px: f64) -> i32 {
    (text.chars().count() as f64 * px * 0.6).ceil() as i32
}

/// The colour of a variant's bar.
fn bar_color(variant: &str) -> RGBColor {
    if variant == BASELINE {
        BRIDGE
    } else if variant.starts_with("bridge ") || variant.starts_with("bridge::") {
        BRIDGE_OTHER
    } else {
        PEER
    }
}

/// A font for plotters' SVG backend at `px` pixels as the reader sees them.
fn font(px: f64, color: RGBColor, h: HPos, v: VPos) -> TextStyle<'static> {
    ("sans-serif", px * 1.24)
        .into_font()
        .color(&color)
        .pos(Pos::new(h, v))
}

fn bold(px: f64, color: RGBColor, h: HPos, v: VPos) -> TextStyle<'static> {
    ("sans-serif", px * 1.24, FontStyle::Bold)
        .into_font()
        .color(&color)
        .pos(Pos::new(h, v))
}

/// The lines under a panel's title, coloured: a goal met, a goal missed, or neutral.
fn panel_lines(panel: &Panel) -> Vec<(String, RGBColor)> {
    let color = |met: &Option<bool>| match met {
        Some(true) => MET,
        Some(false) => MISSED,
        None => MUTED,
    };
    panel
        .lines
        .iter()
        .map(|(text, met)| (text.clone(), color(met)))
        .collect()
}

/// Height of a panel, in pixels.
fn panel_height(panel: &Panel) -> i32 {
    let lines = panel.lines.len() as i32;
    24 + 17 * lines + 8 + ROW * panel.bars.len().max(1) as i32 + 26 + 22
}

/// The chart of one study as an SVG document.
pub fn svg(study: &str, reports: &[Panel]) -> io::Result<String> {
    let height = HEADER + reports.iter().map(panel_height).sum::<i32>() + 8;
    let mut out = String::new();
    {
        let root =
            SVGBackend::with_string(&mut out, (WIDTH as u32, height as u32)).into_drawing_area();
        draw(&root, study, reports).map_err(|e| io::Error::other(e.to_string()))?;
        root.present()
            .map_err(|e| io::Error::other(e.to_string()))?;
    }
    Ok(out)
}

/// Writes [`svg`] of `reports` to `path`, creating its parent directories.
pub fn write_svg(path: &Path, study: &str, reports: &[Panel]) -> io::Result<String> {
    let svg = svg(study, reports)?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(path, &svg)?;
    Ok(svg)
}

type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;
type DrawResult = Result<(), DrawingAreaErrorKind<io::Error>>;

fn draw(root: &Area<'_>, study: &str, reports: &[Panel]) -> DrawResult {
    root.fill(&WHITE)?;
    let rows = reports.iter().flat_map(|r| &r.bars);
    // Every panel shares one name column and one label column, so their axes line up.
    let names = rows
        .clone()
        .map(|r| text_width(&r.variant, BODY_PX))
        .max()
        .unwrap_or(60)
        .max(60);
    let labels = rows
        .clone()
        .map(|r| text_width(&bar_label(r), SMALL_PX))
        .max()
        .unwrap_or(60);
    let left = MARGIN + names + 12;
    // Room after the axis for an arrowhead and the longest label.
    let right = WIDTH - MARGIN - labels - 16;

    root.draw(&Text::new(
        format!("bridge-bench: the {study} study"),
        (MARGIN, 16),
        bold(TITLE_PX, INK, HPos::Left, VPos::Top),
    ))?;
    let rounds = rows.clone().map(|r| r.rounds).max().unwrap_or(0);
    let runs = rows.clone().map(|r| r.runs).max().unwrap_or(1);
    let explain = [
        if runs > 1 {
            format!(
                "Bar: median of {runs} runs' median times per operation ({rounds} rounds each). \
                 Whisker: fastest to slowest round of any run."
            )
        } else {
            format!(
                "Bar: median time per operation over {rounds} rounds. Whisker: fastest to \
                 slowest round (an arrowhead where it runs off the axis)."
            )
        },
        if rows.clone().any(|r| r.background.is_some()) {
            "Label: the median, its ratio to bridge's in brackets; bg: background work done \
             during its batches over the baseline's. Shorter is faster."
                .to_owned()
        } else {
            "Label: the median, and in brackets its ratio to bridge's median. Shorter is faster."
                .to_owned()
        },
    ];
    for (k, line) in explain.into_iter().enumerate() {
        root.draw(&Text::new(
            line,
            (MARGIN, 44 + 18 * k as i32),
            font(BODY_PX, MUTED, HPos::Left, VPos::Top),
        ))?;
    }
    let mut legend: Vec<(&str, RGBColor)> = vec![("bridge", BRIDGE)];
    if rows.clone().any(|r| bar_color(&r.variant) == BRIDGE_OTHER) {
        legend.push(("bridge, other settings", BRIDGE_OTHER));
    }
    legend.push(("peers and raw alternatives", PEER));
    let mut x = MARGIN;
    for (name, color) in legend {
        root.draw(&Rectangle::new([(x, 86), (x + 14, 98)], color.filled()))?;
        root.draw(&Text::new(
            name,
            (x + 20, 92),
            font(BODY_PX, INK, HPos::Left, VPos::Center),
        ))?;
        x += 20 + text_width(name, BODY_PX) + 24;
    }

    let mut top = HEADER;
    for report in reports {
        draw_panel(root, report, top, left, right)?;
        top += panel_height(report);
    }
    Ok(())
}

fn draw_panel(root: &Area<'_>, report: &Panel, top: i32, left: i32, right: i32) -> DrawResult {
    let rows = &report.bars;
    let pick = |f: fn(&Bar) -> f64| rows.iter().map(f).collect::<Vec<_>>();
    let axis = Axis::fit(&pick(|r| r.median), &pick(|r| r.min), &pick(|r| r.max));
    let px = |v: f64| left + (axis.frac(v) * f64::from(right - left)).round() as i32;

    // A rule above the panel, then its title and the caption of its axis.
    root.draw(&PathElement::new(
        vec![(MARGIN, top), (WIDTH - MARGIN, top)],
        GRID.stroke_width(1),
    ))?;
    root.draw(&Text::new(
        report.name.as_str(),
        (MARGIN, top + 8),
        bold(PANEL_PX, INK, HPos::Left, VPos::Top),
    ))?;
    root.draw(&Text::new(
        axis.caption(),
        (WIDTH - MARGIN, top + 10),
        font(SMALL_PX, MUTED, HPos::Right, VPos::Top),
    ))?;
    let mut y = top + 30;
    for (line, color) in panel_lines(report) {
        root.draw(&Text::new(
            line,
            (MARGIN, y),
            font(SMALL_PX, color, HPos::Left, VPos::Top),
        ))?;
        y += 17;
    }
    let bars_top = y + 8;
    let bars_bottom = bars_top + ROW * rows.len().max(1) as i32;

    // Gridlines with their tick labels under the bars.
    for &t in &axis.ticks {
        let x = px(t);
        root.draw(&PathElement::new(
            vec![(x, bars_top - 4), (x, bars_bottom + 2)],
            GRID.stroke_width(1),
        ))?;
        root.draw(&Text::new(
            format_tick(t),
            (x, bars_bottom + 6),
            font(SMALL_PX, MUTED, HPos::Center, VPos::Top),
        ))?;
    }
    root.draw(&PathElement::new(
        vec![(left, bars_top - 4), (left, bars_bottom + 2)],
        MUTED.stroke_width(1),
    ))?;
    if rows.is_empty() {
        root.draw(&Text::new(
            "no results",
            (left + 8, bars_top + ROW / 2),
            font(BODY_PX, MUTED, HPos::Left, VPos::Center),
        ))?;
        return Ok(());
    }

    // bridge's median as a thin line across the panel, to hold every bar against.
    if let Some(b) = rows.iter().find(|r| r.variant == BASELINE) {
        let x = px(b.median);
        root.draw(&PathElement::new(
            vec![(x, bars_top - 4), (x, bars_bottom + 2)],
            BRIDGE.mix(0.5).stroke_width(1),
        ))?;
    }

    for (i, row) in rows.iter().enumerate() {
        let mid = bars_top + ROW * i as i32 + ROW / 2;
        let style = if row.variant == BASELINE { bold } else { font };
        root.draw(&Text::new(
            row.variant.as_str(),
            (left - 10, mid),
            style(BODY_PX, INK, HPos::Right, VPos::Center),
        ))?;
        let (x_med, x_min, x_max) = (px(row.median), px(row.min), px(row.max));
        root.draw(&Rectangle::new(
            [
                (left + 1, mid - BAR / 2),
                (x_med.max(left + 2), mid + BAR / 2),
            ],
            bar_color(&row.variant).filled(),
        ))?;
        let whisker = WHISKER.stroke_width(1);
        root.draw(&PathElement::new(vec![(x_min, mid), (x_max, mid)], whisker))?;
        // A cap at each end, or an arrowhead where the whisker runs off the axis.
        let off_axis = row.max > axis.hi;
        root.draw(&PathElement::new(
            vec![(x_min, mid - 4), (x_min, mid + 4)],
            whisker,
        ))?;
        let end = if off_axis {
            root.draw(&Polygon::new(
                vec![(x_max, mid - 4), (x_max + 7, mid), (x_max, mid + 4)],
                WHISKER.filled(),
            ))?;
            x_max + 7
        } else {
            root.draw(&PathElement::new(
                vec![(x_max, mid - 4), (x_max, mid + 4)],
                whisker,
            ))?;
            x_max
        };
        root.draw(&PathElement::new(
            vec![(x_med, mid - BAR / 2 - 2), (x_med, mid + BAR / 2 + 2)],
            WHISKER.stroke_width(2),
        ))?;
        root.draw(&Text::new(
            bar_label(row),
            (end.max(x_med) + 7, mid),
            font(SMALL_PX, INK, HPos::Left, VPos::Center),
        ))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axes_are_linear_from_zero_or_log_past_thirty_times() {
        let axis = Axis::fit(&[11.0, 60.0], &[10.0, 55.0], &[12.0, 70.0]);
        assert_eq!((axis.scale, axis.hi), (Scale::Linear, 80.0));
        assert_eq!(axis.ticks, vec![0.0, 20.0, 40.0, 60.0, 80.0]);
        assert_eq!(axis.frac(40.0), 0.5);
        assert_eq!(Axis::fit(&[10.0, 290.0], &[], &[]).scale, Scale::Linear);
        let axis = Axis::fit(&[10.0, 310.0], &[9.0, 300.0], &[12.0, 400.0]);
        assert_eq!((axis.scale, axis.lo), (Scale::Log, 5.0));
        assert_eq!(axis.ticks, vec![5.0, 10.0, 20.0, 50.0, 100.0, 200.0]);
        let wide = Axis::fit(&[20.0, 80_000.0], &[15.0], &[95_000.0]);
        assert_eq!(wide.ticks, vec![10.0, 100.0, 1e3, 1e4]);
        // A slow round far past the bars does not stretch the axis.
        assert_eq!(
            Axis::fit(&[10.0, 20.0], &[9.0, 19.0], &[12.0, 500.0]).hi,
            20.0
        );
        assert_eq!(Axis::fit(&[f64::NAN], &[], &[0.0]).ticks.last(), Some(&1.0));
    }

    #[test]
    fn nanoseconds_print_with_three_significant_digits() {
        assert_eq!(format_ns(5.456), "5.46 ns");
        assert_eq!(format_ns(123.4), "123 ns");
        assert_eq!(format_ns(999.6), "1.00 µs");
        assert_eq!(format_ns(2.5e7), "25.0 ms");
        assert_eq!(format_ns(f64::NAN), "n/a");
        assert_eq!(format_tick(2_500.0), "2.5 µs");
        assert_eq!(value_label("tokio", 60.0, 5.4545), "60.0 ns (5.45x)");
    }

    #[test]
    fn the_svg_has_a_panel_per_scenario_and_a_label_per_bar() {
        let bar = |variant: &str, median, max| Bar {
            variant: variant.to_owned(),
            median,
            min: median * 0.9,
            max,
            ratio: median / 11.0,
            background: None,
            rounds: 3,
            runs: 1,
        };
        let panel = |name: &str| Panel {
            name: name.to_owned(),
            lines: vec![("bridge is fastest.".to_owned(), None)],
            bars: vec![
                bar("bridge", 11.0, 12.0),
                bar("a<b", 600.0, 700.0),
                bar("spiky", 600.0, 5e3),
            ],
        };
        let svg = svg("demo", &[panel("first"), panel("second")]).unwrap();
        assert!(svg.contains("bridge-bench: the demo study"));
        assert!(svg.contains("a&lt;b"));
        assert_eq!(svg.matches("600 ns (54.55x)").count(), 4);
        assert_eq!(svg.matches("time per operation (log scale)").count(), 2);
        // The spiky variant's slowest round is off the axis: an arrowhead, not a cap.
        assert_eq!(svg.matches("<polygon").count(), 2);
    }
}
