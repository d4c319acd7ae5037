//! Row-space sampling for Gaussian priors (ALGORITHMS.md §15): the AUC risk
//! sees θ only through the scores Xθ. Whiten by the prior variances D
//! (θ = D^½ θ̃, θ̃ ~ N(0, I_d)) and take the thin SVD X D^½ = U S Wᵀ (W: d × r,
//! r = rank ≤ n). Then θ̃ = W α + (I − W Wᵀ) η with α = Wᵀθ̃ ~ N(0, I_r)
//! independent of the null part, and Xθ = (U S) α: the Gibbs posterior is the
//! r-dimensional posterior of α on the rows U S times the exact prior of the
//! null part. A sampler (SMC, the great-circle sampler) runs on the reduced
//! problem; its draws are lifted with exact prior draws of the null part, and
//! the moments are exact: `E θ = D^½ W E α`,
//! `Cov θ = D^½ (W (Cov α − I) Wᵀ + I) D^½` (kept factored).
//! log Z is the same number in law (the null part integrates to 1).
//! Spike-and-slab has no such reduction (its prior is not rotation-invariant).

use nalgebra::{DMatrix, DVector};
use rayon::prelude::*;
use serde_json::json;

use crate::engine::error::EngineError;
use crate::engine::event::{Event, Histogram};
use crate::engine::fit::{Fit, LowRankCov, Particles, ScoreModel};
use crate::engine::interface::Observer;
use crate::engine::mcmc_diag::quantile_sorted;
use crate::engine::numerics::linalg::{a_b, a_bt, at_b};
use crate::engine::numerics::rng;
use crate::engine::prior::Prior;
use crate::engine::problem::Problem;

/// Singular values below this share of the largest count as zero (as EP's
/// reduced form).
const RANK_TOL: f64 = 1e-10;

/// RNG stream key of the null-space draws (with the run's seed).
const KEY_NULL: u64 = 0x4E55_4C4C;

/// Histogram bins of the lifted marginals (as the samplers').
const HIST_BINS: usize = 40;

/// The map between θ (d) and the row-space coordinates α (r).
#[derive(Debug, Clone)]
pub struct RowSpace {
    /// d × r orthonormal basis W of the whitened rows' span.
    basis: DMatrix<f64>,
    /// √ϑ_k.
    scale: Vec<f64>,
    /// n × r rows U S (the reduced problem's data).
    rows: DMatrix<f64>,
}

impl RowSpace {
    /// The reduction of `problem` when its prior is Gaussian (isotropic or
    /// ARD) and its data's rank r is below d; None otherwise (nothing to gain,
    /// or no exact reduction).
    pub fn of(problem: &Problem) -> Option<RowSpace> {
        let d = problem.d();
        let vars: Vec<f64> = match &problem.prior {
            Prior::Gaussian { var } => vec![*var; d],
            Prior::Ard { vars } => vars.clone(),
            Prior::SpikeSlab { .. } | Prior::Gp(_) => return None,
        };
        let scale: Vec<f64> = vars.iter().map(|v| v.sqrt()).collect();
        let mut xw = (*problem.x).clone();
        for (k, mut col) in xw.column_iter_mut().enumerate() {
            col *= scale[k];
        }
        let basis = row_space_basis(&xw)?;
        if basis.ncols() >= d {
            return None;
        }
        let rows = a_b(&xw, &basis);
        Some(RowSpace { basis, scale, rows })
    }

    /// A Gaussian N(m, S) of θ in the row-space coordinates α = Wᵀ D^-½ θ:
    /// N(Aᵀm, AᵀSA) with A = D^-½ W (exact: α is linear in θ).
    pub fn project_gaussian(
        &self,
        mean: &DVector<f64>,
        cov: &DMatrix<f64>,
    ) -> (DVector<f64>, DMatrix<f64>) {
        let mut a = self.basis.clone();
        for (k, mut row) in a.row_iter_mut().enumerate() {
            row /= self.scale[k];
        }
        let m = a.transpose() * mean;
        let sa = a_b(cov, &a);
        (m, at_b(&a, &sa))
    }

