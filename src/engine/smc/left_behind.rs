//! Which chains a stage's near-independence moves leave behind, and why a
//! smoother proposal would not take them along.
//!
//! With gpcn's step at its cap the global moves are independence draws from
//! the stage's fit q, and a chain at θ leaves at a rate ≈ E_q[min(1, w'/w)],
//! w = π/q. Chains where w is large wait long, so the cloud's correlation
//! with its stage start falls like a power of the moves, not geometrically
//! (issue 29). Measured on DNA at its defaults (γ from 11 to n = 2390, every
//! stage's chains dumped at the stage's end; 10 000 chains, half to fit, half
//! to test):
//! - sd of log w over the chains: 0.3 at γ = 11, 0.8 at 98, 1.5 at 463,
//!   1.6–1.8 from γ ≈ 1000.
//! - log w is not a smooth function of the state. Out-of-sample R² from
//!   γ ≈ 100 on: ≤ 0.02 for a linear + diagonal quadratic fit in the whitened
//!   coordinates (in the Cholesky frame and in the cloud's eigenbasis), 0.01–0.06
//!   for the best function of ‖w‖² (binned means: all a Student-t, a defensive
//!   t mixture or a rescaled covariance can change), ≤ 0 for k nearest
//!   neighbours (k = 1, 10, 50: at d = 180 a chain's nearest neighbour is 15.6
//!   whitened units away against 19.0 for an independent pair). The chains'
//!   whitened covariance is the identity within its sampling noise.
//! - The chains left behind are the high-w ones: ≈ 8% of chains end a stage
//!   less than half an independent draw away from their start; of the
//!   stage-start top 1% of log w, 50–75%; of the bottom three quarters, ≤ 5%
//!   (as recorded here, BENCHMARKS `smc-dna-n`: ≤ 8.7% per stage, ≤ 45% of
//!   the top tenth).
//!
//! So the spread of log w is the AUC risk's roughness (a step function of θ
//! with ~10⁶ pair steps), not a shape a mixture, heavier tails or a low-rank
//! correction can fit; and a cheap smooth surrogate has nothing to screen
//! for delayed acceptance. `LeftBehind` records both figures per stage.

use serde::{Deserialize, Serialize};

use super::moves::{Chains, Kernel};

/// Share of the chains with the largest log w at the stage's start over
/// which `LeftBehind::unjumped_high` is taken.
pub const HIGH_SHARE: f64 = 0.1;

/// Per stage: how many chains the moves left near their start, and the
/// spread of the importance weights that explains it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LeftBehind {
    /// Share of the chains whose whitened state moved less than half as far
    /// as an independent draw's (‖Δw‖² < e against 2e, e whitened coordinates).
    pub unjumped: f64,
    /// The same over the chains with the `HIGH_SHARE` largest log w at the
    /// stage's start (gpcn stages).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unjumped_high: Option<f64>,
    /// sd of log w = log π − log q over the chains at the stage's end, within
    /// each fit (gpcn stages; other kernels move in charts or mapped
    /// coordinates whose Jacobians this leaves out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_weight_sd: Option<f64>,
}

/// One end of a stage's moves: every chain's whitened state (e coordinates
/// each), risk and log prior density.
#[derive(Debug, Clone, Copy)]
pub struct Ends<'a> {
    pub white: &'a [f64],
    pub risk: &'a [f64],
    pub log_prior: &'a [f64],
}

/// `measure` for a stage's chains moved by `kernel` from `start` (None for
/// kernels without whitened states: rw, pcn).
pub fn of_stage(
    kernel: Kernel,
    gamma: f64,
    start: Ends<'_>,
    chains: &Chains,
) -> Option<LeftBehind> {
    let end = Ends {
        white: &chains.white,
        risk: &chains.risk,
        log_prior: &chains.log_prior,
    };
    matches!(kernel, Kernel::Gpcn | Kernel::Copula | Kernel::Sphere)
        .then(|| measure(gamma, start, end, &chains.fold, kernel == Kernel::Gpcn))
}

