//! The sampling uncertainty of an AUC and paired comparisons of two scores on
//! the same rows (ALGORITHMS.md §17): DeLong, DeLong & Clarke-Pearson's (1988)
//! structural components, computed in O(n log n) from mid-ranks (Sun & Xu
//! 2014) — ties count ½ as in `metrics::auc` — and a stratified, seeded
//! bootstrap. The O(n₊n₋) definitions are kept for tests.
//!
//! The interval is the Wald interval AUC ± z·SE; when it would leave [0, 1]
//! it is taken on the logit scale instead (the delta method there), so it
//! stays inside and is asymmetric near the ends, where the AUC's sampling
//! distribution is. An AUC of exactly 0 or 1 has DeLong SE 0: the interval is
//! the point, and `degenerate` says so (a bootstrap says the same).

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, Normal};

use super::numerics::rng;

/// Two-sided normal quantile for a confidence `level` (0.95 → 1.95996…).
pub fn z_of(level: f64) -> f64 {
    let n = Normal::new(0.0, 1.0).expect("the standard normal");
    n.inverse_cdf(0.5 + level / 2.0)
}

/// P(|Z| ≥ |z|) for a standard normal Z.
pub fn two_sided_p(z: f64) -> f64 {
    let n = Normal::new(0.0, 1.0).expect("the standard normal");
    (2.0 * n.sf(z.abs())).min(1.0)
}

/// An AUC with its standard error and confidence interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AucInterval {
    pub auc: f64,
    pub se: f64,
    pub lower: f64,
    pub upper: f64,
    /// Confidence level of [lower, upper] (0.95).
    pub level: f64,
    pub method: IntervalMethod,
    pub positives: usize,
    pub negatives: usize,
}

/// How an interval was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IntervalMethod {
    /// DeLong's variance (normal interval, logit scale near the ends).
    Delong,
    /// Stratified bootstrap (replicates' sd, percentile interval).
    Bootstrap,
}

impl IntervalMethod {
    pub fn name(self) -> &'static str {
        match self {
            IntervalMethod::Delong => "DeLong",
            IntervalMethod::Bootstrap => "bootstrap",
        }
    }
}

impl AucInterval {
    /// "0.7870 ± 0.0253 (95% DeLong 0.7374–0.8366)".
    pub fn describe(&self) -> String {
        format!(
            "{:.4} ± {:.4} ({:.0}% {} {:.4}–{:.4})",
            self.auc,
            self.se,
            self.level * 100.0,
            self.method.name(),
            self.lower,
            self.upper
        )
    }
    /// "0.787 [0.737, 0.837]": for legends and narrow tables.
    pub fn short(&self) -> String {
        format!("{:.3} [{:.3}, {:.3}]", self.auc, self.lower, self.upper)
    }
}

impl PairedAuc {
    /// "+0.0240 ± 0.0150 (95% −0.0054 to +0.0534), p = 0.11 (DeLong, paired)".
    pub fn describe(&self) -> String {
        format!(
            "{:+.4} ± {:.4} ({:.0}% {:+.4} to {:+.4}), p = {} ({}, paired)",
            self.difference,
            self.se,
            self.level * 100.0,
            self.lower,
            self.upper,
            p_text(self.p_value),
            self.method.name()
        )
    }
}

/// A p-value for people: two significant digits, "< 0.0001" below.
pub fn p_text(p: f64) -> String {
    if !p.is_finite() {
        "-".into()
    } else if p < 1e-4 {
        "< 0.0001".into()
    } else if p < 0.01 {
        format!("{p:.4}")
    } else {
        format!("{p:.2}")
    }
}

/// The default confidence level.
pub const LEVEL: f64 = 0.95;

/// Mid-ranks (from 1) of the values `v[order[..]]`, `order` ascending:
/// written at `rank[slot(order[k])]` (equal values share their mean rank, so
/// the order within ties does not matter).
fn midranks_along(v: &[f64], order: &[usize], slot: impl Fn(usize) -> usize, rank: &mut [f64]) {
    let mut g = 0;
    while g < order.len() {
        let mut e = g;
        while e < order.len() && v[order[e]] == v[order[g]] {
            e += 1;
        }
        // Ranks g+1 ..= e share their mean.
        let mid = (g + 1 + e) as f64 / 2.0;
        for &i in &order[g..e] {
            rank[slot(i)] = mid;
        }
        g = e;
    }
}