    pub fn rank(&self) -> usize {
        self.basis.ncols()
    }

    pub fn dim(&self) -> usize {
        self.scale.len()
    }

    /// The r-dimensional problem: rows U S, prior N(0, I_r), same labels and γ.
    pub fn problem(&self, problem: &Problem) -> Result<Problem, EngineError> {
        let names = (1..=self.rank()).map(|a| format!("α{a}")).collect();
        Problem::new(
            names,
            self.rows.clone(),
            problem.y.clone(),
            problem.gamma,
            Prior::Gaussian { var: 1.0 },
        )
    }

    /// θ = D^½ W α: the coefficients of the same linear score.
    pub fn lift_weights(&self, alpha: &[f64]) -> Vec<f64> {
        let a = DMatrix::from_column_slice(alpha.len(), 1, alpha);
        let t = a_b(&self.basis, &a);
        t.iter().zip(&self.scale).map(|(t, s)| t * s).collect()
    }

    /// Draws θ = D^½ (W α + (I − W Wᵀ) η), η ~ N(0, I_d) from its own stream
    /// per row (seeded: the same for any thread count).
    pub fn lift_draws(&self, alpha: &DMatrix<f64>, seed: u64) -> DMatrix<f64> {
        let (m, d) = (alpha.nrows(), self.dim());
        // Transposed (d × m: draw i is column i), so each draw fills its own
        // contiguous column and only two m × d arrays ever exist (Colon's
        // great-circle runs keep ~35 000 draws of 2000).
        let mut t = DMatrix::zeros(d, m);
        t.as_mut_slice()
            .par_chunks_mut(d)
            .enumerate()
            .for_each(|(i, col)| {
                let mut r = rng::stream(seed, &[KEY_NULL, i as u64]);
                col.iter_mut().for_each(|z| *z = rng::normal(&mut r));
            });
        // θ̃ᵀ = η + W (αᵀ − Wᵀη): W α + the part of η outside span(W).
        let inside = alpha.transpose() - at_b(&self.basis, &t);
        t.gemm(1.0, &self.basis, &inside, 1.0);
        for (k, mut row) in t.row_iter_mut().enumerate() {
            row *= self.scale[k];
        }
        t.transpose()
    }

    /// A Gaussian N(μ, S) of θ seen in α = Wᵀ D^{-½} θ: N(Mμ, M S Mᵀ).
    pub fn reduce_gaussian(
        &self,
        mean: &DVector<f64>,
        cov: &DMatrix<f64>,
    ) -> (DVector<f64>, DMatrix<f64>) {
        let mut m = self.basis.transpose();
        for (k, mut col) in m.column_iter_mut().enumerate() {
            col /= self.scale[k];
        }
        let mc = a_b(&m, cov);
        (&m * mean, a_bt(&mc, &m))
    }

    /// θ's exact means and sds from α's mean and covariance.
    pub fn moments(&self, mean: &[f64], cov: &DMatrix<f64>) -> (Vec<f64>, Vec<f64>) {
        let r = self.rank();
        let mut core = cov.clone();
        for a in 0..r {
            core[(a, a)] -= 1.0;
        }
        let b = a_b(&self.basis, &core);
        let sd = (0..self.dim())
            .map(|k| {
                let quad = b.row(k).dot(&self.basis.row(k));
                self.scale[k] * (1.0 + quad).max(0.0).sqrt()
            })
            .collect();
        (self.lift_weights(mean), sd)
    }

    /// θ's exact covariance, factored: diag(ϑ) + (D^½W)(Cov α − I)(D^½W)ᵀ.
    pub fn covariance(&self, cov: &DMatrix<f64>) -> LowRankCov {
        let mut factor = self.basis.clone();
        for (k, mut row) in factor.row_iter_mut().enumerate() {
            row *= self.scale[k];
        }
        let mut core = cov.clone();
        for a in 0..self.rank() {
            core[(a, a)] -= 1.0;
        }
        LowRankCov {
            diag: self.scale.iter().map(|s| s * s).collect(),
            factor,
            core,
        }
    }

