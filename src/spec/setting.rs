//! The types of the method registry's rows: a setting's kind, range, the
//! methods and priors it applies to, and what the front ends derive from a row
//! (applicability, the reason it does not apply, the form's hint, the CLI's
//! value name).

use super::registry;
use super::run_spec::{MethodSpec, PriorKind};

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

pub const fn range(lo: f64, hi: f64, lo_open: bool, hi_open: bool) -> Range {
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
    /// One of `words`, or `NAME:D` (a whole number D ≥ 1) for a NAME of
    /// `sized` (`exact`, `nystrom:128`).
    Sized {
        words: &'static [&'static str],
        sized: &'static [&'static str],
    },
}

/// The choices of a `Kind::Sized` as the help lists them (`auto|exact|rff:D`).
pub fn sized_names(words: &[&str], sized: &[&str]) -> Vec<String> {
    let mut all: Vec<String> = words.iter().map(|w| w.to_string()).collect();
    all.extend(sized.iter().map(|n| format!("{n}:D")));
    all
}

/// Checks a `Kind::Sized` value (case-insensitive).
pub fn check_sized(words: &[&str], sized: &[&str], text: &str) -> Result<(), String> {
    let t = text.trim().to_ascii_lowercase();
    let ok = match t.split_once(':') {
        None => words.contains(&t.as_str()),
        Some((name, d)) => sized.contains(&name) && d.parse::<usize>().is_ok_and(|d| d >= 1),
    };
    if ok {
        Ok(())
    } else {
        let names = sized_names(words, sized);
        Err(format!(
            "must be one of {} (D a whole number ≥ 1); got '{text}'",
            names.join(", ")
        ))
    }
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
    Vb,
    Gcs,
    Certificates,
}

impl Group {
    pub fn heading(self) -> &'static str {
        match self {
            Group::Data => "Data",
            Group::Posterior => "Gibbs posterior (smc, ep, vb, gcs)",
            Group::Baselines => "Baselines (logit, rankboost) and cross-validation",
            Group::Smc => "SMC",
            Group::Ep => "EP",
            Group::Vb => "VB",
            Group::Gcs => "Great-circle sampler (gcs)",
            Group::Certificates => "Certificates (smc, ep, vb, gcs)",
        }
    }
}

#[derive(Debug, Clone, Copy)]
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
    /// What a spec without the field reads as, for a choice not written at
    /// that value so that older specs keep theirs ("" = not such a choice).
    pub absent: &'static str,
    /// What leaving it unset means ("by cross-validation", "1e-4·v1").
    pub unset: &'static str,
    pub methods: Methods,
    /// Priors it applies to (empty: any, or none needed).
    pub priors: &'static [PriorKind],
    /// Where `auto` is accepted: (method, priors; empty = any prior).
    pub auto_for: &'static [(&'static str, &'static [PriorKind])],
    /// A choice shared by methods whose enums differ (`loss`): each method's
    /// own names (a method not listed takes every name of the kind).
    pub choices_for: &'static [(&'static str, &'static [&'static str])],
    pub requires: Requires,
    /// Shown in the run form.
    pub form: bool,
    pub group: Group,
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
            Methods::Bayesian => registry::method(method).is_some_and(|m| m.bayesian),
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

    /// The names a choice accepts for `method` (empty for other kinds).
    pub fn choices(&self, method: &str) -> &'static [&'static str] {
        let Kind::Choice(all) = self.kind else {
            return &[];
        };
        self.choices_for
            .iter()
            .find(|(m, _)| *m == method)
            .map_or(all, |(_, names)| names)
    }

    /// Why the setting does not apply to `method` with `prior` (for the message).
    pub fn not_applicable_reason(&self, method: &str, prior: Option<PriorKind>) -> String {
        if !self.applies_to_method(method) {
            let to = match self.methods {
                Methods::All => "every method".to_string(),
                Methods::Bayesian => format!(
                    "the Bayesian methods ({})",
                    registry::METHODS
                        .iter()
                        .filter(|m| m.bayesian)
                        .map(|m| m.name)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                Methods::Only(names) => names.join(", "),
            };
            let baseline = registry::method(method).is_some_and(|m| !m.bayesian);
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
        let sized_text;
        let what = match self.kind {
            Kind::Number(_) | Kind::Numbers(_) => "number",
            Kind::Count(_) => "whole number",
            Kind::Choice(_) | Kind::Switch => "",
            Kind::Gamma if auto && registry::THEORY_GAMMA.contains(&method) => {
                "number, Kn (e.g. 2n), auto or theory"
            }
            Kind::Gamma if auto => "number, Kn (e.g. 2n) or auto",
            Kind::Gamma => "number or Kn (e.g. 2n)",
            Kind::Tunable(_) if auto => "number or auto",
            Kind::Tunable(_) => "number",
            Kind::Text | Kind::TextList => "text",
            Kind::Sized { words, sized } => {
                sized_text = sized_names(words, sized).join(", ");
                sized_text.as_str()
            }
        };
        let method_gamma = (self.kind == Kind::Gamma)
            .then(|| MethodSpec::default_of(method).map(|m| m.default_gamma()))
            .flatten();
        let default = if let Some(g) = method_gamma {
            format!("default {g}")
        } else if !self.default.is_empty() {
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
            Kind::Gamma => format!("G|Kn{auto}|theory"),
            Kind::Tunable(_) => format!("X{auto}"),
            Kind::Text | Kind::TextList => "TEXT".into(),
            Kind::Sized { words, sized } => sized_names(words, sized).join("|"),
        }
    }
}
