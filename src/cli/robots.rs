//! `robotgate robots show`: the robots.txt each site serves.

use std::io::{self, Write};
use std::process::ExitCode;

use super::common::load_snapshot;
use super::RobotsCommand;

pub fn run(command: RobotsCommand) -> anyhow::Result<ExitCode> {
    match command {
        RobotsCommand::Show { config, site } => show(&config, site.as_deref()),
    }
}

fn show(config: &std::path::Path, only: Option<&str>) -> anyhow::Result<ExitCode> {
    let snap = load_snapshot(config)?;
    let mut out = io::stdout().lock();
    let mut shown = 0;
    for site in snap.sites.iter().filter(|s| only.is_none_or(|n| s.conf.name == n)) {
        shown += 1;
        writeln!(out, "# ---- site {} ----", site.conf.name)?;
        let Some(robots) = &site.robots else {
            writeln!(out, "# no robots.txt: /robots.txt goes to the origin\n")?;
            continue;
        };
        // Each line as served; a line robotgate added is marked, with why.
        for (i, line) in robotgate::robots::lines::lines(&robots.file.body).enumerate() {
            let n = i as u32 + 1;
            let text = String::from_utf8_lossy(line.text);
            if !robots.lines.is_added(n) {
                writeln!(out, "{text}")?;
                continue;
            }
            match robots.notes.iter().find(|(l, _)| *l == n) {
                Some((_, why)) => writeln!(out, "{text}  # robotgate: managed: {why}")?,
                None if text.is_empty() => writeln!(out)?,
                None => writeln!(out, "{text}  # robotgate: managed")?,
            }
        }
        writeln!(out)?;
    }
    if shown == 0 {
        anyhow::bail!("no site named `{}`", only.unwrap_or_default());
    }
    Ok(ExitCode::SUCCESS)
}
