//! What a stage's Gaussian fits are estimated from. The fit's sample size sets
//! how well a near-independence move works in high dimension (DNA at γ = 300,
//! d = 180, Ledoit–Wolf fits: acceptance 0.37 from 7 500 draws, 0.46 from
//! 15 000, 0.55 from 30 000). Besides the cloud, the previous stage's chains
//! passed through states that are just as valid draws of that stage's target:
//! a few snapshots of them, reweighted with the cloud for the next target,
//! multiply the fit's sample at no risk evaluation. Snapshots of chain j
//! belong to chain j's family, so the cross-fit leaves them out with it.
//!
//! At γ = n on DNA the fit's sample is no longer the limit (issue 29, measured
//! at γ = 1200 with `--threads 1`): 8 snapshots instead of 3 (Ledoit–Wolf λ
//! 0.15 instead of 0.55–0.63) raised neither the acceptance nor cut the
//! moves per stage (the early stages took up to 1.75× more); less shrinkage (λ × 0.5) or a wider proposal (covariance
//! × 1.21, Student-t ν = 10) needed 1.3–4× the moves in the early stages.
//! Every coordinate's correlation with its stage start decays alike and by a
//! power law (median 0.39 after 10 moves, 0.16 after 30 at γ ≈ 2100): the
//! global proposals are accepted at ≈ 0.24 on average (from the first move's
//! drop) but rarely from the chains where π/q is large — the posterior's
//! departure from a Gaussian, not the fit's noise. That departure is not
//! smooth either (`left_behind`: no function of the state that a cloud of
//! 10 000 can fit predicts log π/q), so the fit's shape is not the lever.

use std::collections::VecDeque;

use rayon::prelude::*;

use super::fold_quantiles::FoldBins;
use super::gaussian_fit::{CrossFit, FIT_FOLDS, GaussianFit};
use super::marginal_map::MarginalMaps;
use super::moves::Kernel;
use super::skew_test::quantile_skewness_binned;
use super::sphere::SphereChart;

/// Snapshots kept per stage (besides the final cloud).
pub const SNAPSHOTS: usize = 3;
/// Memory allowed for snapshots (bytes).
const SNAPSHOT_BYTES: usize = 256 << 20;
/// Particles per fold below which a stage uses one fit of every particle.
const MIN_FOLD: usize = 64;
/// Chains per dimension from which a stage takes no snapshots: the cloud
/// alone fits well enough. A covariance estimated from S effective draws is
/// off by ≈ 2√(d/S) in the whitened operator norm; with N ≥ 400·d chains and
/// the stage weights' ESS ≥ N/2 that is ≤ 0.14 (Pima, d = 7, N = 10 000:
/// 0.075), where more draws no longer buy acceptance, and a copula knot's
/// quantile at Φ(−2.5) is known to ≈ 0.06 in z. Below it (DNA d = 180,
/// the 85-column survey files) the snapshots stay: there the fit's sample
/// sets the acceptance (module doc). On Pima the snapshots' fits were 15%
/// of an SMC run's CPU.
const CHAINS_PER_DIM_NO_SNAPSHOTS: usize = 400;

/// Clouds of chain states taken every `stride` steps during a stage's moves
/// (standard SMC; waste-free clouds hold every state already).
#[derive(Debug, Default)]
pub struct Snapshots {
    stride: usize,
    keep: usize,
    taken: VecDeque<(usize, Vec<f64>, Vec<f64>)>,
}

impl Snapshots {
    /// Up to `SNAPSHOTS` (within the memory budget) at a quarter of the moves
    /// the previous stage needed; none from `CHAINS_PER_DIM_NO_SNAPSHOTS`
    /// chains per dimension.
    pub fn plan(prev_steps: usize, chains: usize, d: usize) -> Snapshots {
        let fit = SNAPSHOT_BYTES / (chains * d * 8).max(1);
        let enough = chains >= CHAINS_PER_DIM_NO_SNAPSHOTS * d;
        Snapshots {
            stride: (prev_steps / (SNAPSHOTS + 1)).max(1),
            keep: if enough { 0 } else { SNAPSHOTS.min(fit) },
            taken: VecDeque::new(),
        }
    }