/// The structural components of one score: V₁₀ per positive, V₀₁ per negative
/// (in row order within each class). Two scores' components on the same rows
/// give their paired test in O(n) (`paired`), without the scores. A record
/// keeps them (up to `STORED_MAX_ROWS` test rows) so that replayed runs can
/// be compared too.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Components {
    v10: Vec<f64>,
    v01: Vec<f64>,
}

/// Test sets up to this many rows keep their components in the record (16
/// bytes of JSON per row or so; above it a record would grow by megabytes).
pub const STORED_MAX_ROWS: usize = 100_000;

impl Components {
    /// Whether these can be the components of `positives` positive and
    /// `negatives` negative rows: the counts match and every value is a
    /// share in [0, 1] (a damaged record's are refused).
    pub fn check(&self, positives: usize, negatives: usize) -> Result<(), String> {
        if self.v10.len() != positives || self.v01.len() != negatives {
            return Err(format!(
                "test_components has {} + {} values for {positives} positive and {negatives} \
                 negative test rows",
                self.v10.len(),
                self.v01.len()
            ));
        }
        match self
            .v10
            .iter()
            .chain(&self.v01)
            .find(|v| !(0.0..=1.0).contains(*v))
        {
            Some(v) => Err(format!("test_components holds {v}, not a share in [0, 1]")),
            None => Ok(()),
        }
    }

    /// The components of `scores` for labels `y`; None when a class is empty.
    pub fn of(scores: &[f64], y: &[bool]) -> Option<Components> {
        Components::fast(scores, y)
    }

    /// DeLong's paired test of `self` − `other`, components of two scores on
    /// the same rows; None when the class sizes differ (other rows).
    pub fn paired(&self, other: &Components) -> Option<PairedAuc> {
        if self.v10.len() != other.v10.len() || self.v01.len() != other.v01.len() {
            return None;
        }
        let (va, vb, cab) = (
            delong_cov(self, self),
            delong_cov(other, other),
            delong_cov(self, other),
        );
        let se = (va + vb - 2.0 * cab).max(0.0).sqrt();
        Some(paired_result(
            self.auc(),
            other.auc(),
            se,
            correlation(va, vb, cab),
            IntervalMethod::Delong,
        ))
    }

    /// By mid-ranks: a positive's V₁₀ is (its rank among all − its rank among
    /// the positives) / n₋, the negatives below it with ties ½; a negative's
    /// V₀₁ is 1 − (its rank among all − its rank among the negatives) / n₊.
    fn fast(scores: &[f64], y: &[bool]) -> Option<Components> {
        Components::from_order(scores, y, &crate::engine::metrics::ascending_order(scores))
    }

    /// `fast` given the ascending order of the scores (one sort serves the
    /// AUC, the ROC curve and these): the positives' and negatives' own
    /// orders are its subsequences.
    pub(crate) fn from_order(scores: &[f64], y: &[bool], order: &[usize]) -> Option<Components> {
        // Row → index within its class.
        let mut within = Vec::with_capacity(y.len());
        let (mut m, mut n) = (0, 0);
        for &yi in y {
            within.push(if yi { m } else { n });
            if yi { m += 1 } else { n += 1 }
        }
        if m == 0 || n == 0 {
            return None;
        }
        let (pos_order, neg_order): (Vec<usize>, Vec<usize>) = order.iter().partition(|&&i| y[i]);
        let all_slot = |i: usize| if y[i] { within[i] } else { m + within[i] };
        let (mut r_all, mut r_pos, mut r_neg) = (vec![0.0; m + n], vec![0.0; m], vec![0.0; n]);
        rayon::join(
            || midranks_along(scores, order, all_slot, &mut r_all),
            || {
                rayon::join(
                    || midranks_along(scores, &pos_order, |i| within[i], &mut r_pos),
                    || midranks_along(scores, &neg_order, |i| within[i], &mut r_neg),
                )
            },
        );
        let v10 = (0..m).map(|i| (r_all[i] - r_pos[i]) / n as f64).collect();
        let v01 = (0..n)
            .map(|j| 1.0 - (r_all[m + j] - r_neg[j]) / m as f64)
            .collect();
        Some(Components { v10, v01 })
    }

