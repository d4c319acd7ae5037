//! The adaptive tempering loop (RACL14 Alg. 1, ALGORITHMS.md §3), generic over
//! the `Target`: prior draws, then per stage the next γ by ESS, the evidence
//! increment, resampling and moves (standard: every particle moves until it has
//! decorrelated from its stage-start value; waste-free: N/P chains of P states).

use std::time::Instant;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

pub use super::checkpoint::{AfterCheckpoint, Checkpoint, Checkpoints};
use super::copies;
use super::delayed::DelayedStats;
use super::energy_mixing::{self, EnergyMixing, max_correlation};
use super::fit_pool::{Snapshots, stage_proposal};
use super::left_behind::{self, LeftBehind};
use super::mixture::{self, MixtureMove, MixtureStats};
use super::moves::{self, Chains, Kernel, Proposals, StepSpec};
use super::settings::{Moves, SmcSettings};
use super::target::Target;
use super::tempering::{next_delta, reweight, systematic};
use crate::engine::error::NonConvergence;
use crate::engine::event::{Event, Histogram, SmcMove, SmcStage};
use crate::engine::interface::{Control, EngineError, Observer};
use crate::engine::numerics::rng::{self, Rng};

/// RNG stream keys (with the seed): prior draws, resampling, moves.
const KEY_PRIOR: u64 = 0x5EED_0001;
const KEY_RESAMPLE: u64 = 0x5EED_0002;
const KEY_MOVE: u64 = 0x5EED_0003;

/// Bins of the per-coordinate histograms streamed with each stage.
pub const HIST_BINS: usize = 40;

/// One stage of the γ path.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StageInfo {
    pub stage: usize,
    pub gamma: f64,
    pub log_z: f64,
    /// ESS / N of the reweighted cloud before resampling.
    pub ess_frac: f64,
    pub acceptance: f64,
    /// Step size at the end of the stage (c, or √(1−ρ²) for pCN kinds).
    pub scale: f64,
    pub moves: usize,
    /// Largest |correlation| of a coordinate (or the risk) with its value at the
    /// start of the moves (standard mode) or of the chain (waste-free).
    pub max_correlation: f64,
    /// Share of particles (chains) that never moved in the stage.
    pub unmoved: f64,
    /// Share of particles that are unmoved copies of another particle of the
    /// same ancestor (the cloud's duplicates left by resampling).
    #[serde(default)]
    pub duplicated: f64,
    /// Share of the stage's chains that start from distinct particles after
    /// resampling (1 at stage 0): the cloud's diversity before the moves.
    #[serde(default)]
    pub ancestors: f64,
    /// Largest group of resampled copies of one ancestor that the moves all
    /// left in place (see `copies`): a large group marks a state far in the
    /// low-risk tail that resampling multiplied and the proposals rarely leave
    /// (docs/BENCHMARKS.md, "log Z at 84 features: one lucky lineage").
    #[serde(default)]
    pub stuck_copies: usize,
    /// First move step at which the correlation criterion held (standard mode).
    #[serde(default)]
    pub decorrelated_at: Option<usize>,
    /// Mean squared jump per move (Euclidean).
    pub esjd: f64,
    /// The skew-copula kernel: coordinates some fold found skewed (0: the
    /// stage moved by plain gpcn, else by the copula).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skewed: Option<usize>,
    /// How far the moves refreshed the chains' risk (standard mode; see
    /// `energy_mixing`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy: Option<EnergyMixing>,
    /// The chains the moves left near their start (see `left_behind`;
    /// kernels that move whitened states).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub left_behind: Option<LeftBehind>,
    /// The mixture move's counts (stages that took `MIXTURE_AFTER` moves
    /// without decorrelating; see `mixture`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mixture: Option<MixtureStats>,
    /// Delayed acceptance's counts (a target with a surrogate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub surrogate: Option<DelayedStats>,
    pub mean_risk: f64,
    /// sd of R_n across the particles.
    pub risk_sd: f64,
    pub evaluations: u64,
    pub elapsed: f64,
}

