//! Issue #15 through the real proxy: who is really Googlebot.
//!
//! Client addresses are played through a trusted proxy's X-Forwarded-For.
//! Reverse DNS goes to a DNS server the test starts on loopback; Web Bot Auth
//! keys come from a directory the test serves on loopback.

mod common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::time::{SystemTime, UNIX_EPOCH};

use common::dns_server::{Answer, Server};
use common::signer::{new_key, sign, Directory};
use common::{get, wait_lines, Gate, GOOGLEBOT};
// (No test here lets robotgate use the system resolver: DNS goes to the
// loopback server only.)

const ROBOTS: &str = "User-agent: *\nDisallow: /private/\n\nUser-agent: Googlebot\nUser-agent: SignedBot\nAllow: /\n";

fn config(origin: &common::Origin, extra: &str) -> String {
    format!(
        r#"
listen: ["127.0.0.1:{{port}}"]
trusted_proxies: ["127.0.0.1/32"]
sites:
  - name: s
    hosts: ["127.0.0.1", "localhost"]
    default: true
    upstream: "{}"
    robots: "{{dir}}/robots.txt"
log:
  violations: "{{dir}}/violations.jsonl"
  aggregate_window: 0
{extra}
"#,
        origin.addr
    )
}

fn from(gate: &Gate, ip: &str, ua: &str, path: &str, extra: &[(&str, &str)]) -> u16 {
    let mut headers = vec![("X-Forwarded-For", ip), ("User-Agent", ua)];
    headers.extend_from_slice(extra);
    get(&gate.url(path), &headers).status
}

/// Applebot: Apple publishes ranges and host names, and does not say its
/// ranges are complete, so reverse DNS decides outside them.
const APPLEBOT: &str = "Mozilla/5.0 (compatible; Applebot/0.3; +http://www.apple.com/go/applebot)";

#[test]
fn a_claim_is_believed_from_its_ranges_or_its_reverse_dns_and_nowhere_else() {
    let origin = common::Origin::start();
    let dns = Server::answering(&[
        // A liar: its address names a host outside Apple's domain.
        ("50.113.0.203.in-addr.arpa", Answer::Ptr(vec!["crawl", "evil", "example"])),
        // A real Applebot outside the shipped ranges: FCrDNS holds.
        ("60.100.51.198.in-addr.arpa", Answer::Ptr(vec!["crawl-198-51-100-60", "applebot", "apple", "com"])),
        ("crawl-198-51-100-60.applebot.apple.com", Answer::A("198.51.100.60".parse().unwrap())),
        // A PTR inside Apple's domain whose forward lookup disagrees.
        ("70.100.51.198.in-addr.arpa", Answer::Ptr(vec!["crawl-1-2-3-4", "applebot", "apple", "com"])),
        ("crawl-1-2-3-4.applebot.apple.com", Answer::A("1.2.3.4".parse().unwrap())),
        // A Googlebot host name: Google's ranges are complete, so it is never asked.
        ("80.100.51.198.in-addr.arpa", Answer::Ptr(vec!["crawl-198-51-100-80", "googlebot", "com"])),
        ("crawl-198-51-100-80.googlebot.com", Answer::A("198.51.100.80".parse().unwrap())),
    ]);
    // Refresh off: the operator keeps the lists current, so Google's
    // complete lists decide alone at any age (issue #52 is below).
    let extra =
        format!("verify:\n  refresh: \"off\"\n  dns: {{ nameservers: [\"{}\"], timeout_ms: 2000 }}\n", dns.addr);
    let gate = Gate::start(&config(&origin, &extra), &[("robots.txt", ROBOTS.as_bytes())]);

    // In Google's published ranges: Googlebot's own group (Allow: /), no DNS asked.
    assert_eq!(from(&gate, "66.249.66.1", GOOGLEBOT, "/private/x", &[]), 200);
    // Outside them, whatever its reverse DNS would say: spoofed, and DNS is
    // not asked (issue #39: Google says its lists are complete).
    assert_eq!(from(&gate, "198.51.100.80", GOOGLEBOT, "/page", &[]), 403, "outside complete ranges");
    assert_eq!(dns.count(), 0, "complete ranges need no DNS");
    // Applebot (its group is Googlebot's) outside Apple's ranges: reverse DNS decides.
    assert_eq!(from(&gate, "198.51.100.60", APPLEBOT, "/private/x", &[]), 200, "FCrDNS holds");
    assert_eq!(from(&gate, "203.0.113.50", APPLEBOT, "/page", &[]), 403, "PTR outside applebot.apple.com");
    assert_eq!(from(&gate, "198.51.100.70", APPLEBOT, "/page", &[]), 403, "forward lookup disagrees");
    // Verdicts are cached: asking again sends nothing.
    let asked = dns.count();
    assert!(asked > 0);
    assert_eq!(from(&gate, "203.0.113.50", APPLEBOT, "/page", &[]), 403);
    assert_eq!(from(&gate, "198.51.100.60", APPLEBOT, "/private/y", &[]), 200);
    assert_eq!(dns.count(), asked, "cached");
    // Browsers never cause a lookup.
    assert_eq!(from(&gate, "203.0.113.99", common::FIREFOX, "/private/x", &[]), 200);
    assert_eq!(dns.count(), asked);

    let recs: Vec<serde_json::Value> =
        wait_lines(&gate.path("violations.jsonl"), 4).iter().map(|l| serde_json::from_str(l).unwrap()).collect();
    let spoofed: Vec<_> = recs.iter().filter(|r| r["directive"] == "spoofed-identity").collect();
    assert_eq!(spoofed.len(), 4, "{recs:?}");
    assert!(spoofed.iter().all(|r| r["identity"] == "spoofed"));
    assert_eq!(spoofed.iter().filter(|r| r["bot"] == "Googlebot").count(), 1);
}

