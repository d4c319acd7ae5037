//! Tests of the EP core against slow, obvious computations (ALGORITHMS.md §4).

use nalgebra::{DMatrix, DVector};

use super::*;
use crate::engine::interface::Control;
use crate::engine::metrics::auc;
use crate::engine::numerics::rng;

/// Positive and negative rows of a noisy linear toy problem.
pub(crate) fn toy(n: usize, d: usize, seed: u64, noise: f64) -> (DMatrix<f64>, Vec<bool>) {
    let mut r = rng::stream(seed, &[]);
    let x = DMatrix::from_fn(n, d, |_, _| rng::normal(&mut r));
    let y = (0..n)
        .map(|i| x[(i, 0)] - 0.5 * x[(i, d.min(2) - 1)] + noise * rng::normal(&mut r) > 0.2)
        .collect();
    (x, y)
}

pub(crate) fn split(x: &DMatrix<f64>, y: &[bool]) -> (DMatrix<f64>, DMatrix<f64>) {
    let p: Vec<usize> = (0..y.len()).filter(|&i| y[i]).collect();
    let n: Vec<usize> = (0..y.len()).filter(|&i| !y[i]).collect();
    (x.select_rows(&p), x.select_rows(&n))
}

/// The pair EP most tests build: rows `xp`, `xn` (`excluded`: their identical
/// pairs), the N(0, I) prior, sites stored in `precision`, configured by
/// `setup`, run at γ = n (g = n/pairs) with settings `s` on `threads` threads
/// (None: the current pool). Returns the posterior, log Z_EP and sweeps.
pub(crate) fn fit_pair_ep(
    (xp, xn): (&DMatrix<f64>, &DMatrix<f64>),
    excluded: &Excluded,
    precision: Precision,
    s: &EpSettings,
    threads: Option<usize>,
    setup: impl FnOnce(&mut PairEp) + Send,
) -> (Posterior, f64, usize) {
    let fit = || {
        let mut ep = PairEp::new(
            xp.clone(),
            xn.clone(),
            excluded.clone(),
            PriorTerms::centred(&vec![1.0; xp.ncols()]),
            precision,
        )
        .unwrap();
        setup(&mut ep);
        let g = (xp.nrows() + xn.nrows()) as f64 / ep.pairs() as f64;
        let o = ep.run(g, s, &Control::new(), &mut |_| {}).unwrap();
        let q = ep.posterior().unwrap().clone();
        (q, o.evidence.log_z().unwrap(), o.sweeps)
    };
    match threads {
        None => fit(),
        Some(t) => rayon::ThreadPoolBuilder::new()
            .num_threads(t)
            .build()
            .unwrap()
            .install(fit),
    }
}

/// EP on (x, y) with prior variances `vars` at γ; returns the design, state and outcome.
pub(crate) fn run_ep(
    x: &DMatrix<f64>,
    y: &[bool],
    vars: &[f64],
    gamma: f64,
    s: &EpSettings,
    form: Form,
) -> (Design, PairEp, EpOutcome) {
    let (xp, xn) = split(x, y);
    let excl = identical_pairs(&xp, &xn);
    let g = gamma / (xp.nrows() * xn.nrows()) as f64;
    let design = Design::new(&xp, &xn, vars, form);
    let mut ep = PairEp::new(
        design.zp.clone(),
        design.zn.clone(),
        excl,
        design.prior.clone(),
        Precision::F64,
    )
    .unwrap();
    let out = ep.run(g, s, &Control::new(), &mut |_| {}).unwrap();
    (design, ep, out)
}

fn tight(eta: f64, tol: f64) -> EpSettings {
    EpSettings {
        eta,
        tol,
        max_sweeps: 10_000,
        min_eta: 1e-6,
        extrapolate: false,
        ..EpSettings::default()
    }
}

/// Gauss–Legendre nodes and weights on [−1, 1] (Newton on P_n).
fn gauss_legendre(n: usize) -> Vec<(f64, f64)> {
    (0..n)
        .map(|i| {
            let mut x = (std::f64::consts::PI * (i as f64 + 0.75) / (n as f64 + 0.5)).cos();
            let mut dp = 0.0;
            for _ in 0..100 {
                let (mut p0, mut p1) = (1.0, x);
                for k in 2..=n {
                    let p2 = ((2 * k - 1) as f64 * x * p1 - (k - 1) as f64 * p0) / k as f64;
                    p0 = p1;
                    p1 = p2;
                }
                dp = n as f64 * (x * p1 - p0) / (x * x - 1.0);
                let dx = p1 / dp;
                x -= dx;
                if dx.abs() < 1e-16 {
                    break;
                }
            }
            (x, 2.0 / ((1.0 - x * x) * dp * dp))
        })
        .collect()
}

