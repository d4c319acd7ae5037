//! The radial move of the SMC moves: for scale-invariant risks the radius
//! of θ moves for free (no risk evaluation), by an exact Gibbs draw under a
//! zero-mean Gaussian prior, else by Metropolis on log‖θ‖.

use rand::RngExt;
use rand_distr::{ChiSquared, Distribution};

use super::gaussian_fit::GaussianFit;
use super::marginal_map::MarginalMaps;
use super::moves::BlockBuf;
use super::target::Target;
use crate::engine::numerics::rng::{self, Rng};

pub(super) type FitRef<'a> = (&'a GaussianFit, Option<&'a MarginalMaps>);

/// A move of the radius alone, for scale-invariant risks (no risk evaluation):
/// an exact Gibbs draw of `θᵀK⁻¹θ ~ χ²_d` under a zero-mean Gaussian prior N(0, K)
/// (whose posterior radius is independent of the direction), else two Metropolis
/// steps on log‖θ‖ (target prior(e^u θ)·e^{ud}), θ the model parameter even when
/// the sampler works in other coordinates.
pub(super) struct Radial {
    gaussian: bool,
    /// A reference path (`Target::moves_on_rays`): Metropolis on log‖θ‖
    /// with the tempered target's density and the risk's known change.
    ray: bool,
    lp0: f64,
    chi: ChiSquared<f64>,
    sigma: f64,
    d: usize,
}

impl Radial {
    pub(super) fn new<T: Target + ?Sized>(target: &T, d: usize, wanted: bool) -> Option<Radial> {
        let ray = !target.scale_invariant() && target.moves_on_rays();
        if !(wanted && (target.scale_invariant() || ray)) {
            return None;
        }
        Some(Radial {
            gaussian: target.prior_is_gaussian() && !ray,
            ray,
            lp0: target.log_prior(&vec![0.0; d]),
            chi: ChiSquared::new(d as f64).expect("d ≥ 1"),
            sigma: 1.0 / (2.0 * d as f64).sqrt(),
            d,
        })
    }

    /// θ → fθ maps the whitened state w = L⁻¹(θ − m) to f·w + (f − 1)·L⁻¹m;
    /// true when it must be whitened afresh instead (marginal maps).
    fn rescale_white(w: &mut [f64], fit: Option<FitRef<'_>>, f: f64) -> bool {
        match fit {
            Some((fit, None)) => {
                for (wi, mi) in w.iter_mut().zip(&fit.white_mean) {
                    *wi = f * *wi + (f - 1.0) * mi;
                }
                false
            }
            Some((_, Some(_))) => true,
            None => false,
        }
    }

    /// Moves the radius of `cur`; true when its whitened state must then be
    /// recomputed from `cur` (`Rewhiten`, batched over a block of chains).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn apply<T: Target + ?Sized>(
        &self,
        target: &T,
        fit: Option<FitRef<'_>>,
        cur: &mut [f64],
        white: &mut [f64],
        (lp, risk, gamma): (&mut f64, &mut f64, f64),
        r: &mut Rng,
        bb: &mut BlockBuf,
    ) -> bool {
        let d = self.d;
        if self.ray {
            return self.ray_move(target, fit.is_some(), cur, (lp, risk, gamma), r, bb);
        }
        if self.gaussian {
            let q = 2.0 * (self.lp0 - *lp);
            let target_q: f64 = self.chi.sample(r);
            if q > 0.0 && q.is_finite() {
                let f = (target_q / q).sqrt();
                cur.iter_mut().for_each(|v| *v *= f);
                *lp = target.log_prior(cur);
                return Radial::rescale_white(white, fit, f);
            }
            return false;
        }
        // Metropolis on the scale of θ = natural(particle): the risk does not
        // change, the prior of θ and the Jacobian e^{ud} decide (the same ratio
        // in any coordinates).
        bb.nat.resize(d, 0.0);
        bb.scaled.resize(d, 0.0);
        target.natural(cur, &mut bb.nat);
        let mut lpn = target.log_prior_natural(&bb.nat);
        let mut moved = false;
        for _ in 0..2 {
            let u = self.sigma * rng::normal(r);
            let f = u.exp();
            for (p, &c) in bb.scaled.iter_mut().zip(bb.nat.iter()) {
                *p = f * c;
            }
            let lpn_new = target.log_prior_natural(&bb.scaled);
            let v: f64 = r.random();
            if v.ln() < lpn_new - lpn + u * d as f64 {
                std::mem::swap(&mut bb.nat, &mut bb.scaled);
                lpn = lpn_new;
                moved = true;
            }
        }
        if moved {
            target.to_particle(&bb.nat, cur);
            *lp = target.log_prior(cur);
        }
        moved && fit.is_some()
    }
}

