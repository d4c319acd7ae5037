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
use crate::engine::numerics::gemm::{View, ViewMut, gemm};
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
/// where the fit failed: those chains skip the move). EM starts from the
/// group's previous fit where there is one (`prev`).
pub fn fit_left_out(theta: &[f64], d: usize, prev: &[Option<Mixture>]) -> Vec<Option<Mixture>> {
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
            Mixture::fit(&rows, d, prev.get(g).and_then(Option::as_ref))
        })
        .collect()
}

/// Components of the mixture.
const COMPONENTS: usize = 2;
/// EM iterations at most, from the principal-axis split and from the
/// previous fit (a refit 50 moves later starts near its optimum).
const EM_ITERATIONS: usize = 25;
const EM_ITERATIONS_WARM: usize = 8;
/// EM stops when the mean log-likelihood of a row changes by less (nats):
/// the proposal's shape does not need the optimum's last digits.
const EM_TOLERANCE: f64 = 1e-4;
/// Rows the EM fit uses at most (every k-th of the cloud): the fit costs
/// O(rows·d²) an iteration, the proposal's shape does not need more. At
/// least `EM_ROWS_PER_DIM`·d, so that each component's covariance rests on
/// ≥ 20·d rows.
const EM_ROWS: usize = 2000;
const EM_ROWS_PER_DIM: usize = 50;
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
    /// L⁻¹ and L⁻¹m: y = L⁻¹x − L⁻¹m for a batch of x by one GEMM.
    inv: DMatrix<f64>,
    inv_mean: Vec<f64>,
    /// log of the normal density's constant: −½ log det Σ − d/2 log 2π.
    log_norm: f64,
}

/// A Gaussian mixture in the sampler's coordinates.
#[derive(Debug, Clone)]
pub struct Mixture {
    d: usize,
    comps: Vec<Component>,
}

/// Weighted mean, covariance (one GEMM of the weighted deviations) and total
/// weight of the rows of `x`.
fn weighted_moments(x: &[f64], d: usize, w: &[f64]) -> (Vec<f64>, DMatrix<f64>, f64) {
    let total: f64 = w.iter().sum();
    let inv = 1.0 / total.max(f64::MIN_POSITIVE);
    let mut m = vec![0.0; d];
    for (row, &wi) in x.chunks_exact(d).zip(w) {
        for k in 0..d {
            m[k] += wi * row[k];
        }
    }
    m.iter_mut().for_each(|v| *v *= inv);
    let n = w.len();
    // Row-major n × d: √w_i (x_i − m).
    let mut a = vec![0.0; n * d];
    for ((out, row), &wi) in a.chunks_exact_mut(d).zip(x.chunks_exact(d)).zip(w) {
        let s = wi.sqrt();
        for k in 0..d {
            out[k] = s * (row[k] - m[k]);
        }
    }
    let rows = View {
        data: &a,
        rows: n,
        cols: d,
        rs: d,
        cs: 1,
    };
    let mut c = DMatrix::<f64>::zeros(d, d);
    let out = ViewMut {
        data: c.as_mut_slice(),
        rows: d,
        cols: d,
        rs: 1,
        cs: d,
    };
    gemm(inv, rows.t(), rows, 0.0, out);
    (m, c, total)
}

