//! Axis ranges and ticks: linear (1-2-5 steps) and log10 (decades, or 1-2-5
//! within a decade when the range is short).

use super::text::{decimals_for, number};
use crate::figures::{Axis, Data, Mark, Panel};

/// An axis resolved to a drawable range (in scale units: log10 for log axes).
#[derive(Debug, Clone)]
pub struct Scale {
    pub lo: f64,
    pub hi: f64,
    pub log: bool,
    /// (position in scale units, label).
    pub ticks: Vec<(f64, String)>,
}

impl Scale {
    /// Scale units of a data value (None when a log axis cannot show it).
    pub fn t(&self, v: f64) -> Option<f64> {
        if self.log {
            (v > 0.0).then(|| v.log10())
        } else {
            v.is_finite().then_some(v)
        }
    }
    /// Position in [0, 1] along the axis.
    pub fn frac(&self, v: f64) -> Option<f64> {
        self.t(v).map(|t| (t - self.lo) / (self.hi - self.lo))
    }
}

/// The values a panel puts on each axis (data and marks).
fn extents(panel: &Panel) -> (Vec<f64>, Vec<f64>) {
    let (mut xs, mut ys) = (Vec::new(), Vec::new());
    for s in &panel.series {
        match &s.data {
            Data::Line(p) | Data::Points(p) => {
                for q in p {
                    xs.push(q[0]);
                    ys.push(q[1]);
                }
            }
            Data::Bars(b) => {
                for q in b {
                    xs.extend([q.x0, q.x1]);
                    ys.extend([0.0, q.y]);
                }
            }
            Data::Band { x, lo, hi } => {
                xs.extend(x);
                ys.extend(lo);
                ys.extend(hi);
            }
        }
    }
    for m in &panel.marks {
        match m {
            Mark::HLine { y, .. } => ys.push(*y),
            Mark::VLine { x, .. } => xs.push(*x),
        }
    }
    (xs, ys)
}

pub fn scales(panel: &Panel) -> (Scale, Scale) {
    let (xs, ys) = extents(panel);
    (resolve(&panel.x, &xs), resolve(&panel.y, &ys))
}

fn resolve(axis: &Axis, values: &[f64]) -> Scale {
    if !axis.categories.is_empty() {
        let n = axis.categories.len();
        return Scale {
            lo: -0.6,
            hi: n as f64 - 0.4,
            log: false,
            ticks: axis
                .categories
                .iter()
                .enumerate()
                .map(|(i, c)| (i as f64, c.clone()))
                .collect(),
        };
    }
    let t = |v: f64| if axis.log { v.log10() } else { v };
    let data: Vec<f64> = values
        .iter()
        .filter(|v| v.is_finite() && (!axis.log || **v > 0.0))
        .map(|&v| t(v))
        .collect();
    let dlo = data.iter().copied().fold(f64::INFINITY, f64::min);
    let dhi = data.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let fixed = |i: usize| {
        axis.range
            .map(|r| r[i])
            .filter(|v| v.is_finite() && (!axis.log || *v > 0.0))
            .map(t)
    };
    let (flo, fhi) = (fixed(0), fixed(1));
    let (mut lo, mut hi) = (flo.unwrap_or(dlo), fhi.unwrap_or(dhi));
    if !(lo.is_finite() && hi.is_finite()) {
        // Nothing to show: a unit range (one decade on a log axis).
        (lo, hi) = (0.0, 1.0);
    }
    if hi - lo <= 1e-12 * lo.abs().max(1.0) {
        let w = if axis.log {
            0.5
        } else {
            lo.abs().max(1.0) * 0.1
        };
        (lo, hi) = (lo - w, hi + w);
    }
    // A little room around data-driven ends, none at fixed ends.
    let pad = 0.04 * (hi - lo);
    if flo.is_none() {
        lo -= pad;
    }
    if fhi.is_none() {
        hi += pad;
    }
    // Integer data (stages, sweeps, counts) get integer ticks: "2.5 stages"
    // reads as a fault.
    let integral = !data.is_empty() && data.iter().all(|v| v.fract() == 0.0);
    let ticks = if axis.log {
        log_ticks(lo, hi)
    } else {
        linear_ticks_from(lo, hi, if integral { 1.0 } else { 0.0 })
    };
    Scale {
        lo,
        hi,
        log: axis.log,
        ticks,
    }
}

/// A 1-2-5 step giving about five intervals over `span`.
fn nice_step(span: f64) -> f64 {
    let raw = span / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 2.5, 5.0, 10.0]
        .into_iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw * 0.999)
        .unwrap_or(10.0 * mag)
}

pub fn linear_ticks(lo: f64, hi: f64) -> Vec<(f64, String)> {
    linear_ticks_from(lo, hi, 0.0)
}

/// Linear ticks whose step is at least `min_step`; a whole `min_step` makes
/// the step whole (2.5 becomes 2).
pub fn linear_ticks_from(lo: f64, hi: f64, min_step: f64) -> Vec<(f64, String)> {
    let mut step = nice_step(hi - lo).max(min_step);
    if min_step >= 1.0 && min_step.fract() == 0.0 {
        step = step.floor();
    }
    let dec = decimals_for(step);
    let first = (lo / step - 1e-9).ceil() as i64;
    let last = (hi / step + 1e-9).floor() as i64;
    (first..=last)
        .map(|k| {
            let v = k as f64 * step;
            let v = if v.abs() < step * 1e-9 { 0.0 } else { v };
            (v, number(v, dec))
        })
        .collect()
}

/// Ticks of a log10 axis whose range is [lo, hi] in decades.
pub fn log_ticks(lo: f64, hi: f64) -> Vec<(f64, String)> {
    let label = |v: f64| {
        let d = decimals_for(v).min(6);
        number(v, d)
    };
    let (a, b) = (lo.ceil() as i64, hi.floor() as i64);
    if b - a >= 1 {
        let every = ((b - a) as f64 / 7.0).ceil().max(1.0) as i64;
        return (a..=b)
            .filter(|k| (k - a) % every == 0)
            .map(|k| (k as f64, label(10f64.powi(k as i32))))
            .collect();
    }
    // Less than two decades in view: 1, 2 and 5 times powers of ten.
    let mut out = Vec::new();
    for k in (lo.floor() as i64)..=(hi.ceil() as i64) {
        for m in [1.0, 2.0, 5.0] {
            let v = m * 10f64.powi(k as i32);
            let t = v.log10();
            if t >= lo - 1e-9 && t <= hi + 1e-9 {
                out.push((t, label(v)));
            }
        }
    }
    if out.len() < 2 {
        // Too short for 1-2-5: plain linear ticks on the values.
        return linear_ticks(10f64.powf(lo), 10f64.powf(hi))
            .into_iter()
            .filter(|(v, _)| *v > 0.0)
            .map(|(v, s)| (v.log10(), s))
            .collect();
    }
    out
}