/// The particle cloud at the end of a run (row-major N × d) and its history.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SmcRun {
    pub d: usize,
    /// The move kernel used (`Auto` resolved).
    pub kernel: Kernel,
    /// The particles as model parameters θ.
    pub theta: Vec<f64>,
    /// The particles in the sampler's coordinates (θ itself unless the target
    /// reparametrises, see `Target::natural`).
    pub state: Vec<f64>,
    pub risk: Vec<f64>,
    pub log_z: f64,
    pub path: Vec<StageInfo>,
    pub trace: Vec<Event>,
    pub evaluations: u64,
    /// Every moving stage met the decorrelation threshold.
    pub decorrelated: bool,
    /// Seconds in the sampler.
    pub elapsed: f64,
    /// The run a phase-jump rerun replaced (`phase_rerun`), if one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase_jump: Option<super::phase_rerun::PhaseJump>,
}

/// Runs SMC from the prior to `gamma_target`.
pub fn run<T: Target + ?Sized>(
    target: &T,
    gamma_target: f64,
    s: &SmcSettings,
    ctl: &Control,
    obs: &mut dyn Observer,
) -> Result<SmcRun, EngineError> {
    run_checkpointed(target, gamma_target, s, ctl, obs, None)
}

/// Runs SMC from the prior to `gamma_target`, stopping exactly at every
/// checkpoint on the way (see `Checkpoints`).
pub fn run_checkpointed<T: Target + ?Sized>(
    target: &T,
    gamma_target: f64,
    s: &SmcSettings,
    ctl: &Control,
    obs: &mut dyn Observer,
    mut checkpoints: Option<Checkpoints<'_>>,
) -> Result<SmcRun, EngineError> {
    s.validate(target.dim())?;
    let kernel = s.kernel.resolve(target.dim(), target.prior_is_gaussian());
    if kernel == Kernel::Pcn && !target.prior_is_gaussian() {
        return Err(EngineError::InvalidParams(
            "the pcn kernel needs a Gaussian prior (gaussian or ard); use `kernel` rw or gpcn"
                .into(),
        ));
    }
    let d = target.dim();
    let prior_sd = target
        .prior_sds()
        .filter(|_| target.scale_invariant() && d >= 2);
    if kernel == Kernel::Sphere && prior_sd.is_none() {
        return Err(EngineError::InvalidParams(
            "the sphere kernel needs a risk that depends on the direction of θ only, a \
             zero-mean Gaussian prior (gaussian or ard) and at least 2 parameters"
                .into(),
        ));
    }
    let t0 = Instant::now();
    let n = s.particles;

    // Stage 0: the prior.
    let mut theta = vec![0.0; n * d];
    theta.par_chunks_mut(d).enumerate().for_each(|(i, row)| {
        target.sample_prior(&mut rng::stream(s.seed, &[KEY_PRIOR, i as u64]), row)
    });
    let mut risk = vec![0.0; n];
    target.risks(&theta, &mut risk);
    let mut evaluations = n as u64;
    let mut gamma = 0.0;
    let mut log_z = 0.0;
    let mut path = Vec::new();
    let mut trace = Vec::new();
    let mut scale = s.scale.unwrap_or_else(|| kernel.initial_scale(d));
    let mut decorrelated = true;
    emit(
        StageInfo {
            stage: 0,
            gamma: 0.0,
            log_z: 0.0,
            ess_frac: 1.0,
            acceptance: 0.0,
            scale,
            moves: 0,
            max_correlation: 0.0,
            unmoved: 0.0,
            duplicated: 0.0,
            ancestors: 1.0,
            stuck_copies: 0,
            decorrelated_at: None,
            esjd: 0.0,
            skewed: None,
            energy: None,
            left_behind: None,
            mixture: None,
            surrogate: None,
            mean_risk: mean(&risk),
            risk_sd: sd(&risk),
            evaluations,
            elapsed: t0.elapsed().as_secs_f64(),
        },
        &natural(target, &theta, d),
        target,
        obs,
        &mut trace,
        &mut path,
    );

    let mut buf = Proposals::default();
    let mut stage = 0usize;
    // Particle i of the cloud descends from chain `i mod families` (prior
    // draws: each its own).
    let mut families = n;
    // Snapshots of the last stage's chains (θ, risk) for the next fits.
    let mut pool: (Vec<f64>, Vec<f64>) = (Vec::new(), Vec::new());
    let mut prev_steps = 0;
    while gamma < gamma_target {
        ctl.checkpoint()?;
        stage += 1;
        if stage > s.max_stages {
            return Err(EngineError::NotConverged {
                reason: NonConvergence::StageCap,
                account: None,
                message: format!(
                    "SMC reached its cap of {} stages at γ = {gamma:.6} of γ_T = {gamma_target}: \
                     raise `max_stages`, or use more `particles` or a smaller `gamma`",
                    s.max_stages
                ),
                diagnostics: serde_json::to_value(&path).unwrap_or_default(),
            });
        }
        // A checkpoint caps the step, so that a stage lands on it exactly.
        let stop_at = checkpoints
            .as_ref()
            .and_then(|c| c.gammas.iter().copied().find(|&g| g > gamma))
            .map_or(gamma_target, |g| g.min(gamma_target));
        let remaining = stop_at - gamma;
        let delta = next_delta(&risk, remaining, s.ess);
        let rw = reweight(&risk, delta);
        log_z += rw.log_z_increment;
        let new_gamma = if delta >= remaining {
            stop_at
        } else {
            gamma + delta
        };
        if new_gamma <= gamma || new_gamma.is_nan() {
            return Err(EngineError::Numerical(format!(
                "the tempering step vanished at γ = {gamma} (ESS target {} too close to 1?)",
                s.ess
            )));
        }
        gamma = new_gamma;
        let prop = stage_proposal(
            kernel,
            (&theta, &risk),
            &rw.weights,
            (&pool.0, &pool.1),
            delta,
            d,
            families,
            prior_sd.as_deref(),
        );
        let fold_of = &prop.fold_of;

        let chains_n = match s.waste_free {
            Some(p) => n / p,
            None => n,
        };
        let mut ancestors = systematic(
            &rw.weights,
            chains_n,
            &mut rng::stream(s.seed, &[KEY_RESAMPLE, stage as u64]),
        );
        // Chains of one fit adjacent (stable: copies of an ancestor stay adjacent).
        ancestors.sort_by_key(|&a| fold_of[a]);
        let distinct = 1 + ancestors.windows(2).filter(|w| w[0] != w[1]).count();
        let mut chains = Chains {
            d,
            theta: ancestors
                .iter()
                .flat_map(|&a| theta[a * d..(a + 1) * d].iter().copied())
                .collect(),
            white: Vec::new(),
            risk: ancestors.iter().map(|&a| risk[a]).collect(),
            log_prior: vec![0.0; chains_n],
            rng: (0..chains_n)
                .map(|j| rng::stream(s.seed, &[KEY_MOVE, stage as u64, j as u64]))
                .collect::<Vec<Rng>>(),
            fold: ancestors.iter().map(|&a| fold_of[a]).collect(),
            surrogate: Vec::new(),
            jac: Vec::new(),
        };
        chains
            .log_prior
            .par_iter_mut()
            .zip(chains.theta.par_chunks(d))
            .for_each(|(lp, t)| *lp = target.log_prior(t));
        match &prop.chart {
            Some(ch) => ch.whiten_chains(&mut chains, &prop.fits),
            None => chains.whiten_mapped(&prop.fits, prop.maps.as_deref()),
        }
        let mv = move_stage(
            target,
            s,
            StepSpec {
                kernel: prop.kernel,
                gamma,
                scale,
                fits: &prop.fits,
                radial: s.radial,
                chart: prop.chart.as_ref(),
                maps: prop.maps.as_deref(),
                df: s.proposal_df,
                local_share: s.local_share,
                direction: s.direction_moves
                    && target.scale_invariant()
                    && target.prior_is_gaussian(),
            },
            StageStart {
                chains,
                ancestors: &ancestors,
                snapshots: Snapshots::plan(prev_steps, chains_n, d),
            },
            &mut buf,
            ctl,
            &mut MoveProgress {
                obs: &mut *obs,
                stage,
                gamma,
                t0,
                last: Instant::now(),
            },
        )?;
        scale = mv.scale;
        evaluations += mv.full_evaluations as u64;
        // Waste-free clouds are step-major: particle i belongs to chain i mod M.
        families = chains_n;
        theta = mv.theta;
        risk = mv.risk;
        pool = mv.snapshots;
        prev_steps = mv.steps;
        let (steps, max_corr, unmoved) = (mv.steps, mv.max_corr, mv.unmoved);
        let (accepted, proposed, esjd_sum) = (mv.accepted, mv.steps * chains_n, mv.esjd_sum);
        if max_corr > s.decorrelation || mv.duplicated > s.max_duplicated {
            decorrelated = false;
        }
        let cloud = natural(target, &theta, d);
        emit(
            StageInfo {
                stage,
                gamma,
                log_z,
                ess_frac: rw.ess_frac,
                acceptance: accepted as f64 / proposed.max(1) as f64,
                scale,
                moves: steps,
                max_correlation: max_corr,
                unmoved,
                duplicated: mv.duplicated,
                ancestors: distinct as f64 / chains_n as f64,
                stuck_copies: mv.stuck_copies,
                decorrelated_at: mv.decorrelated_at,
                esjd: esjd_sum / steps.max(1) as f64,
                skewed: prop.skewed,
                energy: mv.energy,
                left_behind: mv.left_behind,
                mixture: mv.mixture,
                surrogate: target.surrogate().map(|_| DelayedStats {
                    proposals: proposed,
                    full_evaluations: mv.full_evaluations,
                    accepted,
                }),
                mean_risk: mean(&risk),
                risk_sd: sd(&risk),
                evaluations,
                elapsed: t0.elapsed().as_secs_f64(),
            },
            &cloud,
            target,
            obs,
            &mut trace,
            &mut path,
        );
        if let Some(c) = checkpoints.as_mut()
            && let Some(index) = c.gammas.iter().position(|&g| g == gamma)
        {
            let at = Checkpoint {
                index,
                theta: &cloud,
                d,
                stage: path.last().expect("a stage was just recorded"),
                decorrelated,
                evaluations,
            };
            if (c.at)(&at) == AfterCheckpoint::Stop {
                break;
            }
        }
    }
    Ok(SmcRun {
        d,
        kernel,
        theta: natural(target, &theta, d),
        state: theta,
        risk,
        log_z,
        path,
        trace,
        evaluations,
        decorrelated,
        elapsed: t0.elapsed().as_secs_f64(),
        phase_jump: None,
    })
}

