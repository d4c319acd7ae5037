//! CSV ingestion as a user meets it: every bad input gets a clear error (file,
//! line, column, what to do), never a panic; messy but valid files load.

use std::path::Path;

use pacauc::engine::data::{
    ColumnRule, DataError, DataErrorKind as K, Dataset, LoadOptions, MissingPolicy,
};

fn load(text: &str) -> Result<Dataset, DataError> {
    load_with(text, LoadOptions::default())
}

fn load_with(text: &str, opts: LoadOptions) -> Result<Dataset, DataError> {
    Dataset::from_csv_bytes(Path::new("data.csv"), text.as_bytes(), &opts)
}

fn err(text: &str, opts: LoadOptions) -> (K, String) {
    let e = load_with(text, opts).expect_err("must be an error");
    (e.kind, e.to_string())
}

fn opts() -> LoadOptions {
    LoadOptions::default()
}

const GOOD: &str = "a,b,y\n1,2,0\n2,1,1\n3,5,0\n4,4,1\n";

#[test]
fn missing_file_names_the_path() {
    let e = Dataset::load(Path::new("no/such/file.csv"), &opts()).unwrap_err();
    assert_eq!(e.kind, K::Unreadable);
    let m = e.to_string();
    assert!(
        m.starts_with("no/such/file.csv: cannot read the file"),
        "{m}"
    );
    assert!(m.contains("hint: check the path"), "{m}");
}

#[test]
fn empty_file() {
    let (k, m) = err("", opts());
    assert_eq!(k, K::Empty);
    assert!(m.contains("the file is empty"), "{m}");
    let (k, m) = err("a,b,y\n", opts());
    assert_eq!(k, K::Empty);
    assert!(m.contains("no data rows"), "{m}");
}

#[test]
fn ragged_row_gives_line_and_counts() {
    let (k, m) = err("a,b,y\n1,2,0\n1,2\n3,4,1\n", opts());
    assert_eq!(k, K::RaggedRow);
    assert!(m.contains("line 3"), "{m}");
    assert!(m.contains("2 fields but the header has 3"), "{m}");
}

#[test]
fn unterminated_quote_is_named_as_such() {
    let (k, m) = err("a,b,y\n1,2,0\n1,\"2,0\n3,4,1\n5,6,0\n", opts());
    assert_eq!(k, K::RaggedRow);
    assert!(m.contains("line 3"), "{m}");
    assert!(m.contains("never closed"), "{m}");
}

#[test]
fn duplicate_header_names_both_columns() {
    let (k, m) = err("a,b,a,y\n1,2,3,0\n", opts());
    assert_eq!(k, K::DuplicateHeader);
    assert!(m.contains("'a' is used twice (columns 1 and 3)"), "{m}");
}

#[test]
fn headerless_file_is_detected() {
    let (k, m) = err("1,2,0\n2,1,1\n", opts());
    assert_eq!(k, K::BadHeader);
    assert!(m.contains("looks like data, not a header"), "{m}");
}

#[test]
fn unknown_target_lists_columns_and_near_misses() {
    let (k, m) = err(
        GOOD,
        LoadOptions {
            target: Some("label".into()),
            ..opts()
        },
    );
    assert_eq!(k, K::UnknownColumn);
    assert!(
        m.contains("'label' is not in the header") && m.contains("'a', 'b', 'y'"),
        "{m}"
    );
    let (_, m) = err(
        GOOD,
        LoadOptions {
            target: Some("Y".into()),
            ..opts()
        },
    );
    assert!(m.contains("did you mean 'y'?"), "{m}");
}

#[test]
fn one_class_target() {
    let (k, m) = err("a,y\n1,1\n2,1\n3,1\n", opts());
    assert_eq!(k, K::OneClass);
    assert!(m.contains("only one class: '1' (3 rows)"), "{m}");
    assert!(m.contains("column 2 ('y')"), "{m}");
}

