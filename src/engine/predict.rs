//! Scoring a file with a fitted model (a run record's `model`): the rows are
//! encoded with the training schema, standardised with the training means and
//! sds, and scored exactly as the fit scored its test rows (same arithmetic,
//! so the same bits). Rows that cannot be encoded get a status instead. A
//! sample-based model (gcs, smc) also gives each row the posterior's vote.
//!
//! Rows are encoded, standardised and scored in blocks, the blocks in
//! parallel: a row's score is the same arithmetic on the same row whatever
//! block holds it (products are per row), so the result does not depend on
//! the block size or the thread count. The results are kept by column (a
//! score per row, the problems of the rows not scored apart), so 10⁷ rows
//! cost ≈ 100 bytes each, not a struct and a string.

use std::path::Path;

use nalgebra::DMatrix;
use rayon::prelude::*;
use serde::Serialize;

use super::auc_interval::{AucInterval, delong};
use super::data::{RowsToScore, read_rows_to_score, rows_to_score_of_bytes};
use super::metrics::auc;
use super::model::Model;
use super::votes::Vote;

/// One input row's result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Prediction {
    /// Line of the row in the file (the header is line 1).
    pub row: u64,
    pub score: Option<f64>,
    /// The posterior sd of the score (methods with a posterior).
    pub score_sd: Option<f64>,
    /// Share of the model's posterior draws that call the row positive, each
    /// at its own threshold (sample-based models).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vote: Option<f64>,
    /// Share of the draws on the majority side, in [½, 1].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agreement: Option<f64>,
    /// Binary entropy of the vote in bits (1 = the posterior is split evenly).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entropy: Option<f64>,
    /// The row has a label (the target column is present and filled in).
    #[serde(skip)]
    pub labelled: bool,
    /// The model's class call (the votes' majority, else the score above `Model::threshold`; None: not scored, or a
    /// record without a class rule).
    #[serde(skip)]
    pub positive: Option<bool>,
    /// `ok`, or why the row was not scored.
    pub status: String,
}

/// The AUC on the rows that have a label and a score.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LabelledAuc {
    /// None when the labelled rows are all of one class.
    pub auc: Option<f64>,
    /// DeLong's SE and 95% interval of `auc`.
    pub interval: Option<AucInterval>,
    pub rows: usize,
    pub positives: usize,
    pub target: String,
    pub positive_label: String,
}

/// Every input row's result, by column.
#[derive(Debug, Clone, PartialEq)]
pub struct Predictions {
    /// Line of each input row in the file (the header is line 1).
    pub lines: Vec<u64>,
    /// Per row its score; NaN where the row was not scored.
    pub scores: Vec<f64>,
    /// Per row the posterior sd of its score (methods with a posterior).
    pub score_sds: Option<Vec<f64>>,
    /// Per row the posterior's vote (sample-based models).
    pub row_votes: Option<Vec<Vote>>,
    /// Per row the model's class call (None: a record without a class rule).
    pub classes: Option<Vec<bool>>,
    /// Per row, when the file has the target column: positive or not (None
    /// where the label is missing).
    pub labels: Option<Vec<Option<bool>>>,
    /// The rows not scored (ascending) and why.
    pub unscored: Vec<(usize, String)>,
    /// Present when the file has the target column.
    pub auc: Option<LabelledAuc>,
    /// How the votes were made (sample-based models), e.g. how many draws.
    pub votes: Option<String>,
    /// The scored file's fingerprint (equal to a record's when it is the
    /// file the model was fitted on).
    pub fingerprint: String,
}

impl Predictions {
    /// Input rows.
    pub fn len(&self) -> usize {
        self.lines.len()
    }

    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    pub fn scored(&self) -> usize {
        self.len() - self.unscored.len()
    }

    /// Whether `score_sd` is given.
    pub fn has_sd(&self) -> bool {
        self.score_sds.is_some()
    }

