//! GP-EP's two exact forms against each other and against closed forms.

use nalgebra::DMatrix;

use super::fitting::exact_basis;
use super::sweep::GpEp;
use crate::engine::ep::settings::EpSettings;
use crate::engine::gp::Kernel;
use crate::engine::interface::Control;

/// 40 rows in the plane, a duplicate within a class and an identical
/// positive/negative pair (both special cases of §4 and §6).
fn data() -> (DMatrix<f64>, Vec<bool>) {
    let mut x = DMatrix::from_fn(40, 2, |i, j| {
        ((i * 5 + j * 11) as f64 * 0.61 + (i * j) as f64 * 0.07).sin() * 1.4
    });
    let mut y: Vec<bool> = (0..40)
        .map(|i| x[(i, 0)] * x[(i, 0)] + x[(i, 1)] * x[(i, 1)] < 1.1)
        .collect();
    let row = x.row(3).clone_owned();
    x.set_row(17, &row);
    y[17] = y[3];
    let row = x.row(5).clone_owned();
    x.set_row(21, &row);
    y[21] = !y[5];
    (x, y)
}

/// The precision form (K_u⁻¹ + B on distinct rows) and the whitened form
/// (I + ZᵀBZ) are the same Gaussian in two coordinates: same iterates up to
/// rounding, so the same sweeps, evidence and score moments. Plain damping:
/// mixing's accept/undo decisions could part the two paths on a rounding.
#[test]
fn precision_and_whitened_forms_agree() {
    let (x, y) = data();
    let k = Kernel::Se { lengthscale: 0.4 };
    let s = EpSettings {
        tol: 1e-7,
        extrapolate: false,
        ..EpSettings::default()
    };
    let run = |whitened: bool| {
        let basis = exact_basis(&k, &x, &y, whitened);
        assert_eq!(
            basis.form_name(),
            if whitened { "whitened" } else { "precision" }
        );
        let mut ep = GpEp::new(basis);
        let out = ep.run(40.0, &s, &Control::new(), &mut |_| {}).unwrap();
        let q = ep.posterior().unwrap();
        let map = ep.basis.distinct.map.clone();
        let mean: Vec<f64> = map.iter().map(|&u| q.mean[u]).collect();
        let var: Vec<f64> = map.iter().map(|&u| q.var[u]).collect();
        (out, mean, var, ep.identical_pairs())
    };
    let (a, ma, va, ia) = run(false);
    let (b, mb, vb, ib) = run(true);
    assert_eq!(ia, 1);
    assert_eq!(ib, 1);
    assert_eq!(a.sweeps, b.sweeps);
    let (za, zb) = (a.log_z.unwrap(), b.log_z.unwrap());
    assert!((za - zb).abs() < 1e-8, "log Z {za} vs {zb}");
    for i in 0..40 {
        assert!((ma[i] - mb[i]).abs() < 1e-7 * va[i].sqrt(), "mean {i}");
        assert!((va[i] / vb[i] - 1.0).abs() < 1e-7, "var {i}");
    }
    // Duplicated rows share their score.
    assert_eq!(ma[3], ma[17]);
}

/// γ = 0: q is the prior and log Z_EP = 0 (every site stays flat).
#[test]
fn zero_gamma_is_the_prior() {
    let (x, y) = data();
    let k = Kernel::Se { lengthscale: 0.8 };
    let mut ep = GpEp::new(exact_basis(&k, &x, &y, false));
    let out = ep
        .run(0.0, &EpSettings::default(), &Control::new(), &mut |_| {})
        .unwrap();
    assert!(out.log_z.unwrap().abs() < 1e-12);
    let q = ep.posterior().unwrap();
    assert!(q.var.iter().all(|v| (v - 1.0).abs() < 1e-10));
    assert!(q.mean.iter().all(|m| m.abs() < 1e-12));
}

/// One positive and one negative row, η = 1: EP is exact after one update
/// (§4) — log Z_EP equals the closed form `log(e^{−g} + (1 − e^{−g}) Φ(0))`
/// for the difference s_1 − s_2 ~ N(0, 2 − 2k12), whatever k12.
#[test]
fn one_pair_is_exact() {
    let x = DMatrix::from_row_slice(2, 1, &[0.3, -0.9]);
    let y = vec![true, false];
    let g: f64 = 0.8;
    let mut ep = GpEp::new(exact_basis(&Kernel::Se { lengthscale: 0.7 }, &x, &y, false));
    let s = EpSettings {
        eta: 1.0,
        tol: 1e-12,
        ..EpSettings::default()
    };
    let out = ep.run(g, &s, &Control::new(), &mut |_| {}).unwrap();
    let want = ((-g).exp() + (1.0 - (-g).exp()) * 0.5).ln();
    assert!(
        (out.log_z.unwrap() - want).abs() < 1e-12,
        "{:?} vs {want}",
        out.log_z
    );
}

