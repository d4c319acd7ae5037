//! One stratified k-fold cross-validation over an ordered grid, for every
//! method that tunes something by held-out AUC (logit's λ, RankBoost's rounds,
//! EP's γ; next VB's and GP-EP's γ). ALGORITHMS.md §8.
//!
//! A method plugs in through `CvMethod`: per fold it starts a `GridWalker` on
//! the fold's training rows and walks the grid in the method's order (`Walk`),
//! each point warm-started from the last, returning the held-out rows' scores
//! or a failure. The rules, the same for every method:
//! - a failure ends the fold's walk: the later points of the walk are not run
//!   in that fold (for EP, larger γ only get harder);
//! - a point is eligible only if it was scored in every fold; the chosen
//!   point has the largest mean held-out AUC, ties (within `TIE`) going to the
//!   point the walk reaches first (the smoother model: smaller γ, larger λ,
//!   fewer rounds);
//! - with `CvSpec::extend_below_to`, when fewer than two points are eligible
//!   the grid is extended below its smallest point by halving (EP: EEG's whole
//!   default grid can fail in a fold); a fold where no point above the new
//!   ones succeeded walks up through them again, warm-started;
//! - every failure is reported uniformly (`FoldFailure`: fold, point, reason,
//!   message, iterations), and every dropped point says why.
//!
//! Folds run concurrently (as many as threads, folds and `memory_budget`
//! allow); each fold's computation does not depend on the others or on the
//! thread count, and results are gathered in fold order, so the report is the
//! same whatever the thread count. Log lines are passed on as they come.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;

use nalgebra::DMatrix;
use serde::Serialize;

use crate::engine::data::prepare::{fold_indices, stratified_folds};
use crate::engine::error::NonConvergence;
use crate::engine::fit::CvSummary;
use crate::engine::interface::{Control, EngineError};
use crate::engine::metrics::auc;

/// Mean AUCs within this of the best count as ties.
pub const TIE: f64 = 1e-9;

/// The direction a method's walk (and warm starts) take along the grid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Walk {
    Ascending,
    Descending,
}

/// What to cross-validate.
#[derive(Debug, Clone, PartialEq)]
pub struct CvSpec {
    pub folds: usize,
    /// Seed of the fold assignment.
    pub seed: u64,
    /// Grid values (any order; reported ascending).
    pub grid: Vec<f64>,
    pub walk: Walk,
    /// Extend the grid downwards by halving, to this value at most, when fewer
    /// than two points are eligible (None: never).
    pub extend_below_to: Option<f64>,
    /// Most bytes the concurrently running folds may hold together.
    pub memory_budget: usize,
}

impl CvSpec {
    /// The usual spec: walked upwards, never extended, the default memory budget.
    pub fn ascending(folds: usize, seed: u64, grid: Vec<f64>) -> CvSpec {
        CvSpec {
            folds,
            seed,
            grid,
            walk: Walk::Ascending,
            extend_below_to: None,
            memory_budget: MEMORY_BUDGET,
        }
    }
}

/// Default `memory_budget`: 1 GiB (a fold above it runs alone: its passes are parallel inside).
pub const MEMORY_BUDGET: usize = 1 << 30;

/// One fold's rows.
pub struct FoldData {
    /// 0-based.
    pub fold: usize,
    pub xtr: DMatrix<f64>,
    pub ytr: Vec<bool>,
    pub xte: DMatrix<f64>,
    pub yte: Vec<bool>,
}

impl FoldData {
    /// Fold `f`'s training and held-out rows under the fold `assignment`.
    pub fn of(x: &DMatrix<f64>, y: &[bool], assignment: &[usize], f: usize) -> FoldData {
        let (tr, te) = fold_indices(assignment, f);
        FoldData {
            fold: f,
            xtr: x.select_rows(&tr),
            ytr: tr.iter().map(|&i| y[i]).collect(),
            xte: x.select_rows(&te),
            yte: te.iter().map(|&i| y[i]).collect(),
        }
    }
}

/// The result of one grid point in one fold.
#[derive(Debug, Clone, PartialEq)]
pub enum PointFit {
    /// Scores of the held-out rows (`FoldData::xte`), and the work it took
    /// (sweeps, Newton iterations, rounds).
    Scored { scores: Vec<f64>, iterations: usize },
    /// The method gave no answer here: `reason` says which rule stopped it,
    /// `message` the whole story.
    Failed {
        reason: NonConvergence,
        message: String,
        iterations: usize,
    },
}

