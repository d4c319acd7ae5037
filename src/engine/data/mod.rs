//! Data: CSV → typed `Dataset` (schema inference, cleaning report, summaries),
//! standardisation, stratified splits and folds, demo data.

mod apply;
mod arrow_read;
#[cfg(test)]
mod arrow_read_tests;
mod columnar;
mod csv_cells;
mod csv_read;
pub mod demo;
mod error;
mod identifiers;
pub mod label_noise;
mod labels;
mod load;
mod missing;
mod moments;
mod numbers;
pub mod prepare;
mod progress;
mod schema;
mod summary;
pub mod survey;
pub mod synthetic;
mod tally;
mod target;
mod typing;

pub use apply::{RowsToScore, read_rows_to_score, rows_to_score_of_bytes};
#[doc(hidden)]
pub use csv_read::fast_equals_csv;
pub use error::{DataError, DataErrorDetails, DataErrorKind};
pub use load::{CleaningReport, Dataset, DroppedColumn, EncodedColumn, LoadOptions, MissingPolicy};
pub use moments::{max_abs, mean_sd, standardize};
pub use numbers::{is_missing, parse_f64};
pub use prepare::{Labeled, Prepared, SplitInfo, Standardizer, TestSource, prepare};
pub use progress::{LoadProgress, LoadSnapshot, LoadStage};
pub use schema::{ColumnRule, Schema, canonical_label};
pub use summary::{FeatureSummary, HIST_BINS};
