//! The run form overlay: the method, its settings, and the equivalent
//! `pacauc fit` command.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};

use super::help::centered;
use super::theme::Theme;
use crate::app::form::Form;
use crate::app::{App, run_config};

pub fn render(app: &App, form: &Form, area: Rect, frame: &mut Frame) {
    let theme = Theme::of(app);
    let fields = form.visible();
    let label_w = 20;
    let row = |i: usize, label: &str, value: Vec<Span<'static>>| {
        let mut spans = vec![Span::styled(
            format!(" {label:<label_w$}"),
            if form.cursor == i {
                theme.selected()
            } else {
                theme.dim()
            },
        )];
        spans.push(Span::raw(" "));
        spans.extend(value);
        Line::from(spans)
    };
    let mut lines = vec![row(
        0,
        "method",
        vec![Span::styled(
            format!("◀ {} ▶", form.method()),
            theme.title(),
        )],
    )];
    for (i, f) in fields.iter().enumerate() {
        let v = form.value(f.flag);
        let focused = form.cursor == i + 1;
        let value = if !f.choices.is_empty() {
            vec![Span::raw(format!("◀ {v} ▶"))]
        } else if v.is_empty() {
            vec![
                Span::raw(if focused { "▏" } else { "" }),
                Span::styled(f.hint, theme.dim()),
            ]
        } else {
            vec![
                Span::raw(v.to_string()),
                Span::raw(if focused { "▏" } else { "" }),
            ]
        };
        lines.push(row(i + 1, f.label, value));
    }
    lines.push(Line::raw(""));
    match &form.error {
        Some(e) => lines.push(Line::styled(format!(" {e}"), theme.bad())),
        None => {
            if let Some(args) = app.data_args() {
                lines.push(Line::styled(
                    format!(" {}", run_config::command_line(&form.config(), args)),
                    theme.dim(),
                ));
            }
        }
    }
    let w = 84u16.min(area.width);
    // Height after wrapping (the error and the command can be long).
    let inner_w = usize::from(w.saturating_sub(2)).max(1);
    let rows: usize = lines
        .iter()
        .map(|l| l.width().div_ceil(inner_w).max(1))
        .sum();
    let h = u16::try_from(rows).unwrap_or(u16::MAX).saturating_add(2);
    let r = centered(area, w, h);
    frame.render_widget(Clear, r);
    frame.render_widget(
        Paragraph::new(lines).wrap(Wrap { trim: false }).block(
            Block::default()
                .borders(Borders::ALL)
                .border_style(theme.border(true))
                .title(Span::styled(" New run ", theme.title()))
                .title_bottom(Span::styled(
                    " ↑↓ field · ←→ choose · type to edit · Enter start · Esc close ",
                    theme.dim(),
                )),
        ),
        r,
    );
}
