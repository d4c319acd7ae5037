//! Arrow IPC input (the file format, also called Feather v2, and the stream
//! format): a table read column by column into `RawTable`, numbers as numbers.
//!
//! What a CSV cell would be, an Arrow value is: numbers of any width are
//! numbers (null and NaN are missing cells); strings, dictionary strings and
//! booleans (`True`/`False`, as pandas writes them) are text, typed and
//! one-hot encoded as the CSV's text is. Other types (dates, decimals,
//! lists) are refused by name with the cast to make.

use std::collections::HashMap;
use std::io::Cursor;
use std::path::Path;
use std::ptr::NonNull;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    ArrowPrimitiveType, Float16Type, Float32Type, Float64Type, Int8Type, Int16Type, Int32Type,
    Int64Type, UInt8Type, UInt16Type, UInt32Type, UInt64Type,
};
use arrow_array::{Array, RecordBatch};
use arrow_buffer::Buffer;
use arrow_ipc::Block;
use arrow_ipc::convert::try_fb_to_schema;
use arrow_ipc::reader::{FileDecoder, StreamReader, read_footer_length};
use arrow_schema::{ArrowError, DataType, SchemaRef};
use rayon::prelude::*;

use super::columnar::Column;
use super::csv_cells::Bytes;
use super::csv_read::{RawTable, check_header};
use super::error::{DataError, DataErrorKind as K};

/// The Arrow IPC file format's leading magic.
const FILE_MAGIC: &[u8] = b"ARROW1";
/// The stream format opens with a continuation marker before its schema.
const STREAM_MARKER: &[u8] = &[0xFF, 0xFF, 0xFF, 0xFF];

/// Whether `bytes` start like an Arrow IPC file or stream.
pub(super) fn is_arrow(bytes: &[u8]) -> bool {
    bytes.starts_with(FILE_MAGIC) || bytes.starts_with(STREAM_MARKER)
}

/// The table in `bytes` (an Arrow IPC file or stream), its columns read in
/// parallel while the file's hash is computed. A file's batches are decoded
/// in place from the mapped bytes (no copy of the file).
pub(super) fn read(path: &Path, bytes: Bytes) -> Result<RawTable, DataError> {
    let buffer = match bytes {
        Bytes::Held(v) => Buffer::from_vec(v),
        Bytes::Mapped(m) => {
            let m = Arc::new(m);
            let ptr = NonNull::new(m.as_ptr() as *mut u8).expect("a mapped file is not null");
            // SAFETY: the map stays alive as long as the buffer (its owner)
            // and is read-only; its bytes change only if another process
            // rewrites the file meanwhile, the hazard of reading any file.
            unsafe { Buffer::from_custom_allocation(ptr, m.len(), m) }
        }
    };
    let (hash, table) = rayon::join(
        || word_hash(&buffer),
        // A malformed file is an error, not a crash, even should the
        // reader panic on it.
        || {
            std::panic::catch_unwind(|| columns(path, &buffer)).unwrap_or_else(|_| {
                Err(unreadable(
                    path,
                    ArrowError::IpcError("the file is malformed".into()),
                ))
            })
        },
    );
    let (header, columns) = table?;
    Ok(RawTable::of_columns(
        header,
        columns,
        format!("fnv1a64w:{hash:016x}"),
    ))
}

/// The file's fingerprint: FNV-1a over 8-byte little-endian words of each
/// 1 MiB chunk (in parallel), then over the chunks' hashes — a columnar
/// file is large, and a byte-serial hash of 1.7 GB took 1.5 s.
fn word_hash(bytes: &[u8]) -> u64 {
    const CHUNK: usize = 1 << 20;
    let fnv = |h: u64, w: u64| (h ^ w).wrapping_mul(0x0000_0100_0000_01b3);
    let chunks: Vec<u64> = bytes
        .par_chunks(CHUNK)
        .map(|c| {
            let mut words = c.chunks_exact(8);
            let mut h = 0xcbf2_9ce4_8422_2325;
            for w in &mut words {
                h = fnv(h, u64::from_le_bytes(w.try_into().expect("8 bytes")));
            }
            words
                .remainder()
                .iter()
                .fold(h, |h, &b| fnv(h, u64::from(b)))
        })
        .collect();
    chunks
        .iter()
        .fold(fnv(0xcbf2_9ce4_8422_2325, bytes.len() as u64), |h, &c| {
            fnv(h, c)
        })
}

