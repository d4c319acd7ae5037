//! The distinct values of a column and their counts, over row chunks in
//! parallel: labels and two-valued columns at 10⁷ rows without a `String`
//! per row or a serial pass.

use std::collections::HashMap;

use rayon::prelude::*;

use super::csv_read::RawTable;

/// Rows per parallel task.
const ROWS: usize = 1 << 15;

/// Values → counts: a short list while the values are few (a label column
/// has two: a scan beats hashing), a hash map beyond.
#[derive(Default)]
struct Counts<'a> {
    few: Vec<(&'a str, usize)>,
    many: HashMap<&'a str, usize>,
}

impl<'a> Counts<'a> {
    fn add(&mut self, value: &'a str, count: usize) {
        if self.many.is_empty() {
            if let Some(e) = self.few.iter_mut().find(|e| e.0 == value) {
                e.1 += count;
                return;
            }
            if self.few.len() < 16 {
                self.few.push((value, count));
                return;
            }
            self.many.extend(self.few.drain(..));
        }
        *self.many.entry(value).or_default() += count;
    }

    fn len(&self) -> usize {
        self.few.len() + self.many.len()
    }

    fn into_sorted(self) -> Vec<(&'a str, usize)> {
        let mut v: Vec<(&str, usize)> = self.few.into_iter().chain(self.many).collect();
        v.sort_unstable();
        v
    }
}

/// The distinct cells of column `j` over rows `row(0..n)` that `keep`
/// accepts, with their counts, sorted by value; None when there are more
/// than `limit` of them.
pub(super) fn tally<'a>(
    raw: &'a RawTable,
    n: usize,
    row: &(dyn Fn(usize) -> usize + Sync),
    j: usize,
    keep: &(dyn Fn(&str) -> bool + Sync),
    limit: usize,
) -> Option<Vec<(&'a str, usize)>> {
    let parts: Vec<Option<Counts>> = (0..n.div_ceil(ROWS))
        .into_par_iter()
        .map(|c| {
            let mut counts = Counts::default();
            for i in c * ROWS..n.min((c + 1) * ROWS) {
                let cell = raw.cell(row(i), j);
                if keep(cell) {
                    counts.add(cell, 1);
                    if counts.len() > limit {
                        return None;
                    }
                }
            }
            Some(counts)
        })
        .collect();
    let mut all = Counts::default();
    for part in parts {
        for (value, count) in part?.into_sorted() {
            all.add(value, count);
        }
        if all.len() > limit {
            return None;
        }
    }
    Some(all.into_sorted())
}

/// Whether each of rows `row(0..n)` has in column `j` one of `values`
/// (sorted), in parallel.
pub(super) fn is_one_of(
    raw: &RawTable,
    n: usize,
    row: &(dyn Fn(usize) -> usize + Sync),
    j: usize,
    values: &[&str],
) -> Vec<bool> {
    (0..n)
        .into_par_iter()
        .with_min_len(ROWS)
        .map(|i| {
            let cell = raw.cell(row(i), j);
            if values.len() <= 16 {
                values.contains(&cell)
            } else {
                values.binary_search(&cell).is_ok()
            }
        })
        .collect()
}
