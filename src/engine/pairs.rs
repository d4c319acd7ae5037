//! Many pairs: a uniform sample of positive/negative pairs (an incomplete
//! U-statistic; Clémençon, Colin & Bellet, JMLR 2016; ALGORITHMS.md §14).
//!
//! M = n₊n₋ grows quadratically (adult: 96 M pairs). A `PairSample` holds B
//! pairs drawn uniformly with replacement, once per run (the sampled risk is
//! then a fixed target), grouped by positive row. The Gibbs posterior on it is
//! `∝ prior · exp(−γ R_B)`, `R_B = (1/B) Σ_b (1{s_{i_b} < s_{j_b}} + ½·1{=})`,
//! so each sampled pair's factor is `exp(−(γ/B)·1{…})`. Its sampling error,
//! sd(R_B) ≈ √(R(1 − R)/B), is multiplied by γ: the sample is only a faithful
//! stand-in for all pairs while `γ·sd(R_B) ≪ 1`, i.e. `B ≫ γ² R(1 − R)`
//! (`gamma_noise`). Any engine can use it: EP's sites live on its pairs, and
//! `risk` is the sampled risk a sampler would evaluate.

use rand::RngExt;
use serde::{Deserialize, Serialize};

use crate::engine::numerics::rng;

/// How many pairs to sample, and from which seed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PairSampling {
    pub pairs: usize,
    pub seed: u64,
}

/// B positive/negative pairs (class-local row indices), grouped by positive row.
#[derive(Debug, Clone, PartialEq)]
pub struct PairSample {
    n_pos: usize,
    n_neg: usize,
    /// The negatives of positive i are `neg[offsets[i]..offsets[i + 1]]`, ascending.
    offsets: Vec<usize>,
    neg: Vec<u32>,
}

impl PairSample {
    /// `b` pairs uniformly with replacement from n_pos × n_neg, from stream
    /// (seed, keys) — keys tell apart the samples of one run (e.g. CV folds).
    pub fn draw(n_pos: usize, n_neg: usize, b: usize, seed: u64, keys: &[u64]) -> PairSample {
        assert!(n_pos > 0 && n_neg > 0 && n_neg <= u32::MAX as usize);
        let mut r = rng::stream(seed, &[&[0x9A1F_5A3B], keys].concat());
        let draws: Vec<(u32, u32)> = (0..b)
            .map(|_| {
                (
                    r.random_range(0..n_pos) as u32,
                    r.random_range(0..n_neg) as u32,
                )
            })
            .collect();
        let mut offsets = vec![0usize; n_pos + 1];
        for &(i, _) in &draws {
            offsets[i as usize + 1] += 1;
        }
        for i in 0..n_pos {
            offsets[i + 1] += offsets[i];
        }
        let mut fill = offsets.clone();
        let mut neg = vec![0u32; b];
        for &(i, j) in &draws {
            neg[fill[i as usize]] = j;
            fill[i as usize] += 1;
        }
        for i in 0..n_pos {
            neg[offsets[i]..offsets[i + 1]].sort_unstable();
        }
        PairSample {
            n_pos,
            n_neg,
            offsets,
            neg,
        }
    }

    /// A given set of pairs: `rows[i]` lists the negatives paired with
    /// positive i (repeats allowed; sorted here).
    pub fn from_rows(n_neg: usize, mut rows: Vec<Vec<u32>>) -> PairSample {
        let mut offsets = vec![0];
        let mut neg = Vec::new();
        for r in rows.iter_mut() {
            assert!(r.iter().all(|&j| (j as usize) < n_neg));
            r.sort_unstable();
            neg.extend_from_slice(r);
            offsets.push(neg.len());
        }
        PairSample {
            n_pos: rows.len(),
            n_neg,
            offsets,
            neg,
        }
    }

    /// The sample on the rows it touches only: (the same pairs in the same
    /// order with the rows renumbered, the positives kept, the negatives
    /// kept), both ascending. A row no pair touches adds nothing to a
    /// sampled likelihood; EP at 10⁷ rows × 4·10⁶ pairs keeps about half.
    pub fn compact(&self) -> (PairSample, Vec<usize>, Vec<usize>) {
        let pos: Vec<usize> = (0..self.n_pos)
            .filter(|&i| !self.row(i).is_empty())
            .collect();
        let mut seen = vec![false; self.n_neg];
        for &j in &self.neg {
            seen[j as usize] = true;
        }
        let neg: Vec<usize> = (0..self.n_neg).filter(|&j| seen[j]).collect();
        let mut new_index = vec![0u32; self.n_neg];
        for (t, &j) in neg.iter().enumerate() {
            new_index[j] = t as u32;
        }
        let mut offsets = Vec::with_capacity(pos.len() + 1);
        offsets.push(0);
        for &i in &pos {
            offsets.push(self.offsets[i + 1] - self.offsets[i] + offsets[offsets.len() - 1]);
        }
        let sample = PairSample {
            n_pos: pos.len(),
            n_neg: neg.len(),
            offsets,
            neg: self.neg.iter().map(|&j| new_index[j as usize]).collect(),
        };
        (sample, pos, neg)
    }

