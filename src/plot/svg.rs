//! A figure drawn as SVG: title, subtitle and legend above the panels (so the
//! legend never covers data), then a grid of panels, each with its title,
//! framed plot area, ticks, grid lines, axis labels, series (clipped to the
//! plot area) and labelled reference marks. Elements carry classes (`panel`,
//! `tick`, `series`, `legend-entry`…) that tests and scripts can count.

use std::fmt::Write as _;

use super::scale::{Scale, scales};
use super::text::{FAMILY, escape, fit, width};
use super::{Size, color};
use crate::figures::{Dash, Data, Figure, Mark, Panel, REFERENCE, Swatch};

const MARGIN: f64 = 20.0;
const TITLE: f64 = 20.0;
const SMALL: f64 = 13.0;
const TICK: f64 = 12.0;
const LEGEND_ROW: f64 = 20.0;
/// Panel size of single-panel and multi-panel figures.
const SINGLE: (f64, f64) = (760.0, 560.0);
const MULTI: (f64, f64) = (440.0, 330.0);

fn dash(d: Dash) -> &'static str {
    match d {
        Dash::Solid => "",
        Dash::Dashed => r#" stroke-dasharray="9 5""#,
        Dash::Dotted => r#" stroke-dasharray="2 4""#,
        Dash::DashDot => r#" stroke-dasharray="10 4 2 4""#,
    }
}

fn text(out: &mut String, x: f64, y: f64, size: f64, attrs: &str, s: &str) {
    let _ = writeln!(
        out,
        r#"<text x="{x:.1}" y="{y:.1}" font-size="{size}" {attrs}>{}</text>"#,
        escape(s)
    );
}

/// A legend entry's name after its swatch, and the end of the entry.
fn entry_name(out: &mut String, x: f64, y: f64, name: &str, w: f64) {
    text(
        out,
        x + 34.0,
        y + 4.5,
        SMALL,
        r#"fill="black""#,
        &fit(name, SMALL, w - 2.0 * MARGIN - 40.0),
    );
    let _ = writeln!(out, "</g>");
}

/// The labels of the reference lines (targets, thresholds, a chosen grid
/// point), once each, and whether the line is vertical: they go in the
/// legend, on their own row, rather than over the data.
fn guide_labels(fig: &Figure) -> Vec<(String, bool)> {
    let mut out: Vec<(String, bool)> = Vec::new();
    for m in fig.panels.iter().flat_map(|p| &p.marks) {
        let (label, vertical) = match m {
            Mark::HLine { label, .. } => (label, false),
            Mark::VLine { label, .. } => (label, true),
        };
        if !label.is_empty() && !out.iter().any(|(l, _)| l == label) {
            out.push((label.clone(), vertical));
        }
    }
    out
}

/// Legend entries laid out in rows of at most `max_w` px: (row, x) per entry;
/// the entries from `first_guide` on start a new row.
fn legend_layout(names: &[&str], first_guide: usize, max_w: f64) -> Vec<(usize, f64)> {
    let mut out = Vec::new();
    let (mut row, mut x) = (0, 0.0);
    for (i, name) in names.iter().enumerate() {
        let w = 34.0 + width(name, SMALL).min(max_w - 40.0) + 18.0;
        if x > 0.0 && (x + w > max_w || i == first_guide) {
            row += 1;
            x = 0.0;
        }
        out.push((row, x));
        x += w;
    }
    out
}