    /// The fit of the original problem from the reduced problem's fit: linear
    /// scores and draws lifted, exact moments and factored covariance,
    /// quantiles and histograms of the lifted draws, the reduction recorded.
    pub fn lift_fit(&self, problem: &Problem, reduced: Fit, seed: u64) -> Fit {
        let mut fit = reduced;
        let lift_model = |m: &ScoreModel| match m {
            ScoreModel::Linear { weights } => ScoreModel::Linear {
                weights: self.lift_weights(weights),
            },
            other => other.clone(),
        };
        fit.model = lift_model(&fit.model);
        for (_, m) in fit.alt_models.iter_mut() {
            *m = lift_model(m);
        }
        let r = self.rank();
        let cov_alpha = fit.covariance.take().unwrap_or_else(|| {
            // From the draws when the engine kept no covariance.
            let p = fit.particles.as_ref().map(|p| &p.theta);
            p.map_or(DMatrix::identity(r, r), |t| {
                crate::engine::numerics::linalg::row_scatter(t).1 / t.nrows().max(1) as f64
            })
        });
        let (mean, sd) = self.moments(&fit.mean, &cov_alpha);
        fit.mean = mean;
        fit.sd = sd;
        fit.low_rank_covariance = Some(self.covariance(&cov_alpha));
        fit.names = problem.names.clone();
        fit.prior = Some(problem.prior.clone());
        fit.inclusion = None;
        if let Some(p) = fit.particles.take() {
            let theta = self.lift_draws(&p.theta, seed);
            fit.quantiles = (0..theta.ncols())
                .into_par_iter()
                .map(|k| {
                    let mut col: Vec<f64> = theta.column(k).iter().copied().collect();
                    col.sort_unstable_by(f64::total_cmp);
                    [0.025, 0.25, 0.5, 0.75, 0.975].map(|q| quantile_sorted(&col, q))
                })
                .collect();
            fit.histograms = (0..theta.ncols())
                .into_par_iter()
                .map(|k| {
                    let col: Vec<f64> = theta.column(k).iter().copied().collect();
                    Histogram::of(&col, None, HIST_BINS)
                })
                .collect();
            fit.particles = Some(Particles { theta, ..p });
        }
        for e in fit.trace.iter_mut() {
            blank_coordinates(e);
        }
        if !fit.details.is_object() {
            fit.details = json!({});
        }
        fit.details["row_space"] = self.note();
        fit
    }

    /// What the record says about the reduction.
    pub fn note(&self) -> serde_json::Value {
        json!({
            "rank": self.rank(),
            "d": self.dim(),
            "note": format!(
                "sampled in the data's {}-dimensional row space (of d = {}): the risk sees θ only \
                 through Xθ, and under the Gaussian prior the other {} directions keep their \
                 prior, drawn exactly for every particle; means, sds and the covariance are \
                 exact functions of the row-space posterior's (ALGORITHMS.md §15). The trace's \
                 stages carry no per-coefficient summaries (they would be the row-space \
                 coordinates'); its diagnostics are the row-space coordinates'",
                self.rank(),
                self.dim(),
                self.dim() - self.rank()
            ),
        })
    }
}

/// Per-coefficient summaries of a sampler's event, emptied: in a reduced run
/// they are of the row-space coordinates, not of the problem's coefficients.
fn blank_coordinates(e: &mut Event) {
    match e {
        Event::SmcStage(s) => {
            s.mean.clear();
            s.sd.clear();
            s.histograms.clear();
            s.inclusion = None;
        }
        Event::GcsBatch(b) => {
            b.mean.clear();
            b.sd.clear();
        }
        _ => {}
    }
}

/// Passes a reduced run's events on with the per-coefficient summaries
/// emptied and `Started` reporting the problem's own d.
pub struct LiftedEvents<'a> {
    pub inner: &'a mut dyn Observer,
    pub d: usize,
}

