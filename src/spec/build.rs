//! From a spec to what runs: the data (loaded and split), the engine, and the
//! `Problem` (standardised training rows, γ, the prior). One arm per method in
//! `engine` and one per prior in `prior`: the only places that know how spec
//! settings become engine settings.

use crate::engine::baseline::{Logit, RankBoost};
use crate::engine::certify::{Certified, CertifySettings};
use crate::engine::data::{
    Dataset, LoadOptions, LoadProgress, LoadStage, MissingPolicy, Prepared, TestSource, prepare,
};
use crate::engine::ep::spike_slab::SiteStepRule;
use crate::engine::ep::{ArdSettings, Ep, EpPower, EpSettings, Form, GammaMode, Precision};
use crate::engine::gcs::{
    Directions as GcsDirections, Gcs, GcsSettings, Loss as GcsEngineLoss, ReferenceOrigin,
};
use crate::engine::gp::{GpApprox, GpPrior, KernelKind, LengthScale};
use crate::engine::smc::path_cv::EARLY_STOP;
use crate::engine::smc::{CvMode, GammaCv, Kernel, Moves, Smc, SmcCv, SmcSettings, Surrogate};
use crate::engine::vb::cv::VbCv;
use crate::engine::vb::{
    AdamSettings, Family, Loss as VbEngineLoss, Optimizer, Vb, VbSettings, theory_gamma,
};
use crate::engine::{Engine, Prior, Problem};

use super::error::SpecError;
use super::gcs_reference::{GcsAfterEp, ep_reference};
use super::run_spec::{
    DataSpec, EpForm, EpSpec, GcsLoss, GcsSpec, GpKernel, Missing, PhaseJump, PriorKind, PriorSpec,
    RunSpec, SitePrecision, SiteSteps, SmcKernel, SmcReference, SmcSpec, VbFamily, VbLoss,
    VbOptimizer, VbSpec,
};
use super::smc_reference::{PriorPathAnnounced, SmcAfterEp};
use super::validate::{Dims, validate};
use super::values::{Gamma, GpApproxSpec, Tunable};
use crate::engine::smc::reference::{ReferenceChoice as SmcReferenceChoice, ReferenceMode};

impl DataSpec {
    pub fn load_options(&self) -> LoadOptions {
        LoadOptions {
            target: self.target.clone(),
            positive: self.positive.clone(),
            drop: self.drop.clone(),
            missing: match self.missing {
                Missing::Drop => MissingPolicy::DropRows,
                Missing::Error => MissingPolicy::Error,
            },
            ..LoadOptions::default()
        }
    }

    /// Loads the file(s) and prepares the standardised split (messages name the
    /// file, and where they can the line and column).
    /// `demo` and `demo:NAME` are the bundled demo tables (`demo_source`).
    pub fn load(&self) -> Result<(Dataset, Prepared), String> {
        self.load_observed(None)
    }

    /// `load` telling `progress` how far it has come (the explorer loads on
    /// its own thread and draws this meanwhile).
    pub fn load_observed(
        &self,
        progress: Option<&LoadProgress>,
    ) -> Result<(Dataset, Prepared), String> {
        let ds = match super::demo_source::bundled_demo(&self.path) {
            Some(name) => {
                let csv = super::demo_source::csv(name).unwrap_or_default();
                Dataset::from_csv_bytes(&self.path, csv.as_bytes(), &self.load_options())
            }
            None if self.path.to_str().is_some_and(|p| p.starts_with("demo:"))
                && !self.path.exists() =>
            {
                return Err(format!(
                    "{}: no such file, nor a bundled demo (those are demo, {})",
                    self.path.display(),
                    super::demo_source::names()
                ));
            }
            None => Dataset::load_observed(&self.path, &self.load_options(), progress),
        }
        .map_err(|e| e.to_string())?;
        if let Some(p) = progress {
            p.set_stage(LoadStage::Preparing);
        }
        let prepared = self.prepare(&ds)?;
        Ok((ds, prepared))
    }

    /// As `load`, for CSV text held in memory (`path` names it in messages and
    /// the record; a `test` file is still read from disk).
    pub fn load_bytes(&self, bytes: &[u8]) -> Result<(Dataset, Prepared), String> {
        let ds = Dataset::from_csv_bytes(&self.path, bytes, &self.load_options())
            .map_err(|e| e.to_string())?;
        let prepared = self.prepare(&ds)?;
        Ok((ds, prepared))
    }

