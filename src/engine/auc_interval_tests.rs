use super::*;
use crate::engine::metrics::auc;
use crate::engine::numerics::rng::{normal, stream};

/// The O(n₊n₋) definition: ψ over every (positive, negative) pair.
fn slow_components(s: &[f64], y: &[bool]) -> Components {
    let psi = |a: f64, b: f64| {
        if a > b {
            1.0
        } else if a == b {
            0.5
        } else {
            0.0
        }
    };
    let pos: Vec<f64> = (0..y.len()).filter(|&i| y[i]).map(|i| s[i]).collect();
    let neg: Vec<f64> = (0..y.len()).filter(|&i| !y[i]).map(|i| s[i]).collect();
    let v10 = pos
        .iter()
        .map(|&p| neg.iter().map(|&q| psi(p, q)).sum::<f64>() / neg.len() as f64)
        .collect();
    let v01 = neg
        .iter()
        .map(|&q| pos.iter().map(|&p| psi(p, q)).sum::<f64>() / pos.len() as f64)
        .collect();
    Components { v10, v01 }
}

/// Scores with many ties (rounded) and rare positives, plus a second score
/// correlated with the first.
fn sample(n: usize, seed: u64, rate: f64) -> (Vec<f64>, Vec<f64>, Vec<bool>) {
    let mut r = stream(seed, &[]);
    let mut a = Vec::new();
    let mut b = Vec::new();
    let mut y = Vec::new();
    for i in 0..n {
        let pos = (i as f64 * rate).fract() < rate;
        let shared = normal(&mut r);
        let shift = if pos { 0.8 } else { 0.0 };
        a.push(((shared + shift) * 2.0).round());
        b.push(0.6 * shared + 0.8 * normal(&mut r) + 0.5 * shift);
        y.push(pos);
    }
    (a, b, y)
}

#[test]
fn fast_components_match_the_definition_with_ties() {
    for (n, seed, rate) in [(40, 1, 0.3), (301, 2, 0.05), (500, 3, 0.5)] {
        let (a, b, y) = sample(n, seed, rate);
        for s in [&a, &b] {
            let fast = Components::fast(s, &y).unwrap();
            let slow = slow_components(s, &y);
            for (f, s) in fast.v10.iter().zip(&slow.v10) {
                assert!((f - s).abs() < 1e-12);
            }
            for (f, s) in fast.v01.iter().zip(&slow.v01) {
                assert!((f - s).abs() < 1e-12);
            }
            assert!((fast.auc() - auc(s, &y)).abs() < 1e-12);
            assert!((mean(&fast.v01) - auc(s, &y)).abs() < 1e-12);
        }
        let p = delong_paired(&a, &b, &y).unwrap();
        let (sa, sb) = (slow_components(&a, &y), slow_components(&b, &y));
        let var = delong_cov(&sa, &sa) + delong_cov(&sb, &sb) - 2.0 * delong_cov(&sa, &sb);
        assert!((p.se - var.sqrt()).abs() < 1e-12);
    }
}

#[test]
fn hand_computed_small_case() {
    // Positives 3, 2; negatives 2, 1. V₁₀ = (1, ¾), V₀₁ = (¾, 1); AUC ⅞.
    // S₁₀ = S₀₁ = 2·(⅛)² = 1/32, Var = S₁₀/2 + S₀₁/2 = 1/32.
    let r = delong(&[3.0, 2.0, 2.0, 1.0], &[true, true, false, false]).unwrap();
    assert_eq!(r.auc, 0.875);
    assert!((r.se - (1.0f64 / 32.0).sqrt()).abs() < 1e-15);
    // 0.875 + 1.96·0.177 > 1: the logit interval, inside (0, 1) and around the AUC.
    assert!(r.lower > 0.0 && r.upper < 1.0 && r.lower < 0.875 && r.upper > 0.875);
    // Perfect separation: SE 0, the interval is the point.
    let p = delong(&[3.0, 2.0, 1.0], &[true, false, false]).unwrap();
    assert_eq!((p.auc, p.se, p.lower, p.upper), (1.0, 0.0, 1.0, 1.0));
    // One class: nothing.
    assert!(delong(&[1.0, 2.0], &[true, true]).is_none());
}

#[test]
fn hanley_mcneil_rating_data() {
    // Hanley & McNeil (1982) Table I: CT ratings 1–5 of 58 normal and 51
    // abnormal patients; its AUC (Mann-Whitney) is 0.8932. DeLong's variance
    // here equals the closed form S₁₀/n₊ + S₀₁/n₋ computed by category:
    // V₁₀ of a rating k is (negatives below + ½ tied)/n₋.
    let normal = [33, 6, 6, 11, 2];
    let abnormal = [3, 2, 2, 11, 33];
    let (mut s, mut y) = (Vec::new(), Vec::new());
    for (k, (&n, &a)) in normal.iter().zip(&abnormal).enumerate() {
        s.extend(std::iter::repeat_n(k as f64, n + a));
        y.extend(std::iter::repeat_n(false, n));
        y.extend(std::iter::repeat_n(true, a));
    }
    let r = delong(&s, &y).unwrap();
    assert!((r.auc - 0.8932).abs() < 5e-5, "{}", r.auc);
    let (m, q) = (51.0, 58.0);
    let below = |k: usize| normal[..k].iter().sum::<usize>() as f64;
    let above = |k: usize| abnormal[k + 1..].iter().sum::<usize>() as f64;
    let v10: Vec<f64> = (0..5)
        .flat_map(|k| std::iter::repeat_n((below(k) + 0.5 * normal[k] as f64) / q, abnormal[k]))
        .collect();
    let v01: Vec<f64> = (0..5)
        .flat_map(|k| std::iter::repeat_n((above(k) + 0.5 * abnormal[k] as f64) / m, normal[k]))
        .collect();
    let var = cov(&v10, &v10) / m + cov(&v01, &v01) / q;
    assert!((r.se - var.sqrt()).abs() < 1e-12);
    // The published standard errors of this area are about 0.03 (Hanley &
    // McNeil's approximation 0.0306).
    assert!((r.se - 0.0306).abs() < 0.004, "{}", r.se);
}

