//! A study's results as one SVG chart: a panel per scenario, a bar per variant at its median
//! with a min-max whisker. Text is left to the viewer's sans-serif font, so the layout
//! reserves room with [`text_width`] rather than plotters' text measurement.

use crate::report::{Row, ScenarioReport, find};
use crate::stats::{BASELINE, format_ns};
use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::io;
use std::ops::Range;

/// Width of the chart, its side margins and its header, in pixels.
const WIDTH: i32 = 960;
const MARGIN: i32 = 20;
const HEADER: i32 = 106;
/// Height of one variant's row, and the thickness of its bar.
const ROW: i32 = 24;
const BAR: i32 = 14;
/// Panels whose largest median is more than this many times their smallest get a log axis.
const LOG_SPAN: f64 = 30.0;
/// How many times past the medians a whisker may reach and still stretch the axis.
const WHISKER_ROOM: f64 = 2.0;

/// Text sizes in pixels as a reader sees them (see [`font`]).
const TITLE_PX: f64 = 20.0;
const PANEL_PX: f64 = 15.0;
const BODY_PX: f64 = 13.0;
const SMALL_PX: f64 = 12.0;
const TOP_LEFT: (HPos, VPos) = (HPos::Left, VPos::Top);
const CENTER_LEFT: (HPos, VPos) = (HPos::Left, VPos::Center);

const INK: RGBColor = RGBColor(33, 37, 41);
const MUTED: RGBColor = RGBColor(100, 106, 115);
const GRID: RGBColor = RGBColor(226, 229, 233);
/// bridge; bridge with other settings (`bridge ...` or `bridge::...`); the peers.
const BRIDGE: RGBColor = RGBColor(213, 94, 0);
const BRIDGE_OTHER: RGBColor = RGBColor(242, 172, 120);
const PEER: RGBColor = RGBColor(122, 140, 163);
const WHISKER: RGBColor = RGBColor(45, 45, 45);
const MET: RGBColor = RGBColor(0, 120, 60);
const MISSED: RGBColor = RGBColor(190, 30, 30);

/// One panel's value axis in nanoseconds: linear from 0, or log past [`LOG_SPAN`].
struct Axis {
    range: Range<f64>,
    log: bool,
}

impl Axis {
    /// The axis for bars at `medians` with whiskers from `lows` to `highs` (positive, finite
    /// values only; whiskers past [`WHISKER_ROOM`] times the bars do not stretch it).
    fn fit(medians: &[f64], lows: &[f64], highs: &[f64]) -> Self {
        let min_median = positive(medians).fold(f64::INFINITY, f64::min);
        let max_median = positive(medians).fold(0.0, f64::max);
        if max_median <= 0.0 {
            let (range, log) = (0.0..1.0, false);
            return Self { range, log };
        }
        let highest = positive(highs)
            .filter(|&h| h <= WHISKER_ROOM * max_median)
            .fold(max_median, f64::max);
        let lowest = positive(lows)
            .filter(|&l| l >= min_median / WHISKER_ROOM)
            .fold(min_median, f64::min);
        let log = max_median > LOG_SPAN * min_median;
        let low = if log { lowest / 1.5 } else { 0.0 };
        let range = low..highest * 1.05;
        Self { range, log }
    }

    /// Where `value` sits between `left` and `right`, clamped to that range.
    fn px(&self, value: f64, (left, right): (i32, i32)) -> i32 {
        let x = match self.log {
            false => RangedCoordf64::from(self.range.clone()).map(&value, (left, right)),
            true if value.is_nan() || value <= 0.0 => left,
            true => self.log_coord().map(&value, (left, right)),
        };
        x.clamp(left, right)
    }

    fn log_coord(&self) -> LogCoord<f64> {
        self.range.clone().log_scale().into()
    }

    /// The gridline values.
    fn ticks(&self) -> Vec<f64> {
        match self.log {
            false => RangedCoordf64::from(self.range.clone()).key_points(6),
            true => self.log_coord().key_points(8),
        }
    }

    fn caption(&self) -> &'static str {
        match self.log {
            false => "time per operation",
            true => "time per operation (log scale)",
        }
    }
}

fn positive(xs: &[f64]) -> impl Iterator<Item = f64> + '_ {
    xs.iter().copied().filter(|x| x.is_finite() && *x > 0.0)
}

