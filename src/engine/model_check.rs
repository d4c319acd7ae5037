//! A run record is a file someone else may have written, edited or cut short:
//! every size it declares is checked against the others before anything is
//! allocated or indexed from it, so a bad record gets a one-line error naming
//! the key instead of a panic (an index out of bounds, a dimension mismatch in
//! a matrix product) or an allocation of a size it made up.

use super::fit::ScoreModel;
use super::gp::{FeatureBasis, GpModel, GpSpread};
use super::model::{Model, Spread};

/// Largest dimension a record may declare where a square matrix of that size is
/// built from it (a 20 000² f64 matrix is 3.2 GB); a real record's sizes are far
/// below (full covariances are stored up to 400 features).
pub const MAX_SQUARE_DIM: usize = 20_000;

/// Checks that the sizes a model declares agree with each other.
pub fn check_model(m: &Model) -> Result<(), String> {
    let d = m.features.len();
    same(
        "model.scaler.mean",
        m.scaler.mean.len(),
        "model.features",
        d,
    )?;
    same("model.scaler.sd", m.scaler.sd.len(), "model.features", d)?;
    let names = m.schema.feature_names();
    if let Some(f) = m.features.iter().find(|f| !names.contains(f)) {
        return Err(format!(
            "model.features names '{f}', which model.schema does not produce"
        ));
    }
    if let Some(k) = m
        .scaler
        .sd
        .iter()
        .position(|s| !(s.is_finite() && *s > 0.0))
    {
        return Err(format!(
            "model.scaler.sd[{k}] is {}, not a positive number",
            m.scaler.sd[k]
        ));
    }
    match &m.score {
        ScoreModel::Linear { weights } => {
            same("model.score.weights", weights.len(), "model.features", d)?
        }
        ScoreModel::Stumps { stumps } => {
            if let Some((i, s)) = stumps.iter().enumerate().find(|(_, s)| s.feature >= d) {
                return Err(format!(
                    "model.score.stumps[{i}].feature is {}, but the model has {d} features",
                    s.feature
                ));
            }
        }
        ScoreModel::Gp(gp) => check_gp(gp, d)?,
    }
    if let Some(s) = &m.spread {
        if !matches!(m.score, ScoreModel::Linear { .. }) {
            return Err("model.spread is given for a score that is not linear".into());
        }
        check_spread(s, d)?;
    }
    if let Some(v) = &m.votes {
        if let Some(i) = v.theta.iter().position(|r| r.len() != d) {
            return Err(format!(
                "model.votes.theta[{i}] has {} entries; model.features has {d}",
                v.theta[i].len()
            ));
        }
        same(
            "model.votes.thresholds",
            v.thresholds.len(),
            "model.votes.theta",
            v.theta.len(),
        )?;
    }
    Ok(())
}

fn same(a: &str, na: usize, b: &str, nb: usize) -> Result<(), String> {
    if na == nb {
        Ok(())
    } else {
        Err(format!("{a} has {na} entries; {b} has {nb}"))
    }
}

fn check_spread(s: &Spread, d: usize) -> Result<(), String> {
    match s {
        Spread::Covariance { lower } => {
            if d > MAX_SQUARE_DIM {
                return Err(format!(
                    "model.spread.lower: {d} features is more than a stored covariance may have ({MAX_SQUARE_DIM})"
                ));
            }
            same(
                "model.spread.lower",
                lower.len(),
                "d(d + 1)/2 for model.features",
                d * (d + 1) / 2,
            )
        }
        Spread::LowRank {
            diag, factor, core, ..
        } => {
            same("model.spread.diag", diag.len(), "model.features", d)?;
            if let Some(j) = factor.iter().position(|c| c.len() != d) {
                return Err(format!(
                    "model.spread.factor[{j}] has {} entries; model.features has {d}",
                    factor[j].len()
                ));
            }
            let k = factor.len();
            same("model.spread.core", core.len(), "model.spread.factor", k)?;
            match core.iter().position(|r| r.len() != k) {
                Some(i) => Err(format!(
                    "model.spread.core[{i}] has {} entries; model.spread.factor has {k} columns",
                    core[i].len()
                )),
                None => Ok(()),
            }
        }
        Spread::Samples { theta } => match theta.iter().position(|r| r.len() != d) {
            Some(i) => Err(format!(
                "model.spread.theta[{i}] has {} entries; model.features has {d}",
                theta[i].len()
            )),
            None => Ok(()),
        },
    }
}

fn check_gp(gp: &GpModel, d: usize) -> Result<(), String> {
    gp.kernel
        .validate(d)
        .map_err(|e| format!("model.score.kernel: {e}"))?;
    let (declared, r) = match &gp.basis {
        FeatureBasis::Landmarks { d: bd, rows } | FeatureBasis::LandmarkScores { d: bd, rows } => {
            if *bd == 0 || rows.len() % bd != 0 {
                return Err(format!(
                    "model.score.basis.rows has {} entries, not a multiple of model.score.basis.d = {bd}",
                    rows.len()
                ));
            }
            (*bd, rows.len() / bd)
        }
        FeatureBasis::Fourier { d: bd, w, b } => {
            if *bd == 0 || w.len() != b.len() * bd {
                return Err(format!(
                    "model.score.basis.w has {} entries; model.score.basis.b ({}) × d ({bd}) = {}",
                    w.len(),
                    b.len(),
                    b.len().saturating_mul(*bd)
                ));
            }
            (*bd, b.len())
        }
    };
    same("model.score.basis.d", declared, "model.features", d)?;
    same("model.score.mean", gp.mean.len(), "the basis' features", r)?;
    if !gp.alpha.is_empty() {
        same("model.score.alpha", gp.alpha.len(), "the landmarks", r)?;
    }
    if r > MAX_SQUARE_DIM {
        return Err(format!(
            "model.score.basis: {r} features is more than a stored GP may have ({MAX_SQUARE_DIM})"
        ));
    }
    match &gp.spread {
        GpSpread::Covariance { packed } => same(
            "model.score.spread.packed",
            packed.len(),
            "r(r + 1)/2 for the basis' features",
            r * (r + 1) / 2,
        ),
        GpSpread::Reduced { lambda, g, .. } => {
            same(
                "model.score.spread.g",
                g.len(),
                "model.score.spread.lambda",
                lambda.len(),
            )?;
            match g.iter().position(|c| c.len() != r) {
                Some(j) => Err(format!(
                    "model.score.spread.g[{j}] has {} entries; the basis has {r} features",
                    g[j].len()
                )),
                None => Ok(()),
            }
        }
    }
}
