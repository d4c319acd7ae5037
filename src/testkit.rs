//! Test support for the explorer: a scripted engine that replays SMC stages or
//! EP sweeps with small delays (pause/cancel checked between events) and
//! returns a `Fit` with particles, histograms and, for spike-and-slab,
//! inclusion probabilities. It exercises every pane without the real SMC and EP
//! engines; it is not reachable from the command line.

use std::time::Duration;

use nalgebra::DMatrix;

use crate::engine::event::{EpSweep, Histogram, SmcStage};
use crate::engine::fit::EngineKind;
use crate::engine::fit::Particles;
use crate::engine::numerics::rng::{normal, stream};
use crate::engine::{Control, Engine, EngineError, Event, Fit, Observer, Problem, ScoreModel};

/// Events to replay and the fit to return.
#[derive(Debug, Clone)]
pub struct Script {
    pub events: Vec<Event>,
    pub fit: Fit,
}

/// A deterministic "posterior" for `d` coefficients: a few strong ones, the
/// rest near zero.
pub fn posterior(d: usize) -> (Vec<f64>, Vec<f64>) {
    let mean = (0..d)
        .map(|k| match k % 5 {
            0 => 1.6 / (1.0 + (k / 5) as f64),
            1 => -0.9 / (1.0 + (k / 5) as f64),
            r => 0.08 * (r as f64 - 3.0),
        })
        .collect();
    let sd = (0..d).map(|k| 0.25 + 0.05 * (k % 3) as f64).collect();
    (mean, sd)
}

const BINS: usize = 30;

/// Particles drawn around the posterior and their per-coordinate histograms.
fn particles(mean: &[f64], sd: &[f64], n: usize, seed: u64) -> (Particles, Vec<Histogram>) {
    let d = mean.len();
    let mut rng = stream(seed, &[42]);
    let theta = DMatrix::from_fn(n, d, |_, k| mean[k] + sd[k] * normal(&mut rng));
    let hists = (0..d)
        .map(|k| {
            let col: Vec<f64> = theta.column(k).iter().copied().collect();
            Histogram::of(&col, None, BINS)
        })
        .collect();
    (
        Particles {
            theta,
            weights: None,
            thresholds: None,
        },
        hists,
    )
}

/// A "posterior" that ranks like the data: the difference of the class means
/// of the standardised training rows (a crude linear discriminant).
pub fn posterior_of(p: &crate::engine::data::Prepared) -> (Vec<f64>, Vec<f64>) {
    let x = &p.train.x;
    let y = &p.train.y;
    let (np, nn) = (
        p.train.positives().max(1) as f64,
        p.train.negatives().max(1) as f64,
    );
    let mean = (0..x.ncols())
        .map(|k| {
            let (mut a, mut b) = (0.0, 0.0);
            for (i, &yi) in y.iter().enumerate() {
                if yi { a += x[(i, k)] } else { b += x[(i, k)] }
            }
            3.0 * (a / np - b / nn)
        })
        .collect();
    let sd = (0..x.ncols())
        .map(|k| 0.3 + 0.05 * (k % 3) as f64)
        .collect();
    (mean, sd)
}

/// An SMC run: `stages` stages from γ = 0 to `gamma`.
pub fn smc(names: &[String], gamma: f64, stages: usize, seed: u64) -> Script {
    smc_with(names, posterior(names.len()), gamma, stages, seed)
}

/// An SMC run around a given posterior (mean, sd).
pub fn smc_with(
    names: &[String],
    post: (Vec<f64>, Vec<f64>),
    gamma: f64,
    stages: usize,
    seed: u64,
) -> Script {
    let d = names.len();
    let (mean, sd) = post;
    let stages = stages.max(1);
    let mut events = Vec::new();
    let mut log_z = 0.0;
    let mut hists = Vec::new();
    for t in 1..=stages {
        let frac = t as f64 / stages as f64;
        let g = gamma * frac * frac;
        log_z -= 0.4 * frac;
        let m: Vec<f64> = mean.iter().map(|v| v * frac.sqrt()).collect();
        let s: Vec<f64> = sd.iter().map(|v| v * (2.0 - frac)).collect();
        hists = particles(&m, &s, 400, seed + t as u64).1;
        events.push(Event::SmcStage(SmcStage {
            stage: t,
            gamma: g,
            ess_frac: 0.5 + 0.02 * ((t % 3) as f64 - 1.0),
            acceptance: 0.45 - 0.2 * frac,
            scale: 2.38 / (d as f64).sqrt(),
            moves: 5 + t,
            max_correlation: Some(0.5 / t as f64),
            log_z,
            mean: m,
            sd: s,
            mean_risk: 0.5 - 0.3 * frac,
            evaluations: (t * 2000) as u64,
            elapsed: 0.05 * t as f64,
            histograms: hists.clone(),
            inclusion: None,
        }));
    }
    let (p, final_hists) = particles(&mean, &sd, 2000, seed);
    let _ = hists;
    let mut fit = Fit::new(
        EngineKind::Smc,
        names.to_vec(),
        ScoreModel::Linear {
            weights: mean.clone(),
        },
    );
    fit.mean = mean;
    fit.sd = sd;
    fit.log_evidence = Some(log_z);
    fit.gamma = Some(gamma);
    fit.histograms = final_hists;
    fit.particles = Some(p);
    Script { events, fit }
}

