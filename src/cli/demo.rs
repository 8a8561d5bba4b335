//! `robotgate demo`: the proxy on 127.0.0.1 in front of a built-in demo site.

use std::path::PathBuf;
use std::process::ExitCode;

pub fn run(port: u16, dir: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    robotgate::server::ops::demo::run(port, dir)?;
    Ok(ExitCode::SUCCESS)
}
