//! The registry against the spec's structs: every setting lives where its row
//! says, every field of a settings struct is a setting, every default as typed
//! is the struct's default, every choice is a value of its enum.

use std::collections::BTreeSet;
use std::path::PathBuf;

use super::registry::{METHODS, Methods, SETTINGS, Setting};
use super::run_spec::{DataSpec, MethodSpec, PriorKind, RunSpec};
use super::text::{from_given, value_at};
use super::{build, registry};
use crate::engine::Prior;

const PRIORS: [PriorKind; 4] = [
    PriorKind::Gaussian,
    PriorKind::Ard,
    PriorKind::SpikeSlab,
    PriorKind::Gp,
];

fn defaults(method: &str, prior: Option<PriorKind>) -> RunSpec {
    let mut s = RunSpec::for_method(DataSpec::of("d.csv"), method).unwrap();
    if let (Some(p), Some(k)) = (s.prior.as_mut(), prior) {
        p.kind = k;
    }
    s
}

/// (method, prior) pairs a setting applies to.
fn uses(s: &Setting) -> Vec<(&'static str, Option<PriorKind>)> {
    let mut out = Vec::new();
    for m in METHODS {
        let priors: Vec<Option<PriorKind>> = if m.bayesian {
            m.priors.iter().copied().map(Some).collect()
        } else {
            vec![None]
        };
        for p in priors {
            if s.applies(m.name, p) {
                out.push((m.name, p));
            }
        }
    }
    out
}

fn has_path(spec: &RunSpec, path: &str) -> bool {
    let v = spec.to_value();
    path.split('.').try_fold(&v, |v, k| v.get(k)).is_some()
}

#[test]
fn every_setting_lives_at_its_path_for_every_use() {
    for s in SETTINGS {
        let uses = uses(s);
        assert!(!uses.is_empty(), "{} applies to nothing", s.key);
        // Written only away from their default, so that records made before
        // keep their spec: absent from a default spec by design.
        if [
            "run",
            "ep_start",
            "ep_controller",
            "ep_power",
            "surrogate_rows",
        ]
        .contains(&s.key)
        {
            continue;
        }
        for (m, p) in uses {
            assert!(
                has_path(&defaults(m, p), s.path),
                "{}: no {} for {m}",
                s.key,
                s.path
            );
        }
    }
}

#[test]
fn every_field_of_the_settings_structs_is_a_setting() {
    let paths: BTreeSet<&str> = SETTINGS.iter().map(|s| s.path).collect();
    for m in METHODS {
        let spec = defaults(m.name, m.priors.first().copied());
        let v = spec.to_value();
        for (group, skip) in [("method", "name"), ("data", "path"), ("prior", "")] {
            let Some(obj) = v[group].as_object() else {
                continue;
            };
            for field in obj.keys().filter(|k| *k != skip) {
                let path = format!("{group}.{field}");
                assert!(
                    paths.contains(path.as_str()),
                    "{}: {path} has no registry row",
                    m.name
                );
                let s = SETTINGS.iter().find(|s| s.path == path).unwrap();
                if group == "method" {
                    assert!(
                        s.applies_to_method(m.name),
                        "{path} is a field of {} but not its setting",
                        m.name
                    );
                }
            }
        }
    }
    assert!(paths.contains("gamma"));
}

