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

use serde_json::{Value, json};

use super::model::{SpikeSlab, SpikeSlabEp};
use super::sweep::{SsOutcome, SsSettings, SsSweepInfo};
use crate::engine::ep::design::Design;
use crate::engine::event::LogLevel;
use crate::engine::run::{Control, EngineError};

/// Most fixed-point iterations for p, and their stopping rule (relative change).
const INCLUSION_ITERS: usize = 50;
const INCLUSION_TOL: f64 = 1e-3;
/// The range of t = log10(v0/v1), the grid step and the golden-section width (decades).
const T_RANGE: (f64, f64) = (-6.0, -1.0);
const T_GRID_STEP: f64 = 0.5;
const T_TOL: f64 = 0.05;
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

    /// log Z_EP at t, evaluated once per search (`seen`).
    fn slab_value(
        &mut self,
        base: SpikeSlab,
        t: f64,
        phase: &str,
        seen: &mut Vec<(f64, f64)>,
    ) -> Result<f64, EngineError> {
        if let Some(&(_, f)) = seen.iter().find(|(u, _)| (u - t).abs() < 1e-9) {
            return Ok(f);
        }
        let f = self.slab_point(base, t, phase)?;
        seen.push((t, f));
        Ok(f)
    }

    /// The t of largest log Z_EP: the grid's best point (`around` None), or
    /// the best grid-step neighbour of `around` walked uphill; then golden
    /// section within a grid step of it.
    fn search_slab(&mut self, base: SpikeSlab, around: Option<f64>) -> Result<f64, EngineError> {
        let mut seen: Vec<(f64, f64)> = Vec::new();
        let inside = |t: f64| t >= T_RANGE.0 - 1e-9 && t <= T_RANGE.1 + 1e-9;
        let mut centre = match around {
            Some(t) => t,
            None => {
                let steps = ((T_RANGE.1 - T_RANGE.0) / T_GRID_STEP).round() as usize;
                for i in 0..=steps {
                    let t = T_RANGE.1 - i as f64 * T_GRID_STEP;
                    self.slab_value(base, t, "grid", &mut seen)?;
                }
                best(&seen).ok_or_else(|| EngineError::NotConverged {
                    message: "--slab-var auto: EP converged at no v0/v1 in [1e-6, 0.1]".into(),
                    diagnostics: json!({ "trace": self.slab_trace }),
                })?
            }
        };
        loop {
            let fc = self.slab_value(base, centre, "walk", &mut seen)?;
            let mut next = (centre, fc);
            for t in [centre - T_GRID_STEP, centre + T_GRID_STEP] {
                if inside(t) {
                    let f = self.slab_value(base, t, "walk", &mut seen)?;
                    if f > next.1 {
                        next = (t, f);
                    }
                }
            }
            if next.0 == centre {
                break;
            }
            centre = next.0;
        }
        let (mut a, mut b) = (
            (centre - T_GRID_STEP).max(T_RANGE.0),
            (centre + T_GRID_STEP).min(T_RANGE.1),
        );
        let r = (5f64.sqrt() - 1.0) / 2.0;
        let (mut c, mut d) = (b - r * (b - a), a + r * (b - a));
        let mut fc = self.slab_value(base, c, "golden", &mut seen)?;
        let mut fd = self.slab_value(base, d, "golden", &mut seen)?;
        while b - a > T_TOL {
            if fc >= fd {
                (b, d, fd) = (d, c, fc);
                c = b - r * (b - a);
                fc = self.slab_value(base, c, "golden", &mut seen)?;
            } else {
                (a, c, fc) = (c, d, fd);
                d = a + r * (b - a);
                fd = self.slab_value(base, d, "golden", &mut seen)?;
            }
        }
        best(&seen).ok_or_else(|| EngineError::NotConverged {
            message: "--slab-var auto: EP did not converge near the best v0/v1".into(),
            diagnostics: json!({ "trace": self.slab_trace }),
        })
    }

    /// p by its fixed-point iteration at `base`'s variances; the last p at
    /// which EP converged, and whether p settled.
    fn search_incl(&mut self, base: SpikeSlab) -> Result<(f64, bool), EngineError> {
        let mut p = base.incl;
        for iteration in 1..=INCLUSION_ITERS {
            let Some(out) = self.eval(SpikeSlab { incl: p, ..base })? else {
                return Err(EngineError::NotConverged {
                    message: format!("--inclusion-prior auto: EP did not converge at p = {p}"),
                    diagnostics: json!({ "trace": self.incl_trace }),
                });
            };
            let (log_z, sweeps) = (out.evidence.log_z(), out.sweeps);
            let next = out.inclusion.iter().sum::<f64>() / out.inclusion.len() as f64;
            self.incl_trace.push(json!({
                "iteration": iteration, "incl": p, "slab_var": base.slab_var, "log_z": log_z,
                "sweeps": sweeps, "next": next,
            }));
            (self.hooks.log)(
                LogLevel::Info,
                format!(
                    "ep spike-slab: p = {p:.5}, log Z_EP = {}, next p = {next:.5}",
                    log_z.map_or("-".into(), |z| format!("{z:.6}"))
                ),
            );
            if (next / p).ln().abs() < INCLUSION_TOL {
                return Ok((p, true));
            }
            if iteration == INCLUSION_ITERS {
                break;
            }
            let converged = self.eval(SpikeSlab { incl: next, ..base })?.is_some();
            if !converged {
                // Keep the last p at which EP converged.
                (self.hooks.log)(
                    LogLevel::Warn,
                    format!(
                        "ep spike-slab: EP did not converge at p = {next:.5}; keeping p = {p:.5}"
                    ),
                );
                return Ok((p, false));
            }
            p = next;
        }
        Ok((p, false))
    }
}

fn with_t(base: SpikeSlab, t: f64) -> SpikeSlab {
    SpikeSlab {
        slab_var: base.spike_var / 10f64.powf(t),
        ..base
    }
}

/// The t of the largest finite log Z among `seen`.
fn best(seen: &[(f64, f64)]) -> Option<f64> {
    seen.iter()
        .filter(|(_, f)| f.is_finite())
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|&(t, _)| t)
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
    let mut prior = start;
    let mut t: Option<f64> = None;
    let (mut incl_converged, mut rounds, mut rounds_converged) = (true, 0, true);
    for round in 1..=ROUNDS {
        rounds = round;
        let mut moved = false;
        if what.slab {
            let new_t = tuner.search_slab(prior, t)?;
            moved |= t.is_none_or(|t| (new_t - t).abs() > T_TOL);
            prior = with_t(prior, new_t);
            t = Some(new_t);
        }
        if what.incl {
            let (p, settled) = tuner.search_incl(prior)?;
            incl_converged = settled;
            moved |= (p / prior.incl).ln().abs() > INCLUSION_TOL;
            prior.incl = p;
        }
        if !(what.slab && what.incl && moved) {
            break;
        }
        rounds_converged = round < ROUNDS;
    }
    let outcome = match tuner.eval(prior)? {
        Some(_) => tuner.last.take().and_then(|(_, o)| o).expect("converged"),
        None => {
            return Err(EngineError::NotConverged {
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
        slab_at_edge: t.is_some_and(|t| t - T_RANGE.0 < T_TOL || T_RANGE.1 - t < T_TOL),
        rounds,
        rounds_converged,
    })
}
