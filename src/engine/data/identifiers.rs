//! Columns that look like identifiers or row numbers. Kept as features they are
//! noise at best and a leak at worst (IDs assigned in the order cases arrived),
//! so each is announced with the `--drop` hint; none is dropped silently.
//!
//! Two kinds of evidence, either enough:
//! - the **name** reads as an identifier (`id`, `ID`, `patient_id`, `PatientID`,
//!   `key`, `uuid`, `record`, `code`, …, matched on whole words of the name) and
//!   at least half of the values are distinct — a real clinical file's `ID`
//!   column held 645 distinct integers in 699 rows (patients sampled twice);
//!   the distinct share keeps a small categorical `site_id` out;
//! - the **shape**: integers that increase row by row (a row number), or that
//!   are nearly all distinct (≥ 95% of at least 50 rows, or all of at least 20).
//!   95% keeps genuine high-cardinality amounts out (the shared Credit file's
//!   `Amount` is 92% distinct, Adult's `fnlwgt` 67%).

use nalgebra::DMatrix;

use super::typing::ColumnKind;

/// Whole words of a column name that mark an identifier.
const ID_WORDS: &[&str] = &[
    "id",
    "ids",
    "identifier",
    "uuid",
    "guid",
    "key",
    "record",
    "rowid",
    "index",
    "idx",
    "code",
    "number",
    "no",
    "nr",
    "unnamed",
];

/// Share of distinct values from which a column named like an identifier is one.
const NAMED_MIN_DISTINCT: f64 = 0.5;
/// Share of distinct integers from which an unnamed column is ID-like.
const SHAPE_MIN_DISTINCT: f64 = 0.95;

/// A numeric column that looks like a row number or an identifier.
#[derive(Debug)]
pub(super) struct IdLike {
    pub name: String,
    why: Why,
}

#[derive(Debug, PartialEq)]
enum Why {
    /// Distinct integers in increasing order.
    RowNumber,
    /// A different integer on every row.
    AllDistinct,
    /// Most values distinct (count of distinct values, rows).
    MostlyDistinct(usize, usize),
    /// Named like an identifier (distinct values, rows).
    Named(usize, usize),
}

impl IdLike {
    pub fn warning(&self) -> String {
        let name = &self.name;
        let what = match self.why {
            Why::RowNumber => "distinct increasing integers, like a row number".to_string(),
            Why::AllDistinct => "a different integer on every row, like an ID".to_string(),
            Why::MostlyDistinct(k, n) => {
                format!("{k} distinct integers in {n} rows, like an ID with a few repeats")
            }
            Why::Named(k, n) => {
                format!("{k} distinct values in {n} rows and its name reads as an identifier")
            }
        };
        format!(
            "column '{name}' holds {what}; it is used as a feature: if it is an identifier, exclude it with --drop '{name}'"
        )
    }
}

/// The words of a column name: split at non-alphanumerics and at lower→upper
/// case changes (`PatientID` → patient, id; `record_no` → record, no).
fn words(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for c in name.chars() {
        if !c.is_alphanumeric() {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            prev_lower = false;
            continue;
        }
        if c.is_uppercase() && prev_lower && !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
        prev_lower = c.is_lowercase() || c.is_ascii_digit();
        cur.extend(c.to_lowercase());
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Whether a column's name reads as an identifier.
pub(super) fn named_like_id(name: &str) -> bool {
    words(name).iter().any(|w| ID_WORDS.contains(&w.as_str()))
}

/// The numeric feature columns that look like identifiers (see the module docs).
pub(super) fn id_like_columns(
    header: &[String],
    cols: &[usize],
    kinds: &[ColumnKind],
    parsed: &DMatrix<f64>,
) -> Vec<IdLike> {
    let mut out = Vec::new();
    for (f, (&j, kind)) in cols.iter().zip(kinds).enumerate() {
        let c = parsed.column(f);
        let n = c.len();
        if !matches!(kind, ColumnKind::Numeric) || n < 10 || c.iter().any(|v| v.fract() != 0.0) {
            continue;
        }
        let name = header[j].clone();
        if c.as_slice().windows(2).all(|w| w[1] > w[0]) {
            out.push(IdLike {
                name,
                why: Why::RowNumber,
            });
            continue;
        }
        let mut v = c.as_slice().to_vec();
        v.sort_by(f64::total_cmp);
        v.dedup();
        let k = v.len();
        let share = k as f64 / n as f64;
        let why = if k == n && n >= 20 {
            Some(Why::AllDistinct)
        } else if n >= 50 && share >= SHAPE_MIN_DISTINCT {
            Some(Why::MostlyDistinct(k, n))
        } else if named_like_id(&name) && share >= NAMED_MIN_DISTINCT {
            Some(Why::Named(k, n))
        } else {
            None
        };
        if let Some(why) = why {
            out.push(IdLike { name, why });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(name: &str, values: &[f64]) -> Option<Why> {
        let m = DMatrix::from_column_slice(values.len(), 1, values);
        id_like_columns(&[name.to_string()], &[0], &[ColumnKind::Numeric], &m)
            .pop()
            .map(|c| c.why)
    }

    #[test]
    fn names_are_read_by_whole_words() {
        for yes in [
            "ID",
            "id",
            "patient_id",
            "PatientID",
            "patientId",
            "record",
            "Sample code number",
            "uuid",
            "Unnamed: 0",
            "row-index",
        ] {
            assert!(named_like_id(yes), "{yes}");
        }
        for no in [
            "idle_time",
            "valid",
            "paid",
            "Idade",
            "monkey",
            "keyboard",
            "width",
            "age",
        ] {
            assert!(!named_like_id(no), "{no}");
        }
    }

    #[test]
    fn repeated_ids_are_caught_by_name_not_by_shape_alone() {
        // 699 rows, 645 distinct: some patients sampled twice (the clinical file).
        let ids: Vec<f64> = (0..699u64)
            .map(|i| {
                let k = if i % 13 == 1 { i - 1 } else { i };
                (1_000_000 + (k * 7919) % 400_009) as f64
            })
            .collect();
        let mut distinct = ids.clone();
        distinct.sort_by(f64::total_cmp);
        distinct.dedup();
        assert_eq!(distinct.len(), 645);
        assert_eq!(run("ID", &ids), Some(Why::Named(645, 699)));
        // 92% distinct without an identifier's name: a genuine amount, not flagged.
        assert_eq!(run("amount", &ids), None);
    }

    #[test]
    fn nearly_all_distinct_integers_are_flagged_by_shape() {
        let v: Vec<f64> = (0..100u64)
            .map(|i| ((if i == 50 { 49 } else { i }) * 37 % 101) as f64)
            .collect();
        assert_eq!(run("x17", &v), Some(Why::MostlyDistinct(99, 100)));
    }

    #[test]
    fn small_categoricals_and_measurements_are_not_flagged() {
        let site: Vec<f64> = (0..200).map(|i| (i % 5) as f64).collect();
        assert_eq!(run("site_id", &site), None);
        let bp: Vec<f64> = (0..200).map(|i| 0.5 + i as f64).collect();
        assert_eq!(run("id", &bp), None, "non-integers are measurements");
        let rows: Vec<f64> = (1..=30).map(f64::from).collect();
        assert_eq!(run("anything", &rows), Some(Why::RowNumber));
    }
}
