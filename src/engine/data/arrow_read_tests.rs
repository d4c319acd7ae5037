//! An Arrow IPC table loads as the same table written as CSV loads: the
//! same features, labels, encodings, cleaning report and errors.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::types::Int8Type;
use arrow_array::{
    ArrayRef, BooleanArray, Date32Array, DictionaryArray, Float32Array, Float64Array, Int64Array,
    LargeStringArray, RecordBatch, StringArray,
};
use arrow_ipc::writer::{FileWriter, IpcWriteOptions, StreamWriter};
use arrow_schema::{Field, Schema};

use super::load::{Dataset, LoadOptions, MissingPolicy};

/// A scratch folder of the test `name`'s own (tests run in parallel).
fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("pacauc-arrow-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn batch(columns: Vec<(&str, ArrayRef)>) -> RecordBatch {
    let fields: Vec<Field> = columns
        .iter()
        .map(|(n, a)| Field::new(*n, a.data_type().clone(), true))
        .collect();
    let arrays = columns.into_iter().map(|(_, a)| a).collect();
    RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays).unwrap()
}

/// The batches written as an Arrow IPC file (LZ4-compressed when asked).
fn write_file(path: &Path, batches: &[RecordBatch], lz4: bool) {
    let f = std::fs::File::create(path).unwrap();
    let opts = match lz4 {
        true => IpcWriteOptions::default()
            .try_with_compression(Some(arrow_ipc::CompressionType::LZ4_FRAME))
            .unwrap(),
        false => IpcWriteOptions::default(),
    };
    let mut w = FileWriter::try_new_with_options(f, &batches[0].schema(), opts).unwrap();
    for b in batches {
        w.write(b).unwrap();
    }
    w.finish().unwrap();
}

/// A mixed table in two batches (the second with its own dictionary) and
/// the same table as a CSV would hold it.
fn mixed() -> (Vec<RecordBatch>, String) {
    let n = 40;
    let make = |r0: usize| {
        let rows = r0..r0 + n / 2;
        let age: Vec<Option<i64>> = rows
            .clone()
            .map(|i| Some(20 + (i * 7 % 50) as i64))
            .collect();
        let income: Vec<Option<f64>> = rows
            .clone()
            .map(|i| match i % 13 {
                3 => None,
                7 => Some(f64::NAN),
                _ => Some(1000.0 + (i * 37 % 101) as f64 / 4.0),
            })
            .collect();
        let ratio: Vec<f32> = rows.clone().map(|i| (i % 9) as f32 / 8.0).collect();
        let site: Vec<Option<&str>> = rows
            .clone()
            .map(|i| {
                if i == 11 {
                    None
                } else {
                    Some(["north", "south", "east"][i % 3])
                }
            })
            .collect();
        let smoker: Vec<bool> = rows.clone().map(|i| i % 4 == 1).collect();
        // One dictionary for the file format (which allows no replacement).
        let keys: Vec<i8> = rows
            .clone()
            .map(|i| {
                if r0 == 0 {
                    (i % 2) as i8
                } else {
                    [1, 2, 0][i % 3]
                }
            })
            .collect();
        let code = DictionaryArray::<Int8Type>::try_new(
            keys.into(),
            Arc::new(StringArray::from(vec!["a", "b", "c"])),
        )
        .unwrap();
        let y: Vec<&str> = rows
            .map(|i| if (i * 5) % 7 < 3 { "yes" } else { "no" })
            .collect();
        batch(vec![
            ("age", Arc::new(Int64Array::from(age)) as ArrayRef),
            ("income", Arc::new(Float64Array::from(income))),
            ("ratio", Arc::new(Float32Array::from(ratio))),
            ("site", Arc::new(StringArray::from(site))),
            ("smoker", Arc::new(BooleanArray::from(smoker))),
            ("code", Arc::new(code)),
            ("y", Arc::new(LargeStringArray::from(y))),
        ])
    };
    let batches = vec![make(0), make(n / 2)];
    let mut csv = String::from("age,income,ratio,site,smoker,code,y\n");
    for b in &batches {
        for r in 0..b.num_rows() {
            let cells: Vec<String> = (0..b.num_columns())
                .map(|j| {
                    let c = b.column(j);
                    if c.is_null(r) {
                        return String::new();
                    }
                    match j {
                        0 => c
                            .as_any()
                            .downcast_ref::<Int64Array>()
                            .unwrap()
                            .value(r)
                            .to_string(),
                        1 => format!(
                            "{}",
                            c.as_any().downcast_ref::<Float64Array>().unwrap().value(r)
                        ),
                        2 => format!(
                            "{}",
                            c.as_any().downcast_ref::<Float32Array>().unwrap().value(r)
                        ),
                        3 => c
                            .as_any()
                            .downcast_ref::<StringArray>()
                            .unwrap()
                            .value(r)
                            .into(),
                        4 => match c.as_any().downcast_ref::<BooleanArray>().unwrap().value(r) {
                            true => "True".into(),
                            false => "False".into(),
                        },
                        5 => {
                            let d = c
                                .as_any()
                                .downcast_ref::<DictionaryArray<Int8Type>>()
                                .unwrap();
                            let v = d.values().as_any().downcast_ref::<StringArray>().unwrap();
                            v.value(d.keys().value(r) as usize).into()
                        }
                        _ => c
                            .as_any()
                            .downcast_ref::<LargeStringArray>()
                            .unwrap()
                            .value(r)
                            .into(),
                    }
                })
                .collect();
            csv.push_str(&cells.join(","));
            csv.push('\n');
        }
    }
    (batches, csv)
}

