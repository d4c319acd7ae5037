//! Raw CSV reading: bytes → header + string records, with delimiter detection,
//! BOM handling and ragged-row detection. No typing happens here.

use std::path::Path;

use rayon::prelude::*;

use super::columnar::Column;
use super::csv_cells::{Bytes, Cells, Refusal, binary_kind, split_unquoted};
use super::error::{DataError, DataErrorKind as K};
pub use super::numbers::{is_missing, parse_number};
use super::progress::{LoadProgress, tell};

/// A CSV file read into memory: trimmed header names and the data cells,
/// row-major, with the 1-based line number each row starts on.
pub struct RawTable {
    pub delimiter: u8,
    pub header: Vec<String>,
    /// The bytes the cells are cut from: the file itself when it holds no
    /// quote, else the unquoted cells copied (one separator byte after each).
    text: Bytes,
    /// Offset in `text` of every row's first cell.
    starts: Vec<u32>,
    /// End offset in `text` of every cell, row-major (`header.len()` per row);
    /// a cell other than a row's first starts one byte after the one before.
    ends: Vec<u32>,
    pub lines: Vec<u64>,
    /// FNV-1a hash of the file's bytes: identifies the data in run records.
    pub fingerprint: String,
    /// A columnar file's cells, column by column (empty for a CSV, whose
    /// cells are `text`'s): `lines` are then 1-based row numbers.
    columns: Vec<Column>,
}

impl RawTable {
    /// Whether "1,5" may mean 1.5 (only when the delimiter is not a comma).
    pub fn decimal_comma(&self) -> bool {
        self.delimiter != b','
    }

    pub fn n_rows(&self) -> usize {
        self.lines.len()
    }

    /// A table read from a columnar file (rows numbered from 1).
    pub(super) fn of_columns(
        header: Vec<String>,
        columns: Vec<Column>,
        fingerprint: String,
    ) -> RawTable {
        let rows = columns.first().map_or(0, Column::len);
        RawTable {
            // Not a delimiter: a comma here only keeps "1,5" in a string
            // column text (no decimal commas in a typed file).
            delimiter: b',',
            header,
            text: Bytes::Held(Vec::new()),
            starts: Vec::new(),
            ends: Vec::new(),
            lines: (1..=rows as u64).collect(),
            fingerprint,
            columns,
        }
    }

    /// Whether the table came from a columnar file (its `lines` are rows).
    pub fn is_columnar(&self) -> bool {
        !self.columns.is_empty()
    }

    /// How the file was read, for the cleaning report: its delimiter, or
    /// the columnar format.
    pub fn layout_name(&self) -> &'static str {
        if self.is_columnar() {
            "arrow"
        } else {
            delimiter_name(self.delimiter)
        }
    }

    /// Column j's values when the file stored it as numbers (NaN: missing);
    /// None for text, whose cells `cell` gives.
    #[inline]
    pub fn numbers(&self, j: usize) -> Option<&[f64]> {
        match self.columns.get(j) {
            Some(Column::Numbers(v)) => Some(v),
            _ => None,
        }
    }

    /// Whether cell (r, j) is missing: empty, NA-like, or a missing number.
    #[inline]
    pub fn missing_at(&self, r: usize, j: usize) -> bool {
        match self.numbers(j) {
            Some(v) => v[r].is_nan(),
            None => is_missing(self.cell(r, j)),
        }
    }

    /// Cell (r, j) as a message shows it, numbers included.
    pub fn shown(&self, r: usize, j: usize) -> String {
        match self.columns.get(j) {
            Some(c) => c.shown(r).trim_ascii().to_string(),
            None => self.cell(r, j).to_string(),
        }
    }

    /// Column j read as text from here on: a numeric column of a columnar
    /// file becomes codes of its printed values (the target: labels are
    /// compared as text).
    pub(super) fn read_as_text(&mut self, j: usize) {
        if let Some(codes) = self.columns.get(j).and_then(Column::to_codes) {
            self.columns[j] = codes;
        }
    }

    /// Cell (row r, column j), trimmed ("" for a numeric column of a
    /// columnar file: ask `numbers` first).
    #[inline]
    pub fn cell(&self, r: usize, j: usize) -> &str {
        if let Some(c) = self.columns.get(j) {
            return c.cell(r).trim_ascii();
        }
        let k = r * self.header.len() + j;
        let start = if j == 0 {
            self.starts[r]
        } else {
            self.ends[k - 1] + 1
        };
        let cell = self.text[start as usize..self.ends[k] as usize].trim_ascii();
        // SAFETY: `text` was checked to be UTF-8, and cells are cut and
        // trimmed at ASCII bytes only (delimiters, line ends, whitespace).
        unsafe { std::str::from_utf8_unchecked(cell) }
    }
}

