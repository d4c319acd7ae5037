//! `pacauc predict RUN.json DATA.csv`: scores every row of a file with a run
//! record's model — one line per input row, in input order: the row's line
//! number, its score (the posterior-mean score), its posterior sd where the
//! method has a posterior, and a status naming why a row could not be scored.
//! With the target column present, the AUC goes to stderr (and into JSON).
//! A sample-based record (gcs, smc) adds the posterior's vote on each row and
//! its agreement; `--rank-uncertain` lists the unlabelled rows by the entropy
//! of their vote instead (GH00's active learning: most uncertain first).

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use serde_json::json;

use super::fit::CliError;
use crate::engine::predict::{Prediction, Predictions, predict_file};
use crate::engine::record::{RunRecord, check_writable, write_atomic};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PredictFormat {
    /// row,score[,score_sd][,vote,agreement],status
    Csv,
    /// One document: the rows, the AUC, counts.
    Json,
}

#[derive(Debug, Clone, Args)]
pub struct PredictArgs {
    /// A run record (`pacauc fit --out`, or the explorer's `e`).
    #[arg(value_name = "RUN.json")]
    pub record: PathBuf,
    /// CSV file to score: the training columns by name, in any order (others
    /// ignored; the target column optional).
    #[arg(value_name = "DATA.csv")]
    pub data: PathBuf,
    /// Write the scores to this file (atomically; checked first) instead of stdout.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value = "csv")]
    pub format: PredictFormat,
    /// Only the unlabelled rows (no target column, or its cell empty), ranked
    /// by the entropy of the posterior's vote, most uncertain first, with a
    /// `rank` and an `entropy` column (records of gcs and smc runs).
    #[arg(long)]
    pub rank_uncertain: bool,
}

pub fn run(args: &PredictArgs) -> Result<(), CliError> {
    let text = std::fs::read_to_string(&args.record)
        .map_err(|e| CliError::Input(format!("{}: {e}", args.record.display())))?;
    let record = RunRecord::from_json(&text)
        .map_err(|e| CliError::Input(format!("{}: {e}", args.record.display())))?;
    if let Some(path) = &args.out {
        check_writable(path).map_err(|e| {
            CliError::Input(format!("{}: cannot write the scores: {e}", path.display()))
        })?;
    }
    if args.rank_uncertain && record.model.votes.is_none() {
        return Err(CliError::Input(format!(
            "{}: --rank-uncertain needs posterior draws, which a {} record does not keep \
             (fit with --method gcs or smc)",
            args.record.display(),
            record.method
        )));
    }
    let p = predict_file(&record.model, &args.data).map_err(CliError::Input)?;
    let order = if args.rank_uncertain {
        uncertain_first(&p.rows)
    } else {
        (0..p.rows.len()).collect()
    };
    let out = match args.format {
        PredictFormat::Csv => csv_text(&p, &order, args.rank_uncertain)?,
        PredictFormat::Json => {
            let rows: Vec<serde_json::Value> = order
                .iter()
                .enumerate()
                .map(|(rank, &i)| {
                    let mut r = json!(p.rows[i]);
                    if args.rank_uncertain {
                        r["rank"] = json!(rank + 1);
                    }
                    r
                })
                .collect();
            let v = json!({
                "record": args.record.display().to_string(),
                "data": args.data.display().to_string(),
                "method": record.method,
                "scored": p.scored(),
                "not_scored": p.rows.len() - p.scored(),
                "auc": p.auc,
                "auc_rows": rows_note(&record, &p),
                "auc_not_trained_on": trained_on_this_file(&record, &p).then_some(json!({
                    "auc": record.auc.test,
                    "interval": record.auc.test_interval,
                    "rows": record.split.test_rows,
                })),
                "votes": p.votes,
                "ranked_by_uncertainty": args.rank_uncertain,
                "rows": rows,
            });
            serde_json::to_string_pretty(&v).expect("json") + "\n"
        }
    };
    match &args.out {
        Some(path) => write_atomic(path, out.as_bytes()).map_err(|e| {
            CliError::Input(format!("{}: cannot write the scores: {e}", path.display()))
        })?,
        None => print!("{out}"),
    }
    eprintln!("{}", summary(&p));
    if let Some(note) = rows_note(&record, &p) {
        eprintln!("{note}");
    }
    if let Some(v) = &p.votes {
        eprintln!("vote and agreement: {v}");
    }
    if args.rank_uncertain {
        let labelled = p.rows.iter().filter(|r| r.labelled).count();
        let unscored = p
            .rows
            .iter()
            .filter(|r| !r.labelled && r.score.is_none())
            .count();
        eprintln!(
            "ranked {} unlabelled row(s) by the entropy of their vote, most uncertain first \
             (left out: {labelled} labelled, {unscored} not scored)",
            order.len()
        );
    }
    Ok(())
}

