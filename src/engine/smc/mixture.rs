//! A Gaussian-mixture independence move for stages that do not decorrelate:
//! where the tempered target passes a first-order transition (EEG at γ ≈
//! 2500–3000: the posterior's weight jumps from a broad phase to a narrow one
//! at lower risk, docs/BENCHMARKS.md `smc-eeg-stage`), the stage's cloud holds
//! both phases. One Gaussian fit of it is too wide for the narrow phase and
//! puts the broad one in its tails: the step shrinks to hold acceptance and
//! the chains left in the old phase cross over by small steps. A mixture q
//! of two Gaussians fitted to the chains, proposed independently of the
//! state (θ' ~ q, α = π(θ')q(θ) / π(θ)q(θ')), moves a chain from the old
//! phase (π/q small there: q covers it, π has left it) to the new in one
//! accepted step. Exact: a Metropolis–Hastings kernel for the stage's target
//! whose q does not depend on the chain's own state (see `GROUPS`).

use nalgebra::{DMatrix, DVector};
use rand::RngExt;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::gaussian_fit::GaussianFit;
use super::marginal_map::MarginalMaps;
use super::moves::Chains;
use super::radial::Rewhiten;
use super::target::Target;
use crate::engine::numerics::rng::{self, Rng};

/// Moves after which a stage that has not decorrelated adds the mixture move
/// to each step (a quarter of the default cap of 200).
pub const MIXTURE_AFTER: usize = 50;
/// Groups of chains (contiguous: resampled copies of one ancestor are
/// adjacent) each moved by a mixture fitted to the other groups' chains: the
/// mixtures are refitted from the chains every `MIXTURE_AFTER` moves (the
/// stage-start cloud may hold too little of the new phase), and a chain's
/// own state never shapes its proposal, so each chain's kernel, given the
/// other groups, leaves the stage's target invariant.
pub const GROUPS: usize = 5;

/// The group of chain j of m.
fn group_of(j: usize, m: usize) -> usize {
    j * GROUPS / m.max(1)
}

/// Per group, the mixture fitted to the chains of the other groups (None
/// where the fit failed: those chains skip the move).
pub fn fit_left_out(theta: &[f64], d: usize) -> Vec<Option<Mixture>> {
    let m = theta.len() / d.max(1);
    (0..GROUPS)
        .into_par_iter()
        .map(|g| {
            let rows: Vec<f64> = theta
                .chunks_exact(d)
                .enumerate()
                .filter(|(j, _)| group_of(*j, m) != g)
                .flat_map(|(_, r)| r.iter().copied())
                .collect();
            Mixture::fit(&rows, d)
        })
        .collect()
}

/// Components of the mixture.
const COMPONENTS: usize = 2;
/// EM iterations at most.
const EM_ITERATIONS: usize = 25;
/// Rows the EM fit uses at most (every k-th of the cloud): the fit costs
/// O(rows·d²) an iteration, the proposal's shape does not need more.
const EM_ROWS: usize = 4000;
/// Covariance inflation of each component: heavier than the fit, so that
/// π/q stays bounded in the components' tails.
const INFLATE: f64 = 1.2;
/// Smallest component share kept (else the fit falls back to one Gaussian).
const MIN_SHARE: f64 = 0.02;

#[derive(Debug, Clone)]
struct Component {
    log_w: f64,
    mean: Vec<f64>,
    /// Lower Cholesky factor of the (inflated) covariance, its rows packed
    /// (row a: a + 1 entries from a(a + 1)/2).
    l: Vec<f64>,
    /// log of the normal density's constant: −½ log det Σ − d/2 log 2π.
    log_norm: f64,
}

/// A Gaussian mixture in the sampler's coordinates.
#[derive(Debug, Clone)]
pub struct Mixture {
    d: usize,
    comps: Vec<Component>,
}

fn weighted_moments(x: &[f64], d: usize, w: &[f64]) -> (Vec<f64>, DMatrix<f64>, f64) {
    let total: f64 = w.iter().sum();
    let mut m = vec![0.0; d];
    for (row, &wi) in x.chunks_exact(d).zip(w) {
        for k in 0..d {
            m[k] += wi * row[k];
        }
    }
    m.iter_mut()
        .for_each(|v| *v /= total.max(f64::MIN_POSITIVE));
    let mut c = DMatrix::<f64>::zeros(d, d);
    let mut dev = vec![0.0; d];
    for (row, &wi) in x.chunks_exact(d).zip(w) {
        if wi == 0.0 {
            continue;
        }
        for k in 0..d {
            dev[k] = row[k] - m[k];
        }
        for a in 0..d {
            for b in 0..=a {
                c[(a, b)] += wi * dev[a] * dev[b];
            }
        }
    }
    for a in 0..d {
        for b in 0..=a {
            let v = c[(a, b)] / total.max(f64::MIN_POSITIVE);
            c[(a, b)] = v;
            c[(b, a)] = v;
        }
    }
    (m, c, total)
}

