//! SMC pane: per stage ESS/N (with the τ line), γ_t/γ_T and the acceptance
//! rate on one [0, 1] chart; below it, when there is room, the move steps per
//! stage (as a share of their cap) and the largest |correlation| with the
//! stage start (with the 0.1 stop line); log Z_t, stage count, elapsed and
//! evaluations/s as text. Series differ by marker as well as colour. A
//! great-circle run is drawn by `gcs_trace` in the same pane.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::common::{fit_lines, num, pane_block, placeholder, seconds, si};
use super::figure_chart::{Labels, chart, legend_lines, resolve};
use super::gcs_trace;
use super::theme::Theme;
use crate::app::run_view::RunView;
use crate::app::{App, Pane};
use crate::figures::{SMC_MOVES, SMC_SHARES};

pub fn render(app: &App, area: Rect, frame: &mut Frame) {
    let theme = Theme::of(app);
    let run = app.run_for(RunView::is_sampler);
    let detail = run.map_or(String::new(), |r| {
        // Several independent runs: the trace is the one under way (or the last).
        let of = r
            .smc_run
            .map_or(String::new(), |(i, n)| format!(" · run {i} of {n}"));
        format!("{} {}{of}", r.title(), r.status_text())
    });
    // The pane shows the sampler of the chosen run: SMC's stages, or the
    // great-circle sampler's chains.
    if let Some(gcs) = run.filter(|r| r.is_gcs()) {
        let block = pane_block(app, Pane::Smc, detail, &theme);
        let inner = block.inner(area);
        frame.render_widget(block, area);
        gcs_trace::render(gcs, inner, frame, &theme);
        return;
    }
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
    let two = inner.height >= 16;
    let last = run.smc.last().expect("non-empty");
    let targets = run.smc_targets();
    let gamma_t = targets
        .gamma
        .filter(|g| g.is_finite() && *g > 0.0)
        .unwrap_or_else(|| last.gamma.max(1e-300));
    let (cap, adaptive) = targets.moves_cap.unwrap_or((1, false));
    let stop = targets.decorrelation.unwrap_or(f64::NAN);
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
    // K: the move steps of the last stage, against the cap (at the cap the
    // adaptive moves stopped before decorrelating: the run is not converged).
    let at_cap = adaptive && last.moves >= cap;
    let second = match moving {
        // A long stage: show its moves progressing rather than a frozen line.
        Some(m) => Line::from(vec![
            // The correlation first: it says how far the stage is from done
            // (the moves stop at ≤ `stop`); the narrow pane cuts the end.
            Span::styled(format!("stage {} move ", m.stage), theme.dim()),
            Span::raw(format!("{}/{cap}", m.step)),
            Span::styled(" |corr| ", theme.dim()),
            Span::raw(m.max_correlation.map_or("-".into(), |c| format!("{c:.2}"))),
            Span::styled(format!("→{stop}"), theme.dim()),
            Span::styled(" acc ", theme.dim()),
            Span::raw(format!("{:.0}%", 100.0 * m.acceptance)),
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
            Span::styled(" moves ", theme.dim()),
            Span::styled(
                format!("{}/{cap}{}", last.moves, if at_cap { " cap!" } else { "" }),
                if at_cap { theme.bad() } else { Style::new() },
            ),
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
    // The same figure `p` writes: the pane draws its first two panels.
    let fig = run.smc_figure();
    let shares = fig.as_ref().and_then(|f| f.panel(SMC_SHARES)).map(resolve);
    let moves = fig
        .as_ref()
        .and_then(|f| f.panel(SMC_MOVES))
        .map(resolve)
        .filter(|_| two);
    let width = inner.width;
    let legend = shares
        .as_ref()
        .map_or(Vec::new(), |c| legend_lines(&[c], &theme, width));
    let moves_legend = moves
        .as_ref()
        .map_or(Vec::new(), |c| legend_lines(&[c], &theme, width));
    let stats = fit_lines(stats, width as usize, 2);
    let [
        chart_area,
        legend_area,
        moves_area,
        moves_legend_area,
        stats_area,
    ] = Layout::vertical([
        Constraint::Min(0),
        Constraint::Length(legend.len() as u16),
        Constraint::Length(if moves.is_some() { inner.height / 3 } else { 0 }),
        Constraint::Length(moves_legend.len() as u16),
        Constraint::Length(stats.len() as u16),
    ])
    .areas(inner);
    if let Some(c) = &shares
        && chart_area.height >= 3
        && chart_area.width >= 12
    {
        let labels = Labels {
            x: moves.is_none(),
            ..Labels::trace(0)
        };
        frame.render_widget(chart(c, &theme, labels), chart_area);
    }
    frame.render_widget(Paragraph::new(legend), legend_area);
    if let Some(c) = &moves
        && moves_area.height >= 3
    {
        frame.render_widget(chart(c, &theme, Labels::trace(0)), moves_area);
        frame.render_widget(Paragraph::new(moves_legend), moves_legend_area);
    }
    frame.render_widget(Paragraph::new(stats), stats_area);
}
