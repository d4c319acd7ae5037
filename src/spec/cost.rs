//! What a run will cost, before it starts: time and memory from the training
//! size n, the positives, the dimension d, the pair count M = n₊n₋ and the
//! method's settings, so that `pacauc fit` (and the explorer's run form) can
//! state it and refuse a run that would take hours or more memory than the
//! machine has, naming settings that fit (ALGORITHMS.md §14 for `--pairs`).
//!
//! The model counts units of work (risk evaluations of n rows, EP site
//! updates, pair-pass terms, Newton row products, Adam item gradients) and
//! multiplies by per-unit costs measured on the project machine (2 cores,
//! AVX-512; `docs/BENCHMARKS.md`, "Scale"). Adaptive lengths the model cannot
//! know before the run use central figures fitted to measured runs (SMC's
//! stages and moves) or a stated floor (the great-circle sampler's steps:
//! the estimate is then a lower bound). The estimate is for the planning
//! order of magnitude: a factor 2 either way is expected; a factor 100 is
//! what it exists to catch.

use serde::Serialize;

use crate::engine::is_check::subsample;

use super::run_spec::{EpSpec, GcsSpec, MethodSpec, RunSpec, SmcSpec, VbOptimizer, VbSpec};
use super::values::Gamma;
use crate::engine::ep::PairEp;

#[path = "cost_figures.rs"]
mod figures;
pub use figures::plan;
use figures::unit;

/// The training set's sizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Sizes {
    pub rows: usize,
    pub positives: usize,
    pub features: usize,
}

impl Sizes {
    pub fn pairs(&self) -> f64 {
        self.positives as f64 * (self.rows - self.positives.min(self.rows)) as f64
    }
}

/// One part of a run's cost.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Part {
    pub what: String,
    /// CPU seconds.
    pub cpu_seconds: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CostEstimate {
    /// Wall seconds on `threads` cores (CPU seconds / threads).
    pub seconds: f64,
    /// Peak resident bytes, the data included.
    pub bytes: f64,
    /// Some length is unknown before the run: at least this much.
    pub lower_bound: bool,
    pub parts: Vec<Part>,
    /// Work only a run that finds it needed does (SMC's phase-jump rerun):
    /// stated, not counted in `seconds`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub if_needed: Vec<Part>,
}

/// What a run may cost before `pacauc fit` refuses it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    pub seconds: f64,
    pub bytes: f64,
}

/// An hour.
pub const DEFAULT_SECONDS_LIMIT: f64 = 3600.0;

/// The cores a run gets and the limits it is checked against.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Machine {
    pub threads: usize,
    pub limits: Limits,
}

impl Machine {
    /// This process: its worker threads, an hour and the memory available.
    pub fn this() -> Machine {
        Machine {
            threads: rayon::current_num_threads(),
            limits: Limits {
                seconds: DEFAULT_SECONDS_LIMIT,
                bytes: available_memory().unwrap_or(f64::INFINITY),
            },
        }
    }
}

/// The memory this run may hold: MemAvailable plus what the process holds
/// already (the loaded data count in the estimate), in bytes; None where
/// /proc does not say.
pub fn available_memory() -> Option<f64> {
    let kb = |file: &str, key: &str| -> Option<f64> {
        let text = std::fs::read_to_string(file).ok()?;
        let line = text.lines().find(|l| l.starts_with(key))?;
        line.split_whitespace().nth(1)?.parse().ok()
    };
    let free = kb("/proc/meminfo", "MemAvailable:")?;
    let own = kb("/proc/self/status", "VmRSS:").unwrap_or(0.0);
    Some((free + own) * 1024.0)
}

