//! The cost model's measured figures (`spec::cost`): per-unit costs and
//! planning figures for the lengths fixed only during a run.

/// Per-unit costs, single-thread seconds (measured; see the module doc).
pub(super) mod unit {
    /// One EP site·sweep, fitted to one thread's CPU: Shuttle 22.5 ns (d = 9),
    /// EEG 15.6 (14), Bank 38.8 (48), Adult 29 (86), DNA 91 (180); ≤ 1.5× off.
    pub const EP_SITE: f64 = 15e-9;
    pub const EP_SITE_FEATURE: f64 = 0.35e-9;
    /// One sampled-pair site per sweep (`--pairs B`, d = 20; see `ep_part`).
    pub const EP_SAMPLED_SITE: f64 = 190e-9;
    /// One row·feature² of EP's per-sweep rebuild (Q, Z V, u).
    pub const EP_ROW_FEATURE2: f64 = 1e-9;
    /// One pair of VB's all-pairs pass (value and gradients).
    pub const VB_PAIR: f64 = 10e-9;
    pub const VB_PAIR_FEATURE: f64 = 0.5e-9;
    /// One pair of the certificate's value-only pass (one GEMM, one Φ).
    pub const CERT_PAIR: f64 = 5e-9;
    pub const CERT_PAIR_FEATURE: f64 = 0.25e-9;
    /// One sampled pair of the certificate above `EXACT_PAIRS_MAX` (two random
    /// row records out of cache, a difference's norm, 9 vectorised Φ: every
    /// spread from one pass). Measured ≈ 1 CPU s for 10⁷ pairs at 7.5·10⁵
    /// rows (VB 10⁶ × 20 with and without the check); 40 s before the pass
    /// was shared by the spreads.
    pub const CERT_SAMPLED_PAIR: f64 = 60e-9;
    pub const CERT_SAMPLED_PAIR_FEATURE: f64 = 2e-9;
    /// One row·feature of the table those pairs are read from: once the rows
    /// leave the caches each pair's two reads wait on memory (measured 4.0
    /// CPU s for the 10⁷ pairs at 7.5·10⁶ rows × 20, `details.certificate_cpu_seconds`).
    pub const CERT_SAMPLED_ROW_FEATURE: f64 = 19e-9;
    /// One item·feature of a VB mini-batch gradient (gather, products).
    pub const VB_ITEM_FEATURE: f64 = 15e-9;
    /// One row·(d+1)² of a Newton step of the logit (Hessian by GEMM, copies).
    pub const NEWTON_ROW_FEATURE2: f64 = 0.25e-9;
    /// One row·feature of a cheap pass (objective, gradient, copies).
    pub const ROW_FEATURE: f64 = 0.5e-9;
    /// One pair of the great-circle sampler's counting pass per step.
    pub const GCS_PAIR: f64 = 5e-9;
    /// One row·feature of RankBoost's sweeps per round.
    pub const BOOST_ROW_FEATURE: f64 = 3e-9;
}

/// Planning figures for lengths fixed only during the run.
pub mod plan {
    /// EP sweeps: 11–21 on most sets, set high for the tail (Adult 44, EEG 470).
    pub const EP_SWEEPS: f64 = 50.0;
    /// EP runs of the continuation's walk to γ = r·n (`ep::continuation`:
    /// from n/16, up to ×2 a point), taken only where the run straight from
    /// the prior does not converge: 0 at or below n/16, 5 at n, 8 at 8n. Each priced at `EP_SWEEPS` (EEG at n: the direct
    /// run and 5 points, 231 sweeps in all, 106 CPU s against 31 s for one
    /// run of 50).
    pub fn ep_walk_runs(gamma_over_n: f64) -> f64 {
        use crate::engine::ep::continuation::{MAX_STEP, START_OVER_N};
        if gamma_over_n <= START_OVER_N {
            return 0.0;
        }
        let above = (gamma_over_n / (2.0 * START_OVER_N)).max(1.0).ln();
        let steps = (above / MAX_STEP - 1e-9).ceil().max(0.0);
        if gamma_over_n <= 2.0 * START_OVER_N {
            2.0
        } else {
            2.0 + steps
        }
    }
    /// L-BFGS evaluations of VB (12–30 measured).
    pub const LBFGS_EVALS: f64 = 30.0;
    /// Adam steps of VB (1100–1200 on EEG and Adult).
    pub const ADAM_STEPS: f64 = 1500.0;
    /// Newton iterations per warm-started logit fit.
    pub const NEWTON_ITERS: f64 = 4.0;
    /// Logit's λ grid (`baseline::logit::default_grid`) and RankBoost's rounds.
    pub const LOGIT_GRID: f64 = 13.0;
    pub const BOOST_ROUNDS: f64 = 500.0;
    /// SMC's adaptive stages (ESS ½ each) from the prior to γ, a central
    /// figure: √(d/2)·ln(1 + γ)/3, d = min(features, rows) (the posterior
    /// moves only in the row space). Fitted to the default runs (stages
    /// measured / this): DNA 23/24.6, survey look-alike 22/17.6, Sonar 8/9.2,
    /// Pima 7/4.2, survey 300 × 500 12/23.3 — each within a factor 2.
    pub fn smc_stages(d: f64, gamma: f64) -> f64 {
        ((0.5 * d).sqrt() * (1.0 + gamma).ln() / 3.0).max(1.0)
    }
    /// SMC's adaptive moves per stage (until the particles decorrelate;
    /// risk evaluations per particle, the mixture move's included), a
    /// central figure: (0.15·d·r^0.8 + 2), r = max(γ/n, 1). The moves a
    /// stage needs rise with γ relative to the rows (the risk's steps
    /// matter more: Sonar's per stage rise 5 → 153 from γ = 8 to 1248 at
    /// n = 156). Measured per stage (evaluations / particles / stages):
    /// at γ = n DNA 25.7 (d = 180; model 29), survey look-alike 17 and
    /// 24.8 (85; 14.8), Sonar 8 (60; 11), survey 300 × 500 60 (r = 300;
    /// 47); above n Sonar 8n 57.6 (49.5), EEG 16n 18.3 (d = 14; 21.3) and
    /// 8n 14.9 (13.1). Measured / model 0.7–1.7. Below γ = n: no runs,
    /// the figure at n (the safe side). Kernels and the mixture move are
    /// not told apart: the runs above mix them.
    pub fn smc_moves(d: f64, gamma_over_n: f64) -> f64 {
        0.15 * d * gamma_over_n.max(1.0).powf(0.8) + 2.0
    }
    /// The stages' factor above γ = n, r^¼ (r = max(γ/n, 1)): the
    /// risk's steps add stages beyond the smooth √(d/2)·ln(1 + γ)/3
    /// (Sonar 8n 20 stages against 13.0 without it, 21.9 with; EEG 16n 26
    /// against 10.7 / 21.4, 8n 23 against 10.1 / 17.0).
    pub fn smc_stage_factor(gamma_over_n: f64) -> f64 {
        gamma_over_n.max(1.0).powf(0.25)
    }
}
