//! Tests of the k-fold cross-validation (`kfold.rs`).

use super::*;
use crate::engine::numerics::rng;

/// Rows with a signal in column 0 and noise in column 1.
fn toy(n: usize) -> (DMatrix<f64>, Vec<bool>) {
    let mut r = rng::stream(7, &[]);
    let x = DMatrix::from_fn(n, 2, |_, _| rng::normal(&mut r));
    let y = (0..n)
        .map(|i| x[(i, 0)] + rng::normal(&mut r) > 0.0)
        .collect();
    (x, y)
}

/// Scores `x0 + v·x1`; fails at the (fold, value) pairs of `fails`.
struct Scripted {
    fails: Vec<(usize, f64)>,
}

struct ScriptedWalker {
    seen: Vec<f64>,
    fails: Vec<(usize, f64)>,
}

impl CvMethod for Scripted {
    type Walker = ScriptedWalker;
    fn names(&self) -> CvNames {
        CvNames {
            prefix: "toy",
            parameter: "v",
            unit: "fits",
        }
    }
    fn label(&self, v: f64) -> String {
        format!("v = {v}")
    }
    fn start(&self, _fold: &FoldData) -> Result<ScriptedWalker, EngineError> {
        Ok(ScriptedWalker {
            seen: Vec::new(),
            fails: self.fails.clone(),
        })
    }
    fn fold_bytes(&self, _: usize, _: usize, _: usize) -> usize {
        1
    }
}

impl GridWalker for ScriptedWalker {
    fn fit(&mut self, v: f64, fold: &FoldData, _: &Control) -> Result<PointFit, EngineError> {
        // Warm starts follow the walk: never back to a value already passed.
        if let Some(&last) = self.seen.last() {
            assert_ne!(last, v);
        }
        self.seen.push(v);
        if self.fails.contains(&(fold.fold, v)) {
            return Ok(PointFit::Failed {
                reason: NonConvergence::MaxSweeps,
                message: format!("no answer at v = {v}"),
                iterations: 7,
            });
        }
        let scores = (0..fold.yte.len())
            .map(|i| fold.xte[(i, 0)] + v * fold.xte[(i, 1)])
            .collect();
        Ok(PointFit::Scored {
            scores,
            iterations: self.seen.len(),
        })
    }
}

fn spec(grid: &[f64], walk: Walk) -> CvSpec {
    CvSpec {
        folds: 3,
        seed: 2,
        grid: grid.to_vec(),
        walk,
        extend_below_to: None,
        memory_budget: MEMORY_BUDGET,
    }
}

fn cv(spec: &CvSpec, m: &Scripted) -> CvReport {
    let (x, y) = toy(90);
    cross_validate(&x, &y, spec, m, &Control::new(), &mut |_| {}).unwrap()
}

/// A failure ends its fold's walk: the later points are not run there and
/// are not eligible; the others are, and the best of them is chosen.
#[test]
fn a_failure_drops_the_rest_of_its_fold_only() {
    let m = Scripted {
        fails: vec![(1, 0.5)],
    };
    let r = cv(&spec(&[2.0, 0.5, 0.01, 1.0], Walk::Ascending), &m);
    assert_eq!(r.grid, vec![0.01, 0.5, 1.0, 2.0]);
    assert_eq!(r.failures.len(), 1);
    let f = &r.failures[0];
    assert_eq!(
        (f.fold, f.value, f.reason, f.iterations),
        (2, 0.5, NonConvergence::MaxSweeps, 7)
    );
    assert!(r.mean_auc[0].is_some() && r.mean_auc[1..].iter().all(|a| a.is_none()));
    assert_eq!(r.fold_iterations[1], vec![1, 7, 0, 0]);
    assert!(r.fold_auc[0].iter().all(|a| a.is_some()));
    assert_eq!(r.dropped.len(), 3);
    assert!(r.dropped[0].starts_with("v = 0.5: failed in fold 2 (scripted)"));
    assert!(r.dropped[1].contains("not run in fold 2"));
    assert_eq!(r.chosen, 0.01);
    // The mean is the mean of the folds.
    let m0: f64 = r.fold_auc.iter().map(|a| a[0].unwrap()).sum::<f64>() / 3.0;
    assert_eq!(r.mean_auc[0], Some(m0));
}