/// The cloud after a stage's moves, with the moves' statistics.
struct Moved {
    theta: Vec<f64>,
    risk: Vec<f64>,
    steps: usize,
    accepted: usize,
    full_evaluations: usize,
    esjd_sum: f64,
    max_corr: f64,
    unmoved: f64,
    duplicated: f64,
    stuck_copies: usize,
    decorrelated_at: Option<usize>,
    energy: Option<EnergyMixing>,
    left_behind: Option<LeftBehind>,
    mixture: Option<MixtureStats>,
    /// Snapshots of the chains for the next stage's fits (θ, risk).
    snapshots: (Vec<f64>, Vec<f64>),
    /// Step size after adaptation.
    scale: f64,
}

/// Streams `SmcMove` events from inside a stage, at most every `MOVE_EVENT_EVERY`
/// (events only: the results do not depend on timing).
struct MoveProgress<'a> {
    obs: &'a mut dyn Observer,
    stage: usize,
    gamma: f64,
    t0: Instant,
    last: Instant,
}

const MOVE_EVENT_EVERY: std::time::Duration = std::time::Duration::from_millis(250);

impl MoveProgress<'_> {
    fn step(&mut self, step: usize, acceptance: f64, max_correlation: Option<f64>) {
        if self.last.elapsed() < MOVE_EVENT_EVERY {
            return;
        }
        self.last = Instant::now();
        self.obs.observe(Event::SmcMove(SmcMove {
            stage: self.stage,
            gamma: self.gamma,
            step,
            acceptance,
            max_correlation,
            elapsed: self.t0.elapsed().as_secs_f64(),
        }));
    }
}

