//! The tables' arithmetic against hand-computed values, the specs against
//! `pacauc fit`'s, and resume (a record reused, a changed spec re-run).

use std::path::{Path, PathBuf};

use super::config::{DataPlan, data_plan, method_plan};
use super::runs::{RunId, RunResult, SplitData, Status, Summary, run_or_reuse, spec_of};
use super::stats::{mean_sd, median_range, paired};
use super::tables::{Cell, Tables};
use super::{GammaSource, Mode};
use crate::spec::{self, Gamma};

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-12
}

#[test]
fn mean_sd_paired_and_median_match_hand_computed_values() {
    // 0.7, 0.8, 0.9: mean 0.8, sd √((0.01 + 0 + 0.01)/2) = 0.1.
    let m = mean_sd(&[0.8, 0.9, 0.7]).unwrap();
    assert!(close(m.mean, 0.8) && close(m.sd.unwrap(), 0.1) && m.count == 3);
    let one = mean_sd(&[0.5]).unwrap();
    assert_eq!((one.sd, one.count), (None, 1));
    assert!(mean_sd(&[]).is_none());
    // Pairs on splits 0 and 1 only: differences 0.1 and 0.05, mean 0.075,
    // sd √(2·0.025²/1) = 0.0353553, se = sd/√2 = 0.025.
    let a = [Some(0.8), Some(0.9), None, Some(0.7)];
    let b = [Some(0.7), Some(0.85), Some(0.6), None];
    let p = paired(&a, &b).unwrap();
    assert_eq!(p.pairs, 2);
    assert!(close(p.mean, 0.075), "{}", p.mean);
    assert!((p.se.unwrap() - 0.025).abs() < 1e-12, "{:?}", p.se);
    assert_eq!(median_range(&[3.0, 1.0, 2.0]), Some((2.0, 1.0, 3.0)));
    assert_eq!(median_range(&[4.0, 1.0, 2.0, 8.0]), Some((3.0, 1.0, 8.0)));
    assert_eq!(median_range(&[f64::NAN]), None);
}

fn done(data: &str, key: &'static str, seed: u64, auc: f64, secs: f64) -> RunResult {
    RunResult {
        id: RunId {
            data: data.into(),
            key,
            seed,
        },
        status: Status::Reused,
        summary: Some(Summary {
            test_auc: Some(auc),
            test_se: None,
            fit_seconds: secs,
            gamma: Some(100.0 * (seed + 1) as f64),
            train_rows: 100,
            converged: true,
            alternative: None,
        }),
        wall: 0.0,
    }
}

fn other(data: &str, key: &'static str, seed: u64, status: Status) -> RunResult {
    RunResult {
        id: RunId {
            data: data.into(),
            key,
            seed,
        },
        status,
        summary: None,
        wall: 0.0,
    }
}

