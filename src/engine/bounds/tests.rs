//! Tests of the PAC-Bayes certificates (ALGORITHMS.md §9).

use nalgebra::DMatrix;

use super::*;
use crate::engine::metrics::auc_risk;
use crate::engine::numerics::rng::{normal, stream};
use crate::engine::prior::Prior;
use crate::engine::problem::Problem;

fn sizes(n_pos: usize, n_neg: usize) -> Sizes {
    Sizes { n_pos, n_neg, d: 5 }
}

/// Never below the empirical risk, for any empirical risk, KL and ε.
#[test]
fn never_below_the_empirical_risk() {
    for &emp in &[0.0, 0.1, 0.3, 0.5] {
        for &kl in &[0.0, 1.0, 50.0, 1e4] {
            for &eps in &[0.01, 0.05, 0.5] {
                let b = from_parts(emp, kl, sizes(100, 300), eps, "test");
                assert!(b.risk > b.empirical_risk, "{emp} {kl} {eps}: {}", b.risk);
                assert!(b.pacvb.risk > emp && b.pacvb.risk_at_theory_lambda > emp);
                let one = b.one_sample_risk.unwrap();
                assert!(one > emp && (one - b.risk_u / b.u_scale).abs() < 1e-15);
                assert!(b.floor.unwrap() <= b.risk && b.floor.unwrap() > emp);
            }
        }
    }
}

/// ρ = prior (KL = 0): the Hoeffding form is Hoeffding's inequality for
/// U-statistics with the union bound, `r + √(log(|G|/ε')/(2⌊n/2⌋))` on the U
/// scale (ε' = ε/2, its share), attained at λ* = √(8⌊n/2⌋ log(|G|/ε')); the
/// √2 grid costs at most (√2 + 1/√2)/2 − 1 ≈ 6%.
#[test]
fn kl_zero_reduces_to_hoeffding() {
    let s = sizes(200, 200);
    let b = from_parts(0.3, 0.0, s, 0.05, "prior");
    let g = lambda_grid(&s).len() as f64;
    let h = ((g / 0.025).ln() / (2.0 * s.blocks() as f64)).sqrt();
    let excess = b.hoeffding.risk_u - b.empirical_risk_u;
    assert!(b.risk < b.one_sample_risk.unwrap());
    assert!(
        excess >= h * (1.0 - 1e-12) && excess <= h * 1.0607,
        "{excess} vs {h}"
    );
}

/// At KL = 0 the headline is the two-sample bound at its floor: the
/// Chernoff-kl test-set bound with m = min(n₊, n₋) terms at ε/ξ(m).
#[test]
fn kl_zero_is_the_floor_and_the_test_set_bound() {
    use super::two_sample::{ln_xi, test_set_kl};
    let s = sizes(133, 266);
    let b = from_parts(0.13, 0.0, s, 0.05, "prior");
    assert_eq!(b.m, 133);
    assert_eq!(b.floor, Some(b.risk));
    let ts = test_set_kl(0.13, 133, 0.05 / ln_xi(133).exp());
    assert!((b.risk - ts).abs() < 1e-12, "{} vs {ts}", b.risk);
}

/// The two-sample form is tighter than the first version's one-sample forms
/// wherever the classes are unbalanced or the KL is large (it needs no
/// rescaling by 2p(1−p)); on Pima's figures (E_ρ R_n 0.132, KL 8.35, 133/266)
/// it is below the 0.36 where the old form gave 0.44.
#[test]
fn two_sample_is_tighter_than_the_first_version() {
    for &(p, n, emp, kl) in &[
        (133, 266, 0.132, 8.35),
        (67, 382, 0.16, 18.6),
        (580, 1800, 0.02, 81.0),
    ] {
        let b = from_parts(emp, kl, sizes(p, n), 0.05, "t");
        assert!(
            b.risk < b.one_sample_risk.unwrap(),
            "{p}/{n}: {} vs {:?}",
            b.risk,
            b.one_sample_risk
        );
    }
    let pima = from_parts(0.132, 8.35, sizes(133, 266), 0.05, "t");
    assert!(
        pima.risk < 0.36 && pima.one_sample_risk.unwrap() > 0.43,
        "{pima:?}"
    );
}

