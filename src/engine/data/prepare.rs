//! From a loaded dataset to standardised train/test matrices: seeded stratified
//! splits, k-fold assignment, and standardisation with training statistics.

use std::sync::Arc;

use nalgebra::DMatrix;
use rand::seq::SliceRandom;
use serde::{Deserialize, Serialize};

use super::Dataset;
use super::moments::{max_abs, mean_sd, standardize};
use crate::engine::numerics::rng;

/// Rows and labels (true = positive).
#[derive(Debug, Clone)]
pub struct Labeled {
    /// Shared with the problem built on these rows (no copy).
    pub x: Arc<DMatrix<f64>>,
    pub y: Vec<bool>,
}

impl Labeled {
    pub fn rows(&self) -> usize {
        self.y.len()
    }
    pub fn positives(&self) -> usize {
        self.y.iter().filter(|&&b| b).count()
    }
    pub fn negatives(&self) -> usize {
        self.rows() - self.positives()
    }
    pub fn select_rows(&self, idx: &[usize]) -> Labeled {
        Labeled {
            x: Arc::new(self.x.select_rows(idx)),
            y: idx.iter().map(|&i| self.y[i]).collect(),
        }
    }
    /// Keeps the given feature columns.
    pub fn select_columns(&self, cols: &[usize]) -> Labeled {
        Labeled {
            x: Arc::new(self.x.select_columns(cols)),
            y: self.y.clone(),
        }
    }
}

/// Column means and population sds (ddof = 0) of a training matrix.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Standardizer {
    pub mean: Vec<f64>,
    pub sd: Vec<f64>,
}

impl Standardizer {
    pub fn fit(x: &DMatrix<f64>) -> Standardizer {
        column_stats(x, &(0..x.nrows()).collect::<Vec<_>>()).0
    }

    pub fn apply(&self, x: &DMatrix<f64>) -> DMatrix<f64> {
        let mut z = x.clone();
        for (k, mut col) in z.column_iter_mut().enumerate() {
            let (m, s) = (self.mean[k], self.sd[k]);
            col.iter_mut().for_each(|v| *v = standardize(*v, m, s));
        }
        z
    }
}

/// Row indices of a train/test split.
#[derive(Debug, Clone)]
pub struct SplitIndices {
    pub train: Vec<usize>,
    pub test: Vec<usize>,
}

/// Splits each class separately after a seeded shuffle (so ordered files such as
/// time series are mixed). Each class keeps ≥ 2 training rows and, when
/// `test_frac > 0`, ≥ 1 test row.
pub fn stratified_split(y: &[bool], test_frac: f64, seed: u64) -> Result<SplitIndices, String> {
    if !(0.0..1.0).contains(&test_frac) {
        return Err(format!("--test-frac must be in [0, 1); got {test_frac}"));
    }
    let mut train = Vec::new();
    let mut test = Vec::new();
    for (class, label) in [(0u64, true), (1u64, false)] {
        let mut idx: Vec<usize> = (0..y.len()).filter(|&i| y[i] == label).collect();
        idx.shuffle(&mut rng::stream(seed, &[0x5711, class]));
        let n = idx.len();
        let mut n_test = (test_frac * n as f64).round() as usize;
        if test_frac > 0.0 {
            n_test = n_test.max(1);
        }
        if n < n_test + 2 {
            let name = if label { "positive" } else { "negative" };
            return Err(format!(
                "the {name} class has only {n} row(s): too few to split with --test-frac {test_frac} \
                 (need ≥ 2 for training and ≥ 1 for testing); use --test-frac 0 or a separate --test file"
            ));
        }
        test.extend_from_slice(&idx[..n_test]);
        train.extend_from_slice(&idx[n_test..]);
    }
    train.sort_unstable();
    test.sort_unstable();
    Ok(SplitIndices { train, test })
}