#[test]
fn tables_show_mean_sd_paired_differences_and_why_cells_are_empty() {
    let results = vec![
        done("pima", "logit", 0, 0.7, 1.0),
        done("pima", "logit", 1, 0.85, 2.0),
        done("pima", "logit", 2, 0.6, 3.0),
        done("pima", "ep", 0, 0.8, 0.5),
        done("pima", "ep", 1, 0.9, 0.5),
        other("pima", "ep", 2, Status::Failed("no fixed point".into())),
        // smc: one split failed, the other two not run yet.
        other("pima", "smc", 1, Status::Failed("no fixed point".into())),
        other("pima", "gcs", 0, Status::Skipped("too slow".into())),
        other("pima", "gcs", 1, Status::Skipped("too slow".into())),
        other("pima", "gcs", 2, Status::Skipped("too slow".into())),
        // smc split 0 answered by a named alternative (power EP, as EP's can be).
        RunResult {
            summary: done("pima", "smc", 0, 0.75, 1.0).summary.map(|s| Summary {
                alternative: Some("EP: the answer is power EP's at α = 0.5".into()),
                ..s
            }),
            ..done("pima", "smc", 0, 0.75, 1.0)
        },
    ];
    let cell = Cell::of(&results, "pima", "ep", 3);
    assert_eq!(cell.auc, vec![Some(0.8), Some(0.9), None]);
    assert_eq!((cell.done(), cell.failed.len()), (2, 1));
    let data = vec![DataPlan {
        splits: 3,
        ..data_plan("pima")
    }];
    let methods: Vec<_> = ["logit", "ep", "smc", "gcs"]
        .iter()
        .map(|k| method_plan(k).unwrap())
        .collect();
    let t = Tables {
        data: &data,
        methods: &methods,
        results: &results,
        mode: Mode::Full,
        command: "pacauc reproduce".into(),
        from_disk: false,
    };
    let md = t.table1_md();
    assert!(md.contains("6 of 12 runs have a record"), "{md}");
    // logit: 0.7, 0.85, 0.6 → mean 0.7167, sd 0.1258.
    assert!(md.contains("| pima | 3 | 0.7167 ± 0.126 (3) |"), "{md}");
    assert!(md.contains("0.8500 ± 0.071 (2) of 3; 1 failed [1]"), "{md}");
    assert!(
        md.contains("| 0.7500 (1) of 3; 1 failed [1]; 1 by power EP [2] |"),
        "{md}"
    );
    assert!(md.contains("skipped [3]"), "{md}");
    assert!(
        md.contains("1. no fixed point")
            && md.contains("2. EP: the answer is power EP's at α = 0.5")
            && md.contains("3. too slow"),
        "{md}"
    );
    assert!(md.contains("| 0.8617 | 0.8557 | 0.8646 | 0.8224 |"), "{md}");
    // ep − logit on splits 0, 1: 0.1 and 0.05.
    assert!(md.contains("+0.0750 ± 0.0250 (2)"), "{md}");
    // γ/n of ep: 1 and 2 → median 1.5.
    assert!(md.contains("1.500 [1.000, 2.000] CV"), "{md}");
    let csv = t.table1_csv();
    assert!(
        csv.lines()
            .any(|l| l.starts_with("pima,ep,3,2,1,0,0,0.850000,0.070711,0.075000,0.025000,2,cv,")),
        "{csv}"
    );
    assert!(
        csv.lines()
            .any(|l| l.starts_with("pima,smc,3,1,1,0,0,0.750000,") && l.ends_with(",1")),
        "{csv}"
    );
    let t2 = t.table2_md();
    assert!(
        t2.contains("| pima | 2.0 [1.0, 3.0] (3) | 0.50 [0.50, 0.50] (2) |"),
        "{t2}"
    );
    assert!(t2.contains("| 0.06 | 7.75 | 3.26 |"), "{t2}");
    assert!(
        t.table2_csv()
            .contains("pima,logit,3,2.0000,1.0000,3.0000,\n")
    );
}

