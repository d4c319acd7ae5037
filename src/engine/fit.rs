//! What an engine returns: a scoring model, posterior summaries and diagnostics.

use nalgebra::DMatrix;
use serde::{Deserialize, Serialize};

use super::event::{Event, Histogram};

/// A threshold weak ranker `alpha · 1{x_feature > threshold}` (RankBoost).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stump {
    pub feature: usize,
    pub threshold: f64,
    pub alpha: f64,
}

/// How a fit scores new (standardised) rows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ScoreModel {
    /// `s(x) = <w, x>`.
    Linear { weights: Vec<f64> },
    /// `s(x) = Σ alpha · 1{x_k > t}`.
    Stumps { stumps: Vec<Stump> },
    /// A Gaussian-process score: the predictive mean (ALGORITHMS.md §6).
    Gp(Box<crate::engine::gp::GpModel>),
}

impl ScoreModel {
    pub fn score(&self, x: &DMatrix<f64>) -> Vec<f64> {
        match self {
            ScoreModel::Linear { weights } => linear_scores(x, weights),
            ScoreModel::Stumps { stumps } => {
                let mut s = vec![0.0; x.nrows()];
                for st in stumps {
                    for (i, si) in s.iter_mut().enumerate() {
                        if x[(i, st.feature)] > st.threshold {
                            *si += st.alpha;
                        }
                    }
                }
                s
            }
            ScoreModel::Gp(model) => model.predict_mean(x),
        }
    }
}

/// A covariance of θ kept in factored form, `diag(diag) + factor · core · factorᵀ`
/// (`factor` d × k, `core` k × k symmetric, possibly indefinite): exact for
/// EP's reduced (d ≥ n) form, where the full d × d matrix would be large.
#[derive(Debug, Clone, PartialEq)]
pub struct LowRankCov {
    pub diag: Vec<f64>,
    pub factor: DMatrix<f64>,
    pub core: DMatrix<f64>,
}

/// Weighted particles (rows of `theta`); `weights` None = equal weights.
#[derive(Debug, Clone)]
pub struct Particles {
    pub theta: DMatrix<f64>,
    pub weights: Option<Vec<f64>>,
    /// Each particle's own decision threshold on the score, where the model has
    /// one (the label-noise loss: minus its intercept); None: none of their own.
    pub thresholds: Option<Vec<f64>>,
}

/// One run of several, as the record keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    /// 1, 2, …, R.
    pub run: usize,
    /// The seed that reruns this run alone.
    pub seed: u64,
    pub log_z: f64,
    /// Tempering stages (after the prior draw).
    pub stages: usize,
    /// Move steps over all stages.
    pub moves: usize,
    pub risk_evaluations: u64,
    pub seconds: f64,
    /// Mean AUC risk of the final cloud.
    pub mean_risk: f64,
    /// Every stage's moves decorrelated the particles (the single run's check).
    pub converged: bool,
    pub mean: Vec<f64>,
    pub sd: Vec<f64>,
}

/// log Ẑ across runs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LogZRuns {
    /// Mean and sd (R − 1) of the runs' log Ẑ.
    pub mean: f64,
    pub sd: f64,
    /// Monte Carlo standard error of `mean`: sd/√R.
    pub mcse: f64,
    /// log of the mean of the Ẑ_r: the pooled estimate (the fit's log evidence).
    pub pooled: f64,
}

