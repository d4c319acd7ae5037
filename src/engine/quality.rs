//! Doubtful results, in one place: what a fit's own diagnostics say about it
//! (SMC not converged or resting on a collapsed ESS, EP's all-spike fixed
//! point, a cross-validation grid cut short or a choice at its edge) and the
//! warnings the data and the engine raised, as coded `Warning`s. They are the
//! run record's `warnings`; `fit` prints them on stderr and the explorer marks
//! the run. Checks read the fit's `details` (the engines' own reports), so an
//! engine needs no code here to be covered by the generic ones.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::bounds::Bound;
use super::event::{Event, LogLevel};
use super::fit::Fit;
use super::prior::Prior;

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
    /// Spike-and-slab EP with no feature included: possibly the all-spike fixed point.
    pub const ALL_SPIKE: &str = "all_spike";
    /// γ by cross-validation: grid points dropped (EP failed in some fold).
    pub const CV_GRID_TRUNCATED: &str = "cv_grid_truncated";
    /// γ by cross-validation: the choice is an end of the usable grid.
    pub const CV_CHOICE_AT_EDGE: &str = "cv_choice_at_edge";
    /// The PAC-Bayes certificate bounds 1 − AUC at or above ½ (`bounds::VACUOUS_RISK`).
    pub const CERTIFICATE_VACUOUS: &str = "certificate_vacuous";
    pub const GP_LANDMARK_BUDGET: &str = "gp_landmark_budget";
}

/// Fewest effective particles an SMC tempering step may keep. Measured on the
/// Pima split (N = 10 000, three seeds, reference log Z −64.55): steps at an
/// ESS of 5–10 particles put log Z off by up to 1.4 (and still reported
/// `converged`), 25 particles by up to 0.36, 50 or more by ≤ 0.2 (docs/BENCHMARKS.md).
pub const MIN_STEP_ESS: f64 = 50.0;

/// Largest R-hat across independent runs taken as agreement: the threshold
/// of Vehtari, Gelman, Simpson, Carpenter & Bürkner (2021), "Rank-normalization,
/// folding, and localization: an improved R-hat".
pub const MAX_RHAT: f64 = 1.01;

/// Largest sd of log Ẑ across independent SMC runs accepted without a warning:
/// at 0.15 two runs' evidences differ by less than ≈ 0.4 (a Bayes factor of
/// 1.5) in 95% of pairs, below the differences evidence searches act on; runs
/// that kept ≥ `MIN_STEP_ESS` particles per step were within 0.2 of the Pima
/// reference (docs/BENCHMARKS.md).
pub const MAX_LOG_Z_SD: f64 = 0.15;

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
        self.code != code::DATA && self.code != code::CERTIFICATE_VACUOUS
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
    if fit.engine == "smc" {
        derived.extend(smc_not_converged(fit));
        derived.extend(smc_ess(fit));
        derived.extend(smc_runs(fit));
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
    let spike_words = engine_warnings
        .iter()
        .find(|m| m.contains("inclusion above"))
        .map(|m| m.as_str());
    let spike = all_spike(fit, spike_words);
    if let Some(cv) = fit.details.get("cv").filter(|c| c.is_object()) {
        derived.extend(cv_grid(cv, &fit.engine));
    }
    for m in engine_warnings {
        if spike.is_none() || Some(m.as_str()) != spike_words {
            out.push(Warning::new(code::ENGINE, m.clone()));
        }
    }
    derived.extend(spike);
    derived.extend(fit.bound.as_ref().and_then(vacuous_certificate));
    derived.extend(super::ep::gp::nystrom::budget_warning(fit));
    out.extend(derived);
    let mut seen = std::collections::HashSet::new();
    out.retain(|w| seen.insert(w.message.clone()));
    out
}

/// A certificate no better than chance, said as such (the number alone reads
/// like a guarantee).
pub fn vacuous_certificate(b: &Bound) -> Option<Warning> {
    b.is_vacuous().then(|| {
        Warning::new(
            code::CERTIFICATE_VACUOUS,
            format!(
                "the PAC-Bayes certificate is vacuous: 1 − AUC ≤ {:.4} with probability ≥ {} is \
                 no better than a random score's ½ (E_ρ R_n = {:.4}, KL = {:.2}, {} rows); \
                 more rows, or a posterior with a small empirical risk at a small KL to the \
                 prior, tighten it",
                b.risk,
                1.0 - b.epsilon,
                b.empirical_risk,
                b.kl,
                b.sizes.n()
            ),
        )
    })
}

