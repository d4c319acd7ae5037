//! The evidence `log Z_γ = log E_prior[exp(−γ R)]` by stepping stones (Xie,
//! Lewis, Fan, Kuo & Chen 2011) along a ladder 0 = γ_0 < … < γ_T = γ: each
//! ratio `Z_{γ_{k+1}}/Z_{γ_k} = E_{γ_k}[exp(−(γ_{k+1} − γ_k) R)]` is averaged
//! over great-circle draws at γ_k (prior draws at γ_0 = 0), and the next rung
//! is placed where the weights keep an ESS of half the draws, as SMC's
//! tempering does. The rungs' runs are independent, so their Monte Carlo
//! variances (delta method, the ESS of the weights) add up. One ladder gives
//! log Z at every rung: for the label-noise loss (γ = n·ln((1 − q)/q)) that is
//! the evidence of every noise level q on the way, `log Z(q) = n ln(1 − q) +
//! log Z_γ` — GH00's model selection of q.

use serde::{Deserialize, Serialize};

use super::design::Design;
use super::sampler::{self, GcsRun};
use super::settings::GcsSettings;
use crate::engine::event::{Event, LogLevel};
use crate::engine::interface::{Control, EngineError, Observer};
use crate::engine::mcmc_diag::ess;
use crate::engine::numerics::fast_risk::RiskScratch;
use crate::engine::numerics::rng::{normal, stream};

/// Independent prior draws of the first stone.
const PRIOR_DRAWS: usize = 4000;
/// Share of the draws the next stone's weights keep as ESS.
const STONE_ESS: f64 = 0.5;

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Rung {
    pub gamma: f64,
    pub log_z: f64,
    /// Monte Carlo standard error of `log_z` (all stones so far).
    pub mcse: f64,
    /// Posterior mean risk at this γ.
    pub mean_risk: f64,
    pub converged: bool,
}

/// The ladder and the run at its top (the posterior at the design's γ).
#[derive(Debug, Clone)]
pub struct EvidencePath {
    pub rungs: Vec<Rung>,
    pub top: GcsRun,
}

/// log mean w, its delta-method standard error, for weights `exp(−δ R)` on
/// chains of risks.
fn stone(chains: &[&[f64]], delta: f64) -> (f64, f64) {
    let lo = chains
        .iter()
        .flat_map(|c| c.iter().copied())
        .fold(f64::INFINITY, f64::min);
    let w: Vec<Vec<f64>> = chains
        .iter()
        .map(|c| c.iter().map(|r| (-delta * (r - lo)).exp()).collect())
        .collect();
    let all: Vec<f64> = w.iter().flatten().copied().collect();
    let s = all.len() as f64;
    let mean = all.iter().sum::<f64>() / s;
    let var = all.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (s - 1.0);
    let slices: Vec<&[f64]> = w.iter().map(Vec::as_slice).collect();
    let n_eff = ess(&slices);
    let n_eff = if n_eff.is_finite() { n_eff } else { s };
    (mean.ln() - delta * lo, (var / n_eff).sqrt() / mean)
}

/// The step δ ≤ `max` whose weights `exp(−δ R)` keep an ESS of `STONE_ESS` × S.
fn next_step(risks: &[f64], max: f64) -> f64 {
    let lo = risks.iter().copied().fold(f64::INFINITY, f64::min);
    let ess_at = |delta: f64| {
        let (mut s1, mut s2) = (0.0, 0.0);
        for r in risks {
            let w = (-delta * (r - lo)).exp();
            s1 += w;
            s2 += w * w;
        }
        s1 * s1 / s2 / risks.len() as f64
    };
    if ess_at(max) >= STONE_ESS {
        return max;
    }
    let (mut a, mut b) = (0.0, max);
    for _ in 0..60 {
        let mid = 0.5 * (a + b);
        if ess_at(mid) >= STONE_ESS {
            a = mid
        } else {
            b = mid
        }
    }
    a.max(max * 1e-9)
}

/// Risks of independent prior directions (the stone at γ = 0).
fn prior_risks(design: &Design, seed: u64) -> Vec<f64> {
    let mut rng = stream(seed, &[0x6576_6964, 0]);
    let mut scratch = RiskScratch::new(design.pos.nrows(), design.neg.nrows());
    let m = design.pairs();
    (0..PRIOR_DRAWS)
        .map(|_| {
            let u = nalgebra::DVector::from_fn(design.d(), |_, _| normal(&mut rng));
            let (p, n) = (&design.pos * &u, &design.neg * &u);
            let twice = 2 * m - scratch.twice_concordant(p.as_slice(), n.as_slice());
            twice as f64 / (2 * m) as f64
        })
        .collect()
}

