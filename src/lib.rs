//! pacauc: PAC-Bayesian AUC scoring. `engine` is the pure inference library;
//! `cli` is the headless command-line client.

pub mod cli;
pub mod engine;
