//! `pacauc bench-risk --rows N`: the importance-sampling check's hot path —
//! exact R_n(θ) of a block of draws near one θ, by GEMM and the bucket kernel
//! (`is_check::risks::risks_of`) — timed on N synthetic rows and set against
//! the cost model's estimate (`spec::cost::risk_seconds`), so the model's
//! per-row figures can be checked on any machine and size (not a timed test).

use std::time::Instant;

use clap::Args;
use nalgebra::DMatrix;
use rayon::prelude::*;

use super::bench_ep::{cpu_ns, peak_mb};
use super::fit::CliError;
use crate::engine::is_check::risks::risks_of;
use crate::engine::numerics::rng::{normal, stream};
use crate::engine::prior::Prior;
use crate::engine::problem::Problem;
use crate::spec::cost::{Sizes, risk_seconds};

#[derive(Debug, Clone, Args)]
pub struct BenchRiskArgs {
    /// Training rows of the synthetic problem.
    #[arg(long, value_name = "N")]
    pub rows: usize,
    #[arg(long, default_value_t = 20, value_name = "D")]
    pub features: usize,
    /// Draws θ (one exact risk each) per timed run.
    #[arg(long, default_value_t = 64, value_name = "K")]
    pub draws: usize,
    #[arg(long, default_value_t = 0.25)]
    pub positive_share: f64,
    /// Timed runs (the median is reported).
    #[arg(long, default_value_t = 3, value_name = "R")]
    pub repeat: usize,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

/// A probit-linear problem (θ_k = ±1/√k on the first half of the features)
/// and `draws` θs around the truth (sd 0.05, a concentrated posterior).
fn problem(a: &BenchRiskArgs) -> Result<(Problem, Vec<Vec<f64>>), CliError> {
    let (n, d) = (a.rows, a.features);
    let mut x = DMatrix::<f64>::zeros(n, d);
    x.as_mut_slice()
        .par_chunks_mut(n)
        .enumerate()
        .for_each(|(k, col)| {
            let mut r = stream(a.seed, &[k as u64]);
            col.iter_mut().for_each(|v| *v = normal(&mut r));
        });
    let truth: Vec<f64> = (0..d)
        .map(|k| {
            let sign = if k % 2 == 0 { 1.0 } else { -1.0 };
            if k < d.div_ceil(2) {
                sign / ((k + 1) as f64).sqrt()
            } else {
                0.0
            }
        })
        .collect();
    use statrs::distribution::ContinuousCDF;
    let q = statrs::distribution::Normal::standard().inverse_cdf(1.0 - a.positive_share);
    let scale = truth.iter().map(|t| t * t).sum::<f64>() + 1.0;
    let y: Vec<bool> = (0..n)
        .into_par_iter()
        .map(|i| {
            let mut r = stream(a.seed, &[d as u64, i as u64]);
            let s: f64 = (0..d).map(|k| x[(i, k)] * truth[k]).sum();
            s + normal(&mut r) > q * scale.sqrt()
        })
        .collect();
    let mut r = stream(a.seed, &[u64::MAX]);
    let thetas = (0..a.draws)
        .map(|_| truth.iter().map(|t| t + 0.05 * normal(&mut r)).collect())
        .collect();
    let names = (0..d).map(|k| format!("x{k}")).collect();
    let pb = Problem::new(names, x, y, n as f64, Prior::Gaussian { var: 1.0 })
        .map_err(|e| CliError::Input(e.to_string()))?;
    Ok((pb, thetas))
}

pub fn run(a: &BenchRiskArgs) -> Result<(), CliError> {
    if a.rows < 2 || a.features == 0 || a.draws == 0 || a.repeat == 0 {
        return Err(CliError::Input(
            "bench-risk needs --rows ≥ 2, --features ≥ 1, --draws ≥ 1 and --repeat ≥ 1".into(),
        ));
    }
    if !(a.positive_share > 0.0 && a.positive_share < 1.0) {
        return Err(CliError::Input("--positive-share must be in (0, 1)".into()));
    }
    let (pb, thetas) = problem(a)?;
    let refs: Vec<&[f64]> = thetas.iter().map(|t| t.as_slice()).collect();
    let mut runs = Vec::new();
    for _ in 0..a.repeat {
        let (t, c) = (Instant::now(), cpu_ns());
        std::hint::black_box(risks_of(&pb, &refs));
        runs.push((t.elapsed().as_secs_f64(), (cpu_ns() - c) as f64 * 1e-9));
    }
    runs.sort_by(|p, q| p.1.total_cmp(&q.1));
    let (wall, cpu) = runs[runs.len() / 2];
    let positives = pb.y.iter().filter(|&&b| b).count();
    let model = risk_seconds(Sizes {
        rows: a.rows,
        positives,
        features: a.features,
    });
    let per_draw = cpu / a.draws as f64;
    println!(
        "bench-risk: {} rows × {} features ({positives} positives), {} draws, {} thread(s): \
         median of {} runs {:.3} CPU s ({:.1} ns per row and draw), {:.3} s wall; \
         cost model {:.1} ns per row and draw (measured/model {:.2}); peak {:.0} MB",
        a.rows,
        a.features,
        a.draws,
        rayon::current_num_threads(),
        a.repeat,
        cpu,
        per_draw / a.rows as f64 * 1e9,
        wall,
        model / a.rows as f64 * 1e9,
        per_draw / model,
        peak_mb()
    );
    Ok(())
}
