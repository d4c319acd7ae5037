//! The record as the model: `fit TRAIN --test TEST --out r.json`, then
//! `predict r.json TEST` gives the fit's own test scores (the same AUC to
//! 1e-12), whatever the order of the columns; rows that cannot be scored get a
//! status and the others are still scored; old records are refused.

mod common;
use common::{json, pacauc};

use std::path::{Path, PathBuf};

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("pacauc-predict-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The demo file cut into a training and a test file (the test one also with
/// its columns reversed and an extra column).
fn split_demo(dir: &Path) -> (String, String, String) {
    let text = std::fs::read_to_string("demo-data/sparse_linear.csv").unwrap();
    let mut lines = text.lines();
    let header = lines.next().unwrap();
    let rows: Vec<&str> = lines.collect();
    let (train, test) = rows.split_at(750);
    let write = |name: &str, body: String| {
        let p = dir.join(name);
        std::fs::write(&p, body).unwrap();
        p.display().to_string()
    };
    let reversed = |line: &str, extra: &str| {
        let mut f: Vec<&str> = line.split(',').collect();
        f.reverse();
        f.insert(3, extra);
        f.join(",")
    };
    let shuffled: Vec<String> = test.iter().map(|l| reversed(l, "9")).collect();
    (
        write("train.csv", format!("{header}\n{}\n", train.join("\n"))),
        write("test.csv", format!("{header}\n{}\n", test.join("\n"))),
        write(
            "shuffled.csv",
            format!("{}\n{}\n", reversed(header, "notes"), shuffled.join("\n")),
        ),
    )
}

/// The AUC of a `predict` CSV's scores against the 0/1 last column of `data`.
fn auc_of(scores_csv: &str, data: &str) -> f64 {
    let scores: Vec<f64> = scores_csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(1).unwrap().parse().unwrap())
        .collect();
    let text = std::fs::read_to_string(data).unwrap();
    let y: Vec<bool> = text
        .lines()
        .skip(1)
        .map(|l| l.rsplit(',').next().unwrap() == "1")
        .collect();
    pacauc::engine::metrics::auc(&scores, &y)
}

