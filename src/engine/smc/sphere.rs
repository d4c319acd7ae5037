//! The direction kernel (`Kernel::Sphere`) for scale-invariant risks under a
//! zero-mean Gaussian prior N(0, diag v).
//!
//! With φ = θ/√v (prior N(0, I)), θ's risk depends on the direction u = φ/‖φ‖
//! only, so the posterior factorises: the radius r = ‖φ‖ is χ_d whatever the
//! data, and u has density ∝ exp(−γ R(u)) under the uniform measure on the
//! sphere. At large γ the cloud in θ is a narrow cone (direction from the data,
//! radius from the prior), which a Gaussian in θ fits badly; the direction
//! alone is fitted here, in the log-map chart at the particles' mean
//! direction μ: x = α·v ∈ R^{d−1}, α the angle to μ, v the unit tangent. The
//! chart covers the whole sphere but μ's antipode (|x| < π), and the uniform
//! measure has density (sin α/α)^{d−2} in it: the Jacobian enters the
//! acceptance ratio. A step moves x by pCN around the chart's Gaussian fit
//! (as `Kernel::Gpcn` does in θ), keeping r, then draws r afresh from χ_d: an
//! exact Gibbs step, free of risk evaluations.

use rand::RngExt;
use rand_distr::{ChiSquared, Distribution};
use rayon::prelude::*;

use super::gaussian_fit::GaussianFit;
use super::moves::{BlockBuf, Chains};
use crate::engine::numerics::rng::{self, Rng};

/// The log-map chart of the sphere at a mean direction, in the prior's
/// whitened coordinates φ = θ/√v.
#[derive(Debug, Clone)]
pub struct SphereChart {
    d: usize,
    /// Prior sds √v_k.
    sd: Vec<f64>,
    /// Householder vector h of H = I − 2hhᵀ/hᵀh with Hμ = s·e₁.
    h: Vec<f64>,
    /// 2/hᵀh.
    beta: f64,
    /// s = ±1.
    sign: f64,
    chi: ChiSquared<f64>,
}

impl SphereChart {
    /// The chart at the weighted mean direction of the rows of `theta` (any
    /// centre gives an exact chart; a central one keeps the cloud far from the
    /// excluded antipode and the fit Gaussian-like). `prior_sd` are √v_k.
    pub fn of(theta: &[f64], weights: &[f64], prior_sd: &[f64]) -> SphereChart {
        let d = prior_sd.len();
        assert!(d >= 2, "the direction kernel needs d ≥ 2");
        let mut mu = vec![0.0; d];
        for (row, &w) in theta.chunks_exact(d).zip(weights) {
            let norm = row
                .iter()
                .zip(prior_sd)
                .map(|(t, s)| (t / s) * (t / s))
                .sum::<f64>()
                .sqrt();
            if norm > 0.0 && norm.is_finite() {
                for ((m, t), s) in mu.iter_mut().zip(row).zip(prior_sd) {
                    *m += w * t / (s * norm);
                }
            }
        }
        let len = mu.iter().map(|m| m * m).sum::<f64>().sqrt();
        if len > 0.0 && len.is_finite() {
            mu.iter_mut().for_each(|m| *m /= len);
        } else {
            // No preferred direction (e.g. γ = 0): any centre is exact.
            mu.iter_mut().for_each(|m| *m = 0.0);
            mu[0] = 1.0;
        }
        SphereChart::at(mu, prior_sd)
    }

    /// The chart centred at the unit vector `mu` (φ coordinates).
    pub fn at(mu: Vec<f64>, prior_sd: &[f64]) -> SphereChart {
        let d = mu.len();
        // s = −sign(μ₁) so that h₁ = μ₁ − s has no cancellation.
        let sign = if mu[0] >= 0.0 { -1.0 } else { 1.0 };
        let mut h = mu;
        h[0] -= sign;
        let hh: f64 = h.iter().map(|v| v * v).sum();
        SphereChart {
            d,
            sd: prior_sd.to_vec(),
            h,
            beta: 2.0 / hh,
            sign,
            chi: ChiSquared::new(d as f64).expect("d ≥ 1"),
        }
    }

    /// Dimension of the chart (d − 1).
    pub fn dim(&self) -> usize {
        self.d - 1
    }

    /// y ← H y in place (H is its own inverse).
    fn reflect(&self, y: &mut [f64]) {
        let dot: f64 = y.iter().zip(&self.h).map(|(a, b)| a * b).sum();
        let f = self.beta * dot;
        for (a, b) in y.iter_mut().zip(&self.h) {
            *a -= f * b;
        }
    }

