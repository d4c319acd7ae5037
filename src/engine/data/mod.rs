//! Data: CSV → typed `Dataset` (schema inference, cleaning report, summaries),
//! standardisation, stratified splits and folds, demo data.

mod csv_read;
pub mod demo;
mod error;
pub mod label_noise;
mod labels;
mod load;
pub mod prepare;
mod schema;
mod summary;
mod typing;

pub use csv_read::is_missing;
pub use error::{DataError, DataErrorDetails, DataErrorKind};
pub use load::{CleaningReport, Dataset, DroppedColumn, EncodedColumn, LoadOptions, MissingPolicy};
pub use prepare::{Labeled, Prepared, SplitInfo, Standardizer, TestSource, prepare};
pub use schema::{ColumnRule, Schema, canonical_label};
pub use summary::{FeatureSummary, HIST_BINS};