/// Everything a load decides, without the file's name and hash.
fn seen(d: &Dataset) -> String {
    let mut report = d.report.clone();
    report.delimiter.clear();
    format!(
        "{:?}\n{:?}\n{:?}\n{:?}\n{report:?}",
        d.names, d.x, d.y, d.schema
    )
}

#[test]
fn an_arrow_table_loads_as_its_csv_does() {
    let (batches, csv) = mixed();
    let d = dir("mixed");
    let csv_path = d.join("mixed.csv");
    std::fs::write(&csv_path, &csv).unwrap();
    let opts = LoadOptions::default();
    let from_csv = Dataset::load(&csv_path, &opts).unwrap();
    assert!(from_csv.report.dropped_rows > 0 && !from_csv.report.encoded.is_empty());
    for lz4 in [false, true] {
        let p = d.join(format!("mixed-{lz4}.arrow"));
        write_file(&p, &batches, lz4);
        let from_arrow = Dataset::load(&p, &opts).unwrap();
        assert_eq!(seen(&from_arrow), seen(&from_csv), "lz4 {lz4}");
        assert_eq!(from_arrow.report.delimiter, "arrow");
        // And with the training schema, as a test file is read.
        let again =
            Dataset::load_with_schema(&p, &from_csv.schema, MissingPolicy::DropRows).unwrap();
        let again_csv =
            Dataset::load_with_schema(&csv_path, &from_csv.schema, MissingPolicy::DropRows)
                .unwrap();
        assert_eq!(seen(&again), seen(&again_csv));
        // And scored as `predict` reads it.
        let s = super::apply::read_rows_to_score(&p, &from_csv.schema).unwrap();
        let s_csv = super::apply::read_rows_to_score(&csv_path, &from_csv.schema).unwrap();
        let encoded = |s: &super::apply::RowsToScore| {
            let n = s.n_rows();
            let mut x = nalgebra::DMatrix::zeros(n, s.width());
            let mut problems = vec![None; n];
            s.encode(0..n, &mut x, &mut problems);
            let labels: Vec<_> = (0..n).map(|r| s.label(r)).collect();
            (format!("{x:?}"), problems, labels)
        };
        assert_eq!(encoded(&s), encoded(&s_csv));
    }
    // The stream format too.
    let p = d.join("mixed.arrows");
    let mut w =
        StreamWriter::try_new(std::fs::File::create(&p).unwrap(), &batches[0].schema()).unwrap();
    for b in &batches {
        w.write(b).unwrap();
    }
    w.finish().unwrap();
    assert_eq!(seen(&Dataset::load(&p, &opts).unwrap()), seen(&from_csv));
    std::fs::remove_dir_all(&d).ok();
}