/// The scored, unlabelled rows, highest vote entropy first (ties by line).
fn uncertain_first(rows: &[Prediction]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..rows.len())
        .filter(|&i| !rows[i].labelled && rows[i].entropy.is_some())
        .collect();
    let h = |i: usize| rows[i].entropy.unwrap_or(f64::NAN);
    order.sort_by(|&a, &b| h(b).total_cmp(&h(a)).then(a.cmp(&b)));
    order
}

fn csv_text(p: &Predictions, order: &[usize], ranked: bool) -> Result<String, CliError> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let num = |v: Option<f64>| v.map_or(String::new(), |v| v.to_string());
    let has_votes = p.votes.is_some();
    let mut header = vec!["row", "score"];
    if ranked {
        header.insert(0, "rank");
    }
    if p.has_sd {
        header.push("score_sd");
    }
    if has_votes {
        header.extend(["vote", "agreement"]);
    }
    if ranked {
        header.push("entropy");
    }
    header.push("status");
    let err = |e: csv::Error| CliError::Engine(format!("cannot write CSV: {e}"));
    w.write_record(&header).map_err(err)?;
    for (rank, &i) in order.iter().enumerate() {
        let r = &p.rows[i];
        let mut rec = vec![r.row.to_string(), num(r.score)];
        if ranked {
            rec.insert(0, (rank + 1).to_string());
        }
        if p.has_sd {
            rec.push(num(r.score_sd));
        }
        if has_votes {
            rec.extend([num(r.vote), num(r.agreement)]);
        }
        if ranked {
            rec.push(num(r.entropy));
        }
        rec.push(r.status.clone());
        w.write_record(&rec).map_err(err)?;
    }
    let bytes = w
        .into_inner()
        .map_err(|e| CliError::Engine(format!("cannot write CSV: {e}")))?;
    Ok(String::from_utf8(bytes).expect("UTF-8 in, UTF-8 out"))
}

/// Whether `p` scored the very file (same bytes) the record's model was fitted on.
fn trained_on_this_file(record: &RunRecord, p: &Predictions) -> bool {
    p.auc.is_some() && p.fingerprint == record.dataset.fingerprint
}

/// Which rows the AUC covers when they include the fit's training rows, and
/// the AUC of the rows the fit did not see (the record's test AUC: the same
/// rows scored by the same arithmetic).
fn rows_note(record: &RunRecord, p: &Predictions) -> Option<String> {
    if !trained_on_this_file(record, p) {
        return None;
    }
    let s = &record.split;
    let held_out = match (&record.auc.test_interval, record.auc.test) {
        (Some(i), _) => format!(
            "on the {} held-out test row(s) alone the AUC is {}",
            s.test_rows,
            i.describe()
        ),
        (None, Some(a)) => format!(
            "on the {} held-out test row(s) alone the AUC is {a:.4}",
            s.test_rows
        ),
        (None, None) => "the fit held out no test rows".into(),
    };
    Some(format!(
        "note: this is the file the model was fitted on: the AUC above includes its {} training          row(s), so it is optimistic; {held_out}",
        s.train_rows
    ))
}

/// One line for stderr: how many rows were scored, and the AUC.
fn summary(p: &Predictions) -> String {
    let n = p.rows.len();
    let scored = p.scored();
    let mut s = format!("scored {scored} of {n} row(s)");
    if scored < n {
        s.push_str(&format!(" ({} not scored: see their status)", n - scored));
    }
    if let Some(a) = &p.auc {
        s.push_str(&match a.auc {
            Some(v) => format!(
                "; AUC {} on {} labelled row(s) (target '{}', positive '{}')",
                a.interval
                    .as_ref()
                    .map_or_else(|| format!("{v:.4}"), |i| i.describe()),
                a.rows,
                a.target,
                a.positive_label
            ),
            None => format!(
                "; no AUC: the {} labelled row(s) are all of one class (target '{}')",
                a.rows, a.target
            ),
        });
    }
    s
}
