//! Tests of the VB objective: gradients by finite differences, the pair pass
//! against explicit pairs, closed forms against Monte Carlo, family ordering,
//! the stochastic optimiser against the full-batch one.

use nalgebra::DMatrix;

use super::family::{Family, Params, SigmaGrad};
use super::loss::{Loss, eval_items, item, signed_rows};
use super::pairs::PairRisk;
use super::*;
use crate::engine::numerics::rng::{normal, stream};

const FAMILIES: [Family; 3] = [Family::Iso, Family::Diag, Family::Full];
const LOSSES: [Loss; 4] = [Loss::Auc, Loss::ZeroOne, Loss::Hinge, Loss::Exp];

/// Overlapping classes: y = 1{x·w + noise > 0}, with two identical rows across classes.
fn data(n: usize, d: usize, seed: u64) -> (DMatrix<f64>, Vec<bool>) {
    let mut r = stream(seed, &[1]);
    let mut x = DMatrix::from_fn(n, d, |_, _| normal(&mut r));
    let y: Vec<bool> = (0..n)
        .map(|i| {
            (0..d)
                .map(|k| x[(i, k)] * (k as f64 + 1.0) / d as f64)
                .sum::<f64>()
                + normal(&mut r)
                > 0.0
        })
        .collect();
    let (i, j) = (
        (0..n).find(|&i| y[i]).unwrap(),
        (0..n).find(|&j| !y[j]).unwrap(),
    );
    let row = x.row(i).into_owned();
    x.set_row(j, &row);
    (x, y)
}

fn random_params(family: Family, d: usize, seed: u64) -> Params {
    let mut r = stream(seed, &[2]);
    let mut p = Params::init(family, d, 1.0);
    for v in p.v.iter_mut() {
        *v = 0.4 * normal(&mut r);
    }
    p
}

fn explicit_pairs(x: &DMatrix<f64>, y: &[bool]) -> DMatrix<f64> {
    let (pos, neg): (Vec<usize>, Vec<usize>) = (0..y.len()).partition(|&i| y[i]);
    let d = x.ncols();
    let mut a = DMatrix::zeros(pos.len() * neg.len(), d);
    let mut r = 0;
    for &i in &pos {
        for &j in &neg {
            for k in 0..d {
                a[(r, k)] = x[(i, k)] - x[(j, k)];
            }
            r += 1;
        }
    }
    a
}

fn objective(x: &DMatrix<f64>, y: &[bool], loss: Loss, gamma: f64, p: &Params) -> (f64, Vec<f64>) {
    let r = if loss.is_ranking() {
        PairRisk::new(x, y).eval(p)
    } else {
        eval_items(&signed_rows(x, y), loss, p)
    };
    (
        gamma * r.value + p.kl(),
        p.objective_grad(gamma, &r.grad_m, &r.grad_sigma),
    )
}

/// Every family × loss: the analytic gradient of F equals central differences
/// (relative error ≤ 1e-6; the differences' own error is ~h² ≈ 1e-10).
#[test]
fn gradients_match_finite_differences() {
    let (x, y) = data(40, 4, 3);
    for family in FAMILIES {
        for loss in LOSSES {
            let p = random_params(family, 4, 7);
            let gamma = 30.0;
            let (_, g) = objective(&x, &y, loss, gamma, &p);
            let h = 1e-5;
            for (i, &gi) in g.iter().enumerate() {
                let (mut a, mut b) = (p.clone(), p.clone());
                a.v[i] += h;
                b.v[i] -= h;
                let fd = (objective(&x, &y, loss, gamma, &a).0
                    - objective(&x, &y, loss, gamma, &b).0)
                    / (2.0 * h);
                let err = (fd - gi).abs() / (1.0 + gi.abs());
                assert!(
                    err < 1e-6,
                    "{family:?} {loss:?} param {i}: analytic {gi} vs fd {fd}"
                );
            }
        }
    }
}

/// The GEMM/SIMD pair pass equals the explicit pair matrix (value and gradients).
#[test]
fn pair_pass_equals_explicit_pairs() {
    let (x, y) = data(57, 5, 11);
    let a = explicit_pairs(&x, &y);
    for family in FAMILIES {
        let p = random_params(family, 5, 5);
        let fast = PairRisk::new(&x, &y).eval(&p);
        let slow = eval_items(&a, Loss::Auc, &p);
        assert!((fast.value - slow.value).abs() < 1e-12, "{family:?}");
        for (u, v) in fast.grad_m.iter().zip(&slow.grad_m) {
            assert!((u - v).abs() < 1e-12, "{family:?} grad m");
        }
        let flat = |g: &SigmaGrad| match g {
            SigmaGrad::Trace(t) => vec![*t],
            SigmaGrad::Diag(v) => v.clone(),
            SigmaGrad::Full(m) => m.iter().copied().collect(),
        };
        for (u, v) in flat(&fast.grad_sigma).iter().zip(flat(&slow.grad_sigma)) {
            assert!((u - v).abs() < 1e-11, "{family:?} grad Σ {u} vs {v}");
        }
    }
}

