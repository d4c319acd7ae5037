//! The marginals pane for a Gaussian-process run: a GP has no coefficients,
//! so the pane shows what its posterior is about — the training rows'
//! predictive scores ± 2 sd (rows sorted by their mean score) and, when the
//! length-scale was chosen by evidence, the evidence curve log Z_EP against ℓ
//! (a curve still rising at the longest ℓ means the data prefer a near-linear
//! score: the linear kernel is the limit ℓ → ∞).

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Chart, Dataset, GraphType, Paragraph};

use super::common::{bounds, finite, num, placeholder};
use super::theme::Theme;
use crate::app::run_view::RunView;
use crate::engine::record_details::GpDetails;

/// Whether `run` is a finished GP run (its record says so).
pub fn is_gp(run: &RunView) -> bool {
    run.record.as_ref().is_some_and(|r| r.gp().is_some())
}

pub fn render(run: &RunView, inner: Rect, frame: &mut Frame, theme: &Theme) {
    let Some(gp) = run.record.as_ref().and_then(|r| r.gp()) else {
        return;
    };
    let curve = &gp.evidence;
    let (scores_area, curve_area) = if curve.is_empty() {
        (inner, Rect::default())
    } else if inner.width >= 70 {
        let [a, _, b] = Layout::horizontal([
            Constraint::Percentage(55),
            Constraint::Length(2),
            Constraint::Fill(1),
        ])
        .areas(inner);
        (a, b)
    } else {
        let [a, b] =
            Layout::vertical([Constraint::Percentage(55), Constraint::Percentage(45)]).areas(inner);
        (a, b)
    };
    scores(&gp, scores_area, frame, theme);
    if !curve.is_empty() {
        evidence(&gp, curve, curve_area, frame, theme);
    }
}

fn scores(gp: &GpDetails, area: Rect, frame: &mut Frame, theme: &Theme) {
    if area.height < 4 || area.width < 20 {
        return;
    }
    let rows = &gp.scores;
    if rows.is_empty() {
        placeholder(frame, area, "no training scores in this record", theme);
        return;
    }
    let [title_area, chart_area] =
        Layout::vertical([Constraint::Length(1), Constraint::Fill(1)]).areas(area);
    let ell = gp
        .lengthscale
        .map_or("linear kernel".to_string(), |l| format!("ℓ {}", num(l)));
    let title = Line::from(vec![
        Span::styled(" training scores ", theme.title()),
        Span::styled(
            format!(
                "mean ± 2 sd, {} rows by score · {ell} · {} form",
                rows.len(),
                gp.form.as_deref().unwrap_or("?")
            ),
            theme.dim(),
        ),
    ]);
    frame.render_widget(Paragraph::new(title), title_area);
    let at = |f: &dyn Fn(&(f64, f64)) -> f64| -> Vec<(f64, f64)> {
        finite(rows.iter().enumerate().map(|(i, r)| (i as f64, f(r))))
    };
    let mean = at(&|r| r.0);
    let upper = at(&|r| r.0 + 2.0 * r.1);
    let lower = at(&|r| r.0 - 2.0 * r.1);
    let [lo, hi] = bounds(upper.iter().chain(&lower).map(|p| p.1));
    let band = theme.dim();
    let line = |data, style| {
        Dataset::default()
            .data(data)
            .graph_type(GraphType::Line)
            .marker(theme.marker)
            .style(style)
    };
    let chart = Chart::new(vec![
        line(&lower, band),
        line(&upper, band),
        line(&mean, theme.series(0)),
    ])
    .x_axis(
        Axis::default()
            .bounds([0.0, (rows.len().max(2) - 1) as f64])
            .labels(["lowest".to_string(), "highest".to_string()])
            .style(theme.dim()),
    )
    .y_axis(
        Axis::default()
            .bounds([lo, hi])
            .labels([num(lo), num(hi)])
            .style(theme.dim()),
    );
    frame.render_widget(chart, chart_area);
}

fn evidence(gp: &GpDetails, curve: &[(f64, f64)], area: Rect, frame: &mut Frame, theme: &Theme) {
    if area.height < 4 || area.width < 20 {
        return;
    }
    let [title_area, chart_area] =
        Layout::vertical([Constraint::Length(1), Constraint::Fill(1)]).areas(area);
    let (median, best, at_edge) = (gp.median_distance, gp.lengthscale, gp.at_edge);
    let mut title = vec![
        Span::styled(" log Z_EP vs ℓ ", theme.title()),
        Span::styled(
            match (best, median) {
                (Some(b), Some(m)) if m > 0.0 => {
                    format!("best {} = {}× median", num(b), num(b / m))
                }
                _ => String::new(),
            },
            theme.dim(),
        ),
    ];
    if at_edge {
        title.push(Span::styled(" at the end of the range", theme.warn()));
    }
    frame.render_widget(Paragraph::new(Line::from(title)), title_area);
    // log2 ℓ on the x axis: the search moves by factors of 2.
    let pts = finite(curve.iter().map(|&(l, z)| (l.log2(), z)));
    let [xlo, xhi] = bounds(pts.iter().map(|p| p.0));
    let [ylo, yhi] = bounds(pts.iter().map(|p| p.1));
    let marks: Vec<(f64, f64)> = best.map(|b| vec![(b.log2(), yhi)]).unwrap_or_default();
    let chart = Chart::new(vec![
        Dataset::default()
            .data(&pts)
            .graph_type(GraphType::Line)
            .marker(theme.marker)
            .style(theme.series(1)),
        Dataset::default()
            .data(&marks)
            .graph_type(GraphType::Scatter)
            .marker(theme.marker)
            .style(theme.warn()),
    ])
    .x_axis(
        Axis::default()
            .bounds([xlo, xhi])
            .labels([format!("ℓ {}", num(xlo.exp2())), num(xhi.exp2())])
            .style(theme.dim()),
    )
    .y_axis(
        Axis::default()
            .bounds([ylo, yhi])
            .labels([num(ylo), num(yhi)])
            .style(theme.dim()),
    );
    frame.render_widget(chart, chart_area);
}
