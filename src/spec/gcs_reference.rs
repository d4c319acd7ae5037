//! The great-circle sampler with `directions = gaussian`: EP runs first and
//! its Gaussian (mean and covariance of θ) becomes the ellipses' fixed
//! reference (`engine::gcs::reference`). Methods do not import each other, so
//! the hand-over is here. The draws stay exact whatever EP's quality; a poor
//! EP only slows the mixing, which R-hat and the ESS report.

use crate::engine::ep::Ep;
use crate::engine::event::{Event, LogLevel};
use crate::engine::gcs::{Directions, GaussianReference, Gcs, ReferenceOrigin};
use crate::engine::interface::{Control, Engine, EngineError, Observer};
use crate::engine::{Fit, Problem};
use crate::spec::ep_gaussian::ep_gaussian;
use crate::spec::run_spec::{GcsLoss, GcsSpec, PriorKind, RunSpec};

/// Whether `gcs` under `spec` runs EP first for its ellipses' reference:
/// gaussian directions with the AUC risk under a Gaussian prior of fixed
/// variance (under ARD, EP would re-estimate the variances by its evidence
/// loop, hours on large data; the label-noise loss is not EP's risk): else
/// the reference is fitted over the warm-up.
pub fn ep_reference(spec: &RunSpec, g: &GcsSpec) -> bool {
    g.directions == Directions::Gaussian
        && g.loss == GcsLoss::Auc
        && spec
            .prior
            .as_ref()
            .is_none_or(|p| p.kind == PriorKind::Gaussian)
}

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
        let (reference, why) = match ep_gaussian(&self.ep, problem, ctl, false)? {
            Ok(g) => (
                Some(GaussianReference {
                    mean: g.mean,
                    cov: g.cov,
                    source: "EP's Gaussian".into(),
                }),
                None,
            ),
            Err(why) => (None, Some(why)),
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
        let reference_origin = Some(ReferenceOrigin {
            source: if why.is_none() { "ep" } else { "warm-up" },
            ep_seconds,
            why_not_ep: why,
        });
        let gcs = Gcs {
            settings: crate::engine::gcs::GcsSettings {
                reference,
                reference_origin,
                ..self.gcs.settings.clone()
            },
        };
        gcs.run(problem, ctl, obs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::data::label_noise;
    use crate::engine::gcs::GcsSettings;
    use crate::engine::interface::NoObserver;
    use crate::engine::{Prior, Problem};
    use crate::spec::build::ep_engine;
    use crate::spec::run_spec::EpSpec;

    /// EP's Gaussian reaches the sampler (the record says so), the chains
    /// converge around it, and their means agree with plain great circles'
    /// within 4 combined MCSEs (both exact; 6 features, γ = n).
    #[test]
    fn ep_reference_is_handed_over_and_agrees_with_great_circles() {
        let (x, y) = label_noise::generate(150, 6, 0.2, 3);
        let names = (0..6).map(|k| format!("x{k}")).collect();
        let p = Problem::new(names, x, y, 150.0, Prior::Gaussian { var: 1.0 }).unwrap();
        let settings = GcsSettings {
            directions: Directions::Gaussian,
            seed: 5,
            ..GcsSettings::default()
        };
        let engine = GcsAfterEp {
            ep: ep_engine(&EpSpec::reference(), None, None, 5),
            gcs: Gcs {
                settings: settings.clone(),
            },
        };
        let fit = engine.run(&p, &Control::new(), &mut NoObserver).unwrap();
        assert!(fit.converged);
        assert_eq!(fit.details["directions"]["kind"], "gaussian");
        assert_eq!(fit.details["directions"]["reference"]["source"], "ep");
        let plain = Gcs {
            settings: GcsSettings {
                directions: Directions::Uniform,
                ..settings
            },
        }
        .run(&p, &Control::new(), &mut NoObserver)
        .unwrap();
        let mcse = |f: &Fit, k: usize| f.details["diagnostics"][k]["mcse_mean"].as_f64().unwrap();
        for k in 0..6 {
            let se = (mcse(&fit, k).powi(2) + mcse(&plain, k).powi(2)).sqrt();
            let z = (fit.mean[k] - plain.mean[k]).abs() / se;
            assert!(
                z < 4.0,
                "coefficient {k}: {} vs {} (z {z:.2})",
                fit.mean[k],
                plain.mean[k]
            );
        }
    }
}
