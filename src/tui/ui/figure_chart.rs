//! A figure's panel (`figures::Panel`) drawn as a ratatui `Chart`: lines,
//! points, histogram bars (as their step outline) and bands (their two edges)
//! become datasets in the theme's colours, with a distinct marker per series
//! so they stay apart without colour; reference marks (a target, a
//! threshold, the end of a warm-up) become dim horizontal or vertical lines.
//! Log axes are drawn in log10 units with 1eK labels. The panes and the files
//! written by `p` draw the same figure values: screen and file cannot disagree.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Chart, Dataset, GraphType, Paragraph};

use super::common::{num, pack};
use super::theme::{Theme, glyph};
use crate::figures::{self, Data, Mark, Panel, REFERENCE};

/// One dataset of a chart, in axis units (log10 on a log axis).
#[derive(Debug, Clone, PartialEq)]
pub struct ChartSeries {
    pub name: String,
    /// Palette slot (`figures::REFERENCE` for guides).
    pub color: usize,
    pub points: Vec<(f64, f64)>,
    pub scatter: bool,
    /// A reference line (from a mark, or a grey series): dim, drawn first.
    pub guide: bool,
    /// A horizontal or vertical mark's line ("│" in the legend when vertical).
    pub vertical: bool,
}

/// A panel resolved for the terminal: its series and both axes' bounds.
#[derive(Debug, Clone, PartialEq)]
pub struct PanelChart {
    pub series: Vec<ChartSeries>,
    pub x: [f64; 2],
    pub y: [f64; 2],
    pub x_label: String,
    pub x_log: bool,
    pub y_log: bool,
}

/// Axis units of a value: log10 on a log axis (None when it cannot be shown).
fn unit(log: bool, v: f64) -> Option<f64> {
    let t = if log {
        (v > 0.0).then(|| v.log10())?
    } else {
        v
    };
    t.is_finite().then_some(t)
}

fn points(log: [bool; 2], pts: impl IntoIterator<Item = [f64; 2]>) -> Vec<(f64, f64)> {
    pts.into_iter()
        .filter_map(|[x, y]| Some((unit(log[0], x)?, unit(log[1], y)?)))
        .collect()
}

/// The outline of histogram bars: up and down each bar from the axis.
fn steps(bars: &[figures::Bar]) -> Vec<[f64; 2]> {
    let mut out = Vec::with_capacity(bars.len() * 4);
    for (i, b) in bars.iter().enumerate() {
        let joined = i > 0 && bars[i - 1].x1 == b.x0;
        if !joined {
            out.push([b.x0, 0.0]);
        }
        out.push([b.x0, b.y]);
        out.push([b.x1, b.y]);
        let next_joined = bars.get(i + 1).is_some_and(|n| n.x0 == b.x1);
        if !next_joined {
            out.push([b.x1, 0.0]);
        }
    }
    out
}

/// Bounds on one axis: the fixed range where given (a NaN end from the data),
/// else the data's; never empty or flat. Log axes snap to whole decades.
fn bounds(axis: &figures::Axis, values: impl Iterator<Item = f64>) -> [f64; 2] {
    let (lo, hi) = values
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), v| {
            (l.min(v), h.max(v))
        });
    let fixed = |i: usize| {
        axis.range
            .and_then(|r| unit(axis.log, r[i]))
            .filter(|v| v.is_finite())
    };
    let (mut lo, mut hi) = (fixed(0).unwrap_or(lo), fixed(1).unwrap_or(hi));
    if !(lo.is_finite() && hi.is_finite()) {
        return [0.0, 1.0];
    }
    if axis.log {
        // `+ 0.0` turns −0 into 0: the label says 1e0, not 1e-0.
        lo = lo.floor() + 0.0;
        hi = hi.ceil().max(lo + 1.0) + 0.0;
    } else if hi - lo <= 1e-12 * lo.abs().max(1.0) {
        let pad = 0.5 * lo.abs().max(1.0);
        (lo, hi) = (lo - pad, hi + pad);
    }
    [lo, hi]
}

