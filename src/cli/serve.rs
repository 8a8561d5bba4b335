//! `robotgate serve`: run the proxy.

use std::path::Path;
use std::process::ExitCode;

pub fn run(
    config: &Path,
    daemon: bool,
    upgrade: bool,
    pid_file: Option<String>,
    upgrade_sock: Option<String>,
) -> anyhow::Result<ExitCode> {
    let options = robotgate::server::ServeOptions { daemon, upgrade, pid_file, upgrade_sock };
    robotgate::server::serve(config, options)?;
    Ok(ExitCode::SUCCESS)
}