impl Component {
    fn of(mean: Vec<f64>, mut cov: DMatrix<f64>, share: f64, ridge: &[f64]) -> Option<Component> {
        let d = mean.len();
        for k in 0..d {
            cov[(k, k)] += ridge[k];
        }
        cov *= INFLATE;
        let dense = cov.cholesky()?.l();
        let log_det: f64 = (0..d).map(|k| 2.0 * dense[(k, k)].ln()).sum();
        let l = (0..d)
            .flat_map(|a| (0..=a).map(move |b| (a, b)))
            .map(|ab| dense[ab])
            .collect();
        let inv = dense.solve_lower_triangular(&DMatrix::identity(d, d))?;
        let inv_mean = (&inv * DVector::from_column_slice(&mean))
            .iter()
            .copied()
            .collect();
        Some(Component {
            log_w: share.ln(),
            mean,
            l,
            inv,
            inv_mean,
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

    /// `log_joint` of every row of `x` (row-major) into `out`: one GEMM
    /// y = L⁻¹x − L⁻¹m, the rows as columns.
    fn log_joints(&self, x: &[f64], out: &mut [f64]) {
        let d = self.mean.len();
        let n = out.len();
        let mut y = vec![0.0; n * d];
        for col in y.chunks_exact_mut(d) {
            col.copy_from_slice(&self.inv_mean);
        }
        let xs = View {
            data: x,
            rows: d,
            cols: n,
            rs: 1,
            cs: d,
        };
        let ys = ViewMut {
            data: &mut y,
            rows: d,
            cols: n,
            rs: 1,
            cs: d,
        };
        gemm(1.0, View::of(&self.inv), xs, -1.0, ys);
        for (o, col) in out.iter_mut().zip(y.chunks_exact(d)) {
            *o = self.log_w + self.log_norm - 0.5 * col.iter().map(|v| v * v).sum::<f64>();
        }
    }
}

impl Mixture {
    /// Two Gaussians fitted by EM to the rows of `x` (equal weights), started
    /// from `prev`'s responsibilities, else from the split of the cloud at
    /// its mean along its first principal axis; None when the cloud is too
    /// small or a fit degenerates.
    pub fn fit(cloud: &[f64], d: usize, prev: Option<&Mixture>) -> Option<Mixture> {
        let rows = cloud.len() / d.max(1);
        let stride = rows.div_ceil(EM_ROWS.max(EM_ROWS_PER_DIM * d)).max(1);
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
        let mut lj = vec![vec![0.0; n]; COMPONENTS];
        let warm = prev.filter(|p| p.d == d && p.comps.len() == COMPONENTS);
        let mut resp: Vec<Vec<f64>> = match warm {
            Some(p) => {
                e_step(&p.comps, x, &mut lj);
                lj.clone()
            }
            None => {
                let axis = principal_axis(&c0);
                let side: Vec<bool> = x
                    .chunks_exact(d)
                    .map(|r| (0..d).map(|k| (r[k] - m0[k]) * axis[k]).sum::<f64>() > 0.0)
                    .collect();
                (0..COMPONENTS)
                    .map(|c| side.iter().map(|&s| f64::from(s == (c == 0))).collect())
                    .collect()
            }
        };
        let mut comps = Vec::new();
        let mut last_ll = f64::NEG_INFINITY;
        let iterations = if warm.is_some() {
            EM_ITERATIONS_WARM
        } else {
            EM_ITERATIONS
        };
        for _ in 0..iterations {
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
            let ll = e_step(&comps, x, &mut lj);
            std::mem::swap(&mut resp, &mut lj);
            if (ll - last_ll).abs() < EM_TOLERANCE * n as f64 {
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

    /// Each component's share of the rows of `x`: their mean responsibility.
    pub fn responsibilities(&self, x: &[f64]) -> Vec<f64> {
        let n = x.len() / self.d.max(1);
        let mut r = vec![vec![0.0; n]; self.comps.len()];
        e_step(&self.comps, x, &mut r);
        r.iter()
            .map(|c| c.iter().sum::<f64>() / n.max(1) as f64)
            .collect()
    }

    /// log q(x).
    pub fn log_density(&self, x: &[f64], y: &mut [f64]) -> f64 {
        let mut lj = [0.0; COMPONENTS];
        for (v, c) in lj.iter_mut().zip(&self.comps) {
            *v = c.log_joint(x, y);
        }
        log_sum_exp(&lj[..self.comps.len()])
    }

    /// log q at every row of `x` (row-major) into `out`: `log_density`
    /// by one GEMM per component.
    pub fn log_densities(&self, x: &[f64], out: &mut [f64]) {
        let n = out.len();
        let mut lj = [Vec::new(), Vec::new()];
        for (c, l) in self.comps.iter().zip(lj.iter_mut()) {
            l.resize(n, 0.0);
            c.log_joints(x, l);
        }
        let k = self.comps.len();
        let mut v = [0.0; COMPONENTS];
        for (i, o) in out.iter_mut().enumerate() {
            for (vk, l) in v.iter_mut().zip(&lj[..k]) {
                *vk = l[i];
            }
            *o = log_sum_exp(&v[..k]);
        }
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

fn log_sum_exp(v: &[f64]) -> f64 {
    let top = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    top + v.iter().map(|x| (x - top).exp()).sum::<f64>().ln()
}

/// Responsibilities of `comps` for the rows of `x` into `resp` (one vector
/// per component); the log-likelihood.
fn e_step(comps: &[Component], x: &[f64], resp: &mut [Vec<f64>]) -> f64 {
    for (c, r) in comps.iter().zip(resp.iter_mut()) {
        c.log_joints(x, r);
    }
    let n = resp.first().map_or(0, Vec::len);
    let mut ll = 0.0;
    let mut lj = [0.0; COMPONENTS];
    for i in 0..n {
        for (v, r) in lj.iter_mut().zip(resp.iter()) {
            *v = r[i];
        }
        let l = log_sum_exp(&lj[..comps.len()]);
        ll += l;
        for r in resp.iter_mut() {
            r[i] = (r[i] - l).exp();
        }
    }
    ll
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
    /// The components' shares (the stage's first fit).
    pub shares: Vec<f64>,
    pub proposals: usize,
    pub accepted: usize,
    /// Each component's share (mean responsibility under the stage's last
    /// fit) of the cloud at the stage's start (reweighted and resampled) and
    /// at its end.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub held: Vec<f64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reached: Vec<f64>,
}

/// Share of the cloud that may move between the mixture's components
/// within a stage. The stage's target is fixed, so a start cloud that
/// represented it keeps its shares up to Monte Carlo error (se ≤ 0.05 at
/// 100 particles); a larger shift means the reweighted incoming cloud held
/// too little of a phase the stage's target holds (EEG split 0 on the prior
/// path, 2000 particles: 0.53 → 0.75, 0.54 → 0.99, 0.37 → 0.94 in stages
/// 12–14; Sonar 8n: ≤ 0.02 in every stage). The tempering step's weights
/// then rested on the few particles there, so its log Z increment is
/// likely low.
pub const SHARE_SHIFT: f64 = 0.2;

impl MixtureStats {
    /// (held, reached) of the component whose share grew by `SHARE_SHIFT`
    /// or more from the stage's start to its end.
    pub fn jump(&self) -> Option<(f64, f64)> {
        self.held
            .iter()
            .zip(&self.reached)
            .map(|(&h, &r)| (h, r))
            .filter(|&(h, r)| r - h >= SHARE_SHIFT)
            .max_by(|a, b| (a.1 - a.0).total_cmp(&(b.1 - b.0)))
    }
}

/// Each chain's log q under its group's mixture (NaN: not known) and the
/// state it is of: a proposal's ratio needs log q at the current state,
/// which is known from the chain's last mixture move unless another move
/// has moved it since.
#[derive(Debug, Default)]
pub struct QCache {
    log_q: Vec<f64>,
    at: Vec<f64>,
}

impl QCache {
    pub fn new(m: usize, d: usize) -> QCache {
        QCache {
            log_q: vec![f64::NAN; m],
            at: vec![0.0; m * d],
        }
    }
}

/// Acceptance below which the move is paused until the next refit: its
/// proposals would cost a risk evaluation each for ≈ no move.
const PAUSE_BELOW: f64 = 1e-3;

/// The mixture move of one stage: its fits (refitted every `MIXTURE_AFTER`
/// moves), the chains' cached log q, its counts.
#[derive(Debug, Default)]
pub struct MixtureMove {
    mixes: Vec<Option<Mixture>>,
    cache: QCache,
    stats: Option<MixtureStats>,
    /// Proposals and acceptances since the last fit.
    since_fit: (usize, usize),
    paused: bool,
}

impl MixtureMove {
    /// One mixture move after the stage's `steps`-th (refitting first on
    /// every `MIXTURE_AFTER`-th); no proposal while paused.
    pub fn run<T: Target + ?Sized>(
        &mut self,
        steps: usize,
        target: &T,
        fits: (&[GaussianFit], Option<&[MarginalMaps]>),
        chains: &mut Chains,
        gamma: f64,
        moved: &mut [bool],
    ) -> MixtureStep {
        let m = chains.len();
        if steps.is_multiple_of(MIXTURE_AFTER) || self.mixes.is_empty() {
            self.mixes = fit_left_out(&chains.theta, chains.d, &self.mixes);
            self.cache = QCache::new(m, chains.d);
            self.since_fit = (0, 0);
            self.paused = false;
        }
        if self.paused {
            return MixtureStep::default();
        }
        let st = step(
            target,
            &self.mixes,
            fits,
            chains,
            gamma,
            (moved, &mut self.cache),
        );
        let mixes = &self.mixes;
        let ms = self.stats.get_or_insert_with(|| MixtureStats {
            shares: mixes
                .iter()
                .flatten()
                .next()
                .map_or(Vec::new(), Mixture::shares),
            ..MixtureStats::default()
        });
        ms.proposals += st.evaluations;
        ms.accepted += st.accepted;
        self.since_fit.0 += st.evaluations;
        self.since_fit.1 += st.accepted;
        let (p, a) = self.since_fit;
        if p >= m && (a as f64) < PAUSE_BELOW * p as f64 {
            self.paused = true;
        }
        st
    }

    /// The stage's counts, with the shares of its start and end clouds
    /// under its last fit (None when the move never ran).
    pub fn finish(self, start: &[f64], end: &[f64]) -> Option<MixtureStats> {
        let mut ms = self.stats?;
        if let Some(mix) = self.mixes.iter().flatten().next() {
            ms.held = mix.responsibilities(start);
            ms.reached = mix.responsibilities(end);
        }
        Some(ms)
    }
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
    (moved, cache): (&mut [bool], &mut QCache),
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
        .zip(cache.log_q.par_chunks_mut(BLOCK))
        .zip(cache.at.par_chunks_mut(BLOCK * d))
        .enumerate()
        .map(
            |(blk, ((((((((((th, rk), lp), rngs), sk), mv), wh), jac), fold), lq), at))| {
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
                // log q at the proposals, and at the current states whose
                // cache is not of them (other moves, radial ones included,
                // move chains without telling), by GEMMs per group's mixture.
                let mut lq_new = vec![0.0; c];
                let mut rows = Vec::new();
                let mut vals = Vec::new();
                for (g, mix) in mixes.iter().enumerate() {
                    let Some(mix) = mix.as_ref() else {
                        continue;
                    };
                    let of_g: Vec<usize> = (0..c)
                        .filter(|&i| group_of(blk * BLOCK + proposing[i], m) == g)
                        .collect();
                    if of_g.is_empty() {
                        continue;
                    }
                    rows.clear();
                    of_g.iter()
                        .for_each(|&i| rows.extend_from_slice(&prop[i * d..(i + 1) * d]));
                    vals.resize(of_g.len(), 0.0);
                    mix.log_densities(&rows, &mut vals);
                    for (&i, &v) in of_g.iter().zip(&vals) {
                        lq_new[i] = v;
                    }
                    let stale: Vec<usize> = of_g
                        .iter()
                        .map(|&i| proposing[i])
                        .filter(|&j| {
                            lq[j].is_nan() || at[j * d..(j + 1) * d] != th[j * d..(j + 1) * d]
                        })
                        .collect();
                    rows.clear();
                    stale
                        .iter()
                        .for_each(|&j| rows.extend_from_slice(&th[j * d..(j + 1) * d]));
                    vals.resize(stale.len(), 0.0);
                    mix.log_densities(&rows, &mut vals);
                    for (&j, &v) in stale.iter().zip(&vals) {
                        lq[j] = v;
                        at[j * d..(j + 1) * d].copy_from_slice(&th[j * d..(j + 1) * d]);
                    }
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
                    let new = &prop[i * d..(i + 1) * d];
                    let cur = &th[j * d..(j + 1) * d];
                    let lp_new = target.log_prior(new);
                    let log_alpha = -gamma * (risk[i] - rk[j]) + lp_new - lp[j] + lq[j] - lq_new[i];
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
                        lq[j] = lq_new[i];
                        at[j * d..(j + 1) * d].copy_from_slice(new);
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
#[path = "mixture_tests.rs"]
mod tests;