    /// The split of a loaded training file (its test file read here).
    pub fn prepare(&self, ds: &Dataset) -> Result<Prepared, String> {
        match &self.test {
            Some(path) => {
                let test = Dataset::load_with_schema(path, &ds.schema, self.load_options().missing)
                    .map_err(|e| e.to_string())?;
                prepare(ds, TestSource::File(&test))
            }
            None => prepare(
                ds,
                TestSource::Split {
                    frac: self.test_frac,
                    seed: self.seed,
                },
            ),
        }
        .map_err(|e| format!("{}: {e}", self.path.display()))
    }
}

/// The engine of `spec` (its settings checked by `validate`).
pub fn engine(spec: &RunSpec) -> Box<dyn Engine> {
    let seed = spec.data.seed;
    match &spec.method {
        super::MethodSpec::Logit(s) => Box::new(Logit {
            lambda: s.lambda,
            folds: s.folds,
            cv_rows: s.cv_rows,
            seed,
            ..Logit::default()
        }),
        super::MethodSpec::Rankboost(s) => Box::new(RankBoost {
            rounds: s.rounds,
            folds: s.folds,
            seed,
        }),
        super::MethodSpec::Smc(s) if spec.gamma == Some(Gamma::Auto) => {
            const WHY: &str =
                "auto: γ = auto, the cross-validation tempers each fold from the prior";
            let mut settings = smc_settings(s, seed);
            if s.smc_reference == SmcReference::Auto {
                settings.reference_choice = Some(SmcReferenceChoice {
                    asked: "auto".into(),
                    why: WHY.into(),
                    estimate_cpu_seconds: None,
                });
            }
            let cv = Box::new(SmcCv {
                settings,
                cv: GammaCv {
                    grid_over_n: s.gamma_grid.clone(),
                    folds: s.folds,
                    seed,
                    mode: CvMode::Path,
                    early_stop: (!s.full_path).then_some(EARLY_STOP),
                },
            });
            if s.smc_reference == SmcReference::Auto {
                Box::new(PriorPathAnnounced {
                    inner: cv,
                    why: WHY,
                })
            } else {
                cv
            }
        }
        super::MethodSpec::Smc(s) if s.smc_reference != SmcReference::Prior => {
            Box::new(SmcAfterEp {
                ep: ep_engine(&EpSpec::reference(), None, spec.prior.as_ref(), seed),
                smc: Smc {
                    settings: smc_settings(s, seed),
                },
                spec: (s.smc_reference == SmcReference::Auto).then(|| Box::new(spec.clone())),
            })
        }
        super::MethodSpec::Smc(s) => Box::new(Smc {
            settings: smc_settings(s, seed),
        }),
        super::MethodSpec::Ep(s) => Box::new(ep_engine(s, spec.gamma, spec.prior.as_ref(), seed)),
        super::MethodSpec::Gcs(s) if ep_reference(spec, s) => Box::new(GcsAfterEp {
            ep: ep_engine(&EpSpec::reference(), None, spec.prior.as_ref(), seed),
            gcs: Gcs {
                settings: gcs_settings(s, seed),
            },
        }),
        super::MethodSpec::Gcs(s) => {
            let mut settings = gcs_settings(s, seed);
            if s.directions == GcsDirections::Gaussian {
                settings.reference_origin = Some(ReferenceOrigin {
                    source: "warm-up",
                    ep_seconds: 0.0,
                    why_not_ep: Some(
                        if s.loss == GcsLoss::Auc {
                            "EP's reference needs a Gaussian prior of fixed variances"
                        } else {
                            "EP approximates the AUC risk, not the label-noise loss"
                        }
                        .into(),
                    ),
                });
            }
            Box::new(Gcs { settings })
        }
        super::MethodSpec::Vb(s) => Box::new(vb_engine(s, spec.gamma, seed)),
    }
}

/// The engine of `spec` whose fits carry the PAC-Bayes certificate and, for
/// Gaussian approximations, the importance-sampling check (the baselines as
/// they are).
pub fn certified_engine(spec: &RunSpec) -> Box<dyn Engine> {
    certify(spec, engine(spec))
}

/// `inner` with the certificate `spec` asks for (the baselines as they are).
pub fn certify(spec: &RunSpec, inner: Box<dyn Engine>) -> Box<dyn Engine> {
    match spec.method.certificate() {
        Some((epsilon, is_draws, prior_split)) => Box::new(Certified {
            engine: inner,
            settings: CertifySettings {
                epsilon,
                is_draws,
                prior_split,
                seed: spec.data.seed,
            },
        }),
        None => inner,
    }
}

pub fn vb_loss(l: VbLoss) -> VbEngineLoss {
    match l {
        VbLoss::Auc => VbEngineLoss::Auc,
        VbLoss::ZeroOne => VbEngineLoss::ZeroOne,
        VbLoss::Hinge => VbEngineLoss::Hinge,
        VbLoss::Exp => VbEngineLoss::Exp,
    }
}

