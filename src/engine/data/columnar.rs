//! Cells of a columnar file (Arrow IPC): each column stored as it came —
//! numbers as `f64`, text as one buffer, few-valued text as codes — behind the
//! same `RawTable` the CSV reader fills, so typing, encoding, cleaning and
//! their announcements are the CSV's.
//!
//! A numeric column never becomes text (10⁷ × 20 numbers would take seconds
//! to print and parse back): the loader asks `RawTable::numbers` first, and
//! `cell` is only for text. The target column, whose values the labels are,
//! is turned into codes (`to_codes`: its distinct values printed once).

use std::collections::HashMap;

/// One column's cells.
pub enum Column {
    /// Numbers; NaN where the file has a null or a NaN (a missing cell, as
    /// `NaN` is in a CSV).
    Numbers(Vec<f64>),
    /// Text: row r's cell is `text[ends[r-1]..ends[r]]` (`ends[-1]` = 0).
    Text { text: Vec<u8>, ends: Vec<usize> },
    /// Text with few distinct values (dictionary columns, booleans, a
    /// numeric target): row r's cell is `levels[codes[r]]`.
    Codes {
        levels: Vec<String>,
        codes: Vec<u32>,
    },
}

impl Column {
    pub fn len(&self) -> usize {
        match self {
            Column::Numbers(v) => v.len(),
            Column::Text { ends, .. } => ends.len(),
            Column::Codes { codes, .. } => codes.len(),
        }
    }

    /// Row r's text ("" for a number: callers ask `numbers` first).
    #[inline]
    pub fn cell(&self, r: usize) -> &str {
        match self {
            Column::Text { text, ends } => {
                let start = if r == 0 { 0 } else { ends[r - 1] };
                // SAFETY: `text` is UTF-8 (Arrow strings are validated on
                // read) and cut at the strings' own boundaries.
                unsafe { std::str::from_utf8_unchecked(&text[start..ends[r]]) }
            }
            Column::Codes { levels, codes } => &levels[codes[r] as usize],
            Column::Numbers(_) => "",
        }
    }

    /// Row r's cell in words, for messages ("NaN" for a missing number).
    pub fn shown(&self, r: usize) -> String {
        match self {
            Column::Numbers(v) => number_text(v[r]),
            _ => self.cell(r).to_string(),
        }
    }

    /// The same cells as codes of their printed values (a numeric column
    /// read as labels): each distinct value printed once, as a CSV would
    /// hold it ("1", "0.5"); NaN becomes "" (missing).
    pub fn to_codes(&self) -> Option<Column> {
        let Column::Numbers(values) = self else {
            return None;
        };
        let mut levels: Vec<String> = Vec::new();
        let mut index: HashMap<u64, u32> = HashMap::new();
        let mut last: Option<(u64, u32)> = None;
        let codes = values
            .iter()
            .map(|&v| {
                // NaNs of any payload are one level: the missing cell.
                let bits = if v.is_nan() {
                    f64::NAN.to_bits()
                } else {
                    v.to_bits()
                };
                if let Some((b, c)) = last {
                    if b == bits {
                        return c;
                    }
                }
                let c = *index.entry(bits).or_insert_with(|| {
                    levels.push(if v.is_nan() {
                        String::new()
                    } else {
                        number_text(v)
                    });
                    (levels.len() - 1) as u32
                });
                last = Some((bits, c));
                c
            })
            .collect();
        Some(Column::Codes { levels, codes })
    }
}

/// A number as a CSV would hold it: the shortest text that reads back to
/// it ("1" for 1.0), "NaN" for a missing one.
pub fn number_text(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else {
        format!("{v}")
    }
}

/// The distinct non-missing values of a numeric column and their counts,
/// or None past `limit` of them (a two-valued column may be a target).
pub fn distinct_numbers(values: &[f64], limit: usize) -> Option<Vec<(f64, usize)>> {
    let mut seen: Vec<(f64, usize)> = Vec::new();
    for &v in values.iter().filter(|v| !v.is_nan()) {
        if let Some((_, c)) = seen.iter_mut().find(|(s, _)| s.to_bits() == v.to_bits()) {
            *c += 1;
        } else if seen.len() == limit {
            return None;
        } else {
            seen.push((v, 1));
        }
    }
    seen.sort_by(|a, b| a.0.total_cmp(&b.0));
    Some(seen)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_numeric_label_column_becomes_codes_of_its_printed_values() {
        let col = Column::Numbers(vec![1.0, 0.0, 1.0, f64::NAN, 0.5, 1.0]);
        let codes = col.to_codes().unwrap();
        let cells: Vec<&str> = (0..codes.len()).map(|r| codes.cell(r)).collect();
        assert_eq!(cells, ["1", "0", "1", "", "0.5", "1"]);
        assert_eq!(col.shown(3), "NaN");
        assert_eq!(col.cell(0), "", "numbers are not text");
    }

    #[test]
    fn text_cells_are_cut_at_their_ends() {
        let col = Column::Text {
            text: b"northsouth".to_vec(),
            ends: vec![5, 5, 10],
        };
        assert_eq!(
            (col.cell(0), col.cell(1), col.cell(2)),
            ("north", "", "south")
        );
    }

    #[test]
    fn distinct_values_stop_past_the_limit() {
        let v = [1.0, 0.0, 1.0, f64::NAN, 1.0];
        assert_eq!(distinct_numbers(&v, 2), Some(vec![(0.0, 1), (1.0, 3)]));
        assert_eq!(distinct_numbers(&[1.0, 2.0, 3.0], 2), None);
    }
}
