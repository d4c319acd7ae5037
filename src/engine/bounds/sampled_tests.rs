//! The certificate with E_ρ R_n from sampled pairs (`PairPlan`, above
//! `EXACT_PAIRS_MAX` pairs) against the exact pass on problems small enough
//! for both: it must be conservative and close in on the exact one as the
//! sample grows.

use nalgebra::DMatrix;

use super::*;
use crate::engine::numerics::pair_risk::sampled_gaussian_pair_risk;
use crate::engine::numerics::rng::{normal, stream};
use crate::engine::prior::Prior;
use crate::engine::problem::Problem;

/// 400 rows, 4 features, one of them binary (ties in the scores), 30%
/// positives; and a Gaussian ρ near the truth.
fn problem() -> (Problem, Vec<f64>, DMatrix<f64>) {
    let mut r = stream(11, &[2]);
    let (n, d) = (400, 4);
    let mut x = DMatrix::from_fn(n, d, |_, _| normal(&mut r));
    for i in 0..n {
        x[(i, 3)] = if normal(&mut r) > 0.0 { 1.0 } else { 0.0 };
    }
    // Some duplicated rows across the classes: pairs with s² = 0 (ties ½).
    for i in 0..20 {
        let row = x.row(i).clone_owned();
        x.set_row(n - 1 - i, &row);
    }
    let y: Vec<bool> = (0..n)
        .map(|i| x[(i, 0)] - 0.5 * x[(i, 1)] + 0.7 * x[(i, 3)] + normal(&mut r) > 0.9)
        .collect();
    let names = (0..d).map(|k| format!("x{k}")).collect();
    let pb = Problem::new(names, x, y, 100.0, Prior::Gaussian { var: 1.0 }).unwrap();
    let mean = vec![0.9, -0.4, 0.05, 0.6];
    let cov = DMatrix::from_row_slice(
        4,
        4,
        &[
            0.04, 0.01, 0.0, 0.0, 0.01, 0.05, 0.0, 0.01, 0.0, 0.0, 0.03, 0.0, 0.0, 0.01, 0.0, 0.06,
        ],
    );
    (pb, mean, cov)
}

fn sampled(pb: &Problem, mean: &[f64], cov: &DMatrix<f64>, sample: usize, seed: u64) -> Bound {
    let plan = PairPlan {
        exact_max: 0,
        sample,
        seed,
        shared_by: 1,
    };
    certify_gaussian_with(pb, &pb.prior, mean, cov, 0.05, "gaussian", plan).unwrap()
}

/// The sampled mean is unbiased: within 4.5 of its standard errors of the
/// exact E_ρ R_n for each of 20 seeds (a two-sided 4.5-SE miss has chance
/// ~7e-6 per seed under the CLT), ties ½ as in the pass; and the same bits on
/// one thread and on three.
#[test]
fn sampled_pairs_estimate_the_exact_mean() {
    let (pb, mean, cov) = problem();
    let exact = gaussian_empirical_risk(&pb.x, &pb.y, &mean, &cov).unwrap();
    let l = nalgebra::Cholesky::new(cov.clone()).unwrap().l();
    let b = 20_000;
    for seed in 0..20 {
        let s = sampled_gaussian_pair_risk(&pb.x, &pb.y, &mean, &l, b, seed);
        assert_eq!(s.count, b);
        let se = s.sd / (b as f64).sqrt();
        assert!(
            (s.mean - exact).abs() < 4.5 * se,
            "seed {seed}: sampled {} ± {se}, exact {exact}",
            s.mean
        );
    }
    let on = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| sampled_gaussian_pair_risk(&pb.x, &pb.y, &mean, &l, 200_000, 7))
    };
    assert_eq!(on(1), on(3));
}

