//! `robotgate verify`: is the client at IP the robot its User-Agent names?

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

fn load_ranges(feeds: Option<PathBuf>) -> anyhow::Result<robotgate::identity::RangeTable> {
    let Some(dir) = feeds else { return Ok(robotgate::identity::RangeTable::builtin()) };
    let mut files = Vec::new();
    for entry in std::fs::read_dir(&dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry?.path();
        if path.extension().is_some_and(|x| x == "json") {
            let name = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
            files.push((name, std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?));
        }
    }
    let overrides: Vec<(&str, &str)> = files.iter().map(|(n, b)| (n.as_str(), b.as_str())).collect();
    Ok(robotgate::identity::RangeTable::with_overrides(&overrides)?)
}

pub fn run(
    ip: std::net::IpAddr,
    user_agent: &str,
    dns: Option<std::net::SocketAddr>,
    feeds: Option<PathBuf>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    use robotgate::server::verify::dns::{DnsConfig, DnsVerifier};
    let ranges = load_ranges(feeds)?;
    let classifier = robotgate::agent::Classifier::builtin();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let report = runtime.block_on(async {
        let cfg = DnsConfig {
            nameservers: dns.into_iter().collect(),
            timeout: std::time::Duration::from_millis(2000),
            max_in_flight: 4,
            cache_entries: 16,
        };
        let resolver = DnsVerifier::new(&cfg).ok();
        // As `serve` by default: a complete list older than the default
        // refresh interval lets reverse DNS verify outside it.
        let complete_for = Some(robotgate::config::DEFAULT_FEED_REFRESH.as_secs());
        robotgate::server::verify::identity::report(
            &classifier,
            &ranges,
            resolver.as_ref(),
            complete_for,
            ip,
            user_agent.as_bytes(),
        )
        .await
    });
    if json {
        let v = serde_json::json!({"ip": ip.to_string(), "user_agent": user_agent, "bot": report.bot, "identity": report.outcome, "evidence": report.evidence});
        println!("{v}");
    } else {
        println!("{}: {} ({})", report.outcome, report.bot.as_deref().unwrap_or("-"), report.evidence);
    }
    Ok(ExitCode::from(match report.outcome {
        "verified" => 0,
        "spoofed" => 1,
        _ => 3,
    }))
}
