//! Issue #40 against the real binary: one scripted sequence of requests that
//! reaches every outcome (browsers; verified, spoofed and two-robot
//! crawlers; a trap hit, the ban after it and its expiry; a verified crawler
//! on an armed trap; Crawl-delay and Request-rate; usage preferences; an
//! ai-user fetcher; a crawler holding the robots.txt it fetched before a
//! change) is sent through `robotgate serve`, and the access log of the same
//! requests through `robotgate replay --emit violations`. Both must give the
//! same records in the same order, and the same status for every request.
//!
//! The comparison knows no outcome by name: a new outcome that one path
//! forgets shows as a record or a status that differs. The script is also
//! held to cover every directive a record can have, so a path it never
//! exercised cannot agree by silence.

mod common;

use std::collections::BTreeSet;
use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::{get, wait_lines, within, Gate, Origin, AHREFS, CHATGPT_USER, FIREFOX, GOOGLEBOT, GPTBOT};

const ROBOTS: &str = "\
User-agent: *
Disallow: /private/
Content-Usage: /novels/ train-ai=n

User-agent: AhrefsBot
Crawl-delay: 30
Disallow: /secret/

User-agent: SemrushBot
Request-rate: 1/30s
Disallow: /secret/

User-agent: ChatGPT-User
Disallow: /members/
";

const SEMRUSH: &str = "Mozilla/5.0 (compatible; SemrushBot/7~bl; +http://www.semrush.com/bot.html)";
/// One User-Agent that names two robots of the database.
const TWO_ROBOTS: &str = "Mozilla/5.0 (compatible; AhrefsBot/7.0; +http://ahrefs.com/robot/) SemrushBot/7~bl";
/// Googlebot's own address (Google's complete ranges), and one outside them.
const GOOGLE_IP: &str = "66.249.66.1";
const NOT_GOOGLE_IP: &str = "203.0.113.66";
/// OpenAI's GPTBot range.
const OPENAI_IP: &str = "132.196.86.5";

fn config(origin: &Origin) -> String {
    format!(
        r#"
listen: ["127.0.0.1:{{port}}"]
trusted_proxies: ["127.0.0.1/32"]
sites:
  - name: shop
    hosts: ["127.0.0.1", "localhost"]
    default: true
    upstream: "{}"
    robots: "{{dir}}/robots.txt"
    traps: {{ paths: ["/trap/"], ban: 2, arm_after: 0 }}
log:
  violations: "{{dir}}/violations.jsonl"
  aggregate_window: 0
verify:
  dns: {{ nameservers: ["127.0.0.1:9"], timeout_ms: 300 }}
"#,
        origin.addr
    )
}

/// The requests sent, and what each got.
struct Script<'g> {
    gate: &'g Gate,
    /// The access log the origin would have written had robotgate not been there.
    log: String,
    /// (client, target, live status), in order.
    sent: Vec<(String, String, u16)>,
}

impl Script<'_> {
    fn send(&mut self, client: &str, target: &str, ua: &str) -> u16 {
        self.fetch(client, target, ua).status
    }

    fn fetch(&mut self, client: &str, target: &str, ua: &str) -> common::Resp {
        let resp = get(&self.gate.url(target), &[("x-forwarded-for", client), ("user-agent", ua)]);
        let status = resp.status;
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs();
        self.log += &format!("{client} - - [{}] \"GET {target} HTTP/1.1\" 200 512 \"-\" \"{ua}\"\n", clf_time(now));
        self.sent.push((client.to_owned(), target.to_owned(), status));
        resp
    }
}

/// Unix seconds as the combined log format writes them, in UTC.
fn clf_time(unix: u64) -> String {
    const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    let (days, secs) = ((unix / 86_400) as i64, unix % 86_400);
    let (year, month, day) = robotgate::time::civil_from_days(days);
    let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    format!("{day:02}/{}/{year}:{h:02}:{m:02}:{s:02} +0000", MONTHS[(month - 1) as usize])
}

/// A record as both paths write it: (client, path, bot, directive, action, status).
type Rec = (String, String, String, String, String, u64);

fn records(text: &str) -> Vec<Rec> {
    text.lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"));
            let s = |k: &str| v[k].as_str().unwrap_or_default().to_owned();
            (s("client"), s("path"), s("bot"), s("directive"), s("action"), v["status"].as_u64().unwrap_or(0))
        })
        .collect()
}

/// The status each request got by `recs`: its record's, or the origin's 200.
fn statuses(sent: &[(String, String, u16)], recs: &[Rec]) -> Vec<u64> {
    let mut next = recs.iter().peekable();
    sent.iter()
        .map(|(client, target, _)| match next.peek() {
            Some(r) if &r.0 == client && &r.1 == target => next.next().map_or(200, |r| r.5),
            _ => 200,
        })
        .collect()
}

