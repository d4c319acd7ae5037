//! Cross-validation along a path: for a method one run of which passes through
//! every grid point in ascending order — tempering SMC, whose run from γ = 0
//! to the largest γ of the grid can stop at each grid point on the way
//! (ALGORITHMS.md §8) — so that a fold costs one run instead of one per point.
//!
//! An adapter onto `kfold`: the same stratified folds, the same choice rule,
//! the same failure reports and the same `CvReport`. The fold's walker runs
//! the whole path at its first point and hands out the points' fits as the
//! walk asks for them.

use std::sync::mpsc;

use nalgebra::DMatrix;
use serde::{Deserialize, Serialize};

use super::kfold::{
    CvMethod, CvNames, CvReport, CvSpec, FoldData, GridWalker, PointFit, TIE, Walk, cross_validate,
};
use crate::engine::data::prepare::stratified_folds;
use crate::engine::error::NonConvergence;
use crate::engine::interface::{Control, EngineError};

/// A method whose one run on a fold's training rows visits every grid point.
pub trait PathMethod: Sync {
    /// As `CvMethod::names`.
    fn names(&self) -> CvNames;
    /// As `CvMethod::label`.
    fn label(&self, value: f64) -> String;
    /// As `CvMethod::fold_bytes`.
    fn fold_bytes(&self, positives: usize, negatives: usize, d: usize) -> usize;
    /// One run on the fold's training rows through `grid` (ascending), giving
    /// `at` each point's fit (its index into `grid`) in order; the run ends
    /// where `at` returns false. A `Failed` point ends the fold's walk (the
    /// later points are reported as not run); a point the run never gave is
    /// reported as not reached.
    fn run_path(
        &self,
        fold: &FoldData,
        grid: &[f64],
        ctl: &Control,
        at: &mut dyn FnMut(usize, PointFit) -> bool,
    ) -> Result<(), EngineError>;
}

/// A path method that can also fit one grid point from scratch: the per-point
/// reference its path is measured against (`cross_validate_refit`), with the
/// names and memory of the path.
pub trait RefitPoint: PathMethod {
    /// The fit at `value` alone on the fold's training rows.
    fn fit_point(
        &self,
        value: f64,
        fold: &FoldData,
        ctl: &Control,
    ) -> Result<PointFit, EngineError>;
}

/// The cross-validation of `method` with one fit per fold and grid point
/// (`kfold` directly): the slow reference of `cross_validate_path`.
pub fn cross_validate_refit<M: RefitPoint>(
    x: &DMatrix<f64>,
    y: &[bool],
    spec: &CvSpec,
    method: &M,
    ctl: &Control,
    log: &mut dyn FnMut(String),
) -> Result<CvReport, EngineError> {
    cross_validate(x, y, spec, &Refit(method), ctl, log)
}

/// A `RefitPoint` as a `kfold` method; its walker keeps nothing between points.
struct Refit<'a, M>(&'a M);

impl<'a, M: RefitPoint> CvMethod for Refit<'a, M> {
    type Walker = Refit<'a, M>;
    fn names(&self) -> CvNames {
        self.0.names()
    }
    fn label(&self, value: f64) -> String {
        self.0.label(value)
    }
    fn start(&self, _: &FoldData) -> Result<Refit<'a, M>, EngineError> {
        Ok(Refit(self.0))
    }
    fn fold_bytes(&self, positives: usize, negatives: usize, d: usize) -> usize {
        self.0.fold_bytes(positives, negatives, d)
    }
}

impl<M: RefitPoint> GridWalker for Refit<'_, M> {
    fn fit(&mut self, value: f64, fold: &FoldData, ctl: &Control) -> Result<PointFit, EngineError> {
        self.0.fit_point(value, fold, ctl)
    }
}

/// Ending every fold's run once the mean held-out AUC has clearly fallen:
/// at `points` grid points in a row past the best one so far, each below it
/// by more than `standard_errors` paired standard errors (the sd over folds of
/// the AUC differences, /√folds). The folds then advance in lockstep, point by
/// point, so that the rule reads the mean curve; the points skipped are
/// announced and recorded (`StoppedEarly`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct EarlyStop {
    pub points: usize,
    pub standard_errors: f64,
}

/// Where the folds' runs ended before the top of the grid, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StoppedEarly {
    /// The last grid point run.
    pub after: f64,
    /// The grid points not run (ascending).
    pub skipped: Vec<f64>,
    pub reason: String,
}

