//! The chains' driver: independent chains advance in batches on rayon's
//! threads (each chain's stream is its own, so the draws do not depend on the
//! thread count); after every batch the diagnostics of the kept draws decide
//! whether to stop: the smallest bulk and tail ESS over the coefficients and the
//! risk at least the target and the largest R-hat at most its target, or the
//! step cap (not converged). With adapted directions the warm-up also
//! estimates the covariance that shapes the circles (`directions`), in
//! windows, and fixes it when the warm-up ends.

use std::sync::Arc;
use std::time::Instant;

use nalgebra::{DMatrix, DVector};

use rayon::prelude::*;

use super::adapt::{Adaptation, Estimate, Outcome};
use super::chain::{Chain, Work};
use super::design::Design;
use super::reference::Reference;
use super::settings::{Directions, GaussianReference, GcsSettings};
use crate::engine::event::{Event, GcsBatch, LogLevel};
use crate::engine::interface::{Control, EngineError, Observer};
use crate::engine::mcmc_diag::{Convergence, Diagnostics, convergence, diagnose};

/// Smallest and largest batch (steps per chain); batches grow with the run (a
/// quarter of the steps so far), so the diagnostics cost O(S log S) in total.
const MIN_BATCH: usize = 50;
const MAX_BATCH: usize = 5000;

/// A finished run: the chains with their kept draws and the diagnostics.
#[derive(Debug, Clone)]
pub struct GcsRun {
    pub d: usize,
    pub chains: Vec<Chain>,
    /// Per coordinate of θ, then the risk (last).
    pub diagnostics: Vec<Diagnostics>,
    pub converged: bool,
    /// Steps per chain, warm-up included.
    pub steps: usize,
    pub work: Work,
    /// The work after the warm-up (the fixed kernel's acceptance and jumps).
    pub sampling: Work,
    /// The directions used after the warm-up and every estimate of their
    /// covariance (the last one was kept), or why they stayed uniform.
    pub directions: Directions,
    pub estimates: Vec<Estimate>,
    pub uniform_because: Option<String>,
    /// The warm-up (adapted directions may extend the one asked for).
    pub warmup: usize,
    /// Slice moves on the circles (else exact draws).
    pub slice: bool,
    pub elapsed: f64,
    pub trace: Vec<Event>,
}

impl GcsRun {
    /// All kept draws, chain after chain (rows of d).
    pub fn pooled(&self) -> Vec<f64> {
        self.chains
            .iter()
            .flat_map(|c| c.draws.iter().copied())
            .collect()
    }

    pub fn largest_rhat(&self) -> f64 {
        self.diagnostics
            .iter()
            .map(|d| d.rhat)
            .fold(f64::NAN, f64::max)
    }

    pub fn smallest_ess(&self) -> (f64, f64) {
        let min =
            |f: fn(&Diagnostics) -> f64| self.diagnostics.iter().map(f).fold(f64::NAN, f64::min);
        (min(|d| d.ess_bulk), min(|d| d.ess_tail))
    }
}

/// One line on an estimate of the directions' covariance.
fn describe(steps: usize, e: &Estimate) -> String {
    let s = &e.shape;
    format!(
        "great-circle directions adapted at warm-up step {steps} from {} pooled directions: \
         their tangent covariance spans {}, {:.0}× after shrinkage by {:.2}{}",
        s.draws,
        s.tangent_span
            .map_or("(too few draws to tell)".into(), |t| format!("{t:.0}×")),
        s.span,
        s.shrinkage,
        e.change.map_or(String::new(), |c| format!(
            "; variances moved by {c:.2}× (typical) since the last"
        )),
    )
}

/// The kept draws of coordinate k (k = d: the risk), chain by chain.
fn columns(chains: &[Chain], d: usize, k: usize) -> Vec<Vec<f64>> {
    chains
        .iter()
        .map(|c| {
            if k < d {
                c.column(k, d)
            } else {
                c.risks.clone()
            }
        })
        .collect()
}

/// Diagnostics of every coordinate and of the risk over the chains' kept draws.
pub fn diagnostics(chains: &[Chain], d: usize) -> Vec<Diagnostics> {
    (0..=d)
        .into_par_iter()
        .map(|k| {
            let cols = columns(chains, d, k);
            diagnose(&cols.iter().map(Vec::as_slice).collect::<Vec<_>>())
        })
        .collect()
}

