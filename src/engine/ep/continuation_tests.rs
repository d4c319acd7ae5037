use super::*;
use crate::engine::ep::linear::{LinearEp, LinearPath};
use crate::engine::ep::settings::EpSettings;
use crate::engine::ep::spike_slab::model::{SpikeSlab, SpikeSlabEp, SsPath};
use crate::engine::ep::spike_slab::sweep::SsSettings;
use crate::engine::ep::stop::EpStop;
use crate::engine::ep::tests::toy;
use crate::engine::ep::{Form, Precision};
use crate::engine::interface::Control;
use serde_json::json;

/// κ sets the step: half the move per step doubles the step, up to the caps.
#[test]
fn the_step_follows_the_move() {
    let (s, by_move) = next_step(1.0, 0.2, 2.0);
    assert!((s - 0.1).abs() < 1e-15 && by_move);
    // A small move: at most twice the last step, at most MAX_STEP.
    assert_eq!(next_step(1.0, 0.2, 0.01), (0.4, false));
    assert_eq!(next_step(1.0, 1.0, 0.01), (MAX_STEP, false));
    // No move measured: the cap.
    assert_eq!(next_step(1.0, 0.3, 0.0), (0.6, false));
    assert_eq!(next_step(1.0, 0.3, f64::NAN), (0.6, false));
}

/// A state whose fixed point exists only up to `limit` and whose "posterior"
/// mean is log γ (so the move per step is the step itself).
struct Mock {
    limit: f64,
    /// From the prior (no earlier point) the fixed point is in reach only up
    /// to this γ.
    cold_limit: f64,
    /// A failure raises `limit` to the γ that failed (a retry from a nearer
    /// start converges there).
    heal: bool,
    /// From a smaller γ's sites (a slow drift from below) only up to this γ.
    drift: f64,
    gamma: Option<f64>,
    runs: Vec<(f64, bool)>,
}

impl Mock {
    fn new(limit: f64, cold_limit: f64, heal: bool) -> Mock {
        Mock {
            limit,
            cold_limit,
            heal,
            drift: f64::INFINITY,
            gamma: None,
            runs: Vec::new(),
        }
    }
}

impl Continuable for Mock {
    type Snapshot = Option<f64>;
    type Outcome = f64;
    fn snapshot(&self) -> Option<f64> {
        self.gamma
    }
    fn restore(&mut self, s: &Option<f64>) {
        self.gamma = *s;
    }
    fn reset(&mut self) {
        self.gamma = None;
    }
    fn run_at(&mut self, gamma: f64, target: bool) -> Result<(f64, usize, f64), EngineError> {
        self.runs.push((gamma, target));
        assert!(
            self.runs.len() < 200,
            "the walk does not end: {:?}",
            self.runs
        );
        let from_below = self.gamma.is_some_and(|g| g < gamma);
        if gamma > self.limit
            || self.gamma.is_none() && gamma > self.cold_limit
            || from_below && gamma > self.drift
        {
            if self.heal {
                self.limit = self.limit.max(gamma);
            }
            return Err(EngineError::not_converged(
                NonConvergence::NoProgress,
                "no progress",
                json!({ "sweeps": 50 }),
            )
            .with_account(EpStop::run(50, RunFailure::new(NonConvergence::NoProgress))));
        }
        self.gamma = Some(gamma);
        Ok((gamma, 7, if target { 1e-4 } else { 1e-3 }))
    }
    fn marginal(&self) -> Marginal {
        Marginal {
            mean: vec![self.gamma.map_or(0.0, f64::ln)],
            var: vec![1.0],
        }
    }
}

/// `reach` runs the target directly first: one run where it converges;
/// where it does not, the walk from the prior, the failed direct run first
/// in the path.
#[test]
fn the_target_is_tried_directly_first() {
    let mut m = Mock::new(f64::INFINITY, f64::INFINITY, false);
    let (out, path) = reach(&mut m, 100.0, 10, 1.0, &mut |_| {}).unwrap();
    assert_eq!((out, path.points.len(), path.sweeps), (100.0, 1, 7));
    assert_eq!(m.runs, vec![(100.0, true)]);
    let mut m = Mock::new(f64::INFINITY, 5.0, false);
    let (out, path) = reach(&mut m, 100.0, 10, 1.0, &mut |_| {}).unwrap();
    assert_eq!(out, 100.0);
    let p = &path.points;
    assert!(!p[0].converged && p[0].gamma == 100.0 && p[0].error.is_some());
    assert_eq!(p[0].failure.unwrap().reason, NonConvergence::NoProgress);
    assert_eq!(p[1].gamma, 10.0 / 16.0);
    assert!(p[1..].iter().all(|q| q.converged) && p.len() > 3);
    assert_eq!(path.sweeps, 50 + 7 * (p.len() - 1));
}

