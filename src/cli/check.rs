//! `robotgate check`: is a URL allowed for a user agent by a robots.txt file?
//! Several URLs are checked in turn (one verdict a line; exit 1 if any is disallowed).

use std::io::{self, Write};
use std::process::ExitCode;

use anyhow::Context;

pub fn run(
    robots_file: &std::path::Path,
    user_agent: &str,
    urls: &[String],
    json: bool,
    proxy: bool,
) -> anyhow::Result<ExitCode> {
    use robotgate::robots::{GroupMatch, RobotsTxt};
    let body = std::fs::read(robots_file).with_context(|| format!("reading {}", robots_file.display()))?;
    let robots = RobotsTxt::compile(&body);
    let mut out = io::stdout().lock();
    let mut all_allowed = true;
    for url in urls {
        let verdict = if proxy {
            let selection = robots.select(&[user_agent]);
            robots.check(&selection, &robotgate::robots::parse::path_params_query(url.as_bytes()))
        } else {
            robots.allows(user_agent, url)
        };
        all_allowed &= verdict.allowed;
        let group = match verdict.group {
            GroupMatch::Specific => Some(user_agent),
            GroupMatch::Global => Some("*"),
            GroupMatch::None => None,
        };
        if json {
            let rule = verdict.rule.map(|r| {
                serde_json::json!({"directive": r.kind.as_str(), "pattern": r.pattern, "line": r.line, "index_html": r.index_html})
            });
            let v = serde_json::json!({
                "allowed": verdict.allowed, "user_agent": user_agent, "url": url,
                "group": group, "rule": rule, "robots_hash": robots.short_hash(),
            });
            writeln!(out, "{v}")?;
        } else {
            let word = if verdict.allowed { "allowed" } else { "disallowed" };
            let group = group.map_or_else(|| "no group applies".to_owned(), |g| format!("group {g}"));
            match verdict.rule {
                Some(r) => writeln!(out, "{word}: line {}: {}: {} ({group})", r.line, r.kind.as_str(), r.pattern)?,
                None => writeln!(out, "{word}: no rule matched ({group})")?,
            }
        }
    }
    Ok(if all_allowed { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