/// Runs the cross-validation of `method` along its path: `spec.walk` must be
/// ascending, and the grid is never extended (a path has no cold starts to
/// rescue). With `early`, the runs may end before the top of the grid (when
/// every fold fits in `spec.memory_budget` at once; otherwise they run to the
/// top, and `log` says so); the report's grid is then the points run.
pub fn cross_validate_path<M: PathMethod>(
    x: &DMatrix<f64>,
    y: &[bool],
    spec: &CvSpec,
    method: &M,
    early: Option<EarlyStop>,
    ctl: &Control,
    log: &mut dyn FnMut(String),
) -> Result<(CvReport, Option<StoppedEarly>), EngineError> {
    if spec.walk != Walk::Ascending || spec.extend_below_to.is_some() {
        return Err(EngineError::InvalidParams(
            "cross-validation along a path walks its grid upwards and never extends it".into(),
        ));
    }
    let mut grid = spec.grid.clone();
    grid.sort_by(f64::total_cmp);
    grid.dedup();
    let n_pos = y.iter().filter(|&&b| b).count();
    let rows = y.len() - y.len() / spec.folds.max(1);
    let pos = n_pos - n_pos / spec.folds.max(1);
    let all_at_once = method
        .fold_bytes(pos, rows.saturating_sub(pos), x.ncols())
        .saturating_mul(spec.folds)
        <= spec.memory_budget;
    let mut fits = None;
    let mut stopped = None;
    match early {
        // The checks of the folds and grid are cross_validate's (below).
        Some(rule) if all_at_once && spec.folds >= 2 && !grid.is_empty() && n_pos >= spec.folds => {
            let (f, s) = lockstep(x, y, spec, &grid, method, rule, ctl)?;
            if let Some(s) = &s {
                log(format!("{} cv: {}", method.names().prefix, s.reason));
                grid.retain(|g| *g <= s.after);
            }
            (fits, stopped) = (Some(f), s);
        }
        Some(_) if !all_at_once => log(format!(
            "{} cv: the folds do not fit in memory at once: every fold runs to the top of the grid",
            method.names().prefix
        )),
        _ => {}
    }
    let along = AlongPath {
        method,
        grid: &grid,
        fits: std::sync::Mutex::new(fits),
    };
    let spec = CvSpec {
        grid: grid.clone(),
        ..spec.clone()
    };
    Ok((cross_validate(x, y, &spec, &along, ctl, log)?, stopped))
}

/// The fits per fold and grid point (None: not given).
type FoldFits = Vec<Vec<Option<PointFit>>>;

/// What a fold's thread tells the coordinator.
enum Report {
    Point(usize, usize, PointFit),
    Ended(usize, Result<(), EngineError>),
}

/// Sends a fold's `Report::Ended` when its thread ends, panics included.
struct EndGuard {
    tx: mpsc::Sender<Report>,
    fold: usize,
    result: Option<Result<(), EngineError>>,
}

impl Drop for EndGuard {
    fn drop(&mut self) {
        let r = self.result.take().unwrap_or_else(|| {
            Err(EngineError::Numerical(format!(
                "the run of fold {} panicked",
                self.fold + 1
            )))
        });
        let _ = self.tx.send(Report::Ended(self.fold, r));
    }
}

