//! Tests of `cv`: the grid's extension, the folds' start.

use super::*;
use crate::engine::ep::folds;
use crate::engine::ep::tests::toy;
use crate::engine::select::CvReport;
use nalgebra::DMatrix;

pub struct CvSettings<'a> {
    pub grid_over_n: &'a [f64],
    pub folds: usize,
    pub seed: u64,
    pub form: Form,
    pub precision: Precision,
    pub ep: &'a EpSettings,
    pub ard: Option<&'a ArdSettings>,
    pub pairs: Option<PairSampling>,
}

pub struct CvOutcome {
    pub report: CvReport,
    pub start: Option<Posterior>,
}

/// The run's CV of γ/n (`run::run`) with these settings.
pub fn cross_validate(
    x: &DMatrix<f64>,
    y: &[bool],
    vars: &[f64],
    cv: &CvSettings<'_>,
    ctl: &Control,
    log: &mut dyn FnMut(String),
) -> Result<CvOutcome, EngineError> {
    let ep = Ep {
        settings: *cv.ep,
        form: cv.form,
        precision: cv.precision,
        ard: cv.ard.copied().unwrap_or_default(),
        pairs: cv.pairs,
        ..Ep::default()
    };
    let method = EpCv::new(&ep, vars, cv.ard.is_some(), y);
    let spec = gamma_spec(cv.folds, cv.seed, cv.grid_over_n);
    let report = folds::cross_validate(x, y, &spec, &method, ctl, log)?;
    let start = method.start_at(report.chosen, cv.folds);
    Ok(CvOutcome { report, start })
}

fn settings<'a>(grid: &'a [f64], ep: &'a EpSettings) -> CvSettings<'a> {
    CvSettings {
        grid_over_n: grid,
        folds: 3,
        seed: 1,
        form: Form::Primal,
        precision: Precision::F64,
        ep,
        ard: None,
        pairs: None,
    }
}

/// Heavily overlapping classes (train AUC ≈ 0.63): EP has no usable fixed
/// point at γ ≥ 32n here, so a grid starting there fails in every fold and
/// the CV must extend it downwards and still choose a converged γ (EP
/// alone: power EP's fallback would answer there).
#[test]
fn a_grid_without_fixed_points_is_extended_downwards() {
    let (x, y) = toy(450, 3, 41, 4.0);
    let ep = EpSettings {
        power: crate::engine::ep::settings::EpPower::Fixed(1.0),
        ..EpSettings::default()
    };
    let grid = [64.0, 128.0, 256.0];
    let mut lines = Vec::new();
    let r = cross_validate(
        &x,
        &y,
        &[1.0; 3],
        &settings(&grid, &ep),
        &Control::new(),
        &mut |l| lines.push(l),
    )
    .unwrap()
    .report;
    // Every point of the requested grid failed or was not run, and says why.
    for c in grid {
        let i = r.grid.iter().position(|&g| g == c).unwrap();
        assert!(r.mean_auc[i].is_none());
        assert!(
            r.dropped
                .iter()
                .any(|d| d.starts_with(&format!("γ = {c}n:")))
        );
    }
    assert!(!r.extended_below.is_empty(), "{}", lines.join("\n"));
    assert!(r.extended_below.contains(&r.chosen));
    assert!(r.chosen >= MIN_OVER_N);
    // At least two points converged in every fold; the chosen one is the best.
    let ok: Vec<f64> = r.mean_auc.iter().flatten().copied().collect();
    assert!(ok.len() >= 2, "{:?}", r.mean_auc);
    let i = r.grid.iter().position(|&g| g == r.chosen).unwrap();
    assert_eq!(
        r.mean_auc[i],
        Some(ok.iter().cloned().fold(f64::MIN, f64::max))
    );
    // Extension points are halvings of the grid's smallest point, in the order added.
    for (k, c) in r.extended_below.iter().enumerate() {
        assert_eq!(*c, 64.0 / 2f64.powi(k as i32 + 1));
    }
    // Failures inside the CV end early (invalid cavities, a cycle or a drift at a
    // step cut down), not at the most sweeps.
    assert!(!r.failures.is_empty());
    assert!(
        r.failures.iter().all(|f| f.iterations < ep.max_sweeps),
        "{:#?}",
        r.failures
    );
    // The chosen γ converges on the whole training set.
    let mut lep = LinearEp::new(&x, &y, &[1.0; 3], Form::Primal, Precision::F64).unwrap();
    let gamma = r.chosen * y.len() as f64;
    lep.run(gamma, &ep, &Control::new(), &mut |_, _| {})
        .unwrap();
}

