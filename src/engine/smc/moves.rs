//! Markov moves that leave the tempered target invariant (ALGORITHMS.md §3 d):
//! random-walk Metropolis with the particles' covariance, prior-preserving pCN,
//! and pCN around the particles' Gaussian fit; plus a free radial move for
//! scale-invariant risks. Every chain draws from its own RNG stream, so the
//! result does not depend on how rayon splits the work.

use rand::RngExt;
use rand_distr::{ChiSquared, Distribution};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::delayed;
use super::direction;
use super::gaussian_fit::GaussianFit;
use super::marginal_map::MarginalMaps;
use super::radial::{Radial, Rewhiten};
use super::sphere::{self, SphereChart};
use super::target::Target;
use crate::engine::numerics::rng::{self, Rng};

/// The Metropolis kernel of the moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kernel {
    /// SkewCopula for a Gaussian prior (Pcn in more than `AUTO_PCN_DIM`
    /// dimensions: there the particles' covariance and its O(d²) products cost
    /// more than they help, and pCN's prior-shaped steps are
    /// dimension-robust); Gpcn for other priors.
    Auto,
    /// Random walk `θ' = θ + c·L z`, `L Lᵀ` = the particles' covariance.
    Rw,
    /// Preconditioned Crank–Nicolson `θ' = ρθ + √(1−ρ²)·ν`, ν from the (Gaussian)
    /// prior: prior-reversible, accepted on the likelihood ratio alone.
    Pcn,
    /// pCN around the particles' Gaussian fit N(m, LLᵀ):
    /// `θ' = m + ρ(θ − m) + √(1−ρ²)·L z`, reversible for that Gaussian (ρ → 0 is an
    /// independence sampler, ρ → 1 a small random walk shaped like the posterior).
    Gpcn,
    /// The direction alone, for scale-invariant risks under a Gaussian prior
    /// (see `sphere`): pCN around a Gaussian fit in the log-map chart at the
    /// particles' mean direction, then an exact χ_d draw of the radius.
    Sphere,
    /// Gpcn after mapping each coordinate through its fitted marginal
    /// quantiles to ≈ N(0, 1) (a Gaussian copula fit; see `marginal_map`):
    /// for skewed marginals (coefficients of rare categories).
    Copula,
    /// Copula in the stages (and folds) where some coordinate's marginal is
    /// measurably skewed (see `fit_pool::SKEW_MIN`), exactly Gpcn elsewhere.
    /// (Mapping only the skewed coordinates was measured and does not
    /// suffice on adult: see docs/BENCHMARKS.md.)
    #[serde(rename = "skew-copula")]
    SkewCopula,
}

/// Dimension above which `Auto` picks pCN (Gaussian priors).
pub const AUTO_PCN_DIM: usize = 400;

impl Kernel {
    /// The kernel `Auto` stands for in dimension d.
    pub fn resolve(self, d: usize, gaussian_prior: bool) -> Kernel {
        match self {
            Kernel::Auto if gaussian_prior && d > AUTO_PCN_DIM => Kernel::Pcn,
            Kernel::Auto if gaussian_prior => Kernel::SkewCopula,
            Kernel::Auto => Kernel::Gpcn,
            k => k,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Kernel::Auto => "auto",
            Kernel::Rw => "rw",
            Kernel::Pcn => "pcn",
            Kernel::Gpcn => "gpcn",
            Kernel::Sphere => "sphere",
            Kernel::Copula => "copula",
            Kernel::SkewCopula => "skew-copula",
        }
    }
    /// Acceptance rate the step size is adapted towards.
    pub fn target_acceptance(self) -> f64 {
        match self {
            Kernel::Rw => 0.25,
            Kernel::Auto
            | Kernel::Pcn
            | Kernel::Gpcn
            | Kernel::Sphere
            | Kernel::Copula
            | Kernel::SkewCopula => 0.3,
        }
    }
    /// Step size at the first stage: c = 2.38/√d for the random walk; for pCN
    /// kinds the innovation share √(1−ρ²).
    pub fn initial_scale(self, d: usize) -> f64 {
        match self {
            Kernel::Rw => 2.38 / (d as f64).sqrt(),
            Kernel::Auto
            | Kernel::Pcn
            | Kernel::Gpcn
            | Kernel::Sphere
            | Kernel::Copula
            | Kernel::SkewCopula => 0.5,
        }
    }
    /// Largest sensible step size.
    pub fn max_scale(self, d: usize) -> f64 {
        match self {
            Kernel::Rw => 10.0 * 2.38 / (d as f64).sqrt(),
            Kernel::Auto
            | Kernel::Pcn
            | Kernel::Gpcn
            | Kernel::Sphere
            | Kernel::Copula
            | Kernel::SkewCopula => 1.0,
        }
    }
}

