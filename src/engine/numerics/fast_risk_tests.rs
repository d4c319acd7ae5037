//! Tests of `fast_risk`: every path against a brute-force count and the
//! sort-and-merge reference (blocked and unblocked, f64 and f32).

use super::fast_risk::*;
use crate::engine::metrics::auc_brute_force;
use proptest::prelude::*;

fn brute_twice(pos: &[f64], neg: &[f64]) -> u64 {
    let mut t = 0;
    for &p in pos {
        for &n in neg {
            t += u64::from(p > n) * 2 + u64::from(p == n);
        }
    }
    t
}

fn check(pos: &[f64], neg: &[f64]) {
    let mut s = RiskScratch::new(pos.len(), neg.len());
    let want = brute_twice(pos, neg);
    assert_eq!(s.twice_concordant(pos, neg), want, "bucket path");
    assert_eq!(s.sort_and_merge(pos, neg), want, "sort path");
    // f32 scores rank as their own (exact) values.
    let p32: Vec<f32> = pos.iter().map(|&v| v as f32).collect();
    let n32: Vec<f32> = neg.iter().map(|&v| v as f32).collect();
    let widen = |v: &[f32]| v.iter().map(|&x| f64::from(x)).collect::<Vec<f64>>();
    let want32 = brute_twice(&widen(&p32), &widen(&n32));
    assert_eq!(s.twice_concordant(&p32, &n32), want32, "f32 bucket path");
    assert_eq!(s.sort_and_merge(&p32, &n32), want32, "f32 sort path");
    // The cache-blocked count, forced on small inputs: partitions of one
    // bucket, of four, and of more buckets than there are.
    for part in [1, 4, 1 << 20] {
        let mut b = RiskScratch::with_partition(pos.len(), neg.len(), Some(part));
        assert_eq!(b.twice_concordant(pos, neg), want, "blocked path, {part}");
        assert_eq!(
            b.twice_concordant(&p32, &n32),
            want32,
            "f32 blocked, {part}"
        );
        // Scratch is reused across evaluations: the same answer twice.
        assert_eq!(b.twice_concordant(pos, neg), want, "blocked again, {part}");
    }
    if !pos.is_empty() && !neg.is_empty() {
        let all: Vec<f64> = pos.iter().chain(neg).copied().collect();
        let y: Vec<bool> = (0..all.len()).map(|i| i < pos.len()).collect();
        let r = s.risk(pos, neg);
        assert!((r - (1.0 - auc_brute_force(&all, &y))).abs() < 1e-12);
    }
}

/// At a size where `new` blocks the count: against the sort-and-merge
/// reference, with heavy ties (codes) and with continuous scores.
#[test]
fn blocked_count_equals_sort_and_merge_at_scale() {
    use rand::SeedableRng;
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let (np, nn) = (70_000, BLOCKED_MIN_ROWS);
    for ties in [true, false] {
        let draw = |rng: &mut rand::rngs::StdRng, shift: f64| -> f64 {
            let v: f64 = rng.random::<f64>() + shift;
            if ties { (v * 20.0).floor() } else { v }
        };
        let pos: Vec<f64> = (0..np).map(|_| draw(&mut rng, 0.3)).collect();
        let mut neg: Vec<f64> = (0..nn).map(|_| draw(&mut rng, 0.0)).collect();
        neg[5] = 1e6; // an outlier: the buckets spread over the bulk
        let mut s = RiskScratch::new(np, nn);
        assert!(s.partition < s.buckets, "blocked at this size");
        let want = s.sort_and_merge(&pos, &neg);
        assert_eq!(s.twice_concordant(&pos, &neg), want, "ties: {ties}");
        assert_eq!(s.twice_concordant(&pos, &neg), want, "reused, ties: {ties}");
    }
}

#[test]
fn keys_are_monotone() {
    let v = [
        f64::NEG_INFINITY,
        -1e300,
        -2.5,
        -1e-310,
        -0.0,
        0.0,
        1e-310,
        3.0,
        f64::INFINITY,
    ];
    for w in v.windows(2) {
        assert!(key(w[0]) <= key(w[1]), "{} {}", w[0], w[1]);
    }
    assert_eq!(key(-0.0), key(0.0));
}

