//! What the check costs: one exact R_n(θ) per draw, O(n) each (the bucket
//! kernel of `numerics::fast_risk`), so S draws cost S·n row evaluations —
//! 20 000 draws at 10⁶ rows were 20 minutes. The default number of draws
//! therefore follows the training size (`auto_draws`): 20 000 up to 10⁵ rows,
//! above a time budget (the cost of those 20 000 there), never fewer than 100
//! (PSIS's k̂ is then judged against its sample-size threshold 1 − 1/log₁₀ S,
//! 0.5 at 100 draws: fewer draws make the check more cautious, not laxer, but
//! blind to what has mass below ~1/S — the note says so).
//!
//! The risks: scores of a block of draws by one GEMM (buffers reused across
//! blocks), then each worker thread takes every T-th draw of the block with
//! its own kernel scratch, allocated once per call (at 10⁶ rows a scratch is
//! ~30 MB: allocating it per rayon split cost millions of page faults). Each
//! risk is an exact count, so the result does not depend on the thread count.

use nalgebra::DMatrix;
use rayon::prelude::*;

use crate::engine::numerics::fast_risk::RiskScratch;
use crate::engine::numerics::linalg::{column_pieces, rows_b_into};
use crate::engine::problem::Problem;

/// Most draws whose risks are computed by one GEMM.
const CHUNK: usize = 256;
/// Bytes of one GEMM's score block (n × draws f64): at 10⁶ rows 256 draws
/// took 2 GB, at 10⁷ rows 20 GB; fewer draws per block above this.
const SCORE_BLOCK_BYTES: usize = 1 << 27;

/// Draws of the default check on small data (the tail needs them: EP's
/// all-spike fixed point on the sparse demo had k̂ 0.54 from 4000 draws, 0.76
/// from 20 000).
pub const MAX_AUTO_DRAWS: usize = 20_000;
/// Rows up to which the default check takes `MAX_AUTO_DRAWS`; above, it costs
/// what those draws cost there (≈ 23 CPU s at d = 20: ≈ 11 s wall on 2 cores).
pub const FULL_CHECK_ROWS: usize = 100_000;
/// The fewest draws of the default check: PSIS's tail fit then has 20 draws
/// and its k̂ threshold is 1 − 1/log₁₀ 100 = 0.5 (`auto_draws_note`). Fewer
/// would leave k̂ no tail to fit, so this floor, not the budget, sets the
/// check's cost from ~7·10⁶ rows: 106 draws at 7.5·10⁶ × 20 measured 22 CPU s
/// (≈ 11 s wall on 2 cores; BENCHMARKS vb-1e7).
pub const FEWEST_AUTO_DRAWS: usize = 100;
/// Below this many draws the default says what k̂ can and cannot tell.
pub const FEW_DRAWS: usize = 1000;

/// One exact risk R_n(θ), single-thread seconds per row: the score (d
/// multiply-adds in the GEMM of a block of θs) and the bucket count at
/// `RISK_ROWS_AT` rows, growing as n^0.3 while the kernel's tables leave the
/// caches, capped where the cache-blocked count takes over (from 2¹⁸ rows).
/// `pacauc bench-risk`, d = 20, one thread: 5.2, 10.6, 21.7 and 28.3 ns per
/// row at 7.5·10³…7.5·10⁶ rows; the model 5.2, 10.4, 20.7, 28.3.
const RISK_ROW: f64 = 3.2e-9;
const RISK_ROW_FEATURE: f64 = 0.1e-9;
const RISK_ROWS_AT: f64 = 7500.0;
const RISK_CACHE_EXPONENT: f64 = 0.3;
const RISK_CACHE_CAP: f64 = 5.45;

/// CPU seconds of one exact risk on `n` rows of `d` features (the cost model's
/// unit for every risk evaluation: `spec::cost`).
pub fn risk_seconds(n: usize, d: usize) -> f64 {
    let n = n as f64;
    let cache = (n / RISK_ROWS_AT)
        .powf(RISK_CACHE_EXPONENT)
        .clamp(0.5, RISK_CACHE_CAP);
    n * (RISK_ROW + RISK_ROW_FEATURE * d as f64) * cache
}

