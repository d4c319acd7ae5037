//! One GP-EP fit at a given kernel: exact (precision or whitened form,
//! `gp::factor`) or through a feature approximation (Nyström, random Fourier
//! features) that turns the GP into linear EP on D features, run by the
//! unchanged `LinearEp`. Each returns the score model and what the record
//! reports.

use nalgebra::DMatrix;

use super::basis::{Basis, Form};
use super::nystrom::{self, LandmarkChoice};
use super::sweep::GpEp;
use crate::engine::ep::continuation::{self, GammaPath};
use crate::engine::ep::design::Design;
use crate::engine::ep::design::Form as LinearForm;
use crate::engine::ep::linear::{LinearEp, LinearPath};
use crate::engine::ep::outcome::SweepInfo;
use crate::engine::ep::settings::EpSettings;
use crate::engine::ep::store::Precision as SitePrecision;
use crate::engine::event::EpSweep;
use crate::engine::gp::dense;
use crate::engine::gp::factor::{self, Distinct};
use crate::engine::gp::model::{FeatureBasis, GpModel, pack_lower};
use crate::engine::gp::spread::{self, GpSpread, Reduction, TrainingRows};
use crate::engine::gp::{EXACT_TOL, GpApprox, Kernel};
use crate::engine::interface::{Control, EngineError};
use crate::engine::numerics::linalg::{a_b, at_b};

/// The exact basis of the GP prior on the rows `x` with labels `y`: the
/// precision form when K is well conditioned, else (or when `whitened`: tests
/// compare them) the whitened form.
pub fn exact_basis(kernel: &Kernel, x: &DMatrix<f64>, y: &[bool], whitened: bool) -> Basis {
    let (distinct, n_neg_only) = negatives_first(Distinct::of(x), y);
    let xu = x.select_rows(&distinct.reps);
    let up: Vec<usize> = (0..y.len())
        .filter(|&i| y[i])
        .map(|i| distinct.map[i])
        .collect();
    let un: Vec<usize> = (0..y.len())
        .filter(|&i| !y[i])
        .map(|i| distinct.map[i])
        .collect();
    let precision = if whitened {
        None
    } else {
        factor::precision(kernel, &xu)
    };
    let form = match precision {
        Some(p) => Form::Precision(p),
        None => {
            let f = factor::pivoted_cholesky(kernel, &xu, EXACT_TOL, xu.nrows());
            Form::Whitened {
                zp: f.z.select_rows(&up),
                zn: f.z.select_rows(&un),
                factor: f,
            }
        }
    };
    Basis {
        form,
        n_neg_only,
        work: DMatrix::zeros(0, 0),
        distinct,
        up,
        un,
    }
}

/// Distinct rows reordered, those of negatives only first, and their count.
fn negatives_first(d: Distinct, y: &[bool]) -> (Distinct, usize) {
    let nu = d.len();
    let mut has_pos = vec![false; nu];
    for (i, &u) in d.map.iter().enumerate() {
        has_pos[u] |= y[i];
    }
    let order: Vec<usize> = (0..nu)
        .filter(|&u| !has_pos[u])
        .chain((0..nu).filter(|&u| has_pos[u]))
        .collect();
    let mut new_of = vec![0; nu];
    for (new, &old) in order.iter().enumerate() {
        new_of[old] = new;
    }
    let reordered = Distinct {
        map: d.map.iter().map(|&u| new_of[u]).collect(),
        reps: order.iter().map(|&u| d.reps[u]).collect(),
    };
    (reordered, has_pos.iter().filter(|&&p| !p).count())
}

/// What one fit reports besides the model.
#[derive(Debug, Clone)]
pub struct FitOutcome {
    pub log_z: Option<f64>,
    pub sweeps: usize,
    pub eta: f64,
    pub delta: f64,
    pub negative_share: f64,
    pub skipped: usize,
    pub identical_pairs: usize,
    pub cold_restart: bool,
    /// "precision", "whitened", "nystrom", "rff".
    pub form: &'static str,
    /// Training scores' posterior means and sds (every row).
    pub mean: Vec<f64>,
    pub sd: Vec<f64>,
    pub seconds: f64,
    /// How the model stores the score's spread (for the record).
    pub spread: serde_json::Value,
    /// Nyström: how the landmarks were chosen.
    pub landmarks: Option<LandmarkChoice>,
    /// The continuation's path (the final fit).
    pub gamma_path: Option<GammaPath>,
}