/// A method's fit along the grid on one fold (warm-started point to point).
pub trait GridWalker {
    fn fit(&mut self, value: f64, fold: &FoldData, ctl: &Control) -> Result<PointFit, EngineError>;
}

/// A method that cross-validation can tune.
pub trait CvMethod: Sync {
    type Walker: GridWalker;
    /// Log prefix ("ep"), the parameter's name in the report ("gamma_over_n")
    /// and the unit of `iterations` ("sweeps").
    fn names(&self) -> CvNames;
    /// A grid value as text for messages ("γ = 0.5n").
    fn label(&self, value: f64) -> String;
    /// A new walker on the fold's training rows.
    fn start(&self, fold: &FoldData) -> Result<Self::Walker, EngineError>;
    /// Bytes a fold with these training rows holds while it runs.
    fn fold_bytes(&self, positives: usize, negatives: usize, d: usize) -> usize;
}

#[derive(Debug, Clone, Copy)]
pub struct CvNames {
    pub prefix: &'static str,
    pub parameter: &'static str,
    pub unit: &'static str,
}

/// A grid point that failed in a fold.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FoldFailure {
    /// 1-based.
    pub fold: usize,
    pub value: f64,
    pub reason: NonConvergence,
    pub message: String,
    pub iterations: usize,
}

/// The whole cross-validation, for the record (points ascending).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CvReport {
    pub parameter: &'static str,
    pub folds: usize,
    pub seed: u64,
    pub walk: Walk,
    /// Every point tried: the requested grid plus any extension.
    pub grid: Vec<f64>,
    /// Mean held-out AUC (None where a fold has no score).
    pub mean_auc: Vec<Option<f64>>,
    /// Held-out AUC per fold and point.
    pub fold_auc: Vec<Vec<Option<f64>>>,
    /// Work per fold and point (of the last attempt; 0 = not run).
    pub fold_iterations: Vec<Vec<usize>>,
    pub iterations_unit: &'static str,
    pub failures: Vec<FoldFailure>,
    /// Points without a mean AUC, each with why.
    pub dropped: Vec<String>,
    /// Points added below the requested grid (in the order added).
    pub extended_below: Vec<f64>,
    pub chosen: f64,
}

impl CvReport {
    /// What the quality checks read of it (`Fit::cv`).
    pub fn summary(&self) -> CvSummary {
        CvSummary {
            parameter: self.parameter.to_string(),
            grid: self.grid.clone(),
            mean_auc: self.mean_auc.clone(),
            dropped: self.dropped.len(),
            extended_below: self.extended_below.clone(),
            chosen: self.chosen,
        }
    }

    /// The eligible points below the chosen one, ascending.
    pub fn eligible_below_chosen(&self) -> Vec<f64> {
        self.grid
            .iter()
            .zip(&self.mean_auc)
            .filter(|(c, a)| a.is_some() && **c < self.chosen)
            .map(|(c, _)| *c)
            .collect()
    }
}

/// Results per fold and point (points in the order added).
struct Table {
    auc: Vec<Vec<Option<f64>>>,
    iterations: Vec<Vec<usize>>,
    /// Why a point has no AUC in a fold (failed, or not run after a failure).
    why: Vec<Vec<Option<String>>>,
    failures: Vec<FoldFailure>,
}

impl Table {
    fn new(folds: usize, points: usize) -> Table {
        Table {
            auc: vec![vec![None; points]; folds],
            iterations: vec![vec![0; points]; folds],
            why: vec![vec![None; points]; folds],
            failures: Vec::new(),
        }
    }
    fn push_point(&mut self) {
        for f in 0..self.auc.len() {
            self.auc[f].push(None);
            self.iterations[f].push(0);
            self.why[f].push(None);
        }
    }
    /// Points with an AUC in every fold.
    fn eligible(&self) -> usize {
        (0..self.auc[0].len())
            .filter(|&g| self.auc.iter().all(|a| a[g].is_some()))
            .count()
    }
}

/// What one fold's walk produced for its points.
struct FoldRun {
    fold: usize,
    /// (point, AUC or why not, iterations if run) in walk order.
    points: Vec<(usize, Result<f64, String>, Option<usize>)>,
    failure: Option<FoldFailure>,
}