impl Component {
    fn of(mean: Vec<f64>, mut cov: DMatrix<f64>, share: f64, ridge: &[f64]) -> Option<Component> {
        let d = mean.len();
        for k in 0..d {
            cov[(k, k)] += ridge[k];
        }
        cov *= INFLATE;
        let l = cov.cholesky()?.l();
        let log_det: f64 = (0..d).map(|k| 2.0 * l[(k, k)].ln()).sum();
        let l = (0..d)
            .flat_map(|a| (0..=a).map(move |b| (a, b)))
            .map(|ab| l[ab])
            .collect();
        Some(Component {
            log_w: share.ln(),
            mean,
            l,
            log_norm: -0.5 * log_det - 0.5 * d as f64 * (2.0 * std::f64::consts::PI).ln(),
        })
    }

    /// log w_k + log N(x; m_k, Σ_k).
    fn log_joint(&self, x: &[f64], y: &mut [f64]) -> f64 {
        let d = self.mean.len();
        // Forward substitution L y = x − m.
        let mut q = 0.0;
        for a in 0..d {
            let row = &self.l[a * (a + 1) / 2..(a + 1) * (a + 2) / 2];
            let s = x[a]
                - self.mean[a]
                - row[..a]
                    .iter()
                    .zip(&y[..a])
                    .map(|(l, v)| l * v)
                    .sum::<f64>();
            y[a] = s / row[a];
            q += y[a] * y[a];
        }
        self.log_w + self.log_norm - 0.5 * q
    }
}

impl Mixture {
    /// Two Gaussians fitted by EM to the rows of `x` (equal weights), started
    /// from the split of the cloud at its mean along its first principal
    /// axis; None when the cloud is too small or a fit degenerates.
    pub fn fit(cloud: &[f64], d: usize) -> Option<Mixture> {
        let rows = cloud.len() / d.max(1);
        let stride = rows.div_ceil(EM_ROWS).max(1);
        let thinned: Vec<f64>;
        let x = if stride == 1 {
            cloud
        } else {
            thinned = cloud
                .chunks_exact(d)
                .step_by(stride)
                .flatten()
                .copied()
                .collect();
            &thinned
        };
        let n = x.len() / d.max(1);
        if d == 0 || n < 20 * d * COMPONENTS {
            return None;
        }
        let ones = vec![1.0; n];
        let (m0, c0, _) = weighted_moments(x, d, &ones);
        // A small ridge from the whole cloud's variances keeps each
        // component's covariance positive definite.
        let ridge: Vec<f64> = (0..d).map(|k| 1e-6 * c0[(k, k)].max(1e-300)).collect();
        let axis = principal_axis(&c0);
        let side: Vec<bool> = x
            .chunks_exact(d)
            .map(|r| (0..d).map(|k| (r[k] - m0[k]) * axis[k]).sum::<f64>() > 0.0)
            .collect();
        let mut resp: Vec<Vec<f64>> = (0..COMPONENTS)
            .map(|c| side.iter().map(|&s| f64::from(s == (c == 0))).collect())
            .collect();
        let mut comps = Vec::new();
        let mut last_ll = f64::NEG_INFINITY;
        let mut y = vec![0.0; d];
        for _ in 0..EM_ITERATIONS {
            comps.clear();
            for r in &resp {
                let (m, c, total) = weighted_moments(x, d, r);
                let share = total / n as f64;
                if share < MIN_SHARE {
                    return None;
                }
                comps.push(Component::of(m, c, share, &ridge)?);
            }
            // E step: responsibilities with the uninflated shapes would be
            // the textbook EM; the inflated ones only blur them a little.
            let mut ll = 0.0;
            for (i, row) in x.chunks_exact(d).enumerate() {
                let lj: Vec<f64> = comps.iter().map(|c| c.log_joint(row, &mut y)).collect();
                let top = lj.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                let s: f64 = lj.iter().map(|v| (v - top).exp()).sum();
                ll += top + s.ln();
                for (c, r) in resp.iter_mut().enumerate() {
                    r[i] = (lj[c] - top).exp() / s;
                }
            }
            if (ll - last_ll).abs() < 1e-4 * n as f64 {
                break;
            }
            last_ll = ll;
        }
        Some(Mixture { d, comps })
    }

    /// The components' shares (for the record).
    pub fn shares(&self) -> Vec<f64> {
        self.comps.iter().map(|c| c.log_w.exp()).collect()
    }

    /// log q(x).
    pub fn log_density(&self, x: &[f64], y: &mut [f64]) -> f64 {
        let mut lj = [0.0; COMPONENTS];
        for (v, c) in lj.iter_mut().zip(&self.comps) {
            *v = c.log_joint(x, y);
        }
        let lj = &lj[..self.comps.len()];
        let top = lj.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        top + lj.iter().map(|v| (v - top).exp()).sum::<f64>().ln()
    }

