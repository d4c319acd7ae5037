//! Typed loading: a raw table → a `Dataset` of numeric features and boolean
//! labels, with a report of everything that was cleaned, encoded or dropped.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use nalgebra::DMatrix;
use serde::{Deserialize, Serialize};

use super::csv_read::{RawTable, parse_number, parse_table, read_table, read_table_observed};
use super::error::{DataError, DataErrorKind as K};
use super::identifiers::id_like_columns;
use super::labels::choose_positive;
use super::missing::{complete_rows, describe_missing, too_few_after_cleaning};
use super::progress::{LoadProgress, LoadStage};
use super::schema::{ColumnRule, Schema, canonical_label};
use super::summary::{FeatureSummary, summarize};
use super::tally::{is_one_of, tally};
use super::typing::{ColumnKind, TypedColumns, column_kinds, judge, parse_columns};

/// What to do with rows that have a missing cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MissingPolicy {
    #[default]
    DropRows,
    Error,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LoadOptions {
    /// Target column name; default: the last column.
    pub target: Option<String>,
    /// Label value of the positive class; default: `1` for {0,1} / {-1,1} labels,
    /// otherwise the rarer of exactly two values.
    pub positive: Option<String>,
    /// Columns to ignore (IDs, leaks).
    pub drop: Vec<String>,
    pub missing: MissingPolicy,
    /// Text columns with more distinct values than this are an error.
    pub max_levels: usize,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            target: None,
            positive: None,
            drop: Vec::new(),
            missing: MissingPolicy::DropRows,
            max_levels: 32,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DroppedColumn {
    pub name: String,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EncodedColumn {
    pub column: String,
    pub levels: Vec<String>,
    pub features: Vec<String>,
}

/// Everything the loader did to the file, for the user to check.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CleaningReport {
    pub delimiter: String,
    pub rows_read: usize,
    pub rows_kept: usize,
    /// Rows dropped because a cell was missing.
    pub dropped_rows: usize,
    /// Missing cells per column (only columns that had some).
    pub missing_by_column: BTreeMap<String, usize>,
    pub dropped_columns: Vec<DroppedColumn>,
    pub encoded: Vec<EncodedColumn>,
    /// Which column is the target and why, in words.
    #[serde(default)]
    pub target_rule: String,
    /// How the positive class was chosen, in words.
    pub positive_rule: String,
    /// Columns that look like identifiers (kept as features; warned).
    #[serde(default)]
    pub id_like: Vec<String>,
    /// Label value → number of kept rows.
    pub label_counts: BTreeMap<String, usize>,
    pub warnings: Vec<String>,
}

/// A loaded, encoded, cleaned table: raw (unstandardised) features and labels.
#[derive(Debug, Clone)]
pub struct Dataset {
    pub path: PathBuf,
    pub fingerprint: String,
    pub names: Vec<String>,
    /// rows × features, as read (not standardised).
    pub x: DMatrix<f64>,
    /// true = positive.
    pub y: Vec<bool>,
    pub schema: Schema,
    pub report: CleaningReport,
    pub summary: Vec<FeatureSummary>,
}

impl Dataset {
    pub fn rows(&self) -> usize {
        self.y.len()
    }
    pub fn features(&self) -> usize {
        self.names.len()
    }
    pub fn positives(&self) -> usize {
        self.y.iter().filter(|&&b| b).count()
    }
    pub fn negatives(&self) -> usize {
        self.rows() - self.positives()
    }

    /// Frees the rows once the split is prepared, for front ends that keep
    /// only the prepared matrices (10⁷ × 20 is 1.6 GB): `x` becomes
    /// 0 × features; the labels, names, report and summaries stay.
    pub fn release_rows(&mut self) {
        self.x = DMatrix::zeros(0, self.features());
    }

    /// Loads a training file: infers the schema.
    pub fn load(path: &Path, opts: &LoadOptions) -> Result<Dataset, DataError> {
        Dataset::load_observed(path, opts, None)
    }

    /// `load` telling `progress` how far it has come (the explorer's loading
    /// pane).
    pub fn load_observed(
        path: &Path,
        opts: &LoadOptions,
        progress: Option<&LoadProgress>,
    ) -> Result<Dataset, DataError> {
        let raw = read_table_observed(path, progress)?;
        if let Some(p) = progress {
            p.set_stage(LoadStage::Typing);
        }
        let columnar = raw.is_columnar();
        build(path, raw, opts).map_err(|e| e.rows_if(columnar))
    }

    /// Parses CSV text held in memory (tests, generated data).
    pub fn from_csv_bytes(
        name: &Path,
        bytes: &[u8],
        opts: &LoadOptions,
    ) -> Result<Dataset, DataError> {
        build(name, parse_table(name, bytes)?, opts)
    }

    /// Loads another file (e.g. a test set) with the schema of a training file.
    pub fn load_with_schema(
        path: &Path,
        schema: &Schema,
        missing: MissingPolicy,
    ) -> Result<Dataset, DataError> {
        let raw = read_table(path)?;
        let columnar = raw.is_columnar();
        build_with_schema(path, raw, schema, missing).map_err(|e| e.rows_if(columnar))
    }
}

pub(super) fn find_column(
    path: &Path,
    header: &[String],
    name: &str,
    what: &str,
) -> Result<usize, DataError> {
    header.iter().position(|h| h == name).ok_or_else(|| {
        let close: Vec<&String> = header
            .iter()
            .filter(|h| h.eq_ignore_ascii_case(name))
            .collect();
        let hint = if let Some(c) = close.first() {
            format!("did you mean '{c}'? (names are case-sensitive)")
        } else if let Some(c) = super::labels::closest(name, header.iter().map(String::as_str)) {
            format!(
                "did you mean '{c}'? The columns are: {}",
                list_names(header)
            )
        } else {
            format!("the columns are: {}", list_names(header))
        };
        DataError::new(
            K::UnknownColumn,
            path,
            format!("{what} column '{name}' is not in the header"),
        )
        .line(1)
        .hint(hint)
    })
}

fn list_names(names: &[String]) -> String {
    const SHOW: usize = 12;
    let mut s = names
        .iter()
        .take(SHOW)
        .map(|n| format!("'{n}'"))
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > SHOW {
        s.push_str(&format!(", … ({} in all)", names.len()));
    }
    s
}

fn build(path: &Path, mut raw: RawTable, opts: &LoadOptions) -> Result<Dataset, DataError> {
    let target = match &opts.target {
        Some(name) => find_column(path, &raw.header, name, "the target")?,
        None => raw.header.len() - 1,
    };
    raw.read_as_text(target);
    let raw = raw;
    let header = &raw.header;
    let mut dropped_columns = Vec::new();
    let mut is_dropped = vec![false; header.len()];
    for name in &opts.drop {
        let j = find_column(path, header, name, "the --drop")?;
        if j == target {
            return Err(DataError::new(
                K::BadOption,
                path,
                format!("--drop '{name}' names the target column"),
            )
            .hint("choose another target with --target, or do not drop it"));
        }
        is_dropped[j] = true;
        dropped_columns.push(DroppedColumn {
            name: name.clone(),
            reason: "--drop".into(),
        });
    }
    let feature_cols: Vec<usize> = (0..header.len())
        .filter(|&j| j != target && !is_dropped[j])
        .collect();
    if feature_cols.is_empty() {
        return Err(DataError::new(
            K::NoFeatures,
            path,
            "no feature columns are left besides the target",
        )
        .hint("remove some --drop options"));
    }

    // The features parsed first, over every row: when every cell is a finite
    // number (the common case) none is missing, and the missing-cell pass
    // looks at the target alone. Otherwise the try stops at its first
    // unclean cell and the cells are parsed again over the complete rows.
    let every_row: Vec<usize> = (0..raw.n_rows()).collect();
    let first_try =
        Some(parse_columns(&raw, &every_row, &feature_cols, true)).filter(|p| p.clean());
    drop(every_row);
    // Missing cells: which rows go, and where.
    let needed: Vec<usize> = match first_try {
        Some(_) => vec![target],
        None => feature_cols.iter().copied().chain([target]).collect(),
    };
    let (kept, missing_by_column) = complete_rows(path, &raw, &needed, opts.missing)?;
    let dropped_rows = raw.n_rows() - kept.len();

    // Labels and the positive class (distinct raw cells counted, each
    // canonicalised once: no String per row).
    let all_kept = |i: usize| kept[i];
    let raw_labels = tally(&raw, kept.len(), &all_kept, target, &|_| true, usize::MAX)
        .expect("a tally without a limit");
    let mut label_counts: BTreeMap<String, usize> = BTreeMap::new();
    for (value, count) in &raw_labels {
        *label_counts.entry(canonical_label(value)).or_default() += count;
    }
    let target_name = &header[target];
    if kept.is_empty() {
        return Err(too_few_after_cleaning(
            path,
            target_name,
            &missing_by_column,
            raw.n_rows(),
        ));
    }
    let given = opts.target.is_some();
    let (positive_label, positive_rule) = choose_positive(
        path,
        target,
        target_name,
        &label_counts,
        opts.positive.as_deref(),
        &|| super::target::hint(&raw, target, given, &is_dropped),
    )?;
    let (target_rule, mut warnings) = super::target::describe(&raw, target, given);
    let positive_cells: Vec<&str> = raw_labels
        .iter()
        .filter(|(value, _)| canonical_label(value) == positive_label)
        .map(|(value, _)| *value)
        .collect();
    let y = is_one_of(&raw, kept.len(), &all_kept, target, &positive_cells);

    // Column types, checked over the kept rows.
    let TypedColumns {
        kinds,
        parsed,
        warnings: typing_warnings,
    } = match first_try {
        Some(parsed) if dropped_rows == 0 => judge(path, &raw, kept.len(), &feature_cols, parsed)?,
        other => {
            drop(other);
            column_kinds(path, &raw, &kept, &feature_cols)?
        }
    };
    warnings.extend(typing_warnings);
    let id_like = id_like_columns(header, &feature_cols, &kinds, &parsed);
    warnings.extend(id_like.iter().map(|c| c.warning()));
    let id_like: Vec<String> = id_like.into_iter().map(|c| c.name).collect();
    let mut rules = Vec::new();
    for (&j, kind) in feature_cols.iter().zip(&kinds) {
        let name = header[j].clone();
        match kind {
            ColumnKind::Numeric => rules.push(ColumnRule::Numeric { column: name }),
            ColumnKind::Text => {
                let levels: BTreeSet<&str> = kept.iter().map(|&r| raw.cell(r, j)).collect();
                if levels.len() > opts.max_levels {
                    let examples: Vec<String> =
                        levels.iter().take(3).map(|l| format!("'{l}'")).collect();
                    return Err(DataError::new(
                        K::TooManyLevels,
                        path,
                        format!(
                            "text column with {} distinct values (e.g. {}); at most {} can be one-hot encoded",
                            levels.len(),
                            examples.join(", "),
                            opts.max_levels
                        ),
                    )
                    .column(j, &name)
                    .hint(format!("if '{name}' is an identifier or free text, exclude it with --drop '{name}'")));
                }
                let mut levels: Vec<String> = levels.into_iter().map(String::from).collect();
                let mut other_levels = Vec::new();
                if levels.len() == 2 {
                    other_levels.push(levels.remove(0)); // a yes/no column is one indicator
                }
                rules.push(ColumnRule::OneHot {
                    column: name,
                    levels,
                    other_levels,
                });
            }
        }
    }

    let mut x = if kinds.iter().all(|k| matches!(k, ColumnKind::Numeric)) {
        parsed // the common case: no copy
    } else {
        assemble(&raw, &kept, &feature_cols, &kinds, &parsed, &rules)
    };
    let mut names: Vec<String> = rules.iter().flat_map(|r| r.feature_names()).collect();

    // Constant features carry no ranking information: drop them, and from the schema.
    let constant: Vec<usize> = (0..x.ncols())
        .filter(|&k| {
            let c = x.column(k);
            c.iter().all(|&v| v == c[0])
        })
        .collect();
    if !constant.is_empty() {
        let dropped: Vec<String> = constant.iter().map(|&k| names[k].clone()).collect();
        warnings.push(format!(
            "dropped {} constant column(s): {}",
            dropped.len(),
            dropped.join(", ")
        ));
        for n in &dropped {
            dropped_columns.push(DroppedColumn {
                name: n.clone(),
                reason: "constant".into(),
            });
        }
        rules = remove_features(rules, &dropped);
        x = x.remove_columns_at(&constant);
        names.retain(|n| !dropped.contains(n));
    }
    if names.is_empty() {
        return Err(
            DataError::new(K::NoFeatures, path, "every feature column is constant")
                .hint("nothing is left to rank with; check the file"),
        );
    }

    let n_pos = y.iter().filter(|&&b| b).count();
    let n_neg = y.len() - n_pos;
    if n_pos < 2 || n_neg < 2 {
        let (which, count) = if n_pos < 2 {
            ("positive", n_pos)
        } else {
            ("negative", n_neg)
        };
        let mut err = DataError::new(
            K::TooFewRows,
            path,
            format!("only {count} {which} row(s) left after cleaning (positive class: '{positive_label}'); at least 2 of each class are needed"),
        )
        .column(target, target_name);
        err.hint = Some(if dropped_rows > 0 {
            format!(
                "{dropped_rows} row(s) were dropped for missing values ({}); fill them in",
                describe_missing(&missing_by_column)
            )
        } else {
            "check --positive and the target column".to_string()
        });
        return Err(err);
    }
    if dropped_rows > 0 {
        warnings.push(format!(
            "dropped {dropped_rows} of {} row(s) with missing values ({})",
            raw.n_rows(),
            describe_missing(&missing_by_column)
        ));
    }

    // Report the encodings that survived the constant-column drop.
    let encoded: Vec<EncodedColumn> = rules
        .iter()
        .filter_map(|r| match r {
            ColumnRule::OneHot { column, levels, .. } => Some(EncodedColumn {
                column: column.clone(),
                levels: levels.clone(),
                features: r.feature_names(),
            }),
            ColumnRule::Numeric { .. } => None,
        })
        .collect();
    let schema = Schema {
        target: target_name.clone(),
        positive_label: positive_label.clone(),
        rules,
    };
    let summary = summarize(&names, &x);
    let report = CleaningReport {
        delimiter: raw.layout_name().to_string(),
        rows_read: raw.n_rows(),
        rows_kept: y.len(),
        dropped_rows,
        missing_by_column,
        dropped_columns,
        encoded,
        target_rule,
        positive_rule,
        id_like,
        label_counts,
        warnings,
    };
    Ok(Dataset {
        path: path.to_path_buf(),
        fingerprint: raw.fingerprint,
        names,
        x,
        y,
        schema,
        report,
        summary,
    })
}

/// Features from parsed numeric columns and one-hot encoded text columns.
fn assemble(
    raw: &RawTable,
    kept: &[usize],
    cols: &[usize],
    kinds: &[ColumnKind],
    parsed: &DMatrix<f64>,
    rules: &[ColumnRule],
) -> DMatrix<f64> {
    let width: usize = rules.iter().map(|r| r.feature_names().len()).sum();
    let mut x = DMatrix::<f64>::zeros(kept.len(), width);
    let mut k0 = 0;
    // `rules` follow `cols` one to one at this point (nothing dropped yet).
    for (f, (rule, kind)) in rules.iter().zip(kinds).enumerate() {
        match (rule, kind) {
            (ColumnRule::Numeric { .. }, _) => {
                x.column_mut(k0).copy_from(&parsed.column(f));
                k0 += 1;
            }
            (ColumnRule::OneHot { levels, .. }, _) => {
                for (i, &r) in kept.iter().enumerate() {
                    if let Some(l) = levels.iter().position(|l| l == raw.cell(r, cols[f])) {
                        x[(i, k0 + l)] = 1.0;
                    }
                }
                k0 += levels.len();
            }
        }
    }
    x
}

fn encode_rows(
    path: &Path,
    raw: &RawTable,
    rows: &[usize],
    rules: &[ColumnRule],
    col_index: &[usize],
) -> Result<DMatrix<f64>, DataError> {
    let width: usize = rules.iter().map(|r| r.feature_names().len()).sum();
    // Rows outer (cache-friendly on the cells), written straight into column-major storage.
    let n = rows.len();
    let mut x = DMatrix::<f64>::zeros(n, width);
    let data = x.as_mut_slice();
    for (i, &r) in rows.iter().enumerate() {
        let mut k0 = 0;
        for (rule, &j) in rules.iter().zip(col_index) {
            if let Some(values) = raw.numbers(j) {
                // A number column of a columnar file (rows are complete here).
                let v = values[r];
                if !v.is_finite() {
                    return Err(DataError::new(
                        K::NonFinite,
                        path,
                        format!("non-finite number '{v}'"),
                    )
                    .line(raw.lines[r])
                    .column(j, rule.column())
                    .hint(
                        "replace it with a finite value, or leave the cell empty to drop the row",
                    ));
                }
                data[k0 * n + i] = v;
                k0 += 1;
                continue;
            }
            let cell = raw.cell(r, j);
            match rule {
                ColumnRule::Numeric { column } => {
                    let v: f64 = parse_number(cell, raw.decimal_comma()).ok_or_else(|| {
                        DataError::new(K::NotNumeric, path, format!("'{cell}' is not a number"))
                            .line(raw.lines[r])
                            .column(j, column)
                            .hint("this column is numeric in the training file; fix the value or leave it empty")
                    })?;
                    if !v.is_finite() {
                        return Err(DataError::new(K::NonFinite, path, format!("non-finite number '{cell}'"))
                            .line(raw.lines[r])
                            .column(j, column)
                            .hint("replace it with a finite value, or leave the cell empty to drop the row"));
                    }
                    data[k0 * n + i] = v;
                    k0 += 1;
                }
                ColumnRule::OneHot { levels, .. } => {
                    if let Some(l) = levels.iter().position(|l| l == cell) {
                        data[(k0 + l) * n + i] = 1.0;
                    }
                    k0 += levels.len();
                }
            }
        }
    }
    Ok(x)
}

fn remove_features(rules: Vec<ColumnRule>, dropped: &[String]) -> Vec<ColumnRule> {
    rules
        .into_iter()
        .filter_map(|rule| match rule {
            ColumnRule::Numeric { ref column } => (!dropped.contains(column)).then_some(rule),
            ColumnRule::OneHot {
                column,
                levels,
                mut other_levels,
            } => {
                let (gone, levels): (Vec<String>, Vec<String>) = levels
                    .into_iter()
                    .partition(|l| dropped.contains(&format!("{column}={l}")));
                other_levels.extend(gone);
                (!levels.is_empty()).then_some(ColumnRule::OneHot {
                    column,
                    levels,
                    other_levels,
                })
            }
        })
        .collect()
}

fn build_with_schema(
    path: &Path,
    mut raw: RawTable,
    schema: &Schema,
    missing: MissingPolicy,
) -> Result<Dataset, DataError> {
    let target = find_column(path, &raw.header, &schema.target, "the target")?;
    raw.read_as_text(target);
    let mut cols = Vec::new();
    for rule in &schema.rules {
        cols.push(find_column(
            path,
            &raw.header,
            rule.column(),
            "the training file's",
        )?);
    }
    let needed: Vec<usize> = cols
        .iter()
        .copied()
        .chain(std::iter::once(target))
        .collect();
    let (kept, missing_by_column) = complete_rows(path, &raw, &needed, missing)?;
    let x = encode_rows(path, &raw, &kept, &schema.rules, &cols)?;
    let mut warnings = Vec::new();
    for (rule, &j) in schema.rules.iter().zip(&cols) {
        if let ColumnRule::OneHot {
            column,
            levels,
            other_levels,
        } = rule
        {
            let known = |v: &str| levels.iter().chain(other_levels).any(|l| l == v);
            let unseen = kept.iter().filter(|&&r| !known(raw.cell(r, j))).count();
            if unseen > 0 {
                warnings.push(format!("{unseen} row(s) have a value of '{column}' not seen in training (encoded as all zeros)"));
            }
        }
    }
    let mut label_counts: BTreeMap<String, usize> = BTreeMap::new();
    let y: Vec<bool> = kept
        .iter()
        .map(|&r| {
            let l = canonical_label(raw.cell(r, target));
            let pos = l == schema.positive_label;
            *label_counts.entry(l).or_default() += 1;
            pos
        })
        .collect();
    let n_pos = y.iter().filter(|&&b| b).count();
    if n_pos == 0 || n_pos == y.len() {
        return Err(DataError::new(
            K::OneClass,
            path,
            format!(
                "after cleaning, every row of this file is {} (positive class: '{}')",
                if n_pos == 0 { "negative" } else { "positive" },
                schema.positive_label
            ),
        )
        .column(target, &schema.target)
        .hint("a test file needs rows of both classes for an AUC"));
    }
    let dropped_rows = raw.n_rows() - kept.len();
    if dropped_rows > 0 {
        warnings.push(format!(
            "dropped {dropped_rows} row(s) with missing values ({})",
            describe_missing(&missing_by_column)
        ));
    }
    let names = schema.feature_names();
    let summary = summarize(&names, &x);
    let report = CleaningReport {
        delimiter: raw.layout_name().to_string(),
        rows_read: raw.n_rows(),
        rows_kept: kept.len(),
        dropped_rows,
        missing_by_column,
        dropped_columns: Vec::new(),
        encoded: Vec::new(),
        target_rule: format!("'{}' (from the training file)", schema.target),
        positive_rule: format!("'{}' (from the training file)", schema.positive_label),
        id_like: Vec::new(),
        label_counts,
        warnings,
    };
    Ok(Dataset {
        path: path.to_path_buf(),
        fingerprint: raw.fingerprint,
        names,
        x,
        y,
        schema: schema.clone(),
        report,
        summary,
    })
}
