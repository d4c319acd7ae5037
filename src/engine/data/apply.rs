//! A file to score, read with a training schema: columns matched by name in
//! any order (extra columns ignored, the target optional), every row kept in
//! input order with either its encoded features or why it cannot be encoded — a
//! missing cell, a category training never saw, text in a numeric column — so
//! that one bad row does not stop the others. The file itself is read by the
//! loader (same delimiters, quoting, errors with line and column).

use std::path::{Path, PathBuf};

use nalgebra::DMatrix;

use super::csv_read::{RawTable, is_missing, parse_number, parse_table, read_table};
use super::error::DataError;
use super::load::find_column;
use super::schema::{ColumnRule, Schema, canonical_label};

/// The rows of a file to score.
#[derive(Debug, Clone)]
pub struct RowsToScore {
    pub path: PathBuf,
    /// Line of each input row in the file (the header is line 1).
    pub lines: Vec<u64>,
    /// The encoded features (the schema's, in its order) of the rows that can
    /// be scored, in input order.
    pub x: DMatrix<f64>,
    /// Per input row: `Ok(i)`, its row in `x`, or why it cannot be scored.
    pub rows: Vec<Result<usize, String>>,
    /// Per input row, when the file has the target column: positive or not
    /// (None where the label is missing).
    pub labels: Option<Vec<Option<bool>>>,
    /// The file's fingerprint (as a record's `dataset.fingerprint`).
    pub fingerprint: String,
}

/// Reads `path` with the training `schema`.
pub fn read_rows_to_score(path: &Path, schema: &Schema) -> Result<RowsToScore, DataError> {
    rows_to_score(path, read_table(path)?, schema)
}

/// CSV text held in memory (named `name` in messages), read with the training `schema`.
pub fn rows_to_score_of_bytes(
    name: &Path,
    bytes: &[u8],
    schema: &Schema,
) -> Result<RowsToScore, DataError> {
    rows_to_score(name, parse_table(name, bytes)?, schema)
}

fn rows_to_score(
    path: &Path,
    mut raw: RawTable,
    schema: &Schema,
) -> Result<RowsToScore, DataError> {
    let cols = schema
        .rules
        .iter()
        .map(|r| find_column(path, &raw.header, r.column(), "the training file's"))
        .collect::<Result<Vec<usize>, _>>()?;
    let target = raw.header.iter().position(|h| *h == schema.target);
    if let Some(j) = target {
        raw.read_as_text(j);
    }
    let width: usize = schema.rules.iter().map(|r| r.feature_names().len()).sum();
    let mut encoded: Vec<f64> = Vec::new(); // row-major, `width` per scorable row
    let mut rows = Vec::with_capacity(raw.n_rows());
    let mut row = vec![0.0; width];
    for r in 0..raw.n_rows() {
        rows.push(match encode_row(&raw, r, &schema.rules, &cols, &mut row) {
            Ok(()) => {
                encoded.extend_from_slice(&row);
                Ok(encoded.len() / width.max(1) - 1)
            }
            Err(problems) => Err(problems.join("; ")),
        });
    }
    let n_ok = rows.iter().filter(|r| r.is_ok()).count();
    let x = DMatrix::from_row_slice(n_ok, width, &encoded);
    let labels = target.map(|j| {
        (0..raw.n_rows())
            .map(|r| {
                let cell = raw.cell(r, j);
                (!is_missing(cell)).then(|| canonical_label(cell) == schema.positive_label)
            })
            .collect()
    });
    Ok(RowsToScore {
        path: path.to_path_buf(),
        lines: raw.lines.clone(),
        x,
        rows,
        labels,
        fingerprint: raw.fingerprint.clone(),
    })
}

/// Encodes row `r` into `out` as the training encoded it; every problem named.
fn encode_row(
    raw: &RawTable,
    r: usize,
    rules: &[ColumnRule],
    cols: &[usize],
    out: &mut [f64],
) -> Result<(), Vec<String>> {
    out.fill(0.0);
    let mut problems = Vec::new();
    let mut k0 = 0;
    for (rule, &j) in rules.iter().zip(cols) {
        let column = rule.column();
        if let (ColumnRule::Numeric { .. }, Some(values)) = (rule, raw.numbers(j)) {
            match values[r] {
                v if v.is_nan() => problems.push(format!("missing value in '{column}'")),
                v if v.is_finite() => out[k0] = v,
                v => problems.push(format!("non-finite number '{v}' in '{column}'")),
            }
            k0 += 1;
            continue;
        }
        let cell = raw.cell(r, j);
        if is_missing(cell) {
            problems.push(format!("missing value in '{column}'"));
            k0 += rule.feature_names().len();
            continue;
        }
        match rule {
            ColumnRule::Numeric { .. } => {
                match parse_number(cell, raw.decimal_comma()) {
                    Some(v) if v.is_finite() => out[k0] = v,
                    Some(_) => problems.push(format!("non-finite number '{cell}' in '{column}'")),
                    None => problems.push(format!("'{cell}' in '{column}' is not a number")),
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
        Ok(())
    } else {
        Err(problems)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_keep_their_order_and_problems_are_named() {
        let schema = Schema {
            target: "y".into(),
            positive_label: "1".into(),
            rules: vec![
                ColumnRule::Numeric { column: "a".into() },
                ColumnRule::OneHot {
                    column: "c".into(),
                    levels: vec!["x".into(), "z".into()],
                    other_levels: vec!["w".into()],
                },
            ],
        };
        let dir = std::env::temp_dir().join(format!("pacauc-apply-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("s.csv");
        // Columns in another order, an extra one; line 4 is blank.
        std::fs::write(&p, "c,extra,a,y\nz,9,1.5,1\nq,9,2,0\n\nw,9,NA,\nx,9,3,0\n").unwrap();
        let t = read_rows_to_score(&p, &schema).unwrap();
        assert_eq!(t.lines, vec![2, 3, 5, 6]);
        assert_eq!(t.rows[0], Ok(0));
        assert_eq!(t.rows[1], Err("'q' in 'c' was not seen in training".into()));
        assert_eq!(t.rows[2], Err("missing value in 'a'".into()));
        assert_eq!(t.rows[3], Ok(1));
        assert_eq!(
            t.x.row(0).iter().copied().collect::<Vec<_>>(),
            [1.5, 0.0, 1.0]
        );
        assert_eq!(
            t.x.row(1).iter().copied().collect::<Vec<_>>(),
            [3.0, 1.0, 0.0]
        );
        assert_eq!(
            t.labels.unwrap(),
            vec![Some(true), Some(false), None, Some(false)]
        );
        // Without the target; a training column missing is an error naming it.
        std::fs::write(&p, "a,c\n1,x\n").unwrap();
        assert!(read_rows_to_score(&p, &schema).unwrap().labels.is_none());
        std::fs::write(&p, "c,y\nx,1\n").unwrap();
        let e = read_rows_to_score(&p, &schema).unwrap_err().to_string();
        assert!(e.contains("'a' is not in the header"), "{e}");
        std::fs::remove_dir_all(&dir).ok();
    }
}
