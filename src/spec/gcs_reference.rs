//! The great-circle sampler with `directions = gaussian`: EP runs first and
//! its Gaussian (mean and covariance of θ) becomes the ellipses' fixed
//! reference (`engine::gcs::reference`). Methods do not import each other, so
//! the hand-over is here. The draws stay exact whatever EP's quality; a poor
//! EP only slows the mixing, which R-hat and the ESS report.

use nalgebra::DVector;
use serde_json::json;

use crate::engine::ep::Ep;
use crate::engine::event::{Event, LogLevel};
use crate::engine::gcs::{GaussianReference, Gcs};
use crate::engine::interface::{Control, Engine, EngineError, NoObserver, Observer};
use crate::engine::{Fit, Problem};

/// EP, then the great-circle sampler around EP's Gaussian.
pub struct GcsAfterEp {
    pub ep: Ep,
    pub gcs: Gcs,
}

impl Engine for GcsAfterEp {
    fn name(&self) -> &'static str {
        "gcs"
    }

    fn params(&self) -> serde_json::Value {
        self.gcs.params()
    }

    fn run(
        &self,
        problem: &Problem,
        ctl: &Control,
        obs: &mut dyn Observer,
    ) -> Result<Fit, EngineError> {
        let t0 = std::time::Instant::now();
        let (reference, why) = match self.ep.run(problem, ctl, &mut NoObserver) {
            Ok(ep) => match ep.covariance {
                Some(cov) if ep.converged => (
                    Some(GaussianReference {
                        mean: DVector::from_vec(ep.mean),
                        cov,
                        source: "EP's Gaussian".into(),
                    }),
                    None,
                ),
                Some(_) => (None, Some("EP did not converge".to_string())),
                None => (None, Some("EP gave no full covariance".to_string())),
            },
            Err(EngineError::Cancelled) => return Err(EngineError::Cancelled),
            Err(e) => (None, Some(format!("EP failed: {e}"))),
        };
        let ep_seconds = t0.elapsed().as_secs_f64();
        obs.observe(Event::Log {
            level: if why.is_some() {
                LogLevel::Warn
            } else {
                LogLevel::Info
            },
            message: match &why {
                None => format!(
                    "the great-circle sampler's ellipses are centred on EP's Gaussian ({ep_seconds:.1} s)"
                ),
                Some(w) => format!(
                    "{w}: the great-circle sampler fits its Gaussian reference over the warm-up"
                ),
            },
        });
        let gcs = Gcs {
            settings: crate::engine::gcs::GcsSettings {
                reference,
                ..self.gcs.settings.clone()
            },
        };
        let mut fit = gcs.run(problem, ctl, obs)?;
        fit.details["directions"]["reference"] = json!({
            "source": if why.is_none() { "ep" } else { "warm-up" },
            "ep_seconds": ep_seconds,
            "why_not_ep": why,
        });
        Ok(fit)
    }
}