/// ∫ f over [a, b] by composite 20-point Gauss–Legendre on `panels` panels.
fn integrate(f: impl Fn(f64) -> f64, a: f64, b: f64, panels: usize) -> f64 {
    let gl = gauss_legendre(20);
    let h = (b - a) / panels as f64;
    let mut sum = 0.0;
    for p in 0..panels {
        let mid = a + (p as f64 + 0.5) * h;
        for &(x, w) in &gl {
            sum += w * f(mid + 0.5 * h * x);
        }
    }
    sum * 0.5 * h
}

/// One positive/negative pair: EP is exact, against quadrature of the true posterior.
fn one_pair_case(eta: f64, tol: f64, bound: f64) {
    let theta_var: f64 = 1.7;
    let gamma = 2.3;
    let x = DMatrix::from_row_slice(2, 2, &[0.8, -0.3, -0.4, 0.5]);
    let y = vec![true, false];
    let (design, ep, out) = run_ep(
        &x,
        &y,
        &[theta_var; 2],
        gamma,
        &tight(eta, tol),
        Form::Primal,
    );
    let q = ep.posterior().unwrap();
    let (q_m, q_v) = (
        DVector::from_vec(design.theta_mean(q)),
        design.theta_cov(q).unwrap(),
    );
    // Truth: t = aᵀθ ~ N(0, s²) a priori, tilted by f(t) = e^{−γ·1{t<0}} (M = 1).
    let a = DVector::<f64>::from_column_slice(&[1.2, -0.8]);
    let s2 = theta_var * a.norm_squared();
    let dens = |t: f64| (-0.5 * t * t / s2).exp() / (2.0 * std::f64::consts::PI * s2).sqrt();
    let f = |t: f64| if t < 0.0 { (-gamma).exp() } else { 1.0 };
    let lim = 40.0 * s2.sqrt();
    let moment = |k: i32| {
        integrate(|t| t.powi(k) * dens(t) * f(t), -lim, 0.0, 400)
            + integrate(|t| t.powi(k) * dens(t) * f(t), 0.0, lim, 400)
    };
    let z = moment(0);
    let (m1, m2) = (moment(1) / z, moment(2) / z);
    let var_t = m2 - m1 * m1;
    let mean = &a * (theta_var * m1 / s2);
    let cov = DMatrix::identity(2, 2) * theta_var
        - &a * a.transpose() * (theta_var * theta_var / s2)
        + &a * a.transpose() * (theta_var * theta_var * var_t / (s2 * s2));
    let err_m = (&q_m - &mean).amax();
    let err_v = (&q_v - &cov).amax();
    let err_z = (out.evidence.log_z().unwrap() - z.ln()).abs();
    assert!(
        err_m <= bound && err_v <= bound && err_z <= bound,
        "η = {eta}: mean error {err_m:e}, covariance error {err_v:e}, log Z error {err_z:e} (bound {bound:e})"
    );
}

#[test]
fn one_pair_with_full_step_is_exact() {
    one_pair_case(1.0, 1e-4, 1e-13);
}

#[test]
fn one_pair_with_damping_converges_to_the_exact_posterior() {
    one_pair_case(0.5, 1e-12, 1e-10);
}

#[test]
fn zero_gamma_gives_zero_evidence_and_the_prior() {
    let (x, y) = toy(30, 3, 1, 0.5);
    let (design, ep, out) = run_ep(&x, &y, &[2.0; 3], 0.0, &EpSettings::default(), Form::Primal);
    assert!(
        out.evidence.log_z().unwrap().abs() < 1e-12,
        "{:?}",
        out.evidence
    );
    let q = ep.posterior().unwrap();
    assert!(q.m.amax() == 0.0);
    assert!((design.theta_cov(q).unwrap() - DMatrix::identity(3, 3) * 2.0).amax() < 1e-15);
}