    /// The chart coordinates x (length d − 1) of θ, using `y` (length d) as
    /// scratch; returns (r = ‖φ‖, α = ‖x‖).
    pub fn to_chart(&self, theta: &[f64], y: &mut [f64], x: &mut [f64]) -> (f64, f64) {
        for ((o, t), s) in y.iter_mut().zip(theta).zip(&self.sd) {
            *o = t / s;
        }
        let r = y.iter().map(|v| v * v).sum::<f64>().sqrt();
        self.reflect(y);
        let cos = self.sign * y[0];
        let sin = y[1..].iter().map(|v| v * v).sum::<f64>().sqrt();
        let alpha = sin.atan2(cos);
        let f = if sin > 0.0 { alpha / sin } else { 0.0 };
        for (o, v) in x.iter_mut().zip(&y[1..]) {
            *o = f * v;
        }
        (r, alpha)
    }

    /// θ at chart point x and radius r (into `theta`), or false when x is
    /// outside the chart (‖x‖ ≥ π).
    pub fn from_chart(&self, x: &[f64], r: f64, theta: &mut [f64]) -> bool {
        let alpha = x.iter().map(|v| v * v).sum::<f64>().sqrt();
        // NaN is outside too.
        if alpha.partial_cmp(&std::f64::consts::PI) != Some(std::cmp::Ordering::Less) {
            return false;
        }
        theta[0] = self.sign * alpha.cos();
        let sinc = sinc(alpha);
        for (o, v) in theta[1..].iter_mut().zip(x) {
            *o = sinc * v;
        }
        self.reflect(theta);
        for (o, s) in theta.iter_mut().zip(&self.sd) {
            *o *= r * s;
        }
        true
    }

    /// log density of the uniform measure in the chart at ‖x‖ = α:
    /// (d − 2)·log(sin α/α).
    pub fn log_jacobian(&self, alpha: f64) -> f64 {
        (self.d as f64 - 2.0) * sinc(alpha).ln()
    }

    /// Fills the chains' whitened chart coordinates (d − 1 per chain), chain
    /// j with `fits[fold[j]]`.
    pub fn whiten_chains(&self, chains: &mut Chains, fits: &[GaussianFit]) {
        let (d, e) = (self.d, self.d - 1);
        chains.white.clear();
        chains.white.resize(chains.len() * e, 0.0);
        chains
            .white
            .par_chunks_mut(e)
            .zip(chains.theta.par_chunks(d))
            .zip(chains.fold.par_iter())
            .for_each_init(
                || (vec![0.0; d], vec![0.0; e]),
                |(y, x), ((w, t), &f)| {
                    self.to_chart(t, y, x);
                    fits[f].whiten(x, w);
                },
            );
    }

    /// Chart coordinates of every row of `theta` (row-major n × (d − 1)).
    pub fn chart_rows(&self, theta: &[f64]) -> Vec<f64> {
        let (d, e) = (self.d, self.d - 1);
        let mut out = vec![0.0; theta.len() / d * e];
        let mut y = vec![0.0; d];
        for (t, x) in theta.chunks_exact(d).zip(out.chunks_exact_mut(e)) {
            self.to_chart(t, &mut y, x);
        }
        out
    }
}

fn sinc(a: f64) -> f64 {
    if a.abs() < 1e-4 {
        1.0 - a * a / 6.0
    } else {
        a.sin() / a
    }
}

