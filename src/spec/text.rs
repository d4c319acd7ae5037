//! Settings as people type them — the CLI's flags, the run form's fields — to
//! a `RunSpec` and back. A setting is parsed and range-checked by its registry
//! row, refused when it does not apply to the method or prior, and written at
//! its path in the spec's JSON form. The way back (`to_args`) lists the
//! settings that differ from their defaults, as `pacauc fit` arguments.

use std::collections::BTreeSet;
use std::path::PathBuf;

use serde_json::{Value, json};

use super::error::SpecError;
use super::registry::{self, Kind, Requires, Setting};
use super::run_spec::{DataSpec, MethodSpec, PriorKind, RunSpec};
use super::values::{Gamma, Tunable};
use crate::engine::smc::settings::particles_floor_reason;

/// The spec of a run of `method` on the file `data` with the settings `given`
/// as typed (registry key, text); a repeatable setting may appear several times.
/// Everything that can be checked without the data is checked here.
pub fn from_given(
    data: PathBuf,
    method: &str,
    given: &[(&str, &str)],
) -> Result<RunSpec, SpecError> {
    let method_spec = MethodSpec::default_of(method).ok_or_else(|| {
        SpecError::field(
            "method",
            format!(
                "must be one of {}; got '{method}'",
                registry::method_names().join(", ")
            ),
        )
    })?;
    let mut spec = RunSpec::new(DataSpec::of(data), method_spec);
    let mut seen = BTreeSet::new();
    // The prior first: which settings apply depends on it.
    let mut ordered: Vec<&(&str, &str)> = given.iter().filter(|(k, _)| *k == "prior").collect();
    ordered.extend(given.iter().filter(|(k, _)| *k != "prior"));
    for &&(key, text) in &ordered {
        let s = registry::setting_of(key)
            .ok_or_else(|| SpecError::field(key, "is not a setting of pacauc"))?;
        if !seen.insert(key) && s.kind != Kind::TextList {
            return Err(SpecError::field(key, "is given twice"));
        }
        apply(&mut spec, s, text)?;
    }
    for key in &seen {
        let s = registry::setting_of(key).expect("checked above");
        if s.requires == Requires::GammaAuto && spec.gamma != Some(Gamma::Auto) {
            return Err(SpecError::field(
                key,
                "applies only when `gamma` is auto (it is the cross-validation's grid)",
            ));
        }
    }
    if seen.contains("test") && seen.contains("test_frac") {
        return Err(SpecError::field(
            "test_frac",
            "does not apply with a `test` file (the file is the test set)",
        ));
    }
    super::validate::check(&spec)?;
    Ok(spec)
}

/// Sets one setting of `spec` from its text (with its registry checks).
pub fn apply(spec: &mut RunSpec, s: &Setting, text: &str) -> Result<(), SpecError> {
    let method = spec.method_name();
    let prior = spec.prior_kind();
    if !s.applies(method, prior) {
        return Err(SpecError::field(
            s.key,
            s.not_applicable_reason(method, prior),
        ));
    }
    let value = parse_text(s, text, method, prior).map_err(|m| SpecError::field(s.key, m))?;
    if s.key == "prior" {
        let kind: PriorKind = serde_json::from_value(value.clone()).expect("registry choices");
        let accepted = registry::method(method).map_or(&[][..], |m| m.priors);
        if !accepted.contains(&kind) {
            return Err(SpecError::field(
                "prior",
                format!("{} is not available for {method}", kind.name()),
            ));
        }
    }
    set_at(spec, s, value)
}

