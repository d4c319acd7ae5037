//! Progress events that engines stream to an `Observer` (the TUI's panes, the
//! CLI's progress line, the run record's trace).

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LogLevel {
    Info,
    Warn,
}

/// A weighted histogram on [lo, hi] with equal-width bins.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Histogram {
    #[serde(deserialize_with = "nan::f64")]
    pub lo: f64,
    #[serde(deserialize_with = "nan::f64")]
    pub hi: f64,
    #[serde(deserialize_with = "nan::vec")]
    pub counts: Vec<f64>,
}

impl Histogram {
    /// Histogram of `values` (optionally weighted) over their range.
    pub fn of(values: &[f64], weights: Option<&[f64]>, bins: usize) -> Histogram {
        let finite = values.iter().copied().filter(|v| v.is_finite());
        let lo = finite.clone().fold(f64::INFINITY, f64::min);
        let hi = finite.fold(f64::NEG_INFINITY, f64::max);
        let mut counts = vec![0.0; bins.max(1)];
        if !(lo.is_finite() && hi.is_finite()) {
            return Histogram {
                lo: 0.0,
                hi: 0.0,
                counts,
            };
        }
        let width = (hi - lo) / counts.len() as f64;
        for (i, &v) in values.iter().enumerate() {
            if !v.is_finite() {
                continue;
            }
            let b = if width > 0.0 {
                ((v - lo) / width) as usize
            } else {
                0
            };
            let last = counts.len() - 1;
            counts[b.min(last)] += weights.map_or(1.0, |w| w[i]);
        }
        Histogram { lo, hi, counts }
    }
}

/// One tempering stage of SMC (after its moves).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SmcStage {
    pub stage: usize,
    #[serde(deserialize_with = "nan::f64")]
    pub gamma: f64,
    /// ESS of the reweighted cloud before resampling, as a share of N.
    #[serde(deserialize_with = "nan::f64")]
    pub ess_frac: f64,
    /// Acceptance rate of the stage's moves.
    #[serde(deserialize_with = "nan::f64")]
    pub acceptance: f64,
    /// Proposal scale c (random-walk moves).
    #[serde(deserialize_with = "nan::f64")]
    pub scale: f64,
    /// Move steps run in this stage.
    pub moves: usize,
    /// Largest |correlation| of a coordinate (or the risk) with its stage-start
    /// value after the moves (the decorrelation check's measure).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_correlation: Option<f64>,
    #[serde(deserialize_with = "nan::f64")]
    pub log_z: f64,
    #[serde(deserialize_with = "nan::vec")]
    pub mean: Vec<f64>,
    #[serde(deserialize_with = "nan::vec")]
    pub sd: Vec<f64>,
    #[serde(deserialize_with = "nan::f64")]
    pub mean_risk: f64,
    /// The sd of R_n across the stage's particles (the certificate's Monte
    /// Carlo term; absent in records before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub risk_sd: Option<f64>,
    /// Risk evaluations so far.
    pub evaluations: u64,
    /// Seconds since the run started.
    #[serde(deserialize_with = "nan::f64")]
    pub elapsed: f64,
    /// Per-coordinate particle histograms (not kept in run records' traces).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub histograms: Vec<Histogram>,
    /// Spike-and-slab: the particles' inclusion probabilities P(z_k = 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inclusion: Option<Vec<f64>>,
}

/// Progress inside a long SMC stage (its moves), at most a few per second; not
/// kept in run records.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SmcMove {
    pub stage: usize,
    #[serde(deserialize_with = "nan::f64")]
    pub gamma: f64,
    /// Move steps done so far in this stage.
    pub step: usize,
    /// Acceptance rate of this stage's steps so far.
    #[serde(deserialize_with = "nan::f64")]
    pub acceptance: f64,
    /// Largest |correlation| with the stage's start (when measured: adaptive moves).
    pub max_correlation: Option<f64>,
    /// Seconds since the run started.
    #[serde(deserialize_with = "nan::f64")]
    pub elapsed: f64,
}

/// One EP sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EpSweep {
    pub sweep: usize,
    /// max_k relative change of means (in sds) and sds: the convergence measure Δ_t.
    #[serde(deserialize_with = "nan::f64")]
    pub delta: f64,
    pub log_z: Option<f64>,
    /// Damping step used in this sweep.
    #[serde(deserialize_with = "nan::f64")]
    pub eta: f64,
    /// Share of pair sites with a negative precision.
    #[serde(deserialize_with = "nan::f64")]
    pub negative_share: f64,
    /// Sites skipped (degenerate) in this sweep.
    pub skipped: usize,
    #[serde(deserialize_with = "nan::vec")]
    pub mean: Vec<f64>,
    #[serde(deserialize_with = "nan::vec")]
    pub sd: Vec<f64>,
    #[serde(deserialize_with = "nan::f64")]
    pub elapsed: f64,
    /// Spike-and-slab: inclusion probabilities P(z_k = 1) after this sweep.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inclusion: Option<Vec<f64>>,
}

