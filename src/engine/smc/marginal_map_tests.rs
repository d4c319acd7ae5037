use super::*;
use crate::engine::numerics::rng;
use crate::engine::smc::skew_test::{quantile_skewness, quantile_skewness_binned, weighted_select};

/// The sorted-column quantile (the knots' rule) against which selection
/// is checked.
fn sorted_quantile(col: &[(f64, f64)], p: f64) -> f64 {
    let mut c = col.to_vec();
    c.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (mut cum, mut j) = (0.0, 0);
    while j + 1 < c.len() && cum + c[j].1 < p {
        cum += c[j].1;
        j += 1;
    }
    c[j].0
}

#[test]
fn weighted_selection_matches_the_sorted_quantiles() {
    let mut r = rng::stream(8, &[]);
    for n in [1usize, 2, 3, 10, 257, 4000] {
        // Irregular weights: no cumulative sum lands on a probability
        // exactly (there float rounding would decide between two
        // equally valid quantiles).
        let col: Vec<(f64, f64)> = (0..n)
            .map(|_| (rng::normal(&mut r), 0.5 + rng::normal(&mut r).abs()))
            .collect();
        let total: f64 = col.iter().map(|c| c.1).sum();
        let col: Vec<(f64, f64)> = col.iter().map(|&(v, w)| (v, w / total)).collect();
        for p in [0.0, 0.025, 0.3, 0.5, 0.975, 1.0] {
            let mut c = col.clone();
            let i = weighted_select(&mut c, p);
            assert_eq!(c[i].0, sorted_quantile(&col, p), "n {n} p {p}");
            assert!(c[..i].iter().all(|x| x.0 <= c[i].0));
            assert!(c[i + 1..].iter().all(|x| x.0 >= c[i].0));
        }
    }
}

/// Symmetric marginals give ≈ 0, a half-normal 0.42 (its exact value:
/// q = 0.0313, 0.6745, 2.2414), a mirrored one −0.42; the noise of the
/// statistic under a Gaussian at n = 10 000 is ≈ 0.012 (so a bound of
/// 0.05 is 4 sds).
#[test]
fn quantile_skewness_tells_skewed_from_symmetric_marginals() {
    let mut r = rng::stream(6, &[]);
    let (n, d) = (10_000, 4);
    let theta: Vec<f64> = (0..n)
        .flat_map(|_| {
            let (a, b, c) = (
                rng::normal(&mut r),
                rng::normal(&mut r),
                rng::normal(&mut r),
            );
            [a, b.abs(), -3.0 * c.abs(), 2.0 * rng::normal(&mut r).tanh()]
        })
        .collect();
    let s = quantile_skewness(&theta, &vec![1.0; n], d);
    let half = ((2.2414 - 0.6745) - (0.6745 - 0.0313)) / (2.2414 - 0.0313);
    assert!(s[0].abs() < 0.05, "{s:?}");
    assert!((s[1] - half).abs() < 0.03, "{s:?}");
    assert!((s[2] + half).abs() < 0.03, "{s:?}");
    assert!(s[3].abs() < 0.05, "{s:?}");
    // The weights count: a Gaussian weighted by exp(θ) is N(1, 1).
    let w: Vec<f64> = theta.chunks_exact(d).map(|row| row[0].exp()).collect();
    assert!(quantile_skewness(&theta, &w, d)[0].abs() < 0.08);
}

