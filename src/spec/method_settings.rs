//! The settings rows of one method each (SMC, EP, VB, the great-circle
//! sampler), in the order of the help and the run form; `registry` joins
//! them with the shared rows into `SETTINGS`.

use super::registry::{EP, GCS, SMC, THETA_PRIORS, VB, setting};
use super::run_spec::PriorKind;
use super::setting::range;
use super::setting::{Group, Kind, Methods, Range, Requires, Setting};
use crate::engine::smc::settings::MIN_PARTICLES;

use PriorKind::{Ard, Gaussian, SpikeSlab};

/// SMC.
pub const SMC_SETTINGS: &[Setting] = &[
    Setting {
        label: "particles N",
        help: "Size N of the particle cloud (at least 100: below it the tempering steps and the decorrelation check cannot work).",
        default: "10000",
        methods: SMC,
        form: true,
        group: Group::Smc,
        ..setting(
            "particles",
            "method.particles",
            Kind::Count(MIN_PARTICLES as u64),
        )
    },
    Setting {
        label: "moves per stage K",
        help: "Move steps per stage (default: adaptive, until the particles have decorrelated from their stage-start values).",
        unset: "adaptive",
        methods: SMC,
        form: true,
        group: Group::Smc,
        ..setting("moves", "method.moves", Kind::Count(1))
    },
    Setting {
        label: "waste-free chain P",
        help: "Waste-free SMC (Dau & Chopin): N/P ancestors, each a chain of P states, all kept.",
        unset: "standard SMC",
        methods: SMC,
        priors: THETA_PRIORS,
        form: true,
        group: Group::Smc,
        ..setting("waste_free", "method.waste_free", Kind::Count(2))
    },
    Setting {
        label: "ESS target τ",
        help: "ESS target τ of each tempering step, as a share of N.",
        default: "0.5",
        methods: SMC,
        form: true,
        group: Group::Smc,
        ..setting(
            "ess",
            "method.ess",
            Kind::Number(range(0.0, 1.0, true, true)),
        )
    },
    Setting {
        label: "local step share",
        help: "Share of the gpcn and copula proposals that are local steps (2.38/√d) instead of steps around the particles' fit: those cannot move a chain in a far tail of the fit, which otherwise keeps its copies and leaves log Z low in most runs and high in a few (docs/BENCHMARKS.md). 0 turns them off.",
        default: "0.3",
        methods: SMC,
        priors: THETA_PRIORS,
        form: true,
        group: Group::Smc,
        ..setting(
            "local_share",
            "method.local_share",
            Kind::Number(range(0.0, 1.0, false, true)),
        )
    },
    Setting {
        label: "move kernel",
        help: "Metropolis kernel of the moves: auto (skew-copula for a Gaussian or ARD prior, pcn for those above 400 dimensions, gpcn for spike-and-slab), gpcn (pCN around the particles' Gaussian fit), rw (random walk, c = 2.38/√d, adapted), pcn (prior-preserving; Gaussian priors only), sphere (the direction θ/‖θ‖ by pCN around a Gaussian fit in a log-map chart at the particles' mean direction, the radius drawn exactly; Gaussian priors only), copula (gpcn after mapping each coefficient through its fitted marginal quantiles to ≈ N(0, 1): for skewed marginals, e.g. rare categories), skew-copula (per stage: the copula where some coefficient's marginal is measurably skewed, |quantile skewness| > 0.15, else exactly gpcn).",
        default: "auto",
        methods: SMC,
        priors: THETA_PRIORS,
        form: true,
        group: Group::Smc,
        ..setting(
            "kernel",
            "method.kernel",
            Kind::Choice(&[
                "auto",
                "gpcn",
                "rw",
                "pcn",
                "sphere",
                "copula",
                "skew-copula",
            ]),
        )
    },
    Setting {
        label: "initial step size",
        help: "Initial step size (random walk: c, default 2.38/√d; pcn/gpcn: √(1−ρ²)).",
        unset: "the kernel's default",
        methods: SMC,
        priors: THETA_PRIORS,
        group: Group::Smc,
        ..setting("scale", "method.scale", Kind::Number(Range::POSITIVE))
    },
    Setting {
        label: "fixed step size",
        help: "Keep the step size fixed instead of adapting it to the acceptance rate.",
        methods: SMC,
        priors: THETA_PRIORS,
        group: Group::Smc,
        ..setting("fixed_scale", "method.fixed_scale", Kind::Switch)
    },
    Setting {
        label: "no radial moves",
        help: "No free radial moves (they rescale θ, which leaves the AUC risk unchanged).",
        methods: SMC,
        priors: THETA_PRIORS,
        group: Group::Smc,
        ..setting("no_radial", "method.no_radial", Kind::Switch)
    },
    Setting {
        label: "surrogate rows",
        help: "Delayed acceptance (exact): each move's proposal first faces the AUC risk on this many class-stratified rows and pays the full risk only if it passes. Off unless given: measured exact but 1.5–2.4× slower than plain SMC at 2·10⁴ rows, γ = 2000 (the moves follow the chains' decorrelation, so a lower acceptance means more proposals; BENCHMARKS smc-delayed-2e4). The record's details.surrogate counts the full evaluations saved.",
        unset: "off",
        methods: SMC,
        priors: THETA_PRIORS,
        group: Group::Smc,
        ..setting("surrogate_rows", "method.surrogate_rows", Kind::Count(0))
    },
    Setting {
        label: "tempering reference",
        help: "Where the tempering starts: auto (EP's Gaussian where the cost model expects EP plus the shorter path to cost less than the prior path — a Gaussian prior, fixed γ, one run, no delayed acceptance — else the prior; the choice and its reason are printed and kept in details.reference), prior (γ from 0), or ep (EP runs first and SMC tempers from its Gaussian, variance ×1.2, to the posterior: q^(1−β)·(prior·e^(−γR))^β; exact, log Z too; fewer stages where EP is close to the posterior). The prior path is taken, with a warning, where EP fails or does not converge, for γ = auto, several runs or delayed acceptance.",
        default: "auto",
        methods: SMC,
        priors: &[Gaussian, Ard],
        group: Group::Smc,
        ..setting(
            "smc_reference",
            "method.smc_reference",
            Kind::Choice(&["auto", "prior", "ep"]),
        )
    },
    Setting {
        label: "on a phase jump",
        help: "What an SMC run tempered from the prior (each of several runs too) does when a stage finds a phase its incoming cloud held too little of (a first-order transition: its mixture move's component shares shift by ≥ 0.2 within the stage), which leaves log Z low: rerun (SMC runs again, tempered from a Gaussian fitted to the first run's final cloud, which crosses no transition, and reports that run; exact given the Gaussian; both log Z in details.phase_jump) or flag (keep the prior path's run, warning log_z_phase_jump).",
        default: "rerun",
        methods: SMC,
        priors: &[Gaussian, Ard],
        group: Group::Smc,
        ..setting(
            "phase_jump",
            "method.phase_jump",
            Kind::Choice(&["rerun", "flag"]),
        )
    },
    Setting {
        label: "most stages",
        help: "Cap on the number of tempering stages.",
        default: "1000",
        methods: SMC,
        group: Group::Smc,
        ..setting("max_stages", "method.max_stages", Kind::Count(1))
    },
    Setting {
        label: "CV: full path",
        help: "With γ = auto: run every fold's path to the top of the γ grid instead of ending the paths once the mean held-out AUC has clearly fallen (at two grid points in a row, each more than one paired standard error below the best; announced and recorded).",
        methods: SMC,
        requires: Requires::GammaAuto,
        group: Group::Smc,
        ..setting("full_path", "method.full_path", Kind::Switch)
    },
    Setting {
        label: "sampler seed",
        help: "Seed of the sampler alone (default: the run's seed), to compare SMC seeds on one split.",
        unset: "the run's seed",
        methods: SMC,
        group: Group::Smc,
        ..setting("smc_seed", "method.smc_seed", Kind::Count(0))
    },
    Setting {
        label: "independent runs R",
        help: "Independent SMC runs (seeds derived from the sampler seed; the first is that seed's single run), pooled with equal weights; R ≥ 2 adds R-hat per coefficient, log Z as mean ± sd and the MCSE of every posterior mean (R times the time).",
        default: "1",
        methods: SMC,
        priors: THETA_PRIORS,
        form: true,
        group: Group::Smc,
        ..setting("runs", "method.runs", Kind::Count(1))
    },
    Setting {
        label: "only run r",
        help: "Only run r of the R independent runs (the seed --runs R gives it), its whole cloud kept in the record: make the R runs apart (other processes or machines) and pool them with `pacauc merge` into the record --runs R makes.",
        unset: "every run",
        methods: SMC,
        priors: THETA_PRIORS,
        group: Group::Smc,
        ..setting("run", "method.run", Kind::Count(1))
    },
];