/// Resolves a panel: its series in axis units (NaN and ±inf left out) and
/// the marks as reference lines across the bounds.
pub fn resolve(panel: &Panel) -> PanelChart {
    let log = [panel.x.log, panel.y.log];
    let mut series = Vec::new();
    for s in &panel.series {
        let guide = s.style.color == REFERENCE;
        let one = |pts: Vec<(f64, f64)>, scatter: bool| ChartSeries {
            name: s.name.clone(),
            color: s.style.color,
            points: pts,
            scatter,
            guide,
            vertical: false,
        };
        match &s.data {
            Data::Line(p) => series.push(one(points(log, p.iter().copied()), false)),
            Data::Points(p) => series.push(one(points(log, p.iter().copied()), true)),
            Data::Bars(b) => series.push(one(points(log, steps(b)), false)),
            Data::Band { x, lo, hi } => {
                for edge in [lo, hi] {
                    let pts = x.iter().zip(edge).map(|(&a, &b)| [a, b]);
                    series.push(one(points(log, pts), false));
                }
            }
        }
    }
    let mark_x = panel.marks.iter().filter_map(|m| match m {
        Mark::VLine { x, .. } => unit(log[0], *x),
        Mark::HLine { .. } => None,
    });
    let mark_y = panel.marks.iter().filter_map(|m| match m {
        Mark::HLine { y, .. } => unit(log[1], *y),
        Mark::VLine { .. } => None,
    });
    let x = bounds(
        &panel.x,
        series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.0))
            .chain(mark_x),
    );
    let y = bounds(
        &panel.y,
        series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.1))
            .chain(mark_y),
    );
    for m in &panel.marks {
        let (pts, label, vertical) = match m {
            Mark::HLine { y: v, label } => match unit(log[1], *v) {
                Some(v) => (vec![(x[0], v), (x[1], v)], label, false),
                None => continue,
            },
            Mark::VLine { x: v, label } => match unit(log[0], *v) {
                Some(v) => (vec![(v, y[0]), (v, y[1])], label, true),
                None => continue,
            },
        };
        series.push(ChartSeries {
            name: label.clone(),
            color: REFERENCE,
            points: pts,
            scatter: false,
            guide: true,
            vertical,
        });
    }
    PanelChart {
        series,
        x,
        y,
        x_label: panel.x.label.clone(),
        x_log: log[0],
        y_log: log[1],
    }
}

/// The marker of the `k`-th data series (guides use the chosen marker).
fn marker(s: &ChartSeries, k: usize, theme: &Theme, markers: bool) -> Marker {
    if s.scatter {
        // Points as dots whatever the line marker.
        Marker::Dot
    } else if s.guide || !markers {
        theme.marker
    } else {
        theme.series_markers()[k % 3]
    }
}

fn style(s: &ChartSeries, theme: &Theme) -> Style {
    if s.guide {
        theme.dim()
    } else {
        theme.series(s.color)
    }
}

/// Tick label of an axis end (whole numbers without decimals).
fn label(v: f64, log: bool) -> String {
    if log {
        format!("1e{v:.0}")
    } else if v == v.round() && v.abs() < 1e9 {
        // Whole numbers without decimals: stages, sweeps, steps.
        format!("{v:.0}")
    } else {
        num(v)
    }
}

/// How a chart shows its axes and series.
#[derive(Debug, Clone, Copy, Default)]
pub struct Labels {
    /// The x axis' ends and its name between them.
    pub x: bool,
    /// Y labels padded to this width (charts stacked in a pane line up).
    pub y_width: usize,
    /// A marker per series (traces: readable without colour), or the
    /// chosen marker for all (curves told apart by colour and legend glyph).
    pub markers: bool,
}

impl Labels {
    /// A trace's chart: the x axis labelled, a marker per series.
    pub fn trace(y_width: usize) -> Labels {
        Labels {
            x: true,
            y_width,
            markers: true,
        }
    }
}

/// The y labels of a chart: its ends (½ between on a [0, 1] share axis).
pub fn y_labels(c: &PanelChart, width: usize) -> Vec<String> {
    let mut out = if c.y == [0.0, 1.0] && !c.y_log {
        vec!["0".to_string(), "½".to_string(), "1".to_string()]
    } else {
        vec![label(c.y[0], c.y_log), label(c.y[1], c.y_log)]
    };
    for l in &mut out {
        *l = format!("{l:>width$}");
    }
    out
}

/// The chart widget: guides first, then the series with the first on top.
pub fn chart<'a>(c: &'a PanelChart, theme: &Theme, labels: Labels) -> Chart<'a> {
    let mut ds = Vec::new();
    for s in c.series.iter().filter(|s| s.guide) {
        ds.push(dataset(s, theme.marker, theme));
    }
    let data: Vec<&ChartSeries> = c.series.iter().filter(|s| !s.guide).collect();
    for (k, s) in data.iter().enumerate().rev() {
        ds.push(dataset(s, marker(s, k, theme, labels.markers), theme));
    }
    let x_labels = if labels.x {
        vec![
            label(c.x[0], c.x_log),
            c.x_label.clone(),
            label(c.x[1], c.x_log),
        ]
    } else {
        Vec::new()
    };
    Chart::new(ds)
        .x_axis(
            Axis::default()
                .bounds(c.x)
                .labels(x_labels)
                .style(theme.dim()),
        )
        .y_axis(
            Axis::default()
                .bounds(c.y)
                .labels(y_labels(c, labels.y_width))
                .style(theme.dim()),
        )
}

