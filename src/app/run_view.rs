//! One run as the explorer sees it: its spec, status, live traces (ring
//! buffers) and, once finished, its record.

use std::path::PathBuf;

use super::ring::Ring;
use crate::engine::Event;
use crate::engine::event::{EpSweep, Histogram, LogLevel, SmcMove, SmcStage, VbIter};
use crate::engine::record::RunRecord;
use crate::spec::{DataSpec, MethodSpec, RunSpec};
use crate::worker::RunId;

/// Points kept per live trace.
pub const TRACE_CAPACITY: usize = 4096;
/// Log lines kept per run.
pub const LOG_CAPACITY: usize = 64;

#[derive(Debug, Clone, PartialEq)]
pub enum RunStatus {
    Queued,
    Running,
    Paused,
    Finished,
    Failed(String),
    Cancelled,
}

impl RunStatus {
    pub fn is_live(&self) -> bool {
        matches!(self, RunStatus::Running | RunStatus::Paused)
    }

    pub fn word(&self) -> &'static str {
        match self {
            RunStatus::Queued => "queued",
            RunStatus::Running => "running",
            RunStatus::Paused => "paused",
            RunStatus::Finished => "done",
            RunStatus::Failed(_) => "failed",
            RunStatus::Cancelled => "cancelled",
        }
    }
}

/// `Started` event contents.
#[derive(Debug, Clone, PartialEq)]
pub struct StartInfo {
    pub engine: String,
    pub n: usize,
    pub d: usize,
    pub pairs: usize,
    pub gamma: f64,
}

#[derive(Debug, Clone)]
pub struct RunView {
    pub id: RunId,
    /// What runs (a replayed run: its record's spec).
    pub spec: RunSpec,
    pub status: RunStatus,
    pub start: Option<StartInfo>,
    /// SMC stages without their histograms.
    pub smc: Ring<SmcStage>,
    /// Progress of the moves of the stage under way (cleared when it ends).
    pub smc_move: Option<SmcMove>,
    pub ep: Ring<EpSweep>,
    /// VB's iterations (L-BFGS steps, or the stochastic optimiser's checks).
    pub vb: Ring<VbIter>,
    /// The latest particle histograms (live snapshot, then the final ones).
    pub histograms: Vec<Histogram>,
    pub logs: Ring<(LogLevel, String)>,
    pub record: Option<Box<RunRecord>>,
    /// Where the record was exported or replayed from.
    pub file: Option<PathBuf>,
}

/// Posterior summaries of one coefficient.
#[derive(Debug, Clone, PartialEq)]
pub struct Coef {
    pub name: String,
    pub mean: f64,
    pub sd: f64,
}

impl RunView {
    pub fn new(id: RunId, spec: RunSpec) -> RunView {
        RunView {
            id,
            spec,
            status: RunStatus::Queued,
            start: None,
            smc: Ring::new(TRACE_CAPACITY),
            smc_move: None,
            ep: Ring::new(TRACE_CAPACITY),
            vb: Ring::new(TRACE_CAPACITY),
            histograms: Vec::new(),
            logs: Ring::new(LOG_CAPACITY),
            record: None,
            file: None,
        }
    }

    /// A finished run read back from its record: the trace is replayed through
    /// the same path as live events, so every pane looks as it did.
    pub fn from_record(id: RunId, record: RunRecord, file: Option<PathBuf>) -> RunView {
        let spec = RunSpec::from_value(&record.spec)
            .ok()
            .or_else(|| RunSpec::for_method(DataSpec::of(&record.dataset.path), &record.method))
            .unwrap_or_default();
        let mut v = RunView::new(id, spec);
        v.status = RunStatus::Finished;
        for e in &record.trace {
            v.apply(e.clone());
        }
        v.histograms = record.histograms.clone();
        v.record = Some(Box::new(record));
        v.file = file;
        v
    }

    pub fn method(&self) -> &str {
        match (&self.record, &self.start) {
            (Some(r), _) => &r.method,
            (None, Some(s)) => &s.engine,
            (None, None) => self.spec.method_name(),
        }
    }

    /// "#3 smc"
    pub fn title(&self) -> String {
        format!("#{} {}", self.id, self.method())
    }