/// The ladder from 0 to the design's γ; each rung's run uses `settings` (its
/// seed offset by the rung).
pub fn evidence_path(
    design: &Design,
    settings: &GcsSettings,
    ctl: &Control,
    obs: &mut dyn Observer,
) -> Result<EvidencePath, EngineError> {
    let top_gamma = design.gamma;
    let mut chains_risks: Vec<Vec<f64>> = vec![prior_risks(design, settings.seed)];
    let (mut gamma, mut log_z, mut var) = (0.0, 0.0, 0.0);
    let mut rungs = vec![Rung {
        gamma,
        log_z,
        mcse: 0.0,
        mean_risk: chains_risks[0].iter().sum::<f64>() / PRIOR_DRAWS as f64,
        converged: true,
    }];
    for k in 1u64.. {
        let pooled: Vec<f64> = chains_risks.iter().flatten().copied().collect();
        let delta = next_step(&pooled, top_gamma - gamma);
        let slices: Vec<&[f64]> = chains_risks.iter().map(Vec::as_slice).collect();
        let (l, se) = stone(&slices, delta);
        log_z += l;
        var += se * se;
        gamma = if top_gamma - gamma - delta <= 1e-12 * top_gamma {
            top_gamma
        } else {
            gamma + delta
        };
        let rung_design = Design {
            gamma,
            ..design.clone()
        };
        // A given reference (fitted at the top γ) only for the top rung: the
        // lower rungs' posteriors are wider.
        let rung_settings = GcsSettings {
            seed: settings.seed.wrapping_add(k),
            reference: settings.reference.clone().filter(|_| gamma >= top_gamma),
            ..settings.clone()
        };
        let run = sampler::run(&rung_design, &rung_settings, ctl, obs)?;
        let d = run.d;
        let rung = Rung {
            gamma,
            log_z,
            mcse: var.sqrt(),
            mean_risk: run.diagnostics[d].mean,
            converged: run.converged,
        };
        obs.observe(Event::Log {
            level: LogLevel::Info,
            message: format!(
                "evidence rung {k}: γ = {gamma:.4}, log Z = {log_z:.4} ± {:.4}",
                rung.mcse
            ),
        });
        rungs.push(rung);
        if gamma >= top_gamma {
            return Ok(EvidencePath { rungs, top: run });
        }
        chains_risks = run.chains.iter().map(|c| c.risks.clone()).collect();
    }
    unreachable!()
}

/// Label noise: the evidence of the noise level at every rung,
/// `(q, log Z(q), mcse)` with `q = 1/(1 + e^{γ/n})`.
pub fn noise_levels(rungs: &[Rung], n: usize) -> Vec<(f64, f64, f64)> {
    rungs
        .iter()
        .filter(|r| r.gamma > 0.0)
        .map(|r| {
            let q = 1.0 / (1.0 + (r.gamma / n as f64).exp());
            (q, n as f64 * (-q).ln_1p() + r.log_z, r.mcse)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::gcs::circle::{Circle, Profile};
    use crate::engine::gcs::settings::Loss;
    use crate::engine::interface::NoObserver;
    use crate::engine::problem::Problem;
    use crate::engine::{Prior, data};

    /// d = 2: the great circle through e1 and e2 is the whole sphere, so the
    /// sorted profile integrates the evidence exactly. Every rung must agree
    /// within 4 of its MCSEs plus 0.01 (the MCSE itself is estimated).
    #[test]
    fn ladder_matches_exact_integration_in_two_dimensions() {
        let (x, y) = data::label_noise::generate(60, 2, 0.15, 7);
        let names = vec!["a".into(), "b".into()];
        let p = Problem::new(names, x, y, 1.0, Prior::Gaussian { var: 1.0 }).unwrap();
        let settings = GcsSettings {
            warmup: 20,
            min_ess: 1000.0,
            loss: Loss::LabelNoise {
                noise: 0.1,
                intercept: false,
            },
            seed: 3,
            ..GcsSettings::default()
        };
        let design = Design::of(&p, settings.loss).unwrap();
        let path = evidence_path(&design, &settings, &Control::new(), &mut NoObserver).unwrap();
        let a: Vec<f64> = design.pos.column(0).iter().copied().collect();
        let b: Vec<f64> = design.pos.column(1).iter().copied().collect();
        let profile = Profile::of(&Circle {
            pos_a: &a,
            pos_b: &b,
            neg_a: &[0.0],
            neg_b: &[0.0],
        });
        assert!(path.rungs.len() >= 3, "{:?}", path.rungs);
        for r in &path.rungs[1..] {
            let exact = profile.log_integral(r.gamma) - (2.0 * std::f64::consts::PI).ln();
            assert!(
                (r.log_z - exact).abs() < 4.0 * r.mcse + 0.01,
                "γ = {}: {} ± {} vs exact {exact}",
                r.gamma,
                r.log_z,
                r.mcse
            );
        }
        let q = noise_levels(&path.rungs, 60);
        assert!((q.last().unwrap().0 - 0.1).abs() < 1e-12);
    }
}