/// Exact GP-EP's landmarks: Z (the distinct rows' scores from whitened
/// weights, s_u = Z w), the landmarks' Cholesky factor L_I (φ(x) = L_I⁻¹ k_I(x)),
/// and the landmark rows — every distinct row in the precision form (its
/// weights are their scores), the pivots in the whitened form.
struct Landmarks<'a> {
    z: &'a DMatrix<f64>,
    l_i: DMatrix<f64>,
    scores: bool,
    rows: DMatrix<f64>,
}

impl<'a> Landmarks<'a> {
    fn of(b: &'a Basis, x: &DMatrix<f64>) -> Landmarks<'a> {
        let xu = x.select_rows(&b.distinct.reps);
        match &b.form {
            Form::Precision(p) => Landmarks {
                z: &p.chol,
                l_i: p.chol.clone(),
                scores: true,
                rows: xu,
            },
            Form::Whitened { factor, .. } => Landmarks {
                z: &factor.z,
                l_i: factor.z.select_rows(&factor.pivots),
                scores: false,
                rows: xu.select_rows(&factor.pivots),
            },
        }
    }

    fn basis(&self) -> FeatureBasis {
        let (d, rows) = (self.rows.ncols(), self.rows.transpose().as_slice().to_vec());
        if self.scores {
            FeatureBasis::LandmarkScores { d, rows }
        } else {
            FeatureBasis::Landmarks { d, rows }
        }
    }
}

/// The posterior of the basis weights as a landmark model, its spread reduced
/// (`gp::spread`) to the training rows' sds within `spread::SD_TOL`: no n³
/// inverse, and O(k n) numbers instead of n²/2 in the record.
fn landmark_model(kernel: &Kernel, ep: &GpEp, x: &DMatrix<f64>) -> (GpModel, Reduction) {
    let q = ep.posterior().expect("a converged run");
    let land = Landmarks::of(&ep.basis, x);
    let (z, l_i) = (land.z, &land.l_i);
    let xu = x.select_rows(&ep.basis.distinct.reps);
    let prior_var = kernel.diag(&xu);
    let rows_side = TrainingRows {
        prior_var: &prior_var,
        exact_var: &q.var,
    };
    let apply = |w: &DMatrix<f64>| {
        let zw = a_b(z, w);
        let s = at_b(z, &ep.laplacian_times(&zw));
        (zw, s)
    };
    let red = spread::reduce(z.ncols(), &apply, &rows_side, spread::SD_TOL);
    let mut g = red.u.clone();
    dense::solve_lower_t(l_i, &mut g);
    let model = GpModel {
        kernel: kernel.clone(),
        basis: land.basis(),
        mean: q.m.as_slice().to_vec(),
        spread: GpSpread::Reduced {
            lambda: red.lambda.clone(),
            g: g.column_iter()
                .map(|c| c.iter().copied().collect())
                .collect(),
            sd_tol: spread::SD_TOL,
            max_sd_error: red.max_sd_error,
        },
        alpha: Vec::new(),
    }
    .with_alpha_from(l_i);
    (model, red)
}

/// The landmark model of the current sites with the weights' whole
/// covariance (an n³ inverse, n²/2 numbers): the reference the reduced spread
/// is measured against.
pub fn full_model(kernel: &Kernel, ep: &mut GpEp, x: &DMatrix<f64>) -> Option<GpModel> {
    let q = ep.full_posterior()?;
    let land = Landmarks::of(&ep.basis, x);
    let model = GpModel {
        kernel: kernel.clone(),
        basis: land.basis(),
        mean: q.m.as_slice().to_vec(),
        spread: GpSpread::Covariance {
            packed: pack_lower(q.v.as_ref()?),
        },
        alpha: Vec::new(),
    };
    Some(model.with_alpha_from(&land.l_i))
}

/// The predictive means at the rows `xnew` of exact GP-EP's current
/// posterior (`x`: its training rows) — held-out scores without building the
/// score model's spread.
pub fn predictive_mean(
    kernel: &Kernel,
    ep: &GpEp,
    x: &DMatrix<f64>,
    xnew: &DMatrix<f64>,
) -> Vec<f64> {
    let q = ep.posterior().expect("a converged run");
    let land = Landmarks::of(&ep.basis, x);
    // α = K_u⁻¹ m (m: the distinct rows' scores) or L_I⁻ᵀ m (whitened weights).
    let mut alpha = DMatrix::from_column_slice(q.m.len(), 1, q.m.as_slice());
    if land.scores {
        dense::solve_lower(&land.l_i, &mut alpha);
    }
    dense::solve_lower_t(&land.l_i, &mut alpha);
    at_b(&kernel.cross(&land.rows, xnew), &alpha)
        .iter()
        .copied()
        .collect()
}

/// Exact GP-EP at `kernel`, warm-started from `state` when given (its sites
/// are kept; the basis is replaced).
#[allow(clippy::too_many_arguments)]
pub fn fit_exact(
    kernel: &Kernel,
    x: &DMatrix<f64>,
    y: &[bool],
    gamma: f64,
    settings: &EpSettings,
    state: &mut Option<GpEp>,
    ctl: &Control,
    on_sweep: &mut dyn FnMut(EpSweep),
) -> Result<(GpModel, FitOutcome), EngineError> {
    let mut out = run_exact(kernel, x, y, gamma, settings, state, ctl, on_sweep)?;
    let t_spread = std::time::Instant::now();
    let ep = state.as_ref().expect("run_exact leaves its state");
    let (model, red) = landmark_model(kernel, ep, x);
    out.spread = serde_json::json!({
        "kind": "reduced",
        "eigenpairs": red.lambda.len(),
        "krylov": red.krylov,
        "sd_tol": spread::SD_TOL,
        "max_sd_error": red.max_sd_error,
        "seconds": t_spread.elapsed().as_secs_f64(),
    });
    Ok((model, out))
}

/// `fit_exact` without the score model (the length-scale search needs only
/// the evidence; `state` keeps the sites).
#[allow(clippy::too_many_arguments)]
pub fn run_exact(
    kernel: &Kernel,
    x: &DMatrix<f64>,
    y: &[bool],
    gamma: f64,
    settings: &EpSettings,
    state: &mut Option<GpEp>,
    ctl: &Control,
    on_sweep: &mut dyn FnMut(EpSweep),
) -> Result<FitOutcome, EngineError> {
    let basis = exact_basis(kernel, x, y, false);
    let ep = match state {
        Some(ep) => {
            ep.set_basis(basis);
            ep
        }
        None => state.insert(GpEp::new(basis)),
    };
    ep.run(gamma, settings, ctl, on_sweep)
}

/// A feature approximation of the GP prior at the training rows.
pub struct Features {
    /// Features of every training row (n × D).
    pub phi: DMatrix<f64>,
    pub basis: FeatureBasis,
    /// "nystrom" or "rff".
    pub form: &'static str,
    /// Nyström: how the landmarks were chosen.
    pub landmarks: Option<LandmarkChoice>,
}

/// The `approx` features of the rows `x` (not exact GP-EP).
pub fn features(
    kernel: &Kernel,
    approx: GpApprox,
    x: &DMatrix<f64>,
) -> Result<Features, EngineError> {
    let d = x.ncols();
    Ok(match approx {
        GpApprox::Nystrom { .. } | GpApprox::Auto => {
            let (phi, rows, choice) = nystrom::landmarks(kernel, x, approx);
            Features {
                phi,
                basis: FeatureBasis::Landmarks {
                    d,
                    rows: rows.transpose().as_slice().to_vec(),
                },
                form: "nystrom",
                landmarks: Some(choice),
            }
        }
        GpApprox::Rff { features, seed } => {
            let Kernel::Se { lengthscale } = kernel else {
                return Err(EngineError::InvalidParams(
                    "random Fourier features approximate the SE kernel only".into(),
                ));
            };
            let (w, b) = factor::fourier_frequencies(d, features, *lengthscale, seed);
            Features {
                phi: factor::fourier_features(x, &w, &b),
                basis: FeatureBasis::Fourier { d, w, b },
                form: "rff",
                landmarks: None,
            }
        }
        GpApprox::Exact => unreachable!("resolved before"),
    })
}

/// GP-EP through the features `f` of the rows `x` (`features`): linear EP
/// with prior N(0, I) on them. A CV fold computes its features once and fits
/// them along the γ grid (`reach` false: one run from the start); the final
/// fit (`reach` true) reaches γ by the continuation in γ (`details.gamma.path`).
#[allow(clippy::too_many_arguments)]
pub fn fit_features(
    kernel: &Kernel,
    f: &Features,
    x: &DMatrix<f64>,
    y: &[bool],
    gamma: f64,
    settings: &EpSettings,
    precision: SitePrecision,
    reach: bool,
    ctl: &Control,
    on_sweep: &mut dyn FnMut(EpSweep),
) -> Result<(GpModel, FitOutcome), EngineError> {
    let phi = &f.phi;
    let r = phi.ncols();
    // Nyström on every distinct row is exact GP-EP in the whitened form
    // (tests compare them); more features than rows only costs.
    if r > y.len() || (r == y.len() && f.landmarks.is_none()) {
        return Err(EngineError::InvalidParams(format!(
            "the GP feature approximation has {r} features for {} training rows: use the exact GP",
            y.len()
        )));
    }
    let mut lep = LinearEp::new(phi, y, &vec![1.0; r], LinearForm::Primal, precision)?;
    let mut stream = |s: &SweepInfo<'_>, _: &Design| {
        // No score moments: they would cost n·D² a sweep.
        on_sweep(EpSweep {
            sweep: s.sweep,
            delta: s.delta,
            log_z: s.log_z,
            eta: s.eta,
            negative_share: s.negative_share,
            skipped: s.skipped,
            mean: Vec::new(),
            sd: Vec::new(),
            elapsed: s.elapsed,
            inclusion: None,
        })
    };
    let mut gamma_path = None;
    let out = if reach {
        let mut lp = LinearPath {
            lep: &mut lep,
            settings: *settings,
            ctl,
            on_sweep: &mut stream,
        };
        let (out, p) =
            continuation::reach(&mut lp, gamma, y.len(), continuation::KAPPA, &mut |_| {})?;
        gamma_path = Some(p);
        out
    } else {
        lep.run(gamma, settings, ctl, &mut stream)?
    };
    let mean = lep.mean();
    let cov = lep.cov().expect("primal form");
    let model = GpModel {
        kernel: kernel.clone(),
        basis: f.basis.clone(),
        mean: mean.clone(),
        spread: GpSpread::Covariance {
            packed: pack_lower(&cov),
        },
        alpha: Vec::new(),
    }
    .with_alpha();
    // The model's predictive moments at the training rows (Nyström's include
    // the prior variance its landmarks leave out).
    let (s_mean, s_var) = model.predict(x);
    let sd = s_var.iter().map(|v| v.sqrt()).collect();
    Ok((
        model,
        FitOutcome {
            log_z: out.evidence.log_z(),
            sweeps: out.sweeps,
            eta: out.eta,
            delta: out.delta,
            negative_share: out.negative_share,
            skipped: out.stats.skipped,
            identical_pairs: lep.state().identical_pairs(),
            cold_restart: out.cold_restart,
            form: f.form,
            mean: s_mean,
            sd,
            seconds: out.seconds,
            spread: serde_json::json!({ "kind": "covariance" }),
            landmarks: f.landmarks.clone(),
            gamma_path,
        },
    ))
}