/// A stage's chains at their start, with what the moves track besides them:
/// the resampled ancestors (for the duplicated-copies rule) and the snapshots
/// for the next fits.
struct StageStart<'a> {
    chains: Chains,
    ancestors: &'a [usize],
    snapshots: Snapshots,
}

/// The moves of one stage: standard SMC moves every chain until it has
/// decorrelated from its start (or a fixed number of steps); waste-free keeps
/// every state of N/P chains of P.
fn move_stage<T: Target + ?Sized>(
    target: &T,
    s: &SmcSettings,
    mut spec: StepSpec<'_>,
    start: StageStart<'_>,
    buf: &mut Proposals,
    ctl: &Control,
    progress: &mut MoveProgress<'_>,
) -> Result<Moved, EngineError> {
    let StageStart {
        mut chains,
        ancestors,
        mut snapshots,
    } = start;
    let (d, m) = (chains.d, chains.len());
    let kernel = spec.kernel;
    let start_theta = chains.theta.clone();
    let start_risk = chains.risk.clone();
    let (start_white, start_prior) = (chains.white.clone(), chains.log_prior.clone());
    // Waste-free keeps every state: the cloud is rebuilt step-major.
    let (mut cloud, mut cloud_risk) = (Vec::new(), Vec::new());
    if let Some(p) = s.waste_free {
        cloud.reserve(m * p * d);
        cloud_risk.reserve(m * p);
        cloud.extend_from_slice(&chains.theta);
        cloud_risk.extend_from_slice(&chains.risk);
    }
    let (min_steps, max_steps) = match (s.waste_free, s.moves) {
        (Some(p), _) => (p - 1, p - 1),
        (None, Moves::Fixed(k)) => (k, k),
        (None, Moves::Adaptive { min, max }) => (min, max),
    };
    let (mut accepted, mut full_evaluations, mut esjd_sum, mut steps) = (0usize, 0, 0.0, 0);
    let mut max_corr = 1.0;
    let mut moved = vec![false; m];
    let mut unmoved = 1.0;
    let mut duplicated = 1.0;
    let mut stuck_copies = m;
    let mut decorrelated_at = None;
    let mut measured = None;
    // The mixture move (see `mixture`): fitted when first needed.
    let mut mix = MixtureMove::default();
    while steps < max_steps {
        ctl.checkpoint()?;
        let st = moves::step(target, &mut chains, buf, spec);
        steps += 1;
        for (mv, a) in moved.iter_mut().zip(buf.accepted()) {
            *mv |= a;
        }
        unmoved = moved.iter().filter(|&&mv| !mv).count() as f64 / m as f64;
        (duplicated, stuck_copies) = copies::unmoved_copies(ancestors, &moved);
        accepted += st.accepted;
        full_evaluations += st.full_evaluations;
        esjd_sum += st.esjd;
        if s.adapt_scale {
            let acc = st.accepted as f64 / m as f64;
            spec.scale = (spec.scale * (acc - kernel.target_acceptance()).exp())
                .clamp(1e-4 * kernel.max_scale(d), kernel.max_scale(d));
        }
        if s.waste_free.is_some() {
            cloud.extend_from_slice(&chains.theta);
            cloud_risk.extend_from_slice(&chains.risk);
        } else {
            snapshots.offer(steps, &chains.theta, &chains.risk);
        }
        if s.waste_free.is_none() && steps >= min_steps {
            max_corr = max_correlation(&start_theta, &start_risk, &chains.theta, &chains.risk, d);
            measured = Some(max_corr);
            if max_corr <= s.decorrelation && decorrelated_at.is_none() {
                decorrelated_at = Some(steps);
            }
            if matches!(s.moves, Moves::Adaptive { .. })
                && max_corr <= s.decorrelation
                && duplicated <= s.max_duplicated
            {
                break;
            }
        }
        if matches!(s.moves, Moves::Adaptive { .. })
            && s.waste_free.is_none()
            && spec.chart.is_none()
            && steps >= mixture::MIXTURE_AFTER
            && max_corr > s.decorrelation
        {
            let fits = (spec.fits, spec.maps);
            let st = mix.run(steps, target, fits, &mut chains, spec.gamma, &mut moved);
            full_evaluations += st.evaluations;
            esjd_sum += st.jump2 / m as f64;
        }
        progress.step(steps, accepted as f64 / (steps * m) as f64, measured);
    }
    let energy = Some(energy_mixing::measure(&start_risk, &chains.risk));
    let start = left_behind::Ends {
        white: &start_white,
        risk: &start_risk,
        log_prior: &start_prior,
    };
    let left_behind = left_behind::of_stage(kernel, spec.gamma, start, &chains);
    if s.waste_free.is_some() {
        max_corr = max_correlation(&start_theta, &start_risk, &chains.theta, &chains.risk, d);
    } else {
        (cloud, cloud_risk) = (chains.theta, chains.risk);
    }
    let mixture = mix.finish(&start_theta, &cloud);
    Ok(Moved {
        theta: cloud,
        risk: cloud_risk,
        steps,
        accepted,
        full_evaluations,
        esjd_sum,
        max_corr,
        unmoved,
        duplicated,
        stuck_copies,
        decorrelated_at,
        energy,
        left_behind,
        mixture,
        snapshots: snapshots.finish(steps),
        scale: spec.scale,
    })
}

