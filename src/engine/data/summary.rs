//! Per-feature summary statistics for the dataset pane and the report.

use nalgebra::DMatrix;
use serde::{Deserialize, Serialize};

/// Number of histogram bins in a feature summary.
pub const HIST_BINS: usize = 12;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FeatureSummary {
    pub name: String,
    pub mean: f64,
    /// Population sd (ddof = 0), as used for standardisation.
    pub sd: f64,
    pub min: f64,
    pub max: f64,
    /// Counts in `HIST_BINS` equal-width bins over [min, max].
    pub hist: Vec<u32>,
}

pub fn summarize(names: &[String], x: &DMatrix<f64>) -> Vec<FeatureSummary> {
    use rayon::prelude::*;
    // Columns in parallel, each summed in row order (the same bits as serially).
    names
        .par_iter()
        .enumerate()
        .map(|(k, name)| {
            let col = x.column(k);
            let (mean, sd) = super::moments::mean_sd(col.iter().copied());
            let min = col.iter().copied().fold(f64::INFINITY, f64::min);
            let max = col.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let mut hist = vec![0u32; HIST_BINS];
            // Bin on scaled values: max − min overflows for a column spanning ±1e308.
            let (lo, hi) = (min / 2.0, max / 2.0);
            let width = (hi - lo) / HIST_BINS as f64;
            for &v in col.iter() {
                let b = if width > 0.0 {
                    ((v / 2.0 - lo) / width) as usize
                } else {
                    0
                };
                hist[b.min(HIST_BINS - 1)] += 1;
            }
            FeatureSummary {
                name: name.clone(),
                mean,
                sd,
                min,
                max,
                hist,
            }
        })
        .collect()
}