/// Diagnostics across R ≥ 2 independent runs of a sampler (SMC's `runs`; the
/// record's `runs` section): each run, and how far they agree.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IndependentRuns {
    pub count: usize,
    /// How the clouds were pooled: "equal" (see the module doc).
    pub pooling: String,
    pub runs: Vec<RunSummary>,
    pub log_z: LogZRuns,
    /// Rank-normalised R-hat of every coefficient across the runs' clouds
    /// (`mcmc_diag::rhat_unsplit`; None where undefined, e.g. a constant).
    pub rhat: Vec<Option<f64>>,
    /// The same for the particles' AUC risk.
    pub rhat_risk: Option<f64>,
    /// The largest of them, and whose it is (a coefficient's name or "risk").
    pub rhat_max: Option<f64>,
    pub rhat_worst: Option<String>,
    /// Monte Carlo standard error of every posterior mean: the sd of the runs'
    /// means over √R; and its ratio to the pooled posterior sd.
    pub mcse: Vec<f64>,
    pub mcse_over_sd: Vec<Option<f64>>,
    /// Effective number of runs if they were weighted ∝ Ẑ_r: (ΣẐ)²/ΣẐ².
    pub z_weight_runs: f64,
    /// Mean AUC risk of the pooled cloud.
    pub mean_risk: f64,
}

impl IndependentRuns {
    /// The largest MCSE/sd over the coefficients.
    pub fn mcse_over_sd_max(&self) -> Option<f64> {
        self.mcse_over_sd.iter().flatten().copied().reduce(f64::max)
    }

    /// The runs whose own convergence check failed.
    pub fn not_converged(&self) -> Vec<&RunSummary> {
        self.runs.iter().filter(|r| !r.converged).collect()
    }
}

/// One run of several made apart (`--run r` of `--runs R`) as its record keeps
/// it. The cloud is the sampler's own persisted state: opaque here, read back
/// only by the sampler that wrote it (`smc::runs::pool_parts`), so the core
/// names no method's types.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunPart {
    /// r (from 1) of `runs`.
    pub run: usize,
    pub runs: usize,
    /// The run's SMC seed.
    pub seed: u64,
    pub cloud: serde_json::Value,
}

/// Which method made a fit (the record's `engine`, as on the command line).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EngineKind {
    Smc,
    Ep,
    Vb,
    Gcs,
    Logit,
    Rankboost,
}

impl EngineKind {
    /// The method's name ("smc", "ep", …).
    pub fn as_str(self) -> &'static str {
        match self {
            EngineKind::Smc => "smc",
            EngineKind::Ep => "ep",
            EngineKind::Vb => "vb",
            EngineKind::Gcs => "gcs",
            EngineKind::Logit => "logit",
            EngineKind::Rankboost => "rankboost",
        }
    }
}

