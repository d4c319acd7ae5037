//! `RunSpec`: everything that defines one run — the data options, the method
//! and its settings, γ and the prior — as plain serde data. Every front end
//! (`pacauc fit`, the run form, replay, a record) produces or reads one.
//!
//! The field names are the registry's setting keys (`registry::SETTINGS`),
//! so a setting is applied by its path in the JSON form of the spec and a
//! method's settings struct gains a shared setting (`folds`, later `pairs`) by
//! having a field of that name.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::values::{Gamma, GpApproxSpec, Tunable};

/// ε of the PAC-Bayes certificates (confidence 95%).
pub const DEFAULT_EPSILON: f64 = crate::engine::bounds::DEFAULT_EPSILON;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RunSpec {
    pub data: DataSpec,
    pub method: MethodSpec,
    /// γ of the Gibbs posterior (Bayesian methods; None for the baselines).
    pub gamma: Option<Gamma>,
    /// The prior on the score's parameters (Bayesian methods; None for the baselines).
    pub prior: Option<PriorSpec>,
    /// Worker threads asked for (None: all cores). Results do not depend on it.
    pub threads: Option<usize>,
}

impl Default for RunSpec {
    fn default() -> Self {
        RunSpec::new(DataSpec::default(), MethodSpec::default())
    }
}

impl RunSpec {
    /// A spec with the method's defaults (γ = n — vb: theory — and the
    /// Gaussian prior for the Bayesian methods).
    pub fn new(data: DataSpec, method: MethodSpec) -> RunSpec {
        let bayesian = super::registry::method(method.name()).is_some_and(|m| m.bayesian);
        RunSpec {
            data,
            gamma: bayesian.then(|| method.default_gamma()),
            method,
            prior: bayesian.then(PriorSpec::default),
            threads: None,
        }
    }

    /// The defaults of the method named `name` (None if there is no such method).
    pub fn for_method(data: DataSpec, name: &str) -> Option<RunSpec> {
        MethodSpec::default_of(name).map(|m| RunSpec::new(data, m))
    }

    pub fn method_name(&self) -> &'static str {
        self.method.name()
    }

    pub fn prior_kind(&self) -> Option<PriorKind> {
        self.prior.as_ref().map(|p| p.kind)
    }

    /// The spec stored in a run record (an error if it is not a spec of this version).
    pub fn from_value(v: &serde_json::Value) -> Result<RunSpec, String> {
        serde_json::from_value(v.clone()).map_err(|e| format!("not a run specification: {e}"))
    }

    pub fn to_value(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("specs serialise")
    }
}

/// Which file, which rows and columns, how to split.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DataSpec {
    /// CSV file with a header row.
    pub path: PathBuf,
    /// Target column (None: the last column).
    pub target: Option<String>,
    /// Label of the positive class (None: 1 for 0/1 or −1/1 labels, else the rarer value).
    pub positive: Option<String>,
    /// Columns to exclude.
    pub drop: Vec<String>,
    pub missing: Missing,
    /// Share of rows held out (stratified) when there is no test file; 0 = no test set.
    pub test_frac: f64,
    /// A test file with the same columns instead of a split.
    pub test: Option<PathBuf>,
    /// Seed of the split and of every random choice of the run.
    pub seed: u64,
}

impl Default for DataSpec {
    fn default() -> Self {
        DataSpec {
            path: PathBuf::new(),
            target: None,
            positive: None,
            drop: Vec::new(),
            missing: Missing::Drop,
            test_frac: 0.25,
            test: None,
            seed: 0,
        }
    }
}

impl DataSpec {
    /// The default options for the file at `path`.
    pub fn of(path: impl Into<PathBuf>) -> DataSpec {
        DataSpec {
            path: path.into(),
            ..DataSpec::default()
        }
    }
}

/// Rows with a missing cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Missing {
    /// Dropped (and counted in the report).
    #[default]
    Drop,
    /// An error at the first one.
    Error,
}

/// The method and its own settings; serialised as `{"name": "ep", …settings}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "name", rename_all = "kebab-case")]
pub enum MethodSpec {
    Logit(LogitSpec),
    Rankboost(RankBoostSpec),
    Smc(SmcSpec),
    Ep(EpSpec),
    Gcs(GcsSpec),
    Vb(VbSpec),
}