/// The DNS records of a real Googlebot at 198.51.100.80, outside the
/// embedded lists, and of a liar at 203.0.113.50.
fn google_dns() -> Server {
    Server::answering(&[
        ("80.100.51.198.in-addr.arpa", Answer::Ptr(vec!["crawl-198-51-100-80", "googlebot", "com"])),
        ("crawl-198-51-100-80.googlebot.com", Answer::A("198.51.100.80".parse().unwrap())),
        ("50.113.0.203.in-addr.arpa", Answer::Ptr(vec!["crawl", "evil", "example"])),
    ])
}

fn status_feed(gate: &Gate, name: &str) -> serde_json::Value {
    let body = get(&format!("http://127.0.0.1:{}/status.json", gate.metrics_port), &[]).body;
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    v["feeds"].as_array().unwrap().iter().find(|f| f["name"] == name).cloned().unwrap_or_default()
}

const METRICS: &str = "metrics:\n  listen: \"127.0.0.1:{metrics}\"\n  status_page: true\n";

#[test]
fn issue_52_a_googlebot_outside_a_stale_list_is_verified_by_reverse_dns_and_the_age_is_shown() {
    let origin = common::Origin::start();
    let dns = google_dns();
    // The default refresh (every 24 h; here every URL a closed loopback
    // port, as an unreachable operator): the embedded lists, dated August,
    // stay, and they are older than the refresh interval.
    let extra = format!(
        "verify:\n{}  dns: {{ nameservers: [\"{}\"], timeout_ms: 2000 }}\n{METRICS}",
        common::REFRESH_TO_NOWHERE,
        dns.addr
    );
    let gate = Gate::start(&config(&origin, &extra), &[("robots.txt", ROBOTS.as_bytes())]);

    // A real Googlebot from an address Google added after the snapshot:
    // forward-confirmed reverse DNS proves it, so Googlebot's group (Allow: /).
    assert_eq!(from(&gate, "198.51.100.80", GOOGLEBOT, "/private/x", &[]), 200, "{}", gate.stderr());
    assert!(dns.count() > 0, "reverse DNS was asked");
    // A liar outside the lists: its PTR names no Google host, spoofed.
    assert_eq!(from(&gate, "203.0.113.50", GOOGLEBOT, "/page", &[]), 403);
    // In the lists: verified with no lookup.
    let asked = dns.count();
    assert_eq!(from(&gate, "66.249.66.1", GOOGLEBOT, "/private/x", &[]), 200);
    assert_eq!(dns.count(), asked);
    let recs = wait_lines(&gate.path("violations.jsonl"), 1);
    let recs: Vec<serde_json::Value> = recs.iter().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(recs.len(), 1, "{recs:?}");
    assert_eq!((recs[0]["identity"].as_str(), recs[0]["client"].as_str()), (Some("spoofed"), Some("203.0.113.50")));

    // The age, on /status and in the metrics: the list is dated 2026-08-21.
    let feed = status_feed(&gate, "google-common-crawlers");
    assert!(feed["age_seconds"].as_u64().unwrap() > 30 * 86_400, "{feed}");
    assert_eq!(feed["current"], false, "{feed}");
    assert_eq!(feed["date"], "2026-08-21T14:45:42.000000");
    let html = get(&format!("http://127.0.0.1:{}/status", gate.metrics_port), &[]).body;
    assert!(html.contains("google-common-crawlers") && html.contains("older than the refresh interval"));
    assert!(common::metric(&gate, "robotgate_feed_age_seconds{feed=\"google-common-crawlers\"}") > 30.0 * 86_400.0);

    // The refresh fails here (no route to the operators): said once in the
    // log, with the reason, and not per request.
    let said = |gate: &Gate| gate.stderr().matches("feed refresh failed").count();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(40);
    while said(&gate) == 0 {
        assert!(std::time::Instant::now() < deadline, "no refresh failure logged: {}", gate.stderr());
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    for _ in 0..20 {
        assert_eq!(from(&gate, "198.51.100.80", GOOGLEBOT, "/private/x", &[]), 200);
    }
    std::thread::sleep(std::time::Duration::from_secs(1));
    assert_eq!(said(&gate), 1, "{}", gate.stderr());
    let line = gate.stderr().lines().find(|l| l.contains("feed refresh failed")).unwrap().to_owned();
    assert!(line.contains("google-common-crawlers:"), "each feed with its reason: {line}");
    assert!(common::metric(&gate, "robotgate_feed_refresh_failures_total") >= 1.0);
    assert!(status_feed(&gate, "google-common-crawlers")["refresh_error"].is_string());
}

#[test]
fn issue_52_a_fake_googlebot_whose_reverse_dns_is_silent_stays_spoofed() {
    let origin = common::Origin::start();
    let silent = Server::start(&[], true, std::time::Duration::ZERO);
    let extra = format!(
        "verify:\n{}  dns: {{ nameservers: [\"{}\"], timeout_ms: 300 }}\n",
        common::REFRESH_TO_NOWHERE,
        silent.addr
    );
    let gate = Gate::start(&config(&origin, &extra), &[("robots.txt", ROBOTS.as_bytes())]);
    // Outside the stale list DNS is asked, cannot tell, and the list's word
    // stands (issue #39): not unverifiable, so not Googlebot's group.
    assert_eq!(from(&gate, "203.0.113.51", GOOGLEBOT, "/page", &[]), 403);
    assert!(silent.count() > 0, "reverse DNS was asked");
    let recs = wait_lines(&gate.path("violations.jsonl"), 1);
    assert!(recs[0].contains("\"spoofed\""), "{recs:?}");
}

#[test]
fn issue_52_the_default_refresh_puts_a_fresh_list_in_force_and_never_an_older_one() {
    let origin = common::Origin::start();
    let silent = Server::start(&[], true, std::time::Duration::ZERO);
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs();
    let date = |secs: u64| {
        let (days, rest) = (secs / 86_400, secs % 86_400);
        let (y, m, d) = robotgate::time::civil_from_days(days as i64);
        format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.000000", rest / 3600, rest % 3600 / 60, rest % 60)
    };
    let fresh = format!(
        r#"{{"creationTime": "{}", "prefixes": [{{"ipv4Prefix": "66.249.64.0/19"}}, {{"ipv4Prefix": "198.51.100.0/24"}}]}}"#,
        date(now - 3600)
    );
    let old = br#"{"creationTime": "2020-01-01T00:00:00.000000", "prefixes": [{"ipv4Prefix": "203.0.113.0/24"}]}"#;
    let base = serve_routes(vec![("/common.json", 200, fresh.into_bytes()), ("/special.json", 200, old.to_vec())]);
    // No `verify.feeds`: refreshed feeds go to robotgate's own directory
    // beside its state files (here the violation log's directory).
    let nowhere = common::refresh_to_nowhere_but(&["google-common-crawlers", "google-special-crawlers", "refresh"]);
    let others = nowhere.split_once("  feed_urls:\n").unwrap().1;
    let extra = format!(
        "verify:\n  dns: {{ nameservers: [\"{}\"], timeout_ms: 300 }}\n  feed_urls:\n    google-common-crawlers: \"{base}/common.json\"\n    google-special-crawlers: \"{base}/special.json\"\n{others}{METRICS}",
        silent.addr
    );
    let gate = Gate::start(&config(&origin, &extra), &[("robots.txt", ROBOTS.as_bytes())]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while from(&gate, "198.51.100.9", GOOGLEBOT, "/private/x", &[]) != 200 {
        assert!(std::time::Instant::now() < deadline, "the refreshed list was not put in force: {}", gate.stderr());
        std::thread::sleep(std::time::Duration::from_millis(300));
    }
    assert!(gate.path("robotgate-feeds/google-common-crawlers.json").is_file());
    let feed = status_feed(&gate, "google-common-crawlers");
    assert!(feed["age_seconds"].as_u64().unwrap() < 600, "counted from the refresh: {feed}");
    assert_eq!(feed["current"], true, "{feed}");
    assert!(common::metric(&gate, "robotgate_feed_age_seconds{feed=\"google-common-crawlers\"}") < 600.0);
    // A list dated before the embedded one is refused: the floor.
    assert!(!gate.path("robotgate-feeds/google-special-crawlers.json").exists());
    let special = status_feed(&gate, "google-special-crawlers");
    assert!(special["refresh_error"].as_str().unwrap_or("").contains("older than the embedded"), "{special}");
    assert_eq!(special["date"], "2026-08-21T14:46:19.000000", "the embedded list stays");
}

#[test]
fn a_web_bot_auth_signature_proves_the_robot_and_one_changed_byte_does_not() {
    let origin = common::Origin::start();
    let key = new_key("identity test key");
    let directory = Directory::serving(&key);
    let agent = directory.url.clone();
    // A robot that publishes ranges (none on loopback) and signs as the
    // loopback agent: unsigned it is a spoofed identity, signed it is itself.
    let bots = "version: 1\nbots:\n  - name: SignedBot\n    operator: Test\n    category: ai-crawler\n    robots_tokens: [SignedBot]\n    ua: [SignedBot]\n    ip_ranges: [google-common-crawlers]\n    signature_agents: [\"127.0.0.1\"]\n    obeys_robots: true\n    samples: [\"SignedBot/1.0\"]\n";
    let extra = "verify:\n  allow_private_directories: true\nbots: \"{dir}/bots.yaml\"\n";
    let gate =
        Gate::start(&config(&origin, extra), &[("robots.txt", ROBOTS.as_bytes()), ("bots.yaml", bots.as_bytes())]);
    let authority = format!("127.0.0.1:{}", gate.port);
    let signed = sign(&key, &agent, &authority);
    let headers: Vec<(&str, &str)> = signed.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();

    assert_eq!(from(&gate, "127.0.0.1", "SignedBot/1.0", "/private/x", &[]), 403, "unsigned: spoofed");
    assert_eq!(from(&gate, "127.0.0.1", "SignedBot/1.0", "/private/x", &headers), 200, "signed: its own group");
    // One byte changed in a covered component (the agent URL) fails.
    let mut tampered = signed.clone();
    tampered[0].1 = tampered[0].1.replace("127.0.0.1", "127.0.0.2");
    let headers: Vec<(&str, &str)> = tampered.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    assert_eq!(from(&gate, "127.0.0.1", "SignedBot/1.0", "/private/x", &headers), 403, "tampered: spoofed");
    // An agent no robot of the database signs as is never fetched: a client
    // cannot make robotgate fetch from hosts of its choosing.
    let stranger_directory = Directory::serving(&key);
    let stranger = stranger_directory.url.replace("127.0.0.1", "localhost");
    let signed = sign(&key, &stranger, &authority);
    let headers: Vec<(&str, &str)> = signed.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    assert_eq!(from(&gate, "127.0.0.1", "SignedBot/1.0", "/private/x", &headers), 403);
    assert_eq!(stranger_directory.hits(), 0, "an unlisted agent's directory was fetched");
    let recs = wait_lines(&gate.path("violations.jsonl"), 3);
    assert!(recs.iter().all(|l| l.contains("\"spoofed-identity\"")), "{recs:?}");
}

#[test]
fn robotgate_verify_prints_the_outcome_and_its_evidence_with_exit_codes() {
    let dns = Server::answering(&[
        ("60.100.51.198.in-addr.arpa", Answer::Ptr(vec!["crawl-198-51-100-60", "applebot", "apple", "com"])),
        ("crawl-198-51-100-60.applebot.apple.com", Answer::A("198.51.100.60".parse().unwrap())),
        ("50.113.0.203.in-addr.arpa", Answer::Ptr(vec!["crawl", "evil", "example"])),
    ]);
    let silent = Server::start(&[], true, std::time::Duration::ZERO);
    let run = |server: &Server, ip: &str, ua: &str| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_robotgate"))
            .args(["verify", "--json", "--dns", &server.addr.to_string(), ip, ua])
            .output()
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        (out.status.code(), v["identity"].as_str().unwrap().to_owned(), v["evidence"].as_str().unwrap().to_owned())
    };
    let (code, identity, evidence) = run(&dns, "66.249.66.1", GOOGLEBOT);
    assert_eq!((code, identity.as_str()), (Some(0), "verified"));
    assert!(evidence.contains("google-common-crawlers"), "{evidence}");
    let (code, _, evidence) = run(&dns, "198.51.100.60", APPLEBOT);
    assert_eq!(code, Some(0), "FCrDNS: {evidence}");
    assert!(evidence.contains("crawl-198-51-100-60.applebot.apple.com"), "{evidence}");
    let (code, identity, evidence) = run(&dns, "203.0.113.50", APPLEBOT);
    assert_eq!((code, identity.as_str()), (Some(1), "spoofed"), "{evidence}");
    assert!(evidence.contains("crawl.evil.example"), "{evidence}");
    let (code, identity, _) = run(&dns, "198.51.100.1", common::GPTBOT);
    assert_eq!((code, identity.as_str()), (Some(1), "spoofed"), "outside GPTBot's feed, no DNS to try");
    // Issue #39: outside Google's complete lists, spoofed, with the reason, even with a silent resolver.
    let (code, identity, evidence) = run(&silent, "203.0.113.51", GOOGLEBOT);
    assert_eq!((code, identity.as_str()), (Some(1), "spoofed"), "{evidence}");
    assert!(evidence.contains("says are complete"), "{evidence}");
    let (code, identity, evidence) = run(&silent, "203.0.113.51", APPLEBOT);
    assert_eq!((code, identity.as_str()), (Some(3), "unverifiable"), "{evidence}");
}

/// A loopback HTTP server answering each path from `routes` (status, body).
fn serve_routes(routes: Vec<(&'static str, u16, Vec<u8>)>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut buf = [0u8; 4096];
            let n = stream.read(&mut buf).unwrap_or(0);
            let line = String::from_utf8_lossy(&buf[..n]).into_owned();
            let path = line.split_whitespace().nth(1).unwrap_or("/").to_owned();
            let (status, body) =
                routes.iter().find(|(p, _, _)| *p == path).map_or((404, Vec::new()), |(_, s, b)| (*s, b.clone()));
            let head = format!("HTTP/1.1 {status} X\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len());
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(&body);
        }
    });
    url
}

