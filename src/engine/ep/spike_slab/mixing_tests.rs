//! The anderson controller's mixing of spike-and-slab EP's sites (`mixing`).

use super::gaussian_lik::GaussianLik;
use super::prior_sites::{MixturePrior, PriorSites};
use super::sweep::{self, LikelihoodSites, SsOutcome, SsSettings};
use super::tests::regression;
use crate::engine::ep::settings::EpSettings;
use crate::engine::interface::Control;

/// A run with the controller's accelerated steps or without (plain damping).
fn run(extrapolate: bool, eta: f64) -> (SsOutcome, Vec<f64>) {
    let (x, y) = regression(30, 8, false, 5);
    let prior = MixturePrior {
        spike: 1e-3,
        slab: 1.0,
        incl: 0.3,
    };
    let s = SsSettings {
        ep: EpSettings {
            eta,
            tol: 1e-10,
            max_sweeps: 5000,
            extrapolate,
            ..EpSettings::default()
        },
        ..SsSettings::default()
    };
    let mut lik = GaussianLik::new(&x, &y, 0.25);
    let mut sites = PriorSites::init(8, &prior);
    let out = sweep::run(
        &mut lik,
        &mut sites,
        &prior,
        &s,
        &Control::new(),
        &mut |_| {},
    )
    .unwrap_or_else(|e| panic!("extrapolate {extrapolate}: {e:?}"));
    (out, lik.posterior().m.iter().copied().collect())
}

/// A correlated design at a small step: the prior sites creep to their fixed
/// point (plain damping: hundreds of sweeps); the controller mixes them
/// (the Gaussian likelihood has no sites of its own) and reaches plain
/// damping's fixed point in a fraction of the sweeps. Without mixing the
/// secant is all it has, which this toy does not offer (no `scale_step`).
#[test]
fn mixing_the_prior_sites_reaches_the_plain_fixed_point_fast() {
    let eta = 0.1;
    let (c, cm) = run(false, eta);
    let (a, am) = run(true, eta);
    let (zc, za) = (c.evidence.log_z().unwrap(), a.evidence.log_z().unwrap());
    eprintln!(
        "sweeps plain {} anderson {}; log Z {zc} vs {za}",
        c.sweeps, a.sweeps
    );
    assert!((zc - za).abs() <= 1e-6 * zc.abs(), "log Z {zc} vs {za}");
    for k in 0..8 {
        assert!(
            (cm[k] - am[k]).abs() < 1e-6,
            "mean {k}: {} vs {}",
            cm[k],
            am[k]
        );
        assert!(
            (c.inclusion[k] - a.inclusion[k]).abs() < 1e-6,
            "inclusion {k}"
        );
    }
    assert!(
        a.sweeps * 3 < c.sweeps,
        "{} vs {} sweeps",
        a.sweeps,
        c.sweeps
    );
}
