//! The two-sample PAC-Bayes-kl certificate (docs/certificate.md; ALGORITHMS.md §9).
//!
//! Conditioned on the labels, R_n(θ) is a two-sample U-statistic with a [0, 1]
//! kernel (ties ½, as the risk counts them); Hoeffding's decomposition writes it
//! as an average of means of m = min(n₊, n₋) independent terms, and Maurer's
//! `E exp(m·kl(W‖R)) ≤ ξ(m)` carries over by convexity. So, with probability
//! ≥ 1 − ε, for every ρ at once:
//! `kl(E_ρ R_n ‖ E_ρ R) ≤ (KL(ρ‖π) + ln(ξ(m)/ε)) / m`.
//! ξ(m) = Σ_k C(m,k) (k/m)^k (1 − k/m)^(m−k) is computed exactly (√m ≤ ξ(m) ≤ 2√m).

use statrs::function::gamma::ln_gamma;

/// kl(p‖q) of two Bernoulli means (∞ where q leaves (0, 1) and p does not follow).
pub fn kl_bernoulli(p: f64, q: f64) -> f64 {
    let t = |a: f64, b: f64| {
        if a <= 0.0 {
            0.0
        } else if b <= 0.0 {
            f64::INFINITY
        } else {
            a * (a / b).ln()
        }
    };
    t(p, q) + t(1.0 - p, 1.0 - q)
}