/// Everything a fold's walk needs.
struct Walks<'a, M: CvMethod> {
    method: &'a M,
    x: &'a DMatrix<f64>,
    y: &'a [bool],
    assignment: Vec<usize>,
    folds: usize,
}

impl<M: CvMethod> Walks<'_, M> {
    fn data(&self, f: usize) -> FoldData {
        FoldData::of(self.x, self.y, &self.assignment, f)
    }

    /// Walks fold `f` through the points `todo` (indices into `values`), cold at
    /// the first; a failure ends the walk.
    fn run(
        &self,
        f: usize,
        todo: &[usize],
        values: &[f64],
        ctl: &Control,
        log: &mut dyn FnMut(String),
    ) -> Result<FoldRun, EngineError> {
        let names = self.method.names();
        let fold = self.data(f);
        let mut walker = self.method.start(&fold)?;
        let mut run = FoldRun {
            fold: f,
            points: Vec::new(),
            failure: None,
        };
        for (k, &gi) in todo.iter().enumerate() {
            ctl.checkpoint()?;
            let value = values[gi];
            let label = self.method.label(value);
            match walker.fit(value, &fold, ctl)? {
                PointFit::Scored { scores, iterations } => {
                    let a = auc(&scores, &fold.yte);
                    if !a.is_finite() {
                        let message = "the held-out scores are not finite".to_string();
                        let point = (gi, values[gi], iterations);
                        self.fail(
                            &mut run,
                            point,
                            NonConvergence::NonFiniteScores,
                            message,
                            &todo[k + 1..],
                            log,
                        );
                        break;
                    }
                    log(format!(
                        "{} cv: fold {}/{}, {label}: held-out AUC {a:.4} ({iterations} {})",
                        names.prefix,
                        f + 1,
                        self.folds,
                        names.unit
                    ));
                    run.points.push((gi, Ok(a), Some(iterations)));
                }
                PointFit::Failed {
                    reason,
                    message,
                    iterations,
                } => {
                    let point = (gi, values[gi], iterations);
                    self.fail(&mut run, point, reason, message, &todo[k + 1..], log);
                    break;
                }
            }
        }
        Ok(run)
    }

    /// Records the failure of `point` (index, value, iterations) and the
    /// points of the walk it leaves out.
    fn fail(
        &self,
        run: &mut FoldRun,
        point: (usize, f64, usize),
        reason: NonConvergence,
        message: String,
        rest: &[usize],
        log: &mut dyn FnMut(String),
    ) {
        let (gi, value, iterations) = point;
        let f = run.fold;
        let names = self.method.names();
        log(format!(
            "{} cv: fold {}, {}: {message}",
            names.prefix,
            f + 1,
            self.method.label(value)
        ));
        run.points.push((
            gi,
            Err(format!("failed in fold {} ({reason})", f + 1)),
            Some(iterations),
        ));
        for &gj in rest {
            run.points.push((
                gj,
                Err(format!(
                    "not run in fold {}: an earlier point of its walk failed",
                    f + 1
                )),
                None,
            ));
        }
        run.failure = Some(FoldFailure {
            fold: f + 1,
            value,
            reason,
            message,
            iterations,
        });
    }

    /// Runs the walks `jobs` (fold, points), `concurrent` at a time, and
    /// returns them in fold order.
    fn run_all(
        &self,
        jobs: &[(usize, Vec<usize>)],
        values: &[f64],
        concurrent: usize,
        ctl: &Control,
        log: &mut dyn FnMut(String),
    ) -> Result<Vec<FoldRun>, EngineError> {
        if concurrent <= 1 || jobs.len() <= 1 {
            return jobs
                .iter()
                .map(|(f, todo)| self.run(*f, todo, values, ctl, log))
                .collect();
        }
        let next = AtomicUsize::new(0);
        let abort = AtomicBool::new(false);
        // Lines reach `log` in job order (the sequential run's order, so the
        // record does not depend on the thread count); the earliest unfinished
        // job's lines stream live, later jobs' wait in `held`.
        let (tx, rx) = mpsc::channel::<(usize, Option<String>)>();
        let mut done: Vec<(usize, Result<FoldRun, EngineError>)> = std::thread::scope(|sc| {
            let workers: Vec<_> = (0..concurrent.min(jobs.len()))
                .map(|_| {
                    let tx = tx.clone();
                    let (next, abort) = (&next, &abort);
                    sc.spawn(move || {
                        let mut mine = Vec::new();
                        loop {
                            let j = next.fetch_add(1, Ordering::SeqCst);
                            if j >= jobs.len() || abort.load(Ordering::SeqCst) {
                                return mine;
                            }
                            let (f, todo) = &jobs[j];
                            let r = self.run(*f, todo, values, ctl, &mut |l| {
                                let _ = tx.send((j, Some(l)));
                            });
                            if r.is_err() {
                                abort.store(true, Ordering::SeqCst);
                            }
                            let _ = tx.send((j, None));
                            mine.push((j, r));
                        }
                    })
                })
                .collect();
            drop(tx);
            let mut held: Vec<Vec<String>> = vec![Vec::new(); jobs.len()];
            let mut finished = vec![false; jobs.len()];
            let mut cursor = 0;
            for (j, line) in rx {
                match line {
                    Some(l) if j == cursor => log(l),
                    Some(l) => held[j].push(l),
                    None => finished[j] = true,
                }
                while cursor < jobs.len() && finished[cursor] {
                    cursor += 1;
                    if let Some(h) = held.get_mut(cursor) {
                        h.drain(..).for_each(&mut *log);
                    }
                }
            }
            held.into_iter().flatten().for_each(&mut *log);
            workers
                .into_iter()
                .flat_map(|w| w.join().expect("a fold's worker panicked"))
                .collect()
        });
        done.sort_by_key(|(j, _)| *j);
        // The first error in job order (an aborted job never ran: no gap before it).
        done.into_iter().map(|(_, r)| r).collect()
    }
}

