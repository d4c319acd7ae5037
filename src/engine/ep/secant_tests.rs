//! The secant step's linear aggregates against the kernel's pass.

use super::*;
use crate::engine::ep::design::identical_pairs;
use crate::engine::ep::posterior::PriorTerms;
use crate::engine::ep::settings::EpSettings;
use crate::engine::ep::site::StepFactor;
use crate::engine::ep::store::Precision;
use crate::engine::ep::tests::{split, toy};
use crate::engine::interface::Control;

fn state(precision: Precision, held: bool) -> (PairEp, f64) {
    let (x, y) = toy(120, 3, 5, 1.0);
    let (xp, xn) = split(&x, &y);
    let excl = identical_pairs(&xp, &xn);
    let g = 120.0 / (xp.nrows() * xn.nrows()) as f64;
    let prior = PriorTerms::centred(&[1.0; 3]);
    let mut ep = PairEp::new(xp, xn, excl, prior, precision).unwrap();
    ep.held.on = held;
    (ep, g)
}

/// Plain damped sweeps (pass, accept, rebuild).
fn sweeps(ep: &mut PairEp, g: f64, k: usize) {
    for _ in 0..k {
        ep.pass_from_q(g, Some(0.7), false);
        ep.accept_trial();
        assert!(ep.rebuild(StepFactor::new(g)));
    }
}

fn close(a: &PairEp, b: &PairEp, tol: f64) {
    let (qa, qb) = (a.posterior().unwrap(), b.posterior().unwrap());
    for (k, sd) in qb.sd().into_iter().enumerate() {
        assert!(
            (qa.m[k] - qb.m[k]).abs() < tol * sd,
            "{} {}",
            qa.m[k],
            qb.m[k]
        );
        assert!((qa.v[(k, k)].sqrt() / sd - 1.0).abs() < tol);
    }
}

#[test]
fn scaled_step_and_its_undo_match_the_kernel_pass() {
    for precision in [Precision::F64, Precision::F32] {
        let (mut a, g) = state(precision, true);
        let (mut b, _) = state(precision, false);
        let step = StepFactor::new(g);
        sweeps(&mut a, g, 3);
        sweeps(&mut b, g, 3);
        // A plain step, then scaled by 3: linear aggregates (a) against the
        // kernel's Relax pass (b).
        for ep in [&mut a, &mut b] {
            ep.pass_from_q(g, Some(0.7), false);
            ep.accept_trial();
        }
        let before = a.scale_step(g, 3.0);
        assert!(before > 0.0);
        b.relax_current(g, 3.0);
        assert!(a.rebuild(step) && b.rebuild(step));
        close(&a, &b, 1e-9);
        // The judging pass at the scaled point, then the undo back to the
        // plain step (its aggregates from the held ones).
        a.pass_from_q(g, Some(0.7), false);
        a.scale_step(g, 1.0 / 3.0);
        b.relax_current(g, 1.0 / 3.0);
        assert!(a.rebuild(step) && b.rebuild(step));
        close(&a, &b, 1e-9);
        // And the run goes on from there as plain sweeps.
        sweeps(&mut a, g, 2);
        sweeps(&mut b, g, 2);
        close(&a, &b, 1e-9);
    }
}

#[test]
fn a_mixed_trial_takes_the_held_aggregates_combined() {
    let (mut a, g) = state(Precision::F64, true);
    let step = StepFactor::new(g);
    sweeps(&mut a, g, 2);
    // Two trials, held under slots 3 and 0, and their sites.
    let len = 2 * a.site_count();
    let mut trials = Vec::new();
    for slot in [3, 0] {
        a.pass_from_q(g, Some(0.7), false);
        let mut t = vec![0.0; len];
        // x at a sample, read in the same pass: the current sites there.
        let at: Vec<usize> = (0..len).step_by(7).chain([len - 1]).collect();
        let mut x = vec![f64::NAN; at.len()];
        a.stage_trial(slot, &mut t, &at, &mut x);
        let cur = a.sites_vec();
        assert!(at.iter().zip(&x).all(|(&i, &v)| v == cur[i]));
        trials.push(t);
        a.accept_trial();
        assert!(a.rebuild(step));
    }
    // Newest first, as `Anderson::mix` gives them.
    let w = [(0, 1.4), (3, -0.4)];
    let v: Vec<f64> = trials[1]
        .iter()
        .zip(&trials[0])
        .map(|(x, y)| w[0].1 * x + w[1].1 * y)
        .collect();
    let mut slots = vec![Vec::new(); 4];
    (slots[3], slots[0]) = (trials[0].clone(), trials[1].clone());
    a.pass_from_q(g, Some(0.7), false);
    assert!(a.mix_trial((&slots, &w)));
    a.accept_trial();
    assert!(a.agg_valid);
    assert!(a.rebuild(step));
    // The obvious way: the same sites, aggregated by the kernel's pass.
    let (mut b, _) = state(Precision::F64, false);
    b.load_sites(&v);
    assert!(b.rebuild(step));
    close(&a, &b, 1e-9);
}

/// With its secant steps the controller reaches plain damping's fixed point.
#[test]
fn the_controller_reaches_the_plain_fixed_point() {
    let s = |extrapolate| EpSettings {
        tol: 1e-7,
        extrapolate,
        ..EpSettings::default()
    };
    let mut out = Vec::new();
    for c in [false, true] {
        let (mut ep, g) = state(Precision::F64, false);
        let o = ep.run(g, &s(c), &Control::new(), &mut |_| {}).unwrap();
        out.push((ep, o.sweeps));
    }
    close(&out[1].0, &out[0].0, 1e-5);
}
