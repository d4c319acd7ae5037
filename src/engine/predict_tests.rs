//! Blocked, parallel scoring against the slow obvious path: every row encoded
//! alone, row-major, the scorable rows gathered into one matrix, scored at once.

use super::*;
use crate::engine::data::{ColumnRule, Schema, Standardizer, canonical_label, is_missing};
use crate::engine::fit::{ScoreModel, Stump};
use crate::engine::model::Spread;
use crate::engine::numerics::rng;
use crate::engine::votes::{ThresholdRule, Votes};
use rand::RngExt;

fn schema() -> Schema {
    Schema {
        target: "y".into(),
        positive_label: "1".into(),
        rules: vec![
            ColumnRule::Numeric { column: "a".into() },
            ColumnRule::OneHot {
                column: "c".into(),
                levels: vec!["x".into(), "z".into(), "u v".into()],
                other_levels: vec!["w".into()],
            },
            ColumnRule::Numeric { column: "b".into() },
        ],
    }
}

/// A messy file: numbers in several spellings, missing tokens, text and
/// infinities in numeric columns, unseen and reference levels, missing
/// labels, blank lines, an extra column, columns out of order; `quoted`
/// quotes some cells (the csv crate's path instead of the fast one).
fn messy_csv(n: usize, seed: u64, quoted: bool) -> String {
    let mut r = rng::stream(seed, &[]);
    let mut pick = |cells: &[&str]| cells[r.random_range(0..cells.len())].to_string();
    let mut text = String::from("b,extra,c,y,a\n");
    for i in 0..n {
        let num = |k: usize| {
            format!(
                "{}",
                (k as f64 * 0.37).sin() * 10f64.powi((k % 5) as i32 - 2)
            )
        };
        let a = pick(&[
            "NUM", "NUM", "NUM", "NUM", "", "NA", "abc", "inf", "1e3", " -2.5 ",
        ]);
        let a = if a == "NUM" { num(i) } else { a };
        let b = pick(&["NUM", "NUM", "NUM", "?", "7", "+0.125", "-0"]);
        let b = if b == "NUM" { num(i * 7 + 3) } else { b };
        let c = pick(&["x", "z", "u v", "w", "x", "q", "", "null"]);
        let c = if quoted && c.contains(' ') {
            format!("\"{c}\"")
        } else {
            c
        };
        let y = pick(&["1", "0", "0", "1.0", ""]);
        text.push_str(&format!("{b},e{i},{c},{y},{a}\n"));
        if i % 97 == 5 {
            text.push('\n');
        }
    }
    text
}

/// The old encoder: one row at a time, every problem named.
fn encode_row(
    t: &RowsToScore,
    raw: &[Vec<String>],
    r: usize,
    schema: &Schema,
) -> Result<Vec<f64>, String> {
    let header = &raw[0];
    let mut out = vec![0.0; t.width()];
    let mut problems = Vec::new();
    let mut k0 = 0;
    for rule in &schema.rules {
        let column = rule.column();
        let j = header.iter().position(|h| h == column).unwrap();
        let cell = raw[r + 1][j].trim();
        if is_missing(cell) {
            problems.push(format!("missing value in '{column}'"));
            k0 += rule.feature_names().len();
            continue;
        }
        match rule {
            ColumnRule::Numeric { .. } => {
                match cell.parse::<f64>() {
                    Ok(v) if v.is_finite() => out[k0] = v,
                    Ok(_) => problems.push(format!("non-finite number '{cell}' in '{column}'")),
                    Err(_) => problems.push(format!("'{cell}' in '{column}' is not a number")),
                }
                k0 += 1;
            }
            ColumnRule::OneHot {
                levels,
                other_levels,
                ..
            } => {
                if let Some(l) = levels.iter().position(|l| l == cell) {
                    out[k0 + l] = 1.0;
                } else if !other_levels.iter().any(|l| l == cell) {
                    problems.push(format!("'{cell}' in '{column}' was not seen in training"));
                }
                k0 += levels.len();
            }
        }
    }
    if problems.is_empty() {
        Ok(out)
    } else {
        Err(problems.join("; "))
    }
}