/// The states of a set of Markov chains (row-major m × d) with their risks, log
/// prior densities and RNG streams.
#[derive(Debug, Clone)]
pub struct Chains {
    pub d: usize,
    pub theta: Vec<f64>,
    /// Whitened states `L⁻¹(θ − m)` (used by the Gpcn kernel).
    /// (Sphere: whitened chart coordinates, d − 1 per chain.)
    pub white: Vec<f64>,
    pub risk: Vec<f64>,
    pub log_prior: Vec<f64>,
    pub rng: Vec<Rng>,
    /// The fit each chain moves with (index into `StepSpec::fits`; chains of
    /// one fit are adjacent).
    pub fold: Vec<usize>,
    /// Delayed acceptance: each chain's surrogate risk S (`Target::surrogate`);
    /// NaN or missing where not known yet (`step` fills it).
    pub surrogate: Vec<f64>,
    /// Copula: each chain's log T'(θ) under its fit's maps, as `map_row`
    /// gives it (the whitening computes it); NaN or missing where not known
    /// (the proposal then maps the state again).
    pub jac: Vec<f64>,
}

impl Chains {
    /// Fills `white` for the Gpcn kernel (zeros without fits: unused).
    pub fn whiten(&mut self, fits: &[GaussianFit]) {
        self.whiten_mapped(fits, None);
    }

    /// Fills `white` with `L⁻¹(T(θ) − m)`, T the marginal maps of the chain's
    /// fit (Copula) or the identity.
    pub fn whiten_mapped(&mut self, fits: &[GaussianFit], maps: Option<&[MarginalMaps]>) {
        let d = self.d;
        self.white.clear();
        self.white.resize(self.theta.len(), 0.0);
        self.jac.clear();
        self.jac.resize(self.len(), f64::NAN);
        if !fits.is_empty() {
            self.white
                .par_chunks_mut(CHAIN_BLOCK * d)
                .zip(self.theta.par_chunks(CHAIN_BLOCK * d))
                .zip(self.fold.par_chunks(CHAIN_BLOCK))
                .zip(self.jac.par_chunks_mut(CHAIN_BLOCK))
                .for_each_init(Rewhiten::default, |rw, (((w, t), fold), jac)| {
                    rw.chains.clear();
                    rw.chains.extend(0..fold.len());
                    rw.run(fits, maps, fold, t, (w, jac), d);
                });
        }
    }

    pub fn len(&self) -> usize {
        self.risk.len()
    }
    pub fn is_empty(&self) -> bool {
        self.risk.is_empty()
    }
}

/// Buffers for one step's proposals, one per block of chains, reused across steps.
#[derive(Debug, Default)]
pub struct Proposals {
    blocks: Vec<BlockBuf>,
}