/// Every fold's run at once, each waiting at every grid point until all have
/// reached it and the rule has said whether to go on. Returns the fits per
/// fold and point.
fn lockstep<M: PathMethod>(
    x: &DMatrix<f64>,
    y: &[bool],
    spec: &CvSpec,
    grid: &[f64],
    method: &M,
    rule: EarlyStop,
    ctl: &Control,
) -> Result<(FoldFits, Option<StoppedEarly>), EngineError> {
    let k = spec.folds;
    let assignment = stratified_folds(y, k, spec.seed);
    let data: Vec<FoldData> = (0..k).map(|f| FoldData::of(x, y, &assignment, f)).collect();
    let (tx, rx) = mpsc::channel::<Report>();
    let (go_tx, go_rx): (Vec<_>, Vec<_>) = (0..k).map(|_| mpsc::channel::<bool>()).unzip();
    std::thread::scope(|sc| {
        for (fold, go) in data.iter().zip(go_rx) {
            let tx = tx.clone();
            sc.spawn(move || {
                let f = fold.fold;
                // A panicking run still reports its end (the others wait for it).
                let mut end = EndGuard {
                    tx,
                    fold: f,
                    result: None,
                };
                let r = method.run_path(fold, grid, ctl, &mut |i, fit| {
                    end.tx.send(Report::Point(f, i, fit)).is_ok() && go.recv().unwrap_or(false)
                });
                end.result = Some(r);
            });
        }
        drop(tx);
        let mut fits = vec![vec![None; grid.len()]; k];
        let mut auc = vec![vec![None; grid.len()]; k];
        let mut waiting: Vec<Option<usize>> = vec![None; k];
        let mut ended = vec![false; k];
        let (mut error, mut stopped) = (None, None);
        for msg in rx {
            match msg {
                Report::Point(f, i, fit) => {
                    if let PointFit::Scored { scores, .. } = &fit {
                        auc[f][i] = Some(crate::engine::metrics::auc(scores, &data[f].yte))
                            .filter(|a| a.is_finite());
                    }
                    fits[f][i] = Some(fit);
                    waiting[f] = Some(i);
                }
                Report::Ended(f, r) => {
                    ended[f] = true;
                    waiting[f] = None;
                    if let Err(e) = r {
                        error.get_or_insert(e);
                    }
                }
            }
            let live: Vec<usize> = (0..k).filter(|&f| !ended[f]).collect();
            if live.is_empty() || live.iter().any(|&f| waiting[f].is_none()) {
                continue;
            }
            let at = live
                .iter()
                .filter_map(|&f| waiting[f])
                .min()
                .expect("live folds");
            if stopped.is_none() && at + 1 < grid.len() {
                stopped = fallen(&auc, at, rule).map(|why| StoppedEarly {
                    after: grid[at],
                    skipped: grid[at + 1..].to_vec(),
                    reason: format!(
                        "every fold's run ends at {}: {why}; the larger points ({}) are not run",
                        method.label(grid[at]),
                        grid[at + 1..]
                            .iter()
                            .map(|&g| method.label(g))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                });
            }
            let go_on = error.is_none() && stopped.is_none();
            for &f in &live {
                let _ = go_tx[f].send(go_on);
                waiting[f] = None;
            }
        }
        match error {
            Some(e) => Err(e),
            None => Ok((fits, stopped)),
        }
    })
}

/// Why the rule ends the runs after point `at` (None: go on). Only points
/// scored in every fold count.
fn fallen(auc: &[Vec<Option<f64>>], at: usize, rule: EarlyStop) -> Option<String> {
    let scored: Vec<usize> = (0..=at)
        .filter(|&j| auc.iter().all(|a| a[j].is_some()))
        .collect();
    let mean = |j: usize| auc.iter().map(|a| a[j].unwrap_or(0.0)).sum::<f64>() / auc.len() as f64;
    let best = scored
        .iter()
        .copied()
        .reduce(|b, j| if mean(j) > mean(b) + TIE { j } else { b })?;
    let after: Vec<usize> = scored.iter().copied().filter(|&j| j > best).collect();
    if after.len() < rule.points || *after.last()? != at {
        return None;
    }
    let k = auc.len() as f64;
    let below = |j: usize| {
        let d: Vec<f64> = auc
            .iter()
            .map(|a| a[j].unwrap_or(0.0) - a[best].unwrap_or(0.0))
            .collect();
        let m = d.iter().sum::<f64>() / k;
        let sd = (d.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (k - 1.0)).sqrt();
        m < 0.0 && m < -rule.standard_errors * sd / k.sqrt()
    };
    let last = &after[after.len() - rule.points..];
    last.iter().all(|&j| below(j)).then(|| {
        format!(
            "the mean held-out AUC fell below its best ({:.4} at point {}) by more than {} paired \
             standard error(s) at {} grid points in a row",
            mean(best),
            best + 1,
            rule.standard_errors,
            rule.points
        )
    })
}

struct AlongPath<'a, M> {
    method: &'a M,
    /// Ascending, without repeats.
    grid: &'a [f64],
    /// The fits per fold and point when the runs are done already (lockstep).
    fits: std::sync::Mutex<Option<FoldFits>>,
}

struct PathWalker<'a, M> {
    method: &'a M,
    grid: &'a [f64],
    /// The path's fits by grid index, once run.
    fits: Option<Vec<Option<PointFit>>>,
}

