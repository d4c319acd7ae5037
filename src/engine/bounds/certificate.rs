//! The certificate as a value: `Bound` and its parts, the two-sample kl form
//! (`from_parts`), the pick among candidate posteriors and the recomputation at
//! another ε. A leaf the core may name (`Fit.bound`) without reaching a method:
//! the certificates of fits (which need the pair pass of `numerics`) are in `fits`.

use serde::{Deserialize, Serialize};

use super::two_sample;
use crate::engine::problem::Problem;

pub const DEFAULT_EPSILON: f64 = 0.05;

/// A bound on 1 − AUC at or above this certifies nothing: a score drawn at
/// random has an expected AUC risk of ½ (ties ½), whatever the data.
pub const VACUOUS_RISK: f64 = 0.5;

/// The sample sizes a bound depends on.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Sizes {
    pub n_pos: usize,
    pub n_neg: usize,
    pub d: usize,
}

impl Sizes {
    pub fn of(pb: &Problem) -> Sizes {
        Sizes {
            n_pos: pb.n_pos(),
            n_neg: pb.n_neg(),
            d: pb.d(),
        }
    }
    pub fn n(&self) -> usize {
        self.n_pos + self.n_neg
    }
    /// ⌊n/2⌋: Hoeffding's independent blocks.
    pub fn blocks(&self) -> usize {
        self.n() / 2
    }
    /// `c = 2 n₊ n₋/(n(n−1))`: r^U = c·R_n.
    pub fn u_scale(&self) -> f64 {
        let n = self.n() as f64;
        2.0 * (self.n_pos * self.n_neg) as f64 / (n * (n - 1.0))
    }
}

/// The bound of ARC16's ranking corollary (the PACVB package's formula):
/// `E_ρ r^U + λ/(n−1) + (KL + log(1/ε))/λ` (their Hoeffding constant
/// f(λ, n) = λ²/(n−1)), at their theory λ = √(d(n−1))/2 and, for comparison
/// on equal terms, optimised over the same grid with the same union bound.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PacVb {
    pub lambda_theory: f64,
    pub risk_at_theory_lambda: f64,
    pub lambda: f64,
    pub risk: f64,
}

/// One of the two bounds, at ε/2.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Part {
    pub risk: f64,
    pub risk_u: f64,
    pub epsilon: f64,
    /// The Hoeffding form's best λ on the grid (U-statistic scale).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lambda: Option<f64>,
}

/// A certificate: every risk on the AUC-risk scale (1 − AUC) unless named `_u`.
///
/// `risk` is the two-sample PAC-Bayes-kl bound (`form` "two_sample_kl",
/// `two_sample`); the one-sample forms of the first version (`hoeffding`,
/// `kl_inverse`, `pacvb`, on the U-statistic scale rescaled by `u_scale`) are
/// kept beside it for comparison, their smaller in `one_sample_risk`. A record
/// written before has no `form`: its `risk` is the one-sample bound.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bound {
    /// Upper bound on the expected AUC risk of a score drawn from ρ on new data
    /// from the same source, with probability ≥ 1 − ε.
    pub risk: f64,
    /// Which bound `risk` is: "two_sample_kl", or "one_sample" (records before it).
    #[serde(default = "one_sample_form")]
    pub form: String,
    /// m = min(n₊, n₋) of the certificate's sample: the two-sample form's
    /// independent blocks (0 in records before it).
    #[serde(default)]
    pub m: usize,
    /// The first version's certificate (the smaller one-sample form), for comparison.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub one_sample_risk: Option<f64>,
    /// The two-sample bound at KL = 0 with the same E_ρ R_n: no ρ with this
    /// empirical risk can be certified below it on this sample.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub floor: Option<f64>,
    /// ρ = N(c·mean, c²·V) with this c > 0 in place of the fit's own (c = 1):
    /// the same E_ρ R_n (the risk sees only directions), the smallest KL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rho_scale: Option<f64>,
    /// ρ = N(μ, s·V) with this s ≠ 1 in place of the fit's own covariance V
    /// (`spread`: widened or narrowed on a fixed grid, the smallest bound kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rho_spread: Option<f64>,
    /// E_ρ R_n from posterior draws: its Monte Carlo term (`Draws`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub draws: Option<Draws>,
    /// How the headline ρ was chosen among several, and what that cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chosen: Option<String>,
    /// A learned (split) prior: the rows it was learned on and the rows
    /// certified; `sizes` and `m` are then the certified part's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split: Option<SplitPrior>,
    /// E_ρ R_n on the training pairs.
    pub empirical_risk: f64,
    /// The Hoeffding form's best λ (U-statistic scale).
    pub lambda: f64,
    pub epsilon: f64,
    pub kl: f64,
    /// What ρ is: "gaussian", "gibbs" (SMC's log Z), "particles_gaussian", "gibbs_path_best".
    pub rho: String,
    /// The same bound on the U-statistic scale.
    pub risk_u: f64,
    pub empirical_risk_u: f64,
    /// c = 2n₊n₋/(n(n−1)): risk = risk_u / c.
    pub u_scale: f64,
    /// ⌊n/2⌋.
    pub blocks: usize,
    pub sizes: Sizes,
    pub grid_size: usize,
    /// Which bound gave `risk`: "hoeffding" or "kl_inverse".
    pub tighter: String,
    pub hoeffding: Part,
    pub kl_inverse: Part,
    /// γ = λ·c: the Gibbs posterior whose λ this is, in this program's convention.
    pub gamma_equivalent: f64,
    pub pacvb: PacVb,
    /// Why the value is only approximate (Monte Carlo inputs), if it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approximate: Option<String>,
    /// For an SMC fit: the ρ at the path's best stage (γ_t in `gamma_equivalent` of
    /// the stage) and the particles' Gaussian fit.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub others: Vec<Bound>,
}