#[test]
fn specs_are_pacauc_fits_and_gamma_follows_the_policy_table() {
    let file = PathBuf::from("d.csv");
    let pima = data_plan("pima");
    let logit = spec_of(
        method_plan("logit").unwrap(),
        &pima,
        &file,
        3,
        Mode::Full,
        None,
    )
    .unwrap();
    let fit = spec::from_given(file.clone(), "logit", &[("seed", "3")]).unwrap();
    assert_eq!(logit, fit);
    let ep = spec_of(
        method_plan("ep").unwrap(),
        &pima,
        &file,
        3,
        Mode::Full,
        None,
    )
    .unwrap();
    assert_eq!(ep.gamma, Some(Gamma::Auto));
    // smc takes EP's γ and cannot be made without it.
    let smc = method_plan("smc").unwrap();
    assert!(spec_of(smc, &pima, &file, 3, Mode::Full, None).is_err());
    let s = spec_of(smc, &pima, &file, 3, Mode::Full, Some(123.25)).unwrap();
    assert_eq!(s.gamma, Some(Gamma::Value(123.25)));
    // Credit: ARD at EP's γ (ARD in every fold costs too much); Pima: ARD by CV.
    let ard = method_plan("ep-ard").unwrap();
    assert_eq!(GammaSource::of(ard, &pima, Mode::Full), GammaSource::Cv);
    assert!(matches!(
        GammaSource::of(ard, &data_plan("credit"), Mode::Full),
        GammaSource::FromEp(_)
    ));
    // EEG: the default folds and grid; GP-EP at EP's γ, Nyström by auto, ℓ
    // the median distance (the exact prior and ℓ's evidence unset).
    let eeg = data_plan("eeg");
    let e = spec_of(method_plan("ep").unwrap(), &eeg, &file, 0, Mode::Full, None).unwrap();
    let spec::MethodSpec::Ep(es) = &e.method else {
        panic!("ep")
    };
    assert_eq!(es.folds, 5);
    assert_eq!(es.gamma_grid.len(), 9);
    assert!(eeg.skip_reason("gp-ep").is_none());
    let gp = method_plan("gp-ep").unwrap();
    assert!(matches!(
        GammaSource::of(gp, &eeg, Mode::Full),
        GammaSource::FromEp(_)
    ));
    let g = spec_of(gp, &eeg, &file, 1, Mode::Full, Some(89880.0)).unwrap();
    let p = g.prior.as_ref().expect("the gp prior");
    assert_eq!(p.gp_approx, spec::GpApproxSpec::Auto);
    assert_eq!(p.lengthscale, None);
    // gcs: adapted tangents, the tables' cells (pinned while the default is
    // ellipses); DNA and EEG ellipses around EP's Gaussian (EEG's still skipped: not converged in 424 CPU s).
    let directions = |name: &str| {
        let s = spec_of(
            method_plan("gcs").unwrap(),
            &data_plan(name),
            &file,
            0,
            Mode::Full,
            Some(50.0),
        )
        .unwrap();
        let spec::MethodSpec::Gcs(g) = &s.method else {
            panic!("gcs")
        };
        g.directions
    };
    use crate::engine::gcs::Directions;
    assert_eq!(directions("pima"), Directions::Adapted);
    assert_eq!(directions("dna"), Directions::Gaussian);
    assert_eq!(directions("eeg"), Directions::Gaussian);
    assert!(eeg.skip_reason("gcs").is_some());
    // Every method's spec is valid in both modes (EP's γ given).
    for m in super::METHODS {
        for mode in [Mode::Full, Mode::Quick] {
            spec_of(m, &pima, &file, 1, mode, Some(50.0))
                .unwrap_or_else(|e| panic!("{} {mode:?}: {e}", m.key));
        }
    }
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("pacauc-protocol-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn a_record_is_reused_and_a_changed_spec_is_run_again() {
    let dir = tmp("resume");
    let file = Path::new("demo-data/sparse_linear.csv");
    let plan = data_plan("sparse_linear");
    let m = method_plan("logit").unwrap();
    let id = RunId {
        data: "sparse_linear".into(),
        key: "logit",
        seed: 0,
    };
    let quick = spec_of(m, &plan, file, 0, Mode::Quick, None).unwrap();
    let (s1, r1) = run_or_reuse(&id, &quick, &dir, &mut SplitData::default());
    assert_eq!(s1, Status::Fresh);
    let (s2, r2) = run_or_reuse(&id, &quick, &dir, &mut SplitData::default());
    assert_eq!(s2, Status::Reused);
    assert_eq!(r1.unwrap().auc.test, r2.unwrap().auc.test);
    // The full protocol's spec (5 folds, not 3) differs: run again, record replaced.
    let full = spec_of(m, &plan, file, 0, Mode::Full, None).unwrap();
    assert_ne!(full, quick);
    let (s3, r3) = run_or_reuse(&id, &full, &dir, &mut SplitData::default());
    assert_eq!(s3, Status::Fresh);
    let saved = std::fs::read_to_string(id.record_path(&dir)).unwrap();
    let saved = crate::engine::record::RunRecord::from_json(&saved).unwrap();
    assert_eq!(spec::RunSpec::from_value(&saved.spec).unwrap(), full);
    assert_eq!(saved.auc.test, r3.unwrap().auc.test);
    let _ = std::fs::remove_dir_all(&dir);
}