    /// Why row `k` was not scored (None: it was).
    pub fn problem(&self, k: usize) -> Option<&str> {
        self.unscored
            .binary_search_by_key(&k, |(i, _)| *i)
            .ok()
            .map(|i| self.unscored[i].1.as_str())
    }

    /// Whether row `k` has a label.
    pub fn labelled(&self, k: usize) -> bool {
        self.labels.as_ref().is_some_and(|l| l[k].is_some())
    }

    /// Row `k` as one value.
    pub fn row(&self, k: usize) -> Prediction {
        let line = self.lines[k];
        let labelled = self.labelled(k);
        if let Some(why) = self.problem(k) {
            return Prediction {
                row: line,
                score: None,
                score_sd: None,
                vote: None,
                agreement: None,
                entropy: None,
                labelled,
                positive: None,
                status: why.to_string(),
            };
        }
        let v = self.row_votes.as_ref().map(|v| v[k]);
        Prediction {
            row: line,
            score: Some(self.scores[k]),
            score_sd: self.score_sds.as_ref().map(|s| s[k]),
            vote: v.map(|v| v.positive_share),
            agreement: v.map(|v| v.agreement),
            entropy: v.map(|v| v.entropy),
            labelled,
            positive: self.classes.as_ref().map(|c| c[k]),
            status: "ok".into(),
        }
    }
}

/// Rows per block: the encoded block and its products stay in cache, and
/// there are blocks enough to share among the threads.
pub const BLOCK_ROWS: usize = 1 << 13;

/// Scores the rows of `path` with `model`.
pub fn predict_file(model: &Model, path: &Path) -> Result<Predictions, String> {
    let t = read_rows_to_score(path, &model.schema).map_err(|e| e.to_string())?;
    predict_rows(model, &t, BLOCK_ROWS)
}

/// Scores CSV text held in memory (named `name` in messages) with `model`,
/// exactly as `predict_file` scores the same text in a file.
pub fn predict_bytes(model: &Model, name: &Path, bytes: &[u8]) -> Result<Predictions, String> {
    let t = rows_to_score_of_bytes(name, bytes, &model.schema).map_err(|e| e.to_string())?;
    predict_rows(model, &t, BLOCK_ROWS)
}

/// One block's results (rows `start..start + scores.len()`).
struct Block {
    scores: Vec<f64>,
    sds: Option<Vec<f64>>,
    votes: Option<Vec<Vote>>,
    classes: Option<Vec<bool>>,
    labels: Option<Vec<Option<bool>>>,
    unscored: Vec<(usize, String)>,
}

/// The model's features' columns among the schema's encoded features.
fn model_columns(model: &Model) -> Result<Vec<usize>, String> {
    let names = model.schema.feature_names();
    let cols = model
        .features
        .iter()
        .map(|f| names.iter().position(|n| n == f))
        .collect::<Option<Vec<usize>>>()
        .ok_or("the record's model is inconsistent: a feature is not in its schema")?;
    if model.scaler.mean.len() != cols.len() || model.scaler.sd.len() != cols.len() {
        return Err("the record's model is inconsistent: scaler and features differ".into());
    }
    Ok(cols)
}

