//! The command line against the method registry: the same settings, the same
//! checks, and a spec written as a command line parses back to itself.

use std::collections::BTreeSet;

use clap::{CommandFactory, Parser};

use super::{Cli, Command};
use crate::spec::registry::SETTINGS;
use crate::spec::{DataSpec, Gamma, MethodSpec, RunSpec, from_given, to_args};

fn long_flags(sub: &str) -> BTreeSet<String> {
    let mut cmd = Cli::command();
    cmd.build();
    cmd.find_subcommand(sub)
        .unwrap_or_else(|| panic!("no {sub}"))
        .get_arguments()
        .filter_map(|a| a.get_long().map(String::from))
        .collect()
}

#[test]
fn every_setting_is_a_fit_flag_and_every_fit_flag_a_setting() {
    let flags = long_flags("fit");
    let settings: BTreeSet<String> = SETTINGS.iter().map(|s| s.flag()).collect();
    let own: BTreeSet<String> = [
        "method",
        "format",
        "out",
        "threads",
        "help",
        "events",
        "ignore-cost",
    ]
    .map(String::from)
    .into();
    assert_eq!(
        flags.difference(&own).cloned().collect::<BTreeSet<_>>(),
        settings,
        "fit's flags besides its own options are exactly the registry's settings"
    );
}

fn parse_fit(args: &[String]) -> RunSpec {
    let argv = ["pacauc".to_string(), "fit".to_string()]
        .into_iter()
        .chain(args.iter().cloned());
    let cli = Cli::try_parse_from(argv).unwrap_or_else(|e| panic!("{args:?}: {e}"));
    let Some(Command::Fit(f)) = cli.command else {
        panic!("not fit")
    };
    f.spec(None).unwrap_or_else(|e| panic!("{args:?}: {e:?}"))
}

#[test]
fn a_spec_as_a_command_line_parses_back_to_itself() {
    let cases: &[(&str, &[(&str, &str)])] = &[
        ("logit", &[]),
        (
            "logit",
            &[
                ("lambda", "0.3"),
                ("drop", "id col"),
                ("drop", "x'y"),
                ("seed", "4"),
            ],
        ),
        (
            "rankboost",
            &[("rounds", "40"), ("folds", "3"), ("test_frac", "0")],
        ),
        (
            "smc",
            &[
                ("prior", "spike-slab"),
                ("inclusion_prior", "0.2"),
                ("kernel", "rw"),
                ("no_radial", ""),
                ("fixed_scale", ""),
                ("gamma", "1e-3"),
                ("particles", "600"),
            ],
        ),
        (
            "ep",
            &[
                ("gamma", "auto"),
                ("gamma_grid", "0.5,2"),
                ("prior", "ard"),
                ("ard_iters", "7"),
                ("target", "y"),
                ("positive", "yes"),
                ("missing", "error"),
                ("test", "t.csv"),
            ],
        ),
        (
            "ep",
            &[
                ("prior", "spike-slab"),
                ("slab_var", "auto"),
                ("spike_var", "1e-5"),
                ("keep_fixes", ""),
                ("site_steps", "strict"),
                ("gamma", "1.5n"),
                ("tol", "1e-7"),
            ],
        ),
    ];
    for (method, given) in cases {
        let spec = from_given("data dir/d.csv".into(), method, given).unwrap();
        assert_eq!(parse_fit(&to_args(&spec)), spec, "{method} {given:?}");
    }
}

#[test]
fn negative_numbers_reach_the_range_checks() {
    let args: Vec<String> = ["d.csv", "--method", "ep", "--gamma", "-1"]
        .map(String::from)
        .into();
    let argv = ["pacauc", "fit"].into_iter().map(String::from).chain(args);
    let Some(Command::Fit(f)) = Cli::try_parse_from(argv).unwrap().command else {
        panic!()
    };
    let super::CliError::Input(m) = f.spec(None).unwrap_err() else {
        panic!()
    };
    assert!(m.starts_with("--gamma must be a number > 0"), "{m}");
    let spec = parse_fit(&[
        "d.csv".into(),
        "--method".into(),
        "smc".into(),
        "--gamma".into(),
        "2n".into(),
    ]);
    assert_eq!(spec.gamma, Some(Gamma::PerN(2.0)));
    assert!(matches!(spec.method, MethodSpec::Smc(_)));
    assert_eq!(spec.data, DataSpec::of("d.csv"));
}