    /// After move `step`: keeps the chains' states if it is a snapshot step.
    pub fn offer(&mut self, step: usize, theta: &[f64], risk: &[f64]) {
        if self.keep == 0 || !step.is_multiple_of(self.stride) {
            return;
        }
        if self.taken.len() == self.keep {
            self.taken.pop_front();
        }
        self.taken.push_back((step, theta.to_vec(), risk.to_vec()));
    }

    /// The snapshots far enough from the last move (`steps`) to add
    /// information: (θ of every snapshot concatenated, their risks).
    pub fn finish(self, steps: usize) -> (Vec<f64>, Vec<f64>) {
        let near = self.stride.div_ceil(2);
        let (mut theta, mut risk) = (Vec::new(), Vec::new());
        for (step, t, r) in self.taken {
            if step + near <= steps {
                theta.extend(t);
                risk.extend(r);
            }
        }
        (theta, risk)
    }
}

/// The cloud and the snapshot pool as one sample: the states, their
/// (unnormalised) weights exp(−δ(R − R_min)) for the stage's increment, and
/// how many clouds that is.
fn pooled(
    cloud: (&[f64], &[f64]),
    pool: (&[f64], &[f64]),
    delta: f64,
) -> (Vec<f64>, Vec<f64>, usize) {
    let clouds = 1 + pool.1.len() / cloud.1.len().max(1);
    let mut theta = Vec::with_capacity(cloud.0.len() + pool.0.len());
    theta.extend_from_slice(cloud.0);
    theta.extend_from_slice(pool.0);
    let risk: Vec<f64> = cloud.1.iter().chain(pool.1).copied().collect();
    let r_min = risk.iter().copied().fold(f64::INFINITY, f64::min);
    let weights = risk.iter().map(|r| (-delta * (r - r_min)).exp()).collect();
    (theta, weights, clouds)
}

/// The stage's Gaussian fits and the fit index of every particle of the cloud.
/// `pool` (θ, risk) holds snapshots laid out like the cloud (family i mod
/// `families`); all are weighted by `exp(−δ R)` for the stage's target. A
/// cross-fit (see `gaussian_fit`) when the families fill the folds, else one
/// fit of everything.
fn stage_fits(
    cloud: (&[f64], &[f64]),
    pool: (&[f64], &[f64]),
    delta: f64,
    d: usize,
    families: usize,
) -> (Vec<GaussianFit>, Vec<usize>) {
    let n = cloud.1.len();
    let (theta, mut weights, clouds) = pooled(cloud, pool, delta);
    let total: f64 = weights.iter().sum();
    weights.iter_mut().for_each(|w| *w /= total);
    if families < MIN_FOLD * FIT_FOLDS {
        return (vec![GaussianFit::of(&theta, d, &weights)], vec![0; n]);
    }
    let redundancy = clouds as f64 / effective_clouds(&theta, n, d, clouds);
    let cf = CrossFit::of(&theta, d, &weights, families, FIT_FOLDS, redundancy);
    let fold = (0..n).map(|i| cf.fold_of(i)).collect();
    (cf.fits, fold)
}

/// Smallest |quantile skewness| (see `skew_test::quantile_skewness`) of a
/// coordinate that makes the SkewCopula kernel map. Measured
/// (docs/BENCHMARKS.md, "SMC's default kernel at 85 features"): DNA's
/// coordinates stay below 0.08 and Credit's below 0.11 at every stage and in
/// every fold; adult's rare categories pass 0.15 from γ ≈ 700–800 (where
/// gpcn's step size starts to fall) and reach 0.35; the statistic's noise on
/// a fold's share of the cloud (effective size ≈ 3 700) is ≈ 0.02.
pub const SKEW_MIN: f64 = 0.15;

/// Cloud states per dimension from which the copula's maps and fits are
/// cross-fitted on two halves instead of `FIT_FOLDS` folds: each half then
/// holds ≥ `CHAINS_PER_DIM_NO_SNAPSHOTS`·d states, where a fit's noise is
/// ≤ 0.14 (see there) and more draws no longer buy acceptance. Each fold's
/// maps and fit see the rows outside it, so four folds map and fit 3n rows
/// and two halves n: on Pima (d = 7, 10 000 states) the four folds' maps and
/// fits were ≈ 40% of what the default cost beyond gpcn. Measured there
/// (fixed benchmark, seeds 4–23): copula stages' acceptance 0.636 → 0.629,
/// converged 17 → 18 of 20, log Z −64.552 ± 0.040 → −64.551 ± 0.042.
const STATES_PER_DIM_HALVES: usize = 2 * CHAINS_PER_DIM_NO_SNAPSHOTS;

