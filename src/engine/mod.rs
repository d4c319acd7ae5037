//! The inference library: no terminal code. Data, metrics, priors, engines,
//! baselines, run records and the models they hold (`model`, `predict`).

pub mod auc_interval;
pub mod baseline;
pub mod bounds;
pub mod certify;
pub mod data;
pub mod ep;
pub mod error;
pub mod event;
pub mod fit;
pub mod gcs;
pub mod gp;
pub mod interface;
pub mod is_check;
pub mod mcmc_diag;
pub mod metrics;
pub mod model;
pub mod model_check;
pub mod numerics;
pub mod pairs;
pub mod posterior_auc;
pub mod predict;
pub mod prior;
pub mod problem;
pub mod quality;
pub mod record;
pub mod record_details;
pub mod reduction;
pub mod select;
pub mod smc;
pub mod vb;
pub mod votes;

pub use error::{EngineError, NonConvergence};
pub use event::Event;
pub use fit::{EngineKind, Fit, ScoreModel};
pub use interface::{Control, Engine, NoObserver, Observer};
pub use prior::Prior;
pub use problem::Problem;