/// Draws of the default check on `n` training rows of `d` features: 20 000 up
/// to 10⁵ rows; above, a time budget — as many as cost what 20 000 cost at
/// 10⁵ rows (`risk_seconds`; ≈ 1460 at 7.5·10⁵ rows, 106 at 7.5·10⁶), at
/// least `FEWEST_AUTO_DRAWS`. Depends on n and d only, never on the machine
/// or the threads: the same record everywhere.
pub fn auto_draws(n: usize, d: usize) -> usize {
    if n <= FULL_CHECK_ROWS {
        return MAX_AUTO_DRAWS;
    }
    let budget = MAX_AUTO_DRAWS as f64 * risk_seconds(FULL_CHECK_ROWS, d);
    ((budget / risk_seconds(n, d)) as usize).clamp(FEWEST_AUTO_DRAWS, MAX_AUTO_DRAWS)
}

/// What the default chose when it is fewer than `MAX_AUTO_DRAWS` (said on
/// stderr, in the trace and in `details.is_check.draws_note`); with fewer
/// than `FEW_DRAWS`, what k̂ from them can and cannot tell.
pub fn auto_draws_note(draws: usize) -> Option<String> {
    if draws >= MAX_AUTO_DRAWS {
        return None;
    }
    let mut note = format!(
        "importance-sampling check: {draws} draws (by default {MAX_AUTO_DRAWS} up to 10⁵ training rows; above, as many as cost the same time, at least {FEWEST_AUTO_DRAWS}; --is-draws N to choose)"
    );
    if draws < FEW_DRAWS {
        let s = draws.max(2) as f64;
        note.push_str(&format!(
 ". From {draws} draws k̂ is judged against {:.2} (1 − 1/log₁₀ S) on a tail of {:.0} draws: a high k̂ still shows a proposal that misses the posterior's bulk, but a low one cannot vouch for tails or modes of mass below ~1/{draws}, and the corrected means carry ±1/√ESS ≥ {:.2} sd of Monte Carlo error",
            super::psis::khat_threshold(draws),
            (0.2 * s).min(3.0 * s.sqrt()).ceil(),
            1.0 / s.sqrt()
        ));
    }
    Some(note)
}

/// Draws per score block for `n` rows (at least one, at most `CHUNK`).
fn chunk_draws(n: usize) -> usize {
    (SCORE_BLOCK_BYTES / (8 * n.max(1))).clamp(1, CHUNK)
}

/// Rows of one score GEMM: with fewer than 6 draws nalgebra's GEMM is one
/// axpy per feature over the whole output, which at 7.5·10⁶ rows streamed
/// the score columns through memory d times (41% of the check's CPU);
/// blocks of rows keep them in cache.
const SCORE_ROWS: usize = 1 << 14;