/// The chosen point has the best mean AUC; exact ties go to the point the
/// walk reaches first.
#[test]
fn best_mean_wins_and_ties_go_to_the_first_walked() {
    let m = Scripted { fails: vec![] };
    let r = cv(&spec(&[0.01, 1.0, 3.0], Walk::Ascending), &m);
    let best = r
        .mean_auc
        .iter()
        .flatten()
        .cloned()
        .fold(f64::MIN, f64::max);
    let i = r.grid.iter().position(|&g| g == r.chosen).unwrap();
    assert_eq!(r.mean_auc[i], Some(best));
    // Scores that ignore v: every point ties.
    let m = Scripted { fails: vec![] };
    let flat = |walk| {
        let mut s = spec(&[1e-9, 2e-9, 3e-9], walk);
        s.seed = 3;
        cv(&s, &m).chosen
    };
    assert_eq!(flat(Walk::Ascending), 1e-9);
    assert_eq!(flat(Walk::Descending), 3e-9);
}

/// Fewer than two eligible points: the grid is extended below by halving
/// and a fold with no success above walks up through the new points.
#[test]
fn the_grid_is_extended_below_when_too_little_succeeds() {
    let m = Scripted {
        fails: vec![(0, 1.0), (2, 2.0)],
    };
    let mut s = spec(&[1.0, 2.0], Walk::Ascending);
    s.extend_below_to = Some(1.0 / 16.0);
    let r = cv(&s, &m);
    assert_eq!(r.extended_below, vec![0.5, 0.25]);
    assert_eq!(r.grid, vec![0.25, 0.5, 1.0, 2.0]);
    assert!(r.mean_auc[0].is_some() && r.mean_auc[1].is_some());
    assert!(r.mean_auc[2].is_none() && r.mean_auc[3].is_none());
    assert!([0.25, 0.5].contains(&r.chosen));
    // Fold 1 failed at its first point, so it climbed 0.25, 0.5, 1 (fails again).
    assert_eq!(r.fold_iterations[0], vec![1, 2, 7, 0]);
    assert_eq!(r.failures.len(), 3);
}

/// Nothing succeeds anywhere: an error, not a silent choice.
#[test]
fn no_eligible_point_is_an_error() {
    let m = Scripted {
        fails: (0..3).flat_map(|f| [(f, 1.0), (f, 2.0)]).collect(),
    };
    let (x, y) = toy(90);
    let e = cross_validate(
        &x,
        &y,
        &spec(&[1.0, 2.0], Walk::Ascending),
        &m,
        &Control::new(),
        &mut |_| {},
    );
    assert!(matches!(
        e,
        Err(EngineError::NotConverged {
            reason: NonConvergence::SearchFailed,
            ..
        })
    ));
}

/// Folds run concurrently or one by one: the same report.
#[test]
fn the_report_does_not_depend_on_the_thread_count() {
    let m = Scripted {
        fails: vec![(2, 1.0)],
    };
    let mut s = spec(&[0.01, 0.5, 1.0, 2.0], Walk::Descending);
    s.folds = 5;
    let run = |threads| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        let mut lines = Vec::new();
        let (x, y) = toy(120);
        let r = pool
            .install(|| cross_validate(&x, &y, &s, &m, &Control::new(), &mut |l| lines.push(l)))
            .unwrap();
        (r, lines)
    };
    let (one, l1) = run(1);
    let (four, l4) = run(4);
    assert_eq!(one, four);
    // The same lines in the same order, and one saying how many folds run at a time.
    let l4: Vec<String> = l4
        .into_iter()
        .filter(|l| !l.contains("at a time"))
        .collect();
    assert_eq!(l1, l4);
}