/// Proposals of one block of chains (stride d for θ, d − 1 for the whitened
/// chart states `wh`): pCN in the whitened chart around each chain's fit, at
/// the chain's radius. `bb.correction` gets the proposal's log density ratio
/// plus the chart's Jacobian ratio (−∞ outside the chart: rejected).
#[allow(clippy::too_many_arguments)]
pub(super) fn propose(
    chart: &SphereChart,
    scale: f64,
    fits: &[GaussianFit],
    fold: &[usize],
    th: &[f64],
    wh: &[f64],
    rngs: &mut [Rng],
    bb: &mut BlockBuf,
) {
    let (d, e) = (chart.d, chart.d - 1);
    let c = rngs.len();
    bb.size(c, d, e);
    bb.nat.resize(d, 0.0);
    bb.scaled.resize(e, 0.0);
    let rho = (1.0 - scale * scale).max(0.0).sqrt();
    for (j, r) in rngs.iter_mut().enumerate() {
        for (v, wi) in bb.z[j * e..(j + 1) * e]
            .iter_mut()
            .zip(&wh[j * e..(j + 1) * e])
        {
            *v = rho * wi + scale * rng::normal(r);
        }
        let u: f64 = r.random();
        bb.log_u[j] = u.ln();
    }
    bb.white.copy_from_slice(&bb.z);
    // x' = m + L w' per run of chains sharing a fit (into bb.z).
    let mut a = 0;
    let mut x = std::mem::take(&mut bb.z);
    while a < c {
        let b = a + fold[a..].iter().take_while(|&&f| f == fold[a]).count();
        fits[fold[a]].l_times_rows(
            &bb.white[a * e..b * e],
            b - a,
            &mut x[a * e..b * e],
            &mut bb.pack,
        );
        a = b;
    }
    for j in 0..c {
        let xj = &mut x[j * e..(j + 1) * e];
        for (o, m) in xj.iter_mut().zip(&fits[fold[j]].mean) {
            *o += m;
        }
        let cur = &th[j * d..(j + 1) * d];
        let (r, alpha) = chart.to_chart(cur, &mut bb.nat, &mut bb.scaled);
        let out = &mut bb.theta[j * d..(j + 1) * d];
        if chart.from_chart(xj, r, out) {
            let alpha_new = xj.iter().map(|v| v * v).sum::<f64>().sqrt();
            let w2_old: f64 = wh[j * e..(j + 1) * e].iter().map(|v| v * v).sum();
            let w2_new: f64 = bb.white[j * e..(j + 1) * e].iter().map(|v| v * v).sum();
            bb.correction[j] =
                0.5 * (w2_new - w2_old) + chart.log_jacobian(alpha_new) - chart.log_jacobian(alpha);
        } else {
            out.copy_from_slice(cur);
            bb.correction[j] = f64::NEG_INFINITY;
        }
    }
    bb.z = x;
}

/// The exact radius draw of every chain of a block: ‖φ‖² ~ χ²_d, direction
/// kept (θ scaled; the chart state does not change).
pub(super) fn refresh_radius(chart: &SphereChart, th: &mut [f64], rngs: &mut [Rng]) {
    let d = chart.d;
    for (t, r) in th.chunks_exact_mut(d).zip(rngs.iter_mut()) {
        let q: f64 = t
            .iter()
            .zip(&chart.sd)
            .map(|(a, s)| (a / s) * (a / s))
            .sum();
        let want: f64 = chart.chi.sample(r);
        if q > 0.0 && q.is_finite() {
            let f = (want / q).sqrt();
            t.iter_mut().for_each(|v| *v *= f);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chart_round_trips_and_measures_angles() {
        let mut r = rng::stream(3, &[]);
        let d = 6;
        let sd = [0.5, 1.0, 2.0, 1.5, 0.7, 3.0];
        let mu: Vec<f64> = {
            let v: Vec<f64> = (0..d).map(|_| rng::normal(&mut r)).collect();
            let n = v.iter().map(|a| a * a).sum::<f64>().sqrt();
            v.iter().map(|a| a / n).collect()
        };
        for flip in [1.0, -1.0] {
            let m: Vec<f64> = mu.iter().map(|v| flip * v).collect();
            let chart = SphereChart::at(m.clone(), &sd);
            for _ in 0..50 {
                let theta: Vec<f64> = (0..d).map(|k| sd[k] * rng::normal(&mut r)).collect();
                let (mut y, mut x) = (vec![0.0; d], vec![0.0; d - 1]);
                let (rad, alpha) = chart.to_chart(&theta, &mut y, &mut x);
                // α is the angle between φ/‖φ‖ and μ.
                let phi: Vec<f64> = theta.iter().zip(&sd).map(|(t, s)| t / s).collect();
                let cos = phi.iter().zip(&m).map(|(a, b)| a * b).sum::<f64>() / rad;
                assert!((alpha - cos.acos()).abs() < 1e-10, "{alpha} {cos}");
                let mut back = vec![0.0; d];
                assert!(chart.from_chart(&x, rad, &mut back));
                for k in 0..d {
                    assert!((back[k] - theta[k]).abs() < 1e-12 * sd[k] * rad.max(1.0));
                }
            }
            // μ itself is the origin of the chart; outside the ball, no point.
            let theta: Vec<f64> = m.iter().zip(&sd).map(|(a, s)| 2.0 * a * s).collect();
            let (mut y, mut x) = (vec![0.0; d], vec![0.0; d - 1]);
            let (rad, alpha) = chart.to_chart(&theta, &mut y, &mut x);
            assert!((rad - 2.0).abs() < 1e-12 && alpha < 1e-7);
            let mut out = vec![0.0; d];
            assert!(!chart.from_chart(&[3.2, 0.0, 0.0, 0.0, 0.0], 1.0, &mut out));
        }
    }
}
