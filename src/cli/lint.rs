//! `robotgate lint`: lint robots.txt files.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;

use super::Format;
use robotgate::robots::lint::{lint, Diagnostic, Severity};

/// Findings about a file that the file alone does not show.
type ByFile = Vec<(PathBuf, Diagnostic)>;

/// With `--config`: each site's robots.txt, and the warnings of indexing
/// rules whose noindex that file hides, by file.
fn from_config(config: &Path) -> anyhow::Result<(Vec<PathBuf>, ByFile)> {
    let snap = robotgate::load::load(config).map_err(|problems| {
        let text: Vec<String> = problems.iter().map(ToString::to_string).collect();
        anyhow::anyhow!("{}", text.join("\n"))
    })?;
    let (mut files, mut found) = (Vec::new(), Vec::new());
    for (i, site) in snap.sites.iter().enumerate() {
        let (Some(path), Some(robots)) = (&site.conf.robots, &site.robots) else { continue };
        files.push(path.clone());
        let rules = &site.conf.indexing.rules;
        for mut h in robotgate::indexing::hidden(rules, &robots.compiled) {
            h.robots_line = robots.lines.file_line(h.robots_line).unwrap_or(h.robots_line);
            let message = h.message(rules, &format!("sites[{i}].indexing.rules[{}]", h.rule));
            let d = Diagnostic { line: h.robots_line, severity: Severity::Warning, code: "hidden-noindex", message };
            found.push((path.clone(), d));
        }
    }
    Ok((files, found))
}

pub fn run(files: &[PathBuf], format: Format, config: Option<&Path>) -> anyhow::Result<ExitCode> {
    let mut files = files.to_vec();
    let mut extra = Vec::new();
    if let Some(config) = config {
        let (more, found) = from_config(config)?;
        files.extend(more.into_iter().filter(|f| !files.contains(f)).collect::<Vec<_>>());
        extra = found;
    }
    let mut out = io::stdout().lock();
    let mut errors = 0usize;
    let mut json = Vec::new();
    let builtin = robotgate::agent::BotDb::builtin();
    for file in &files {
        let body = std::fs::read(file).with_context(|| format!("reading {}", file.display()))?;
        let mut found = lint(&body);
        // The directives a robot of the database obeys in its group but says
        // it ignores (#27): the file's author most likely meant to slow it.
        let compiled = robotgate::robots::RobotsTxt::compile(&body);
        found.extend(robotgate::policy::unsupported::ignored_directives(&compiled, &builtin));
        found.extend(extra.iter().filter(|(f, _)| f == file).map(|(_, d)| d.clone()));
        found.sort_by_key(|d| d.line);
        // What `serve` would refuse to load (#32), unless the linter already
        // said so in its own words (`html`).
        if let Err(refusal) = robotgate::load::check_robots_body(&body) {
            if !found.iter().any(|d| d.code == "html") {
                let message = format!("robotgate refuses to load this file: {refusal}");
                found.insert(0, Diagnostic { line: 1, severity: Severity::Error, code: "not-robots-txt", message });
            }
        }
        for d in found {
            errors += usize::from(d.severity == Severity::Error);
            match format {
                Format::Text => {
                    writeln!(out, "{}:{}: {}: {} [{}]", file.display(), d.line, d.severity.as_str(), d.message, d.code)?
                }
                Format::Json => json.push(serde_json::json!({
                    "file": file.display().to_string(), "line": d.line, "severity": d.severity.as_str(),
                    "code": d.code, "message": d.message,
                })),
            }
        }
    }
    if format == Format::Json {
        writeln!(out, "{}", serde_json::Value::Array(json))?;
    }
    Ok(if errors > 0 { ExitCode::from(1) } else { ExitCode::SUCCESS })
}
