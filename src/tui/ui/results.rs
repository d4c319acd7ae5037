//! Results pane: ROC curves and a table (train/test AUC, the PAC-Bayes bound
//! and the importance-sampling k̂ where they fit, log Z, γ, time) of every run
//! on this split.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Paragraph};

use super::common::{fit, opt_num, pane_block, placeholder, seconds};
use super::figure_chart::{Labels, chart, resolve};
use super::theme::Theme;
use crate::app::run_view::{RunStatus, RunView};
use crate::app::{App, Pane};
use crate::engine::record::RunRecord;
use crate::figures::RocSource;

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
    // The ROC curves sit beside the table only where the whole table still fits.
    let (roc_area, table_area) = if inner.width >= 104 {
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

/// The ROC figure of every finished run (`figures::roc`, as `p` writes it),
/// each curve in its run's colour, the selected run's on top.
fn roc_figure(app: &App) -> Option<crate::figures::Figure> {
    let sel = app.selected;
    let mut runs: Vec<(usize, &RunView, &RunRecord)> = app
        .runs
        .iter()
        .enumerate()
        .filter_map(|(i, r)| Some((i, r, r.record.as_deref()?)))
        .collect();
    if runs.is_empty() {
        return None;
    }
    // The chart draws the first curve on top: the selected run's.
    runs.sort_by_key(|(_, r, _)| Some(r.id) != sel);
    let sources: Vec<RocSource> = runs
        .iter()
        .map(|(_, r, rec)| {
            let test = !rec.roc.test.fpr.is_empty();
            RocSource {
                label: r.title(),
                curve: if test { &rec.roc.test } else { &rec.roc.train },
                auc: if test {
                    rec.auc.test.unwrap_or(f64::NAN)
                } else {
                    rec.auc.train
                },
                interval: if test {
                    rec.auc.test_interval.as_ref()
                } else {
                    rec.auc.train_interval.as_ref()
                }
                .map(|i| (i.lower, i.upper)),
            }
        })
        .collect();
    let mut fig = crate::figures::roc(&sources, "");
    // Series 0 is the chance line; then one curve per run, coloured as its row.
    for (s, (i, ..)) in fig.panels[0].series.iter_mut().skip(1).zip(&runs) {
        s.style.color = *i;
    }
    Some(fig)
}

fn roc(app: &App, area: Rect, frame: &mut Frame, theme: &Theme) {
    if area.height < 4 || area.width < 14 {
        return;
    }
    let Some(mut fig) = roc_figure(app) else {
        placeholder(frame, area, "ROC curves appear when runs finish", theme);
        return;
    };
    // The legend names each curve by its run ("#3 smc"; the table beside
    // has the AUCs), with a marker per curve so it reads without colour.
    let mut runs: Vec<&RunView> = app.runs.iter().filter(|r| r.record.is_some()).collect();
    runs.sort_by_key(|r| Some(r.id) != app.selected); // as `roc_figure` orders them
    let mut titles: Vec<String> = runs.iter().map(|r| r.title()).collect();
    titles.insert(0, "chance".into());
    for (s, t) in fig.panels[0].series.iter_mut().zip(titles) {
        s.name = t;
    }
    let mut c = resolve(&fig.panels[0]);
    // The table beside it names the runs; the axes say FPR and TPR.
    c.x_label = "FPR".into();
    let legend = super::figure_chart::legend_lines(&[&c], theme, area.width);
    let [chart_area, legend_area] =
        Layout::vertical([Constraint::Fill(1), Constraint::Length(legend.len() as u16)])
            .areas(area);
    let mut chart = chart(
        &c,
        theme,
        Labels {
            x: true,
            markers: true,
            ..Labels::default()
        },
    );
    chart = chart.y_axis(
        Axis::default()
            .bounds([0.0, 1.0])
            .labels(["0", "TPR", "1"])
            .style(theme.dim()),
    );
    frame.render_widget(chart, chart_area);
    frame.render_widget(Paragraph::new(legend), legend_area);
}

/// A column of the runs table: header, width, and its rank when the width is
/// short (lower ranks stay: the test AUC, the paired difference against the
/// selected run, the bound, γ and the prior outrank k̂, log Z, the train AUC
/// and time).
struct Column {
    head: &'static str,
    width: usize,
    rank: u8,
    left: bool,
}

const COLUMNS: [Column; 13] = [
    Column {
        head: "#",
        width: 3,
        rank: 0,
        left: true,
    },
    Column {
        head: "method",
        width: 9,
        rank: 0,
        left: true,
    },
    Column {
        head: "prior",
        width: 6,
        rank: 6,
        left: true,
    },
    Column {
        head: "status",
        width: 11,
        rank: 1,
        left: true,
    },
    Column {
        head: "train",
        width: 6,
        rank: 9,
        left: false,
    },
    // The test AUC ± DeLong's SE.
    Column {
        head: "test ±SE",
        width: 10,
        rank: 2,
        left: false,
    },
    // DeLong's paired test against the selected run (same split): the
    // difference and its p-value.
    Column {
        head: "vs ▶",
        width: 13,
        rank: 3,
        left: false,
    },
    Column {
        head: "bound",
        width: 8,
        rank: 4,
        left: false,
    },
    Column {
        head: "k̂",
        width: 5,
        rank: 7,
        left: false,
    },
    // Several SMC runs: the pooled log Z ± the sd across runs.
    Column {
        head: "log Z",
        width: 13,
        rank: 8,
        left: false,
    },
    // The largest R-hat across independent SMC runs.
    Column {
        head: "R-hat",
        width: 6,
        rank: 8,
        left: false,
    },
    Column {
        head: "γ",
        width: 8,
        rank: 5,
        left: false,
    },
    Column {
        head: "time",
        width: 8,
        rank: 10,
        left: false,
    },
];

/// The columns that fit in `width` (2 cells of selection marker, 1 between);
/// R-hat only when some run has several independent SMC runs (else it would
/// push the train AUC out for a column of "-").
fn visible_columns(width: usize, several_runs: bool) -> Vec<usize> {
    let mut by_rank: Vec<usize> = (0..COLUMNS.len())
        .filter(|&i| several_runs || COLUMNS[i].head != "R-hat")
        .collect();
    by_rank.sort_by_key(|&i| COLUMNS[i].rank);
    let mut used = 2;
    let mut keep = Vec::new();
    for i in by_rank {
        let w = COLUMNS[i].width + 1;
        if used + w <= width || COLUMNS[i].rank == 0 {
            used += w;
            keep.push(i);
        }
    }
    keep.sort_unstable();
    keep
}

/// The prior of a run in a few letters ("-" for the baselines).
fn prior_word(r: &crate::app::run_view::RunView) -> &'static str {
    match r.spec.prior.as_ref().map(|p| p.kind) {
        Some(crate::spec::PriorKind::Gaussian) => "gauss",
        Some(crate::spec::PriorKind::Ard) => "ard",
        Some(crate::spec::PriorKind::SpikeSlab) => "s-slab",
        Some(crate::spec::PriorKind::Gp) => "gp",
        None => "-",
    }
}

