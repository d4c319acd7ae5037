//! The O(n log n) AUC and ROC against the O(n+·n−) definition (ALGORITHMS.md §1).

use pacauc::engine::metrics::{auc, auc_brute_force, auc_risk, roc_area, roc_curve};
use proptest::prelude::*;

fn scores_and_labels() -> impl Strategy<Value = (Vec<f64>, Vec<bool>)> {
    (2usize..60).prop_flat_map(|n| {
        (
            // few distinct values → many ties; or continuous values
            prop_oneof![
                proptest::collection::vec((0i32..5).prop_map(f64::from), n),
                proptest::collection::vec(-1e3f64..1e3, n)
            ],
            proptest::collection::vec(any::<bool>(), n),
        )
    })
}

proptest! {
    #[test]
    fn auc_equals_brute_force((s, y) in scores_and_labels()) {
        let n_pos = y.iter().filter(|&&b| b).count();
        prop_assume!(n_pos > 0 && n_pos < y.len());
        let fast = auc(&s, &y);
        let slow = auc_brute_force(&s, &y);
        prop_assert!((fast - slow).abs() < 1e-12, "{} vs {}", fast, slow);
        prop_assert!((roc_area(&roc_curve(&s, &y)) - slow).abs() < 1e-12);
    }

    #[test]
    fn risk_is_scale_invariant_and_flips((s, y) in scores_and_labels(), c in 0.01f64..100.0) {
        let n_pos = y.iter().filter(|&&b| b).count();
        prop_assume!(n_pos > 0 && n_pos < y.len());
        let scaled: Vec<f64> = s.iter().map(|v| v * c).collect();
        let neg: Vec<f64> = s.iter().map(|v| -v).collect();
        // Ties stay ties under negation and ½ + ½ = 1, so the identity holds with ties too.
        prop_assert!((auc_risk(&scaled, &y) - auc_risk(&s, &y)).abs() < 1e-12);
        prop_assert!((auc_risk(&neg, &y) - (1.0 - auc_risk(&s, &y))).abs() < 1e-12);
    }
}