/// The VB engine; γ = auto is cross-validation over the spec's grid, γ =
/// theory ARC16's value.
pub fn vb_engine(s: &VbSpec, gamma: Option<Gamma>, seed: u64) -> Vb {
    Vb {
        settings: VbSettings {
            family: match s.family {
                VbFamily::Iso => Family::Iso,
                VbFamily::Diag => Family::Diag,
                VbFamily::Full => Family::Full,
            },
            loss: vb_loss(s.loss),
            optimizer: match s.optimizer {
                VbOptimizer::Auto => Optimizer::Auto,
                VbOptimizer::FullBatch => Optimizer::FullBatch,
                VbOptimizer::Stochastic => Optimizer::Stochastic,
            },
            adam: AdamSettings {
                batch: s.batch_pairs,
                ..AdamSettings::default()
            },
            seed,
            ..VbSettings::default()
        },
        cv: (gamma == Some(Gamma::Auto)).then(|| VbCv {
            grid_over_n: s.gamma_grid.clone(),
            folds: s.folds,
            seed,
        }),
        theory_gamma: gamma == Some(Gamma::Theory),
    }
}

/// The great-circle sampler's settings; the label-noise loss fits an intercept
/// (a classifier through the training mean is poor for unbalanced classes).
pub fn gcs_settings(s: &GcsSpec, seed: u64) -> GcsSettings {
    GcsSettings {
        chains: s.chains,
        warmup: s.warmup,
        min_ess: s.min_ess,
        max_rhat: s.max_rhat,
        max_steps: s.max_steps,
        loss: match s.loss {
            GcsLoss::Auc => GcsEngineLoss::Auc,
            GcsLoss::LabelNoise => GcsEngineLoss::LabelNoise {
                noise: s.noise,
                intercept: true,
            },
        },
        directions: s.directions,
        circle: s.circle,
        evidence: s.evidence,
        seed,
        ..GcsSettings::default()
    }
}

pub fn smc_kernel(k: SmcKernel) -> Kernel {
    match k {
        SmcKernel::Auto => Kernel::Auto,
        SmcKernel::Gpcn => Kernel::Gpcn,
        SmcKernel::Rw => Kernel::Rw,
        SmcKernel::Pcn => Kernel::Pcn,
        SmcKernel::Sphere => Kernel::Sphere,
        SmcKernel::Copula => Kernel::Copula,
        SmcKernel::SkewCopula => Kernel::SkewCopula,
    }
}

pub fn smc_settings(s: &SmcSpec, seed: u64) -> SmcSettings {
    let d = SmcSettings::default();
    SmcSettings {
        particles: s.particles,
        waste_free: s.waste_free,
        moves: s.moves.map_or(d.moves, Moves::Fixed),
        ess: s.ess,
        local_share: s.local_share,
        kernel: smc_kernel(s.kernel),
        scale: s.scale,
        adapt_scale: !s.fixed_scale,
        radial: !s.no_radial,
        max_stages: s.max_stages,
        seed: s.smc_seed.unwrap_or(seed),
        runs: s.runs,
        part: s.run,
        // auto: `SmcAfterEp` sets the mode it chose.
        reference: match s.smc_reference {
            SmcReference::Prior | SmcReference::Auto => ReferenceMode::Prior,
            SmcReference::Ep => ReferenceMode::Ep,
        },
        surrogate: s.surrogate_rows.map_or(Surrogate::Off, |m| match m {
            0 => Surrogate::Off,
            m => Surrogate::Rows(m),
        }),
        phase_jump_rerun: s.phase_jump == PhaseJump::Rerun,
        ..d
    }
}

/// The EP engine; γ = auto is cross-validation over the spec's grid, and the
/// spike-and-slab scales given as auto are tuned by evidence.
pub fn ep_engine(s: &EpSpec, gamma: Option<Gamma>, prior: Option<&PriorSpec>, seed: u64) -> Ep {
    let spike_slab = prior.filter(|p| p.kind == PriorKind::SpikeSlab);
    Ep {
        settings: EpSettings {
            eta: s.damping,
            tol: s.tol,
            max_sweeps: s.max_sweeps,
            min_eta: 1e-4_f64.min(s.damping),
            power: match s.ep_power {
                None | Some(Tunable::Auto) => EpPower::Auto,
                Some(Tunable::Value(a)) => EpPower::Fixed(a),
            },
            ..EpSettings::default()
        },
        gamma: match gamma {
            Some(Gamma::Auto) => GammaMode::Cv {
                grid_over_n: s.gamma_grid.clone(),
                folds: s.folds,
                seed,
            },
            _ => GammaMode::Fixed,
        },
        form: match s.ep_form {
            EpForm::Auto => Form::Auto,
            EpForm::Primal => Form::Primal,
            EpForm::Reduced => Form::Reduced,
        },
        precision: site_precision(s.site_precision),
        ard: ArdSettings {
            max_iter: s.ard_iters,
            ..ArdSettings::default()
        },
        evidence_every_sweep: !s.final_evidence_only,
        tune_inclusion: spike_slab.is_some_and(|p| p.inclusion_prior == Some(Tunable::Auto)),
        tune_slab: spike_slab.is_some_and(|p| p.slab_var.is_auto()),
        site_steps: match s.site_steps {
            SiteSteps::Adaptive => SiteStepRule::Adaptive,
            SiteSteps::Strict => SiteStepRule::Strict,
        },
        release_fixes: !s.keep_fixes,
        pairs: s
            .pairs
            .map(|pairs| crate::engine::pairs::PairSampling { pairs, seed }),
    }
}

