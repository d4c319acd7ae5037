//! Missing cells: which rows are complete in the needed columns (in
//! parallel row chunks, merged in row order), and how to say what is missing.

use std::collections::BTreeMap;
use std::path::Path;

use super::csv_read::RawTable;
use super::error::{DataError, DataErrorKind as K};
use super::load::MissingPolicy;

/// Rows with a value in every needed column, and the missing-cell count per
/// column; with `MissingPolicy::Error`, the first missing cell is an error.
pub(super) fn complete_rows(
    path: &Path,
    raw: &RawTable,
    needed: &[usize],
    policy: MissingPolicy,
) -> Result<(Vec<usize>, BTreeMap<String, usize>), DataError> {
    use rayon::prelude::*;
    // A number column without a NaN has no missing cell: skipped (a
    // columnar file's numbers need no cell-by-cell look).
    let needed: Vec<usize> = needed
        .par_iter()
        .copied()
        .filter(|&j| raw.numbers(j).is_none_or(|v| v.iter().any(|x| x.is_nan())))
        .collect();
    let needed = &needed[..];
    let rows: Vec<usize> = (0..raw.n_rows()).collect();
    // Chunks of rows in parallel, merged in row order: the same rows, counts
    // and first missing cell as one pass.
    // Per chunk: its complete rows and its missing cells per needed column.
    type Chunk = (Vec<usize>, Vec<usize>);
    let parts: Vec<Result<Chunk, DataError>> = rows
        .par_chunks(1 << 14)
        .map(|chunk| {
            let mut missing = vec![0usize; needed.len()];
            let mut kept = Vec::with_capacity(chunk.len());
            for &r in chunk {
                let mut complete = true;
                for (m, &j) in missing.iter_mut().zip(needed) {
                    if raw.missing_at(r, j) {
                        if policy == MissingPolicy::Error {
                            return Err(DataError::new(K::Missing, path, format!("missing value '{}'", raw.shown(r, j)))
                                .line(raw.lines[r])
                                .column(j, &raw.header[j])
                                .hint("fill in the value, or drop incomplete rows (the default, without --missing error)"));
                        }
                        *m += 1;
                        complete = false;
                    }
                }
                if complete {
                    kept.push(r);
                }
            }
            Ok((kept, missing))
        })
        .collect();
    let mut missing_by_column: BTreeMap<String, usize> = BTreeMap::new();
    let mut kept = Vec::with_capacity(raw.n_rows());
    let mut counts = vec![0usize; needed.len()];
    for p in parts {
        let (k, m) = p?;
        kept.extend(k);
        counts.iter_mut().zip(m).for_each(|(c, m)| *c += m);
    }
    for (&j, &c) in needed.iter().zip(&counts) {
        if c > 0 {
            *missing_by_column.entry(raw.header[j].clone()).or_default() += c;
        }
    }
    Ok((kept, missing_by_column))
}

pub(super) fn describe_missing(m: &BTreeMap<String, usize>) -> String {
    let mut v: Vec<(&String, &usize)> = m.iter().collect();
    v.sort_by(|a, b| b.1.cmp(a.1));
    v.iter()
        .take(5)
        .map(|(k, c)| format!("{k}: {c}"))
        .collect::<Vec<_>>()
        .join(", ")
}

pub(super) fn too_few_after_cleaning(
    path: &Path,
    target: &str,
    missing: &BTreeMap<String, usize>,
    read: usize,
) -> DataError {
    DataError::new(
        K::TooFewRows,
        path,
        format!("all {read} row(s) have a missing value; nothing is left"),
    )
    .hint(format!(
        "missing cells per column: {}; drop mostly-empty columns with --drop (target: '{target}')",
        describe_missing(missing)
    ))
}
