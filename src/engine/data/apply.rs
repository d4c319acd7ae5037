//! A file to score, read with a training schema: columns matched by name in
//! any order (extra columns ignored, the target optional), every row kept in
//! input order with either its encoded features or why it cannot be encoded — a
//! missing cell, a category training never saw, text in a numeric column — so
//! that one bad row does not stop the others. The file itself is read by the
//! loader (same delimiters, quoting, errors with line and column).
//!
//! The rows are not encoded here all at once: a caller encodes blocks of rows
//! (`RowsToScore::encode`, column by column, in parallel over blocks), so a
//! 10⁷-row file never holds a second full copy of its features.

use std::collections::{HashMap, HashSet};
use std::ops::Range;
use std::path::{Path, PathBuf};

use nalgebra::DMatrix;

use super::csv_read::{RawTable, is_missing, parse_number, parse_table, read_table};
use super::error::DataError;
use super::load::find_column;
use super::schema::{ColumnRule, Schema, canonical_label};

/// The rows of a file to score: its cells, and how each training column is found and encoded.
pub struct RowsToScore {
    pub path: PathBuf,
    raw: RawTable,
    /// Per schema rule: its column in the file and how its cells are encoded.
    rules: Vec<(usize, Encoding)>,
    target: Option<usize>,
    positive_label: String,
    width: usize,
}

/// How a rule's cells become features, with the level lookups built once.
enum Encoding {
    Numeric {
        column: String,
    },
    OneHot {
        column: String,
        /// Level → its feature (the first, as the schema lists it).
        levels: HashMap<String, usize>,
        width: usize,
        other_levels: HashSet<String>,
    },
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
    let rules = schema
        .rules
        .iter()
        .map(|r| {
            let j = find_column(path, &raw.header, r.column(), "the training file's")?;
            Ok((j, Encoding::of(r)))
        })
        .collect::<Result<Vec<_>, DataError>>()?;
    let target = raw.header.iter().position(|h| *h == schema.target);
    if let Some(j) = target {
        raw.read_as_text(j);
    }
    Ok(RowsToScore {
        path: path.to_path_buf(),
        width: schema.rules.iter().map(|r| r.feature_names().len()).sum(),
        raw,
        rules,
        target,
        positive_label: schema.positive_label.clone(),
    })
}

impl Encoding {
    fn of(rule: &ColumnRule) -> Encoding {
        match rule {
            ColumnRule::Numeric { column } => Encoding::Numeric {
                column: column.clone(),
            },
            ColumnRule::OneHot {
                column,
                levels,
                other_levels,
            } => {
                let mut lookup = HashMap::with_capacity(levels.len());
                for (k, l) in levels.iter().enumerate() {
                    lookup.entry(l.clone()).or_insert(k);
                }
                Encoding::OneHot {
                    column: column.clone(),
                    levels: lookup,
                    width: levels.len(),
                    other_levels: other_levels.iter().cloned().collect(),
                }
            }
        }
    }
}

impl RowsToScore {
    /// Input rows (blank lines are not rows).
    pub fn n_rows(&self) -> usize {
        self.raw.n_rows()
    }

    /// Line of each input row in the file (the header is line 1).
    pub fn lines(&self) -> &[u64] {
        &self.raw.lines
    }

    /// The schema's encoded features per row.
    pub fn width(&self) -> usize {
        self.width
    }

    /// The file's fingerprint (as a record's `dataset.fingerprint`).
    pub fn fingerprint(&self) -> &str {
        &self.raw.fingerprint
    }

    /// Whether the file has the target column.
    pub fn has_labels(&self) -> bool {
        self.target.is_some()
    }

    /// Row `r`'s label: positive or not; None where the file has no target
    /// column or the cell is missing.
    pub fn label(&self, r: usize) -> Option<bool> {
        let cell = self.raw.cell(r, self.target?);
        (!is_missing(cell)).then(|| canonical_label(cell) == self.positive_label)
    }