/// The copula's folds (skew test, maps and fits) for a cloud of `n` states
/// of `families` families in dimension d, and the fold of row i (see
/// `CrossFit`): one group (fold 0) when the families do not fill
/// `FIT_FOLDS` folds, two halves from `STATES_PER_DIM_HALVES` states a
/// dimension, else `FIT_FOLDS`.
fn folds_of(families: usize, n: usize, d: usize) -> (usize, impl Fn(usize) -> usize + Sync + Copy) {
    let folds = if families < MIN_FOLD * FIT_FOLDS {
        1
    } else if n >= STATES_PER_DIM_HALVES * d {
        2
    } else {
        FIT_FOLDS
    };
    (folds, move |i: usize| (i % families) * folds / families)
}

/// SkewCopula's choice: per fold, whether some coordinate of the cloud
/// outside it (θ, `weights` its stage weights) is measurably skewed, and how
/// many coordinates some fold found so. One group (in-sample) when the
/// families do not fill the folds. With `keep`, the columns' bins for the
/// copula's knots (see `copula_fits`).
fn skew_decision<'a>(
    cloud: &[f64],
    weights: &'a [f64],
    d: usize,
    folds: usize,
    fold: &'a [usize],
    keep: bool,
) -> (Vec<bool>, usize, Vec<Option<FoldBins<'a>>>) {
    let (skew, bins) = quantile_skewness_binned(cloud, weights, d, folds, fold, keep);
    let skewed = |s: &f64| s.abs() > SKEW_MIN;
    let maps = skew.iter().map(|f| f.iter().any(skewed)).collect();
    let count = (0..d)
        .filter(|&k| skew.iter().any(|f| skewed(&f[k])))
        .count();
    (maps, count, bins)
}

/// The copula's maps and fits: per fold of families, marginal maps and a
/// Gaussian fit of the mapped states, both from the other folds (in-sample
/// maps favour a chain's own state like in-sample fits do, see
/// `gaussian_fit`), and the fold of every particle of the cloud. One map and
/// fit of everything when the families do not fill the folds. A fold whose
/// `map` is false gets identity maps (its chains take gpcn's step).
/// `bins`: the skew test's bins of the cloud's columns, when the fits see
/// the same rows in the same folds (no snapshots); its weights are these
/// up to a constant factor, which moves a knot only where a cumulative
/// weight ties a knot's share to the last bits.
fn copula_fits(
    cloud: (&[f64], &[f64]),
    pool: (&[f64], &[f64]),
    delta: f64,
    d: usize,
    families: usize,
    map: &[bool],
    bins: Option<Vec<Option<FoldBins<'_>>>>,
) -> (Vec<MarginalMaps>, Vec<GaussianFit>, Vec<usize>) {
    let n = cloud.1.len();
    let (theta, weights, clouds) = pooled(cloud, pool, delta);
    let fit_of = |rows: &[f64], w: &[f64], map: bool, redundancy: f64| {
        let coords = if map { (0..d).collect() } else { Vec::new() };
        let maps = MarginalMaps::of_coords(rows, w, d, coords);
        let fit = GaussianFit::of_redundant(&maps.map_rows(rows), d, w, redundancy);
        (maps, fit)
    };
    let (folds, fold_of) = folds_of(families, n, d);
    if folds == 1 {
        let (maps, fit) = fit_of(&theta, &weights, map[0], 1.0);
        return (vec![maps], vec![fit], vec![0; n]);
    }
    let redundancy = clouds as f64 / effective_clouds(&theta, n, d, clouds);
    let fold: Vec<usize> = (0..weights.len()).map(fold_of).collect();
    let (maps, mapped) =
        MarginalMaps::of_folds_mapped(&theta, &weights, d, &fold, &map[..folds], bins);
    let fits: Vec<GaussianFit> = mapped
        .into_par_iter()
        .enumerate()
        .map(|(g, cols)| {
            let keep = |i: &usize| fold[*i] != g;
            let w: Vec<f64> = (0..weights.len())
                .filter(keep)
                .map(|i| weights[i])
                .collect();
            if let Some(cols) = cols {
                return GaussianFit::of_columns(&cols, &w, redundancy);
            }
            // A fold without maps moves by gpcn: its fit is of θ itself.
            let rows: Vec<f64> = (0..weights.len())
                .filter(keep)
                .flat_map(|i| theta[i * d..(i + 1) * d].iter().copied())
                .collect();
            GaussianFit::of_redundant(&rows, d, &w, redundancy)
        })
        .collect();
    (maps, fits, (0..n).map(fold_of).collect())
}

