//! Cross-validation along a path: for a method one run of which passes through
//! every grid point in ascending order — tempering SMC, whose run from γ = 0
//! to the largest γ of the grid can stop at each grid point on the way
//! (ALGORITHMS.md §8) — so that a fold costs one run instead of one per point.
//!
//! An adapter onto `kfold`: the same stratified folds, the same choice rule,
//! the same failure reports and the same `CvReport`. The fold's walker runs
//! the whole path at its first point and hands out the points' fits as the
//! walk asks for them.

use nalgebra::DMatrix;

use super::kfold::{
    CvMethod, CvNames, CvReport, CvSpec, FoldData, GridWalker, PointFit, Walk, cross_validate,
};
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
    /// `at` each point's fit (its index into `grid`) in order. A `Failed`
    /// point ends the fold's walk (the later points are reported as not run);
    /// a point the run never gave is reported as not reached.
    fn run_path(
        &self,
        fold: &FoldData,
        grid: &[f64],
        ctl: &Control,
        at: &mut dyn FnMut(usize, PointFit),
    ) -> Result<(), EngineError>;
}

/// Runs the cross-validation of `method` along its path: `spec.walk` must be
/// ascending, and the grid is never extended (a path has no cold starts to
/// rescue).
pub fn cross_validate_path<M: PathMethod>(
    x: &DMatrix<f64>,
    y: &[bool],
    spec: &CvSpec,
    method: &M,
    ctl: &Control,
    log: &mut dyn FnMut(String),
) -> Result<CvReport, EngineError> {
    if spec.walk != Walk::Ascending || spec.extend_below_to.is_some() {
        return Err(EngineError::InvalidParams(
            "cross-validation along a path walks its grid upwards and never extends it".into(),
        ));
    }
    let mut grid = spec.grid.clone();
    grid.sort_by(f64::total_cmp);
    grid.dedup();
    let along = AlongPath {
        method,
        grid: &grid,
    };
    cross_validate(x, y, spec, &along, ctl, log)
}

struct AlongPath<'a, M> {
    method: &'a M,
    /// Ascending, without repeats.
    grid: &'a [f64],
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
    fn start(&self, _fold: &FoldData) -> Result<PathWalker<'a, M>, EngineError> {
        Ok(PathWalker {
            method: self.method,
            grid: self.grid,
            fits: None,
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
            reason: "not reached".into(),
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
    use crate::engine::rng;
    use crate::engine::select::{MEMORY_BUDGET, kfold::CvMethod};
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Scores `x0 + v·x1` along a "path"; counts its runs, and can stop early.
    struct Scripted {
        runs: AtomicUsize,
        stop_after: Option<usize>,
    }

    impl PathMethod for Scripted {
        fn names(&self) -> CvNames {
            CvNames {
                prefix: "toy",
                parameter: "v",
                unit: "stages",
            }
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
            at: &mut dyn FnMut(usize, PointFit),
        ) -> Result<(), EngineError> {
            self.runs.fetch_add(1, Ordering::SeqCst);
            assert!(grid.windows(2).all(|w| w[0] < w[1]), "ascending");
            for (i, &v) in grid.iter().enumerate() {
                if self.stop_after.is_some_and(|k| i >= k) {
                    break;
                }
                let scores = (0..fold.yte.len())
                    .map(|r| fold.xte[(r, 0)] + v * fold.xte[(r, 1)])
                    .collect();
                at(
                    i,
                    PointFit::Scored {
                        scores,
                        iterations: i + 1,
                    },
                );
            }
            Ok(())
        }
    }

    /// The same scores, one fit per point (the refit reference).
    struct PerPoint;
    struct PerPointWalker;
    impl CvMethod for PerPoint {
        type Walker = PerPointWalker;
        fn names(&self) -> CvNames {
            CvNames {
                prefix: "toy",
                parameter: "v",
                unit: "stages",
            }
        }
        fn label(&self, v: f64) -> String {
            format!("v = {v}")
        }
        fn start(&self, _: &FoldData) -> Result<PerPointWalker, EngineError> {
            Ok(PerPointWalker)
        }
        fn fold_bytes(&self, _: usize, _: usize, _: usize) -> usize {
            1
        }
    }
    impl GridWalker for PerPointWalker {
        fn fit(&mut self, v: f64, fold: &FoldData, _: &Control) -> Result<PointFit, EngineError> {
            let scores = (0..fold.yte.len())
                .map(|r| fold.xte[(r, 0)] + v * fold.xte[(r, 1)])
                .collect();
            Ok(PointFit::Scored {
                scores,
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
        CvSpec {
            folds: 3,
            seed: 2,
            grid: grid.to_vec(),
            walk: Walk::Ascending,
            extend_below_to: None,
            memory_budget: MEMORY_BUDGET,
        }
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
        let a = cross_validate_path(&x, &y, &spec(&grid), &m, &ctl, &mut |_| {}).unwrap();
        let b = cross_validate(&x, &y, &spec(&grid), &PerPoint, &ctl, &mut |_| {}).unwrap();
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
        let r = cross_validate_path(
            &x,
            &y,
            &spec(&[0.5, 1.0, 2.0, 4.0]),
            &m,
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
        let e = cross_validate_path(&x, &y, &s, &m, &Control::new(), &mut |_| {}).unwrap_err();
        assert!(e.to_string().contains("upwards"));
    }
}