/// The particles as model parameters.
fn natural<T: Target + ?Sized>(target: &T, cloud: &[f64], d: usize) -> Vec<f64> {
    let mut out = vec![0.0; cloud.len()];
    out.par_chunks_mut(d)
        .zip(cloud.par_chunks(d))
        .for_each(|(o, p)| target.natural(p, o));
    out
}

/// Streams a stage (with histograms) and records it (without).
fn emit<T: Target + ?Sized>(
    info: StageInfo,
    theta: &[f64],
    target: &T,
    obs: &mut dyn Observer,
    trace: &mut Vec<Event>,
    path: &mut Vec<StageInfo>,
) {
    let d = target.dim();
    let (mean, sd) = moments(theta, d);
    let stage = SmcStage {
        stage: info.stage,
        gamma: info.gamma,
        ess_frac: info.ess_frac,
        acceptance: info.acceptance,
        scale: info.scale,
        moves: info.moves,
        max_correlation: (info.stage > 0).then_some(info.max_correlation),
        log_z: info.log_z,
        mean,
        sd,
        mean_risk: info.mean_risk,
        risk_sd: Some(info.risk_sd),
        evaluations: info.evaluations,
        elapsed: info.elapsed,
        histograms: Vec::new(),
        inclusion: target.inclusion(theta),
    };
    trace.push(Event::SmcStage(stage.clone()));
    obs.observe(Event::SmcStage(SmcStage {
        histograms: histograms(theta, d, HIST_BINS),
        ..stage
    }));
    path.push(info);
}