#[derive(Debug, Default)]
pub(super) struct BlockBuf {
    pub(super) theta: Vec<f64>,
    pub(super) white: Vec<f64>,
    pub(super) risk: Vec<f64>,
    pub(super) log_prior: Vec<f64>,
    /// Proposal-density correction of the log acceptance ratio (Gpcn, Sphere).
    pub(super) correction: Vec<f64>,
    pub(super) log_u: Vec<f64>,
    pub(super) accepted: Vec<bool>,
    /// Chains whose proposal is a direction step (see `direction`).
    pub(super) direction: Vec<bool>,
    /// Sum of squared jumps of the block's chains.
    pub(super) jump2: f64,
    /// The block's normals or new whitened states (c × d).
    pub(super) z: Vec<f64>,
    /// B packed for the products with the factor.
    pub(super) pack: Vec<f64>,
    /// Scratch of the radial moves (and of the Sphere chart).
    pub(super) nat: Vec<f64>,
    pub(super) scaled: Vec<f64>,
    /// The proposed particle of a ray move (`radial`).
    pub(super) ray: Vec<f64>,
    rewhiten: Rewhiten,
    /// Delayed acceptance (see `delayed`): the proposals' S, the second
    /// stage's uniforms, the chains S passed and their proposals and risks.
    pub(super) surrogate: Vec<f64>,
    pub(super) log_u2: Vec<f64>,
    pub(super) passed: Vec<usize>,
    pub(super) passed_theta: Vec<f64>,
    pub(super) passed_risk: Vec<f64>,
    /// Full risk evaluations of the block's last step.
    pub(super) full: usize,
}

impl BlockBuf {
    /// Sizes the buffers for a block of `c` chains with states of `d`
    /// coordinates moved in `e` whitened ones.
    pub(super) fn size(&mut self, c: usize, d: usize, e: usize) {
        self.theta.resize(c * d, 0.0);
        self.white.resize(c * e, 0.0);
        self.risk.resize(c, 0.0);
        self.log_prior.resize(c, 0.0);
        self.correction.resize(c, 0.0);
        self.log_u.resize(c, 0.0);
        self.accepted.resize(c, false);
        self.direction.clear();
        self.direction.resize(c, false);
        self.z.resize(c * e, 0.0);
    }
}

impl Proposals {
    /// Per chain, in order: whether the last step's proposal was accepted.
    pub fn accepted(&self) -> impl Iterator<Item = bool> + '_ {
        self.blocks.iter().flat_map(|b| b.accepted.iter().copied())
    }
}

/// One step's settings.
#[derive(Debug, Clone, Copy)]
pub struct StepSpec<'a> {
    pub kernel: Kernel,
    pub gamma: f64,
    pub scale: f64,
    /// The particles' Gaussian fits, chain j moving with `fits[fold[j]]` (Rw
    /// and Gpcn; Pcn needs none).
    pub fits: &'a [GaussianFit],
    /// Follow the Metropolis step by a radial move (scale-invariant risks).
    pub radial: bool,
    /// The chart of the Sphere kernel (its fits are of chart coordinates).
    pub chart: Option<&'a SphereChart>,
    /// The marginal maps of the Copula kernel, one per fit (its fits are of
    /// mapped θ).
    pub maps: Option<&'a [MarginalMaps]>,
    /// Gpcn and Copula: degrees of freedom ν of a Student-t proposal in the
    /// whitened coordinates instead of the Gaussian (see `student_scale`).
    pub df: Option<f64>,
    /// Gpcn and Copula: the share of local proposals (`SmcSettings::local_share`).
    pub local_share: f64,
    /// Gpcn (no maps, no Student-t) on a scale-invariant risk under a
    /// zero-mean Gaussian prior: the global proposals at step size 1 (the
    /// fit's independence proposal) are judged on the direction alone (see
    /// `direction`).
    pub direction: bool,
}

/// Outcome of one step over all chains.
#[derive(Debug, Clone, Copy)]
pub struct StepStats {
    pub accepted: usize,
    /// Mean squared jump distance (Euclidean), over chains.
    pub esjd: f64,
    /// Full risk evaluations (the proposals, or with a surrogate those it passed).
    pub full_evaluations: usize,
}

/// Chains handled together by a rayon task (fixed: results do not depend on it).
const CHAIN_BLOCK: usize = 64;

/// The chains of a step's rayon task: the multiple of the target's batch
/// (`Target::batch`) nearest `CHAIN_BLOCK`, so that the risks run in full
/// batches. The chains' draws and products do not depend on it (per-chain
/// streams; `packed_gemm`'s bits do not depend on block sizes); only the
/// rounding of the reported jump sum does.
fn chain_block(batch: Option<usize>) -> usize {
    match batch {
        Some(b) if b > 0 => ((CHAIN_BLOCK + b / 2) / b).max(1) * b,
        _ => CHAIN_BLOCK,
    }
}

