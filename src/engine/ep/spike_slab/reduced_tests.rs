//! The reduced form of spike-and-slab EP (d ≥ n) against the primal form:
//! the same iterates in other coordinates, so the same sweeps and the same
//! numbers up to rounding.

use nalgebra::DMatrix;

use super::model::{SpikeSlab, SpikeSlabEp};
use super::sweep::{SsOutcome, SsSettings};
use crate::engine::ep::design::Form;
use crate::engine::ep::linear::LinearEp;
use crate::engine::ep::settings::EpSettings;
use crate::engine::ep::store::Precision;
use crate::engine::interface::Control;
use crate::engine::numerics::rng::{normal, stream};

/// n rows, d ≥ n features; the label follows the first three features.
fn wide(n: usize, d: usize, seed: u64) -> (DMatrix<f64>, Vec<bool>) {
    let mut rng = stream(seed, &[11]);
    let x = DMatrix::from_fn(n, d, |_, _| normal(&mut rng));
    let y = (0..n)
        .map(|i| x[(i, 0)] - 0.8 * x[(i, 1)] + 0.5 * x[(i, 2)] + 0.6 * normal(&mut rng) > 0.0)
        .collect();
    (x, y)
}

type Run = (SsOutcome, Vec<f64>, Vec<f64>, bool);

fn run_with(
    x: &DMatrix<f64>,
    y: &[bool],
    prior: SpikeSlab,
    gamma: f64,
    form: Form,
    s: &SsSettings,
) -> Run {
    let mut m = SpikeSlabEp::with_form(x, y, prior, Precision::F64, form).unwrap();
    let out = m.run(gamma, s, &Control::new(), &mut |_, _| {}).unwrap();
    let reduced = m.is_reduced();
    (out, m.mean(), m.sd(), reduced)
}

/// Largest differences (means and sds relative to the primal sd, inclusion,
/// log Z) between the two forms; asserts the forms and the sweep count.
fn compare(x: &DMatrix<f64>, y: &[bool], prior: SpikeSlab, gamma: f64) -> (SsOutcome, [f64; 4]) {
    // The plain iteration in both forms: only the primal form extrapolates
    // (`PairSites`), which changes its path, not its fixed point.
    let mut s = SsSettings::default();
    s.ep.extrapolate = false;
    let (po, pm, ps, p_red) = run_with(x, y, prior, gamma, Form::Primal, &s);
    let (ro, rm, rs, r_red) = run_with(x, y, prior, gamma, Form::Auto, &s);
    assert!(!p_red && r_red, "Auto picks the reduced form for d ≥ n");
    assert_eq!(po.sweeps, ro.sweeps, "same iterates, same sweeps");
    assert_eq!(po.fixes_total, ro.fixes_total);
    let mut err = [0.0f64; 4];
    for k in 0..x.ncols() {
        err[0] = err[0].max((pm[k] - rm[k]).abs() / ps[k]);
        err[1] = err[1].max((ps[k] / rs[k] - 1.0).abs());
        err[2] = err[2].max((po.inclusion[k] - ro.inclusion[k]).abs());
    }
    let (a, b) = (po.evidence.log_z().unwrap(), ro.evidence.log_z().unwrap());
    err[3] = (a - b).abs();
    (ro, err)
}

fn assert_close(err: [f64; 4], tol: f64) {
    eprintln!("primal vs reduced: mean/sd, sd ratio, inclusion, log Z: {err:?}");
    for (what, e) in ["mean", "sd", "inclusion", "log Z"].iter().zip(err) {
        assert!(e < tol, "{what}: {e:.3e}");
    }
}

/// n = 30, d = 60: every number of the reduced form is the primal form's to 1e-7.
#[test]
fn reduced_equals_primal_when_wide() {
    let (x, y) = wide(30, 60, 1);
    let prior = SpikeSlab {
        spike_var: 1e-3,
        slab_var: 1.0,
        incl: 0.2,
    };
    let (_, err) = compare(&x, &y, prior, 30.0);
    assert_close(err, 1e-7);
}

/// d = n (a square W; no complement) and d = n + 1.
#[test]
fn reduced_equals_primal_when_d_is_about_n() {
    for (n, d, seed) in [(40, 40, 2), (36, 37, 3)] {
        let (x, y) = wide(n, d, seed);
        let prior = SpikeSlab {
            spike_var: 1e-2,
            slab_var: 2.0,
            incl: 0.3,
        };
        let (_, err) = compare(&x, &y, prior, 1.5 * n as f64);
        assert_close(err, 1e-7);
    }
}

/// A narrow spike and strong data: prior sites need the negative-site fix,
/// and the forms still agree.
#[test]
fn reduced_equals_primal_with_negative_site_fixes() {
    let (x, y) = wide(30, 50, 4);
    let prior = SpikeSlab {
        spike_var: 1e-4,
        slab_var: 1.0,
        incl: 0.1,
    };
    let (out, err) = compare(&x, &y, prior, 60.0);
    assert!(out.fixes_total > 0, "no negative-site fix was exercised");
    assert_close(err, 1e-7);
}

/// p = 1: the prior sites stay N(0, v1) and the reduced spike-and-slab EP is
/// Gaussian EP's reduced form: the same fixed point (means, sds, log Z to 1e-8).
/// Gaussian EP's reduced form measures Δ on w, spike-and-slab EP on θ, so
/// their sweep counts differ: both run to a tight tolerance (tol 1e-11).
#[test]
fn full_inclusion_reduced_is_gaussian_ep_reduced() {
    let (x, y) = wide(30, 60, 5);
    let (gamma, v1) = (30.0, 2.0);
    let s = EpSettings {
        tol: 1e-11,
        ..EpSettings::default()
    };
    let mut lep = LinearEp::new(&x, &y, &[v1; 60], Form::Reduced, Precision::F64).unwrap();
    let g_out = lep.run(gamma, &s, &Control::new(), &mut |_, _| {}).unwrap();
    let prior = SpikeSlab {
        spike_var: 1e-3 * v1,
        slab_var: v1,
        incl: 1.0,
    };
    let ss = SsSettings {
        ep: s,
        ..SsSettings::default()
    };
    let (out, sm, sd, reduced) = run_with(&x, &y, prior, gamma, Form::Auto, &ss);
    assert!(reduced);
    eprintln!(
        "sweeps: Gaussian {} spike-slab {}",
        g_out.sweeps, out.sweeps
    );
    let (gm, gs) = (lep.mean(), lep.sd());
    let mut worst = [0.0f64; 2];
    for k in 0..60 {
        worst[0] = worst[0].max((gm[k] - sm[k]).abs() / gs[k]);
        worst[1] = worst[1].max((gs[k] / sd[k] - 1.0).abs());
        assert!((gm[k] - sm[k]).abs() < 1e-8 * gs[k], "mean {k}");
        assert!((gs[k] / sd[k] - 1.0).abs() < 1e-8, "sd {k}");
        assert_eq!(out.inclusion[k], 1.0);
    }
    let (a, b) = (
        g_out.evidence.log_z().unwrap(),
        out.evidence.log_z().unwrap(),
    );
    eprintln!("mean/sd, sd ratio, log Z: {worst:?} {:.2e}", (a - b).abs());
    assert!((a - b).abs() < 1e-8, "log Z {a} vs {b}");
}