#[test]
fn serve_and_replay_give_one_truth_for_every_outcome() {
    let origin = Origin::start();
    let mut gate = Gate::start(&config(&origin), &[("robots.txt", ROBOTS.as_bytes())]);
    let mut s = Script { gate: &gate, log: String::new(), sent: Vec::new() };
    // People are not bound by robots.txt.
    assert_eq!(s.send("192.0.2.10", "/private/a", FIREFOX), 200);
    // A verified Googlebot reads robots.txt and crawls; its name from elsewhere is spoofed.
    assert_eq!(s.send(GOOGLE_IP, "/robots.txt", GOOGLEBOT), 200);
    assert_eq!(s.send(GOOGLE_IP, "/shoes", GOOGLEBOT), 200);
    assert_eq!(s.send(NOT_GOOGLE_IP, "/shoes", GOOGLEBOT), 403);
    // GPTBot from OpenAI: a disallowed path, and a path whose usage refuses training.
    assert_eq!(s.send(OPENAI_IP, "/private/x", GPTBOT), 403);
    assert_eq!(s.send(OPENAI_IP, "/novels/one", GPTBOT), 403);
    // Crawl-delay and Request-rate, then a disallowed path.
    assert_eq!(s.send("198.51.100.7", "/a", AHREFS), 200);
    assert_eq!(s.send("198.51.100.7", "/b", AHREFS), 429);
    assert_eq!(s.send("198.51.100.7", "/secret/x", AHREFS), 403);
    assert_eq!(s.send("198.51.100.8", "/a", SEMRUSH), 200);
    assert_eq!(s.send("198.51.100.8", "/b", SEMRUSH), 429);
    // Two robots in one User-Agent, held to both groups.
    assert_eq!(s.send("198.51.100.9", "/secret/y", TWO_ROBOTS), 403);
    // An ai-user fetcher from its operator's range: recorded, let through.
    assert_eq!(s.send("104.210.139.194", "/members/x", CHATGPT_USER), 200);
    // A trap: the hit bans, the ban holds, then ends (ban: 2 s).
    assert_eq!(s.send("198.51.100.20", "/trap/x", FIREFOX), 403);
    assert_eq!(s.send("198.51.100.20", "/page", FIREFOX), 403);
    std::thread::sleep(Duration::from_millis(3500));
    assert_eq!(s.send("198.51.100.20", "/page", FIREFOX), 200);
    // A verified crawler on an armed trap: the site's action, never a ban.
    assert_eq!(s.send(GOOGLE_IP, "/trap/y", GOOGLEBOT), 403);
    assert_eq!(s.send(GOOGLE_IP, "/shoes2", GOOGLEBOT), 200);
    // A crawler fetches robots.txt; the file then disallows what it asks for.
    assert_eq!(s.send("198.51.100.30", "/robots.txt", AHREFS), 200);
    std::thread::sleep(Duration::from_millis(1200)); // the change lands in a later second than the fetch
    let changed = ROBOTS.replace(
        "Disallow: /secret/\n\nUser-agent: SemrushBot",
        "Disallow: /secret/\nDisallow: /newly/\n\nUser-agent: SemrushBot",
    );
    let tmp = s.gate.path(".robots.tmp");
    std::fs::write(&tmp, changed).unwrap();
    std::fs::rename(&tmp, s.gate.path("robots.txt")).unwrap();
    // A person reads robots.txt until the change is served (every probe is
    // a request of the log too; a person's judges nothing). Replay judges
    // every line by today's robots.txt: a robot's request while the old one
    // was in force would be judged differently, by design (`--compare`).
    let served = |s: &mut Script| s.fetch("192.0.2.10", "/robots.txt", FIREFOX).body.contains("Disallow: /newly/");
    assert!(within(Duration::from_secs(5), || served(&mut s)).is_some(), "the change never came into force");
    assert_eq!(s.send("198.51.100.31", "/newly/p", AHREFS), 403, "a crawler with no fetch on record");
    assert_eq!(s.send("198.51.100.30", "/newly/x", AHREFS), 200, "the robots.txt it fetched allows it");
    let (log, sent) = (std::mem::take(&mut s.log), std::mem::take(&mut s.sent));

    let refused = sent.iter().filter(|r| r.2 != 200).count();
    let live_text = wait_lines(&gate.path("violations.jsonl"), refused + 2).join("\n");
    gate.stop();
    let live = records(&live_text);
    std::fs::write(gate.path("access.log"), &log).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_robotgate"))
        .args(["replay", "--threads", "1", "--emit", "violations", "--config"])
        .arg(gate.path("robotgate.yaml"))
        .arg(gate.path("access.log"))
        .output()
        .unwrap();
    assert!(out.status.success(), "replay failed: {}", String::from_utf8_lossy(&out.stderr));
    let replayed = records(&String::from_utf8(out.stdout).unwrap());

    // Every directive a record can have was reached.
    let directives: BTreeSet<&str> = live.iter().map(|r| r.3.as_str()).collect();
    for want in [
        "disallow",
        "crawl-delay",
        "request-rate",
        "spoofed-identity",
        "content-usage",
        "trap",
        "banned",
        "stale-robots",
    ] {
        assert!(directives.contains(want), "the script never reached `{want}`: {live:#?}");
    }
    assert!(live.iter().any(|r| r.4 == "log" && r.2 == "ChatGPT-User"), "the ai-user fetcher: {live:#?}");
    if let Some(i) = (0..live.len().max(replayed.len())).find(|&i| live.get(i) != replayed.get(i)) {
        panic!(
            "one set of requests, one set of records: record {i} differs\nlive:     {:?}\nreplayed: {:?}\nlog:\n{log}",
            live.get(i),
            replayed.get(i)
        );
    }
    let live_status: Vec<u64> = sent.iter().map(|r| u64::from(r.2)).collect();
    assert_eq!(statuses(&sent, &replayed), live_status, "one status per request\nlog:\n{log}");
    assert_eq!(statuses(&sent, &live), live_status, "the live records name every refusal");
}