    fn auc(&self) -> f64 {
        mean(&self.v10)
    }
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

/// Sample covariance (n − 1) of two equally long vectors; 0 for one value.
fn cov(a: &[f64], b: &[f64]) -> f64 {
    if a.len() < 2 {
        return 0.0;
    }
    let (ma, mb) = (mean(a), mean(b));
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - ma) * (y - mb))
        .sum::<f64>()
        / (a.len() - 1) as f64
}

/// DeLong's covariance of the AUCs of two scores on the same rows.
fn delong_cov(a: &Components, b: &Components) -> f64 {
    cov(&a.v10, &b.v10) / a.v10.len() as f64 + cov(&a.v01, &b.v01) / a.v01.len() as f64
}

/// The interval of `auc` with standard error `se` at `level`: Wald, or on the
/// logit scale when the Wald interval leaves [0, 1].
pub fn interval(auc: f64, se: f64, level: f64) -> (f64, f64) {
    let z = z_of(level);
    let (lo, hi) = (auc - z * se, auc + z * se);
    if (0.0..=1.0).contains(&lo) && (0.0..=1.0).contains(&hi) {
        return (lo, hi);
    }
    if auc <= 0.0 || auc >= 1.0 || se == 0.0 {
        return (auc, auc);
    }
    let logit = (auc / (1.0 - auc)).ln();
    let half = z * se / (auc * (1.0 - auc));
    let expit = |t: f64| 1.0 / (1.0 + (-t).exp());
    (expit(logit - half), expit(logit + half))
}

/// DeLong's SE and interval of the AUC of `scores` for labels `y`; None when a
/// class is empty.
pub fn delong(scores: &[f64], y: &[bool]) -> Option<AucInterval> {
    assert_eq!(scores.len(), y.len(), "one score per label");
    let c = Components::fast(scores, y)?;
    Some(of_components(&c, LEVEL))
}

/// `delong` given the ascending order of the scores (`metrics::ascending_order`).
pub fn delong_from_order(scores: &[f64], y: &[bool], order: &[usize]) -> Option<AucInterval> {
    assert_eq!(scores.len(), y.len(), "one score per label");
    let c = Components::from_order(scores, y, order)?;
    Some(of_components(&c, LEVEL))
}

fn of_components(c: &Components, level: f64) -> AucInterval {
    let auc = c.auc();
    let se = delong_cov(c, c).max(0.0).sqrt();
    let (lower, upper) = interval(auc, se, level);
    AucInterval {
        auc,
        se,
        lower,
        upper,
        level,
        method: IntervalMethod::Delong,
        positives: c.v10.len(),
        negatives: c.v01.len(),
    }
}

/// Two scores on the same rows compared: `a` − `b`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PairedAuc {
    pub auc_a: f64,
    pub auc_b: f64,
    /// AUC(a) − AUC(b).
    pub difference: f64,
    pub se: f64,
    pub lower: f64,
    pub upper: f64,
    pub level: f64,
    /// Two-sided p-value of "no difference" (z = difference / se); 1 when both
    /// scores rank every pair alike (se 0 and no difference).
    pub p_value: f64,
    /// Correlation of the two AUC estimates (what pairing buys).
    pub correlation: f64,
    pub method: IntervalMethod,
}

/// DeLong's paired test of two scores `a`, `b` of the same rows `y`; None
/// when a class is empty.
pub fn delong_paired(a: &[f64], b: &[f64], y: &[bool]) -> Option<PairedAuc> {
    assert!(
        a.len() == y.len() && b.len() == y.len(),
        "one score per label"
    );
    Components::fast(a, y)?.paired(&Components::fast(b, y)?)
}

fn correlation(va: f64, vb: f64, cab: f64) -> f64 {
    if va > 0.0 && vb > 0.0 {
        cab / (va * vb).sqrt()
    } else {
        f64::NAN
    }
}

