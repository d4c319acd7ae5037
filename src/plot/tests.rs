//! The SVG's structure for every figure kind (panels, axes with tick labels,
//! one group per series, one legend entry per distinct series), that resvg
//! reads it, and that the PNG decodes to the stated size.

use super::scale::{linear_ticks, linear_ticks_from, log_ticks};
use super::text::{number, width};
use super::*;
use crate::engine::event::{EpSweep, Histogram, SmcStage};
use crate::engine::metrics::roc_curve;
use crate::engine::record::{Curve, Inclusion};
use crate::figures::*;

fn count(svg: &str, needle: &str) -> usize {
    svg.matches(needle).count()
}

/// One figure of every kind, from small synthetic inputs.
fn every_kind() -> Vec<Figure> {
    let (s, y) = crate::figures::tests::scored(80, 1);
    let curve = Curve::of(&roc_curve(&s, &y));
    let coefs = crate::figures::tests::coefs(5);
    let hist: Vec<Histogram> = coefs
        .iter()
        .map(|c| Histogram::of(&[c.mean - 0.3, c.mean, c.mean, c.mean + 0.2], None, 8))
        .collect();
    let stages: Vec<SmcStage> = (0..4)
        .map(|t| SmcStage {
            stage: t,
            gamma: 10.0 * t as f64,
            ess_frac: 0.5,
            acceptance: 0.4,
            scale: 0.5,
            moves: 2 + t,
            log_z: -(t as f64),
            mean: vec![],
            sd: vec![],
            mean_risk: 0.2,
            risk_sd: None,
            evaluations: 0,
            elapsed: 0.0,
            histograms: vec![],
            inclusion: None,
            max_correlation: None,
        })
        .collect();
    let sweeps: Vec<EpSweep> = (1..8)
        .map(|i| EpSweep {
            sweep: i,
            delta: 10f64.powf(1.0 - i as f64),
            log_z: Some(-10.0 - 1.0 / i as f64),
            eta: 0.7,
            negative_share: 0.12,
            skipped: 0,
            mean: vec![],
            sd: vec![],
            elapsed: 0.0,
            inclusion: None,
        })
        .collect();
    let cv = CvCurve {
        parameter: "lambda".into(),
        grid: vec![0.01, 0.1, 1.0, 10.0],
        mean_auc: vec![Some(0.8), Some(0.82), Some(0.85), Some(0.84)],
        fold_auc: vec![vec![Some(0.78), Some(0.8), Some(0.83), Some(0.8)]; 3],
        chosen: Some(1.0),
        folds: Some(3),
    };
    let incl: Vec<Inclusion> = (0..6)
        .map(|k| Inclusion {
            name: format!("a_rather_long_feature_name_{k}"),
            prob: k as f64 / 5.0,
        })
        .collect();
    let path: PathRecord = serde_json::from_value(serde_json::json!({
        "gamma": 100.0, "slab_var": 1.0, "inclusion_prior": 0.1,
        "points": (0..4).map(|i| {
            let v = 10f64.powi(-6 + 2 * i);
            serde_json::json!({
                "spike_over_slab": v, "converged": true, "log_evidence": -50.0 + i as f64,
                "coefficients": (0..10).map(|k| serde_json::json!({
                    "name": format!("f{k}"), "mean": k as f64 * v.sqrt(), "inclusion": v.sqrt(),
                })).collect::<Vec<_>>(),
            })
        }).collect::<Vec<_>>(),
    }))
    .unwrap();
    vec![
        roc(
            &[
                RocSource {
                    label: "smc".into(),
                    curve: &curve,
                    auc: 0.8,
                    interval: None,
                },
                RocSource {
                    label: "ep".into(),
                    curve: &curve,
                    auc: 0.8,
                    interval: None,
                },
            ],
            "test set",
        ),
        marginals(
            Some(&HistogramSource {
                label: "smc".into(),
                coefficients: &coefs,
                histograms: &hist,
            }),
            &[GaussianSource {
                label: "ep".into(),
                coefficients: &coefs,
            }],
            "data",
        )
        .unwrap(),
        smc_trace(
            &stages,
            &SmcTargets {
                tau: Some(0.5),
                ..SmcTargets::default()
            },
            "smc",
            "smc-trace",
        )
        .unwrap(),
        ep_convergence(&sweeps, Some(1e-4), "ep", "ep-convergence").unwrap(),
        cv_curve(&cv, "logit", "cv").unwrap(),
        inclusion(&incl, "ep spike-slab", "inclusion").unwrap(),
        spike_slab_path(&path, "path").unwrap(),
        vb_trace(&vb_iters(true), Some(1.5), "vb", "vb-trace").unwrap(),
        gcs_trace(&gcs_batches(), 400.0, 1.01, "gcs", "gcs-trace").unwrap(),
    ]
}

fn vb_iters(estimate: bool) -> Vec<crate::engine::event::VbIter> {
    (1..=6)
        .map(|i| crate::engine::event::VbIter {
            iteration: i * if estimate { 100 } else { 1 },
            objective: 2.0 + 1.0 / i as f64,
            grad_norm: 10f64.powi(-(i as i32)),
            step: if i == 3 { f64::NAN } else { 0.5 },
            estimate,
            mean: vec![],
            sd: vec![],
            elapsed: 0.0,
        })
        .collect()
}