#[test]
fn feeds_update_replaces_a_feed_only_with_a_good_one() {
    let good = br#"{"creationTime": "2026-11-23T10:00:00", "prefixes": [{"ipv4Prefix": "192.0.2.0/24"}]}"#.to_vec();
    let base = serve_routes(vec![
        ("/good.json", 200, good),
        ("/empty.json", 200, br#"{"creationTime": "2026-11-23T10:00:00", "prefixes": []}"#.to_vec()),
        // Google's retired URLs answer 200 with an object that has no prefixes.
        ("/retired.json", 200, br#"{"creationTime": "2026-11-23T10:00:00"}"#.to_vec()),
        ("/truncated.json", 200, br#"{"creationTime": "2026-11-23T10:00:00", "prefixes": [{"ipv4Pre"#.to_vec()),
        ("/huge.json", 200, vec![b' '; 5 << 20]),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let old = br#"{"prefixes": [{"ipv4Prefix": "198.51.100.0/24"}]}"#;
    for name in ["b", "c", "d", "e"] {
        std::fs::write(dir.path().join(format!("{name}.json")), old).unwrap();
    }
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_robotgate"));
    cmd.args(["feeds", "update", "--dir", dir.path().to_str().unwrap()]);
    for (name, path) in [
        ("a", "/good.json"),
        ("b", "/empty.json"),
        ("c", "/retired.json"),
        ("d", "/truncated.json"),
        ("e", "/huge.json"),
    ] {
        cmd.args(["--url", &format!("{name}={base}{path}")]);
    }
    let out = cmd.output().unwrap();
    assert_eq!(out.status.code(), Some(1), "some feeds failed");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stdout.contains("a: updated, 1 prefixes"), "{stdout}");
    assert!(std::fs::read_to_string(dir.path().join("a.json")).unwrap().contains("192.0.2.0/24"));
    for name in ["b", "c", "d", "e"] {
        assert_eq!(std::fs::read(dir.path().join(format!("{name}.json"))).unwrap(), old, "{name} kept");
        assert!(stderr.contains(&format!("{name}: kept the old file")), "{stderr}");
    }
}

#[test]
fn verify_refresh_puts_a_fresh_feed_in_force_and_a_broken_one_changes_nothing() {
    let origin = common::Origin::start();
    // The fresh GPTBot feed places GPTBot on loopback; the broken one is empty.
    let fresh = br#"{"creationTime": "2026-11-23T12:00:00", "prefixes": [{"ipv4Prefix": "127.0.0.0/8"}]}"#.to_vec();
    let base =
        serve_routes(vec![("/gptbot.json", 200, fresh), ("/searchbot.json", 200, br#"{"prefixes": []}"#.to_vec())]);
    let old_searchbot = br#"{"prefixes": [{"ipv4Prefix": "198.51.100.0/24"}]}"#;
    let extra = format!(
        "verify:\n  feeds: \"{{dir}}/fresh\"\n  refresh: 1s\n  feed_urls:\n    openai-gptbot: \"{base}/gptbot.json\"\n    openai-searchbot: \"{base}/searchbot.json\"\n"
    );
    // Only these two are refreshed: the others fail on a closed loopback
    // port, to no harm (nothing is written for them).
    let nowhere = common::refresh_to_nowhere_but(&["openai-gptbot", "openai-searchbot"]);
    let others = nowhere.split_once("  feed_urls:\n").unwrap().1;
    let extra = extra.replace("  feed_urls:\n", &format!("  feed_urls:\n{others}"));
    let gate = Gate::start(
        &config(&origin, &extra),
        &[("robots.txt", ROBOTS.as_bytes()), ("fresh/openai-searchbot.json", old_searchbot)],
    );
    // Before the refresh GPTBot from loopback is outside its published ranges.
    // (127.0.0.2: 127.0.0.1 is the trusted proxy, never a client, issue #32.)
    assert_eq!(from(&gate, "127.0.0.2", common::GPTBOT, "/page", &[]), 403);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    while from(&gate, "127.0.0.2", common::GPTBOT, "/page", &[]) != 200 {
        assert!(std::time::Instant::now() < deadline, "the refreshed feed was not put in force: {}", gate.stderr());
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    assert_eq!(std::fs::read(gate.path("fresh/openai-searchbot.json")).unwrap(), old_searchbot, "empty feed refused");
}