pub(crate) fn predict_rows(
    model: &Model,
    t: &RowsToScore,
    block_rows: usize,
) -> Result<Predictions, String> {
    let cols = model_columns(model)?;
    let n = t.n_rows();
    let starts: Vec<usize> = (0..n).step_by(block_rows.max(1)).collect();
    let blocks: Vec<Block> = starts
        .par_iter()
        .map_init(Scratch::default, |scratch, &s| {
            score_block(model, t, &cols, s..(s + block_rows).min(n), scratch)
        })
        .collect();
    let mut p = Predictions {
        lines: t.lines().to_vec(),
        scores: Vec::with_capacity(n),
        score_sds: None,
        row_votes: None,
        classes: None,
        labels: None,
        unscored: Vec::new(),
        auc: None,
        votes: model.votes.as_ref().map(|v| v.describe()),
        fingerprint: t.fingerprint().to_string(),
    };
    fn append<T>(all: &mut Option<Vec<T>>, part: Option<Vec<T>>, n: usize) {
        if let Some(part) = part {
            all.get_or_insert_with(|| Vec::with_capacity(n))
                .extend(part);
        }
    }
    for b in blocks {
        p.scores.extend(b.scores);
        append(&mut p.score_sds, b.sds, n);
        append(&mut p.row_votes, b.votes, n);
        append(&mut p.classes, b.classes, n);
        append(&mut p.labels, b.labels, n);
        p.unscored.extend(b.unscored);
    }
    p.auc = p.labels.as_ref().map(|labels| {
        let (s, y): (Vec<f64>, Vec<bool>) = labels
            .iter()
            .enumerate()
            .filter_map(|(k, l)| Some((p.scores[k], (*l)?)))
            .filter(|(s, _)| !s.is_nan())
            .unzip();
        let positives = y.iter().filter(|&&b| b).count();
        let (auc, interval) = rayon::join(
            || (positives > 0 && positives < y.len()).then(|| auc(&s, &y)),
            || delong(&s, &y),
        );
        LabelledAuc {
            auc,
            interval,
            rows: y.len(),
            positives,
            target: model.schema.target.clone(),
            positive_label: model.schema.positive_label.clone(),
        }
    });
    Ok(p)
}

/// A worker's block matrices, kept from block to block.
#[derive(Default)]
struct Scratch {
    encoded: DMatrix<f64>,
    x: DMatrix<f64>,
}

/// `m` as a `rows` × `cols` matrix (its values are overwritten by the caller).
fn shaped(m: &mut DMatrix<f64>, rows: usize, cols: usize) -> &mut DMatrix<f64> {
    if m.shape() != (rows, cols) {
        *m = DMatrix::zeros(rows, cols);
    }
    m
}

/// Encodes, standardises and scores the input rows `rows`.
fn score_block(
    model: &Model,
    t: &RowsToScore,
    cols: &[usize],
    rows: std::ops::Range<usize>,
    scratch: &mut Scratch,
) -> Block {
    let len = rows.len();
    let encoded = shaped(&mut scratch.encoded, len, t.width());
    let mut problems = vec![None; len];
    t.encode(rows.clone(), encoded, &mut problems);
    // (v − mean)/sd column by column: the arithmetic of `prepare`. Rows that
    // did not encode are scored too (harmlessly) and masked below.
    let x = shaped(&mut scratch.x, len, cols.len());
    for (c, &k) in cols.iter().enumerate() {
        let (m, s) = (model.scaler.mean[c], model.scaler.sd[c]);
        for (o, &v) in x.column_mut(c).iter_mut().zip(encoded.column(k).iter()) {
            *o = (v - m) / s;
        }
    }
    let (mut scores, sds) = model.predict(x);
    let votes = model.vote(x);
    // The class rule: the posterior's majority vote where the model keeps
    // draws, else the point score above the record's training cut.
    let classes: Option<Vec<bool>> = match &votes {
        Some(v) => Some(v.iter().map(|v| v.positive).collect()),
        None => model
            .threshold
            .map(|t| scores.iter().map(|&s| s > t).collect()),
    };
    let (mut sds, mut unscored) = (sds, Vec::new());
    for (i, p) in problems.into_iter().enumerate() {
        if let Some(why) = p {
            scores[i] = f64::NAN;
            if let Some(sd) = &mut sds {
                sd[i] = f64::NAN;
            }
            unscored.push((rows.start + i, why));
        }
    }
    Block {
        scores,
        sds,
        votes,
        classes,
        labels: t
            .has_labels()
            .then(|| rows.clone().map(|r| t.label(r)).collect()),
        unscored,
    }
}

#[cfg(test)]
#[path = "predict_tests.rs"]
mod tests;
