//! The VB engine (`--method vb`): one variational fit at the problem's γ,
//! streamed as `VbIter` events.

use serde_json::json;

use super::cv::{VbCv, cross_validate};
use super::{VbSettings, fit, theory_gamma, theory_prior_var};
use crate::engine::event::{Event, LogLevel};
use crate::engine::fit::{EngineKind, Fit, ScoreModel};
use crate::engine::interface::{Control, Engine, EngineError, Observer};
use crate::engine::problem::Problem;

/// Variational Bayes with a Gaussian family (F1/F2/F3) for the AUC risk or a
/// classification loss.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Vb {
    pub settings: VbSettings,
    /// γ by cross-validation; None: the problem's γ (or the theory value).
    pub cv: Option<VbCv>,
    /// γ = ARC16's theory value (`theory_gamma`) instead of the problem's.
    #[serde(default)]
    pub theory_gamma: bool,
}

impl Engine for Vb {
    fn name(&self) -> &'static str {
        "vb"
    }

    fn params(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or_default()
    }

    fn run(&self, pb: &Problem, ctl: &Control, obs: &mut dyn Observer) -> Result<Fit, EngineError> {
        let s = &self.settings;
        let (d, np, nn) = (pb.d(), pb.n_pos(), pb.n_neg());
        let mut trace = Vec::new();
        fn emit(obs: &mut dyn Observer, e: Event, trace: &mut Vec<Event>) {
            trace.push(e.clone());
            obs.observe(e);
        }
        emit(
            obs,
            Event::Started {
                engine: "vb".into(),
                n: pb.n(),
                d,
                pairs: pb.pairs(),
                gamma: pb.gamma,
            },
            &mut trace,
        );
        let cv = match &self.cv {
            Some(c) => Some(cross_validate(
                &pb.x,
                &pb.y,
                &pb.prior,
                s,
                c,
                ctl,
                &mut |m| {
                    let e = Event::Log {
                        level: LogLevel::Info,
                        message: m,
                    };
                    emit(obs, e, &mut trace)
                },
            )?),
            None => None,
        };
        let theory = theory_gamma(s.loss, np, nn, d);
        let gamma = match &cv {
            Some(r) => r.report.chosen * pb.n() as f64,
            None if self.theory_gamma => theory,
            None => pb.gamma,
        };
        let chosen_by = if cv.is_some() {
            "cv"
        } else if self.theory_gamma {
            "theory"
        } else {
            "fixed"
        };
        if self.theory_gamma && cv.is_none() {
            let rule = if s.loss.is_ranking() {
                "λ = √(d(n−1))/2 on the U-statistic scale"
            } else {
                "λ = √(nd)"
            };
            emit(
                obs,
                Event::Log {
                    level: LogLevel::Info,
                    message: format!(
                        "vb: γ = {theory:.4} = {:.4}n, ARC16's theory value for the {} loss ({rule})",
                        theory / pb.n() as f64,
                        s.loss.name()
                    ),
                },
                &mut trace,
            );
        }
        let theory_var = theory_prior_var(s.loss, d);
        if let crate::engine::Prior::Gaussian { var } = pb.prior
            && !s.loss.is_ranking()
            && (var / theory_var - 1.0).abs() > 1e-12
        {
            emit(
                obs,
                Event::Log {
                    level: LogLevel::Info,
                    message: format!(
                        "vb: prior variance ϑ = {var}; ARC16's theory value for the {} loss is 1/d = {theory_var:.4}",
                        s.loss.name()
                    ),
                },
                &mut trace,
            );
        }
        if let Some(r) = &cv {
            emit(
                obs,
                Event::Log {
                    level: LogLevel::Info,
                    message: format!(
                        "vb: γ = {}n = {gamma} by {}-fold CV",
                        r.report.chosen, r.report.folds
                    ),
                },
                &mut trace,
            );
            if !r.unconverged.is_empty() {
                emit(
                    obs,
                    Event::Log {
                        level: LogLevel::Warn,
                        message: format!(
                            "vb cv: {} fit(s) stopped without meeting their convergence rule and \
                             were scored as they stood: {}",
                            r.unconverged.len(),
                            r.unconverged
                                .iter()
                                .map(|(f, c)| format!("fold {f} at γ = {c}n"))
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    },
                    &mut trace,
                );
            }
        }
        let mut iters = Vec::new();
        let out = fit(&pb.x, &pb.y, &pb.prior, gamma, s, None, ctl, &mut |it| {
            iters.push(it.clone());
            obs.observe(Event::VbIter(it.clone()));
        })?;
        // The record keeps at most ~200 iterations (a long stochastic run thinned evenly).
        let keep = iters.len().div_ceil(200).max(1);
        let last = iters.len().saturating_sub(1);
        trace.extend(
            iters
                .into_iter()
                .enumerate()
                .filter(|(i, _)| i % keep == 0 || *i == last)
                .map(|(_, it)| Event::VbIter(it)),
        );
        if !out.converged {
            emit(
                obs,
                Event::Log {
                    level: LogLevel::Warn,
                    message: format!(
                        "vb: the optimiser stopped without meeting its convergence rule ({}) after {} iterations",
                        out.reason, out.iterations
                    ),
                },
                &mut trace,
            );
        }
        if let Some(e) = &out.risk_estimate {
            emit(
                obs,
                Event::Log {
                    level: LogLevel::Info,
                    message: format!(
                        "vb: E_ρ[R] = {:.5} ± {:.1e} (standard error) from {} random {}, not all {} \
                         (more than {}): F = {:.4} ± {:.2}",
                        e.value,
                        e.se,
                        e.items,
                        if s.loss.is_ranking() { "pairs" } else { "rows" },
                        if s.loss.is_ranking() { np * nn } else { pb.n() },
                        s.exact_risk_max_items,
                        out.objective,
                        gamma * e.se,
                    ),
                },
                &mut trace,
            );
        }
        let sd: Vec<f64> = (0..d).map(|k| out.cov[(k, k)].sqrt()).collect();
        let mut f = Fit::new(
            EngineKind::Vb,
            pb.names.clone(),
            ScoreModel::Linear {
                weights: out.mean.clone(),
            },
        );
        f.set_normal_marginals(out.mean.clone(), sd);
        f.gamma = Some(gamma);
        f.prior = Some(pb.prior.clone());
        f.converged = out.converged;
        f.covariance = Some(out.cov.clone());
        let n = pb.n() as f64;
        let u_scale = 2.0 * (np * nn) as f64 / (n * (n - 1.0));
        f.cv = cv.as_ref().map(|r| r.report.summary());
        f.details = json!({
            "family": out.family.name(),
            "loss": out.loss.name(),
            "objective": out.objective,
            "expected_risk": out.expected_risk,
            "expected_risk_se": out.risk_estimate.map(|e| e.se),
            "objective_se": out.risk_estimate.map(|e| gamma * e.se),
            "expected_risk_items": out.risk_estimate.map(|e| e.items),
            "kl": out.kl,
            "elbo": -out.objective,
            "iterations": out.iterations,
            "evaluations": out.evaluations,
            "optimizer": if out.stochastic { "adam" } else { "lbfgs" },
            "stop": out.reason,
            "holdout_objective": out.holdout_objective,
            "batch": out.stochastic.then_some(super::stochastic::batch_rows(s.adam.batch)),
            "convergence_rule": if out.stochastic {
                "Adam on mini-batches of random items; each window's average is scored on a fixed held-out sample; a check improving it by less than tol·max(1,|F|) halves the step, two in a row stop"
            } else {
                "L-BFGS with strong-Wolfe line search: ‖∇F‖∞ ≤ gtol·max(1,|F|) in whitened coordinates, or F flat (≤ ftol relative) twice with ‖∇F‖∞ ≤ 100·gtol·max(1,|F|)"
            },
            "cv": cv.as_ref().map(|r| &r.report),
            "gamma": {
                "value": gamma,
                "over_n": gamma / n,
                "chosen_by": chosen_by,
                "convention": if out.loss.is_ranking() {
                    "F = γ·E_ρ[R_n] + KL, R_n = share of discordant positive/negative pairs; ARC16's λ (U-statistic scale) = γ·n(n−1)/(2M)"
                } else {
                    "F = γ·E_ρ[r_n] + KL, r_n = mean loss over the n rows; ARC16's λ = γ"
                },
                "lambda_arc16": if out.loss.is_ranking() { gamma / u_scale } else { gamma },
                "theory": theory,
                "theory_prior_var": theory_var,
            },
            "seconds": out.seconds,
        });
        f.trace = trace;
        Ok(f)
    }
}
