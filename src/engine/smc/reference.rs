//! Tempering from a Gaussian reference q = N(m, c·S) instead of the prior
//! (Syed et al. 2021, "Parallel tempering with a variational reference"):
//! π_β ∝ q^{1−β} · [prior · e^{−γ_T R}]^β, β from 0 to 1. Stage 0 draws q
//! exactly; each step reweights by (prior·e^{−γ_T R}/q)^{Δβ}; log Z stays
//! exact because q and the prior are both normalised. When q is close to the
//! posterior the ESS rule takes few steps.
//!
//! It is the plain sampler on a wrapped target: particles z with θ = m + L z
//! (L Lᵀ = c·S), "prior" N(0, I) (q itself: the Gaussian-prior kernels apply)
//! and "risk" R'(z) = [log φ(z) − log prior(θ) − log|L| + γ_T R(θ)] / γ_T, so
//! that φ(z)·e^{−γ R'} at γ = γ_T·β is π_β in z (the Jacobian |L| makes its
//! integral at β = 1 the evidence Z_γT itself).

use nalgebra::{DMatrix, DVector};
use serde::{Deserialize, Serialize};

use super::target::Target;
use crate::engine::numerics::rng::{self, Rng};

/// Variance inflation c of the reference: a q narrower than the posterior
/// leaves π/q heavy-tailed under q (the weights' variance infinite in the
/// worst case), a slightly wider one only costs a little ESS.
pub const INFLATION: f64 = 1.2;

const LN_2PI: f64 = 1.837_877_066_409_345_5;

/// Where SMC's tempering starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReferenceMode {
    /// The prior (γ from 0): records from before ran so.
    #[default]
    Prior,
    /// A Gaussian of θ handed over by the caller (e.g. EP's, run first by the
    /// spec layer), the prior when none came.
    Ep,
}

/// A Gaussian N(mean, cov) of θ in the problem's coordinates.
#[derive(Debug, Clone, PartialEq)]
pub struct GaussianReference {
    pub mean: DVector<f64>,
    pub cov: DMatrix<f64>,
}

/// How the reference came about, for the record (`details.reference`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReferenceOrigin {
    /// "ep" (tempered from EP's Gaussian) or "prior".
    pub source: String,
    /// Seconds spent obtaining it (EP).
    pub seconds: f64,
    /// Why the prior path was taken although a reference was asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why_not: Option<String>,
}

/// The caller's choice of reference (the spec layer's `--smc-reference
/// auto`), written by the engine into `details.reference` beside the path
/// it took: typed, so no layer above reads the record back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReferenceChoice {
    /// What was asked ("auto", "ep", "prior").
    pub asked: String,
    pub why: String,
    /// The cost model's CPU seconds behind the choice, where it was made
    /// from them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimate_cpu_seconds: Option<ChoiceEstimates>,
}

/// Estimated CPU seconds: EP with its covariance, SMC from EP's Gaussian,
/// SMC from the prior.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ChoiceEstimates {
    pub ep: f64,
    pub smc_from_ep: f64,
    pub smc_from_prior: f64,
}

impl ReferenceChoice {
    /// `details.reference` of a run that took `source`, with `extra` (the
    /// path's own note) kept.
    pub(crate) fn note(&self, source: &str, extra: serde_json::Value) -> serde_json::Value {
        let mut v = serde_json::to_value(self).unwrap_or_default();
        if let (Some(obj), serde_json::Value::Object(add)) = (v.as_object_mut(), extra) {
            obj.extend(add);
        }
        v["source"] = serde_json::Value::from(source);
        v
    }
}

/// The wrapped target (see the module's comment).
pub struct ReferenceTarget<'a, T: Target + ?Sized> {
    inner: &'a T,
    mean: Vec<f64>,
    /// Lower Cholesky factor of c·S.
    l: DMatrix<f64>,
    log_det_l: f64,
    /// L⁻¹m: θ → fθ maps z to f·z + (f − 1)·L⁻¹m (`ray_step`).
    white_mean: Vec<f64>,
    gamma: f64,
    d: usize,
}

