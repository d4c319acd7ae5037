//! The body of a CSV file without quotes, cut into cells in parallel chunks:
//! no cell is copied (a cell is a byte range of the file), and every chunk
//! writes its rows' offsets straight into the final arrays.
//!
//! Without a quote no field can hold a delimiter or a line end, so a record
//! is a maximal run of bytes other than `\r` and `\n` (the csv crate's
//! terminators: `\r`, `\n` and `\r\n`; runs of them are blank lines, skipped),
//! and its fields are what lies between delimiters. A record of one blank
//! field (a line of spaces) is skipped too, as `csv_read` does.

use rayon::prelude::*;

use super::progress::{LoadProgress, tell};

/// The file as held in memory: mapped (the common case: no copy, no fresh
/// pages) or read into a buffer (pipes, and text given as bytes).
pub enum Bytes {
    Mapped(memmap2::Mmap),
    Held(Vec<u8>),
}

impl std::ops::Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Mapped(m) => m,
            Bytes::Held(v) => v,
        }
    }
}

impl Bytes {
    /// The file at `path`, mapped when it is a regular file (read otherwise).
    pub fn of_file(path: &std::path::Path) -> std::io::Result<Bytes> {
        use std::io::Read;
        let file = std::fs::File::open(path)?;
        let meta = file.metadata()?;
        if meta.is_file() && meta.len() > 0 {
            // SAFETY: the map is read-only and private. Another process that
            // truncates or rewrites the file while it is read could change
            // the bytes under us: the same hazard as reading a file being
            // written, which no reader can rule out.
            if let Ok(map) = unsafe { memmap2::Mmap::map(&file) } {
                #[cfg(unix)]
                let _ = map.advise(memmap2::Advice::Sequential);
                return Ok(Bytes::Mapped(map));
            }
        }
        let mut buffer = Vec::with_capacity(meta.len() as usize);
        (&file).read_to_end(&mut buffer)?;
        Ok(Bytes::Held(buffer))
    }
}

fn is_end(b: u8) -> bool {
    b == b'\n' || b == b'\r'
}

/// Where every row's first cell starts, where every cell ends (row-major;
/// cell j > 0 of a row starts one byte after cell j − 1 ends: the
/// delimiter), and the line each row starts on. Offsets index the whole file.
pub struct Cells {
    pub starts: Vec<u32>,
    pub ends: Vec<u32>,
    pub lines: Vec<u64>,
}

/// Why the fast path does not apply, or the first bad record.
pub enum Refusal {
    /// The body holds a quote: the csv crate reads it (serially).
    Quoted,
    /// A record with another number of fields than the header, and its line.
    Ragged { line: u64, fields: usize },
}

/// What a first pass over a chunk finds: a quote, its newlines, and its
/// records (an upper bound of its rows: blank-field records are dropped later).
#[derive(Clone, Copy, Default)]
struct Survey {
    quote: bool,
    newlines: u64,
    records: usize,
}

fn survey(chunk: &[u8]) -> Survey {
    let Some(&first) = chunk.first() else {
        return Survey::default();
    };
    // Branch-free sums over pairs of neighbours: the compiler vectorises them.
    let (mut quotes, mut newlines, mut starts) = (0usize, 0u64, usize::from(!is_end(first)));
    for (&a, &b) in chunk.iter().zip(&chunk[1..]) {
        starts += usize::from(is_end(a) & !is_end(b));
        newlines += u64::from(a == b'\n');
        quotes += usize::from(a == b'"');
    }
    let last = chunk[chunk.len() - 1];
    Survey {
        quote: quotes > 0 || last == b'"',
        newlines: newlines + u64::from(last == b'\n'),
        records: starts,
    }
}