#[test]
fn defaults_as_typed_are_the_structs_defaults_and_choices_parse() {
    for s in SETTINGS {
        for (m, p) in uses(s) {
            let mut given: Vec<(&str, &str)> = Vec::new();
            if let Some(p) = p {
                given.push(("prior", p.name()));
            }
            if s.requires == registry::Requires::GammaAuto {
                let gamma = registry::setting_of("gamma").unwrap();
                if !gamma.auto_allowed(m, p) {
                    continue; // never given there: γ cannot be auto
                }
                given.push(("gamma", "auto"));
            }
            let base = from_given(PathBuf::from("d.csv"), m, &given).unwrap();
            // γ's default is the method's (vb: theory).
            let gamma_default = MethodSpec::default_of(m)
                .unwrap()
                .default_gamma()
                .to_string();
            let default = if s.key == "gamma" && s.requires == registry::Requires::Nothing {
                gamma_default.as_str()
            } else {
                s.default
            };
            if !default.is_empty() && s.key != "prior" {
                let mut with = given.clone();
                with.push((s.key, default));
                let typed = from_given(PathBuf::from("d.csv"), m, &with)
                    .unwrap_or_else(|e| panic!("{} default for {m}: {e}", s.key));
                assert_eq!(value_at(&typed, s), value_at(&base, s), "{} for {m}", s.key);
            }
            if let registry::Kind::Choice(_) = s.kind {
                for c in s.choices(m) {
                    if s.key == "prior"
                        && !registry::method(m)
                            .unwrap()
                            .priors
                            .iter()
                            .any(|p| p.name() == *c)
                    {
                        continue;
                    }
                    let mut with: Vec<(&str, &str)> =
                        given.iter().filter(|(k, _)| *k != s.key).copied().collect();
                    with.push((s.key, c));
                    if s.key == "kernel"
                        && matches!(*c, "pcn" | "sphere")
                        && p == Some(PriorKind::SpikeSlab)
                    {
                        continue; // refused: pcn and sphere need a Gaussian prior
                    }
                    from_given(PathBuf::from("d.csv"), m, &with)
                        .unwrap_or_else(|e| panic!("{} = {c} for {m}: {e}", s.key));
                }
            }
        }
    }
}

#[test]
fn methods_and_priors_are_consistent() {
    for m in METHODS {
        let spec = MethodSpec::default_of(m.name).expect("a settings struct per method");
        assert_eq!(spec.name(), m.name);
        assert_eq!(m.bayesian, !m.priors.is_empty(), "{}", m.name);
        for p in m.priors {
            assert!(PRIORS.contains(p));
        }
    }
    for m in registry::AUTORUN_ORDER {
        assert!(registry::method(m).is_some(), "{m}");
    }
    let keys: BTreeSet<&str> = SETTINGS.iter().map(|s| s.key).collect();
    assert_eq!(keys.len(), SETTINGS.len(), "a key is used twice");
    for s in SETTINGS {
        assert!(!s.help.is_empty(), "{} has no help", s.key);
        for (m, _) in s.auto_for {
            assert!(
                matches!(s.methods, Methods::All | Methods::Bayesian) || s.applies_to_method(m)
            );
        }
    }
}

#[test]
fn spike_slab_defaults_follow_theory() {
    let s = from_given(PathBuf::from("d.csv"), "ep", &[("prior", "spike-slab")]).unwrap();
    let Prior::SpikeSlab {
        spike_var,
        slab_var,
        incl,
    } = build::prior(s.prior.as_ref().unwrap(), 180, 0)
    else {
        panic!()
    };
    assert_eq!((spike_var, slab_var), (1e-4, 1.0));
    assert!((incl - (1.0 - (-1.0f64 / 180.0).exp())).abs() < 1e-15);
    let s = from_given(
        PathBuf::from("d.csv"),
        "ep",
        &[("prior", "spike-slab"), ("slab_var", "auto")],
    )
    .unwrap();
    let Prior::SpikeSlab { spike_var, .. } = build::prior(s.prior.as_ref().unwrap(), 5, 0) else {
        panic!()
    };
    assert_eq!(spike_var, 1e-4, "v1 tuned: v0 stays at 1e-4");
}