impl CostEstimate {
    /// "≈ 3 min, 1.2 GB (EP: 50 sweeps × 4.0e6 sites 2.1 min; …)".
    pub fn describe(&self) -> String {
        let parts: Vec<String> = self
            .parts
            .iter()
            .map(|p| format!("{} {}", p.what, duration(p.cpu_seconds)))
            .collect();
        // "< 1 s" needs no "≈".
        let approx = match (self.seconds < 1.0, self.lower_bound) {
            (true, _) => "",
            (false, true) => "≥ ",
            (false, false) => "≈ ",
        };
        let extra: String = self
            .if_needed
            .iter()
            .map(|p| format!("; not counted: {} {}", p.what, duration(p.cpu_seconds)))
            .collect();
        format!(
            "{approx}{} wall, {} memory ({}; CPU time, split over the cores{extra})",
            duration(self.seconds),
            bytes(self.bytes),
            parts.join("; ")
        )
    }
}

pub fn duration(s: f64) -> String {
    if s < 1.0 {
        "< 1 s".into()
    } else if s < 120.0 {
        format!("{s:.0} s")
    } else if s < 7200.0 {
        format!("{:.0} min", s / 60.0)
    } else if s < 3.0 * 86400.0 {
        format!("{:.1} h", s / 3600.0)
    } else {
        format!("{:.0} days", s / 86400.0)
    }
}

pub fn bytes(b: f64) -> String {
    if b < 1e6 {
        format!("{:.0} kB", (b / 1e3).ceil())
    } else if b < 1e9 {
        format!("{:.0} MB", b / 1e6)
    } else {
        format!("{:.1} GB", b / 1e9)
    }
}

/// Bytes per cell of the CSV text (gen-demo's 10⁷ × 20 file: 7.6).
const TEXT_BYTES_PER_CELL: f64 = 8.0;

/// Bytes of the data, as (the load's peak, what a fit holds after it), over
/// all the file's rows (the training rows / (1 − the test share)). Loading
/// holds the mapped CSV text, 4 bytes per cell end and the typed table (8 per
/// cell); `pacauc fit` then frees the raw table and keeps the standardised
/// training and test rows (8 per cell; the problem shares them). Measured
/// (`bench-load`, gen-demo, d = 20): load peak 406 MB at 10⁶ rows, 3.99 GB at 10⁷.
pub(super) fn data_bytes(spec: &RunSpec, s: Sizes) -> (f64, f64) {
    let test = if spec.data.test.is_some() {
        0.25
    } else {
        spec.data.test_frac.clamp(0.0, 0.9)
    };
    let cells = s.rows as f64 / (1.0 - test) * s.features as f64;
    let base = 50e6;
    (
        cells * (TEXT_BYTES_PER_CELL + 4.0 + 8.0) + base,
        cells * 8.0 + base,
    )
}

/// One risk R_n(θ) on the training rows (the engine's model of its kernel,
/// `is_check::risks::risk_seconds`, which the check's default draws use too).
pub fn risk_seconds(s: Sizes) -> f64 {
    crate::engine::is_check::risks::risk_seconds(s.rows, s.features)
}

/// γ for the cost (auto and theory: n, the top of the range that matters).
pub(super) fn gamma_of(spec: &RunSpec, s: Sizes) -> f64 {
    spec.gamma
        .and_then(|g| g.resolve(s.rows))
        .unwrap_or(s.rows as f64)
}

/// Cross-validation multiplies a fit by folds × grid points (warm starts:
/// counted as half a cold fit each).
fn cv_factor(spec: &RunSpec, folds: usize, grid: usize) -> f64 {
    if spec.gamma == Some(Gamma::Auto) {
        1.0 + 0.5 * (folds * grid) as f64
    } else {
        1.0
    }
}

/// The certificate's E_ρ R_n of a Gaussian ρ: a pass over all pairs up to
/// `EXACT_PAIRS_MAX`, else `SAMPLED_PAIRS` sampled pairs (`bounds::fits`).
fn certificate_part(s: Sizes) -> Part {
    use crate::engine::bounds::{EXACT_PAIRS_MAX, SAMPLED_PAIRS};
    let d = s.features as f64;
    if s.pairs() <= EXACT_PAIRS_MAX as f64 {
        Part {
            what: format!("certificate: {:.2e} pairs", s.pairs()),
            cpu_seconds: s.pairs() * (unit::CERT_PAIR + unit::CERT_PAIR_FEATURE * d),
        }
    } else {
        let b = SAMPLED_PAIRS as f64;
        Part {
            what: format!("certificate: {b:.0e} sampled pairs"),
            cpu_seconds: b * (unit::CERT_SAMPLED_PAIR + unit::CERT_SAMPLED_PAIR_FEATURE * d)
                + s.rows as f64 * d * unit::CERT_SAMPLED_ROW_FEATURE,
        }
    }
}

