//! The method registry: the methods, the priors and γ modes each accepts, and
//! every setting with its type, default, range or choices, the methods and
//! priors it applies to, and its help. The CLI's flags and their validation,
//! the run form's fields and hints, and the help text all read these tables.
//!
//! # How to add …
//! - **a method** (say `vb`): a `MethodInfo` row in `METHODS` (`methods.rs`); its settings
//!   struct in `run_spec.rs` with a `MethodSpec` variant (and its arms in
//!   `MethodSpec::name`/`default_of`); one arm in `build::engine`; a `Setting`
//!   row per setting with `methods: Only(&["vb"])` and `path: "method.<field>"`.
//!   A shared setting (`folds`, `gamma_grid`, next `pairs`, `is_draws`) applies to
//!   the new method by listing it in the row and giving the struct that field.
//!   `auto` for γ (or a scale) is allowed by listing the method in the row's
//!   `auto_for`.
//! - **a prior** (say `gp`): a `PriorKind` variant and its scales in `PriorSpec`
//!   (`Tunable` where `auto` makes sense), `Setting` rows with
//!   `priors: &[PriorKind::Gp]`, the methods that take it in their
//!   `MethodInfo::priors`, and its arm in `build::prior`.
//! - **a setting**: one `Setting` row (the CLI flag is `--` + the key with `-`
//!   for `_`; `form: true` shows it in the run form; the range or choices give its
//!   validation and hints) and the field at `path`. Rules between settings go in
//!   `validate.rs`. Tests check every row against the structs' fields, the CLI's
//!   flags and the defaults.

use super::method_settings::{EP_SETTINGS, GCS_SETTINGS, SMC_SETTINGS, VB_SETTINGS};
pub use super::methods::{AUTORUN_ORDER, METHODS, MethodInfo, THEORY_GAMMA, method, method_names};
use super::run_spec::PriorKind;
use super::setting::range;
pub use super::setting::{Group, Kind, Methods, Range, Requires, Setting};
use super::values::GpApproxSpec;

use PriorKind::{Ard, Gaussian, Gp, SpikeSlab};

/// The priors on θ (every prior but the GP's, which is on the scores).
pub(super) const THETA_PRIORS: &[PriorKind] = &[Gaussian, Ard, SpikeSlab];

/// A setting with the common defaults (data options: every method, any prior).
pub(super) const fn setting(key: &'static str, path: &'static str, kind: Kind) -> Setting {
    Setting {
        key,
        path,
        label: key,
        help: "",
        kind,
        default: "",
        absent: "",
        unset: "",
        methods: Methods::All,
        priors: &[],
        auto_for: &[],
        choices_for: &[],
        requires: Requires::Nothing,
        form: false,
        group: Group::Data,
    }
}

pub(super) const SMC: Methods = Methods::Only(&["smc"]);
pub(super) const EP: Methods = Methods::Only(&["ep"]);
pub(super) const VB: Methods = Methods::Only(&["vb"]);
pub(super) const GCS: Methods = Methods::Only(&["gcs"]);

/// The data: which rows and columns, the split, the seed's companions.
const DATA_SETTINGS: &[Setting] = &[
    Setting {
        help: "Target column (default: the last column).",
        unset: "the last column",
        ..setting("target", "data.target", Kind::Text)
    },
    Setting {
        help: "Label of the positive class (default: 1 for 0/1 or -1/1 labels, else the rarer of two values).",
        unset: "1 for 0/1 or -1/1 labels, else the rarer value",
        ..setting("positive", "data.positive", Kind::Text)
    },
    Setting {
        help: "Column to exclude, e.g. an ID (repeatable).",
        ..setting("drop", "data.drop", Kind::TextList)
    },
    Setting {
        help: "Rows with missing cells (empty, NA, NaN, ?, null): drop them, or stop at the first.",
        default: "drop",
        ..setting("missing", "data.missing", Kind::Choice(&["drop", "error"]))
    },
    Setting {
        help: "Share of rows held out (stratified) for the test AUC; 0 = no test set.",
        default: "0.25",
        ..setting(
            "test_frac",
            "data.test_frac",
            Kind::Number(range(0.0, 1.0, false, true)),
        )
    },
    Setting {
        help: "Test file (same columns) used instead of a split; the training file's encoding and standardisation apply.",
        unset: "a split of the data file",
        ..setting("test", "data.test", Kind::Text)
    },
];

