//! Dataset pane: file, rows kept and dropped, features, class balance, split,
//! and per-feature mean/sd/min/max with a small histogram.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

use super::common::{fit, num, pack, pane_block, sparkline, words};
use super::theme::Theme;
use crate::app::messages::wrap;
use crate::app::{App, DataInfo, DataState, Pane};
use crate::engine::data::{LoadSnapshot, LoadStage};

pub fn render(app: &App, area: Rect, frame: &mut Frame) {
    let theme = Theme::of(app);
    let (info, detail) = match &app.data {
        DataState::Failed { path, error } => {
            let block = pane_block(app, Pane::Dataset, "load error".into(), &theme);
            let mut text = vec![
                Line::styled(format!("Could not load {path}"), theme.bad()),
                Line::raw(""),
            ];
            text.extend(error.lines().map(|l| Line::raw(l.to_string())));
            text.push(Line::raw(""));
            text.push(Line::styled(
                "Fix the options and start again: pacauc explore FILE.csv [--target COL] [--positive VALUE] [--drop COL]… (m: the message log has this error in full)",
                theme.dim(),
            ));
            frame.render_widget(
                Paragraph::new(text).block(block).wrap(Wrap { trim: false }),
                area,
            );
            return;
        }
        DataState::Loading {
            path,
            bytes,
            since,
            progress,
        } => {
            let block = pane_block(app, Pane::Dataset, "loading".into(), &theme);
            let size = bytes.map_or(String::new(), |b| {
                format!(" ({})", crate::spec::cost::bytes(b as f64))
            });
            let now = progress.snapshot();
            let mut text = vec![
                Line::styled(format!("Loading {path}{size}…"), theme.warn()),
                Line::raw(format!("{:.1} s so far", since.elapsed().as_secs_f64())),
                Line::raw(""),
            ];
            text.extend(loading_lines(&now, inner_width(area)));
            text.push(Line::raw(""));
            text.push(Line::styled(
                "Keys work meanwhile: ? help, m messages, q quits.",
                theme.dim(),
            ));
            frame.render_widget(
                Paragraph::new(text).block(block).wrap(Wrap { trim: false }),
                area,
            );
            return;
        }
        DataState::Loaded(info) => {
            let file = std::path::Path::new(&info.report.path)
                .file_name()
                .map_or(info.report.path.clone(), |f| {
                    f.to_string_lossy().into_owned()
                });
            (info, file)
        }
    };
    let mut block = pane_block(app, Pane::Dataset, detail, &theme);
    let inner = block.inner(area);
    let mut lines = head(info, inner.width as usize, &theme);
    let warnings = warning_lines(
        &info.report.warnings,
        inner.width as usize,
        // Room left after the table's head and three of its rows.
        (inner.height as usize).saturating_sub(lines.len() + 4),
    );
    for w in warnings {
        lines.push(Line::styled(w, theme.warn()));
    }
    let head_lines = lines.len();
    let visible = (inner.height as usize).saturating_sub(head_lines.min(inner.height as usize) + 1);
    let total = info.report.summary.len();
    if total > visible && visible > 0 {
        let offset = app.dataset_scroll.min(total - visible);
        block = block.title_bottom(Line::styled(
            format!(" {}–{} of {total} ↑↓ ", offset + 1, offset + visible),
            theme.dim(),
        ));
    }
    frame.render_widget(block, area);
    if inner.height == 0 || inner.width == 0 {
        return;
    }
    let r = &info.report;
    let head_h = (lines.len() as u16).min(inner.height);
    frame.render_widget(
        Paragraph::new(lines),
        Rect {
            height: head_h,
            ..inner
        },
    );
    let table = Rect {
        y: inner.y.saturating_add(head_h),
        height: inner.height.saturating_sub(head_h),
        ..inner
    };
    if table.height < 2 {
        return;
    }
    let w = table.width as usize;
    let hist_w = 12usize;
    let numw = 8usize;
    let show_minmax = w > 14 + 4 * (numw + 1) + hist_w;
    let name_w = w
        .saturating_sub(if show_minmax {
            4 * (numw + 1)
        } else {
            2 * (numw + 1)
        })
        .saturating_sub(hist_w + 1)
        .clamp(4, 24);
    let mut rows = vec![Line::styled(
        if show_minmax {
            format!(
                "{:<name_w$} {:>numw$} {:>numw$} {:>numw$} {:>numw$} {}",
                "feature", "mean", "sd", "min", "max", "histogram"
            )
        } else {
            format!(
                "{:<name_w$} {:>numw$} {:>numw$} {}",
                "feature", "mean", "sd", "histogram"
            )
        },
        theme.dim(),
    )];
    let visible = (table.height as usize).saturating_sub(1);
    let total = r.summary.len();
    let offset = app.dataset_scroll.min(total.saturating_sub(visible));
    for f in r.summary.iter().skip(offset).take(visible) {
        let hist: Vec<f64> = f.hist.iter().map(|&c| c as f64).collect();
        // An ID-like column is marked (its warning says which flag drops it).
        let id_like = r.id_like.contains(&f.name);
        let name = if id_like {
            format!("{} ID?", fit(&f.name, name_w.saturating_sub(4)))
        } else {
            fit(&f.name, name_w)
        };
        let text = if show_minmax {
            format!(
                "{name:<name_w$} {:>numw$} {:>numw$} {:>numw$} {:>numw$} ",
                num(f.mean),
                num(f.sd),
                num(f.min),
                num(f.max)
            )
        } else {
            format!(
                "{name:<name_w$} {:>numw$} {:>numw$} ",
                num(f.mean),
                num(f.sd)
            )
        };
        rows.push(Line::from(vec![
            if id_like {
                Span::styled(text, theme.warn())
            } else {
                Span::raw(text)
            },
            Span::styled(sparkline(&hist), theme.series(0)),
        ]));
    }
    frame.render_widget(Paragraph::new(rows), table);
}