/// The scores `x θ_j` of the columns of `t`, split by class into `sp` and
/// `sn` (rows in order), a block of `SCORE_ROWS` rows at a time (no
/// class-split copy of x); the blocks go on the thread pool, each writing its
/// own rows of `sp` and `sn`. Each score is one matrixmultiply sum over the
/// features, the same whatever the block or the thread count.
fn class_scores(
    x: &DMatrix<f64>,
    y: &[bool],
    t: &DMatrix<f64>,
    sp: &mut DMatrix<f64>,
    sn: &mut DMatrix<f64>,
) {
    let (n, per) = (x.nrows(), t.ncols());
    // The remainder joins the last full block.
    let mut bounds = vec![0];
    while bounds[bounds.len() - 1] < n {
        let r0 = bounds[bounds.len() - 1];
        bounds.push(if n - r0 < 2 * SCORE_ROWS {
            n
        } else {
            r0 + SCORE_ROWS
        });
    }
    let pos: Vec<usize> = bounds
        .windows(2)
        .map(|w| y[w[0]..w[1]].iter().filter(|&&l| l).count())
        .collect();
    let neg: Vec<usize> = bounds
        .windows(2)
        .zip(&pos)
        .map(|(w, p)| w[1] - w[0] - p)
        .collect();
    let (ps, ns) = (column_pieces(sp, &pos), column_pieces(sn, &neg));
    let rows = (2 * SCORE_ROWS).min(n);
    ps.into_par_iter().zip(ns).enumerate().for_each_init(
        || vec![0.0; rows * per],
        |block, (b, (mut pc, mut nc))| {
            let (r0, len) = (bounds[b], bounds[b + 1] - bounds[b]);
            // Not nalgebra's `gemm`: its matrixmultiply call would start its
            // own threads inside the pool's (at 10⁶ rows 12% more CPU, twice
            // the system time).
            let out = &mut block[..len * per];
            rows_b_into(x, r0, len, t, out);
            let labels = &y[r0..r0 + len];
            for (j, (pj, nj)) in pc.iter_mut().zip(nc.iter_mut()).enumerate() {
                let (col, (mut a, mut c)) = (&out[j * len..(j + 1) * len], (0, 0));
                for (i, &label) in labels.iter().enumerate() {
                    if label {
                        pj[a] = col[i];
                        a += 1;
                    } else {
                        nj[c] = col[i];
                        c += 1;
                    }
                }
            }
        },
    );
}

