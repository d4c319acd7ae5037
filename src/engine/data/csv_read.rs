//! Raw CSV reading: bytes → header + string records, with delimiter detection,
//! BOM handling and ragged-row detection. No typing happens here.

use std::path::Path;

use super::error::{DataError, DataErrorKind as K};

/// A CSV file read into memory: trimmed header names and the data cells,
/// row-major in one buffer, with the 1-based line number each row starts on.
pub struct RawTable {
    pub delimiter: u8,
    pub header: Vec<String>,
    text: String,
    /// End offset in `text` of every cell, row-major (`header.len()` per row).
    ends: Vec<u32>,
    pub lines: Vec<u64>,
    /// FNV-1a hash of the file's bytes: identifies the data in run records.
    pub fingerprint: String,
}

impl RawTable {
    /// Whether "1,5" may mean 1.5 (only when the delimiter is not a comma).
    pub fn decimal_comma(&self) -> bool {
        self.delimiter != b','
    }

    pub fn n_rows(&self) -> usize {
        self.lines.len()
    }

    /// Cell (row r, column j), trimmed.
    pub fn cell(&self, r: usize, j: usize) -> &str {
        let k = r * self.header.len() + j;
        let start = if k == 0 { 0 } else { self.ends[k - 1] as usize };
        &self.text[start..self.ends[k] as usize]
    }
}

pub fn read_table(path: &Path) -> Result<RawTable, DataError> {
    let bytes = std::fs::read(path).map_err(|e| {
        let hint = match e.kind() {
            std::io::ErrorKind::NotFound => {
                "check the path (it is relative to the current directory)"
            }
            std::io::ErrorKind::PermissionDenied => "check the file's permissions",
            _ => "check that the path names a readable file",
        };
        DataError::new(K::Unreadable, path, format!("cannot read the file: {e}")).hint(hint)
    })?;
    parse_table(path, &bytes)
}

/// What a binary file looks like, by its first bytes: a known format's
/// signature, or NUL bytes (which no text encoding a CSV reader takes has,
/// except UTF-16: named as such).
fn binary_kind(bytes: &[u8]) -> Option<&'static str> {
    const SIGNATURES: &[(&[u8], &str)] = &[
        (b"PK\x03\x04", "a ZIP archive, e.g. an Excel .xlsx workbook"),
        (b"\x1f\x8b", "gzip-compressed"),
        (b"PAR1", "Parquet"),
        (b"\xD0\xCF\x11\xE0", "an old Excel .xls workbook"),
        (b"%PDF", "a PDF document"),
        (b"\x89HDF", "HDF5"),
        (b"SQLite format 3", "an SQLite database"),
        (b"BZh", "bzip2-compressed"),
        (b"\xFD7zXZ", "xz-compressed"),
        (b"\x28\xB5\x2F\xFD", "zstd-compressed"),
    ];
    if let Some((_, what)) = SIGNATURES.iter().find(|(sig, _)| bytes.starts_with(sig)) {
        return Some(what);
    }
    if bytes.starts_with(b"\xFF\xFE") || bytes.starts_with(b"\xFE\xFF") {
        return Some("UTF-16 text: re-save it as UTF-8");
    }
    let head = &bytes[..bytes.len().min(8192)];
    head.contains(&0).then_some("it holds NUL bytes")
}

