//! The EP engine's configuration (`--method ep`, every flavour): the run's
//! settings and γ's choice, the form and site storage, ARD's and
//! spike-and-slab's options, the pair sample. Plain data below the flavours,
//! so they read it without importing the engine that dispatches to them.

use super::ard::ArdSettings;
use super::design::Form;
use super::settings::{EpSettings, SiteStepRule};
use super::store::Precision;
use crate::engine::pairs::PairSampling;

/// How γ is chosen.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum GammaMode {
    /// The problem's γ.
    Fixed,
    /// Stratified k-fold CV over γ = c·n, c in `grid_over_n`.
    Cv {
        grid_over_n: Vec<f64>,
        folds: usize,
        seed: u64,
    },
}

/// Expectation Propagation for the AUC Gibbs posterior with a Gaussian (or ARD) prior.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Ep {
    pub settings: EpSettings,
    pub gamma: GammaMode,
    pub form: Form,
    pub precision: Precision,
    pub ard: ArdSettings,
    /// Report log Z_EP at every sweep (costs ~15% of a sweep) or only at the end.
    pub evidence_every_sweep: bool,
    /// Spike-and-slab: choose the inclusion prior p by maximising log Z_EP.
    #[serde(default)]
    pub tune_inclusion: bool,
    /// Spike-and-slab: choose the slab variance v1 (v0 fixed) by maximising log Z_EP.
    #[serde(default)]
    pub tune_slab: bool,
    /// Spike-and-slab: steps of prior sites whose negative-site fix recurs.
    #[serde(default)]
    pub site_steps: SiteStepRule,
    /// Spike-and-slab, primal form: continue without the negative-site fix when
    /// it is still active at convergence (`spike_slab::release`).
    pub release_fixes: bool,
    /// Sites on a uniform sample of B pairs instead of all n+ · n− (one sample
    /// for the whole run; Gaussian and ARD priors). None: all pairs.
    #[serde(default)]
    pub pairs: Option<PairSampling>,
}

impl Default for Ep {
    fn default() -> Self {
        Ep {
            settings: EpSettings::default(),
            gamma: GammaMode::Fixed,
            form: Form::Auto,
            precision: Precision::Auto,
            ard: ArdSettings::default(),
            evidence_every_sweep: true,
            tune_inclusion: false,
            tune_slab: false,
            site_steps: SiteStepRule::default(),
            release_fixes: true,
            pairs: None,
        }
    }
}