/// EP.
pub const EP_SETTINGS: &[Setting] = &[
    Setting {
        label: "damping η",
        help: "Initial damping step η; halved (and kept halved) when a sweep is rejected.",
        default: "0.7",
        methods: EP,
        form: true,
        group: Group::Ep,
        ..setting(
            "damping",
            "method.damping",
            Kind::Number(range(0.0, 1.0, true, false)),
        )
    },
    Setting {
        label: "tolerance",
        help: "Converged when the largest relative change of a mean (in sds) or sd is below tol·η.",
        default: "0.0001",
        methods: EP,
        form: true,
        group: Group::Ep,
        ..setting("tol", "method.tol", Kind::Number(Range::POSITIVE))
    },
    Setting {
        label: "most sweeps",
        help: "Most sweeps before reporting non-convergence.",
        default: "1000",
        methods: EP,
        group: Group::Ep,
        ..setting("max_sweeps", "method.max_sweeps", Kind::Count(1))
    },
    Setting {
        label: "γ grid (×n)",
        help: "With γ = auto: the grid of the cross-validation, as multiples of the training size n (comma-separated).",
        default: "0.0625,0.125,0.25,0.5,1,2,4,8,16",
        methods: Methods::Only(&["ep", "vb", "smc"]),
        requires: Requires::GammaAuto,
        group: Group::Ep,
        ..setting(
            "gamma_grid",
            "method.gamma_grid",
            Kind::Numbers(Range::POSITIVE),
        )
    },
    Setting {
        label: "form",
        help: "auto: the reduced (thin SVD) form when d ≥ n, else the primal one; or force primal or reduced.",
        default: "auto",
        methods: EP,
        priors: THETA_PRIORS,
        group: Group::Ep,
        ..setting(
            "ep_form",
            "method.ep_form",
            Kind::Choice(&["auto", "primal", "reduced"]),
        )
    },
    Setting {
        label: "site storage",
        help: "Storage of the pair sites: auto (f64 unless they would need more than 1 GiB), f64, or f32 (half the memory).",
        default: "auto",
        methods: EP,
        group: Group::Ep,
        ..setting(
            "site_precision",
            "method.site_precision",
            Kind::Choice(&["auto", "f64", "f32"]),
        )
    },
    Setting {
        label: "ARD iterations",
        help: "ARD prior: most evidence iterations (each a warm-started EP run).",
        default: "100",
        methods: EP,
        priors: &[Ard],
        group: Group::Ep,
        ..setting("ard_iters", "method.ard_iters", Kind::Count(1))
    },
    Setting {
        label: "evidence at the end only",
        help: "Report log Z_EP only at the end instead of at every sweep (~15% faster sweeps).",
        methods: EP,
        priors: THETA_PRIORS,
        group: Group::Ep,
        ..setting(
            "final_evidence_only",
            "method.final_evidence_only",
            Kind::Switch,
        )
    },
    Setting {
        label: "prior-site steps",
        help: "Spike-and-slab: steps of prior sites whose negative-site fix recurs: adaptive (a site capped at 0.2 grows back while its change keeps its sign) or strict (ALGORITHMS.md §5 to the letter).",
        default: "adaptive",
        methods: EP,
        priors: &[SpikeSlab],
        group: Group::Ep,
        ..setting(
            "site_steps",
            "method.site_steps",
            Kind::Choice(&["adaptive", "strict"]),
        )
    },
    Setting {
        label: "how γ is reached",
        help: "continuation: EP at γ directly from the prior (the folds' average after a CV) and, only where that does not converge, from γ = n/16 up to γ in steps that move the posterior by at most one sd, each warm-started from the last (details.gamma.path); classic: the former default (specs saved before it changed read as classic), retired: it runs the continuation too, and stderr and the record's warnings say so. Gaussian and spike-and-slab priors, and GP fits through features (Nyström, random Fourier; exact GP and CV folds run once); ARD reaches γ as before.",
        default: "continuation",
        absent: "classic",
        methods: EP,
        group: Group::Ep,
        ..setting(
            "ep_start",
            "method.ep_start",
            Kind::Choice(&["classic", "continuation"]),
        )
    },
    Setting {
        label: "step controller",
        help: "anderson: damped sweeps with a safeguarded secant step (Anderson(1) on the last two plain steps), safeguarded Anderson mixing where the run stays slow, and one non-progress verdict on the residual's contraction (the mixing's least squares is regularised relative to the residual, so a drift ends in the verdict, not a false convergence); classic: the former controller (stall, cycle, drift and extrapolation rules; specs saved before it changed read as classic), retired: it runs anderson, and stderr and the record's warnings say so. Anderson mixing with every prior (spike-and-slab mixes its pair and prior sites as one vector; exact GP-EP its pair sites).",
        default: "anderson",
        absent: "classic",
        methods: EP,
        group: Group::Ep,
        ..setting(
            "ep_controller",
            "method.ep_controller",
            Kind::Choice(&["classic", "anderson"]),
        )
    },
    Setting {
        label: "power EP α",
        help: "EP's pair sites by power EP (Minka 2004) with this α ∈ (0, 1]: the cavity removes α of a site and the update is damped by the power; 1 is EP, smaller α a different approximation that has a fixed point where EP's is out of reach. auto: EP, and where the final fit ends in EP's verdict of no fixed point in reach, power EP at α = 0.5 then 0.25, the record and a warning saying which α the answer is (details.power). Gaussian, ARD and spike-and-slab priors.",
        default: "auto",
        methods: EP,
        priors: &[Gaussian, Ard, SpikeSlab],
        auto_for: &[("ep", &[])],
        group: Group::Ep,
        ..setting(
            "ep_power",
            "method.ep_power",
            Kind::Tunable(range(0.0, 1.0, true, false)),
        )
    },
    Setting {
        label: "η grows back",
        help: "Retired: an η cut by rejected sweeps (invalid cavities, often only in the first sweeps from the prior at a large γ) always doubles back towards the damping after 5 clean sweeps that each reach a new smallest change, backing off where the larger step fails again. off (and a spec saved without it) runs the same, and stderr and the record's warnings say so (records made with it off can differ where a sweep was rejected); delete it from the spec. A run without a rejected sweep is the same either way (docs/BENCHMARKS.md, ep-regrow-reproduce).",
        default: "on",
        absent: "off",
        methods: EP,
        group: Group::Ep,
        ..setting(
            "ep_regrow",
            "method.ep_regrow",
            Kind::Choice(&["on", "off"]),
        )
    },
    Setting {
        label: "keep the fixes",
        help: "Spike-and-slab: keep §5's negative-site fix in the answer (default: when still active at convergence, EP continues without it to a true fixed point; primal form only).",
        methods: EP,
        priors: &[SpikeSlab],
        form: true,
        group: Group::Ep,
        ..setting("keep_fixes", "method.keep_fixes", Kind::Switch)
    },
    Setting {
        label: "pairs B",
        help: "EP: sites on B positive/negative pairs drawn uniformly (with replacement, seeded by the seed; one sample for the run, each CV fold its share) instead of all of them; needs B ≫ γ²·R(1 − R) (Gaussian and ARD priors).",
        unset: "all pairs",
        methods: EP,
        priors: &[Gaussian, Ard],
        group: Group::Ep,
        ..setting("pairs", "method.pairs", Kind::Count(1))
    },
];

