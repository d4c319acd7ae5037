//! Every refusal of a run specification, in one place: `check` before the data
//! are read (ranges, settings that do not apply, rules between settings), and
//! `validate` once the training size n and the dimension d are known. Engines
//! check again (they are a library of their own), but a spec that passes here
//! never gets an engine's refusal.

use serde_json::Value;

use super::error::SpecError;
use super::registry::{self, Kind, Requires, Setting};
use super::run_spec::{
    DataSpec, GcsLoss, GcsSpec, GpKernel, MethodSpec, PriorKind, PriorSpec, RunSpec, SmcKernel,
};
use super::text::value_at;
use super::values::{Gamma, GpApproxSpec, Tunable};
use crate::engine::smc::settings::{MIN_PARTICLES, particles_floor_reason};

/// Smallest spike variance as a share of the slab variance (ALGORITHMS.md §5).
pub const MIN_SPIKE_OVER_SLAB: f64 = 1e-6;

/// The checks that need no data.
pub fn check(spec: &RunSpec) -> Result<(), SpecError> {
    let method = spec.method_name();
    let prior = spec.prior_kind();
    let bayesian = registry::method(method).is_some_and(|m| m.bayesian);
    if bayesian != spec.gamma.is_some() || bayesian != spec.prior.is_some() {
        let what = if bayesian {
            "needs γ and a prior"
        } else {
            "takes no γ and no prior"
        };
        return Err(SpecError::field("method", format!("{method} {what}")));
    }
    if let MethodSpec::Smc(smc) = &spec.method
        && smc.particles < MIN_PARTICLES
    {
        return Err(SpecError::field(
            "particles",
            particles_floor_reason(smc.particles),
        ));
    }
    let mut defaults = RunSpec::for_method(DataSpec::of(&spec.data.path), method)
        .expect("a spec's method is registered");
    if let (Some(d), Some(k)) = (defaults.prior.as_mut(), prior) {
        d.kind = k;
    }
    for s in registry::SETTINGS {
        let value = value_at(spec, s);
        let is_default = value == value_at(&defaults, s);
        if !s.applies(method, prior) {
            if !is_default {
                return Err(SpecError::field(
                    s.key,
                    s.not_applicable_reason(method, prior),
                ));
            }
            continue;
        }
        if s.requires == Requires::GammaAuto && !is_default && spec.gamma != Some(Gamma::Auto) {
            return Err(SpecError::field(
                s.key,
                "applies only when `gamma` is auto (it is the cross-validation's grid)",
            ));
        }
        check_value(s, &value, method, prior).map_err(|m| SpecError::field(s.key, m))?;
    }
    if let Some(p) = &spec.prior
        && p.kind == PriorKind::SpikeSlab
    {
        let slab = p.slab_var.value().unwrap_or(1.0);
        if let Some(v0) = p.spike_var {
            let min = MIN_SPIKE_OVER_SLAB * slab;
            if v0 < min {
                return Err(SpecError::field(
                    "spike_var",
                    format!(
                        "({v0:e}) must be ≥ 1e-6 × the slab variance, {min:e}: a near-Dirac spike breaks EP's natural parameters"
                    ),
                ));
            }
            if v0 >= slab && !p.slab_var.is_auto() {
                return Err(SpecError::field(
                    "spike_var",
                    format!("({v0}) must be below the slab variance `slab_var` ({slab})"),
                ));
            }
        }
    }
    if let Some(p) = &spec.prior
        && p.kind == PriorKind::Gp
    {
        check_gp(p, method)?;
    }
    if let MethodSpec::Smc(smc) = &spec.method {
        if let Some(p) = smc.waste_free
            && (!smc.particles.is_multiple_of(p) || smc.particles / p < 2)
        {
            return Err(SpecError::field(
                "waste_free",
                format!(
                    "({p}): `particles` ({}) must be a multiple of P with at least 2 chains",
                    smc.particles
                ),
            ));
        }
        if let Some(r) = smc.run {
            if smc.runs < 2 || r > smc.runs {
                return Err(SpecError::field(
                    "run",
                    format!(
                        "({r}) must be one of the runs 1..=R of `runs` R ≥ 2 (runs is {})",
                        smc.runs
                    ),
                ));
            }
            if spec.gamma == Some(Gamma::Auto) {
                return Err(SpecError::field(
                    "run",
                    "does not apply with `gamma` auto (the runs of the final fit follow the \
                     cross-validation in one process)",
                ));
            }
        }
        if smc.kernel == SmcKernel::Pcn && prior == Some(PriorKind::SpikeSlab) {
            return Err(SpecError::field(
                "kernel",
                "pcn needs a Gaussian prior (gaussian or ard); use rw or gpcn",
            ));
        }
        if smc.kernel == SmcKernel::Sphere && prior == Some(PriorKind::SpikeSlab) {
            return Err(SpecError::field(
                "kernel",
                "sphere needs a Gaussian prior (gaussian or ard); use rw or gpcn",
            ));
        }
    }
    if let MethodSpec::Gcs(gcs) = &spec.method {
        check_gcs(gcs, spec.gamma)?;
    }
    Ok(())
}