/// `bytes[from..]`, which starts after a line end (or at the file's start),
/// cut into the cells of `width`-field records. `first_line`: the line
/// `bytes[from]` is on. Chunks of about `chunk_bytes` run in parallel.
pub fn split_unquoted(
    bytes: &[u8],
    from: usize,
    first_line: u64,
    width: usize,
    delimiter: u8,
    chunk_bytes: usize,
    progress: Option<&LoadProgress>,
) -> Result<Cells, Refusal> {
    let chunks = super::csv_read::line_chunks(&bytes[from..], chunk_bytes);
    let surveys: Vec<Survey> = chunks
        .par_iter()
        .map(|c| {
            let s = survey(c);
            tell(progress, c.len());
            s
        })
        .collect();
    if surveys.iter().any(|s| s.quote) {
        return Err(Refusal::Quoted);
    }
    let capacity: usize = surveys.iter().map(|s| s.records).sum();
    if let Some(p) = progress {
        p.counted_rows(capacity);
    }
    let mut cells = Cells {
        starts: vec![0; capacity],
        ends: vec![0; capacity * width],
        lines: vec![0; capacity],
    };
    // Each chunk's own region of the three arrays, its offset and first line.
    let mut jobs = Vec::with_capacity(chunks.len());
    let (mut starts, mut ends, mut lines) = (
        &mut cells.starts[..],
        &mut cells.ends[..],
        &mut cells.lines[..],
    );
    let (mut offset, mut line) = (from, first_line);
    for (c, s) in chunks.iter().zip(&surveys) {
        let (s0, s1) = std::mem::take(&mut starts).split_at_mut(s.records);
        let (e0, e1) = std::mem::take(&mut ends).split_at_mut(s.records * width);
        let (l0, l1) = std::mem::take(&mut lines).split_at_mut(s.records);
        (starts, ends, lines) = (s1, e1, l1);
        jobs.push((offset, c.len(), line, s0, e0, l0));
        offset += c.len();
        line += s.newlines;
    }
    let rows: Vec<Result<usize, Refusal>> = jobs
        .into_par_iter()
        .map(|(at, len, line, starts, ends, lines)| {
            let chunk = Chunk {
                bytes: &bytes[..at + len],
                width,
                delimiter,
            };
            let rows = chunk.split(at, line, starts, ends, lines);
            tell(progress, len);
            rows
        })
        .collect();
    // The first bad record in file order, as one pass finds it; then the
    // regions closed up where blank-field records left room (rare).
    let mut kept = 0;
    let mut region = 0;
    for (r, s) in rows.into_iter().zip(&surveys) {
        let n = r?;
        if kept != region {
            cells.starts.copy_within(region..region + n, kept);
            cells.lines.copy_within(region..region + n, kept);
            cells
                .ends
                .copy_within(region * width..(region + n) * width, kept * width);
        }
        kept += n;
        region += s.records;
    }
    cells.starts.truncate(kept);
    cells.lines.truncate(kept);
    cells.ends.truncate(kept * width);
    Ok(cells)
}

/// One chunk's view: the file up to the chunk's end.
struct Chunk<'a> {
    bytes: &'a [u8],
    width: usize,
    delimiter: u8,
}

impl Chunk<'_> {
    /// Cuts the records from `at` to the end into the given regions; the
    /// number of rows written, or the first ragged record.
    fn split(
        &self,
        mut at: usize,
        mut line: u64,
        starts: &mut [u32],
        ends: &mut [u32],
        lines: &mut [u64],
    ) -> Result<usize, Refusal> {
        let (b, width, delimiter) = (self.bytes, self.width, self.delimiter);
        let mut row = 0;
        loop {
            while at < b.len() && is_end(b[at]) {
                line += u64::from(b[at] == b'\n');
                at += 1;
            }
            if at == b.len() {
                return Ok(row);
            }
            let start = at;
            let cells = &mut ends[row * width..];
            let mut fields = 0;
            loop {
                while at < b.len() && b[at] != delimiter && !is_end(b[at]) {
                    at += 1;
                }
                if fields < width {
                    cells[fields] = at as u32;
                }
                fields += 1;
                if at < b.len() && b[at] == delimiter {
                    at += 1;
                } else {
                    break;
                }
            }
            if fields == 1 && b[start..at].trim_ascii().is_empty() {
                continue; // a line of spaces
            }
            if fields != width {
                return Err(Refusal::Ragged { line, fields });
            }
            starts[row] = start as u32;
            lines[row] = line;
            row += 1;
        }
    }
}

/// FNV-1a of the file's bytes: a CSV's fingerprint in run records.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// What a binary file looks like, by its first bytes: a known format's
/// signature, or NUL bytes (which no text encoding a CSV reader takes has,
/// except UTF-16: named as such).
pub(super) fn binary_kind(bytes: &[u8]) -> Option<&'static str> {
    const SIGNATURES: &[(&[u8], &str)] = &[
        (b"PK\x03\x04", "a ZIP archive, e.g. an Excel .xlsx workbook"),
        (b"\x1f\x8b", "gzip-compressed"),
        (
            b"PAR1",
            "Parquet: pacauc reads Arrow IPC, e.g. pandas `df.to_feather('t.arrow')`",
        ),
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