/// The same bits with one thread and with two (blocks of one row each, to cross tasks).
#[test]
fn pair_pass_is_thread_count_independent() {
    let (x, y) = data(300, 6, 2);
    let p = random_params(Family::Full, 6, 1);
    let run = |t: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(t)
            .build()
            .unwrap();
        pool.install(|| PairRisk::new(&x, &y).eval(&p))
    };
    let (a, b) = (run(1), run(2));
    assert_eq!(a.value.to_bits(), b.value.to_bits());
    assert_eq!(a.grad_m, b.grad_m);
}

/// E_{t ~ N(μ, s²)} ℓ(t) in closed form against 10⁵ Monte Carlo draws
/// (within 4.5 standard errors), for each loss.
#[test]
fn closed_forms_match_monte_carlo() {
    let mut r = stream(9, &[3]);
    for &(mu, s) in &[(0.3, 0.8), (-0.5, 1.5), (1.2, 0.4)] {
        for loss in LOSSES {
            let f = |t: f64| match loss {
                Loss::Auc | Loss::ZeroOne => (t < 0.0) as u8 as f64,
                Loss::Hinge => (1.0 - t).max(0.0),
                Loss::Exp => (-t).exp(),
            };
            let n = 100_000;
            let draws: Vec<f64> = (0..n).map(|_| f(mu + s * normal(&mut r))).collect();
            let mean = draws.iter().sum::<f64>() / n as f64;
            let var = draws.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
            let se = (var / n as f64).sqrt();
            let (exact, _, _) = item(loss, mu, s * s, 1.0);
            assert!(
                (mean - exact).abs() < 4.5 * se,
                "{loss:?} μ={mu} s={s}: MC {mean} ± {se}, closed form {exact}"
            );
        }
    }
}

fn settings(family: Family, loss: Loss) -> VbSettings {
    VbSettings {
        family,
        loss,
        optimizer: Optimizer::FullBatch,
        ..VbSettings::default()
    }
}

/// At the optimum F3 ≤ F2 ≤ F1 (nested families; each fit warm-started from
/// the poorer family's optimum, so a descent method cannot end higher), and
/// every fit meets its convergence rule.
#[test]
fn richer_families_reach_lower_objectives() {
    let (x, y) = data(80, 4, 21);
    let prior = Prior::Gaussian { var: 1.0 };
    let ctl = Control::new();
    for loss in [Loss::Auc, Loss::Hinge] {
        let mut warm: Option<Params> = None;
        let mut prev = f64::INFINITY;
        for family in FAMILIES {
            let f = fit(
                &x,
                &y,
                &prior,
                40.0,
                &settings(family, loss),
                warm.as_ref(),
                &ctl,
                &mut |_| {},
            )
            .unwrap();
            assert!(f.converged, "{loss:?} {family:?}: {}", f.reason);
            assert!(
                f.objective <= prev + 1e-9,
                "{loss:?} {family:?}: {} > {prev}",
                f.objective
            );
            prev = f.objective;
            warm = Some(f.params);
        }
    }
}

/// The AUC objective is scale-free: with ϑ = 4 the means double and the
/// objective is unchanged (whitening makes the iterates identical).
#[test]
fn auc_fit_scales_with_the_prior_sd() {
    let (x, y) = data(60, 3, 4);
    let ctl = Control::new();
    let s = settings(Family::Full, Loss::Auc);
    let a = fit(
        &x,
        &y,
        &Prior::Gaussian { var: 1.0 },
        25.0,
        &s,
        None,
        &ctl,
        &mut |_| {},
    )
    .unwrap();
    let b = fit(
        &x,
        &y,
        &Prior::Gaussian { var: 4.0 },
        25.0,
        &s,
        None,
        &ctl,
        &mut |_| {},
    )
    .unwrap();
    assert!((a.objective - b.objective).abs() < 1e-10);
    for (u, v) in a.mean.iter().zip(&b.mean) {
        assert!((2.0 * u - v).abs() < 1e-9);
    }
}