/// The check's draws: as asked, or by the training size.
fn is_draws_of(asked: Option<usize>, s: Sizes) -> usize {
    asked.unwrap_or_else(|| crate::engine::is_check::risks::auto_draws(s.rows, s.features))
}

fn is_check_part(asked: Option<usize>, s: Sizes) -> Option<Part> {
    let (draws, rows) = subsample::settings(asked, s.rows, s.features);
    let on = rows.map_or("R_n".to_string(), |m| format!("R on {m} rows"));
    (draws > 0).then(|| Part {
        what: format!("IS check: {draws} draws × {on}"),
        cpu_seconds: subsample::cost_seconds(draws, rows, s.rows, s.features),
    })
}

/// The default check scores its draws on a row subsample (cheap already).
fn is_check_subsampled(asked: Option<usize>, s: Sizes) -> bool {
    subsample::settings(asked, s.rows, s.features).1.is_some()
}

/// The estimate of `spec` on training data of sizes `s`, `threads` cores.
pub fn estimate(spec: &RunSpec, s: Sizes, threads: usize) -> CostEstimate {
    let (n, d) = (s.rows as f64, s.features as f64);
    let mut parts = Vec::new();
    let mut extra_bytes = 0.0;
    let mut lower_bound = false;
    let mut if_needed = Vec::new();
    match &spec.method {
        MethodSpec::Logit(l) => {
            // Per row of a fit: ~NEWTON_ITERS steps.
            let per_row = plan::NEWTON_ITERS
                * ((d + 1.0).powi(2) * unit::NEWTON_ROW_FEATURE2
                    + 4.0 * (d + 1.0) * unit::ROW_FEATURE);
            // λ by CV: folds × grid fits on (folds − 1)/folds of at most
            // `cv_rows` rows (a stratified subsample above), then one fit on
            // all n. BENCHMARKS logit-1e6 / logit-1e7: 14.8 / 39.5 CPU s
            // measured (load included) against 24 / 35 here; before the
            // subsample was counted, 10⁷ rows read "4 min".
            // Every k-th row of a stratified deal, k = ⌈n / cv_rows⌉.
            let sub = n / (n / l.cv_rows.max(1) as f64).ceil().max(1.0);
            let (cv_rows, cv_fits) = if l.lambda.is_some() {
                (0.0, 0.0)
            } else {
                let folds = l.folds as f64;
                (sub * (folds - 1.0) / folds, folds * plan::LOGIT_GRID)
            };
            parts.push(Part {
                what: format!(
                    "logit: {:.0} fits × ~{} Newton steps{}",
                    cv_fits + 1.0,
                    plan::NEWTON_ITERS,
                    if cv_fits > 0.0 && sub < n {
                        format!(" (CV on a {sub:.2e}-row subsample)")
                    } else {
                        String::new()
                    }
                ),
                cpu_seconds: (cv_fits * cv_rows + n) * per_row,
            });
            // The design with its intercept column and one working copy.
            extra_bytes += 2.0 * 8.0 * n * (d + 1.0);
        }
        MethodSpec::Rankboost(r) => {
            let fits = if r.rounds.is_some() {
                1.0
            } else {
                1.0 + r.folds as f64
            };
            let rounds = r.rounds.map_or(plan::BOOST_ROUNDS, |k| k as f64);
            parts.push(Part {
                what: format!("rankboost: {fits:.0} fits × {rounds:.0} rounds"),
                cpu_seconds: fits * rounds * n * d * unit::BOOST_ROW_FEATURE,
            });
            extra_bytes += 16.0 * n * d;
        }
        MethodSpec::Ep(e) => {
            let (p, _) = ep_part(spec, e, s);
            parts.push(p);
            // The state's own count: sites, rows once, per-row marginals.
            let precision = super::build::site_precision(e.site_precision);
            let neg = s.rows - s.positives.min(s.rows);
            let held = PairEp::memory_bytes(s.positives, neg, s.features, precision, e.pairs);
            extra_bytes += held as f64;
            parts.push(certificate_part(s));
            parts.extend(is_check_part(e.is_draws, s));
            if_needed.extend(ep_walk_part(spec, e, s));
        }
        MethodSpec::Vb(v) => {
            let (p, b) = vb_part(spec, v, s);
            parts.push(p);
            extra_bytes += b;
            parts.push(certificate_part(s));
            parts.extend(is_check_part(v.is_draws, s));
        }
        MethodSpec::Smc(smc) => {
            parts.extend(super::smc_reference::cost_parts(spec, smc, s));
            if super::smc_reference::choose(spec, smc, s).ep {
                if_needed.extend(ep_walk_part(spec, &EpSpec::default(), s));
            }
            if_needed.extend(super::smc_reference::rerun_part(spec, smc, s));
            extra_bytes += 8.0 * smc.particles as f64 * (3.0 * d + 2.0 * 256.0);
        }
        MethodSpec::Gcs(g) => {
            lower_bound = true;
            if super::gcs_reference::ep_reference(spec, g) {
                let (p, b) = ep_part(spec, &EpSpec::default(), s);
                parts.push(p);
                extra_bytes += b;
            }
            parts.push(gcs_part(g, s));
            extra_bytes += 16.0 * n + 8.0 * n * d;
        }
    }
    let cpu: f64 = parts.iter().map(|p| p.cpu_seconds).sum();
    let (load, held) = data_bytes(spec, s);
    CostEstimate {
        seconds: cpu / threads.max(1) as f64,
        bytes: load.max(held + extra_bytes),
        lower_bound,
        parts,
        if_needed,
    }
}

