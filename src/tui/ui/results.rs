//! Results pane: ROC curves and a table (train/test AUC, the PAC-Bayes bound
//! and the importance-sampling k̂ where they fit, log Z, γ, time) of every run
//! on this split.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Chart, Dataset, GraphType, Paragraph};

use super::common::{fit, opt_num, pane_block, placeholder, seconds};
use super::theme::Theme;
use crate::app::run_view::RunStatus;
use crate::app::{App, Pane};
use crate::engine::record::RunRecord;

fn auc(v: Option<f64>) -> String {
    v.filter(|a| a.is_finite())
        .map_or("-".into(), |a| format!("{a:.4}"))
}

pub fn render(app: &App, area: Rect, frame: &mut Frame) {
    let theme = Theme::of(app);
    let detail = app.data_info().map_or(String::new(), |d| {
        format!(
            "split {} train / {} test",
            d.split.train_rows, d.split.test_rows
        )
    });
    let block = pane_block(app, Pane::Results, detail, &theme);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    if app.runs.is_empty() {
        placeholder(frame, inner, "no runs yet: press n to start one", &theme);
        return;
    }
    let (roc_area, table_area) = if inner.width >= 70 {
        // Roughly square in the terminal's 1:2 cells, at most 45% of the width.
        let w = inner
            .height
            .saturating_mul(2)
            .saturating_add(8)
            .clamp(24, (u32::from(inner.width) * 45 / 100).max(24) as u16);
        let [a, _, b] = Layout::horizontal([
            Constraint::Length(w),
            Constraint::Length(2),
            Constraint::Fill(1),
        ])
        .areas(inner);
        (a, b)
    } else if inner.height >= 14 {
        let [a, b] =
            Layout::vertical([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(inner);
        (a, b)
    } else {
        (Rect::default(), inner)
    };
    roc(app, roc_area, frame, &theme);
    table(app, table_area, frame, &theme);
}

fn roc(app: &App, area: Rect, frame: &mut Frame, theme: &Theme) {
    if area.height < 4 || area.width < 14 {
        return;
    }
    let curves: Vec<(usize, Vec<(f64, f64)>)> = app
        .runs
        .iter()
        .enumerate()
        .filter_map(|(i, r)| {
            let rec = r.record.as_ref()?;
            let c = if rec.roc.test.fpr.is_empty() {
                &rec.roc.train
            } else {
                &rec.roc.test
            };
            Some((
                i,
                super::common::finite(c.fpr.iter().copied().zip(c.tpr.iter().copied())),
            ))
        })
        .collect();
    if curves.is_empty() {
        placeholder(frame, area, "ROC curves appear when runs finish", theme);
        return;
    }
    let diag = [(0.0, 0.0), (1.0, 1.0)];
    let mut ds = vec![
        Dataset::default()
            .data(&diag)
            .graph_type(GraphType::Line)
            .marker(theme.marker)
            .style(theme.dim()),
    ];
    // The selected run on top.
    let sel = app
        .selected
        .and_then(|id| app.runs.iter().position(|r| r.id == id));
    let mut order: Vec<&(usize, Vec<(f64, f64)>)> = curves.iter().collect();
    order.sort_by_key(|(i, _)| Some(*i) == sel);
    for (i, pts) in order {
        ds.push(
            Dataset::default()
                .data(pts)
                .graph_type(GraphType::Line)
                .marker(theme.marker)
                .style(theme.series(*i)),
        );
    }
    let chart = Chart::new(ds)
        .x_axis(
            Axis::default()
                .bounds([0.0, 1.0])
                .labels(["0", "FPR", "1"])
                .style(theme.dim()),
        )
        .y_axis(
            Axis::default()
                .bounds([0.0, 1.0])
                .labels(["0", "TPR", "1"])
                .style(theme.dim()),
        );
    frame.render_widget(chart, area);
}

fn table(app: &App, area: Rect, frame: &mut Frame, theme: &Theme) {
    if area.height < 2 || area.width < 20 {
        return;
    }
    let w = area.width as usize;
    let wide = w >= 64;
    // The certificate's columns where they fit: the bound on 1 − AUC, then k̂.
    let (show_bound, show_khat) = (w >= 81, w >= 88);
    let head = if wide {
        format!(
            "  {:<3} {:<10} {:<9} {:>8} {:>8}{}{} {:>9} {:>8} {:>8}",
            "#",
            "method",
            "status",
            "train",
            "test",
            if show_bound { "    bound" } else { "" },
            if show_khat { "     k̂" } else { "" },
            "log Z",
            "γ",
            "time"
        )
    } else {
        format!(
            "  {:<3} {:<9} {:>7} {:>7} {:>7}",
            "#", "method", "train", "test", "time"
        )
    };
    let mut lines = vec![Line::styled(fit(&head, w), theme.dim())];
    let visible = (area.height as usize).saturating_sub(1);
    let sel = app
        .selected
        .and_then(|id| app.runs.iter().position(|r| r.id == id))
        .unwrap_or(0);
    let offset = (sel + 1).saturating_sub(visible);
    for (i, r) in app.runs.iter().enumerate().skip(offset).take(visible) {
        let rec = r.record.as_deref();
        let spin = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'][(app.ticks % 10) as usize];
        let status = match &r.status {
            RunStatus::Running => format!("{spin} running"),
            s => s.word().to_string(),
        };
        let status_style = match &r.status {
            RunStatus::Failed(_) => theme.bad(),
            RunStatus::Finished => theme.good(),
            RunStatus::Running | RunStatus::Paused => theme.warn(),
            _ => theme.dim(),
        };
        let time = rec
            .map(|x| x.seconds.fit)
            .or_else(|| r.elapsed().filter(|_| r.status.is_live()));
        let marker = if Some(r.id) == app.selected {
            "▶ "
        } else {
            "  "
        };
        let mut spans = vec![
            Span::raw(marker),
            Span::styled(format!("{:<3} ", r.id), theme.series(i)),
            Span::styled(
                format!("{:<10} ", fit(r.method(), if wide { 10 } else { 9 })),
                theme.series(i),
            ),
        ];
        if wide {
            spans.push(Span::styled(
                format!("{:<9} ", fit(&status, 9)),
                status_style,
            ));
            spans.push(Span::raw(format!(
                "{:>8} {:>8}",
                auc(rec.map(|x| x.auc.train)),
                auc(rec.and_then(|x| x.auc.test)),
            )));
            if show_bound {
                spans.push(certificate_cell(rec, false, theme));
            }
            if show_khat {
                spans.push(certificate_cell(rec, true, theme));
            }
            spans.push(Span::raw(format!(
                " {:>9} {:>8} {:>8}",
                opt_num(rec.and_then(|x| x.log_evidence)),
                opt_num(rec.and_then(|x| x.gamma)),
                time.map_or("-".into(), seconds),
            )));
        } else {
            spans.push(Span::raw(format!(
                "{:>7} {:>7} {:>7}",
                auc(rec.map(|x| x.auc.train)),
                auc(rec.and_then(|x| x.auc.test)),
                time.map_or("-".into(), seconds),
            )));
        }
        let line = Line::from(spans);
        lines.push(if Some(r.id) == app.selected {
            line.style(theme.title())
        } else {
            line
        });
        if let RunStatus::Failed(e) = &r.status
            && Some(r.id) == app.selected
            && lines.len() < area.height as usize
        {
            lines.push(Line::styled(fit(&format!("      {e}"), w), theme.bad()));
        }
    }
    if let Some(r) = app.selected_run()
        && let Some(f) = &r.file
        && lines.len() < area.height as usize
    {
        lines.push(Line::styled(
            fit(&format!("  #{} file: {}", r.id, f.display()), w),
            theme.dim(),
        ));
    }
    frame.render_widget(Paragraph::new(lines), area);
}

/// The record's bound on 1 − AUC (marked when vacuous, ≥ ½) or its
/// importance-sampling k̂ (marked above its threshold); "-" where there is none.
fn certificate_cell(rec: Option<&RunRecord>, khat: bool, theme: &Theme) -> Span<'static> {
    if khat {
        let c = rec
            .and_then(|r| r.details.get("is_check"))
            .filter(|c| c.is_object());
        let k = c.and_then(|c| c["khat"].as_f64());
        let trusted = c.and_then(|c| c["trusted"].as_bool()).unwrap_or(true);
        let text = format!(" {:>5}", k.map_or("-".into(), |k| format!("{k:.2}")));
        return if trusted {
            Span::raw(text)
        } else {
            Span::styled(text, theme.warn())
        };
    }
    let b = rec.and_then(|r| r.bound.as_ref()).map(|b| b.risk);
    let text = format!(" {:>8}", b.map_or("-".into(), |b| format!("{b:.4}")));
    match b {
        Some(b) if b >= 0.5 => Span::styled(text, theme.warn()),
        _ => Span::raw(text),
    }
}
