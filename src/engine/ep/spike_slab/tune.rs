//! Evidence maximisation of the spike-and-slab prior's constants, each
//! evaluation an EP run warm-started from the last:
//! - `--inclusion-prior auto` (p): at an EP fixed point
//!   ∂ log Z_EP/∂p = Σ_k (w1_k/p − w0_k/(1 − p)), zero at p = mean_k w1_k;
//!   iterate that.
//! - `--slab-var auto` (v1, v0 fixed): the AUC risk is scale-free, so log Z_EP
//!   depends on the variances only through v0/v1 (tested). Search
//!   t = log10(v0/v1) over §5's path range [−6, −1]: a half-decade grid from
//!   the widest spike down (warm starts along it, as in the path), then golden
//!   section around the grid's best point. Later rounds walk uphill from the
//!   last t in grid steps instead of scanning the grid again.
//! - Both: coordinate ascent, alternating the two until neither moves.
//!
//! The searches themselves are `select::search`'s (`fixed_point`, `maximise`,
//! `coordinate_ascent`); this module evaluates, traces and logs.

use serde_json::{Value, json};

use std::cell::RefCell;

use super::model::{SpikeSlab, SpikeSlabEp};
use super::sweep::{SsOutcome, SsSettings, SsSweepInfo};
use crate::engine::ep::design::Design;
use crate::engine::error::NonConvergence;
use crate::engine::event::LogLevel;
use crate::engine::interface::{Control, EngineError};
use crate::engine::select::{FixedPointRule, Range1d, coordinate_ascent, fixed_point, maximise};

/// Most fixed-point iterations for p, and their stopping rule (relative change).
const INCLUSION_ITERS: usize = 50;
const INCLUSION_TOL: f64 = 1e-3;
/// The range of t = log10(v0/v1), the grid step and the golden-section width (decades).
const SLAB_RANGE: Range1d = Range1d {
    lo: -6.0,
    hi: -1.0,
    step: 0.5,
    tol: 0.05,
};
/// Most rounds of coordinate ascent when both are tuned.
const ROUNDS: usize = 6;

/// Which constants to choose.
#[derive(Debug, Clone, Copy, Default)]
pub struct Tuning {
    pub incl: bool,
    pub slab: bool,
}

/// What the tuning reports to the engine.
pub struct Hooks<'a> {
    pub on_sweep: &'a mut dyn FnMut(&SsSweepInfo<'_>, &Design),
    /// A new EP run starts (the record keeps the sweeps of the last run only).
    pub new_run: &'a mut dyn FnMut(),
    pub log: &'a mut dyn FnMut(LogLevel, String),
}

pub struct Tuned {
    /// The EP run at the chosen prior (the model is left in its state).
    pub outcome: SsOutcome,
    pub prior: SpikeSlab,
    pub incl_trace: Vec<Value>,
    pub incl_converged: bool,
    pub slab_trace: Vec<Value>,
    /// The chosen v0/v1 is at an end of [1e-6, 0.1] (the evidence may rise beyond it).
    pub slab_at_edge: bool,
    pub rounds: usize,
    pub rounds_converged: bool,
}

struct Tuner<'a, 'h> {
    model: &'a mut SpikeSlabEp,
    gamma: f64,
    s: &'a SsSettings,
    ctl: &'a Control,
    hooks: &'a mut Hooks<'h>,
    /// The prior of the model's current state and that run's outcome.
    last: Option<(SpikeSlab, Option<SsOutcome>)>,
    incl_trace: Vec<Value>,
    slab_trace: Vec<Value>,
}