fn paired_result(
    auc_a: f64,
    auc_b: f64,
    se: f64,
    correlation: f64,
    method: IntervalMethod,
) -> PairedAuc {
    let difference = auc_a - auc_b;
    let z = z_of(LEVEL);
    let p_value = if se > 0.0 {
        two_sided_p(difference / se)
    } else if difference == 0.0 {
        1.0
    } else {
        0.0
    };
    PairedAuc {
        auc_a,
        auc_b,
        difference,
        se,
        lower: (difference - z * se).max(-1.0),
        upper: (difference + z * se).min(1.0),
        level: LEVEL,
        p_value,
        correlation,
        method,
    }
}

/// Stratified bootstrap resamples: positives and negatives each drawn with
/// replacement at their own count (the class sizes stay fixed, as DeLong's
/// variance assumes), from one seeded stream per replicate.
fn resample(y: &[bool], seed: u64, rep: u64) -> Vec<usize> {
    use rand::RngExt;
    let pos: Vec<usize> = (0..y.len()).filter(|&i| y[i]).collect();
    let neg: Vec<usize> = (0..y.len()).filter(|&i| !y[i]).collect();
    let mut r = rng::stream(seed, &[0xb007, rep]);
    let mut out = Vec::with_capacity(y.len());
    for class in [&pos, &neg] {
        for _ in 0..class.len() {
            out.push(class[r.random_range(0..class.len())]);
        }
    }
    out
}

/// Percentile interval and sd of bootstrap replicates (NaNs left out).
fn percentile(mut reps: Vec<f64>, level: f64) -> (f64, f64, f64) {
    reps.retain(|x| x.is_finite());
    reps.sort_unstable_by(f64::total_cmp);
    let k = reps.len();
    let q = |p: f64| reps[((p * (k - 1) as f64).round() as usize).min(k - 1)];
    let m = mean(&reps);
    let sd = (reps.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (k.max(2) - 1) as f64).sqrt();
    (sd, q((1.0 - level) / 2.0), q((1.0 + level) / 2.0))
}

/// The stratified bootstrap's SE (the replicates' sd) and percentile interval
/// of the AUC, `reps` replicates seeded by `seed`; None when a class is empty.
pub fn bootstrap(scores: &[f64], y: &[bool], reps: usize, seed: u64) -> Option<AucInterval> {
    let c = Components::fast(scores, y)?;
    let aucs: Vec<f64> = (0..reps as u64)
        .map(|r| {
            let idx = resample(y, seed, r);
            let s: Vec<f64> = idx.iter().map(|&i| scores[i]).collect();
            let yy: Vec<bool> = idx.iter().map(|&i| y[i]).collect();
            super::metrics::auc(&s, &yy)
        })
        .collect();
    let (se, lower, upper) = percentile(aucs, LEVEL);
    Some(AucInterval {
        auc: c.auc(),
        se,
        lower,
        upper,
        level: LEVEL,
        method: IntervalMethod::Bootstrap,
        positives: c.v10.len(),
        negatives: c.v01.len(),
    })
}

/// The paired stratified bootstrap of AUC(a) − AUC(b): both scores resampled
/// on the same rows; SE the replicates' sd, p-value from difference / SE.
pub fn bootstrap_paired(
    a: &[f64],
    b: &[f64],
    y: &[bool],
    reps: usize,
    seed: u64,
) -> Option<PairedAuc> {
    let (ca, cb) = (Components::fast(a, y)?, Components::fast(b, y)?);
    let mut da = Vec::with_capacity(reps);
    let mut db = Vec::with_capacity(reps);
    for r in 0..reps as u64 {
        let idx = resample(y, seed, r);
        let yy: Vec<bool> = idx.iter().map(|&i| y[i]).collect();
        let pick = |s: &[f64]| idx.iter().map(|&i| s[i]).collect::<Vec<f64>>();
        da.push(super::metrics::auc(&pick(a), &yy));
        db.push(super::metrics::auc(&pick(b), &yy));
    }
    let diffs: Vec<f64> = da.iter().zip(&db).map(|(x, y)| x - y).collect();
    let (se, lower, upper) = percentile(diffs, LEVEL);
    let mut p = paired_result(
        ca.auc(),
        cb.auc(),
        se,
        correlation(cov(&da, &da), cov(&db, &db), cov(&da, &db)),
        IntervalMethod::Bootstrap,
    );
    (p.lower, p.upper) = (lower, upper);
    Some(p)
}

#[cfg(test)]
#[path = "auc_interval_tests.rs"]
mod tests;
