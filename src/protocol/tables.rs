//! Tables 1 and 2 as Markdown and CSV: test AUC per data set × method beside
//! RACL14's, paired differences against logit, the γ used, fit seconds beside
//! RACL14's Table 2. Every cell says how many splits it has; cells without
//! a result say why (skipped, failed, not run yet).

use std::fmt::Write as _;

use super::Mode;
use super::config::{BASELINE_KEY, DataPlan, MethodPlan, PAPER_MACHINE};
use super::runs::{GammaSource, RunResult, Status};
use super::stats::{MeanSd, Paired, mean_sd, median_range, paired};

/// What the runs of one data set × method gave, per split seed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Cell {
    /// Split seeds planned.
    pub planned: usize,
    /// Test AUC per seed (None: no result on that split).
    pub auc: Vec<Option<f64>>,
    pub seconds: Vec<f64>,
    pub gamma_over_n: Vec<f64>,
    pub failed: Vec<(u64, String)>,
    pub skipped: Vec<(u64, String)>,
    pub not_converged: usize,
    /// Splits answered by a named alternative (power EP), with why.
    pub alternative: Vec<String>,
}

impl Cell {
    /// The cell of `key` on `data` from the results.
    pub fn of(results: &[RunResult], data: &str, key: &str, planned: usize) -> Cell {
        let mut c = Cell {
            planned,
            auc: vec![None; planned],
            ..Cell::default()
        };
        for r in results
            .iter()
            .filter(|r| r.id.data == data && r.id.key == key)
        {
            let seed = r.id.seed;
            match (&r.status, &r.summary) {
                (Status::Failed(e), _) => c.failed.push((seed, e.clone())),
                (Status::Skipped(e), _) => c.skipped.push((seed, e.clone())),
                (_, Some(s)) => {
                    if let Some(slot) = c.auc.get_mut(seed as usize) {
                        *slot = s.test_auc;
                    }
                    c.seconds.push(s.fit_seconds);
                    c.gamma_over_n.extend(s.gamma_over_n());
                    c.not_converged += usize::from(!s.converged);
                    c.alternative.extend(s.alternative.clone());
                }
                _ => {}
            }
        }
        c
    }

    pub fn done(&self) -> usize {
        self.seconds.len()
    }

    pub fn auc_stats(&self) -> Option<MeanSd> {
        mean_sd(&self.auc.iter().flatten().copied().collect::<Vec<_>>())
    }
}

/// Everything the tables are made of.
pub struct Tables<'a> {
    pub data: &'a [DataPlan],
    pub methods: &'a [&'static MethodPlan],
    pub results: &'a [RunResult],
    pub mode: Mode,
    /// The command that makes them (shown in the Markdown).
    pub command: String,
    /// Written from the records on disk alone (`--tables-only`).
    pub from_disk: bool,
}

fn num(v: Option<f64>, digits: usize) -> String {
    v.map_or(String::new(), |x| format!("{x:.digits$}"))
}

fn paper(v: Option<f64>) -> String {
    v.map_or("–".into(), |x| format!("{x}"))
}

/// "0.8500 ± 0.027 (20)", "0.8500 (1)".
pub fn mean_sd_text(m: &MeanSd, digits: usize) -> String {
    match m.sd {
        Some(sd) => format!("{:.digits$} ± {sd:.3} ({})", m.mean, m.count),
        None => format!("{:.digits$} ({})", m.mean, m.count),
    }
}

/// "+0.0012 ± 0.0009 (20)".
pub fn paired_text(p: &Paired) -> String {
    match p.se {
        Some(se) => format!("{:+.4} ± {se:.4} ({})", p.mean, p.pairs),
        None => format!("{:+.4} ({})", p.mean, p.pairs),
    }
}

