//! Issue #27, part 2, against the real binary: RFC 9309 2.4 lets a crawler
//! use the robots.txt it fetched for up to 24 hours. A request only the
//! newer robots.txt disallows, from a crawler that fetched the older one
//! less than the grace ago, is recorded as `stale-robots`, not as a
//! violation; a crawler with no fetch on record gets no grace. What each
//! crawler read, and the versions, outlive a restart, and travel through a
//! shared Redis.
//!
//! The test plays a trusted load balancer on 127.0.0.1 (X-Forwarded-For):
//! 66.249.66.1 is in Google's published Googlebot ranges.

mod common;

use std::time::Duration;

use common::redis_server::RedisServer;
use common::{get, metric, within, Gate, Origin, GOOGLEBOT};

const OLD: &str = "User-agent: *\nDisallow: /private/\n";
const NEW: &str = "User-agent: *\nDisallow: /private/\nDisallow: /newly/\n";
const GOOGLE: &str = "66.249.66.1";
const ODD: &str = "OddCrawler/1.0 (+https://crawler.example/bot)";

fn config(origin: &Origin, site: &str, more: &str) -> String {
    format!(
        r#"
listen: ["127.0.0.1:{{port}}"]
threads: 2
grace_period: 1
trusted_proxies: ["127.0.0.1/32"]
metrics: {{ listen: "127.0.0.1:{{metrics}}" }}
sites:
  - name: s
    hosts: ["127.0.0.1", "localhost"]
    default: true
    upstream: "{}"
    robots: "{{dir}}/robots.txt"
{site}
{more}
log:
  violations: "{{dir}}/violations.jsonl"
  aggregate_window: 0
  level: warn
"#,
        origin.addr
    )
}

fn as_client(gate: &Gate, path: &str, ip: &str, ua: &str) -> u16 {
    get(&gate.url(path), &[("X-Forwarded-For", ip), ("User-Agent", ua)]).status
}

/// Put the new robots.txt in force: a crawler with no fetch on record is
/// refused `/newly/` within 2 s (and that is its violation record).
fn change(gate: &Gate) {
    let tmp = gate.path(".robots.txt.tmp");
    std::fs::write(&tmp, NEW).unwrap();
    std::fs::rename(&tmp, gate.path("robots.txt")).unwrap();
    let never_fetched = || as_client(gate, "/newly/x.html", "198.51.100.7", ODD) == 403;
    assert!(
        within(Duration::from_secs(5), never_fetched).is_some(),
        "the change never came into force:\n{}",
        gate.stderr()
    );
}

fn of<'a>(recs: &'a [serde_json::Value], directive: &str) -> Vec<&'a serde_json::Value> {
    recs.iter().filter(|r| r["directive"] == directive).collect()
}

#[test]
fn a_crawler_keeps_to_the_robots_txt_it_fetched_and_no_other_gets_grace() {
    let origin = Origin::start();
    let gate = Gate::start(&config(&origin, "", ""), &[("robots.txt", OLD.as_bytes())]);
    assert_eq!(as_client(&gate, "/robots.txt", GOOGLE, GOOGLEBOT), 200);
    assert_eq!(as_client(&gate, "/newly/x.html", GOOGLE, GOOGLEBOT), 200);
    change(&gate);
    // The verified Googlebot fetched the old version moments ago: its copy allows it.
    assert_eq!(as_client(&gate, "/newly/x.html", GOOGLE, GOOGLEBOT), 200);
    // Its copy forbids /private/ too: that is a violation as ever.
    assert_eq!(as_client(&gate, "/private/x", GOOGLE, GOOGLEBOT), 403);
    let recs = gate.records(3);
    let stale = of(&recs, "stale-robots");
    assert_eq!(stale.len(), 1, "{recs:?}");
    let s = stale[0];
    assert_eq!(
        (s["bot"].as_str(), s["action"].as_str(), s["status"].as_u64()),
        (Some("Googlebot"), Some("pass"), Some(200))
    );
    assert_eq!((s["pattern"].as_str(), s["robots_seen"].as_bool()), (Some("/newly/"), Some(true)));
    let (now_hash, then_hash) = (s["robots_hash"].as_str().unwrap(), s["fetched_hash"].as_str().unwrap());
    assert!(now_hash.len() == 12 && then_hash.len() == 12 && now_hash != then_hash, "{s}");
    assert!(s["fetched_at"].as_str().is_some_and(|t| t.ends_with('Z')), "{s}");
    // The crawler that never fetched robots.txt broke the rule; Googlebot only broke /private/.
    let disallow = of(&recs, "disallow");
    assert_eq!(disallow.len(), 2, "{recs:?}");
    assert!(disallow.iter().any(|r| r["user_agent"] == ODD && r["pattern"] == "/newly/"));
    assert!(disallow.iter().any(|r| r["bot"] == "Googlebot" && r["pattern"] == "/private/"));
    // Counted apart from violations.
    let stale_count = metric(&gate, "robotgate_stale_robots_total");
    assert_eq!(stale_count, 1.0);
    assert_eq!(metric(&gate, "robotgate_violations_total"), 2.0);
}

