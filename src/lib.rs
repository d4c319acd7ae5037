//! pacauc: PAC-Bayesian AUC scoring. `engine` is the pure inference library;
//! `spec` says what to run (the run specification and the method registry);
//! `eventlog` writes and follows the JSON-lines logs of runs (`fit --events`,
//! `watch`); `figures` is chart data computed from run records and `plot` draws it to
//! SVG/PNG files; `protocol` runs RACL14's tables end to end (`pacauc
//! reproduce`); `cli` is the command line; `worker`, `app` and `tui` are the terminal
//! explorer (engine thread, pure UI state, drawing and the frame loop).

pub mod app;
pub mod cli;
pub mod engine;
pub mod eventlog;
pub mod figures;
#[doc(hidden)]
pub mod fuzzing;
pub mod plot;
pub mod protocol;
pub mod spec;
#[doc(hidden)]
pub mod testkit;
pub mod tui;
pub mod worker;
