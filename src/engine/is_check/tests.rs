//! The importance-sampling check against an exact posterior (d = 2) and its
//! determinism.

use nalgebra::DMatrix;

use super::*;
use crate::engine::metrics::auc_risk;

/// A d = 2 problem whose Gibbs posterior is exact by quadrature: with the
/// isotropic prior, θ = r·(cos φ, sin φ) with r Rayleigh (E r = √(πϑ/2),
/// E r² = 2ϑ) independent of φ, whose density is ∝ exp(−γ R_n(φ)).
fn problem() -> Problem {
    problem_of(80, 40.0)
}

fn problem_of(n: usize, gamma: f64) -> Problem {
    let mut r = stream(11, &[1]);
    let x = DMatrix::from_fn(n, 2, |_, _| normal(&mut r));
    let y: Vec<bool> = (0..n)
        .map(|i| x[(i, 0)] - 0.5 * x[(i, 1)] + 0.8 * normal(&mut r) > 0.0)
        .collect();
    Problem::new(
        vec!["a".into(), "b".into()],
        x,
        y,
        gamma,
        Prior::Gaussian { var: 1.0 },
    )
    .unwrap()
}

fn exact_moments(pb: &Problem) -> (Vec<f64>, Vec<f64>, DMatrix<f64>) {
    let k = 100_000;
    let (mut z, mut e) = (0.0, [0.0; 2]);
    let mut e2 = [[0.0; 2]; 2];
    for i in 0..k {
        let phi = 2.0 * std::f64::consts::PI * (i as f64 + 0.5) / k as f64;
        let u = [phi.cos(), phi.sin()];
        let s: Vec<f64> = (0..pb.n())
            .map(|j| pb.x[(j, 0)] * u[0] + pb.x[(j, 1)] * u[1])
            .collect();
        let w = (-pb.gamma * auc_risk(&s, &pb.y)).exp();
        z += w;
        for a in 0..2 {
            e[a] += w * u[a];
            for b in 0..2 {
                e2[a][b] += w * u[a] * u[b];
            }
        }
    }
    let er = (std::f64::consts::PI / 2.0).sqrt();
    let mean: Vec<f64> = e.iter().map(|v| er * v / z).collect();
    let cov = DMatrix::from_fn(2, 2, |a, b| 2.0 * e2[a][b] / z - mean[a] * mean[b]);
    let sd = (0..2).map(|a| cov[(a, a)].sqrt()).collect();
    (mean, sd, cov)
}

/// A deliberately poor Gaussian (means shrunk 30%, covariance 1.5×) is
/// corrected to the exact moments: within 0.05 sd (Monte Carlo error at
/// ESS ≥ 5000 is ≈ 0.015 sd), with k̂ below the threshold.
#[test]
fn corrects_a_poor_gaussian_to_the_exact_posterior() {
    let pb = problem();
    let (mean, sd, cov) = exact_moments(&pb);
    let q_mean: Vec<f64> = mean.iter().map(|m| 0.7 * m).collect();
    let s = IsSettings {
        draws: 20_000,
        seed: 3,
        ..IsSettings::default()
    };
    let c = is_check(&pb, &pb.prior, pb.gamma, &q_mean, &(&cov * 1.5), &s).unwrap();
    assert!(c.trusted && c.khat < 0.7, "k̂ = {}", c.khat);
    assert!(c.ess > 5000.0, "ESS {}", c.ess);
    for k in 0..2 {
        assert!(
            (c.mean[k] - mean[k]).abs() < 0.05 * sd[k],
            "mean {k}: {} vs {}",
            c.mean[k],
            mean[k]
        );
        assert!(
            (c.sd[k] / sd[k] - 1.0).abs() < 0.05,
            "sd {k}: {} vs {}",
            c.sd[k],
            sd[k]
        );
    }
    // The uncorrected q was off by 0.3 |m|/sd: the shift reports it.
    assert!(c.max_abs_shift_sd > 0.2);
    // The stated Monte Carlo error covers the distance to the exact means
    // (5 standard errors: a 1-in-10⁶ miss per coefficient).
    assert!(c.shift_se > 0.0 && c.shift_se < 0.02, "{}", c.shift_se);
    for (k, exact) in mean.iter().enumerate() {
        let off = (c.mean[k] - exact).abs() / c.sd[k];
        assert!(
            off < 5.0 * c.shift_se,
            "mean {k}: {off} sd vs ±{}",
            c.shift_se
        );
    }
    assert!(c.log_z_se > 0.0 && c.log_z_se < 0.05, "{}", c.log_z_se);
}

