//! Scoring a file with a fitted model (a run record's `model`): the rows are
//! encoded with the training schema, standardised with the training means and
//! sds, and scored exactly as the fit scored its test rows (same arithmetic,
//! so the same bits). Rows that cannot be encoded get a status instead. A
//! sample-based model (gcs, smc) also gives each row the posterior's vote.

use std::path::Path;

use nalgebra::DMatrix;
use serde::Serialize;

use super::auc_interval::{AucInterval, delong};
use super::data::{RowsToScore, read_rows_to_score, rows_to_score_of_bytes};
use super::metrics::auc;
use super::model::Model;

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

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Predictions {
    pub rows: Vec<Prediction>,
    /// Present when the file has the target column.
    pub auc: Option<LabelledAuc>,
    /// Whether `score_sd` is given.
    pub has_sd: bool,
    /// How the votes were made (sample-based models), e.g. how many draws.
    pub votes: Option<String>,
    /// The scored file's fingerprint (equal to a record's when it is the
    /// file the model was fitted on).
    pub fingerprint: String,
}

impl Predictions {
    pub fn scored(&self) -> usize {
        self.rows.iter().filter(|r| r.score.is_some()).count()
    }
}

/// Scores the rows of `path` with `model`.
pub fn predict_file(model: &Model, path: &Path) -> Result<Predictions, String> {
    let t = read_rows_to_score(path, &model.schema).map_err(|e| e.to_string())?;
    predict_rows(model, &t)
}

/// Scores CSV text held in memory (named `name` in messages) with `model`,
/// exactly as `predict_file` scores the same text in a file.
pub fn predict_bytes(model: &Model, name: &Path, bytes: &[u8]) -> Result<Predictions, String> {
    let t = rows_to_score_of_bytes(name, bytes, &model.schema).map_err(|e| e.to_string())?;
    predict_rows(model, &t)
}

fn predict_rows(model: &Model, t: &RowsToScore) -> Result<Predictions, String> {
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
    // (v − mean)/sd column by column: the arithmetic of `prepare`.
    let mut x = DMatrix::<f64>::zeros(t.x.nrows(), cols.len());
    for (c, &k) in cols.iter().enumerate() {
        let (m, s) = (model.scaler.mean[c], model.scaler.sd[c]);
        for (o, &v) in x.column_mut(c).iter_mut().zip(t.x.column(k).iter()) {
            *o = (v - m) / s;
        }
    }
    let (scores, sds) = model.predict(&x);
    let votes = model.vote(&x);
    // The class rule: the posterior's majority vote where the model keeps
    // draws, else the point score above the record's training cut.
    let classes: Option<Vec<bool>> = match &votes {
        Some(v) => Some(v.iter().map(|v| v.positive).collect()),
        None => model
            .threshold
            .map(|t| scores.iter().map(|&s| s > t).collect()),
    };
    let labelled = |k: usize| {
        t.labels
            .as_ref()
            .is_some_and(|l| l.get(k).copied().flatten().is_some())
    };
    let rows: Vec<Prediction> = t
        .rows
        .iter()
        .zip(&t.lines)
        .enumerate()
        .map(|(k, (r, &line))| match r {
            Ok(i) => {
                let v = votes.as_ref().map(|v| v[*i]);
                Prediction {
                    row: line,
                    score: Some(scores[*i]),
                    score_sd: sds.as_ref().map(|s| s[*i]),
                    vote: v.map(|v| v.positive_share),
                    agreement: v.map(|v| v.agreement),
                    entropy: v.map(|v| v.entropy),
                    labelled: labelled(k),
                    positive: classes.as_ref().map(|c| c[*i]),
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
                labelled: labelled(k),
                positive: None,
                status: why.clone(),
            },
        })
        .collect();
    let auc = t.labels.as_ref().map(|labels| {
        let (s, y): (Vec<f64>, Vec<bool>) = rows
            .iter()
            .zip(labels)
            .filter_map(|(p, l)| Some((p.score?, (*l)?)))
            .unzip();
        let positives = y.iter().filter(|&&b| b).count();
        LabelledAuc {
            auc: (positives > 0 && positives < y.len()).then(|| auc(&s, &y)),
            interval: delong(&s, &y),
            rows: y.len(),
            positives,
            target: model.schema.target.clone(),
            positive_label: model.schema.positive_label.clone(),
        }
    });
    Ok(Predictions {
        rows,
        auc,
        has_sd: sds.is_some(),
        votes: model.votes.as_ref().map(|v| v.describe()),
        fingerprint: t.fingerprint.clone(),
    })
}