/// The great-circle sampler's rules between settings.
fn check_gcs(gcs: &GcsSpec, gamma: Option<Gamma>) -> Result<(), SpecError> {
    let defaults = GcsSpec::default();
    if gcs.loss == GcsLoss::Auc && gcs.noise != defaults.noise {
        return Err(SpecError::field(
            "noise",
            "applies only with `loss` label-noise",
        ));
    }
    if gcs.loss == GcsLoss::LabelNoise && gamma.is_some_and(|g| g != Gamma::default()) {
        return Err(SpecError::field(
            "gamma",
            "does not apply with `loss` label-noise: its γ on the error rate is n·ln((1 − q)/q), set by `noise`",
        ));
    }
    // The engine keeps every draw after warm-up (no thinning): 8 per chain at least.
    if gcs.max_steps < gcs.warmup + 8 {
        return Err(SpecError::field(
            "max_steps",
            format!(
                "({}) must leave at least 8 kept draws per chain after `warmup` ({} steps)",
                gcs.max_steps, gcs.warmup
            ),
        ));
    }
    Ok(())
}

/// The GP prior's rules between settings.
fn check_gp(p: &PriorSpec, method: &str) -> Result<(), SpecError> {
    if p.gp_kernel == GpKernel::Linear {
        if p.lengthscale.is_some() {
            return Err(SpecError::field(
                "lengthscale",
                "applies only to the se kernel; the linear kernel has no length-scale",
            ));
        }
        if matches!(p.gp_approx, GpApproxSpec::Rff(_)) {
            return Err(SpecError::field(
                "gp_approx",
                "cannot be rff with the linear kernel: random Fourier features approximate the se kernel",
            ));
        }
    }
    if method == "smc" && matches!(p.gp_approx, GpApproxSpec::Nystrom(_) | GpApproxSpec::Rff(_)) {
        return Err(SpecError::field(
            "gp_approx",
            "cannot be nystrom or rff for smc, which samples the exact GP prior (in score space); the approximations are for ep",
        ));
    }
    Ok(())
}

/// A value against its registry row: range, and `auto` only where allowed.
fn check_value(
    s: &Setting,
    v: &Value,
    method: &str,
    prior: Option<PriorKind>,
) -> Result<(), String> {
    let in_range = |x: f64, r: registry::Range| {
        if r.contains(x) {
            Ok(())
        } else {
            Err(format!("must be {}; got {x}", r.describe()))
        }
    };
    let auto_ok = || {
        if s.auto_allowed(method, prior) {
            return Ok(());
        }
        // The method takes auto with other priors: say which.
        let priors = s
            .auto_for
            .iter()
            .find(|(m, _)| *m == method)
            .map(|(_, p)| *p);
        match (priors, prior) {
            (Some(ps), Some(p)) if !ps.is_empty() => Err(format!(
                "cannot be auto for {method} with the {} prior (only with the {} prior)",
                p.name(),
                ps.iter().map(|k| k.name()).collect::<Vec<_>>().join(", ")
            )),
            _ => Err(format!("cannot be auto for {method}")),
        }
    };
    match (s.kind, v) {
        (_, Value::Null) => Ok(()),
        (Kind::Number(r), Value::Number(n)) => in_range(n.as_f64().unwrap_or(f64::NAN), r),
        (Kind::Count(min), Value::Number(n)) => match n.as_u64() {
            Some(x) if x >= min => Ok(()),
            _ => Err(format!("must be a whole number ≥ {min}; got {n}")),
        },
        (Kind::Numbers(r), Value::Array(items)) => {
            if items.is_empty() {
                return Err("must list at least one number".into());
            }
            items
                .iter()
                .try_for_each(|x| in_range(x.as_f64().unwrap_or(f64::NAN), r))
        }
        (Kind::Gamma, v) => match serde_json::from_value::<Gamma>(v.clone()) {
            Ok(Gamma::Auto) => auto_ok(),
            Ok(Gamma::Theory) if registry::THEORY_GAMMA.contains(&method) => Ok(()),
            Ok(Gamma::Theory) => Err(super::text::no_theory(method)),
            Ok(Gamma::Value(g) | Gamma::PerN(g)) if g.is_finite() && g >= 0.0 => Ok(()),
            Ok(g) => Err(format!("must be a number ≥ 0 or a multiple of n; got {g}")),
            Err(e) => Err(e.to_string()),
        },
        (Kind::Sized { words, sized }, Value::String(t)) => {
            super::setting::check_sized(words, sized, t)
        }
        (Kind::Tunable(r), v) => match serde_json::from_value::<Tunable>(v.clone()) {
            Ok(Tunable::Auto) => auto_ok(),
            Ok(Tunable::Value(x)) => in_range(x, r),
            Err(e) => Err(e.to_string()),
        },
        _ => Ok(()),
    }
}