/// Runs the cross-validation of `method` on rows `x` with labels `y`; `log`
/// receives one line per point and fold, and the curve.
pub fn cross_validate<M: CvMethod>(
    x: &DMatrix<f64>,
    y: &[bool],
    spec: &CvSpec,
    method: &M,
    ctl: &Control,
    log: &mut dyn FnMut(String),
) -> Result<CvReport, EngineError> {
    let names = method.names();
    if spec.folds < 2 {
        return Err(EngineError::InvalidParams(
            "cross-validation needs at least 2 folds".into(),
        ));
    }
    if spec.grid.is_empty() || spec.grid.iter().any(|g| !(g.is_finite() && *g > 0.0)) {
        return Err(EngineError::InvalidParams(format!(
            "the grid of {} needs positive values",
            names.parameter
        )));
    }
    let n_pos = y.iter().filter(|&&b| b).count();
    if n_pos < spec.folds || y.len() - n_pos < spec.folds {
        return Err(EngineError::InvalidParams(format!(
            "{}-fold cross-validation needs at least {} rows of each class",
            spec.folds, spec.folds
        )));
    }
    let mut values: Vec<f64> = spec.grid.clone();
    let walk_order = |values: &[f64], idx: &mut Vec<usize>| {
        idx.sort_by(|&a, &b| match spec.walk {
            Walk::Ascending => values[a].total_cmp(&values[b]),
            Walk::Descending => values[b].total_cmp(&values[a]),
        })
    };
    let mut order: Vec<usize> = (0..values.len()).collect();
    walk_order(&values, &mut order);
    // Folds at once: threads, folds and memory permitting.
    let fold_rows = y.len() - y.len() / spec.folds;
    let (fold_pos, d) = (n_pos - n_pos / spec.folds, x.ncols());
    let bytes = method.fold_bytes(fold_pos, fold_rows - fold_pos, d).max(1);
    let concurrent = rayon::current_num_threads()
        .min(spec.folds)
        .min((spec.memory_budget / bytes).max(1));
    if concurrent > 1 {
        log(format!("{} cv: {concurrent} folds at a time", names.prefix));
    }
    let walks = Walks {
        method,
        x,
        y,
        assignment: stratified_folds(y, spec.folds, spec.seed),
        folds: spec.folds,
    };
    let mut table = Table::new(spec.folds, values.len());
    let jobs: Vec<(usize, Vec<usize>)> = (0..spec.folds).map(|f| (f, order.clone())).collect();
    record(
        &mut table,
        walks.run_all(&jobs, &values, concurrent, ctl, log)?,
    );

    // Too few points eligible: halve below the grid. (EP at a small γ
    // converges from the prior, and warm-started upwards from there it often
    // converges where a cold start cycles.)
    let mut extended_below = Vec::new();
    if let Some(floor) = spec.extend_below_to {
        let floor = floor * (1.0 - 1e-9);
        let lowest = values.iter().cloned().fold(f64::INFINITY, f64::min);
        let mut next = lowest * 0.5;
        while table.eligible() < 2 && next >= floor {
            let need = 2 - table.eligible();
            let mut level = Vec::new();
            while level.len() < need && next >= floor {
                level.push(values.len());
                values.push(next);
                extended_below.push(next);
                table.push_point();
                next *= 0.5;
            }
            level.reverse(); // ascending
            log(format!(
                "{} cv: fewer than two points succeeded in every fold; extending the grid down to {}",
                names.prefix,
                method.label(values[level[0]])
            ));
            let mut above: Vec<usize> = (0..values.len()).filter(|g| !level.contains(g)).collect();
            walk_order(&values, &mut above);
            let jobs: Vec<(usize, Vec<usize>)> = (0..spec.folds)
                .map(|f| {
                    let mut todo = level.clone();
                    if above.iter().all(|&g| table.auc[f][g].is_none()) {
                        todo.extend(&above);
                    }
                    (f, todo)
                })
                .collect();
            record(
                &mut table,
                walks.run_all(&jobs, &values, concurrent, ctl, log)?,
            );
        }
    }

    let mut asc: Vec<usize> = (0..values.len()).collect();
    asc.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
    let mean_auc: Vec<Option<f64>> = (0..values.len())
        .map(|g| {
            let v: Option<Vec<f64>> = table.auc.iter().map(|a| a[g]).collect();
            v.map(|v| v.iter().sum::<f64>() / v.len() as f64)
        })
        .collect();
    let mut dropped = Vec::new();
    for &gi in &asc {
        let label = method.label(values[gi]);
        log(match mean_auc[gi] {
            Some(a) => format!("{} cv: {label}  mean held-out AUC {a:.4}", names.prefix),
            None => format!("{} cv: {label}  failed in some fold", names.prefix),
        });
        if mean_auc[gi].is_none() {
            let why: Vec<&str> = table.why.iter().filter_map(|w| w[gi].as_deref()).collect();
            dropped.push(format!("{label}: {}", why.join("; ")));
        }
    }
    // Best mean AUC; ties go to the point the walk reaches first.
    let mut walked: Vec<usize> = (0..values.len()).collect();
    walk_order(&values, &mut walked);
    let mut best: Option<usize> = None;
    for &gi in &walked {
        if let Some(a) = mean_auc[gi]
            && best.is_none_or(|b| a > mean_auc[b].expect("eligible") + TIE)
        {
            best = Some(gi);
        }
    }
    let Some(best) = best else {
        return Err(EngineError::NotConverged {
            reason: NonConvergence::SearchFailed,
            account: None,
            message: format!(
                "cross-validation: no point of the grid{} succeeded in every fold",
                spec.extend_below_to.map_or(String::new(), |f| format!(
                    " (extended down to {})",
                    method.label(f)
                ))
            ),
            diagnostics: serde_json::json!({
                "grid": values, "failures": table.failures, "dropped": dropped,
            }),
        });
    };
    let sorted = |v: &Vec<Option<f64>>| asc.iter().map(|&g| v[g]).collect::<Vec<_>>();
    Ok(CvReport {
        parameter: names.parameter,
        folds: spec.folds,
        seed: spec.seed,
        walk: spec.walk,
        grid: asc.iter().map(|&g| values[g]).collect(),
        mean_auc: sorted(&mean_auc),
        fold_auc: table.auc.iter().map(sorted).collect(),
        fold_iterations: table
            .iterations
            .iter()
            .map(|s| asc.iter().map(|&g| s[g]).collect())
            .collect(),
        iterations_unit: names.unit,
        failures: table.failures,
        dropped,
        extended_below,
        chosen: values[best],
    })
}

/// Enters the walks' results into the table (in fold order).
fn record(table: &mut Table, runs: Vec<FoldRun>) {
    for run in runs {
        let f = run.fold;
        for (gi, res, iterations) in run.points {
            if let Some(it) = iterations {
                table.iterations[f][gi] = it;
            }
            match res {
                Ok(a) => {
                    table.auc[f][gi] = Some(a);
                    table.why[f][gi] = None;
                }
                Err(why) => table.why[f][gi] = Some(why),
            }
        }
        table.failures.extend(run.failure);
    }
}

#[cfg(test)]
#[path = "kfold_tests.rs"]
mod tests;