fn table(app: &App, area: Rect, frame: &mut Frame, theme: &Theme) {
    if area.height < 2 || area.width < 20 {
        return;
    }
    let w = area.width as usize;
    let several_runs = app
        .runs
        .iter()
        .any(|r| r.record.as_ref().is_some_and(|x| x.runs.is_some()));
    let cols = visible_columns(w, several_runs);
    let cell = |i: usize, text: &str| {
        let c = &COLUMNS[i];
        let t = fit(text, c.width);
        if c.left {
            format!("{t:<width$} ", width = c.width)
        } else {
            format!("{t:>width$} ", width = c.width)
        }
    };
    let head: String = cols.iter().map(|&i| cell(i, COLUMNS[i].head)).collect();
    let mut lines = vec![Line::styled(fit(&format!("  {head}"), w), theme.dim())];
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
            _ => r.status_text(),
        };
        let status_style = match &r.status {
            RunStatus::Failed(_) => theme.bad(),
            RunStatus::Finished if r.is_doubtful() => theme.bad(),
            RunStatus::Finished => theme.good(),
            RunStatus::Running | RunStatus::Paused => theme.warn(),
            RunStatus::Cancelled => theme.warn(),
            _ => theme.dim(),
        };
        let time = rec
            .map(|x| x.seconds.fit)
            .or_else(|| r.elapsed().filter(|_| r.status.is_live()));
        // ▶ the selected run, • a run marked (x) for p.
        let marker = format!(
            "{}{}",
            if Some(r.id) == app.selected {
                "▶"
            } else {
                " "
            },
            if app.marked.contains(&r.id) {
                "•"
            } else {
                " "
            }
        );
        let mut spans = vec![Span::raw(marker)];
        for &c in &cols {
            let (text, style) = match COLUMNS[c].head {
                "#" => (r.id.to_string(), theme.series(i)),
                "method" => (r.method().to_string(), theme.series(i)),
                "prior" => (prior_word(r).to_string(), theme.dim()),
                "status" => (status.clone(), status_style),
                "train" => (auc(rec.map(|x| x.auc.train)), Style::new()),
                "test ±SE" => (test_cell(rec), Style::new()),
                "vs ▶" => (versus_cell(app, r, rec), Style::new()),
                "log Z" => (log_z_cell(rec), Style::new()),
                "R-hat" => rhat_cell(rec, theme),
                "bound" => certificate_cell(rec, false, theme),
                "k̂" => certificate_cell(rec, true, theme),
                "γ" => (
                    match rec.and_then(|x| x.gamma).or(r.start_gamma()) {
                        // Started, γ not announced: cross-validation chooses it.
                        None if rec.is_none() && r.start.is_some() => "CV…".into(),
                        g => opt_num(g),
                    },
                    Style::new(),
                ),
                _ => (time.map_or("-".into(), seconds), Style::new()),
            };
            spans.push(Span::styled(cell(c, &text), style));
        }
        let line = Line::from(spans);
        lines.push(if Some(r.id) == app.selected {
            line.style(theme.title())
        } else {
            line
        });
        // The selected run's failure or first doubt, cut to a line (in full: m).
        let note = match &r.status {
            RunStatus::Failed(e) => Some((e.clone(), theme.bad())),
            _ => r
                .doubts()
                .first()
                .map(|d| (format!("[{}] {}", d.code, d.message), theme.warn())),
        };
        if Some(r.id) == app.selected
            && lines.len() < area.height as usize
            && let Some((text, style)) = note
        {
            lines.push(Line::styled(fit(&format!("      {text}"), w), style));
        }
        // For the selected run: what its certificate means, its test AUC's
        // interval and the spread of its posterior draws' AUCs (two different
        // uncertainties), wrapped over the lines the runs below it leave
        // free (the last one cut when they run out).
        if Some(r.id) == app.selected
            && let Some(rec) = rec
        {
            let mut texts = Vec::new();
            if let Some(b) = &rec.bound {
                texts.push(format!("certificate: {}", b.meaning()));
            }
            if let Some(i) = &rec.auc.test_interval {
                let mut t = format!("test AUC {}", i.describe());
                if let Some(p) = &rec.auc.test_posterior {
                    t.push_str(&format!(
                        "; posterior draws' AUC {:.4}–{:.4} (uncertainty about θ, not over test rows)",
                        p.lower, p.upper
                    ));
                }
                texts.push(t);
            }
            let below = (offset + visible).min(app.runs.len()) - i - 1;
            let mut wrapped = Vec::new();
            for text in texts {
                wrapped.extend(crate::app::messages::wrap(&text, w.saturating_sub(6)));
            }
            let room = (area.height as usize).saturating_sub(lines.len() + below);
            let cut = wrapped.len() > room;
            for (k, l) in wrapped.iter().take(room).enumerate() {
                let l = if cut && k + 1 == room {
                    // The rest into the last line, cut there.
                    fit(&wrapped[k..].join(" "), w.saturating_sub(6))
                } else {
                    l.clone()
                };
                lines.push(Line::styled(format!("      {l}"), theme.dim()));
            }
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

/// The test AUC and DeLong's SE: "0.787±.025".
fn test_cell(rec: Option<&RunRecord>) -> String {
    match rec.map(|r| (&r.auc.test_interval, r.auc.test)) {
        Some((Some(i), _)) if i.se < 1.0 => {
            format!(
                "{:.3}±{}",
                i.auc,
                format!("{:.3}", i.se).trim_start_matches('0')
            )
        }
        Some((Some(i), _)) => format!("{:.3}", i.auc),
        Some((None, t)) => auc(t),
        None => "-".into(),
    }
}

/// This run's test AUC minus the selected run's, by DeLong's paired test on
/// the same test rows: "+0.024 p0.11"; "▶" on the selected run itself, "-"
/// where there is no pair (another split, a replayed record without scores).
fn versus_cell(app: &App, r: &RunView, rec: Option<&RunRecord>) -> String {
    if Some(r.id) == app.selected {
        return "▶".into();
    }
    let Some(sel) = app.selected_run().and_then(|s| s.record.as_deref()) else {
        return "-".into();
    };
    let same_rows = |a: &RunRecord, b: &RunRecord| {
        a.dataset.fingerprint == b.dataset.fingerprint
            && a.split.seed == b.split.seed
            && a.split.test_rows == b.split.test_rows
            && a.split.test_file == b.split.test_file
    };
    rec.filter(|x| same_rows(x, sel))
        .and_then(|x| {
            x.test_components
                .as_ref()?
                .paired(sel.test_components.as_ref()?)
        })
        .map_or("-".into(), |p| {
            format!(
                "{:+.3} p{}",
                p.difference,
                crate::engine::auc_interval::p_text(p.p_value).replace("< ", "<")
            )
        })
}

/// log Z, with ± the sd across runs for several SMC runs.
fn log_z_cell(rec: Option<&RunRecord>) -> String {
    let z = opt_num(rec.and_then(|x| x.log_evidence));
    match rec.and_then(|r| r.runs.as_ref()) {
        Some(runs) => format!("{z}±{}", opt_num(Some(runs.log_z.sd))),
        None => z,
    }
}

/// The largest R-hat across independent SMC runs, marked above the threshold
/// of the warning ("-" for a single run: R-hat needs two).
fn rhat_cell(rec: Option<&RunRecord>, theme: &Theme) -> (String, Style) {
    match rec.and_then(|r| r.runs.as_ref()).and_then(|x| x.rhat_max) {
        Some(r) if r > crate::engine::quality::MAX_RHAT => (format!("{r:.3}"), theme.warn()),
        Some(r) => (format!("{r:.3}"), Style::new()),
        None => ("-".into(), Style::new()),
    }
}

/// The record's bound on 1 − AUC (marked when vacuous, ≥ ½) or its
/// importance-sampling k̂ (marked above its threshold); "-" where there is none.
fn certificate_cell(rec: Option<&RunRecord>, khat: bool, theme: &Theme) -> (String, Style) {
    if khat {
        let c = rec.and_then(RunRecord::is_check);
        let k = c.as_ref().and_then(|c| c.khat);
        let trusted = c.is_none_or(|c| c.trusted);
        let text = k.map_or("-".into(), |k| format!("{k:.2}"));
        return (text, if trusted { Style::new() } else { theme.warn() });
    }
    // A vacuous bound (≥ ½: no better than chance) is marked by ✗ as well as
    // colour, so it reads without colour too.
    let b = rec.and_then(|r| r.bound.as_ref());
    match b {
        Some(b) if b.is_vacuous() => (format!("{:.4}✗", b.risk), theme.warn()),
        Some(b) => (format!("{:.4}", b.risk), Style::new()),
        None => ("-".into(), Style::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// At 80 columns (78 inside the pane) the paired difference, the bound,
    /// γ and the prior stay and k̂, log Z, the train AUC and time go;
    /// narrower, the test AUC and its paired difference outlast the rest; at
    /// 124 every column fits.
    #[test]
    fn the_test_auc_and_its_paired_difference_outlast_the_rest() {
        let heads = |w| {
            visible_columns(w, true)
                .into_iter()
                .map(|i| COLUMNS[i].head)
                .collect::<Vec<_>>()
        };
        assert_eq!(heads(124).len(), COLUMNS.len());
        let h = heads(78);
        for keep in ["vs ▶", "bound", "γ", "prior"] {
            assert!(h.contains(&keep), "{h:?}");
        }
        let h = heads(56);
        for keep in ["#", "method", "status", "test ±SE", "vs ▶"] {
            assert!(h.contains(&keep), "{h:?}");
        }
        assert!(!h.contains(&"time"), "{h:?}");
    }
}
