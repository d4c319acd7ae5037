//! Column moments and standardisation that survive extreme magnitudes: a
//! column near 1e300 squares to infinity and one near 1e-200 squares to zero,
//! so moments are taken on values scaled by the column's largest magnitude.

/// Mean and population sd (ddof = 0) of `values`.
pub fn mean_sd(values: impl Iterator<Item = f64> + Clone) -> (f64, f64) {
    let (mut n, mut scale) = (0usize, 0.0f64);
    for v in values.clone() {
        n += 1;
        scale = scale.max(v.abs());
    }
    if n == 0 || scale == 0.0 || !scale.is_finite() {
        return (0.0, 0.0);
    }
    let nf = n as f64;
    // Ordinary magnitudes: the plain sums (so results do not move by an ulp).
    if (1e-100..=1e100).contains(&scale) {
        let mean = values.clone().sum::<f64>() / nf;
        let var = values.map(|v| (v - mean) * (v - mean)).sum::<f64>() / nf;
        return (mean, var.sqrt());
    }
    let mean_s = values.clone().map(|v| v / scale).sum::<f64>() / nf;
    let var_s = values
        .map(|v| {
            let d = v / scale - mean_s;
            d * d
        })
        .sum::<f64>()
        / nf;
    (mean_s * scale, var_s.sqrt() * scale)
}

/// Largest magnitude of `values` (0 for none).
pub fn max_abs(values: impl Iterator<Item = f64>) -> f64 {
    values.fold(0.0, |m, v| m.max(v.abs()))
}

/// `(v − mean)/sd` without overflow: near ±1.8e308 the difference itself can
/// overflow, then both terms are divided first (same value where both are finite).
#[inline]
pub fn standardize(v: f64, mean: f64, sd: f64) -> f64 {
    let d = v - mean;
    if d.is_finite() {
        d / sd
    } else {
        v / sd - mean / sd
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moments_at_every_scale() {
        for scale in [1e-300, 1e-150, 1.0, 1e150, 1e300, 1e307] {
            let xs: Vec<f64> = [1.0, 2.0, 3.0, 4.0].iter().map(|v| v * scale).collect();
            let (m, s) = mean_sd(xs.iter().copied());
            assert!((m / scale - 2.5).abs() < 1e-14, "{scale}: mean {m}");
            let want = 1.25f64.sqrt();
            assert!((s / scale - want).abs() < 1e-14, "{scale}: sd {s}");
            let z: Vec<f64> = xs.iter().map(|&v| standardize(v, m, s)).collect();
            assert!((z[0] + 1.5 / want).abs() < 1e-12, "{scale}: {z:?}");
            assert!(z.iter().all(|v| v.is_finite()));
        }
    }

    #[test]
    fn standardize_near_the_largest_double() {
        let (m, s) = (-1.5e308, 1e308);
        assert!(standardize(1.5e308, m, s).is_finite());
        assert!((standardize(1.5e308, m, s) - 3.0).abs() < 1e-12);
        assert_eq!(standardize(3.0, 1.0, 2.0), 1.0);
    }
}
