//! Figures against slow obvious versions: ROC points by counting, areas and
//! integrals by summation, and the shape of every figure kind.

use super::*;
use crate::engine::event::{EpSweep, Histogram, SmcStage};
use crate::engine::metrics::{auc_brute_force, roc_curve};
use crate::engine::numerics::rng;
use crate::engine::record::{Coefficient, Curve, Inclusion};

/// Scores with many ties (rounded to a coarse grid) and labels correlated with them.
pub(crate) fn scored(n: usize, seed: u64) -> (Vec<f64>, Vec<bool>) {
    let mut r = rng::stream(seed, &[]);
    (0..n)
        .map(|_| {
            let z = rng::normal(&mut r);
            let y = z + rng::normal(&mut r) > 0.0;
            ((z * 4.0).round() / 4.0, y)
        })
        .unzip()
}

#[test]
fn roc_points_are_the_counted_rates_and_the_area_is_the_auc() {
    for seed in 0..5 {
        let (s, y) = scored(120, seed);
        let curve = Curve::of(&roc_curve(&s, &y));
        let fig = roc(
            &[RocSource {
                label: "a".into(),
                curve: &curve,
                auc: 0.0,
                interval: None,
            }],
            "rows",
        );
        let Data::Line(pts) = &fig.panels[0].series[1].data else {
            panic!("a line")
        };
        // Brute force: at each distinct threshold t (highest first), the shares
        // of negatives and positives scored ≥ t.
        let mut thresholds = s.clone();
        thresholds.sort_by(|a, b| b.total_cmp(a));
        thresholds.dedup();
        let (np, nn) = (
            y.iter().filter(|&&b| b).count() as f64,
            y.iter().filter(|&&b| !b).count() as f64,
        );
        let mut want = vec![[0.0, 0.0]];
        for t in thresholds {
            let count = |pos: bool| {
                s.iter()
                    .zip(&y)
                    .filter(|(v, l)| **v >= t && **l == pos)
                    .count() as f64
            };
            want.push([count(false) / nn, count(true) / np]);
        }
        assert_eq!(pts.len(), want.len());
        for (p, w) in pts.iter().zip(&want) {
            assert!((p[0] - w[0]).abs() < 1e-12 && (p[1] - w[1]).abs() < 1e-12);
        }
        // Ties are diagonal segments: the trapezoid area is the AUC with ties ½.
        assert!((auc_under(&curve) - auc_brute_force(&s, &y)).abs() < 1e-12);
    }
}

#[test]
fn weighted_histogram_counts_sum_to_the_weights_and_densities_integrate_to_one() {
    let mut r = rng::stream(7, &[]);
    let n = 5000;
    let values: Vec<f64> = (0..n).map(|_| 1.5 + 0.7 * rng::normal(&mut r)).collect();
    let weights: Vec<f64> = (0..n).map(|i| 0.5 + (i % 3) as f64).collect();
    for w in [None, Some(weights.as_slice())] {
        let h = Histogram::of(&values, w, 40);
        let total: f64 = h.counts.iter().sum();
        let want: f64 = w.map_or(n as f64, |w| w.iter().sum());
        assert!((total - want).abs() < 1e-9 * want, "{total} vs {want}");
        let area: f64 = density_steps(&h).iter().map(|b| (b.x1 - b.x0) * b.y).sum();
        assert!((area - 1.0).abs() < 1e-12, "{area}");
    }
    // A degenerate histogram draws nothing rather than dividing by zero.
    assert!(density_steps(&Histogram::of(&[2.0, 2.0], None, 5)).is_empty());
}

#[test]
fn gaussian_curve_integrates_to_one_on_its_grid() {
    for (m, s) in [(0.0, 1.0), (3.0, 0.01), (-2.0, 50.0)] {
        let c = normal_curve(m, s);
        let area: f64 = c
            .windows(2)
            .map(|w| (w[1][0] - w[0][0]) * (w[0][1] + w[1][1]) / 2.0)
            .sum();
        // ±4 sd hold 1 − 6.3e-5; the trapezoid rule on 161 points is within 1e-4.
        assert!((area - 1.0).abs() < 3e-4, "{area}");
        let peak = c.iter().map(|p| p[1]).fold(0.0, f64::max);
        assert!((peak - 1.0 / (s * (2.0 * std::f64::consts::PI).sqrt())).abs() < 1e-9 / s);
    }
    assert!(normal_curve(0.0, 0.0).is_empty());
    assert!(normal_curve(f64::NAN, 1.0).is_empty());
}

pub(crate) fn coefs(d: usize) -> Vec<Coefficient> {
    (0..d)
        .map(|k| Coefficient {
            name: format!("x{k:02}"),
            mean: k as f64 * 0.1,
            sd: 0.2,
            quantiles: None,
        })
        .collect()
}

