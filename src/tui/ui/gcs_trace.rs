//! The sampler pane for a great-circle run: the largest R-hat and the smallest
//! bulk and tail ESS against steps per chain, each with its stopping target
//! and the end of the warm-up marked; the per-chain risk, proposals per step,
//! jump length and the arcs swept per step as text.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Color;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Chart, Dataset, GraphType, Paragraph};

use super::common::{finite, num, placeholder, seconds, si};
use super::theme::Theme;
use crate::app::run_view::RunView;
use crate::engine::event::GcsBatch;

/// Draws `run`'s trace in `inner` (the pane's block is drawn by the caller).
pub fn render(run: &RunView, inner: Rect, frame: &mut Frame, theme: &Theme) {
    let Some(last) = run.gcs.last() else {
        placeholder(frame, inner, "waiting for the first batch…", theme);
        return;
    };
    let [charts, legend_area, stats_area] = Layout::vertical([
        Constraint::Min(0),
        Constraint::Length(1),
        Constraint::Length(3),
    ])
    .areas(inner);
    let (min_ess, max_rhat) = run.gcs_targets();
    let x_hi = (last.steps as f64).max(1.0);
    let warmup = last.warmup as f64;
    if charts.height >= 3 && charts.width >= 24 {
        let [left, right] =
            Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)])
                .areas(charts);
        let rhat = finite(
            run.gcs
                .iter()
                .filter_map(|b| Some((b.steps as f64, b.rhat?))),
        );
        let r_hi = rhat
            .iter()
            .map(|p| p.1)
            .fold(max_rhat + 0.01, f64::max)
            .min(2.0);
        let r_target = [(0.0, max_rhat), (x_hi, max_rhat)];
        let r_warm = [(warmup, 1.0), (warmup, r_hi)];
        let series = [
            (&r_target[..], theme.dim()),
            (&r_warm[..], theme.dim()),
            (&rhat[..], theme.fg(Color::Magenta)),
        ];
        let labels = [num(1.0), num(r_hi)];
        frame.render_widget(chart(&series, x_hi, [1.0, r_hi], labels, theme), left);

        let bulk = ess_points(run, |b| b.ess_bulk);
        let tail = ess_points(run, |b| b.ess_tail);
        let e_hi = bulk
            .iter()
            .chain(&tail)
            .map(|p| p.1)
            .fold(min_ess, f64::max)
            * 1.05;
        let e_target = [(0.0, min_ess), (x_hi, min_ess)];
        let e_warm = [(warmup, 0.0), (warmup, e_hi)];
        let series = [
            (&e_target[..], theme.dim()),
            (&e_warm[..], theme.dim()),
            (&tail[..], theme.fg(Color::Yellow)),
            (&bulk[..], theme.fg(Color::Cyan)),
        ];
        let labels = ["0".to_string(), format!("{e_hi:.0}")];
        frame.render_widget(chart(&series, x_hi, [0.0, e_hi], labels, theme), right);
    }
    let legend = Line::from(vec![
        Span::styled("━ R-hat ", theme.fg(Color::Magenta)),
        Span::styled(format!("─{max_rhat} "), theme.dim()),
        Span::styled("━ ESS bulk ", theme.fg(Color::Cyan)),
        Span::styled("━ tail ", theme.fg(Color::Yellow)),
        Span::styled(format!("─{min_ess} │warm-up"), theme.dim()),
    ]);
    frame.render_widget(Paragraph::new(legend), legend_area);
    frame.render_widget(Paragraph::new(stats(run, last, theme)), stats_area);
}

fn ess_points(run: &RunView, f: impl Fn(&GcsBatch) -> Option<f64>) -> Vec<(f64, f64)> {
    finite(run.gcs.iter().filter_map(|b| Some((b.steps as f64, f(b)?))))
}

/// Lines against steps per chain, with the steps as x axis from 0.
fn chart<'a>(
    series: &'a [(&'a [(f64, f64)], ratatui::style::Style)],
    x_hi: f64,
    y: [f64; 2],
    y_labels: [String; 2],
    theme: &Theme,
) -> Chart<'a> {
    let ds = series
        .iter()
        .map(|(data, style)| {
            Dataset::default()
                .data(data)
                .graph_type(GraphType::Line)
                .marker(theme.marker)
                .style(*style)
        })
        .collect();
    Chart::new(ds)
        .x_axis(
            Axis::default()
                .bounds([0.0, x_hi])
                .labels(["0".to_string(), format!("{x_hi:.0}")])
                .style(theme.dim()),
        )
        .y_axis(
            Axis::default()
                .bounds(y)
                .labels(y_labels)
                .style(theme.dim()),
        )
}

/// The diagnostics, steps and draws; the per-chain risk; arcs per circle,
/// proposals per step and jump along the circle (means over the chains),
/// time and steps per second.
fn stats<'a>(run: &RunView, last: &GcsBatch, theme: &Theme) -> Vec<Line<'a>> {
    let list = |v: &[f64], digits: usize| {
        v.iter()
            .map(|x| format!("{x:.digits$}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let opt = |v: Option<f64>, digits: usize| v.map_or("-".into(), |x| format!("{x:.digits$}"));
    let phase = if last.steps <= last.warmup {
        format!(" (warm-up to {})", last.warmup)
    } else {
        String::new()
    };
    let chains = last.risk.len().max(1);
    let rate = if last.elapsed > 0.0 {
        (last.steps * chains) as f64 / last.elapsed
    } else {
        f64::NAN
    };
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    vec![
        Line::from(vec![
            Span::styled("R-hat ", theme.dim()),
            Span::raw(opt(last.rhat, 3)),
            Span::styled(" ESS ", theme.dim()),
            Span::raw(format!(
                "{}/{}",
                opt(last.ess_bulk, 0),
                opt(last.ess_tail, 0)
            )),
            Span::styled(" step ", theme.dim()),
            Span::raw(format!("{}{phase}", last.steps)),
            Span::styled(" draws ", theme.dim()),
            Span::raw(format!("{}", last.draws)),
        ]),
        Line::from(vec![
            Span::styled("risk/chain ", theme.dim()),
            Span::raw(list(&last.risk, 4)),
        ]),
        Line::from(vec![
            Span::styled("arcs ", theme.dim()),
            Span::raw(si(last.arcs as f64)),
            Span::styled(" proposals ", theme.dim()),
            Span::raw(format!("{:.2}", mean(&last.proposals))),
            Span::styled(" jump ", theme.dim()),
            Span::raw(format!("{:.2}", mean(&last.jump))),
            Span::raw(format!(
                " {}",
                seconds(run.elapsed().unwrap_or(last.elapsed))
            )),
            Span::raw(format!(" {}", si(rate))),
            Span::styled(" steps/s", theme.dim()),
        ]),
    ]
}