#[test]
fn a_numeric_target_is_read_as_labels() {
    let d = dir("target");
    let p = d.join("numeric-target.arrow");
    let x: Vec<f64> = (0..30).map(|i| i as f64 / 3.0).collect();
    let y: Vec<f64> = (0..30).map(|i| (i % 3 == 0) as u8 as f64).collect();
    let b = batch(vec![
        ("x", Arc::new(Float64Array::from(x)) as ArrayRef),
        ("label", Arc::new(Float64Array::from(y))),
    ]);
    write_file(&p, &[b], false);
    let ds = Dataset::load(&p, &LoadOptions::default()).unwrap();
    assert_eq!(ds.schema.positive_label, "1");
    assert_eq!(ds.positives(), 10);
    std::fs::remove_dir_all(&d).ok();
}

#[test]
fn bad_arrow_tables_are_errors_that_name_the_column_or_row() {
    let d = dir("bad");
    let opts = LoadOptions::default();
    // A type pacauc does not read: named, with the cast to make.
    let p = d.join("date.arrow");
    let b = batch(vec![
        (
            "when",
            Arc::new(Date32Array::from(vec![1, 2, 3, 4])) as ArrayRef,
        ),
        ("y", Arc::new(Int64Array::from(vec![0, 1, 0, 1]))),
    ]);
    write_file(&p, &[b], false);
    let e = Dataset::load(&p, &opts).unwrap_err().to_string();
    assert!(
        e.contains("column 1 ('when')") && e.contains("Date32") && e.contains("float64"),
        "{e}"
    );
    // An infinite number: its row and column.
    let p = d.join("inf.arrow");
    let x = vec![1.0, 2.0, f64::INFINITY, 4.0, 5.0, 6.0];
    let b = batch(vec![
        ("x", Arc::new(Float64Array::from(x)) as ArrayRef),
        ("y", Arc::new(Int64Array::from(vec![0, 1, 0, 1, 0, 1]))),
    ]);
    write_file(&p, &[b], false);
    let e = Dataset::load(&p, &opts).unwrap_err().to_string();
    assert!(
        e.contains(", row 3, column 1 ('x')") && e.contains("non-finite"),
        "{e}"
    );
    // Missing cells as an error: the row, not a line.
    let p = d.join("null.arrow");
    let b = batch(vec![
        (
            "x",
            Arc::new(Float64Array::from(vec![
                Some(1.0),
                None,
                Some(3.0),
                Some(4.0),
            ])) as ArrayRef,
        ),
        ("y", Arc::new(Int64Array::from(vec![0, 1, 0, 1]))),
    ]);
    write_file(&p, &[b], false);
    let strict = LoadOptions {
        missing: MissingPolicy::Error,
        ..LoadOptions::default()
    };
    let e = Dataset::load(&p, &strict).unwrap_err().to_string();
    assert!(
        e.contains(", row 2, column 1 ('x')") && e.contains("missing value 'NaN'"),
        "{e}"
    );
    // Cut short: an error, not a crash.
    let whole = std::fs::read(&p).unwrap();
    for cut in [8, whole.len() / 2, whole.len() - 3] {
        std::fs::write(&p, &whole[..cut]).unwrap();
        let e = Dataset::load(&p, &opts).unwrap_err().to_string();
        assert!(e.contains("cannot read this Arrow IPC file"), "{e}");
    }
    std::fs::remove_dir_all(&d).ok();
}

#[test]
fn the_synthetic_table_is_the_same_in_both_formats() {
    use super::synthetic::SyntheticSpec;
    let spec = SyntheticSpec {
        rows: 20_000,
        features: 5,
        positive_share: 0.2,
        seed: 3,
    };
    let d = dir("synthetic");
    let (pc, pa) = (d.join("syn.csv"), d.join("syn.arrow"));
    let mut csv = Vec::new();
    spec.write(&mut csv).unwrap();
    std::fs::write(&pc, csv).unwrap();
    let mut arrow = Vec::new();
    spec.write_arrow(&mut arrow).unwrap();
    std::fs::write(&pa, arrow).unwrap();
    let opts = LoadOptions::default();
    let (a, c) = (
        Dataset::load(&pa, &opts).unwrap(),
        Dataset::load(&pc, &opts).unwrap(),
    );
    let differ =
        a.x.iter()
            .zip(c.x.iter())
            .filter(|(u, v)| u.to_bits() != v.to_bits())
            .count();
    assert_eq!(differ, 0, "values differ");
    assert!(a.y == c.y, "labels differ");
    assert_eq!(seen(&a), seen(&c));
    std::fs::remove_dir_all(&d).ok();
}
