//! Issue #17 against real processes: two robotgate instances share one real
//! `redis-server` (started here on a free loopback port). A bot's pace, a
//! ban and a robots.txt read made through one instance hold on the other;
//! killing Redis fails no request, and sharing resumes when it is back;
//! every key expires.
//!
//! Client addresses are played through a trusted proxy's X-Forwarded-For.

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::redis_server::{Pass, RedisServer, Relay};
use common::{get, metric, within, Gate, Origin, FIREFOX};

const ROBOTS: &str = "User-agent: *\nCrawl-delay: 2\nDisallow: /private/\n";
const ODD: &str = "OddCrawler/1.0 (+https://crawler.example/bot)";

fn config(origin: &Origin, redis: &RedisServer) -> String {
    config_with_dns(origin, redis, "127.0.0.1:9")
}

fn config_with_dns(origin: &Origin, redis: &RedisServer, dns: &str) -> String {
    format!(
        r#"
listen: ["127.0.0.1:{{port}}"]
threads: 2
grace_period: 1
trusted_proxies: ["127.0.0.1/32"]
sites:
  - name: s
    hosts: ["localhost", "127.0.0.1"]
    default: true
    upstream: "{}"
    robots: "{{dir}}/robots.txt"
    traps:
      paths: ["/trap/"]
      ban: 60
      arm_after: 0
state:
  redis: "{}"
  prefix: "rgtest:"
  timeout_ms: 500
metrics:
  listen: "127.0.0.1:{{metrics}}"
verify:
  feeds: "{{dir}}/feeds"
  dns: {{ nameservers: ["{}"], timeout_ms: 2000 }}
log:
  violations: "{{dir}}/violations.jsonl"
  aggregate_window: 0
  level: warn
"#,
        origin.addr,
        redis.url(),
        dns
    )
}

/// Two instances on one Redis, each connected to it.
fn pair(origin: &Origin, redis: &RedisServer) -> (Gate, Gate) {
    let cfg = config(origin, redis);
    let files = [("robots.txt", ROBOTS.as_bytes())];
    let (a, b) = (Gate::start(&cfg, &files), Gate::start(&cfg, &files));
    for g in [&a, &b] {
        let up = within(Duration::from_secs(10), || metric(g, "robotgate_state_up") == 1.0);
        assert!(up.is_some(), "the store never came up:\n{}", g.stderr());
    }
    (a, b)
}

fn as_client(gate: &Gate, path: &str, ip: &str, ua: &str) -> u16 {
    get(&gate.url(path), &[("X-Forwarded-For", ip), ("User-Agent", ua)]).status
}

#[test]
fn a_bot_that_alternates_between_instances_gets_one_crawl_delay_not_two() {
    let (origin, redis) = (Origin::start(), RedisServer::start());
    let (a, b) = pair(&origin, &redis);
    assert_eq!(as_client(&a, "/page", "203.0.113.10", ODD), 200);
    assert_eq!(as_client(&b, "/page", "203.0.113.10", ODD), 429, "B knows A admitted it");
    assert_eq!(as_client(&a, "/page", "203.0.113.10", ODD), 429);
    // Another client, another clock; a browser is never paced.
    assert_eq!(as_client(&b, "/page", "203.0.113.11", ODD), 200);
    for _ in 0..3 {
        assert_eq!(as_client(&b, "/page", "203.0.113.10", FIREFOX), 200);
    }
    // After the delay, the bot may come back, through either instance, once.
    std::thread::sleep(Duration::from_millis(2100));
    assert_eq!(as_client(&b, "/page", "203.0.113.10", ODD), 200);
    assert_eq!(as_client(&a, "/page", "203.0.113.10", ODD), 429);
    // The store holds the clock, with its expiry.
    let mut conn = redis.connection();
    let keys: Vec<String> = redis::cmd("KEYS").arg("rgtest:rate:s:*:203.0.113.10").query(&mut conn).unwrap();
    assert_eq!(keys.len(), 1, "{keys:?}");
    let ttl: i64 = redis::cmd("PTTL").arg(&keys[0]).query(&mut conn).unwrap();
    assert!(ttl > 0 && ttl <= 2000, "{ttl}");
}