/// A slow, obvious parallel EP: explicit a_ij, Q as a sum of outer products,
/// the same acceptance rule. The fast engine must follow the same iterates.
/// (Power EP when `s.power` is below 1: the same loop with Minka's fractional site step.)
pub(super) fn naive_ep(
    x: &DMatrix<f64>,
    y: &[bool],
    var: f64,
    gamma: f64,
    s: &EpSettings,
) -> (DVector<f64>, DMatrix<f64>, f64, usize) {
    let (xp, xn) = split(x, y);
    let d = x.ncols();
    let pairs: Vec<DVector<f64>> = (0..xp.nrows())
        .flat_map(|i| (0..xn.nrows()).map(move |j| (i, j)))
        .map(|(i, j)| (xp.row(i) - xn.row(j)).transpose())
        .collect();
    // Power EP's α (1: EP): `site::power_update` is the whole site step.
    let alpha = s.power.alpha();
    let f = StepFactor::with_power(gamma / pairs.len() as f64, alpha);
    let frac = |st: &Site| Site {
        k: alpha * st.k,
        h: alpha * st.h,
    };
    let build = |sites: &[Site]| {
        let mut q = DMatrix::identity(d, d) / var;
        let mut r = DVector::zeros(d);
        for (a, st) in pairs.iter().zip(sites) {
            q += a * a.transpose() * st.k;
            r += a * st.h;
        }
        let ch = q.clone().cholesky()?;
        let v = ch.inverse();
        let m = &v * &r;
        let ld = 2.0 * ch.l().diagonal().iter().map(|v| v.ln()).sum::<f64>();
        Some((m, v, ld, r))
    };
    let mut sites = vec![Site::default(); pairs.len()];
    let mut prev = sites.clone();
    let (mut m, mut v, mut ld, mut r) = build(&sites).unwrap();
    let (mut eta, mut sweep, mut cand, mut have_prev) = (s.eta, 0, false, false);
    let (mut m_old, mut v_old) = (m.clone(), v.clone());
    loop {
        let mus: Vec<f64> = pairs.iter().map(|a| a.dot(&m)).collect();
        let cav: Vec<Natural> = pairs
            .iter()
            .zip(&sites)
            .map(|(a, st)| site::cavity(a.dot(&m), (a.transpose() * &v * a)[0], frac(st)))
            .collect();
        if cav.iter().any(|c| c.tau <= 0.0) {
            assert!(have_prev);
            eta *= 0.5;
            for (s, p) in sites.iter_mut().zip(&prev) {
                s.k = 0.5 * (s.k + p.k);
                s.h = 0.5 * (s.h + p.h);
            }
            (m, v, ld, r) = build(&sites).unwrap();
        } else if cand {
            let sum_log_c: f64 = cav
                .iter()
                .zip(&sites)
                .map(|(c, st)| {
                    site::log_c(site::tilted(*c, f.powered()).log_z, *c, frac(st)) / alpha
                })
                .sum();
            let log_z = sum_log_c + 0.5 * d as f64 * (1.0 / var).ln() - 0.5 * ld + 0.5 * r.dot(&m);
            return (m, v, log_z, sweep);
        } else {
            prev = sites.clone();
            have_prev = true;
            for (st, (a, mu)) in sites.iter_mut().zip(pairs.iter().zip(&mus)) {
                let (new, _) = site::power_update(*mu, (a.transpose() * &v * a)[0], *st, f);
                st.k += eta * (new.k - st.k);
                st.h += eta * (new.h - st.h);
            }
            (m_old, v_old) = (m.clone(), v.clone());
            (m, v, ld, r) = build(&sites).unwrap();
            sweep += 1;
        }
        let delta = (0..d)
            .map(|k| {
                let (sd, so) = (v[(k, k)].sqrt(), v_old[(k, k)].sqrt());
                ((m[k] - m_old[k]).abs() / so).max((sd / so - 1.0).abs())
            })
            .fold(0.0, f64::max);
        cand = delta < s.tol * eta;
    }
}