pub(crate) fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

pub(crate) fn sd(v: &[f64]) -> f64 {
    let m = mean(v);
    (v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / v.len().max(1) as f64).sqrt()
}

/// Per-coordinate mean and sd of the rows of `theta` (equal weights).
pub fn moments(theta: &[f64], d: usize) -> (Vec<f64>, Vec<f64>) {
    let n = (theta.len() / d.max(1)).max(1) as f64;
    let mut m = vec![0.0; d];
    for row in theta.chunks_exact(d) {
        for (a, &t) in m.iter_mut().zip(row) {
            *a += t;
        }
    }
    m.iter_mut().for_each(|a| *a /= n);
    let mut v = vec![0.0; d];
    for row in theta.chunks_exact(d) {
        for k in 0..d {
            v[k] += (row[k] - m[k]) * (row[k] - m[k]);
        }
    }
    (m, v.iter().map(|x| (x / n).sqrt()).collect())
}

/// Per-coordinate histograms of the rows of `theta` (coordinates in parallel).
pub fn histograms(theta: &[f64], d: usize, bins: usize) -> Vec<Histogram> {
    (0..d)
        .into_par_iter()
        .map(|k| {
            let col: Vec<f64> = theta.chunks_exact(d).map(|r| r[k]).collect();
            Histogram::of(&col, None, bins)
        })
        .collect()
}