/// R_n of every θ on `pb`'s training rows (see the module doc).
pub fn risks_of(pb: &Problem, thetas: &[&[f64]]) -> Vec<f64> {
    let (np, nn) = (pb.n_pos(), pb.n_neg());
    let mut out = vec![0.0; thetas.len()];
    if thetas.is_empty() {
        return out;
    }
    let per = chunk_draws(pb.n()).min(thetas.len());
    let workers = rayon::current_num_threads().clamp(1, per);
    let mut scratch: Vec<RiskScratch> = (0..workers).map(|_| RiskScratch::new(np, nn)).collect();
    let mut t = DMatrix::zeros(pb.d(), per);
    let mut sp = DMatrix::zeros(np, per);
    let mut sn = DMatrix::zeros(nn, per);
    for (c, chunk) in thetas.chunks(per).enumerate() {
        // A short last block leaves stale columns in `t`: their risks are
        // not read.
        for (j, theta) in chunk.iter().enumerate() {
            t.column_mut(j).copy_from_slice(theta);
        }
        class_scores(&pb.x, &pb.y, &t, &mut sp, &mut sn);
        let (sp, sn) = (&sp, &sn);
        let done: Vec<Vec<(usize, f64)>> = scratch
            .par_iter_mut()
            .enumerate()
            .map(|(w, s)| {
                (w..chunk.len())
                    .step_by(workers)
                    .map(|j| (j, s.risk(sp.column(j).as_slice(), sn.column(j).as_slice())))
                    .collect()
            })
            .collect();
        for (j, r) in done.into_iter().flatten() {
            out[c * per + j] = r;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::metrics::auc_risk;
    use crate::engine::numerics::rng::{normal, stream};
    use crate::engine::prior::Prior;

    /// Against the obvious path (scores one by one, `metrics::auc_risk`), on
    /// rows with many ties (coarse codes) and blocks that do not divide the
    /// draws, for one and two threads.
    #[test]
    fn risks_equal_the_direct_auc_for_every_draw() {
        let mut r = stream(7, &[2]);
        let (n, d) = (300, 4);
        let x = DMatrix::from_fn(n, d, |_, k| {
            let v = normal(&mut r);
            if k < 2 { v.round() } else { v }
        });
        let y: Vec<bool> = (0..n).map(|i| x[(i, 0)] + normal(&mut r) > 0.5).collect();
        let names = (0..d).map(|k| format!("x{k}")).collect();
        let pb = Problem::new(names, x, y, 10.0, Prior::Gaussian { var: 1.0 }).unwrap();
        let thetas: Vec<Vec<f64>> = (0..301)
            .map(|s| {
                (0..d)
                    .map(|k| match (s % 7 == 0, k < 2) {
                        // Dyadic weights on the integer codes, zero elsewhere:
                        // exact scores with exact ties in either path.
                        (true, true) => (8.0 * normal(&mut r)).round() / 8.0,
                        (true, false) => 0.0,
                        _ => normal(&mut r),
                    })
                    .collect()
            })
            .collect();
        let refs: Vec<&[f64]> = thetas.iter().map(|t| t.as_slice()).collect();
        for threads in [1, 2] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let got = pool.install(|| risks_of(&pb, &refs));
            for (s, theta) in thetas.iter().enumerate() {
                let scores: Vec<f64> = (0..n)
                    .map(|i| (0..d).map(|k| pb.x[(i, k)] * theta[k]).sum())
                    .collect();
                let want = auc_risk(&scores, &pb.y);
                assert!(
                    (got[s] - want).abs() < 1e-12,
                    "draw {s}, {threads} thread(s): {} vs {want}",
                    got[s]
                );
            }
        }
    }

    /// Several row blocks of scores (the last one longer), with 3 and 7
    /// draws a GEMM: as the direct path.
    #[test]
    fn blocked_scores_give_the_direct_risks() {
        let mut r = stream(11, &[3]);
        let (n, d) = (3 * SCORE_ROWS + 123, 3);
        let x = DMatrix::from_fn(n, d, |_, _| normal(&mut r));
        let y: Vec<bool> = (0..n).map(|i| x[(i, 0)] + normal(&mut r) > 0.7).collect();
        let names = (0..d).map(|k| format!("x{k}")).collect();
        let pb = Problem::new(names, x, y, 10.0, Prior::Gaussian { var: 1.0 }).unwrap();
        for draws in [3, 7] {
            let thetas: Vec<Vec<f64>> = (0..draws)
                .map(|_| (0..d).map(|_| normal(&mut r)).collect())
                .collect();
            let refs: Vec<&[f64]> = thetas.iter().map(|t| t.as_slice()).collect();
            let on = |t: usize| {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(t)
                    .build()
                    .unwrap();
                pool.install(|| risks_of(&pb, &refs))
            };
            let got = on(1);
            assert_eq!(got, on(3), "the blocks' threads change nothing");
            for (s, theta) in thetas.iter().enumerate() {
                let scores: Vec<f64> = (0..n)
                    .map(|i| (0..d).map(|k| pb.x[(i, k)] * theta[k]).sum())
                    .collect();
                let want = auc_risk(&scores, &pb.y);
                assert!(
                    (got[s] - want).abs() < 1e-12,
                    "{draws} draws, draw {s}: {} vs {want}",
                    got[s]
                );
            }
        }
    }

    #[test]
    fn the_default_draws_follow_the_rows() {
        assert_eq!(auto_draws(1000, 20), MAX_AUTO_DRAWS);
        assert_eq!(auto_draws(100_000, 20), MAX_AUTO_DRAWS);
        assert_eq!(auto_draws(750_000, 20), 1456);
        assert_eq!(auto_draws(7_500_000, 20), 106);
        assert_eq!(auto_draws(1 << 26, 20), FEWEST_AUTO_DRAWS);
        let budget = MAX_AUTO_DRAWS as f64 * risk_seconds(FULL_CHECK_ROWS, 20);
        let mut last = MAX_AUTO_DRAWS;
        for n in [1, 10, 1000, 123_456, 1 << 20, 5_000_000, 1 << 26] {
            let s = auto_draws(n, 20);
            assert!((FEWEST_AUTO_DRAWS..=MAX_AUTO_DRAWS).contains(&s) && s <= last);
            assert!(
                n <= FULL_CHECK_ROWS
                    || s == FEWEST_AUTO_DRAWS
                    || s as f64 * risk_seconds(n, 20) <= budget
            );
            last = s;
        }
        assert!(auto_draws_note(MAX_AUTO_DRAWS).is_none());
        assert!(!auto_draws_note(1456).unwrap().contains("cannot vouch"));
        let few = auto_draws_note(106).unwrap();
        assert!(
            few.contains("0.51") && few.contains("cannot vouch"),
            "{few}"
        );
    }
}