#[test]
fn enforce_refuses_but_records_stale_robots_and_the_grace_ends() {
    let origin = Origin::start();
    let site = "    policy:\n      robots_change: { grace: 3s, action: enforce }";
    let gate = Gate::start(&config(&origin, site, ""), &[("robots.txt", OLD.as_bytes())]);
    assert_eq!(as_client(&gate, "/robots.txt", GOOGLE, GOOGLEBOT), 200);
    change(&gate);
    assert_eq!(as_client(&gate, "/newly/x.html", GOOGLE, GOOGLEBOT), 403, "enforce applies the current rule");
    let recs = gate.records(2);
    let stale = of(&recs, "stale-robots");
    assert_eq!((stale.len(), stale[0]["action"].as_str()), (1, Some("block")), "{recs:?}");
    // Past the grace: a violation.
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(as_client(&gate, "/newly/x.html", GOOGLE, GOOGLEBOT), 403);
    let recs = gate.records(3);
    let last = &recs[2];
    assert_eq!((last["directive"].as_str(), last["bot"].as_str()), (Some("disallow"), Some("Googlebot")), "{recs:?}");
}

#[test]
fn a_bad_robots_change_setting_is_refused_with_its_field() {
    let origin = Origin::start();
    for (site, word) in [
        ("    policy:\n      robots_change: { grace: 25h }", "at most 24h"),
        ("    policy:\n      robots_change: { action: ignore }", "`ignore` is not `pass` or `enforce`"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("robots.txt"), OLD).unwrap();
        let text = config(&origin, site, "")
            .replace("{dir}", dir.path().to_str().unwrap())
            .replace("{port}", "1")
            .replace("{metrics}", "2");
        std::fs::write(dir.path().join("robotgate.yaml"), text).unwrap();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_robotgate"))
            .args(["config", "check", "--config", dir.path().join("robotgate.yaml").to_str().unwrap()])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && err.contains("robots_change") && err.contains(word), "{err}");
    }
}

#[test]
fn reads_and_versions_survive_a_restart_and_a_day_old_read_gets_no_grace() {
    let origin = Origin::start();
    let mut gate = Gate::start(&config(&origin, "", ""), &[("robots.txt", OLD.as_bytes())]);
    assert_eq!(as_client(&gate, "/robots.txt", GOOGLE, GOOGLEBOT), 200);
    change(&gate);
    gate.restart();
    assert_eq!(as_client(&gate, "/newly/x.html", GOOGLE, GOOGLEBOT), 200, "after a restart:\n{}", gate.stderr());
    let recs = gate.records(2);
    assert_eq!(of(&recs, "stale-robots").len(), 1, "{recs:?}");
    // Make the read 25 hours old, as if the restart came a day later.
    gate.stop();
    let reads_path = gate.path("robotgate-robots-reads.json");
    let mut reads: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(&reads_path).unwrap()).unwrap();
    assert!(reads.iter().any(|r| r["bot"] == "Googlebot"), "Googlebot's read is kept: {reads:?}");
    // A verified read is kept twice (issue #39): for the robot, and for the
    // client that made it. Both age.
    for read in reads.iter_mut() {
        let at = read["at_ms"].as_u64().unwrap();
        read["at_ms"] = (at - 25 * 3600 * 1000).into();
    }
    std::fs::write(&reads_path, serde_json::to_string(&reads).unwrap()).unwrap();
    gate.restart();
    assert_eq!(as_client(&gate, "/newly/x.html", GOOGLE, GOOGLEBOT), 403, "a read over 24 hours old");
    let recs = gate.records(3);
    assert_eq!(recs[2]["directive"], "disallow", "{recs:?}");
}

#[test]
fn with_redis_a_read_on_one_instance_gives_grace_on_another_and_after_a_restart() {
    let (origin, redis) = (Origin::start(), RedisServer::start());
    let state = format!("state:\n  redis: \"{}\"\n  prefix: \"rg27:\"\n  timeout_ms: 500", redis.url());
    let cfg = config(&origin, "", &state);
    let files = [("robots.txt", OLD.as_bytes())];
    let (a, mut b) = (Gate::start(&cfg, &files), Gate::start(&cfg, &files));
    for g in [&a, &b] {
        let up = within(Duration::from_secs(10), || metric(g, "robotgate_state_up") == 1.0);
        assert!(up.is_some(), "the store never came up:\n{}", g.stderr());
    }
    assert_eq!(as_client(&a, "/robots.txt", GOOGLE, GOOGLEBOT), 200);
    change(&a);
    change(&b);
    assert_eq!(as_client(&b, "/newly/x.html", GOOGLE, GOOGLEBOT), 200, "the read on A counts on B");
    // B forgets its own file of reads: after a restart, Redis alone has it.
    b.stop();
    std::fs::remove_file(b.path("robotgate-robots-reads.json")).ok();
    b.restart();
    let up = within(Duration::from_secs(10), || metric(&b, "robotgate_state_up") == 1.0);
    assert!(up.is_some(), "{}", b.stderr());
    assert_eq!(as_client(&b, "/newly/x.html", GOOGLE, GOOGLEBOT), 200, "after a restart, from Redis:\n{}", b.stderr());
    let recs = b.records(3);
    assert_eq!(of(&recs, "stale-robots").len(), 2, "{recs:?}");
}