    /// B, the number of sampled pairs (repeats counted).
    pub fn len(&self) -> usize {
        self.neg.len()
    }
    pub fn is_empty(&self) -> bool {
        self.neg.is_empty()
    }
    pub fn n_pos(&self) -> usize {
        self.n_pos
    }
    pub fn n_neg(&self) -> usize {
        self.n_neg
    }
    /// The sampled negatives of positive `i`.
    pub fn row(&self, i: usize) -> &[u32] {
        &self.neg[self.offsets[i]..self.offsets[i + 1]]
    }
    /// The negatives of pairs `a..b` (pairs are ordered by positive row).
    pub fn row_range(&self, a: usize, b: usize) -> &[u32] {
        &self.neg[a..b]
    }
    /// The index of positive `i`'s first pair.
    pub fn row_start(&self, i: usize) -> usize {
        self.offsets[i]
    }

    /// The sampled risk of scores split by class: the share of sampled pairs
    /// ranked wrongly, ties counting ½.
    pub fn risk(&self, pos: &[f64], neg: &[f64]) -> f64 {
        assert_eq!((pos.len(), neg.len()), (self.n_pos, self.n_neg));
        let mut wrong = 0.0;
        for (i, &s) in pos.iter().enumerate() {
            for &j in self.row(i) {
                let t = neg[j as usize];
                wrong += if s < t {
                    1.0
                } else if s == t {
                    0.5
                } else {
                    0.0
                };
            }
        }
        wrong / self.len().max(1) as f64
    }

    /// γ times the sampling sd of R_B at risk r, √(r(1 − r)/B)·γ: the scale of
    /// the noise the sample adds to the Gibbs exponent (keep it well below 1).
    pub fn gamma_noise(&self, gamma: f64, r: f64) -> f64 {
        gamma * (r * (1.0 - r) / self.len().max(1) as f64).sqrt()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::metrics::auc_risk;

    /// Every pair is as likely as any other: counts over a small grid of pairs
    /// are within 5 sd of B/M; the same seed gives the same sample.
    #[test]
    fn pairs_are_uniform_and_reproducible() {
        let (np, nn, b) = (3, 4, 120_000);
        let s = PairSample::draw(np, nn, b, 9, &[1]);
        assert_eq!(s.len(), b);
        let mut count = vec![0usize; np * nn];
        for i in 0..np {
            assert!(s.row(i).windows(2).all(|w| w[0] <= w[1]));
            for &j in s.row(i) {
                count[i * nn + j as usize] += 1;
            }
        }
        let p = 1.0 / (np * nn) as f64;
        let sd = (b as f64 * p * (1.0 - p)).sqrt();
        for c in count {
            assert!((c as f64 - b as f64 * p).abs() < 5.0 * sd, "{c}");
        }
        assert_eq!(s, PairSample::draw(np, nn, b, 9, &[1]));
        assert_ne!(s, PairSample::draw(np, nn, b, 9, &[2]));
    }

    /// R_B is unbiased for the full-pairs risk: on 200 × 300 rows with B = 60k
    /// it is within 5 of its sds √(R(1 − R)/B) of the exact O(n log n) risk.
    #[test]
    fn sampled_risk_estimates_the_full_risk() {
        let mut r = rng::stream(3, &[]);
        let pos: Vec<f64> = (0..200).map(|_| rng::normal(&mut r) + 0.5).collect();
        let neg: Vec<f64> = (0..300).map(|_| rng::normal(&mut r)).collect();
        let scores: Vec<f64> = pos.iter().chain(&neg).copied().collect();
        let y: Vec<bool> = (0..500).map(|i| i < 200).collect();
        let exact = auc_risk(&scores, &y);
        let s = PairSample::draw(200, 300, 60_000, 4, &[]);
        let rb = s.risk(&pos, &neg);
        let sd = (exact * (1.0 - exact) / 60_000.0).sqrt();
        assert!((rb - exact).abs() < 5.0 * sd, "{rb} vs {exact}");
        assert!((s.gamma_noise(500.0, exact) - 500.0 * sd).abs() < 1e-12);
    }
}