impl<'a, T: Target + ?Sized> ReferenceTarget<'a, T> {
    /// Why not, when the covariance is not positive definite, not finite, the
    /// dimensions disagree or γ ≤ 0 (the caller then tempers from the prior).
    pub fn new(
        inner: &'a T,
        reference: &GaussianReference,
        gamma: f64,
    ) -> Result<ReferenceTarget<'a, T>, String> {
        let d = inner.dim();
        if reference.mean.len() != d || reference.cov.shape() != (d, d) {
            return Err(format!(
                "the reference has dimension {} but the problem {d}",
                reference.mean.len()
            ));
        }
        if !(gamma > 0.0 && gamma.is_finite()) {
            return Err(format!(
                "γ must be positive for a reference path; got {gamma}"
            ));
        }
        if reference.mean.iter().any(|v| !v.is_finite())
            || reference.cov.iter().any(|v| !v.is_finite())
        {
            return Err("the reference is not finite".into());
        }
        let cov = (&reference.cov + reference.cov.transpose()) * (0.5 * INFLATION);
        let l = nalgebra::Cholesky::new(cov)
            .ok_or("the reference's covariance is not positive definite")?
            .l();
        let log_det_l = l.diagonal().iter().map(|v| v.ln()).sum();
        let white_mean = l
            .solve_lower_triangular(&reference.mean)
            .ok_or("the reference's covariance is not positive definite")?;
        Ok(ReferenceTarget {
            inner,
            mean: reference.mean.iter().copied().collect(),
            l,
            log_det_l,
            white_mean: white_mean.iter().copied().collect(),
            gamma,
            d,
        })
    }

    /// θ = m + L z (the inner target's particle).
    fn theta_of(&self, z: &[f64], theta: &mut [f64]) {
        theta.copy_from_slice(&self.mean);
        let (d, l) = (self.d, self.l.as_slice());
        for (j, &zj) in z.iter().enumerate() {
            if zj == 0.0 {
                continue;
            }
            // L is lower triangular (column-major): column j has rows j..d.
            for (t, &lij) in theta[j..].iter_mut().zip(&l[j * d + j..(j + 1) * d]) {
                *t += lij * zj;
            }
        }
    }

    /// `ray_step` through θ: whatever the inner target's particles (four
    /// triangular products or solves).
    pub(crate) fn ray_step_through_theta(
        &self,
        cur: &[f64],
        risk: f64,
        f: f64,
        new: &mut [f64],
    ) -> f64 {
        let mut nat = vec![0.0; self.d];
        self.natural(cur, &mut nat);
        nat.iter_mut().for_each(|v| *v *= f);
        self.to_particle(&nat, new);
        // R is the same on the ray: only log φ(z) − log prior(θ) changes.
        let (mut a, mut b) = (vec![0.0; self.d], vec![0.0; self.d]);
        self.theta_of(cur, &mut a);
        self.theta_of(new, &mut b);
        let shift = self.log_phi(new)
            - self.log_phi(cur)
            - (self.inner.log_prior(&b) - self.inner.log_prior(&a));
        risk + shift / self.gamma
    }

    /// The AUC risks R of particles `zs` from their risks R' (exact, no
    /// evaluation: R' = [log φ(z) − log prior(θ) − log|L| + γ_T R]/γ_T).
    pub fn auc_risks(&self, zs: &[f64], risks: &[f64]) -> Vec<f64> {
        let mut theta = vec![0.0; self.d];
        zs.chunks_exact(self.d)
            .zip(risks)
            .map(|(z, &r)| {
                self.theta_of(z, &mut theta);
                let log_ratio = self.log_phi(z) - self.inner.log_prior(&theta) - self.log_det_l;
                r - log_ratio / self.gamma
            })
            .collect()
    }

    fn log_phi(&self, z: &[f64]) -> f64 {
        -0.5 * (self.d as f64 * LN_2PI + z.iter().map(|v| v * v).sum::<f64>())
    }
}

