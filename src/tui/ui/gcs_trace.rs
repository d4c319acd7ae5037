//! The sampler pane for a great-circle run: the largest R-hat and the smallest
//! bulk and tail ESS against steps per chain, each with its stopping target
//! and the end of the warm-up marked; the per-chain risk, proposals per step,
//! jump length and the arcs swept per step as text.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::common::{fit_lines, placeholder, seconds, si};
use super::figure_chart::{Labels, PanelChart, chart, legend_lines, resolve};
use super::theme::Theme;
use crate::app::run_view::RunView;
use crate::engine::event::GcsBatch;

/// Draws `run`'s trace in `inner` (the pane's block is drawn by the caller):
/// the panels of the figure `p` writes (`figures::gcs_trace`), side by side,
/// each with its legend below.
pub fn render(run: &RunView, inner: Rect, frame: &mut Frame, theme: &Theme) {
    let Some(last) = run.gcs.last() else {
        placeholder(frame, inner, "waiting for the first batch…", theme);
        return;
    };
    let halves = |area: Rect| -> [Rect; 2] {
        Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(area)
    };
    let panels = run.gcs_figure().map_or(Vec::new(), |f| {
        f.panels.iter().map(resolve).collect::<Vec<_>>()
    });
    // One legend for both charts (the warm-up's line named once).
    let all: Vec<&PanelChart> = panels.iter().collect();
    let legend = legend_lines(&all, theme, inner.width);
    let stats = fit_lines(stats(run, last, theme), inner.width as usize, 2);
    let [charts, legend_area, stats_area] = Layout::vertical([
        Constraint::Min(0),
        Constraint::Length(legend.len() as u16),
        Constraint::Length(stats.len() as u16),
    ])
    .areas(inner);
    for (c, area) in panels.iter().zip(halves(charts)) {
        if charts.height >= 3 && charts.width >= 24 {
            // Half a pane has no room for the x axis' name between its ends.
            let mut c = c.clone();
            c.x_label.clear();
            frame.render_widget(chart(&c, theme, Labels::trace(0)), area);
        }
    }
    frame.render_widget(Paragraph::new(legend), legend_area);
    frame.render_widget(Paragraph::new(stats), stats_area);
}

/// The diagnostics, steps and draws; the per-chain risk; arcs per circle,
/// proposals per step and jump along the circle (means over the chains),
/// time and steps per second.
fn stats(run: &RunView, last: &GcsBatch, theme: &Theme) -> Vec<Line<'static>> {
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