/// One Metropolis step of every chain, in place (then a radial move if asked):
/// each block of chains is proposed, evaluated and accepted by one rayon task,
/// so a step costs a single fork-join and its data stay in cache.
pub fn step<T: Target + ?Sized>(
    target: &T,
    chains: &mut Chains,
    buf: &mut Proposals,
    spec: StepSpec<'_>,
) -> StepStats {
    let (m, d) = (chains.len(), chains.d);
    // Whitened states matter to Gpcn and Sphere only; the others carry them
    // along unused. Sphere's are chart coordinates: d − 1 per chain.
    let chart = match spec.kernel {
        Kernel::Sphere => Some(spec.chart.expect("the sphere kernel needs its chart")),
        _ => None,
    };
    let e = chart.map_or(d, SphereChart::dim);
    assert_eq!(
        chains.white.len(),
        m * e,
        "chains need their whitened states"
    );
    match spec.kernel {
        Kernel::Auto => panic!("resolve Kernel::Auto before stepping"),
        Kernel::SkewCopula => panic!("step SkewCopula as Copula or Gpcn (see `fit_pool`)"),
        Kernel::Copula if spec.maps.is_none() => panic!("the copula kernel needs its maps"),
        Kernel::Rw | Kernel::Gpcn | Kernel::Sphere | Kernel::Copula if spec.fits.is_empty() => {
            panic!(
                "the {} kernel needs the particles' Gaussian fit",
                spec.kernel.name()
            )
        }
        _ => assert_eq!(chains.fold.len(), m, "every chain needs its fold"),
    }
    let fits = if spec.kernel == Kernel::Pcn {
        &[][..]
    } else {
        spec.fits
    };
    // Sphere draws the radius itself (its step keeps it).
    let radial = Radial::new(target, d, spec.radial && chart.is_none());
    let surrogate = target.surrogate();
    delayed::know_surrogate(surrogate, chains);
    if chains.jac.len() != m {
        chains.jac = vec![f64::NAN; m];
    }
    let cb = chain_block(target.batch());
    buf.blocks.resize_with(m.div_ceil(cb), BlockBuf::default);
    chains
        .theta
        .par_chunks_mut(cb * d)
        .zip(chains.white.par_chunks_mut(cb * e))
        .zip(chains.risk.par_chunks_mut(cb))
        .zip(chains.log_prior.par_chunks_mut(cb))
        .zip(chains.rng.par_chunks_mut(cb))
        .zip(chains.fold.par_chunks(cb))
        .zip(chains.surrogate.par_chunks_mut(cb))
        .zip(chains.jac.par_chunks_mut(cb))
        .zip(buf.blocks.par_iter_mut())
        .for_each(|((((((((th, wh), rk), lp), rngs), fold), sk), jac), bb)| {
            let c = rk.len();
            match chart {
                Some(ch) => sphere::propose(ch, spec.scale, fits, fold, th, wh, rngs, bb),
                None => propose(target, spec, fits, fold, (&*th, &*jac), wh, rngs, bb, d),
            }
            match surrogate {
                Some(sur) => {
                    let chain = delayed::Block { th, wh, rk, lp, sk };
                    delayed::accept(target, sur, spec, chain, rngs, bb, (d, e));
                }
                None => {
                    target.risks(&bb.theta, &mut bb.risk);
                    bb.full = c;
                    accept(spec, th, wh, rk, lp, bb, (d, e));
                }
            }
            // A chain that took its proposal has its log T' to find again.
            for (j, _) in bb.accepted[..c].iter().enumerate().filter(|a| *a.1) {
                jac[j] = f64::NAN;
            }
            if let Some(ch) = chart {
                sphere::refresh_radius(ch, th, rngs);
                for (l, t) in lp.iter_mut().zip(th.chunks_exact(d)) {
                    *l = target.log_prior(t);
                }
            }
            if let Some(radial) = &radial {
                bb.rewhiten.chains.clear();
                for j in 0..c {
                    if radial.apply(
                        target,
                        fits.get(fold[j])
                            .map(|f| (f, spec.maps.map(|m| &m[fold[j]]))),
                        &mut th[j * d..(j + 1) * d],
                        &mut wh[j * d..(j + 1) * d],
                        (&mut lp[j], &mut rk[j], spec.gamma),
                        &mut rngs[j],
                        bb,
                    ) {
                        bb.rewhiten.chains.push(j);
                    }
                }
                bb.rewhiten
                    .run(fits, spec.maps, fold, th, (&mut *wh, &mut *jac), d);
            }
        });
    let accepted = buf
        .blocks
        .iter()
        .map(|b| b.accepted.iter().filter(|&&a| a).count())
        .sum();
    let esjd = buf.blocks.iter().map(|b| b.jump2).sum::<f64>() / m.max(1) as f64;
    let full_evaluations = buf.blocks.iter().map(|b| b.full).sum();
    StepStats {
        accepted,
        esjd,
        full_evaluations,
    }
}

