//! SMC with `smc_reference = ep`: EP runs first and its Gaussian (mean and
//! covariance of θ) becomes the tempering's reference (`engine::smc::reference`).
//! Methods do not import each other, so the hand-over is here. The draws and
//! log Z stay exact whatever EP's quality; a poor EP only costs stages. Where
//! EP fails or does not converge SMC tempers from the prior (announced).

use crate::engine::ep::Ep;
use crate::engine::interface::{Control, Engine, EngineError, Observer};
use crate::engine::smc::Smc;
use crate::engine::smc::reference::{GaussianReference, ReferenceOrigin};
use crate::engine::{Fit, Problem};
use crate::spec::ep_gaussian::ep_gaussian;

/// EP, then SMC tempered from EP's Gaussian.
pub struct SmcAfterEp {
    pub ep: Ep,
    pub smc: Smc,
}

impl Engine for SmcAfterEp {
    fn name(&self) -> &'static str {
        "smc"
    }

    fn params(&self) -> serde_json::Value {
        self.smc.params()
    }

    fn run(
        &self,
        problem: &Problem,
        ctl: &Control,
        obs: &mut dyn Observer,
    ) -> Result<Fit, EngineError> {
        let t0 = std::time::Instant::now();
        let (reference, why) = match ep_gaussian(&self.ep, problem, ctl, true)? {
            // SMC projects a d ≥ n covariance to the data's row space.
            Ok(g) => (
                Some(GaussianReference {
                    mean: g.mean,
                    cov: g.cov,
                }),
                None,
            ),
            Err(why) => (None, Some(why)),
        };
        let origin = ReferenceOrigin {
            source: if why.is_none() { "ep" } else { "prior" }.into(),
            seconds: t0.elapsed().as_secs_f64(),
            why_not: why,
        };
        let smc = Smc {
            settings: crate::engine::smc::SmcSettings {
                reference_gaussian: reference,
                reference_origin: Some(origin),
                ..self.smc.settings.clone()
            },
        };
        smc.run(problem, ctl, obs)
    }
}
