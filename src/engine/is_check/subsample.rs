//! The check's risks on a row subsample (large n, ALGORITHMS.md §13): each
//! draw's exact R_n costs O(n), and at 7.5·10⁶ training rows even the floor of
//! 100 draws cost 22 CPU s. Above `SUBSAMPLE_ABOVE` training rows the default
//! check scores its draws on a class-stratified subsample of `SUBSAMPLE_ROWS`
//! rows dealt into `GROUPS` disjoint groups: R̂(θ) is the mean of the groups'
//! exact risks (each unbiased for R_n(θ)), and the spread of the groups says
//! how far R̂ is from R_n draw to draw. Only that draw-to-draw part moves the
//! normalised weights (a shift common to all draws cancels), so the check
//! states τ = γ · sd_draws(R̂ − R_n) as its own error on the log weights, and
//! distrusts itself when τ is large. Extra noise in log w thickens the
//! weights' tail: it raises k̂ rather than hiding a bad approximation.

use rand::seq::SliceRandom;

use super::risks::risks_of;
use crate::engine::numerics::rng::stream;
use crate::engine::problem::Problem;

/// Disjoint row groups of the subsample (≥ 2 for a spread).
pub const GROUPS: usize = 4;
/// Training rows above which the default check uses a subsample.
pub const SUBSAMPLE_ABOVE: usize = 1_000_000;
/// Rows of the default subsample (all groups together).
pub const SUBSAMPLE_ROWS: usize = 500_000;
/// Draws of the default check on a subsample: k̂ is then judged on a tail of
/// 100 draws (`FEW_DRAWS`: no "few draws" caveat). ≈ 6 CPU s at d = 20.
pub const SUBSAMPLE_DRAWS: usize = 1000;
/// τ above which the check does not trust itself (the subsample's noise
/// alone moves a weight by a factor e).
pub const TAU_MAX: f64 = 1.0;

const SUB_KEY: u64 = 0x5375_6273;

/// The groups: per class the rows shuffled by (seed, class), the first
/// ⌈rows · n_c / n⌉ kept and dealt round-robin into `GROUPS` problems (each
/// with both classes). Rows stay in their original order within a group.
pub fn groups(pb: &Problem, rows: usize, seed: u64) -> Result<Vec<Problem>, String> {
    let n = pb.n();
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); GROUPS];
    for (class, label) in [(0u64, true), (1u64, false)] {
        let mut idx: Vec<usize> = (0..n).filter(|&i| pb.y[i] == label).collect();
        let keep = ((rows as f64 * idx.len() as f64 / n as f64).ceil() as usize)
            .clamp(GROUPS.min(idx.len()), idx.len());
        if keep < GROUPS {
            return Err(format!(
                "a row subsample of the check needs {GROUPS} rows of each class"
            ));
        }
        idx.shuffle(&mut stream(seed, &[SUB_KEY, class]));
        for (r, &i) in idx[..keep].iter().enumerate() {
            members[r % GROUPS].push(i);
        }
    }
    members
        .into_iter()
        .map(|mut m| {
            m.sort_unstable();
            let y = m.iter().map(|&i| pb.y[i]).collect();
            Problem::new(
                pb.names.clone(),
                pb.x.select_rows(&m),
                y,
                pb.gamma,
                pb.prior.clone(),
            )
            .map_err(|e| e.to_string())
        })
        .collect()
}

/// R̂ of every θ (the groups' mean risk) and sd_draws(R̂ − R_n) estimated from
/// the groups: each group's risks centred over the draws, their spread across
/// groups per draw (÷ G for the mean), averaged over the draws.
pub fn risks(groups: &[Problem], thetas: &[&[f64]]) -> (Vec<f64>, f64) {
    let g = groups.len();
    let per: Vec<Vec<f64>> = groups.iter().map(|pb| risks_of(pb, thetas)).collect();
    let s = thetas.len();
    let mean = (0..s)
        .map(|j| per.iter().map(|r| r[j]).sum::<f64>() / g as f64)
        .collect();
    if s == 0 || g < 2 {
        return (mean, 0.0);
    }
    let centre: Vec<f64> = per
        .iter()
        .map(|r| r.iter().sum::<f64>() / s as f64)
        .collect();
    let var: f64 = (0..s)
        .map(|j| {
            let c: Vec<f64> = per.iter().zip(&centre).map(|(r, m)| r[j] - m).collect();
            let cm = c.iter().sum::<f64>() / g as f64;
            c.iter().map(|v| (v - cm).powi(2)).sum::<f64>() / (g - 1) as f64
        })
        .sum();
    (mean, (var / s as f64 / g as f64).sqrt())
}

/// The default check on `n` training rows of `d` features: (draws, rows to
/// score them on) — all rows and `risks::auto_draws` up to `SUBSAMPLE_ABOVE`,
/// above `SUBSAMPLE_DRAWS` draws on `SUBSAMPLE_ROWS` rows.
pub fn auto(n: usize, d: usize) -> (usize, Option<usize>) {
    if n > SUBSAMPLE_ABOVE {
        (SUBSAMPLE_DRAWS, Some(SUBSAMPLE_ROWS))
    } else {
        (super::risks::auto_draws(n, d), None)
    }
}

/// The check's (draws, rows): as asked (on all rows), or `auto`.
pub fn settings(asked: Option<usize>, n: usize, d: usize) -> (usize, Option<usize>) {
    asked.map_or_else(|| auto(n, d), |k| (k, None))
}

/// CPU seconds of a check of `draws` draws on `rows` of `n` rows (None: all).
pub fn cost_seconds(draws: usize, rows: Option<usize>, n: usize, d: usize) -> f64 {
    use super::risks::risk_seconds;
    match rows {
        Some(m) if m < n => draws as f64 * GROUPS as f64 * risk_seconds(m / GROUPS, d),
        _ => draws as f64 * risk_seconds(n, d),
    }
}

/// What the default chose on a subsample (said like `risks::auto_draws_note`).
pub fn auto_note(n: usize, draws: usize, rows: usize) -> String {
    format!(
        "importance-sampling check: {draws} draws, each scored on a class-stratified subsample of {rows} of the {n} training rows in {GROUPS} groups (above {SUBSAMPLE_ABOVE} rows every draw's exact R_n would cost O(n)); the groups' spread gives the subsample's error on the log weights, stated as τ; --is-draws N scores N draws on all rows"
    )
}