/// Fold number (0..k) of every row: each class is shuffled and dealt round-robin,
/// so every fold has the class balance of the whole.
pub fn stratified_folds(y: &[bool], k: usize, seed: u64) -> Vec<usize> {
    let mut fold = vec![0usize; y.len()];
    let mut offset = 0;
    for (class, label) in [(0u64, true), (1u64, false)] {
        let mut idx: Vec<usize> = (0..y.len()).filter(|&i| y[i] == label).collect();
        idx.shuffle(&mut rng::stream(seed, &[0xF01D, class]));
        for (r, &i) in idx.iter().enumerate() {
            fold[i] = (r + offset) % k;
        }
        offset += idx.len(); // the next class continues the deal: fold sizes stay even
    }
    fold
}

/// Train and held-out rows of fold `f`.
pub fn fold_indices(fold: &[usize], f: usize) -> (Vec<usize>, Vec<usize>) {
    let train = (0..fold.len()).filter(|&i| fold[i] != f).collect();
    let test = (0..fold.len()).filter(|&i| fold[i] == f).collect();
    (train, test)
}

/// Where the test rows come from.
pub enum TestSource<'a> {
    None,
    Split { frac: f64, seed: u64 },
    File(&'a Dataset),
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SplitInfo {
    /// "stratified", "file" or "none".
    pub kind: String,
    pub test_frac: Option<f64>,
    pub seed: Option<u64>,
    pub test_file: Option<String>,
    pub train_rows: usize,
    pub train_positives: usize,
    pub test_rows: usize,
    pub test_positives: usize,
    /// Features constant on the training rows (dropped: they would divide by zero).
    pub dropped_constant_in_train: Vec<String>,
}

/// Standardised training (and test) data ready for an engine.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub names: Vec<String>,
    pub train: Labeled,
    pub test: Option<Labeled>,
    pub scaler: Standardizer,
    pub info: SplitInfo,
}

/// Rows `rows` and columns `cols` of `x`, standardised by `scaler` (indexed like `cols`).
fn extract(
    x: &DMatrix<f64>,
    rows: &[usize],
    cols: &[usize],
    scaler: &Standardizer,
) -> DMatrix<f64> {
    use rayon::prelude::*;
    let mut out = DMatrix::<f64>::zeros(rows.len(), cols.len());
    let n = rows.len().max(1);
    // Columns in parallel (each element computed alone: the same values).
    out.as_mut_slice()
        .par_chunks_mut(n)
        .zip(cols.par_iter().enumerate())
        .for_each(|(column, (c, &k))| {
            let (src, (m, s)) = (x.column(k), (scaler.mean[c], scaler.sd[c]));
            for (o, &r) in column.iter_mut().zip(rows) {
                *o = standardize(src[r], m, s);
            }
        });
    out
}

/// Means and population sds of the given rows, per column, and the columns
/// without spread there (they would divide by zero). "No spread" is relative
/// to the column's own magnitude: a column of values near 1e-20 that vary is
/// not constant.
fn column_stats(x: &DMatrix<f64>, rows: &[usize]) -> (Standardizer, Vec<usize>) {
    use rayon::prelude::*;
    // Columns in parallel, each summed in row order (the same bits as serially).
    let stats: Vec<(f64, f64, bool)> = (0..x.ncols())
        .into_par_iter()
        .map(|k| {
            let col = x.column(k);
            let values = rows.iter().map(|&r| col[r]);
            let (m, s) = mean_sd(values.clone());
            (m, s, s <= 1e-12 * max_abs(values))
        })
        .collect();
    let constant = (0..stats.len()).filter(|&k| stats[k].2).collect();
    let mean = stats.iter().map(|t| t.0).collect();
    let sd = stats.iter().map(|t| t.1).collect();
    (Standardizer { mean, sd }, constant)
}