/// A walk that fails keeps the failed direct run first in its record: in
/// the error's typed account, and as its diagnostics show it (`gamma_path`,
/// rendered from the account; the error's own JSON has no path to edit).
#[test]
fn a_failed_walk_records_the_direct_run() {
    let mut m = Mock::new(30.0, f64::INFINITY, false);
    let err = reach(&mut m, 100.0, 10, 1.0, &mut |_| {}).unwrap_err();
    let stop = EpStop::of(&err).expect("EP's account");
    let typed = stop.path.as_ref().expect("the path");
    assert!(typed.points[0].direct);
    assert_eq!(
        typed.points[0].failure.map(|f| f.reason),
        Some(NonConvergence::NoProgress)
    );
    let sweeps: usize = typed.points.iter().map(|p| p.sweeps).sum();
    assert_eq!(typed.sweeps, sweeps);
    // The error's `sweeps` are the walk's own (as records have shown them).
    assert_eq!(stop.sweeps, sweeps - typed.points[0].sweeps);
    let EngineError::NotConverged { diagnostics, .. } = &err else {
        panic!("{err:?}")
    };
    assert!(diagnostics.get("gamma_path").is_none());
    assert_eq!(diagnostics["sweeps"], stop.sweeps);
    let shown = err.diagnostics().unwrap();
    assert_eq!(shown["gamma_path"], json!(typed));
    assert_eq!(
        shown["gamma_path"]["points"][0]["failure"]["reason"],
        "no progress"
    );
}

/// A γ that failed and later converges from a nearer start lifts the
/// bisection's bound: the walk goes on towards the target (it looped at that γ
/// for ever: glass spike-and-slab, split 2, under power EP).
#[test]
fn a_failed_gamma_that_converges_later_lifts_the_bound() {
    let mut m = Mock::new(30.0, f64::INFINITY, true);
    // Every new γ above 30 fails once here, so the walk ends in the verdict
    // (its last step under `MIN_STEP`) at or above the first failed γ, 40 (it
    // looped there before; with ×4 steps it ended above 90, with the grid's
    // ×2 at 40).
    let reached = match walk(&mut m, 100.0, 10, 1.0, &mut |_| {}) {
        Ok((out, _)) => out,
        Err(EngineError::NotConverged { diagnostics, .. }) => {
            diagnostics["detail"]["verdict"]["reached"]
                .as_f64()
                .unwrap()
        }
        Err(e) => panic!("{e:?}"),
    };
    assert!(reached >= 40.0, "{reached}");
}

/// Where power EP follows (`Bisect::HandOver`) the walk ends at its first
/// failed point after a converged one, with the same typed verdict; before
/// any converged point a failed γ₀ is still retried smaller.
#[test]
fn a_walk_handing_over_ends_at_its_first_failed_point() {
    let mut m = Mock::new(30.0, f64::INFINITY, false);
    let err = reach_with(&mut m, 100.0, 10, 1.0, Bisect::HandOver, &mut |_| {}).unwrap_err();
    let path = EpStop::of(&err).and_then(|s| s.path.clone()).unwrap();
    let failed: Vec<_> = path.points.iter().filter(|p| !p.converged).collect();
    assert_eq!(failed.len(), 2, "{path:?}");
    assert!(failed[0].direct && !path.points.last().unwrap().converged);
    let shown = err.diagnostics().unwrap();
    assert_eq!(shown["detail"]["verdict"]["handed_over"], true);
    assert_eq!(
        err.non_convergence(),
        Some(NonConvergence::NoFixedPointInReach)
    );
    // The full bisection on the same state fails again and again.
    let mut m = Mock::new(30.0, f64::INFINITY, false);
    let err = reach(&mut m, 100.0, 10, 1.0, &mut |_| {}).unwrap_err();
    let path = EpStop::of(&err).and_then(|s| s.path.clone()).unwrap();
    assert!(path.points.iter().filter(|p| !p.converged).count() > 3);
    // γ₀ failing from the prior is retried once, at the floor.
    let mut m = Mock::new(f64::INFINITY, 0.3, false);
    let (out, _) = walk_with(&mut m, 100.0, 10, 1.0, Bisect::HandOver, &mut |_| {}).unwrap();
    assert_eq!(
        (out, m.runs[0].0, m.runs[1].0),
        (100.0, 0.625, MIN_OVER_N * 10.0)
    );
    // Where the walk converges it is the full walk, point for point.
    let mut a = Mock::new(f64::INFINITY, 5.0, false);
    let mut b = Mock::new(f64::INFINITY, 5.0, false);
    let pa = reach_with(&mut a, 100.0, 10, 1.0, Bisect::HandOver, &mut |_| {}).unwrap();
    let pb = reach(&mut b, 100.0, 10, 1.0, &mut |_| {}).unwrap();
    assert_eq!((pa, a.runs), (pb, b.runs));
}