fn unreadable(path: &Path, e: ArrowError) -> DataError {
    DataError::new(
        K::Unreadable,
        path,
        format!("cannot read this Arrow IPC file: {e}"),
    )
    .hint(
        "pacauc reads uncompressed and LZ4 Arrow IPC files: write it again with \
         compression 'lz4' or 'uncompressed' (pandas: `df.to_feather(path, \
         compression='lz4')`), or export the table as CSV",
    )
}

fn columns(path: &Path, bytes: &Buffer) -> Result<(Vec<String>, Vec<Column>), DataError> {
    let (schema, batches) = if bytes.starts_with(FILE_MAGIC) {
        file_batches(bytes).map_err(|e| unreadable(path, e))?
    } else {
        let reader = StreamReader::try_new(Cursor::new(&bytes[..]), None)
            .map_err(|e| unreadable(path, e))?;
        let schema = reader.schema();
        let batches: Result<Vec<RecordBatch>, _> = reader.collect();
        (schema, batches.map_err(|e| unreadable(path, e))?)
    };
    let header: Vec<String> = schema.fields().iter().map(|f| f.name().clone()).collect();
    if header.len() < 2 {
        return Err(DataError::new(
            K::BadHeader,
            path,
            format!("the table has {} column(s)", header.len()),
        )
        .hint("a table of feature columns and a target column is required"));
    }
    check_header(path, &header, b',')?;
    let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
    if rows == 0 {
        return Err(DataError::new(K::Empty, path, "the table has no rows")
            .hint("a table with at least two rows of each class is needed"));
    }
    let columns: Result<Vec<Column>, DataError> = schema
        .fields()
        .par_iter()
        .enumerate()
        .map(|(j, field)| {
            let parts = batches.iter().map(|b| b.column(j).as_ref());
            column(parts, rows, field.data_type()).ok_or_else(|| {
                DataError::new(
                    K::NotNumeric,
                    path,
                    format!(
                        "the column has Arrow type {}, which pacauc does not read",
                        field.data_type()
                    ),
                )
                .column(j, field.name())
                .hint(format!(
                    "cast '{0}' to a number (float64) or to text (string) before writing, \
                     or leave it out of the table",
                    field.name()
                ))
            })
        })
        .collect();
    Ok((header, columns?))
}

/// The schema and record batches of an Arrow IPC file, decoded from its
/// bytes in place (what `FileReader` does, less its copy of every block).
fn file_batches(bytes: &Buffer) -> Result<(SchemaRef, Vec<RecordBatch>), ArrowError> {
    let bad = |what: &str| ArrowError::ParseError(what.to_string());
    let n = bytes.len();
    let trailer: [u8; 10] = bytes
        .get(n.saturating_sub(10)..)
        .and_then(|t| t.try_into().ok())
        .ok_or_else(|| bad("the file is too short"))?;
    let footer_len = read_footer_length(trailer)?;
    let footer_start = (n - 10)
        .checked_sub(footer_len)
        .ok_or_else(|| bad("the footer is longer than the file"))?;
    let footer = arrow_ipc::root_as_footer(&bytes[footer_start..n - 10])
        .map_err(|e| ArrowError::ParseError(format!("unable to read the footer: {e}")))?;
    let fb_schema = footer
        .schema()
        .ok_or_else(|| bad("the footer has no schema"))?;
    if !fb_schema.endianness().equals_to_target_endianness() {
        return Err(bad("the file is big-endian"));
    }
    let schema = Arc::new(try_fb_to_schema(fb_schema)?);
    let mut decoder = FileDecoder::new(Arc::clone(&schema), footer.version());
    let block_bytes = |b: &Block| -> Result<Buffer, ArrowError> {
        let start = usize::try_from(b.offset()).map_err(|_| bad("a negative block offset"))?;
        let len = usize::try_from(b.metaDataLength())
            .map_err(|_| bad("a negative block length"))?
            + usize::try_from(b.bodyLength()).map_err(|_| bad("a negative block length"))?;
        match start.checked_add(len) {
            Some(end) if end <= footer_start => Ok(bytes.slice_with_length(start, len)),
            _ => Err(bad("a block lies outside the file")),
        }
    };
    for block in footer.dictionaries().iter().flatten() {
        decoder.read_dictionary(block, &block_bytes(block)?)?;
    }
    let mut batches = Vec::new();
    for block in footer
        .recordBatches()
        .ok_or_else(|| bad("the footer lists no batches"))?
    {
        if let Some(b) = decoder.read_record_batch(block, &block_bytes(block)?)? {
            batches.push(b);
        }
    }
    Ok((schema, batches))
}