#[test]
fn prefix_sums_agree() {
    for n in [0, 1, 7, 8, 9, 15, 16, 17, 100, 1066] {
        let v: Vec<u32> = (0..n).map(|i| (i * 7 % 5) as u32).collect();
        let mut want = v.clone();
        inclusive_prefix_scalar(&mut want);
        let mut got = v.clone();
        inclusive_prefix(&mut got);
        assert_eq!(got, want, "n = {n}");
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            let mut got = v.clone();
            // SAFETY: the CPU has AVX2.
            unsafe { inclusive_prefix_avx2(&mut got) };
            assert_eq!(got, want, "avx2, n = {n}");
        }
    }
}

/// A rare positive class (the classes swap roles) on ordinal-code-like scores
/// full of ties, and the same scores with the classes' sizes reversed.
#[test]
fn rare_class_with_ties_equals_brute_force() {
    use rand::SeedableRng;
    let mut rng = rand::rngs::StdRng::seed_from_u64(11);
    for (np, nn) in [(7, 900), (60, 3000), (900, 7), (1, 50), (50, 1)] {
        for levels in [3.0, 40.0, 0.0] {
            let mut draw = |shift: f64| -> f64 {
                let u: f64 = rng.random::<f64>() + shift;
                if levels > 0.0 {
                    (u * levels).floor()
                } else {
                    u
                }
            };
            let pos: Vec<f64> = (0..np).map(|_| draw(0.3)).collect();
            let neg: Vec<f64> = (0..nn).map(|_| draw(0.0)).collect();
            check(&pos, &neg);
        }
    }
}

#[test]
fn edge_cases() {
    check(&[1.0], &[1.0]);
    check(&[1.0, 1.0, 1.0], &[1.0, 1.0]);
    check(&[0.0], &[-0.0]);
    check(&[2.0, -1.0], &[0.5]);
    check(&[], &[1.0]);
    // One huge outlier crowds every other score into one bucket.
    let mut pos: Vec<f64> = (0..300).map(|i| (i as f64 * 0.37).sin()).collect();
    pos.push(1e12);
    let neg: Vec<f64> = (0..200).map(|i| (i as f64 * 0.11).cos()).collect();
    check(&pos, &neg);
    check(&[f64::INFINITY, 1.0], &[f64::NEG_INFINITY, 2.0]);
    check(&[1e308, -1e308], &[0.0, 1e308]);
}

proptest! {
    #[test]
    fn equals_brute_force(
        pos in prop::collection::vec(prop_oneof![-5i32..5, -1000i32..1000], 1..80),
        neg in prop::collection::vec(prop_oneof![-5i32..5, -1000i32..1000], 1..80),
        scale in prop_oneof![Just(1.0), Just(1e-3), Just(0.37)],
    ) {
        // Small integer grids make ties frequent; scaled, they stay exact.
        let pos: Vec<f64> = pos.iter().map(|&v| v as f64 * scale).collect();
        let neg: Vec<f64> = neg.iter().map(|&v| v as f64 * scale).collect();
        check(&pos, &neg);
    }

    #[test]
    fn scores_with_outliers(
        pos in prop::collection::vec(-3.0f64..3.0, 1..300),
        neg in prop::collection::vec(-3.0f64..3.0, 1..300),
        out_p in prop::collection::vec(prop_oneof![-1e6f64..-1e3, 1e3f64..1e6], 0..4),
        out_n in prop::collection::vec(prop_oneof![-1e6f64..-1e3, 1e3f64..1e6], 0..4),
        ties in 0usize..40,
    ) {
        // The bulk is bucketed from a sample; outliers and the bulk's edges
        // share the end buckets. Rounded copies add ties inside buckets.
        let mut pos: Vec<f64> = pos.into_iter().chain(out_p).collect();
        let mut neg: Vec<f64> = neg.into_iter().chain(out_n).collect();
        for i in 0..ties.min(pos.len()).min(neg.len()) {
            pos[i] = (pos[i] * 4.0).round() / 4.0;
            neg[i] = (neg[i] * 4.0).round() / 4.0;
        }
        check(&pos, &neg);
    }

    #[test]
    fn continuous_scores(
        pos in prop::collection::vec(-1e3f64..1e3, 1..200),
        neg in prop::collection::vec(-1e3f64..1e3, 1..200),
    ) {
        check(&pos, &neg);
    }
}