impl std::fmt::Display for EngineKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A cross-validation as the quality checks read it (the record's
/// `details.cv` has it all): the parameter, the points tried ascending, their
/// mean held-out AUC (None: failed in some fold), how many were dropped, the
/// points added below the grid, and the choice.
#[derive(Debug, Clone, PartialEq)]
pub struct CvSummary {
    pub parameter: String,
    pub grid: Vec<f64>,
    pub mean_auc: Vec<Option<f64>>,
    pub dropped: usize,
    pub extended_below: Vec<f64>,
    pub chosen: f64,
}

/// A method's finding about its own fit, typed for the quality checks
/// (`quality::assess` words it as a coded warning; the record's `details` and
/// `trace` carry the same for readers).
#[derive(Debug, Clone, PartialEq)]
pub enum MethodReport {
    /// Spike-and-slab: no feature's inclusion above ½ (EP's all-spike fixed
    /// point, perhaps); the warning the engine gave, in its words.
    AllSpike { words: String },
    /// EP: the answer is power EP's at α < 1 (Minka 2004), not EP's;
    /// `ep_failure`: why EP's own fit gave none (None: the user's α).
    PowerEp {
        alpha: f64,
        ep_failure: Option<String>,
    },
    /// GP: the automatic Nyström landmarks stopped at their budget before the
    /// share of the prior variance they leave out fell to the criterion.
    LandmarkBudget {
        landmarks: usize,
        residual_trace_share: f64,
        criterion: Option<f64>,
    },
    /// EP: the work of the final fit (sweeps over `sites` pair sites in the
    /// `form` of dimension `rank`, site storage where it is chosen).
    EpWork {
        sweeps: usize,
        sites: usize,
        form: &'static str,
        rank: usize,
        site_storage: Option<&'static str>,
    },
    /// A sampler of the Gibbs posterior of `loss` (`auc`: the AUC risk's):
    /// its draws' mean empirical risk, E_π R_n of the certificate.
    SampledRisk { loss: &'static str, mean_risk: f64 },
    /// A tempering sampler's stages against its own stop rule: a stage
    /// converged when every |correlation| is at most `decorrelation` and at
    /// most `max_duplicated` of the `particles` are unmoved copies.
    TemperingStages {
        particles: usize,
        decorrelation: f64,
        max_duplicated: f64,
        /// Every stage in order (of every run, when there are several).
        stages: Vec<StageCheck>,
    },
    /// SMC: the prior path flagged a phase jump in `stages` (stage, share at
    /// its start, at its end), and the fit is a second run tempered from its
    /// final cloud's Gaussian (`smc::phase_rerun`); `run`: which of several
    /// independent runs (None: the only run).
    PhaseJumpRerun {
        run: Option<usize>,
        stages: Vec<(usize, f64, f64)>,
        prior_path_log_z: f64,
        rerun_log_z: f64,
    },
}

/// One tempering stage, as the quality checks read it.
#[derive(Debug, Clone, PartialEq)]
pub struct StageCheck {
    /// The independent run it belongs to, from 1 (several runs only).
    pub run: Option<usize>,
    /// 0 is the draw from the prior.
    pub stage: usize,
    pub moves: usize,
    pub max_correlation: f64,
    /// Share of the particles that are unmoved copies of another.
    pub duplicated: f64,
    /// ESS / N of the reweighted cloud before resampling.
    pub ess_frac: f64,
    /// (start, end) share of a phase the stage's mixture move found that the
    /// stage's incoming cloud held too little of (`smc::mixture::MixtureStats::jump`).
    pub phase_jump: Option<(f64, f64)>,
}

/// The result of a run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Fit {
    pub engine: EngineKind,
    pub names: Vec<String>,
    /// The score used for AUCs (posterior mean for Bayesian engines).
    pub model: ScoreModel,
    /// Posterior mean and sd per coefficient (empty for non-linear models).
    pub mean: Vec<f64>,
    pub sd: Vec<f64>,
    /// Posterior 2.5/25/50/75/97.5% quantiles per coefficient, where known.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub quantiles: Vec<[f64; 5]>,
    /// Other point scores worth evaluating (e.g. "marginal_mode"), by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub alt_models: Vec<(String, ScoreModel)>,
    pub log_evidence: Option<f64>,
    /// γ of the posterior (chosen by the engine when tuned); None for baselines.
    pub gamma: Option<f64>,
    /// The prior as used (with tuned hyper-parameters); None for baselines.
    pub prior: Option<crate::engine::Prior>,
    /// P(z_k = 1 | D) per feature (spike-and-slab).
    pub inclusion: Option<Vec<f64>>,
    /// Final per-coefficient posterior histograms (sampling engines).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub histograms: Vec<Histogram>,
    pub converged: bool,
    /// The engine's events in order.
    pub trace: Vec<Event>,
    /// Engine-specific results (CV curves, chosen hyper-parameters, …).
    pub details: serde_json::Value,
    /// The PAC-Bayes certificate (`engine::certify`), for Bayesian fits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bound: Option<super::bounds::certificate::Bound>,
    /// Several independent runs (SMC's `runs`): each run and the diagnostics
    /// across them (the posterior above is their pooled cloud).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runs: Option<IndependentRuns>,
    #[serde(skip)]
    pub covariance: Option<DMatrix<f64>>,
    /// The covariance in factored form, where `covariance` would be large.
    #[serde(skip)]
    pub low_rank_covariance: Option<LowRankCov>,
    #[serde(skip)]
    pub particles: Option<Particles>,
    /// The method's typed findings (not in the record: `details` has them).
    #[serde(skip)]
    pub reports: Vec<MethodReport>,
    /// The cross-validation that chose a parameter, if one did (not in the
    /// record: `details.cv` has it).
    #[serde(skip)]
    pub cv: Option<CvSummary>,
    /// One run of several made apart (`--run r` of `--runs R`): its whole
    /// cloud, for `pacauc merge`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub part: Option<RunPart>,
}

/// Standard normal quantiles at `Fit::quantiles`' levels (2.5, 25, 50, 75, 97.5%).
const Z_QUANTILES: [f64; 5] = [
    -1.959_963_984_540_054,
    -0.674_489_750_196_081_7,
    0.0,
    0.674_489_750_196_081_7,
    1.959_963_984_540_054,
];

impl Fit {
    /// Gaussian marginals per coefficient: `mean`, `sd` and their quantiles.
    pub fn set_normal_marginals(&mut self, mean: Vec<f64>, sd: Vec<f64>) {
        self.quantiles = mean
            .iter()
            .zip(&sd)
            .map(|(&m, &s)| Z_QUANTILES.map(|z| m + z * s))
            .collect();
        self.mean = mean;
        self.sd = sd;
    }

    /// A fit with just a score model; engines fill in the rest.
    pub fn new(engine: EngineKind, names: Vec<String>, model: ScoreModel) -> Fit {
        Fit {
            engine,
            names,
            model,
            mean: Vec::new(),
            sd: Vec::new(),
            quantiles: Vec::new(),
            alt_models: Vec::new(),
            log_evidence: None,
            gamma: None,
            prior: None,
            inclusion: None,
            histograms: Vec::new(),
            converged: true,
            trace: Vec::new(),
            details: serde_json::Value::Null,
            bound: None,
            runs: None,
            covariance: None,
            low_rank_covariance: None,
            particles: None,
            reports: Vec::new(),
            cv: None,
            part: None,
        }
    }
}

/// Rows per block of `linear_scores`.
const SCORE_BLOCK: usize = 1 << 14;

/// `x · w` summed per row as nalgebra's gemv sums it (`x_i0 w_0`, then
/// `+ x_ik w_k` in order), by blocks of rows on the thread pool: the bits of
/// `x * w` whatever the threads (at 10⁷ rows the serial product was ≈ 0.5 s
/// of each evaluation).
pub fn linear_scores(x: &DMatrix<f64>, w: &[f64]) -> Vec<f64> {
    use rayon::prelude::*;
    let (n, d) = x.shape();
    assert_eq!(w.len(), d, "one weight per column");
    let mut out = vec![0.0; n];
    let xs = x.as_slice();
    out.par_chunks_mut(SCORE_BLOCK)
        .enumerate()
        .for_each(|(b, o)| {
            let r0 = b * SCORE_BLOCK;
            for (k, &wk) in w.iter().enumerate() {
                let col = &xs[k * n + r0..][..o.len()];
                if k == 0 {
                    for (v, xv) in o.iter_mut().zip(col) {
                        *v = xv * wk;
                    }
                } else {
                    for (v, xv) in o.iter_mut().zip(col) {
                        *v += xv * wk;
                    }
                }
            }
        });
    out
}

#[cfg(test)]
mod tests {
    /// The blocked scores are nalgebra's product, bit for bit.
    #[test]
    fn linear_scores_are_the_product() {
        let n = 3 * super::SCORE_BLOCK + 11;
        let x =
            nalgebra::DMatrix::from_fn(n, 7, |i, j| ((i * 17 + j * 3) as f64 * 0.29).sin() * 1e3);
        let w: Vec<f64> = (0..7).map(|k| (k as f64 * 1.3).cos() / 3.0).collect();
        let want = &x * nalgebra::DVector::from_column_slice(&w);
        let got = super::linear_scores(&x, &w);
        assert!(
            got.iter()
                .zip(want.iter())
                .all(|(a, b)| a.to_bits() == b.to_bits())
        );
    }
}
