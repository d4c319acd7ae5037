//! The inference problem handed to an engine: standardised training rows,
//! labels, the prior and γ (ALGORITHMS.md §0, §2).

use std::sync::Arc;

use nalgebra::DMatrix;

use super::interface::EngineError;
use super::prior::Prior;

#[derive(Debug, Clone)]
pub struct Problem {
    pub names: Vec<String>,
    /// n × d training rows (standardised); shared, not copied, with the
    /// prepared split and with the problems derived from this one (γ, folds).
    pub x: Arc<DMatrix<f64>>,
    /// true = positive.
    pub y: Vec<bool>,
    /// Inverse temperature of the Gibbs posterior `π ∝ prior · exp(−γ R_n)`.
    pub gamma: f64,
    pub prior: Prior,
}

impl Problem {
    /// Checks shapes, labels, γ and the prior once, so engines never see nonsense.
    pub fn new(
        names: Vec<String>,
        x: impl Into<Arc<DMatrix<f64>>>,
        y: Vec<bool>,
        gamma: f64,
        prior: Prior,
    ) -> Result<Problem, EngineError> {
        let x = x.into();
        let bad = |m: String| Err(EngineError::InvalidParams(m));
        if x.nrows() != y.len() {
            return bad(format!("{} rows but {} labels", x.nrows(), y.len()));
        }
        if names.len() != x.ncols() {
            return bad(format!("{} names for {} features", names.len(), x.ncols()));
        }
        if x.ncols() == 0 {
            return bad("no features".into());
        }
        if !x.iter().all(|v| v.is_finite()) {
            return bad("the data contain a non-finite value".into());
        }
        let p = y.iter().filter(|&&b| b).count();
        if p == 0 || p == y.len() {
            return bad("the training rows need both classes".into());
        }
        if !(gamma.is_finite() && gamma >= 0.0) {
            return bad(format!("γ must be a finite number ≥ 0; got {gamma}"));
        }
        prior
            .validate(x.ncols())
            .map_err(EngineError::InvalidParams)?;
        Ok(Problem {
            names,
            x,
            y,
            gamma,
            prior,
        })
    }

    pub fn n(&self) -> usize {
        self.y.len()
    }
    pub fn d(&self) -> usize {
        self.x.ncols()
    }
    pub fn n_pos(&self) -> usize {
        self.y.iter().filter(|&&b| b).count()
    }
    pub fn n_neg(&self) -> usize {
        self.n() - self.n_pos()
    }
    /// Number of positive/negative pairs M.
    pub fn pairs(&self) -> usize {
        self.n_pos() * self.n_neg()
    }
}
