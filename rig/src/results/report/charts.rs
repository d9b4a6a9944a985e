//! The report's plots, drawn with `plotters` into SVG strings that are
//! inlined in the page (no files, no scripts).
//!
//! Every time plot shades the fault intervals and labels them, the way
//! Jepsen's latency plots draw the nemesis' activity as bars behind the
//! operations; the times the job was down (failure → restart) are shaded
//! grey behind them.
use plotters::chart::MeshStyle;
use plotters::coord::ranged1d::{AsRangedCoord, Ranged};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

use super::data::{Band, Checkpoint, Mark};

/// Pixel size of one plot (a column of the side-by-side grid; CSS scales it).
pub const WIDTH: u32 = 460;
pub const HEIGHT: u32 = 230;

/// Fault bands: a red that stays readable under points.
pub const FAULT: RGBColor = RGBColor(220, 50, 47);
pub const FAULT_TEXT: RGBColor = RGBColor(150, 20, 20);
pub const DOWN: RGBColor = RGBColor(120, 120, 120);
const GRID: RGBColor = RGBColor(228, 228, 228);
const FONT: &str = "sans-serif";

/// How a layer is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    Dot,
    Triangle,
    Cross,
    /// A line through the points, broken where they are more than
    /// `gap_s` apart (a window without samples is not a straight line).
    Line,
}

/// One series of a plot.
#[derive(Debug, Clone)]
pub struct Layer {
    pub color: RGBColor,
    pub shape: Shape,
    pub points: Vec<(f64, f64)>,
}

/// What shades a time plot.
#[derive(Debug, Clone, Copy, Default)]
pub struct Shading<'a> {
    pub faults: &'a [Band],
    pub down: &'a [Band],
}

type Chart<'a, 'b, Y> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, Y>>;

fn err<E: std::fmt::Debug>(e: E) -> anyhow::Error {
    anyhow::anyhow!("drawing a plot: {e:?}")
}

/// Milliseconds as a short label with three significant digits: `250 µs`,
/// `20.5 ms`, `12.1 s`.
pub fn fmt_ms(v: f64) -> String {
    let sig = |x: f64| {
        let d = if x < 10.0 {
            2
        } else if x < 100.0 {
            1
        } else {
            0
        };
        let s = format!("{x:.d$}");
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    };
    if v >= 1000.0 {
        format!("{} s", sig(v / 1000.0))
    } else if v >= 1.0 {
        format!("{} ms", sig(v))
    } else {
        format!("{} µs", sig(v * 1000.0))
    }
}

/// An axis number without a useless fraction: `5`, `2.5`, `4000`.
fn fmt_num(v: &f64) -> String {
    if v.fract().abs() < 1e-9 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// A log-scale range in ms covering `values` (µs), at whole powers of ten.
pub fn log_range_ms(values: impl Iterator<Item = u64>) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::MAX, 0f64);
    for v in values {
        let ms = (v as f64 / 1000.0).max(0.001);
        lo = lo.min(ms);
        hi = hi.max(ms);
    }
    if hi <= 0.0 {
        return (0.1, 100.0);
    }
    let mut lo = 10f64.powf(lo.log10().floor());
    let hi = 10f64.powf((hi * 1.01).log10().ceil());
    // At least two decades, so a metric with little spread is not pressed
    // against an edge.
    while hi / lo < 99.0 {
        lo /= 10.0;
    }
    (lo, hi)
}

/// Whole decades between `y.0` and `y.1`: asking plotters for that many
/// labels on a log axis gives one per power of ten and no crowded minor ones.
fn decades(y: (f64, f64)) -> usize {
    ((y.1 / y.0).log10().round() as usize).max(1)
}

/// Draws the shading and labels the faults; x in seconds.
fn shade<Y: Ranged<ValueType = f64>>(
    chart: &mut Chart<'_, '_, Y>,
    s: Shading<'_>,
    x_max: f64,
    y: (f64, f64),
) -> anyhow::Result<()> {
    // A moment (a kill) is still drawn, a few pixels wide.
    let min_w = x_max * 4.0 / f64::from(WIDTH);
    let span = |b: &Band| {
        let end = b.end_s.unwrap_or(b.start_s).max(b.start_s + min_w).min(x_max);
        (b.start_s.min(x_max), end)
    };
    chart
        .draw_series(s.down.iter().map(|b| {
            let (a, z) = span(b);
            Rectangle::new([(a, y.0), (z, y.1)], DOWN.mix(0.12).filled())
        }))
        .map_err(err)?;
    chart
        .draw_series(s.faults.iter().map(|b| {
            let (a, z) = span(b);
            Rectangle::new([(a, y.0), (z, y.1)], FAULT.mix(0.18).filled())
        }))
        .map_err(err)?;
    // Labels staggered so that overlapping faults stay readable.
    chart
        .draw_series(s.faults.iter().enumerate().map(|(i, b)| {
            let (a, _) = span(b);
            EmptyElement::at((a, y.1))
                + Text::new(b.label.clone(), (3, 3 + 15 * (i as i32 % 4)), (FONT, 15).into_font().color(&FAULT_TEXT))
        }))
        .map_err(err)?;
    Ok(())
}

