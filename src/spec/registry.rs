//! The method registry: the methods, the priors and γ modes each accepts, and
//! every setting with its type, default, range or choices, the methods and
//! priors it applies to, and its help. The CLI's flags and their validation,
//! the run form's fields and hints, and the help text all read these tables.
//!
//! # How to add …
//! - **a method** (say `vb`): a `MethodInfo` row in `METHODS`; its settings
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

use super::run_spec::PriorKind;

/// A method the program can run.
#[derive(Debug)]
pub struct MethodInfo {
    pub name: &'static str,
    /// One line for the help and the run form.
    pub help: &'static str,
    /// Samples or approximates a Gibbs posterior (takes γ and a prior).
    pub bayesian: bool,
    /// Priors it accepts (the first is the default); empty for the baselines.
    pub priors: &'static [PriorKind],
}

use PriorKind::{Ard, Gaussian, SpikeSlab};

pub const METHODS: &[MethodInfo] = &[
    MethodInfo {
        name: "logit",
        help: "L2 logistic regression, penalty by cross-validation (baseline)",
        bayesian: false,
        priors: &[],
    },
    MethodInfo {
        name: "rankboost",
        help: "RankBoost.B with threshold rankers, rounds by cross-validation (baseline)",
        bayesian: false,
        priors: &[],
    },
    MethodInfo {
        name: "smc",
        help: "adaptive tempering SMC: samples the Gibbs posterior (the gold standard)",
        bayesian: true,
        priors: &[Gaussian, Ard, SpikeSlab],
    },
    MethodInfo {
        name: "ep",
        help: "Expectation Propagation: a Gaussian approximation of the Gibbs posterior and its evidence",
        bayesian: true,
        priors: &[Gaussian, Ard, SpikeSlab],
    },
];

/// The methods the explorer starts when it opens, in order (EP first: it is quick).
pub const AUTORUN_ORDER: &[&str] = &["ep", "smc"];

pub fn method(name: &str) -> Option<&'static MethodInfo> {
    METHODS.iter().find(|m| m.name == name)
}

pub fn method_names() -> Vec<&'static str> {
    METHODS.iter().map(|m| m.name).collect()
}

/// A closed or open interval of numbers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Range {
    pub lo: f64,
    pub hi: f64,
    pub lo_open: bool,
    pub hi_open: bool,
}

impl Range {
    /// (0, ∞)
    pub const POSITIVE: Range = Range {
        lo: 0.0,
        hi: f64::INFINITY,
        lo_open: true,
        hi_open: true,
    };

    pub fn contains(&self, v: f64) -> bool {
        let lo = if self.lo_open {
            v > self.lo
        } else {
            v >= self.lo
        };
        let hi = if self.hi_open {
            v < self.hi
        } else {
            v <= self.hi
        };
        v.is_finite() && lo && hi
    }

    /// "in (0, 1]", "> 0", …
    pub fn describe(&self) -> String {
        if self.hi.is_infinite() {
            let op = if self.lo_open { ">" } else { "≥" };
            format!("{op} {}", self.lo)
        } else {
            format!(
                "in {}{}, {}{}",
                if self.lo_open { "(" } else { "[" },
                self.lo,
                self.hi,
                if self.hi_open { ")" } else { "]" }
            )
        }
    }
}

const fn range(lo: f64, hi: f64, lo_open: bool, hi_open: bool) -> Range {
    Range {
        lo,
        hi,
        lo_open,
        hi_open,
    }
}

/// What a setting's value is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Kind {
    /// A number in a range.
    Number(Range),
    /// A whole number ≥ the bound.
    Count(u64),
    /// One of the names (the settings struct's enum, kebab-case).
    Choice(&'static [&'static str]),
    /// On when given (a flag without a value).
    Switch,
    /// Comma-separated numbers in a range.
    Numbers(Range),
    /// γ: a number ≥ 0, a multiple of n (`2n`), or `auto` where `auto_for` allows.
    Gamma,
    /// A number in a range, or `auto` where `auto_for` allows.
    Tunable(Range),
    /// Text (a column name, a label, a file).
    Text,
    /// Text, repeatable: each occurrence adds one.
    TextList,
}

/// The methods a setting applies to.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Methods {
    All,
    Bayesian,
    Only(&'static [&'static str]),
}

/// A condition on other settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Requires {
    Nothing,
    /// Only with γ = auto.
    GammaAuto,
}

/// Where a setting is listed in the help.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group {
    Data,
    Posterior,
    Baselines,
    Smc,
    Ep,
}

