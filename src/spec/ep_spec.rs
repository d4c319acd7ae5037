//! EP's settings in a spec (`EpSpec`) and their choices; re-exported by
//! `run_spec`, whose module they were until it neared the size limit.

use serde::{Deserialize, Serialize};

use super::run_spec::{DEFAULT_EPSILON, PriorKind};
use super::values::Tunable;

/// The EP driver (start, controller) of a new spec: the continuation and
/// the anderson controller for every prior. A spec saved before reads as
/// classic, which is retired (`retired_warnings`).
pub fn default_driver() -> (EpStartSpec, EpControllerSpec) {
    (EpStartSpec::Continuation, EpControllerSpec::Anderson)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EpForm {
    #[default]
    Auto,
    Primal,
    Reduced,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SitePrecision {
    #[default]
    Auto,
    F64,
    F32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SiteSteps {
    #[default]
    Adaptive,
    Strict,
}

/// How an EP fit reaches its γ. `Default` is the reading of a spec without
/// the field (saved before the flip), not the default (`default_driver`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EpStartSpec {
    #[default]
    Classic,
    Continuation,
}

impl EpStartSpec {
    fn is_classic(&self) -> bool {
        *self == EpStartSpec::Classic
    }
}

/// How an EP run steps towards its fixed point; `Default` as `EpStartSpec`'s.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EpControllerSpec {
    #[default]
    Classic,
    Anderson,
}

impl EpControllerSpec {
    fn is_classic(&self) -> bool {
        *self == EpControllerSpec::Classic
    }
}

/// Expectation Propagation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct EpSpec {
    pub damping: f64,
    pub tol: f64,
    pub max_sweeps: usize,
    /// γ grid of the cross-validation, as multiples of n (γ = auto).
    pub gamma_grid: Vec<f64>,
    pub folds: usize,
    pub ep_form: EpForm,
    pub site_precision: SitePrecision,
    pub ard_iters: usize,
    pub final_evidence_only: bool,
    pub site_steps: SiteSteps,
    pub keep_fixes: bool,
    /// Sites on a uniform sample of this many pairs (None: all pairs).
    pub pairs: Option<usize>,
    /// The PAC-Bayes certificate's ε (confidence 1 − ε).
    pub epsilon: f64,
    /// Share of each class's rows the certificate's prior is learned on (0: off).
    pub prior_split: f64,
    /// Importance draws checking the Gaussian against the Gibbs posterior
    /// (0: none; None: by the training size, `is_check::risks::auto_draws`).
    pub is_draws: Option<usize>,
    /// `default_driver`; a spec without the field (saved before the flip)
    /// reads as classic, and classic is not written, so it keeps its spec.
    #[serde(default, skip_serializing_if = "EpStartSpec::is_classic")]
    pub ep_start: EpStartSpec,
    /// Absent and not written as `ep_start`.
    #[serde(default, skip_serializing_if = "EpControllerSpec::is_classic")]
    pub ep_controller: EpControllerSpec,
    /// Power EP's α (None: auto; auto is not written).
    #[serde(skip_serializing_if = "power_is_auto")]
    pub ep_power: Option<Tunable>,
    /// Retired: η always grows back after rejected sweeps (`ep::regrow`);
    /// off, not written, is an older spec's (`retired_warnings`). Specs from
    /// before the default read as off, older ones wrote a bool.
    #[serde(
        default = "regrow_before",
        deserialize_with = "regrow_from",
        skip_serializing_if = "EpRegrow::is_off"
    )]
    pub ep_regrow: EpRegrow,
}

/// Whether an η cut by rejected sweeps grows back; off is retired.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EpRegrow {
    On,
    Off,
}

impl EpRegrow {
    fn is_off(&self) -> bool {
        *self == EpRegrow::Off
    }
}

fn regrow_before() -> EpRegrow {
    EpRegrow::Off
}

/// `"on"`/`"off"`, or the bool of the specs written while regrow was opt-in.
fn regrow_from<'de, D: serde::Deserializer<'de>>(d: D) -> Result<EpRegrow, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Text {
        Switch(bool),
        Choice(EpRegrow),
    }
    Ok(match Text::deserialize(d)? {
        Text::Switch(true) => EpRegrow::On,
        Text::Switch(false) => EpRegrow::Off,
        Text::Choice(r) => r,
    })
}

