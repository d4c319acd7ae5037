//! Delayed acceptance (Christen & Fox 2005) in the Metropolis moves: a
//! proposal first faces the surrogate S of the risk (`Target::surrogate`, the
//! AUC risk on a row subsample), log α₁ = −γ(S' − S) + the kernel's prior and
//! proposal terms; only those that pass pay the full risk R, and face
//! log α₂ = −γ[(R' − R) − (S' − S)] with a second uniform. The pair of stages
//! is a Metropolis–Hastings kernel whose proposal is "q, then accepted by
//! stage 1", and stage 2 is exactly its acceptance ratio for the tempered
//! target (the proposal and prior terms cancel), so the chains keep the same
//! invariant law whatever S is; a rough S only lowers stage 2's acceptance.

use rand::RngExt;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::moves::{BlockBuf, Chains, StepSpec, log_alpha, take};
use super::sampler::StageInfo;
use super::target::Target;
use crate::engine::numerics::rng::Rng;

/// One block's chain states (θ, whitened, risk, log prior, surrogate).
pub(super) struct Block<'a> {
    pub th: &'a mut [f64],
    pub wh: &'a mut [f64],
    pub rk: &'a mut [f64],
    pub lp: &'a mut [f64],
    pub sk: &'a mut [f64],
}

/// Makes `chains.surrogate` hold S of every chain when there is a surrogate
/// (computed for the chains where it is unknown: at the first step of a
/// stage, after resampling), NaN otherwise (unused).
pub(super) fn know_surrogate(surrogate: Option<&dyn Target>, chains: &mut Chains) {
    let (m, d) = (chains.len(), chains.d);
    chains.surrogate.resize(m, f64::NAN);
    let Some(s) = surrogate else {
        chains.surrogate.iter_mut().for_each(|v| *v = f64::NAN);
        return;
    };
    if chains.surrogate.iter().any(|v| v.is_nan()) {
        chains
            .surrogate
            .par_chunks_mut(64)
            .zip(chains.theta.par_chunks(64 * d))
            .for_each(|(out, th)| s.risks(th, out));
    }
}

/// The two-stage decisions of one block whose proposals are in `bb`; the
/// stage-2 uniforms come from each chain's stream after its proposal's draws.
pub(super) fn accept<T: Target + ?Sized>(
    target: &T,
    surrogate: &dyn Target,
    spec: StepSpec<'_>,
    b: Block<'_>,
    rngs: &mut [Rng],
    bb: &mut BlockBuf,
    (d, e): (usize, usize),
) {
    let c = b.rk.len();
    bb.surrogate.resize(c, 0.0);
    surrogate.risks(&bb.theta, &mut bb.surrogate);
    bb.log_u2.clear();
    bb.passed.clear();
    bb.passed_theta.clear();
    for (j, r) in rngs.iter_mut().enumerate() {
        let u: f64 = r.random();
        bb.log_u2.push(u.ln());
        let like = -spec.gamma * (bb.surrogate[j] - b.sk[j]);
        if bb.log_u[j] < log_alpha(spec, bb, b.lp, j, like) {
            bb.passed.push(j);
            bb.passed_theta
                .extend_from_slice(&bb.theta[j * d..(j + 1) * d]);
        }
    }
    // One batch of full evaluations for the proposals S passed.
    bb.passed_risk.resize(bb.passed.len(), 0.0);
    target.risks(&bb.passed_theta, &mut bb.passed_risk);
    bb.full = bb.passed.len();
    bb.jump2 = 0.0;
    bb.accepted[..c].iter_mut().for_each(|a| *a = false);
    for i in 0..bb.passed.len() {
        let (j, r_new) = (bb.passed[i], bb.passed_risk[i]);
        let log_alpha2 = -spec.gamma * ((r_new - b.rk[j]) - (bb.surrogate[j] - b.sk[j]));
        if bb.log_u2[j] < log_alpha2 {
            bb.accepted[j] = true;
            bb.risk[j] = r_new;
            take(j, b.th, b.wh, b.rk, b.lp, bb, (d, e));
            b.sk[j] = bb.surrogate[j];
        }
    }
}

/// What delayed acceptance did in one stage's moves.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DelayedStats {
    pub proposals: usize,
    /// Proposals that passed the surrogate and paid a full risk evaluation.
    pub full_evaluations: usize,
    /// Proposals accepted by both stages.
    pub accepted: usize,
}

impl DelayedStats {
    /// Share of the proposals the surrogate refused (no full evaluation).
    pub fn stage1_rejected(&self) -> f64 {
        1.0 - self.full_evaluations as f64 / self.proposals.max(1) as f64
    }
    /// Share of the full evaluations the second stage accepted.
    pub fn stage2_acceptance(&self) -> f64 {
        self.accepted as f64 / self.full_evaluations.max(1) as f64
    }
}

/// Stage-2 acceptance below which the record and a warning say the surrogate
/// is rough at the run's γ (γ·sd of S − R differences well above 1).
pub const ROUGH_STAGE2: f64 = 0.5;

/// The record's note on delayed acceptance over a run's stages, and a
/// warning when its last stage's second-stage acceptance was poor.
pub fn summary(rows: usize, n: usize, path: &[StageInfo]) -> (serde_json::Value, Option<String>) {
    let all: Vec<DelayedStats> = path.iter().filter_map(|s| s.surrogate).collect();
    let sum = |f: fn(&DelayedStats) -> usize| all.iter().map(f).sum::<usize>();
    let total = DelayedStats {
        proposals: sum(|s| s.proposals),
        full_evaluations: sum(|s| s.full_evaluations),
        accepted: sum(|s| s.accepted),
    };
    let last = all.last().copied();
    let warning = last
        .filter(|l| l.full_evaluations > 0 && l.stage2_acceptance() < ROUGH_STAGE2)
        .map(|l| {
            format!(
                "delayed acceptance: at the last stage the full risk refused {:.0}% of the \
                 proposals the {rows}-row surrogate passed (γ·sd of the surrogate's error \
                 ≫ 1 there): more rows (--surrogate-rows) may save time",
                100.0 * (1.0 - l.stage2_acceptance())
            )
        });
    let note = serde_json::json!({
        "rows": rows,
        "of_rows": n,
        "proposals": total.proposals,
        "full_evaluations": total.full_evaluations,
        "stage1_rejected": total.stage1_rejected(),
        "stage2_acceptance": total.stage2_acceptance(),
        "last_stage_stage2_acceptance": last.map(|l| l.stage2_acceptance()),
        "rough": warning.is_some(),
        "rule": "delayed acceptance (Christen & Fox 2005): a proposal first faces the risk on a \
                 class-stratified row subsample and pays the full risk only if it passes; exact \
                 for the tempered target. full_evaluations are of the moves (the prior draws' \
                 N are counted in risk_evaluations)",
    });
    (note, warning)
}