/// What the stopping rule reads, per coordinate and the risk, with the pooled
/// mean and sd of each (for the progress events).
fn check(chains: &[Chain], d: usize) -> Vec<(Convergence, f64, f64)> {
    (0..=d)
        .into_par_iter()
        .map(|k| {
            let cols = columns(chains, d, k);
            let all: Vec<f64> = cols.iter().flatten().copied().collect();
            let n = all.len() as f64;
            let mean = all.iter().sum::<f64>() / n;
            let var = all.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1.0);
            let conv = convergence(&cols.iter().map(Vec::as_slice).collect::<Vec<_>>());
            (conv, mean, var.sqrt())
        })
        .collect()
}

/// A reference of θ whitened (w = θ/scale), checked.
fn given_reference(design: &Design, g: &GaussianReference) -> Result<Reference, String> {
    let d = design.d();
    if g.mean.len() != d || g.cov.nrows() != d || g.cov.ncols() != d {
        return Err(format!(
            "{} coordinates where the design has {d}",
            g.mean.len()
        ));
    }
    let s = &design.scale;
    let mean = DVector::from_fn(d, |k, _| g.mean[k] / s[k]);
    let cov = DMatrix::from_fn(d, d, |i, j| g.cov[(i, j)] / (s[i] * s[j]));
    let cov = (&cov + cov.transpose()) * 0.5;
    if !(mean.iter().chain(cov.iter()).all(|v| v.is_finite())) {
        return Err("it is not finite".into());
    }
    Reference::new(mean, &cov).ok_or_else(|| "its covariance is not positive definite".into())
}