fn num(v: &Value, key: &str) -> Option<f64> {
    v.get(key)?.as_f64()
}

/// The SMC stages that missed the decorrelation rule.
fn smc_not_converged(fit: &Fit) -> Option<Warning> {
    if fit.converged {
        return None;
    }
    let d = &fit.details;
    let settings = d.get("settings");
    let corr_max = settings
        .and_then(|s| num(s, "decorrelation"))
        .unwrap_or(0.1);
    // The sampler's own rule (`sampler.rs`): a stage converged when every
    // correlation is at most `decorrelation` and at most `max_duplicated` of
    // the particles are still unmoved copies of another. (Chains that never
    // moved but hold a distinct state are not a failure.)
    let dup_max = settings
        .and_then(|s| num(s, "max_duplicated"))
        .unwrap_or(0.01);
    let path = d.get("path").and_then(Value::as_array);
    let bad: Vec<String> = path
        .into_iter()
        .flatten()
        .filter(|s| num(s, "stage").is_some_and(|t| t >= 1.0))
        .filter(|s| {
            num(s, "max_correlation").is_some_and(|c| c > corr_max)
                || num(s, "duplicated").is_some_and(|u| u > dup_max)
        })
        .map(|s| {
            format!(
                "{}{} ({} moves, |correlation| {:.2}, {:.1}% unmoved copies)",
                // Several runs: their stages are numbered within each run.
                num(s, "run").map_or(String::new(), |r| format!("run {r} stage ")),
                num(s, "stage").unwrap_or(0.0),
                num(s, "moves").unwrap_or(0.0),
                num(s, "max_correlation").unwrap_or(f64::NAN),
                100.0 * num(s, "duplicated").unwrap_or(f64::NAN)
            )
        })
        .collect();
    // Stages of several runs carry their run ("run 2 stage 3").
    let word = if bad.first().is_some_and(|b| b.starts_with("run")) {
        ""
    } else {
        "stage "
    };
    let stages = match bad.len() {
        0 => String::new(),
        1..=3 => format!(" in {word}{}", bad.join(", ")),
        k => format!(" in {word}{} and {} more", bad[..2].join(", "), k - 2),
    };
    Some(Warning::new(
        code::NOT_CONVERGED,
        format!(
            "SMC did not converge{stages}: the moves stopped before every coordinate and the risk \
             decorrelated from their stage-start values (|correlation| ≤ {corr_max}) with at most \
             {}% of the particles still unmoved copies of another; the posterior and log Z may be off: use more \
             `particles` or compare two seeds",
            100.0 * dup_max
        ),
    ))
}

/// Independent SMC runs (`details.runs`, count ≥ 2) that disagree: R-hat
/// above `MAX_RHAT`, or log Z spread above `MAX_LOG_Z_SD`. (A run that did not
/// converge is `smc_not_converged`'s, which names it.)
fn smc_runs(fit: &Fit) -> Vec<Warning> {
    let mut out = Vec::new();
    let Some(r) = fit
        .details
        .get("runs")
        .filter(|r| num(r, "count").is_some_and(|c| c >= 2.0))
    else {
        return out;
    };
    let count = num(r, "count").unwrap_or(0.0);
    if let Some(rhat) = num(r, "rhat_max").filter(|&x| x > MAX_RHAT) {
        let worst = r.get("rhat_worst").and_then(Value::as_str).unwrap_or("?");
        out.push(Warning::new(
            code::RUNS_DISAGREE,
            format!(
                "SMC: the {count} independent runs disagree: R-hat {rhat:.3} ({worst}) > \
                 {MAX_RHAT} (Vehtari et al. 2021): their clouds differ by more than Monte Carlo \
                 error, so neither a run nor their pool can be trusted; use more `particles` \
                 (or moves) and compare again"
            ),
        ));
    }
    if let Some(sd) = num(r, "log_z_sd").filter(|&x| x > MAX_LOG_Z_SD) {
        out.push(Warning::new(
            code::LOG_Z_SPREAD,
            format!(
                "SMC: log Z varies across the {count} runs with sd {sd:.3} > {MAX_LOG_Z_SD} (mean \
                 {:.3}, MCSE of the mean {:.3}): one run's evidence is uncertain by about that \
                 much; use more `particles` before comparing evidences",
                num(r, "log_z_mean").unwrap_or(f64::NAN),
                num(r, "log_z_mcse").unwrap_or(f64::NAN),
            ),
        ));
    }
    out
}

