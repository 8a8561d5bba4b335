//! `robotgate lint`: lint robots.txt files.

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

use super::Format;

pub fn run(files: &[PathBuf], format: Format) -> anyhow::Result<ExitCode> {
    use robotgate::robots::lint::{lint, Diagnostic, Severity};
    let mut out = io::stdout().lock();
    let mut errors = 0usize;
    let mut json = Vec::new();
    let builtin = robotgate::agent::BotDb::builtin();
    for file in files {
        let body = std::fs::read(file).with_context(|| format!("reading {}", file.display()))?;
        let mut found = lint(&body);
        // The directives a robot of the database obeys in its group but says
        // it ignores (#27): the file's author most likely meant to slow it.
        let compiled = robotgate::robots::RobotsTxt::compile(&body);
        found.extend(robotgate::policy::unsupported::ignored_directives(&compiled, &builtin));
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