    /// Encodes the input rows `rows` into `out` (`rows.len()` × `width`, the
    /// schema's features in its order) as the training encoded them, column
    /// by column. `problems[i]` is None for a row that encodes, else every
    /// problem named ("; " between them); such a row's features are left
    /// partly filled.
    pub fn encode(
        &self,
        rows: Range<usize>,
        out: &mut DMatrix<f64>,
        problems: &mut [Option<String>],
    ) {
        assert_eq!(out.shape(), (rows.len(), self.width), "block shape");
        assert_eq!(problems.len(), rows.len(), "one entry per row");
        out.fill(0.0);
        problems.fill(None);
        let note = |p: &mut Option<String>, what: String| match p {
            Some(s) => {
                s.push_str("; ");
                s.push_str(&what);
            }
            None => *p = Some(what),
        };
        let comma = self.raw.decimal_comma();
        let mut k0 = 0;
        for (j, encoding) in &self.rules {
            match encoding {
                Encoding::Numeric { column } => {
                    let mut feature = out.column_mut(k0);
                    // A numeric column of a columnar file arrives typed.
                    let typed = self.raw.numbers(*j);
                    for (i, r) in rows.clone().enumerate() {
                        if let Some(values) = typed {
                            match values[r] {
                                v if v.is_nan() => {
                                    note(&mut problems[i], format!("missing value in '{column}'"))
                                }
                                v if v.is_finite() => feature[i] = v,
                                v => note(
                                    &mut problems[i],
                                    format!("non-finite number '{v}' in '{column}'"),
                                ),
                            }
                            continue;
                        }
                        let cell = self.raw.cell(r, *j);
                        if is_missing(cell) {
                            note(&mut problems[i], format!("missing value in '{column}'"));
                            continue;
                        }
                        match parse_number(cell, comma) {
                            Some(v) if v.is_finite() => feature[i] = v,
                            Some(_) => note(
                                &mut problems[i],
                                format!("non-finite number '{cell}' in '{column}'"),
                            ),
                            None => note(
                                &mut problems[i],
                                format!("'{cell}' in '{column}' is not a number"),
                            ),
                        }
                    }
                    k0 += 1;
                }
                Encoding::OneHot {
                    column,
                    levels,
                    width,
                    other_levels,
                } => {
                    for (i, r) in rows.clone().enumerate() {
                        let cell = self.raw.cell(r, *j);
                        if is_missing(cell) {
                            note(&mut problems[i], format!("missing value in '{column}'"));
                        } else if let Some(&l) = levels.get(cell) {
                            out[(i, k0 + l)] = 1.0;
                        } else if !other_levels.contains(cell) {
                            note(
                                &mut problems[i],
                                format!("'{cell}' in '{column}' was not seen in training"),
                            );
                        }
                    }
                    k0 += width;
                }
            }
        }
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
        assert_eq!(t.lines(), [2, 3, 5, 6]);
        let mut x = DMatrix::zeros(4, t.width());
        let mut problems = vec![None; 4];
        t.encode(0..4, &mut x, &mut problems);
        assert_eq!(
            problems,
            [
                None,
                Some("'q' in 'c' was not seen in training".into()),
                Some("missing value in 'a'".into()),
                None
            ]
        );
        assert_eq!(
            x.row(0).iter().copied().collect::<Vec<_>>(),
            [1.5, 0.0, 1.0]
        );
        assert_eq!(
            x.row(3).iter().copied().collect::<Vec<_>>(),
            [3.0, 1.0, 0.0]
        );
        // A block from the middle, several problems on one row.
        std::fs::write(&p, "a,c,y\n1,x,1\nabc,v,0\ninf,,1\n").unwrap();
        let t = read_rows_to_score(&p, &schema).unwrap();
        let mut x = DMatrix::zeros(2, t.width());
        let mut problems = vec![None; 2];
        t.encode(1..3, &mut x, &mut problems);
        assert_eq!(
            problems,
            [
                Some("'abc' in 'a' is not a number; 'v' in 'c' was not seen in training".into()),
                Some("non-finite number 'inf' in 'a'; missing value in 'c'".into()),
            ]
        );
        let labels: Vec<_> = (0..3).map(|r| t.label(r)).collect();
        assert_eq!(labels, [Some(true), Some(false), Some(true)]);
        // Without the target; a training column missing is an error naming it.
        std::fs::write(&p, "a,c\n1,x\n").unwrap();
        let t = read_rows_to_score(&p, &schema).unwrap();
        assert!(!t.has_labels() && t.label(0).is_none());
        std::fs::write(&p, "c,y\nx,1\n").unwrap();
        let e = read_rows_to_score(&p, &schema).err().unwrap().to_string();
        assert!(e.contains("'a' is not in the header"), "{e}");
        std::fs::remove_dir_all(&dir).ok();
    }
}