    /// A draw of q into `out`.
    pub fn sample(&self, r: &mut Rng, out: &mut [f64], z: &mut [f64]) {
        let u: f64 = r.random();
        let mut acc = 0.0;
        let mut pick = self.comps.len() - 1;
        for (k, c) in self.comps.iter().enumerate() {
            acc += c.log_w.exp();
            if u < acc {
                pick = k;
                break;
            }
        }
        let c = &self.comps[pick];
        z.iter_mut().for_each(|v| *v = rng::normal(r));
        for a in 0..self.d {
            let row = &c.l[a * (a + 1) / 2..(a + 1) * (a + 2) / 2];
            out[a] = c.mean[a] + row.iter().zip(&z[..=a]).map(|(l, v)| l * v).sum::<f64>();
        }
    }
}

/// The covariance's leading eigenvector by power iteration.
fn principal_axis(c: &DMatrix<f64>) -> Vec<f64> {
    let d = c.nrows();
    let mut v = DVector::from_fn(d, |k, _| 1.0 + 0.01 * k as f64);
    for _ in 0..100 {
        let w = c * &v;
        let norm = w.norm();
        if norm <= 0.0 || !norm.is_finite() {
            break;
        }
        v = w / norm;
    }
    v.iter().copied().collect()
}

/// A stage's mixture moves, for the record.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MixtureStats {
    /// The components' shares.
    pub shares: Vec<f64>,
    pub proposals: usize,
    pub accepted: usize,
}

/// What one mixture move did over all chains.
#[derive(Debug, Clone, Copy, Default)]
pub struct MixtureStep {
    pub accepted: usize,
    pub evaluations: usize,
    pub jump2: f64,
}