/// VB.
pub const VB_SETTINGS: &[Setting] = &[
    Setting {
        label: "family",
        help: "Gaussian family of ρ = N(m, Σ): iso (Σ = σ² × the prior covariance, F1), diag (diagonal Σ, F2) or full (Σ through its Cholesky factor, F3).",
        default: "diag",
        methods: VB,
        form: true,
        group: Group::Vb,
        ..setting(
            "family",
            "method.family",
            Kind::Choice(&["iso", "diag", "full"]),
        )
    },
    Setting {
        label: "optimizer",
        help: "full-batch: L-BFGS with a strong-Wolfe line search over every item; stochastic: Adam on random mini-batches (unbiased); auto: full batch up to 4 million items (pairs, or rows for a classification loss).",
        default: "auto",
        methods: VB,
        form: true,
        group: Group::Vb,
        ..setting(
            "optimizer",
            "method.optimizer",
            Kind::Choice(&["auto", "full-batch", "stochastic"]),
        )
    },
    Setting {
        label: "batch (pairs)",
        help: "Stochastic optimizer: items (pairs, or rows for a classification loss) per step.",
        default: "4000",
        methods: VB,
        group: Group::Vb,
        ..setting("batch_pairs", "method.batch_pairs", Kind::Count(1))
    },
];

