//! `robotgate classify`: User-Agents to JSON lines.

use std::io::{self, BufRead, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

pub fn run(
    robots: Option<PathBuf>,
    ip: Option<std::net::IpAddr>,
    user_agents: Vec<String>,
) -> anyhow::Result<ExitCode> {
    let classifier_for_ids = robotgate::agent::Classifier::builtin();
    let ids = ip.map(|_| IdentityByRanges::new(&classifier_for_ids));
    let robots = match robots {
        Some(path) => Some(robotgate::robots::RobotsTxt::compile(
            &std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?,
        )),
        None => None,
    };
    let classifier = robotgate::agent::Classifier::builtin();
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    let mut emit = |ua: &[u8]| -> anyhow::Result<()> {
        let agent = classifier.classify(ua);
        // Browsers obey no group: robots.txt does not bind people.
        let group = match (&robots, agent.is_bot()) {
            (Some(robots), true) => robots.selection_name(&robots.select(&agent.tokens)),
            _ => None,
        };
        let mut line = robotgate::agent::to_json_line(ua, &agent, group);
        if let (Some(ip), Some(ids)) = (ip, &ids) {
            let identity = ids.identity(&agent, ip);
            line.pop(); // the closing brace: one more key
            line.push_str(&format!(",\"ip\":\"{ip}\",\"identity\":\"{identity}\"}}"));
        }
        out.write_all(line.as_bytes())?;
        out.write_all(b"\n")?;
        Ok(())
    };
    if user_agents.is_empty() {
        let stdin = io::stdin();
        let mut input = stdin.lock();
        let mut buf = Vec::new();
        loop {
            buf.clear();
            if input.read_until(b'\n', &mut buf).context("reading stdin")? == 0 {
                break;
            }
            let line = buf.strip_suffix(b"\n").unwrap_or(&buf);
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            emit(line)?;
        }
    } else {
        for ua in &user_agents {
            emit(ua.as_bytes())?;
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// `classify --ip`: the identity the published ranges give (reverse DNS is
/// `robotgate verify`'s).
struct IdentityByRanges {
    ranges: robotgate::identity::RangeTable,
    feeds: Vec<Vec<robotgate::identity::FeedId>>,
    rdns: Vec<robotgate::identity::Rdns>,
}

impl IdentityByRanges {
    fn new(classifier: &robotgate::agent::Classifier) -> Self {
        let ranges = robotgate::identity::RangeTable::builtin();
        let bots = classifier.db().bots();
        let feeds =
            bots.iter().map(|b| robotgate::identity::resolve(&ranges, &b.ip_ranges).unwrap_or_default()).collect();
        let rdns = bots.iter().map(|b| b.rdns_use()).collect();
        IdentityByRanges { ranges, feeds, rdns }
    }

    fn identity(&self, agent: &robotgate::agent::Agent<'_>, ip: std::net::IpAddr) -> &'static str {
        use robotgate::identity::{ByRanges, Identify, RangesOnly};
        let robotgate::agent::AgentKind::Known(i) = agent.kind else { return "not-claimed" };
        let by = ByRanges { table: &self.ranges, feeds: &self.feeds, rdns: &self.rdns, complete_for: None };
        RangesOnly(by).identify(i, Some(ip)).as_str()
    }
}