fn gcs_batches() -> Vec<crate::engine::event::GcsBatch> {
    (1..=5)
        .map(|b| crate::engine::event::GcsBatch {
            batch: b,
            steps: 100 * b,
            warmup: 200,
            draws: 400 * b.saturating_sub(2),
            rhat: (b > 2).then(|| 1.0 + 0.1 / b as f64),
            ess_bulk: (b > 2).then_some(150.0 * b as f64),
            ess_tail: (b > 2).then_some(120.0 * b as f64),
            risk: vec![0.2; 4],
            proposals: vec![1.5; 4],
            jump: vec![0.3; 4],
            arcs: 10,
            mean: vec![],
            sd: vec![],
            elapsed: 0.1 * b as f64,
        })
        .collect()
}

/// The VB figure: objective, gradient and step panels; L-BFGS steps as a line,
/// the stochastic optimiser's held-out estimates as points with the exact F
/// as a guide named in the legend's own row (not over the data).
#[test]
fn vb_trace_svg_has_three_panels_and_its_guide_in_the_legend() {
    let (_, svg) = to_svg(&vb_trace(&vb_iters(false), None, "vb", "vb-trace").unwrap());
    assert_eq!(count(&svg, r#"<g class="panel">"#), 3);
    assert_eq!(count(&svg, r#"<g class="series""#), 3);
    assert_eq!(count(&svg, r#"<g class="legend-entry">"#), 3);
    for name in ["F = γ·E[R] + KL", "‖∇F‖∞", "step"] {
        assert!(
            svg.contains(&format!(">{}</text>", text::escape(name))),
            "{name}"
        );
    }
    assert_eq!(count(&svg, "<circle"), 0);
    assert_eq!(count(&svg, "legend-entry guide"), 0);
    let fig = vb_trace(&vb_iters(true), Some(1.5), "vb", "vb-trace").unwrap();
    let (_, svg) = to_svg(&fig);
    // Six held-out points (and the legend's point swatch).
    assert_eq!(count(&svg, "<circle"), 6 + 1);
    assert_eq!(count(&svg, r#"class="mark""#), 1);
    assert_eq!(count(&svg, "legend-entry guide"), 1);
    assert!(svg.contains(">exact F = 1.5000 at the end</text>"));
    assert_eq!(count(&svg, "mark-label"), 0, "no guide label over the data");
    // The NaN step is left out, not drawn.
    let Data::Line(step) = &fig.panels[2].series[0].data else {
        panic!()
    };
    assert_eq!(step.len(), 5);
    assert!(!svg.contains("NaN"));
}

#[test]
fn every_figure_kind_has_axes_ticks_series_and_legend() {
    for fig in every_kind() {
        let (size, svg) = to_svg(&fig);
        let id = &fig.id;
        assert!(
            svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"),
            "{id}"
        );
        assert_eq!(
            count(&svg, r#"<g class="panel">"#),
            fig.panels.len(),
            "{id}"
        );
        assert_eq!(
            count(&svg, r#"<g class="axis x">"#),
            fig.panels.len(),
            "{id}"
        );
        assert_eq!(
            count(&svg, r#"<g class="axis y">"#),
            fig.panels.len(),
            "{id}"
        );
        assert_eq!(count(&svg, r#"class="frame""#), fig.panels.len(), "{id}");
        // Every axis has at least two tick labels and its label.
        for axis in svg.split(r#"<g class="axis "#).skip(1) {
            let axis = &axis[..axis.find("</g>").unwrap()];
            assert!(count(axis, r#"class="tick""#) >= 2, "{id}: {axis}");
            assert_eq!(count(axis, r#"class="axis-label""#), 1, "{id}");
        }
        let series: usize = fig.panels.iter().map(|p| p.series.len()).sum();
        assert_eq!(count(&svg, r#"<g class="series""#), series, "{id}");
        assert_eq!(
            count(&svg, r#"<g class="legend-entry">"#),
            fig.legend().len(),
            "{id}"
        );
        for (name, ..) in fig.legend() {
            assert!(
                svg.contains(&format!(">{}</text>", text::escape(&name))),
                "{id}: {name}"
            );
        }
        for p in &fig.panels {
            assert!(svg.contains(&text::escape(&p.x.label)), "{id}");
        }
        assert!(svg.contains(&text::escape(&fig.title)), "{id}");
        let marks: usize = fig.panels.iter().map(|p| p.marks.len()).sum();
        assert_eq!(count(&svg, r#"class="mark""#), marks, "{id}");
        assert!(!svg.contains("NaN") && !svg.contains("inf"), "{id}");
        // resvg reads it (the PNG path), at the stated size.
        let tree = resvg::usvg::Tree::from_str(&svg, &resvg::usvg::Options::default())
            .unwrap_or_else(|e| panic!("{id}: {e}"));
        assert_eq!(tree.size().width().round() as u32, size.width, "{id}");
    }
}

#[test]
fn png_decodes_to_the_stated_size() {
    let figs = every_kind();
    for fig in [&figs[0], &figs[2]] {
        let (size, _) = to_svg(fig);
        let png = to_png(fig).unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        let img = resvg::tiny_skia::Pixmap::decode_png(&png).unwrap();
        assert_eq!(img.width(), (size.width as f32 * PNG_SCALE).round() as u32);
        assert_eq!(
            img.height(),
            (size.height as f32 * PNG_SCALE).round() as u32
        );
        // Text and lines were drawn: many pixels are not white.
        let inked = img.pixels().iter().filter(|p| p.red() < 128).count();
        assert!(inked > 1000, "{inked}");
    }
}

#[test]
fn files_are_written_atomically_in_both_formats() {
    let dir = std::env::temp_dir().join(format!("pacauc-plot-unit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let fig = &every_kind()[4];
    let paths = write(fig, &dir, &[Format::Svg, Format::Png]).unwrap();
    assert_eq!(paths.len(), 2);
    assert!(paths[0].ends_with("cv.svg") && paths[1].ends_with("cv.png"));
    let left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tmp-"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn ticks_are_round_numbers_covering_the_range() {
    let t: Vec<String> = linear_ticks(0.0, 1.0).into_iter().map(|t| t.1).collect();
    assert_eq!(t, ["0", "0.2", "0.4", "0.6", "0.8", "1.0"]);
    let t: Vec<String> = linear_ticks(-63.0, 1.0).into_iter().map(|t| t.1).collect();
    assert_eq!(t, ["−60", "−40", "−20", "0"]);
    let t: Vec<String> = log_ticks(-6.0, -1.0).into_iter().map(|t| t.1).collect();
    assert_eq!(t, ["1e−6", "1e−5", "0.0001", "0.001", "0.01", "0.1"]);
    let t: Vec<String> = log_ticks(0.3, 0.9).into_iter().map(|t| t.1).collect();
    assert_eq!(t, ["2", "5"]);
    assert_eq!(number(2.5e-7, 3), "2.5e−7");
}

#[test]
fn text_is_measured_with_the_bundled_font() {
    // DejaVu Sans: 'i' is narrow, 'W' wide; width scales with the size.
    assert!(width("W", 12.0) > 2.0 * width("i", 12.0));
    assert!((width("abc", 24.0) - 2.0 * width("abc", 12.0)).abs() < 1e-9);
    assert!(text::fit("a long legend entry", 12.0, 40.0).ends_with('…'));
}

/// An axis of whole numbers (stages, sweeps) never gets a tick between them.
#[test]
fn integer_axes_get_integer_ticks() {
    let t: Vec<String> = linear_ticks(-0.4, 10.4).into_iter().map(|t| t.1).collect();
    assert!(t.contains(&"2.5".to_string()), "{t:?}");
    let t: Vec<String> = linear_ticks_from(-0.4, 10.4, 1.0)
        .into_iter()
        .map(|t| t.1)
        .collect();
    assert!(t.iter().all(|l| !l.contains('.')), "{t:?}");
    let t: Vec<String> = linear_ticks_from(0.6, 3.4, 1.0)
        .into_iter()
        .map(|t| t.1)
        .collect();
    assert_eq!(t, ["1", "2", "3"]);
}

/// A ROC figure of twelve runs (reproduce draws nine methods): every series'
/// polyline has its own (stroke colour, dash pattern) pair in the SVG, and the
/// palette is as long as `figures::DISTINCT_STYLES` assumes.
#[test]
fn twelve_roc_curves_are_drawn_in_twelve_distinct_styles() {
    assert_eq!(PALETTE.len() * DASHES.len(), DISTINCT_STYLES);
    let curves: Vec<Curve> = (0..12)
        .map(|k| {
            let (s, y) = crate::figures::tests::scored(60, k);
            Curve::of(&roc_curve(&s, &y))
        })
        .collect();
    let runs: Vec<RocSource> = curves
        .iter()
        .enumerate()
        .map(|(k, c)| RocSource {
            label: format!("run {k}"),
            curve: c,
            auc: 0.5,
            interval: None,
        })
        .collect();
    let (_, svg) = to_svg(&roc(&runs, "test set"));
    let styles: Vec<(String, String)> = svg
        .split(r#"<g class="series""#)
        .skip(1)
        .filter(|g| g.contains("data-name=\"run "))
        .map(|g| {
            let line = g.lines().find(|l| l.contains("<polyline")).unwrap();
            let attr = |name: &str| {
                line.split(&format!(r#"{name}=""#))
                    .nth(1)
                    .map_or(String::new(), |r| r[..r.find('"').unwrap()].to_string())
            };
            (attr("stroke"), attr("stroke-dasharray"))
        })
        .collect();
    assert_eq!(styles.len(), 12);
    let distinct: std::collections::HashSet<_> = styles.iter().collect();
    assert_eq!(distinct.len(), 12, "{styles:?}");
    assert_eq!(
        count(&svg, r#"<g class="legend-entry">"#),
        13,
        "12 runs and chance"
    );
}