/// sup{q ∈ [p, 1] : kl(p‖q) ≤ b} by plain bisection (the slow, obvious one).
pub fn kl_inverse_bisection(p: f64, b: f64) -> f64 {
    let p = p.clamp(0.0, 1.0);
    if kl_bernoulli(p, 1.0 - 1e-15) <= b {
        return 1.0;
    }
    let (mut lo, mut hi) = (p, 1.0);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if kl_bernoulli(p, mid) > b {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}

/// The same inverse by safeguarded Newton steps on q ↦ kl(p‖q) − b (increasing
/// and convex on [p, 1)): a handful of steps instead of a hundred bisections,
/// and always returns a q with kl(p‖q) ≥ b (a valid upper value).
pub fn kl_inverse_upper(p: f64, b: f64) -> f64 {
    let p = p.clamp(0.0, 1.0);
    if b.is_nan() || b <= 0.0 {
        return p;
    }
    if p >= 1.0 || kl_bernoulli(p, 1.0 - 1e-15) <= b {
        return 1.0;
    }
    // Start right of the root (Pinsker's q ≤ p + √(b/2) is below it; the
    // quadratic bound is a root of kl ≥ (q − p)²/(2q)): convexity then makes
    // Newton's iterates decrease monotonically onto the root from above.
    let mut q = (p + b + (b * b + 2.0 * p * b).sqrt()).min(1.0 - 1e-15);
    if kl_bernoulli(p, q) < b {
        return kl_inverse_bisection(p, b);
    }
    for _ in 0..100 {
        let f = kl_bernoulli(p, q) - b;
        let df = (q - p) / (q * (1.0 - q));
        if f <= 1e-15 || df <= 0.0 {
            break;
        }
        let next = q - f / df;
        if !(next > p && next < q) {
            break;
        }
        q = next;
    }
    q
}

/// ln ξ(m): Maurer's constant, E exp(m·kl(W‖R)) ≤ ξ(m) for a mean W of m
/// independent [0, 1] terms (exact sum; 2√m above 10⁶ terms, its upper bound).
pub fn ln_xi(m: usize) -> f64 {
    if m == 0 {
        return 0.0;
    }
    if m > 1_000_000 {
        return (2.0 * (m as f64).sqrt()).ln();
    }
    // O(m) logs and ln Γ per call (≈ 40 ms at 3.75·10⁵ terms), and a
    // certificate asks it for the same m dozens of times: remembered.
    static SEEN: std::sync::Mutex<Vec<(usize, f64)>> = std::sync::Mutex::new(Vec::new());
    let hit = SEEN
        .lock()
        .ok()
        .and_then(|s| s.iter().find(|e| e.0 == m).map(|e| e.1));
    if let Some(v) = hit {
        return v;
    }
    let v = ln_xi_sum(m);
    if let Ok(mut s) = SEEN.lock() {
        if s.len() >= 64 {
            s.remove(0);
        }
        s.push((m, v));
    }
    v
}

/// ln ξ(m) by its exact sum (log-sum-exp of the m + 1 terms).
fn ln_xi_sum(m: usize) -> f64 {
    let mf = m as f64;
    let lf = ln_gamma(mf + 1.0);
    let terms: Vec<f64> = (0..=m)
        .map(|k| {
            let kf = k as f64;
            let mut t = lf - ln_gamma(kf + 1.0) - ln_gamma(mf - kf + 1.0);
            if k > 0 {
                t += kf * (kf / mf).ln();
            }
            if k < m {
                t += (mf - kf) * (1.0 - kf / mf).ln();
            }
            t
        })
        .collect();
    let top = terms.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    top + terms.iter().map(|t| (t - top).exp()).sum::<f64>().ln()
}

/// The certificate: the upper value of E_ρ R given E_ρ R_n, KL(ρ‖π), m and ε.
pub fn pac_bayes_kl(empirical: f64, kl: f64, m: usize, epsilon: f64) -> f64 {
    let mf = m.max(1) as f64;
    kl_inverse_upper(empirical, (kl.max(0.0) + ln_xi(m) - epsilon.ln()) / mf)
}

/// The Chernoff-kl test-set bound: R ≤ kl⁻¹(R̂, ln(1/ε)/m) for a fixed score
/// (or a fixed ρ) evaluated on m independent blocks.
pub fn test_set_kl(empirical: f64, m: usize, epsilon: f64) -> f64 {
    kl_inverse_upper(empirical, -epsilon.ln() / m.max(1) as f64)
}

/// The smallest m at which the certificate of the same E_ρ R_n and KL would
/// fall below `target` (None when no m does: E_ρ R_n ≥ target). Doubling then
/// bisection; the bound decreases in m.
pub fn m_needed(empirical: f64, kl: f64, epsilon: f64, target: f64) -> Option<usize> {
    if empirical >= target {
        return None;
    }
    let below = |m: usize| pac_bayes_kl(empirical, kl, m, epsilon) < target;
    let mut hi = 1usize;
    while !below(hi) {
        hi *= 2;
        if hi > 1 << 40 {
            return None;
        }
    }
    let mut lo = hi / 2;
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if below(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Some(hi)
}

/// An upper confidence value for a mean of `s` draws in [0, 1] with sample
/// variance `var` (Maurer & Pontil 2009's empirical Bernstein bound, at δ).
pub fn empirical_bernstein_upper(mean: f64, var: f64, s: f64, delta: f64) -> f64 {
    if s < 2.0 {
        return 1.0;
    }
    let l = (2.0 / delta).ln();
    (mean + (2.0 * var.max(0.0) * l / s).sqrt() + 7.0 * l / (3.0 * (s - 1.0))).min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newton_inverse_equals_bisection() {
        for &p in &[0.0, 1e-6, 0.01, 0.13, 0.3, 0.5, 0.8, 0.99] {
            for &b in &[1e-8, 1e-4, 0.01, 0.05, 0.2, 1.0, 5.0] {
                let (q, r) = (kl_inverse_upper(p, b), kl_inverse_bisection(p, b));
                assert!((q - r).abs() < 1e-9, "{p} {b}: newton {q}, bisection {r}");
                assert!(q >= p && (q >= 1.0 || kl_bernoulli(p, q) >= b - 1e-12));
            }
        }
    }

    /// ξ(1) = 2, ξ(2) = 2.5 by hand; √m ≤ ξ(m) ≤ 2√m (Maurer 2004, m ≥ 8).
    #[test]
    fn maurer_constant() {
        assert!((ln_xi(1) - 2f64.ln()).abs() < 1e-12);
        assert!((ln_xi(2) - 2.5f64.ln()).abs() < 1e-12);
        for m in [8, 50, 133, 1000, 100_000] {
            let x = ln_xi(m).exp();
            let r = (m as f64).sqrt();
            assert!(x >= r && x <= 2.0 * r, "{m}: {x}");
        }
    }

    /// At KL = 0 the certificate is the test-set Chernoff-kl bound at ε/ξ(m)
    /// (the price of holding for every ρ at once), and above it at ε.
    #[test]
    fn kl_zero_is_the_test_set_bound() {
        for &(r, m) in &[(0.1, 50), (0.2, 133), (0.02, 580)] {
            let pb = pac_bayes_kl(r, 0.0, m, 0.05);
            let ts = test_set_kl(r, m, 0.05 / ln_xi(m).exp());
            assert!((pb - ts).abs() < 1e-12, "{pb} vs {ts}");
            assert!(pb > test_set_kl(r, m, 0.05));
        }
    }

    #[test]
    fn m_needed_is_the_edge() {
        let m = m_needed(0.2, 20.0, 0.05, 0.5).unwrap();
        assert!(pac_bayes_kl(0.2, 20.0, m, 0.05) < 0.5);
        assert!(pac_bayes_kl(0.2, 20.0, m - 1, 0.05) >= 0.5);
        assert_eq!(m_needed(0.55, 1.0, 0.05, 0.5), None);
    }
}