/// Like [`format_ns`] but without trailing zeros, for ticks: `0`, `50 ns`, `2.5 µs`.
fn format_tick(value: f64) -> String {
    if value == 0.0 {
        return "0".to_owned();
    }
    let s = format_ns(value);
    match s.split_once(' ') {
        Some((number, unit)) if number.contains('.') => {
            let number = number.trim_end_matches('0').trim_end_matches('.');
            format!("{number} {unit}")
        }
        _ => s,
    }
}

/// The label after a bar, e.g. `61.0 ns (5.45x), bg 0.83x`.
fn bar_label(row: &Row) -> String {
    let mut label = format_ns(row.ns.median);
    if row.variant != BASELINE && row.ratio_to_bridge.is_finite() {
        label += &format!(" ({:.2}x)", row.ratio_to_bridge);
    }
    match row.background.as_ref().map(|b| b.vs_idle) {
        Some(bg) if bg.is_finite() => format!("{label}, bg {bg:.2}x"),
        _ => label,
    }
}

/// A generous estimate of the width of `text` at `px` pixels in any sans-serif font.
fn text_width(text: &str, px: f64) -> i32 {
    (text.chars().count() as f64 * px * 0.6).ceil() as i32
}

fn bar_color(variant: &str) -> RGBColor {
    if variant == BASELINE {
        BRIDGE
    } else if variant.starts_with("bridge ") || variant.starts_with("bridge::") {
        BRIDGE_OTHER
    } else {
        PEER
    }
}

/// A font at `px` pixels as seen: plotters' SVG backend divides font sizes by 1.24.
fn font(px: f64, color: RGBColor, (h, v): (HPos, VPos), bold: bool) -> TextStyle<'static> {
    let style = [FontStyle::Normal, FontStyle::Bold][usize::from(bold)];
    let font = ("sans-serif", px * 1.24, style).into_font();
    font.color(&color).pos(Pos::new(h, v))
}

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;
type DrawResult = Result<(), DrawingAreaErrorKind<io::Error>>;

fn text(root: &Area<'_>, s: &str, at: (i32, i32), style: TextStyle<'_>) -> DrawResult {
    root.draw(&Text::new(s, at, style))
}

fn line(root: &Area<'_>, from: (i32, i32), to: (i32, i32), style: ShapeStyle) -> DrawResult {
    root.draw(&PathElement::new(vec![from, to], style))
}

/// The lines under a panel's title: the ranking, then each goal's verdict, coloured.
fn panel_lines(report: &ScenarioReport) -> Vec<(String, RGBColor)> {
    let mut lines = vec![(report.ranking(), MUTED)];
    lines.extend(report.verdicts().into_iter().map(|(text, met)| match met {
        Some(true) => (format!("Goal met: {text}"), MET),
        Some(false) => (format!("Goal not met on this machine: {text}"), MISSED),
        None => (format!("Goal not measured: {text}"), MISSED),
    }));
    lines
}

fn panel_height(report: &ScenarioReport) -> i32 {
    let lines = panel_lines(report).len() as i32;
    24 + 17 * lines + 8 + ROW * report.rows.len().max(1) as i32 + 26 + 22
}

/// The chart of one study, a panel per scenario, as an SVG document.
pub fn svg(study: &str, reports: &[ScenarioReport]) -> io::Result<String> {
    let height = HEADER + reports.iter().map(panel_height).sum::<i32>() + 8;
    let mut out = String::new();
    {
        let size = (WIDTH as u32, height as u32);
        let root = SVGBackend::with_string(&mut out, size).into_drawing_area();
        let drawn = draw(&root, study, reports).and_then(|()| root.present());
        drawn.map_err(|e| io::Error::other(e.to_string()))?;
    }
    Ok(out)
}