#[test]
fn fold_maps_match_each_folds_own_maps_bit_for_bit() {
    let mut r = rng::stream(9, &[]);
    let (n, d, folds) = (1500, 4, 5);
    // Ties (a coarse column, repeated values), a zero of both signs.
    let theta: Vec<f64> = (0..n * d)
        .map(|i| match i % d {
            0 => (rng::normal(&mut r) * 2.0).round(),
            1 if i % 7 == 0 => -0.0,
            1 if i % 5 == 0 => 0.0,
            _ => rng::normal(&mut r).abs() * (1 + i % 3) as f64,
        })
        .collect();
    let w: Vec<f64> = (0..n).map(|_| rng::normal(&mut r).exp()).collect();
    let fold: Vec<usize> = (0..n).map(|i| (i * 7) % folds).collect();
    let map = [true, false, true, true, false];
    let got = MarginalMaps::of_folds(&theta, &w, d, &fold, &map);
    for g in 0..folds {
        let keep = |i: &usize| fold[*i] != g;
        let rows: Vec<f64> = (0..n)
            .filter(keep)
            .flat_map(|i| theta[i * d..(i + 1) * d].iter().copied())
            .collect();
        let wg: Vec<f64> = (0..n).filter(keep).map(|i| w[i]).collect();
        let coords = if map[g] { (0..d).collect() } else { Vec::new() };
        let want = MarginalMaps::of_coords(&rows, &wg, d, coords);
        assert_eq!(got[g].coords, want.coords);
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&got[g].t), bits(&want.t), "fold {g}");
        assert_eq!(bits(&got[g].slope), bits(&want.slope), "fold {g}");
    }
}

#[test]
fn unmapped_coordinates_pass_unchanged() {
    let mut r = rng::stream(5, &[]);
    let (n, d) = (2000, 3);
    let theta: Vec<f64> = (0..n * d).map(|_| rng::normal(&mut r).abs()).collect();
    let maps = MarginalMaps::of_coords(&theta, &vec![1.0; n], d, vec![1]);
    let all = MarginalMaps::of(&theta, &vec![1.0; n], d);
    let mut row = [0.7, 0.7, 0.7];
    let jac = maps.map_row(&mut row);
    assert_eq!((row[0], row[2]), (0.7, 0.7));
    assert_eq!((row[1], jac), all.forward(1, 0.7));
    assert_eq!(maps.unmap_row(&mut row), jac);
    assert!((row[1] - 0.7).abs() < 1e-12 && row[0] == 0.7);
    assert_eq!(maps.mapped(), &[1]);
}

#[test]
fn maps_are_monotone_invertible_and_gaussianise_a_half_normal() {
    let mut r = rng::stream(4, &[]);
    let (n, d) = (20_000, 2);
    // Coordinate 0 half-normal, 1 Gaussian.
    let theta: Vec<f64> = (0..n)
        .flat_map(|_| [rng::normal(&mut r).abs(), 2.0 + 3.0 * rng::normal(&mut r)])
        .collect();
    let maps = MarginalMaps::of(&theta, &vec![1.0; n], d);
    let mapped = maps.map_rows(&theta);
    for k in 0..d {
        let col: Vec<f64> = mapped.chunks_exact(d).map(|r| r[k]).collect();
        let m = col.iter().sum::<f64>() / n as f64;
        let v = col.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / n as f64;
        let skew = col.iter().map(|x| (x - m).powi(3)).sum::<f64>() / n as f64 / v.powf(1.5);
        assert!(
            m.abs() < 0.03 && (v - 1.0).abs() < 0.05 && skew.abs() < 0.1,
            "{k}: {m} {v} {skew}"
        );
    }
    // Past the half-normal's edge the tail takes the spread's slope
    // (≈ 5/2.73), not the end segment's (≈ 50): θ = −0.5 maps to ≈ −3.4.
    let (z, _) = maps.forward(0, -0.5);
    assert!((-4.0..-3.0).contains(&z), "{z}");
    for &t in &[-3.0, -0.1, 0.0, 0.3, 1.7, 9.0] {
        for k in 0..d {
            let (z, l) = maps.forward(k, t);
            let (back, l2) = maps.inverse(k, z);
            assert!((back - t).abs() < 1e-9 * t.abs().max(1.0), "{k} {t} {back}");
            assert!((l - l2).abs() < 1e-9);
            assert!(maps.forward(k, t + 1e-3).0 > z);
        }
    }
}

