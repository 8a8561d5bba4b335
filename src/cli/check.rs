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
    config: Option<&std::path::Path>,
) -> anyhow::Result<ExitCode> {
    use robotgate::robots::{GroupMatch, RobotsTxt};
    let snap = match config {
        Some(c) => Some(robotgate::load::load(c).map_err(|problems| {
            let text: Vec<String> = problems.iter().map(ToString::to_string).collect();
            anyhow::anyhow!("{}", text.join("\n"))
        })?),
        None => None,
    };
    let body = std::fs::read(robots_file).with_context(|| format!("reading {}", robots_file.display()))?;
    let robots = RobotsTxt::compile(&body);
    let mut out = io::stdout().lock();
    let mut all_allowed = true;
    for url in urls {
        let path = robotgate::robots::parse::path_params_query(url.as_bytes());
        let selection = robots.select(&[user_agent]);
        let verdict = if proxy { robots.check(&selection, &path) } else { robots.allows(user_agent, url) };
        all_allowed &= verdict.allowed;
        let group = match verdict.group {
            GroupMatch::Specific => Some(user_agent),
            GroupMatch::Global => Some("*"),
            GroupMatch::None => None,
        };
        // The usage preference in force (issue #29), for an allowed URL only: a
        // preference applies to paths the group allows. Read with the proxy's
        // group choice; the verdict above stays Google's unless `--proxy`.
        let preference = robotgate::policy::in_force(&robots, &selection, &path).filter(|_| verdict.allowed).map(
            |(pref, origins)| {
                let from: Vec<String> = ["train-ai", "search", "ai-input"]
                    .iter()
                    .zip(origins)
                    .filter_map(|(label, o)| o.map(|(directive, line)| format!("{label}: {directive} line {line}")))
                    .collect();
                (pref.to_string(), from)
            },
        );
        // The indexing rules the URL's site gives it, for this robot (#42).
        let indexing: Vec<(String, String)> = snap
            .as_ref()
            .and_then(|snap| {
                let host = url.split_once("://").map(|(_, rest)| rest.split(['/', '?']).next().unwrap_or(""));
                let site = snap.settings.site_for_host(host.unwrap_or("")).or(snap.settings.default_site).unwrap_or(0);
                let live = snap.sites.get(site)?;
                let rules = &live.conf.indexing.rules;
                let applied = rules.for_robot(&[user_agent], &path);
                Some(
                    applied
                        .iter()
                        .map(|a| {
                            let value = match a.bot {
                                Some(bot) => format!("{}: {}", bot.to_ascii_lowercase(), a.rule.set),
                                None => a.rule.set.to_string(),
                            };
                            let from = format!("sites[{site}].indexing.rules[{}], path {}", a.index, a.rule.path);
                            let from = if a.rule.set.noindex() && !verdict.allowed {
                                format!("{from}; hidden: robots.txt keeps the robot from seeing it")
                            } else {
                                from
                            };
                            (value, from)
                        })
                        .collect(),
                )
            })
            .unwrap_or_default();
        if json {
            let rule = verdict.rule.map(|r| {
                serde_json::json!({"directive": r.kind.as_str(), "pattern": r.pattern(), "line": r.line, "index_html": r.index_html})
            });
            let v = serde_json::json!({
                "allowed": verdict.allowed, "user_agent": user_agent, "url": url,
                "group": group, "rule": rule, "robots_hash": robots.short_hash(),
                "preference": preference.as_ref().map(|(p, from)| serde_json::json!({"value": p, "from": from})),
                "indexing": indexing.iter().map(|(v, from)| serde_json::json!({"x_robots_tag": v, "from": from})).collect::<Vec<_>>(),
            });
            writeln!(out, "{v}")?;
        } else {
            let word = if verdict.allowed { "allowed" } else { "disallowed" };
            let group = group.map_or_else(|| "no group applies".to_owned(), |g| format!("group {g}"));
            match verdict.rule {
                Some(r) => writeln!(out, "{word}: line {}: {}: {} ({group})", r.line, r.kind.as_str(), r.pattern())?,
                None => writeln!(out, "{word}: no rule matched ({group})")?,
            }
            if let Some((pref, from)) = &preference {
                writeln!(out, "usage preference: {pref} ({})", from.join("; "))?;
            }
            for (value, from) in &indexing {
                writeln!(out, "indexing: X-Robots-Tag: {value} ({from})")?;
            }
        }
    }
    Ok(if all_allowed { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