/// EP's sweeps over its sites (all M pairs, or B sampled) and their storage
/// (three numbers per site: f32 above 1 GiB, as `--site-precision auto`).
pub(super) fn ep_part(spec: &RunSpec, e: &EpSpec, s: Sizes) -> (Part, f64) {
    let sites = e.pairs.map_or(s.pairs(), |b| b as f64);
    let cv = cv_factor(spec, e.folds, e.gamma_grid.len());
    let d = s.features as f64;
    // Sampled sites: per-pair dot products, no blocked GEMM, and a rebuild
    // from all rows a sweep (`ep-1e6-pairs`: ≈ 1.05 CPU s a sweep).
    let per_sweep = match e.pairs {
        Some(b) => b as f64 * unit::EP_SAMPLED_SITE + s.rows as f64 * d * d * unit::EP_ROW_FEATURE2,
        None => sites * (unit::EP_SITE + unit::EP_SITE_FEATURE * d),
    };
    let bytes_per_site = if 24.0 * sites > (1u64 << 30) as f64 {
        12.0
    } else {
        24.0
    };
    let what = format!(
        "EP: ~{} sweeps × {:.2e} sites{}",
        plan::EP_SWEEPS,
        sites,
        if cv > 1.0 {
            format!(" × CV {cv:.0}")
        } else {
            String::new()
        }
    );
    (
        Part {
            what,
            cpu_seconds: cv * plan::EP_SWEEPS * per_sweep,
        },
        bytes_per_site * sites,
    )
}