#[test]
fn fast_engine_follows_the_naive_iterates() {
    let (x, y) = toy(40, 3, 7, 1.0);
    // The plain iteration, sweep by sweep (no extrapolated steps).
    let s = EpSettings {
        tol: 1e-8,
        extrapolate: false,
        ..EpSettings::default()
    };
    let (_, ep, out) = run_ep(&x, &y, &[1.0; 3], 40.0, &s, Form::Primal);
    let (m, v, log_z, sweeps) = naive_ep(&x, &y, 1.0, 40.0, &s);
    let q = ep.posterior().unwrap(); // ϑ = 1: EP's coordinates are θ's
    assert_eq!(out.sweeps, sweeps);
    assert!((&q.m - &m).amax() < 1e-10, "means {} vs {}", q.m, m);
    assert!((&q.v - &v).amax() < 1e-10);
    assert!(
        (out.evidence.log_z().unwrap() - log_z).abs() < 1e-9,
        "{:?} vs {log_z}",
        out.evidence.log_z()
    );
    assert!(
        out.negative_share > 0.0,
        "overlapping classes give negative sites"
    );
}

/// Exact flatness of log Z_EP in ϑ and the mean's √ϑ scaling (§2), on the
/// plain damped iterates (the controller's accelerated steps decide on
/// residuals in site units, which are not scale-free: equal to the tolerance).
#[test]
fn evidence_is_flat_in_the_isotropic_prior_scale() {
    let (x, y) = toy(60, 4, 3, 0.8);
    let s = EpSettings {
        extrapolate: false,
        ..EpSettings::default()
    };
    let (d1, ep1, o1) = run_ep(&x, &y, &[1.0; 4], 60.0, &s, Form::Primal);
    let m1 = DVector::from_vec(d1.theta_mean(ep1.posterior().unwrap()));
    for var in [1e-3, 0.37, 25.0] {
        let (d, ep, o) = run_ep(&x, &y, &[var; 4], 60.0, &s, Form::Primal);
        let dz = (o.evidence.log_z().unwrap() - o1.evidence.log_z().unwrap()).abs();
        assert!(dz < 1e-10, "log Z_EP moves by {dz:e} at ϑ = {var}");
        assert_eq!(o.sweeps, o1.sweeps);
        let m = DVector::from_vec(d.theta_mean(ep.posterior().unwrap()));
        assert!((&m - &m1 * var.sqrt()).amax() < 1e-10 * var.sqrt());
    }
}

/// The reduced (SVD) form keeps the flatness: no absolute jitter or floor (§4).
#[test]
fn reduced_form_evidence_is_flat_in_the_prior_scale() {
    let (mut x, y) = toy(30, 50, 37, 0.6);
    for mut col in x.column_iter_mut() {
        let mean = col.mean();
        col.add_scalar_mut(-mean);
    }
    let s = EpSettings::default();
    let (d1, ep1, o1) = run_ep(&x, &y, &[1.0; 50], 30.0, &s, Form::Reduced);
    assert!(d1.is_reduced());
    let m1 = DVector::from_vec(d1.theta_mean(ep1.posterior().unwrap()));
    let sd1 = DVector::from_vec(d1.theta_sd(ep1.posterior().unwrap()));
    for var in [1e-4, 3.0, 400.0] {
        let (d, ep, o) = run_ep(&x, &y, &[var; 50], 30.0, &s, Form::Reduced);
        let dz = (o.evidence.log_z().unwrap() - o1.evidence.log_z().unwrap()).abs();
        assert!(dz < 1e-10, "log Z_EP moves by {dz:e} at ϑ = {var}");
        assert_eq!(o.sweeps, o1.sweeps);
        let q = ep.posterior().unwrap();
        let m = DVector::from_vec(d.theta_mean(q));
        let sd = DVector::from_vec(d.theta_sd(q));
        assert!((&m - &m1 * var.sqrt()).amax() < 1e-10 * var.sqrt());
        assert!((&sd - &sd1 * var.sqrt()).amax() < 1e-10 * var.sqrt());
    }
}

/// At the fixed point K_ij < 0 ⇔ <m, a_ij> < 0: the share of negative sites is
/// 1 − (train AUC of the posterior mean).
#[test]
fn negative_share_is_one_minus_train_auc() {
    let (x, y) = toy(120, 3, 11, 1.0);
    let (_, ep, out) = run_ep(&x, &y, &[1.0; 3], 120.0, &tight(0.7, 1e-9), Form::Primal);
    let m = &ep.posterior().unwrap().m;
    let scores: Vec<f64> = (&x * m).iter().copied().collect();
    let want = 1.0 - auc(&scores, &y);
    let pairs = ep.sites() as f64;
    assert!(
        (out.negative_share - want).abs() <= 0.5 / pairs,
        "negative share {} vs 1 − AUC {want}",
        out.negative_share
    );
}