/// The CV's held-out scores (`predictive_mean`, from q's mean without the
/// score model) are the model's predictive means, in both forms.
#[test]
fn predictive_mean_is_the_models() {
    use super::fitting::{fit_exact, predictive_mean};
    let (x, y) = data();
    let xnew = DMatrix::from_fn(7, 2, |i, j| ((i * 3 + j) as f64 * 0.9).cos() * 1.2);
    // 0.4: the precision form; 3.0: K ill-conditioned, the whitened form.
    for (ell, form) in [(0.4, "precision"), (3.0, "whitened")] {
        let k = Kernel::Se { lengthscale: ell };
        let mut state = None;
        let (model, out) = fit_exact(
            &k,
            &x,
            &y,
            40.0,
            &EpSettings::default(),
            &mut state,
            &Control::new(),
            &mut |_| {},
        )
        .unwrap();
        assert_eq!(out.form, form);
        let got = predictive_mean(&k, state.as_ref().unwrap(), &x, &xnew);
        let want = model.predict_mean(&xnew);
        for (a, b) in got.iter().zip(&want) {
            assert!((a - b).abs() < 1e-10, "{form}: {a} vs {b}");
        }
    }
}

/// γ by CV for GP-EP: the chosen point has the largest mean held-out AUC of
/// the points scored in every fold (ties to the smaller γ), and the report is the same whatever the
/// thread count (folds run concurrently).
#[test]
fn gamma_by_cv_picks_the_best_eligible_point() {
    use super::cv::cross_validate;
    use crate::engine::ep::store::Precision;
    use crate::engine::gp::GpApprox;
    let (x, y) = data();
    let k = Kernel::Se { lengthscale: 0.6 };
    let grid = [0.25, 1.0, 4.0];
    let run = || {
        cross_validate(
            &x,
            &y,
            &k,
            GpApprox::Exact,
            &grid,
            3,
            5,
            &EpSettings::default(),
            Precision::F64,
            &Control::new(),
            &mut |_| {},
        )
        .unwrap()
    };
    let r = run();
    // Ties go to the smaller γ (the walk's first).
    let scored: Vec<(f64, f64)> = r
        .grid
        .iter()
        .zip(&r.mean_auc)
        .filter_map(|(g, a)| a.map(|a| (*g, a)))
        .collect();
    let top = scored.iter().map(|p| p.1).fold(f64::MIN, f64::max);
    let best = scored.iter().find(|p| p.1 >= top - 1e-9).unwrap();
    assert_eq!(r.chosen, best.0, "{:?}", r.mean_auc);
    assert!(r.mean_auc.iter().any(Option::is_some));
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap()
        .install(run);
    assert_eq!(one.mean_auc, r.mean_auc);
    assert_eq!(one.chosen, r.chosen);
}

#[test]
fn a_sample_of_pairs_is_refused() {
    use crate::engine::ep::Ep;
    use crate::engine::gp::{GpApprox, GpPrior, KernelKind, LengthScale};
    use crate::engine::interface::{Engine, EngineError, NoObserver};
    use crate::engine::pairs::PairSampling;
    use crate::engine::{Prior, Problem};
    let (x, y) = data();
    let n = y.len();
    let prior = Prior::Gp(GpPrior {
        kernel: KernelKind::Se,
        lengthscale: LengthScale::Value(1.0),
        approx: GpApprox::Exact,
    });
    let names = (0..x.ncols()).map(|k| format!("x{k}")).collect();
    let pb = Problem::new(names, x, y, n as f64, prior).unwrap();
    let ep = Ep {
        pairs: Some(PairSampling { pairs: 50, seed: 0 }),
        ..Ep::default()
    };
    let e = ep.run(&pb, &Control::new(), &mut NoObserver).unwrap_err();
    assert!(
        matches!(&e, EngineError::InvalidParams(m) if m.contains("GP prior")),
        "{e:?}"
    );
}
