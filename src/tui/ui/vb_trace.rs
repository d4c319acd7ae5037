//! VB in the convergence pane: the objective F = γ·E_ρ[R] + KL per iteration
//! (L-BFGS steps as a line; the stochastic optimiser's held-out estimates as
//! markers, with the exact F over all items once the run ends), the gradient's
//! largest component on a log scale when there is room, and the optimiser's
//! state.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Color;
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Chart, Dataset, GraphType, Paragraph};

use super::common::{bounds, finite, num, placeholder, seconds};
use super::theme::Theme;
use crate::app::run_view::RunView;
use crate::spec::MethodSpec;

pub fn render(run: &RunView, inner: Rect, frame: &mut Frame, theme: &Theme) {
    let Some(last) = run.vb.last() else {
        placeholder(frame, inner, "waiting for the first iteration…", theme);
        return;
    };
    let two = inner.height >= 14;
    let [f_area, g_area, legend_area, stats_area] = Layout::vertical([
        Constraint::Min(0),
        Constraint::Length(if two { inner.height / 3 } else { 0 }),
        Constraint::Length(1),
        Constraint::Length(2),
    ])
    .areas(inner);
    let estimated = run.vb.iter().any(|it| it.estimate);
    let points = finite(run.vb.iter().map(|it| (it.iteration as f64, it.objective)));
    // The exact objective over every item, known when the run ends.
    let exact = run
        .record
        .as_ref()
        .and_then(|r| r.details.get("objective")?.as_f64());
    let x_lo = points.first().map_or(0.0, |p| p.0);
    let x_hi = points.last().map_or(1.0, |p| p.0).max(x_lo + 1.0);
    let end_line = exact.map_or(Vec::new(), |f| vec![(x_lo, f), (x_hi, f)]);
    let [lo, hi] = bounds(points.iter().map(|p| p.1).chain(exact));
    let g = finite(
        run.vb
            .iter()
            .filter(|it| it.grad_norm > 0.0)
            .map(|it| (it.iteration as f64, it.grad_norm.log10())),
    );
    let [gl, gh] = bounds(g.iter().map(|p| p.1));
    // + 0.0: no "1e-0" label for a ceiling of −0.
    let (gl, gh) = (gl.floor() + 0.0, gh.ceil().max(gl.floor() + 1.0) + 0.0);
    // Both charts' y labels padded to one width, so their x axes line up.
    let labels = [num(lo), num(hi), format!("1e{gl:.0}"), format!("1e{gh:.0}")];
    let width = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0);
    let [f_lo, f_hi, g_lo, g_hi] = labels.map(|l| format!("{l:>width$}"));
    let f_style = theme.fg(Color::Magenta);
    if f_area.height >= 3 && f_area.width >= 12 {
        let mut ds = Vec::new();
        if estimated {
            ds.push(
                Dataset::default()
                    .data(&end_line)
                    .graph_type(GraphType::Line)
                    .marker(theme.marker)
                    .style(theme.dim()),
            );
        }
        ds.push(
            Dataset::default()
                .data(&points)
                .graph_type(if estimated {
                    GraphType::Scatter
                } else {
                    GraphType::Line
                })
                // Held-out estimates as dots whatever the line marker.
                .marker(if estimated { Marker::Dot } else { theme.marker })
                .style(f_style),
        );
        let chart = Chart::new(ds)
            .x_axis(
                Axis::default()
                    .bounds([x_lo, x_hi])
                    .labels([format!("{x_lo:.0}"), format!("{x_hi:.0}")])
                    .style(theme.dim()),
            )
            .y_axis(
                Axis::default()
                    .bounds([lo, hi])
                    .labels([f_lo, f_hi])
                    .style(theme.dim()),
            );
        frame.render_widget(chart, f_area);
    }
    if two && g_area.height >= 3 {
        let chart = Chart::new(vec![
            Dataset::default()
                .data(&g)
                .graph_type(GraphType::Line)
                .marker(theme.marker)
                .style(theme.fg(Color::Blue)),
        ])
        .x_axis(Axis::default().bounds([x_lo, x_hi]).style(theme.dim()))
        .y_axis(
            Axis::default()
                .bounds([gl, gh])
                .labels([g_lo, g_hi])
                .style(theme.dim()),
        );
        frame.render_widget(chart, g_area);
    }
    let mut legend = if estimated {
        vec![
            Span::styled("• F held-out estimate ", f_style),
            Span::styled("─ exact F ", theme.dim()),
        ]
    } else {
        vec![Span::styled("━ F = γ·E[R] + KL ", f_style)]
    };
    if two {
        legend.push(Span::styled("━ ‖∇F‖∞ (log)", theme.fg(Color::Blue)));
    }
    frame.render_widget(Paragraph::new(Line::from(legend)), legend_area);
    let optimizer = if estimated { "Adam" } else { "L-BFGS" };
    let (family, loss) = match &run.spec.method {
        MethodSpec::Vb(s) => (
            serde_json::to_value(s.family).unwrap_or_default(),
            serde_json::to_value(s.loss).unwrap_or_default(),
        ),
        _ => Default::default(),
    };
    let stats = vec![
        Line::from(vec![
            Span::styled("iter ", theme.dim()),
            Span::raw(format!("{}", last.iteration)),
            Span::styled("  F ", theme.dim()),
            Span::raw(num(exact.unwrap_or(last.objective))),
            Span::styled(
                if exact.is_none() && last.estimate {
                    " (held-out)"
                } else {
                    ""
                },
                theme.dim(),
            ),
            Span::styled("  ‖∇‖∞ ", theme.dim()),
            Span::raw(format!("{:.1e}", last.grad_norm)),
        ]),
        Line::from(vec![
            Span::styled(format!("{optimizer} "), theme.dim()),
            Span::styled("step ", theme.dim()),
            Span::raw(format!("{:.1e}", last.step)),
            Span::styled(
                format!(
                    "  {} {} ",
                    family.as_str().unwrap_or(""),
                    loss.as_str().unwrap_or("")
                ),
                theme.dim(),
            ),
            Span::raw(seconds(run.elapsed().unwrap_or(last.elapsed))),
        ]),
    ];
    frame.render_widget(Paragraph::new(stats), stats_area);
}