/// A batch of steps of the great-circle sampler's chains (all chains advance
/// the same number of steps per batch).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GcsBatch {
    pub batch: usize,
    /// Steps of every chain so far, warm-up included, and the warm-up length.
    pub steps: usize,
    pub warmup: usize,
    /// Draws kept so far (all chains).
    pub draws: usize,
    /// Over the coefficients and the risk, on the kept draws (None during
    /// warm-up): the largest rank-normalised split R-hat, the smallest bulk and
    /// tail ESS.
    pub rhat: Option<f64>,
    pub ess_bulk: Option<f64>,
    pub ess_tail: Option<f64>,
    /// Per chain, over this batch: mean risk, proposals per step (1 = every
    /// first proposal accepted), mean |jump| along the circle (radians).
    #[serde(deserialize_with = "nan::vec")]
    pub risk: Vec<f64>,
    #[serde(deserialize_with = "nan::vec")]
    pub proposals: Vec<f64>,
    #[serde(deserialize_with = "nan::vec")]
    pub jump: Vec<f64>,
    /// Arcs on each circle (2 per compared pair): what one step sweeps over.
    pub arcs: u64,
    /// Pooled posterior mean and sd of every coefficient so far (after warm-up).
    #[serde(deserialize_with = "nan::vec")]
    pub mean: Vec<f64>,
    #[serde(deserialize_with = "nan::vec")]
    pub sd: Vec<f64>,
    #[serde(deserialize_with = "nan::f64")]
    pub elapsed: f64,
}

/// One iteration of variational Bayes: an accepted L-BFGS step, or a check of
/// the stochastic optimiser (then `objective` is a held-out estimate).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VbIter {
    pub iteration: usize,
    /// γ·E_ρ[R] + KL(ρ ‖ prior).
    #[serde(deserialize_with = "nan::f64")]
    pub objective: f64,
    /// ‖∇‖_∞ of the objective in whitened coordinates (a mini-batch's when stochastic).
    #[serde(deserialize_with = "nan::f64")]
    pub grad_norm: f64,
    /// Line-search step, or the stochastic step size.
    #[serde(deserialize_with = "nan::f64")]
    pub step: f64,
    /// Whether `objective` is a held-out mini-batch estimate.
    #[serde(default)]
    pub estimate: bool,
    #[serde(deserialize_with = "nan::vec")]
    pub mean: Vec<f64>,
    #[serde(deserialize_with = "nan::vec")]
    pub sd: Vec<f64>,
    #[serde(deserialize_with = "nan::f64")]
    pub elapsed: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    Started {
        engine: String,
        n: usize,
        d: usize,
        pairs: usize,
        /// The run's γ; NaN (null in JSON) while cross-validation has yet to
        /// choose it.
        #[serde(deserialize_with = "nan::f64")]
        gamma: f64,
    },
    SmcStage(SmcStage),
    SmcMove(SmcMove),
    /// The start of run `run` (from 1) of `runs` independent SMC runs (only
    /// when runs > 1): the stages that follow, up to the next such event, are
    /// this run's; `seed` reruns it alone.
    SmcRun {
        run: usize,
        runs: usize,
        seed: u64,
    },
    EpSweep(EpSweep),
    GcsBatch(GcsBatch),
    VbIter(VbIter),
    Log {
        level: LogLevel,
        message: String,
    },
}

/// The events of the last of several independent SMC runs (after the last
/// `SmcRun`), or the whole trace when it holds one run.
pub fn last_run(trace: &[Event]) -> &[Event] {
    match trace
        .iter()
        .rposition(|e| matches!(e, Event::SmcRun { .. }))
    {
        Some(i) => &trace[i + 1..],
        None => trace,
    }
}

impl Event {
    /// What a run record's trace keeps of this event: not the in-stage progress
    /// of SMC, not particle histograms (the record has the final ones).
    pub fn for_trace(&self) -> Option<Event> {
        match self {
            Event::SmcMove(_) => None,
            Event::SmcStage(s) if !s.histograms.is_empty() => Some(Event::SmcStage(SmcStage {
                histograms: Vec::new(),
                ..s.clone()
            })),
            e => Some(e.clone()),
        }
    }
}

/// Non-finite numbers are written as JSON `null` (serde_json's rule); these
/// read them back as NaN, so an event log or a record's trace with a NaN (a
/// chain's risk, an sd left out) parses instead of failing.
mod nan {
    use serde::{Deserialize, Deserializer};

    pub fn f64<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
    }

    pub fn vec<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<f64>, D::Error> {
        let v = Vec::<Option<f64>>::deserialize(d)?;
        Ok(v.into_iter().map(|x| x.unwrap_or(f64::NAN)).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_finite_numbers_read_back_as_nan() {
        let e = Event::EpSweep(EpSweep {
            sweep: 3,
            delta: f64::INFINITY,
            log_z: None,
            eta: 0.5,
            negative_share: 0.0,
            skipped: 0,
            mean: vec![1.0, f64::NAN],
            sd: vec![f64::NAN, 2.0],
            elapsed: 0.25,
            inclusion: None,
        });
        let text = serde_json::to_string(&e).unwrap();
        assert!(text.contains("null"), "{text}");
        let Event::EpSweep(back) = serde_json::from_str::<Event>(&text).unwrap() else {
            panic!("{text}")
        };
        assert!(back.delta.is_nan() && back.mean[1].is_nan() && back.sd[0].is_nan());
        assert_eq!((back.mean[0], back.sd[1], back.sweep), (1.0, 2.0, 3));
    }
}