#[test]
fn gp_settings_build_the_gp_prior_and_are_refused_elsewhere() {
    use crate::engine::gp::{GpApprox, GpPrior, KernelKind, LengthScale};
    let given = [
        ("prior", "gp"),
        ("lengthscale", "auto"),
        ("gp_approx", "rff:64"),
        ("gamma", "400"),
    ];
    let s = from_given(PathBuf::from("d.csv"), "ep", &given).unwrap();
    assert_eq!(
        build::prior(s.prior.as_ref().unwrap(), 3, 7),
        Prior::Gp(GpPrior {
            kernel: KernelKind::Se,
            lengthscale: LengthScale::Auto,
            approx: GpApprox::Rff {
                features: 64,
                seed: 7
            },
        })
    );
    assert_eq!(
        crate::spec::command_line(&s),
        "pacauc fit d.csv --method ep --prior gp --lengthscale auto --gp-approx rff:64 --gamma 400"
    );
    let s = from_given(PathBuf::from("d.csv"), "smc", &[("prior", "gp")]).unwrap();
    let Prior::Gp(gp) = build::prior(s.prior.as_ref().unwrap(), 3, 0) else {
        panic!()
    };
    assert_eq!(
        (gp.lengthscale, gp.approx),
        (LengthScale::Median, GpApprox::Auto)
    );
    let refused = |m: &str, g: &[(&str, &str)], field: &str| {
        let e = from_given(PathBuf::from("d.csv"), m, g).unwrap_err();
        assert_eq!(e.field.as_deref(), Some(field), "{e}");
    };
    refused("ep", &[("lengthscale", "2")], "lengthscale"); // not the gp prior
    refused("logit", &[("prior", "gp")], "prior");
    refused(
        "smc",
        &[("prior", "gp"), ("lengthscale", "auto")],
        "lengthscale",
    );
    refused(
        "smc",
        &[("prior", "gp"), ("gp_approx", "nystrom:8")],
        "gp_approx",
    );
    refused("smc", &[("prior", "gp"), ("kernel", "rw")], "kernel");
    refused("ep", &[("prior", "gp"), ("ep_form", "reduced")], "ep_form");
    refused(
        "ep",
        &[
            ("prior", "gp"),
            ("gp_kernel", "linear"),
            ("lengthscale", "1"),
        ],
        "lengthscale",
    );
    refused(
        "ep",
        &[
            ("prior", "gp"),
            ("gp_kernel", "linear"),
            ("gp_approx", "rff:8"),
        ],
        "gp_approx",
    );
    refused(
        "ep",
        &[("prior", "gp"), ("gp_approx", "nystrom:0")],
        "gp_approx",
    );
    refused("ep", &[("prior", "gp"), ("pairs", "1000")], "pairs");
    refused("vb", &[("prior", "gp")], "prior");
}

#[test]
fn vb_defaults_to_the_theory_gamma_and_only_vb_takes_it() {
    let s = from_given(PathBuf::from("d.csv"), "vb", &[]).unwrap();
    assert_eq!(s.gamma, Some(super::Gamma::Theory));
    let s = from_given(
        PathBuf::from("d.csv"),
        "vb",
        &[("gamma", "auto"), ("folds", "3")],
    )
    .unwrap();
    assert_eq!(s.gamma, Some(super::Gamma::Auto));
    for m in ["ep", "smc"] {
        let e = from_given(PathBuf::from("d.csv"), m, &[("gamma", "theory")]).unwrap_err();
        assert!(e.message.contains("cannot be theory"), "{e}");
    }
    let e = from_given(PathBuf::from("d.csv"), "vb", &[("prior", "spike-slab")]).unwrap_err();
    assert!(e.message.contains("not available for vb"), "{e}");
    let e = from_given(PathBuf::from("d.csv"), "smc", &[("is_draws", "10")]).unwrap_err();
    assert!(e.message.contains("does not apply to smc"), "{e}");
    let s = from_given(PathBuf::from("d.csv"), "smc", &[("epsilon", "0.01")]).unwrap();
    assert_eq!(s.method.certificate(), Some((0.01, Some(0), 0.0)));
    assert!(from_given(PathBuf::from("d.csv"), "logit", &[("epsilon", "0.01")]).is_err());
}