    pub fn apply(&mut self, event: Event) {
        match event {
            Event::Started {
                engine,
                n,
                d,
                pairs,
                gamma,
            } => {
                self.start = Some(StartInfo {
                    engine,
                    n,
                    d,
                    pairs,
                    gamma,
                })
            }
            Event::SmcStage(mut s) => {
                let h = std::mem::take(&mut s.histograms);
                if !h.is_empty() {
                    self.histograms = h;
                }
                self.smc.push(s);
                self.smc_move = None;
            }
            Event::SmcMove(m) => self.smc_move = Some(m),
            Event::EpSweep(s) => self.ep.push(s),
            Event::VbIter(it) => self.vb.push(it),
            Event::Log { level, message } => self.logs.push((level, message)),
        }
    }

    pub fn is_smc(&self) -> bool {
        !self.smc.is_empty() || self.method() == "smc"
    }

    pub fn is_ep(&self) -> bool {
        !self.ep.is_empty() || self.method() == "ep"
    }

    pub fn is_vb(&self) -> bool {
        !self.vb.is_empty() || self.method() == "vb"
    }

    /// A Gaussian approximation (EP or VB): the convergence pane's runs, and
    /// the Gaussian the marginals pane overlays on SMC's particles.
    pub fn is_gaussian(&self) -> bool {
        self.is_ep() || self.is_vb()
    }

    /// Posterior means and sds: the record's when finished, else the latest
    /// stage's or sweep's.
    pub fn coefficients(&self, names: &[String]) -> Vec<Coef> {
        if let Some(r) = &self.record {
            return r
                .coefficients
                .iter()
                .map(|c| Coef {
                    name: c.name.clone(),
                    mean: c.mean,
                    sd: c.sd,
                })
                .collect();
        }
        let (mean, sd) = match (self.smc.last(), self.ep.last(), self.vb.last()) {
            (Some(s), _, _) => (&s.mean, &s.sd),
            (None, Some(e), _) => (&e.mean, &e.sd),
            (None, None, Some(v)) => (&v.mean, &v.sd),
            (None, None, None) => return Vec::new(),
        };
        // An engine may leave out the sds of intermediate sweeps (costly to form).
        mean.iter()
            .enumerate()
            .map(|(k, &mean)| Coef {
                name: names
                    .get(k)
                    .cloned()
                    .unwrap_or_else(|| format!("θ{}", k + 1)),
                mean,
                sd: sd.get(k).copied().unwrap_or(f64::NAN),
            })
            .collect()
    }

    /// Inclusion probabilities by feature: the record's when finished, else the
    /// latest SMC stage's or EP sweep's (the pane fills while a spike-and-slab run
    /// goes on).
    pub fn inclusion(&self, names: &[String]) -> Option<Vec<(String, f64)>> {
        if let Some(r) = &self.record {
            return Some(
                r.inclusion
                    .as_ref()?
                    .iter()
                    .map(|i| (i.name.clone(), i.prob))
                    .collect(),
            );
        }
        let probs = match (self.smc.last(), self.ep.last()) {
            (Some(s), _) => s.inclusion.as_ref()?,
            (None, Some(e)) => e.inclusion.as_ref()?,
            (None, None) => return None,
        };
        Some(
            probs
                .iter()
                .enumerate()
                .map(|(k, &p)| {
                    let name = names.get(k).cloned();
                    (name.unwrap_or_else(|| format!("θ{}", k + 1)), p)
                })
                .collect(),
        )
    }

    /// Seconds since the start: the record's fit time, else the latest event's.
    pub fn elapsed(&self) -> Option<f64> {
        if let Some(r) = &self.record {
            return Some(r.seconds.fit);
        }
        let a = self.smc.last().map(|s| s.elapsed);
        let b = self.ep.last().map(|s| s.elapsed);
        let c = self.vb.last().map(|s| s.elapsed);
        a.into_iter().chain(b).chain(c).reduce(f64::max)
    }

    /// EP's convergence tolerance (its spec's, else the default).
    pub fn ep_tol(&self) -> f64 {
        match &self.spec.method {
            MethodSpec::Ep(e) => e.tol,
            _ => crate::spec::EpSpec::default().tol,
        }
    }

    /// The target ESS fraction τ of an SMC run (its spec's, else the default).
    pub fn ess_target(&self) -> f64 {
        match &self.spec.method {
            MethodSpec::Smc(s) => s.ess,
            _ => crate::spec::SmcSpec::default().ess,
        }
    }
}
