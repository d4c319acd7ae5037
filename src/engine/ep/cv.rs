//! γ by stratified k-fold cross-validation (ALGORITHMS.md §8): the held-out
//! AUC of the posterior-mean score over a geometric grid of γ = c·n, each fold
//! warm-starting EP along the grid from small to large γ. EP has no usable
//! fixed point at very large γ with overlapping classes (§4): a grid point where
//! EP does not converge is recorded as failed (with the larger ones of that
//! fold), and only points that converged in every fold can be chosen.
//!
//! With heavily overlapping classes and many rows (EEG: 15k rows, AUC ≈ 0.68)
//! "very large" starts below n/8, so the whole default grid can fail in some
//! fold. When fewer than two points converge in every fold, the grid is extended
//! downwards by halving (down to n/1024, `MIN_OVER_N`) until two do. Inside the
//! CV, a point whose sweeps cycle (Δ/η stays flat while η halves) is declared
//! failed after `CYCLE_STALLS` such halvings instead of halving η to its minimum.

use nalgebra::DMatrix;
use serde::Serialize;

use super::ard::{self, ArdSettings};
use super::design::Form;
use super::linear::LinearEp;
use super::pair_ep::EpSettings;
use super::store::Precision;
use crate::engine::data::prepare::{fold_indices, stratified_folds};
use crate::engine::metrics::auc;
use crate::engine::run::{Control, EngineError};

/// The smallest multiple of n the grid is extended down to.
pub const MIN_OVER_N: f64 = 1.0 / 1024.0;

/// Stall halvings in a row with a flat Δ/η that mark a cycle inside the CV.
pub const CYCLE_STALLS: usize = 2;

/// Default grid of γ/n: 2^−4 … 2^4 (n = training rows; ≤ 25n, §4).
pub fn default_grid() -> Vec<f64> {
    (-4..=4).map(|k| 2f64.powi(k)).collect()
}

#[derive(Debug, Clone, Serialize)]
pub struct CvResult {
    pub folds: usize,
    /// Every grid point tried, ascending, as multiples of n (γ = c·n; c·n_fold
    /// inside a fold): the requested grid plus any points of the extension.
    pub grid_over_n: Vec<f64>,
    /// Mean held-out AUC per grid point (None where EP failed in some fold).
    pub mean_auc: Vec<Option<f64>>,
    /// AUC per fold and grid point.
    pub fold_auc: Vec<Vec<Option<f64>>>,
    /// EP sweeps per fold and grid point (of the last attempt; 0 = not run).
    pub fold_sweeps: Vec<Vec<usize>>,
    /// Why grid points failed.
    pub failures: Vec<String>,
    /// Grid points dropped (no mean AUC), each with its reason.
    pub dropped: Vec<String>,
    /// Points added below the requested grid (descending) because fewer than
    /// two of its points converged in every fold; empty when it was not needed.
    pub extended_below: Vec<f64>,
    /// The chosen multiple of n.
    pub chosen_over_n: f64,
}

pub struct CvSettings<'a> {
    pub grid_over_n: &'a [f64],
    pub folds: usize,
    pub seed: u64,
    pub form: Form,
    pub precision: Precision,
    pub ep: &'a EpSettings,
    /// Tune ARD variances inside every fold (None: fixed `vars`).
    pub ard: Option<&'a ArdSettings>,
}

/// Results per fold and point (points indexed as in `Points::c`).
struct Table {
    auc: Vec<Vec<Option<f64>>>,
    sweeps: Vec<Vec<usize>>,
    /// Why a point has no AUC in a fold (failed, or not run after a failure).
    why: Vec<Vec<Option<String>>>,
    failures: Vec<String>,
}

impl Table {
    fn push_point(&mut self) {
        for f in 0..self.auc.len() {
            self.auc[f].push(None);
            self.sweeps[f].push(0);
            self.why[f].push(None);
        }
    }
    /// Points with an AUC in every fold.
    fn survivors(&self) -> usize {
        let n = self.auc[0].len();
        (0..n)
            .filter(|&g| self.auc.iter().all(|a| a[g].is_some()))
            .count()
    }
}