/// What a stage's chains move with (see `stage_proposal`).
#[derive(Debug)]
pub struct StageProposal {
    /// The kernel of the stage's steps: SkewCopula runs as Copula (identity
    /// maps in the folds that found no skewed coefficient), or as Gpcn when
    /// no fold found one.
    pub kernel: Kernel,
    /// The Gaussian fits (none for Pcn), chains of particle i using
    /// `fits[fold_of[i]]`.
    pub fits: Vec<GaussianFit>,
    pub fold_of: Vec<usize>,
    /// Sphere: the chart the fits are of.
    pub chart: Option<SphereChart>,
    /// Copula kinds: the maps of each fit.
    pub maps: Option<Vec<MarginalMaps>>,
    /// SkewCopula: how many coordinates some fold found skewed (0: the stage
    /// is gpcn; else the folds that found any map every coordinate).
    pub skewed: Option<usize>,
}

/// The stage's proposal for the resolved `kernel`, fitted to the cloud
/// (θ, risk; `weights` its normalised weights for the stage) and the previous
/// stage's snapshots `pool`, reweighted by the increment `delta`. Pcn needs
/// no fit (with d in the thousands its covariance would cost more than the
/// moves); Sphere fits the cloud's directions in a chart at their mean
/// (`prior_sd` given); the copula kinds fit the cloud mapped through its
/// marginal quantiles.
#[allow(clippy::too_many_arguments)]
pub fn stage_proposal(
    kernel: Kernel,
    cloud: (&[f64], &[f64]),
    weights: &[f64],
    pool: (&[f64], &[f64]),
    delta: f64,
    d: usize,
    families: usize,
    prior_sd: Option<&[f64]>,
) -> StageProposal {
    let plain = |kernel, (fits, fold_of)| StageProposal {
        kernel,
        fits,
        fold_of,
        chart: None,
        maps: None,
        skewed: None,
    };
    let copula = |map: &[bool], bins| copula_fits(cloud, pool, delta, d, families, map, bins);
    match (kernel, prior_sd) {
        (Kernel::Pcn, _) => plain(kernel, (Vec::new(), vec![0; cloud.1.len()])),
        (Kernel::Sphere, Some(sd)) => {
            let chart = SphereChart::of(cloud.0, weights, sd);
            let (rows, snaps) = (chart.chart_rows(cloud.0), chart.chart_rows(pool.0));
            let fits = stage_fits((&rows, cloud.1), (&snaps, pool.1), delta, d - 1, families);
            StageProposal {
                chart: Some(chart),
                ..plain(kernel, fits)
            }
        }
        (Kernel::Copula, _) => {
            let (maps, fits, fold_of) = copula(&[true; FIT_FOLDS], None);
            StageProposal {
                maps: Some(maps),
                ..plain(Kernel::Copula, (fits, fold_of))
            }
        }
        (Kernel::SkewCopula, _) => {
            let (folds, fold_of) = folds_of(families, cloud.1.len(), d);
            // Fold g leaves out its own rows: with one group, nothing (fold 1 ≠ 0).
            let fold: Vec<usize> = (0..weights.len())
                .map(|i| if folds == 1 { 1 } else { fold_of(i) })
                .collect();
            // The copula's fits see the skew test's rows and folds when no
            // snapshots join the cloud: the columns are binned once for both.
            let share = folds > 1 && pool.1.is_empty();
            match skew_decision(cloud.0, weights, d, folds, &fold, share) {
                (map, skewed, bins) if map.contains(&true) => {
                    let (maps, fits, fold_of) = copula(&map, share.then_some(bins));
                    StageProposal {
                        maps: Some(maps),
                        skewed: Some(skewed),
                        ..plain(Kernel::Copula, (fits, fold_of))
                    }
                }
                _ => StageProposal {
                    skewed: Some(0),
                    ..plain(Kernel::Gpcn, stage_fits(cloud, pool, delta, d, families))
                },
            }
        }
        _ => plain(kernel, stage_fits(cloud, pool, delta, d, families)),
    }
}