/// A record from before the two-sample form reads: its `risk` is the
/// one-sample bound (`form` "one_sample"), and `recompute` gives the new one.
#[test]
fn an_old_record_reads_and_recomputes() {
    let b = from_parts(0.132, 8.35, sizes(133, 266), 0.05, "gaussian");
    let mut v = serde_json::to_value(&b).unwrap();
    let m = v.as_object_mut().unwrap();
    for k in ["form", "m", "one_sample_risk", "floor"] {
        m.remove(k);
    }
    m.insert("risk".into(), serde_json::json!(b.one_sample_risk.unwrap()));
    let old: Bound = serde_json::from_value(v).unwrap();
    assert_eq!(old.form, "one_sample");
    assert_eq!(old.why_loose(), None);
    let again = recompute(&old, 0.05);
    assert_eq!(again.form, "two_sample_kl");
    assert!((again.risk - b.risk).abs() < 1e-15);
}

/// From draws, the Monte Carlo term widens the certificate; more draws
/// narrow it towards the exact-E_ρ R_n value (at ε less the draws' share).
#[test]
fn draws_widen_the_gibbs_certificate() {
    let s = sizes(200, 400);
    let (log_z, gamma, r) = (-30.0, 400.0, 0.06);
    let exact = certify_gibbs(log_z, gamma, r, s, 0.05);
    let few = fits::certify_gibbs_draws(log_z, gamma, r, 0.01, 200.0, 1, s, 0.05);
    let many = fits::certify_gibbs_draws(log_z, gamma, r, 0.01, 1e6, 1, s, 0.05);
    assert!(
        few.risk > many.risk && many.risk > exact.risk,
        "{} {} {}",
        few.risk,
        many.risk,
        exact.risk
    );
    assert!(many.risk - exact.risk < 0.01);
    assert_eq!(recompute(&few, 0.05), few);
}

/// The headline is the smallest candidate; the rest are kept, and `chosen` says so.
#[test]
fn the_best_candidate_is_the_headline() {
    let a = from_parts(0.2, 30.0, sizes(100, 100), 0.05, "a");
    let b = from_parts(0.22, 5.0, sizes(100, 100), 0.05, "b");
    let best = pick_best(vec![a.clone(), b.clone()]).unwrap();
    assert_eq!(best.rho, "b");
    assert_eq!(best.others, vec![a]);
    assert!(best.chosen.as_deref().unwrap().contains("costs nothing"));
    let again = recompute(&best, 0.01);
    assert_eq!(again.rho, "b");
    assert!(again.risk > best.risk);
}

/// A headline chosen among draws-based candidates (their Monte Carlo events
/// sharing DRAWS_SHARE·ε) and an exact one is valid on the intersection of one
/// PAC-Bayes event and all the Monte Carlo events: every candidate's PAC-Bayes
/// part runs at ε less the whole Monte Carlo budget, not less its own share.
#[test]
fn every_candidate_leaves_the_draws_budget_aside() {
    use super::two_sample::pac_bayes_kl;
    let s = sizes(100, 100);
    let gibbs = super::fits::certify_gibbs_draws(-20.0, 60.0, 0.2, 0.05, 800.0, 3, s, 0.05);
    let exact = from_parts(0.15, 5.0, s, 0.05, "exact");
    let best = pick_best(vec![gibbs, exact]).unwrap();
    let all: Vec<&Bound> = std::iter::once(&best).chain(&best.others).collect();
    let rest = 0.05 * (1.0 - DRAWS_SHARE);
    let exact = all.iter().find(|b| b.rho == "exact").unwrap();
    assert_eq!(exact.risk, pac_bayes_kl(0.15, 5.0, 100, rest));
    let gibbs = all.iter().find(|b| b.rho == "gibbs").unwrap();
    assert_eq!(gibbs.floor, Some(pac_bayes_kl(0.2, 0.0, 100, rest)));
    assert!(best.chosen.as_deref().unwrap().contains("leaves aside"));
    assert_eq!(recompute(&best, 0.05), best);
}