fn draw(root: &Area<'_>, study: &str, reports: &[ScenarioReport]) -> DrawResult {
    root.fill(&WHITE)?;
    let rows = || reports.iter().flat_map(|r| &r.rows);
    // One name column and one label column for every panel, so that the axes line up.
    let names = rows().map(|r| text_width(&r.variant, BODY_PX)).max();
    let labels = rows().map(|r| text_width(&bar_label(r), SMALL_PX)).max();
    let left = MARGIN + names.unwrap_or(60).max(60) + 12;
    // Room after the axis for an arrowhead and the longest label.
    let right = WIDTH - MARGIN - labels.unwrap_or(60) - 16;
    let title = format!("bridge-bench: the {study} study");
    let style = font(TITLE_PX, INK, TOP_LEFT, true);
    text(root, &title, (MARGIN, 16), style)?;
    let rounds = rows().map(|r| r.rounds).max().unwrap_or(0);
    let runs = rows().map(|r| r.run_medians.len()).max().unwrap_or(1);
    let background = rows().any(|r| r.background.is_some());
    let bar = if runs > 1 {
        format!(
            "Bar: median of {runs} runs' median times per operation ({rounds} rounds each). \
             Whisker: fastest to slowest round of any run."
        )
    } else {
        format!(
            "Bar: median time per operation over {rounds} rounds. Whisker: fastest to slowest \
             round (an arrowhead where it runs off the axis)."
        )
    };
    let label = if background {
        "Label: the median, its ratio to bridge's in brackets; bg: background work done during \
         its batches over the baseline's. Shorter is faster."
    } else {
        "Label: the median, and in brackets its ratio to bridge's median. Shorter is faster."
    };
    for (k, line) in [bar.as_str(), label].into_iter().enumerate() {
        let style = font(BODY_PX, MUTED, TOP_LEFT, false);
        text(root, line, (MARGIN, 44 + 18 * k as i32), style)?;
    }
    let mut legend = vec![("bridge", BRIDGE)];
    if rows().any(|r| bar_color(&r.variant) == BRIDGE_OTHER) {
        legend.push(("bridge, other settings", BRIDGE_OTHER));
    }
    legend.push(("peers and raw alternatives", PEER));
    let mut x = MARGIN;
    for (name, color) in legend {
        root.draw(&Rectangle::new([(x, 86), (x + 14, 98)], color.filled()))?;
        let style = font(BODY_PX, INK, CENTER_LEFT, false);
        text(root, name, (x + 20, 92), style)?;
        x += 20 + text_width(name, BODY_PX) + 24;
    }
    let mut top = HEADER;
    for report in reports {
        draw_panel(root, report, top, (left, right))?;
        top += panel_height(report);
    }
    Ok(())
}