/// Tempering steps whose ESS fell below `MIN_STEP_ESS` particles.
fn smc_ess(fit: &Fit) -> Option<Warning> {
    let d = &fit.details;
    let n = d.get("settings").and_then(|s| num(s, "particles"))?;
    let path = d.get("path")?.as_array()?;
    let gamma_t = fit.gamma.unwrap_or(f64::NAN);
    let (mut worst, mut count) = (None::<(f64, f64)>, 0);
    for s in path
        .iter()
        .filter(|s| num(s, "stage").is_some_and(|t| t >= 1.0))
    {
        let ess = num(s, "ess_frac").unwrap_or(1.0) * n;
        // A target ESS of exactly 50 (N = 100, τ = ½) is met up to the root
        // finder's tolerance.
        if ess < MIN_STEP_ESS * 0.999 {
            count += 1;
            if worst.is_none_or(|(e, _)| ess < e) {
                worst = Some((ess, num(s, "stage").unwrap_or(0.0)));
            }
        }
    }
    let (ess, stage) = worst?;
    let one_step = path.len() == 2;
    Some(Warning::new(
        code::ESS_COLLAPSED,
        format!(
            "SMC: {count} tempering step(s) kept fewer than {MIN_STEP_ESS} effective particles \
             (stage {stage}: {ess:.1} of {n}){}: log Z and the posterior rest on a handful of \
             particles; raise `particles` or the ESS target `ess`",
            if one_step {
                format!(", the whole path γ 0 → {gamma_t} in one step")
            } else {
                String::new()
            }
        ),
    ))
}

