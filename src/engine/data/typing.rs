//! Column typing: which columns are numeric and which text, their cells parsed
//! once, and warnings for decimal commas (identifier-like columns: `identifiers`).

use std::path::Path;

use nalgebra::DMatrix;
use rayon::prelude::*;

use super::csv_read::{RawTable, parse_number};
use super::error::{DataError, DataErrorKind as K};

pub(super) enum ColumnKind {
    Numeric,
    Text,
}

/// Per-column cell statistics gathered in one row-major pass (rows are separate
/// allocations: walking them column by column misses the cache on every cell).
#[derive(Default, Clone)]
struct CellStats {
    numeric: usize,
    decimal_commas: usize,
    first_text: Option<usize>,
    first_non_finite: Option<usize>,
}

/// Rows per parallel task of the typing pass.
const TYPING_ROWS: usize = 1 << 13;

/// The parsed matrix's buffer, written by the row chunks at disjoint elements.
struct SharedColumns(*mut f64);
// SAFETY: tasks write disjoint elements (see `column_kinds`).
unsafe impl Sync for SharedColumns {}

pub(super) struct TypedColumns {
    pub kinds: Vec<ColumnKind>,
    /// kept rows × columns; NaN where a cell is text.
    pub parsed: DMatrix<f64>,
    pub warnings: Vec<String>,
}

/// The kind of every column in `cols`, the kept rows' cells parsed as numbers
/// (kept rows × cols; NaN where a cell is text), and warnings (decimal commas).
pub(super) fn column_kinds(
    path: &Path,
    raw: &RawTable,
    kept: &[usize],
    cols: &[usize],
) -> Result<TypedColumns, DataError> {
    judge(
        path,
        raw,
        kept.len(),
        cols,
        parse_columns(raw, kept, cols, false),
    )
}

/// The cells of `cols` in the `kept` rows parsed, with their statistics.
pub(super) struct Parsed {
    parsed: DMatrix<f64>,
    stats: Vec<CellStats>,
    /// A chunk met a cell that is not a finite number and the pass stopped:
    /// `parsed` and `stats` are incomplete.
    stopped: bool,
}

impl Parsed {
    /// Every cell a finite number: then none is missing either (a missing
    /// token never parses as one), and the missing-cell pass can skip these
    /// columns.
    pub(super) fn clean(&self) -> bool {
        !self.stopped
            && self
                .stats
                .iter()
                .all(|s| s.first_text.is_none() && s.first_non_finite.is_none())
    }
}

