//! The radial move of the SMC moves: for scale-invariant risks the radius
//! of θ moves for free (no risk evaluation), by an exact Gibbs draw under a
//! zero-mean Gaussian prior, else by Metropolis on log‖θ‖.

use rand::RngExt;
use rand_distr::{ChiSquared, Distribution};

use super::gaussian_fit::GaussianFit;
use super::marginal_map::MarginalMaps;
use super::moves::{BlockBuf, whiten_one};
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
    lp0: f64,
    chi: ChiSquared<f64>,
    sigma: f64,
    d: usize,
}

impl Radial {
    pub(super) fn new<T: Target + ?Sized>(target: &T, d: usize, wanted: bool) -> Option<Radial> {
        if !(wanted && target.scale_invariant()) {
            return None;
        }
        Some(Radial {
            gaussian: target.prior_is_gaussian(),
            lp0: target.log_prior(&vec![0.0; d]),
            chi: ChiSquared::new(d as f64).expect("d ≥ 1"),
            sigma: 1.0 / (2.0 * d as f64).sqrt(),
            d,
        })
    }

    /// θ → fθ maps the whitened state w = L⁻¹(θ − m) to f·w + (f − 1)·L⁻¹m
    /// (through marginal maps: whitened afresh).
    fn rescale_white(
        w: &mut [f64],
        fit: Option<FitRef<'_>>,
        f: f64,
        theta: &[f64],
        y: &mut Vec<f64>,
    ) {
        match fit {
            Some((fit, None)) => {
                for (wi, mi) in w.iter_mut().zip(&fit.white_mean) {
                    *wi = f * *wi + (f - 1.0) * mi;
                }
            }
            Some((fit, maps)) => whiten_one(fit, maps, theta, w, y),
            None => {}
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn apply<T: Target + ?Sized>(
        &self,
        target: &T,
        fit: Option<FitRef<'_>>,
        cur: &mut [f64],
        white: &mut [f64],
        lp: &mut f64,
        r: &mut Rng,
        bb: &mut BlockBuf,
    ) {
        let d = self.d;
        if self.gaussian {
            let q = 2.0 * (self.lp0 - *lp);
            let target_q: f64 = self.chi.sample(r);
            if q > 0.0 && q.is_finite() {
                let f = (target_q / q).sqrt();
                cur.iter_mut().for_each(|v| *v *= f);
                Radial::rescale_white(white, fit, f, cur, &mut bb.scaled);
                *lp = target.log_prior(cur);
            }
            return;
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
            if let Some((fit, maps)) = fit {
                whiten_one(fit, maps, cur, white, &mut bb.scaled);
            }
        }
    }
}
