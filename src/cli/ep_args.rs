//! Options of the EP engine (`--method ep`), flattened into `fit` and `bench`.

use clap::{Args, ValueEnum};

use super::bayes_args::GammaChoice;
use crate::engine::ep::spike_slab::SiteStepRule;
use crate::engine::ep::{ArdSettings, Ep, EpSettings, Form, GammaMode, Precision};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FormArg {
    /// Reduced (thin SVD) when d ≥ n, primal otherwise.
    Auto,
    Primal,
    Reduced,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PrecisionArg {
    /// f64 unless the sites would need more than 1 GiB.
    Auto,
    F64,
    F32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SiteStepsArg {
    /// A site capped at 0.2 grows back (×1.25 per sweep) while its change keeps its sign.
    Adaptive,
    /// ALGORITHMS.md §5 to the letter: capped sites never step above 0.2 (slower).
    Strict,
}

#[derive(Debug, Clone, Args)]
pub struct EpArgs {
    /// EP: initial damping step η ∈ (0, 1]; halved (and kept halved) when a sweep is rejected.
    #[arg(long, default_value_t = 0.7, value_name = "ETA")]
    pub damping: f64,
    /// EP: converged when the largest relative change of a mean (in sds) or sd is below tol·η.
    #[arg(long, default_value_t = 1e-4)]
    pub tol: f64,
    /// EP: most sweeps before reporting non-convergence.
    #[arg(long, default_value_t = 1000, value_name = "N")]
    pub max_sweeps: usize,
    /// EP with --gamma auto: the γ grid as multiples of the training size n (comma-separated).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "0.0625,0.125,0.25,0.5,1,2,4,8,16",
        value_name = "C1,C2,…"
    )]
    pub gamma_grid: Vec<f64>,
    /// EP: primal form, or the reduced (thin-SVD) form for d ≥ n.
    #[arg(long, value_enum, default_value = "auto")]
    pub ep_form: FormArg,
    /// EP: storage of the pair sites (f32 halves the memory of very large problems).
    #[arg(long, value_enum, default_value = "auto")]
    pub site_precision: PrecisionArg,
    /// EP with --prior ard: most evidence iterations (each a warm-started EP run).
    #[arg(long, default_value_t = 100, value_name = "N")]
    pub ard_iters: usize,
    /// EP: report log Z_EP only at the end instead of at every sweep (~15% faster sweeps).
    #[arg(long)]
    pub final_evidence_only: bool,
    /// EP spike-and-slab: steps of prior sites whose negative-site fix recurs (capped at 0.2).
    #[arg(long, value_enum, default_value = "adaptive")]
    pub site_steps: SiteStepsArg,
    /// EP spike-and-slab: keep §5's negative-site fix in the answer (default: when it is still
    /// active at convergence, EP continues without it to a true fixed point; primal form only).
    #[arg(long)]
    pub keep_fixes: bool,
    /// EP: sites on B positive/negative pairs drawn uniformly (with replacement, seeded by
    /// --seed) instead of all of them; needs B ≫ γ²·R(1 − R) (Gaussian and ARD priors).
    #[arg(long, value_name = "B")]
    pub pairs: Option<usize>,
}

impl Default for EpArgs {
    /// The command-line defaults (a test checks they agree).
    fn default() -> Self {
        EpArgs {
            damping: 0.7,
            tol: 1e-4,
            max_sweeps: 1000,
            gamma_grid: crate::engine::ep::cv::default_grid(),
            ep_form: FormArg::Auto,
            site_precision: PrecisionArg::Auto,
            ard_iters: 100,
            final_evidence_only: false,
            site_steps: SiteStepsArg::Adaptive,
            keep_fixes: false,
            pairs: None,
        }
    }
}

impl EpArgs {
    /// These options as command-line words (for child processes).
    pub fn to_argv(&self) -> Vec<String> {
        let name = |v: Option<clap::builder::PossibleValue>| {
            v.map_or(String::new(), |p| p.get_name().to_string())
        };
        let grid: Vec<String> = self.gamma_grid.iter().map(|g| g.to_string()).collect();
        let mut a = vec![
            "--damping".to_string(),
            self.damping.to_string(),
            "--tol".into(),
            self.tol.to_string(),
            "--max-sweeps".into(),
            self.max_sweeps.to_string(),
            "--gamma-grid".into(),
            grid.join(","),
            "--ep-form".into(),
            name(self.ep_form.to_possible_value()),
            "--site-precision".into(),
            name(self.site_precision.to_possible_value()),
            "--ard-iters".into(),
            self.ard_iters.to_string(),
            "--site-steps".into(),
            name(self.site_steps.to_possible_value()),
        ];
        if self.final_evidence_only {
            a.push("--final-evidence-only".into());
        }
        if self.keep_fixes {
            a.push("--keep-fixes".into());
        }
        if let Some(b) = self.pairs {
            a.extend(["--pairs".into(), b.to_string()]);
        }
        a
    }

    /// The engine for a γ choice; `folds` and `seed` drive the cross-validation.
    pub fn engine(&self, gamma: GammaChoice, folds: usize, seed: u64) -> Ep {
        Ep {
            settings: EpSettings {
                eta: self.damping,
                tol: self.tol,
                max_sweeps: self.max_sweeps,
                min_eta: 1e-4_f64.min(self.damping),
                ..EpSettings::default()
            },
            gamma: match gamma {
                GammaChoice::Fixed(_) => GammaMode::Fixed,
                GammaChoice::Auto => GammaMode::Cv {
                    grid_over_n: self.gamma_grid.clone(),
                    folds,
                    seed,
                },
            },
            form: match self.ep_form {
                FormArg::Auto => Form::Auto,
                FormArg::Primal => Form::Primal,
                FormArg::Reduced => Form::Reduced,
            },
            precision: match self.site_precision {
                PrecisionArg::Auto => Precision::Auto,
                PrecisionArg::F64 => Precision::F64,
                PrecisionArg::F32 => Precision::F32,
            },
            ard: ArdSettings {
                max_iter: self.ard_iters,
                ..ArdSettings::default()
            },
            evidence_every_sweep: !self.final_evidence_only,
            tune_inclusion: false,
            tune_slab: false,
            site_steps: match self.site_steps {
                SiteStepsArg::Adaptive => SiteStepRule::Adaptive,
                SiteStepsArg::Strict => SiteStepRule::Strict,
            },
            release_fixes: !self.keep_fixes,
            pairs: self
                .pairs
                .map(|pairs| crate::engine::pairs::PairSampling { pairs, seed }),
        }
    }
}