/// An EP run converging geometrically in `sweeps` sweeps; with `spike_slab`
/// the fit carries inclusion probabilities.
pub fn ep(names: &[String], gamma: f64, sweeps: usize, spike_slab: bool) -> Script {
    ep_with(names, posterior(names.len()), gamma, sweeps, spike_slab)
}

/// An EP run around a given posterior (mean, sd).
pub fn ep_with(
    names: &[String],
    post: (Vec<f64>, Vec<f64>),
    gamma: f64,
    sweeps: usize,
    spike_slab: bool,
) -> Script {
    let (mean, sd) = post;
    // EP is a little narrower than the particles, as on real data.
    let sd: Vec<f64> = sd.iter().map(|s| 0.85 * s).collect();
    let sweeps = sweeps.max(1);
    let events = (1..=sweeps)
        .map(|t| {
            let r = 0.6f64.powi(t as i32);
            Event::EpSweep(EpSweep {
                sweep: t,
                delta: 2.0 * r,
                log_z: Some(-70.0 + 5.0 * (1.0 - r)),
                eta: if t > sweeps / 2 { 0.35 } else { 0.7 },
                negative_share: 0.12 + 0.05 * r,
                skipped: usize::from(t == 1),
                mean: mean.iter().map(|m| m * (1.0 - r)).collect(),
                sd: sd.iter().map(|s| s * (1.0 + r)).collect(),
                elapsed: 0.002 * t as f64,
                inclusion: None,
            })
        })
        .collect();
    let mut fit = Fit::new(
        EngineKind::Ep,
        names.to_vec(),
        ScoreModel::Linear {
            weights: mean.clone(),
        },
    );
    fit.inclusion = spike_slab.then(|| {
        mean.iter()
            .zip(&sd)
            .map(|(m, s)| 1.0 / (1.0 + (3.0 - (m / s).abs()).exp()))
            .collect()
    });
    fit.mean = mean;
    fit.sd = sd;
    fit.log_evidence = Some(-65.0);
    fit.gamma = Some(gamma);
    Script { events, fit }
}

/// Replays a script; `checkpoint` before every event, so pause and cancel work.
pub struct ScriptedEngine {
    pub name: &'static str,
    pub script: Script,
    pub delay: Duration,
}

impl Engine for ScriptedEngine {
    fn name(&self) -> &'static str {
        self.name
    }

    fn params(&self) -> serde_json::Value {
        serde_json::json!({"scripted": true, "events": self.script.events.len()})
    }

    fn run(
        &self,
        problem: &Problem,
        ctl: &Control,
        obs: &mut dyn Observer,
    ) -> Result<Fit, EngineError> {
        obs.observe(Event::Started {
            engine: self.name.to_string(),
            n: problem.n(),
            d: problem.d(),
            pairs: problem.pairs(),
            gamma: problem.gamma,
        });
        for e in &self.script.events {
            ctl.checkpoint()?;
            if !self.delay.is_zero() {
                std::thread::sleep(self.delay);
            }
            obs.observe(e.clone());
        }
        ctl.checkpoint()?;
        Ok(self.script.fit.clone())
    }
}

/// The bundled demo data as the explorer loads it by default.
pub fn demo() -> (
    crate::engine::data::Dataset,
    crate::engine::data::Prepared,
    crate::spec::DataSpec,
) {
    let spec = crate::spec::DataSpec::of(crate::cli::DEMO_FILE);
    let (ds, p) = spec.load().expect("demo data loads");
    (ds, p, spec)
}

/// The record of a scripted run, with fixed timings (deterministic screens);
/// its spec is the default of the fit's method on the demo data.
pub fn record(
    ds: &crate::engine::data::Dataset,
    p: &crate::engine::data::Prepared,
    script: &Script,
) -> crate::engine::record::RunRecord {
    let mut fit = script.fit.clone();
    fit.trace = script.events.clone();
    for e in &mut fit.trace {
        if let Event::SmcStage(s) = e {
            s.histograms.clear();
        }
    }
    let s = crate::engine::record::Seconds {
        load: 0.01,
        fit: 0.5,
        total: 0.51,
    };
    let spec = crate::spec::RunSpec::for_method(
        crate::spec::DataSpec::of(crate::cli::DEMO_FILE),
        fit.engine.as_str(),
    )
    .unwrap_or_default();
    crate::engine::record::RunRecord::new(
        ds,
        p,
        &fit,
        spec.to_value(),
        serde_json::json!({"scripted": true}),
        s,
    )
}

/// The explorer drawn at `w`×`h` as text, one line per row (right-trimmed),
/// for tests that read the screen.
pub fn screen(app: &crate::app::App, w: u16, h: u16) -> String {
    use ratatui::{Terminal, backend::TestBackend};
    let mut t = Terminal::new(TestBackend::new(w, h)).expect("a test terminal");
    t.draw(|f| crate::tui::ui::render(app, f)).expect("a frame");
    let buf = t.backend().buffer();
    let mut out = String::new();
    for y in 0..buf.area.height {
        let line: String = (0..buf.area.width).map(|x| buf[(x, y)].symbol()).collect();
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}
