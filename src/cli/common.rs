//! Helpers more than one command uses.

use std::io::{self, BufRead};
use std::path::Path;

use anyhow::Context;

/// Opens a log (or stdin for `-`), decompressing gzip.
pub fn open_log(path: &Path) -> anyhow::Result<Box<dyn BufRead + Send>> {
    let name = path.display().to_string();
    let input: Box<dyn BufRead + Send> = if name == "-" {
        Box::new(io::BufReader::with_capacity(1 << 16, io::stdin()))
    } else {
        let file = std::fs::File::open(path).with_context(|| format!("cannot open {name}"))?;
        Box::new(io::BufReader::with_capacity(1 << 16, file))
    };
    robotgate::report::decoder(input).with_context(|| format!("cannot read {name}"))
}

/// Loads the config and every file it names; its problems make one error, a line each.
pub fn load_snapshot(config: &Path) -> anyhow::Result<robotgate::load::Snapshot> {
    robotgate::load::load(config).map_err(|problems| {
        let lines: Vec<String> = problems.iter().map(ToString::to_string).collect();
        anyhow::anyhow!("{}", lines.join("\n"))
    })
}