/// Proposals of one block of chains, each from its own stream: the normals
/// first, then one block product with the fit's factor (Rw, Gpcn).
#[allow(clippy::too_many_arguments)]
fn propose<T: Target + ?Sized>(
    target: &T,
    spec: StepSpec<'_>,
    fits: &[GaussianFit],
    fold: &[usize],
    (th, jac): (&[f64], &[f64]),
    wh: &[f64],
    rngs: &mut [Rng],
    bb: &mut BlockBuf,
    d: usize,
) {
    let c = rngs.len();
    bb.size(c, d, d);
    let s = spec.scale;
    let rho = (1.0 - s * s).max(0.0).sqrt();
    let local_step = s.min(2.38 / (d as f64).sqrt());
    let local_rho = (1.0 - local_step * local_step).max(0.0).sqrt();
    let direction = spec.direction
        && spec.kernel == Kernel::Gpcn
        && spec.maps.is_none()
        && spec.df.is_none()
        && rho == 0.0;
    // ‖θ/√v‖² = 2(log p(0) − log p(θ)) under N(0, diag v).
    let lp0 = if direction {
        bb.nat.clear();
        bb.nat.resize(d, 0.0);
        target.log_prior(&bb.nat)
    } else {
        0.0
    };
    for (j, r) in rngs.iter_mut().enumerate() {
        let z = &mut bb.z[j * d..(j + 1) * d];
        match spec.kernel {
            Kernel::Rw => z.iter_mut().for_each(|v| *v = rng::normal(r)),
            Kernel::Auto | Kernel::Pcn | Kernel::Sphere | Kernel::SkewCopula => {
                // (Auto, Sphere and SkewCopula never get here: `step`
                // refuses or routes them.)
                let out = &mut bb.theta[j * d..(j + 1) * d];
                target.sample_prior(r, out);
                for (o, &c) in out.iter_mut().zip(&th[j * d..(j + 1) * d]) {
                    *o = rho * c + s * *o;
                }
            }
            Kernel::Gpcn | Kernel::Copula => {
                let w = &wh[j * d..(j + 1) * d];
                // A mixture of two pCN steps, each reversible for the fit: the
                // choice does not look at the state, so the mixture is exact.
                let local = spec.local_share > 0.0 && r.random::<f64>() < spec.local_share;
                let (s_j, rho_j) = if local {
                    (local_step, local_rho)
                } else {
                    (s, rho)
                };
                bb.direction[j] = direction && !local;
                let sd = s_j * spec.df.map_or(1.0, |nu| student_scale(nu, w, r).sqrt());
                for (v, wi) in z.iter_mut().zip(w) {
                    *v = rho_j * wi + sd * rng::normal(r);
                }
            }
        }
        let u: f64 = r.random();
        bb.log_u[j] = u.ln();
    }
    if !fits.is_empty() {
        // One block product per run of chains sharing a fit.
        let mut a = 0;
        while a < c {
            let b = a + fold[a..].iter().take_while(|&&f| f == fold[a]).count();
            fits[fold[a]].l_times_rows(
                &bb.z[a * d..b * d],
                b - a,
                &mut bb.theta[a * d..b * d],
                &mut bb.pack,
            );
            a = b;
        }
    }
    for j in 0..c {
        let out = &mut bb.theta[j * d..(j + 1) * d];
        let cur = &th[j * d..(j + 1) * d];
        match spec.kernel {
            Kernel::Rw => {
                for (o, &c) in out.iter_mut().zip(cur) {
                    *o = c + s * *o;
                }
                bb.correction[j] = 0.0;
            }
            Kernel::Auto | Kernel::Pcn | Kernel::Sphere | Kernel::SkewCopula => {
                bb.correction[j] = 0.0
            }
            Kernel::Gpcn | Kernel::Copula => {
                for (o, mk) in out.iter_mut().zip(&fits[fold[j]].mean) {
                    *o += mk;
                }
                if bb.direction[j] {
                    let fit = &fits[fold[j]];
                    bb.correction[j] = direction_step(
                        fit,
                        out,
                        &bb.z[j * d..(j + 1) * d],
                        &wh[j * d..(j + 1) * d],
                        &mut bb.white[j * d..(j + 1) * d],
                        (lp0, target.log_prior(cur)),
                        |t| target.log_prior(t),
                        &mut bb.scaled,
                    );
                    bb.log_prior[j] = target.log_prior(out);
                    continue;
                }
                let z = &bb.z[j * d..(j + 1) * d];
                let w2_old: f64 = wh[j * d..(j + 1) * d].iter().map(|v| v * v).sum();
                let w2_new: f64 = z.iter().map(|v| v * v).sum();
                bb.white[j * d..(j + 1) * d].copy_from_slice(z);
                // log q(θ) − log q(θ'), q the fit (Gaussian or Student-t).
                bb.correction[j] = match spec.df {
                    None => 0.5 * (w2_new - w2_old),
                    Some(nu) => {
                        0.5 * (nu + d as f64)
                            * ((1.0 + w2_new / nu).ln() - (1.0 + w2_old / nu).ln())
                    }
                };
                if let Some(maps) = spec.maps.map(|m| &m[fold[j]]) {
                    // Back from the mapped coordinates, with the maps'
                    // Jacobians: log T'(θ) − log T'(θ').
                    let jac_new = maps.unmap_row(out);
                    let jac_old = if jac[j].is_nan() {
                        bb.nat.clear();
                        bb.nat.extend_from_slice(cur);
                        maps.map_row(&mut bb.nat)
                    } else {
                        jac[j]
                    };
                    bb.correction[j] += jac_old - jac_new;
                }
            }
        }
        bb.log_prior[j] = target.log_prior(out);
    }
}

