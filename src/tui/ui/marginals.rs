//! Marginals pane: a forest plot (mean ± 2 sd per coefficient, sorted by
//! |mean/sd|; every kind of posterior that has a run side by side: SMC, the
//! great-circle sampler, EP and VB) and, for the selected coefficient, the
//! sampler's histogram with the Gaussian densities (EP's, VB's) overlaid
//! (RACL14 Fig. 1).

use std::cmp::Reverse;
use std::collections::HashMap;

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::common::{bounds, fit, num, pane_block, placeholder};
use super::figure_chart::{Labels, chart, legend_of, resolve};
use super::gp_scores;
use super::theme::Theme;
use crate::app::run_view::{Coef, RunView};
use crate::app::{App, Pane};
use crate::figures::{Data as FigData, Series as FigSeries, Style as FigStyle, marginal_panel};

/// A run's coefficients with its colour and mean glyph (the glyph tells the
/// runs apart without colour).
struct Series<'a> {
    run: &'a RunView,
    coefs: Vec<Coef>,
    style: Style,
    /// The run's palette slot (its colour in the histogram's figure panel).
    color: usize,
    glyph: char,
}

const GLYPHS: [char; 4] = ['●', '◆', '▲', '■'];

/// The kinds of posterior the pane compares, one run of each.
const KINDS: [fn(&RunView) -> bool; 4] = [
    RunView::is_smc,
    RunView::is_gcs,
    RunView::is_ep,
    RunView::is_vb,
];

fn color_index(app: &App, run: &RunView) -> usize {
    app.runs.iter().position(|r| r.id == run.id).unwrap_or(0)
}

/// Order of coefficients by decreasing |mean/sd| (non-finite last); by |mean|
/// when no sd is known yet (an engine's intermediate sweeps).
pub fn sorted_order(coefs: &[Coef]) -> Vec<usize> {
    let any_sd = coefs.iter().any(|c| c.sd.is_finite() && c.sd > 0.0);
    let key = |c: &Coef| {
        let z = if any_sd { c.mean / c.sd } else { c.mean }.abs();
        if z.is_finite() { z } else { -1.0 }
    };
    let mut order: Vec<usize> = (0..coefs.len()).collect();
    order.sort_by(|&a, &b| key(&coefs[b]).total_cmp(&key(&coefs[a])));
    order
}

