//! Convergence pane of the Gaussian approximations. EP: the convergence
//! measure Δ per sweep on a log scale (with the stopping line tol·η), log
//! Z_EP per sweep when there is room — the first panels of the figure
//! `figures::ep_convergence` — and the damping, negative-site share and
//! skipped sites as text. VB: `vb_trace`.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::common::{fit_lines, num, pane_block, placeholder, seconds};
use super::figure_chart::{resolve, stacked, stacked_legend_height};
use super::theme::Theme;
use crate::app::run_view::RunView;
use crate::app::{App, Pane};
use crate::engine::event::EpSweep;
use crate::figures::{EP_DELTA, EVIDENCE};

pub fn render(app: &App, area: Rect, frame: &mut Frame) {
    let theme = Theme::of(app);
    let run = app.run_for(RunView::is_gaussian);
    let detail = run.map_or(String::new(), |r| {
        format!("{} {}", r.title(), r.status_text())
    });
    let block = pane_block(app, Pane::Ep, detail, &theme);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    if let Some(run) = run.filter(|r| r.is_vb() && !r.is_ep()) {
        return super::vb_trace::render(run, inner, frame, &theme);
    }
    let Some(run) = run.filter(|r| !r.ep.is_empty()) else {
        let msg = match run {
            Some(_) => "waiting for the first sweep…",
            None => "no EP/VB run yet: n opens the form",
        };
        placeholder(frame, inner, msg, &theme);
        return;
    };
    let two = inner.height >= 14;
    let last = run.ep.last().expect("non-empty");
    // The same figure `p` writes: Δ against tol·η, and log Z_EP below.
    let fig = run.ep_figure();
    let delta = fig.as_ref().and_then(|f| f.panel(EP_DELTA)).map(resolve);
    let z = fig.as_ref().and_then(|f| f.panel(EVIDENCE)).map(resolve);
    let stats = fit_lines(stats(run, last, &theme), inner.width as usize, 2);
    let legend_h = stacked_legend_height([delta.as_ref(), z.as_ref()], two, &theme, inner.width);
    let [delta_area, z_area, legend_area, stats_area] = Layout::vertical([
        Constraint::Min(0),
        Constraint::Length(if two { inner.height / 3 } else { 0 }),
        Constraint::Length(legend_h),
        Constraint::Length(stats.len() as u16),
    ])
    .areas(inner);
    stacked(
        frame,
        [delta.as_ref(), z.as_ref()],
        [delta_area, z_area, legend_area],
        two,
        &theme,
    );
    frame.render_widget(Paragraph::new(stats), stats_area);
}

/// Sweep, Δ and log Z; the step, the share of negative sites, skipped sites, time.
fn stats(run: &RunView, last: &EpSweep, theme: &Theme) -> Vec<Line<'static>> {
    let log_z = run
        .record
        .as_ref()
        .and_then(|r| r.log_evidence)
        .or(last.log_z);
    vec![
        Line::from(vec![
            Span::styled("sweep ", theme.dim()),
            Span::raw(format!("{}", last.sweep)),
            Span::styled("  Δ ", theme.dim()),
            Span::raw(format!("{:.1e}", last.delta)),
            Span::styled("  log Z ", theme.dim()),
            Span::raw(log_z.map_or("-".into(), num)),
        ]),
        Line::from(vec![
            Span::styled("η ", theme.dim()),
            Span::raw(format!("{:.3}", last.eta)),
            Span::styled("  negative ", theme.dim()),
            Span::raw(format!("{:.1}%", 100.0 * last.negative_share)),
            Span::styled("  skipped ", theme.dim()),
            Span::styled(
                format!("{}", last.skipped),
                if last.skipped > 0 {
                    theme.warn()
                } else {
                    theme.dim()
                },
            ),
            Span::styled("  ", theme.dim()),
            Span::raw(seconds(run.elapsed().unwrap_or(last.elapsed))),
        ]),
    ]
}