fn draw_panel(root: &Area<'_>, report: &ScenarioReport, top: i32, ends: (i32, i32)) -> DrawResult {
    let (rows, left) = (&report.rows, ends.0);
    let pick = |f: fn(&Row) -> f64| rows.iter().map(f).collect::<Vec<_>>();
    let (medians, mins, maxes) = (
        pick(|r| r.ns.median),
        pick(|r| r.ns.min),
        pick(|r| r.ns.max),
    );
    let axis = Axis::fit(&medians, &mins, &maxes);
    let px = |v: f64| axis.px(v, ends);
    let grid = GRID.stroke_width(1);
    // A rule above the panel, then its title and the caption of its axis.
    line(root, (MARGIN, top), (WIDTH - MARGIN, top), grid)?;
    let title = font(PANEL_PX, INK, TOP_LEFT, true);
    text(root, report.name, (MARGIN, top + 8), title)?;
    let caption = font(SMALL_PX, MUTED, (HPos::Right, VPos::Top), false);
    text(root, axis.caption(), (WIDTH - MARGIN, top + 10), caption)?;
    let mut y = top + 30;
    for (line, color) in panel_lines(report) {
        let style = font(SMALL_PX, color, TOP_LEFT, false);
        text(root, &line, (MARGIN, y), style)?;
        y += 17;
    }
    let bars_top = y + 8;
    let bars_bottom = bars_top + ROW * rows.len().max(1) as i32;
    let (span_top, span_bottom) = (bars_top - 4, bars_bottom + 2);
    // Gridlines with their tick labels under the bars.
    for t in axis.ticks() {
        let x = px(t);
        line(root, (x, span_top), (x, span_bottom), grid)?;
        let style = font(SMALL_PX, MUTED, (HPos::Center, VPos::Top), false);
        text(root, &format_tick(t), (x, bars_bottom + 6), style)?;
    }
    let axis_line = MUTED.stroke_width(1);
    line(root, (left, span_top), (left, span_bottom), axis_line)?;
    if rows.is_empty() {
        let style = font(BODY_PX, MUTED, CENTER_LEFT, false);
        return text(root, "no results", (left + 8, bars_top + ROW / 2), style);
    }
    // bridge's median as a thin line across the panel, to hold every bar against.
    if let Some(b) = find(rows, BASELINE) {
        let (x, style) = (px(b.ns.median), BRIDGE.mix(0.5).stroke_width(1));
        line(root, (x, span_top), (x, span_bottom), style)?;
    }
    let whisker = WHISKER.stroke_width(1);
    for (i, row) in rows.iter().enumerate() {
        let mid = bars_top + ROW * i as i32 + ROW / 2;
        let bold = row.variant == BASELINE;
        let name = font(BODY_PX, INK, (HPos::Right, VPos::Center), bold);
        text(root, &row.variant, (left - 10, mid), name)?;
        let (x_med, x_min, x_max) = (px(row.ns.median), px(row.ns.min), px(row.ns.max));
        let bar = [
            (left + 1, mid - BAR / 2),
            (x_med.max(left + 2), mid + BAR / 2),
        ];
        root.draw(&Rectangle::new(bar, bar_color(&row.variant).filled()))?;
        line(root, (x_min, mid), (x_max, mid), whisker)?;
        // A cap at each end, or an arrowhead where the whisker runs off the axis.
        line(root, (x_min, mid - 4), (x_min, mid + 4), whisker)?;
        let end = if row.ns.max > axis.range.end {
            let head = vec![(x_max, mid - 4), (x_max + 7, mid), (x_max, mid + 4)];
            root.draw(&Polygon::new(head, WHISKER.filled()))?;
            x_max + 7
        } else {
            line(root, (x_max, mid - 4), (x_max, mid + 4), whisker)?;
            x_max
        };
        let median = ((x_med, mid - BAR / 2 - 2), (x_med, mid + BAR / 2 + 2));
        line(root, median.0, median.1, WHISKER.stroke_width(2))?;
        let style = font(SMALL_PX, INK, CENTER_LEFT, false);
        text(root, &bar_label(row), (end.max(x_med) + 7, mid), style)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::Measurement;

    #[test]
    fn axes_are_linear_from_zero_or_log_past_thirty_times() {
        let axis = Axis::fit(&[11.0, 60.0], &[10.0, 55.0], &[12.0, 70.0]);
        assert_eq!(axis.caption(), "time per operation");
        assert_eq!(axis.px(0.0, (0, 100)), 0);
        assert!(axis.range.end >= 70.0 && axis.ticks().len() >= 3);
        let log = Axis::fit(&[10.0, 310.0], &[9.0, 300.0], &[12.0, 400.0]);
        assert_eq!(log.caption(), "time per operation (log scale)");
        assert_eq!(log.ticks(), vec![10.0, 100.0]);
        // A slow round far past the bars does not stretch the axis.
        let spiky = Axis::fit(&[10.0, 20.0], &[9.0, 19.0], &[12.0, 500.0]);
        assert!((spiky.range.end - 21.0).abs() < 1e-9);
        assert_eq!(Axis::fit(&[f64::NAN], &[], &[0.0]).range.end, 1.0);
    }

    #[test]
    fn nanoseconds_print_with_three_significant_digits() {
        assert_eq!(format_ns(5.456), "5.46 ns");
        assert_eq!(format_ns(123.4), "123 ns");
        assert_eq!(format_ns(999.6), "1.00 µs");
        assert_eq!(format_ns(2.5e7), "25.0 ms");
        assert_eq!(format_ns(f64::NAN), "n/a");
        assert_eq!(format_tick(2_500.0), "2.5 µs");
    }

    #[test]
    fn the_svg_has_a_panel_per_scenario_and_a_label_per_bar() {
        let m = Measurement::of(
            3,
            [
                ("bridge", vec![10.0, 11.0, 12.0]),
                ("a<b", vec![540.0, 600.0, 700.0]),
                ("spiky", vec![540.0, 600.0, 5e3]),
            ],
        );
        let panel = |name| ScenarioReport::of(name, &m);
        let svg = svg("demo", &[panel("first"), panel("second")]).unwrap();
        assert!(svg.contains("bridge-bench: the demo study"));
        assert!(svg.contains("a&lt;b"));
        assert_eq!(svg.matches("600 ns (54.55x)").count(), 4);
        assert_eq!(svg.matches("time per operation (log scale)").count(), 2);
        // The spiky variant's slowest round is off the axis: an arrowhead, not a cap.
        assert_eq!(svg.matches("<polygon").count(), 2);
    }
}
