//! The kernel length-scale by evidence (ALGORITHMS.md §8): maximise log Z_EP
//! over log ℓ from the median-distance heuristic, each fit warm-started from
//! the last. A coarse grid ℓ0·2^k (k = −2…2, extended past an end that wins,
//! at most to 2^±6), then golden-section search between the best point's
//! neighbours to 2% in ℓ (`select::golden`). The grid is not
//! `select::maximise`'s (all of a range, from its top): this one is centred on
//! ℓ0 and grows only past a winning end.

use serde::Serialize;

use crate::engine::error::NonConvergence;
use crate::engine::interface::EngineError;
use crate::engine::select::golden;

/// One evaluation of the evidence curve.
#[derive(Debug, Clone, Serialize)]
pub struct CurvePoint {
    pub lengthscale: f64,
    /// None when EP did not converge there (the reason is in `failure`).
    pub log_z: Option<f64>,
    pub sweeps: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
}

/// The search's result.
#[derive(Debug, Clone, Serialize)]
pub struct Search {
    pub best: f64,
    pub start: f64,
    /// Every evaluation in order.
    pub curve: Vec<CurvePoint>,
    /// The best point is at the end of the widest grid searched.
    pub at_edge: bool,
}

const GRID: [i32; 5] = [-2, -1, 0, 1, 2];
const MAX_STEPS: i32 = 6;
/// Golden-section stops when the bracket is this narrow in ln ℓ.
const LN_TOL: f64 = 0.02;

/// Maximises `eval(ℓ)` (log Z, or an error for a failed fit) over ln ℓ.
/// Cancellation and numerical errors end the search; non-convergence marks a
/// point as failed.
pub fn search(
    start: f64,
    eval: &mut dyn FnMut(f64) -> Result<(f64, usize), EngineError>,
) -> Result<Search, EngineError> {
    let mut curve: Vec<CurvePoint> = Vec::new();
    let mut f = |ell: f64, curve: &mut Vec<CurvePoint>| -> Result<f64, EngineError> {
        let (log_z, sweeps, failure) = match eval(ell) {
            Ok((z, s)) => (Some(z), Some(s), None),
            Err(EngineError::NotConverged { message, .. }) => (None, None, Some(message)),
            Err(e) => return Err(e),
        };
        curve.push(CurvePoint {
            lengthscale: ell,
            log_z,
            sweeps,
            failure,
        });
        Ok(log_z.unwrap_or(f64::NEG_INFINITY))
    };
    let at = |k: i32| start * 2f64.powi(k);
    let mut grid: Vec<(i32, f64)> = Vec::new();
    for k in GRID {
        grid.push((k, f(at(k), &mut curve)?));
    }
    // Extend past a winning end.
    loop {
        let best = grid
            .iter()
            .copied()
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .expect("grid");
        let (lo, hi) = (grid[0].0, grid[grid.len() - 1].0);
        if best.0 == hi && hi < MAX_STEPS && best.1.is_finite() {
            grid.push((hi + 1, f(at(hi + 1), &mut curve)?));
        } else if best.0 == lo && lo > -MAX_STEPS && best.1.is_finite() {
            grid.insert(0, (lo - 1, f(at(lo - 1), &mut curve)?));
        } else {
            break;
        }
    }
    let (bi, &(bk, bz)) = grid
        .iter()
        .enumerate()
        .max_by(|a, b| a.1.1.total_cmp(&b.1.1))
        .expect("grid");
    if !bz.is_finite() {
        return Err(EngineError::NotConverged {
            reason: NonConvergence::SearchFailed,
            account: None,
            message: "EP converged at no length-scale of the search grid".into(),
            diagnostics: serde_json::to_value(&curve).unwrap_or_default(),
        });
    }
    let at_edge = bi == 0 || bi == grid.len() - 1;
    if at_edge {
        return Ok(Search {
            best: at(bk),
            start,
            curve,
            at_edge,
        });
    }
    // Golden section on ln ℓ between the neighbours.
    let (mut best_ln, mut best_z) = (at(bk).ln(), bz);
    let inner = golden(
        &mut |t| f(t.exp(), &mut curve),
        at(grid[bi - 1].0).ln(),
        at(grid[bi + 1].0).ln(),
        LN_TOL,
    )?;
    for (x, z) in inner {
        if z > best_z {
            (best_ln, best_z) = (x, z);
        }
    }
    Ok(Search {
        best: best_ln.exp(),
        start,
        curve,
        at_edge,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_maximum_of_a_smooth_curve() {
        // log Z peaked at ℓ = 2.7 (in ln ℓ), start 1.
        let mut evals = 0;
        let s = search(1.0, &mut |ell| {
            evals += 1;
            Ok((-(ell.ln() - 2.7f64.ln()).powi(2), 10))
        })
        .unwrap();
        assert!((s.best / 2.7 - 1.0).abs() < 0.02, "{}", s.best);
        assert!(!s.at_edge);
        assert!(evals < 20, "{evals}");
    }

    #[test]
    fn extends_past_a_winning_end_and_skips_failures() {
        let s = search(1.0, &mut |ell| {
            if ell < 1.0 {
                Err(EngineError::NotConverged {
                    reason: NonConvergence::MaxSweeps,
                    account: None,
                    message: "no".into(),
                    diagnostics: serde_json::Value::Null,
                })
            } else {
                Ok((-(ell.ln() - 20f64.ln()).powi(2), 5))
            }
        })
        .unwrap();
        assert!((s.best / 20.0 - 1.0).abs() < 0.02, "{}", s.best);
        assert!(s.curve.iter().any(|p| p.failure.is_some()));
    }
}