#[test]
fn reduced_form_equals_primal() {
    let (mut x, y) = toy(24, 40, 5, 0.5);
    for mut col in x.column_iter_mut() {
        let mean = col.mean();
        col.add_scalar_mut(-mean); // centred, as standardised data: rank 23
    }
    let vars: Vec<f64> = (0..40).map(|k| 0.5 + (k % 5) as f64 * 0.3).collect();
    let s = tight(0.7, 1e-10);
    let (dp, ep_p, op) = run_ep(&x, &y, &vars, 24.0, &s, Form::Primal);
    let (dr, ep_r, or) = run_ep(&x, &y, &vars, 24.0, &s, Form::Reduced);
    assert!(dr.is_reduced() && dr.dim() < 24);
    let (qp, qr) = (ep_p.posterior().unwrap(), ep_r.posterior().unwrap());
    let (mp, mr) = (dp.theta_mean(qp), dr.theta_mean(qr));
    let (sp, sr) = (dp.theta_sd(qp), dr.theta_sd(qr));
    for k in 0..40 {
        assert!(
            (mp[k] - mr[k]).abs() < 1e-8,
            "mean {k}: {} vs {}",
            mp[k],
            mr[k]
        );
        assert!(
            (sp[k] - sr[k]).abs() < 1e-8,
            "sd {k}: {} vs {}",
            sp[k],
            sr[k]
        );
    }
    let cov = dr.theta_cov_reduced(qr).unwrap();
    assert!((&cov - dp.theta_cov(qp).unwrap()).amax() < 1e-8);
    assert!((op.evidence.log_z().unwrap() - or.evidence.log_z().unwrap()).abs() < 1e-8);
}

#[test]
fn instruction_sets_and_thread_counts_agree() {
    let (x, y) = toy(150, 5, 13, 1.0);
    let (xp, xn) = split(&x, &y);
    let none = Excluded::none(xp.nrows());
    let run = |isa: Option<Isa>, threads: usize| {
        let (q, z, _) = fit_pair_ep(
            (&xp, &xn),
            &none,
            Precision::F64,
            &EpSettings::default(),
            Some(threads),
            |ep| {
                if let Some(i) = isa {
                    ep.set_isa(i);
                }
            },
        );
        (q.m, z)
    };
    let (m1, z1) = run(None, 1);
    let (m2, z2) = run(None, 2);
    assert_eq!(m1, m2, "thread count changed the result");
    assert_eq!(z1, z2);
    let (mp, zp) = run(Some(Isa::Plain), 2);
    assert!((&m1 - &mp).amax() < 1e-9 && (z1 - zp).abs() < 1e-9);
    if kernel::detected_isa() == Isa::Avx512 {
        let (ma, za) = run(Some(Isa::Avx2), 2);
        assert_eq!(
            (ma, za),
            (m1, z1),
            "AVX2 and AVX-512 must give identical bits"
        );
    }
}

/// Problems above `BLOCK_SITES` pairs are passed block by block: small blocks
/// (both the small-p path and the GEMM path) give the one-block result.
#[test]
fn blocks_of_rows_give_the_one_block_result() {
    for d in [5, 40] {
        let (x, y) = toy(160, d, 17, 1.0);
        let (xp, xn) = split(&x, &y);
        let none = Excluded::none(xp.nrows());
        let run = |rows: Option<usize>| {
            let (q, z, sweeps) = fit_pair_ep(
                (&xp, &xn),
                &none,
                Precision::F64,
                &EpSettings::default(),
                None,
                |ep| {
                    if let Some(r) = rows {
                        ep.set_block_rows(r);
                    }
                },
            );
            (q.m, z, sweeps)
        };
        let (m1, z1, s1) = run(None);
        let (m7, z7, s7) = run(Some(7));
        assert_eq!(s1, s7, "d = {d}");
        assert!(
            (&m1 - &m7).amax() < 1e-12,
            "d = {d}: {}",
            (&m1 - &m7).amax()
        );
        assert!((z1 - z7).abs() < 1e-9, "d = {d}: {z1} vs {z7}");
    }
}