#[test]
fn three_classes_need_positive() {
    let text = "a,kind\n1,x\n2,y\n3,z\n4,x\n5,y\n6,z\n";
    let (k, m) = err(text, opts());
    assert_eq!(k, K::TooManyClasses);
    assert!(
        m.contains("3 distinct values") && m.contains("--positive"),
        "{m}"
    );
    // one-vs-rest with --positive
    let ds = load_with(
        text,
        LoadOptions {
            positive: Some("x".into()),
            ..opts()
        },
    )
    .unwrap();
    assert_eq!((ds.positives(), ds.negatives()), (2, 4));
    assert!(ds.report.positive_rule.contains("vs the 2 other values"));
}

#[test]
fn unknown_positive_lists_values() {
    let (k, m) = err(
        GOOD,
        LoadOptions {
            positive: Some("yes".into()),
            ..opts()
        },
    );
    assert_eq!(k, K::UnknownPositive);
    assert!(m.contains("'0' (2 rows), '1' (2 rows)"), "{m}");
}

#[test]
fn too_few_rows_of_a_class_after_cleaning() {
    let (k, m) = err("a,y\n1,0\n2,0\n3,1\n,1\n", opts());
    assert_eq!(k, K::TooFewRows);
    assert!(
        m.contains("only 1 positive row(s) left after cleaning"),
        "{m}"
    );
    assert!(
        m.contains("1 row(s) were dropped for missing values (a: 1)"),
        "{m}"
    );
}

#[test]
fn too_many_levels_suggests_drop() {
    let mut text = String::from("id,a,y\n");
    for i in 0..40 {
        text.push_str(&format!("P{i},{},{}\n", i % 7, i % 2));
    }
    let (k, m) = err(&text, opts());
    assert_eq!(k, K::TooManyLevels);
    assert!(
        m.contains("column 1 ('id')") && m.contains("40 distinct values"),
        "{m}"
    );
    assert!(m.contains("--drop 'id'"), "{m}");
    let ds = load_with(
        &text,
        LoadOptions {
            drop: vec!["id".into()],
            ..opts()
        },
    )
    .unwrap();
    assert_eq!(ds.names, vec!["a"]);
    assert_eq!(ds.report.dropped_columns[0].reason, "--drop");
}

#[test]
fn non_finite_number() {
    let (k, m) = err("a,b,y\n1,2,0\n2,inf,1\n3,5,0\n4,4,1\n", opts());
    assert_eq!(k, K::NonFinite);
    assert!(
        m.contains("line 3, column 2 ('b'): non-finite number 'inf'"),
        "{m}"
    );
}

#[test]
fn stray_word_in_numeric_column_is_a_typo() {
    let mut text = String::from("a,y\n");
    for i in 0..30 {
        text.push_str(&format!(
            "{},{}\n",
            if i == 17 {
                "3o.5".to_string()
            } else {
                i.to_string()
            },
            i % 2
        ));
    }
    let (k, m) = err(&text, opts());
    assert_eq!(k, K::NotNumeric);
    assert!(
        m.contains("line 19, column 1 ('a')") && m.contains("'3o.5'"),
        "{m}"
    );
}

#[test]
fn invalid_utf8() {
    let e = Dataset::from_csv_bytes(Path::new("x.csv"), b"a,y\n\xff,1\n", &opts()).unwrap_err();
    assert_eq!(e.kind, K::NotUtf8);
    assert!(
        e.to_string().contains("line 2") && e.to_string().contains("UTF-8"),
        "{e}"
    );
}

#[test]
fn missing_cells_drop_rows_or_error() {
    let text = "a,b,y\n1,2,0\nNA,1,1\n3,,0\n4,4,1\n5,?,0\n6,6,1\n7,null,1\n8,8,0\n";
    let ds = load(text).unwrap();
    assert_eq!(ds.rows(), 4);
    assert_eq!(ds.report.dropped_rows, 4);
    assert_eq!(ds.report.missing_by_column.get("b"), Some(&3));
    let (k, m) = err(
        text,
        LoadOptions {
            missing: MissingPolicy::Error,
            ..opts()
        },
    );
    assert_eq!(k, K::Missing);
    assert!(
        m.contains("line 3, column 1 ('a'): missing value 'NA'"),
        "{m}"
    );
}

