//! The run form overlay: the method, its settings (labels, hints and help from
//! the method registry), and the equivalent `pacauc fit` command.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};

use super::help::centered;
use super::theme::Theme;
use crate::app::App;
use crate::app::form::{Form, render_error};
use crate::spec::registry;

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
    let (method, prior) = (form.method(), form.prior());
    for (i, s) in fields.iter().enumerate() {
        let v = form.value(s.key);
        let focused = form.cursor == i + 1;
        let value = if !form.choices(s).is_empty() {
            vec![Span::raw(format!("◀ {v} ▶"))]
        } else if v.is_empty() {
            vec![
                Span::raw(if focused { "▏" } else { "" }),
                Span::styled(s.hint(method, prior), theme.dim()),
            ]
        } else {
            vec![
                Span::raw(v.to_string()),
                Span::raw(if focused { "▏" } else { "" }),
            ]
        };
        lines.push(row(i + 1, s.label, value));
    }
    lines.push(Line::raw(""));
    // What the row under the cursor does.
    let help = match form.focused() {
        Some(s) => s.help,
        None => registry::method(method).map_or("", |m| m.help),
    };
    lines.push(Line::styled(format!(" {help}"), theme.dim()));
    match (&form.error, form.spec()) {
        (Some(e), _) => lines.push(Line::styled(format!(" {e}"), theme.bad())),
        (None, Ok(spec)) => lines.push(Line::styled(
            format!(" {}", crate::spec::command_line(&spec)),
            theme.dim(),
        )),
        (None, Err(e)) => lines.push(Line::styled(format!(" {}", render_error(&e)), theme.warn())),
    }
    let w = 84u16.min(area.width);
    // Height after wrapping (the help, the error and the command can be long).
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
                    " ↑↓ field · ←→ choose · type to edit · Enter start · ^B background · Esc ",
                    theme.dim(),
                )),
        ),
        r,
    );
}