/// EP's continuation in γ at a fixed γ, where the run straight from the
/// prior does not converge (`plan::ep_walk_runs` runs): stated, not counted
/// (most sets converge directly; EEG walks at n).
pub(super) fn ep_walk_part(spec: &RunSpec, e: &EpSpec, s: Sizes) -> Option<Part> {
    let runs = plan::ep_walk_runs(gamma_of(spec, s) / s.rows.max(1) as f64);
    let fixed = RunSpec {
        gamma: Some(Gamma::Value(gamma_of(spec, s))),
        ..spec.clone()
    };
    (spec.gamma != Some(Gamma::Auto) && runs > 0.0).then(|| Part {
        what: format!(
            "EP's walk in γ ({runs:.0} more runs) where EP from the prior does not converge"
        ),
        cpu_seconds: runs * ep_part(&fixed, e, s).0.cpu_seconds,
    })
}

/// VB: L-BFGS over all items, or Adam steps plus the held-out checks and the
/// final sampled objective; the pair pass when the items are few enough.
fn vb_part(spec: &RunSpec, v: &VbSpec, s: Sizes) -> (Part, f64) {
    let (n, d) = (s.rows as f64, s.features as f64);
    let ranking = v.loss == super::run_spec::VbLoss::Auc;
    let items = if ranking { s.pairs() } else { n };
    let settings = crate::engine::vb::VbSettings::default();
    let stochastic = match v.optimizer {
        VbOptimizer::Auto => items > settings.full_batch_max_items as f64,
        VbOptimizer::FullBatch => false,
        VbOptimizer::Stochastic => true,
    };
    let cv = cv_factor(spec, v.folds, v.gamma_grid.len());
    let per_pair = unit::VB_PAIR + unit::VB_PAIR_FEATURE * d;
    let (what, cpu) = if stochastic {
        let checks = plan::ADAM_STEPS / settings.adam.check_every as f64;
        let adam = plan::ADAM_STEPS * v.batch_pairs as f64
            + checks * settings.adam.holdout as f64
            + settings.risk_sample as f64;
        let exact = if items <= settings.exact_risk_max_items as f64 {
            items * per_pair
        } else {
            0.0
        };
        (
            format!(
                "VB: ~{} Adam steps × {} items{}",
                plan::ADAM_STEPS,
                v.batch_pairs,
                if exact > 0.0 {
                    " + one pass over all pairs"
                } else {
                    ""
                }
            ),
            adam * d * unit::VB_ITEM_FEATURE + exact,
        )
    } else {
        let per_eval = if ranking {
            items * per_pair
        } else {
            n * d * unit::ROW_FEATURE * 4.0
        };
        (
            format!(
                "VB: ~{} L-BFGS passes over {items:.2e} items",
                plan::LBFGS_EVALS
            ),
            plan::LBFGS_EVALS * per_eval,
        )
    };
    // A stochastic ranking fit that estimates its objective holds one
    // row-major copy of the whitened rows (`vb::fit`); otherwise the class
    // split (or signed rows) and, stochastic, its row-major copy.
    let pairs_only = stochastic && ranking && items > settings.exact_risk_max_items as f64;
    let copies = if pairs_only { 1.0 } else { 2.0 };
    (
        Part {
            what: if cv > 1.0 {
                format!("{what} × CV {cv:.0}")
            } else {
                what
            },
            cpu_seconds: cv * cpu,
        },
        copies * 8.0 * n * d,
    )
}

/// SMC: `plan::smc_stages` stages of `plan::smc_moves` moves per particle
/// (or `--moves`), each move one risk evaluation; central figures, good to
/// a factor 2 either way on the measured runs.
pub(super) fn smc_part(spec: &RunSpec, smc: &SmcSpec, s: Sizes) -> Part {
    let gamma = gamma_of(spec, s);
    smc_part_at(spec, smc, s, gamma / s.rows.max(1) as f64)
}