/// A setting's text as a JSON value, checked against its kind.
fn parse_text(
    s: &Setting,
    text: &str,
    method: &str,
    prior: Option<PriorKind>,
) -> Result<Value, String> {
    let t = text.trim();
    let number = |t: &str| -> Result<f64, String> {
        t.parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .ok_or_else(|| format!("must be a number; got '{t}'"))
    };
    let in_range = |v: f64, r: registry::Range| -> Result<f64, String> {
        if r.contains(v) {
            Ok(v)
        } else {
            Err(format!("must be {}; got {v}", r.describe()))
        }
    };
    let no_auto = || {
        let where_: Vec<String> = s
            .auto_for
            .iter()
            .map(|(m, priors)| match priors {
                [] => m.to_string(),
                ps => format!(
                    "{m} with the {} prior",
                    ps.iter().map(|p| p.name()).collect::<Vec<_>>().join(" or ")
                ),
            })
            .collect();
        let with_prior = prior.map_or(String::new(), |p| format!(" with the {} prior", p.name()));
        let hint = if where_.is_empty() {
            String::new()
        } else {
            format!(
                "; it is chosen automatically only by `method` {}",
                where_.join(", ")
            )
        };
        format!("cannot be auto for {method}{with_prior}{hint}; give a number")
    };
    Ok(match s.kind {
        Kind::Number(r) => json!(in_range(number(t)?, r)?),
        Kind::Count(min) => {
            let v: u64 = t
                .parse()
                .map_err(|_| format!("must be a whole number ≥ {min}; got '{t}'"))?;
            if v < min {
                // The particle floor says why (evidence in its docs).
                return Err(if s.key == "particles" {
                    particles_floor_reason(v as usize)
                } else {
                    format!("must be ≥ {min}; got {v}")
                });
            }
            json!(v)
        }
        Kind::Choice(_) => {
            let names = s.choices(method);
            if !names.contains(&t) {
                return Err(format!("must be one of {}; got '{t}'", names.join(", ")));
            }
            json!(t)
        }
        Kind::Switch => match t {
            "" | "true" => json!(true),
            "false" => json!(false),
            _ => return Err(format!("is a switch (true or false); got '{t}'")),
        },
        Kind::Numbers(r) => {
            let v: Vec<f64> = t
                .split(',')
                .map(|x| number(x.trim()).and_then(|v| in_range(v, r)))
                .collect::<Result<_, _>>()?;
            json!(v)
        }
        Kind::Gamma => {
            let g = Gamma::parse(t)?;
            if g == Gamma::Auto && !s.auto_allowed(method, prior) {
                return Err(no_auto());
            }
            if g == Gamma::Theory && !registry::THEORY_GAMMA.contains(&method) {
                return Err(no_theory(method));
            }
            serde_json::to_value(g).expect("γ serialises")
        }
        Kind::Tunable(r) => {
            if t.eq_ignore_ascii_case("auto") {
                if !s.auto_allowed(method, prior) {
                    return Err(no_auto());
                }
                serde_json::to_value(Tunable::Auto).expect("serialises")
            } else {
                json!(in_range(number(t)?, r)?)
            }
        }
        Kind::Sized { words, sized } => {
            super::setting::check_sized(words, sized, t)?;
            json!(t.to_ascii_lowercase())
        }
        Kind::Text | Kind::TextList => {
            if t.is_empty() {
                return Err("must not be empty".into());
            }
            json!(t)
        }
    })
}

/// Why `gamma = theory` is refused for `method`.
pub(crate) fn no_theory(method: &str) -> String {
    format!(
        "cannot be theory for {method}; ARC16's theory value is for {} (give a number or a multiple of n)",
        registry::THEORY_GAMMA.join(", ")
    )
}

/// Writes `value` at the setting's path (a list setting gains one element).
fn set_at(spec: &mut RunSpec, s: &Setting, value: Value) -> Result<(), SpecError> {
    let mut v = spec.to_value();
    let slot = s.path.split('.').fold(&mut v, |v, k| &mut v[k]);
    match (s.kind, slot) {
        (Kind::TextList, Value::Array(items)) => items.push(value),
        (_, slot) => *slot = value,
    }
    // Fails only if a registry row and its struct disagree (the tests check them).
    *spec = serde_json::from_value(v)
        .map_err(|e| SpecError::field(s.key, format!("cannot be stored: {e}")))?;
    Ok(())
}

/// The value of a setting in `spec` (null when unset).
pub fn value_at(spec: &RunSpec, s: &Setting) -> Value {
    let v = spec.to_value();
    s.path
        .split('.')
        .try_fold(&v, |v, k| v.get(k))
        .cloned()
        .unwrap_or(Value::Null)
}

/// The text a user would type for a JSON value (None: unset or off).
fn text_of(s: &Setting, v: &Value) -> Option<String> {
    let num = |x: &Value| match x {
        Value::Number(n) if n.is_u64() => n.to_string(),
        Value::Number(n) => n.as_f64().map_or(n.to_string(), |f| f.to_string()),
        Value::String(t) => t.clone(),
        other => other.to_string(),
    };
    match (s.kind, v) {
        (_, Value::Null) if !s.absent.is_empty() => Some(s.absent.to_string()),
        (_, Value::Null) | (Kind::Switch, Value::Bool(false)) => None,
        (Kind::Switch, _) => Some(String::new()),
        (_, Value::Array(items)) => Some(items.iter().map(num).collect::<Vec<_>>().join(",")),
        (_, other) => Some(num(other)),
    }
}

/// The setting's value in `spec` as text, when it differs from the default of
/// the spec's method and prior (None: the default).
pub fn explicit_text(spec: &RunSpec, s: &Setting) -> Option<String> {
    if !s.applies(spec.method_name(), spec.prior_kind()) {
        return None;
    }
    let mut defaults = RunSpec::for_method(DataSpec::of(&spec.data.path), spec.method_name())?;
    // A prior's scales default the same whatever the prior; the kind is its own setting.
    if let (Some(d), Some(p), false) = (
        defaults.prior.as_mut(),
        spec.prior.as_ref(),
        s.key == "prior",
    ) {
        d.kind = p.kind;
    }
    let value = value_at(spec, s);
    if value == value_at(&defaults, s) {
        return None;
    }
    text_of(s, &value)
}