/// `loss` is one setting of vb and gcs with each method's own choices.
#[test]
fn a_shared_choice_takes_each_methods_own_names() {
    let loss = registry::setting_of("loss").unwrap();
    assert_eq!(loss.choices("gcs"), ["auc", "label-noise"]);
    assert_eq!(loss.choices("vb"), ["auc", "zero-one", "hinge", "exp"]);
    for (m, bad) in [("gcs", "hinge"), ("vb", "label-noise")] {
        let e = from_given(PathBuf::from("d.csv"), m, &[("loss", bad)]).unwrap_err();
        assert!(e.to_string().contains("must be one of"), "{m}: {e}");
    }
}

/// A spec recorded before local SMC steps existed ran without them: it reads
/// back as 0 (a spec made now gets the default), so a replay or a reproduce
/// reuse check does not claim local steps it did not take.
#[test]
fn an_smc_spec_without_local_share_reads_as_none() {
    let mut v = serde_json::to_value(super::run_spec::SmcSpec::default()).unwrap();
    assert_eq!(v["local_share"], crate::engine::smc::LOCAL_SHARE);
    v.as_object_mut().unwrap().remove("local_share");
    let old: super::run_spec::SmcSpec = serde_json::from_value(v).unwrap();
    assert_eq!(old.local_share, 0.0);
}

/// Regrow is on for a new EP spec and written; a spec saved before the
/// default (no field) reads as off, one saved while it was a switch as its
/// bool; `ep_regrow = off` is not written and reads back off. Off is retired:
/// the engine always regrows, and stderr and the record's warnings say so.
#[test]
fn ep_regrow_off_is_retired_and_older_specs_say_so() {
    use super::run_spec::{EpRegrow, EpSpec};
    let ep = |s: &RunSpec| match &s.method {
        MethodSpec::Ep(e) => e.ep_regrow,
        _ => panic!("ep"),
    };
    let warned = |s: &RunSpec| {
        let w = super::ep_spec::retired_warnings(s);
        w.iter().any(|m| m.contains("--ep-regrow off is retired"))
    };
    let new = from_given(PathBuf::from("d.csv"), "ep", &[]).unwrap();
    assert_eq!(ep(&new), EpRegrow::On);
    assert!(!warned(&new));
    let mut v = new.to_value();
    assert_eq!(v["method"]["ep_regrow"], "on");
    v["method"].as_object_mut().unwrap().remove("ep_regrow");
    let before = RunSpec::from_value(&v).unwrap();
    assert_eq!(ep(&before), EpRegrow::Off);
    assert!(warned(&before));
    v["method"]["ep_regrow"] = serde_json::json!(true);
    assert_eq!(ep(&RunSpec::from_value(&v).unwrap()), EpRegrow::On);
    let off = from_given(PathBuf::from("d.csv"), "ep", &[("ep_regrow", "off")]).unwrap();
    assert!(off.to_value()["method"].get("ep_regrow").is_none());
    assert_eq!(
        ep(&RunSpec::from_value(&off.to_value()).unwrap()),
        EpRegrow::Off
    );
    assert!(warned(&off));
    let said = super::ep_spec::announce(&off).expect("announced");
    assert!(said.contains("--ep-regrow off is retired"), "{said}");
    // The engine has no switch: off builds the same engine as on.
    let engine = |s: &RunSpec| match &s.method {
        MethodSpec::Ep(e) => build::ep_engine(e, s.gamma, s.prior.as_ref(), 0).settings,
        _ => panic!("ep"),
    };
    assert_eq!(engine(&off), engine(&new));
    assert_eq!(EpSpec::reference().ep_regrow, EpRegrow::On);
    // The way back names it (it is not written, so it reads as absent).
    assert_eq!(super::text::to_args(&off)[3..], ["--ep-regrow", "off"]);
}

