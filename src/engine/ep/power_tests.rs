//! Power EP (Minka 2004; `site::StepFactor::power`) against EP and against
//! the slow, obvious iteration (`tests::naive_ep`).

use super::settings::EpPower;
use super::tests::{naive_ep, run_ep, toy};
use super::*;
use crate::engine::interface::{Control, EngineError};

fn with_power(power: EpPower, tol: f64) -> EpSettings {
    EpSettings {
        tol,
        extrapolate: false,
        power,
        ..EpSettings::default()
    }
}

/// α = 1 is EP itself, bit for bit: the kernels multiply and divide by 1.
#[test]
fn power_one_is_ep_bit_for_bit() {
    let (x, y) = toy(50, 3, 11, 1.0);
    for form in [Form::Primal, Form::Reduced] {
        let ep = EpSettings::default();
        let one = EpSettings {
            power: EpPower::Fixed(1.0),
            ..ep
        };
        let (_, a, oa) = run_ep(&x, &y, &[1.0; 3], 100.0, &ep, form);
        let (_, b, ob) = run_ep(&x, &y, &[1.0; 3], 100.0, &one, form);
        let (qa, qb) = (a.posterior().unwrap(), b.posterior().unwrap());
        assert_eq!(oa.sweeps, ob.sweeps);
        assert_eq!(qa.m.as_slice(), qb.m.as_slice());
        assert_eq!(qa.v.as_slice(), qb.v.as_slice());
        assert_eq!(
            oa.evidence.log_z().unwrap().to_bits(),
            ob.evidence.log_z().unwrap().to_bits()
        );
    }
}

/// The fast engine at α = 0.5 follows the slow iteration sweep by sweep, and
/// its log Z is the slow one's `Σ (1/α) log C_α + …`.
#[test]
fn fast_power_ep_follows_the_naive_iterates() {
    let (x, y) = toy(40, 3, 7, 1.0);
    for alpha in [0.5, 0.8] {
        let s = with_power(EpPower::Fixed(alpha), 1e-8);
        let (_, ep, out) = run_ep(&x, &y, &[1.0; 3], 40.0, &s, Form::Primal);
        let (m, v, log_z, sweeps) = naive_ep(&x, &y, 1.0, 40.0, &s);
        let q = ep.posterior().unwrap();
        assert_eq!(out.sweeps, sweeps, "α = {alpha}");
        assert!((&q.m - &m).amax() < 1e-10, "α = {alpha}: {} vs {}", q.m, m);
        assert!((&q.v - &v).amax() < 1e-10);
        let lz = out.evidence.log_z().unwrap();
        assert!((lz - log_z).abs() < 1e-9, "α = {alpha}: {lz} vs {log_z}");
    }
}

/// The largest change of a mean (in EP's sds) or of an sd between two fits.
fn gap(a: &Posterior, b: &Posterior) -> f64 {
    (0..a.m.len())
        .map(|k| {
            let (sa, sb) = (a.v[(k, k)].sqrt(), b.v[(k, k)].sqrt());
            ((a.m[k] - b.m[k]).abs() / sb).max((sa / sb - 1.0).abs())
        })
        .fold(0.0, f64::max)
}

/// Power EP's fixed point moves smoothly into EP's as α → 1: the gap shrinks
/// roughly in proportion to 1 − α (tolerance: a factor 3 per decade, and
/// below 0.01 sd at α = 0.999; the fits converge to 1e-10).
#[test]
fn power_ep_approaches_ep_as_alpha_goes_to_one() {
    let (x, y) = toy(60, 4, 3, 0.8);
    let tol = 1e-10;
    let (_, ep, _) = run_ep(
        &x,
        &y,
        &[1.0; 4],
        60.0,
        &with_power(EpPower::Auto, tol),
        Form::Primal,
    );
    let q1 = ep.posterior().unwrap().clone();
    let mut last = f64::INFINITY;
    for alpha in [0.9, 0.99, 0.999] {
        let s = with_power(EpPower::Fixed(alpha), tol);
        let (_, pe, _) = run_ep(&x, &y, &[1.0; 4], 60.0, &s, Form::Primal);
        let g = gap(pe.posterior().unwrap(), &q1);
        assert!(g > 0.0, "α = {alpha} is not EP");
        assert!(g < last / 3.0, "α = {alpha}: gap {g:e} after {last:e}");
        last = g;
    }
    assert!(last < 0.01, "gap {last:e} at α = 0.999");
}

/// Where EP has no fixed point in reach (overlapping classes at a large γ,
/// §4: EP's cavities go invalid until η is below its minimum), power EP at
/// α = 0.5 converges, to a fixed point of the slow, obvious power-EP step:
/// one undamped scalar `power_update` of every site from it moves q by less
/// than 1e-6 sd (the fit converged to tol 1e-8·η).
#[test]
fn power_ep_converges_where_ep_does_not() {
    let (x, y) = toy(100, 3, 5, 0.5);
    let gamma = 25.0 * 100.0;
    let (xp, xn) = super::tests::split(&x, &y);
    let pairs = xp.nrows() * xn.nrows();
    let g = gamma / pairs as f64;
    let fit = |power| {
        let mut ep = PairEp::new(
            xp.clone(),
            xn.clone(),
            identical_pairs(&xp, &xn),
            PriorTerms::centred(&[1.0; 3]),
            Precision::F64,
        )
        .unwrap();
        let s = EpSettings {
            power,
            tol: 1e-8,
            ..EpSettings::default()
        };
        let out = ep.run(g, &s, &Control::new(), &mut |_| {});
        (out, ep)
    };
    let (ep_out, _) = fit(EpPower::Auto);
    assert!(
        matches!(ep_out, Err(EngineError::NotConverged { .. })),
        "EP converged here: pick a harder case"
    );
    let (out, pe) = fit(EpPower::Fixed(0.5));
    assert!(
        out.expect("power EP converges")
            .evidence
            .log_z()
            .unwrap()
            .is_finite()
    );
    let q = pe.posterior().unwrap();
    let sites = pe.sites_vec();
    let f = StepFactor::with_power(g, 0.5);
    let (mut prec, mut r) = (
        nalgebra::DMatrix::<f64>::identity(3, 3),
        nalgebra::DVector::<f64>::zeros(3),
    );
    for i in 0..xp.nrows() {
        for j in 0..xn.nrows() {
            let a = (xp.row(i) - xn.row(j)).transpose();
            let idx = i * xn.nrows() + j;
            let site = Site {
                k: sites[idx],
                h: sites[pairs + idx],
            };
            let (new, _) = site::power_update(a.dot(&q.m), (a.transpose() * &q.v * &a)[0], site, f);
            prec += &a * a.transpose() * new.k;
            r += &a * new.h;
        }
    }
    let v = prec.try_inverse().unwrap();
    let m = &v * r;
    for k in 0..3 {
        let sd = q.v[(k, k)].sqrt();
        assert!(
            (m[k] - q.m[k]).abs() < 1e-6 * sd,
            "mean {k}: {} vs {}",
            m[k],
            q.m[k]
        );
        assert!((v[(k, k)].sqrt() / sd - 1.0).abs() < 1e-6, "sd {k}");
    }
}