fn dataset<'a>(s: &'a ChartSeries, marker: Marker, theme: &Theme) -> Dataset<'a> {
    Dataset::default()
        .data(&s.points)
        .graph_type(if s.scatter {
            GraphType::Scatter
        } else {
            GraphType::Line
        })
        .marker(marker)
        .style(style(s, theme))
}

/// Legend spans of one or more charts drawn with `markers` (as `Labels`):
/// each data series' marker glyph and name in its colour (a band's two edges
/// once), then the guides dim (each label once).
pub fn legend_of(charts: &[&PanelChart], theme: &Theme, markers: bool) -> Vec<Span<'static>> {
    let mut out = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for c in charts {
        let data = c.series.iter().filter(|s| !s.guide);
        for (k, s) in data.enumerate() {
            if seen.contains(&s.name.as_str()) || s.name.is_empty() {
                continue;
            }
            seen.push(&s.name);
            let g = if s.scatter {
                "•"
            } else {
                glyph(marker(s, k, theme, markers))
            };
            out.push(Span::styled(format!("{g} {} ", s.name), style(s, theme)));
        }
    }
    for s in charts.iter().flat_map(|c| &c.series) {
        if !s.guide || s.name.is_empty() || seen.contains(&s.name.as_str()) {
            continue;
        }
        seen.push(&s.name);
        let g = if s.vertical { "│" } else { "─" };
        out.push(Span::styled(format!("{g} {} ", s.name), theme.dim()));
    }
    out
}

/// The legend of `charts` in lines of at most `width` columns (an entry never
/// split), so a narrow pane wraps it rather than cutting it.
pub fn legend_lines(charts: &[&PanelChart], theme: &Theme, width: u16) -> Vec<Line<'static>> {
    let groups = legend_of(charts, theme, true)
        .into_iter()
        .map(|s| vec![s])
        .collect();
    pack(groups, width as usize, 0)
}

/// The legend of one trace chart (a marker per series).
pub fn legend(c: &PanelChart, theme: &Theme) -> Vec<Span<'static>> {
    legend_of(&[c], theme, true)
}

/// Two charts stacked in a pane (a trace and, with room, a second measure
/// below it on the same x), their y labels padded to one width so the x axes
/// line up, and one legend for both (`stacked_legend_height` lines).
pub fn stacked(
    frame: &mut Frame,
    [top, bottom]: [Option<&PanelChart>; 2],
    [top_area, bottom_area, legend_area]: [Rect; 3],
    two: bool,
    theme: &Theme,
) {
    let bottom = bottom.filter(|_| two);
    let width = top
        .iter()
        .chain(&bottom)
        .flat_map(|c| y_labels(c, 0))
        .map(|l| l.chars().count())
        .max()
        .unwrap_or(0);
    for (c, area, x) in [(top, top_area, true), (bottom, bottom_area, false)] {
        let Some(c) = c else { continue };
        if area.height >= 3 && area.width >= 12 {
            let labels = Labels {
                x,
                ..Labels::trace(width)
            };
            frame.render_widget(chart(c, theme, labels), area);
        }
    }
    let charts: Vec<&PanelChart> = [top, bottom].into_iter().flatten().collect();
    let lines = legend_lines(&charts, theme, legend_area.width);
    frame.render_widget(Paragraph::new(lines), legend_area);
}

/// The lines `stacked`'s legend takes at `width`.
pub fn stacked_legend_height(
    charts: [Option<&PanelChart>; 2],
    two: bool,
    theme: &Theme,
    width: u16,
) -> u16 {
    let [top, bottom] = charts;
    let charts: Vec<&PanelChart> = [top, bottom.filter(|_| two)]
        .into_iter()
        .flatten()
        .collect();
    legend_lines(&charts, theme, width).len() as u16
}

/// A bar chart's categories with their heights (the inclusion pane's rows).
pub fn bars(panel: &Panel) -> Vec<(String, f64)> {
    let Some(Data::Bars(b)) = panel.series.first().map(|s| &s.data) else {
        return Vec::new();
    };
    panel
        .x
        .categories
        .iter()
        .zip(b)
        .map(|(n, b)| (n.clone(), b.y))
        .collect()
}

#[cfg(test)]
mod tests;