#[test]
fn single_precision_storage_stays_at_the_fixed_point() {
    let (x, y) = toy(200, 4, 17, 1.0);
    let (xp, xn) = split(&x, &y);
    let none = Excluded::none(xp.nrows());
    let fit = |prec| {
        let mut storage = "";
        let (q, z, _) = fit_pair_ep((&xp, &xn), &none, prec, &tight(0.7, 1e-6), None, |ep| {
            storage = ep.storage()
        });
        (q, z, storage)
    };
    let (q64, z64, s64) = fit(Precision::F64);
    let (q32, z32, s32) = fit(Precision::F32);
    assert_eq!((s64, s32), ("f64", "f32"));
    for (k, sd) in q64.sd().into_iter().enumerate() {
        assert!((q64.m[k] - q32.m[k]).abs() < 1e-5 * sd);
        assert!((q32.v[(k, k)].sqrt() / sd - 1.0).abs() < 1e-5);
    }
    let dz = z64 - z32;
    assert!(dz.abs() < 1e-4, "{dz}");
}

/// Identical positive/negative rows are not sites; each adds −g/2 to log Z_EP.
#[test]
fn identical_rows_are_not_sites() {
    let (mut x, mut y) = toy(40, 3, 19, 1.0);
    let i = y.iter().position(|&b| b).unwrap();
    let j = y.iter().position(|&b| !b).unwrap();
    let row = x.row(i).into_owned();
    x.set_row(j, &row);
    y[j] = false;
    let (xp, xn) = split(&x, &y);
    let excl = identical_pairs(&xp, &xn);
    assert_eq!(excl.count(), 1);
    let (_, ep, out) = run_ep(
        &x,
        &y,
        &[1.0; 3],
        40.0,
        &EpSettings::default(),
        Form::Primal,
    );
    assert_eq!((out.stats.skipped, out.stats.bad), (0, 0));
    assert_eq!(out.evidence.identical_pairs, 1);
    assert!(out.evidence.log_z().is_some());
    let (_, _) = (ep.site(0, 0), ep.sites());
}

/// The ARD gradient `∂ log Z_EP/∂ log ϑ_k = ½((V_kk + m_k²)/ϑ_k − 1)` at the
/// fixed point, against central differences of log Z_EP.
#[test]
fn ard_evidence_gradient_matches_finite_differences() {
    let (x, y) = toy(50, 3, 23, 1.0);
    let vars = [0.7, 1.9, 0.4];
    let s = tight(0.7, 1e-12);
    let log_z = |v: &[f64]| {
        run_ep(&x, &y, v, 50.0, &s, Form::Primal)
            .2
            .evidence
            .log_z()
            .unwrap()
    };
    let (design, ep, _) = run_ep(&x, &y, &vars, 50.0, &s, Form::Primal);
    let q = ep.posterior().unwrap();
    let (m, sd) = (design.theta_mean(q), design.theta_sd(q));
    let h: f64 = 1e-4;
    for k in 0..3 {
        let analytic = 0.5 * ((sd[k] * sd[k] + m[k] * m[k]) / vars[k] - 1.0);
        let (mut up, mut dn) = (vars.to_vec(), vars.to_vec());
        up[k] *= h.exp();
        dn[k] *= (-h).exp();
        let numeric = (log_z(&up) - log_z(&dn)) / (2.0 * h);
        assert!(
            (analytic - numeric).abs() < 1e-6 * (1.0 + analytic.abs()),
            "k = {k}: analytic {analytic}, numeric {numeric}"
        );
    }
}

/// The ARD loop raises the evidence above the isotropic prior's and stays
/// invariant to a common rescaling of the starting variances.
#[test]
fn ard_raises_the_evidence_and_ignores_the_common_scale() {
    let (mut x, y) = toy(80, 4, 29, 0.7);
    for i in 0..80 {
        x[(i, 3)] = 0.01 * x[(i, 3)] + rng::normal(&mut rng::stream(5, &[i as u64])); // pure noise feature
    }
    let run = |scale: f64| {
        let mut lep = LinearEp::new(&x, &y, &[scale; 4], Form::Primal, Precision::F64).unwrap();
        let r = ard::optimise(
            &mut lep,
            80.0,
            &EpSettings {
                extrapolate: false,
                ..EpSettings::default()
            },
            &ArdSettings::default(),
            &Control::new(),
            &mut |_, _| {},
            &mut |_| {},
        )
        .unwrap();
        let z0 = r.trace[0].log_z.unwrap();
        (z0, r.outcome.evidence.log_z().unwrap(), r.vars)
    };
    let (z_iso, z_ard, vars) = run(1.0);
    assert!(z_ard > z_iso, "ARD evidence {z_ard} ≤ isotropic {z_iso}");
    assert!(
        vars[3] < 0.1 * vars[0],
        "the noise feature keeps ϑ = {vars:?}"
    );
    let (z_iso2, z_ard2, vars2) = run(9.0);
    assert!((z_iso - z_iso2).abs() < 1e-9 && (z_ard - z_ard2).abs() < 1e-6);
    for k in 0..4 {
        assert!(
            (vars2[k] / 9.0 / vars[k] - 1.0).abs() < 1e-6,
            "{vars:?} vs {vars2:?}"
        );
    }
}

