//! What every Bayesian fit carries besides its posterior: the PAC-Bayes
//! certificate (`Fit.bound`, ALGORITHMS.md §9) and, for a Gaussian
//! approximation (EP, VB), the importance-sampling check against the exact
//! Gibbs posterior (`details.is_check`, §13). `Certified` wraps any engine so
//! that every front end (fit, the explorer, replayed specs) gets the same.
//!
//! A certificate that cannot be computed, and a check whose k̂ says the
//! approximation cannot be trusted, are warnings (`Log` events in the trace),
//! never a failure of the run.

use serde_json::json;

use super::bounds;
use super::bounds::split;
use super::event::{Event, LogLevel};
use super::fit::{EngineKind, Fit};
use super::interface::{Control, Engine, EngineError, Observer};
use super::is_check::risks::auto_draws_note;
use super::is_check::subsample;
use super::is_check::{IsSettings, is_check_fit};
use super::numerics::cpu_time::process_cpu_seconds;
use super::prior::Prior;
use super::problem::Problem;

/// Why a GP-EP fit has neither a certificate nor an IS check.
pub const GP_NO_THETA: &str = "the GP prior's posterior is a Gaussian of the training scores, not of θ: the Gaussian certificate and the importance-sampling check are computed in θ-space and do not apply (SMC with the GP prior is certified through its Gibbs posterior)";

#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct CertifySettings {
    /// The bound holds with probability ≥ 1 − ε.
    pub epsilon: f64,
    /// Importance draws of the check (0: no check; None: by the training
    /// size, `is_check::risks::auto_draws`).
    pub is_draws: Option<usize>,
    /// Share of each class's rows the prior is learned on (0: the data-free
    /// prior only; `bounds::split`).
    #[serde(default)]
    pub prior_split: f64,
    pub seed: u64,
}

impl Default for CertifySettings {
    fn default() -> Self {
        CertifySettings {
            epsilon: bounds::DEFAULT_EPSILON,
            is_draws: None,
            prior_split: 0.0,
            seed: 0,
        }
    }
}

/// An engine whose fits are certified (see the module doc).
pub struct Certified {
    pub engine: Box<dyn Engine>,
    pub settings: CertifySettings,
}

impl Engine for Certified {
    fn name(&self) -> &'static str {
        self.engine.name()
    }

    fn params(&self) -> serde_json::Value {
        let mut p = self.engine.params();
        if let Some(map) = p.as_object_mut() {
            map.insert("certificate".into(), json!(self.settings));
        }
        p
    }

    fn run(&self, pb: &Problem, ctl: &Control, obs: &mut dyn Observer) -> Result<Fit, EngineError> {
        let mut fit = self.engine.run(pb, ctl, obs)?;
        ctl.checkpoint()?;
        certify(&mut fit, pb, &self.settings, obs);
        if self.settings.prior_split > 0.0 && fit.bound.is_some() {
            self.split_prior(&mut fit, pb, ctl, obs)?;
        }
        Ok(fit)
    }
}

impl Certified {
    /// The split-prior certificate (`bounds::split`): the same engine on a
    /// stratified share of the rows gives the prior, the rest is certified.
    /// It becomes the headline, the data-free certificate kept beside it; if
    /// it cannot be computed, a warning says why and the data-free one stays.
    fn split_prior(
        &self,
        fit: &mut Fit,
        pb: &Problem,
        ctl: &Control,
        obs: &mut dyn Observer,
    ) -> Result<(), EngineError> {
        let share = self.settings.prior_split;
        let (prior_rows, cert_rows) = split::stratified(&pb.y, share, self.settings.seed);
        let pos = |rows: &[usize]| rows.iter().filter(|&&i| pb.y[i]).count();
        let (cp, cn) = (pos(&cert_rows), cert_rows.len() - pos(&cert_rows));
        fn say(fit: &mut Fit, obs: &mut dyn Observer, level: LogLevel, message: String) {
            let e = Event::Log { level, message };
            if !fit.trace.is_empty() {
                fit.trace.push(e.clone());
            }
            obs.observe(e);
        }
        say(
            fit,
            obs,
            LogLevel::Info,
            format!(
                "certificate with a split prior: the prior is learned by {} on {} of the {} \
                 training rows ({} positives, stratified, seed {}), the certificate is on the \
                 other {} ({cp} positives, {cn} negatives: m = {})",
                self.engine.name(),
                prior_rows.len(),
                pb.n(),
                pos(&prior_rows),
                self.settings.seed,
                cert_rows.len(),
                cp.min(cn)
            ),
        );
        let result = split::sub_problem(pb, &prior_rows).and_then(|sub| {
            let prior_fit = self
                .engine
                .run(&sub, ctl, &mut super::interface::NoObserver)
                .map_err(|e| e.to_string())?;
            split::certify_split(
                fit,
                &prior_fit,
                pb,
                &prior_rows,
                &cert_rows,
                share,
                self.settings.epsilon,
            )
        });
        ctl.checkpoint()?;
        match result {
            Ok(mut b) => {
                b.others.extend(fit.bound.take());
                fit.bound = Some(b);
            }
            Err(e) => say(
                fit,
                obs,
                LogLevel::Warn,
                format!("no split-prior certificate (the data-free one stands): {e}"),
            ),
        }
        Ok(())
    }
}

