//! Risks of blocks of linear scores: `S = X Θᵀ` through `packed_gemm` (X packed
//! once), then the AUC risk kernel of `fast_risk` on each column.
//!
//! **f32 products.** Rounding the products to f32 is safe for the AUC risk
//! when it cannot create or break a tie that the data make: two rows with
//! equal features get bit-equal scores on every path (each score is the same
//! FMA chain over the same values), and, provided no column has two distinct
//! values that round to the same f32 (`f32_keeps_columns_apart`), distinct
//! rows stay distinct. What remains is the comparison of two different rows
//! whose scores differ by less than the rounding error, ≈ √d·2⁻²⁴ of the
//! score's terms: for continuous θ a pair lands there with probability
//! ~1e-6, so a risk moves by a few pairs in M at most, and γ·ΔR ≈ γ/M per
//! flipped pair (DNA at γ = 400: 4e-4) is far below Monte-Carlo error. The
//! tests measure it against f64 on data with many ties.
//!
//! **Sparse rows.** A ranking does not change when every row is shifted by the
//! same vector, so on data whose rows mostly repeat their columns' most common
//! values (ordinal codes that are mostly zero, one-hot and binary columns) the
//! products use `X − 1·modeᵀ` and store only its non-zero entries
//! (`sparse_rows`) when few entries differ (a survey export, adult: 7–11×
//! fewer multiply-adds). The f32 rule above is then checked on the shifted
//! values.

use nalgebra::DMatrix;
use serde::{Deserialize, Serialize};

use crate::engine::numerics::fast_risk::{RiskScratch, Score, risk_from_twice};
use crate::engine::numerics::packed_gemm::PackedRows;
use crate::engine::numerics::sparse_rows::SparseRows;

/// The sparse products are used when at most this share of X's entries differ
/// from their column's most common value. A stored entry costs about as much
/// as 4 entries of the packed dense product (its B values are loaded per
/// entry, not kept in registers across a panel of rows): measured by `perf`
/// on SMC runs, DNA (share 0.25) took the same time both ways and a survey
/// export (share 0.14) spent 1.6× less in the products.
const SPARSE_MAX_SHARE: f64 = 0.2;

/// Precision of the score products.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScorePrecision {
    /// f32 where the data allow it (see the module notes), else f64.
    #[default]
    Auto,
    /// Always f64.
    F64,
}

/// The training rows, packed for the products.
#[derive(Debug, Clone)]
enum Rows {
    F32(PackedRows<f32>),
    F64(PackedRows<f64>),
    Sparse32(SparseRows<f32>),
    Sparse64(SparseRows<f64>),
}

/// `S = X Θᵀ` and the risks, for rows ordered positives first.
#[derive(Debug, Clone)]
pub struct LinearScores {
    rows: Rows,
    n_pos: usize,
    /// Why f64 was used although f32 was allowed (None: f32, or f64 asked for).
    pub f64_reason: Option<String>,
}

/// Buffers of one thread.
#[derive(Debug, Clone)]
pub struct ScoreScratch {
    s32: Vec<f32>,
    s64: Vec<f64>,
    b32: Vec<f32>,
    b64: Vec<f64>,
    risk: RiskScratch,
}

impl LinearScores {
    /// `x`: the training rows, positives (the first `n_pos`) then negatives.
    pub fn new(x: &DMatrix<f64>, n_pos: usize, precision: ScorePrecision) -> LinearScores {
        let (n, d) = x.shape();
        let modes: Vec<f64> = x
            .column_iter()
            .map(|c| most_common(c.iter().copied()))
            .collect();
        let differing = x
            .column_iter()
            .zip(&modes)
            .map(|(c, &m)| c.iter().filter(|&&v| v != m).count())
            .sum::<usize>();
        let sparse = (differing as f64) <= SPARSE_MAX_SHARE * (n * d) as f64;
        let f32_check = |shift: &[f64]| match precision {
            ScorePrecision::F64 => Err(String::new()),
            ScorePrecision::Auto => shift_keeps_columns_apart(x, shift, |v| v as f32 as f64),
        };
        let (rows, f64_reason) = if sparse && shift_keeps_columns_apart(x, &modes, |v| v).is_ok() {
            let at = |i: usize, k: usize| x[(i, k)] - modes[k];
            match f32_check(&modes) {
                Ok(()) => (Rows::Sparse32(SparseRows::new(n, d, at)), None),
                Err(why) => (Rows::Sparse64(SparseRows::new(n, d, at)), Some(why)),
            }
        } else {
            let at = |i: usize, k: usize| x[(i, k)];
            match f32_check(&vec![0.0; d]) {
                Ok(()) => (Rows::F32(PackedRows::new(n, d, at)), None),
                Err(why) => (Rows::F64(PackedRows::new(n, d, at)), Some(why)),
            }
        };
        LinearScores {
            rows,
            n_pos,
            f64_reason: f64_reason.filter(|why| !why.is_empty()),
        }
    }