impl Default for MethodSpec {
    fn default() -> Self {
        MethodSpec::Logit(LogitSpec::default())
    }
}

impl MethodSpec {
    /// The registry name of the method.
    pub fn name(&self) -> &'static str {
        match self {
            MethodSpec::Logit(_) => "logit",
            MethodSpec::Rankboost(_) => "rankboost",
            MethodSpec::Smc(_) => "smc",
            MethodSpec::Ep(_) => "ep",
            MethodSpec::Gcs(_) => "gcs",
            MethodSpec::Vb(_) => "vb",
        }
    }

    /// γ when none is given: n, or for vb ARC16's theory value.
    pub fn default_gamma(&self) -> Gamma {
        match self {
            MethodSpec::Vb(_) => Gamma::Theory,
            _ => Gamma::default(),
        }
    }

    /// The certificate's settings (ε, importance draws, split-prior share) of
    /// a Bayesian method; None for the baselines.
    pub fn certificate(&self) -> Option<(f64, Option<usize>, f64)> {
        match self {
            MethodSpec::Logit(_) | MethodSpec::Rankboost(_) => None,
            MethodSpec::Smc(s) => Some((s.epsilon, Some(0), s.prior_split)),
            MethodSpec::Ep(s) => Some((s.epsilon, s.is_draws, s.prior_split)),
            MethodSpec::Gcs(s) => Some((s.epsilon, Some(0), s.prior_split)),
            MethodSpec::Vb(s) => Some((s.epsilon, s.is_draws, s.prior_split)),
        }
    }

    /// The method named `name` with its default settings.
    pub fn default_of(name: &str) -> Option<MethodSpec> {
        Some(match name {
            "logit" => MethodSpec::Logit(LogitSpec::default()),
            "rankboost" => MethodSpec::Rankboost(RankBoostSpec::default()),
            "smc" => MethodSpec::Smc(SmcSpec::default()),
            "ep" => MethodSpec::Ep(EpSpec::default()),
            "gcs" => MethodSpec::Gcs(GcsSpec::default()),
            "vb" => MethodSpec::Vb(VbSpec::default()),
            _ => return None,
        })
    }
}

/// L2 logistic regression (a baseline).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LogitSpec {
    /// Fixed penalty λ (None: by cross-validation).
    pub lambda: Option<f64>,
    pub folds: usize,
    /// Above this many training rows, λ is cross-validated on a stratified
    /// subsample of at most this many rows (`baseline::logit::CV_ROWS`).
    pub cv_rows: usize,
}

impl Default for LogitSpec {
    fn default() -> Self {
        LogitSpec {
            lambda: None,
            folds: 5,
            cv_rows: crate::engine::baseline::logit::CV_ROWS,
        }
    }
}

/// RankBoost.B (a baseline).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RankBoostSpec {
    /// Fixed number of rounds (None: by cross-validation).
    pub rounds: Option<usize>,
    pub folds: usize,
}

impl Default for RankBoostSpec {
    fn default() -> Self {
        RankBoostSpec {
            rounds: None,
            folds: 5,
        }
    }
}

/// Metropolis kernel of SMC's moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SmcKernel {
    #[default]
    Auto,
    Gpcn,
    Rw,
    Pcn,
    Sphere,
    Copula,
    SkewCopula,
}

/// Adaptive tempering SMC.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SmcSpec {
    pub particles: usize,
    /// Move steps per stage (None: adaptive, until the particles decorrelate).
    pub moves: Option<usize>,
    /// Waste-free chains of P states (None: standard SMC).
    pub waste_free: Option<usize>,
    pub ess: f64,
    /// Share of local proposals in the gpcn and copula moves.
    #[serde(default = "crate::engine::smc::settings::no_local_steps")]
    pub local_share: f64,
    pub kernel: SmcKernel,
    /// Initial step size (None: the kernel's default).
    pub scale: Option<f64>,
    pub fixed_scale: bool,
    pub no_radial: bool,
    pub max_stages: usize,
    /// Seed of the sampler alone (None: the run's seed), to compare SMC seeds on one split.
    pub smc_seed: Option<u64>,
    /// Independent runs R, pooled (R ≥ 2 adds R-hat and log Z ± sd across runs).
    pub runs: usize,
    /// Only run r (from 1) of the R, its cloud kept for `pacauc merge`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run: Option<usize>,
    /// The PAC-Bayes certificate's ε (confidence 1 − ε).
    pub epsilon: f64,
    /// Share of each class's rows the certificate's prior is learned on (0: off).
    pub prior_split: f64,
    /// γ grid of the cross-validation along the SMC path, as multiples of n (γ = auto).
    pub gamma_grid: Vec<f64>,
    pub folds: usize,
    /// γ = auto: every fold's path to the top of the grid (no early stop).
    pub full_path: bool,
    /// Delayed acceptance's surrogate rows (None or 0: off).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub surrogate_rows: Option<usize>,
    /// Where the tempering starts (specs from before: the prior).
    #[serde(default = "prior_reference")]
    pub smc_reference: SmcReference,
    /// A prior-path run that flags a phase jump (specs from before: flag).
    #[serde(default = "phase_jump_flag")]
    pub phase_jump: PhaseJump,
}