fn one() -> usize {
    1
}

fn one_sample_form() -> String {
    "one_sample".into()
}

/// E_ρ R_n estimated from S draws: posterior draws (each R_n exact), or for a
/// Gaussian ρ on more pairs than the pass takes, pairs drawn uniformly (each
/// its exact Φ(−μ_ij/s_ij) under ρ). The two-sided empirical Bernstein interval
/// at `epsilon` (half each side), over which the certificate takes its worst
/// value; the PAC-Bayes part then has ε − `epsilon`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Draws {
    /// What was drawn: absent for posterior draws, "pairs" for sampled pairs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// S: the effective number of independent draws.
    pub count: f64,
    pub mean: f64,
    pub sd: f64,
    pub lower: f64,
    pub upper: f64,
    pub epsilon: f64,
    /// Draws-based candidates the headline was chosen among: each one's
    /// Monte Carlo event gets DRAWS_SHARE·ε / this (a union bound).
    #[serde(default = "one")]
    pub shared_by: usize,
    /// For the Gibbs posterior: KL = −log Z_γ − γ·E_ρ R_n moves with E_ρ R_n.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_z: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gamma: Option<f64>,
}

/// The split prior's bookkeeping (`certify_split`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SplitPrior {
    /// Share of each class's training rows the prior was learned on.
    pub share: f64,
    pub prior_rows: usize,
    pub certified_rows: usize,
    /// How the prior was made (engine, variance inflation).
    pub prior: String,
    /// Priors tried (variance inflations), paid for by ε/`grid`.
    pub grid: usize,
}

impl Bound {
    /// ρ in words: its family, and its covariance's spread when not the fit's own.
    pub fn label(&self) -> String {
        match self.rho_spread {
            Some(s) => format!("{} with covariance ×{s}", self.rho),
            None => self.rho.clone(),
        }
    }

    /// Whose score the certificate is about, in words.
    pub fn drawn_from(&self) -> String {
        match self.rho_spread {
            Some(s) => format!("the posterior with its covariance ×{s}"),
            None => "the posterior".into(),
        }
    }

    /// Whether the certificate says no more than a random score's ½.
    pub fn is_vacuous(&self) -> bool {
        self.risk >= VACUOUS_RISK
    }

