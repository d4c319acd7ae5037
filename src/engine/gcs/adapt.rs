//! The warm-up's adaptation of the circles' directions (`directions`). The
//! chains record their directions from W/8 on; Σ is estimated from the pooled
//! window just ended at W/4, W/2 and W, each window moving with the previous
//! estimate, so later ones see the posterior explored by shaped circles. A
//! posterior that uniform circles explore slowly (a small elongated cap) is
//! badly estimated by a short warm-up, so while two consecutive estimates
//! differ by more than a factor `STABLE` in a typical direction's variance the
//! warm-up doubles (a new window as long as the warm-up so far), up to a
//! quarter of the step cap. Then Σ is fixed: the kept draws come from one
//! time-homogeneous, exact chain. Every decision reads the chains in index
//! order, so it does not depend on the thread count.

use std::sync::Arc;

use serde::Serialize;

use super::chain::Chain;
use super::design::Design;
use super::directions::{Shape, ShapeSummary};
use super::reference::Reference;
use super::settings::{Directions, GcsSettings};

/// A shorter warm-up keeps uniform directions: its windows would hold a
/// handful of steps per chain.
pub const MIN_ADAPT_WARMUP: usize = 40;
/// Above this many dimensions the directions stay uniform: a shaped direction
/// costs O(d²) per step (against the pass over the pairs) and O(d³) per
/// estimate, and the warm-up's few thousand draws would leave Σ mostly
/// shrinkage.
pub const MAX_ADAPT_DIM: usize = 400;
/// Consecutive estimates agree when a typical direction's variance moved by
/// less than this factor (the root mean square of the log generalised
/// eigenvalues ≤ ln STABLE; the largest one is noisy in many dimensions).
pub const STABLE: f64 = 1.5;

/// One estimate of Σ and how far it moved from the previous one.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Estimate {
    #[serde(flatten)]
    pub shape: ShapeSummary,
    /// The typical and the largest factor by which a direction's variance
    /// changed from the previous estimate (None for the first).
    pub change: Option<f64>,
    pub change_max: Option<f64>,
}

/// What happened at the end of a batch.
pub enum Outcome {
    Nothing,
    Adapted { estimate: Estimate, fixed: bool },
    Extended { estimate: Estimate, warmup: usize },
    Failed,
}

#[derive(Debug)]
pub struct Adaptation {
    /// The warm-up, possibly extended.
    pub warmup: usize,
    cap: usize,
    start: usize,
    points: Vec<usize>,
    last: Option<Arc<Shape>>,
    /// Ellipses around a Gaussian reference instead of shaped tangents.
    gaussian: bool,
    last_reference: Option<Arc<Reference>>,
    pub estimates: Vec<Estimate>,
}

impl Adaptation {
    /// The plan for these settings in d dimensions; Err: why the directions
    /// stay uniform (Ok(None): uniform was asked).
    pub fn plan(settings: &GcsSettings, d: usize) -> Result<Option<Adaptation>, String> {
        if settings.directions == Directions::Uniform {
            return Ok(None);
        }
        let w = settings.warmup;
        let gaussian = settings.directions == Directions::Gaussian;
        if d < 3 && !gaussian {
            return Err("in 2 dimensions every tangent direction gives the same circle".into());
        }
        if d > MAX_ADAPT_DIM {
            return Err(format!(
                "above {MAX_ADAPT_DIM} dimensions ({d}) shaped directions cost O(d²) per step \
                 and their covariance would be mostly shrinkage"
            ));
        }
        if w < MIN_ADAPT_WARMUP {
            return Err(format!(
                "a warm-up of {w} steps is too short to estimate the directions' covariance \
                 (at least {MIN_ADAPT_WARMUP})"
            ));
        }
        Ok(Some(Adaptation {
            warmup: w,
            cap: (settings.max_steps / 4).max(w),
            start: w / 8,
            points: vec![w / 4, w / 2, w],
            last: None,
            gaussian,
            last_reference: None,
            estimates: Vec::new(),
        }))
    }

    /// The next step at which a batch must end (recording start or estimate).
    pub fn next_point(&self, steps: usize) -> Option<usize> {
        std::iter::once(self.start)
            .chain(self.points.iter().copied())
            .find(|&p| p > steps)
    }

    /// After a batch ending at `steps`.
    pub fn after_batch(&mut self, chains: &mut [Chain], design: &Design, steps: usize) -> Outcome {
        let d = design.d();
        if steps == self.start {
            chains.iter_mut().for_each(|c| c.recording = true);
            return Outcome::Nothing;
        }
        if !self.points.contains(&steps) {
            return Outcome::Nothing;
        }
        let pooled: Vec<f64> = chains
            .iter()
            .flat_map(|c| c.window.iter().copied())
            .collect();
        chains.iter_mut().for_each(|c| c.window.clear());
        let fail = |chains: &mut [Chain]| {
            if steps == self.warmup {
                chains.iter_mut().for_each(|c| c.recording = false);
            }
            Outcome::Failed
        };
        let (summary, moved) = if self.gaussian {
            let Some(r) = Reference::estimate(&pooled, d, steps) else {
                return fail(chains);
            };
            let r = Arc::new(r);
            let moved = self.last_reference.as_ref().map(|l| l.discrepancy(&r));
            for c in chains.iter_mut() {
                c.set_reference(design, r.clone());
            }
            self.last_reference = Some(r.clone());
            (r.summary, moved)
        } else {
            let Some(shape) = Shape::estimate(&pooled, d, steps) else {
                return fail(chains);
            };
            let shape = Arc::new(shape);
            let moved = self.last.as_ref().map(|l| l.discrepancy(&shape));
            for c in chains.iter_mut() {
                c.set_shape(Some(shape.clone()));
            }
            self.last = Some(shape.clone());
            (shape.summary, moved)
        };
        let (change, change_max) = (moved.map(|m| m.0), moved.map(|m| m.1));
        let estimate = Estimate {
            shape: summary.expect("an estimate has a summary"),
            change,
            change_max,
        };
        self.estimates.push(estimate);
        if steps < self.warmup {
            return Outcome::Adapted {
                estimate,
                fixed: false,
            };
        }
        let unstable = change.is_some_and(|c| c > STABLE);
        if unstable && 2 * self.warmup <= self.cap {
            self.warmup *= 2;
            self.points.push(self.warmup);
            return Outcome::Extended {
                estimate,
                warmup: self.warmup,
            };
        }
        chains.iter_mut().for_each(|c| c.recording = false);
        Outcome::Adapted {
            estimate,
            fixed: true,
        }
    }
}