/// Conservative: for every one of 30 seeds the interval holds the exact
/// E_ρ R_n and the bound is at or above the exact pass's (it fails only when
/// the empirical Bernstein interval misses, chance ≤ ε/8 = 0.00625 per seed;
/// these seeds are fixed). Converging: as the sample grows (10³ → 10⁶ pairs)
/// the excess over the exact pass's bound shrinks towards the price of the
/// ε share spent on the Monte Carlo event (the exact mean at ε·(1 − 1/4)).
#[test]
fn sampled_certificate_is_conservative_and_converges() {
    let (pb, mean, cov) = problem();
    let exact = certify_gaussian(&pb, &pb.prior, &mean, &cov, 0.05, "gaussian").unwrap();
    assert!(exact.draws.is_none(), "40 000 pairs: the exact pass");
    for seed in 0..30 {
        let b = sampled(&pb, &mean, &cov, 5_000, seed);
        let d = b.draws.as_ref().unwrap();
        assert_eq!(d.source.as_deref(), Some(PAIRS_SOURCE));
        assert!(d.lower <= exact.empirical_risk && exact.empirical_risk <= d.upper);
        assert!(
            b.risk >= exact.risk,
            "seed {seed}: {} < {}",
            b.risk,
            exact.risk
        );
        assert_eq!(recompute(&b, 0.05), b);
    }
    // The limit: the exact E_ρ R_n, KL and m with the PAC-Bayes part at ε − ε/4.
    let m = exact.m;
    let limit = two_sample::pac_bayes_kl(exact.empirical_risk, exact.kl, m, 0.05 * 0.75);
    let excess: Vec<f64> = [1_000, 10_000, 100_000, 1_000_000]
        .iter()
        .map(|&s| sampled(&pb, &mean, &cov, s, 1).risk - limit)
        .collect();
    assert!(
        excess.windows(2).all(|w| w[1] < w[0]) && excess[3] < 0.01 && excess[3] > -1e-3,
        "excess over the limit {limit}: {excess:?}"
    );
    assert!(limit > exact.risk && limit - exact.risk < 0.01);
}

/// The batched path (every mean × spread from one sample, `pair_sample`)
/// against each candidate alone (the factor of s·V, one mean): the same pairs,
/// so means and sds agree to rounding (1e-12 relative: Φ is the vectorised
/// kernel, the factor √s·L instead of chol(s·V)); the same bits for one thread
/// and three; and the certificate over the spreads equals the per-spread
/// `best_spread` of `certify_gaussian_with` to the same tolerance.
#[test]
fn batched_spreads_equal_each_spread_alone() {
    use crate::engine::numerics::pair_sample::sampled_gaussian_pair_risks;
    let (pb, mean, cov) = problem();
    let other: Vec<f64> = mean.iter().map(|m| 0.5 * m + 0.1).collect();
    let means: Vec<&[f64]> = vec![&mean, &other];
    let spreads = spread::SPREADS;
    let l = nalgebra::Cholesky::new(cov.clone()).unwrap().l();
    let b = 100_000;
    let all = sampled_gaussian_pair_risks(&pb.x, &pb.y, &means, &l, &spreads, b, 3);
    assert_eq!(all.len(), 2 * spreads.len());
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-12 * a.abs().max(b.abs());
    for (a, m) in means.iter().enumerate() {
        for (k, &s) in spreads.iter().enumerate() {
            let ls = nalgebra::Cholesky::new(&cov * s).unwrap().l();
            let one = sampled_gaussian_pair_risk(&pb.x, &pb.y, m, &ls, b, 3);
            let got = all[a * spreads.len() + k];
            assert_eq!(got.count, one.count);
            assert!(
                close(got.mean, one.mean) && close(got.sd, one.sd),
                "mean {a}, spread {s}: {got:?} vs {one:?}"
            );
        }
    }
    let on = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| sampled_gaussian_pair_risks(&pb.x, &pb.y, &means, &l, &spreads, b, 5))
    };
    assert_eq!(on(1), on(3));
    for exact_max in [0, usize::MAX] {
        let plan = PairPlan {
            exact_max,
            sample: 50_000,
            seed: 9,
            shared_by: 1,
        };
        let batched =
            certify_gaussian_spreads(&pb, &pb.prior, &mean, &cov, 0.05, "gaussian", plan).unwrap();
        let alone = spread::best_spread(|s, shared_by| {
            let plan = PairPlan { shared_by, ..plan };
            certify_gaussian_with(&pb, &pb.prior, &mean, &(&cov * s), 0.05, "gaussian", plan)
        })
        .unwrap();
        assert_eq!(batched.rho_spread, alone.rho_spread);
        assert!(
            close(batched.risk, alone.risk),
            "{} vs {}",
            batched.risk,
            alone.risk
        );
        assert!(close(batched.empirical_risk, alone.empirical_risk));
        assert_eq!(batched.draws.is_some(), exact_max == 0);
        if exact_max > 0 {
            assert_eq!(batched, alone, "the exact pass: the same bits");
        }
    }
}