/// The sizes the data-dependent checks need.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dims {
    /// Training rows.
    pub n: usize,
    /// Features (after encoding and dropping).
    pub d: usize,
}

/// `check` and the checks that need the training size and dimension.
pub fn validate(spec: &RunSpec, dims: Dims) -> Result<(), SpecError> {
    check(spec)?;
    if let MethodSpec::Smc(smc) = &spec.method
        && let Some(c) = smc.scale
    {
        let gaussian = matches!(
            spec.prior_kind(),
            Some(PriorKind::Gaussian | PriorKind::Ard)
        );
        let max = super::build::smc_kernel(smc.kernel)
            .resolve(dims.d, gaussian)
            .max_scale(dims.d);
        if c > max {
            return Err(SpecError::field(
                "scale",
                format!(
                    "must be in (0, {max}] for this kernel and d = {}; got {c}",
                    dims.d
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::run_spec::SmcSpec;

    #[test]
    fn programmatic_specs_get_the_same_refusals() {
        let data = DataSpec::of("d.csv");
        let mut s = RunSpec::for_method(data.clone(), "smc").unwrap();
        assert_eq!(check(&s), Ok(()));
        s.method = MethodSpec::Smc(SmcSpec {
            particles: 100,
            waste_free: Some(30),
            ..SmcSpec::default()
        });
        assert_eq!(check(&s).unwrap_err().field.as_deref(), Some("waste_free"));
        let mut s = RunSpec::for_method(data.clone(), "ep").unwrap();
        s.prior = Some(PriorSpec {
            kind: PriorKind::SpikeSlab,
            spike_var: Some(1e-9),
            ..PriorSpec::default()
        });
        assert!(check(&s).unwrap_err().message.contains("1e-6"));
        s.prior = Some(PriorSpec {
            var: 4.0,
            kind: PriorKind::SpikeSlab,
            ..PriorSpec::default()
        });
        assert!(
            check(&s)
                .unwrap_err()
                .message
                .contains("only with the gaussian or ard prior")
        );
        let mut s = RunSpec::for_method(data.clone(), "smc").unwrap();
        s.gamma = Some(Gamma::Auto);
        s.prior = Some(PriorSpec {
            kind: PriorKind::Gp,
            ..PriorSpec::default()
        });
        let m = check(&s).unwrap_err().message;
        assert!(
            m.contains("cannot be auto for smc with the gp prior (only with the gaussian, ard, spike-slab prior)"),
            "{m}"
        );
        let mut s = RunSpec::for_method(data, "logit").unwrap();
        s.gamma = Some(Gamma::Value(1.0));
        assert_eq!(check(&s).unwrap_err().field.as_deref(), Some("method"));
    }

    #[test]
    fn the_step_size_cap_depends_on_the_dimension() {
        let mut s = RunSpec::for_method(DataSpec::of("d.csv"), "smc").unwrap();
        s.method = MethodSpec::Smc(SmcSpec {
            kernel: SmcKernel::Rw,
            scale: Some(3.0),
            ..SmcSpec::default()
        });
        assert!(validate(&s, Dims { n: 100, d: 4 }).is_ok()); // cap 10·2.38/2
        assert!(validate(&s, Dims { n: 100, d: 400 }).is_err()); // cap 1.19
    }
}