fn draw_layers<Y: Ranged<ValueType = f64>>(
    chart: &mut Chart<'_, '_, Y>,
    layers: &[Layer],
    gap_s: f64,
) -> anyhow::Result<()> {
    for l in layers {
        let c = l.color;
        match l.shape {
            Shape::Dot => {
                chart.draw_series(l.points.iter().map(|p| Circle::new(*p, 2, c.filled()))).map_err(err)?;
            }
            Shape::Triangle => {
                chart.draw_series(l.points.iter().map(|p| TriangleMarker::new(*p, 4, c.filled()))).map_err(err)?;
            }
            Shape::Cross => {
                chart.draw_series(l.points.iter().map(|p| Cross::new(*p, 4, c.stroke_width(2)))).map_err(err)?;
            }
            Shape::Line => {
                for seg in segments(&l.points, gap_s) {
                    chart.draw_series(LineSeries::new(seg, c.stroke_width(1))).map_err(err)?;
                }
            }
        }
    }
    Ok(())
}

/// Splits points (sorted by x) where consecutive ones are more than `gap` apart.
pub fn segments(points: &[(f64, f64)], gap: f64) -> Vec<Vec<(f64, f64)>> {
    let mut out: Vec<Vec<(f64, f64)>> = Vec::new();
    for p in points {
        match out.last_mut() {
            Some(seg) if seg.last().is_some_and(|q| p.0 - q.0 <= gap) => seg.push(*p),
            _ => out.push(vec![*p]),
        }
    }
    out
}

/// The frame every chart shares: white, the same margins and label areas, x
/// from 0 to `x_max`, and whatever y coordinate the chart needs (linear or log).
fn chart_on<'a, 'b, Y: AsRangedCoord<Value = f64>>(
    root: &'a DrawingArea<SVGBackend<'b>, plotters::coord::Shift>,
    x_max: f64,
    y: Y,
) -> anyhow::Result<ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, Y::CoordDescType>>> {
    ChartBuilder::on(root)
        .margin(8)
        .margin_right(20)
        .x_label_area_size(30)
        .y_label_area_size(58)
        .build_cartesian_2d(0f64..x_max, y)
        .map_err(err)
}

/// The grid and label style every chart shares.
fn house_style<'m, 'a, 'b, X: Ranged, Y: Ranged, DB: DrawingBackend>(
    mesh: &'m mut MeshStyle<'a, 'b, X, Y, DB>,
) -> &'m mut MeshStyle<'a, 'b, X, Y, DB> {
    mesh.light_line_style(WHITE).bold_line_style(GRID).label_style((FONT, 14)).axis_desc_style((FONT, 14))
}