#[test]
fn round_trip_for_every_method_and_prior() {
    // (The GP prior's reduced variance against the whole covariance: tests/gp_spread.rs.)
    let dir = tmp("round");
    let (train, test, shuffled) = split_demo(&dir);
    let cases: &[(&str, &[&str], bool)] = &[
        ("logit", &["--method", "logit"], false),
        (
            "rankboost",
            &["--method", "rankboost", "--rounds", "60"],
            false,
        ),
        ("ep", &["--method", "ep"], true),
        (
            "ep-ard",
            &["--method", "ep", "--prior", "ard", "--ard-iters", "5"],
            true,
        ),
        (
            "ep-ss",
            &[
                "--method",
                "ep",
                "--prior",
                "spike-slab",
                "--gamma",
                "1.5n",
                "--inclusion-prior",
                "0.2",
            ],
            true,
        ),
        ("smc", &["--method", "smc", "--particles", "1000"], true),
        // GP records: exact (the reduced predictive variance) and Nyström
        // (the weights' covariance).
        (
            "gp",
            &["--method", "ep", "--prior", "gp", "--gamma", "400"],
            true,
        ),
        (
            "gp-nystrom",
            &[
                "--method",
                "ep",
                "--prior",
                "gp",
                "--gamma",
                "400",
                "--gp-approx",
                "nystrom:40",
            ],
            true,
        ),
        (
            "vb",
            &["--method", "vb", "--family", "full", "--is-draws", "0"],
            true,
        ),
        (
            "vb-hinge",
            &["--method", "vb", "--loss", "hinge", "--is-draws", "0"],
            true,
        ),
        (
            "gcs",
            &["--method", "gcs", "--min-ess", "100", "--max-steps", "400"],
            true,
        ),
    ];
    for (name, args, has_sd) in cases {
        let rec = dir.join(format!("{name}.json")).display().to_string();
        let scores = dir.join(format!("{name}.csv")).display().to_string();
        let mut fit = vec![
            "fit",
            train.as_str(),
            "--test",
            test.as_str(),
            "--out",
            rec.as_str(),
        ];
        fit.extend_from_slice(args);
        let v = json(&pacauc(&fit));
        assert_eq!(v["record_version"], 2);
        if name.starts_with("gp") {
            // GP-EP's q is over the training scores: no θ-space certificate
            // or IS check, and the record and `pacauc bound` say why.
            assert!(v["bound"].is_null(), "{name}");
            assert!(v["details"].get("is_check").is_none(), "{name}");
            let why = v["details"]["uncertified"]["bound"].as_str().unwrap();
            assert!(why.contains("training scores"), "{name}: {why}");
            assert!(v["details"]["uncertified"]["is_check"].is_string());
            let out = pacauc(&["bound", &rec]);
            assert_eq!(out.status.code(), Some(2), "{name}");
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(err.contains("training scores"), "{name}: {err}");
        }
        let out = pacauc(&["predict", &rec, &test, "--out", &scores]);
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("scored 250 of 250") && err.contains("AUC"),
            "{name}: {err}"
        );
        let csv = std::fs::read_to_string(&scores).unwrap();
        let header = csv.lines().next().unwrap();
        // Sample-based records also hold the posterior's vote.
        let sampled = matches!(*name, "smc" | "gcs");
        assert_eq!(
            header,
            match (*has_sd, sampled) {
                (true, true) => "row,score,score_sd,vote,agreement,status",
                (true, false) => "row,score,score_sd,status",
                _ => "row,score,status",
            },
            "{name}"
        );
        let want = v["auc"]["test"].as_f64().unwrap();
        let got = auc_of(&csv, &test);
        assert!(
            (got - want).abs() <= 1e-12,
            "{name}: predict AUC {got} vs the fit's {want}"
        );
        // The same rows with the columns in another order (and one more): the same scores.
        let out = pacauc(&["predict", &rec, &shuffled]);
        assert!(out.status.success());
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            csv,
            "{name}: column order matters"
        );
        // JSON: the same AUC as the record's.
        let j = json(&pacauc(&["predict", &rec, &test, "--format", "json"]));
        assert_eq!(j["auc"]["auc"].as_f64().unwrap(), want, "{name}");
        assert_eq!(j["auc"]["rows"], 250);
        assert_eq!(
            j["rows"][0]["row"], 2,
            "rows are line numbers (the header is line 1)"
        );
        if *has_sd {
            let sd = j["rows"][0]["score_sd"].as_f64().unwrap();
            assert!(sd > 0.0 && sd.is_finite(), "{name}: score_sd {sd}");
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn rows_that_cannot_be_scored_get_a_status() {
    let dir = tmp("status");
    let rec = dir.join("clinic.json").display().to_string();
    json(&pacauc(&[
        "fit",
        "demo-data/messy_clinic.csv",
        "--drop",
        "patient_id",
        "--method",
        "ep",
        "--out",
        &rec,
    ]));
    let text = std::fs::read_to_string("demo-data/messy_clinic.csv").unwrap();
    let header = text.lines().next().unwrap().to_string();
    let cols: Vec<&str> = header.split(',').collect();
    let site = cols.iter().position(|c| *c == "site").unwrap();
    let age = cols.iter().position(|c| *c == "age").unwrap();
    // Complete rows of the training file.
    let rows: Vec<String> = text
        .lines()
        .skip(1)
        .filter(|l| !l.split(',').any(|c| c.is_empty() || c == "NA" || c == "?"))
        .take(6)
        .map(String::from)
        .collect();
    let edit = |row: &str, col: usize, value: &str| {
        let mut f: Vec<&str> = row.split(',').collect();
        f[col] = value;
        f.join(",")
    };
    let bad = [
        rows[0].clone(),
        edit(&rows[1], site, "west"),
        rows[2].clone(),
        edit(&rows[3], age, ""),
        rows[4].clone(),
    ];
    let path = dir.join("new.csv");
    std::fs::write(&path, format!("{header}\n{}\n", bad.join("\n"))).unwrap();
    let clean = dir.join("clean.csv");
    std::fs::write(&clean, format!("{header}\n{}\n", rows[..5].join("\n"))).unwrap();
    let predict = |p: &Path| {
        json(&pacauc(&[
            "predict",
            &rec,
            p.to_str().unwrap(),
            "--format",
            "json",
        ]))
    };
    let (j, c) = (predict(&path), predict(&clean));
    let status: Vec<&str> = j["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["status"].as_str().unwrap())
        .collect();
    assert_eq!(status[0], "ok");
    assert_eq!(status[1], "'west' in 'site' was not seen in training");
    assert_eq!(status[3], "missing value in 'age'");
    assert!(j["rows"][1]["score"].is_null() && j["rows"][3]["score"].is_null());
    for i in [0, 2, 4] {
        assert_eq!(
            j["rows"][i]["score"], c["rows"][i]["score"],
            "row {i} scored as in a clean file"
        );
    }
    assert_eq!(j["not_scored"], 2);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn old_records_are_refused_and_outputs_are_checked_first() {
    let dir = tmp("old");
    let rec = dir.join("r.json");
    json(&pacauc(&[
        "fit",
        "demo-data/sparse_linear.csv",
        "--out",
        rec.to_str().unwrap(),
    ]));
    let text = std::fs::read_to_string(&rec).unwrap();
    let old = dir.join("old.json");
    std::fs::write(
        &old,
        text.replacen("\"record_version\": 2", "\"record_version\": 1", 1),
    )
    .unwrap();
    let newer = dir.join("newer.json");
    std::fs::write(
        &newer,
        text.replacen("\"record_version\": 2", "\"record_version\": 9", 1),
    )
    .unwrap();
    for (file, found, fix) in [
        (&old, "record format 1", "fit the model again"),
        (&newer, "record format 9", "install a newer pacauc"),
    ] {
        for cmd in ["predict", "replay"] {
            let mut args = vec![cmd, file.to_str().unwrap()];
            if cmd == "predict" {
                args.push("demo-data/sparse_linear.csv");
            }
            let out = pacauc(&args);
            assert_eq!(out.status.code(), Some(2), "{cmd}");
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(
                err.contains(found) && err.contains("reads format 2") && err.contains(fix),
                "{cmd}: {err}"
            );
            assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
        }
    }
    // An output that cannot be written is refused before the fit (and before scoring).
    let t = std::time::Instant::now();
    let out = pacauc(&[
        "fit",
        "demo-data/sparse_linear.csv",
        "--method",
        "smc",
        "--out",
        "/nonexistent-dir/x.json",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot write the record"));
    assert!(t.elapsed().as_secs_f64() < 5.0, "refused before fitting");
    let out = pacauc(&[
        "predict",
        rec.to_str().unwrap(),
        "demo-data/sparse_linear.csv",
        "--out",
        "/nonexistent-dir/s.csv",
    ]);
    assert_eq!(out.status.code(), Some(2));
    std::fs::remove_dir_all(&dir).ok();
}

/// VB with the isotropic family: Σ = σ²I on the standardised features, so a
/// row's `score_sd` is σ‖x̃‖ (x̃ the row standardised with the record's scaler).
#[test]
fn vb_score_sd_is_the_isotropic_spread() {
    let dir = tmp("vb-iso");
    let (train, test, _) = split_demo(&dir);
    let rec = dir.join("iso.json").display().to_string();
    let v = json(&pacauc(&[
        "fit",
        &train,
        "--test",
        &test,
        "--method",
        "vb",
        "--family",
        "iso",
        "--is-draws",
        "0",
        "--out",
        &rec,
    ]));
    let sigma = v["coefficients"][0]["sd"].as_f64().unwrap();
    let scaler = &v["model"]["scaler"];
    let nums = |a: &serde_json::Value| -> Vec<f64> {
        a.as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect()
    };
    let (mean, sd) = (nums(&scaler["mean"]), nums(&scaler["sd"]));
    let j = json(&pacauc(&["predict", &rec, &test, "--format", "json"]));
    let text = std::fs::read_to_string(&test).unwrap();
    for (line, row) in text.lines().skip(1).zip(j["rows"].as_array().unwrap()) {
        let x: Vec<f64> = line.split(',').map(|c| c.parse().unwrap()).collect();
        let norm = (0..mean.len())
            .map(|k| ((x[k] - mean[k]) / sd[k]).powi(2))
            .sum::<f64>()
            .sqrt();
        let got = row["score_sd"].as_f64().unwrap();
        assert!(
            (got - sigma * norm).abs() <= 1e-9 * got,
            "{got} vs {}",
            sigma * norm
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// EP in the reduced form (d ≥ n) keeps its covariance factored; its score
/// sds equal the primal form's.
#[test]
fn reduced_form_score_sds_match_the_primal_form() {
    let dir = tmp("wide");
    let (n, d) = (36, 50);
    let mut r = pacauc::engine::numerics::rng::stream(11, &[]);
    let mut body = (1..=d)
        .map(|k| format!("x{k}"))
        .collect::<Vec<_>>()
        .join(",")
        + ",y\n";
    for i in 0..n {
        let x: Vec<f64> = (0..d)
            .map(|_| pacauc::engine::numerics::rng::normal(&mut r))
            .collect();
        let y =
            x[0] + x[1] + 0.8 * pacauc::engine::numerics::rng::normal(&mut r) > 0.0 || i % 7 == 0;
        body += &format!(
            "{},{}\n",
            x.iter()
                .map(|v| v.to_string())
                .collect::<Vec<_>>()
                .join(","),
            u8::from(y)
        );
    }
    let data = dir.join("wide.csv");
    std::fs::write(&data, body).unwrap();
    let sds = |form: &str, extra: &[&str]| -> Vec<f64> {
        let rec = dir.join(format!("{form}.json"));
        let mut args = vec![
            "fit",
            data.to_str().unwrap(),
            "--method",
            "ep",
            "--ep-form",
            form,
            "--tol",
            "1e-9",
            "--out",
            rec.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        json(&pacauc(&args));
        let spread = std::fs::read_to_string(&rec).unwrap();
        let factored = spread.contains("\"low_rank\"");
        assert_eq!(factored, form == "reduced", "{form} {extra:?}: spread kind");
        let j = json(&pacauc(&[
            "predict",
            rec.to_str().unwrap(),
            data.to_str().unwrap(),
            "--format",
            "json",
        ]));
        j["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["score_sd"].as_f64().unwrap())
            .collect()
    };
    // Gaussian EP; spike-and-slab EP (the primal form keeping the fixes, as the
    // reduced one must).
    let ss = [
        "--prior",
        "spike-slab",
        "--gamma",
        "4n",
        "--inclusion-prior",
        "0.1",
    ];
    for (reduced, primal) in [
        (vec![], vec![]),
        (ss.to_vec(), [&ss[..], &["--keep-fixes"]].concat()),
    ] {
        let (p, q) = (sds("primal", &primal), sds("reduced", &reduced));
        for (a, b) in p.iter().zip(&q) {
            assert!(
                (a - b).abs() <= 1e-6 * a,
                "{reduced:?}: primal {a} vs reduced {b}"
            );
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// A sample-based record's vote: each kept draw calls positive as many training
/// rows as there are positives, so on the training file the votes add up to the
/// positives (exactly, barring ties); the agreement is the majority's share;
/// `--rank-uncertain` lists only the unlabelled rows, highest entropy first.
#[test]
fn sampled_records_vote_and_rank_unlabelled_rows_by_uncertainty() {
    let dir = tmp("votes");
    let (train, test, _) = split_demo(&dir);
    let rec = dir.join("gcs.json").display().to_string();
    let fit = [
        "fit",
        train.as_str(),
        "--test",
        test.as_str(),
        "--out",
        rec.as_str(),
        "--method",
        "gcs",
        "--min-ess",
        "100",
        "--max-steps",
        "400",
    ];
    assert!(pacauc(&fit).status.success());
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&rec).unwrap()).unwrap();
    let votes = &r["model"]["votes"];
    let positives = votes["rule"]["positives"].as_u64().unwrap();
    assert_eq!(votes["rule"]["kind"], "training_positives");
    // Every draw kept up to 1000 (here 4 chains × 200 after the warm-up).
    let draws = r["details"]["draws"].as_u64().unwrap() as usize;
    assert_eq!(votes["theta"].as_array().unwrap().len(), draws.min(1000));

    let j = json(&pacauc(&["predict", &rec, &train, "--format", "json"]));
    let rows = j["rows"].as_array().unwrap();
    let total: f64 = rows.iter().map(|r| r["vote"].as_f64().unwrap()).sum();
    assert!(
        (total - positives as f64).abs() < 1e-6,
        "votes add up to {total}, not {positives}"
    );
    for r in rows {
        let (v, a) = (
            r["vote"].as_f64().unwrap(),
            r["agreement"].as_f64().unwrap(),
        );
        assert!((a - v.max(1.0 - v)).abs() < 1e-12 && (0.5..=1.0).contains(&a));
    }

    // The test rows with the labels of every other row blanked out.
    let text = std::fs::read_to_string(&test).unwrap();
    let mut lines = text.lines();
    let mut body = vec![lines.next().unwrap().to_string()];
    for (i, l) in lines.enumerate() {
        body.push(if i % 2 == 0 {
            format!("{},", l.rsplit_once(',').unwrap().0)
        } else {
            l.to_string()
        });
    }
    let half = dir.join("half.csv");
    std::fs::write(&half, body.join("\n") + "\n").unwrap();
    let half = half.display().to_string();
    let out = pacauc(&["predict", &rec, &half, "--rank-uncertain"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let csv = String::from_utf8_lossy(&out.stdout).to_string();
    let mut lines = csv.lines();
    assert_eq!(
        lines.next().unwrap(),
        "rank,row,score,score_sd,vote,agreement,entropy,status"
    );
    let ranked: Vec<Vec<String>> = lines
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect();
    // Every other test row (of 250) lost its label.
    assert_eq!(ranked.len(), 125, "the 125 unlabelled rows only");
    let all = json(&pacauc(&["predict", &rec, &half, "--format", "json"]));
    for (k, r) in ranked.iter().enumerate() {
        assert_eq!(r[0], (k + 1).to_string());
        let line: usize = r[1].parse().unwrap();
        assert_eq!(line % 2, 0, "row {line} is labelled");
        let h: f64 = r[6].parse().unwrap();
        // The same vote as without ranking; entropies fall down the list.
        let same = &all["rows"][line - 2];
        assert_eq!(same["vote"].as_f64().unwrap(), r[4].parse::<f64>().unwrap());
        if k > 0 {
            assert!(h <= ranked[k - 1][6].parse::<f64>().unwrap());
        }
    }
    // A record without draws cannot rank.
    let ep = dir.join("ep.json").display().to_string();
    let fit = [
        "fit",
        train.as_str(),
        "--out",
        ep.as_str(),
        "--method",
        "ep",
    ];
    assert!(pacauc(&fit).status.success());
    let out = pacauc(&["predict", &ep, &half, "--rank-uncertain"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("posterior draws"));
    std::fs::remove_dir_all(&dir).ok();
}