/// A certificate under another prior (the data-free one beside a split
/// prior's) is never chosen by `pick_best` or `recompute`: it stays beside.
#[test]
fn another_prior_is_not_a_candidate() {
    let mut split = from_parts(0.2, 2.0, sizes(50, 50), 0.05, "split");
    split.split = Some(SplitPrior {
        share: 0.5,
        prior_rows: 100,
        certified_rows: 100,
        prior: "t".into(),
        grid: 4,
    });
    super::settle(&mut split);
    let free = from_parts(0.01, 0.0, sizes(100, 100), 0.05, "free");
    assert!(free.risk < split.risk);
    split.others.push(free.clone());
    let best = pick_best(vec![split.clone()]).unwrap();
    assert_eq!(best.rho, "split");
    assert_eq!(best.chosen, None);
    let again = recompute(&best, 0.05);
    assert_eq!(again.rho, "split");
    assert_eq!(again.others[0].rho, "free");
}

/// The one-line meaning rounds the AUC down (it must not promise more).
#[test]
fn the_meaning_rounds_down() {
    let mut b = from_parts(0.1, 5.0, sizes(200, 400), 0.05, "t");
    b.risk = 0.3821;
    assert!(
        b.meaning()
            .starts_with("with 95% confidence, AUC ≥ 0.61 on new data"),
        "{}",
        b.meaning()
    );
    b.risk = 0.62;
    assert!(b.meaning().contains("vacuous"));
}

/// The same ρ on more data: a tighter bound.
#[test]
fn tightens_as_n_grows() {
    let mut last = f64::INFINITY;
    for n in [50, 200, 1000, 5000] {
        let b = from_parts(0.2, 10.0, sizes(n, 2 * n), 0.05, "t");
        assert!(b.risk < last);
        last = b.risk;
    }
}

/// E_ρ R_n of a Gaussian ρ equals the mean of R_n over 20 000 draws (4.5 SE),
/// and `recompute` at the same ε reproduces the certificate.
#[test]
fn gaussian_empirical_risk_matches_draws() {
    let mut r = stream(3, &[5]);
    let (n, d) = (120, 3);
    let x = DMatrix::from_fn(n, d, |_, _| normal(&mut r));
    let y: Vec<bool> = (0..n)
        .map(|i| x[(i, 0)] + 0.5 * x[(i, 1)] + normal(&mut r) > 0.3)
        .collect();
    let mean = vec![0.8, 0.3, -0.1];
    let cov = DMatrix::from_row_slice(3, 3, &[0.2, 0.05, 0.0, 0.05, 0.1, 0.02, 0.0, 0.02, 0.3]);
    let exact = gaussian_empirical_risk(&x, &y, &mean, &cov).unwrap();
    let l = nalgebra::Cholesky::new(cov.clone()).unwrap().l();
    let draws = 20_000;
    let risks: Vec<f64> = (0..draws)
        .map(|_| {
            let z = nalgebra::DVector::from_fn(d, |_, _| normal(&mut r));
            let t = &l * z + nalgebra::DVector::from_column_slice(&mean);
            auc_risk((&x * t).as_slice(), &y)
        })
        .collect();
    let m = risks.iter().sum::<f64>() / draws as f64;
    let sd = (risks.iter().map(|v| (v - m).powi(2)).sum::<f64>() / draws as f64).sqrt();
    assert!(
        (m - exact).abs() < 4.5 * sd / (draws as f64).sqrt(),
        "MC {m}, exact {exact}"
    );
    let pb = Problem::new(
        vec!["a".into(), "b".into(), "c".into()],
        x,
        y,
        50.0,
        Prior::Gaussian { var: 1.0 },
    )
    .unwrap();
    let b = certify_gaussian(&pb, &pb.prior, &mean, &cov, 0.05, "gaussian").unwrap();
    assert_eq!(recompute(&b, 0.05), b);
    assert!(recompute(&b, 0.01).risk > b.risk);
}

/// d = 1: θ > 0 has risk r, θ < 0 has 1 − r, so π_γ, log Z_γ and KL(π_γ‖π)
/// are exact; the Gibbs certificate's KL (from log Z and the mean risk) is the
/// exact KL.
#[test]
fn gibbs_kl_from_log_z_is_exact_in_one_dimension() {
    let (r, gamma): (f64, f64) = (0.27, 60.0);
    let (a, b) = ((-gamma * r).exp(), (-gamma * (1.0 - r)).exp());
    let log_z = (0.5 * a + 0.5 * b).ln();
    let (wp, wn) = (a / (a + b), b / (a + b));
    let kl = wp * (2.0 * wp).ln() + wn * (2.0 * wn).ln();
    let mean_risk = wp * r + wn * (1.0 - r);
    let bd = certify_gibbs(log_z, gamma, mean_risk, sizes(40, 60), 0.05);
    assert!((bd.kl - kl).abs() < 1e-12, "{} vs {kl}", bd.kl);
    assert!(bd.approximate.is_some());
}