/// The loader parses the features first over every row and skips their
/// missing-cell pass when all are finite numbers: a missing label, a
/// decimal comma or a stray cell must still give what the full path gives.
#[test]
fn features_parsed_before_the_missing_pass_give_the_same_table() {
    // Clean features, a missing label: the row goes, the rest as without it.
    let ds = load("a,b,y\n1,2,0\n2,1,\n3,5,1\n4,4,NA\n5,5,0\n6,1,1\n").unwrap();
    let same = load("a,b,y\n1,2,0\n3,5,1\n5,5,0\n6,1,1\n").unwrap();
    assert_eq!(ds.x, same.x);
    assert_eq!(ds.y, same.y);
    assert_eq!(ds.report.dropped_rows, 2);
    assert_eq!(ds.report.missing_by_column.get("y"), Some(&2));
    assert!(!ds.report.missing_by_column.contains_key("a"));
    // A missing feature late in the file (after the first try has parsed
    // many rows), then a text column: the second pass over the kept rows.
    let mut text = String::from("a,b,y\n");
    for i in 0..20_000 {
        text.push_str(&format!("{}.5,{},{}\n", i, i % 7, i % 2));
    }
    text.push_str("NA,3,1\n");
    let ds = load(&text).unwrap();
    assert_eq!((ds.rows(), ds.report.dropped_rows), (20_000, 1));
    assert_eq!(ds.report.missing_by_column.get("a"), Some(&1));
    let ds = load("a,c,y\n1,u,0\n2,v,1\n3,u,0\n4,,1\n5,v,1\n6,u,0\n").unwrap();
    assert_eq!((ds.rows(), ds.report.dropped_rows), (5, 1));
    assert_eq!(ds.report.encoded.len(), 1);
    // A non-finite number is still an error naming its line and column.
    let (k, m) = err("a,b,y\n1,2,0\n2,inf,1\n3,5,0\n4,4,1\n", opts());
    assert_eq!(k, K::NonFinite);
    assert!(m.contains("line 3, column 2 ('b')"), "{m}");
}

#[test]
fn messy_but_valid_file_loads() {
    // BOM, semicolons, text labels, a yes/no column, a 3-level category, an ID, a constant column.
    let text = "\u{feff}id;age;smoker;site;version;status\n\
                P1;50;yes;north;v1;sick\nP2;40;no;south;v1;healthy\nP3;60;no;east;v1;healthy\n\
                P4;55;yes;south;v1;sick\nP5;45;no;north;v1;healthy\nP6;35;yes;east;v1;healthy\n";
    let ds = load_with(
        text,
        LoadOptions {
            drop: vec!["id".into()],
            ..opts()
        },
    )
    .unwrap();
    assert_eq!(ds.report.delimiter, ";");
    assert_eq!(ds.schema.positive_label, "sick");
    assert!(ds.report.positive_rule.contains("rarer"));
    assert_eq!(
        ds.names,
        vec!["age", "smoker=yes", "site=east", "site=north", "site=south"]
    );
    assert!(
        ds.report
            .dropped_columns
            .iter()
            .any(|c| c.name == "version=v1" && c.reason == "constant")
    );
    assert_eq!(ds.positives(), 2);
    let summary = &ds.summary[0];
    assert_eq!((summary.min, summary.max), (35.0, 60.0));
    assert_eq!(summary.hist.iter().sum::<u32>(), 6);
}

#[test]
fn labels_minus_one_one_and_tabs() {
    let ds = load("a\tb\tclass\n1\t2\t-1\n2\t1\t1\n3\t5\t-1\n4\t4\t1\n").unwrap();
    assert_eq!(ds.report.delimiter, "tab");
    assert_eq!(ds.schema.positive_label, "1");
    assert_eq!(ds.y, vec![false, true, false, true]);
}

#[test]
fn numeric_labels_compare_by_value() {
    let ds = load("a,y\n1,0.0\n2,1.0\n3,0\n4,1\n").unwrap();
    assert_eq!(ds.positives(), 2);
}