impl Group {
    pub fn heading(self) -> &'static str {
        match self {
            Group::Data => "Data",
            Group::Posterior => "Gibbs posterior (smc, ep)",
            Group::Baselines => "Baselines (logit, rankboost) and cross-validation",
            Group::Smc => "SMC",
            Group::Ep => "EP",
        }
    }
}

#[derive(Debug)]
pub struct Setting {
    /// The name in the spec and, with `-` for `_`, the CLI flag.
    pub key: &'static str,
    /// Where the value lives in the spec's JSON form (`data.seed`, `prior.var`,
    /// `method.damping`: the field of the method's settings struct).
    pub path: &'static str,
    /// The run form's label.
    pub label: &'static str,
    /// One or two sentences: the CLI's help and the run form's.
    pub help: &'static str,
    pub kind: Kind,
    /// The default as typed ("" = unset: see `unset`).
    pub default: &'static str,
    /// What leaving it unset means ("by cross-validation", "1e-4·v1").
    pub unset: &'static str,
    pub methods: Methods,
    /// Priors it applies to (empty: any, or none needed).
    pub priors: &'static [PriorKind],
    /// Where `auto` is accepted: (method, priors; empty = any prior).
    pub auto_for: &'static [(&'static str, &'static [PriorKind])],
    pub requires: Requires,
    /// Shown in the run form.
    pub form: bool,
    pub group: Group,
}

/// A setting with the common defaults (data options: every method, any prior).
const fn setting(key: &'static str, path: &'static str, kind: Kind) -> Setting {
    Setting {
        key,
        path,
        label: key,
        help: "",
        kind,
        default: "",
        unset: "",
        methods: Methods::All,
        priors: &[],
        auto_for: &[],
        requires: Requires::Nothing,
        form: false,
        group: Group::Data,
    }
}

const SMC: Methods = Methods::Only(&["smc"]);
const EP: Methods = Methods::Only(&["ep"]);

