//! The inference library: no terminal code. Data, metrics, priors, engines,
//! baselines, run records and the models they hold (`model`, `predict`).

pub mod baseline;
pub mod bounds;
pub mod certify;
pub mod data;
pub mod ep;
pub mod event;
pub mod fast_risk;
pub mod fit;
pub mod gcs;
pub mod gp;
pub mod interface;
pub mod is_check;
pub mod linalg;
pub mod mcmc_diag;
pub mod metrics;
pub mod model;
pub mod model_check;
pub mod pairs;
pub mod predict;
pub mod prior;
pub mod problem;
pub mod quality;
pub mod record;
pub mod rng;
pub mod select;
pub mod smc;
pub mod vb;
pub mod votes;

pub use event::Event;
pub use fit::{Fit, ScoreModel};
pub use interface::{Control, Engine, EngineError, NoObserver, Observer};
pub use prior::Prior;
pub use problem::Problem;