#[test]
fn test_file_uses_the_training_schema() {
    let dir = std::env::temp_dir().join(format!("pacauc-schema-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let train = "x,color,y\n1,red,0\n2,blue,1\n3,green,0\n4,red,1\n";
    let ds = load(train).unwrap();
    // columns in another order, an unseen level, an extra column
    let test_path = dir.join("test.csv");
    std::fs::write(
        &test_path,
        "extra,color,y,x\n9,blue,1,5\n9,purple,0,6\n9,red,0,7\n",
    )
    .unwrap();
    let t = Dataset::load_with_schema(&test_path, &ds.schema, MissingPolicy::DropRows).unwrap();
    assert_eq!(t.names, ds.names);
    assert_eq!(t.x.column(0).as_slice(), &[5.0, 6.0, 7.0]);
    assert!(
        t.report
            .warnings
            .iter()
            .any(|w| w.contains("not seen in training")),
        "{:?}",
        t.report.warnings
    );
    assert!(matches!(&ds.schema.rules[1], ColumnRule::OneHot { levels, .. } if levels.len() == 3));
    // a missing training column is an error naming it
    std::fs::write(&test_path, "color,y\nblue,1\nred,0\n").unwrap();
    let e = Dataset::load_with_schema(&test_path, &ds.schema, MissingPolicy::DropRows).unwrap_err();
    assert_eq!(e.kind, K::UnknownColumn);
    assert!(e.to_string().contains("'x' is not in the header"), "{e}");
    std::fs::remove_dir_all(&dir).ok();
}

/// Arbitrary bytes never panic the loader.
#[test]
fn garbage_never_panics() {
    use proptest::prelude::*;
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: 400,
        ..ProptestConfig::default()
    });
    runner
        .run(
            &proptest::collection::vec(
                prop_oneof![
                    Just(b','),
                    Just(b'\n'),
                    Just(b'"'),
                    Just(b'1'),
                    Just(b'a'),
                    any::<u8>()
                ],
                0..80,
            ),
            |bytes| {
                let _ =
                    Dataset::from_csv_bytes(Path::new("g.csv"), &bytes, &LoadOptions::default());
                Ok(())
            },
        )
        .unwrap();
}

#[test]
fn decimal_commas_in_semicolon_files() {
    let ds = load("a;b;y\n1,5;2;0\n2,5;3;1\n0,5;1;0\n3,5;1;1\n").unwrap();
    assert_eq!(ds.x.column(0).as_slice(), &[1.5, 2.5, 0.5, 3.5]);
    assert!(
        ds.report
            .warnings
            .iter()
            .any(|w| w.contains("decimal comma")),
        "{:?}",
        ds.report.warnings
    );
}

#[test]
fn row_number_column_is_flagged() {
    let mut text = String::from("id,x,y\n");
    for i in 0..20 {
        text.push_str(&format!("{},{},{}\n", i + 1, (i * 7) % 5, i % 2));
    }
    let ds = load(&text).unwrap();
    assert!(
        ds.report
            .warnings
            .iter()
            .any(|w| w.contains("'id'") && w.contains("--drop 'id'")),
        "{:?}",
        ds.report.warnings
    );
}

#[test]
fn default_target_is_announced_and_a_likelier_one_named() {
    // The last column is a yes/no feature; the real target sits in the middle.
    let mut text = String::from("age,outcome,smoker\n");
    for i in 0..30 {
        let smoker = if i % 3 == 0 { "yes" } else { "no" };
        text.push_str(&format!("{},{},{smoker}\n", 20 + i, i % 2));
    }
    let ds = load(&text).unwrap();
    assert!(
        ds.report.target_rule.contains("'smoker' (the last column"),
        "{}",
        ds.report.target_rule
    );
    assert!(
        ds.report.warnings.iter().any(|w| w.contains(
            "'outcome' (a target's name, rarer value 50.0%) looks at least as much like one"
        ) && w.contains("--target 'outcome'")),
        "{:?}",
        ds.report.warnings
    );
    // Named explicitly: said so, and no second-guessing.
    let ds = load_with(
        &text,
        LoadOptions {
            target: Some("outcome".into()),
            ..opts()
        },
    )
    .unwrap();
    assert!(ds.report.target_rule.contains("given by --target"));
    assert!(
        !ds.report
            .warnings
            .iter()
            .any(|w| w.contains("looks at least as much like"))
    );
    // A target-like last column raises nothing.
    assert!(
        !load(GOOD)
            .unwrap()
            .report
            .warnings
            .iter()
            .any(|w| w.contains("looks at least as much like"))
    );
}

