//! SMC pane: per stage ESS/N (with the τ line), γ_t/γ_T and the acceptance
//! rate on one [0, 1] chart; log Z_t, stage count, elapsed and evaluations/s
//! as text.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Chart, Dataset, GraphType, Paragraph};

use super::common::{finite, num, pane_block, placeholder, seconds, si};
use super::theme::Theme;
use crate::app::run_view::RunView;
use crate::app::{App, Pane};
use ratatui::style::Color;

pub fn render(app: &App, area: Rect, frame: &mut Frame) {
    let theme = Theme::of(app);
    let run = app.run_for(RunView::is_smc);
    let detail = run.map_or(String::new(), |r| {
        format!("{} {}", r.title(), r.status.word())
    });
    let block = pane_block(app, Pane::Smc, detail, &theme);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let Some(run) = run.filter(|r| !r.smc.is_empty()) else {
        let msg = match run {
            Some(_) => "waiting for the first stage…",
            None => "no SMC run yet: n opens the run form",
        };
        placeholder(frame, inner, msg, &theme);
        return;
    };
    let [chart_area, legend_area, stats_area] = Layout::vertical([
        Constraint::Min(0),
        Constraint::Length(1),
        Constraint::Length(2),
    ])
    .areas(inner);
    let last = run.smc.last().expect("non-empty");
    let gamma_t = run
        .start
        .as_ref()
        .map(|s| s.gamma)
        .or_else(|| run.record.as_ref().and_then(|r| r.gamma))
        .filter(|g| g.is_finite() && *g > 0.0)
        .unwrap_or_else(|| last.gamma.max(1e-300));
    let tau = run.ess_target();
    let ess = finite(run.smc.iter().map(|s| (s.stage as f64, s.ess_frac)));
    let gam = finite(run.smc.iter().map(|s| (s.stage as f64, s.gamma / gamma_t)));
    let acc = finite(run.smc.iter().map(|s| (s.stage as f64, s.acceptance)));
    let x_hi = (last.stage as f64).max(2.0);
    let x_lo = run
        .smc
        .iter()
        .next()
        .map_or(1.0, |s| s.stage as f64)
        .min(x_hi - 1.0);
    let tau_line = [(x_lo, tau), (x_hi, tau)];
    if chart_area.height >= 3 && chart_area.width >= 12 {
        let ds = vec![
            Dataset::default()
                .data(&tau_line)
                .graph_type(GraphType::Line)
                .marker(theme.marker)
                .style(theme.dim()),
            Dataset::default()
                .data(&gam)
                .graph_type(GraphType::Line)
                .marker(theme.marker)
                .style(theme.fg(Color::Yellow)),
            Dataset::default()
                .data(&acc)
                .graph_type(GraphType::Line)
                .marker(theme.marker)
                .style(theme.fg(Color::Green)),
            Dataset::default()
                .data(&ess)
                .graph_type(GraphType::Line)
                .marker(theme.marker)
                .style(theme.fg(Color::Cyan)),
        ];
        let chart = Chart::new(ds)
            .x_axis(
                Axis::default()
                    .bounds([x_lo, x_hi])
                    .labels([format!("{x_lo:.0}"), format!("stage {x_hi:.0}")])
                    .style(theme.dim()),
            )
            .y_axis(
                Axis::default()
                    .bounds([0.0, 1.0])
                    .labels(["0", "½", "1"])
                    .style(theme.dim()),
            );
        frame.render_widget(chart, chart_area);
    }
    let legend = Line::from(vec![
        Span::styled("━ ESS/N ", theme.fg(Color::Cyan)),
        Span::styled("━ γ/γT ", theme.fg(Color::Yellow)),
        Span::styled("━ accept ", theme.fg(Color::Green)),
        Span::styled(format!("─ τ={tau}"), theme.dim()),
    ]);
    frame.render_widget(Paragraph::new(legend), legend_area);
    let rate = if last.elapsed > 0.0 {
        last.evaluations as f64 / last.elapsed
    } else {
        f64::NAN
    };
    let log_z = run
        .record
        .as_ref()
        .and_then(|r| r.log_evidence)
        .unwrap_or(last.log_z);
    let moving = run.smc_move.as_ref().filter(|_| run.record.is_none());
    let second = match moving {
        // A long stage: show its moves progressing rather than a frozen line.
        Some(m) => Line::from(vec![
            Span::styled(format!("stage {}: move ", m.stage), theme.dim()),
            Span::raw(format!("{}", m.step)),
            Span::styled(" acc ", theme.dim()),
            Span::raw(format!("{:.0}%", 100.0 * m.acceptance)),
            Span::styled(" corr ", theme.dim()),
            Span::raw(m.max_correlation.map_or("-".into(), |c| format!("{c:.2}"))),
        ]),
        None => Line::from(vec![
            Span::styled("ESS ", theme.dim()),
            Span::raw(format!("{:.0}%", 100.0 * last.ess_frac)),
            Span::styled(" acc ", theme.dim()),
            Span::raw(format!("{:.0}%", 100.0 * last.acceptance)),
            Span::raw(format!(
                " {}",
                seconds(run.elapsed().unwrap_or(last.elapsed))
            )),
            Span::raw(format!(" {}", si(rate))),
            Span::styled(" evals/s", theme.dim()),
            Span::styled(" K ", theme.dim()),
            Span::raw(format!("{}", last.moves)),
        ]),
    };
    let stats = vec![
        Line::from(vec![
            Span::styled("stage ", theme.dim()),
            Span::raw(format!("{}", last.stage)),
            Span::styled(" γ ", theme.dim()),
            Span::raw(format!("{}/{}", num(last.gamma), num(gamma_t))),
            Span::styled(" log Z ", theme.dim()),
            Span::raw(num(log_z)),
        ]),
        second,
    ];
    frame.render_widget(Paragraph::new(stats), stats_area);
}