/// What a prior-path SMC run (each of several too) does when a stage finds a phase its
/// incoming cloud held too little of (its log Z likely low): run again from
/// a Gaussian fitted to its final cloud and report that run, or only flag it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PhaseJump {
    Rerun,
    Flag,
}

fn phase_jump_flag() -> PhaseJump {
    PhaseJump::Flag
}

/// Where SMC's tempering starts: the prior, EP's Gaussian (run first), or
/// auto: EP's Gaussian where the cost model expects it to pay
/// (`cost::smc_reference_choice`), the prior otherwise (announced, recorded).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SmcReference {
    Auto,
    Prior,
    Ep,
}

/// The default of a new spec (specs saved before `auto` keep the prior).
pub const SMC_REFERENCE_DEFAULT: SmcReference = SmcReference::Auto;

fn prior_reference() -> SmcReference {
    SmcReference::Prior
}

impl Default for SmcSpec {
    fn default() -> Self {
        SmcSpec {
            particles: 10_000,
            moves: None,
            waste_free: None,
            ess: 0.5,
            local_share: crate::engine::smc::LOCAL_SHARE,
            kernel: SmcKernel::Auto,
            scale: None,
            fixed_scale: false,
            no_radial: false,
            max_stages: 1000,
            smc_seed: None,
            runs: 1,
            run: None,
            epsilon: DEFAULT_EPSILON,
            prior_split: 0.0,
            gamma_grid: EpSpec::default().gamma_grid,
            folds: 5,
            full_path: false,
            surrogate_rows: None,
            smc_reference: SMC_REFERENCE_DEFAULT,
            phase_jump: PhaseJump::Rerun,
        }
    }
}

pub use super::ep_spec::{
    EpControllerSpec, EpForm, EpRegrow, EpSpec, EpStartSpec, SitePrecision, SiteSteps,
};

/// VB's Gaussian family of ρ = N(m, Σ).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum VbFamily {
    /// F1: Σ = σ² × the prior covariance.
    Iso,
    /// F2: Σ diagonal.
    #[default]
    Diag,
    /// F3: Σ full (Cholesky factor).
    Full,
}

/// The risk VB's Gibbs posterior is built on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum VbLoss {
    #[default]
    Auc,
    ZeroOne,
    Hinge,
    Exp,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum VbOptimizer {
    /// Full batch up to 4 million items (pairs or rows), stochastic above.
    #[default]
    Auto,
    FullBatch,
    Stochastic,
}

/// Variational Bayes (ARC16): the best Gaussian of a family.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct VbSpec {
    pub family: VbFamily,
    pub loss: VbLoss,
    pub optimizer: VbOptimizer,
    /// Items (pairs, or rows for a classification loss) per stochastic step.
    pub batch_pairs: usize,
    /// γ grid of the cross-validation, as multiples of n (γ = auto).
    pub gamma_grid: Vec<f64>,
    pub folds: usize,
    /// The PAC-Bayes certificate's ε (confidence 1 − ε).
    pub epsilon: f64,
    /// Share of each class's rows the certificate's prior is learned on (0: off).
    pub prior_split: f64,
    /// Importance draws checking the Gaussian against the Gibbs posterior
    /// (0: none; None: by the training size, `is_check::risks::auto_draws`).
    pub is_draws: Option<usize>,
}

