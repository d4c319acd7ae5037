//! The measurement switches of §5's rescue rules (`SsRules`, issue 28).

use super::moments::ThetaMoments;
use super::prior_sites::{MixturePrior, PriorSites, tilted};
use super::site_steps::SiteSteps;
use super::sweep::{SsRules, SsSettings};
use crate::engine::ep::site::Natural;

#[test]
fn the_rules_switch_off_only_when_named() {
    let all = SsRules::default();
    assert!(all.fix && all.site_steps);
    assert_eq!(SsRules::of(None), all);
    let off = SsRules::of(Some("steps"));
    assert!(off.fix && !off.site_steps);
    let off = SsRules::of(Some("fix, steps"));
    assert!(!off.fix && !off.site_steps);
}

#[test]
fn without_per_site_steps_a_recurring_fix_caps_no_site() {
    for on in [true, false] {
        let s = SsSettings {
            rules: SsRules {
                site_steps: on,
                ..SsRules::default()
            },
            ..SsSettings::default()
        };
        let mut st = SiteSteps::new(2, &s);
        for _ in 0..s.fix_sweeps {
            st.fixed.copy_from_slice(&[true, false]);
            st.after_sweep(0.7);
        }
        let capped = if on { s.fix_eta } else { 0.7 };
        assert_eq!(st.step(0, 0.7), capped);
        assert_eq!(st.step(1, 0.7), 0.7);
    }
}

#[test]
fn without_the_fix_a_site_keeps_its_negative_precision() {
    let prior = MixturePrior {
        spike: 1e-4,
        slab: 1.0,
        incl: 0.1,
    };
    let mut seen = false;
    for &(m, s) in &[(0.3, 0.05), (0.02, 0.01), (0.15, 0.02), (0.2, 0.004)] {
        // Sites at zero: the cavity is q's marginal itself.
        let q = ThetaMoments {
            mean: vec![m],
            var: vec![s],
            log_det_q: 0.0,
            r_v_r: 0.0,
        };
        let cav = Natural {
            tau: 1.0 / s,
            nu: m / s,
        };
        let t = tilted(cav, &prior);
        let raw = 1.0 / t.var - cav.tau;
        let mut with = PriorSites {
            u: vec![0.0],
            v: vec![0.0],
            ..PriorSites::init(1, &prior)
        };
        let mut without = with.clone();
        let up = with.update_each(&q, &prior, |_| 1.0, (&mut [], &mut []), true);
        let fixes = up.unwrap().fixes;
        let up = without.update_each(&q, &prior, |_| 1.0, (&mut [], &mut []), false);
        assert_eq!(up.unwrap().fixes, 0);
        assert!((without.u[0] - raw).abs() <= 1e-12 * raw.abs().max(1.0));
        if raw <= 0.0 {
            seen = true;
            assert_eq!((fixes, with.u[0]), (1, 0.01));
        } else {
            assert_eq!((fixes, with.u[0]), (0, without.u[0]));
        }
    }
    assert!(seen, "no case needed the fix");
}