/// Adam on random pair mini-batches reaches the full-batch optimum: objective
/// within 0.5% and means within 0.1 posterior sd (the stopping rule's 0.01 sd
/// per check plus the averaged iterate's mini-batch noise).
#[test]
fn stochastic_reaches_the_full_batch_optimum() {
    let (x, y) = data(400, 3, 8);
    let prior = Prior::Gaussian { var: 1.0 };
    let ctl = Control::new();
    let full = fit(
        &x,
        &y,
        &prior,
        200.0,
        &settings(Family::Diag, Loss::Auc),
        None,
        &ctl,
        &mut |_| {},
    )
    .unwrap();
    let s = VbSettings {
        optimizer: Optimizer::Stochastic,
        adam: AdamSettings {
            batch: 1024,
            ..AdamSettings::default()
        },
        ..settings(Family::Diag, Loss::Auc)
    };
    let sto = fit(&x, &y, &prior, 200.0, &s, None, &ctl, &mut |_| {}).unwrap();
    assert!(sto.converged, "{}", sto.reason);
    assert!(
        (sto.objective - full.objective).abs() <= 5e-3 * full.objective.abs(),
        "stochastic {} vs full {}",
        sto.objective,
        full.objective
    );
    for k in 0..3 {
        let sd = full.cov[(k, k)].sqrt();
        assert!(
            (sto.mean[k] - full.mean[k]).abs() < 0.1 * sd,
            "coordinate {k}: {:?} vs {:?}, sd {sd}",
            sto.mean,
            full.mean
        );
    }
}

/// γ by 3-fold CV through `select`: one mean held-out AUC per grid point (the
/// mean of the folds' AUCs, recomputed here from the held-out scores of a
/// direct `fit` on each fold's rows), the best one chosen, the same answer twice.
#[test]
fn cross_validation_picks_the_best_grid_point() {
    use crate::engine::data::prepare::{fold_indices, stratified_folds};
    let (x, y) = data(150, 3, 13);
    let cv = cv::VbCv {
        grid_over_n: vec![2.0, 0.05, 0.5],
        folds: 3,
        seed: 1,
    };
    let s = settings(Family::Diag, Loss::Auc);
    let ctl = Control::new();
    let prior = Prior::Gaussian { var: 1.0 };
    let a = cv::cross_validate(&x, &y, &prior, &s, &cv, &ctl, &mut |_| {}).unwrap();
    let r = &a.report;
    assert_eq!(r.grid, vec![0.05, 0.5, 2.0]);
    assert_eq!(r.parameter, "gamma_over_n");
    // The walk, by hand: folds from the same seed, warm starts upwards.
    let assignment = stratified_folds(&y, 3, 1);
    let mut sums = [0.0; 3];
    for f in 0..3 {
        let (tr, te) = fold_indices(&assignment, f);
        let (xt, xv) = (x.select_rows(&tr), x.select_rows(&te));
        let yt: Vec<bool> = tr.iter().map(|&i| y[i]).collect();
        let yv: Vec<bool> = te.iter().map(|&i| y[i]).collect();
        let mut warm = None;
        for (g, c) in r.grid.iter().enumerate() {
            let g_fit = fit(
                &xt,
                &yt,
                &prior,
                c * tr.len() as f64,
                &s,
                warm.as_ref(),
                &ctl,
                &mut |_| {},
            )
            .unwrap();
            let w = nalgebra::DVector::from_column_slice(&g_fit.mean);
            let auc = crate::engine::metrics::auc((&xv * w).as_slice(), &yv);
            assert_eq!(r.fold_auc[f][g], Some(auc), "fold {f}, γ = {c}n");
            sums[g] += auc;
            warm = Some(g_fit.params);
        }
    }
    let mean: Vec<Option<f64>> = sums.iter().map(|s| Some(s / 3.0)).collect();
    assert_eq!(r.mean_auc, mean);
    let best = sums.iter().copied().fold(0.0, f64::max) / 3.0;
    let i = r.grid.iter().position(|&c| c == r.chosen).unwrap();
    assert_eq!(r.mean_auc[i], Some(best));
    assert!(sums.iter().all(|&v| v / 3.0 > 0.5 && v / 3.0 <= 1.0));
    let b = cv::cross_validate(&x, &y, &prior, &s, &cv, &ctl, &mut |_| {}).unwrap();
    assert_eq!(r, &b.report);
}