/// How many independent clouds `clouds` chain-aligned clouds of n states are
/// worth: `S²/Σ_ab ρ_ab`, ρ_ab the mean over coordinates of the correlation
/// of cloud a's and cloud b's states of the same chain (ρ_aa = 1).
fn effective_clouds(theta: &[f64], n: usize, d: usize, clouds: usize) -> f64 {
    if clouds == 1 {
        return 1.0;
    }
    let cloud = |a: usize| &theta[a * n * d..(a + 1) * n * d];
    let mut total = clouds as f64;
    for a in 0..clouds {
        for b in a + 1..clouds {
            total += 2.0 * mean_correlation(cloud(a), cloud(b), d).max(0.0);
        }
    }
    (clouds * clouds) as f64 / total
}

/// Mean over coordinates of the correlation between two chain-aligned clouds.
fn mean_correlation(a: &[f64], b: &[f64], d: usize) -> f64 {
    let n = (a.len() / d) as f64;
    let (mut ma, mut mb) = (vec![0.0; d], vec![0.0; d]);
    for (ra, rb) in a.chunks_exact(d).zip(b.chunks_exact(d)) {
        for k in 0..d {
            ma[k] += ra[k] / n;
            mb[k] += rb[k] / n;
        }
    }
    let (mut sab, mut saa, mut sbb) = (vec![0.0; d], vec![0.0; d], vec![0.0; d]);
    for (ra, rb) in a.chunks_exact(d).zip(b.chunks_exact(d)) {
        for k in 0..d {
            let (x, y) = (ra[k] - ma[k], rb[k] - mb[k]);
            sab[k] += x * y;
            saa[k] += x * x;
            sbb[k] += y * y;
        }
    }
    (0..d)
        .map(|k| {
            if saa[k] > 0.0 && sbb[k] > 0.0 {
                sab[k] / (saa[k] * sbb[k]).sqrt()
            } else {
                0.0
            }
        })
        .sum::<f64>()
        / d as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::numerics::rng;

    #[test]
    fn snapshots_keep_the_last_ones_away_from_the_end() {
        let mut s = Snapshots::plan(12, 2, 1);
        assert_eq!((s.stride, s.keep), (3, 3));
        for step in 1..=13 {
            s.offer(step, &[step as f64, 0.0], &[0.0, 0.0]);
        }
        // Steps 3, 6, 9, 12 were offered, the last three kept; 12 is within
        // ⌈3/2⌉ of the end (13) and adds nothing.
        let (theta, risk) = s.finish(13);
        assert_eq!(theta, vec![6.0, 0.0, 9.0, 0.0]);
        assert_eq!(risk.len(), 4);
        // A budget too small for one snapshot keeps none, nor does a cloud
        // of ≥ 400 chains per dimension.
        assert_eq!(Snapshots::plan(12, 1 << 20, 1000).keep, 0);
        assert_eq!(Snapshots::plan(12, 10_000, 7).keep, 0);
        assert_eq!(Snapshots::plan(12, 10_000, 26).keep, 3);
    }

    #[test]
    fn the_copula_folds_halve_on_large_clouds() {
        // Pima's fixed benchmark: 1 000 chains' 10 000 states, d = 7.
        let (folds, fold_of) = folds_of(1000, 10_000, 7);
        assert_eq!(folds, 2);
        assert_eq!(
            (fold_of(0), fold_of(499), fold_of(500), fold_of(1999)),
            (0, 0, 1, 1)
        );
        assert_eq!(folds_of(1000, 10_000, 13).0, FIT_FOLDS);
        assert_eq!(folds_of(10_000, 10_000, 180).0, FIT_FOLDS);
        assert_eq!(folds_of(MIN_FOLD * FIT_FOLDS - 1, 10_000, 1).0, 1);
    }

    #[test]
    fn correlated_clouds_count_for_less() {
        let mut r = rng::stream(4, &[]);
        let (n, d) = (5000, 3);
        let a: Vec<f64> = (0..n * d).map(|_| rng::normal(&mut r)).collect();
        let fresh: Vec<f64> = (0..n * d).map(|_| rng::normal(&mut r)).collect();
        let mut two = a.clone();
        two.extend_from_slice(&fresh);
        assert!((effective_clouds(&two, n, d, 2) - 2.0).abs() < 0.05);
        let mut same = a.clone();
        same.extend_from_slice(&a);
        assert!((effective_clouds(&same, n, d, 2) - 1.0).abs() < 1e-9);
    }
}
