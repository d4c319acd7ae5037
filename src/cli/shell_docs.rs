//! `pacauc completions SHELL` and `pacauc man`: generated from the same clap
//! definitions as `--help`, so they list every command and flag there is.

use std::io::Write;
use std::path::PathBuf;

use clap::{Args, CommandFactory};
use clap_complete::Shell;

use super::Cli;
use super::fit::CliError;

#[derive(Debug, Clone, Args)]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish, elvish or powershell.
    #[arg(value_enum)]
    pub shell: Shell,
}

#[derive(Debug, Clone, Args)]
pub struct ManArgs {
    /// Write pacauc.1 and one page per command (pacauc-fit.1, …) into this
    /// folder instead of printing pacauc.1 on stdout.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// Prints the completion script (install: see `pacauc completions --help`).
pub fn completions(args: &CompletionsArgs) -> Result<(), CliError> {
    let mut cmd = Cli::command();
    clap_complete::generate(args.shell, &mut cmd, "pacauc", &mut std::io::stdout());
    Ok(())
}

/// Prints the man page, or writes every page into `--out`.
pub fn man(args: &ManArgs) -> Result<(), CliError> {
    let cmd = Cli::command();
    match &args.out {
        None => {
            let mut buf = Vec::new();
            clap_mangen::Man::new(cmd)
                .render(&mut buf)
                .map_err(|e| CliError::Input(format!("man page: {e}")))?;
            std::io::stdout()
                .write_all(&buf)
                .map_err(|e| CliError::Input(format!("stdout: {e}")))
        }
        Some(dir) => {
            std::fs::create_dir_all(dir).map_err(|e| {
                CliError::Input(format!("{}: cannot create the folder: {e}", dir.display()))
            })?;
            clap_mangen::generate_to(cmd, dir).map_err(|e| {
                CliError::Input(format!("{}: cannot write the pages: {e}", dir.display()))
            })?;
            eprintln!("man pages written to {}", dir.display());
            Ok(())
        }
    }
}