    /// What the certificate means, in one line.
    pub fn meaning(&self) -> String {
        let conf = ((1.0 - self.epsilon) * 100.0 * 1e6).round() / 1e6;
        // Rounded down: the sentence must not promise more than the bound.
        let auc = ((1.0 - self.risk) * 100.0).floor() / 100.0;
        if self.is_vacuous() {
            return format!(
                "with {conf}% confidence, the expected AUC on new data from the same source is \
                 ≥ {auc:.2}: vacuous (no better than a random score's 0.5)"
            );
        }
        format!(
            "with {conf}% confidence, AUC ≥ {auc:.2} on new data from the same source (for a \
             score drawn from {})",
            self.drawn_from()
        )
    }

    /// With E_ρ R_n from sampled pairs (above `EXACT_PAIRS_MAX`): what that
    /// means, in one line (`fit` prints it; the explorer and the event log get
    /// it as information).
    pub fn sampled_pairs_note(&self) -> Option<String> {
        let d = self.draws.as_ref().filter(|d| d.source.is_some())?;
        let pairs = (self.sizes.n_pos * self.sizes.n_neg) as f64;
        Some(format!(
            "certificate: E_ρ R_n from {:.0} pairs drawn uniformly of the {pairs:.2e} (above \
             {:.0e} pairs there is no pass over all of them); its Monte Carlo error, [{:.4}, \
             {:.4}] at ε = {}, is in the bound",
            d.count,
            super::fits::EXACT_PAIRS_MAX as f64,
            d.lower,
            d.upper,
            d.epsilon
        ))
    }

    /// Why the certificate is loose, when it is (None when it is within 0.05
    /// of the best any ρ could get on this sample, or the record is of the
    /// first version's form).
    pub fn why_loose(&self) -> Option<String> {
        if self.form != "two_sample_kl" {
            return None;
        }
        let floor = self.floor?;
        let (pos, neg) = (self.sizes.n_pos, self.sizes.n_neg);
        let rarer = if pos <= neg { "positives" } else { "negatives" };
        let kl_part = self.risk - floor;
        if self.risk < 0.5 && kl_part < 0.05 {
            return None;
        }
        let needs = two_sample::m_needed(self.empirical_risk, self.kl, self.epsilon, 0.5);
        let mut s = format!(
            "loose: m = min(n₊, n₋) = {} {rarer} carry it; KL(ρ‖π) = {:.1} nats adds {:.3} \
             above the floor {:.3} (the bound at KL = 0)",
            self.m, self.kl, kl_part, floor
        );
        if self.is_vacuous() {
            match needs {
                Some(n) => s.push_str(&format!(
                    "; with this E_ρ R_n and KL it needs ≳ {n} {rarer} to certify anything"
                )),
                None => s.push_str(&format!(
                    "; E_ρ R_n = {:.3} is itself no better than chance",
                    self.empirical_risk
                )),
            }
        }
        Some(s)
    }
}

/// The fixed λ grid for n rows: 2^{g/2} from 1 to 8⌊n/2⌋ (where the
/// λ/(8⌊n/2⌋) term reaches 1, beyond which every bound is vacuous).
pub fn lambda_grid(sizes: &Sizes) -> Vec<f64> {
    let top = (8 * sizes.blocks().max(1)) as f64;
    let g = (2.0 * top.log2()).ceil() as usize + 1;
    (0..g).map(|i| 2f64.powf(0.5 * i as f64)).collect()
}

pub use two_sample::kl_inverse_upper;

