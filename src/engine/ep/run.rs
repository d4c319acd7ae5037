//! One EP run for every flavour (Gaussian/ARD, spike-and-slab, GP): γ fixed
//! or by the flavour's cross-validation (`folds`), the final fit, and the
//! record's shared parts. A `Flavour` says what differs: its CV, how its
//! final fit reaches γ, and the details it adds.

use std::cell::RefCell;
use std::time::Instant;

use serde_json::{Value, json};

use super::config::{Ep, GammaMode};
use super::continuation::GammaPath;
use super::cv;
use super::folds::{self, FoldFlavour};
use super::posterior::Posterior;
use super::power::{self, PowerUsed};
use super::settings::EpSettings;
use super::sink::Sink;
use crate::engine::event::Event;
use crate::engine::fit::{EngineKind, Fit, MethodReport, ScoreModel};
use crate::engine::interface::{Control, EngineError, Observer};
use crate::engine::numerics::isa::detected_isa;
use crate::engine::problem::Problem;
use crate::engine::select::CvReport;

/// What every flavour's final fit reports (`MethodReport::EpWork`, details).
#[derive(serde::Serialize)]
pub(crate) struct Work {
    pub sweeps: usize,
    pub eta: f64,
    pub delta: f64,
    pub negative_share: f64,
    pub sites: usize,
    pub pairs: usize,
    pub identical_pairs: usize,
    #[serde(rename = "skipped_sites")]
    pub skipped: usize,
    pub cold_restart: bool,
    pub form: &'static str,
    pub rank: usize,
    /// The pair sites' storage (None: GP-EP, whose sites the record does not describe).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub site_storage: Option<&'static str>,
}

/// A flavour's final fit: its `Fit` (model, moments, own reports and
/// details) and the parts every flavour records alike.
pub(crate) struct Final {
    pub fit: Fit,
    pub work: Work,
    /// The continuation's path in γ (None: γ not reached by it).
    pub path: Option<GammaPath>,
    /// Which power EP α the answer is (None: EP's own by construction).
    pub power: Option<PowerUsed>,
}

/// The CV's choice and what it leaves for the final fit.
pub(crate) struct Chosen {
    pub report: CvReport,
    /// The folds' average posterior at the chosen γ (Gaussian EP only).
    pub start: Option<Posterior>,
    pub seconds: f64,
}

/// What differs between EP flavours' runs.
pub(crate) trait Flavour {
    /// The log prefix ("ep", "ep spike-slab", "gp").
    const PREFIX: &'static str;
    /// The score difference in the record's convention of a pair's factor.
    const SCORE: &'static str;
    /// An Info line after `Started` (`cv`: γ is chosen by CV).
    fn announce(&self, _cv: bool) -> Option<String> {
        None
    }
    /// The flavour in the CV's folds (`folds`).
    fn folds(&self, pb: &Problem) -> impl FoldFlavour;
    /// The log line of the CV's choice γ (the folds' tolerance `tol`).
    fn chosen_note(&self, r: &CvReport, gamma: f64, folds: usize, tol: f64) -> String {
        format!(
            "{}: γ = {}n = {gamma} by {folds}-fold CV (EP in the folds converged to tol = {:e}, \
             {}× the final fit's)",
            Self::PREFIX,
            r.chosen,
            tol,
            cv::FOLD_TOL_FACTOR
        )
    }
    /// The final fit at γ, its sweeps streamed to `sink`; `t0`: the run's start.
    fn fit(
        &mut self,
        pb: &Problem,
        gamma: f64,
        cv: Option<&Chosen>,
        sink: &RefCell<Sink<'_>>,
        ctl: &Control,
        t0: Instant,
    ) -> Result<Final, EngineError>;
}

