//! Doubtful results, in one place: what a fit's own diagnostics say about it
//! (SMC not converged or resting on a collapsed ESS, EP's all-spike fixed
//! point, a cross-validation grid cut short or a choice at its edge) and the
//! warnings the data and the engine raised, as coded `Warning`s. They are the
//! run record's `warnings`; `fit` prints them on stderr and the explorer marks
//! the run. Checks read the fit's typed values — `engine`, `converged`, the
//! cross-validation (`Fit::cv`), independent runs (`Fit::runs`) and the
//! methods' own findings (`Fit::reports`) — so an engine needs no code here
//! to be covered by the generic ones (SMC's stage checks in `smc` read its
//! `MethodReport::TemperingStages`).

use serde::{Deserialize, Serialize};

use super::bounds::Bound;
use super::event::{Event, LogLevel};
use super::fit::{CvSummary, EngineKind, Fit, MethodReport};
use super::prior::Prior;

mod smc;

/// A reason to doubt a result: a stable `code` for scripts and a sentence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Warning {
    pub code: String,
    pub message: String,
}

/// The warning codes (stable: scripts test them).
pub mod code {
    /// A warning about the data (target guessed, ID-like column, …).
    pub const DATA: &str = "data";
    /// A warning the engine raised while running.
    pub const ENGINE: &str = "engine";
    /// The engine's convergence check failed (`converged: false`).
    pub const NOT_CONVERGED: &str = "not_converged";
    /// An SMC step kept too few effective particles.
    pub const ESS_COLLAPSED: &str = "ess_collapsed";
    /// Independent SMC runs disagree: R-hat across them above `MAX_RHAT`.
    pub const RUNS_DISAGREE: &str = "runs_disagree";
    /// Independent SMC runs: log Z varies across them by more than `MAX_LOG_Z_SD`.
    pub const LOG_Z_SPREAD: &str = "log_z_spread";
    /// An SMC stage found a phase its incoming cloud barely held: log Z may be low.
    pub const LOG_Z_PHASE_JUMP: &str = "log_z_phase_jump";
    /// The prior path flagged a phase jump; log Z and the draws are a second
    /// run's, tempered from the first run's cloud (an announcement).
    pub const LOG_Z_RERUN: &str = "log_z_rerun";
    /// Spike-and-slab EP with no feature included: possibly the all-spike fixed point.
    pub const ALL_SPIKE: &str = "all_spike";
    /// γ by cross-validation: grid points dropped (EP failed in some fold).
    pub const CV_GRID_TRUNCATED: &str = "cv_grid_truncated";
    /// γ by cross-validation: the choice is an end of the usable grid.
    pub const CV_CHOICE_AT_EDGE: &str = "cv_choice_at_edge";
    /// The PAC-Bayes certificate bounds 1 − AUC at or above ½ (`bounds::VACUOUS_RISK`).
    pub const CERTIFICATE_VACUOUS: &str = "certificate_vacuous";
    pub const GP_LANDMARK_BUDGET: &str = "gp_landmark_budget";
    /// EP's answer is power EP's at α < 1, a different approximation.
    pub const POWER_EP: &str = "power_ep";
}

pub use smc::{MAX_LOG_Z_SD, MAX_RHAT, MIN_STEP_ESS};

impl Warning {
    fn new(code: &str, message: impl Into<String>) -> Warning {
        Warning {
            code: code.into(),
            message: message.into(),
        }
    }

    /// Whether it doubts the fit itself (the explorer marks the status): not
    /// the data's warnings, nor a vacuous certificate (its cell is marked).
    pub fn casts_doubt(&self) -> bool {
        self.code != code::DATA
            && self.code != code::CERTIFICATE_VACUOUS
            && self.code != code::LOG_Z_RERUN
    }

    /// Whether this warning means the run did not reach a trustworthy answer
    /// (the record's `converged` is then false).
    pub fn undermines_convergence(&self) -> bool {
        self.code == code::NOT_CONVERGED
            || self.code == code::ESS_COLLAPSED
            || self.code == code::RUNS_DISAGREE
    }
}