/// The lines above the feature table, wrapped to `width` (continuations
/// indented): counts, split, which column is the target and which class is
/// positive and why, with the flag that changes each; dropped and encoded
/// columns.
fn head(info: &DataInfo, width: usize, theme: &Theme) -> Vec<Line<'static>> {
    let r = &info.report;
    let s = &info.split;
    let share = if r.rows > 0 {
        100.0 * r.positives as f64 / r.rows as f64
    } else {
        0.0
    };
    let dropped_style = if r.dropped_rows > 0 {
        theme.warn()
    } else {
        theme.dim()
    };
    let labelled = |label: &str, text: &str, style: Style| {
        let mut g = vec![vec![Span::styled(format!("{label} "), theme.dim())]];
        g.extend(words(text, style));
        pack(g, width, 2)
    };
    let mut lines = pack(
        vec![
            vec![Span::raw(format!("{} rows ", r.rows))],
            vec![Span::styled(
                format!("({} dropped) ", r.dropped_rows),
                dropped_style,
            )],
            vec![Span::raw(format!("· {} features", r.features))],
        ],
        width,
        2,
    );
    lines.extend(pack(
        vec![
            vec![Span::raw(format!("{} + / {} − ", r.positives, r.negatives))],
            vec![Span::styled(format!("({share:.1}%) "), theme.dim())],
            vec![Span::styled(
                format!("· {} = '{}'", r.target, r.positive_label),
                theme.dim(),
            )],
        ],
        width,
        2,
    ));
    lines.extend(pack(
        vec![
            vec![Span::styled(format!("{} split ", s.kind), theme.dim())],
            vec![Span::raw(format!(
                "{} train / {} test",
                s.train_rows, s.test_rows
            ))],
        ],
        width,
        2,
    ));
    lines.extend(labelled("target", &r.target_rule, Style::new()));
    lines.extend(labelled("positive", &r.positive_rule, Style::new()));
    let mut notes: Vec<String> = Vec::new();
    for c in &r.dropped_columns {
        notes.push(format!("dropped '{}' ({})", c.name, c.reason));
    }
    for e in &r.encoded {
        notes.push(format!(
            "encoded '{}' → {} features",
            e.column,
            e.features.len()
        ));
    }
    for c in &s.dropped_constant_in_train {
        notes.push(format!("dropped '{c}' (constant in train)"));
    }
    if !notes.is_empty() {
        lines.extend(pack(words(&notes.join("; "), theme.dim()), width, 2));
    }
    lines
}

/// The data's warnings wrapped to `width`, in at most `room` lines (at least
/// one each): a warning cut short ends "… (m)", the message log having it whole.
pub fn warning_lines(warnings: &[String], width: usize, room: usize) -> Vec<String> {
    let each = (room / warnings.len().max(1)).max(1);
    let mut out = Vec::new();
    for w in warnings {
        let mut lines = wrap(&format!("warning: {w}"), width);
        if lines.len() > each {
            lines.truncate(each);
            let last = lines.pop().unwrap_or_default();
            let cut: String = last.chars().take(width.saturating_sub(5)).collect();
            lines.push(format!("{}… (m)", cut.trim_end()));
        }
        out.extend(lines);
    }
    out
}

fn inner_width(area: Rect) -> usize {
    area.width.saturating_sub(2) as usize
}

/// The load's three stages, the current one with a bar of the file read and
/// the rows once counted (the loader tells them through `LoadProgress`).
fn loading_lines(now: &LoadSnapshot, width: usize) -> Vec<Line<'static>> {
    let stages = [LoadStage::Reading, LoadStage::Typing, LoadStage::Preparing];
    let current = stages.iter().position(|&s| s == now.stage).unwrap_or(0);
    let mut lines = Vec::new();
    for (i, stage) in stages.iter().enumerate() {
        let mark = match i.cmp(&current) {
            std::cmp::Ordering::Less => "✓",
            std::cmp::Ordering::Equal => "›",
            std::cmp::Ordering::Greater => " ",
        };
        let mut line = format!("{mark} {}", stage.describe());
        if *stage == LoadStage::Reading
            && let Some(rows) = now.rows
        {
            line.push_str(&format!(" — {} rows", group_digits(rows)));
        }
        lines.push(Line::raw(line));
        if i == current
            && *stage == LoadStage::Reading
            && let Some(f) = now.read_fraction
        {
            lines.push(Line::raw(format!(
                "  {}",
                bar(f, width.saturating_sub(10).min(50))
            )));
        }
    }
    lines
}

/// `[████░░░░] 52%` in `cells` cells.
fn bar(fraction: f64, cells: usize) -> String {
    let cells = cells.max(10);
    let full = ((fraction.clamp(0.0, 1.0) * cells as f64).round() as usize).min(cells);
    format!(
        "{}{} {:>3.0}%",
        "█".repeat(full),
        "░".repeat(cells - full),
        fraction * 100.0
    )
}

fn group_digits(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warnings_wrap_where_there_is_room_and_point_to_the_log_where_not() {
        let w = vec!["column 'patient' holds a different integer on every row, like an ID".into()];
        let all = warning_lines(&w, 30, 10);
        assert!(all.len() > 1 && all.iter().all(|l| l.chars().count() <= 30));
        assert!(all.concat().contains("like an ID"), "{all:?}");
        let one = warning_lines(&w, 30, 1);
        assert_eq!(one.len(), 1);
        assert!(
            one[0].ends_with("… (m)") && one[0].chars().count() <= 30,
            "{one:?}"
        );
    }
}