/// Adds the certificate (and the check, for a Gaussian approximation) to a
/// fit of a Bayesian engine; nothing for a point estimate.
pub fn certify(fit: &mut Fit, pb: &Problem, s: &CertifySettings, obs: &mut dyn Observer) {
    if fit.gamma.is_none() {
        return;
    }
    // (level, message): a check that does not apply by design (GP-EP) is
    // information, not a doubt about the fit; one that failed is a warning.
    let mut notes: Vec<(LogLevel, String)> = Vec::new();
    // Missing certificates are said in the record too (`details.uncertified`).
    let mut uncertified = serde_json::Map::new();
    // GP-EP's q is a Gaussian of the training scores (prior N(0, K)), not of
    // θ: neither the Gaussian certificate nor the IS check (both in θ-space)
    // applies. Score-space SMC is certified through its Gibbs posterior as
    // linear SMC is (its log Z and mean risk do not depend on the space).
    let gp_gaussian = matches!(fit.prior, Some(Prior::Gp(_)))
        && fit.particles.is_none()
        && fit.engine != EngineKind::Smc;
    let (t0, cpu0) = (std::time::Instant::now(), process_cpu_seconds());
    let bound = if gp_gaussian {
        Err(GP_NO_THETA.to_string())
    } else {
        bounds::certify(fit, pb, s.epsilon)
    };
    // Wall seconds of the certificate alone (the fit's are the engine's, the
    // check's `is_check.seconds`): at scale each phase is budgeted apart.
    let certificate_seconds = t0.elapsed().as_secs_f64();
    let certificate_cpu = process_cpu_seconds() - cpu0;
    match bound {
        Ok(b) => {
            if let Some(note) = b.sampled_pairs_note() {
                notes.push((LogLevel::Info, note));
            }
            if b.rho == "draws_gaussian" && fit.engine == EngineKind::Gcs {
                notes.push((
                    LogLevel::Info,
                    format!(
                        "certificate of the Gaussian fitted to the draws; the Gibbs \
                         posterior's own: {}",
                        bounds::GCS_NEEDS_EVIDENCE
                    ),
                ));
            }
            fit.bound = Some(b)
        }
        Err(e) => {
            uncertified.insert("bound".into(), json!(e));
            let level = if gp_gaussian {
                LogLevel::Info
            } else {
                LogLevel::Warn
            };
            notes.push((level, format!("no PAC-Bayes certificate: {e}")));
        }
    }
    if fit.bound.is_some() {
        if !fit.details.is_object() {
            fit.details = json!({});
        }
        fit.details["certificate_seconds"] = json!(certificate_seconds);
        fit.details["certificate_cpu_seconds"] = json!(certificate_cpu);
    }
    let (is_draws, is_rows) = subsample::settings(s.is_draws, pb.n(), pb.d());
    if is_draws > 0 && gp_gaussian {
        uncertified.insert("is_check".into(), json!(GP_NO_THETA));
        notes.push((
            LogLevel::Info,
            format!("no importance-sampling check: {GP_NO_THETA}"),
        ));
    }
    let gaussian =
        fit.particles.is_none() && (fit.covariance.is_some() || fit.low_rank_covariance.is_some());
    if is_draws > 0 && gaussian && !gp_gaussian {
        let draws_note = match is_rows {
            Some(rows) => Some(subsample::auto_note(pb.n(), is_draws, rows)),
            None => auto_draws_note(is_draws),
        }
        .filter(|_| s.is_draws.is_none());
        if let Some(note) = &draws_note {
            notes.push((LogLevel::Info, note.clone()));
        }
        let settings = IsSettings {
            draws: is_draws,
            seed: s.seed,
            rows: is_rows,
            ..IsSettings::default()
        };
        let cpu0 = process_cpu_seconds();
        match is_check_fit(fit, pb, &settings) {
            Ok(mut c) => {
                c.draws_note = draws_note;
                c.cpu_seconds = Some(process_cpu_seconds() - cpu0);
                if !c.trusted {
                    notes.push((
                        LogLevel::Warn,
                        format!("importance-sampling check: {}", c.verdict),
                    ));
                }
                if !fit.details.is_object() {
                    fit.details = json!({});
                }
                fit.details["is_check"] = serde_json::to_value(c).unwrap_or_default();
            }
            Err(e) => {
                uncertified.insert("is_check".into(), json!(e));
                notes.push((LogLevel::Warn, format!("no importance-sampling check: {e}")));
            }
        }
    }
    if !uncertified.is_empty() {
        if !fit.details.is_object() {
            fit.details = json!({});
        }
        fit.details["uncertified"] = serde_json::Value::Object(uncertified);
    }
    for (level, message) in notes {
        let e = Event::Log { level, message };
        // An engine without its own trace gets the observed events as one
        // (the CLI and the worker): the warning reaches it through `obs`.
        if !fit.trace.is_empty() {
            fit.trace.push(e.clone());
        }
        obs.observe(e);
    }
}