/// The statistics of a stage at tempering `gamma`, chain j moving with fit
/// `fold[j]`. `weights`: the whitened states are the fit's own, so log q =
/// −‖w‖²/2 + a constant per fit (gpcn).
pub fn measure(
    gamma: f64,
    start: Ends<'_>,
    end: Ends<'_>,
    fold: &[usize],
    weights: bool,
) -> LeftBehind {
    let m = start.risk.len();
    assert!(m > 0 && end.risk.len() == m && fold.len() == m);
    let e = start.white.len() / m;
    let stuck: Vec<bool> = start
        .white
        .chunks_exact(e)
        .zip(end.white.chunks_exact(e))
        .map(|(a, b)| a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum::<f64>() < e as f64)
        .collect();
    let share = |idx: &[usize]| idx.iter().filter(|&&j| stuck[j]).count() as f64 / idx.len() as f64;
    let all: Vec<usize> = (0..m).collect();
    let mut out = LeftBehind {
        unjumped: share(&all),
        unjumped_high: None,
        log_weight_sd: None,
    };
    if weights {
        let w0 = centred_log_weights(gamma, start, fold);
        let w1 = centred_log_weights(gamma, end, fold);
        let k = ((HIGH_SHARE * m as f64).ceil() as usize).clamp(1, m);
        let mut high = all;
        high.sort_by(|&i, &j| w0[j].total_cmp(&w0[i]).then(i.cmp(&j)));
        high.truncate(k);
        out.unjumped_high = Some(share(&high));
        out.log_weight_sd = Some((w1.iter().map(|v| v * v).sum::<f64>() / m as f64).sqrt());
    }
    out
}

/// log π − log q per chain, less the mean of its fit's chains (log q's
/// normalising constant differs between fits).
fn centred_log_weights(gamma: f64, ends: Ends<'_>, fold: &[usize]) -> Vec<f64> {
    let m = ends.risk.len();
    let e = ends.white.len() / m;
    let mut lw: Vec<f64> = (0..m)
        .map(|j| {
            let w2: f64 = ends.white[j * e..(j + 1) * e].iter().map(|v| v * v).sum();
            -gamma * ends.risk[j] + ends.log_prior[j] + 0.5 * w2
        })
        .collect();
    let fits = fold.iter().max().map_or(0, |f| f + 1);
    let (mut sum, mut count) = (vec![0.0; fits], vec![0usize; fits]);
    for (v, &f) in lw.iter().zip(fold) {
        sum[f] += v;
        count[f] += 1;
    }
    for (v, &f) in lw.iter_mut().zip(fold) {
        *v -= sum[f] / count[f] as f64;
    }
    lw
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_the_chains_that_stayed_and_the_weights_spread() {
        // 4 chains in 2 coordinates; chains 0 and 1 jump by ‖Δw‖² = 8 ≥ 2,
        // chain 2 by 1 < 2, chain 3 not at all.
        let w0 = [0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0];
        let w1 = [2.0, 2.0, -1.0, -1.0, 1.0, 0.0, 0.0, 0.0];
        let zeros = [0.0; 4];
        // Start log w (γ = 1, prior 0): −R + ‖w‖²/2 = [0, 1, −3, −2]: chain 1
        // has the largest, and it jumped.
        let start = Ends {
            white: &w0,
            risk: &[0.0, 0.0, 3.0, 2.0],
            log_prior: &zeros,
        };
        let end = Ends {
            white: &w1,
            risk: &[4.0, 1.0, 0.0, 0.0],
            log_prior: &zeros,
        };
        let one_fit = [0; 4];
        let lb = measure(1.0, start, end, &one_fit, true);
        assert_eq!(lb.unjumped, 0.5);
        assert_eq!(lb.unjumped_high, Some(0.0));
        // End log w: [0, 0, 0.5, 0]: mean 1/8, Σ dev² = 3·(1/8)² + (3/8)² = 0.1875.
        let sd = lb.log_weight_sd.unwrap();
        assert!((sd - (0.1875f64 / 4.0).sqrt()).abs() < 1e-12, "{sd}");
        // Each fit centres its own chains: end log w [0, 1, 1, 0] is 0 in
        // fit 0 (chains 0, 3) and 1 in fit 1 (chains 1, 2), so no spread
        // is left (0.5 pooled without the centring).
        let end_equal = Ends {
            risk: &[4.0, 0.0, 0.0, 0.0],
            log_prior: &[0.0, 0.0, 0.5, 0.0],
            ..end
        };
        let two_fits = [0, 1, 1, 0];
        let lb = measure(1.0, start, end_equal, &two_fits, true);
        assert_eq!(lb.log_weight_sd, Some(0.0));
        // Without weights only the displacement is measured.
        let lb = measure(1.0, start, end, &one_fit, false);
        assert_eq!((lb.unjumped_high, lb.log_weight_sd), (None, None));
    }
}
