use super::*;

/// Two separated clusters: EM finds their shares and means.
#[test]
fn em_separates_two_clusters() {
    let mut r = rng::stream(3, &[]);
    let d = 3;
    let mut x = Vec::new();
    for i in 0..3000 {
        // Every 7th-in-10 by a period-10 rule would alias with the fit's
        // row thinning (every 2nd row): 30% by a hash of i instead.
        let (c, s) = if (i * 7919) % 1000 < 300 {
            (5.0, 0.2)
        } else {
            (0.0, 1.0)
        };
        for k in 0..d {
            x.push(if k == 0 { c } else { 0.0 } + s * rng::normal(&mut r));
        }
    }
    let mix = Mixture::fit(&x, d, None).expect("a fit");
    let mut shares = mix.shares();
    shares.sort_by(f64::total_cmp);
    assert!((shares[0] - 0.3).abs() < 0.02, "{shares:?}");
    // q is a density: its log at a far point is far below its log at a mean.
    let mut y = vec![0.0; d];
    assert!(
        mix.log_density(&[5.0, 0.0, 0.0], &mut y)
            > mix.log_density(&[20.0, 0.0, 0.0], &mut y) + 50.0
    );
}

/// The move leaves its target invariant: at γ = 0 (the prior N(0, I))
/// chains drawn from the prior and moved 20 times by a mixture fitted
/// to a shifted, narrow cloud keep the prior's mean and variance
/// (4 000 chains: se ≈ 0.016 and 0.022; tolerances 0.08 and 0.11, 5 se;
/// without q's ratio they would drift to q's mean 1.5 and variance ≈ 0.3).
#[test]
fn the_move_keeps_the_prior_at_gamma_zero() {
    use crate::engine::prior::Prior;
    use crate::engine::smc::target::LinearAuc;
    let mut r = rng::stream(9, &[]);
    let (n, d, m) = (30, 2, 4000);
    let x = DMatrix::from_fn(n, d, |_, _| rng::normal(&mut r));
    let y: Vec<bool> = (0..n).map(|i| i % 2 == 0).collect();
    let t = LinearAuc::new(&x, &y, Prior::Gaussian { var: 1.0 });
    let mut theta = vec![0.0; m * d];
    for row in theta.chunks_exact_mut(d) {
        t.sample_prior(&mut r, row);
    }
    let shifted: Vec<f64> = (0..m * d)
        .map(|i| if i % 2 == 0 { 1.5 } else { 0.0 } + 0.5 * rng::normal(&mut r))
        .collect();
    let mixes = fit_left_out(&shifted, d, &[]);
    let mut chains = Chains {
        d,
        risk: vec![0.0; m],
        log_prior: theta.chunks_exact(d).map(|p| t.log_prior(p)).collect(),
        theta,
        white: vec![0.0; m * d],
        rng: (0..m).map(|j| rng::stream(10, &[j as u64])).collect(),
        fold: vec![0; m],
        surrogate: Vec::new(),
        jac: Vec::new(),
    };
    t.risks(&chains.theta, &mut chains.risk);
    let mut moved = vec![false; m];
    // The cached log q is carried across the steps, as in a stage; every
    // 5th step another move shifts every chain (the cache must notice).
    let mut cache = QCache::new(m, d);
    let mut accepted = 0;
    for s in 0..20 {
        let io = (&mut moved[..], &mut cache);
        accepted += step(&t, &mixes, (&[], None), &mut chains, 0.0, io).accepted;
        if s % 5 == 4 {
            // An exact move at γ = 0: θ → −θ keeps N(0, I).
            chains.theta.iter_mut().for_each(|v| *v = -*v);
        }
    }
    let mut y = vec![0.0; d];
    for j in 0..m {
        let mix = mixes[group_of(j, m)].as_ref().unwrap();
        let at = &cache.at[j * d..(j + 1) * d];
        let fresh = mix.log_density(at, &mut y);
        assert!(cache.log_q[j].is_nan() || (cache.log_q[j] - fresh).abs() < 1e-9);
    }
    assert!(accepted > m, "the move moves ({accepted})");
    for k in 0..d {
        let col: Vec<f64> = chains.theta.chunks_exact(d).map(|p| p[k]).collect();
        let mean = col.iter().sum::<f64>() / m as f64;
        let var = col.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / m as f64;
        assert!(
            mean.abs() < 0.08 && (var - 1.0).abs() < 0.11,
            "{k}: {mean} {var}"
        );
    }
    for (p, lp) in chains.theta.chunks_exact(d).zip(&chains.log_prior) {
        assert!((t.log_prior(p) - lp).abs() < 1e-12);
    }
}

/// Rows of two separated clusters, a share `b` of them in the second.
fn two_clusters(rows: usize, b: f64, seed: u64) -> Vec<f64> {
    let mut r = rng::stream(seed, &[]);
    let d = 3;
    let mut x = Vec::new();
    for i in 0..rows {
        let c = if (i as f64 + 0.5) / (rows as f64) < b {
            6.0
        } else {
            0.0
        };
        for k in 0..d {
            x.push(if k == 0 { c } else { 0.0 } + 0.5 * rng::normal(&mut r));
        }
    }
    x
}

/// log q at draws by the batch (one GEMM per component) equals the
/// density by substitution, row by row; a warm-started fit finds the same
/// shares as a cold one.
#[test]
fn the_draws_log_q_and_a_warm_fit_match_the_plain_ones() {
    let d = 3;
    let x = two_clusters(3000, 0.3, 4);
    let cold = Mixture::fit(&x, d, None).expect("a fit");
    let warm = Mixture::fit(&two_clusters(3000, 0.3, 5), d, Some(&cold)).expect("a fit");
    let (mut a, mut b) = (cold.shares(), warm.shares());
    a.sort_by(f64::total_cmp);
    b.sort_by(f64::total_cmp);
    assert!((a[0] - b[0]).abs() < 0.03, "{a:?} {b:?}");
    let mut r = rng::stream(6, &[]);
    let (mut draws, mut z, mut y) = (vec![0.0; 200 * d], vec![0.0; d], vec![0.0; d]);
    for out in draws.chunks_exact_mut(d) {
        warm.sample(&mut r, out, &mut z);
    }
    let mut batch = vec![0.0; 200];
    warm.log_densities(&draws, &mut batch);
    for (x, lq) in draws.chunks_exact(d).zip(&batch) {
        let fresh = warm.log_density(x, &mut y);
        assert!(
            (lq - fresh).abs() < 1e-9 * (1.0 + fresh.abs()),
            "{lq} {fresh}"
        );
    }
}

/// The phase-jump check: a component holding 5% of a stage's start cloud
/// and 90% of its end is flagged; 30% → 35% is not (the mixture is fitted
/// to the end cloud, as the stage's last fit is).
#[test]
fn a_share_jump_is_flagged_and_a_shift_is_not() {
    let d = 3;
    let stats = |start: f64, end: f64| {
        let (s, e) = (two_clusters(2000, start, 7), two_clusters(2000, end, 8));
        let mix = Mixture::fit(&e, d, None).expect("a fit");
        let ms = MixtureStats {
            held: mix.responsibilities(&s),
            reached: mix.responsibilities(&e),
            ..MixtureStats::default()
        };
        ms.jump()
    };
    let (held, reached) = stats(0.05, 0.9).expect("a jump");
    assert!((held - 0.05).abs() < 0.02 && (reached - 0.9).abs() < 0.02);
    assert_eq!(stats(0.3, 0.35), None);
    assert_eq!(stats(0.9, 0.9), None);
}