/// Every setting, in the order of the help and the run form.
pub const SETTINGS: &[Setting] = &[
    // Data.
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
    // The Gibbs posterior.
    Setting {
        label: "prior",
        help: "Prior on the coefficients: gaussian (θ ~ N(0, ϑI); the posterior's direction does not depend on ϑ), ard (θ_k ~ N(0, ϑ_k), the ϑ_k chosen by evidence), spike-slab (θ_k ~ p N(0, v1) + (1 − p) N(0, v0): feature selection).",
        default: "gaussian",
        methods: Methods::Bayesian,
        form: true,
        group: Group::Posterior,
        ..setting(
            "prior",
            "prior.kind",
            Kind::Choice(&["gaussian", "ard", "spike-slab"]),
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
        label: "γ",
        help: "Inverse temperature γ of the Gibbs posterior: a number, a multiple of the training size like 2n, or auto (cross-validation, EP with a Gaussian or ARD prior). RACL14 Thm 2.3 gives γ ∝ n.",
        default: "n",
        methods: Methods::Bayesian,
        auto_for: &[("ep", &[Gaussian, Ard])],
        form: true,
        group: Group::Posterior,
        ..setting("gamma", "gamma", Kind::Gamma)
    },
    // SMC.
    Setting {
        label: "particles N",
        help: "Size N of the particle cloud.",
        default: "10000",
        methods: SMC,
        form: true,
        group: Group::Smc,
        ..setting("particles", "method.particles", Kind::Count(2))
    },
    Setting {
        label: "moves per stage K",
        help: "Move steps per stage (default: adaptive, until the particles have decorrelated from their stage-start values).",
        unset: "adaptive",
        methods: SMC,
        form: true,
        group: Group::Smc,
        ..setting("moves", "method.moves", Kind::Count(1))
    },
    Setting {
        label: "waste-free chain P",
        help: "Waste-free SMC (Dau & Chopin): N/P ancestors, each a chain of P states, all kept.",
        unset: "standard SMC",
        methods: SMC,
        form: true,
        group: Group::Smc,
        ..setting("waste_free", "method.waste_free", Kind::Count(2))
    },
    Setting {
        label: "ESS target τ",
        help: "ESS target τ of each tempering step, as a share of N.",
        default: "0.5",
        methods: SMC,
        form: true,
        group: Group::Smc,
        ..setting(
            "ess",
            "method.ess",
            Kind::Number(range(0.0, 1.0, true, true)),
        )
    },
    Setting {
        label: "move kernel",
        help: "Metropolis kernel of the moves: auto (gpcn, or pcn for a Gaussian prior above 400 dimensions), gpcn (pCN around the particles' Gaussian fit), rw (random walk, c = 2.38/√d, adapted), pcn (prior-preserving; Gaussian priors only).",
        default: "auto",
        methods: SMC,
        form: true,
        group: Group::Smc,
        ..setting(
            "kernel",
            "method.kernel",
            Kind::Choice(&["auto", "gpcn", "rw", "pcn"]),
        )
    },
    Setting {
        label: "initial step size",
        help: "Initial step size (random walk: c, default 2.38/√d; pcn/gpcn: √(1−ρ²)).",
        unset: "the kernel's default",
        methods: SMC,
        group: Group::Smc,
        ..setting("scale", "method.scale", Kind::Number(Range::POSITIVE))
    },
    Setting {
        label: "fixed step size",
        help: "Keep the step size fixed instead of adapting it to the acceptance rate.",
        methods: SMC,
        group: Group::Smc,
        ..setting("fixed_scale", "method.fixed_scale", Kind::Switch)
    },
    Setting {
        label: "no radial moves",
        help: "No free radial moves (they rescale θ, which leaves the AUC risk unchanged).",
        methods: SMC,
        group: Group::Smc,
        ..setting("no_radial", "method.no_radial", Kind::Switch)
    },
    Setting {
        label: "most stages",
        help: "Cap on the number of tempering stages.",
        default: "1000",
        methods: SMC,
        group: Group::Smc,
        ..setting("max_stages", "method.max_stages", Kind::Count(1))
    },
    // EP.
    Setting {
        label: "damping η",
        help: "Initial damping step η; halved (and kept halved) when a sweep is rejected.",
        default: "0.7",
        methods: EP,
        form: true,
        group: Group::Ep,
        ..setting(
            "damping",
            "method.damping",
            Kind::Number(range(0.0, 1.0, true, false)),
        )
    },
    Setting {
        label: "tolerance",
        help: "Converged when the largest relative change of a mean (in sds) or sd is below tol·η.",
        default: "0.0001",
        methods: EP,
        form: true,
        group: Group::Ep,
        ..setting("tol", "method.tol", Kind::Number(Range::POSITIVE))
    },
    Setting {
        label: "most sweeps",
        help: "Most sweeps before reporting non-convergence.",
        default: "1000",
        methods: EP,
        group: Group::Ep,
        ..setting("max_sweeps", "method.max_sweeps", Kind::Count(1))
    },
    Setting {
        label: "γ grid (×n)",
        help: "With γ = auto: the grid of the cross-validation, as multiples of the training size n (comma-separated).",
        default: "0.0625,0.125,0.25,0.5,1,2,4,8,16",
        methods: EP,
        requires: Requires::GammaAuto,
        group: Group::Ep,
        ..setting(
            "gamma_grid",
            "method.gamma_grid",
            Kind::Numbers(Range::POSITIVE),
        )
    },
    Setting {
        label: "form",
        help: "auto: the reduced (thin SVD) form when d ≥ n, else the primal one; or force primal or reduced.",
        default: "auto",
        methods: EP,
        group: Group::Ep,
        ..setting(
            "ep_form",
            "method.ep_form",
            Kind::Choice(&["auto", "primal", "reduced"]),
        )
    },
    Setting {
        label: "site storage",
        help: "Storage of the pair sites: auto (f64 unless they would need more than 1 GiB), f64, or f32 (half the memory).",
        default: "auto",
        methods: EP,
        group: Group::Ep,
        ..setting(
            "site_precision",
            "method.site_precision",
            Kind::Choice(&["auto", "f64", "f32"]),
        )
    },
    Setting {
        label: "ARD iterations",
        help: "ARD prior: most evidence iterations (each a warm-started EP run).",
        default: "100",
        methods: EP,
        priors: &[Ard],
        group: Group::Ep,
        ..setting("ard_iters", "method.ard_iters", Kind::Count(1))
    },
    Setting {
        label: "evidence at the end only",
        help: "Report log Z_EP only at the end instead of at every sweep (~15% faster sweeps).",
        methods: EP,
        group: Group::Ep,
        ..setting(
            "final_evidence_only",
            "method.final_evidence_only",
            Kind::Switch,
        )
    },
    Setting {
        label: "prior-site steps",
        help: "Spike-and-slab: steps of prior sites whose negative-site fix recurs: adaptive (a site capped at 0.2 grows back while its change keeps its sign) or strict (ALGORITHMS.md §5 to the letter).",
        default: "adaptive",
        methods: EP,
        priors: &[SpikeSlab],
        group: Group::Ep,
        ..setting(
            "site_steps",
            "method.site_steps",
            Kind::Choice(&["adaptive", "strict"]),
        )
    },
    Setting {
        label: "keep the fixes",
        help: "Spike-and-slab: keep §5's negative-site fix in the answer (default: when still active at convergence, EP continues without it to a true fixed point; primal form only).",
        methods: EP,
        priors: &[SpikeSlab],
        group: Group::Ep,
        ..setting("keep_fixes", "method.keep_fixes", Kind::Switch)
    },
    // Baselines and cross-validation.
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
        help: "Folds of the cross-validations that choose hyper-parameters (logit's λ, RankBoost's rounds, EP's γ = auto).",
        default: "5",
        methods: Methods::Only(&["logit", "rankboost", "ep"]),
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

pub fn setting_of(key: &str) -> Option<&'static Setting> {
    SETTINGS.iter().find(|s| s.key == key)
}

impl Setting {
    /// The CLI flag without the leading `--`.
    pub fn flag(&self) -> String {
        self.key.replace('_', "-")
    }

    /// Whether the setting applies to `method` (whatever the prior).
    pub fn applies_to_method(&self, method: &str) -> bool {
        match self.methods {
            Methods::All => true,
            Methods::Bayesian => super::registry::method(method).is_some_and(|m| m.bayesian),
            Methods::Only(names) => names.contains(&method),
        }
    }

    /// Whether the setting applies to `method` with `prior` (None: no prior).
    pub fn applies(&self, method: &str, prior: Option<PriorKind>) -> bool {
        self.applies_to_method(method)
            && (self.priors.is_empty() || prior.is_some_and(|p| self.priors.contains(&p)))
    }

    /// Whether `auto` is accepted for `method` with `prior`.
    pub fn auto_allowed(&self, method: &str, prior: Option<PriorKind>) -> bool {
        self.auto_for.iter().any(|(m, priors)| {
            *m == method && (priors.is_empty() || prior.is_some_and(|p| priors.contains(&p)))
        })
    }

    /// Why the setting does not apply to `method` with `prior` (for the message).
    pub fn not_applicable_reason(&self, method: &str, prior: Option<PriorKind>) -> String {
        if !self.applies_to_method(method) {
            let to = match self.methods {
                Methods::All => "every method".to_string(),
                Methods::Bayesian => "the Bayesian methods (smc, ep)".to_string(),
                Methods::Only(names) => names.join(", "),
            };
            let baseline = super::registry::method(method).is_some_and(|m| !m.bayesian);
            let what = if baseline {
                " (a baseline: no γ, no prior)"
            } else {
                ""
            };
            return format!("does not apply to {method}{what}; it applies to {to}");
        }
        let priors: Vec<&str> = self.priors.iter().map(|p| p.name()).collect();
        format!(
            "applies only with the {} prior, not {}",
            priors.join(" or "),
            prior.map_or("none", |p| p.name())
        )
    }

    /// The run form's hint for an empty field: what to type and the default.
    pub fn hint(&self, method: &str, prior: Option<PriorKind>) -> String {
        let auto = self.auto_allowed(method, prior);
        let what = match self.kind {
            Kind::Number(_) | Kind::Numbers(_) => "number",
            Kind::Count(_) => "whole number",
            Kind::Choice(_) | Kind::Switch => "",
            Kind::Gamma if auto => "number, Kn (e.g. 2n) or auto",
            Kind::Gamma => "number or Kn (e.g. 2n)",
            Kind::Tunable(_) if auto => "number or auto",
            Kind::Tunable(_) => "number",
            Kind::Text | Kind::TextList => "text",
        };
        let default = if !self.default.is_empty() {
            format!("default {}", self.default)
        } else if !self.unset.is_empty() {
            format!("empty = {}", self.unset)
        } else {
            String::new()
        };
        [what, default.as_str()]
            .iter()
            .filter(|s| !s.is_empty())
            .copied()
            .collect::<Vec<_>>()
            .join("; ")
    }

    /// The CLI's value name (`N`, `G|Kn|auto`, `auto|primal|reduced`, …).
    pub fn value_name(&self) -> String {
        let auto = if self.auto_for.is_empty() {
            ""
        } else {
            "|auto"
        };
        match self.kind {
            Kind::Number(_) => "X".into(),
            Kind::Count(_) => "N".into(),
            Kind::Choice(names) => names.join("|"),
            Kind::Switch => String::new(),
            Kind::Numbers(_) => "X1,X2,…".into(),
            Kind::Gamma => format!("G|Kn{auto}"),
            Kind::Tunable(_) => format!("X{auto}"),
            Kind::Text | Kind::TextList => "TEXT".into(),
        }
    }
}