pub fn parse_table(path: &Path, bytes: &[u8]) -> Result<RawTable, DataError> {
    let fingerprint = format!("fnv1a64:{:016x}", fnv1a64(bytes));
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    if bytes.len() >= u32::MAX as usize {
        return Err(
            DataError::new(K::Unreadable, path, "the file is larger than 4 GiB")
                .hint("split it, or sample rows: pacauc holds the whole table in memory"),
        );
    }
    if let Some(what) = binary_kind(bytes) {
        return Err(DataError::new(
            K::Unreadable,
            path,
            format!("this is a binary file ({what}), not a CSV text file"),
        )
        .hint(
            "export the table as CSV (comma-separated text with a header row) and pass that file",
        ));
    }
    if let Err(e) = std::str::from_utf8(bytes) {
        let at = e.valid_up_to();
        let line = 1 + bytes[..at].iter().filter(|&&b| b == b'\n').count() as u64;
        return Err(DataError::new(
            K::NotUtf8,
            path,
            format!("the file is not valid UTF-8 (byte {at})"),
        )
        .line(line)
        .hint("re-save the file as UTF-8 (e.g. `iconv -f latin1 -t utf-8`)"));
    }
    if bytes.iter().all(|b| b.is_ascii_whitespace()) {
        return Err(DataError::new(K::Empty, path, "the file is empty")
            .hint("a header row and at least one data row per class are needed"));
    }
    let delimiter = detect_delimiter(bytes);
    let mut reader = csv::ReaderBuilder::new()
        .delimiter(delimiter)
        .has_headers(true)
        .flexible(true)
        .trim(csv::Trim::Headers)
        .from_reader(bytes);
    let header: Vec<String> = reader
        .headers()
        .map_err(|e| csv_error(path, e))?
        .iter()
        .map(|s| s.to_string())
        .collect();
    check_header(path, &header, delimiter)?;

    let mut text: Vec<u8> = Vec::with_capacity(bytes.len());
    let mut ends = Vec::new();
    let mut lines = Vec::new();
    let mut record = csv::ByteRecord::new();
    // csv's own line numbers skip blank lines; count newlines up to each record's byte offset.
    let (mut seen_byte, mut seen_line) = (0usize, 1u64);
    loop {
        match reader.read_byte_record(&mut record) {
            Ok(false) => break,
            Ok(true) => {}
            Err(e) => return Err(csv_error(path, e)),
        }
        let mut start = record
            .position()
            .map_or(seen_byte, |p| p.byte() as usize)
            .min(bytes.len());
        while start < bytes.len() && matches!(bytes[start], b'\n' | b'\r') {
            start += 1; // a record's position can include the blank lines before it
        }
        seen_line += bytes[seen_byte..start]
            .iter()
            .filter(|&&b| b == b'\n')
            .count() as u64;
        seen_byte = start;
        let line = seen_line;
        if record.len() == 1 && record[0].trim_ascii().is_empty() {
            continue; // a line holding only spaces
        }
        if record.len() != header.len() {
            let what = if record.len() < header.len() {
                "fewer"
            } else {
                "more"
            };
            return Err(DataError::new(
                K::RaggedRow,
                path,
                format!(
                    "this row has {} fields but the header has {} ({what} than expected)",
                    record.len(),
                    header.len()
                ),
            )
            .line(line)
            .hint(if record.iter().any(|f| f.contains(&b'\n')) {
                // csv reads on to the next quote: the row swallowed the lines after it.
                "a quote (\") opened on this line is never closed, so the following lines were \
                 read as part of one field; close the quote or remove it"
                    .to_string()
            } else {
                format!(
                    "every row needs exactly {} fields separated by '{}'; look for a missing \
                     field or a value containing the delimiter without quotes",
                    header.len(),
                    delimiter_name(delimiter)
                )
            }));
        }
        for field in record.iter() {
            text.extend_from_slice(field.trim_ascii());
            ends.push(text.len() as u32);
        }
        lines.push(line);
    }
    if lines.is_empty() {
        return Err(
            DataError::new(K::Empty, path, "the file has a header but no data rows")
                .line(1)
                .hint("add data rows below the header"),
        );
    }
    // The input is valid UTF-8 and fields are cut at ASCII delimiters and quotes.
    let text = String::from_utf8(text).expect("fields of UTF-8 text are UTF-8");
    Ok(RawTable {
        delimiter,
        header,
        text,
        ends,
        lines,
        fingerprint,
    })
}

fn check_header(path: &Path, header: &[String], delimiter: u8) -> Result<(), DataError> {
    if header.len() < 2 {
        return Err(DataError::new(
            K::BadHeader,
            path,
            format!(
                "the header has only one column ('{}')",
                header.first().map_or("", |s| s)
            ),
        )
        .line(1)
        .hint(
            "a header row with feature names and a target column is required; \
               fields must be separated by ',', ';' or tab",
        ));
    }
    for (i, name) in header.iter().enumerate() {
        if name.is_empty() {
            return Err(DataError::new(K::BadHeader, path, "a header name is empty")
                .line(1)
                .column(i, "")
                .hint("the first row must name every column"));
        }
        if let Some(j) = header[..i].iter().position(|n| n == name) {
            return Err(DataError::new(
                K::DuplicateHeader,
                path,
                format!(
                    "the column name '{name}' is used twice (columns {} and {})",
                    j + 1,
                    i + 1
                ),
            )
            .line(1)
            .column(i, name)
            .hint("rename one of them so that every column name is unique"));
        }
    }
    if header.iter().all(|h| h.parse::<f64>().is_ok()) {
        return Err(DataError::new(
            K::BadHeader,
            path,
            "the first row looks like data, not a header",
        )
        .line(1)
        .hint(format!(
            "add a header row naming the columns (separated by '{}')",
            delimiter_name(delimiter)
        )));
    }
    Ok(())
}

