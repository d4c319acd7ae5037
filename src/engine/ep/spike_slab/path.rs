//! The regularisation path (RACL14 Fig. 3a): spike-and-slab EP over a grid of
//! spike variances v0 (v1 and p fixed), each run warm-started from the last,
//! from the widest spike (closest to a Gaussian prior) to the narrowest.

use std::time::Instant;

use nalgebra::DMatrix;
use serde::Serialize;

use super::model::{SpikeSlab, SpikeSlabEp};
use super::release::ReleaseStatus;
use super::sweep::{SsSettings, SsSweepInfo};
use crate::engine::ep::design::Design;
use crate::engine::ep::store::Precision;
use crate::engine::interface::{Control, EngineError};

/// `n` spike variances log-spaced over [1e-6·v1, 0.1·v1], ascending.
pub fn spike_var_grid(slab_var: f64, n: usize) -> Vec<f64> {
    let (lo, hi) = (1e-6f64, 0.1f64);
    match n {
        0 => Vec::new(),
        1 => vec![hi * slab_var],
        _ => (0..n)
            .map(|i| match i {
                0 => lo * slab_var,
                i if i == n - 1 => hi * slab_var,
                i => slab_var * lo * (hi / lo).powf(i as f64 / (n - 1) as f64),
            })
            .collect(),
    }
}

/// One spike variance of the path.
#[derive(Debug, Clone, Serialize)]
pub struct PathPoint {
    pub spike_var: f64,
    pub converged: bool,
    /// Why EP failed at this v0 (then the moments are empty).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub sweeps: usize,
    pub seconds: f64,
    pub log_evidence: Option<f64>,
    pub mean: Vec<f64>,
    pub sd: Vec<f64>,
    pub inclusion: Vec<f64>,
    /// EP continued without the negative-site fix to a true fixed point.
    pub released: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct PathResult {
    pub gamma: f64,
    pub slab_var: f64,
    pub incl: f64,
    /// Points in ascending v0.
    pub points: Vec<PathPoint>,
    pub seconds: f64,
}

/// Runs EP at every spike variance of `grid`; a point where EP does not
/// converge is reported as such and the path goes on (from the last good state).
#[allow(clippy::too_many_arguments)]
pub fn run(
    x: &DMatrix<f64>,
    y: &[bool],
    gamma: f64,
    slab_var: f64,
    incl: f64,
    grid: &[f64],
    s: &SsSettings,
    precision: Precision,
    release_fixes: bool,
    ctl: &Control,
    on_point: &mut dyn FnMut(&PathPoint),
    on_sweep: &mut dyn FnMut(&SsSweepInfo<'_>, &Design),
) -> Result<PathResult, EngineError> {
    let t0 = Instant::now();
    if grid.is_empty() {
        return Err(EngineError::InvalidParams(
            "the spike-variance grid is empty".into(),
        ));
    }
    let prior_at = |spike_var: f64| SpikeSlab {
        spike_var,
        slab_var,
        incl,
    };
    for &v0 in grid {
        prior_at(v0)
            .validate(x.ncols())
            .map_err(EngineError::InvalidParams)?;
    }
    let mut order: Vec<usize> = (0..grid.len()).collect();
    order.sort_by(|&a, &b| grid[b].total_cmp(&grid[a]));
    let mut model = SpikeSlabEp::new(x, y, prior_at(grid[order[0]]), precision)?;
    model.set_release_fixes(release_fixes);
    let mut points: Vec<(usize, PathPoint)> = Vec::with_capacity(grid.len());
    for &i in &order {
        let t = Instant::now();
        model.set_prior(prior_at(grid[i]))?;
        let point = match model.run(gamma, s, ctl, on_sweep) {
            Ok(out) => PathPoint {
                spike_var: grid[i],
                converged: true,
                error: None,
                sweeps: out.sweeps,
                seconds: t.elapsed().as_secs_f64(),
                log_evidence: out.evidence.log_z(),
                mean: model.mean(),
                sd: model.sd(),
                inclusion: out.inclusion,
                released: matches!(model.release(), ReleaseStatus::Released(_)),
            },
            Err(EngineError::NotConverged { message, .. }) => PathPoint {
                spike_var: grid[i],
                converged: false,
                error: Some(message),
                sweeps: 0,
                seconds: t.elapsed().as_secs_f64(),
                log_evidence: None,
                mean: Vec::new(),
                sd: Vec::new(),
                inclusion: Vec::new(),
                released: false,
            },
            Err(e) => return Err(e),
        };
        on_point(&point);
        points.push((i, point));
    }
    points.sort_by(|a, b| grid[a.0].total_cmp(&grid[b.0]));
    Ok(PathResult {
        gamma,
        slab_var,
        incl,
        points: points.into_iter().map(|(_, p)| p).collect(),
        seconds: t0.elapsed().as_secs_f64(),
    })
}
