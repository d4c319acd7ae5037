//! Helpers shared by the panes: blocks, number formats, safe chart bounds.

use ratatui::Frame;
use ratatui::layout::{Alignment, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};

use super::theme::Theme;
use crate::app::{App, Pane};

/// The bordered block of a pane; the focused pane's border stands out.
pub fn pane_block<'a>(app: &App, pane: Pane, detail: String, theme: &Theme) -> Block<'a> {
    titled_block(app, pane, pane.title(), detail, theme)
}

/// A pane's block under another name (a pane showing another kind of run).
pub fn titled_block<'a>(
    app: &App,
    pane: Pane,
    name: &str,
    detail: String,
    theme: &Theme,
) -> Block<'a> {
    let focused = app.focus == pane;
    let mut title = vec![Span::styled(
        format!(" {} {} ", pane.index() + 1, name),
        theme.title(),
    )];
    if !detail.is_empty() {
        title.push(Span::styled(format!("{detail} "), theme.dim()));
    }
    Block::default()
        .borders(Borders::ALL)
        .border_style(theme.border(focused))
        .title(Line::from(title))
}

/// Groups of spans packed into lines of at most `width` columns, a group
/// never split (a legend entry, a label with its value): a group that does not
/// fit starts the next line, indented by `indent`. Panes pack their legends
/// and status lines so that a narrow pane wraps them instead of cutting them.
pub fn pack(groups: Vec<Vec<Span<'static>>>, width: usize, indent: usize) -> Vec<Line<'static>> {
    let mut lines: Vec<Vec<Span<'static>>> = vec![Vec::new()];
    let mut used = 0;
    for group in groups {
        let w: usize = group.iter().map(|s| s.content.chars().count()).sum();
        let trimmed = group
            .last()
            .map_or(0, |s| s.content.len() - s.content.trim_end().len());
        if used > 0 && used + w - trimmed > width {
            lines.push(vec![Span::raw(" ".repeat(indent))]);
            used = indent;
        }
        used += w;
        lines.last_mut().expect("one line at least").extend(group);
    }
    lines.into_iter().map(Line::from).collect()
}

/// Status lines fitted to `width`: each line's spans are grouped (a span that
/// starts with a space opens a group, so a label stays with its value) and
/// packed; continuation lines are indented by `indent`.
pub fn fit_lines(lines: Vec<Line<'static>>, width: usize, indent: usize) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    for line in lines {
        let mut groups: Vec<Vec<Span<'static>>> = Vec::new();
        for span in line.spans {
            let span = span.patch_style(line.style);
            if groups.is_empty() || span.content.starts_with(' ') {
                groups.push(Vec::new());
            }
            groups.last_mut().expect("pushed").push(span);
        }
        let packed = pack(groups, width, indent);
        for (k, mut l) in packed.into_iter().enumerate() {
            if k > 0 {
                // The group that opens a continuation line drops its space.
                if let Some(first) = l.spans.get_mut(1) {
                    first.content = first.content.trim_start().to_string().into();
                }
            }
            out.push(l);
        }
    }
    out
}

/// The words of `text` as groups for `pack`, each keeping its space.
pub fn words(text: &str, style: Style) -> Vec<Vec<Span<'static>>> {
    text.split_inclusive(' ')
        .map(|w| vec![Span::styled(w.to_string(), style)])
        .collect()
}

/// A dim message centred in `area` (an empty pane says what would fill it).
pub fn placeholder(frame: &mut Frame, area: Rect, text: &str, theme: &Theme) {
    if area.height == 0 || area.width == 0 {
        return;
    }
    let top = area.height.saturating_sub(1) / 2;
    let r = Rect {
        y: area.y.saturating_add(top),
        height: area.height.saturating_sub(top),
        ..area
    };
    frame.render_widget(
        Paragraph::new(text.to_string())
            .style(theme.dim())
            .alignment(Alignment::Center)
            .wrap(Wrap { trim: true }),
        r,
    );
}

/// A number in at most ~9 characters; "-" when not finite.
pub fn num(v: f64) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    let a = v.abs();
    if a != 0.0 && !(1e-3..1e5).contains(&a) {
        format!("{v:.2e}")
    } else if a >= 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

pub fn opt_num(v: Option<f64>) -> String {
    v.map_or("-".into(), num)
}