/// The kl-inverse: kl(p‖q) at the returned q equals the budget; both forms
/// are valid bounds and `risk` is the smaller; with a small empirical risk the
/// kl form is the tighter one.
#[test]
fn kl_inverse_is_the_budget_edge() {
    for &(p, b) in &[(0.05, 0.1), (0.3, 0.01), (0.0, 0.2)] {
        let q = kl_inverse_upper(p, b);
        assert!(
            q > p && (kl_bernoulli(p, q) - b).abs() < 1e-9,
            "{p} {b}: {q}"
        );
    }
    let bd = from_parts(0.14, 5.0, sizes(177, 355), 0.05, "t");
    assert!(bd.kl_inverse.risk < bd.hoeffding.risk && bd.tighter == "kl_inverse");
    assert_eq!(
        bd.one_sample_risk,
        Some(bd.kl_inverse.risk.min(bd.hoeffding.risk))
    );
}

/// EP's reduced form (d ≥ n) gives a factored covariance: its certificate
/// equals the one of the same ρ written as a dense matrix.
#[test]
fn a_factored_covariance_gets_the_dense_certificate() {
    use crate::engine::ep::{Ep, Form};
    use crate::engine::interface::{Control, Engine, NoObserver};
    let mut r = stream(8, &[2]);
    let (n, d) = (24, 30);
    let x = DMatrix::from_fn(n, d, |_, _| normal(&mut r));
    let y: Vec<bool> = (0..n)
        .map(|i| x[(i, 0)] + x[(i, 1)] + normal(&mut r) > 0.0)
        .collect();
    let pb = Problem::new(
        (0..d).map(|k| format!("x{k}")).collect(),
        x,
        y,
        2.0 * n as f64,
        Prior::Gaussian { var: 0.5 },
    )
    .unwrap();
    let ep = Ep {
        form: Form::Reduced,
        ..Ep::default()
    };
    let fit = ep.run(&pb, &Control::new(), &mut NoObserver).unwrap();
    assert!(fit.covariance.is_none());
    let v = fit.low_rank_covariance.clone().expect("reduced form");
    let dense = DMatrix::from_diagonal(&nalgebra::DVector::from_vec(v.diag.clone()))
        + &v.factor * &v.core * v.factor.transpose();
    // The headline is the best spread's (`spread`): the same ρ, densely.
    let b = certify(&fit, &pb, 0.05).unwrap();
    let s = b.rho_spread.unwrap_or(1.0);
    let want = certify_gaussian(&pb, &pb.prior, &fit.mean, &(dense * s), 0.05, "gaussian").unwrap();
    assert!(
        (b.kl - want.kl).abs() < 1e-8 * want.kl,
        "{} vs {}",
        b.kl,
        want.kl
    );
    assert!((b.empirical_risk - want.empirical_risk).abs() < 1e-10);
    assert!((b.risk - want.risk).abs() < 1e-9);
}