/// Every warning about `fit`, data warnings first, each message once.
pub fn assess(fit: &Fit, data_warnings: &[String]) -> Vec<Warning> {
    let mut out: Vec<Warning> = data_warnings
        .iter()
        .map(|w| Warning::new(code::DATA, w.clone()))
        .collect();
    let mut derived = Vec::new();
    if fit.engine == EngineKind::Smc {
        derived.extend(smc::warnings(fit));
    } else if !fit.converged {
        derived.push(Warning::new(
            code::NOT_CONVERGED,
            format!("{} did not converge: see the record's details", fit.engine),
        ));
    }
    let engine_warnings: Vec<&String> = fit
        .trace
        .iter()
        .filter_map(|e| match e {
            Event::Log {
                level: LogLevel::Warn,
                message,
            } => Some(message),
            _ => None,
        })
        .collect();
    // The engine's own all-spike warning, if it gave one, is kept in its words
    // (`fit` printed it as it came) under the code.
    let spike_words = fit.reports.iter().find_map(|r| match r {
        MethodReport::AllSpike { words } => Some(words.as_str()),
        _ => None,
    });
    let spike = all_spike(fit, spike_words);
    if let Some(cv) = &fit.cv {
        derived.extend(cv_grid(cv, fit.engine));
    }
    for m in engine_warnings {
        if spike.is_none() || Some(m.as_str()) != spike_words {
            out.push(Warning::new(code::ENGINE, m.clone()));
        }
    }
    derived.extend(spike);
    derived.extend(fit.bound.as_ref().and_then(vacuous_certificate));
    derived.extend(fit.reports.iter().find_map(landmark_budget));
    derived.extend(fit.reports.iter().find_map(power_ep));
    out.extend(derived);
    let mut seen = std::collections::HashSet::new();
    out.retain(|w| seen.insert(w.message.clone()));
    out
}

/// An EP fit answered by power EP: said, with why.
fn power_ep(report: &MethodReport) -> Option<Warning> {
    let MethodReport::PowerEp { alpha, ep_failure } = report else {
        return None;
    };
    let why = match ep_failure {
        Some(e) => format!("EP itself has no fixed point in reach here ({e})"),
        None => "as asked (--ep-power)".into(),
    };
    Some(Warning::new(
        code::POWER_EP,
        format!(
            "EP: the answer is power EP's at α = {alpha} (Minka 2004), not EP's: {why}; it is a \
             different Gaussian approximation of the Gibbs posterior (as α → 0 it tends to the \
             variational one, whose sds are too narrow): check it with --method smc or --method vb"
        ),
    ))
}

/// A GP fit whose automatic Nyström landmarks stopped at their budget.
fn landmark_budget(report: &MethodReport) -> Option<Warning> {
    let MethodReport::LandmarkBudget {
        landmarks,
        residual_trace_share,
        criterion,
    } = report
    else {
        return None;
    };
    Some(Warning::new(
        code::GP_LANDMARK_BUDGET,
        format!(
            "GP: the automatic Nyström approximation stopped at its budget of {landmarks} \
             landmarks with {:.2}% of the prior variance left out (the criterion is {:.2}%): the \
             scores may be less accurate than exact GP-EP's; a fixed, larger number of landmarks \
             costs time and memory in proportion",
            100.0 * residual_trace_share,
            100.0 * criterion.unwrap_or(f64::NAN),
        ),
    ))
}