/// The figure's size in px and its SVG text.
pub fn render(fig: &Figure) -> (Size, String) {
    let cols = fig.columns.clamp(1, fig.panels.len().max(1));
    let rows = fig.panels.len().div_ceil(cols).max(1);
    let (pw, ph) = if fig.panels.len() == 1 { SINGLE } else { MULTI };
    let w = 2.0 * MARGIN + cols as f64 * pw;
    let legend = fig.legend();
    let guides = guide_labels(fig);
    let names: Vec<&str> = legend
        .iter()
        .map(|e| e.0.as_str())
        .chain(guides.iter().map(|g| g.0.as_str()))
        .collect();
    let lay = legend_layout(&names, legend.len(), w - 2.0 * MARGIN);
    let legend_rows = lay.last().map_or(0, |l| l.0 + 1);
    let mut top = MARGIN + TITLE + 6.0;
    if fig.subtitle.is_some() {
        top += SMALL + 8.0;
    }
    let legend_top = top + 4.0;
    top = legend_top + legend_rows as f64 * LEGEND_ROW + 8.0;
    let h = top + rows as f64 * ph + MARGIN / 2.0;
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w:.0}" height="{h:.0}" viewBox="0 0 {w:.0} {h:.0}" font-family="{FAMILY}">"#
    );
    let _ = writeln!(out, r#"<rect width="100%" height="100%" fill="white"/>"#);
    text(
        &mut out,
        MARGIN,
        MARGIN + TITLE - 2.0,
        TITLE,
        r#"class="title" fill="black""#,
        &fit(&fig.title, TITLE, w - 2.0 * MARGIN),
    );
    if let Some(sub) = &fig.subtitle {
        text(
            &mut out,
            MARGIN,
            MARGIN + TITLE + 6.0 + SMALL,
            SMALL,
            r##"class="subtitle" fill="#444""##,
            &fit(sub, SMALL, w - 2.0 * MARGIN),
        );
    }
    let _ = writeln!(out, r#"<g class="legend">"#);
    for ((name, style, swatch), (row, x)) in legend.iter().zip(&lay) {
        let x = MARGIN + x;
        let y = legend_top + *row as f64 * LEGEND_ROW + LEGEND_ROW / 2.0;
        let c = color(style.color);
        let _ = writeln!(out, r#"<g class="legend-entry">"#);
        match swatch {
            Swatch::Line => {
                let _ = writeln!(
                    out,
                    r#"<line x1="{x:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="{c}" stroke-width="2.2"{}/>"#,
                    x + 28.0,
                    dash(style.dash)
                );
            }
            Swatch::Fill => {
                let _ = writeln!(
                    out,
                    r#"<rect x="{:.1}" y="{:.1}" width="20" height="11" fill="{c}" fill-opacity="0.35" stroke="{c}"/>"#,
                    x + 4.0,
                    y - 5.5
                );
            }
            Swatch::Point => {
                let _ = writeln!(
                    out,
                    r#"<circle cx="{:.1}" cy="{y:.1}" r="4.5" fill="{c}" stroke="white"/>"#,
                    x + 14.0
                );
            }
        }
        entry_name(&mut out, x, y, name, w);
    }
    for ((name, vertical), (row, x)) in guides.iter().zip(&lay[legend.len()..]) {
        let x = MARGIN + x;
        let y = legend_top + *row as f64 * LEGEND_ROW + LEGEND_ROW / 2.0;
        // Drawn as the guide itself is: thin, dark, dashed.
        let _ = writeln!(out, r#"<g class="legend-entry guide">"#);
        let (x1, y1, x2, y2) = if *vertical {
            (x + 14.0, y - 7.0, x + 14.0, y + 7.0)
        } else {
            (x, y, x + 28.0, y)
        };
        let _ = writeln!(
            out,
            r##"<line x1="{x1:.1}" y1="{y1:.1}" x2="{x2:.1}" y2="{y2:.1}" stroke="#333" stroke-width="1.2" stroke-dasharray="5 4"/>"##
        );
        entry_name(&mut out, x, y, name, w);
    }
    let _ = writeln!(out, "</g>");
    for (i, p) in fig.panels.iter().enumerate() {
        let (c, r) = (i % cols, i / cols);
        let x = MARGIN + c as f64 * pw;
        let y = top + r as f64 * ph;
        panel(&mut out, p, i, [x, y, pw, ph]);
    }
    let _ = writeln!(out, "</svg>");
    (
        Size {
            width: w.round() as u32,
            height: h.round() as u32,
        },
        out,
    )
}

/// One panel in the box [x, y, w, h].
fn panel(out: &mut String, p: &Panel, id: usize, [bx, by, bw, bh]: [f64; 4]) {
    let (sx, sy) = scales(p);
    let ytick_w = sy
        .ticks
        .iter()
        .map(|t| width(&t.1, TICK))
        .fold(0.0, f64::max);
    let cat = !p.x.categories.is_empty();
    let xcat_w = if cat {
        sx.ticks
            .iter()
            .map(|t| width(&fit(&t.1, TICK, 110.0), TICK))
            .fold(0.0, f64::max)
    } else {
        0.0
    };
    let title_h = if p.title.is_some() { 22.0 } else { 4.0 };
    let left = bx + 22.0 + ytick_w + 8.0;
    let right = bx + bw - 18.0;
    let top = by + title_h + 6.0;
    let x_labels_h = if cat {
        xcat_w * 0.72 + 10.0
    } else {
        TICK + 6.0
    };
    let bottom = by + bh - (x_labels_h + SMALL + 14.0);
    let (pw, ph) = (right - left, bottom - top);
    let px = |v: f64| sx.frac(v).map(|f| left + f * pw);
    let py = |v: f64| sy.frac(v).map(|f| bottom - f * ph);
    let _ = writeln!(out, r#"<g class="panel">"#);
    if let Some(t) = &p.title {
        text(
            out,
            left,
            by + 16.0,
            14.0,
            r#"class="panel-title" fill="black""#,
            &fit(t, 14.0, bw - (left - bx)),
        );
    }
    // Grid and ticks.
    let _ = writeln!(out, r#"<g class="axis x">"#);
    for (t, label) in &sx.ticks {
        let xx = left + (t - sx.lo) / (sx.hi - sx.lo) * pw;
        if !(left - 0.5..=right + 0.5).contains(&xx) {
            continue;
        }
        let _ = writeln!(
            out,
            r##"<line x1="{xx:.1}" y1="{top:.1}" x2="{xx:.1}" y2="{bottom:.1}" stroke="#e4e4e4"/>"##
        );
        if cat {
            let _ = writeln!(
                out,
                r##"<text class="tick" x="{xx:.1}" y="{:.1}" font-size="{TICK}" fill="#222" text-anchor="end" transform="rotate(-45 {xx:.1} {:.1})">{}</text>"##,
                bottom + 12.0,
                bottom + 12.0,
                escape(&fit(label, TICK, 110.0))
            );
        } else {
            text(
                out,
                xx,
                bottom + TICK + 4.0,
                TICK,
                r##"class="tick" fill="#222" text-anchor="middle""##,
                label,
            );
        }
    }
    text(
        out,
        left + pw / 2.0,
        bottom + x_labels_h + SMALL + 6.0,
        SMALL,
        r#"class="axis-label" fill="black" text-anchor="middle""#,
        &p.x.label,
    );
    let _ = writeln!(out, "</g>");
    let _ = writeln!(out, r#"<g class="axis y">"#);
    for (t, label) in &sy.ticks {
        let yy = bottom - (t - sy.lo) / (sy.hi - sy.lo) * ph;
        if !(top - 0.5..=bottom + 0.5).contains(&yy) {
            continue;
        }
        let _ = writeln!(
            out,
            r##"<line x1="{left:.1}" y1="{yy:.1}" x2="{right:.1}" y2="{yy:.1}" stroke="#e4e4e4"/>"##
        );
        text(
            out,
            left - 5.0,
            yy + 4.0,
            TICK,
            r##"class="tick" fill="#222" text-anchor="end""##,
            label,
        );
    }
    let (lx, ly) = (bx + 14.0, top + ph / 2.0);
    let _ = writeln!(
        out,
        r#"<text class="axis-label" x="{lx:.1}" y="{ly:.1}" font-size="{SMALL}" fill="black" text-anchor="middle" transform="rotate(-90 {lx:.1} {ly:.1})">{}</text>"#,
        escape(&fit(&p.y.label, SMALL, ph))
    );
    let _ = writeln!(out, "</g>");
    let _ = writeln!(
        out,
        r#"<clipPath id="clip{id}"><rect x="{left:.1}" y="{top:.1}" width="{pw:.1}" height="{ph:.1}"/></clipPath>"#
    );
    let _ = writeln!(out, r#"<g clip-path="url(#clip{id})">"#);
    for s in &p.series {
        series(out, s, &px, &py, bottom);
    }
    for m in &p.marks {
        mark(out, m, &sx, &sy, [left, top, right, bottom]);
    }
    let _ = writeln!(out, "</g>");
    let _ = writeln!(
        out,
        r##"<rect class="frame" x="{left:.1}" y="{top:.1}" width="{pw:.1}" height="{ph:.1}" fill="none" stroke="#555"/>"##
    );
    let _ = writeln!(out, "</g>");
}

fn series(
    out: &mut String,
    s: &crate::figures::Series,
    px: &dyn Fn(f64) -> Option<f64>,
    py: &dyn Fn(f64) -> Option<f64>,
    bottom: f64,
) {
    let c = color(s.style.color);
    let wgt = if s.style.color == REFERENCE { 1.4 } else { 2.2 };
    let _ = writeln!(out, r#"<g class="series" data-name="{}">"#, escape(&s.name));
    let xy = |q: &[f64; 2]| Some((px(q[0])?, py(q[1])?));
    match &s.data {
        Data::Line(pts) => {
            // A gap where a point cannot be drawn (e.g. ≤ 0 on a log axis).
            let mut runs: Vec<Vec<(f64, f64)>> = vec![Vec::new()];
            for q in pts {
                match xy(q) {
                    Some(p) => runs.last_mut().expect("one run").push(p),
                    None => runs.push(Vec::new()),
                }
            }
            for r in runs.iter().filter(|r| !r.is_empty()) {
                let d: Vec<String> = r.iter().map(|(x, y)| format!("{x:.2},{y:.2}")).collect();
                let _ = writeln!(
                    out,
                    r#"<polyline points="{}" fill="none" stroke="{c}" stroke-width="{wgt}" stroke-linejoin="round"{}/>"#,
                    d.join(" "),
                    dash(s.style.dash)
                );
            }
        }
        Data::Points(pts) => {
            for (x, y) in pts.iter().filter_map(xy) {
                let _ = writeln!(
                    out,
                    r#"<circle cx="{x:.2}" cy="{y:.2}" r="5" fill="{c}" stroke="white" stroke-width="1.5"/>"#
                );
            }
        }
        Data::Bars(bars) => {
            for b in bars {
                let (Some(x0), Some(x1), Some(y)) = (px(b.x0), px(b.x1), py(b.y)) else {
                    continue;
                };
                let base = py(0.0).unwrap_or(bottom);
                let _ = writeln!(
                    out,
                    r#"<rect x="{x0:.2}" y="{:.2}" width="{:.2}" height="{:.2}" fill="{c}" fill-opacity="0.35" stroke="{c}" stroke-width="0.8"/>"#,
                    y.min(base),
                    (x1 - x0).max(0.5),
                    (base - y).abs()
                );
            }
        }
        Data::Band { x, lo, hi } => {
            let up: Vec<(f64, f64)> = x
                .iter()
                .zip(hi)
                .filter_map(|(&a, &b)| xy(&[a, b]))
                .collect();
            let down: Vec<(f64, f64)> = x
                .iter()
                .zip(lo)
                .rev()
                .filter_map(|(&a, &b)| xy(&[a, b]))
                .collect();
            let d: Vec<String> = up
                .iter()
                .chain(&down)
                .map(|(x, y)| format!("{x:.2},{y:.2}"))
                .collect();
            let _ = writeln!(
                out,
                r#"<polygon points="{}" fill="{c}" fill-opacity="0.18" stroke="none"/>"#,
                d.join(" ")
            );
        }
    }
    let _ = writeln!(out, "</g>");
}

/// A reference line across the plot (its label is in the legend: `guide_labels`).
fn mark(out: &mut String, m: &Mark, sx: &Scale, sy: &Scale, [l, t, r, b]: [f64; 4]) {
    match m {
        Mark::HLine { y, .. } => {
            let Some(f) = sy.frac(*y) else { return };
            let yy = b - f * (b - t);
            let _ = writeln!(
                out,
                r##"<line class="mark" x1="{l:.1}" y1="{yy:.1}" x2="{r:.1}" y2="{yy:.1}" stroke="#333" stroke-width="1.2" stroke-dasharray="5 4"/>"##
            );
        }
        Mark::VLine { x, .. } => {
            let Some(f) = sx.frac(*x) else { return };
            let xx = l + f * (r - l);
            let _ = writeln!(
                out,
                r##"<line class="mark" x1="{xx:.1}" y1="{t:.1}" x2="{xx:.1}" y2="{b:.1}" stroke="#333" stroke-width="1.2" stroke-dasharray="5 4"/>"##
            );
        }
    }
}
