//! What a stage's Gaussian fits are estimated from. The fit's sample size sets
//! how well a near-independence move works in high dimension (DNA at γ = 300,
//! d = 180, Ledoit–Wolf fits: acceptance 0.37 from 7 500 draws, 0.46 from
//! 15 000, 0.55 from 30 000). Besides the cloud, the previous stage's chains
//! passed through states that are just as valid draws of that stage's target:
//! a few snapshots of them, reweighted with the cloud for the next target,
//! multiply the fit's sample at no risk evaluation. Snapshots of chain j
//! belong to chain j's family, so the cross-fit leaves them out with it.

use std::collections::VecDeque;

use rayon::prelude::*;

use super::gaussian_fit::{CrossFit, FIT_FOLDS, GaussianFit};
use super::marginal_map::MarginalMaps;

/// Snapshots kept per stage (besides the final cloud).
pub const SNAPSHOTS: usize = 3;
/// Memory allowed for snapshots (bytes).
const SNAPSHOT_BYTES: usize = 256 << 20;
/// Particles per fold below which a stage uses one fit of every particle.
const MIN_FOLD: usize = 64;

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
    /// the previous stage needed.
    pub fn plan(prev_steps: usize, chains: usize, d: usize) -> Snapshots {
        let fit = SNAPSHOT_BYTES / (chains * d * 8).max(1);
        Snapshots {
            stride: (prev_steps / (SNAPSHOTS + 1)).max(1),
            keep: SNAPSHOTS.min(fit),
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
pub fn stage_fits(
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

/// The Copula kernel's maps and fits: per fold of families, marginal maps and
/// a Gaussian fit of the mapped states, both from the other folds (in-sample
/// maps favour a chain's own state like in-sample fits do, see
/// `gaussian_fit`), and the fold of every particle of the cloud. One map and
/// fit of everything when the families do not fill the folds.
pub fn copula_fits(
    cloud: (&[f64], &[f64]),
    pool: (&[f64], &[f64]),
    delta: f64,
    d: usize,
    families: usize,
) -> (Vec<MarginalMaps>, Vec<GaussianFit>, Vec<usize>) {
    let n = cloud.1.len();
    let (theta, weights, clouds) = pooled(cloud, pool, delta);
    let fit_of = |rows: &[f64], w: &[f64], redundancy: f64| {
        let maps = MarginalMaps::of(rows, w, d);
        let fit = GaussianFit::of_redundant(&maps.map_rows(rows), d, w, redundancy);
        (maps, fit)
    };
    if families < MIN_FOLD * FIT_FOLDS {
        let (maps, fit) = fit_of(&theta, &weights, 1.0);
        return (vec![maps], vec![fit], vec![0; n]);
    }
    let redundancy = clouds as f64 / effective_clouds(&theta, n, d, clouds);
    let fold_of = |i: usize| (i % families) * FIT_FOLDS / families;
    let (maps, fits) = (0..FIT_FOLDS)
        .into_par_iter()
        .map(|g| {
            let keep = |i: &usize| fold_of(*i) != g;
            let rows: Vec<f64> = (0..weights.len())
                .filter(keep)
                .flat_map(|i| theta[i * d..(i + 1) * d].iter().copied())
                .collect();
            let w: Vec<f64> = (0..weights.len())
                .filter(keep)
                .map(|i| weights[i])
                .collect();
            fit_of(&rows, &w, redundancy)
        })
        .unzip();
    (maps, fits, (0..n).map(fold_of).collect())
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
    use crate::engine::rng;

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
        // A budget too small for one snapshot keeps none.
        assert_eq!(Snapshots::plan(12, 1 << 20, 1000).keep, 0);
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
