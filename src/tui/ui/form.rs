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
    // The same estimate `pacauc fit` states before a run.
    if let Ok(spec) = form.spec()
        && let Some((est, why)) = app.cost_of(&spec, crate::app::FORM_ANYWAY)
    {
        let style = if why.is_some() {
            theme.warn()
        } else {
            theme.dim()
        };
        let over = if why.is_some() {
            " — above the limit"
        } else {
            ""
        };
        lines.push(Line::styled(
            format!(" cost estimate: {}{over}", est.describe()),
            style,
        ));
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
                .title_bottom(Span::styled(keys_line(usize::from(w)), theme.dim())),
        ),
        r,
    );
}

/// The form's keys for its bottom border, as many as fit in `width`: the
/// least needed go first ("type to edit", then "^B background"); "Enter
/// start" and "Esc close" stay.
fn keys_line(width: usize) -> String {
    // (key, what, the order it goes in: 0 never)
    let keys = [
        ("↑↓", "field", 0),
        ("←→", "choose", 0),
        ("type to", "edit", 1),
        ("^B", "background", 2),
        ("Enter", "start", 0),
        ("Esc", "close", 0),
    ];
    let line = |dropped: usize| {
        let parts: Vec<String> = keys
            .iter()
            .filter(|k| k.2 == 0 || k.2 > dropped)
            .map(|(k, what, _)| format!("{k} {what}"))
            .collect();
        format!(" {} ", parts.join(" · "))
    };
    // Borders and corners take 4 columns.
    (0..2)
        .map(line)
        .find(|l| l.chars().count() + 4 <= width)
        .unwrap_or_else(|| line(2))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_keys_line_keeps_esc_close_at_80_columns() {
        let l = super::keys_line(80);
        assert!(l.contains("Esc close") && l.contains("Enter start"), "{l}");
        assert!(l.chars().count() + 4 <= 80, "{l}");
        assert!(l.contains("^B background"), "{l}");
        assert!(super::keys_line(120).contains("type to edit"));
        assert!(!super::keys_line(50).contains("^B"));
    }
}