impl Observer for LiftedEvents<'_> {
    fn observe(&mut self, mut event: Event) {
        if let Event::Started { d, .. } = &mut event {
            *d = self.d;
        }
        blank_coordinates(&mut event);
        self.inner.observe(event);
    }
}

/// An orthonormal basis (d × r) of the span of the rows of `x` (n × d), from
/// the SVD of its transpose; None when the rows have no variation.
pub fn row_space_basis(x: &DMatrix<f64>) -> Option<DMatrix<f64>> {
    let svd = x.transpose().svd(true, false);
    let s_max = svd.singular_values.max();
    if s_max.is_nan() || s_max <= 0.0 {
        return None;
    }
    let keep: Vec<usize> = (0..svd.singular_values.len())
        .filter(|&k| svd.singular_values[k] > RANK_TOL * s_max)
        .collect();
    Some(svd.u?.select_columns(&keep))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wide(n: usize, d: usize, prior: Prior) -> Problem {
        let mut r = rng::stream(5, &[]);
        let x = DMatrix::from_fn(n, d, |_, _| rng::normal(&mut r));
        let y = (0..n).map(|i| i % 3 == 0).collect();
        Problem::new((0..d).map(|k| format!("x{k}")).collect(), x, y, 5.0, prior).unwrap()
    }

    /// The reduced rows give the same scores as θ = lift(α), whatever the
    /// null draw; the lifted draws' moments match the exact ones.
    #[test]
    fn lifted_draws_keep_the_scores_and_the_prior() {
        let vars: Vec<f64> = (0..12).map(|k| 0.5 + 0.25 * k as f64).collect();
        let p = wide(5, 12, Prior::Ard { vars: vars.clone() });
        let rs = RowSpace::of(&p).unwrap();
        assert_eq!(rs.rank(), 5);
        let m = 40_000;
        let mut r = rng::stream(9, &[]);
        let alpha = DMatrix::from_fn(m, 5, |_, _| rng::normal(&mut r));
        let theta = rs.lift_draws(&alpha, 3);
        let s_full = &*p.x * theta.transpose();
        let s_red = &rs.rows * alpha.transpose();
        assert!((s_full - s_red).abs().max() < 1e-9);
        // α ~ N(0, I): θ ~ the prior, exactly (sd error ≈ 1/√(2m) ≈ 0.0035).
        let (mean, sd) = rs.moments(&[0.0; 5], &DMatrix::identity(5, 5));
        for k in 0..12 {
            assert!(mean[k].abs() < 1e-12);
            assert!((sd[k] - vars[k].sqrt()).abs() < 1e-12);
            let col = theta.column(k);
            let emp = (col.iter().map(|v| v * v).sum::<f64>() / m as f64).sqrt();
            assert!(
                (emp / sd[k] - 1.0).abs() < 0.02,
                "θ_{k}: sd {emp} vs {}",
                sd[k]
            );
        }
        // Weights: the same score.
        let w = [0.3, -1.0, 0.2, 0.0, 2.0];
        let th = rs.lift_weights(&w);
        let a = &*p.x * DMatrix::from_column_slice(12, 1, &th);
        let b = &rs.rows * DMatrix::from_column_slice(5, 1, &w);
        assert!((a - b).abs().max() < 1e-10);
    }

    /// Full-rank data and non-Gaussian priors are not reduced.
    #[test]
    fn only_rank_deficient_gaussian_problems_reduce() {
        assert!(RowSpace::of(&wide(30, 6, Prior::Gaussian { var: 1.0 })).is_none());
        let ss = Prior::SpikeSlab {
            spike_var: 0.01,
            slab_var: 1.0,
            incl: 0.3,
        };
        assert!(RowSpace::of(&wide(5, 12, ss)).is_none());
        assert!(RowSpace::of(&wide(5, 12, Prior::Gaussian { var: 2.0 })).is_some());
    }
}