    pub fn precision_name(&self) -> &'static str {
        match self.rows {
            Rows::F32(_) | Rows::Sparse32(_) => "f32",
            Rows::F64(_) | Rows::Sparse64(_) => "f64",
        }
    }

    /// Whether the products store only the entries that differ from their
    /// column's most common value.
    pub fn sparse(&self) -> bool {
        matches!(self.rows, Rows::Sparse32(_) | Rows::Sparse64(_))
    }

    fn n(&self) -> usize {
        match &self.rows {
            Rows::F32(r) => r.rows(),
            Rows::F64(r) => r.rows(),
            Rows::Sparse32(r) => r.rows(),
            Rows::Sparse64(r) => r.rows(),
        }
    }

    pub fn scratch(&self) -> ScoreScratch {
        ScoreScratch {
            s32: Vec::new(),
            s64: Vec::new(),
            b32: Vec::new(),
            b64: Vec::new(),
            risk: RiskScratch::new(self.n_pos, self.n() - self.n_pos),
        }
    }

    /// Risks of the rows of `thetas` (row-major, `out.len()` × d) into `out`.
    pub fn risks(&self, thetas: &[f64], out: &mut [f64], scratch: &mut ScoreScratch) {
        let m = out.len();
        let n = self.n();
        let ScoreScratch {
            s32,
            s64,
            b32,
            b64,
            risk,
        } = scratch;
        let n_pos = self.n_pos;
        match &self.rows {
            Rows::F32(x) => risks_with(s32, b32, (n, m, n_pos), risk, out, |s, b| {
                x.mul_bt(thetas, m, s, n, b)
            }),
            Rows::F64(x) => risks_with(s64, b64, (n, m, n_pos), risk, out, |s, b| {
                x.mul_bt(thetas, m, s, n, b)
            }),
            Rows::Sparse32(x) => risks_with(s32, b32, (n, m, n_pos), risk, out, |s, b| {
                x.mul_bt(thetas, m, s, n, b)
            }),
            Rows::Sparse64(x) => risks_with(s64, b64, (n, m, n_pos), risk, out, |s, b| {
                x.mul_bt(thetas, m, s, n, b)
            }),
        }
    }
}

/// The n × m scores by `products` (into the score buffer, with B's packing
/// buffer), then each column's risk.
fn risks_with<T: Score + Default>(
    scores: &mut Vec<T>,
    packed_b: &mut Vec<T>,
    (n, m, n_pos): (usize, usize, usize),
    risk: &mut RiskScratch,
    out: &mut [f64],
    products: impl FnOnce(&mut [T], &mut Vec<T>),
) {
    scores.resize(n * m, T::default());
    products(scores, packed_b);
    column_risks(scores, n, n_pos, risk, out);
}

fn column_risks<T: Score>(
    scores: &[T],
    n: usize,
    n_pos: usize,
    risk: &mut RiskScratch,
    out: &mut [f64],
) {
    let pairs = (n_pos * (n - n_pos)) as u64;
    for (j, o) in out.iter_mut().enumerate() {
        let (p, q) = scores[j * n..(j + 1) * n].split_at(n_pos);
        *o = risk_from_twice(risk.twice_concordant(p, q), pairs);
    }
}

/// Ok when rounding `x` to f32 keeps it finite and keeps every column's distinct
/// values distinct; else why not.
pub fn f32_keeps_columns_apart(x: &DMatrix<f64>) -> Result<(), String> {
    shift_keeps_columns_apart(x, &vec![0.0; x.ncols()], |v| v as f32 as f64)
}