/// The old path, row by row, as `Prediction`s (and the AUC's inputs).
fn reference(model: &Model, text: &str, t: &RowsToScore) -> (Vec<Prediction>, Vec<f64>, Vec<bool>) {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(text.as_bytes());
    let raw: Vec<Vec<String>> = reader
        .records()
        .map(|r| r.unwrap().iter().map(String::from).collect())
        .filter(|r: &Vec<String>| !(r.len() == 1 && r[0].trim().is_empty()))
        .collect();
    let schema = &model.schema;
    let names = schema.feature_names();
    let n = raw.len() - 1;
    let rows: Vec<Result<Vec<f64>, String>> =
        (0..n).map(|r| encode_row(t, &raw, r, schema)).collect();
    let ok: Vec<&Vec<f64>> = rows.iter().filter_map(|r| r.as_ref().ok()).collect();
    let x = DMatrix::from_fn(ok.len(), model.features.len(), |i, c| {
        let k = names.iter().position(|n| *n == model.features[c]).unwrap();
        (ok[i][k] - model.scaler.mean[c]) / model.scaler.sd[c]
    });
    let (scores, sds) = model.predict(&x);
    let votes = model.vote(&x);
    let yj = raw[0].iter().position(|h| h == "y").unwrap();
    let label = |r: usize| {
        let cell = raw[r + 1][yj].trim();
        (!is_missing(cell)).then(|| canonical_label(cell) == "1")
    };
    let (mut i, mut out, mut s, mut y) = (0, Vec::new(), Vec::new(), Vec::new());
    for (r, row) in rows.iter().enumerate() {
        let line = t.lines()[r];
        out.push(match row {
            Ok(_) => {
                let v = votes.as_ref().map(|v| v[i]);
                let positive = match &v {
                    Some(v) => Some(v.positive),
                    None => model.threshold.map(|c| scores[i] > c),
                };
                if let Some(l) = label(r) {
                    s.push(scores[i]);
                    y.push(l);
                }
                i += 1;
                Prediction {
                    row: line,
                    score: Some(scores[i - 1]),
                    score_sd: sds.as_ref().map(|s| s[i - 1]),
                    vote: v.map(|v| v.positive_share),
                    agreement: v.map(|v| v.agreement),
                    entropy: v.map(|v| v.entropy),
                    labelled: label(r).is_some(),
                    positive,
                    status: "ok".into(),
                }
            }
            Err(why) => Prediction {
                row: line,
                score: None,
                score_sd: None,
                vote: None,
                agreement: None,
                entropy: None,
                labelled: label(r).is_some(),
                positive: None,
                status: why.clone(),
            },
        });
    }
    (out, s, y)
}

/// Models of each stored kind on the features x, z, b, a (c=u v left out,
/// as a feature constant in training would be).
fn models() -> Vec<Model> {
    let features: Vec<String> = ["c=x", "c=z", "b", "a"].map(String::from).into();
    let d = features.len();
    let base = Model {
        schema: schema(),
        dropped_columns: Vec::new(),
        features,
        scaler: Standardizer {
            mean: vec![0.3, 0.2, 0.7, -1.1],
            sd: vec![0.5, 0.4, 3.3, 2.9],
        },
        score: ScoreModel::Linear {
            weights: vec![0.8, -1.3, 0.31, 0.052],
        },
        spread: None,
        votes: None,
        threshold: Some(0.1),
    };
    let mut r = rng::stream(9, &[]);
    let theta: Vec<Vec<f32>> = (0..37)
        .map(|_| (0..d).map(|_| rng::normal(&mut r) as f32).collect())
        .collect();
    let lower: Vec<f64> = (0..d)
        .flat_map(|i| (0..=i).map(move |j| if i == j { 0.4 } else { 0.05 * (i + j) as f64 }))
        .collect();
    vec![
        Model {
            spread: Some(Spread::Covariance { lower }),
            ..base.clone()
        },
        Model {
            spread: Some(Spread::LowRank {
                diag: vec![0.1, 0.2, 0.3, 0.4],
                factor: vec![vec![0.5, -0.2, 0.1, 0.3], vec![0.0, 0.4, 0.4, -0.1]],
                core: vec![vec![0.3, -0.1], vec![-0.1, -0.05]],
                exact: true,
                captured: None,
            }),
            threshold: None,
            ..base.clone()
        },
        Model {
            spread: Some(Spread::Samples {
                theta: theta
                    .iter()
                    .map(|t| t.iter().map(|&v| f64::from(v)).collect())
                    .collect(),
            }),
            votes: Some(Votes {
                rule: ThresholdRule::Intercept,
                thresholds: (0..theta.len()).map(|k| (k as f64 - 18.0) / 20.0).collect(),
                theta,
            }),
            ..base.clone()
        },
        Model {
            score: ScoreModel::Stumps {
                stumps: vec![
                    Stump {
                        feature: 3,
                        threshold: 0.2,
                        alpha: 0.7,
                    },
                    Stump {
                        feature: 0,
                        threshold: 0.0,
                        alpha: -0.4,
                    },
                    Stump {
                        feature: 2,
                        threshold: -0.5,
                        alpha: 0.25,
                    },
                ],
            },
            ..base
        },
    ]
}

#[test]
fn blocked_parallel_scores_equal_the_row_by_row_path() {
    let mut checked = 0;
    for (seed, quoted) in [(1, false), (2, true)] {
        let text = messy_csv(700, seed, quoted);
        let t = rows_to_score_of_bytes(Path::new("messy.csv"), text.as_bytes(), &schema()).unwrap();
        for model in models() {
            let (want, s, y) = reference(&model, &text, &t);
            assert!(want.iter().any(|p| p.status != "ok") && want.iter().any(|p| p.status == "ok"));
            let want_auc = auc(&s, &y);
            for block in [1, 3, 64, 5000] {
                for threads in [1, 3] {
                    let pool = rayon::ThreadPoolBuilder::new()
                        .num_threads(threads)
                        .build()
                        .unwrap();
                    let got = pool.install(|| predict_rows(&model, &t, block)).unwrap();
                    assert_eq!(got.len(), want.len());
                    for (k, w) in want.iter().enumerate() {
                        assert_eq!(&got.row(k), w, "row {k}, block {block}, {threads} threads");
                    }
                    let a = got.auc.as_ref().unwrap();
                    assert_eq!(a.auc, Some(want_auc));
                    assert_eq!(a.interval, delong(&s, &y));
                    assert_eq!(
                        (a.rows, a.positives),
                        (y.len(), y.iter().filter(|&&b| b).count())
                    );
                    checked += 1;
                }
            }
        }
    }
    assert_eq!(checked, 2 * 4 * 4 * 2);
}