pub fn run(
    design: &Design,
    settings: &GcsSettings,
    ctl: &Control,
    obs: &mut dyn Observer,
) -> Result<GcsRun, EngineError> {
    settings.validate()?;
    let t0 = Instant::now();
    let d = design.d();
    let rows = design.pos.nrows() + design.neg.nrows();
    let slice = settings.circle.slice(rows, design.pairs());
    let mut chains: Vec<Chain> = (0..settings.chains as u64)
        .map(|c| {
            let mut chain = Chain::new(design, settings.seed, c);
            chain.slice = slice;
            chain
        })
        .collect();
    let mut trace = Vec::new();
    let mut diag: Vec<(Convergence, f64, f64)> = Vec::new();
    let mut converged = false;
    let (mut plan, mut uniform_because) = match Adaptation::plan(settings, d) {
        Ok(p) => (p, None),
        Err(why) => (None, Some(why)),
    };
    // A given reference: fixed from the first step, nothing to adapt.
    if settings.directions == Directions::Gaussian
        && let Some(g) = &settings.reference
    {
        match given_reference(design, g) {
            Ok(r) => {
                let r = Arc::new(r);
                chains
                    .iter_mut()
                    .for_each(|c| c.set_reference(design, r.clone()));
                (plan, uniform_because) = (None, None);
            }
            Err(why) => {
                let event = Event::Log {
                    level: LogLevel::Warn,
                    message: format!(
                        "the given Gaussian reference ({}) is not used: {why}; it is fitted over \
                         the warm-up instead",
                        g.source
                    ),
                };
                trace.push(event.clone());
                obs.observe(event);
            }
        }
    }
    let mut warmup = settings.warmup;
    let mut warm_work = vec![Work::default(); chains.len()];
    for batch in 1.. {
        ctl.checkpoint()?;
        let steps = chains[0].steps;
        let next_point = plan
            .as_ref()
            .and_then(|p| p.next_point(steps))
            .unwrap_or(usize::MAX);
        let len = if steps < warmup {
            (warmup - steps)
                .min(MIN_BATCH.max(warmup / 4))
                .min(next_point - steps)
        } else {
            ((steps - warmup) / 4).clamp(MIN_BATCH, MAX_BATCH)
        }
        .min(settings.max_steps - steps);
        let before: Vec<Work> = chains.iter().map(|c| c.work).collect();
        chains.par_iter_mut().for_each(|c| {
            for _ in 0..len {
                if ctl.is_cancelled() {
                    return;
                }
                c.step(design, warmup, settings.thin);
            }
        });
        if ctl.is_cancelled() {
            return Err(EngineError::Cancelled);
        }
        let steps = chains[0].steps;
        if let Some(p) = plan.as_mut() {
            let message = match p.after_batch(&mut chains, design, steps) {
                Outcome::Nothing => None,
                Outcome::Adapted { estimate, fixed } => Some((
                    LogLevel::Info,
                    format!(
                        "{}{}",
                        describe(steps, &estimate),
                        if fixed { "; fixed from now on" } else { "" }
                    ),
                )),
                Outcome::Extended { estimate, warmup } => Some((
                    LogLevel::Info,
                    format!(
                        "{}; the warm-up is extended to {warmup} steps (the estimate is not \
                         stable yet)",
                        describe(steps, &estimate)
                    ),
                )),
                Outcome::Failed => Some((
                    LogLevel::Warn,
                    format!(
                        "the directions' covariance could not be estimated at warm-up step \
                         {steps}; the previous directions are kept"
                    ),
                )),
            };
            warmup = p.warmup;
            if let Some((level, message)) = message {
                let event = Event::Log { level, message };
                trace.push(event.clone());
                obs.observe(event);
            }
        }
        if steps == warmup {
            warm_work = chains.iter().map(|c| c.work).collect();
        }
        let kept = chains[0].kept(d);
        let ready = kept >= 8;
        if ready {
            diag = check(&chains, d);
        }
        let worst = |f: fn(&(Convergence, f64, f64)) -> f64, max: bool| {
            let it = diag.iter().map(f);
            if max {
                it.fold(f64::NAN, f64::max)
            } else {
                it.fold(f64::NAN, f64::min)
            }
        };
        let (rhat, bulk, tail) = (
            worst(|x| x.0.rhat, true),
            worst(|x| x.0.ess_bulk, false),
            worst(|x| x.0.ess_tail, false),
        );
        let per_chain = |f: &dyn Fn(&Work, &Work) -> f64| -> Vec<f64> {
            chains
                .iter()
                .zip(&before)
                .map(|(c, b)| f(&c.work, b))
                .collect()
        };
        let n_steps = |w: &Work, b: &Work| (w.steps - b.steps).max(1) as f64;
        let event = Event::GcsBatch(GcsBatch {
            batch,
            steps,
            warmup,
            draws: kept * chains.len(),
            rhat: ready.then_some(rhat),
            ess_bulk: ready.then_some(bulk),
            ess_tail: ready.then_some(tail),
            risk: per_chain(&|w, b| (w.risk - b.risk) / n_steps(w, b)),
            proposals: per_chain(&|w, b| (w.proposals - b.proposals) as f64 / n_steps(w, b)),
            jump: per_chain(&|w, b| (w.jump - b.jump) / n_steps(w, b)),
            arcs: 2 * design.pairs(),
            mean: diag.iter().take(d).map(|x| x.1).collect(),
            sd: diag.iter().take(d).map(|x| x.2).collect(),
            elapsed: t0.elapsed().as_secs_f64(),
        });
        trace.push(event.clone());
        obs.observe(event);
        if ready
            && bulk >= settings.min_ess
            && tail >= settings.min_ess
            && rhat <= settings.max_rhat
        {
            converged = true;
            break;
        }
        if steps >= settings.max_steps {
            break;
        }
    }
    let mut work = Work::default();
    let mut sampling = Work::default();
    for (c, warm) in chains.iter().zip(&warm_work) {
        work.add(&c.work);
        sampling.add(&c.work.since(warm));
    }
    let adapted = chains[0].shape().is_some();
    let gaussian = chains[0].reference().is_some();
    Ok(GcsRun {
        d,
        steps: chains[0].steps,
        diagnostics: diagnostics(&chains, d),
        chains,
        converged,
        work,
        sampling,
        directions: if gaussian {
            Directions::Gaussian
        } else if adapted {
            Directions::Adapted
        } else {
            Directions::Uniform
        },
        estimates: plan.map(|p| p.estimates).unwrap_or_default(),
        uniform_because,
        warmup,
        slice,
        elapsed: t0.elapsed().as_secs_f64(),
        trace,
    })
}