/// Ok when `round(x_ik − shift_k)` is finite and keeps every column's distinct
/// values distinct (so the products neither create nor break a tie the data
/// make); else why not.
fn shift_keeps_columns_apart(
    x: &DMatrix<f64>,
    shift: &[f64],
    round: impl Fn(f64) -> f64,
) -> Result<(), String> {
    let mut col = Vec::with_capacity(x.nrows());
    for (k, c) in x.column_iter().enumerate() {
        col.clear();
        col.extend(c.iter().copied());
        col.sort_unstable_by(f64::total_cmp);
        col.dedup();
        let to = |v: f64| round(v - shift[k]);
        for w in col.windows(2) {
            if to(w[0]) == to(w[1]) {
                return Err(format!(
                    "column {} has values {} and {} that are equal in f32",
                    k + 1,
                    w[0],
                    w[1]
                ));
            }
        }
        if col.iter().any(|&v| !to(v).is_finite()) {
            return Err(format!("column {} has a value beyond the f32 range", k + 1));
        }
    }
    Ok(())
}

/// The most common value (the smallest of equally common ones).
fn most_common(values: impl Iterator<Item = f64>) -> f64 {
    let mut v: Vec<f64> = values.collect();
    v.sort_unstable_by(f64::total_cmp);
    let (mut best, mut best_count) = (0.0, 0);
    for run in v.chunk_by(|a, b| a == b) {
        if run.len() > best_count {
            (best, best_count) = (run[0], run.len());
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::numerics::rng;

    fn standardise(x: &mut DMatrix<f64>) {
        let n = x.nrows() as f64;
        for mut c in x.column_iter_mut() {
            let mean = c.mean();
            let sd = (c.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n)
                .sqrt()
                .max(1e-12);
            c.iter_mut().for_each(|v| *v = (*v - mean) / sd);
        }
    }

    #[test]
    fn close_values_force_f64() {
        let x = DMatrix::from_row_slice(3, 2, &[0.0, 1.0, 1.0, 1.0 + 1e-12, 2.0, 3.0]);
        let err = f32_keeps_columns_apart(&x).unwrap_err();
        assert!(err.contains("column 2"), "{err}");
        let s = LinearScores::new(&x, 1, ScorePrecision::Auto);
        assert_eq!(s.precision_name(), "f64");
        assert!(s.f64_reason.is_some());
        let x = DMatrix::from_row_slice(2, 1, &[0.0, 1e39]);
        assert!(f32_keeps_columns_apart(&x).is_err());
        let x = DMatrix::from_row_slice(3, 1, &[0.5, 0.5, -1.0]);
        assert!(f32_keeps_columns_apart(&x).is_ok());
    }

    /// On data full of ties (binary and 3-level features, duplicated rows), f32
    /// and f64 products give the same risk for almost every θ: the tied rows
    /// tie in both, and a near-tie flips at most a pair or two.
    #[test]
    fn f32_risks_match_f64_on_tied_data() {
        let mut r = rng::stream(21, &[]);
        let (n, d, n_pos) = (600, 40, 150);
        let mut x = DMatrix::from_fn(n, d, |_, k| {
            let u = rng::normal(&mut r);
            if k % 3 == 0 {
                (u > 0.3) as u8 as f64
            } else {
                (u * 1.5).round().clamp(-1.0, 1.0)
            }
        });
        // Duplicated rows across and within the classes.
        for i in 0..60 {
            let src = x.row(i * 7 % n).into_owned();
            x.set_row(n - 1 - i * 5, &src);
        }
        // Standardise like the data layer (so values are not small integers).
        standardise(&mut x);
        let f32s = LinearScores::new(&x, n_pos, ScorePrecision::Auto);
        let f64s = LinearScores::new(&x, n_pos, ScorePrecision::F64);
        assert_eq!(f32s.precision_name(), "f32");
        let m = 400;
        let thetas: Vec<f64> = (0..m * d).map(|_| rng::normal(&mut r)).collect();
        let (mut a, mut b) = (vec![0.0; m], vec![0.0; m]);
        f32s.risks(&thetas, &mut a, &mut f32s.scratch());
        f64s.risks(&thetas, &mut b, &mut f64s.scratch());
        let pairs = (n_pos * (n - n_pos)) as f64;
        let flipped: Vec<f64> = a
            .iter()
            .zip(&b)
            .map(|(u, v)| ((u - v) * pairs).abs())
            .collect();
        let differ = flipped.iter().filter(|&&f| f > 0.0).count();
        let most = flipped.iter().copied().fold(0.0, f64::max);
        eprintln!("f32 vs f64: {differ} of {m} risks differ, by at most {most} pairs");
        // Expected ~1e-6 of 90 000 pairs per θ flips: a few risks, ≤ 2 pairs each.
        assert!(differ <= 8 && most <= 2.0, "{differ} {most}");
    }

    /// Skewed ordinal codes (mostly zero, then standardised): the products go
    /// sparse, and the risks equal the brute-force count over all pairs of the
    /// f64 scores `x·θ` (up to the near-ties of the f32 rule: same tolerance
    /// as above; f64 must agree up to one pair on one θ at most, since the
    /// shift by the modes only moves rounding in the last bits).
    #[test]
    fn sparse_products_rank_like_brute_force() {
        let mut r = rng::stream(22, &[]);
        let (n, d, n_pos) = (500, 30, 40);
        let mut x = DMatrix::from_fn(n, d, |_, k| {
            let u = rng::normal(&mut r);
            if k == 0 {
                u
            } else if u < 1.2 {
                0.0
            } else {
                ((u - 1.2) * 4.0).floor().min(9.0) + 1.0
            }
        });
        for i in 0..50 {
            let src = x.row(i * 3 % n).into_owned();
            x.set_row(n - 1 - i * 7, &src);
        }
        standardise(&mut x);
        let m = 200;
        let thetas: Vec<f64> = (0..m * d).map(|_| rng::normal(&mut r)).collect();
        let brute: Vec<f64> = (0..m)
            .map(|j| brute_risk(&x, n_pos, &thetas[j * d..(j + 1) * d]))
            .collect();
        let pairs = (n_pos * (n - n_pos)) as f64;
        for (precision, max_differ) in [(ScorePrecision::Auto, 8), (ScorePrecision::F64, 1)] {
            let fast = LinearScores::new(&x, n_pos, precision);
            assert!(fast.sparse(), "mostly-zero codes take the sparse products");
            let mut got = vec![0.0; m];
            fast.risks(&thetas, &mut got, &mut fast.scratch());
            let flipped: Vec<f64> = got
                .iter()
                .zip(&brute)
                .map(|(u, v)| ((u - v) * pairs).abs())
                .collect();
            let differ = flipped.iter().filter(|&&f| f > 0.0).count();
            let most = flipped.iter().copied().fold(0.0, f64::max);
            assert!(
                differ <= max_differ && most <= 2.0,
                "{precision:?}: {differ} {most}"
            );
        }
        let dense = DMatrix::from_fn(n, d, |_, _| rng::normal(&mut r));
        assert!(!LinearScores::new(&dense, n_pos, ScorePrecision::Auto).sparse());
    }

    /// d ≥ n with a rare class (the count places the positives): small
    /// integer codes and integer θ make every score exact in f32 and f64, so
    /// the risks must equal the brute-force count over all pairs exactly,
    /// ties included.
    #[test]
    fn wide_rare_class_codes_match_brute_force_exactly() {
        let mut r = rng::stream(23, &[]);
        let (n, d, n_pos) = (40, 90, 5);
        let x = DMatrix::from_fn(n, d, |_, _| {
            let u = rng::normal(&mut r);
            if u < 0.8 {
                0.0
            } else {
                ((u - 0.8) * 3.0).floor().min(4.0) + 1.0
            }
        });
        let m = 50;
        let thetas: Vec<f64> = (0..m * d)
            .map(|_| (rng::normal(&mut r) * 2.0).round())
            .collect();
        for precision in [ScorePrecision::Auto, ScorePrecision::F64] {
            let fast = LinearScores::new(&x, n_pos, precision);
            let mut got = vec![0.0; m];
            fast.risks(&thetas, &mut got, &mut fast.scratch());
            for j in 0..m {
                let want = brute_risk(&x, n_pos, &thetas[j * d..(j + 1) * d]);
                assert_eq!(got[j], want, "{precision:?} θ {j}");
            }
        }
    }

    /// R_n(θ) over all pairs of scores in f64 (positives are the first
    /// `n_pos` rows; a tie counts half).
    fn brute_risk(x: &DMatrix<f64>, n_pos: usize, theta: &[f64]) -> f64 {
        let (n, d) = x.shape();
        let s: Vec<f64> = (0..n)
            .map(|i| (0..d).map(|k| x[(i, k)] * theta[k]).sum())
            .collect();
        let mut twice = 0u64;
        for p in 0..n_pos {
            for q in n_pos..n {
                twice += 2 * (s[p] > s[q]) as u64 + (s[p] == s[q]) as u64;
            }
        }
        risk_from_twice(twice, (n_pos * (n - n_pos)) as u64)
    }
}
