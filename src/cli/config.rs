//! `robotgate config check`: load and validate the configuration.

use std::io::{self, Write};
use std::process::ExitCode;

use super::ConfigCommand;

pub fn run(command: ConfigCommand) -> anyhow::Result<ExitCode> {
    match command {
        ConfigCommand::Check { config, host } => {
            let host = robotgate::config::Host::from_name(&host).unwrap_or(robotgate::config::Host::Serve);
            check(&config, host)
        }
    }
}

fn check(config: &std::path::Path, host: robotgate::config::Host) -> anyhow::Result<ExitCode> {
    let (problems, warnings, ignored) = robotgate::server::ops::check::check(config, host);
    let mut out = io::stdout().lock();
    for w in &warnings {
        writeln!(out, "{w} (warning)")?;
    }
    for key in &ignored {
        writeln!(out, "{}: ignored inside nginx: {key} (note)", config.display())?;
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