/// Spike-and-slab EP where no feature's inclusion exceeds ½ (`words`: the
/// engine's own warning about it).
fn all_spike(fit: &Fit, words: Option<&str>) -> Option<Warning> {
    if fit.engine != "ep" || !matches!(fit.prior, Some(Prior::SpikeSlab { .. })) {
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

fn cv_parameter(name: &str, engine: &str) -> CvParameter {
    let (what, unit, method, low, extend) = match name {
        "gamma_over_n" if engine == "smc" => ("γ", "n", "SMC", true, " (extend `gamma_grid`)"),
        "gamma_over_n" if engine == "vb" => ("γ", "n", "VB", true, " (extend `gamma_grid`)"),
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

/// The cross-validation every tuned method records (`details.cv`:
/// `parameter`, `grid` ascending, `mean_auc`, `dropped`, `extended_below`,
/// `chosen`): points dropped, and a choice at an end of the points scored in
/// every fold.
fn cv_grid(cv: &Value, engine: &str) -> Vec<Warning> {
    let mut out = Vec::new();
    let p = cv_parameter(
        cv.get("parameter").and_then(Value::as_str).unwrap_or(""),
        engine,
    );
    let floats = |key: &str| -> Vec<f64> {
        cv.get(key)
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_f64).collect())
            .unwrap_or_default()
    };
    let grid = floats("grid");
    let mean: Vec<Option<f64>> = cv
        .get("mean_auc")
        .and_then(Value::as_array)
        .map(|a| a.iter().map(Value::as_f64).collect())
        .unwrap_or_default();
    if grid.len() != mean.len() {
        return out;
    }
    let dropped = cv
        .get("dropped")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    let extended = floats("extended_below");
    let u = p.unit;
    if dropped > 0 || !extended.is_empty() {
        let failed: Vec<String> = grid
            .iter()
            .zip(&mean)
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
    let Some(chosen) = num(cv, "chosen") else {
        return out;
    };
    let usable: Vec<f64> = grid
        .iter()
        .zip(&mean)
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
        Some(format!(
            "is the largest {what} at which {} ran in every fold (the larger points failed): the \
             held-out AUC may rise beyond it",
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
    use serde_json::json;

    fn fit(engine: &str) -> Fit {
        Fit::new(
            engine,
            vec!["a".into()],
            ScoreModel::Linear { weights: vec![1.0] },
        )
    }

    fn codes(w: &[Warning]) -> Vec<&str> {
        w.iter().map(|w| w.code.as_str()).collect()
    }

    fn smc(path: Value, particles: f64, converged: bool) -> Fit {
        let mut f = fit("smc");
        f.gamma = Some(100.0);
        f.converged = converged;
        f.details = json!({
            "settings": { "particles": particles, "decorrelation": 0.1, "max_duplicated": 0.01 },
            "path": path,
        });
        f
    }

    /// A stage record; `duplicated` is the share of unmoved copies.
    fn stage(t: usize, ess: f64, corr: f64, duplicated: f64) -> Value {
        json!({ "stage": t, "ess_frac": ess, "max_correlation": corr, "duplicated": duplicated, "moves": 200 })
    }

    #[test]
    fn a_clean_run_has_no_warnings() {
        let f = smc(
            json!([
                stage(0, 1.0, 0.0, 0.0),
                stage(1, 0.5, 0.05, 0.0),
                stage(2, 0.7, 0.08, 0.0)
            ]),
            1000.0,
            true,
        );
        assert!(assess(&f, &[]).is_empty());
        assert!(assess(&fit("logit"), &[]).is_empty());
    }

    /// Several runs: R-hat above 1.01 undermines convergence, a log Z spread
    /// above 0.15 is a warning, and a run's failed stages carry its number.
    #[test]
    fn smc_runs_that_disagree_are_flagged() {
        let runs = |rhat: f64, sd: f64, converged: bool| {
            let mut f = smc(
                json!([stage(0, 1.0, 0.0, 0.0), {
                    "run": 2, "stage": 1, "ess_frac": 0.5, "max_correlation": 0.3, "duplicated": 0.0, "moves": 200
                }]),
                1000.0,
                converged,
            );
            f.details["runs"] = json!({
                "count": 4, "rhat_max": rhat, "rhat_worst": "x3", "log_z_sd": sd,
                "log_z_mean": -60.0, "log_z_mcse": sd / 2.0,
            });
            assert_eq!(MAX_RHAT, 1.01);
            assess(&f, &[])
        };
        assert!(runs(1.005, 0.1, true).is_empty());
        let w = runs(1.2, 0.1, true);
        assert_eq!(codes(&w), [code::RUNS_DISAGREE]);
        assert!(w[0].undermines_convergence() && w[0].message.contains("1.200 (x3)"));
        let w = runs(1.0, 0.3, true);
        assert_eq!(codes(&w), [code::LOG_Z_SPREAD]);
        assert!(!w[0].undermines_convergence());
        let w = runs(1.0, 0.1, false);
        assert_eq!(codes(&w), [code::NOT_CONVERGED]);
        assert!(
            w[0].message.contains("in run 2 stage 1 ("),
            "{}",
            w[0].message
        );
        // One run (count 1): nothing to compare.
        let mut f = smc(json!([stage(0, 1.0, 0.0, 0.0)]), 1000.0, true);
        f.details["runs"] = json!({ "count": 1, "rhat_max": null });
        assert!(assess(&f, &[]).is_empty());
    }

    #[test]
    fn smc_stages_that_did_not_decorrelate_are_named() {
        let f = smc(
            json!([
                stage(0, 1.0, 0.0, 0.0),
                stage(1, 0.5, 0.35, 0.0),
                stage(2, 0.5, 0.05, 0.2)
            ]),
            1000.0,
            false,
        );
        let w = assess(&f, &[]);
        assert_eq!(codes(&w), [code::NOT_CONVERGED]);
        assert!(
            w[0].message
                .contains("stage 1 (200 moves, |correlation| 0.35"),
            "{}",
            w[0].message
        );
        assert!(w[0].message.contains("2 (200 moves"), "{}", w[0].message);
        assert!(w[0].undermines_convergence());
    }

    /// Chains that never moved but are not copies of another are not a
    /// failure (the sampler's rule): the stage named is the one that missed
    /// the rule, not a gpcn stage with 5% of chains unmoved (a 40-stage run
    /// was reported as failing "in stage 2 (2 moves, |correlation| 0.04,
    /// 1.8% never moved) … and 37 more" where only stage 20 missed it).
    #[test]
    fn unmoved_distinct_chains_are_not_named_as_failures() {
        let mut quiet = stage(1, 0.8, 0.04, 0.0003);
        quiet["unmoved"] = json!(0.05);
        quiet["moves"] = json!(2);
        let f = smc(
            json!([stage(0, 1.0, 0.0, 0.0), quiet, stage(2, 0.8, 0.158, 0.004)]),
            10000.0,
            false,
        );
        let w = assess(&f, &[]);
        assert_eq!(codes(&w), [code::NOT_CONVERGED]);
        assert!(
            w[0].message
                .contains(" in stage 2 (200 moves, |correlation| 0.16, 0.4% unmoved copies)"),
            "{}",
            w[0].message
        );
        assert!(!w[0].message.contains("stage 1"), "{}", w[0].message);
    }

    /// A one-step jump from the prior to γ_T resting on one particle (N = 2,
    /// τ = ½) is flagged although its moves "decorrelated"; 50 effective
    /// particles are enough.
    #[test]
    fn a_collapsed_ess_is_flagged_and_one_step_paths_said() {
        let f = smc(
            json!([stage(0, 1.0, 0.0, 0.0), stage(1, 0.5, 0.0, 0.0)]),
            2.0,
            true,
        );
        let w = assess(&f, &[]);
        assert_eq!(codes(&w), [code::ESS_COLLAPSED]);
        assert!(w[0].message.contains("one step"), "{}", w[0].message);
        assert!(w[0].undermines_convergence());
        let ok = smc(
            json!([stage(0, 1.0, 0.0, 0.0), stage(1, 0.5, 0.0, 0.0)]),
            100.0,
            true,
        );
        assert!(assess(&ok, &[]).is_empty());
    }

    #[test]
    fn all_spike_ep_is_coded_in_the_engines_words_or_ours() {
        let mut f = fit("ep");
        f.prior = Some(Prior::SpikeSlab {
            spike_var: 1e-4,
            slab_var: 1.0,
            incl: 0.05,
        });
        f.inclusion = Some(vec![0.2, 0.4]);
        f.trace.push(Event::Log {
            level: LogLevel::Warn,
            message: "no feature has inclusion above ½: …".into(),
        });
        f.trace.push(Event::Log {
            level: LogLevel::Warn,
            message: "something else".into(),
        });
        let w = assess(&f, &["an ID column".into()]);
        assert_eq!(codes(&w), [code::DATA, code::ENGINE, code::ALL_SPIKE]);
        assert_eq!(w[2].message, "no feature has inclusion above ½: …");
        f.trace.remove(0);
        let w = assess(&f, &[]);
        assert_eq!(codes(&w), [code::ENGINE, code::ALL_SPIKE]);
        assert!(w[1].message.contains("largest 0.400"));
        f.inclusion = Some(vec![0.2, 0.6]);
        assert!(!codes(&assess(&f, &[])).contains(&code::ALL_SPIKE));
    }

    fn cv(grid: &[f64], mean: &[Option<f64>], chosen: f64, dropped: usize) -> Fit {
        let mut f = fit("ep");
        f.details = json!({ "cv": {
            "parameter": "gamma_over_n", "grid": grid, "mean_auc": mean, "chosen": chosen,
            "dropped": vec!["why"; dropped], "extended_below": [],
        }});
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
            w[1].message.contains("the larger points failed"),
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
                "logit"
            } else {
                "rankboost"
            });
            let grid = if parameter == "lambda" {
                [0.001, 1.0, 1000.0]
            } else {
                [25.0, 100.0, 800.0]
            };
            f.details = json!({ "cv": {
                "parameter": parameter, "grid": grid, "mean_auc": [0.7, 0.8, 0.75],
                "chosen": chosen, "dropped": [], "extended_below": [],
            }});
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
