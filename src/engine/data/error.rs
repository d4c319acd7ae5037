//! Errors of data loading: every one names the file, and where it can, the line
//! and column, and says what to do about it.

use std::fmt;
use std::path::{Path, PathBuf};

/// What went wrong, as a machine-checkable kind (tests match on it; users read
/// the message).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DataErrorKind {
    Unreadable,
    Empty,
    NotUtf8,
    BadHeader,
    DuplicateHeader,
    RaggedRow,
    UnknownColumn,
    OneClass,
    TooManyClasses,
    UnknownPositive,
    TooFewRows,
    TooManyLevels,
    NotNumeric,
    NonFinite,
    Missing,
    SchemaMismatch,
    NoFeatures,
    BadOption,
}

/// A data error with its location and a hint. `Display` gives the full,
/// self-contained message. (Boxed: errors are rare, `Result`s are everywhere.)
#[derive(Debug, Clone)]
pub struct DataError(Box<DataErrorDetails>);

#[derive(Debug, Clone)]
pub struct DataErrorDetails {
    pub kind: DataErrorKind,
    pub path: PathBuf,
    /// 1-based line number in the file (a row number in a columnar file).
    pub line: Option<u64>,
    /// Whether `line` counts rows of a columnar file rather than lines.
    pub counts_rows: bool,
    /// 1-based column number and the column's header name.
    pub column: Option<(usize, String)>,
    pub message: String,
    pub hint: Option<String>,
}

impl DataError {
    pub fn new(kind: DataErrorKind, path: &Path, message: impl Into<String>) -> Self {
        DataError(Box::new(DataErrorDetails {
            kind,
            path: path.to_path_buf(),
            line: None,
            counts_rows: false,
            column: None,
            message: message.into(),
            hint: None,
        }))
    }

    pub fn line(mut self, line: u64) -> Self {
        self.0.line = Some(line);
        self
    }

    pub fn column(mut self, index0: usize, name: &str) -> Self {
        self.0.column = Some((index0 + 1, name.to_string()));
        self
    }

    /// The error of a columnar file: its `line` is a row number.
    pub fn rows_if(mut self, columnar: bool) -> Self {
        self.0.counts_rows |= columnar;
        self
    }

    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.0.hint = Some(hint.into());
        self
    }
}

impl std::ops::Deref for DataError {
    type Target = DataErrorDetails;
    fn deref(&self) -> &DataErrorDetails {
        &self.0
    }
}

impl std::ops::DerefMut for DataError {
    fn deref_mut(&mut self) -> &mut DataErrorDetails {
        &mut self.0
    }
}

impl fmt::Display for DataError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.path.display())?;
        if let Some(line) = self.line {
            let unit = if self.counts_rows { "row" } else { "line" };
            write!(f, ", {unit} {line}")?;
        }
        if let Some((col, name)) = &self.column {
            write!(f, ", column {col} ('{name}')")?;
        }
        write!(f, ": {}", self.message)?;
        if let Some(hint) = &self.hint {
            write!(f, "\n  hint: {hint}")?;
        }
        Ok(())
    }
}

impl std::error::Error for DataError {}