/// Latency over time: y in ms on a log scale, x in s since the job started.
pub fn latency_over_time(layers: &[Layer], x_max: f64, y: (f64, f64), s: Shading<'_>) -> anyhow::Result<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = chart_on(&root, x_max, (y.0..y.1).log_scale())?;
        house_style(&mut chart.configure_mesh())
            .x_desc("s since the job started")
            .x_label_formatter(&fmt_num)
            .y_labels(decades(y))
            .y_label_formatter(&|v| fmt_ms(*v))
            .draw()
            .map_err(err)?;
        shade(&mut chart, s, x_max, y)?;
        draw_layers(&mut chart, layers, 1.5)?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// Percentile curves: x = log10(1 / (1 − q)) so 90 %, 99 %, 99.9 % are
/// evenly spaced (HdrHistogram's percentile plots), y in ms on a log scale.
pub fn percentiles(layers: &[Layer], x_max: f64, y: (f64, f64)) -> anyhow::Result<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = chart_on(&root, x_max, (y.0..y.1).log_scale())?;
        house_style(&mut chart.configure_mesh())
            .x_labels(x_max.round() as usize + 1)
            .x_label_formatter(&|x| percentile_label(*x))
            .x_desc("percentile")
            .y_labels(decades(y))
            .y_label_formatter(&|v| fmt_ms(*v))
            .draw()
            .map_err(err)?;
        draw_layers(&mut chart, layers, f64::INFINITY)?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// `0` → `0%`, `1` → `90%`, `2` → `99%`, `3` → `99.9%`.
pub fn percentile_label(x: f64) -> String {
    if x.fract().abs() > 1e-9 {
        return String::new();
    }
    let q = 100.0 * (1.0 - 10f64.powf(-x));
    let s = format!("{q:.4}");
    format!("{}%", s.trim_end_matches('0').trim_end_matches('.'))
}

/// Committed records per second (bars) and acknowledged records per second (line).
pub fn throughput(committed: &[u64], acked: &[u64], x_max: f64, y_max: f64, s: Shading<'_>) -> anyhow::Result<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = chart_on(&root, x_max, 0f64..y_max)?;
        house_style(&mut chart.configure_mesh())
            .x_desc("s since the job started")
            .x_label_formatter(&fmt_num)
            .y_desc("records/s")
            .y_label_formatter(&fmt_num)
            .draw()
            .map_err(err)?;
        shade(&mut chart, s, x_max, (0.0, y_max))?;
        chart
            .draw_series(committed.iter().enumerate().filter(|(_, n)| **n > 0).map(|(i, n)| {
                let x = i as f64;
                Rectangle::new([(x + 0.1, 0.0), (x + 0.9, *n as f64)], COMMITTED.mix(0.75).filled())
            }))
            .map_err(err)?;
        let line: Vec<(f64, f64)> = acked.iter().enumerate().map(|(i, n)| (i as f64 + 0.5, *n as f64)).collect();
        chart.draw_series(LineSeries::new(line, ACKED.stroke_width(2))).map_err(err)?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}

pub const COMMITTED: RGBColor = RGBColor(38, 139, 210);
pub const ACKED: RGBColor = RGBColor(203, 75, 22);
pub const PERSISTED: RGBColor = RGBColor(38, 139, 210);
pub const NOTIFIED: RGBColor = RGBColor(108, 113, 196);
pub const OK: RGBColor = RGBColor(40, 150, 60);
pub const BAD: RGBColor = RGBColor(200, 30, 30);
pub const RESTORE: RGBColor = RGBColor(181, 137, 0);

/// The checkpoint timeline: one row per checkpoint id. A thick bar from
/// trigger to complete (persisted), a thin line on to the commit of its
/// transactions, markers for notified (triangle), committed (dot), dropped
/// or failed commits and aborts (crosses); failures (red) and restores
/// (ochre, labelled with the checkpoint restored from) as vertical lines.
pub fn checkpoints(
    ckpts: &[Checkpoint],
    failures: &[Mark],
    restores: &[Mark],
    x_max: f64,
    id_max: u64,
    s: Shading<'_>,
) -> anyhow::Result<String> {
    let mut svg = String::new();
    let y = (0.0, id_max as f64 + 1.0);
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = chart_on(&root, x_max, y.0..y.1)?;
        house_style(&mut chart.configure_mesh())
            .x_desc("s since the job started")
            .x_label_formatter(&fmt_num)
            .y_desc("checkpoint")
            .y_label_formatter(&|v| if v.fract() == 0.0 { format!("{v}") } else { String::new() })
            .draw()
            .map_err(err)?;
        shade(&mut chart, s, x_max, y)?;
        for (marks, color) in [(failures, BAD), (restores, RESTORE)] {
            chart
                .draw_series(
                    marks.iter().map(|m| PathElement::new(vec![(m.at_s, y.0), (m.at_s, y.1)], color.stroke_width(1))),
                )
                .map_err(err)?;
        }
        chart
            .draw_series(restores.iter().map(|m| {
                EmptyElement::at((m.at_s, y.0))
                    + Text::new(m.label.clone(), (3, -16), (FONT, 14).into_font().color(&RESTORE))
            }))
            .map_err(err)?;
        // A checkpoint completes in milliseconds: its bar gets a few pixels.
        let min_w = x_max * 4.0 / f64::from(WIDTH);
        for c in ckpts {
            let row = c.id as f64;
            if let (Some(a), Some(z)) = (c.triggered, c.persisted.or(c.aborted)) {
                let color = if c.persisted.is_some() { PERSISTED } else { BAD };
                chart
                    .draw_series(std::iter::once(PathElement::new(
                        vec![(a, row), (z.max(a + min_w), row)],
                        color.stroke_width(5),
                    )))
                    .map_err(err)?;
            }
            let end =
                [c.committed, c.commit_errors.iter().copied().reduce(f64::max)].into_iter().flatten().reduce(f64::max);
            if let (Some(p), Some(z)) = (c.persisted, end) {
                chart
                    .draw_series(std::iter::once(PathElement::new(vec![(p, row), (z, row)], DOWN.stroke_width(1))))
                    .map_err(err)?;
            }
            if let Some(n) = c.notified {
                chart.draw_series(std::iter::once(TriangleMarker::new((n, row), 4, NOTIFIED.filled()))).map_err(err)?;
            }
            if let Some(k) = c.committed {
                chart.draw_series(std::iter::once(Circle::new((k, row), 3, OK.filled()))).map_err(err)?;
            }
            let bad = c.commit_errors.iter().copied().chain(c.aborted);
            chart.draw_series(bad.map(|t| Cross::new((t, row), 5, BAD.stroke_width(2)))).map_err(err)?;
        }
        root.present().map_err(err)?;
    }
    Ok(svg)
}