/// A direction step's proposal (see `direction`): `out` = m + Lz on entry,
/// rescaled to the current state's prior radius on exit, its whitened state
/// written to `white`; returns log q(u) − log q(u'), or −∞ (refused) for a
/// degenerate proposal. `lp` = (log p(0), log p(current)).
#[allow(clippy::too_many_arguments)]
fn direction_step(
    fit: &GaussianFit,
    out: &mut [f64],
    z: &[f64],
    white_cur: &[f64],
    white: &mut [f64],
    (lp0, lp_cur): (f64, f64),
    log_prior: impl Fn(&[f64]) -> f64,
    scratch: &mut Vec<f64>,
) -> f64 {
    let radius = |lp: f64| (2.0 * (lp0 - lp)).max(0.0).sqrt();
    let (r_cur, r_new) = (radius(lp_cur), radius(log_prior(out)));
    if !(r_new > 0.0 && r_new.is_finite() && r_cur > 0.0) {
        return f64::NEG_INFINITY;
    }
    let wm = &fit.white_mean;
    // L⁻¹θ = w + L⁻¹m, for the current state and the proposal.
    scratch.clear();
    scratch.extend(white_cur.iter().zip(wm).map(|(w, m)| w + m));
    let log_q_cur = direction::log_direction_density(scratch, wm, r_cur);
    scratch.clear();
    scratch.extend(z.iter().zip(wm).map(|(w, m)| w + m));
    let log_q_new = direction::log_direction_density(scratch, wm, r_new);
    let f = r_cur / r_new;
    out.iter_mut().for_each(|v| *v *= f);
    for ((w, t), m) in white.iter_mut().zip(scratch.iter()).zip(wm) {
        *w = f * t - m;
    }
    log_q_cur - log_q_new
}