/// The prior for `d` features; scales given as auto start where the tuning
/// does. `seed` draws the GP's random Fourier features.
pub fn prior(p: &PriorSpec, d: usize, seed: u64) -> Prior {
    match p.kind {
        PriorKind::Gaussian => Prior::Gaussian { var: p.var },
        PriorKind::Ard => Prior::Ard {
            vars: vec![p.var; d],
        },
        PriorKind::SpikeSlab => {
            let slab_var = p.slab_var.value().unwrap_or(1.0);
            let incl = p
                .inclusion_prior
                .and_then(Tunable::value)
                .unwrap_or_else(|| Prior::theory_inclusion(d));
            Prior::SpikeSlab {
                spike_var: p.spike_var.unwrap_or(1e-4 * slab_var),
                slab_var,
                incl,
            }
        }
        PriorKind::Gp => Prior::Gp(GpPrior {
            kernel: match p.gp_kernel {
                GpKernel::Se => KernelKind::Se,
                GpKernel::Linear => KernelKind::Linear,
            },
            lengthscale: match p.lengthscale {
                None => LengthScale::Median,
                Some(Tunable::Auto) => LengthScale::Auto,
                Some(Tunable::Value(l)) => LengthScale::Value(l),
            },
            approx: match p.gp_approx {
                GpApproxSpec::Auto => GpApprox::Auto,
                GpApproxSpec::Exact => GpApprox::Exact,
                GpApproxSpec::Nystrom(landmarks) => GpApprox::Nystrom { landmarks },
                GpApproxSpec::Rff(features) => GpApprox::Rff { features, seed },
            },
        }),
    }
}

/// The problem of `spec` on prepared data: γ resolved for the training size
/// (γ = auto starts at n), the prior for its dimension.
pub fn problem(spec: &RunSpec, prepared: &Prepared) -> Result<Problem, SpecError> {
    let n = prepared.train.rows();
    let d = prepared.names.len();
    let gamma = match (spec.gamma, &spec.method) {
        (Some(Gamma::Theory), super::MethodSpec::Vb(vb)) => {
            let np = prepared.train.y.iter().filter(|&&b| b).count();
            theory_gamma(vb_loss(vb.loss), np, n - np, d)
        }
        // γ = auto starts at n (the engine chooses).
        (g, _) => g.map_or(0.0, |g| g.resolve(n).unwrap_or(n as f64)),
    };
    let prior = spec
        .prior
        .as_ref()
        // The baselines ignore the prior; the problem still carries one.
        .map_or(Prior::Gaussian { var: 1.0 }, |p| {
            prior(p, d, spec.data.seed)
        });
    Problem::new(
        prepared.names.clone(),
        prepared.train.x.clone(),
        prepared.train.y.clone(),
        gamma,
        prior,
    )
    .map_err(|e| SpecError::other(e.to_string()))
}

/// What a run needs: the checked engine (certified, `certified_engine`) and problem.
pub struct Built {
    pub engine: Box<dyn Engine>,
    pub problem: Problem,
}

/// Validates `spec` for the prepared data and builds its engine and problem.
pub fn build(spec: &RunSpec, prepared: &Prepared) -> Result<Built, SpecError> {
    validate(
        spec,
        Dims {
            n: prepared.train.rows(),
            d: prepared.names.len(),
        },
    )?;
    Ok(Built {
        engine: certified_engine(spec),
        problem: problem(spec, prepared)?,
    })
}

/// The engine's site storage for the spec's `--site-precision`.
pub(super) fn site_precision(p: SitePrecision) -> Precision {
    match p {
        SitePrecision::Auto => Precision::Auto,
        SitePrecision::F64 => Precision::F64,
        SitePrecision::F32 => Precision::F32,
    }
}