impl Tuner<'_, '_> {
    /// One EP run at `prior`, warm-started; None when it did not converge.
    fn eval(&mut self, prior: SpikeSlab) -> Result<Option<&SsOutcome>, EngineError> {
        if self.last.as_ref().is_none_or(|(p, _)| *p != prior) {
            self.model.set_prior(prior)?;
            (self.hooks.new_run)();
            let out = match self
                .model
                .run(self.gamma, self.s, self.ctl, self.hooks.on_sweep)
            {
                Ok(o) => Some(o),
                Err(EngineError::NotConverged { .. }) => None,
                Err(e) => return Err(e),
            };
            if let Some(o) = &out
                && o.evidence.log_z().is_none()
            {
                return Err(EngineError::InvalidParams(format!(
                    "`auto` maximises log Z_EP, which is not available here ({} near-identical \
                     pairs were skipped); give --inclusion-prior and --slab-var as numbers",
                    o.skipped
                )));
            }
            self.last = Some((prior, out));
        }
        Ok(self.last.as_ref().and_then(|(_, o)| o.as_ref()))
    }

    /// log Z_EP at t = log10(v0/v1) (−∞ when EP does not converge there).
    fn slab_point(&mut self, base: SpikeSlab, t: f64, phase: &str) -> Result<f64, EngineError> {
        let prior = with_t(base, t);
        let (log_z, sweeps) = self
            .eval(prior)?
            .map_or((None, None), |o| (o.evidence.log_z(), Some(o.sweeps)));
        self.slab_trace.push(json!({
            "phase": phase, "spike_over_slab": 10f64.powf(t), "slab_var": prior.slab_var,
            "incl": prior.incl, "log_z": log_z, "sweeps": sweeps, "converged": sweeps.is_some(),
        }));
        (self.hooks.log)(
            LogLevel::Info,
            format!(
                "ep spike-slab: v1 = {:.4e} (v0/v1 = {:.3e}): log Z_EP = {}",
                prior.slab_var,
                10f64.powf(t),
                log_z.map_or("- (did not converge)".into(), |z| format!("{z:.6}"))
            ),
        );
        Ok(log_z.unwrap_or(f64::NEG_INFINITY))
    }

    /// The t of largest log Z_EP (`select::maximise`): the grid's best point
    /// (`around` None), or the best grid-step neighbour of `around` walked
    /// uphill; then golden section within a grid step of it.
    fn search_slab(&mut self, base: SpikeSlab, around: Option<f64>) -> Result<f64, EngineError> {
        let best = maximise(
            &mut |t, phase| self.slab_point(base, t, phase.name()),
            &SLAB_RANGE,
            around,
        )?;
        best.ok_or_else(|| EngineError::NotConverged {
            reason: NonConvergence::SearchFailed,
            account: None,
            message: if around.is_none() {
                "choosing v1 by evidence: EP converged at no v0/v1 in [1e-6, 0.1]".into()
            } else {
                "choosing v1 by evidence: EP did not converge near the best v0/v1".into()
            },
            diagnostics: json!({ "trace": self.slab_trace }),
        })
    }

    /// p by its fixed-point iteration at `base`'s variances
    /// (`select::fixed_point`, no step halving); the last p at which EP
    /// converged, and whether p settled.
    fn search_incl(&mut self, base: SpikeSlab) -> Result<(f64, bool), EngineError> {
        let rule = FixedPointRule {
            max_iter: INCLUSION_ITERS,
            halvings: 0,
            reevaluate: false,
        };
        let me = RefCell::new(self);
        // An evaluation: log Z_EP, sweeps and the mean inclusion at p.
        let fp = fixed_point(
            base.incl,
            &rule,
            &mut |&p: &f64| {
                let mut t = me.borrow_mut();
                match t.eval(SpikeSlab { incl: p, ..base })? {
                    Some(o) => Ok((
                        o.evidence.log_z(),
                        o.sweeps,
                        o.inclusion.iter().sum::<f64>() / o.inclusion.len() as f64,
                    )),
                    None => Err(EngineError::NotConverged {
                        reason: NonConvergence::SearchFailed,
                        account: None,
                        message: format!("choosing p by evidence: EP did not converge at p = {p}"),
                        diagnostics: json!({ "trace": t.incl_trace }),
                    }),
                }
            },
            &mut |&p, &(log_z, sweeps, next), iteration| {
                let mut t = me.borrow_mut();
                t.incl_trace.push(json!({
                    "iteration": iteration, "incl": p, "slab_var": base.slab_var, "log_z": log_z,
                    "sweeps": sweeps, "next": next,
                }));
                (t.hooks.log)(
                    LogLevel::Info,
                    format!(
                        "ep spike-slab: p = {p:.5}, log Z_EP = {}, next p = {next:.5}",
                        log_z.map_or("-".into(), |z| format!("{z:.6}"))
                    ),
                );
                (next, (next / p).ln().abs() < INCLUSION_TOL)
            },
            &|_, &next, _| next,
        )?;
        if let Some(next) = fp.gave_up_at {
            // Keep the last p at which EP converged.
            let t = me.into_inner();
            (t.hooks.log)(
                LogLevel::Warn,
                format!(
                    "ep spike-slab: EP did not converge at p = {next:.5}; keeping p = {:.5}",
                    fp.point
                ),
            );
        }
        Ok((fp.point, fp.settled))
    }
}