pub fn render(app: &App, area: Rect, frame: &mut Frame) {
    let theme = Theme::of(app);
    let names = app.names();
    let has = |r: &RunView| !r.coefficients(names).is_empty();
    // A GP run has no coefficients: its own view when it is selected, or
    // when no run has coefficients.
    let gp = app
        .selected_run()
        .filter(|r| gp_scores::is_gp(r))
        .or_else(|| {
            app.run_for(has)
                .is_none()
                .then(|| app.run_for(gp_scores::is_gp))
                .flatten()
        });
    if let Some(run) = gp {
        let block = pane_block(app, Pane::Marginals, run.title(), &theme);
        let inner = block.inner(area);
        frame.render_widget(block, area);
        gp_scores::render(run, inner, frame, &theme);
        return;
    }
    let primary = app.run_for(has);
    // One run of every other kind of posterior (the newest, or the selected
    // one) of the same posterior — another γ or prior sets another scale —
    // the other family's first (Gaussians beside a sampler, samplers beside a
    // Gaussian), newest first within a family. A kind whose runs are all of
    // another posterior is named in the title instead.
    let mut apart: Vec<&RunView> = Vec::new();
    let others: Vec<&RunView> = primary
        .filter(|p| p.is_sampler() || p.is_gaussian())
        .map_or(Vec::new(), |p| {
            let position = |r: &RunView| app.runs.iter().position(|x| x.id == r.id);
            let mut others = Vec::new();
            for kind in KINDS.iter().filter(|kind| !kind(p)) {
                let of_kind = |r: &RunView| kind(r) && has(r) && r.id != p.id;
                match app.run_for(|r| of_kind(r) && p.same_posterior(r)) {
                    Some(r) => others.push(r),
                    None => apart.extend(app.run_for(of_kind)),
                }
            }
            others.sort_by_key(|r| (r.is_sampler() == p.is_sampler(), Reverse(position(r))));
            others.dedup_by_key(|r| r.id);
            others
        });
    let mut detail = String::new();
    for r in primary.iter().chain(others.iter()) {
        // A running or cancelled run's moments are not an answer: say so.
        let status = r.status_note().map_or(String::new(), |n| format!(" ({n})"));
        detail.push_str(&format!("{}{status} ", r.title()));
    }
    if !apart.is_empty() {
        let names: Vec<String> = apart.iter().map(|r| r.title()).collect();
        detail.push_str(&format!(
            "· not overlaid, another γ or prior: {}",
            names.join(", ")
        ));
    }
    let block = pane_block(app, Pane::Marginals, detail.trim_end().to_string(), &theme);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let Some(primary) = primary else {
        placeholder(
            frame,
            inner,
            "no posterior yet: coefficients appear as soon as a run reports them",
            &theme,
        );
        return;
    };
    let series: Vec<Series> = std::iter::once(primary)
        .chain(others)
        .enumerate()
        .map(|(i, r)| Series {
            run: r,
            coefs: r.coefficients(names),
            style: theme.series(color_index(app, r)),
            color: color_index(app, r),
            glyph: GLYPHS[i % GLYPHS.len()],
        })
        .collect();
    let order = sorted_order(&series[0].coefs);
    let sel = app.coef_sel.min(order.len().saturating_sub(1));
    let sel_name = order
        .get(sel)
        .map(|&k| series[0].coefs[k].name.clone())
        .unwrap_or_default();
    let (forest_area, hist_area) = if inner.width >= 56 {
        let [a, _, b] = Layout::horizontal([
            Constraint::Percentage(56),
            Constraint::Length(2),
            Constraint::Fill(1),
        ])
        .areas(inner);
        (a, b)
    } else if inner.height >= 16 {
        let [a, b] =
            Layout::vertical([Constraint::Percentage(55), Constraint::Percentage(45)]).areas(inner);
        (a, b)
    } else {
        (inner, Rect::default())
    };
    forest(&series, &order, sel, forest_area, frame, &theme);
    let smc = series
        .iter()
        .find(|s| s.run.is_sampler() && !s.run.histograms.is_empty());
    let gaussians: Vec<&Series> = series.iter().filter(|s| s.run.is_gaussian()).collect();
    // Without a Gaussian approximation, the primary run's mean ± sd as one.
    let gaussians = if gaussians.is_empty() {
        series.first().into_iter().collect()
    } else {
        gaussians
    };
    histogram(&sel_name, smc, &gaussians, hist_area, frame, &theme);
}

