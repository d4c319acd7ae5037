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
            ScoreModel::Linear { weights } => {
                let w = nalgebra::DVector::from_column_slice(weights);
                (x * w).iter().copied().collect()
            }
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

/// The result of a run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Fit {
    pub engine: String,
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
    pub bound: Option<super::bounds::Bound>,
    /// SMC with several independent runs: each run and the diagnostics across
    /// them (the posterior above is their pooled cloud).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runs: Option<super::smc::runs::SmcRuns>,
    #[serde(skip)]
    pub covariance: Option<DMatrix<f64>>,
    /// The covariance in factored form, where `covariance` would be large.
    #[serde(skip)]
    pub low_rank_covariance: Option<LowRankCov>,
    #[serde(skip)]
    pub particles: Option<Particles>,
    /// One run of several made apart (`SmcSettings::part`): its whole cloud,
    /// for `smc::runs::pool_parts`.
    pub part: Option<super::smc::runs::RunPart>,
}

impl Fit {
    /// A fit with just a score model; engines fill in the rest.
    pub fn new(engine: &str, names: Vec<String>, model: ScoreModel) -> Fit {
        Fit {
            engine: engine.to_string(),
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
            part: None,
        }
    }
}