/// The bound from E_ρ R_n and KL(ρ‖π).
pub fn from_parts(empirical_risk: f64, kl: f64, sizes: Sizes, epsilon: f64, rho: &str) -> Bound {
    let c = sizes.u_scale();
    let k = sizes.blocks().max(1) as f64;
    let emp_u = c * empirical_risk;
    let grid = lambda_grid(&sizes);
    let half = 0.5 * epsilon;
    let best = |term: &dyn Fn(f64) -> f64, pen: f64| {
        grid.iter()
            .map(|&l| (emp_u + term(l) + (kl + pen) / l, l))
            .fold((f64::INFINITY, 0.0), |a, b| if b.0 < a.0 { b } else { a })
    };
    let (h_u, lambda) = best(&|l| l / (8.0 * k), (grid.len() as f64 / half).ln());
    let kl_u = kl_inverse_upper(emp_u, (kl + (2.0 * k.sqrt() / half).ln()) / k);
    let n1 = (sizes.n() - 1) as f64;
    let (pv_u, pv_l) = best(&|l| l / n1, (grid.len() as f64 / epsilon).ln());
    let lt = (sizes.d as f64 * n1).sqrt() / 2.0;
    let pv_theory = emp_u + lt / n1 + (kl + (1.0 / epsilon).ln()) / lt;
    let risk_u = h_u.min(kl_u);
    let m = sizes.n_pos.min(sizes.n_neg);
    Bound {
        risk: two_sample::pac_bayes_kl(empirical_risk, kl, m, epsilon),
        form: "two_sample_kl".into(),
        m,
        one_sample_risk: Some(risk_u / c),
        floor: Some(two_sample::pac_bayes_kl(empirical_risk, 0.0, m, epsilon)),
        rho_scale: None,
        rho_spread: None,
        draws: None,
        chosen: None,
        split: None,
        empirical_risk,
        lambda,
        epsilon,
        kl,
        rho: rho.to_string(),
        risk_u,
        empirical_risk_u: emp_u,
        u_scale: c,
        blocks: sizes.blocks(),
        sizes,
        grid_size: grid.len(),
        tighter: if kl_u < h_u {
            "kl_inverse"
        } else {
            "hoeffding"
        }
        .into(),
        hoeffding: Part {
            risk: h_u / c,
            risk_u: h_u,
            epsilon: half,
            lambda: Some(lambda),
        },
        kl_inverse: Part {
            risk: kl_u / c,
            risk_u: kl_u,
            epsilon: half,
            lambda: None,
        },
        gamma_equivalent: lambda * c,
        pacvb: PacVb {
            lambda_theory: lt,
            risk_at_theory_lambda: pv_theory / c,
            lambda: pv_l,
            risk: pv_u / c,
        },
        approximate: None,
        others: Vec::new(),
    }
}

/// The share of ε spent on the Monte Carlo error of a draws-based E_ρ R_n.
pub const DRAWS_SHARE: f64 = 0.25;

/// The draws' term: E_ρ R_n within [lower, upper] with probability ≥ 1 − `epsilon`
/// (empirical Bernstein at ε/2 on each side; R_n ∈ [0, 1]).
pub fn draws_term(mean: f64, sd: f64, count: f64, epsilon: f64) -> Draws {
    let upper = two_sample::empirical_bernstein_upper(mean, sd * sd, count, 0.5 * epsilon);
    let lower =
        1.0 - two_sample::empirical_bernstein_upper(1.0 - mean, sd * sd, count, 0.5 * epsilon);
    Draws {
        source: None,
        count,
        mean,
        sd,
        lower: lower.max(0.0),
        upper,
        epsilon,
        shared_by: 1,
        log_z: None,
        gamma: None,
    }
}

/// The two-sample certificate of `b` from its inputs: E_ρ R_n (or, from draws,
/// the worst value over their interval), KL, m, and ε less the draws' share,
/// divided among a split prior's grid.
pub(crate) fn settle(b: &mut Bound) {
    settle_reserving(b, 0.0)
}

/// The Monte Carlo share of ε that `b`'s draws-based candidates use in all
/// (each one's event at its share, `shared_by` of them: a union bound).
fn draws_budget(b: &Bound) -> f64 {
    b.draws
        .as_ref()
        .map_or(0.0, |d| d.epsilon * d.shared_by.max(1) as f64)
}

/// `settle` with at least `reserve` of ε kept for Monte Carlo events: a
/// headline chosen among draws-based candidates and exact ones is valid on
/// the intersection of one PAC-Bayes event and every Monte Carlo event, so
/// the exact ones too run their PAC-Bayes part at ε less the draws' budget.
fn settle_reserving(b: &mut Bound, reserve: f64) {
    let grid = b.split.as_ref().map_or(1, |s| s.grid.max(1)) as f64;
    let eps = (b.epsilon - draws_budget(b).max(reserve)) / grid;
    let m = b.m;
    let at = |r: f64, kl: f64| two_sample::pac_bayes_kl(r, kl, m, eps);
    b.risk = match &b.draws {
        None => at(b.empirical_risk, b.kl),
        Some(d) => {
            // KL(r) falls as r grows (the Gibbs posterior) or is fixed; the bound
            // rises in both arguments, so on [r_i, r_{i+1}] it is at most its
            // value at (r_{i+1}, KL(r_i)): a rigorous maximum over the interval.
            let kl_at = |r: f64| match (d.log_z, d.gamma) {
                (Some(z), Some(g)) => (-z - g * r).max(0.0),
                _ => b.kl,
            };
            let k = 64;
            let r = |i: usize| d.lower + (d.upper - d.lower) * i as f64 / k as f64;
            (0..k)
                .map(|i| at(r(i + 1), kl_at(r(i))))
                .fold(0.0, f64::max)
        }
    };
    b.floor = Some(at(b.empirical_risk, 0.0));
}

