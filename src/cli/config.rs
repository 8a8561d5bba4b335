//! `robotgate config check`: load and validate the configuration.

use std::io::{self, Write};
use std::process::ExitCode;

use super::ConfigCommand;

pub fn run(command: ConfigCommand) -> anyhow::Result<ExitCode> {
    match command {
        ConfigCommand::Check { config } => check(&config),
    }
}

fn check(config: &std::path::Path) -> anyhow::Result<ExitCode> {
    let (problems, warnings) = robotgate::server::ops::check::check(config);
    let mut out = io::stdout().lock();
    for w in &warnings {
        writeln!(out, "{w} (warning)")?;
    }
    if problems.is_empty() {
        writeln!(out, "ok")?;
        return Ok(ExitCode::SUCCESS);
    }
    for p in &problems {
        writeln!(out, "{p}")?;
    }
    Ok(ExitCode::from(1))
}