/// A grid where EP converges everywhere is not extended.
#[test]
fn a_working_grid_is_not_extended() {
    let (x, y) = toy(120, 3, 43, 1.0);
    let ep = EpSettings::default();
    let grid = DEFAULT_GRID.to_vec();
    let r = cross_validate(
        &x,
        &y,
        &[1.0; 3],
        &settings(&grid, &ep),
        &Control::new(),
        &mut |_| {},
    )
    .unwrap()
    .report;
    assert!(r.extended_below.is_empty());
    assert!(r.dropped.is_empty());
    assert_eq!(r.grid, grid);
    assert!(r.mean_auc.iter().all(|a| a.is_some()));
}

/// The final fit's start only changes where EP begins: from the folds'
/// average posterior it reaches the cold run's fixed point (tight
/// tolerance), in fewer sweeps.
#[test]
fn the_folds_start_reaches_the_cold_fixed_point() {
    let (x, y) = toy(300, 4, 47, 1.0);
    let ep = EpSettings {
        tol: 1e-9,
        ..EpSettings::default()
    };
    let grid = [2.0, 4.0];
    let out = cross_validate(
        &x,
        &y,
        &[1.0; 4],
        &settings(&grid, &ep),
        &Control::new(),
        &mut |_| {},
    )
    .unwrap();
    let q0 = out.start.expect("every fold kept its posterior");
    let gamma = out.report.chosen * y.len() as f64;
    let new = || LinearEp::new(&x, &y, &[1.0; 4], Form::Primal, Precision::F64).unwrap();
    let (mut cold, mut warm) = (new(), new());
    let oc = cold
        .run(gamma, &ep, &Control::new(), &mut |_, _| {})
        .unwrap();
    assert!(warm.start_from(&q0, gamma));
    let ow = warm
        .run(gamma, &ep, &Control::new(), &mut |_, _| {})
        .unwrap();
    assert!(!ow.cold_restart);
    let (mc, mw, sd) = (cold.mean(), warm.mean(), cold.sd());
    for k in 0..4 {
        assert!((mc[k] - mw[k]).abs() < 1e-6 * sd[k], "mean {k}");
        assert!((warm.sd()[k] / sd[k] - 1.0).abs() < 1e-6, "sd {k}");
    }
    let (zc, zw) = (oc.evidence.log_z().unwrap(), ow.evidence.log_z().unwrap());
    assert!((zc - zw).abs() < 1e-6 * zc.abs(), "{zc} vs {zw}");
    assert!(ow.sweeps < oc.sweeps, "{} vs {}", ow.sweeps, oc.sweeps);
}

/// The start is the plain average of the folds' moments, and exists only
/// when every fold kept a posterior at the point.
#[test]
fn the_start_averages_every_folds_posterior() {
    let q = |a: f64| Posterior {
        v: DMatrix::from_diagonal_element(2, 2, a),
        m: DVector::from_element(2, a),
        log_det_q: 0.0,
        r_v_r: 0.0,
    };
    let kept = vec![(1, 2.0, q(3.0)), (0, 2.0, q(1.0)), (0, 4.0, q(9.0))];
    let avg = average_at(&kept, 2.0, 2).unwrap();
    assert_eq!(avg.m, DVector::from_element(2, 2.0));
    assert_eq!(avg.v, DMatrix::from_diagonal_element(2, 2, 2.0));
    assert!(average_at(&kept, 4.0, 2).is_none());
}