/// `smc_part` with γ/n taken as `gamma_over_n` for the moves and stages'
/// rise above γ = n (1: the γ-free figures `smc_reference::choose` was
/// calibrated with).
pub(super) fn smc_part_at(spec: &RunSpec, smc: &SmcSpec, s: Sizes, gamma_over_n: f64) -> Part {
    let d = s.features.min(s.rows) as f64;
    let moves = smc
        .moves
        .map_or_else(|| plan::smc_moves(d, gamma_over_n), |m| m as f64);
    let cv = cv_factor(spec, smc.folds, smc.gamma_grid.len());
    let stages =
        (plan::smc_stages(d, gamma_of(spec, s)) * plan::smc_stage_factor(gamma_over_n)).round();
    let evals = smc.particles as f64 * smc.runs.max(1) as f64 * stages * moves;
    Part {
        what: format!(
            "SMC: ~{stages} stages × {} particles × ~{moves:.0} moves, one R_n each{}",
            smc.particles,
            if cv > 1.0 {
                format!(" × CV {cv:.0}")
            } else {
                String::new()
            }
        ),
        cpu_seconds: cv * evals * risk_seconds(s),
    }
}

/// Risk evaluations of an ellipse step (`directions = gaussian`): 2.2–2.8 a
/// step measured on the demo, Pima, Glass, Spect, Sonar and DNA.
const ELLIPSE_EVALS: f64 = 3.0;

/// The great-circle sampler: at least warm-up + min_ess steps per chain, each
/// a counting pass over the M pairs (and ~1 risk), or with ellipses a few
/// risk evaluations.
fn gcs_part(g: &GcsSpec, s: Sizes) -> Part {
    let steps = g.chains as f64 * (g.warmup as f64 + g.min_ess);
    if g.directions == crate::engine::gcs::Directions::Gaussian {
        return Part {
            what: format!("gcs: ≥ {steps:.0} ellipse steps × ~{ELLIPSE_EVALS} risks"),
            cpu_seconds: steps * ELLIPSE_EVALS * risk_seconds(s),
        };
    }
    Part {
        what: format!("gcs: ≥ {steps:.0} steps × {:.2e} pairs", s.pairs()),
        cpu_seconds: steps * (s.pairs() * unit::GCS_PAIR + risk_seconds(s)),
    }
}

/// None when the estimate fits `limits`; else why not and what would fit.
pub fn refusal(spec: &RunSpec, s: Sizes, threads: usize, limits: Limits) -> Option<String> {
    refusal_in(spec, s, threads, limits, "--ignore-cost to run it anyway")
}

/// `refusal`, with `anyway` saying how this front end runs it regardless.
pub fn refusal_in(
    spec: &RunSpec,
    s: Sizes,
    threads: usize,
    limits: Limits,
    anyway: &str,
) -> Option<String> {
    let est = estimate(spec, s, threads);
    let (over_time, over_memory) = (est.seconds > limits.seconds, est.bytes > limits.bytes);
    if !over_time && !over_memory {
        return None;
    }
    let method = spec.method_name();
    let what = match (over_time, over_memory) {
        (true, true) => format!(
            "more than {} and more than the {} of memory available",
            duration(limits.seconds),
            bytes(limits.bytes)
        ),
        (true, false) => format!("more than {}", duration(limits.seconds)),
        _ => format!("more than the {} of memory available", bytes(limits.bytes)),
    };
    let mut fixes = suggestions(spec, s, threads, limits);
    fixes.push(anyway.into());
    Some(format!(
        "{method} on {} rows × {} features ({:.2e} positive/negative pairs) would take {what}: estimated {}. \
         Settings that fit: {}",
        s.rows,
        s.features,
        s.pairs(),
        est.describe(),
        fixes.join("; ")
    ))
}