impl<'a, M: PathMethod> CvMethod for AlongPath<'a, M> {
    type Walker = PathWalker<'a, M>;

    fn names(&self) -> CvNames {
        self.method.names()
    }
    fn label(&self, value: f64) -> String {
        self.method.label(value)
    }
    fn start(&self, fold: &FoldData) -> Result<PathWalker<'a, M>, EngineError> {
        let mut done = self.fits.lock().expect("not poisoned");
        Ok(PathWalker {
            method: self.method,
            grid: self.grid,
            fits: done.as_mut().map(|f| std::mem::take(&mut f[fold.fold])),
        })
    }
    fn fold_bytes(&self, positives: usize, negatives: usize, d: usize) -> usize {
        self.method.fold_bytes(positives, negatives, d)
    }
}

impl<M: PathMethod> GridWalker for PathWalker<'_, M> {
    fn fit(&mut self, value: f64, fold: &FoldData, ctl: &Control) -> Result<PointFit, EngineError> {
        if self.fits.is_none() {
            let mut fits = vec![None; self.grid.len()];
            self.method.run_path(fold, self.grid, ctl, &mut |i, f| {
                fits[i] = Some(f);
                true
            })?;
            self.fits = Some(fits);
        }
        let i = self
            .grid
            .iter()
            .position(|&g| g == value)
            .expect("the walk visits the path's grid");
        let fits = self.fits.as_mut().expect("the path has run");
        Ok(fits[i].take().unwrap_or_else(|| PointFit::Failed {
            reason: NonConvergence::NotReached,
            message: format!(
                "the run on this fold ended before {}",
                self.method.label(value)
            ),
            iterations: 0,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::numerics::rng;
    use std::sync::atomic::{AtomicUsize, Ordering};

    const TOY: CvNames = CvNames {
        prefix: "toy",
        parameter: "v",
        unit: "stages",
    };

    /// Held-out scores `x0 + v·x1`.
    fn scores(fold: &FoldData, v: f64) -> Vec<f64> {
        (0..fold.yte.len())
            .map(|r| fold.xte[(r, 0)] + v * fold.xte[(r, 1)])
            .collect()
    }

    /// Scores `x0 + v·x1` along a "path"; counts its runs, and can stop early.
    struct Scripted {
        runs: AtomicUsize,
        stop_after: Option<usize>,
    }

    impl PathMethod for Scripted {
        fn names(&self) -> CvNames {
            TOY
        }
        fn label(&self, v: f64) -> String {
            format!("v = {v}")
        }
        fn fold_bytes(&self, _: usize, _: usize, _: usize) -> usize {
            1
        }
        fn run_path(
            &self,
            fold: &FoldData,
            grid: &[f64],
            _: &Control,
            at: &mut dyn FnMut(usize, PointFit) -> bool,
        ) -> Result<(), EngineError> {
            self.runs.fetch_add(1, Ordering::SeqCst);
            assert!(grid.windows(2).all(|w| w[0] < w[1]), "ascending");
            for (i, &v) in grid.iter().enumerate() {
                if self.stop_after.is_some_and(|k| i >= k) {
                    break;
                }
                let go_on = at(
                    i,
                    PointFit::Scored {
                        scores: scores(fold, v),
                        iterations: i + 1,
                    },
                );
                if !go_on {
                    break;
                }
            }
            Ok(())
        }
    }

    /// The same scores, one fit per point (the refit reference).
    impl RefitPoint for Scripted {
        fn fit_point(&self, v: f64, fold: &FoldData, _: &Control) -> Result<PointFit, EngineError> {
            Ok(PointFit::Scored {
                scores: scores(fold, v),
                iterations: 0,
            })
        }
    }

    fn toy(n: usize) -> (DMatrix<f64>, Vec<bool>) {
        let mut r = rng::stream(7, &[]);
        let x = DMatrix::from_fn(n, 2, |_, _| rng::normal(&mut r));
        let y = (0..n)
            .map(|i| x[(i, 0)] + 0.3 * x[(i, 1)] + rng::normal(&mut r) > 0.0)
            .collect();
        (x, y)
    }

    fn spec(grid: &[f64]) -> CvSpec {
        CvSpec::ascending(3, 2, grid.to_vec())
    }

    /// One run per fold, and the same curve and choice as fitting every point.
    #[test]
    fn one_run_per_fold_gives_the_per_point_curve() {
        let (x, y) = toy(150);
        let grid = [2.0, 0.0625, 0.25, 1.0, 4.0];
        let m = Scripted {
            runs: AtomicUsize::new(0),
            stop_after: None,
        };
        let ctl = Control::new();
        let (a, stopped) =
            cross_validate_path(&x, &y, &spec(&grid), &m, None, &ctl, &mut |_| {}).unwrap();
        assert_eq!(stopped, None);
        let b = cross_validate_refit(&x, &y, &spec(&grid), &m, &ctl, &mut |_| {}).unwrap();
        assert_eq!(m.runs.load(Ordering::SeqCst), 3);
        assert_eq!(a.grid, vec![0.0625, 0.25, 1.0, 2.0, 4.0]);
        assert_eq!(a.mean_auc, b.mean_auc);
        assert_eq!(a.chosen, b.chosen);
        assert_eq!(a.fold_iterations[0], vec![1, 2, 3, 4, 5]);
    }

    /// A run that ends early leaves its later points unscored in that fold,
    /// and says why: they are dropped, not silently shrunk away.
    #[test]
    fn points_a_run_never_reached_are_dropped_with_a_reason() {
        let (x, y) = toy(150);
        let m = Scripted {
            runs: AtomicUsize::new(0),
            stop_after: Some(2),
        };
        let (r, _) = cross_validate_path(
            &x,
            &y,
            &spec(&[0.5, 1.0, 2.0, 4.0]),
            &m,
            None,
            &Control::new(),
            &mut |_| {},
        )
        .unwrap();
        assert_eq!(r.mean_auc[2], None);
        assert_eq!(r.mean_auc[3], None);
        assert!(r.dropped[0].starts_with("v = 2: failed in fold 1 (not reached)"));
        assert!(r.dropped[1].contains("not run in fold 1"));
        assert!(r.chosen <= 1.0);
    }

    #[test]
    fn a_descending_walk_is_refused() {
        let (x, y) = toy(60);
        let m = Scripted {
            runs: AtomicUsize::new(0),
            stop_after: None,
        };
        let mut s = spec(&[1.0, 2.0]);
        s.walk = Walk::Descending;
        let e =
            cross_validate_path(&x, &y, &s, &m, None, &Control::new(), &mut |_| {}).unwrap_err();
        assert!(e.to_string().contains("upwards"));
    }

    /// The AUC of `x0 + v·x1` peaks near v = 0.3 and falls beyond: with the
    /// rule, every fold's run ends three points past the peak, in lockstep,
    /// and the report's grid is the points run; the choice is the full grid's.
    #[test]
    fn runs_end_early_once_the_mean_auc_has_clearly_fallen() {
        let (x, y) = toy(900);
        let grid = [0.0625, 0.25, 1.0, 4.0, 16.0, 64.0, 256.0];
        let rule = EarlyStop {
            points: 3,
            standard_errors: 1.0,
        };
        let m = Scripted {
            runs: AtomicUsize::new(0),
            stop_after: None,
        };
        let ctl = Control::new();
        let mut lines = Vec::new();
        let (r, stopped) =
            cross_validate_path(&x, &y, &spec(&grid), &m, Some(rule), &ctl, &mut |l| {
                lines.push(l)
            })
            .unwrap();
        let (full, _) =
            cross_validate_path(&x, &y, &spec(&grid), &m, None, &ctl, &mut |_| {}).unwrap();
        assert_eq!(
            m.runs.load(Ordering::SeqCst),
            6,
            "one run per fold each time"
        );
        let s = stopped.expect("the curve falls past v = 0.25");
        assert_eq!(s.after, 16.0, "{:?} {lines:?}", full.mean_auc);
        assert_eq!(s.skipped, vec![64.0, 256.0]);
        assert_eq!(r.grid, grid[..5].to_vec());
        assert_eq!(r.mean_auc[..], full.mean_auc[..5]);
        assert_eq!(r.chosen, full.chosen);
        assert!(lines.iter().any(|l| l.contains("are not run")));
        // A rule needing more points than the grid has never stops.
        let lax = EarlyStop {
            points: 7,
            standard_errors: 1.0,
        };
        let (_, none) =
            cross_validate_path(&x, &y, &spec(&grid), &m, Some(lax), &ctl, &mut |_| {}).unwrap();
        assert_eq!(none, None);
    }
}