/// The Gibbs posterior: the prior, γ and the loss.
const POSTERIOR_SETTINGS: &[Setting] = &[
    Setting {
        label: "prior",
        help: "Prior on the coefficients: gaussian (θ ~ N(0, ϑI); the posterior's direction does not depend on ϑ), ard (θ_k ~ N(0, ϑ_k), the ϑ_k chosen by evidence), spike-slab (θ_k ~ p N(0, v1) + (1 − p) N(0, v0): feature selection), or gp (a Gaussian process on the scores, s ~ N(0, K): a non-linear score).",
        default: "gaussian",
        methods: Methods::Bayesian,
        form: true,
        group: Group::Posterior,
        ..setting(
            "prior",
            "prior.kind",
            Kind::Choice(&["gaussian", "ard", "spike-slab", "gp"]),
        )
    },
    Setting {
        label: "prior variance ϑ",
        help: "Gaussian prior variance ϑ (ARD: every variance's starting value); the AUC posterior's direction does not depend on it.",
        default: "1",
        methods: Methods::Bayesian,
        priors: &[Gaussian, Ard],
        form: true,
        group: Group::Posterior,
        ..setting("prior_var", "prior.var", Kind::Number(Range::POSITIVE))
    },
    Setting {
        label: "spike variance v0",
        help: "Spike-and-slab: spike variance v0 (≥ 1e-6·v1; a near-Dirac spike breaks EP).",
        unset: "1e-4·v1 (1e-4 when v1 is auto)",
        methods: Methods::Bayesian,
        priors: &[SpikeSlab],
        form: true,
        group: Group::Posterior,
        ..setting(
            "spike_var",
            "prior.spike_var",
            Kind::Number(Range::POSITIVE),
        )
    },
    Setting {
        label: "slab variance v1",
        help: "Spike-and-slab: slab variance v1, or auto (EP: the v1 of largest log Z_EP with v0 fixed; only v0/v1 ∈ [1e-6, 0.1] matters).",
        default: "1",
        methods: Methods::Bayesian,
        priors: &[SpikeSlab],
        auto_for: &[("ep", &[])],
        form: true,
        group: Group::Posterior,
        ..setting("slab_var", "prior.slab_var", Kind::Tunable(Range::POSITIVE))
    },
    Setting {
        label: "inclusion prior p",
        help: "Spike-and-slab: prior inclusion probability p, or auto (EP: the p of largest log Z_EP).",
        unset: "1−e^(−1/d) (RACL14 Thm 2.5)",
        methods: Methods::Bayesian,
        priors: &[SpikeSlab],
        auto_for: &[("ep", &[])],
        form: true,
        group: Group::Posterior,
        ..setting(
            "inclusion_prior",
            "prior.inclusion_prior",
            Kind::Tunable(range(0.0, 1.0, true, false)),
        )
    },
    Setting {
        label: "GP kernel",
        help: "GP prior: the covariance kernel, se (squared exponential exp(−‖x − x'‖²/(2ℓ²)) on standardised features) or linear (<x, x'>: the linear score, as the gaussian prior). The amplitude is irrelevant: the AUC risk is scale-free.",
        default: "se",
        methods: Methods::Bayesian,
        priors: &[Gp],
        form: true,
        group: Group::Posterior,
        ..setting(
            "gp_kernel",
            "prior.gp_kernel",
            Kind::Choice(&["se", "linear"]),
        )
    },
    Setting {
        label: "length-scale ℓ",
        help: "GP prior: length-scale ℓ of the se kernel, or auto (EP: the ℓ of largest log Z_EP, searched from the median distance; the evidence curve is in the record).",
        unset: "the median distance between training rows",
        methods: Methods::Bayesian,
        priors: &[Gp],
        auto_for: &[("ep", &[Gp])],
        form: true,
        group: Group::Posterior,
        ..setting(
            "lengthscale",
            "prior.lengthscale",
            Kind::Tunable(Range::POSITIVE),
        )
    },
    Setting {
        label: "GP approximation",
        help: "GP prior: exact (O(n³) per EP sweep), nystrom:D (D landmark rows, chosen by pivoted Cholesky), rff:D (D random Fourier features; se kernel), or auto (exact up to 4000 training rows; above, Nyström with landmarks added until they leave out at most 0.25% of the prior variance, at most 1024). SMC samples the exact prior.",
        default: "auto",
        methods: Methods::Bayesian,
        priors: &[Gp],
        form: true,
        group: Group::Posterior,
        ..setting(
            "gp_approx",
            "prior.gp_approx",
            Kind::Sized {
                words: GpApproxSpec::WORDS,
                sized: GpApproxSpec::SIZED,
            },
        )
    },
    Setting {
        label: "γ",
        help: "Inverse temperature γ of the Gibbs posterior: a number, a multiple of the training size like 2n, auto (cross-validation: EP with a Gaussian, ARD, spike-and-slab or GP prior, VB, SMC with a Gaussian, ARD or spike-and-slab prior — one run per fold along its tempering path) or theory (VB: ARC16's value, its default). RACL14 Thm 2.3 gives γ ∝ n.",
        default: "n",
        methods: Methods::Bayesian,
        auto_for: &[
            ("ep", &[Gaussian, Ard, SpikeSlab, Gp]),
            ("vb", &[]),
            ("smc", &[Gaussian, Ard, SpikeSlab]),
        ],
        form: true,
        group: Group::Posterior,
        ..setting("gamma", "gamma", Kind::Gamma)
    },
    Setting {
        label: "loss",
        help: "What the Gibbs posterior penalises. vb: auc (share of discordant pairs) or a classification loss of the same linear score, zero-one, hinge or exp (ARC16's theory prior variance for them is 1/d: set prior_var). gcs: auc (the AUC risk with γ) or label-noise (GH00: each training error costs q/(1 − q), with an intercept; γ follows from `noise`).",
        default: "auc",
        methods: Methods::Only(&["vb", "gcs"]),
        choices_for: &[
            ("vb", &["auc", "zero-one", "hinge", "exp"]),
            ("gcs", &["auc", "label-noise"]),
        ],
        form: true,
        group: Group::Posterior,
        ..setting(
            "loss",
            "method.loss",
            Kind::Choice(&["auc", "zero-one", "hinge", "exp", "label-noise"]),
        )
    },
];

