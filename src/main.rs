//! The `robotgate` command line: `serve`, `demo`, `health`, `config`, `robots`, `feeds`, `check`, `lint`,
//! `verify`, `report`, `replay`, `classify`.
//! The arguments and each command's body are in `cli`; here, only the dispatch.

use std::process::ExitCode;

use clap::Parser;

/// mimalloc: measured faster than glibc malloc for Pingora's per-request
/// allocations (see BENCHMARKS.md); the passthrough baseline uses it too.
/// Built with `no_thp`: it does not ask the kernel for transparent huge
/// pages (`madvise(MADV_HUGEPAGE)`), which held its arenas as whole 2 MB
/// pages (205 of 252 MB resident at 10,000 sites, THP mode `madvise`).
/// Where the mode is `always`, `MIMALLOC_ALLOW_THP=0` turns them off too.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod cli;

use cli::{Cli, Command};

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli.command) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("robotgate: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn run(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Serve { config, daemon, upgrade, pid_file, upgrade_sock } => {
            cli::serve::run(&config, daemon, upgrade, pid_file, upgrade_sock)
        }
        Command::Config(command) => cli::config::run(command),
        Command::Robots(command) => cli::robots::run(command),
        Command::Feeds(command) => cli::feeds::run(command),
        Command::Demo { port, dir } => cli::demo::run(port, dir),
        Command::Health { addr } => cli::health::run(&addr),
        Command::Check { json, proxy, config, robots_file, user_agent, urls } => {
            cli::check::run(&robots_file, &user_agent, &urls, json, proxy, config.as_deref())
        }
        Command::Lint { format, config, files } => cli::lint::run(&files, format, config.as_deref()),
        Command::Classify { headers: Some(head), scheme, ja4, .. } => {
            cli::classify::request(&head, &scheme, ja4.as_deref())
        }
        Command::Classify { robots, ip, user_agents, .. } => cli::classify::run(robots, ip, user_agents),
        Command::Verify { ip, user_agent, dns, feeds, json } => cli::verify::run(ip, &user_agent, dns, feeds, json),
        Command::Report { files, since, site, format, out } => {
            cli::report::run(&files, since.as_deref(), site, &format, out.as_deref())
        }
        Command::Replay { config, logs, site, format, fields, since, threads, dns, emit, output, out, compare } => {
            let args = cli::replay::ReplayArgs { site, format, fields, since, threads, dns, emit, output, out };
            match compare.as_deref() {
                Some([old, new]) => cli::replay::compare(old, new, &logs, args),
                _ => cli::replay::run(&config, &logs, args),
            }
        }
    }
}
