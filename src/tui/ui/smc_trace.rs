//! SMC pane: per stage ESS/N (with the τ line), γ_t/γ_T and the acceptance
//! rate on one [0, 1] chart; below it, when there is room, the move steps per
//! stage (as a share of their cap) and the largest |correlation| with the
//! stage start (with the 0.1 stop line); log Z_t, stage count, elapsed and
//! evaluations/s as text. Series differ by marker as well as colour. A
//! great-circle run is drawn by `gcs_trace` in the same pane.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Style};
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Chart, Dataset, GraphType, Paragraph};

use super::common::{finite, num, pane_block, placeholder, seconds, si, titled_block};
use super::gcs_trace;
use super::theme::{Theme, glyph};
use crate::app::run_view::RunView;
use crate::app::{App, Pane};
use crate::engine::smc::{Moves, SmcSettings};
use crate::spec::MethodSpec;

/// The decorrelation threshold of the adaptive moves (the engine's default).
fn decorrelation() -> f64 {
    SmcSettings::default().decorrelation
}

/// The cap on move steps per stage of a run's spec, and whether the moves
/// are adaptive (stop once decorrelated) or fixed.
pub fn moves_cap(run: &RunView) -> (usize, bool) {
    let default = SmcSettings::default().moves;
    match &run.spec.method {
        MethodSpec::Smc(s) => match (s.waste_free, s.moves) {
            (Some(p), _) => (p.saturating_sub(1).max(1), false),
            (None, Some(k)) => (k, false),
            (None, None) => match default {
                Moves::Adaptive { max, .. } => (max, true),
                Moves::Fixed(k) => (k, false),
            },
        },
        _ => (1, false),
    }
}

/// The pane's series, per stage: ESS/N, γ/γ_T, acceptance, moves/cap, |corr|.
pub struct Series {
    pub ess: Vec<(f64, f64)>,
    pub gamma: Vec<(f64, f64)>,
    pub accept: Vec<(f64, f64)>,
    pub moves: Vec<(f64, f64)>,
    pub corr: Vec<(f64, f64)>,
}

pub fn series(run: &RunView, gamma_t: f64, cap: usize) -> Series {
    let at = |f: &dyn Fn(&crate::engine::event::SmcStage) -> Option<f64>| {
        finite(run.smc.iter().filter_map(|s| Some((s.stage as f64, f(s)?))))
    };
    Series {
        ess: at(&|s| Some(s.ess_frac)),
        gamma: at(&|s| Some(s.gamma / gamma_t)),
        accept: at(&|s| Some(s.acceptance)),
        moves: at(&|s| (s.stage > 0).then(|| s.moves as f64 / cap.max(1) as f64)),
        corr: at(&|s| s.max_correlation.map(|c| c.min(1.0))),
    }
}

fn line<'a>(data: &'a [(f64, f64)], marker: Marker, style: Style) -> Dataset<'a> {
    Dataset::default()
        .data(data)
        .graph_type(GraphType::Line)
        .marker(marker)
        .style(style)
}

fn unit_chart<'a>(ds: Vec<Dataset<'a>>, x: [f64; 2], theme: &Theme, x_label: bool) -> Chart<'a> {
    let labels = if x_label {
        vec![format!("{:.0}", x[0]), format!("stage {:.0}", x[1])]
    } else {
        Vec::new()
    };
    Chart::new(ds)
        .x_axis(Axis::default().bounds(x).labels(labels).style(theme.dim()))
        .y_axis(
            Axis::default()
                .bounds([0.0, 1.0])
                .labels(["0", "½", "1"])
                .style(theme.dim()),
        )
}

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
        let block = titled_block(app, Pane::Smc, "Sampler", detail, &theme);
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
    let [
        chart_area,
        legend_area,
        moves_area,
        moves_legend,
        stats_area,
    ] = Layout::vertical([
        Constraint::Min(0),
        Constraint::Length(1),
        Constraint::Length(if two { inner.height / 3 } else { 0 }),
        Constraint::Length(u16::from(two)),
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
    let (cap, adaptive) = moves_cap(run);
    let sr = series(run, gamma_t, cap);
    let x_hi = (last.stage as f64).max(2.0);
    let x_lo = run
        .smc
        .iter()
        .next()
        .map_or(1.0, |s| s.stage as f64)
        .min(x_hi - 1.0);
    let [m0, m1, m2] = theme.series_markers();
    let tau_line = [(x_lo, tau), (x_hi, tau)];
    if chart_area.height >= 3 && chart_area.width >= 12 {
        let ds = vec![
            line(&tau_line, theme.marker, theme.dim()),
            line(&sr.gamma, m1, theme.fg(Color::Yellow)),
            line(&sr.accept, m2, theme.fg(Color::Green)),
            line(&sr.ess, m0, theme.fg(Color::Cyan)),
        ];
        frame.render_widget(unit_chart(ds, [x_lo, x_hi], &theme, !two), chart_area);
    }
    let legend = Line::from(vec![
        Span::styled(format!("{} ESS/N ", glyph(m0)), theme.fg(Color::Cyan)),
        Span::styled(format!("{} γ/γT ", glyph(m1)), theme.fg(Color::Yellow)),
        Span::styled(format!("{} accept ", glyph(m2)), theme.fg(Color::Green)),
        Span::styled(format!("─ τ={tau}"), theme.dim()),
    ]);
    frame.render_widget(Paragraph::new(legend), legend_area);
    let stop = decorrelation();
    if two && moves_area.height >= 3 {
        let stop_line = [(x_lo, stop), (x_hi, stop)];
        let ds = vec![
            line(&stop_line, theme.marker, theme.dim()),
            line(&sr.corr, m1, theme.fg(Color::Magenta)),
            line(&sr.moves, m2, theme.fg(Color::Blue)),
        ];
        frame.render_widget(unit_chart(ds, [x_lo, x_hi], &theme, true), moves_area);
        let kind = if adaptive { "≤" } else { "=" };
        let legend = Line::from(vec![
            Span::styled(format!("{} moves/{cap} ", glyph(m2)), theme.fg(Color::Blue)),
            Span::styled(format!("{} |corr| ", glyph(m1)), theme.fg(Color::Magenta)),
            Span::styled(
                format!("─ {stop} stop (K {kind} {cap} moves a stage)"),
                theme.dim(),
            ),
        ]);
        frame.render_widget(Paragraph::new(legend), moves_legend);
    }
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
    frame.render_widget(Paragraph::new(stats), stats_area);
}