pub fn read_table(path: &Path) -> Result<RawTable, DataError> {
    read_table_observed(path, None)
}

/// `read_table` telling `progress` how far it has come.
pub fn read_table_observed(
    path: &Path,
    progress: Option<&LoadProgress>,
) -> Result<RawTable, DataError> {
    let bytes = Bytes::of_file(path).map_err(|e| {
        let hint = match e.kind() {
            std::io::ErrorKind::NotFound => {
                "check the path (it is relative to the current directory)"
            }
            std::io::ErrorKind::PermissionDenied => "check the file's permissions",
            _ => "check that the path names a readable file",
        };
        DataError::new(K::Unreadable, path, format!("cannot read the file: {e}")).hint(hint)
    })?;
    if let Some(p) = progress {
        p.start_reading(bytes.len() as u64);
    }
    if super::arrow_read::is_arrow(&bytes) {
        let len = bytes.len();
        let table = super::arrow_read::read(path, bytes);
        tell(progress, 2 * len);
        return table;
    }
    parse_bytes(path, bytes, CHUNK_BYTES, false, progress)
}

pub fn parse_table(path: &Path, bytes: &[u8]) -> Result<RawTable, DataError> {
    parse_bytes(path, Bytes::Held(bytes.to_vec()), CHUNK_BYTES, false, None)
}

/// `parse_table` with the body cut in chunks of about `chunk_bytes` (when it
/// holds no quote); `csv_only`: every body through the csv crate's reader,
/// the reference the fast path is tested against.
fn parse_table_with(
    path: &Path,
    bytes: &[u8],
    chunk_bytes: usize,
    csv_only: bool,
) -> Result<RawTable, DataError> {
    parse_bytes(
        path,
        Bytes::Held(bytes.to_vec()),
        chunk_bytes,
        csv_only,
        None,
    )
}

/// The file's hash computed alongside the parse.
fn parse_bytes(
    path: &Path,
    bytes: Bytes,
    chunk_bytes: usize,
    csv_only: bool,
    progress: Option<&LoadProgress>,
) -> Result<RawTable, DataError> {
    let (hash, layout) = rayon::join(
        || super::csv_cells::fnv1a64(&bytes),
        || parse_text(path, &bytes, chunk_bytes, csv_only, progress),
    );
    let layout = layout?;
    let text = match layout.copied {
        Some(copy) => Bytes::Held(copy),
        None => bytes,
    };
    Ok(RawTable {
        delimiter: layout.delimiter,
        header: layout.header,
        text,
        starts: layout.cells.starts,
        ends: layout.cells.ends,
        lines: layout.cells.lines,
        fingerprint: format!("fnv1a64:{hash:016x}"),
        columns: Vec::new(),
    })
}

/// Where the cells are: in the file (`copied` None) or in a copy.
struct Layout {
    delimiter: u8,
    header: Vec<String>,
    cells: Cells,
    copied: Option<Vec<u8>>,
}

/// The first invalid UTF-8 byte of `bytes` (chunks checked in parallel).
fn first_non_utf8(bytes: &[u8], chunk_bytes: usize) -> Option<usize> {
    let chunks = line_chunks(bytes, chunk_bytes.max(1 << 16));
    let offsets: Vec<usize> = chunks
        .iter()
        .scan(0, |at, c| {
            let o = *at;
            *at += c.len();
            Some(o)
        })
        .collect();
    chunks
        .par_iter()
        .zip(offsets)
        .map(|(c, o)| std::str::from_utf8(c).err().map(|e| o + e.valid_up_to()))
        .collect::<Vec<_>>()
        .into_iter()
        .flatten()
        .next()
}

