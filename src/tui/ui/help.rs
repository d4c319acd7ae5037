//! The `?` overlay: every key from the key table, grouped.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};

use super::theme::Theme;
use crate::app::App;
use crate::app::keys::{BINDINGS, FORM_KEYS, Group};

/// A centred rectangle of at most `w`×`h` inside `area`.
pub fn centered(area: Rect, w: u16, h: u16) -> Rect {
    let w = w.min(area.width);
    let h = h.min(area.height);
    Rect {
        x: area.x.saturating_add((area.width - w) / 2),
        y: area.y.saturating_add((area.height - h) / 2),
        width: w,
        height: h,
    }
}

pub fn render(app: &App, area: Rect, frame: &mut Frame) {
    let theme = Theme::of(app);
    let mut lines = Vec::new();
    for group in [Group::General, Group::Runs, Group::Navigation] {
        lines.push(Line::styled(group.title(), theme.title()));
        for b in BINDINGS.iter().filter(|b| b.group == group) {
            lines.push(Line::from(vec![
                Span::styled(
                    format!("  {:<11}", b.label),
                    theme.fg(ratatui::style::Color::Cyan),
                ),
                Span::raw(b.help),
            ]));
        }
    }
    let form: Vec<String> = FORM_KEYS.iter().map(|(k, v)| format!("{k} {v}")).collect();
    lines.push(Line::from(vec![
        Span::styled("Run form ", theme.title()),
        Span::raw(form.join(" · ")),
    ]));
    if let Some(dir) = &app.export_dir {
        lines.push(Line::from(vec![
            Span::styled("Exports ", theme.title()),
            Span::raw(format!("e writes to {}", dir.display())),
        ]));
    }
    lines.push(Line::from(vec![
        Span::styled("Figures ", theme.title()),
        Span::raw(format!(
            "p writes PNG and SVG to {}/<data>-<method>-<run>",
            app.figures_dir.display()
        )),
    ]));
    // Notes only where there is room.
    let notes = [
        "Run form: the settings that apply to the method and prior; under them the focused one's help (as in pacauc fit --help).",
        "Marginals: mean ± 2 sd per coefficient; the selected one's SMC particle histogram with the EP or VB Gaussian overlaid.",
        "Sampler, SMC runs: K = move steps per stage (adaptive: until |correlation| with the stage start ≤ 0.1, at most 200).",
        "Esc or ? closes this help.",
    ];
    let room = (area.height as usize).saturating_sub(lines.len() + 2);
    if room > notes.len() {
        lines.push(Line::raw(""));
    }
    for n in notes.iter().take(room.saturating_sub(1)) {
        lines.push(Line::styled(*n, theme.dim()));
    }
    let h = (lines.len() as u16).saturating_add(2);
    let r = centered(area, 88, h);
    frame.render_widget(Clear, r);
    frame.render_widget(
        Paragraph::new(lines).wrap(Wrap { trim: false }).block(
            Block::default()
                .borders(Borders::ALL)
                .border_style(theme.border(true))
                .title(Span::styled(" Help: keys ", theme.title())),
        ),
        r,
    );
}
