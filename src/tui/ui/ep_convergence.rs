//! Convergence pane of the Gaussian approximations. EP: the convergence
//! measure Δ per sweep on a log scale (with the tolerance line), log Z_EP per
//! sweep when there is room, and the damping, negative-site share and skipped
//! sites. VB: `vb_trace`.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Color;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Chart, Dataset, GraphType, Paragraph};

use super::common::{bounds, finite, num, pane_block, placeholder, seconds};
use super::theme::Theme;
use crate::app::run_view::RunView;
use crate::app::{App, Pane};

pub fn render(app: &App, area: Rect, frame: &mut Frame) {
    let theme = Theme::of(app);
    let run = app.run_for(RunView::is_gaussian);
    let detail = run.map_or(String::new(), |r| {
        format!("{} {}", r.title(), r.status.word())
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
    let [delta_area, z_area, legend_area, stats_area] = Layout::vertical([
        Constraint::Min(0),
        Constraint::Length(if two { inner.height / 3 } else { 0 }),
        Constraint::Length(1),
        Constraint::Length(2),
    ])
    .areas(inner);
    let last = run.ep.last().expect("non-empty");
    let tol_v = run.ep_tol();
    // x is the sweep's position in the run: tuning loops (ARD, γ by CV) restart
    // the sweep count, and the trace must not double back.
    let first = 1.0;
    let x_hi = (run.ep.len() as f64).max(first + 1.0);
    let delta = finite(
        run.ep
            .iter()
            .enumerate()
            .filter(|(_, s)| s.delta > 0.0)
            .map(|(i, s)| ((i + 1) as f64, s.delta.log10())),
    );
    let [mut lo, mut hi] = bounds(delta.iter().map(|p| p.1).chain([tol_v.log10()]));
    lo = lo.floor();
    hi = hi.ceil().max(lo + 1.0);
    let tol = [(first, tol_v.log10()), (x_hi, tol_v.log10())];
    if delta_area.height >= 3 && delta_area.width >= 12 {
        let chart = Chart::new(vec![
            Dataset::default()
                .data(&tol)
                .graph_type(GraphType::Line)
                .marker(theme.marker)
                .style(theme.dim()),
            Dataset::default()
                .data(&delta)
                .graph_type(GraphType::Line)
                .marker(theme.marker)
                .style(theme.fg(Color::Magenta)),
        ])
        .x_axis(
            Axis::default()
                .bounds([first, x_hi])
                .labels([format!("{first:.0}"), format!("{x_hi:.0} sweeps")])
                .style(theme.dim()),
        )
        .y_axis(
            Axis::default()
                .bounds([lo, hi])
                .labels([format!("1e{lo:.0}"), format!("1e{hi:.0}")])
                .style(theme.dim()),
        );
        frame.render_widget(chart, delta_area);
    }
    if two && z_area.height >= 3 {
        let z = finite(
            run.ep
                .iter()
                .enumerate()
                .filter_map(|(i, s)| Some(((i + 1) as f64, s.log_z?))),
        );
        let [zl, zh] = bounds(z.iter().map(|p| p.1));
        let chart = Chart::new(vec![
            Dataset::default()
                .data(&z)
                .graph_type(GraphType::Line)
                .marker(theme.marker)
                .style(theme.fg(Color::Blue)),
        ])
        .x_axis(Axis::default().bounds([first, x_hi]).style(theme.dim()))
        .y_axis(
            Axis::default()
                .bounds([zl, zh])
                .labels([num(zl), num(zh)])
                .style(theme.dim()),
        );
        frame.render_widget(chart, z_area);
    }
    let mut legend = vec![
        Span::styled("━ Δ (log) ", theme.fg(Color::Magenta)),
        Span::styled(format!("─ tol {tol_v:.0e} "), theme.dim()),
    ];
    if two {
        legend.push(Span::styled("━ log Z_EP", theme.fg(Color::Blue)));
    }
    frame.render_widget(Paragraph::new(Line::from(legend)), legend_area);
    let log_z = run
        .record
        .as_ref()
        .and_then(|r| r.log_evidence)
        .or(last.log_z);
    let stats = vec![
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
    ];
    frame.render_widget(Paragraph::new(stats), stats_area);
}