fn parse_text(
    path: &Path,
    file: &[u8],
    chunk_bytes: usize,
    csv_only: bool,
    progress: Option<&LoadProgress>,
) -> Result<Layout, DataError> {
    let bytes = file.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(file);
    let bom = file.len() - bytes.len();
    if file.len() >= u32::MAX as usize {
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
    if let Some(at) = first_non_utf8(bytes, chunk_bytes) {
        let line = 1 + count_newlines(&bytes[..at]);
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
    let mut reader = reader_of(delimiter, bytes, true);
    let header: Vec<String> = reader
        .headers()
        .map_err(|e| csv_error(path, e, 0))?
        .iter()
        .map(|s| s.to_string())
        .collect();
    check_header(path, &header, delimiter)?;
    let body_start = (reader.position().byte() as usize).min(bytes.len());
    let base_line = 1 + count_newlines(&bytes[..body_start]);
    let width = header.len();
    let fast = match csv_only {
        true => Err(Refusal::Quoted),
        false => split_unquoted(
            file,
            bom + body_start,
            base_line,
            width,
            delimiter,
            chunk_bytes,
            progress,
        ),
    };
    let (cells, copied) = match fast {
        Ok(cells) => (cells, None),
        Err(Refusal::Ragged { line, fields }) => {
            return Err(ragged(path, fields, false, width, delimiter, line));
        }
        // Quotes: one serial pass of the csv crate's reader, cells copied.
        Err(Refusal::Quoted) => {
            let records = read_records(path, &mut reader, bytes, width, delimiter)?;
            if let Some(p) = progress {
                p.counted_rows(records.cells.lines.len());
                p.read(2 * bytes.len());
            }
            (records.cells, Some(records.text))
        }
    };
    if cells.lines.is_empty() {
        return Err(
            DataError::new(K::Empty, path, "the file has a header but no data rows")
                .line(1)
                .hint("add data rows below the header"),
        );
    }
    Ok(Layout {
        delimiter,
        header,
        cells,
        copied,
    })
}

/// Bytes per chunk of the parallel parse.
pub const CHUNK_BYTES: usize = 1 << 22;

fn reader_of(delimiter: u8, bytes: &[u8], header: bool) -> csv::Reader<&[u8]> {
    csv::ReaderBuilder::new()
        .delimiter(delimiter)
        .has_headers(header)
        .flexible(true)
        .trim(csv::Trim::Headers)
        .from_reader(bytes)
}

fn count_newlines(b: &[u8]) -> u64 {
    b.iter().filter(|&&c| c == b'\n').count() as u64
}

/// `body` cut into pieces of about `size` bytes, each ending at a line end.
pub(super) fn line_chunks(body: &[u8], size: usize) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut rest = body;
    while rest.len() > size {
        let cut = rest[size..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(rest.len(), |k| size + k + 1);
        let (a, b) = rest.split_at(cut);
        out.push(a);
        rest = b;
    }
    if !rest.is_empty() {
        out.push(rest);
    }
    out
}

/// The records of a quoted file: their cells copied unquoted and trimmed.
struct Records {
    text: Vec<u8>,
    cells: Cells,
}

/// Reads the records `reader` yields from `bytes` (positions relative to
/// `bytes`, the whole file).
fn read_records(
    path: &Path,
    reader: &mut csv::Reader<&[u8]>,
    bytes: &[u8],
    width: usize,
    delimiter: u8,
) -> Result<Records, DataError> {
    let mut text = Vec::with_capacity(bytes.len());
    let mut cells = Cells {
        starts: Vec::new(),
        ends: Vec::new(),
        lines: Vec::new(),
    };
    let mut record = csv::ByteRecord::new();
    // csv's own line numbers skip blank lines; count newlines up to each record's byte offset.
    let (mut seen_byte, mut seen_line) = (0usize, 1);
    loop {
        match reader.read_byte_record(&mut record) {
            Ok(false) => break,
            Ok(true) => {}
            Err(e) => return Err(csv_error(path, e, 0)),
        }
        let mut start = record
            .position()
            .map_or(seen_byte, |p| p.byte() as usize)
            .min(bytes.len());
        while start < bytes.len() && matches!(bytes[start], b'\n' | b'\r') {
            start += 1; // a record's position can include the blank lines before it
        }
        seen_line += count_newlines(&bytes[seen_byte..start]);
        seen_byte = start;
        let line = seen_line;
        if record.len() == 1 && record[0].trim_ascii().is_empty() {
            continue; // a line holding only spaces
        }
        if record.len() != width {
            let swallowed = record.iter().any(|f| f.contains(&b'\n'));
            return Err(ragged(
                path,
                record.len(),
                swallowed,
                width,
                delimiter,
                line,
            ));
        }
        cells.starts.push(text.len() as u32);
        for field in record.iter() {
            text.extend_from_slice(field.trim_ascii());
            cells.ends.push(text.len() as u32);
            text.push(b',');
        }
        cells.lines.push(line);
    }
    Ok(Records { text, cells })
}

/// `swallowed`: a field holds a line end (a quote left open).
fn ragged(
    path: &Path,
    fields: usize,
    swallowed: bool,
    width: usize,
    delimiter: u8,
    line: u64,
) -> DataError {
    let what = if fields < width { "fewer" } else { "more" };
    DataError::new(
        K::RaggedRow,
        path,
        format!("this row has {fields} fields but the header has {width} ({what} than expected)"),
    )
    .line(line)
    .hint(if swallowed {
        // csv reads on to the next quote: the row swallowed the lines after it.
        "a quote (\") opened on this line is never closed, so the following lines were \
         read as part of one field; close the quote or remove it"
            .to_string()
    } else {
        format!(
            "every row needs exactly {} fields separated by '{}'; look for a missing \
             field or a value containing the delimiter without quotes",
            width,
            delimiter_name(delimiter)
        )
    })
}

pub(super) fn check_header(path: &Path, header: &[String], delimiter: u8) -> Result<(), DataError> {
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

/// `lines_before`: lines of the file before the bytes the reader read.
fn csv_error(path: &Path, e: csv::Error, lines_before: u64) -> DataError {
    let line = e.position().map(|p| p.line() + lines_before);
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

/// The table as the tests compare it: header, cells, lines, hash, or the
/// error with its line.
fn seen(r: Result<RawTable, DataError>) -> String {
    match r {
        Ok(t) => {
            let cells: Vec<&str> = (0..t.n_rows())
                .flat_map(|i| (0..t.header.len()).map(move |j| (i, j)))
                .map(|(i, j)| t.cell(i, j))
                .collect();
            format!("{:?} {cells:?} {:?} {}", t.header, t.lines, t.fingerprint)
        }
        Err(e) => format!("error: {e} (line {:?})", e.line),
    }
}

/// The fast path (cells cut from the file in chunks) against the csv
/// crate's reader on the same bytes, in chunks of `sizes`, on pools of each
/// of `threads` threads (none: the current pool).
///
/// Panics on a difference: for the tests and the fuzzer (`fuzzing::csv_dataset`).
pub fn fast_equals_csv(bytes: &[u8], sizes: &[usize], threads: &[usize]) {
    let path = Path::new("t.csv");
    let reference = seen(parse_table_with(path, bytes, usize::MAX, true));
    for &chunk in sizes {
        let fast = || seen(parse_table_with(path, bytes, chunk, false));
        let runs: Vec<(usize, String)> = if threads.is_empty() {
            vec![(rayon::current_num_threads(), fast())]
        } else {
            threads
                .iter()
                .map(|&t| {
                    let pool = rayon::ThreadPoolBuilder::new().num_threads(t).build();
                    (t, pool.expect("a thread pool").install(fast))
                })
                .collect()
        };
        for (t, got) in runs {
            assert_eq!(
                got,
                reference,
                "chunks of {chunk}, {t} threads: {:?}",
                String::from_utf8_lossy(bytes)
            );
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

    /// Every way a file can look at a chunk boundary: the chunked parse (tiny
    /// chunks: a cut after almost every line) equals one serial pass of the
    /// csv crate — cells, line numbers, hash, and the first error with its
    /// line — on one thread and on three.
    #[test]
    fn chunked_parsing_equals_one_pass() {
        let inputs: Vec<Vec<u8>> = vec![
            b"a,b,y\n1,2,0\n3,4,1\n5,6,0\n7,8,1\n".to_vec(),
            b"\n\n a , b ,y\r\n1, 2 ,0\r\n\r\n3,4,1\r\n   \r\n5,6,0".to_vec(),
            b"\xEF\xBB\xBFa;b;y\n1,5;2;0\n\n\n3;4,25;1\n5;6;0\n".to_vec(),
            b"a\tb\ty\n1\t\t0\nNA\t2\t1\n?\t3\t0\n".to_vec(),
            b"a,b,y\n1,2,0\n3,4,1\n5,6\n7,8,1\n9,9,9,9\n".to_vec(),
            b"a,b,y\n1,2,0\n3,4,1\n5,6,0,1\n".to_vec(),
            b"a,b,y\n1,2,0\n\"3\",4,1\n5,6\n".to_vec(),
            b"a,b,y\n\n\n".to_vec(),
            b"a,b,y\n1,2,0\r3,4,1\r\r\n5,6,0\r\r7,8,1".to_vec(),
            b"a,b,y\r1,2,0\r3,4,1\r".to_vec(),
            b"a,b,y\n , , \n,,\n\t\n1,2,\n 7 ,\t8\t, 9 \n".to_vec(),
            b"a,b,y\n1,2,0\n  \n\t\n \r\n3,4,1\n5,6,0,\n".to_vec(),
            b"a,b,y\n1,2,0\n3,4,1\n5,6,0\n7,8,1\n".repeat(50),
            b"a;b;y\n1;2;0\n3;4;1\n\n  \n5;6;0\n7;8;1\n".repeat(20),
        ];
        for bytes in &inputs {
            fast_equals_csv(bytes, &[usize::MAX, 1, 7, 64], &[1, 3]);
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(3000))]
        /// Random bodies of cells, spaces, delimiters and line ends (no
        /// quotes): the fast path and the csv reader agree.
        #[test]
        fn random_bodies_split_as_csv_does(
            body in "[1a. ,;\t\r\n]{0,80}",
            header in "(a,b,y|a;b;y|a\tb\ty)(\r\n|\n|\r)",
            chunk in 1usize..40,
        ) {
            let bytes = format!("{header}{body}");
            fast_equals_csv(bytes.as_bytes(), &[usize::MAX, chunk], &[1, 2]);
        }
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