/// The smallest certificate of several candidate ρ (each with its `others`),
/// the rest kept beside it. With one prior, the bound holds for every ρ at
/// once: choosing costs nothing (a draws-based candidate's Monte Carlo event is
/// its own, at its own share of ε).
///
/// A certificate under another prior (the data-free one kept beside a split
/// prior's) is not a candidate: it stays beside the headline as it is.
pub fn pick_best(cands: Vec<Bound>) -> Option<Bound> {
    let split = cands.first()?.split.is_some();
    let (mut all, mut aside) = (Vec::new(), Vec::new());
    for mut c in cands {
        let others = std::mem::take(&mut c.others);
        c.chosen = None;
        for o in std::iter::once(c).chain(others) {
            if o.split.is_some() == split {
                all.push(o);
            } else {
                aside.push(o);
            }
        }
    }
    // One Monte Carlo budget per kind of draws (posterior draws, sampled
    // pairs): distinct events, so their budgets add up.
    let reserve: f64 = [None, Some(super::fits::PAIRS_SOURCE)]
        .iter()
        .map(|kind| {
            all.iter()
                .filter(|c| c.draws.as_ref().map(|d| d.source.as_deref()) == Some(*kind))
                .map(draws_budget)
                .fold(0.0, f64::max)
        })
        .sum();
    if reserve > 0.0 {
        for c in all.iter_mut().filter(|c| draws_budget(c) < reserve) {
            settle_reserving(c, reserve);
        }
    }
    all.sort_by(|a, b| a.risk.total_cmp(&b.risk));
    if all.is_empty() {
        return None;
    }
    let mut best = all.remove(0);
    if !all.is_empty() {
        best.chosen = Some(format!(
            "the smallest of {} certificates (ρ: {}), all under one prior: the bound holds for \
             every ρ at once, so choosing the best costs nothing{}",
            all.len() + 1,
            std::iter::once(best.label())
                .chain(all.iter().map(|c| c.label()))
                .collect::<Vec<_>>()
                .join(", "),
            if reserve > 0.0 {
                format!(
                    " (the Monte Carlo events of the draws-based ones share {reserve:.4} of ε,                      which every candidate's PAC-Bayes part leaves aside)"
                )
            } else {
                String::new()
            }
        ));
    }
    all.append(&mut aside);
    best.others = all;
    Some(best)
}

/// The same certificate at another ε (`pacauc bound RUN.json --epsilon E`):
/// a bound depends on ρ only through E_ρ R_n and KL (and the draws' summary).
pub fn recompute(b: &Bound, epsilon: f64) -> Bound {
    let mut out = one_at(b, epsilon);
    let others = b.others.iter().map(|o| recompute(o, epsilon)).collect();
    out.others = others;
    if b.chosen.is_some() {
        return pick_best(vec![out]).expect("one candidate");
    }
    out
}

fn one_at(b: &Bound, epsilon: f64) -> Bound {
    let mut out = from_parts(b.empirical_risk, b.kl, b.sizes, epsilon, &b.rho);
    out.approximate = b.approximate.clone();
    out.rho_scale = b.rho_scale;
    out.rho_spread = b.rho_spread;
    out.split = b.split.clone();
    out.draws = b.draws.as_ref().map(|d| Draws {
        source: d.source.clone(),
        log_z: d.log_z,
        gamma: d.gamma,
        shared_by: d.shared_by,
        ..draws_term(
            d.mean,
            d.sd,
            d.count,
            DRAWS_SHARE * epsilon / d.shared_by.max(1) as f64,
        )
    });
    settle(&mut out);
    out
}