/// The Student-t proposal's scale for a chain at whitened state w: a draw of
/// s | w ~ InvGamma((ν + d)/2, (ν + ‖w‖²)/2), the conditional of the scale
/// mixture t_ν = ∫ N(0, s I) InvGamma(s; ν/2, ν/2) ds. Given s, pCN with
/// innovation variance s is reversible for N(0, s I); with s refreshed from
/// its conditional first, the pair leaves t_ν invariant, and the Metropolis
/// ratio for the target π is π(w')t(w)/(π(w)t(w')) (Nishihara, Murray &
/// Adams 2014, the generalised elliptical slice sampler's augmentation). Why:
/// an independence-like proposal cannot move a state where π/q is large, and
/// a t's wider spread of ‖w‖ bounds π/q on both sides of the Gaussian's shell;
/// a chain far out (or far in) draws larger (or smaller) steps.
fn student_scale(nu: f64, w: &[f64], r: &mut Rng) -> f64 {
    let w2: f64 = w.iter().map(|v| v * v).sum();
    let chi: f64 = ChiSquared::new(nu + w.len() as f64)
        .expect("ν + d > 0")
        .sample(r);
    (nu + w2) / chi
}

/// Metropolis decisions of one block (`dims`: θ's d and the whitened
/// states' stride).
fn accept(
    spec: StepSpec<'_>,
    th: &mut [f64],
    wh: &mut [f64],
    rk: &mut [f64],
    lp: &mut [f64],
    bb: &mut BlockBuf,
    (d, e): (usize, usize),
) {
    bb.jump2 = 0.0;
    for j in 0..rk.len() {
        let like = -spec.gamma * (bb.risk[j] - rk[j]);
        let ok = bb.log_u[j] < log_alpha(spec, bb, lp, j, like);
        bb.accepted[j] = ok;
        if ok {
            take(j, th, wh, rk, lp, bb, (d, e));
        }
    }
}

/// log α of chain j's proposal given the risk term `like` (−γ ΔR): the
/// prior and proposal terms of its kernel added.
pub(super) fn log_alpha(spec: StepSpec<'_>, bb: &BlockBuf, lp: &[f64], j: usize, like: f64) -> f64 {
    match spec.kernel {
        _ if bb.direction[j] => like + bb.correction[j],
        Kernel::Auto | Kernel::Pcn | Kernel::SkewCopula => like,
        Kernel::Rw => like + bb.log_prior[j] - lp[j],
        Kernel::Gpcn | Kernel::Copula => like + bb.log_prior[j] - lp[j] + bb.correction[j],
        // The radius is kept and the direction's prior is uniform: the
        // correction holds the proposal and chart Jacobian ratios.
        Kernel::Sphere => like + bb.correction[j],
    }
}

/// Chain j takes its proposal (with `bb.risk[j]` its risk).
pub(super) fn take(
    j: usize,
    th: &mut [f64],
    wh: &mut [f64],
    rk: &mut [f64],
    lp: &mut [f64],
    bb: &mut BlockBuf,
    (d, e): (usize, usize),
) {
    let (cur, new) = (&mut th[j * d..(j + 1) * d], &bb.theta[j * d..(j + 1) * d]);
    bb.jump2 += cur
        .iter()
        .zip(new)
        .map(|(a, b)| (a - b) * (a - b))
        .sum::<f64>();
    cur.copy_from_slice(new);
    wh[j * e..(j + 1) * e].copy_from_slice(&bb.white[j * e..(j + 1) * e]);
    rk[j] = bb.risk[j];
    lp[j] = bb.log_prior[j];
}

#[cfg(test)]
#[path = "moves_tests.rs"]
mod tests;