/// Z_γ does not depend on ϑ (§2); the prior mixture proposal gives the same
/// log Z within Monte Carlo error.
#[test]
fn log_z_is_consistent() {
    let pb = problem();
    let (mean, _, cov) = exact_moments(&pb);
    let base = IsSettings {
        draws: 20_000,
        ..IsSettings::default()
    };
    let a = is_check(&pb, &pb.prior, pb.gamma, &mean, &cov, &base).unwrap();
    let mixed = IsSettings {
        prior_mix: 0.1,
        seed: 5,
        ..base
    };
    let b = is_check(&pb, &pb.prior, pb.gamma, &mean, &cov, &mixed).unwrap();
    assert!(
        (a.log_z - b.log_z).abs() < 0.05,
        "{} vs {}",
        a.log_z,
        b.log_z
    );
    let wide = Prior::Gaussian { var: 9.0 };
    let scaled = cov.map(|v| 9.0 * v);
    let m3: Vec<f64> = mean.iter().map(|m| 3.0 * m).collect();
    let c = is_check(&pb, &wide, pb.gamma, &m3, &scaled, &base).unwrap();
    assert!(
        (a.log_z - c.log_z).abs() < 1e-9,
        "{} vs {}",
        a.log_z,
        c.log_z
    );
}

#[test]
fn same_answer_for_any_thread_count() {
    let pb = problem();
    let (mean, _, cov) = exact_moments(&pb);
    let s = IsSettings {
        draws: 3000,
        ..IsSettings::default()
    };
    let run = |t: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(t)
            .build()
            .unwrap();
        pool.install(|| is_check(&pb, &pb.prior, pb.gamma, &mean, &cov, &s).unwrap())
    };
    let (a, b) = (run(1), run(2));
    assert_eq!(a.khat.to_bits(), b.khat.to_bits());
    assert_eq!(a.mean, b.mean);
    assert_eq!(a.log_z.to_bits(), b.log_z.to_bits());
}

/// The d = 2 problem embedded in d = 5 (X = X₂ Aᵀ, A 5 × 2 orthonormal): the
/// Gibbs posterior of θ is the d = 2 one along A and the prior elsewhere. A
/// factored ρ = N(A·0.7m, I + A(1.5V − I)Aᵀ) — EP's reduced form's shape — is
/// checked in the data's row space and corrected to the exact moments of θ
/// (0.05 sd, as above); the dense check of the same ρ in five dimensions
/// agrees on log Z within Monte Carlo error.
#[test]
fn a_factored_gaussian_is_checked_in_the_row_space() {
    let pb2 = problem();
    let (mean2, _, cov2) = exact_moments(&pb2);
    let a = DMatrix::from_row_slice(5, 2, &[0.6, 0.0, 0.0, 0.8, 0.8, 0.0, 0.0, 0.6, 0.0, 0.0]);
    let pb = Problem::new(
        (0..5).map(|k| format!("x{k}")).collect(),
        &*pb2.x * a.transpose(),
        pb2.y.clone(),
        pb2.gamma,
        Prior::Gaussian { var: 1.0 },
    )
    .unwrap();
    let lift = |m: &[f64]| {
        (&a * DMatrix::from_column_slice(2, 1, m))
            .as_slice()
            .to_vec()
    };
    let exact_mean = lift(&mean2);
    let exact_cov =
        &a * (&cov2 - DMatrix::identity(2, 2)) * a.transpose() + DMatrix::identity(5, 5);
    let q2: Vec<f64> = mean2.iter().map(|m| 0.7 * m).collect();
    let core = &cov2 * 1.5 - DMatrix::identity(2, 2);
    let v = LowRankCov {
        diag: vec![1.0; 5],
        factor: a.clone(),
        core: core.clone(),
    };
    let s = IsSettings {
        draws: 20_000,
        seed: 3,
        ..IsSettings::default()
    };
    let q_mean = lift(&q2);
    let c = is_check_low_rank(&pb, &pb.prior, pb.gamma, &q_mean, &v, &s).unwrap();
    assert!(c.trusted, "k̂ = {}", c.khat);
    for k in 0..5 {
        let sd = exact_cov[(k, k)].sqrt();
        assert!(
            (c.mean[k] - exact_mean[k]).abs() < 0.05 * sd,
            "mean {k}: {} vs {}",
            c.mean[k],
            exact_mean[k]
        );
        assert!(
            (c.sd[k] / sd - 1.0).abs() < 0.05,
            "sd {k}: {} vs {sd}",
            c.sd[k]
        );
    }
    let dense = &a * &core * a.transpose() + DMatrix::identity(5, 5);
    let full = is_check(&pb, &pb.prior, pb.gamma, &q_mean, &dense, &s).unwrap();
    assert!(
        (full.log_z - c.log_z).abs() < 0.05,
        "{} vs {}",
        full.log_z,
        c.log_z
    );
    // Not the prior outside the row space: refused, not silently wrong.
    let off = LowRankCov {
        diag: vec![2.0; 5],
        ..v
    };
    assert!(is_check_low_rank(&pb, &pb.prior, pb.gamma, &q_mean, &off, &s).is_err());
}