/// A certificate no better than chance, said as such (the number alone reads
/// like a guarantee).
pub fn vacuous_certificate(b: &Bound) -> Option<Warning> {
    b.is_vacuous().then(|| {
        Warning::new(
            code::CERTIFICATE_VACUOUS,
            format!(
                "the PAC-Bayes certificate is vacuous: 1 − AUC ≤ {:.4} with probability ≥ {} is \
                 no better than a random score's ½ (E_ρ R_n = {:.4}, KL = {:.2}, {} rows); {}",
                b.risk,
                1.0 - b.epsilon,
                b.empirical_risk,
                b.kl,
                b.sizes.n(),
                b.why_loose()
                    .unwrap_or_else(|| "more rows, or a posterior with a small \
                    empirical risk at a small KL to the prior, tighten it"
                        .into())
            ),
        )
    })
}

/// Spike-and-slab EP where no feature's inclusion exceeds ½ (`words`: the
/// engine's own warning about it).
fn all_spike(fit: &Fit, words: Option<&str>) -> Option<Warning> {
    if fit.engine != EngineKind::Ep || !matches!(fit.prior, Some(Prior::SpikeSlab { .. })) {
        return None;
    }
    let incl = fit.inclusion.as_ref()?;
    if incl.is_empty() || incl.iter().any(|&p| p > 0.5) {
        return None;
    }
    let top = incl.iter().copied().fold(0.0, f64::max);
    if let Some(w) = words {
        return Some(Warning::new(code::ALL_SPIKE, w));
    }
    Some(Warning::new(
        code::ALL_SPIKE,
        format!(
            "EP spike-and-slab: no feature has inclusion above ½ (largest {top:.3}): EP may sit at \
             its all-spike fixed point (the AUC risk is scale-free, so with p < ½ every coefficient \
             in the spike is self-consistent); try `inclusion_prior` auto, a larger p or γ, or \
             check with SMC"
        ),
    ))
}

/// What a cross-validated parameter is called in messages, how its values
/// read, and which ends of its grid make a choice doubtful (a logit penalty at
/// its smallest is as good as none, so only its largest is).
struct CvParameter {
    what: &'static str,
    unit: &'static str,
    method: &'static str,
    low_end_doubtful: bool,
    /// How to widen the grid, where a setting can (named as a setting: the
    /// CLI shows its flag).
    extend: &'static str,
}

fn cv_parameter(name: &str, engine: EngineKind) -> CvParameter {
    let (what, unit, method, low, extend) = match name {
        "gamma_over_n" if engine == EngineKind::Smc => {
            ("γ", "n", "SMC", true, " (extend `gamma_grid`)")
        }
        "gamma_over_n" if engine == EngineKind::Vb => {
            ("γ", "n", "VB", true, " (extend `gamma_grid`)")
        }
        "gamma_over_n" => ("γ", "n", "EP", true, " (extend `gamma_grid`)"),
        "lambda" => ("penalty λ", "", "the fit", false, ""),
        "rounds" => ("number of rounds", "", "the fit", true, ""),
        _ => ("parameter", "", "the fit", true, ""),
    };
    CvParameter {
        what,
        unit,
        method,
        low_end_doubtful: low,
        extend,
    }
}

