//! `pacauc predict RUN.json DATA.csv`: scores every row of a file with a run
//! record's model — one line per input row, in input order: the row's line
//! number, its score (the posterior-mean score), its posterior sd where the
//! method has a posterior, and a status naming why a row could not be scored.
//! With the target column present, the AUC goes to stderr (and into JSON).
//! A sample-based record (gcs, smc) adds the posterior's vote on each row and
//! its agreement; `--rank-uncertain` lists the unlabelled rows by the entropy
//! of their vote instead (GH00's active learning: most uncertain first).

use std::fmt::Write as _;
use std::io::Write;
use std::path::PathBuf;

use clap::{Args, ValueEnum};
use rayon::prelude::*;
use serde_json::json;

use super::fit::CliError;
use crate::engine::predict::{Prediction, Predictions, predict_file};
use crate::engine::record::{RunRecord, check_writable, write_atomic_with};

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
    let order = args.rank_uncertain.then(|| uncertain_first(&p));
    let write = |w: &mut dyn Write| match args.format {
        PredictFormat::Csv => write_csv(&p, order.as_deref(), w),
        PredictFormat::Json => {
            let head = json!({
                "record": args.record.display().to_string(),
                "data": args.data.display().to_string(),
                "method": record.method,
                "scored": p.scored(),
                "not_scored": p.len() - p.scored(),
                "auc": p.auc,
                "auc_rows": rows_note(&record, &p),
                "auc_not_trained_on": trained_on_this_file(&record, &p).then_some(json!({
                    "auc": record.auc.test,
                    "interval": record.auc.test_interval,
                    "rows": record.split.test_rows,
                })),
                "votes": p.votes,
                "ranked_by_uncertainty": args.rank_uncertain,
            });
            write_json(&head, &p, order.as_deref(), w)
        }
    };
    let written = match &args.out {
        Some(path) => write_atomic_with(path, write),
        None => {
            let mut w = std::io::BufWriter::new(std::io::stdout().lock());
            write(&mut w).and_then(|()| w.flush())
        }
    };
    written.map_err(|e| {
        let to = args
            .out
            .as_ref()
            .map_or("stdout".into(), |p| p.display().to_string());
        CliError::Input(format!("{to}: cannot write the scores: {e}"))
    })?;
    eprintln!("{}", summary(&p));
    if let Some(note) = rows_note(&record, &p) {
        eprintln!("{note}");
    }
    if let Some(v) = &p.votes {
        eprintln!("vote and agreement: {v}");
    }
    if let Some(order) = &order {
        let labelled = (0..p.len()).filter(|&k| p.labelled(k)).count();
        let unscored = p.unscored.iter().filter(|(k, _)| !p.labelled(*k)).count();
        eprintln!(
            "ranked {} unlabelled row(s) by the entropy of their vote, most uncertain first \
             (left out: {labelled} labelled, {unscored} not scored)",
            order.len()
        );
    }
    Ok(())
}

/// The scored, unlabelled rows, highest vote entropy first (ties by line).
fn uncertain_first(p: &Predictions) -> Vec<usize> {
    let Some(votes) = &p.row_votes else {
        return Vec::new();
    };
    let mut order: Vec<usize> = (0..p.len())
        .filter(|&k| !p.labelled(k) && p.problem(k).is_none())
        .collect();
    let h = |k: usize| votes[k].entropy;
    order.sort_by(|&a, &b| h(b).total_cmp(&h(a)).then(a.cmp(&b)));
    order
}

/// Rows per piece formatted by one thread, and pieces per batch written in
/// order: the output streams, at most a batch (≈ 30 MB) held at a time.
const PIECE_ROWS: usize = 1 << 14;
const BATCH_PIECES: usize = 32;

/// Writes `count` rows, pieces of them (`format(rows, buffer)`) formatted in
/// parallel and written in order.
fn write_rows(
    count: usize,
    w: &mut dyn Write,
    format: impl Fn(std::ops::Range<usize>, &mut Vec<u8>) + Sync,
) -> std::io::Result<()> {
    for batch in (0..count).step_by(PIECE_ROWS * BATCH_PIECES) {
        let end = (batch + PIECE_ROWS * BATCH_PIECES).min(count);
        let starts: Vec<usize> = (batch..end).step_by(PIECE_ROWS).collect();
        let pieces: Vec<Vec<u8>> = starts
            .par_iter()
            .map(|&s| {
                let mut buf = Vec::new();
                format(s..(s + PIECE_ROWS).min(end), &mut buf);
                buf
            })
            .collect();
        for piece in pieces {
            w.write_all(&piece)?;
        }
    }
    Ok(())
}

/// The scores as CSV: `row,score[,score_sd][,vote,agreement],status`, ranked
/// rows (`order`) with `rank` first and `entropy` before the status.
fn write_csv(p: &Predictions, order: Option<&[usize]>, w: &mut dyn Write) -> std::io::Result<()> {
    let ranked = order.is_some();
    let has_votes = p.votes.is_some();
    let mut header = vec!["row", "score"];
    if ranked {
        header.insert(0, "rank");
    }
    if p.has_sd() {
        header.push("score_sd");
    }
    if has_votes {
        header.extend(["vote", "agreement"]);
    }
    if ranked {
        header.push("entropy");
    }
    header.push("status");
    let mut head = csv::Writer::from_writer(Vec::new());
    head.write_record(&header)?;
    w.write_all(&head.into_inner().map_err(|e| e.into_error())?)?;
    let count = order.map_or(p.len(), <[usize]>::len);
    write_rows(count, w, |ranks, buf| {
        let mut rec = csv::Writer::from_writer(buf);
        for rank in ranks {
            let i = order.map_or(rank, |o| o[rank]);
            // Writing to memory cannot fail.
            let _ = csv_row(p, order.map(|_| rank + 1), &p.row(i), &mut rec);
        }
        let _ = rec.flush();
    })
}