/// gcs is certified like SMC through the Gibbs posterior, from its
/// stepping-stone log Z_γ and its draws' mean risk, with the draws' Gaussian
/// fit beside; without the evidence, or for the label-noise posterior, there
/// is no certificate and the error says why.
#[test]
fn gcs_is_certified_through_its_evidence_only() {
    use crate::engine::gcs::{Gcs, GcsSettings, Loss as GcsLoss};
    use crate::engine::interface::{Control, Engine, NoObserver};
    let mut r = stream(9, &[4]);
    let (n, d) = (60, 3);
    let x = DMatrix::from_fn(n, d, |_, _| normal(&mut r));
    let y: Vec<bool> = (0..n)
        .map(|i| x[(i, 0)] - 0.5 * x[(i, 1)] + normal(&mut r) > 0.0)
        .collect();
    let pb = Problem::new(
        (0..d).map(|k| format!("x{k}")).collect(),
        x,
        y,
        n as f64,
        Prior::Gaussian { var: 1.0 },
    )
    .unwrap();
    let run = |loss, evidence| {
        let gcs = Gcs {
            settings: GcsSettings {
                min_ess: 50.0,
                max_steps: 600,
                loss,
                evidence,
                ..GcsSettings::default()
            },
        };
        gcs.run(&pb, &Control::new(), &mut NoObserver).unwrap()
    };
    let fit = run(GcsLoss::Auc, true);
    let log_z = fit.log_evidence.expect("evidence");
    let mean_risk = fit.details["risk"]["mean"].as_f64().unwrap();
    let head = certify(&fit, &pb, 0.05).unwrap();
    let all: Vec<&Bound> = std::iter::once(&head).chain(&head.others).collect();
    let mut rhos: Vec<&str> = all.iter().map(|c| c.rho.as_str()).collect();
    rhos.sort();
    rhos.dedup();
    // The draws' Gaussian at its best spread, and its own (s = 1) if another won.
    assert_eq!(rhos, ["draws_gaussian", "gibbs"]);
    assert!(all.len() <= 3);
    assert!(all.iter().all(|c| head.risk <= c.risk));
    let b = all.iter().find(|c| c.rho == "gibbs").unwrap();
    assert!(b.approximate.as_deref().unwrap().contains("stepping-stone"));
    let kl = (-log_z - pb.gamma * mean_risk).max(0.0);
    assert!((b.kl - kl).abs() < 1e-12 && (b.empirical_risk - mean_risk).abs() < 1e-15);
    assert!(b.risk > b.empirical_risk);
    // Without stepping stones: the draws' Gaussian fit alone, the same
    // certificate as that candidate beside the Gibbs posterior's.
    let mut without = fit.clone();
    without.log_evidence = None;
    let alone = certify(&without, &pb, 0.05).unwrap();
    let beside = all
        .iter()
        .find(|c| c.rho == "draws_gaussian" && c.rho_spread == alone.rho_spread)
        .unwrap();
    assert_eq!(alone.rho, "draws_gaussian");
    assert!(alone.others.iter().all(|o| o.rho == "draws_gaussian"));
    assert_eq!(alone.risk, beside.risk);
    without.covariance = None;
    let e = certify(&without, &pb, 0.05).unwrap_err();
    assert!(e.contains("only with `evidence`"), "{e}");
    let noise = run(
        GcsLoss::LabelNoise {
            noise: 0.2,
            intercept: true,
        },
        true,
    );
    let e = certify(&noise, &pb, 0.05).unwrap_err();
    assert!(
        e.contains("label-noise") && e.contains("not the Gibbs posterior"),
        "{e}"
    );
}

/// A certificate at or above ½ is a coded warning of the record (`quality`);
/// a tight one, or none, is not.
#[test]
fn vacuous_certificates_are_coded() {
    use crate::engine::fit::{Fit, ScoreModel};
    use crate::engine::quality::{assess, code};
    let mut f = Fit::new(
        crate::engine::fit::EngineKind::Vb,
        vec!["a".into()],
        ScoreModel::Linear { weights: vec![1.0] },
    );
    assert!(assess(&f, &[]).is_empty());
    // E_ρ R_n = 0.1 with a small KL: tight.
    f.bound = Some(from_parts(0.1, 2.0, sizes(100, 200), 0.05, "gaussian"));
    assert!(!f.bound.as_ref().unwrap().is_vacuous());
    assert!(assess(&f, &[]).is_empty());
    // E_ρ R_n = 0.45: the bound can only be above ½.
    f.bound = Some(from_parts(0.45, 2.0, sizes(100, 200), 0.05, "gaussian"));
    let risk = f.bound.as_ref().unwrap().risk;
    assert!(risk >= VACUOUS_RISK);
    let w = assess(&f, &[]);
    assert_eq!(w.len(), 1);
    assert_eq!(w[0].code, code::CERTIFICATE_VACUOUS);
    assert!(
        w[0].message.contains(&format!("{risk:.4}")),
        "{}",
        w[0].message
    );
    assert!(!w[0].undermines_convergence());
}