fn forest(
    series: &[Series],
    order: &[usize],
    sel: usize,
    area: Rect,
    frame: &mut Frame,
    theme: &Theme,
) {
    if area.height < 3 || area.width < 20 {
        return;
    }
    let lookup: Vec<HashMap<&str, &Coef>> = series
        .iter()
        .map(|s| s.coefs.iter().map(|c| (c.name.as_str(), c)).collect())
        .collect();
    let w = area.width as usize;
    let longest = series[0]
        .coefs
        .iter()
        .map(|c| c.name.chars().count())
        .max()
        .unwrap_or(4);
    let name_w = longest.clamp(4, (w / 4).max(4));
    let val_w = if w >= 50 { 14 } else { 0 };
    let plot_w = w.saturating_sub(name_w + 1 + val_w).max(5);
    let per = series.len();
    let body_h = (area.height as usize).saturating_sub(2);
    let visible = (body_h / per).max(1);
    let offset = (sel + 1).saturating_sub(visible);
    let shown: Vec<usize> = order.iter().copied().skip(offset).take(visible).collect();
    // One axis for every interval shown, and 0.
    let [lo, hi] = bounds(
        shown
            .iter()
            .flat_map(|&k| {
                let name = series[0].coefs[k].name.as_str();
                lookup.iter().filter_map(move |l| l.get(name))
            })
            .flat_map(|c| [c.mean - 2.0 * c.sd, c.mean + 2.0 * c.sd])
            .chain([0.0]),
    );
    let pad = 0.04 * (hi - lo);
    let (lo, hi) = (lo - pad, hi + pad);
    let col = |x: f64| -> Option<usize> {
        if !x.is_finite() {
            return None;
        }
        let t = ((x - lo) / (hi - lo) * (plot_w - 1) as f64).round();
        Some(t.clamp(0.0, (plot_w - 1) as f64) as usize)
    };
    let mut lines = Vec::new();
    let mut legend: Vec<Span> = series
        .iter()
        .flat_map(|s| {
            [
                Span::styled(format!("{} ", s.glyph), s.style),
                Span::raw(format!("{}  ", s.run.title())),
            ]
        })
        .collect();
    legend.push(Span::styled("mean ± 2 sd", theme.dim()));
    if order.len() > visible {
        legend.push(Span::styled(
            format!(
                "  {}–{}/{}",
                offset + 1,
                (offset + visible).min(order.len()),
                order.len()
            ),
            theme.dim(),
        ));
    }
    lines.push(Line::from(legend));
    for (i, &k) in shown.iter().enumerate() {
        let name = series[0].coefs[k].name.as_str();
        for (j, s) in series.iter().enumerate() {
            let label = if j == 0 {
                fit(name, name_w)
            } else {
                String::new()
            };
            let label_style = if offset + i == sel && j == 0 {
                theme.selected()
            } else {
                Style::new()
            };
            let mut spans = vec![
                Span::styled(format!("{label:<name_w$}"), label_style),
                Span::raw(" "),
            ];
            match lookup[j].get(name) {
                Some(c) => {
                    spans.extend(interval(
                        plot_w,
                        col(0.0),
                        col(c.mean - 2.0 * c.sd),
                        col(c.mean + 2.0 * c.sd),
                        col(c.mean),
                        (s.glyph, s.style),
                        theme,
                    ));
                    if val_w > 0 {
                        spans.push(Span::styled(
                            format!(" {:>7} ±{:<5}", num(c.mean), short(c.sd)),
                            s.style,
                        ));
                    }
                }
                None => spans.push(Span::styled("(not in this run)", theme.dim())),
            }
            lines.push(Line::from(spans));
        }
    }
    // The axis: its ends and 0.
    let mut axis = vec![' '; plot_w];
    let put = |axis: &mut Vec<char>, at: usize, text: &str| {
        for (i, ch) in text.chars().enumerate() {
            if let Some(c) = axis.get_mut(at + i) {
                *c = ch;
            }
        }
    };
    let lo_s = num(lo);
    let hi_s = num(hi);
    put(&mut axis, 0, &lo_s);
    if let Some(z) = col(0.0)
        && z > lo_s.len() + 1
        && z + 2 < plot_w.saturating_sub(hi_s.len())
    {
        put(&mut axis, z, "0");
    }
    put(&mut axis, plot_w.saturating_sub(hi_s.len()), &hi_s);
    lines.resize(area.height as usize - 1, Line::raw(""));
    lines.push(Line::from(vec![
        Span::raw(format!("{:<name_w$} ", "")),
        Span::styled(axis.into_iter().collect::<String>(), theme.dim()),
    ]));
    frame.render_widget(Paragraph::new(lines), area);
}

fn short(v: f64) -> String {
    if v.is_finite() && v.abs() < 10.0 {
        format!("{v:.2}")
    } else {
        num(v)
    }
}