#[test]
fn a_score_against_itself_differs_by_nothing() {
    let (a, _, y) = sample(200, 5, 0.2);
    let p = delong_paired(&a, &a, &y).unwrap();
    assert_eq!((p.difference, p.se, p.p_value), (0.0, 0.0, 1.0));
    // Reversed order of the arguments: the same test with the sign changed.
    let (a, b, y) = sample(200, 6, 0.2);
    let (ab, ba) = (
        delong_paired(&a, &b, &y).unwrap(),
        delong_paired(&b, &a, &y).unwrap(),
    );
    assert_eq!(ab.difference, -ba.difference);
    assert!((ab.p_value - ba.p_value).abs() < 1e-12);
}

/// Binormal scores: positives N(δ, 1), negatives N(0, 1), true AUC Φ(δ/√2).
fn binormal(np: usize, nn: usize, delta: f64, seed: u64) -> (Vec<f64>, Vec<bool>) {
    let mut r = stream(seed, &[7]);
    let mut s = Vec::new();
    let mut y = Vec::new();
    for i in 0..np + nn {
        let pos = i < np;
        s.push(normal(&mut r) + if pos { delta } else { 0.0 });
        y.push(pos);
    }
    (s, y)
}

#[test]
fn delong_intervals_cover_at_their_level() {
    // 2000 data sets of 60 positives and 140 negatives, true AUC Φ(1/√2) =
    // 0.7602. The coverage's own binomial sd is √(.95·.05/2000) = 0.0049;
    // DeLong's interval is known to run a little narrow at this size (about
    // one point), so the band is [0.93, 0.965]: 3.5 sd below allowing for that
    // bias, 3 sd above.
    let truth = Normal::new(0.0, 1.0).unwrap().cdf(1.0 / 2f64.sqrt());
    let reps = 2000;
    let covered = (0..reps)
        .filter(|&k| {
            let (s, y) = binormal(60, 140, 1.0, k);
            let r = delong(&s, &y).unwrap();
            r.lower <= truth && truth <= r.upper
        })
        .count();
    let coverage = covered as f64 / reps as f64;
    assert!((0.93..=0.965).contains(&coverage), "coverage {coverage}");
}

#[test]
fn paired_test_holds_its_size_under_no_difference() {
    // Two scores of equal true AUC sharing part of their noise: DeLong's
    // paired test rejects at 5% about 5% of the time; 1000 data sets give a
    // binomial sd of 0.0069, so the band is [0.025, 0.08].
    let reps = 1000;
    let rejected = (0..reps)
        .filter(|&k| {
            let mut r = stream(k, &[11]);
            let (mut a, mut b, mut y) = (Vec::new(), Vec::new(), Vec::new());
            for i in 0..200 {
                let pos = i < 70;
                let shared = normal(&mut r);
                let shift = if pos { 1.0 } else { 0.0 };
                a.push(0.7 * shared + 0.71 * normal(&mut r) + shift);
                b.push(0.7 * shared + 0.71 * normal(&mut r) + shift);
                y.push(pos);
            }
            delong_paired(&a, &b, &y).unwrap().p_value < 0.05
        })
        .count();
    let rate = rejected as f64 / reps as f64;
    assert!((0.025..=0.08).contains(&rate), "rejection rate {rate}");
}

#[test]
fn bootstrap_agrees_with_delong_and_is_seeded() {
    let (a, b, y) = sample(400, 9, 0.25);
    let d = delong(&a, &y).unwrap();
    let bs = bootstrap(&a, &y, 2000, 1).unwrap();
    assert_eq!(bs, bootstrap(&a, &y, 2000, 1).unwrap());
    assert_ne!(bs, bootstrap(&a, &y, 2000, 2).unwrap());
    assert_eq!(bs.auc, d.auc);
    // The bootstrap sd of 2000 replicates is within ~3% of its limit; the two
    // estimators differ by O(1/n) besides: 15% is ample and still fails when
    // a class is resampled at the wrong size.
    assert!((bs.se / d.se - 1.0).abs() < 0.15, "{} vs {}", bs.se, d.se);
    let pd = delong_paired(&a, &b, &y).unwrap();
    let pb = bootstrap_paired(&a, &b, &y, 2000, 1).unwrap();
    assert_eq!(pb.difference, pd.difference);
    assert!((pb.se / pd.se - 1.0).abs() < 0.15, "{} vs {}", pb.se, pd.se);
    assert!(pb.lower < pb.difference && pb.difference < pb.upper);
}

#[test]
fn logit_interval_stays_inside() {
    let (lo, hi) = interval(0.98, 0.02, 0.95);
    assert!(lo > 0.0 && hi < 1.0 && lo < 0.98 && hi > 0.98);
    // Inside [0, 1]: the Wald interval.
    let (lo, hi) = interval(0.7, 0.05, 0.95);
    assert!(
        (lo - (0.7 - 1.959964 * 0.05)).abs() < 1e-6 && (hi - (0.7 + 1.959964 * 0.05)).abs() < 1e-6
    );
}