/// Where every point converges the path climbs by the largest steps and ends
/// exactly at the target; κ = ¼ takes steps of ¼ in log γ.
#[test]
fn the_path_ends_at_the_target() {
    let mut m = Mock::new(f64::INFINITY, f64::INFINITY, false);
    let (out, path) = walk(&mut m, 100.0, 10, 1.0, &mut |_| {}).unwrap();
    assert_eq!(out, 100.0);
    let last = path.points.last().unwrap();
    assert_eq!((last.gamma, last.tol), (100.0, 1e-4));
    assert_eq!(path.points[0].gamma, 10.0 / 16.0);
    assert!(path.points.iter().all(|p| p.converged));
    assert_eq!(path.sweeps, 7 * path.points.len());
    assert_eq!(m.runs.iter().filter(|r| r.1).count(), 1);
    let mut m = Mock::new(f64::INFINITY, f64::INFINITY, false);
    let (_, path) = walk(&mut m, 100.0, 10, 0.25, &mut |_| {}).unwrap();
    let p = &path.points;
    for w in p[2..p.len() - 1].windows(2) {
        assert!(((w[1].gamma / w[0].gamma).ln() - 0.25).abs() < 1e-9);
        assert_eq!(w[1].shortened, Some(Shortened::Move));
    }
}

/// Beyond the last fixed point the gap to the smallest failed γ is bisected
/// until `MIN_STEP`, then a typed verdict names the largest γ reached (within
/// two `MIN_STEP`s of the limit).
#[test]
fn no_fixed_point_gives_a_verdict() {
    let mut m = Mock::new(30.0, f64::INFINITY, false);
    let err = walk(&mut m, 100.0, 10, 1.0, &mut |_| {}).unwrap_err();
    let diagnostics = err.diagnostics().expect("NotConverged");
    let EngineError::NotConverged {
        message, reason, ..
    } = err
    else {
        panic!("{err:?}")
    };
    assert!(message.contains("no fixed point in reach"), "{message}");
    assert_eq!(reason, NonConvergence::NoFixedPointInReach);
    let reached = diagnostics["detail"]["verdict"]["reached"]
        .as_f64()
        .unwrap();
    assert!(
        reached <= 30.0 && reached > 30.0 * (-2.0 * MIN_STEP).exp(),
        "{reached}"
    );
    assert_eq!(diagnostics["detail"]["reason"], "no fixed point in reach");
    let failed = diagnostics["gamma_path"]["points"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["converged"] == false)
        .count();
    // Bisection below the smallest failed γ: at most log2(MAX_STEP/MIN_STEP) + 2.
    assert!((1..=9).contains(&failed), "{failed}");
    // A point after a failure starts from the last converged one.
    assert!(m.runs.windows(2).all(|w| w[1].0 > 0.0));
}

fn linear_fixed_point(lep: &LinearEp) -> (Vec<f64>, Vec<f64>) {
    (lep.mean(), lep.sd())
}

/// Gaussian EP: the continuation's fixed point at γ = 4n is the converged
/// cold run's (means within 1e-6 sd, sds within 1e-6 relative, at tol 1e-10),
/// and log Z agrees to 1e-7 relative.
#[test]
fn gaussian_continuation_reaches_the_cold_fixed_point() {
    let (x, y) = toy(300, 5, 11, 0.7);
    let s = EpSettings {
        tol: 1e-10,
        ..EpSettings::default()
    };
    let gamma = 4.0 * 300.0;
    let ctl = Control::new();
    let mut cold = LinearEp::new(&x, &y, &[1.0; 5], Form::Primal, Precision::F64).unwrap();
    let oc = cold.run(gamma, &s, &ctl, &mut |_, _| {}).unwrap();
    let mut lep = LinearEp::new(&x, &y, &[1.0; 5], Form::Primal, Precision::F64).unwrap();
    let mut lp = LinearPath {
        lep: &mut lep,
        settings: s,
        ctl: &ctl,
        on_sweep: &mut |_, _| {},
    };
    let (ow, path) = walk(&mut lp, gamma, 300, KAPPA, &mut |_| {}).unwrap();
    assert!(path.points.len() >= 4, "{path:?}");
    let ((mc, sc), (mw, sw)) = (linear_fixed_point(&cold), linear_fixed_point(&lep));
    for k in 0..5 {
        assert!((mc[k] - mw[k]).abs() < 1e-6 * sc[k], "mean {k}");
        assert!((sw[k] / sc[k] - 1.0).abs() < 1e-6, "sd {k}");
    }
    let (zc, zw) = (oc.evidence.log_z().unwrap(), ow.evidence.log_z().unwrap());
    assert!((zc - zw).abs() < 1e-7 * zc.abs(), "{zc} vs {zw}");
}

