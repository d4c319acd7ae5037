//! Several independent SMC runs (the record's `runs` section): log Ẑ of every
//! run against their mean ± sd, and every run's posterior means in units of
//! the pooled sd — the disagreement per coefficient that R-hat summarises.

use super::{Axis, Dash, Data, Figure, Mark, Panel, Series, Style, finite};
use crate::engine::fit::IndependentRuns;
use crate::engine::record::Coefficient;

/// Most coefficients in the run-means panel (those of largest |mean/sd|).
pub const MAX_COEFFICIENTS: usize = 12;

/// The runs figure; None for fewer than two runs.
pub fn smc_runs(
    runs: &IndependentRuns,
    coefficients: &[Coefficient],
    label: &str,
    id: &str,
) -> Option<Figure> {
    if runs.runs.len() < 2 {
        return None;
    }
    let r_count = runs.runs.len() as f64;
    let lz = runs.log_z;
    let mut evidence = Panel::new(
        Some("evidence of every run".into()),
        Axis::linear("run").range(0.5, r_count + 0.5),
        Axis::linear("log Ẑ"),
    );
    evidence.series.push(Series {
        name: "mean ± sd over runs".into(),
        style: Style::reference(Dash::Solid),
        data: Data::Band {
            x: vec![0.5, r_count + 0.5],
            lo: vec![lz.mean - lz.sd; 2],
            hi: vec![lz.mean + lz.sd; 2],
        },
    });
    // Each run in its colour, as in the means panel (one legend entry each).
    for (i, r) in runs.runs.iter().enumerate() {
        evidence.series.push(Series {
            name: format!("run {}", r.run),
            style: Style::nth(i),
            data: Data::Points(finite([[r.run as f64, r.log_z]])),
        });
    }
    evidence.marks.push(Mark::HLine {
        y: lz.pooled,
        label: "pooled (log of the mean Ẑ)".into(),
    });
    // Coefficients by decreasing |mean/sd|, as the marginals figure.
    let mut order: Vec<usize> = (0..coefficients.len()).collect();
    let z = |k: usize| {
        let v = (coefficients[k].mean / coefficients[k].sd).abs();
        if v.is_finite() { v } else { -1.0 }
    };
    order.sort_by(|&a, &b| z(b).total_cmp(&z(a)));
    order.truncate(MAX_COEFFICIENTS);
    let mut x = Axis::linear("coefficient");
    x.categories = order
        .iter()
        .map(|&k| coefficients[k].name.clone())
        .collect();
    let mut means = Panel::new(
        Some("each run's posterior mean".into()),
        x,
        Axis::linear("run − pooled mean, in sds"),
    );
    for (i, r) in runs.runs.iter().enumerate() {
        // Runs side by side within a coefficient's slot.
        let offset = if runs.runs.len() > 1 {
            0.5 * (i as f64 / (r_count - 1.0) - 0.5)
        } else {
            0.0
        };
        means.series.push(Series {
            name: format!("run {}", r.run),
            style: Style::nth(i),
            data: Data::Points(finite(order.iter().enumerate().filter_map(|(j, &k)| {
                let c = &coefficients[k];
                Some([j as f64 + offset, (r.mean.get(k)? - c.mean) / c.sd])
            }))),
        });
    }
    means.marks.push(Mark::HLine {
        y: 0.0,
        label: "pooled mean".into(),
    });
    let rhat = runs.rhat_max.map_or("-".into(), |r| {
        format!("{r:.4} ({})", runs.rhat_worst.as_deref().unwrap_or("-"))
    });
    let mcse = runs
        .mcse_over_sd_max()
        .map_or("-".into(), |m| format!("{m:.3}"));
    Some(Figure {
        id: id.to_string(),
        title: format!("Independent SMC runs: {label}"),
        subtitle: Some(format!(
            "{} runs pooled with equal weights · log Z {:.3} ± {:.3} (MCSE {:.3}) · max R-hat {rhat} · max MCSE/sd {mcse}",
            runs.count, lz.mean, lz.sd, lz.mcse
        )),
        panels: vec![evidence, means],
        columns: 2,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::fit::{LogZRuns, RunSummary};

    fn run(r: usize, log_z: f64, mean: [f64; 2]) -> RunSummary {
        RunSummary {
            run: r,
            seed: r as u64,
            log_z,
            stages: 5,
            moves: 20,
            risk_evaluations: 100,
            seconds: 0.1,
            mean_risk: 0.2,
            converged: true,
            mean: mean.to_vec(),
            sd: vec![1.0, 1.0],
        }
    }

    /// The points are the runs' log Ẑ and their means' offsets in pooled sds;
    /// the band is mean ± sd; coefficients by decreasing |mean/sd|.
    #[test]
    fn runs_figure_shows_each_run() {
        let runs = IndependentRuns {
            count: 2,
            pooling: "equal".into(),
            runs: vec![run(1, -10.0, [0.1, 2.0]), run(2, -10.4, [-0.1, 2.2])],
            log_z: LogZRuns {
                mean: -10.2,
                sd: 0.2828,
                mcse: 0.2,
                pooled: -10.18,
            },
            rhat: vec![Some(1.001), Some(1.002)],
            rhat_risk: Some(1.0),
            rhat_max: Some(1.002),
            rhat_worst: Some("b".into()),
            mcse: vec![0.1, 0.1],
            mcse_over_sd: vec![Some(0.1), Some(0.2)],
            z_weight_runs: 1.9,
            mean_risk: 0.2,
        };
        let coefs = [("a", 0.0, 1.0), ("b", 2.1, 0.5)].map(|(n, m, s)| Coefficient {
            name: n.into(),
            mean: m,
            sd: s,
            quantiles: None,
        });
        let f = smc_runs(&runs, &coefs, "smc", "smc-runs").unwrap();
        let ev = &f.panels[0];
        assert_eq!(ev.series.len(), 3);
        let Data::Band { lo, hi, .. } = &ev.series[0].data else {
            panic!("a band")
        };
        assert!((lo[0] + 10.4828).abs() < 1e-9 && (hi[0] + 9.9172).abs() < 1e-9);
        assert_eq!(ev.series[2].data, Data::Points(vec![[2.0, -10.4]]));
        let means = &f.panels[1];
        assert_eq!(means.x.categories, ["b", "a"]);
        let Data::Points(p) = &means.series[1].data else {
            panic!("points")
        };
        // Run 2: b at (2.2 − 2.1)/0.5 = 0.2, a at −0.1; slot offset +0.25.
        assert!((p[0][0] - 0.25).abs() < 1e-12 && (p[0][1] - 0.2).abs() < 1e-12);
        assert!((p[1][0] - 1.25).abs() < 1e-12 && (p[1][1] + 0.1).abs() < 1e-12);
        assert_eq!(f.legend().len(), 3, "the band and one entry per run");
        assert!(
            smc_runs(
                &IndependentRuns {
                    runs: runs.runs[..1].to_vec(),
                    ..runs.clone()
                },
                &coefs,
                "",
                ""
            )
            .is_none()
        );
    }
}