/// `Ep::run` for any flavour.
pub(crate) fn run<F: Flavour>(
    flavour: &mut F,
    ep: &Ep,
    pb: &Problem,
    ctl: &Control,
    obs: &mut dyn Observer,
) -> Result<Fit, EngineError> {
    let t0 = Instant::now();
    let sink = RefCell::new(Sink::new(obs));
    let cv_on = ep.gamma != GammaMode::Fixed;
    sink.borrow_mut().emit(Event::Started {
        engine: "ep".into(),
        n: pb.n(),
        d: pb.d(),
        pairs: pb.pairs(),
        // NaN while the CV has yet to choose γ (the run logs the choice).
        gamma: if cv_on { f64::NAN } else { pb.gamma },
    });
    if let Some(m) = flavour.announce(cv_on) {
        sink.borrow_mut().info(m);
    }
    let t_cv = Instant::now();
    let cv = match &ep.gamma {
        GammaMode::Fixed => None,
        GammaMode::Cv {
            grid_over_n,
            folds,
            seed,
        } => {
            let f = flavour.folds(pb);
            let spec = cv::gamma_spec(*folds, *seed, grid_over_n);
            let report = folds::cross_validate(&pb.x, &pb.y, &spec, &f, ctl, &mut |m| {
                sink.borrow_mut().info(m)
            })?;
            let start = f.start_at(report.chosen, *folds);
            let g = report.chosen * pb.n() as f64;
            sink.borrow_mut()
                .info(flavour.chosen_note(&report, g, *folds, f.fold_settings().tol));
            let seconds = t_cv.elapsed().as_secs_f64();
            Some(Chosen {
                report,
                start,
                seconds,
            })
        }
    };
    let gamma = cv
        .as_ref()
        .map_or(pb.gamma, |c| c.report.chosen * pb.n() as f64);
    let Final {
        mut fit,
        work: w,
        path,
        power,
    } = flavour.fit(pb, gamma, cv.as_ref(), &sink, ctl, t0)?;
    fit.gamma = Some(gamma);
    fit.converged = true;
    fit.cv = cv.as_ref().map(|c| c.report.summary());
    fit.reports.push(MethodReport::EpWork {
        sweeps: w.sweeps,
        sites: w.sites,
        form: w.form,
        rank: w.rank,
        site_storage: w.site_storage,
    });
    let mut details = json!(&w);
    details["tol"] = json!(ep.settings.tol);
    details["gamma"] = json!({
        "value": gamma,
        "over_n": gamma / pb.n() as f64,
        "per_pair": gamma / w.pairs as f64,
        "chosen_by": if cv.is_some() { "cv" } else { "fixed" },
        "convention": format!("π ∝ prior · exp(−γ R_n), R_n = share of discordant pairs; each pair's factor is exp(−(γ/M)·1{{{} < 0}})", F::SCORE),
    });
    if w.site_storage.is_some() {
        details["isa"] = json!(detected_isa().name());
    }
    merge(&mut details, std::mem::take(&mut fit.details));
    fit.details = details;
    if let Some(p) = path {
        fit.details["gamma"]["path"] = json!(p);
    }
    if let Some(used) = power.filter(|u| !u.is_ep()) {
        fit.reports.push(MethodReport::PowerEp {
            alpha: used.alpha,
            ep_failure: used.ep_failure.clone(),
        });
        fit.details["power"] = json!(used);
    }
    fit.trace = sink.into_inner().trace;
    Ok(fit)
}

/// `from`'s keys into `into`, objects merged key by key.
fn merge(into: &mut Value, from: Value) {
    match (into, from) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                match a.get_mut(&k) {
                    Some(x) if x.is_object() && v.is_object() => merge(x, v),
                    _ => {
                        a.insert(k, v);
                    }
                }
            }
        }
        (a, b) => *a = b,
    }
}

/// EP, or power EP where EP has no fixed point in reach (`power`); the
/// fallback is announced under `prefix`, the earlier runs' sweeps stripped.
pub(crate) fn with_fallback<T>(
    s: &EpSettings,
    prefix: &str,
    sink: &RefCell<Sink<'_>>,
    attempt: impl FnMut(&EpSettings) -> Result<T, EngineError>,
) -> Result<(T, PowerUsed), EngineError> {
    power::run_with_fallback(s, attempt, &mut |alpha, why| {
        let mut sk = sink.borrow_mut();
        sk.drop_earlier_sweeps();
        sk.info(format!(
            "{prefix}: no EP fixed point in reach ({why}); trying power EP at α = {alpha} from \
             the prior (a different approximation, said in the record's details.power)"
        ));
    })
}

/// A fit of a linear score: the posterior mean as weights, its marginals.
pub(crate) fn linear_fit(pb: &Problem, mean: Vec<f64>, sd: Vec<f64>) -> Fit {
    let mut fit = Fit::new(
        EngineKind::Ep,
        pb.names.clone(),
        ScoreModel::Linear {
            weights: mean.clone(),
        },
    );
    fit.set_normal_marginals(mean, sd);
    fit
}
