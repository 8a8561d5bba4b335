//! `robotgate report`: sum up violation logs.

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

use super::common::open_log;

/// `robotgate report`: stream each log through one bounded summary, then render it.
pub fn run(
    files: &[PathBuf],
    since: Option<&str>,
    site: Option<String>,
    format: &str,
    out: Option<&std::path::Path>,
) -> anyhow::Result<ExitCode> {
    use robotgate::report::render::{self, Format};
    use robotgate::report::{self as core, Filter, Summary};
    use std::io::BufWriter;
    let format =
        Format::from_name(format).with_context(|| format!("--format {format}: not one of text, json, html"))?;
    let since = match since {
        None => None,
        Some(text) => {
            let back = robotgate::config::parse_duration(text).map_err(|e| anyhow::anyhow!("--since: {e}"))?;
            let now = robotgate::policy::Clock::System.unix_ms();
            let cutoff = now.saturating_sub(back.as_millis() as u64);
            Some(robotgate::time::rfc3339_ms(cutoff))
        }
    };
    let mut summary = Summary::new(Filter { since, site });
    for path in files {
        let name = path.display().to_string();
        let input = open_log(path)?;
        core::feed(input, &name, &mut summary).with_context(|| format!("reading {name}"))?;
    }
    match out {
        Some(path) => {
            let file = std::fs::File::create(path).with_context(|| format!("cannot write {}", path.display()))?;
            let mut w = BufWriter::new(file);
            render::render(&summary, format, &mut w)?;
            w.flush()?;
        }
        None => {
            let mut w = BufWriter::new(io::stdout().lock());
            render::render(&summary, format, &mut w)?;
            w.flush()?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