impl Tables<'_> {
    fn cell(&self, d: &DataPlan, key: &str) -> Cell {
        Cell::of(self.results, &d.name, key, d.splits)
    }

    /// A cell without a value: why.
    fn empty_text(&self, c: &Cell, notes: &mut Notes) -> String {
        if !c.skipped.is_empty() && c.skipped.len() == c.planned {
            format!("skipped{}", notes.mark(&c.skipped[0].1))
        } else if !c.failed.is_empty() && c.failed.len() + c.skipped.len() == c.planned {
            format!("failed ({}){}", c.failed.len(), notes.mark(&c.failed[0].1))
        } else if !c.failed.is_empty() {
            // Some splits failed, the others are still to run: say both.
            format!(
                "n/a (not run yet); {} failed{}",
                c.failed.len(),
                notes.mark(&c.failed[0].1)
            )
        } else {
            "n/a (not run yet)".into()
        }
    }

    /// Marks a cell with partial results: splits missing, failed, not converged.
    fn suffix(&self, c: &Cell, notes: &mut Notes) -> String {
        let mut s = String::new();
        if c.done() < c.planned {
            let _ = write!(s, " of {}", c.planned);
        }
        if let Some((_, e)) = c.failed.first() {
            let _ = write!(s, "; {} failed{}", c.failed.len(), notes.mark(e));
        }
        if let Some((_, e)) = c.skipped.first() {
            let _ = write!(s, "; {} skipped{}", c.skipped.len(), notes.mark(e));
        }
        if c.not_converged > 0 {
            let _ = write!(s, "; {} not converged", c.not_converged);
        }
        if let Some(why) = c.alternative.first() {
            let _ = write!(
                s,
                "; {} by power EP{}",
                c.alternative.len(),
                notes.mark(why)
            );
        }
        s
    }

    pub fn table1_md(&self) -> String {
        let mut notes = Notes::default();
        let mut s = String::new();
        let _ = writeln!(
            s,
            "# RACL14 Table 1: test AUC\n\n{} Test AUC of each method's point \
             score, mean ± sd over stratified 75/25 splits (split seeds 0, 1, …; the number of \
             splits with a result in brackets, \"of N\" when some are missing). RACL14 columns: \
             their Table 1 (ALGORITHMS.md §12). Methods: {}.\n",
            self.made_by(),
            self.methods
                .iter()
                .map(|m| m.key)
                .collect::<Vec<_>>()
                .join(", ")
        );
        let mut head = "| data | splits |".to_string();
        for m in self.methods {
            let _ = write!(head, " {} |", m.key);
        }
        head.push_str(" RACL14 EP-AUC | RACL14 GPEP-AUC | RACL14 Logit | RACL14 Rankboost |");
        let _ = writeln!(s, "{head}");
        let _ = writeln!(s, "{}", sep(head.matches('|').count() - 1));
        for d in self.data {
            let _ = write!(s, "| {} | {} |", d.name, d.splits);
            for m in self.methods {
                let c = self.cell(d, m.key);
                let text = match c.auc_stats() {
                    Some(st) => format!("{}{}", mean_sd_text(&st, 4), self.suffix(&c, &mut notes)),
                    None => self.empty_text(&c, &mut notes),
                };
                let _ = write!(s, " {text} |");
            }
            let p = |k| paper(d.paper_auc(k));
            let _ = writeln!(
                s,
                " {} | {} | {} | {} |",
                p("ep"),
                p("gp-ep"),
                p("logit"),
                p("rankboost")
            );
        }
        for d in self.data {
            if let Some(note) = d.paper.and_then(|p| p.note) {
                let _ = writeln!(s, "\n{}: {note}.", d.name);
            }
        }
        s.push_str(&self.paired_md(&mut notes));
        s.push_str(&self.gamma_md());
        s.push_str(&self.plan_md());
        s.push_str(&notes.render());
        s
    }

    /// Splits, the CVs' folds and grid, and the settings changed, per data set.
    fn plan_md(&self) -> String {
        let mut s =
            "\n## The protocol per data set\n\nEvery CV of a data set uses the same folds and \
                     γ/n grid (EP Gaussian's shown).\n\n| data | splits | CV folds | γ/n grid | \
                     settings changed here |\n|---|---:|---:|---|---|\n"
                .to_string();
        let ep = super::config::method_plan(super::config::EP_KEY).expect("EP is in the table");
        for d in self.data {
            let file = std::path::PathBuf::from(format!("{}.csv", d.name));
            let cv = match super::runs::spec_of(ep, d, &file, 0, self.mode, None).map(|r| r.method)
            {
                Ok(crate::spec::MethodSpec::Ep(es)) => {
                    let grid: Vec<String> = es.gamma_grid.iter().map(|g| format!("{g}")).collect();
                    (es.folds.to_string(), grid.join(", "))
                }
                _ => ("–".into(), "–".into()),
            };
            let changed: Vec<String> = (d.overrides.iter())
                .map(|o| match o.value {
                    "" => {
                        let default = crate::spec::registry::setting_of(o.key).map_or("", |s| {
                            if s.unset.is_empty() {
                                s.default
                            } else {
                                s.unset
                            }
                        });
                        format!("{}: `{}` unset: {default} ({})", o.method, o.key, o.why)
                    }
                    v => format!("{}: `{} = {v}` ({})", o.method, o.key, o.why),
                })
                .collect();
            let changed = if changed.is_empty() {
                "–".to_string()
            } else {
                changed.join("; ")
            };
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {changed} |",
                d.name, d.splits, cv.0, cv.1
            );
        }
        s
    }

    /// How the tables were made, and how far the runs got.
    fn made_by(&self) -> String {
        let planned: usize = self.data.iter().map(|d| d.splits).sum::<usize>() * self.methods.len();
        let done = self.results.iter().filter(|r| r.summary.is_some()).count();
        let mut s = format!(
            "Made by `{}`{}: {done} of {planned} runs have a record",
            self.command,
            if self.mode == Mode::Quick {
                " (quick: fewer splits, cheaper settings; not the protocol's numbers)"
            } else {
                ""
            },
        );
        if self.from_disk {
            s.push_str(
                " (tables written from the records on disk; the same command resumes the runs \
                 marked \"n/a (not run yet)\")",
            );
        }
        s.push('.');
        s
    }

    fn paired_md(&self, notes: &mut Notes) -> String {
        let mut s = format!(
            "\n## Paired differences against {BASELINE_KEY}\n\nMean per-split difference of the \
             test AUC, method − {BASELINE_KEY}, ± its standard error (sd/√k over the k splits \
             where both have a result).\n\n"
        );
        let others: Vec<_> = self
            .methods
            .iter()
            .filter(|m| m.key != BASELINE_KEY)
            .collect();
        let mut head = "| data |".to_string();
        for m in &others {
            let _ = write!(head, " {} − {BASELINE_KEY} |", m.key);
        }
        let _ = writeln!(s, "{head}\n{}", sep(others.len() + 1));
        for d in self.data {
            let base = self.cell(d, BASELINE_KEY);
            let _ = write!(s, "| {} |", d.name);
            for m in &others {
                let c = self.cell(d, m.key);
                let text = match paired(&c.auc, &base.auc) {
                    Some(p) => paired_text(&p),
                    None if c.done() == 0 => self.empty_text(&c, notes),
                    None => "n/a (no logit result on the same splits)".into(),
                };
                let _ = write!(s, " {text} |");
            }
            s.push('\n');
        }
        s
    }

    fn gamma_md(&self) -> String {
        let bayes: Vec<_> = self
            .methods
            .iter()
            .filter(|m| m.gamma != super::config::GammaPolicy::None)
            .collect();
        let mut s = "\n## γ/n used: median [range] over the splits\n\n\"CV\": the method's own \
                     cross-validation on the training part; \"EP\": the γ EP Gaussian's CV chose \
                     on the same split (the reason follows).\n\n"
            .to_string();
        let mut head = "| data |".to_string();
        for m in &bayes {
            let _ = write!(head, " {} |", m.key);
        }
        let _ = writeln!(s, "{head}\n{}", sep(bayes.len() + 1));
        let mut reasons: Vec<String> = Vec::new();
        for d in self.data {
            let _ = write!(s, "| {} |", d.name);
            for m in &bayes {
                let c = self.cell(d, m.key);
                let src = match GammaSource::of(m, d, self.mode) {
                    GammaSource::Cv => "CV".to_string(),
                    GammaSource::FromEp(why) => {
                        let i = match reasons.iter().position(|r| *r == why) {
                            Some(i) => i,
                            None => {
                                reasons.push(why);
                                reasons.len() - 1
                            }
                        };
                        format!("EP[{}]", i + 1)
                    }
                    GammaSource::None => "–".into(),
                };
                let text = match median_range(&c.gamma_over_n) {
                    Some((med, lo, hi)) => format!("{med:.3} [{lo:.3}, {hi:.3}] {src}"),
                    None => format!("– {src}"),
                };
                let _ = write!(s, " {text} |");
            }
            s.push('\n');
        }
        for (i, r) in reasons.iter().enumerate() {
            let _ = writeln!(s, "\nEP[{}]: {r}.", i + 1);
        }
        s
    }

    pub fn table1_csv(&self) -> String {
        let mut s = "data,method,splits_planned,splits_done,failed,skipped,not_converged,\
                     auc_mean,auc_sd,diff_vs_logit,diff_vs_logit_se,diff_pairs,gamma_source,\
                     gamma_over_n_median,gamma_over_n_min,gamma_over_n_max,racl14_auc,why_missing,\
                     by_power_ep\n"
            .to_string();
        for d in self.data {
            let base = self.cell(d, BASELINE_KEY);
            for m in self.methods {
                let c = self.cell(d, m.key);
                let st = c.auc_stats();
                let pd = (m.key != BASELINE_KEY)
                    .then(|| paired(&c.auc, &base.auc))
                    .flatten();
                let g = median_range(&c.gamma_over_n);
                let src = match GammaSource::of(m, d, self.mode) {
                    GammaSource::None => "",
                    GammaSource::Cv => "cv",
                    GammaSource::FromEp(_) => "ep",
                };
                let why = c
                    .skipped
                    .first()
                    .or(c.failed.first())
                    .map_or(String::new(), |(_, e)| e.clone());
                let _ = writeln!(
                    s,
                    "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
                    d.name,
                    m.key,
                    c.planned,
                    c.done(),
                    c.failed.len(),
                    c.skipped.len(),
                    c.not_converged,
                    num(st.map(|x| x.mean), 6),
                    num(st.and_then(|x| x.sd), 6),
                    num(pd.map(|p| p.mean), 6),
                    num(pd.and_then(|p| p.se), 6),
                    pd.map_or(0, |p| p.pairs),
                    src,
                    num(g.map(|x| x.0), 6),
                    num(g.map(|x| x.1), 6),
                    num(g.map(|x| x.2), 6),
                    num(d.paper_auc(m.key), 4),
                    csv_field(&why),
                    c.alternative.len()
                );
            }
        }
        s
    }

    pub fn table2_md(&self) -> String {
        let mut notes = Notes::default();
        let mut s = format!(
            "# RACL14 Table 2: fit seconds\n\n{} Wall seconds of one fit (the \
             cross-validations included), mean [min, max] over the splits with a result, on \
             this machine as the runs found it (other work may have shared the cores: \
             indicative only). {PAPER_MACHINE}.\n\n",
            self.made_by()
        );
        let mut head = "| data |".to_string();
        for m in self.methods {
            let _ = write!(head, " {} |", m.key);
        }
        head.push_str(" RACL14 EP | RACL14 GP-EP | RACL14 Rankboost |");
        let _ = writeln!(s, "{head}\n{}", sep(head.matches('|').count() - 1));
        for d in self.data {
            let _ = write!(s, "| {} |", d.name);
            for m in self.methods {
                let c = self.cell(d, m.key);
                let text = match mean_sd(&c.seconds) {
                    Some(st) => {
                        let (_, lo, hi) = median_range(&c.seconds).expect("values");
                        format!(
                            "{} [{}, {}] ({})",
                            secs(st.mean),
                            secs(lo),
                            secs(hi),
                            st.count
                        )
                    }
                    None => self.empty_text(&c, &mut notes),
                };
                let _ = write!(s, " {text} |");
            }
            let p = |k| paper(d.paper_seconds(k));
            let _ = writeln!(s, " {} | {} | {} |", p("ep"), p("gp-ep"), p("rankboost"));
        }
        s.push_str(&notes.render());
        s
    }

    pub fn table2_csv(&self) -> String {
        let mut s = "data,method,splits_done,fit_s_mean,fit_s_min,fit_s_max,racl14_s\n".to_string();
        for d in self.data {
            for m in self.methods {
                let c = self.cell(d, m.key);
                let st = mean_sd(&c.seconds);
                let r = median_range(&c.seconds);
                let _ = writeln!(
                    s,
                    "{},{},{},{},{},{},{}",
                    d.name,
                    m.key,
                    c.done(),
                    num(st.map(|x| x.mean), 4),
                    num(r.map(|x| x.1), 4),
                    num(r.map(|x| x.2), 4),
                    num(d.paper_seconds(m.key), 2)
                );
            }
        }
        s
    }
}

/// "0.12", "3.4", "1234".
fn secs(x: f64) -> String {
    if x < 1.0 {
        format!("{x:.2}")
    } else if x < 100.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.0}")
    }
}

fn sep(columns: usize) -> String {
    let mut s = "|".to_string();
    for _ in 0..columns {
        s.push_str("---|");
    }
    s
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\"").replace('\n', " "))
    } else {
        s.to_string()
    }
}

/// Footnotes: one number per distinct reason.
#[derive(Default)]
struct Notes {
    texts: Vec<String>,
}

impl Notes {
    fn mark(&mut self, text: &str) -> String {
        let first = text.lines().next().unwrap_or("").trim().to_string();
        let i = match self.texts.iter().position(|t| *t == first) {
            Some(i) => i,
            None => {
                self.texts.push(first);
                self.texts.len() - 1
            }
        };
        format!(" [{}]", i + 1)
    }

    fn render(&self) -> String {
        let mut s = String::new();
        if !self.texts.is_empty() {
            s.push_str("\n## Why cells are missing or marked\n\n");
        }
        for (i, t) in self.texts.iter().enumerate() {
            let _ = writeln!(s, "{}. {t}", i + 1);
        }
        s
    }
}