#[test]
fn a_cancelled_run_stops_at_the_next_sweep() {
    let (x, y) = toy(60, 3, 31, 1.0);
    let (xp, xn) = split(&x, &y);
    let mut ep = PairEp::new(
        xp.clone(),
        xn.clone(),
        Excluded::none(xp.nrows()),
        PriorTerms::centred(&[1.0; 3]),
        Precision::F64,
    )
    .unwrap();
    let ctl = Control::new();
    let mut seen = 0;
    let r = ep.run(0.01, &tight(0.7, 1e-12), &ctl, &mut |_| {
        seen += 1;
        if seen == 3 {
            ctl.cancel();
        }
    });
    assert!(matches!(
        r,
        Err(crate::engine::interface::EngineError::Cancelled)
    ));
    assert_eq!(seen, 3);
}

/// A fixed-γ fit whose direct run from the prior does not converge within the
/// sweep budget reaches γ by the continuation (each point a warm start for the
/// next) and lands on the same fixed point; the record says so.
#[test]
fn fixed_gamma_fit_falls_back_to_the_continuation() {
    use crate::engine::interface::{Engine, NoObserver};
    use crate::engine::{Prior, Problem};
    let (x, y) = toy(100, 4, 5, 0.02);
    let n = y.len() as f64;
    let names: Vec<String> = (0..4).map(|k| format!("x{k}")).collect();
    let pb = Problem::new(names, x, y, 16.0 * n, Prior::Gaussian { var: 1.0 }).unwrap();
    let fit = |max_sweeps: usize| {
        let ep = Ep {
            settings: EpSettings {
                max_sweeps,
                ..EpSettings::default()
            },
            ..Ep::default()
        };
        ep.run(&pb, &Control::new(), &mut NoObserver)
    };
    let cold = fit(10_000).unwrap();
    let sweeps = cold.details["sweeps"].as_u64().unwrap() as usize;
    let g = &cold.details["gamma"];
    assert_eq!(g["final_start"], "prior", "{}", cold.details);
    assert_eq!(g["path"]["points"].as_array().unwrap().len(), 1);
    assert!(
        sweeps > 8,
        "the cold start should need some sweeps: {sweeps}"
    );
    let warm = fit(sweeps - 1).unwrap();
    let g = &warm.details["gamma"];
    assert_eq!(g["final_start"], "continuation", "{}", warm.details);
    assert!(g["path"]["points"].as_array().unwrap().len() > 2);
    // Both converged to tol 1e-4 in Δ (scaled by η): the same fixed point to
    // well within a posterior sd.
    for k in 0..4 {
        let dm = (warm.mean[k] - cold.mean[k]).abs();
        assert!(dm < 0.01 * cold.sd[k], "θ_{k}: {dm} vs sd {}", cold.sd[k]);
    }
}

/// Settings saved with the retired driver fields (`start`, `controller`,
/// `regrow` either way) still load: the fields are ignored, the engine has
/// one driver and η always regrows.
#[test]
fn settings_with_the_retired_driver_fields_load() {
    for regrow in [true, false] {
        let old = serde_json::json!({
            "eta": 0.7, "tol": 1e-4, "max_sweeps": 1000, "min_eta": 1e-4,
            "start": "classic", "controller": "classic", "regrow": regrow,
        });
        let s: EpSettings = serde_json::from_value(old).unwrap();
        assert_eq!(s, EpSettings::default());
        let written = serde_json::to_value(s).unwrap();
        assert!(written.get("regrow").is_none(), "{written}");
    }
}
