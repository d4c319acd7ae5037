//! Power EP as the answer where EP has none (ALGORITHMS.md §16): with
//! `EpPower::Auto` a final fit runs as EP (α = 1); when it ends in a typed
//! verdict that EP did not converge, it runs again from the prior with power
//! EP's α along `FALLBACK_POWERS` (Minka 2004: the cavity removes only α of
//! a site, a site's update is damped by the power), and the record says
//! which α the answer is. Power EP at α < 1 is a different Gaussian
//! approximation, not EP's: as α → 0 it tends to the variational one (too
//! narrow sds), so the fit carries a warning (`MethodReport::PowerEp`).
//! Why α < 1 helps: EP's cavities remove a whole site, and at a large γ a
//! site's precision exceeds what q leaves (invalid cavities, cycles); a
//! fraction of it is removed safely (measured on toys in `power_tests`:
//! 8 of 24 hard cells converge at α = 1, 23 at α = 0.25).

use serde::Serialize;

use super::continuation::GammaPath;
use super::settings::{EpPower, EpSettings, FALLBACK_POWERS};
use super::stop::EpStop;
use crate::engine::interface::EngineError;

/// Which α a fit's answer is, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PowerUsed {
    pub alpha: f64,
    /// "fixed" (the user's α) or "fallback" (EP had no fixed point in reach).
    pub chosen_by: &'static str,
    /// EP's own failure, when the fallback ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ep_failure: Option<String>,
    /// EP's path in γ, when it reached γ by the continuation, the failed
    /// direct run first: each failed point's typed `RunFailure`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ep_path: Option<GammaPath>,
    /// The α tried before the answer's, with their failures.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub failed: Vec<(f64, String)>,
}

impl PowerUsed {
    /// Whether the answer is EP's own (α = 1): nothing to record.
    pub fn is_ep(&self) -> bool {
        self.alpha == 1.0
    }
}

/// Runs `attempt` with `s`; under `EpPower::Auto`, when it fails with
/// `NotConverged`, again with each fallback α (`announce` is told before
/// each). The last failure is returned when every α fails.
pub fn run_with_fallback<T>(
    s: &EpSettings,
    mut attempt: impl FnMut(&EpSettings) -> Result<T, EngineError>,
    announce: &mut dyn FnMut(f64, &str),
) -> Result<(T, PowerUsed), EngineError> {
    let first = attempt(s);
    let fixed = PowerUsed {
        alpha: s.power.alpha(),
        chosen_by: if s.power.is_auto() { "ep" } else { "fixed" },
        ep_failure: None,
        ep_path: None,
        failed: Vec::new(),
    };
    let ep_failure = match first {
        Ok(t) => return Ok((t, fixed)),
        Err(e @ EngineError::NotConverged { .. }) if s.power.is_auto() => e,
        Err(e) => return Err(e),
    };
    let mut failed: Vec<(f64, String)> = Vec::new();
    let mut last = ep_failure.clone();
    for alpha in FALLBACK_POWERS {
        announce(alpha, &last.to_string());
        let sa = EpSettings {
            power: EpPower::Fixed(alpha),
            ..*s
        };
        match attempt(&sa) {
            Ok(t) => {
                return Ok((
                    t,
                    PowerUsed {
                        alpha,
                        chosen_by: "fallback",
                        ep_failure: Some(ep_failure.to_string()),
                        ep_path: EpStop::of(&ep_failure).and_then(|s| s.path.clone()),
                        failed,
                    },
                ));
            }
            Err(e @ EngineError::NotConverged { .. }) => {
                failed.push((alpha, e.to_string()));
                last = e;
            }
            Err(e) => return Err(e),
        }
    }
    // Every α failed: EP's verdict, with what power EP did.
    let tried: Vec<String> = failed
        .iter()
        .map(|(a, e)| format!("power EP at α = {a}: {e}"))
        .collect();
    Err(match ep_failure {
        EngineError::NotConverged {
            reason,
            message,
            diagnostics,
            account,
        } => EngineError::NotConverged {
            reason,
            message: format!("{message}; {}", tried.join("; ")),
            diagnostics,
            account,
        },
        e => e,
    })
}