/// Spike-and-slab EP: the continuation reaches the converged cold run's
/// fixed point (means within 1e-5 sd, inclusion within 1e-5, at tol 1e-10).
#[test]
fn spike_slab_continuation_reaches_the_cold_fixed_point() {
    let (x, y) = toy(120, 6, 5, 0.8);
    let prior = SpikeSlab {
        spike_var: 1e-2,
        slab_var: 1.0,
        incl: 0.5,
    };
    let s = SsSettings {
        ep: EpSettings {
            tol: 1e-10,
            ..EpSettings::default()
        },
        ..SsSettings::default()
    };
    let gamma = 120.0;
    let ctl = Control::new();
    let mut cold = SpikeSlabEp::new(&x, &y, prior, Precision::F64).unwrap();
    let oc = cold.run(gamma, &s, &ctl, &mut |_, _| {}).unwrap();
    let mut warm = SpikeSlabEp::new(&x, &y, prior, Precision::F64).unwrap();
    let mut sp = SsPath {
        model: &mut warm,
        settings: s,
        ctl: &ctl,
        on_sweep: &mut |_, _| {},
        new_run: &mut || {},
    };
    let (ow, path) = walk(&mut sp, gamma, 120, KAPPA, &mut |_| {}).unwrap();
    assert!(path.points.len() >= 3, "{path:?}");
    let (mc, sc, mw) = (cold.mean(), cold.sd(), warm.mean());
    for k in 0..6 {
        assert!((mc[k] - mw[k]).abs() < 1e-5 * sc[k], "mean {k}");
        assert!(
            (oc.inclusion[k] - ow.inclusion[k]).abs() < 1e-5,
            "inclusion {k}"
        );
    }
}

/// A walk from below that ends in a drift short of the target (the verdict's
/// bisection) reaches it from the prior under `Bisect::FromPrior`; the tries
/// are in the path. `ToMinStep` ends in the verdict as before.
#[test]
fn a_drift_from_below_is_reached_from_the_prior() {
    let drifting = |cold_limit| Mock {
        drift: 30.0,
        ..Mock::new(f64::INFINITY, cold_limit, false)
    };
    let mut m = drifting(f64::INFINITY);
    let err = walk(&mut m, 40.0, 10, 1.0, &mut |_| {}).unwrap_err();
    let path = EpStop::of(&err).and_then(|s| s.path.clone()).unwrap();
    assert!(path.points.iter().all(|p| !p.from_prior));
    let mut m = drifting(f64::INFINITY);
    let (out, path) = walk_with(&mut m, 40.0, 10, 1.0, Bisect::FromPrior, &mut |_| {}).unwrap();
    let last = path.points.last().unwrap();
    assert_eq!(out, 40.0);
    assert!(
        last.from_prior && last.converged && last.tol == 1e-4,
        "{last:?}"
    );
    assert_eq!(m.runs.last(), Some(&(40.0, true)));
    // Where the prior's start fails at γ: at 2γ and warm down (here failing too).
    let mut m = drifting(35.0);
    let err = walk_with(&mut m, 40.0, 10, 1.0, Bisect::FromPrior, &mut |_| {}).unwrap_err();
    let path = EpStop::of(&err).and_then(|s| s.path.clone()).unwrap();
    let tried: Vec<_> = path
        .points
        .iter()
        .filter(|p| p.from_prior)
        .map(|p| p.gamma)
        .collect();
    assert_eq!(tried, vec![40.0, 80.0]);
}

/// A walk whose γ₀ fails from the prior tries the floor once and no γ below
/// it; a target below γ₀ that fails from the prior is retried at the floor too.
#[test]
fn a_walk_goes_no_lower_than_the_floor() {
    let mut m = Mock::new(f64::INFINITY, 0.0, false);
    let err = walk(&mut m, 100.0, 10, 1.0, &mut |_| {}).unwrap_err();
    assert_eq!(
        err.non_convergence(),
        Some(NonConvergence::NoFixedPointInReach)
    );
    assert_eq!(m.runs, vec![(0.625, false), (MIN_OVER_N * 10.0, false)]);
    let mut m = Mock::new(f64::INFINITY, 0.05, false);
    let (out, path) = walk(&mut m, 0.1, 10, 1.0, &mut |_| {}).unwrap();
    assert_eq!(
        (out, m.runs[0], m.runs[1].0),
        (0.1, (0.1, true), MIN_OVER_N * 10.0)
    );
    assert!(path.points.iter().all(|p| p.gamma >= MIN_OVER_N * 10.0));
    // A target at the floor that fails ends at once.
    let mut m = Mock::new(f64::INFINITY, 0.0, false);
    assert!(walk(&mut m, MIN_OVER_N * 10.0, 10, 1.0, &mut |_| {}).is_err());
    assert_eq!(m.runs.len(), 1);
}
