//! A cold start of EP on very many pairs from a pair sample's fixed point.
//!
//! Why: parallel EP from the prior overshoots when γ is large. Each site is
//! updated as if alone, so the first sweep moves the mean by ~γ·(mean of the
//! a_ij), far beyond the fixed point; rejected sweeps then cut η, and every
//! sweep of the crawl that follows runs over all the pairs.
//!
//! Instead: EP on a uniform sample of `START_PAIRS` pairs (`pairs::PairSample`,
//! g = γ/B; its posterior is close to the all-pairs one) to a loose
//! tolerance, then every site of the full problem computed from that q's
//! marginals as the cavity (one undamped pass from zero sites: with g = γ/M
//! tiny a site barely changes its own marginal), q rebuilt from them, and the
//! usual sweeps from there. Only the start changes: the fixed point and the
//! convergence test are those of a cold run. If the sampled run fails or the
//! start is invalid (a cavity, Q not positive definite), EP starts from the
//! prior, and says so. Measured: BENCHMARKS ep-sampled-start21.

use serde::Serialize;

use nalgebra::DMatrix;

use super::{EpSettings, PairEp};
use crate::engine::ep::posterior::{self, Posterior, PriorTerms};
use crate::engine::ep::store::Precision;
use crate::engine::interface::{Control, EngineError};
use crate::engine::pairs::PairSample;

/// Pairs of the sample the start is computed on.
pub const START_PAIRS: usize = 1 << 20;
/// Runs on at least this many pairs start from a sample.
pub const START_MIN_PAIRS: usize = 32 * START_PAIRS;
/// The sampled run's tolerance (its fixed point is only a start).
const START_TOL: f64 = 1e-2;
/// Seed of the start's sample (fixed: the start does not depend on the run's seed).
const START_SEED: u64 = 0x5a17;

/// What the start did, for the record.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SampledStart {
    pub pairs: usize,
    pub sweeps: usize,
    pub tol: f64,
    pub seconds: f64,
    /// The start was used (else EP started from the prior), and why not.
    pub used: bool,
    pub note: String,
}

impl PairEp {
    /// Sites from q0's marginals as cavities (one undamped pass from the zero
    /// sites of a cold state), then q rebuilt from them; false (and the state
    /// back at the prior) when a cavity is invalid or Q is not positive definite.
    pub(crate) fn start_from(&mut self, q0: &Posterior, g: f64) -> bool {
        assert!(self.sites_are_zero(), "a start needs a cold state");
        posterior::marginals(&self.zp, &self.zn, q0, &mut self.marg);
        self.marg_stale = false;
        self.q = Some(q0.clone());
        // (No log Z of this intermediate state.)
        let stats = self.pass_from_q(g, Some(1.0), false);
        let ok = stats.bad == 0 && {
            self.accept_trial();
            self.rebuild(self.step(g))
        };
        if ok {
            self.forget_rollback();
        } else {
            self.reset();
        }
        ok
    }

    /// The rows of each class and the prior terms.
    fn problem(&self) -> (&DMatrix<f64>, &DMatrix<f64>, &PriorTerms) {
        (&self.zp, &self.zn, &self.prior)
    }
}

/// Runs EP on a sample of `START_PAIRS` pairs of `ep`'s problem at step factor
/// γ/B and starts `ep` (cold, all pairs) from its fixed point.
pub(crate) fn sampled_start(
    ep: &mut PairEp,
    gamma: f64,
    s: &EpSettings,
    ctl: &Control,
) -> Result<SampledStart, EngineError> {
    let t0 = std::time::Instant::now();
    let (zp, zn, prior) = ep.problem();
    let sample = PairSample::draw(zp.nrows(), zn.nrows(), START_PAIRS, START_SEED, &[]);
    let mut small = PairEp::sampled(
        zp.clone(),
        zn.clone(),
        sample,
        prior.clone(),
        Precision::F64,
    )
    .map_err(EngineError::Numerical)?;
    small.set_evidence_every_sweep(false);
    let settings = EpSettings {
        tol: s.tol.max(START_TOL),
        ..*s
    };
    let mut report = SampledStart {
        pairs: START_PAIRS,
        sweeps: 0,
        tol: settings.tol,
        seconds: 0.0,
        used: false,
        note: String::new(),
    };
    match small.run(gamma / START_PAIRS as f64, &settings, ctl, &mut |_| {}) {
        Ok(out) => {
            report.sweeps = out.sweeps;
            let q0 = small.posterior().expect("converged").clone();
            drop(small);
            report.used = ep.start_from(&q0, gamma / ep.pairs() as f64);
            report.note = if report.used {
                "all sites computed from the sample's fixed point, then EP as usual".into()
            } else {
                "the sample's fixed point gave an invalid start: EP started from the prior".into()
            };
        }
        Err(EngineError::NotConverged { message, .. }) => {
            report.note = format!("the sampled run failed ({message}): EP started from the prior");
        }
        Err(e) => return Err(e),
    }
    report.seconds = t0.elapsed().as_secs_f64();
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::ep::kernel::Excluded;
    use crate::engine::ep::tests::{split, toy};

    /// The start only changes where EP begins: the fixed point reached from a
    /// pair sample's start is the cold run's (tight tolerance), at a large γ
    /// where the cold run's first sweeps overshoot.
    #[test]
    fn a_sampled_start_reaches_the_cold_fixed_point() {
        let (x, y) = toy(400, 6, 37, 0.7);
        let (xp, xn) = split(&x, &y);
        let new = || {
            PairEp::new(
                xp.clone(),
                xn.clone(),
                Excluded::none(xp.nrows()),
                PriorTerms::centred(&[1.0; 6]),
                Precision::F64,
            )
            .unwrap()
        };
        let s = EpSettings {
            tol: 1e-9,
            ..EpSettings::default()
        };
        let gamma = 4.0 * 400.0;
        let ctl = Control::new();
        let mut cold = new();
        let g = gamma / cold.pairs() as f64;
        let oc = cold.run(g, &s, &ctl, &mut |_| {}).unwrap();
        let mut warm = new();
        let st = sampled_start(&mut warm, gamma, &s, &ctl).unwrap();
        assert!(st.used && st.sweeps > 0, "{st:?}");
        assert!(!warm.sites_are_zero());
        let ow = warm.run(g, &s, &ctl, &mut |_| {}).unwrap();
        assert!(!ow.cold_restart);
        let (qc, qw) = (cold.posterior().unwrap(), warm.posterior().unwrap());
        for (k, sd) in qc.sd().into_iter().enumerate() {
            assert!((qc.m[k] - qw.m[k]).abs() < 1e-6 * sd, "mean {k}");
            assert!((qw.v[(k, k)].sqrt() / sd - 1.0).abs() < 1e-6, "sd {k}");
        }
        let (zc, zw) = (oc.evidence.log_z().unwrap(), ow.evidence.log_z().unwrap());
        assert!((zc - zw).abs() < 1e-6 * zc.abs(), "{zc} vs {zw}");
        // The start saves sweeps here too (the cold run overshoots at 4n).
        assert!(ow.sweeps < oc.sweeps, "{} vs {}", ow.sweeps, oc.sweeps);
    }
}