/// The sampled E_ρ[R] (§14) against the pass over all items: over 20 seeds
/// every estimate lies within 4 of its standard errors (a normal tail of 6e-5
/// per seed) and the mean squared z-score is near 1 (χ²₂₀/20 ∈ [0.3, 2.2]
/// with probability > 0.99), so the stated SE is neither too small nor
/// wildly too large. Pairs (AUC) and rows (hinge), two families.
#[test]
fn sampled_risk_agrees_with_the_full_pass_within_its_standard_error() {
    let (x, y) = data(300, 4, 31);
    for (loss, family) in [(Loss::Auc, Family::Diag), (Loss::Hinge, Family::Full)] {
        let p = random_params(family, 4, 5);
        let (exact, rows);
        let items = if loss.is_ranking() {
            let mut pr = PairRisk::new(&x, &y);
            exact = pr.value(&p);
            stochastic::Items::pairs(&pr.pass.xp, &pr.pass.xn)
        } else {
            rows = signed_rows(&x, &y);
            exact = eval_items(&rows, loss, &p).value;
            stochastic::Items::Rows(&rows)
        };
        let mut z2 = 0.0;
        for seed in 0..20 {
            let e = stochastic::estimate_risk(&items, loss, &p, 5000, seed);
            let z = (e.value - exact) / e.se;
            assert!(
                z.abs() < 4.0,
                "{loss:?} seed {seed}: {} vs {exact} (se {})",
                e.value,
                e.se
            );
            z2 += z * z;
        }
        assert!(
            (0.3..2.2).contains(&(z2 / 20.0)),
            "{loss:?}: mean z² {}",
            z2 / 20.0
        );
    }
}

/// A stochastic fit above `exact_risk_max_items` reports the sampled risk with
/// its SE (and F = γ·R̂ + KL), within 4 SE of the full pass at its optimum;
/// below the limit it reports the exact value and no SE.
#[test]
fn stochastic_fit_reports_a_sampled_objective_above_the_limit() {
    let (x, y) = data(300, 3, 9);
    let prior = Prior::Gaussian { var: 1.0 };
    let ctl = Control::new();
    let s = VbSettings {
        optimizer: Optimizer::Stochastic,
        exact_risk_max_items: 1000,
        risk_sample: 20_000,
        adam: AdamSettings {
            batch: 512,
            max_steps: 2000,
            ..AdamSettings::default()
        },
        ..settings(Family::Diag, Loss::Auc)
    };
    let f = fit(&x, &y, &prior, 100.0, &s, None, &ctl, &mut |_| {}).unwrap();
    let e = f.risk_estimate.expect("more pairs than the limit");
    let exact = PairRisk::new(&x, &y).value(&f.params);
    assert!(
        (e.value - exact).abs() < 4.0 * e.se,
        "{} vs {exact} (se {})",
        e.value,
        e.se
    );
    assert!((f.objective - (100.0 * e.value + f.kl)).abs() < 1e-12);
    let below = VbSettings {
        exact_risk_max_items: usize::MAX,
        ..s
    };
    let g = fit(&x, &y, &prior, 100.0, &below, None, &ctl, &mut |_| {}).unwrap();
    assert!(g.risk_estimate.is_none());
    assert!((g.expected_risk - PairRisk::new(&x, &y).value(&g.params)).abs() < 1e-12);
}

/// The items a stochastic fit builds straight from x (`whitened_pairs`, no
/// whitened copy or class split) are bit for bit those of the class split of
/// the whitened rows, the path they replace.
#[test]
fn whitened_pairs_equal_the_pairs_of_the_whitened_split() {
    let (x, y) = data(57, 4, 3);
    let scale = [0.5, 2.0, 1.0, 3.0_f64.sqrt()];
    let mut xw = x.clone();
    for (k, mut col) in xw.column_iter_mut().enumerate() {
        col *= scale[k];
    }
    let pr = PairRisk::new(&xw, &y);
    let a = stochastic::Items::pairs(&pr.pass.xp, &pr.pass.xn);
    let b = stochastic::Items::whitened_pairs(&x, &y, &scale);
    match (a, b) {
        (
            stochastic::Items::Pairs { xp, xn, d },
            stochastic::Items::Pairs {
                xp: bp,
                xn: bn,
                d: bd,
            },
        ) => {
            assert_eq!(
                (d, xp.len(), xn.len()),
                (4, 4 * pr.pass.xp.nrows(), 4 * pr.pass.xn.nrows())
            );
            assert_eq!((xp, xn, d), (bp, bn, bd));
        }
        _ => panic!("pairs expected"),
    }
}