/// The characters of one interval row.
fn interval(
    w: usize,
    zero: Option<usize>,
    a: Option<usize>,
    b: Option<usize>,
    mean: Option<usize>,
    (glyph, style): (char, Style),
    theme: &Theme,
) -> Vec<Span<'static>> {
    let mut cells: Vec<(char, Style)> = vec![(' ', Style::new()); w];
    if let Some(z) = zero {
        cells[z] = ('┆', theme.dim());
    }
    if let (Some(a), Some(b)) = (a, b) {
        for c in cells.iter_mut().take(b + 1).skip(a) {
            *c = ('─', style);
        }
        cells[a] = (if a == b { '│' } else { '├' }, style);
        if b > a {
            cells[b] = ('┤', style);
        }
    }
    if let Some(m) = mean {
        cells[m] = (glyph, style);
    }
    // Group equal styles into spans.
    let mut spans = Vec::new();
    let mut text = String::new();
    let mut cur = cells[0].1;
    for (ch, st) in cells {
        if st != cur {
            spans.push(Span::styled(std::mem::take(&mut text), cur));
            cur = st;
        }
        text.push(ch);
    }
    spans.push(Span::styled(text, cur));
    spans
}

/// The selected coefficient's panel of the marginals figure
/// (`figures::marginal_panel`): the sampler's histogram under the Gaussians,
/// in the runs' colours.
fn histogram(
    name: &str,
    smc: Option<&Series>,
    gaussians: &[&Series],
    area: Rect,
    frame: &mut Frame,
    theme: &Theme,
) {
    if area.height < 4 || area.width < 16 {
        return;
    }
    let hist = smc.and_then(|s| {
        let k = s.coefs.iter().position(|c| c.name == name)?;
        let h = s.run.histograms.get(k)?;
        Some((s.run.title(), FigStyle::nth(s.color), h))
    });
    // Several independent SMC runs: each run's mean of this coefficient.
    let run_means: Vec<f64> = smc
        .and_then(|s| {
            let k = s.coefs.iter().position(|c| c.name == name)?;
            let runs = s.run.record.as_ref()?.runs.as_ref()?;
            Some(
                runs.runs
                    .iter()
                    .filter_map(|r| r.mean.get(k).copied())
                    .collect(),
            )
        })
        .unwrap_or_default();
    // The Gaussian overlays: EP's and VB's marginals (or, without one, the primary run's).
    let normals: Vec<(String, FigStyle, f64, f64)> = gaussians
        .iter()
        .filter(|g| smc.is_none_or(|s| s.run.id != g.run.id))
        .filter_map(|g| {
            let c = g.coefs.iter().find(|c| c.name == name)?;
            (c.sd.is_finite() && c.sd > 0.0 && c.mean.is_finite()).then_some((
                g.run.title(),
                FigStyle::nth(g.color),
                c.mean,
                c.sd,
            ))
        })
        .collect();
    let mut panel = marginal_panel(
        name,
        hist.as_ref().map(|(t, st, h)| (t.as_str(), *st, *h)),
        &normals,
    );
    // Several independent SMC runs: each run's mean as a marker on the axis.
    if let (Some((_, style, _)), false) = (&hist, run_means.is_empty()) {
        panel.series.push(FigSeries {
            name: format!("means of its {} runs", run_means.len()),
            style: *style,
            data: FigData::Points(run_means.iter().map(|&m| [m, 0.0]).collect()),
        });
    }
    let [title_area, chart_area] =
        Layout::vertical([Constraint::Length(1), Constraint::Min(0)]).areas(area);
    let c = resolve(&panel);
    let mut title = vec![Span::styled(format!(" {name} "), theme.title())];
    title.extend(legend_of(&[&c], theme, false));
    frame.render_widget(Paragraph::new(Line::from(title)), title_area);
    if panel.series.is_empty() {
        placeholder(
            frame,
            chart_area,
            "no particle histogram or Gaussian for this coefficient",
            theme,
        );
        return;
    }
    let labels = Labels::default();
    let chart = chart(&c, theme, labels).x_axis(
        ratatui::widgets::Axis::default()
            .bounds(c.x)
            .labels([num(c.x[0]), num(c.x[1])])
            .style(theme.dim()),
    );
    frame.render_widget(chart, chart_area);
}
