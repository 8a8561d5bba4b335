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

/// `classify --headers FILE`: one request's head judged as the pipeline
/// judges a claimed browser (issue #67), as one JSON object.
pub fn request(head: &std::path::Path, scheme: &str, ja4: Option<&str>) -> anyhow::Result<ExitCode> {
    use robotgate::agent::disguise::{self, Claim, Family, Presented, Scheme};
    let bytes = if head == std::path::Path::new("-") {
        let mut b = Vec::new();
        io::Read::read_to_end(&mut io::stdin().lock(), &mut b).context("reading stdin")?;
        b
    } else {
        std::fs::read(head).with_context(|| format!("reading {}", head.display()))?
    };
    let text = String::from_utf8_lossy(&bytes);
    let mut fields: Vec<(String, &str)> = Vec::new();
    for line in text.lines().map(|l| l.trim_end_matches('\r')) {
        if line.is_empty() {
            if fields.is_empty() {
                continue;
            }
            break; // the end of the head
        }
        match line.split_once(':') {
            Some((name, value)) if !name.contains(' ') && !name.is_empty() => {
                fields.push((name.to_ascii_lowercase(), value.trim()))
            }
            // The request line (`GET / HTTP/1.1`), or HTTP/2's pseudo-fields.
            _ => {}
        }
    }
    let (mut ua, mut host) = ("", "");
    let mut presented = Presented::default();
    for (name, value) in &fields {
        match name.as_str() {
            "user-agent" => ua = value,
            "host" | ":authority" => host = value,
            _ => {}
        }
        presented.note(name.as_bytes(), value);
    }
    let scheme = match scheme {
        "https" => Scheme::Https,
        "http" => Scheme::Http,
        _ => Scheme::Unknown,
    };
    let hello = match ja4 {
        Some(text) => Some(
            disguise::hello::from_edge(text)
                .with_context(|| format!("`{text}` is not a JA4 fingerprint of a TLS connection"))?,
        ),
        None => None,
    };
    let classifier = robotgate::agent::Classifier::builtin();
    let agent = classifier.classify(ua.as_bytes());
    let claim = Claim::of(ua.as_bytes());
    let findings = if agent.kind == robotgate::agent::AgentKind::Browser {
        disguise::judge(&claim, &presented, scheme, host, hello.as_ref())
    } else {
        disguise::Findings::NONE
    };
    let agent = agent.unmasked(findings);
    let family = match claim.family {
        Family::Chromium => "chromium",
        Family::Gecko => "gecko",
        Family::WebKit => "webkit",
        Family::Other => "other",
    };
    let signs: Vec<serde_json::Value> = findings
        .signs()
        .map(|(s, strong)| serde_json::json!({"sign": s.as_str(), "strength": if strong { "strong" } else { "weak" }}))
        .collect();
    let mut line: serde_json::Value =
        serde_json::from_str(&robotgate::agent::to_json_line(ua.as_bytes(), &agent, None))?;
    line["claim"] = serde_json::json!({"family": family, "version": claim.major, "mobile": claim.mobile, "embedded": claim.embedded});
    line["disguised"] = agent.disguised().into();
    line["refused_by_default"] = findings.strong().into();
    line["signs"] = signs.into();
    if let Some(h) = hello {
        line["ja4"] = h.ja4.as_str().into();
    }
    println!("{line}");
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
