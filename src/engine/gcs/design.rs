//! What a chain walks on: whitened rows split into the two sides of every
//! compared pair. With a Gaussian prior N(0, diag ϑ), `θ = √ϑ ⊙ w` and
//! `w ~ N(0, I)`: the risk depends on w's direction only, uniform under the
//! prior, so the posterior is (tilted direction) × (χ radius).
//!
//! - AUC: the "positive" side is X_P √ϑ, the "negative" side X_N √ϑ.
//! - Label noise (GH00): one pair per row, `y_i x_i` against the origin; an
//!   error is a discordant pair.
//! - Kernel (GH00 §3): the rows are an empirical feature map F with F Fᵀ = K.

use nalgebra::DMatrix;

use super::settings::Loss;
use crate::engine::interface::EngineError;
use crate::engine::prior::Prior;
use crate::engine::problem::Problem;

/// The indices of the rows of one class.
fn class_rows(y: &[bool], positive: bool) -> Vec<usize> {
    (0..y.len()).filter(|&i| y[i] == positive).collect()
}

#[derive(Debug, Clone)]
pub struct Design {
    /// Whitened rows of the two sides (n_pos × d and n_neg × d).
    pub pos: DMatrix<f64>,
    pub neg: DMatrix<f64>,
    /// θ_k = scale_k · w_k.
    pub scale: Vec<f64>,
    /// γ on the pair risk R = discordant share (label noise: n·ln((1 − q)/q)).
    pub gamma: f64,
    /// The last coordinate is an intercept (label noise).
    pub intercept: bool,
}

impl Design {
    pub fn d(&self) -> usize {
        self.pos.ncols()
    }

    pub fn pairs(&self) -> u64 {
        (self.pos.nrows() * self.neg.nrows()) as u64
    }

    /// The design of a problem under a loss; the prior must be Gaussian.
    pub fn of(problem: &Problem, loss: Loss) -> Result<Design, EngineError> {
        let d = problem.d();
        let vars: Vec<f64> = match &problem.prior {
            Prior::Gaussian { var } => vec![*var; d],
            Prior::Ard { vars } => vars.clone(),
            Prior::SpikeSlab { .. } => {
                return Err(EngineError::InvalidParams(
                    "the great-circle sampler needs a Gaussian prior (isotropic or ARD): the \
                     spike-and-slab prior's posterior is not a tilted uniform direction"
                        .into(),
                ));
            }
            Prior::Gp(_) => {
                return Err(EngineError::InvalidParams(
                    "the great-circle sampler works on a linear score's coefficients; the \
                     Gaussian-process prior is not supported (use EP or SMC with it)"
                        .into(),
                ));
            }
        };
        let mut scale: Vec<f64> = vars.iter().map(|v| v.sqrt()).collect();
        let white = |rows: &[usize]| {
            DMatrix::from_fn(rows.len(), d, |i, k| problem.x[(rows[i], k)] * scale[k])
        };
        let design = match loss {
            Loss::Auc => Design {
                pos: white(&class_rows(&problem.y, true)),
                neg: white(&class_rows(&problem.y, false)),
                scale,
                gamma: problem.gamma,
                intercept: false,
            },
            Loss::LabelNoise { noise, intercept } => {
                let n = problem.n();
                let all: Vec<usize> = (0..n).collect();
                let mut pos = white(&all);
                if intercept {
                    let v0 = vars.iter().sum::<f64>() / d as f64;
                    scale.push(v0.sqrt());
                    pos = pos.insert_column(d, v0.sqrt());
                }
                for (i, &yi) in problem.y.iter().enumerate() {
                    if !yi {
                        pos.row_mut(i).neg_mut();
                    }
                }
                let cols = pos.ncols();
                Design {
                    pos,
                    neg: DMatrix::zeros(1, cols),
                    scale,
                    gamma: n as f64 * ((1.0 - noise) / noise).ln(),
                    intercept,
                }
            }
        };
        if design.d() < 2 {
            return Err(EngineError::InvalidParams(
                "the great-circle sampler needs at least 2 coordinates (one feature has only \
                 two directions)"
                    .into(),
            ));
        }
        Ok(design)
    }

    /// The AUC design on rows already whitened (a feature map with prior N(0, I)).
    pub fn from_features(f: &DMatrix<f64>, y: &[bool], gamma: f64) -> Design {
        Design {
            pos: f.select_rows(&class_rows(y, true)),
            neg: f.select_rows(&class_rows(y, false)),
            scale: vec![1.0; f.ncols()],
            gamma,
            intercept: false,
        }
    }
}