/// One CSV row of `write_csv` (`rank`: ranked output).
fn csv_row(
    p: &Predictions,
    rank: Option<usize>,
    r: &Prediction,
    rec: &mut csv::Writer<&mut Vec<u8>>,
) -> csv::Result<()> {
    let mut text = String::new();
    let mut put = |rec: &mut csv::Writer<&mut Vec<u8>>, v: Option<&dyn std::fmt::Display>| {
        text.clear();
        if let Some(v) = v {
            let _ = write!(text, "{v}");
        }
        rec.write_field(&text)
    };
    fn num(v: &Option<f64>) -> Option<&dyn std::fmt::Display> {
        v.as_ref().map(|v| v as &dyn std::fmt::Display)
    }
    if let Some(rank) = rank {
        put(rec, Some(&rank))?;
    }
    put(rec, Some(&r.row))?;
    put(rec, num(&r.score))?;
    if p.has_sd() {
        put(rec, num(&r.score_sd))?;
    }
    if p.votes.is_some() {
        put(rec, num(&r.vote))?;
        put(rec, num(&r.agreement))?;
    }
    if rank.is_some() {
        put(rec, num(&r.entropy))?;
    }
    rec.write_field(&r.status)?;
    rec.write_record(None::<&[u8]>)
}

/// The JSON document: `head`'s keys, then `rows` (every row, or the ranked
/// ones with their `rank`) — serde_json's pretty layout, the rows streamed.
fn write_json(
    head: &serde_json::Value,
    p: &Predictions,
    order: Option<&[usize]>,
    w: &mut dyn Write,
) -> std::io::Result<()> {
    let text = serde_json::to_string_pretty(head).expect("json");
    let open = text.strip_suffix("\n}").expect("a JSON object with keys");
    write!(w, "{open},\n  \"rows\": [")?;
    let count = order.map_or(p.len(), <[usize]>::len);
    write_rows(count, w, |ranks, buf| {
        for rank in ranks {
            let i = order.map_or(rank, |o| o[rank]);
            let mut r = json!(p.row(i));
            if order.is_some() {
                r["rank"] = json!(rank + 1);
            }
            let row = serde_json::to_string_pretty(&r).expect("json");
            if rank > 0 {
                buf.push(b',');
            }
            buf.extend_from_slice(b"\n    ");
            buf.extend_from_slice(row.replace('\n', "\n    ").as_bytes());
        }
    })?;
    w.write_all(if count == 0 { b"]\n}\n" } else { b"\n  ]\n}\n" })
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
    let n = p.len();
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::votes::Vote;

    fn predictions(n: usize) -> Predictions {
        let vote = |k: usize| Vote {
            positive_share: k as f64 / 10.0,
            positive: k >= 5,
            agreement: 0.5 + k as f64 / 20.0,
            entropy: 1.0 / (1 + k) as f64,
        };
        Predictions {
            lines: (0..n as u64).map(|k| k + 2).collect(),
            scores: (0..n)
                .map(|k| {
                    if k == 1 {
                        f64::NAN
                    } else {
                        k as f64 * 0.3 - 1.0
                    }
                })
                .collect(),
            score_sds: Some((0..n).map(|k| 0.1 + k as f64).collect()),
            row_votes: Some((0..n).map(vote).collect()),
            classes: Some((0..n).map(|k| k % 2 == 0).collect()),
            labels: Some((0..n).map(|k| (k % 3 != 0).then_some(k % 2 == 0)).collect()),
            unscored: if n > 1 {
                vec![(1, "'q, \"r\"' in 'c' was not seen in training".into())]
            } else {
                Vec::new()
            },
            auc: None,
            votes: Some("10 draws".into()),
            fingerprint: "fnv1a64:0".into(),
        }
    }

    /// The streamed document is serde_json's pretty layout of the whole one.
    #[test]
    fn streamed_json_equals_the_whole_document() {
        for n in [0, 1, 5, PIECE_ROWS + 3] {
            let p = predictions(n);
            let head = json!({"record": "r.json", "scored": p.scored(), "auc": null});
            for order in [None, Some(uncertain_first(&p))] {
                let mut got = Vec::new();
                write_json(&head, &p, order.as_deref(), &mut got).unwrap();
                let ranks = order.clone().unwrap_or_else(|| (0..n).collect());
                let rows: Vec<serde_json::Value> = ranks
                    .iter()
                    .enumerate()
                    .map(|(rank, &i)| {
                        let mut r = json!(p.row(i));
                        if order.is_some() {
                            r["rank"] = json!(rank + 1);
                        }
                        r
                    })
                    .collect();
                let mut whole = head.clone();
                whole["rows"] = json!(rows);
                let want = serde_json::to_string_pretty(&whole).unwrap() + "\n";
                assert_eq!(String::from_utf8(got).unwrap(), want, "{n} rows");
            }
            // And the CSV parses back to the rows (quoting of the status).
            let mut csv_out = Vec::new();
            write_csv(&p, None, &mut csv_out).unwrap();
            let mut r = csv::Reader::from_reader(csv_out.as_slice());
            let back: Vec<csv::StringRecord> = r.records().map(Result::unwrap).collect();
            assert_eq!(back.len(), n);
            for (k, rec) in back.iter().enumerate() {
                let want = p.row(k);
                assert_eq!(rec[0], want.row.to_string());
                assert_eq!(rec[rec.len() - 1], want.status);
                assert_eq!(rec[1], want.score.map_or(String::new(), |v| v.to_string()));
            }
        }
    }
}