/// One independence Metropolis–Hastings move of every chain with proposal
/// `mix` for the target at `gamma`; `moved[j]` set for chains that moved.
/// The moved chains' whitened states are refreshed with their fits (and maps).
pub fn step<T: Target + ?Sized>(
    target: &T,
    mixes: &[Option<Mixture>],
    (fits, maps): (&[GaussianFit], Option<&[MarginalMaps]>),
    chains: &mut Chains,
    gamma: f64,
    moved: &mut [bool],
) -> MixtureStep {
    let d = chains.d;
    const BLOCK: usize = 64;
    let m = chains.len();
    chains.surrogate.resize(m, f64::NAN);
    // The cached log Jacobians of moved chains are refreshed by the rewhitening.
    if chains.jac.len() != m {
        chains.jac = vec![f64::NAN; m];
    }
    assert_eq!(
        chains.white.len(),
        m * d,
        "chains need their whitened states"
    );
    let stats: Vec<MixtureStep> = chains
        .theta
        .par_chunks_mut(BLOCK * d)
        .zip(chains.risk.par_chunks_mut(BLOCK))
        .zip(chains.log_prior.par_chunks_mut(BLOCK))
        .zip(chains.rng.par_chunks_mut(BLOCK))
        .zip(chains.surrogate.par_chunks_mut(BLOCK))
        .zip(moved.par_chunks_mut(BLOCK))
        .zip(chains.white.par_chunks_mut(BLOCK * d))
        .zip(chains.jac.par_chunks_mut(BLOCK))
        .zip(chains.fold.par_chunks(BLOCK))
        .enumerate()
        .map(
            |(blk, ((((((((th, rk), lp), rngs), sk), mv), wh), jac), fold))| {
                let mix_of = |j: usize| mixes[group_of(blk * BLOCK + j, m)].as_ref();
                let mut rewhiten = Rewhiten::default();
                // Only chains whose group has a mixture propose (and pay a risk).
                let proposing: Vec<usize> =
                    (0..rk.len()).filter(|&j| mix_of(j).is_some()).collect();
                let c = proposing.len();
                let mut prop = vec![0.0; c * d];
                let mut z = vec![0.0; d];
                let mut log_u = vec![0.0; c];
                for (i, &j) in proposing.iter().enumerate() {
                    let mix = mix_of(j).expect("proposing");
                    mix.sample(&mut rngs[j], &mut prop[i * d..(i + 1) * d], &mut z);
                    let u: f64 = rngs[j].random();
                    log_u[i] = u.ln();
                }
                let mut risk = vec![0.0; c];
                if c > 0 {
                    target.risks(&prop, &mut risk);
                }
                let mut out = MixtureStep {
                    evaluations: c,
                    ..MixtureStep::default()
                };
                for (i, &j) in proposing.iter().enumerate() {
                    let mix = mix_of(j).expect("proposing");
                    let new = &prop[i * d..(i + 1) * d];
                    let cur = &th[j * d..(j + 1) * d];
                    let lp_new = target.log_prior(new);
                    let log_alpha = -gamma * (risk[i] - rk[j]) + lp_new - lp[j]
                        + mix.log_density(cur, &mut z)
                        - mix.log_density(new, &mut z);
                    if log_u[i] < log_alpha {
                        out.accepted += 1;
                        out.jump2 += cur
                            .iter()
                            .zip(new)
                            .map(|(a, b)| (a - b) * (a - b))
                            .sum::<f64>();
                        th[j * d..(j + 1) * d].copy_from_slice(new);
                        rk[j] = risk[i];
                        lp[j] = lp_new;
                        sk[j] = f64::NAN;
                        mv[j] = true;
                        rewhiten.chains.push(j);
                    }
                }
                if !fits.is_empty() {
                    rewhiten.run(fits, maps, fold, th, (wh, jac), d);
                }
                out
            },
        )
        .collect();
    stats
        .iter()
        .fold(MixtureStep::default(), |a, b| MixtureStep {
            accepted: a.accepted + b.accepted,
            evaluations: a.evaluations + b.evaluations,
            jump2: a.jump2 + b.jump2,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two separated clusters: EM finds their shares and means.
    #[test]
    fn em_separates_two_clusters() {
        let mut r = rng::stream(3, &[]);
        let d = 3;
        let mut x = Vec::new();
        for i in 0..3000 {
            let (c, s) = if i % 10 < 3 { (5.0, 0.2) } else { (0.0, 1.0) };
            for k in 0..d {
                x.push(if k == 0 { c } else { 0.0 } + s * rng::normal(&mut r));
            }
        }
        let mix = Mixture::fit(&x, d).expect("a fit");
        let mut shares = mix.shares();
        shares.sort_by(f64::total_cmp);
        assert!((shares[0] - 0.3).abs() < 0.02, "{shares:?}");
        // q is a density: its log at a far point is far below its log at a mean.
        let mut y = vec![0.0; d];
        assert!(
            mix.log_density(&[5.0, 0.0, 0.0], &mut y)
                > mix.log_density(&[20.0, 0.0, 0.0], &mut y) + 50.0
        );
    }

    /// The move leaves its target invariant: at γ = 0 (the prior N(0, I))
    /// chains drawn from the prior and moved 20 times by a mixture fitted
    /// to a shifted, narrow cloud keep the prior's mean and variance
    /// (4 000 chains: se ≈ 0.016 and 0.022; tolerances 0.08 and 0.11, 5 se;
    /// without q's ratio they would drift to q's mean 1.5 and variance ≈ 0.3).
    #[test]
    fn the_move_keeps_the_prior_at_gamma_zero() {
        use crate::engine::prior::Prior;
        use crate::engine::smc::target::LinearAuc;
        let mut r = rng::stream(9, &[]);
        let (n, d, m) = (30, 2, 4000);
        let x = DMatrix::from_fn(n, d, |_, _| rng::normal(&mut r));
        let y: Vec<bool> = (0..n).map(|i| i % 2 == 0).collect();
        let t = LinearAuc::new(&x, &y, Prior::Gaussian { var: 1.0 });
        let mut theta = vec![0.0; m * d];
        for row in theta.chunks_exact_mut(d) {
            t.sample_prior(&mut r, row);
        }
        let shifted: Vec<f64> = (0..m * d)
            .map(|i| if i % 2 == 0 { 1.5 } else { 0.0 } + 0.5 * rng::normal(&mut r))
            .collect();
        let mixes = fit_left_out(&shifted, d);
        let mut chains = Chains {
            d,
            risk: vec![0.0; m],
            log_prior: theta.chunks_exact(d).map(|p| t.log_prior(p)).collect(),
            theta,
            white: vec![0.0; m * d],
            rng: (0..m).map(|j| rng::stream(10, &[j as u64])).collect(),
            fold: vec![0; m],
            surrogate: Vec::new(),
            jac: Vec::new(),
        };
        t.risks(&chains.theta, &mut chains.risk);
        let mut moved = vec![false; m];
        let mut accepted = 0;
        for _ in 0..20 {
            accepted += step(&t, &mixes, (&[], None), &mut chains, 0.0, &mut moved).accepted;
        }
        assert!(accepted > m, "the move moves ({accepted})");
        for k in 0..d {
            let col: Vec<f64> = chains.theta.chunks_exact(d).map(|p| p[k]).collect();
            let mean = col.iter().sum::<f64>() / m as f64;
            let var = col.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / m as f64;
            assert!(
                mean.abs() < 0.08 && (var - 1.0).abs() < 0.11,
                "{k}: {mean} {var}"
            );
        }
        for (p, lp) in chains.theta.chunks_exact(d).zip(&chains.log_prior) {
            assert!((t.log_prior(p) - lp).abs() < 1e-12);
        }
    }
}
