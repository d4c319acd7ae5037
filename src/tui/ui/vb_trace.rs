//! VB in the convergence pane: the objective F = γ·E_ρ[R] + KL per iteration
//! (L-BFGS steps as a line; the stochastic optimiser's held-out estimates as
//! markers, with the exact F over all items once the run ends), the gradient's
//! largest component on a log scale when there is room, and the optimiser's
//! state.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use super::common::{num, placeholder, seconds};
use super::figure_chart::{resolve, stacked};
use super::theme::Theme;
use crate::app::run_view::RunView;
use crate::figures::{VB_GRADIENT, VB_OBJECTIVE};
use crate::spec::MethodSpec;

pub fn render(run: &RunView, inner: Rect, frame: &mut Frame, theme: &Theme) {
    let Some(last) = run.vb.last() else {
        placeholder(frame, inner, "waiting for the first iteration…", theme);
        return;
    };
    let estimated = run.vb.iter().any(|it| it.estimate);
    // The exact objective over every item, known when the run ends.
    let exact = run.record.as_ref().and_then(|r| r.final_objective());
    // The same figure `p` writes: F per iteration, ‖∇F‖∞ below.
    let fig = run.vb_figure();
    let f = fig
        .as_ref()
        .and_then(|f| f.panel(VB_OBJECTIVE))
        .map(resolve);
    let g = fig.as_ref().and_then(|f| f.panel(VB_GRADIENT)).map(resolve);
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
    stacked(frame, [f.as_ref(), g.as_ref()], stats, inner, theme);
}