fn csv_error(path: &Path, e: csv::Error) -> DataError {
    let line = e.position().map(|p| p.line());
    let mut err = DataError::new(K::Unreadable, path, format!("cannot parse CSV: {e}"))
        .hint("check quoting: a field that starts with '\"' must end with '\"'");
    err.line = line;
    err
}

/// The delimiter among `,` `;` and tab that splits the header line into the most
/// fields (quotes respected); `,` on ties.
fn detect_delimiter(bytes: &[u8]) -> u8 {
    let first_line = bytes
        .split(|&b| b == b'\n')
        .find(|l| !l.iter().all(|b| b.is_ascii_whitespace()));
    let line = first_line.unwrap_or(bytes);
    let mut best = (b',', 0usize);
    for d in [b',', b';', b'\t'] {
        let mut quoted = false;
        let n = line
            .iter()
            .filter(|&&b| {
                if b == b'"' {
                    quoted = !quoted;
                }
                !quoted && b == d
            })
            .count();
        if n > best.1 {
            best = (d, n);
        }
    }
    best.0
}

pub fn delimiter_name(d: u8) -> &'static str {
    match d {
        b',' => ",",
        b';' => ";",
        b'\t' => "tab",
        _ => "?",
    }
}

fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// A number, also with a decimal comma ("1,5") where the delimiter is not a comma.
pub fn parse_number(cell: &str, decimal_comma: bool) -> Option<f64> {
    if let Ok(v) = cell.parse::<f64>() {
        return Some(v);
    }
    let one_comma = cell.bytes().filter(|&b| b == b',').count() == 1 && !cell.contains('.');
    if decimal_comma && one_comma {
        return cell.replacen(',', ".", 1).parse().ok();
    }
    None
}

/// Tokens that mean "no value" (compared case-insensitively).
pub fn is_missing(cell: &str) -> bool {
    match cell.as_bytes().first() {
        None => true,
        Some(b'0'..=b'9' | b'-' | b'+' | b'.') if cell.len() > 1 || cell != "-" => false,
        _ => {
            cell.len() <= 4
                && ["na", "n/a", "nan", "null", "?"]
                    .iter()
                    .any(|m| cell.eq_ignore_ascii_case(m))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_delimiters() {
        assert_eq!(detect_delimiter(b"a;b;c\n1;2;3"), b';');
        assert_eq!(detect_delimiter(b"a\tb\n1\t2"), b'\t');
        assert_eq!(detect_delimiter(b"\"a,x\";b;c\n"), b';');
        assert_eq!(detect_delimiter(b"a,b\n"), b',');
    }

    #[test]
    fn strips_bom_and_skips_blank_lines() {
        let t = parse_table(Path::new("t.csv"), b"\xEF\xBB\xBFa,y\n1,0\n\n2,1\n").unwrap();
        assert_eq!(t.header, vec!["a", "y"]);
        assert_eq!(t.n_rows(), 2);
        assert_eq!(t.cell(1, 0), "2");
        assert_eq!(t.lines, vec![2, 4]);
    }

    #[test]
    fn a_binary_file_is_named_as_such() {
        let msg = |b: &[u8]| {
            parse_table(Path::new("t.csv"), b)
                .err()
                .unwrap()
                .to_string()
        };
        assert!(msg(b"PK\x03\x04\x14\x00rest").contains("ZIP archive"));
        assert!(msg(b"\x1f\x8b\x08\x00").contains("gzip"));
        assert!(msg(b"a,b\n1,\x002\n").contains("binary file"));
        // Latin-1 text is not binary: the UTF-8 advice stays.
        assert!(msg(b"a,b\ncaf\xe9,1\n").contains("UTF-8"));
    }
}