fn with_t(base: SpikeSlab, t: f64) -> SpikeSlab {
    SpikeSlab {
        slab_var: base.spike_var / 10f64.powf(t),
        ..base
    }
}

/// Chooses the constants `what` asks for, starting from `start`, and leaves
/// the model at the chosen prior's fixed point.
pub fn run(
    model: &mut SpikeSlabEp,
    start: SpikeSlab,
    gamma: f64,
    s: &SsSettings,
    ctl: &Control,
    what: Tuning,
    hooks: &mut Hooks<'_>,
) -> Result<Tuned, EngineError> {
    let mut tuner = Tuner {
        model,
        gamma,
        s,
        ctl,
        hooks,
        last: None,
        incl_trace: Vec::new(),
        slab_trace: Vec::new(),
    };
    /// The coordinate ascent's state.
    struct Ascent<'t, 'a, 'h> {
        tuner: &'t mut Tuner<'a, 'h>,
        prior: SpikeSlab,
        t: Option<f64>,
        incl_converged: bool,
    }
    let mut st = Ascent {
        tuner: &mut tuner,
        prior: start,
        t: None,
        incl_converged: true,
    };
    // v1 first, then p.
    let coords: Vec<bool> = [what.slab.then_some(true), what.incl.then_some(false)]
        .into_iter()
        .flatten()
        .collect();
    let (rounds, rounds_converged) =
        coordinate_ascent(&mut st, ROUNDS, coords.len(), &mut |st, i| {
            if coords[i] {
                let new_t = st.tuner.search_slab(st.prior, st.t)?;
                let moved = st.t.is_none_or(|t| (new_t - t).abs() > SLAB_RANGE.tol);
                st.prior = with_t(st.prior, new_t);
                st.t = Some(new_t);
                Ok(moved)
            } else {
                let (p, settled) = st.tuner.search_incl(st.prior)?;
                st.incl_converged = settled;
                let moved = (p / st.prior.incl).ln().abs() > INCLUSION_TOL;
                st.prior.incl = p;
                Ok(moved)
            }
        })?;
    let (prior, t, incl_converged) = (st.prior, st.t, st.incl_converged);
    let outcome = match tuner.eval(prior)? {
        Some(_) => tuner.last.take().and_then(|(_, o)| o).expect("converged"),
        None => {
            return Err(EngineError::NotConverged {
                reason: NonConvergence::SearchFailed,
                account: None,
                message: "spike-and-slab EP did not converge at the chosen prior".into(),
                diagnostics: json!({ "prior": prior }),
            });
        }
    };
    Ok(Tuned {
        outcome,
        prior,
        incl_trace: tuner.incl_trace,
        incl_converged,
        slab_trace: tuner.slab_trace,
        slab_at_edge: t.is_some_and(|t| SLAB_RANGE.at_edge(t)),
        rounds,
        rounds_converged,
    })
}