impl Default for VbSpec {
    fn default() -> Self {
        VbSpec {
            family: VbFamily::Diag,
            loss: VbLoss::Auc,
            optimizer: VbOptimizer::Auto,
            batch_pairs: 4000,
            gamma_grid: EpSpec::default().gamma_grid,
            folds: 5,
            epsilon: DEFAULT_EPSILON,
            prior_split: 0.0,
            is_draws: None,
        }
    }
}

/// What the great-circle sampler's posterior penalises.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum GcsLoss {
    /// The AUC risk with γ (RACL14's Gibbs posterior).
    #[default]
    Auc,
    /// GH00's label-noise likelihood on the training errors, with an intercept.
    LabelNoise,
}

/// The great-circle sampler (exact hit-and-run on directions, ALGORITHMS.md §10).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct GcsSpec {
    pub chains: usize,
    pub warmup: usize,
    pub min_ess: f64,
    pub max_rhat: f64,
    pub max_steps: usize,
    pub loss: GcsLoss,
    /// The circles' tangent directions (gaussian: ellipses around EP's Gaussian).
    pub directions: crate::engine::gcs::Directions,
    /// The move on each circle (exact draw, slice move, or auto by pairs per row).
    pub circle: crate::engine::gcs::CircleMove,
    /// Label-noise level q (loss = label-noise).
    pub noise: f64,
    /// Also estimate log Z by stepping stones from γ = 0 (the certificate needs it).
    pub evidence: bool,
    /// The PAC-Bayes certificate's ε (confidence 1 − ε).
    pub epsilon: f64,
    /// Share of each class's rows the certificate's prior is learned on (0: off).
    pub prior_split: f64,
}

impl Default for GcsSpec {
    fn default() -> Self {
        GcsSpec {
            chains: 4,
            warmup: 200,
            min_ess: 400.0,
            max_rhat: 1.01,
            max_steps: 200_000,
            loss: GcsLoss::Auc,
            directions: crate::engine::gcs::Directions::Gaussian,
            circle: crate::engine::gcs::CircleMove::Exact,
            noise: 0.1,
            evidence: false,
            epsilon: DEFAULT_EPSILON,
            prior_split: 0.0,
        }
    }
}

/// The family of the prior.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PriorKind {
    #[default]
    Gaussian,
    Ard,
    SpikeSlab,
    /// A Gaussian process on the scores (ALGORITHMS.md §6).
    Gp,
}

impl PriorKind {
    pub fn name(self) -> &'static str {
        match self {
            PriorKind::Gaussian => "gaussian",
            PriorKind::Ard => "ard",
            PriorKind::SpikeSlab => "spike-slab",
            PriorKind::Gp => "gp",
        }
    }
}

/// The prior and its scales; the scales that do not belong to `kind` keep
/// their defaults (the registry refuses them).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PriorSpec {
    pub kind: PriorKind,
    /// Gaussian: the variance ϑ; ARD: every variance's starting value.
    pub var: f64,
    /// Spike-and-slab: v0 (None: 1e-4·v1, or 1e-4 when v1 is tuned).
    pub spike_var: Option<f64>,
    /// Spike-and-slab: v1.
    pub slab_var: Tunable,
    /// Spike-and-slab: p (None: 1 − e^{−1/d}, RACL14 Thm 2.5).
    pub inclusion_prior: Option<Tunable>,
    /// GP: the covariance kernel.
    pub gp_kernel: GpKernel,
    /// GP: the SE kernel's length-scale ℓ (None: the median distance between
    /// training rows; auto: by evidence).
    pub lengthscale: Option<Tunable>,
    /// GP: exact, or a feature approximation.
    pub gp_approx: GpApproxSpec,
}

/// The covariance kernel of the GP prior.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum GpKernel {
    /// Squared exponential exp(−‖x − x'‖²/(2ℓ²)).
    #[default]
    Se,
    /// <x, x'>: the linear score (the Gaussian prior's, in score space).
    Linear,
}

impl Default for PriorSpec {
    fn default() -> Self {
        PriorSpec {
            kind: PriorKind::Gaussian,
            var: 1.0,
            spike_var: None,
            slab_var: Tunable::Value(1.0),
            inclusion_prior: None,
            gp_kernel: GpKernel::Se,
            lengthscale: None,
            gp_approx: GpApproxSpec::Auto,
        }
    }
}
