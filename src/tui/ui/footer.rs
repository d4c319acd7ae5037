//! The header (data, the running engine, the last message) and the footer
//! (the most useful keys, from the key table).

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::common::fit;
use super::theme::Theme;
use crate::app::keys::{BINDINGS, FORM_KEYS};
use crate::app::run_view::RunStatus;
use crate::app::{App, DataState, Overlay};

const SPINNER: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

pub fn header(app: &App, area: Rect, frame: &mut Frame) {
    let theme = Theme::of(app);
    let mut spans = vec![Span::styled(" pacauc ", theme.title())];
    match &app.data {
        DataState::Loaded(d) => {
            let file = std::path::Path::new(&d.report.path)
                .file_name()
                .map_or(d.report.path.clone(), |f| f.to_string_lossy().into_owned());
            let d_features = if d.names.is_empty() {
                d.report.features
            } else {
                d.names.len()
            };
            spans.push(Span::styled(
                format!("{file} {}×{d_features} ", d.report.rows),
                theme.dim(),
            ));
        }
        DataState::Failed { path, .. } => {
            spans.push(Span::styled(format!("{path} (not loaded) "), theme.bad()))
        }
        DataState::Loading {
            since, progress, ..
        } => {
            let spin = SPINNER[(app.ticks % 10) as usize];
            let now = progress.snapshot();
            let share = match (now.stage, now.read_fraction) {
                (crate::engine::data::LoadStage::Reading, Some(f)) => {
                    format!("{:.0}% ", f * 100.0)
                }
                (stage, _) => format!("({}) ", stage.name()),
            };
            spans.push(Span::styled(
                format!(
                    "{spin} loading {share}{:.0} s ",
                    since.elapsed().as_secs_f64()
                ),
                theme.warn(),
            ))
        }
    }
    if let Some(r) = app.active.and_then(|id| app.run(id)) {
        let spin = SPINNER[(app.ticks % 10) as usize];
        let what = match r.status {
            RunStatus::Paused => format!("‖ {} paused", r.title()),
            _ => format!("{spin} {} running", r.title()),
        };
        spans.push(Span::styled(what, theme.warn()));
        if app.queued() > 0 {
            spans.push(Span::styled(
                format!(" (+{} queued)", app.queued()),
                theme.dim(),
            ));
        }
        spans.push(Span::raw(" "));
    }
    // Warnings not yet read in the log: a mark that survives any status text.
    let unseen = app.messages.unseen;
    if unseen > 0 {
        spans.push(Span::styled(format!("⚠ {unseen} m "), theme.bad()));
    }
    if let Some(s) = &app.status {
        let width =
            |spans: &[Span]| -> usize { spans.iter().map(|s| s.content.chars().count()).sum() };
        // A narrow screen gives the status the brand's room, then the file's
        // (the Dataset pane's title names it).
        let need = s.text.chars().count() + 2;
        if width(&spans) + need > area.width as usize {
            spans[0] = Span::styled(" ", theme.title());
        }
        if width(&spans) + need > area.width as usize
            && spans.len() > 1
            && matches!(app.data, DataState::Loaded(_))
        {
            spans.remove(1);
        }
        let used = width(&spans);
        let room = (area.width as usize).saturating_sub(used + 2);
        spans.push(Span::styled("│ ", theme.dim()));
        // Cut text stays readable in full in the message log (m).
        spans.push(Span::styled(
            fit(&s.text, room),
            if s.error { theme.bad() } else { theme.good() },
        ));
    }
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

pub fn footer(app: &App, area: Rect, frame: &mut Frame) {
    let theme = Theme::of(app);
    let mut items: Vec<(&str, &str)> = match app.overlay {
        Overlay::Form(_) => FORM_KEYS.to_vec(),
        Overlay::Help => vec![("Esc ?", "close"), ("q", "quit")],
        Overlay::Messages => vec![
            ("↑↓ PgUp PgDn", "scroll"),
            ("Esc m", "close"),
            ("q", "quit"),
        ],
        Overlay::None => {
            let mut b: Vec<_> = BINDINGS.iter().filter(|b| b.footer > 0).collect();
            b.sort_by_key(|b| b.footer);
            let quit = app.quit_word();
            b.into_iter()
                .map(|b| (b.label, if b.short == "quit" { quit } else { b.short }))
                .collect()
        }
    };
    let width = area.width as usize;
    let mut spans = Vec::new();
    let mut used = 0usize;
    // Keep as many as fit, in priority order; one too long for what is left
    // does not hide a shorter one after it ("Esc close" in the form).
    for (k, what) in items.drain(..) {
        let len = k.chars().count() + what.chars().count() + 3;
        if used + len > width {
            continue;
        }
        used += len;
        spans.push(Span::styled(format!(" {k}"), theme.title()));
        spans.push(Span::styled(format!(" {what} "), theme.dim()));
    }
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}
