//! Per-coefficient posterior marginals (RACL14 Fig. 1/4): the SMC particle
//! histogram as a density, with the Gaussian marginal of each Gaussian
//! approximation (EP, VB) of the same posterior drawn over it.

use super::{Axis, Bar, Data, Figure, Panel, Series, Style, finite};
use crate::engine::event::Histogram;
use crate::engine::record::Coefficient;

/// Most panels in one marginals figure (the rest are named in the subtitle).
pub const MAX_PANELS: usize = 12;
/// Points of a Gaussian density curve.
const CURVE_POINTS: usize = 161;
/// Half-width of a Gaussian curve's grid, in sds.
const CURVE_SDS: f64 = 4.0;

/// A sampling run: its coefficients (for the order) and one histogram per
/// coefficient; `label` names the series ("smc particles", "gcs draws").
pub struct HistogramSource<'a> {
    pub label: String,
    pub coefficients: &'a [Coefficient],
    pub histograms: &'a [Histogram],
}

/// A Gaussian approximation: N(mean, sd²) per coefficient.
pub struct GaussianSource<'a> {
    pub label: String,
    pub coefficients: &'a [Coefficient],
}

/// A histogram as a density: bar heights `count / (total · width)`, so the
/// bars' area is 1 whatever the weights. Empty when the histogram is degenerate.
pub fn density_steps(h: &Histogram) -> Vec<Bar> {
    let total: f64 = h.counts.iter().filter(|c| c.is_finite()).sum();
    let width = (h.hi - h.lo) / h.counts.len().max(1) as f64;
    if !(total > 0.0 && width > 0.0 && width.is_finite()) {
        return Vec::new();
    }
    h.counts
        .iter()
        .enumerate()
        .map(|(i, &c)| Bar {
            x0: h.lo + i as f64 * width,
            x1: h.lo + (i + 1) as f64 * width,
            y: if c.is_finite() {
                c / (total * width)
            } else {
                0.0
            },
        })
        .collect()
}

/// The N(mean, sd²) density on mean ± 4 sd (empty unless sd > 0 and both finite).
pub fn normal_curve(mean: f64, sd: f64) -> Vec<[f64; 2]> {
    if !(mean.is_finite() && sd.is_finite() && sd > 0.0) {
        return Vec::new();
    }
    let norm = 1.0 / (sd * (2.0 * std::f64::consts::PI).sqrt());
    finite((0..CURVE_POINTS).map(|i| {
        let z = -CURVE_SDS + 2.0 * CURVE_SDS * i as f64 / (CURVE_POINTS - 1) as f64;
        [mean + z * sd, norm * (-0.5 * z * z).exp()]
    }))
}

/// Coefficient indices by decreasing |mean/sd| (non-finite last).
fn order(coefs: &[Coefficient]) -> Vec<usize> {
    let key = |c: &Coefficient| {
        let z = (c.mean / c.sd).abs();
        if z.is_finite() { z } else { -1.0 }
    };
    let mut idx: Vec<usize> = (0..coefs.len()).collect();
    idx.sort_by(|&a, &b| key(&coefs[b]).total_cmp(&key(&coefs[a])));
    idx
}

/// One coefficient's panel: the sampler's histogram as a density (series
/// named `label`) under each Gaussian N(mean, sd²) (named "`label` Gaussian"),
/// with the caller's styles (the explorer keeps each run's colour).
pub fn marginal_panel(
    name: &str,
    histogram: Option<(&str, Style, &Histogram)>,
    gaussians: &[(String, Style, f64, f64)],
) -> Panel {
    let mut panel = Panel::new(
        Some(name.to_string()),
        Axis::linear("coefficient (standardised feature)"),
        Axis::linear("density").range(0.0, f64::NAN),
    );
    if let Some((label, style, h)) = histogram {
        panel.series.push(Series {
            name: label.to_string(),
            style,
            data: Data::Bars(density_steps(h)),
        });
    }
    for (label, style, mean, sd) in gaussians {
        panel.series.push(Series {
            name: format!("{label} Gaussian"),
            style: *style,
            data: Data::Line(normal_curve(*mean, *sd)),
        });
    }
    panel
}

/// The marginals figure: one panel per coefficient (the `MAX_PANELS` largest
/// |mean/sd| of the first source), None without any source.
pub fn marginals(
    sample: Option<&HistogramSource>,
    gaussians: &[GaussianSource],
    data: &str,
) -> Option<Figure> {
    let first = sample
        .map(|s| s.coefficients)
        .or_else(|| gaussians.first().map(|g| g.coefficients))?;
    let idx = order(first);
    if idx.is_empty() {
        return None;
    }
    let mut panels = Vec::new();
    for &k in idx.iter().take(MAX_PANELS) {
        let name = &first[k].name;
        let hist = sample.and_then(|s| {
            let at = s.coefficients.iter().position(|c| &c.name == name)?;
            Some((s.label.as_str(), Style::nth(0), s.histograms.get(at)?))
        });
        let normals: Vec<(String, Style, f64, f64)> = gaussians
            .iter()
            .enumerate()
            .filter_map(|(i, g)| {
                let c = g.coefficients.iter().find(|c| &c.name == name)?;
                Some((g.label.clone(), Style::nth(i + 1), c.mean, c.sd))
            })
            .collect();
        panels.push(marginal_panel(name, hist, &normals));
    }
    let mut subtitle = data.to_string();
    if idx.len() > MAX_PANELS {
        subtitle.push_str(&format!(
            " · the {MAX_PANELS} of {} coefficients with the largest |mean/sd|",
            idx.len()
        ));
    }
    let columns = match panels.len() {
        1 => 1,
        2 | 4 => 2,
        _ => 3,
    };
    Some(Figure {
        id: "marginals".into(),
        title: "Posterior marginals".into(),
        subtitle: Some(subtitle),
        panels,
        columns,
    })
}