/// One fold's data and the CV settings it runs with.
struct Fold<'a> {
    f: usize,
    xtr: DMatrix<f64>,
    ytr: Vec<bool>,
    xte: DMatrix<f64>,
    yte: Vec<bool>,
    vars: &'a [f64],
}

/// Runs EP on one fold at the points `order` (indices into `c`, ascending),
/// cold at the first and warm-started from one to the next; a failure drops
/// the larger points (they only get harder).
#[allow(clippy::too_many_arguments)]
fn run_fold(
    fold: &Fold<'_>,
    c: &[f64],
    order: &[usize],
    cv: &CvSettings<'_>,
    ep: &EpSettings,
    table: &mut Table,
    ctl: &Control,
    log: &mut dyn FnMut(String),
) -> Result<(), EngineError> {
    let f = fold.f;
    let mut lep = LinearEp::new(&fold.xtr, &fold.ytr, fold.vars, cv.form, cv.precision)?;
    let n = fold.ytr.len() as f64;
    for (k, &gi) in order.iter().enumerate() {
        ctl.checkpoint()?;
        let gamma = c[gi] * n;
        let res = match cv.ard {
            None => lep.run(gamma, ep, ctl, &mut |_, _| {}).map(|o| o.sweeps),
            Some(a) => ard::optimise(&mut lep, gamma, ep, a, ctl, &mut |_, _| {}, &mut |_| {})
                .map(|r| r.trace.iter().map(|s| s.sweeps).sum()),
        };
        match res {
            Ok(sweeps) => {
                let m = nalgebra::DVector::from_vec(lep.mean());
                let s: Vec<f64> = (&fold.xte * m).iter().copied().collect();
                let a = auc(&s, &fold.yte);
                log(format!(
                    "ep cv: fold {}/{}, γ = {}n: held-out AUC {a:.4} ({sweeps} sweeps)",
                    f + 1,
                    cv.folds,
                    c[gi]
                ));
                table.auc[f][gi] = Some(a);
                table.sweeps[f][gi] = sweeps;
                table.why[f][gi] = None;
            }
            Err(EngineError::NotConverged {
                message,
                diagnostics,
            }) => {
                let m = format!("fold {}, γ = {}n: {message}", f + 1, c[gi]);
                log(format!("ep cv: {m}"));
                table.failures.push(m);
                table.sweeps[f][gi] = diagnostics["sweeps"].as_u64().unwrap_or(0) as usize;
                let reason = diagnostics["detail"]["reason"].as_str().unwrap_or("failed");
                table.why[f][gi] = Some(format!("EP failed in fold {} ({reason})", f + 1));
                for &gj in &order[k + 1..] {
                    table.why[f][gj] =
                        Some(format!("not run in fold {}: a smaller γ failed", f + 1));
                }
                break; // larger γ only get harder
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Runs the cross-validation; `log` receives one line per grid point.
pub fn cross_validate(
    x: &DMatrix<f64>,
    y: &[bool],
    vars: &[f64],
    cv: &CvSettings<'_>,
    ctl: &Control,
    log: &mut dyn FnMut(String),
) -> Result<CvResult, EngineError> {
    let grid = cv.grid_over_n;
    if cv.folds < 2 {
        return Err(EngineError::InvalidParams(
            "--gamma auto needs --folds ≥ 2".into(),
        ));
    }
    if grid.is_empty() || grid.iter().any(|g| !(g.is_finite() && *g > 0.0)) {
        return Err(EngineError::InvalidParams(
            "the γ grid needs positive multiples of n".into(),
        ));
    }
    let n_pos = y.iter().filter(|&&b| b).count();
    if n_pos < cv.folds || y.len() - n_pos < cv.folds {
        return Err(EngineError::InvalidParams(format!(
            "{}-fold cross-validation needs at least {} rows of each class",
            cv.folds, cv.folds
        )));
    }
    // Inside the CV a cycling point fails fast (unless the caller chose otherwise).
    let ep = EpSettings {
        cycle_stalls: if cv.ep.cycle_stalls == 0 {
            CYCLE_STALLS
        } else {
            cv.ep.cycle_stalls
        },
        ..*cv.ep
    };
    let mut c: Vec<f64> = grid.to_vec();
    let mut order: Vec<usize> = (0..c.len()).collect();
    order.sort_by(|&a, &b| c[a].total_cmp(&c[b]));
    let assignment = stratified_folds(y, cv.folds, cv.seed);
    let fold = |f: usize| {
        let (tr, te) = fold_indices(&assignment, f);
        Fold {
            f,
            xtr: x.select_rows(&tr),
            ytr: tr.iter().map(|&i| y[i]).collect(),
            xte: x.select_rows(&te),
            yte: te.iter().map(|&i| y[i]).collect(),
            vars,
        }
    };
    let mut table = Table {
        auc: vec![vec![None; c.len()]; cv.folds],
        sweeps: vec![vec![0; c.len()]; cv.folds],
        why: vec![vec![None; c.len()]; cv.folds],
        failures: Vec::new(),
    };
    for f in 0..cv.folds {
        run_fold(&fold(f), &c, &order, cv, &ep, &mut table, ctl, log)?;
    }

    // Too few points converged in every fold: halve below the grid. EP at a
    // small γ converges from the prior, and warm-started upwards from there it
    // often converges where a cold start cycles (EEG): a fold where no point
    // above the new ones converged climbs again through them, warm-started.
    let mut extended_below = Vec::new();
    let mut next = c[order[0]] * 0.5;
    while table.survivors() < 2 && next >= MIN_OVER_N * (1.0 - 1e-9) {
        let need = 2 - table.survivors();
        let mut level = Vec::new();
        while level.len() < need && next >= MIN_OVER_N * (1.0 - 1e-9) {
            level.push(c.len());
            c.push(next);
            extended_below.push(next);
            table.push_point();
            next *= 0.5;
        }
        level.reverse(); // ascending
        log(format!(
            "ep cv: fewer than two γ converged in every fold; extending the grid down to {}n",
            c[level[0]]
        ));
        let mut above: Vec<usize> = (0..c.len()).filter(|g| !level.contains(g)).collect();
        above.sort_by(|&a, &b| c[a].total_cmp(&c[b]));
        for f in 0..cv.folds {
            let mut todo = level.clone();
            if above.iter().all(|&g| table.auc[f][g].is_none()) {
                todo.extend(&above);
            }
            run_fold(&fold(f), &c, &todo, cv, &ep, &mut table, ctl, log)?;
        }
    }

    let mut order: Vec<usize> = (0..c.len()).collect();
    order.sort_by(|&a, &b| c[a].total_cmp(&c[b]));
    let mean_auc: Vec<Option<f64>> = (0..c.len())
        .map(|g| {
            let v: Option<Vec<f64>> = table.auc.iter().map(|a| a[g]).collect();
            v.map(|v| v.iter().sum::<f64>() / v.len() as f64)
        })
        .collect();
    let mut dropped = Vec::new();
    for &gi in &order {
        log(match mean_auc[gi] {
            Some(a) => format!("ep cv: γ = {}n  mean held-out AUC {a:.4}", c[gi]),
            None => format!("ep cv: γ = {}n  failed in some fold", c[gi]),
        });
        if mean_auc[gi].is_none() {
            let why: Vec<&str> = table.why.iter().filter_map(|w| w[gi].as_deref()).collect();
            dropped.push(format!("γ = {}n: {}", c[gi], why.join("; ")));
        }
    }
    // Best mean AUC; ties (within 1e-12) go to the smaller γ.
    let mut best: Option<usize> = None;
    for &gi in &order {
        if let Some(a) = mean_auc[gi]
            && best.is_none_or(|b| a > mean_auc[b].unwrap() + 1e-12)
        {
            best = Some(gi);
        }
    }
    let Some(best) = best else {
        return Err(EngineError::NotConverged {
            message: format!(
                "EP converged at no γ of the grid (extended down to {MIN_OVER_N}n) in every fold"
            ),
            diagnostics: serde_json::json!({
                "grid_over_n": c, "failures": table.failures, "dropped": dropped,
            }),
        });
    };
    // Report the points ascending.
    let sorted = |v: &Vec<Option<f64>>| order.iter().map(|&g| v[g]).collect::<Vec<_>>();
    Ok(CvResult {
        folds: cv.folds,
        grid_over_n: order.iter().map(|&g| c[g]).collect(),
        mean_auc: sorted(&mean_auc),
        fold_auc: table.auc.iter().map(sorted).collect(),
        fold_sweeps: table
            .sweeps
            .iter()
            .map(|s| order.iter().map(|&g| s[g]).collect())
            .collect(),
        failures: table.failures,
        dropped,
        extended_below,
        chosen_over_n: c[best],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::ep::tests::toy;

    fn settings<'a>(grid: &'a [f64], ep: &'a EpSettings) -> CvSettings<'a> {
        CvSettings {
            grid_over_n: grid,
            folds: 3,
            seed: 1,
            form: Form::Primal,
            precision: Precision::F64,
            ep,
            ard: None,
        }
    }

    /// Heavily overlapping classes (train AUC ≈ 0.63): EP has no usable fixed
    /// point at γ ≥ 32n here, so a grid starting there fails in every fold and
    /// the CV must extend it downwards and still choose a converged γ.
    #[test]
    fn a_grid_without_fixed_points_is_extended_downwards() {
        let (x, y) = toy(450, 3, 41, 4.0);
        let ep = EpSettings::default();
        let grid = [64.0, 128.0, 256.0];
        let mut lines = Vec::new();
        let r = cross_validate(
            &x,
            &y,
            &[1.0; 3],
            &settings(&grid, &ep),
            &Control::new(),
            &mut |l| lines.push(l),
        )
        .unwrap();
        // Every point of the requested grid failed or was not run, and says why.
        for c in grid {
            let i = r.grid_over_n.iter().position(|&g| g == c).unwrap();
            assert!(r.mean_auc[i].is_none());
            assert!(
                r.dropped
                    .iter()
                    .any(|d| d.starts_with(&format!("γ = {c}n:")))
            );
        }
        assert!(!r.extended_below.is_empty(), "{}", lines.join("\n"));
        assert!(r.extended_below.contains(&r.chosen_over_n));
        assert!(r.chosen_over_n >= MIN_OVER_N);
        // At least two points converged in every fold; the chosen one is the best.
        let ok: Vec<f64> = r.mean_auc.iter().flatten().copied().collect();
        assert!(ok.len() >= 2, "{:?}", r.mean_auc);
        let i = r
            .grid_over_n
            .iter()
            .position(|&g| g == r.chosen_over_n)
            .unwrap();
        assert_eq!(
            r.mean_auc[i],
            Some(ok.iter().cloned().fold(f64::MIN, f64::max))
        );
        // Extension points are halvings of the grid's smallest point, in the order added.
        for (k, c) in r.extended_below.iter().enumerate() {
            assert_eq!(*c, 64.0 / 2f64.powi(k as i32 + 1));
        }
        // Failures inside the CV end early (cycle detection), not at --max-sweeps.
        assert!(r.failures.iter().any(|f| f.contains("a cycle")));
        // The chosen γ converges on the whole training set.
        let mut lep = LinearEp::new(&x, &y, &[1.0; 3], Form::Primal, Precision::F64).unwrap();
        let gamma = r.chosen_over_n * y.len() as f64;
        lep.run(gamma, &ep, &Control::new(), &mut |_, _| {})
            .unwrap();
    }

    /// A grid where EP converges everywhere is not extended.
    #[test]
    fn a_working_grid_is_not_extended() {
        let (x, y) = toy(120, 3, 43, 1.0);
        let ep = EpSettings::default();
        let grid = default_grid();
        let r = cross_validate(
            &x,
            &y,
            &[1.0; 3],
            &settings(&grid, &ep),
            &Control::new(),
            &mut |_| {},
        )
        .unwrap();
        assert!(r.extended_below.is_empty());
        assert!(r.dropped.is_empty());
        assert_eq!(r.grid_over_n, grid);
        assert!(r.mean_auc.iter().all(|a| a.is_some()));
    }
}