/// One column from its part in every batch; None for a type pacauc does
/// not read.
fn column<'a>(
    parts: impl Iterator<Item = &'a dyn Array>,
    rows: usize,
    ty: &DataType,
) -> Option<Column> {
    use DataType as T;
    Some(match ty {
        T::Int8 => numbers::<Int8Type>(parts, rows, |v| v as f64),
        T::Int16 => numbers::<Int16Type>(parts, rows, |v| v as f64),
        T::Int32 => numbers::<Int32Type>(parts, rows, |v| v as f64),
        T::Int64 => numbers::<Int64Type>(parts, rows, |v| v as f64),
        T::UInt8 => numbers::<UInt8Type>(parts, rows, |v| v as f64),
        T::UInt16 => numbers::<UInt16Type>(parts, rows, |v| v as f64),
        T::UInt32 => numbers::<UInt32Type>(parts, rows, |v| v as f64),
        T::UInt64 => numbers::<UInt64Type>(parts, rows, |v| v as f64),
        T::Float16 => numbers::<Float16Type>(parts, rows, |v| v.to_f64()),
        T::Float32 => numbers::<Float32Type>(parts, rows, |v| v as f64),
        T::Float64 => numbers::<Float64Type>(parts, rows, |v| v),
        T::Null => Column::Numbers(vec![f64::NAN; rows]),
        T::Utf8 | T::LargeUtf8 | T::Utf8View => text(parts, rows),
        T::Boolean => {
            let mut codes = Vec::with_capacity(rows);
            for a in parts {
                let a = a.as_boolean();
                codes.extend((0..a.len()).map(|i| match a.is_null(i) {
                    true => 2,
                    false => u32::from(a.value(i)),
                }));
            }
            Column::Codes {
                // Spelled as pandas writes them to a CSV.
                levels: vec!["False".into(), "True".into(), String::new()],
                codes,
            }
        }
        T::Dictionary(_, v) if matches!(**v, T::Utf8 | T::LargeUtf8 | T::Utf8View) => {
            dictionary(parts, rows)
        }
        _ => return None,
    })
}

fn numbers<'a, P: ArrowPrimitiveType>(
    parts: impl Iterator<Item = &'a dyn Array>,
    rows: usize,
    to_f64: impl Fn(P::Native) -> f64,
) -> Column {
    let mut out = crate::engine::numerics::huge_pages::vec_with_capacity(rows);
    for a in parts {
        let a = a.as_primitive::<P>();
        let values = a.values().iter().map(|&v| to_f64(v));
        match a.nulls() {
            None => out.extend(values),
            Some(nulls) => out.extend(
                values
                    .zip(nulls.iter())
                    .map(|(v, valid)| if valid { v } else { f64::NAN }),
            ),
        }
    }
    Column::Numbers(out)
}

/// The string of row i of a string array of any offset width (None: null).
fn string_at(a: &dyn Array, i: usize) -> Option<&str> {
    if a.is_null(i) {
        return None;
    }
    Some(match a.data_type() {
        DataType::Utf8 => a.as_string::<i32>().value(i),
        DataType::LargeUtf8 => a.as_string::<i64>().value(i),
        _ => a.as_string_view().value(i),
    })
}

fn text<'a>(parts: impl Iterator<Item = &'a dyn Array>, rows: usize) -> Column {
    let mut text = Vec::new();
    let mut ends = Vec::with_capacity(rows);
    for a in parts {
        for i in 0..a.len() {
            text.extend_from_slice(string_at(a, i).unwrap_or("").as_bytes());
            ends.push(text.len());
        }
    }
    Column::Text { text, ends }
}

/// Dictionary strings as codes: each batch's dictionary mapped once onto
/// the column's levels (batches may carry different dictionaries).
fn dictionary<'a>(parts: impl Iterator<Item = &'a dyn Array>, rows: usize) -> Column {
    let mut levels: Vec<String> = Vec::new();
    let mut index: HashMap<String, u32> = HashMap::new();
    let mut level = |s: &str| {
        *index.entry(s.to_string()).or_insert_with(|| {
            levels.push(s.to_string());
            (levels.len() - 1) as u32
        })
    };
    let mut codes = Vec::with_capacity(rows);
    for a in parts {
        let d = a.as_any_dictionary();
        let values = d.values();
        let map: Vec<u32> = (0..values.len())
            .map(|v| level(string_at(values.as_ref(), v).unwrap_or("")))
            .collect();
        let missing = level("");
        let keys = d.normalized_keys();
        codes.extend((0..a.len()).map(|i| match a.is_null(i) {
            true => missing,
            false => map[keys[i]],
        }));
    }
    Column::Codes { levels, codes }
}
