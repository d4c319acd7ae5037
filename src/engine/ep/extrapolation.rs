//! Extrapolation of a geometric convergence in the classic sweep loop
//! (`driver`).
//!
//! Near a fixed point EP converges geometrically, often slowly (Δ_t falling
//! by 3% a sweep: hundreds of sweeps, claims.csv at γ = n, EEG at n/4). When
//! the last `JUMP_AFTER` sweeps at one η moved the mean the same way and Δ_t
//! fell by a steady ratio r, the sweep's step is scaled by 1/(1 − r) (Aitken's
//! extrapolation to the limit of the geometric series; capped so that the
//! predicted change stays below `JUMP_SPAN` sds). A drift at a steady pace
//! (r ≈ 1: EEG at n/4 moves its sds 10% a sweep for 50 sweeps) takes the
//! capped step, but only far from convergence (Δ_t above `DRIFT_FLOOR`·tol·η);
//! no jump at all once Δ_t is within `JUMP_FLOOR`·tol·η of the test: there Δ
//! can sit nearly flat in a tiny cycle (the messy clinic file, a fold at 8n:
//! Δ ≈ 1.3e-4 falling 5% a sweep), and repeated 20× jumps kept it from ever
//! converging. A jump is kept only if the sweep after it moves q less than the
//! sweep before it did (Δ falls); else EP goes back exactly to the state the
//! jump was taken from (claims, a fold at n/2: a 10× jump set off a growing
//! period-2 oscillation that cost η a halving and 300 sweeps); no jump
//! follows at that η, later ones are capped 4× lower (a smaller jump at the
//! same η set off the same oscillation), none after `JUMP_FAILS` returns.
//! The jumped state must pass
//! the same checks as any other (Q positive definite, valid cavities), else
//! EP goes back exactly to the state it jumped from and stops extrapolating.
//! The fixed point and the convergence test are those of plain sweeps.

/// Δ's in a row (same η, the mean moving one way) before an extrapolation.
pub const JUMP_AFTER: usize = 4;
/// Largest extrapolation ω (the step is scaled by 1 + ω).
pub const JUMP_MAX: f64 = 30.0;
/// Largest predicted change of a mean or sd by an extrapolation (in sds).
pub const JUMP_SPAN: f64 = 0.5;
/// No jump once Δ is below this many times the convergence threshold tol·η.
pub const JUMP_FLOOR: f64 = 2.0;
/// Jumps undone (Δ grew after them) before extrapolation stops for the run.
pub const JUMP_FAILS: usize = 3;
/// No jump on a steady drift (ratio ≥ 1) once Δ is below this many tol·η.
pub const DRIFT_FLOOR: f64 = 100.0;

/// The factor 1 + ω = 1/(1 − r) of an extrapolated step and r, when the
/// recent Δ's (`hist`, oldest first) fell by a steady ratio r; `threshold` is
/// the convergence test's tol·η, `cap` the largest ω.
pub fn jump_factor(hist: &[f64], threshold: f64, cap: f64) -> Option<(f64, f64)> {
    if hist.len() < JUMP_AFTER {
        return None;
    }
    let last = &hist[hist.len() - JUMP_AFTER..];
    let now = last[last.len() - 1];
    if now < JUMP_FLOOR * threshold {
        return None;
    }
    let ratios: Vec<f64> = last.windows(2).map(|w| w[1] / w[0]).collect();
    let (lo, hi) = ratios
        .iter()
        .fold((f64::INFINITY, 0.0f64), |(a, b), &r| (a.min(r), b.max(r)));
    if !(lo > 0.3 && hi < 1.1 && hi <= 1.1 * lo) || (hi >= 1.0 && now < DRIFT_FLOOR * threshold) {
        return None;
    }
    // r ≥ 1: a drift at a steady pace; the span cap sets the step.
    let r = (ratios.iter().map(|r| r.ln()).sum::<f64>() / ratios.len() as f64).exp();
    let omega = if r < 1.0 { r / (1.0 - r) } else { cap }
        .min(cap)
        .min(JUMP_SPAN / now);
    (omega >= 1.0).then_some((1.0 + omega, r))
}
