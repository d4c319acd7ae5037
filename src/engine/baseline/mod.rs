//! Baselines of RACL14's tables: penalised logistic regression and RankBoost.B.

pub mod logit;
mod logit_newton;
pub mod rankboost;

pub use logit::Logit;
pub use rankboost::RankBoost;