/// Draws scored on a row subsample (the large-n default): the same draws as
/// the check on all rows, so the answers differ only by the subsample's
/// noise, which τ states. 8000 rows, a quarter scored: corrected means within
/// 0.25 sd of the all-rows check's, k̂ within 0.2, τ below its limit; the
/// same bits on one and two threads.
#[test]
fn a_subsample_check_agrees_with_the_full_check() {
    let pb = problem_of(8000, 40.0);
    let full = IsSettings {
        draws: 6000,
        seed: 3,
        ..IsSettings::default()
    };
    // q: the moments corrected from a broad proposal (as EP's would be).
    let broad = is_check(
        &pb,
        &pb.prior,
        pb.gamma,
        &[0.0, 0.0],
        &DMatrix::identity(2, 2),
        &full,
    );
    let broad = broad.unwrap();
    let m0 = broad.mean.clone();
    let v0 = DMatrix::from_diagonal(&nalgebra::DVector::from_fn(2, |k, _| broad.sd[k].powi(2)));
    let a = is_check(&pb, &pb.prior, pb.gamma, &m0, &v0, &full).unwrap();
    let sub = IsSettings {
        rows: Some(2000),
        ..full
    };
    let run = |t: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(t)
            .build()
            .unwrap();
        pool.install(|| is_check(&pb, &pb.prior, pb.gamma, &m0, &v0, &sub).unwrap())
    };
    let (b, b2) = (run(1), run(2));
    assert_eq!(b.khat.to_bits(), b2.khat.to_bits());
    assert_eq!(b.mean, b2.mean);
    assert!(a.rows.is_none() && a.subsample_log_w_sd.is_none());
    let rows = b.rows.unwrap();
    assert!((2000..2000 + subsample::GROUPS).contains(&rows), "{rows}");
    let tau = b.subsample_log_w_sd.unwrap();
    eprintln!(
        "all rows k̂ {:.3}, subsample k̂ {:.3}, τ {tau:.4}; {}",
        a.khat, b.khat, b.verdict
    );
    assert!(tau > 0.0 && tau < subsample::TAU_MAX, "τ = {tau}");
    assert!(a.trusted && b.trusted);
    assert!((a.khat - b.khat).abs() < 0.2, "{} vs {}", a.khat, b.khat);
    for k in 0..2 {
        let off = (a.mean[k] - b.mean[k]).abs() / a.sd[k];
        assert!(off < 0.25, "mean {k}: {off} sd");
    }
    assert!(b.verdict.contains("subsample"), "{}", b.verdict);
}

/// τ's rule: a subsample too small for γ (its noise alone moves the weights
/// by more than a factor e) distrusts the check whatever k̂ says.
#[test]
fn a_noisy_subsample_is_not_trusted() {
    let pb = problem_of(8000, 4000.0);
    let s = IsSettings {
        draws: 2000,
        seed: 4,
        rows: Some(200),
        ..IsSettings::default()
    };
    let c = is_check(
        &pb,
        &pb.prior,
        pb.gamma,
        &[0.0, 0.0],
        &DMatrix::identity(2, 2),
        &s,
    )
    .unwrap();
    let tau = c.subsample_log_w_sd.unwrap();
    assert!(tau > subsample::TAU_MAX && !c.trusted, "τ = {tau}");
}
