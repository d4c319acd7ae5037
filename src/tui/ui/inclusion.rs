//! Inclusion pane: spike-and-slab P(z_k = 1 | D) as sorted bars with the 0.5 line.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::common::{fit, pane_block, placeholder};
use super::figure_chart::bars;
use super::theme::Theme;
use crate::app::run_view::RunView;
use crate::app::{App, Pane};
use crate::engine::record::Inclusion;
use crate::figures::inclusion_top;

const EIGHTHS: [char; 8] = ['▏', '▎', '▍', '▌', '▋', '▊', '▉', '█'];

/// A bar of `p ∈ [0, 1]` over `w` cells, with the 0.5 mark; returns the
/// characters and whether each is filled.
pub fn bar(p: f64, w: usize) -> Vec<(char, bool)> {
    let p = if p.is_finite() {
        p.clamp(0.0, 1.0)
    } else {
        0.0
    };
    let eighths = (p * (w * 8) as f64).round() as usize;
    let half = w / 2;
    (0..w)
        .map(|i| {
            let filled = eighths.saturating_sub(i * 8).min(8);
            match filled {
                0 if i == half => ('│', false),
                0 => (' ', false),
                f => (EIGHTHS[f - 1], true),
            }
        })
        .collect()
}

/// A run's inclusion probabilities, highest first: the bars of its
/// inclusion figure (`figures::inclusion_top`, every feature).
fn sorted(r: &RunView, names: &[String]) -> Option<Vec<(String, f64)>> {
    let probs: Vec<Inclusion> = r
        .inclusion(names)?
        .into_iter()
        .map(|(name, prob)| Inclusion { name, prob })
        .collect();
    let fig = inclusion_top(&probs, &r.title(), "inclusion", usize::MAX)?;
    Some(bars(&fig.panels[0]))
}

/// The run shown beside `primary`: the newest of the other engine (EP beside
/// SMC and SMC beside EP) with inclusion probabilities, to compare them.
fn companion<'a>(app: &'a App, primary: &RunView) -> Option<&'a RunView> {
    let names = app.names();
    let other = |r: &RunView| {
        r.id != primary.id
            && r.inclusion(names).is_some()
            && if primary.is_smc() {
                r.is_ep()
            } else {
                r.is_smc()
            }
    };
    app.run_for(other)
}

/// A run's title with its status when the numbers are not final.
fn run_label(r: &RunView) -> String {
    match r.status_note() {
        None => r.title(),
        Some(n) => format!("{} ({n})", r.title()),
    }
}

pub fn render(app: &App, area: Rect, frame: &mut Frame) {
    let theme = Theme::of(app);
    let names = app.names();
    let run = app.run_for(|r| r.inclusion(names).is_some());
    let second = run.and_then(|r| companion(app, r));
    let selected = run
        .and_then(|r| r.inclusion(names))
        .map_or(0, |p| p.iter().filter(|p| p.1 > 0.5).count());
    let detail = run.map_or(String::new(), |r| {
        let vs = second.map_or(String::new(), |s| format!(" vs {}", run_label(s)));
        format!("{}{vs} · {selected} above ½", run_label(r))
    });
    let block = pane_block(app, Pane::Inclusion, detail, &theme);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let Some(probs) = run.and_then(|r| sorted(r, names)) else {
        placeholder(
            frame,
            inner,
            "inclusion probabilities come from a spike-and-slab run (prior spike-slab)",
            &theme,
        );
        return;
    };
    if inner.height < 2 || inner.width < 12 {
        return;
    }
    let other: Vec<(String, f64)> = second.and_then(|r| sorted(r, names)).unwrap_or_default();
    let w = inner.width as usize;
    let name_w = probs
        .iter()
        .map(|p| p.0.chars().count())
        .max()
        .unwrap_or(4)
        .clamp(4, (w / 3).max(4));
    let columns = if other.is_empty() { 1 } else { 2 };
    let bar_w = (w.saturating_sub(name_w + 1) / columns)
        .saturating_sub(7)
        .max(4);
    let visible = (inner.height as usize).saturating_sub(1);
    let offset = app
        .inclusion_scroll
        .min(probs.len().saturating_sub(visible));
    let mut head = vec![' '; bar_w];
    head[0] = '0';
    head[bar_w / 2] = '½';
    head[bar_w - 1] = '1';
    let head: String = head.into_iter().collect();
    let mut head_spans = vec![Span::raw(format!("{:<name_w$} ", ""))];
    for (i, r) in run.into_iter().chain(second).enumerate() {
        // Each column's bars are headed by its run (and colour).
        let tag = if columns == 2 {
            format!("#{} ", r.id)
        } else {
            String::new()
        };
        let rest: String = head.chars().skip(tag.chars().count()).collect();
        head_spans.push(Span::styled(tag, theme.series(i)));
        head_spans.push(Span::styled(format!("{rest}       "), theme.dim()));
    }
    let mut lines = vec![Line::from(head_spans)];
    for (name, p) in probs.iter().skip(offset).take(visible) {
        let mut spans = vec![Span::raw(format!("{:<name_w$} ", fit(name, name_w)))];
        let q = other.iter().find(|o| &o.0 == name).map(|o| o.1);
        for p in std::iter::once(Some(*p)).chain((columns == 2).then_some(q)) {
            let Some(p) = p else {
                spans.push(Span::raw(format!("{:bar_w$}       ", "")));
                continue;
            };
            let style = if p > 0.5 { theme.good() } else { theme.dim() };
            let cells = bar(p, bar_w);
            let filled: String = cells.iter().filter(|c| c.1).map(|c| c.0).collect();
            let rest: String = cells.iter().filter(|c| !c.1).map(|c| c.0).collect();
            spans.push(Span::styled(filled, style));
            spans.push(Span::styled(rest, theme.warn()));
            spans.push(Span::raw(format!(" {p:.3} ")));
        }
        lines.push(Line::from(spans));
    }
    frame.render_widget(Paragraph::new(lines), inner);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_fill_in_eighths_and_mark_half() {
        let s: String = bar(0.0, 10).iter().map(|c| c.0).collect();
        assert_eq!(s, "     │    ");
        let s: String = bar(1.0, 4).iter().map(|c| c.0).collect();
        assert_eq!(s, "████");
        let s: String = bar(0.3, 10).iter().map(|c| c.0).collect();
        assert_eq!(s, "███  │    ");
        assert_eq!(bar(f64::NAN, 3).len(), 3);
    }
}