#[test]
fn a_ban_made_on_one_instance_holds_on_the_other_within_a_second() {
    let (origin, redis) = (Origin::start(), RedisServer::start());
    let (a, b) = pair(&origin, &redis);
    assert_eq!(as_client(&b, "/page", "203.0.113.20", FIREFOX), 200);
    assert_eq!(as_client(&a, "/trap/x", "203.0.113.20", FIREFOX), 403);
    let held = within(Duration::from_secs(1), || as_client(&b, "/page", "203.0.113.20", FIREFOX) == 403);
    let held = held.expect("B does not hold A's ban");
    eprintln!("a ban made on A held on B after {held:?} (polled from the client)");
    assert_eq!(as_client(&b, "/page", "203.0.113.21", FIREFOX), 200, "only that client");
    // An instance started later loads the bans in force.
    let c = Gate::start(&config(&origin, &redis), &[("robots.txt", ROBOTS.as_bytes())]);
    assert!(within(Duration::from_secs(10), || metric(&c, "robotgate_state_up") == 1.0).is_some());
    assert_eq!(as_client(&c, "/page", "203.0.113.20", FIREFOX), 403, "a new instance loads the bans");
}

#[test]
fn a_robots_txt_read_through_one_instance_counts_for_a_violation_seen_by_the_other() {
    let (origin, redis) = (Origin::start(), RedisServer::start());
    let (a, b) = pair(&origin, &redis);
    let seen = r#"robotgate_violations_total{action="block",bot="other",category="other-bot",identity="not-claimed",robots_seen="true",site="s"}"#;
    let unseen = seen.replace(r#"robots_seen="true""#, r#"robots_seen="false""#);
    // Before any read: the violation says the bot had not read robots.txt.
    assert_eq!(as_client(&b, "/private/0", "203.0.113.30", ODD), 403);
    assert_eq!(metric(&b, &unseen), 1.0);
    assert_eq!(as_client(&a, "/robots.txt", "203.0.113.30", ODD), 200);
    let mut n = 0;
    let counted = within(Duration::from_secs(2), || {
        n += 1;
        assert_eq!(as_client(&b, &format!("/private/{n}"), "203.0.113.30", ODD), 403);
        metric(&b, seen) >= 1.0
    });
    assert!(counted.is_some(), "B never learnt of the read through A:\n{}", b.stderr());
    let logged = within(Duration::from_secs(10), || {
        let log = std::fs::read_to_string(b.path("violations.jsonl")).unwrap_or_default();
        log.lines().any(|l| l.contains("\"robots_seen\":true"))
    });
    assert!(logged.is_some(), "no record says robots_seen: true");
}

#[test]
fn a_reverse_dns_verdict_reached_by_one_instance_is_reused_by_the_other() {
    use common::dns_server::{Answer, Server};
    // Applebot: reverse DNS decides outside its ranges (Google's ranges are
    // complete since issue #39, so Googlebot never goes to DNS).
    const APPLEBOT: &str = "Mozilla/5.0 (compatible; Applebot/0.3; +http://www.apple.com/go/applebot)";
    let dns = Server::answering(&[
        ("60.100.51.198.in-addr.arpa", Answer::Ptr(vec!["crawl-198-51-100-60", "applebot", "apple", "com"])),
        ("crawl-198-51-100-60.applebot.apple.com", Answer::A("198.51.100.60".parse().unwrap())),
        ("50.113.0.203.in-addr.arpa", Answer::Ptr(vec!["crawl", "evil", "example"])),
    ]);
    let (origin, redis) = (Origin::start(), RedisServer::start());
    let cfg = config_with_dns(&origin, &redis, &dns.addr.to_string());
    let files = [("robots.txt", ROBOTS.as_bytes())];
    let (a, b) = (Gate::start(&cfg, &files), Gate::start(&cfg, &files));
    for g in [&a, &b] {
        assert!(within(Duration::from_secs(10), || metric(g, "robotgate_state_up") == 1.0).is_some());
    }
    // A verifies an Applebot outside the published ranges, and refutes a liar.
    assert_eq!(as_client(&a, "/private/x", "198.51.100.60", APPLEBOT), 403, "the * group binds it here too");
    assert_eq!(as_client(&a, "/page", "203.0.113.50", APPLEBOT), 403, "spoofed");
    let asked = dns.count();
    assert!(asked >= 3, "{asked}");
    // B reaches the same verdicts without asking DNS (the verdicts are
    // written in the background: allow a moment).
    let stored = within(Duration::from_secs(2), || {
        let mut conn = redis.connection();
        let keys: Vec<String> = redis::cmd("KEYS").arg("rgtest:rdns:*").query(&mut conn).unwrap();
        keys.len() == 2
    });
    assert!(stored.is_some(), "the verdicts were not shared");
    assert_eq!(as_client(&b, "/page", "203.0.113.50", APPLEBOT), 403);
    assert_eq!(as_client(&b, "/page", "198.51.100.60", APPLEBOT), 200);
    assert_eq!(dns.count(), asked, "B asked DNS again");
    let logged = within(Duration::from_secs(10), || {
        std::fs::read_to_string(b.path("violations.jsonl"))
            .unwrap_or_default()
            .lines()
            .any(|l| l.contains("\"spoofed-identity\"") && l.contains("\"identity\":\"spoofed\""))
    });
    assert!(logged.is_some(), "B records the spoofed claim as A judged it");
}

#[test]
fn killing_redis_fails_no_request_and_sharing_resumes_when_it_is_back() {
    let (origin, mut redis) = (Origin::start(), RedisServer::start());
    let (a, b) = pair(&origin, &redis);
    let (a, b) = (Arc::new(a), Arc::new(b));
    let (stop, done, bad) =
        (Arc::new(AtomicBool::new(false)), Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let mut load = Vec::new();
    for t in 0..4 {
        let (gate, stop, done, bad) =
            (if t % 2 == 0 { a.clone() } else { b.clone() }, stop.clone(), done.clone(), bad.clone());
        load.push(std::thread::spawn(move || {
            let mut i = 0u32;
            while !stop.load(Ordering::Relaxed) && i < 20_000 {
                i += 1;
                let ip = format!("198.51.{t}.{}", i % 200);
                let (path, ua, ok): (&str, &str, &[u16]) = match i % 3 {
                    0 => ("/page", FIREFOX, &[200]),
                    1 => ("/page", ODD, &[200, 429]),
                    _ => ("/private/x", ODD, &[403]),
                };
                let status = as_client(&gate, path, &ip, ua);
                if !ok.contains(&status) {
                    bad.fetch_add(1, Ordering::Relaxed);
                    eprintln!("{path} as {ua}: {status}");
                }
                done.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    let at = |n: usize| within(Duration::from_secs(30), || done.load(Ordering::Relaxed) >= n).is_some();
    assert!(at(400));
    redis.kill();
    let killed_at = done.load(Ordering::Relaxed);
    assert!(at(killed_at + 800), "requests stalled without Redis");
    for g in [&a, &b] {
        assert!(metric(g, "robotgate_state_errors_total") >= 1.0, "the outage is counted");
        assert_eq!(metric(g, "robotgate_state_up"), 0.0);
    }
    redis.restart();
    for g in [&a, &b] {
        let back = within(Duration::from_secs(10), || metric(g, "robotgate_state_up") == 1.0);
        assert!(back.is_some(), "the store was not used again:\n{}", g.stderr());
    }
    let after = done.load(Ordering::Relaxed);
    assert!(at(after + 200));
    stop.store(true, Ordering::Relaxed);
    for t in load {
        t.join().unwrap();
    }
    assert_eq!(bad.load(Ordering::Relaxed), 0, "requests failed because of state");
    // Sharing resumed: the pace holds across instances again.
    assert_eq!(as_client(&a, "/page", "203.0.113.40", ODD), 200);
    assert_eq!(as_client(&b, "/page", "203.0.113.40", ODD), 429);
    // One warning per outage, not one per request.
    for g in [&a, &b] {
        let warnings = g.stderr().matches("shared state store unreachable").count();
        assert_eq!(warnings, 1, "{}", g.stderr());
    }
}

#[test]
fn every_key_expires_after_a_hundred_thousand_clients() {
    let (origin, redis) = (Origin::start(), RedisServer::start());
    let (a, b) = pair(&origin, &redis);
    let (a, b) = (Arc::new(a), Arc::new(b));
    const CLIENTS: u32 = 100_000;
    let threads: Vec<_> = (0..4u32)
        .map(|t| {
            let gate = if t % 2 == 0 { a.clone() } else { b.clone() };
            std::thread::spawn(move || {
                for i in (t..CLIENTS).step_by(4) {
                    let ip = format!("10.{}.{}.{}", i >> 16, (i >> 8) & 255, i & 255);
                    // A page (a rate key), now and then a robots.txt read.
                    let path = if i % 100 == 0 { "/robots.txt" } else { "/page" };
                    assert_eq!(as_client(&gate, path, &ip, ODD), 200);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let mut conn = redis.connection();
    let keys: Vec<String> = redis::cmd("KEYS").arg("rgtest:*").query(&mut conn).unwrap();
    assert!(!keys.is_empty() && keys.len() as u32 <= CLIENTS + CLIENTS / 100, "{}", keys.len());
    let mut pipe = redis::pipe();
    for k in &keys {
        pipe.cmd("PTTL").arg(k);
    }
    let ttls: Vec<i64> = pipe.query(&mut conn).unwrap();
    let without: Vec<_> = keys.iter().zip(&ttls).filter(|(_, t)| **t < 0).collect();
    assert!(without.iter().all(|(_, t)| **t == -2), "keys without expiry: {:?}", &without[..without.len().min(5)]);
    // The rate keys (2 s) go; what stays is the robots.txt reads (24 h).
    let gone = within(Duration::from_secs(30), || {
        let n: u64 = redis::cmd("DBSIZE").query(&mut conn).unwrap();
        n <= u64::from(CLIENTS / 100)
    });
    assert!(gone.is_some(), "rate keys did not expire");
}

/// Issue #52: the store behind a relay that passes its replies on as `pass`
/// says, with `state.timeout_ms: 200`.
fn behind_relay(origin: &Origin, redis: &RedisServer, relay: &Relay) -> Gate {
    let cfg = config(origin, redis).replace(&redis.url(), &relay.url()).replace("timeout_ms: 500", "timeout_ms: 200");
    Gate::start(&cfg, &[("robots.txt", ROBOTS.as_bytes())])
}

#[test]
fn issue_52_a_trickling_store_holds_no_paced_request_past_its_timeout() {
    let (origin, redis) = (Origin::start(), RedisServer::start());
    let relay = Relay::start(redis.port, Pass::Whole);
    let gate = behind_relay(&origin, &redis, &relay);
    let up = within(Duration::from_secs(10), || metric(&gate, "robotgate_state_up") == 1.0);
    assert!(up.is_some(), "the store never came up:\n{}", gate.stderr());
    // The store now answers one byte every 60 ms: a reply of a few bytes
    // takes longer than the 200 ms a request may wait.
    relay.set(Pass::Trickle);
    for (i, want) in [(0, 200), (0, 429), (1, 200), (2, 200)] {
        let client = format!("203.0.113.{}", 40 + i);
        let started = std::time::Instant::now();
        let status = as_client(&gate, "/page", &client, ODD);
        let took = started.elapsed();
        eprintln!("a paced request with a trickling store: {status} in {took:?}");
        assert!(took < Duration::from_secs(2), "a paced request waited {took:?}");
        // Fail-open: this instance's own rate table answers, and paces.
        assert_eq!(status, want, "{client}");
    }
    assert!(metric(&gate, "robotgate_state_errors_total") >= 1.0);
}

#[test]
fn issue_52_a_store_whose_scan_never_ends_is_unreachable_and_said_once() {
    let (origin, redis) = (Origin::start(), RedisServer::start());
    let relay = Relay::start(redis.port, Pass::EndlessScan);
    let gate = behind_relay(&origin, &redis, &relay);
    let said = |g: &Gate| g.stderr().matches("shared state store unreachable").count();
    let first = within(Duration::from_secs(20), || said(&gate) >= 1);
    assert!(first.is_some(), "the keeper never gave up loading:\n{}", gate.stderr());
    assert!(gate.stderr().contains("loading the live keys took longer than"), "{}", gate.stderr());
    assert_eq!(metric(&gate, "robotgate_state_up"), 0.0);
    // Requests do not wait on it meanwhile.
    let started = std::time::Instant::now();
    assert_eq!(as_client(&gate, "/page", "203.0.113.50", ODD), 200);
    assert_eq!(as_client(&gate, "/page", "203.0.113.50", ODD), 429, "paced by this instance");
    assert!(started.elapsed() < Duration::from_secs(2));
    // The keeper keeps trying (another full load time), and says it once.
    std::thread::sleep(Duration::from_secs(12));
    assert_eq!(said(&gate), 1, "{}", gate.stderr());
}
