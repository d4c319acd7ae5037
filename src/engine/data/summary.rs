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
    let n = x.nrows();
    // Columns in parallel, each summed in row order (the same bits as serially).
    names
        .par_iter()
        .enumerate()
        .map(|(k, name)| column_summary(name, &x.as_slice()[k * n..(k + 1) * n]))
        .collect()
}

/// One column in two passes (the summaries of a 10⁷-row table were half its
/// load when each statistic took a pass of its own): magnitude, extremes and
/// the plain sum; then the squared deviations and the histogram. The sums run
/// in row order from −0.0, as `Iterator::sum` does, so every bit is as
/// `moments::mean_sd`'s.
fn column_summary(name: &str, col: &[f64]) -> FeatureSummary {
    let (mut scale, mut min, mut max, mut sum) = (0.0f64, f64::INFINITY, f64::NEG_INFINITY, -0.0);
    for &v in col {
        scale = scale.max(v.abs());
        min = min.min(v);
        max = max.max(v);
        sum += v;
    }
    // Bin on scaled values: max − min overflows for a column spanning ±1e308.
    let (lo, hi) = (min / 2.0, max / 2.0);
    let width = (hi - lo) / HIST_BINS as f64;
    let bin = |v: f64| {
        let b = if width > 0.0 {
            ((v / 2.0 - lo) / width) as usize
        } else {
            0
        };
        b.min(HIST_BINS - 1)
    };
    // Four interleaved histograms: consecutive rows in one bin would otherwise
    // wait on each other's count.
    let mut hists = [[0u32; HIST_BINS]; 4];
    let nf = col.len() as f64;
    let ordinary = !col.is_empty() && (1e-100..=1e100).contains(&scale);
    let (mean, sd) = if ordinary {
        let mean = sum / nf;
        let mut var = -0.0;
        let mut quads = col.chunks_exact(4);
        for q in &mut quads {
            for (h, &v) in hists.iter_mut().zip(q) {
                var += (v - mean) * (v - mean);
                h[bin(v)] += 1;
            }
        }
        for &v in quads.remainder() {
            var += (v - mean) * (v - mean);
            hists[0][bin(v)] += 1;
        }
        (mean, (var / nf).sqrt())
    } else {
        for &v in col {
            hists[0][bin(v)] += 1;
        }
        super::moments::mean_sd(col.iter().copied())
    };
    let hist = (0..HIST_BINS)
        .map(|b| hists.iter().map(|h| h[b]).sum())
        .collect();
    FeatureSummary {
        name: name.to_string(),
        mean,
        sd,
        min,
        max,
        hist,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::numerics::rng::{normal, stream};

    /// The one-statistic-a-pass summary this module's fused passes replaced.
    fn by_passes(name: &str, col: &[f64]) -> FeatureSummary {
        let (mean, sd) = super::super::moments::mean_sd(col.iter().copied());
        let min = col.iter().copied().fold(f64::INFINITY, f64::min);
        let max = col.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let mut hist = vec![0u32; HIST_BINS];
        let (lo, hi) = (min / 2.0, max / 2.0);
        let width = (hi - lo) / HIST_BINS as f64;
        for &v in col {
            let b = if width > 0.0 {
                ((v / 2.0 - lo) / width) as usize
            } else {
                0
            };
            hist[b.min(HIST_BINS - 1)] += 1;
        }
        let name = name.to_string();
        FeatureSummary {
            name,
            mean,
            sd,
            min,
            max,
            hist,
        }
    }

    /// Every bit as before, on columns of every kind: a record's summary
    /// must not change with the code that computes it.
    #[test]
    fn the_fused_passes_give_the_same_bits() {
        let mut r = stream(3, &[17]);
        let mut cols: Vec<Vec<f64>> = Vec::new();
        for n in [0, 1, 3, 4, 5, 1001] {
            cols.push((0..n).map(|_| normal(&mut r)).collect());
        }
        for scale in [1e-300, 1e-120, 1e120, 1e307] {
            cols.push((0..257).map(|_| normal(&mut r) * scale).collect());
        }
        cols.push(vec![2.5; 99]);
        cols.push(vec![-0.0; 8]);
        cols.push((0..500).map(|i| (i % 3) as f64).collect());
        cols.push(
            (0..300)
                .map(|_| (normal(&mut r) * 3.0).round().abs())
                .collect(),
        );
        cols.push(vec![-1.7e308, 1.7e308, 0.0, 1.0, -1.0]);
        for (k, c) in cols.iter().enumerate() {
            let (a, b) = (column_summary("x", c), by_passes("x", c));
            assert_eq!(a.mean.to_bits(), b.mean.to_bits(), "column {k}");
            assert_eq!(a.sd.to_bits(), b.sd.to_bits(), "column {k}");
            assert_eq!(a.min.to_bits(), b.min.to_bits(), "column {k}");
            assert_eq!(a.max.to_bits(), b.max.to_bits(), "column {k}");
            assert_eq!(a.hist, b.hist, "column {k}");
        }
    }
}