/// Changes of the settings whose estimate fits `limits`, in words.
fn suggestions(spec: &RunSpec, s: Sizes, threads: usize, limits: Limits) -> Vec<String> {
    // With a margin: the estimate is good to a factor of 2, and the machine
    // is shared.
    let fits = |cand: &RunSpec| {
        let e = estimate(cand, s, threads);
        e.seconds <= 0.5 * limits.seconds && e.bytes <= 0.5 * limits.bytes
    };
    let mut out = Vec::new();
    let gamma = gamma_of(spec, s);
    match &spec.method {
        MethodSpec::Ep(e) => {
            let mut cand = spec.clone();
            // The largest power of two of sampled pairs that fits.
            let mut b: usize = 1 << 30;
            while b >= 1 << 12 {
                if let MethodSpec::Ep(ce) = &mut cand.method {
                    ce.pairs = Some(b);
                    if !is_check_subsampled(e.is_draws, s) {
                        let draws = is_draws_of(e.is_draws, s);
                        ce.is_draws = Some(draws.min(draws_that_fit(draws, s, threads, limits)));
                    }
                }
                if (b as f64) < s.pairs() && fits(&cand) {
                    // §14: γ·sd(R_B) ≪ 1 needs B ≫ γ²R(1 − R); with R(1 − R) ≤ ¼ and a
                    // margin of 10: γ ≤ √(B/2.5).
                    let g_max = (b as f64 / 2.5).sqrt();
                    let gamma_note = if gamma > g_max {
                        format!(
                            " with a γ ≤ {:.0} (= {:.2e}n; §14: B ≫ γ²R(1 − R)), e.g. --gamma {:.0}",
                            g_max,
                            g_max / s.rows as f64,
                            g_max
                        )
                    } else {
                        String::new()
                    };
                    out.push(format!("--pairs {b}{gamma_note}"));
                    break;
                }
                b /= 2;
            }
            if let Some(k) = fewer_draws(is_draws_of(e.is_draws, s), s, threads, limits)
                .filter(|_| !is_check_subsampled(e.is_draws, s))
            {
                out.push(k);
            }
            out.push("--method vb (stochastic: its cost does not grow with the pairs)".into());
        }
        MethodSpec::Vb(v) => {
            if v.optimizer != VbOptimizer::Stochastic {
                let mut cand = spec.clone();
                if let MethodSpec::Vb(cv) = &mut cand.method {
                    cv.optimizer = VbOptimizer::Stochastic;
                }
                if fits(&cand) {
                    out.push("--optimizer stochastic".into());
                }
            }
            if let Some(k) = fewer_draws(is_draws_of(v.is_draws, s), s, threads, limits)
                .filter(|_| !is_check_subsampled(v.is_draws, s))
            {
                out.push(k);
            }
        }
        MethodSpec::Smc(smc) => {
            let per = estimate(spec, s, threads).seconds / smc.particles as f64;
            let p = (limits.seconds / per).floor();
            if p >= crate::engine::smc::settings::MIN_PARTICLES as f64 {
                out.push(format!(
                    "--particles {p:.0} (stages and moves adapt: the estimate is good to a factor 2)"
                ));
            }
            out.push("--method vb or --method ep --pairs B (a Gaussian approximation)".into());
        }
        MethodSpec::Gcs(_) => {
            out.push("--method vb or --method ep --pairs B (a Gaussian approximation)".into());
        }
        MethodSpec::Logit(l) if l.lambda.is_none() => {
            out.push("--lambda L (one fit, no cross-validation)".into());
        }
        MethodSpec::Rankboost(r) if r.rounds.is_none() => {
            out.push("--rounds K (one fit, no cross-validation)".into());
        }
        _ => {}
    }
    if spec.gamma == Some(Gamma::Auto) {
        out.push("a fixed --gamma (no cross-validation over the γ grid)".into());
    }
    if out.is_empty() {
        out.push("a row sample of the data (fewer rows)".into());
    }
    out
}

/// Importance draws whose check takes at most a quarter of the time limit.
fn draws_that_fit(draws: usize, s: Sizes, threads: usize, limits: Limits) -> usize {
    let per = risk_seconds(s) / threads.max(1) as f64;
    ((0.25 * limits.seconds / per) as usize).min(draws)
}

fn fewer_draws(draws: usize, s: Sizes, threads: usize, limits: Limits) -> Option<String> {
    let k = draws_that_fit(draws, s, threads, limits);
    (draws > 0 && k < draws).then(|| {
        if k >= 1000 {
            format!("--is-draws {k} (or 0: no importance-sampling check)")
        } else {
            "--is-draws 0 (the importance-sampling check does not fit)".into()
        }
    })
}