/// The great-circle sampler.
pub const GCS_SETTINGS: &[Setting] = &[
    Setting {
        label: "chains",
        help: "Independent chains (on threads), each from its own prior draw; R-hat compares them.",
        default: "4",
        methods: GCS,
        form: true,
        group: Group::Gcs,
        ..setting("chains", "method.chains", Kind::Count(2))
    },
    Setting {
        label: "warm-up steps",
        help: "Steps of each chain discarded before draws are kept.",
        default: "200",
        methods: GCS,
        form: true,
        group: Group::Gcs,
        ..setting("warmup", "method.warmup", Kind::Count(0))
    },
    Setting {
        label: "ESS target",
        help: "Stop once every coefficient's (and the risk's) bulk and tail ESS reach this and R-hat is at most `max_rhat`.",
        default: "400",
        methods: GCS,
        form: true,
        group: Group::Gcs,
        ..setting("min_ess", "method.min_ess", Kind::Number(Range::POSITIVE))
    },
    Setting {
        label: "R-hat target",
        help: "Largest rank-normalised split R-hat accepted by the stopping rule.",
        default: "1.01",
        methods: GCS,
        group: Group::Gcs,
        ..setting(
            "max_rhat",
            "method.max_rhat",
            Kind::Number(range(1.0, f64::INFINITY, true, true)),
        )
    },
    Setting {
        label: "most steps",
        help: "Cap on the steps of each chain (warm-up included); reaching it before the targets is reported as not converged.",
        default: "200000",
        methods: GCS,
        form: true,
        group: Group::Gcs,
        ..setting("max_steps", "method.max_steps", Kind::Count(1))
    },
    Setting {
        label: "circle directions",
        help: "Tangent directions of the great circles: gaussian (ellipses of the whole θ around EP's Gaussian, EP run first and announced; elliptical slice moves with respect to it, exact whatever EP's quality; when EP fails or does not converge, a Gaussian fitted over the warm-up, with a warning), adapted (drawn from the chains' covariance of the direction, estimated over the warm-up and then fixed, each move accepted by an exact Metropolis–Hastings ratio; uniform when the warm-up is under 40 steps, d = 2 or d > 400) or uniform (GH00's, every move accepted). gaussian is the default: on the demo and six shared data sets it reached R-hat ≤ 1.01 with more ESS per CPU second than adapted, and on DNA (d = 180) adapted does not mix (docs/BENCHMARKS.md, gcs-directions).",
        default: "gaussian",
        methods: GCS,
        form: true,
        group: Group::Gcs,
        ..setting(
            "directions",
            "method.directions",
            Kind::Choice(&["uniform", "adapted", "gaussian"]),
        )
    },
    Setting {
        label: "move on a circle",
        help: "How a chain moves on each great circle: exact (the exact draw of the angle: one pass over every positive/negative pair per step), slice (a slice move with a shrinking bracket: a few risk evaluations of O(n) each, also exact; for many pairs, e.g. DNA's 1 M) or auto (slice above 64 pairs per row).",
        default: "exact",
        methods: GCS,
        group: Group::Gcs,
        ..setting(
            "circle",
            "method.circle",
            Kind::Choice(&["exact", "slice", "auto"]),
        )
    },
    Setting {
        label: "label-noise level q",
        help: "With loss label-noise: the probability q that a training label is flipped.",
        default: "0.1",
        methods: GCS,
        form: true,
        group: Group::Gcs,
        ..setting(
            "noise",
            "method.noise",
            Kind::Number(range(0.0, 0.5, true, true)),
        )
    },
    Setting {
        label: "evidence",
        help: "Also estimate log Z by stepping stones from γ = 0 (label-noise loss: the evidence of every noise level on the way).",
        methods: GCS,
        form: true,
        group: Group::Gcs,
        ..setting("evidence", "method.evidence", Kind::Switch)
    },
];
