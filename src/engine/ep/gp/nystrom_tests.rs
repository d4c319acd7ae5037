//! Nyström GP-EP against exact GP-EP.

use nalgebra::DMatrix;

use super::super::fitting::{features, fit_exact, fit_features};
use crate::engine::ep::settings::EpSettings;
use crate::engine::ep::store::Precision;
use crate::engine::gp::{GpApprox, Kernel};
use crate::engine::interface::Control;

/// 160 rows in the plane, a ring of positives, one duplicate within a class
/// and one identical positive/negative pair.
fn data() -> (DMatrix<f64>, Vec<bool>) {
    let n = 160;
    let mut x = DMatrix::from_fn(n, 2, |i, j| {
        ((i * 7 + j * 13) as f64 * 0.37 + (i * j) as f64 * 0.011).sin() * 1.5
    });
    let mut y: Vec<bool> = (0..n)
        .map(|i| {
            let r2 = x[(i, 0)] * x[(i, 0)] + x[(i, 1)] * x[(i, 1)];
            r2 < 1.2 || i % 11 == 0
        })
        .collect();
    let row = x.row(3).clone_owned();
    x.set_row(90, &row);
    y[90] = y[3];
    let row = x.row(8).clone_owned();
    x.set_row(41, &row);
    y[41] = !y[8];
    (x, y)
}

/// Item 2's check: Nyström with every distinct row as a landmark is the GP
/// prior itself (K̃ = K up to the pivoted Cholesky's rounding), so linear EP
/// on those features is exact GP-EP in other coordinates — EP is equivariant
/// under a change of basis: the same log Z_EP, training score moments and
/// predictions. Linear EP judges Δ on the weights and exact GP-EP on the
/// scores, so both run to tol = 1e-10, where stopping a sweep apart no longer
/// shows. ℓ = 0.15: exact GP-EP in the precision
/// form; ℓ = 1: K ill-conditioned, the whitened form (both drop the
/// directions of relative prior variance below 1e-10).
#[test]
fn landmarks_on_every_row_are_exact_gp_ep() {
    let (x, y) = data();
    let xnew = DMatrix::from_fn(9, 2, |i, j| ((i * 3 + j) as f64 * 0.8).cos() * 1.3);
    let s = EpSettings {
        tol: 1e-10,
        ..EpSettings::default()
    };
    let ctl = Control::new();
    for (ell, form, tol) in [(0.15, "precision", 1e-7), (1.0, "whitened", 1e-6)] {
        let k = Kernel::Se { lengthscale: ell };
        let (exact, eo) = fit_exact(&k, &x, &y, 60.0, &s, &mut None, &ctl, &mut |_| {}).unwrap();
        assert_eq!(eo.form, form);
        let all = GpApprox::Nystrom { landmarks: 160 };
        // The fit streams its sweeps (the explorer's convergence pane).
        let mut last = None;
        let f = features(&k, all, &x).unwrap();
        let (nys, no) = fit_features(
            &k,
            &f,
            &x,
            &y,
            60.0,
            &s,
            Precision::F64,
            false,
            &ctl,
            &mut |w| {
                assert!(w.mean.is_empty() && w.delta.is_finite());
                last = Some((w.sweep, w.log_z));
            },
        )
        .unwrap();
        assert_eq!(last, Some((no.sweeps, no.log_z)), "the last sweep streamed");
        let l = no.landmarks.as_ref().unwrap();
        assert!(l.residual_max <= 1e-10, "{l:?}");
        let (za, zb) = (eo.log_z.unwrap(), no.log_z.unwrap());
        assert!((za - zb).abs() < tol, "ℓ = {ell}: log Z {za} vs {zb}");
        for i in 0..y.len() {
            let (ma, mb, sa, sb) = (eo.mean[i], no.mean[i], eo.sd[i], no.sd[i]);
            assert!(
                (ma - mb).abs() < tol * sa,
                "ℓ = {ell}: mean {i}: {ma} vs {mb}"
            );
            assert!(
                (sb / sa - 1.0).abs() < tol,
                "ℓ = {ell}: sd {i}: {sa} vs {sb}"
            );
        }
        let (pa, pb) = (exact.predict_mean(&xnew), nys.predict_mean(&xnew));
        for (a, b) in pa.iter().zip(&pb) {
            assert!((a - b).abs() < tol, "ℓ = {ell}: prediction {a} vs {b}");
        }
    }
}

/// The final feature fit reaches γ by the continuation (one record shape,
/// `gamma_path`); a CV fold's fit (`reach` false) is one run.
#[test]
fn the_final_fit_reaches_gamma_by_the_continuation() {
    let (x, y) = data();
    let k = Kernel::Se { lengthscale: 0.5 };
    let ctl = Control::new();
    let f = features(&k, GpApprox::Nystrom { landmarks: 140 }, &x).unwrap();
    let gamma = 4.0 * y.len() as f64;
    let fit = |reach: bool| {
        let s = EpSettings {
            tol: 1e-8,
            ..EpSettings::default()
        };
        fit_features(
            &k,
            &f,
            &x,
            &y,
            gamma,
            &s,
            Precision::F64,
            reach,
            &ctl,
            &mut |_| {},
        )
        .unwrap()
    };
    let (_, cont) = fit(true);
    let p = cont.gamma_path.as_ref().expect("the continuation's path");
    assert_eq!(p.target, gamma);
    let (_, fold) = fit(false);
    assert!(fold.gamma_path.is_none());
}