/// 1234567 → "1.2M".
pub fn si(v: f64) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    let a = v.abs();
    if a >= 1e9 {
        format!("{:.1}G", v / 1e9)
    } else if a >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if a >= 1e3 {
        format!("{:.1}k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

pub fn seconds(s: f64) -> String {
    if !s.is_finite() {
        "-".into()
    } else if s < 1.0 {
        format!("{:.0} ms", s * 1000.0)
    } else if s < 120.0 {
        format!("{s:.1} s")
    } else {
        // Short enough for the results table's time column ("12m 05s").
        format!("{:.0}m {:02.0}s", (s / 60.0).floor(), (s % 60.0).floor())
    }
}

/// Only finite points reach a chart.
pub fn finite(points: impl IntoIterator<Item = (f64, f64)>) -> Vec<(f64, f64)> {
    points
        .into_iter()
        .filter(|(x, y)| x.is_finite() && y.is_finite())
        .collect()
}

/// Bounds of the finite values, widened when empty or flat.
pub fn bounds(values: impl IntoIterator<Item = f64>) -> [f64; 2] {
    let (lo, hi) = values
        .into_iter()
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), v| {
            (l.min(v), h.max(v))
        });
    if !(lo.is_finite() && hi.is_finite()) {
        return [0.0, 1.0];
    }
    if hi - lo <= 1e-12 * lo.abs().max(1.0) {
        let pad = 0.5 * lo.abs().max(1.0);
        return [lo - pad, hi + pad];
    }
    [lo, hi]
}

/// Truncates to `w` characters with an ellipsis.
pub fn fit(s: &str, w: usize) -> String {
    let n = s.chars().count();
    if n <= w {
        s.to_string()
    } else if w == 0 {
        String::new()
    } else {
        let mut t: String = s.chars().take(w - 1).collect();
        t.push('…');
        t
    }
}

/// Eight-level bar glyphs, for sparklines.
pub const BARS: [char; 9] = [' ', '▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

pub fn sparkline(counts: &[f64]) -> String {
    let max = counts
        .iter()
        .copied()
        .filter(|c| c.is_finite())
        .fold(0.0, f64::max);
    counts
        .iter()
        .map(|&c| {
            if !(max > 0.0 && c.is_finite() && c > 0.0) {
                ' '
            } else {
                BARS[((c / max * 8.0).ceil() as usize).clamp(1, 8)]
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charts_never_see_nan() {
        let p = finite([(0.0, 1.0), (f64::NAN, 1.0), (1.0, f64::INFINITY)]);
        assert_eq!(p, vec![(0.0, 1.0)]);
        assert_eq!(bounds([f64::NAN]), [0.0, 1.0]);
        let [a, b] = bounds([2.0, 2.0]);
        assert!(a < 2.0 && b > 2.0);
        assert_eq!(num(f64::NAN), "-");
        assert_eq!(sparkline(&[0.0, 1.0, 2.0, f64::NAN]), " ▄█ ");
        assert_eq!(fit("abcdef", 4), "abc…");
    }

    fn text(lines: &[Line]) -> Vec<String> {
        lines.iter().map(|l| l.to_string()).collect()
    }

    #[test]
    fn packing_wraps_whole_groups_and_never_loses_text() {
        let groups = words(
            "target 'y' (the last column; name another with --target)",
            Style::new(),
        );
        let lines = text(&pack(groups, 24, 2));
        assert!(
            lines.iter().all(|l| l.trim_end().chars().count() <= 24),
            "{lines:?}"
        );
        let joined: Vec<&str> = lines.iter().flat_map(|l| l.split_whitespace()).collect();
        assert_eq!(
            joined.join(" "),
            "target 'y' (the last column; name another with --target)"
        );
        assert!(
            lines[1].starts_with("  ") && !lines[1].starts_with("   "),
            "{lines:?}"
        );
        // A line that fits stays one line; a group is never split.
        assert_eq!(pack(words("a b c", Style::new()), 5, 0).len(), 1);
        let legend = vec![
            vec![Span::raw("⠒ ESS/N ")],
            vec![Span::raw("─ τ = 0.5: the ESS target ")],
        ];
        assert_eq!(
            text(&pack(legend, 20, 0)),
            ["⠒ ESS/N ", "─ τ = 0.5: the ESS target "]
        );
    }
}