pub fn prepare(ds: &Dataset, source: TestSource<'_>) -> Result<Prepared, String> {
    let all_rows: Vec<usize> = (0..ds.rows()).collect();
    let (train_rows, test, kind, frac, seed, file) = match source {
        TestSource::None => (all_rows, None, "none", None, None, None),
        TestSource::Split { frac, seed } if frac == 0.0 => {
            (all_rows, None, "none", Some(frac), Some(seed), None)
        }
        TestSource::Split { frac, seed } => {
            let s = stratified_split(&ds.y, frac, seed)?;
            (
                s.train,
                Some((&ds.x, &ds.y, s.test)),
                "stratified",
                Some(frac),
                Some(seed),
                None,
            )
        }
        TestSource::File(t) => {
            if t.names != ds.names {
                return Err("the test file's features differ from the training file's".into());
            }
            let rows = (0..t.rows()).collect();
            (
                all_rows,
                Some((&t.x, &t.y, rows)),
                "file",
                None,
                None,
                Some(t.path.display().to_string()),
            )
        }
    };
    let (stats, constant) = column_stats(&ds.x, &train_rows);
    let keep: Vec<usize> = (0..ds.names.len())
        .filter(|k| !constant.contains(k))
        .collect();
    if keep.is_empty() {
        return Err("every feature is constant on the training rows".into());
    }
    let names: Vec<String> = keep.iter().map(|&k| ds.names[k].clone()).collect();
    let scaler = Standardizer {
        mean: keep.iter().map(|&k| stats.mean[k]).collect(),
        sd: keep.iter().map(|&k| stats.sd[k]).collect(),
    };
    let train = Labeled {
        x: Arc::new(extract(&ds.x, &train_rows, &keep, &scaler)),
        y: train_rows.iter().map(|&r| ds.y[r]).collect(),
    };
    let test = test.map(|(x, y, rows)| Labeled {
        x: Arc::new(extract(x, &rows, &keep, &scaler)),
        y: rows.iter().map(|&r| y[r]).collect(),
    });
    let info = SplitInfo {
        kind: kind.into(),
        test_frac: frac,
        seed,
        test_file: file,
        train_rows: train.rows(),
        train_positives: train.positives(),
        test_rows: test.as_ref().map_or(0, |t| t.rows()),
        test_positives: test.as_ref().map_or(0, |t| t.positives()),
        dropped_constant_in_train: constant.iter().map(|&k| ds.names[k].clone()).collect(),
    };
    Ok(Prepared {
        names,
        train,
        test,
        scaler,
        info,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_is_stratified_and_seeded() {
        let y: Vec<bool> = (0..100).map(|i| i % 4 == 0).collect();
        let a = stratified_split(&y, 0.25, 7).unwrap();
        let b = stratified_split(&y, 0.25, 7).unwrap();
        assert_eq!(a.train, b.train);
        assert_eq!(a.test.len(), 25);
        assert_eq!(a.test.iter().filter(|&&i| y[i]).count(), 6); // round(0.25 · 25)
        let c = stratified_split(&y, 0.25, 8).unwrap();
        assert_ne!(a.test, c.test);
        let mut all: Vec<usize> = a.train.iter().chain(&a.test).copied().collect();
        all.sort();
        assert_eq!(all, (0..100).collect::<Vec<_>>());
    }

    #[test]
    fn folds_balance_classes() {
        let y: Vec<bool> = (0..103).map(|i| i % 3 == 0).collect();
        let f = stratified_folds(&y, 5, 1);
        for k in 0..5 {
            let n = f.iter().filter(|&&g| g == k).count();
            let p = (0..y.len()).filter(|&i| f[i] == k && y[i]).count();
            assert!((20..=21).contains(&n), "fold {k} has {n}");
            assert!((6..=7).contains(&p), "fold {k} has {p} positives");
        }
    }

    #[test]
    fn too_small_class_is_an_error() {
        let y = vec![true, true, false, false, false, false];
        assert!(
            stratified_split(&y, 0.25, 0)
                .unwrap_err()
                .contains("positive class has only 2")
        );
    }
}