#[test]
fn marginals_put_the_histogram_under_each_gaussian_in_order_of_mean_over_sd() {
    let c = coefs(15);
    let hist: Vec<Histogram> = c
        .iter()
        .map(|k| Histogram::of(&[k.mean - 0.2, k.mean, k.mean + 0.3], None, 10))
        .collect();
    let sample = HistogramSource {
        label: "smc".into(),
        coefficients: &c,
        histograms: &hist,
    };
    let g = [GaussianSource {
        label: "ep".into(),
        coefficients: &c,
    }];
    let fig = marginals(Some(&sample), &g, "data").unwrap();
    assert_eq!(fig.panels.len(), marginals::MAX_PANELS);
    assert_eq!(fig.panels[0].title.as_deref(), Some("x14"));
    assert!(fig.subtitle.unwrap().contains("12 of 15"));
    for p in &fig.panels {
        assert!(matches!(p.series[0].data, Data::Bars(_)));
        assert!(matches!(p.series[1].data, Data::Line(_)));
    }
    let legend = Figure {
        subtitle: None,
        ..marginals(None, &g, "data").unwrap()
    }
    .legend();
    assert_eq!(legend.len(), 1, "one entry for the Gaussian of every panel");
    assert!(marginals(None, &[], "data").is_none());
}

fn stage(t: usize, gamma: f64) -> SmcStage {
    SmcStage {
        stage: t,
        gamma,
        ess_frac: 0.5,
        acceptance: 0.3,
        scale: 0.5,
        moves: 3,
        log_z: -(t as f64),
        mean: vec![],
        sd: vec![],
        mean_risk: 0.3,
        risk_sd: None,
        evaluations: 0,
        elapsed: 0.0,
        histograms: vec![],
        inclusion: None,
        max_correlation: None,
    }
}

#[test]
fn smc_trace_leaves_the_prior_stage_out_of_log_and_move_panels() {
    let stages: Vec<SmcStage> = (0..5).map(|t| stage(t, t as f64 * 10.0)).collect();
    let targets = SmcTargets {
        tau: Some(0.5),
        ..SmcTargets::default()
    };
    let f = smc_trace(&stages, &targets, "smc", "smc-trace").unwrap();
    assert_eq!(f.panels.len(), 4);
    assert_eq!(
        f.panels[2].series[0].data.len(),
        4,
        "γ_0 = 0 is off a log axis"
    );
    assert_eq!(f.panels[0].series[0].data.len(), 4, "ESS/N from stage 1");
    assert_eq!(f.panels[3].series[0].data.len(), 5, "log Z_0 = 0 is shown");
    assert_eq!(f.panels[0].marks.len(), 1);
    assert!(smc_trace(&[], &targets, "smc", "x").is_none());
}

#[test]
fn ep_convergence_has_an_evidence_panel_only_when_recorded() {
    let sweep = |i: usize, z: Option<f64>| EpSweep {
        sweep: i,
        delta: 10f64.powi(-(i as i32)),
        log_z: z,
        eta: 0.7,
        negative_share: 0.1,
        skipped: 0,
        mean: vec![],
        sd: vec![],
        elapsed: 0.0,
        inclusion: None,
    };
    let with: Vec<EpSweep> = (1..6).map(|i| sweep(i, Some(-1.0))).collect();
    let without: Vec<EpSweep> = (1..6).map(|i| sweep(i, None)).collect();
    assert_eq!(
        ep_convergence(&with, Some(1e-4), "ep", "e")
            .unwrap()
            .panels
            .len(),
        3
    );
    let f = ep_convergence(&without, Some(1e-4), "ep", "e").unwrap();
    assert_eq!(f.panels.len(), 2);
    assert!(f.panels[0].y.log);
    // The tolerance line is tol·η per sweep.
    let Data::Line(tol) = &f.panels[0].series[1].data else {
        panic!()
    };
    assert!(tol.iter().all(|p| (p[1] - 0.7e-4).abs() < 1e-15));
}

#[test]
fn cv_curve_marks_the_chosen_point_and_spans_the_folds() {
    let cv = CvCurve {
        parameter: "gamma_over_n".into(),
        grid: vec![0.5, 1.0, 2.0],
        mean_auc: vec![Some(0.8), Some(0.85), None],
        fold_auc: vec![
            vec![Some(0.7), Some(0.8), None],
            vec![Some(0.9), Some(0.9), None],
        ],
        chosen: Some(1.0),
        folds: Some(2),
    };
    let f = cv_curve(&cv, "ep", "cv").unwrap();
    let p = &f.panels[0];
    assert!(p.x.log);
    assert_eq!(p.x.label, "γ/n");
    let Data::Band { lo, hi, .. } = &p.series[0].data else {
        panic!()
    };
    assert_eq!(
        (lo.as_slice(), hi.as_slice()),
        (&[0.7, 0.8][..], &[0.9, 0.9][..])
    );
    assert_eq!(
        p.series[1].data.len(),
        2,
        "a point without a mean is left out"
    );
    assert_eq!(p.series[2].data, Data::Points(vec![[1.0, 0.85]]));
    assert_eq!(p.marks.len(), 1);
}

