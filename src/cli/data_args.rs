//! Options shared by every command that reads a CSV: what the target is, which
//! class is positive, which columns to drop, how to split.

use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};

use crate::engine::data::{Dataset, LoadOptions, MissingPolicy, Prepared, TestSource, prepare};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum MissingArg {
    /// Drop rows with a missing cell (counted in the report).
    Drop,
    /// Stop with an error at the first missing cell.
    Error,
}

#[derive(Debug, Clone, Args)]
pub struct DataArgs {
    /// CSV file with a header row; the target is the last column unless --target.
    pub data: PathBuf,
    /// Target column (default: the last column).
    #[arg(long, value_name = "COL")]
    pub target: Option<String>,
    /// Label of the positive class (default: 1 for 0/1 or -1/1 labels, else the rarer of two values).
    #[arg(long, value_name = "VALUE")]
    pub positive: Option<String>,
    /// Column to exclude, e.g. an ID (repeatable).
    #[arg(long, value_name = "COL")]
    pub drop: Vec<String>,
    /// Rows with missing cells (empty, NA, NaN, ?, null): drop them or stop.
    #[arg(long, value_enum, default_value = "drop")]
    pub missing: MissingArg,
    /// Share of rows held out (stratified) for the test AUC; 0 = no test set.
    #[arg(long, default_value_t = 0.25, value_name = "FRAC")]
    pub test_frac: f64,
    /// Seed of the split and of every random choice of the run.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Test file (same columns) used instead of a split; the training file's encoding and standardisation apply.
    #[arg(long, value_name = "TEST.csv")]
    pub test: Option<PathBuf>,
}

impl DataArgs {
    pub fn load_options(&self) -> LoadOptions {
        LoadOptions {
            target: self.target.clone(),
            positive: self.positive.clone(),
            drop: self.drop.clone(),
            missing: match self.missing {
                MissingArg::Drop => MissingPolicy::DropRows,
                MissingArg::Error => MissingPolicy::Error,
            },
            ..LoadOptions::default()
        }
    }

    /// Loads the file(s) and prepares the standardised split.
    pub fn load(&self) -> Result<(Dataset, Prepared), String> {
        let ds = Dataset::load(&self.data, &self.load_options()).map_err(|e| e.to_string())?;
        let prepared = match &self.test {
            Some(path) => {
                let test = Dataset::load_with_schema(path, &ds.schema, self.load_options().missing)
                    .map_err(|e| e.to_string())?;
                prepare(&ds, TestSource::File(&test))
            }
            None => prepare(
                &ds,
                TestSource::Split {
                    frac: self.test_frac,
                    seed: self.seed,
                },
            ),
        }
        .map_err(|e| format!("{}: {e}", display(&self.data)))?;
        Ok((ds, prepared))
    }
}

fn display(p: &Path) -> String {
    p.display().to_string()
}