/// The parsing pass of `column_kinds`; `stop_unclean`: end early (the result
/// then only says it is not `clean`) at the first cell that is not a finite
/// number — the loader's first try, before the missing cells are known.
pub(super) fn parse_columns(
    raw: &RawTable,
    kept: &[usize],
    cols: &[usize],
    stop_unclean: bool,
) -> Parsed {
    use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
    let stop = AtomicBool::new(false);
    let n = kept.len();
    let len = n * cols.len();
    // Every element is written once below (a number, or NaN): no fill first.
    let mut buffer: Vec<f64> = crate::engine::numerics::huge_pages::vec_with_capacity(len);
    let out = SharedColumns(buffer.as_mut_ptr());
    // Rows in parallel chunks, each chunk's statistics merged in row order:
    // the same counts and the same first bad row as one pass.
    // Columns a columnar file stored as numbers: no text to parse.
    let typed: Vec<Option<&[f64]>> = cols.iter().map(|&j| raw.numbers(j)).collect();
    let chunk_stats: Vec<Vec<CellStats>> = kept
        .par_chunks(TYPING_ROWS)
        .enumerate()
        .map(|(c, rows)| {
            let out = &out;
            let mut stats = vec![CellStats::default(); cols.len()];
            if stop_unclean && stop.load(Relaxed) {
                return stats; // the rows stay unwritten: `stopped` below
            }
            for (k, &r) in rows.iter().enumerate() {
                let i = c * TYPING_ROWS + k;
                for (f, (st, &j)) in stats.iter_mut().zip(cols).enumerate() {
                    if typed[f].is_some() {
                        continue; // below, column by column
                    }
                    let cell = raw.cell(r, j);
                    let value = match parse_number(cell, raw.decimal_comma()) {
                        Some(v) if v.is_finite() => {
                            st.numeric += 1;
                            st.decimal_commas += usize::from(cell.contains(','));
                            v
                        }
                        Some(_) => {
                            st.first_non_finite.get_or_insert(r);
                            stop.store(true, Relaxed);
                            f64::NAN
                        }
                        None => {
                            st.first_text.get_or_insert(r);
                            stop.store(true, Relaxed);
                            f64::NAN
                        }
                    };
                    // SAFETY: element (i, f) of the n × cols column-major
                    // buffer is within its capacity, and row i belongs to this
                    // chunk alone: no two tasks write one element, and nothing
                    // reads the buffer until every task has ended.
                    unsafe { out.0.add(f * n + i).write(value) };
                }
            }
            stats
        })
        .collect();
    // Columns stored as numbers: copied column by column (a sequential
    // read and write each), in parallel.
    let typed_stats: Vec<(usize, CellStats)> = typed
        .par_iter()
        .enumerate()
        .filter_map(|(f, values)| values.map(|v| (f, v)))
        .map(|(f, values)| {
            let out = &out;
            // SAFETY: column f of the buffer is written by this task alone,
            // each element once; nothing reads it until every task has ended.
            let column = unsafe { std::slice::from_raw_parts_mut(out.0.add(f * n), n) };
            let mut st = CellStats::default();
            for (o, &r) in column.iter_mut().zip(kept) {
                let v = values[r];
                *o = if v.is_finite() {
                    st.numeric += 1;
                    v
                } else {
                    st.first_non_finite.get_or_insert(r);
                    f64::NAN
                };
            }
            (f, st)
        })
        .collect();
    let stopped = stop_unclean && stop.load(Relaxed);
    if stopped {
        // Chunks that saw the flag wrote nothing: the buffer is not read.
        buffer.clear();
        buffer.resize(len, f64::NAN);
    }
    // SAFETY: the chunks cover rows 0..n and write every text column of
    // each row (unless stopped: then filled just above); the typed columns
    // were written whole just above.
    unsafe { buffer.set_len(len) };
    let parsed = DMatrix::from_vec(n, cols.len(), buffer);
    let mut stats = vec![CellStats::default(); cols.len()];
    for part in chunk_stats {
        for (st, p) in stats.iter_mut().zip(part) {
            st.numeric += p.numeric;
            st.decimal_commas += p.decimal_commas;
            st.first_text = st.first_text.or(p.first_text);
            st.first_non_finite = st.first_non_finite.or(p.first_non_finite);
        }
    }
    for (f, st) in typed_stats {
        stats[f] = st;
    }
    Parsed {
        parsed,
        stats,
        stopped,
    }
}

/// Each column's kind from its statistics (over `n_kept` rows), or the
/// first non-finite number or stray word as an error.
pub(super) fn judge(
    path: &Path,
    raw: &RawTable,
    n_kept: usize,
    cols: &[usize],
    p: Parsed,
) -> Result<TypedColumns, DataError> {
    let Parsed { parsed, stats, .. } = p;
    let mut kinds = Vec::with_capacity(cols.len());
    for (st, &j) in stats.iter().zip(cols) {
        if let Some(r) = st.first_non_finite {
            let cell = raw.shown(r, j);
            return Err(
                DataError::new(K::NonFinite, path, format!("non-finite number '{cell}'"))
                    .line(raw.lines[r])
                    .column(j, &raw.header[j])
                    .hint(
                        "replace it with a finite value, or leave the cell empty to drop the row",
                    ),
            );
        }
        let Some(r) = st.first_text else {
            kinds.push(ColumnKind::Numeric);
            continue;
        };
        // A mostly numeric column with a stray word is a typo, not a category.
        if st.numeric >= 10 && st.numeric * 10 >= n_kept * 9 {
            let cell = raw.cell(r, j);
            return Err(DataError::new(
                K::NotNumeric,
                path,
                format!("'{cell}' in a column that is otherwise numeric ({} of {} values are numbers)", st.numeric, n_kept),
            )
            .line(raw.lines[r])
            .column(j, &raw.header[j])
            .hint("fix the value; if it means 'unknown', leave the cell empty or write NA (the row is then dropped)"));
        }
        kinds.push(ColumnKind::Text);
    }
    let warnings = stats
        .iter()
        .zip(cols)
        .filter(|(st, _)| st.decimal_commas > 0)
        .map(|(st, &j)| {
            format!(
                "column '{}': read {} decimal comma(s) as decimal points (e.g. 1,5 = 1.5)",
                raw.header[j], st.decimal_commas
            )
        })
        .collect();
    Ok(TypedColumns {
        kinds,
        parsed,
        warnings,
    })
}