/// EP's driver (`ep_spec::default_driver`): continuation and anderson for a
/// new spec with any prior, written. A spec without the fields reads as
/// classic (retired: it runs the new driver and says so); the way back names
/// it. SMC's and the sampler's EP run the new driver too.
#[test]
fn ep_driver_defaults_for_every_prior_and_older_specs_read_as_classic() {
    use super::run_spec::{EpControllerSpec, EpSpec, EpStartSpec};
    let fit = |given: &[(&str, &str)]| from_given(PathBuf::from("d.csv"), "ep", given).unwrap();
    let ep = |s: &RunSpec| match &s.method {
        MethodSpec::Ep(e) => (e.ep_start, e.ep_controller),
        _ => panic!("ep"),
    };
    let flipped = (EpStartSpec::Continuation, EpControllerSpec::Anderson);
    let classic = (EpStartSpec::Classic, EpControllerSpec::Classic);
    let new = fit(&[]);
    assert_eq!(ep(&new), flipped);
    for prior in ["ard", "gp", "spike-slab"] {
        assert_eq!(ep(&fit(&[("prior", prior)])), flipped, "{prior}");
    }
    let mut v = new.to_value();
    assert_eq!(v["method"]["ep_start"], "continuation");
    assert_eq!(v["method"]["ep_controller"], "anderson");
    assert_eq!(ep(&RunSpec::from_value(&v).unwrap()), flipped);
    let m = v["method"].as_object_mut().unwrap();
    m.remove("ep_start");
    m.remove("ep_controller");
    assert_eq!(ep(&RunSpec::from_value(&v).unwrap()), classic);
    let ss = fit(&[("prior", "spike-slab")]);
    assert_eq!(ss.to_value()["method"]["ep_start"], "continuation");
    assert_eq!(super::text::to_args(&ss)[3..], ["--prior", "spike-slab"]);
    // The user's flags win, given before or after the prior.
    let given = [
        ("ep_start", "classic"),
        ("ep_controller", "classic"),
        ("prior", "spike-slab"),
    ];
    assert_eq!(ep(&fit(&given)), classic);
    let old = fit(&[("ep_start", "classic"), ("ep_controller", "classic")]);
    assert_eq!(ep(&old), classic);
    let w = old.to_value();
    assert!(w["method"].get("ep_start").is_none());
    assert_eq!(ep(&RunSpec::from_value(&w).unwrap()), classic);
    let args = super::text::to_args(&old);
    assert_eq!(
        args[3..],
        ["--ep-start", "classic", "--ep-controller", "classic"]
    );
    let r = EpSpec::reference();
    assert_eq!((r.ep_start, r.ep_controller), flipped);
    // Announced on stderr, saying where classic is retired.
    assert!(super::ep_spec::announce(&new).is_some());
    let said = super::ep_spec::announce(&old).expect("announced");
    assert!(said.contains("--ep-start classic is retired"), "{said}");
    assert!(
        said.contains("--ep-controller classic is retired"),
        "{said}"
    );
    let said = super::ep_spec::announce(&fit(&given)).expect("announced");
    assert!(said.contains("--ep-start classic is retired"), "{said}");
    // The engine runs its one driver; the record's warnings say what a
    // retired choice became (ARD reaches γ its own way: only the controller).
    let warned = |s: &RunSpec| super::ep_spec::retired_warnings(s);
    assert!(warned(&new).is_empty());
    let w = warned(&old);
    assert_eq!(w.len(), 2, "{w:?}");
    assert!(w[0].contains("--ep-controller classic is retired"), "{w:?}");
    assert!(w[1].contains("--ep-start classic is retired"), "{w:?}");
    let ard = fit(&[
        ("ep_start", "classic"),
        ("ep_controller", "classic"),
        ("prior", "ard"),
    ]);
    assert_eq!(warned(&ard).len(), 1);
}