/// The certificates of the Bayesian methods.
const CERTIFICATE_SETTINGS: &[Setting] = &[
    Setting {
        label: "certificate ε",
        help: "The PAC-Bayes certificate (the record's `bound`) holds with probability ≥ 1 − ε.",
        default: "0.05",
        methods: Methods::Bayesian,
        group: Group::Certificates,
        ..setting(
            "epsilon",
            "method.epsilon",
            Kind::Number(range(0.0, 1.0, true, true)),
        )
    },
    Setting {
        label: "split prior",
        help: "Learn the certificate's prior on this share of each class's training rows (the same method's posterior there) and certify on the rest; 0 = the data-free prior only.",
        default: "0",
        methods: Methods::Bayesian,
        form: true,
        group: Group::Certificates,
        ..setting(
            "prior_split",
            "method.prior_split",
            Kind::Number(range(0.0, 0.9, false, false)),
        )
    },
    Setting {
        label: "IS check draws",
        help: "Importance draws checking the Gaussian approximation against the exact Gibbs posterior (PSIS k̂, corrected means and sds, their Monte Carlo error); 0 skips the check. Each draw costs one exact risk over the training rows.",
        unset: "20000 up to 10⁵ training rows, fewer above (2e9 row evaluations, at least 1000)",
        methods: Methods::Only(&["ep", "vb"]),
        form: true,
        group: Group::Certificates,
        ..setting("is_draws", "method.is_draws", Kind::Count(0))
    },
];

/// The baselines, the cross-validations and the seed.
const BASELINE_SETTINGS: &[Setting] = &[
    Setting {
        label: "penalty λ",
        help: "Logit: fixed L2 penalty λ instead of cross-validation.",
        unset: "by cross-validation",
        methods: Methods::Only(&["logit"]),
        form: true,
        group: Group::Baselines,
        ..setting("lambda", "method.lambda", Kind::Number(Range::POSITIVE))
    },
    Setting {
        label: "CV rows",
        help: "Logit: above this many training rows, λ is chosen by cross-validation on a stratified subsample of at most this many rows (the penalty rescaled by rows/subsample: the same per-row objective), then one fit on all rows.",
        default: "1000000",
        methods: Methods::Only(&["logit"]),
        group: Group::Baselines,
        ..setting("cv_rows", "method.cv_rows", Kind::Count(10))
    },
    Setting {
        label: "rounds",
        help: "RankBoost: fixed number of rounds instead of cross-validation.",
        unset: "by cross-validation",
        methods: Methods::Only(&["rankboost"]),
        form: true,
        group: Group::Baselines,
        ..setting("rounds", "method.rounds", Kind::Count(1))
    },
    Setting {
        label: "folds",
        help: "Folds of the cross-validations that choose hyper-parameters (logit's λ, RankBoost's rounds, EP's, VB's and SMC's γ = auto).",
        default: "5",
        methods: Methods::Only(&["logit", "rankboost", "ep", "vb", "smc"]),
        group: Group::Baselines,
        ..setting("folds", "method.folds", Kind::Count(2))
    },
    Setting {
        label: "seed",
        help: "Seed of the split and of every random choice of the run.",
        default: "0",
        form: true,
        ..setting("seed", "data.seed", Kind::Count(0))
    },
];

/// The groups of rows, in the order of the help and the run form.
const PARTS: &[&[Setting]] = &[
    DATA_SETTINGS,
    POSTERIOR_SETTINGS,
    SMC_SETTINGS,
    EP_SETTINGS,
    VB_SETTINGS,
    GCS_SETTINGS,
    CERTIFICATE_SETTINGS,
    BASELINE_SETTINGS,
];

const fn row_count(parts: &[&[Setting]]) -> usize {
    let (mut n, mut i) = (0, 0);
    while i < parts.len() {
        n += parts[i].len();
        i += 1;
    }
    n
}

/// The parts' rows one after another (a const: the tables stay data).
const fn concat<const N: usize>(parts: &[&[Setting]]) -> [Setting; N] {
    let mut out = [parts[0][0]; N];
    let (mut i, mut k) = (0, 0);
    while i < parts.len() {
        let mut j = 0;
        while j < parts[i].len() {
            out[k] = parts[i][j];
            (j, k) = (j + 1, k + 1);
        }
        i += 1;
    }
    out
}

/// Every setting, in the order of the help and the run form.
pub const SETTINGS: &[Setting] = &concat::<{ row_count(PARTS) }>(PARTS);

pub fn setting_of(key: &str) -> Option<&'static Setting> {
    SETTINGS.iter().find(|s| s.key == key)
}