#[test]
fn inclusion_bars_are_sorted_and_capped() {
    let probs: Vec<Inclusion> = (0..50)
        .map(|k| Inclusion {
            name: format!("f{k}"),
            prob: (k as f64 / 49.0),
        })
        .collect();
    let f = inclusion(&probs, "ep", "inclusion").unwrap();
    let p = &f.panels[0];
    assert_eq!(p.x.categories.len(), selection::MAX_BARS);
    assert_eq!(p.x.categories[0], "f49");
    let Data::Bars(b) = &p.series[0].data else {
        panic!()
    };
    assert!(b.windows(2).all(|w| w[0].y >= w[1].y));
    assert!(f.subtitle.unwrap().starts_with("25 of 50"));
}

#[test]
fn smc_targets_read_from_a_record_and_the_moves_panel_shares_their_cap() {
    let p = serde_json::json!({"ess": 0.5, "moves": {"adaptive": {"min": 2, "max": 200}},
        "waste_free": null, "decorrelation": 0.1});
    let t = SmcTargets::of_parameters(&p, Some(400.0));
    assert_eq!(t.tau, Some(0.5));
    assert_eq!(t.moves_cap, Some((200, true)));
    assert_eq!(t.decorrelation, Some(0.1));
    let fixed = serde_json::json!({"moves": {"fixed": 5}});
    assert_eq!(
        SmcTargets::of_parameters(&fixed, None).moves_cap,
        Some((5, false))
    );
    let wf = serde_json::json!({"waste_free": 10, "moves": {"fixed": 5}});
    assert_eq!(
        SmcTargets::of_parameters(&wf, None).moves_cap,
        Some((9, false))
    );
    // A ring buffer's iterator and a slice make the same figure.
    let mut stages: Vec<SmcStage> = (0..5).map(|t| stage(t, t as f64 * 100.0)).collect();
    stages[3].max_correlation = Some(0.05);
    let ring: std::collections::VecDeque<SmcStage> = stages.iter().cloned().collect();
    let a = smc_trace(&stages, &t, "smc", "s").unwrap();
    assert_eq!(a, smc_trace(ring.iter(), &t, "smc", "s").unwrap());
    let shares = a.panel(SMC_SHARES).unwrap();
    let Data::Line(g) = &shares.series[1].data else {
        panic!()
    };
    assert_eq!(g.last().unwrap()[1], 1.0, "γ_T/γ_T");
    let moves = a.panel(SMC_MOVES).unwrap();
    let Data::Line(m) = &moves.series[0].data else {
        panic!()
    };
    assert!(m.iter().all(|p| (p[1] - 3.0 / 200.0).abs() < 1e-15));
    assert_eq!(moves.series[1].data.len(), 1, "one stage reported |corr|");
    assert_eq!(moves.marks.len(), 1);
}

#[test]
fn ep_evidence_keeps_far_early_sweeps_off_its_scale() {
    let sweep = |i: usize| EpSweep {
        sweep: i,
        delta: 0.1,
        log_z: Some(if i == 1 {
            2600.0
        } else {
            -70.0 + 0.01 * i as f64
        }),
        eta: 0.7,
        negative_share: 0.1,
        skipped: 0,
        mean: vec![],
        sd: vec![],
        elapsed: 0.0,
        inclusion: None,
    };
    let sweeps: Vec<EpSweep> = (1..=40).map(sweep).collect();
    let f = ep_convergence(&sweeps, Some(1e-4), "ep", "e").unwrap();
    let r = f.panel(EVIDENCE).unwrap().y.range.unwrap();
    assert!(r[0] < -69.6 && r[1] > -69.6 && r[1] < 0.0, "{r:?}");
    assert!(
        f.subtitle
            .unwrap()
            .contains("1 early log Z_EP value(s) off")
    );
    // Settled from the start: the data's own range.
    let calm: Vec<EpSweep> = (2..=40).map(sweep).collect();
    let f = ep_convergence(&calm, Some(1e-4), "ep", "e").unwrap();
    assert!(f.panel(EVIDENCE).unwrap().y.range.is_none());
}

/// No two of the first `DISTINCT_STYLES` series share colour and dash (the
/// colour taken modulo the palette's eight slots, as the plots draw it); the
/// first pass through the palette keeps the old styles (solid, dashed, …).
#[test]
fn series_styles_stay_distinct_up_to_the_stated_count() {
    let palette = DISTINCT_STYLES / DASHES.len();
    let styles: Vec<(usize, Dash)> = (0..DISTINCT_STYLES)
        .map(|i| {
            let s = Style::nth(i);
            (s.color % palette, s.dash)
        })
        .collect();
    for (i, a) in styles.iter().enumerate() {
        assert!(!styles[..i].contains(a), "series {i} repeats {a:?}");
    }
    for i in 0..palette {
        assert_eq!(Style::nth(i).dash, DASHES[i % DASHES.len()]);
    }
    // Series 8 has series 0's colour but not its dash.
    assert_eq!(Style::nth(8).color % palette, 0);
    assert_ne!(Style::nth(8).dash, Style::nth(0).dash);
}
