//! The `m` overlay: the session's message log in full, wrapped (never cut),
//! newest at the bottom, scrollable.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

use super::help::centered;
use super::theme::Theme;
use crate::app::App;
use crate::app::messages::{Level, wrap};

pub fn render(app: &App, area: Rect, frame: &mut Frame) {
    let theme = Theme::of(app);
    let r = centered(area, area.width.saturating_sub(4).max(20), area.height);
    let inner_w = r.width.saturating_sub(2) as usize;
    let inner_h = r.height.saturating_sub(2) as usize;
    let mut lines: Vec<Line> = Vec::new();
    for e in &app.messages.entries {
        let (tag, style) = match e.level {
            Level::Info => ("  ", theme.dim()),
            Level::Warn => ("⚠ ", theme.warn()),
            Level::Error => ("✗ ", theme.bad()),
        };
        for (i, l) in wrap(&e.text, inner_w.saturating_sub(2))
            .into_iter()
            .enumerate()
        {
            let lead = if i == 0 { tag } else { "  " };
            let text_style = if e.level == Level::Info {
                ratatui::style::Style::new()
            } else {
                style
            };
            lines.push(Line::from(vec![
                Span::styled(lead, style),
                Span::styled(l, text_style),
            ]));
        }
    }
    let total = lines.len();
    let from_end = app.messages.from_end.min(total.saturating_sub(inner_h));
    let top = total.saturating_sub(inner_h + from_end);
    let shown: Vec<Line> = lines.into_iter().skip(top).take(inner_h).collect();
    let title = format!(
        " Messages: {} ({}–{} of {total} lines; ↑↓ PgUp PgDn scroll, Esc closes) ",
        app.messages.entries.len(),
        (top + 1).min(total),
        top + shown.len()
    );
    frame.render_widget(Clear, r);
    frame.render_widget(
        Paragraph::new(shown).block(
            Block::default()
                .borders(Borders::ALL)
                .border_style(theme.border(true))
                .title(Span::styled(title, theme.title())),
        ),
        r,
    );
}
