//! pacauc: PAC-Bayesian AUC scoring. `engine` is the pure inference library;
//! `cli` is the command line; `worker`, `app` and `tui` are the terminal
//! explorer (engine thread, pure UI state, drawing and the frame loop).

pub mod app;
pub mod cli;
pub mod engine;
#[doc(hidden)]
pub mod testkit;
pub mod tui;
pub mod worker;