/// The fold maps' mapped rows are `map_row`'s bit for bit (ties, both
/// zeros, values past either end knot), and the radix sort orders the
/// pairs as `sort_unstable` does.
#[test]
fn fold_mapped_rows_match_map_row_and_the_sort_matches() {
    let mut r = rng::stream(10, &[]);
    let (n, d, folds) = (1200, 3, 4);
    let theta: Vec<f64> = (0..n * d)
        .map(|i| match i % d {
            0 => (rng::normal(&mut r) * 2.0).round(),
            1 if i % 7 == 0 => -0.0,
            1 if i % 5 == 0 => 0.0,
            _ => rng::normal(&mut r).powi(3) * 1e3,
        })
        .collect();
    let w: Vec<f64> = (0..n).map(|_| rng::normal(&mut r).exp()).collect();
    let fold: Vec<usize> = (0..n).map(|i| (i * 3) % folds).collect();
    let map = [true, false, true, true];
    // The column with a non-finite value is sorted, the others binned
    // (their bins made here or, as the skew test's, handed in).
    let mut theta = theta;
    theta[5 * d + 2] = f64::INFINITY;
    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    let (_, bins) = quantile_skewness_binned(&theta, &w, d, folds, &fold, true);
    assert!(bins[0].is_some() && bins[2].is_none());
    let own = MarginalMaps::of_folds_mapped(&theta, &w, d, &fold, &map, None);
    let shared = MarginalMaps::of_folds_mapped(&theta, &w, d, &fold, &map, Some(bins));
    for (maps, cols) in [own, shared] {
        for g in 0..folds {
            let Some(got) = &cols[g] else {
                assert!(!map[g]);
                continue;
            };
            let mut want: Vec<f64> = (0..n)
                .filter(|&i| fold[i] != g)
                .flat_map(|i| theta[i * d..(i + 1) * d].iter().copied())
                .collect();
            want.chunks_exact_mut(d).for_each(|row| {
                maps[g].map_row(row);
            });
            for k in 0..d {
                let col: Vec<f64> = want.chunks_exact(d).map(|row| row[k]).collect();
                assert_eq!(bits(&got[k]), bits(&col), "fold {g} coordinate {k}");
            }
        }
    }
    for k in 0..d {
        let pairs: Vec<(i64, usize)> = theta
            .chunks_exact(d)
            .enumerate()
            .map(|(i, row)| (total_key(row[k]), i))
            .collect();
        let (mut a, mut b) = (pairs.clone(), pairs);
        a.sort_unstable();
        sort_by_key(&mut b);
        assert_eq!(a, b, "coordinate {k}");
        assert!(
            a.iter()
                .all(|&(key, i)| from_key(key).to_bits() == theta[i * d + k].to_bits())
        );
    }
}

#[test]
fn forward_finds_the_segment_of_a_count_over_every_knot() {
    let mut r = rng::stream(9, &[]);
    let n = 2000;
    // Skewed, tied and constant columns, and knots a few ulps apart.
    let d = 4;
    let theta: Vec<f64> = (0..n * d)
        .map(|i| match i % d {
            0 => rng::normal(&mut r).exp(),
            1 => (rng::normal(&mut r) * 2.0).round(),
            2 => 1e10 + rng::normal(&mut r) * 1e-5,
            _ => 3.0,
        })
        .collect();
    let maps = MarginalMaps::of(&theta, &vec![1.0; n], d);
    let mut probes: Vec<f64> = theta.iter().copied().take(400).collect();
    probes.extend([f64::NAN, -1e300, 1e300, 0.0, -0.0, 3.0, 1e10]);
    for i in 0..d {
        let (knots, slope, log_slope) = maps.knots(i);
        probes.extend_from_slice(knots);
        for &t in &probes {
            if t < knots[0] || t > knots[KNOTS - 1] {
                continue;
            }
            let j = knots[1..KNOTS - 1].iter().filter(|&&x| x <= t).count();
            let want = (z_knot(j) + (t - knots[j]) * slope[j + 1], log_slope[j + 1]);
            let got = maps.forward_at(i, t);
            assert_eq!(
                (got.0.to_bits(), got.1.to_bits()),
                (want.0.to_bits(), want.1.to_bits()),
                "coordinate {i} at {t}"
            );
        }
    }
}