#[test]
fn unordered_unique_integer_id_is_flagged() {
    let mut text = String::from("patient,x,y\n");
    for i in 0..40u64 {
        let id = (i * 7919 + 104_729) % 100_003; // distinct, not increasing
        text.push_str(&format!("{id},{},{}\n", (i * 7) % 5, i % 2));
    }
    let ds = load(&text).unwrap();
    assert_eq!(ds.report.id_like, vec!["patient".to_string()]);
    assert!(
        ds.report
            .warnings
            .iter()
            .any(|w| w.contains("a different integer on every row")
                && w.contains("--drop 'patient'")),
        "{:?}",
        ds.report.warnings
    );
    // A small integer feature with repeats is not an ID.
    assert!(ds.report.warnings.iter().all(|w| !w.contains("column 'x'")));
}

#[test]
fn repeated_ids_named_id_are_flagged() {
    // Like a real clinical file: 'ID' first, some patients sampled twice.
    let mut text = String::from("ID,clump,size,class\n");
    for i in 0..120u64 {
        let k = if i % 9 == 0 && i > 0 { i - 1 } else { i };
        let id = 1_000_000 + (k * 7919) % 400_009;
        text.push_str(&format!(
            "{id},{},{},{}\n",
            (i * 7) % 10,
            (i * 3) % 4,
            i % 3 == 0
        ));
    }
    let ds = load(&text).unwrap();
    assert_eq!(ds.report.id_like, vec!["ID".to_string()]);
    assert!(
        ds.report
            .warnings
            .iter()
            .any(|w| w.contains("its name reads as an identifier") && w.contains("--drop 'ID'")),
        "{:?}",
        ds.report.warnings
    );
}

#[test]
fn continuous_last_column_gives_a_short_error_with_the_hint() {
    let mut text = String::from("group,sick,price\n");
    for i in 0..10_000 {
        text.push_str(&format!("{},{},{}.{}\n", i % 3, i % 2, 100 + i, i % 7));
    }
    let (k, m) = err(&text, opts());
    assert_eq!(k, K::TooManyClasses);
    assert!(m.len() < 600, "{} bytes: {m}", m.len());
    assert!(m.contains("looks like a continuous number"), "{m}");
    assert!(m.contains("and 9994 more"), "{m}");
    assert!(
        m.contains("the last column ('price') unless --target") && m.contains("two values: 'sick'"),
        "{m}"
    );
}

#[test]
fn extreme_magnitudes_standardise_like_ordinary_ones() {
    use pacauc::engine::data::{TestSource, prepare};
    let base: Vec<f64> = (0..40).map(|i| ((i * 37) % 23) as f64 - 11.0).collect();
    let standardised = |scale: &str| {
        let mut text = String::from("a,b,y\n");
        for (i, v) in base.iter().enumerate() {
            text.push_str(&format!("{v}{scale},{},{}\n", (i * 3) % 7, i % 2));
        }
        let ds = load(&text).unwrap();
        let p = prepare(
            &ds,
            TestSource::Split {
                frac: 0.25,
                seed: 1,
            },
        )
        .unwrap();
        assert_eq!(p.names.len(), 2, "no column may be dropped as constant");
        (
            p.train.x.column(0).iter().copied().collect::<Vec<f64>>(),
            p.test.unwrap().x,
        )
    };
    let (plain, _) = standardised("");
    for scale in ["e300", "e160", "e-200", "e-300"] {
        let (z, test) = standardised(scale);
        for (a, b) in z.iter().zip(&plain) {
            assert!((a - b).abs() < 1e-12, "{scale}: {a} vs {b}");
        }
        assert!(test.iter().all(|v| v.is_finite()), "{scale}");
    }
}