impl<T: Target + ?Sized> Target for ReferenceTarget<'_, T> {
    fn dim(&self) -> usize {
        self.d
    }
    fn log_prior(&self, z: &[f64]) -> f64 {
        self.log_phi(z)
    }
    fn sample_prior(&self, rng: &mut Rng, out: &mut [f64]) {
        out.iter_mut().for_each(|v| *v = rng::normal(rng));
    }
    fn prior_is_gaussian(&self) -> bool {
        true
    }
    fn scale_invariant(&self) -> bool {
        false
    }
    fn risks(&self, zs: &[f64], out: &mut [f64]) {
        let d = self.d;
        let mut theta = vec![0.0; zs.len()];
        for (t, z) in theta.chunks_exact_mut(d).zip(zs.chunks_exact(d)) {
            self.theta_of(z, t);
        }
        self.inner.risks(&theta, out);
        for ((o, z), t) in out
            .iter_mut()
            .zip(zs.chunks_exact(d))
            .zip(theta.chunks_exact(d))
        {
            let log_ratio =
                self.log_phi(z) - self.inner.log_prior(t) - self.log_det_l + self.gamma * *o;
            *o = log_ratio / self.gamma;
        }
    }
    fn natural(&self, z: &[f64], theta: &mut [f64]) {
        let mut t = vec![0.0; self.d];
        self.theta_of(z, &mut t);
        self.inner.natural(&t, theta);
    }
    fn to_particle(&self, theta: &[f64], z: &mut [f64]) {
        let mut t = vec![0.0; self.d];
        self.inner.to_particle(theta, &mut t);
        let v = DVector::from_iterator(self.d, t.iter().zip(&self.mean).map(|(a, b)| a - b));
        let w = self
            .l
            .solve_lower_triangular(&v)
            .unwrap_or_else(|| DVector::zeros(self.d));
        z.copy_from_slice(w.as_slice());
    }
    fn log_prior_natural(&self, theta: &[f64]) -> f64 {
        self.inner.log_prior_natural(theta)
    }
    fn batch(&self) -> Option<usize> {
        self.inner.batch()
    }
    fn moves_on_rays(&self) -> bool {
        self.inner.scale_invariant()
    }
    fn ray_step(
        &self,
        cur: &[f64],
        risk: f64,
        f: f64,
        new: &mut [f64],
        scratch: &mut Vec<f64>,
    ) -> Option<f64> {
        if !self.inner.particle_is_natural() {
            return Some(self.ray_step_through_theta(cur, risk, f, new));
        }
        // The inner particle t = m + Lz is θ: fθ is z' = f·z + (f − 1)·L⁻¹m,
        // and R' moves by the change of log φ(z) − log prior(t) alone. t
        // takes one triangular product, or none when `scratch` (a cache of
        // [z, t] for the last two particles of this ray, cleared by the
        // caller when a ray starts) has it: 4 products a step before.
        let d = self.d;
        if scratch.len() != 4 * d {
            scratch.clear();
            scratch.resize(4 * d, f64::NAN);
        }
        if scratch[2 * d..3 * d] == *cur {
            let (a, b) = scratch.split_at_mut(2 * d);
            a.swap_with_slice(b);
        } else if scratch[..d] != *cur {
            scratch[..d].copy_from_slice(cur);
            self.theta_of(cur, &mut scratch[d..2 * d]);
        }
        let (a, b) = scratch.split_at_mut(2 * d);
        let lp_cur = self.inner.log_prior(&a[d..]);
        for (tb, &ta) in b[d..].iter_mut().zip(&a[d..]) {
            *tb = f * ta;
        }
        let lp_new = self.inner.log_prior(&b[d..]);
        for ((n, &c), &w) in new.iter_mut().zip(cur).zip(&self.white_mean) {
            *n = f * c + (f - 1.0) * w;
        }
        b[..d].copy_from_slice(new);
        let shift = self.log_phi(new) - self.log_phi(cur) - (lp_new - lp_cur);
        Some(risk + shift / self.gamma)
    }
}

#[cfg(test)]
#[path = "reference_tests.rs"]
mod tests;