/// The cross-validation every tuned method runs (`Fit::cv`; the record's
/// `details.cv`): points dropped, and a choice at an end of the points scored
/// in every fold.
fn cv_grid(cv: &CvSummary, engine: EngineKind) -> Vec<Warning> {
    let mut out = Vec::new();
    let p = cv_parameter(&cv.parameter, engine);
    let (grid, mean) = (&cv.grid, &cv.mean_auc);
    if grid.len() != mean.len() {
        return out;
    }
    let dropped = cv.dropped;
    let extended = &cv.extended_below;
    let u = p.unit;
    if dropped > 0 || !extended.is_empty() {
        let failed: Vec<String> = grid
            .iter()
            .zip(mean)
            .filter(|(_, a)| a.is_none())
            .map(|(g, _)| format!("{g}{u}"))
            .collect();
        let ext = extended
            .iter()
            .copied()
            .reduce(f64::min)
            .map_or(String::new(), |m| {
                format!("; the grid was extended down to {m}{u} to find two usable points")
            });
        out.push(Warning::new(
            code::CV_GRID_TRUNCATED,
            format!(
                "{} by cross-validation: {} failed in some fold at {} of {} grid points ({}), \
                 which were dropped{ext}; the record's details.cv.dropped says why",
                p.what,
                p.method,
                failed.len(),
                grid.len(),
                failed.join(", ")
            ),
        ));
    }
    // (A non-finite choice was `null` in the record: nothing to place.)
    let chosen = cv.chosen;
    if !chosen.is_finite() {
        return out;
    }
    let usable: Vec<f64> = grid
        .iter()
        .zip(mean)
        .filter(|(_, a)| a.is_some())
        .map(|(g, _)| *g)
        .collect();
    let (Some(lo), Some(hi)) = (
        usable.iter().copied().reduce(f64::min),
        usable.iter().copied().reduce(f64::max),
    ) else {
        return out;
    };
    let top = grid.iter().copied().fold(f64::MIN, f64::max);
    let bottom = grid.iter().copied().fold(f64::MAX, f64::min);
    let what = p.what;
    let edge = if chosen >= hi && hi < top {
        // Points between the last usable one and the failed ones may run.
        let fill = if p.extend.is_empty() {
            String::new()
        } else {
            format!(
                "; points between it and the failed ones may run{}",
                p.extend.replace("(extend", "(add them to")
            )
        };
        Some(format!(
            "is the largest {what} at which {} ran in every fold (the larger points failed): the \
             held-out AUC may rise beyond it{fill}",
            p.method
        ))
    } else if chosen >= hi && usable.len() > 1 {
        Some(format!(
            "is the largest point of the grid: a larger {what} may do better{}",
            p.extend
        ))
    } else if chosen <= lo && p.low_end_doubtful && (usable.len() > 1 || lo > bottom) {
        Some(format!(
            "is the smallest usable point of the grid: a smaller {what} may do better{}",
            p.extend
        ))
    } else if usable.len() == 1 {
        Some("is the only point scored in every fold: nothing was compared".into())
    } else {
        None
    };
    if let Some(why) = edge {
        out.push(Warning::new(
            code::CV_CHOICE_AT_EDGE,
            format!("{what} by cross-validation: the chosen {what} = {chosen}{u} {why}"),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::fit::ScoreModel;

    pub(super) fn fit(engine: EngineKind) -> Fit {
        Fit::new(
            engine,
            vec!["a".into()],
            ScoreModel::Linear { weights: vec![1.0] },
        )
    }

    pub(super) fn codes(w: &[Warning]) -> Vec<&str> {
        w.iter().map(|w| w.code.as_str()).collect()
    }

    #[test]
    fn all_spike_ep_is_coded_in_the_engines_words_or_ours() {
        let mut f = fit(EngineKind::Ep);
        f.prior = Some(Prior::SpikeSlab {
            spike_var: 1e-4,
            slab_var: 1.0,
            incl: 0.05,
        });
        f.inclusion = Some(vec![0.2, 0.4]);
        let words = "no feature has inclusion above ½: …";
        f.trace.push(Event::Log {
            level: LogLevel::Warn,
            message: words.into(),
        });
        f.reports.push(MethodReport::AllSpike {
            words: words.into(),
        });
        f.trace.push(Event::Log {
            level: LogLevel::Warn,
            message: "something else".into(),
        });
        let w = assess(&f, &["an ID column".into()]);
        assert_eq!(codes(&w), [code::DATA, code::ENGINE, code::ALL_SPIKE]);
        assert_eq!(w[2].message, "no feature has inclusion above ½: …");
        f.trace.remove(0);
        f.reports.clear();
        let w = assess(&f, &[]);
        assert_eq!(codes(&w), [code::ENGINE, code::ALL_SPIKE]);
        assert!(w[1].message.contains("largest 0.400"));
        f.inclusion = Some(vec![0.2, 0.6]);
        assert!(!codes(&assess(&f, &[])).contains(&code::ALL_SPIKE));
    }

    /// The landmark budget's warning comes from the GP fit's typed report.
    #[test]
    fn a_landmark_budget_stop_is_a_coded_warning() {
        let mut f = fit(EngineKind::Ep);
        assert!(assess(&f, &[]).is_empty());
        f.reports.push(MethodReport::LandmarkBudget {
            landmarks: 1024,
            residual_trace_share: 0.004,
            criterion: Some(0.0025),
        });
        let w = assess(&f, &[]);
        assert_eq!(codes(&w), [code::GP_LANDMARK_BUDGET]);
        assert!(
            w[0].message.contains("budget of 1024 landmarks with 0.40%"),
            "{}",
            w[0].message
        );
    }

    fn cv(grid: &[f64], mean: &[Option<f64>], chosen: f64, dropped: usize) -> Fit {
        let mut f = fit(EngineKind::Ep);
        f.cv = Some(CvSummary {
            parameter: "gamma_over_n".into(),
            grid: grid.to_vec(),
            mean_auc: mean.to_vec(),
            dropped,
            extended_below: Vec::new(),
            chosen,
        });
        f
    }

    #[test]
    fn cv_grids_cut_short_and_choices_at_an_edge() {
        let a = Some(0.8);
        // Interior choice on a full grid: nothing to say.
        assert!(assess(&cv(&[0.5, 1.0, 2.0], &[a, Some(0.9), a], 1.0, 0), &[]).is_empty());
        // The upper points failed and the choice is the largest usable one.
        let w = assess(&cv(&[0.5, 1.0, 32.0], &[a, Some(0.9), None], 1.0, 1), &[]);
        assert_eq!(
            codes(&w),
            [code::CV_GRID_TRUNCATED, code::CV_CHOICE_AT_EDGE]
        );
        assert!(
            w[0].message.contains("1 of 3 grid points (32n)"),
            "{}",
            w[0].message
        );
        assert!(
            w[1].message.contains("the larger points failed")
                && w[1].message.contains("(add them to `gamma_grid`)"),
            "{}",
            w[1].message
        );
        // The choice is an end of a full grid.
        let w = assess(&cv(&[0.5, 1.0, 2.0], &[a, a, Some(0.9)], 2.0, 0), &[]);
        assert_eq!(codes(&w), [code::CV_CHOICE_AT_EDGE]);
        assert!(w[0].message.contains("largest point of the grid"));
        let w = assess(&cv(&[0.5, 1.0, 2.0], &[Some(0.9), a, a], 0.5, 0), &[]);
        assert!(w[0].message.contains("smallest usable point"));
    }

    #[test]
    fn baselines_chosen_at_an_end_of_their_grid() {
        let curve = |parameter: &str, chosen: f64| {
            let mut f = fit(if parameter == "lambda" {
                EngineKind::Logit
            } else {
                EngineKind::Rankboost
            });
            let grid = if parameter == "lambda" {
                [0.001, 1.0, 1000.0]
            } else {
                [25.0, 100.0, 800.0]
            };
            f.cv = Some(CvSummary {
                parameter: parameter.into(),
                grid: grid.to_vec(),
                mean_auc: vec![Some(0.7), Some(0.8), Some(0.75)],
                dropped: 0,
                extended_below: Vec::new(),
                chosen,
            });
            f
        };
        assert_eq!(
            codes(&assess(&curve("rounds", 800.0), &[])),
            [code::CV_CHOICE_AT_EDGE]
        );
        assert_eq!(
            codes(&assess(&curve("rounds", 25.0), &[])),
            [code::CV_CHOICE_AT_EDGE]
        );
        assert!(assess(&curve("rounds", 100.0), &[]).is_empty());
        assert!(
            assess(&curve("lambda", 0.001), &[]).is_empty(),
            "the smallest penalty is not doubtful"
        );
        let w = assess(&curve("lambda", 1000.0), &[]);
        assert!(
            w[0].message.contains("penalty λ = 1000 is the largest"),
            "{}",
            w[0].message
        );
    }
}