fn power_is_auto(p: &Option<Tunable>) -> bool {
    p.is_none_or(|t| t.is_auto())
}

impl Default for EpSpec {
    fn default() -> Self {
        EpSpec {
            damping: 0.7,
            tol: 1e-4,
            max_sweeps: 1000,
            gamma_grid: crate::engine::ep::cv::DEFAULT_GRID.to_vec(),
            folds: 5,
            ep_form: EpForm::Auto,
            site_precision: SitePrecision::Auto,
            ard_iters: 100,
            final_evidence_only: false,
            site_steps: SiteSteps::Adaptive,
            keep_fixes: false,
            pairs: None,
            epsilon: DEFAULT_EPSILON,
            prior_split: 0.0,
            is_draws: None,
            ep_start: default_driver().0,
            ep_controller: default_driver().1,
            ep_power: None,
            ep_regrow: EpRegrow::On,
        }
    }
}

impl EpSpec {
    /// The EP that SMC and the sampler run first for their reference: their
    /// specs carry no EP settings, so it is a new spec's EP (the
    /// continuation, the anderson controller).
    pub fn reference() -> EpSpec {
        EpSpec::default()
    }
}

/// Whether `--ep-start classic` is retired with `prior`: its fallbacks are
/// deleted, so it runs the continuation and the record says so. ARD reaches
/// γ by its own optimiser either way.
pub fn classic_start_retired(prior: Option<PriorKind>) -> bool {
    !matches!(prior, Some(PriorKind::Ard))
}

/// What `pacauc fit` says of `--ep-controller classic` (an older spec's):
/// the classic controller is deleted, the anderson one runs.
pub fn classic_controller_note() -> &'static str {
    "--ep-controller classic is retired and runs the anderson controller (records made with the classic controller can differ)"
}

/// The warnings of a run whose spec asks for a retired EP choice (an older
/// spec's): the engine runs its one driver, so the spec says what changed
/// (stderr and the record's warnings: `run::note_spec_warnings`).
pub fn retired_warnings(spec: &super::RunSpec) -> Vec<String> {
    let super::MethodSpec::Ep(e) = &spec.method else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if e.ep_controller == EpControllerSpec::Classic {
        out.push("ep: --ep-controller classic is retired (2026-11-30): the anderson controller ran (records made with the classic one can differ)".to_string());
    }
    if e.ep_start == EpStartSpec::Classic
        && classic_start_retired(spec.prior.as_ref().map(|p| p.kind))
    {
        out.push("ep: --ep-start classic is retired: its fallback starts are gone and γ was reached as by every EP start (records made with them can differ)".to_string());
    }
    if e.ep_regrow == EpRegrow::Off {
        out.push("ep: --ep-regrow off is retired (so is a spec saved without ep_regrow): η cut by rejected sweeps grew back as by default (records made with it off can differ where a sweep was rejected); delete it from the spec".to_string());
    }
    out
}

/// The line `pacauc fit` prints before an EP run: the driver, and that a
/// spec asking for a retired choice runs the new one.
/// None for other methods.
pub fn announce(spec: &super::RunSpec) -> Option<String> {
    let super::MethodSpec::Ep(e) = &spec.method else {
        return None;
    };
    let prior = spec.prior.as_ref().map(|p| p.kind);
    // ARD reaches γ as before whatever the setting; GP-EP by the
    // continuation only through features (Nyström, random Fourier).
    let reach = match prior {
        Some(PriorKind::Ard) => None,
        Some(PriorKind::Gp) => {
            Some("γ reached by continuation (GP through features; exact GP runs at γ)")
        }
        _ => Some("γ reached by continuation"),
    };
    let mut what = vec!["the anderson step controller"];
    if e.ep_controller == EpControllerSpec::Classic {
        what.push(classic_controller_note());
    }
    if e.ep_regrow == EpRegrow::Off {
        what.push("--ep-regrow off is retired: η regrows");
    }
    if let Some(r) = reach {
        what.push(r);
        if e.ep_start == EpStartSpec::Classic && classic_start_retired(prior) {
            what.push("--ep-start classic is retired and runs it too (records made with the classic start's fallbacks can differ)");
        }
    }
    Some(format!("EP driver: {}", what.join(", ")))
}