/// The `pacauc fit` arguments (after `fit`) of `spec`: the data file, the
/// method and every setting that differs from its default.
pub fn to_args(spec: &RunSpec) -> Vec<String> {
    let mut a = vec![
        spec.data.path.display().to_string(),
        "--method".into(),
        spec.method_name().into(),
    ];
    for s in registry::SETTINGS {
        if s.kind == Kind::TextList {
            // Each element is one occurrence.
            if let Value::Array(items) = value_at(spec, s) {
                for item in items {
                    a.push(format!("--{}", s.flag()));
                    a.push(item.as_str().unwrap_or_default().to_string());
                }
            }
            continue;
        }
        if let Some(text) = explicit_text(spec, s) {
            a.push(format!("--{}", s.flag()));
            if s.kind != Kind::Switch {
                a.push(text);
            }
        }
    }
    a
}

/// The equivalent command line, quoted for a POSIX shell.
pub fn command_line(spec: &RunSpec) -> String {
    let mut s = String::from("pacauc");
    if let Some(t) = spec.threads {
        s.push_str(&format!(" --threads {t}"));
    }
    s.push_str(" fit");
    for a in to_args(spec) {
        s.push(' ');
        let plain = !a.is_empty()
            && a.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+".contains(c));
        if plain {
            s.push_str(&a);
        } else {
            s.push('\'');
            s.push_str(&a.replace('\'', r"'\''"));
            s.push('\'');
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::run_spec::{EpSpec, SmcKernel};

    fn spec(method: &str, given: &[(&str, &str)]) -> Result<RunSpec, SpecError> {
        from_given(PathBuf::from("d.csv"), method, given)
    }

    #[test]
    fn settings_land_in_the_typed_spec() {
        let s = spec(
            "ep",
            &[
                ("gamma", "auto"),
                ("damping", "0.5"),
                ("gamma_grid", "0.5, 2"),
                ("drop", "id"),
                ("drop", "name"),
                ("seed", "7"),
            ],
        )
        .unwrap();
        assert_eq!(s.gamma, Some(Gamma::Auto));
        assert_eq!(s.data.drop, vec!["id", "name"]);
        assert_eq!(s.data.seed, 7);
        let MethodSpec::Ep(ep) = &s.method else {
            panic!()
        };
        assert_eq!(ep.damping, 0.5);
        assert_eq!(ep.gamma_grid, vec![0.5, 2.0]);
        let s = spec("smc", &[("kernel", "rw"), ("no_radial", "")]).unwrap();
        let MethodSpec::Smc(smc) = &s.method else {
            panic!()
        };
        assert_eq!((smc.kernel, smc.no_radial), (SmcKernel::Rw, true));
    }

    #[test]
    fn refusals_name_the_setting_and_say_why() {
        let e = spec("logit", &[("gamma", "2")]).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("gamma"));
        assert!(e.message.contains("does not apply to logit"), "{e}");
        let e = spec("ep", &[("gamma", "-1")]).unwrap_err();
        assert!(e.message.contains("must be a number > 0"), "{e}");
        let e = spec("gcs", &[("gamma", "auto")]).unwrap_err();
        assert!(e.message.contains("cannot be auto for gcs"), "{e}");
        // Every EP prior takes γ = auto; SMC's GP prior does not.
        assert!(spec("ep", &[("prior", "spike-slab"), ("gamma", "auto")]).is_ok());
        let e = spec("smc", &[("prior", "gp"), ("gamma", "auto")]).unwrap_err();
        assert!(e.message.contains("gp prior"), "{e}");
        let e = spec("ep", &[("ard_iters", "5")]).unwrap_err();
        assert!(e.message.contains("only with the ard prior"), "{e}");
        let e = spec("ep", &[("gamma_grid", "1,2")]).unwrap_err();
        assert!(e.message.contains("only when `gamma` is auto"), "{e}");
        let e = spec("smc", &[("ess", "1.5")]).unwrap_err();
        assert_eq!(e.to_string(), "ess must be in (0, 1); got 1.5");
        let e = spec("smc", &[("particles", "-3")]).unwrap_err();
        assert!(e.message.contains("whole number ≥ 100"), "{e}");
        let e = spec("smc", &[("particles", "2")]).unwrap_err();
        assert!(e.message.contains("in one step"), "the floor says why: {e}");
        let e = spec("logit", &[("test", "t.csv"), ("test_frac", "0.3")]).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("test_frac"));
        assert!(spec("nonsense", &[]).is_err());
        assert!(spec("logit", &[("seed", "1"), ("seed", "2")]).is_err());
    }

    #[test]
    fn the_way_back_lists_what_differs_from_the_defaults() {
        let s = spec(
            "ep",
            &[
                ("prior", "ard"),
                ("gamma", "2n"),
                ("drop", "id col"),
                ("tol", "1e-5"),
            ],
        )
        .unwrap();
        assert_eq!(
            command_line(&s),
            "pacauc fit d.csv --method ep --drop 'id col' --prior ard --gamma 2n --tol 0.00001"
        );
        let back: Vec<String> = to_args(&s);
        assert_eq!(back[..3], ["d.csv", "--method", "ep"]);
        let def = RunSpec::for_method(DataSpec::of("d.csv"), "ep").unwrap();
        assert_eq!(to_args(&def), ["d.csv", "--method", "ep"]);
        assert_eq!(def.method, MethodSpec::Ep(EpSpec::default()));
    }
}