impl Radial {
    /// Two Metropolis steps θ → e^u θ on a reference path: the particle is
    /// affine in θ (Jacobian e^{ud} in any such coordinates), the target's
    /// log density log p(z) − γ R'(z), the step by `Target::ray_step`. True
    /// when the whitened state must be recomputed.
    fn ray_move<T: Target + ?Sized>(
        &self,
        target: &T,
        has_fit: bool,
        cur: &mut [f64],
        (lp, risk, gamma): (&mut f64, &mut f64, f64),
        r: &mut Rng,
        bb: &mut BlockBuf,
    ) -> bool {
        let d = self.d;
        bb.ray.resize(d, 0.0);
        // A new ray: the target's cache of the last one does not apply.
        bb.nat.clear();
        let mut moved = false;
        for _ in 0..2 {
            let u = self.sigma * rng::normal(r);
            let f = u.exp();
            let Some(risk_new) = target.ray_step(cur, *risk, f, &mut bb.ray, &mut bb.nat) else {
                return false;
            };
            let lp_new = target.log_prior(&bb.ray);
            let v: f64 = r.random();
            let log_ratio = (lp_new - gamma * risk_new) - (*lp - gamma * *risk) + u * d as f64;
            if v.ln() < log_ratio {
                cur.copy_from_slice(&bb.ray);
                *lp = lp_new;
                *risk = risk_new;
                moved = true;
            }
        }
        moved && has_fit
    }
}

/// The chains of a block whose whitened states the radial moves left stale,
/// whitened together (`GaussianFit::whiten_rows`: same bits as one by one).
#[derive(Debug, Default)]
pub(super) struct Rewhiten {
    /// Chains to whiten, ascending (chains of one fit are adjacent).
    pub(super) chains: Vec<usize>,
    rows: Vec<f64>,
    white: Vec<f64>,
    lanes: Vec<f64>,
}

impl Rewhiten {
    /// `w_j = L⁻¹(T(θ_j) − m)` for the listed chains j of the block (`th`,
    /// `wh`: its states and whitened states; `fold`: each chain's fit), and
    /// with maps `jac_j` = log T'(θ_j).
    pub(super) fn run(
        &mut self,
        fits: &[GaussianFit],
        maps: Option<&[MarginalMaps]>,
        fold: &[usize],
        th: &[f64],
        (wh, jac): (&mut [f64], &mut [f64]),
        d: usize,
    ) {
        let mut a = 0;
        while a < self.chains.len() {
            let f = fold[self.chains[a]];
            let b = a + self.chains[a..]
                .iter()
                .take_while(|&&j| fold[j] == f)
                .count();
            self.rows.clear();
            for &j in &self.chains[a..b] {
                let start = self.rows.len();
                self.rows.extend_from_slice(&th[j * d..(j + 1) * d]);
                if let Some(m) = maps {
                    jac[j] = m[f].map_row(&mut self.rows[start..]);
                }
            }
            self.white.resize(self.rows.len(), 0.0);
            fits[f].whiten_rows(&self.rows, &mut self.white, &mut self.lanes);
            for (i, &j) in self.chains[a..b].iter().enumerate() {
                wh[j * d..(j + 1) * d].copy_from_slice(&self.white[i * d..(i + 1) * d]);
            }
            a = b;
        }
    }
}
