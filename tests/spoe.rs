//! Issue #56: robotgate as HAProxy's SPOE agent. The real HAProxy runs the
//! shipped `examples/edge/haproxy.cfg` and `spoe-robotgate.conf`, with only
//! their addresses and ports changed, in front of an origin the test starts;
//! robotgate answers HAProxy's `robotgate-check` messages on its SPOE
//! listener and serves robots.txt on its proxy listener. A real client
//! (curl) talks to HAProxy from several loopback addresses (127.0.0.2 and
//! up): HAProxy's `src`, the client address robotgate judges.
//!
//! One more bind, added by the test, takes the PROXY protocol (a load
//! balancer in front of HAProxy): through it a client at a public address
//! (203.0.113.9) claims to be Googlebot, outside Google's ranges: spoofed.

mod common;

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::dns_server::{self, Answer};
use common::edge::{get_from, shipped, wait_port, EdgeGate, Running};
use common::signer::{new_key, sign, Directory};
use common::*;

const ROBOTS: &str = "User-agent: *\nDisallow: /private/\n\nUser-agent: GPTBot\nDisallow: /\n\n\
                      User-agent: ClaudeBot\nCrawl-delay: 30\nDisallow: /private/\n";

/// robotgate with its SPOE agent on `spoe`, its proxy listener (robots.txt)
/// believing HAProxy on 127.0.0.1. GPTBot's and ChatGPT-User's test feeds
/// put them on loopback (`common::LOOPBACK_FEEDS`).
fn start_gate(origin: &Origin, spoe: u16) -> Gate {
    start_gate_with(origin, spoe, "", "", &[])
}

/// [`start_gate`] with more top-level lines, lines under `verify:`, and files.
fn start_gate_with(origin: &Origin, spoe: u16, more: &str, verify: &str, files: &[(&str, &[u8])]) -> Gate {
    let head = format!(
        "spoe: {{ listen: [\"127.0.0.1:{spoe}\"] }}\ntrusted_proxies: [\"127.0.0.1/32\"]\nclient_header: X-Forwarded-For\n{more}"
    );
    let edge = EdgeGate { head: &head, traps: "      arm_after: 0", rules: "", verify };
    let mut all = vec![("robots.txt", ROBOTS.as_bytes())];
    all.extend_from_slice(files);
    edge.start(origin, &all, spoe, "robotgate's SPOE agent")
}

/// The real HAProxy on `port` (and a PROXY-protocol bind on `proxied`),
/// running the shipped files with the test's addresses.
fn start_haproxy(dir: &Path, port: u16, proxied: u16, gate: &Gate, spoe: u16, origin: &Origin) -> Running {
    let conf = shipped("spoe-robotgate.conf").replace("127.0.0.1:12345", &format!("127.0.0.1:{spoe}"));
    std::fs::write(dir.join("spoe-robotgate.conf"), conf).unwrap();
    let cfg = shipped("haproxy.cfg");
    for default in ["bind 127.0.0.1:80\n", "127.0.0.1:8080", "127.0.0.1:8000", "127.0.0.1:12345", "/etc/haproxy/"] {
        assert!(cfg.contains(default), "haproxy.cfg no longer names {default}");
    }
    let cfg = cfg
        .replace("bind 127.0.0.1:80\n", &format!("bind 127.0.0.1:{port}\n    bind 127.0.0.1:{proxied} accept-proxy\n"))
        .replace("127.0.0.1:8080", &format!("127.0.0.1:{}", gate.port))
        .replace("127.0.0.1:8000", &origin.addr.to_string())
        .replace("127.0.0.1:12345", &format!("127.0.0.1:{spoe}"))
        .replace("/etc/haproxy/", &format!("{}/", dir.display()));
    std::fs::write(dir.join("haproxy.cfg"), cfg).unwrap();
    let log = dir.join("haproxy.log");
    let check = Command::new("haproxy").arg("-c").arg("-f").arg(dir.join("haproxy.cfg")).output().unwrap();
    assert!(check.status.success(), "haproxy -c: {}", String::from_utf8_lossy(&check.stdout));
    let child = Command::new("haproxy")
        .arg("-db")
        .arg("-f")
        .arg(dir.join("haproxy.cfg"))
        .stdout(std::fs::File::create(&log).unwrap())
        .stderr(Stdio::null())
        .spawn()
        .expect("haproxy starts");
    let running = Running(child);
    wait_port(port, "haproxy", &log);
    running
}

/// GET `path` through the PROXY-protocol bind, as the client `client`
/// (a load balancer's header names it): the status line's code.
fn get_as(proxied: u16, client: &str, path: &str, ua: &str) -> u16 {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", proxied)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let req = format!(
        "PROXY TCP4 {client} 127.0.0.1 40000 80\r\nGET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\
         User-Agent: {ua}\r\nConnection: close\r\n\r\n"
    );
    s.write_all(req.as_bytes()).unwrap();
    let mut out = Vec::new();
    let _ = s.take(64 * 1024).read_to_end(&mut out);
    let text = String::from_utf8_lossy(&out);
    text.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or_else(|| panic!("no answer: {text:?}"))
}

fn have_haproxy() -> bool {
    let ok = Command::new("haproxy").arg("-v").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok();
    if !ok {
        eprintln!("\n*** SKIPPED: `haproxy` is not installed (apt-get install -y haproxy); .ci/run installs it ***\n");
    }
    ok
}

#[test]
fn haproxy_asks_robotgate_over_spoe() {
    if !have_haproxy() {
        return;
    }
    let origin = Origin::start();
    let spoe = free_port();
    let mut gate = start_gate(&origin, spoe);
    let dir = tempfile::tempdir().unwrap();
    let (port, proxied) = (free_port(), free_port());
    let _haproxy = start_haproxy(dir.path(), port, proxied, &gate, spoe, &origin);

    // HAProxy opens its agent connections on demand, and a request it could
    // not ask about passes: wait (bounded) for the first refusal.
    let asked = within(Duration::from_secs(15), || {
        get_from(port, "127.0.0.2", "/private/warmup", &[("User-Agent", GPTBOT)]).status == 403
    });
    assert!(
        asked.is_some(),
        "HAProxy never asked robotgate: {}",
        std::fs::read_to_string(dir.path().join("haproxy.log")).unwrap_or_default()
    );

    // A browser gets the page, from the origin, without X-Robots-Tag.
    let served = origin.hits();
    let r = get_from(port, "127.0.0.2", "/page", &[("User-Agent", FIREFOX)]);
    assert_eq!((r.status, r.body.as_str()), (200, "origin /page"), "{}", r.head);
    assert!(r.all("x-robots-tag").is_empty(), "{}", r.head);
    assert_eq!(origin.hits(), served + 1);

    // GPTBot (Disallow: /, believed from loopback): robotgate's 403, its body and headers.
    let r = get_from(port, "127.0.0.2", "/a", &[("User-Agent", GPTBOT)]);
    assert_eq!(r.status, 403, "{}\n{}", r.head, r.body);
    assert_eq!(r.header("cache-control"), Some("no-store"), "{}", r.head);
    assert!(r.body.starts_with("Forbidden"), "not robotgate's body: {:?}", r.body);
    assert_eq!(origin.hits(), served + 1, "the origin saw a refused request");

    // ClaudeBot over its Crawl-delay: 429 with Retry-After and the RateLimit headers.
    let r = get_from(port, "127.0.0.3", "/c1", &[("User-Agent", CLAUDEBOT)]);
    assert_eq!((r.status, r.body.as_str()), (200, "origin /c1"), "{}", r.head);
    let r = get_from(port, "127.0.0.3", "/c2", &[("User-Agent", CLAUDEBOT)]);
    assert_eq!(r.status, 429, "{}\n{}", r.head, r.body);
    let retry: u64 = r.header("retry-after").unwrap_or_else(|| panic!("no Retry-After: {}", r.head)).parse().unwrap();
    assert!((1..=30).contains(&retry), "Retry-After {retry}");
    assert!(r.header("ratelimit-policy").is_some_and(|p| p.contains("crawl-delay")), "{}", r.head);

    // The X-Robots-Tag of a noindex pass and of an indexing rule reach the client.
    let r = get_from(port, "127.0.0.4", "/private/n", &[("User-Agent", CHATGPT_USER)]);
    assert_eq!((r.status, r.body.as_str()), (200, "origin /private/n"), "{}", r.head);
    assert_eq!(r.all("x-robots-tag"), ["noindex, nofollow"], "{}", r.head);
    let r = get_from(port, "127.0.0.2", "/docs/a", &[("User-Agent", FIREFOX)]);
    assert_eq!((r.status, r.all("x-robots-tag")), (200, vec!["noarchive"]), "{}", r.head);

    // robots.txt is robotgate's (the trap is in it), from its proxy listener.
    let r = get_from(port, "127.0.0.2", "/robots.txt", &[("User-Agent", GPTBOT)]);
    assert_eq!(r.status, 200);
    assert!(r.body.contains("Disallow: /trap/"), "not robotgate's robots.txt:\n{}", r.body);

    // A client's own headers change nothing: an X-Forwarded-For naming
    // another client does not reset ClaudeBot's pace, nor do headers that
    // look like robotgate's variables let GPTBot through.
    for (name, value) in [
        ("X-Forwarded-For", "198.51.100.7"),
        ("Forwarded", "for=198.51.100.8"),
        ("X-Real-IP", "198.51.100.9"),
        ("X-Robotgate-Status", "200"),
        ("txn.robotgate.pass", "1"),
    ] {
        let r = get_from(port, "127.0.0.3", "/c3", &[("User-Agent", CLAUDEBOT), (name, value)]);
        assert_eq!(r.status, 429, "{name}: {value} reset the pace:\n{}", r.head);
        let r = get_from(port, "127.0.0.2", "/b", &[("User-Agent", GPTBOT), (name, value)]);
        assert_eq!(r.status, 403, "{name}: {value} let GPTBot through:\n{}", r.head);
    }

    // A spoofed Googlebot, at a public address behind a load balancer
    // (PROXY protocol: HAProxy's `src`), outside Google's ranges: 403.
    assert_eq!(get_as(proxied, "203.0.113.9", "/page", GOOGLEBOT), 403);

    // A trap (armed at once here, `arm_after: 0`): the client that fetches
    // it, a browser's User-Agent or not, is refused, and banned from every page after.
    let crawler = [("User-Agent", FIREFOX)];
    let r = get_from(port, "127.0.0.5", "/page", &crawler);
    assert_eq!(r.status, 200, "{}", r.head);
    let r = get_from(port, "127.0.0.5", "/trap/x", &crawler);
    assert_eq!(r.status, 403, "the trap let its visitor through: {}\n{}", r.head, r.body);
    let r = get_from(port, "127.0.0.5", "/page", &crawler);
    assert_eq!(r.status, 403, "the trapped client was not banned: {}\n{}", r.head, r.body);
    let r = get_from(port, "127.0.0.6", "/page", &crawler);
    assert_eq!(r.status, 200, "another client was banned: {}", r.head);

    // Each refusal has its record, with the client HAProxy saw.
    // The warm-up, /a, /c2, the noindex pass, ten with forged headers,
    // Googlebot, the trap and the ban.
    let find = |what: &str, f: &dyn Fn(&serde_json::Value) -> bool| gate.record(what, f);
    let gpt = find("GPTBot's refusal", &|r| r["path"] == "/a");
    assert_eq!(
        (gpt["bot"].as_str(), gpt["client"].as_str(), gpt["status"].as_u64()),
        (Some("GPTBot"), Some("127.0.0.2"), Some(403))
    );
    let limited = find("the rate limit", &|r| r["path"] == "/c2");
    assert_eq!((limited["client"].as_str(), limited["status"].as_u64()), (Some("127.0.0.3"), Some(429)));
    let trap = find("the trap", &|r| r["directive"] == "trap");
    assert_eq!((trap["client"].as_str(), trap["path"].as_str()), (Some("127.0.0.5"), Some("/trap/x")));
    find("the ban", &|r| r["directive"] == "banned" && r["client"] == "127.0.0.5");
    let spoofed = find("the spoofed Googlebot", &|r| r["bot"] == "Googlebot");
    assert_eq!((spoofed["client"].as_str(), spoofed["identity"].as_str()), (Some("203.0.113.9"), Some("spoofed")));
    assert!(metric(&gate, "robotgate_spoe_notifications_total{result=\"answer\"}") >= 5.0);
    assert!(metric(&gate, "robotgate_spoe_notifications_total{result=\"pass\"}") >= 3.0);

    // robotgate stopped: the documented default, the request passes.
    gate.stop();
    let served = origin.hits();
    let r = get_from(port, "127.0.0.2", "/after", &[("User-Agent", GPTBOT)]);
    assert_eq!((r.status, r.body.as_str()), (200, "origin /after"), "{}", r.head);
    assert_eq!(origin.hits(), served + 1);
    // HAProxy marks it (txn.robotgate.error, captured into its log line).
    let log = dir.path().join("haproxy.log");
    let marked = within(Duration::from_secs(5), || {
        std::fs::read_to_string(&log).unwrap_or_default().lines().any(|l| l.contains("{1}") && l.contains("/after"))
    });
    assert!(
        marked.is_some(),
        "no unanswered mark in HAProxy's log: {}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );
}

/// A robot that signs as the loopback agent and publishes ranges (none on
/// loopback): unsigned it is a spoofed claim, signed it is itself.
const SIGNED_BOT: &str = "version: 1\nbots:\n  - name: SignedBot\n    operator: Test\n    category: ai-crawler\n    robots_tokens: [SignedBot]\n    ua: [SignedBot]\n    ip_ranges: [google-common-crawlers]\n    signature_agents: [\"127.0.0.1\"]\n    obeys_robots: true\n    samples: [\"SignedBot/1.0\"]\n";

const APPLEBOT: &str = "Mozilla/5.0 (compatible; Applebot/0.3; +http://www.apple.com/go/applebot)";

/// What the slow-lookup tests run: robotgate (its key directories and
/// reverse DNS slower than HAProxy's `timeout processing`, and DNS allowed
/// 3 s, which `config check` warns of), and HAProxy with the shipped files.
struct Slow {
    _origin: Origin,
    gate: Gate,
    _haproxy: Running,
    dir: tempfile::TempDir,
    port: u16,
    proxied: u16,
}

impl Slow {
    fn start(dns: &dns_server::Server) -> Slow {
        let origin = Origin::start();
        let spoe = free_port();
        let verify = format!(
            "  allow_private_directories: true\n  dns: {{ nameservers: [\"{}\"], timeout_ms: 3000 }}",
            dns.addr
        );
        let files = [("bots.yaml", SIGNED_BOT.as_bytes())];
        let gate = start_gate_with(&origin, spoe, "bots: \"{dir}/bots.yaml\"", &verify, &files);
        let dir = tempfile::tempdir().unwrap();
        let (port, proxied) = (free_port(), free_port());
        let haproxy = start_haproxy(dir.path(), port, proxied, &gate, spoe, &origin);
        let asked = within(Duration::from_secs(15), || {
            get_from(port, "127.0.0.2", "/private/warmup", &[("User-Agent", GPTBOT)]).status == 403
        });
        assert!(asked.is_some(), "HAProxy never asked robotgate");
        Slow { _origin: origin, gate, _haproxy: haproxy, dir, port, proxied }
    }

    /// HAProxy gave up on robotgate for a request to `path` (`{1}` in its log).
    fn gave_up(&self, path: &str) -> bool {
        let log = std::fs::read_to_string(self.dir.path().join("haproxy.log")).unwrap_or_default();
        log.lines().any(|l| l.contains("{1}") && l.contains(path))
    }
}

/// A reverse zone that answers Applebot's address after 1.8 s.
fn slow_dns() -> dns_server::Server {
    dns_server::Server::start(
        &[
            ("9.113.0.203.in-addr.arpa", Answer::Ptr(vec!["crawl-203-0-113-9", "applebot", "apple", "com"])),
            ("crawl-203-0-113-9.applebot.apple.com", Answer::A("203.0.113.9".parse().unwrap())),
        ],
        false,
        Duration::from_millis(1800),
    )
}

/// Issue 66 (1): HAProxy waits `timeout processing` (1 s in the shipped
/// file) and then lets the request pass undecided (`{1}` in its log). A
/// signature whose key directory answers after 1.8 s is decided before
/// that, unsigned: here a spoofed claim, 403. The directory's fetch goes on
/// and is cached, so the robot's next signed request is verified.
#[test]
fn a_slow_key_directory_is_decided_before_haproxys_timeout() {
    if !have_haproxy() {
        return;
    }
    let key = new_key("slow directory");
    let directory = Directory::slow(&key, Duration::from_millis(1800));
    let dns = slow_dns();
    let slow = Slow::start(&dns);
    let signed = sign(&key, &directory.url, &format!("127.0.0.1:{}", slow.port));
    let mut headers: Vec<(&str, &str)> = signed.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    headers.push(("User-Agent", "SignedBot/1.0"));
    let started = std::time::Instant::now();
    let r = get_from(slow.port, "127.0.0.7", "/page", &headers);
    println!("a signed request with a 1.8 s key directory answered {} after {:?}", r.status, started.elapsed());
    assert_eq!(r.status, 403, "a slow key directory let an unverified claim through: {}\n{}", r.head, r.body);
    assert!(started.elapsed() < Duration::from_secs(5));
    let deadline = "robotgate_edge_deadline_total{listener=\"spoe\",lookup=\"key-directory\"}";
    assert!(metric(&slow.gate, deadline) >= 1.0);
    // The fetch went on: once it is in, the same robot is itself.
    let verified =
        within(Duration::from_secs(10), || get_from(slow.port, "127.0.0.7", "/page", &headers).status == 200);
    assert!(verified.is_some(), "the slow directory's keys were never used");
    assert_eq!(directory.hits(), 1, "one fetch");
    assert!(!slow.gave_up("/page"), "HAProxy gave up on robotgate");
}

/// Issue 66 (1), reverse DNS: Applebot from a public address (a load
/// balancer's PROXY header names it), which only reverse DNS can confirm,
/// and the zone answers after HAProxy's timeout. Judged unverifiable
/// before it, in its own group: /private/ is not for it, 403.
#[test]
fn a_slow_reverse_zone_is_decided_before_haproxys_timeout() {
    if !have_haproxy() {
        return;
    }
    let dns = slow_dns();
    let slow = Slow::start(&dns);
    let started = std::time::Instant::now();
    let status = get_as(slow.proxied, "203.0.113.9", "/private/x", APPLEBOT);
    println!("Applebot with a 1.8 s reverse zone answered {status} after {:?}", started.elapsed());
    assert_eq!(status, 403, "a slow resolver let a robot through");
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(metric(&slow.gate, "robotgate_edge_deadline_total{listener=\"spoe\",lookup=\"dns\"}") >= 1.0);
    let unchecked = "robotgate_identity_unchecked_total{bot=\"Applebot\",reason=\"deadline\"}";
    assert!(metric(&slow.gate, unchecked) >= 1.0);
    assert!(!slow.gave_up("/private/x"), "HAProxy gave up on robotgate");
}

/// A frame: its length, then type, flags (FIN), stream and frame ids (each
/// below 240: one byte), then `payload`.
fn frame(kind: u8, stream: u8, id: u8, payload: &[u8]) -> Vec<u8> {
    let mut f = vec![kind, 0, 0, 0, 1, stream, id];
    f.extend_from_slice(payload);
    let mut out = (f.len() as u32).to_be_bytes().to_vec();
    out.extend_from_slice(&f);
    out
}

/// A KV item or an argument: a name, then a typed value's bytes.
fn item(out: &mut Vec<u8>, name: &str, value: &[u8]) {
    out.push(name.len() as u8);
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(value);
}

fn hello(version: &str) -> Vec<u8> {
    let mut p = Vec::new();
    let mut v = vec![8, version.len() as u8];
    v.extend_from_slice(version.as_bytes());
    item(&mut p, "supported-versions", &v);
    item(&mut p, "max-frame-size", &[3, 0xf0 | 0x0c, 0x7f]); // 240 + 12 + (127 << 4) = 2284
    item(&mut p, "capabilities", b"\x08\x0apipelining");
    frame(1, 0, 0, &p)
}

/// Read one frame: (type, payload).
fn read_frame(s: &mut std::net::TcpStream) -> Option<(u8, Vec<u8>)> {
    let mut head = [0u8; 4];
    s.read_exact(&mut head).ok()?;
    let mut buf = vec![0u8; u32::from_be_bytes(head) as usize];
    s.read_exact(&mut buf).ok()?;
    // Stream and frame ids below 240 in what robotgate sends back here.
    Some((buf[0], buf[7..].to_vec()))
}

fn connect(spoe: u16) -> std::net::TcpStream {
    let s = std::net::TcpStream::connect(("127.0.0.1", spoe)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s
}

/// The agent over raw SPOP, without HAProxy: what it agrees to, what it
/// refuses (with AGENT-DISCONNECT and its status), and a message lacking a
/// fact answered 400.
#[test]
fn the_agent_speaks_spop_and_refuses_what_is_not() {
    let origin = Origin::start();
    let spoe = free_port();
    let gate = start_gate(&origin, spoe);

    // HELLO: version 2.0, the smaller frame size (2284, HAProxy's here), pipelining.
    let mut s = connect(spoe);
    s.write_all(&hello("2.0")).unwrap();
    let (kind, payload) = read_frame(&mut s).expect("AGENT-HELLO");
    assert_eq!(kind, 101);
    let text = String::from_utf8_lossy(&payload);
    assert!(text.contains("version") && text.contains("2.0") && text.contains("pipelining"), "{text:?}");
    assert!(payload.windows(3).any(|w| w == [3, 0xfc, 0x7f]), "max-frame-size 2284 not agreed: {payload:?}");

    // A NOTIFY whose message has no `src`: answered, status 400.
    let mut m = Vec::new();
    item(&mut m, "robotgate-check", &[5]);
    item(&mut m, "method", b"\x08\x03GET");
    item(&mut m, "path", b"\x08\x01/");
    item(&mut m, "host", &[0]);
    item(&mut m, "ssl", &[0x01]);
    item(&mut m, "headers", &[9, 2, 0, 0]);
    s.write_all(&frame(3, 9, 1, &m)).unwrap();
    let (kind, payload) = read_frame(&mut s).expect("ACK");
    assert_eq!(kind, 103);
    // SET-VAR, 3 args, txn, "status", INT32 400 (varint 400 = [0xf0, 0x0a]).
    let status = [&[1u8, 3, 2, 6][..], b"status", &[2, 0xf0, 0x0a]].concat();
    assert!(payload.windows(status.len()).any(|w| w == status), "no status 400: {payload:?}");

    // A frame past the agreed size: DISCONNECT 3, the connection closed.
    s.write_all(&3000u32.to_be_bytes()).unwrap();
    let (kind, payload) = read_frame(&mut s).expect("AGENT-DISCONNECT");
    assert_eq!(kind, 102);
    assert!(payload.windows(2).any(|w| w == [3, 3]), "status-code 3: {payload:?}");
    assert!(read_frame(&mut s).is_none(), "the connection stays open");

    // An unsupported version: DISCONNECT 8.
    let mut s = connect(spoe);
    s.write_all(&hello("1.0")).unwrap();
    let (kind, payload) = read_frame(&mut s).expect("AGENT-DISCONNECT");
    assert_eq!(kind, 102);
    assert!(payload.windows(2).any(|w| w == [3, 8]), "status-code 8: {payload:?}");

    // A NOTIFY before HELLO: DISCONNECT 11.
    let mut s = connect(spoe);
    s.write_all(&frame(3, 1, 1, &m)).unwrap();
    let (kind, payload) = read_frame(&mut s).expect("AGENT-DISCONNECT");
    assert_eq!(kind, 102);
    assert!(payload.windows(2).any(|w| w == [3, 11]), "status-code 11: {payload:?}");

    // Bytes that are no SPOP at all (an HTTP request): refused, never hung on.
    let mut s = connect(spoe);
    s.write_all(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n").unwrap();
    let (kind, _) = read_frame(&mut s).expect("AGENT-DISCONNECT");
    assert_eq!(kind, 102);

    assert_eq!(metric(&gate, "robotgate_spoe_notifications_total{result=\"refused\"}"), 1.0);
    assert!(metric(&gate, "robotgate_spoe_failures_total") >= 4.0);
    assert_eq!(origin.hits(), 0);
}

/// The agent alone, with `limits` (a flow mapping), run under `wrap`.
fn start_agent(origin: &Origin, spoe: u16, limits: &str, wrap: &[&str]) -> Gate {
    let config = format!(
        "listen: [\"127.0.0.1:{{port}}\"]\nmetrics: {{ listen: \"127.0.0.1:{{metrics}}\" }}\ngrace_period: 1\nspoe: {{ listen: [\"127.0.0.1:{spoe}\"] }}\nlimits: {limits}\n\
         sites:\n  - name: s\n    hosts: [\"127.0.0.1\"]\n    default: true\n    upstream: \"{}\"\n    robots: \"{{dir}}/robots.txt\"\n\
         log:\n  violations: \"{{dir}}/violations.jsonl\"\n  level: warn\n",
        origin.addr
    );
    let gate = Gate::start_under(wrap, &config, &[("robots.txt", ROBOTS.as_bytes())]);
    wait_port(spoe, "robotgate's SPOE agent", &gate.stderr_path);
    gate
}

/// How long until the peer ends `s` (EOF or reset; an AGENT-DISCONNECT
/// first is read past), or `None` if it is still open after `limit`.
fn closed_within(s: &mut std::net::TcpStream, started: std::time::Instant, limit: Duration) -> Option<Duration> {
    s.set_read_timeout(Some(Duration::from_millis(100))).unwrap();
    let mut buf = [0u8; 256];
    while started.elapsed() < limit {
        match s.read(&mut buf) {
            Ok(0) => return Some(started.elapsed()),
            Ok(_) => {}
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
            Err(_) => return Some(started.elapsed()),
        }
    }
    None
}

/// Issue 66 (4): a HELLO has one `request_head_timeout` from the accept,
/// for its first byte and the whole frame alike. Its first byte just
/// before the deadline and the rest trickled after: closed at the
/// deadline, not a second deadline later.
#[test]
fn a_trickled_hello_gets_one_deadline() {
    let origin = Origin::start();
    let spoe = free_port();
    let gate = start_agent(&origin, spoe, "{ request_head_timeout: 3 }", &[]);
    let mut s = connect(spoe);
    let started = std::time::Instant::now();
    let mut writer = s.try_clone().unwrap();
    let trickle = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(2700));
        for b in hello("2.0") {
            if writer.write_all(&[b]).is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    });
    let closed = closed_within(&mut s, started, Duration::from_secs(10));
    let closed = closed.expect("the trickled HELLO's connection stayed open");
    println!("the trickled HELLO's connection closed after {closed:?}");
    assert!(closed < Duration::from_millis(4500), "closed after {closed:?}: more than one 3 s deadline");
    trickle.join().unwrap();
    assert!(metric(&gate, "robotgate_connections_timed_out_total{listener=\"spoe\",phase=\"head\"}") >= 1.0);
}

/// The CPU time (user + system) of process `pid` so far.
fn cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // After the command's closing parenthesis: fields 3 on; utime and stime are 14 and 15.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<u64> = rest.split(' ').skip(11).take(2).map(|f| f.parse().unwrap()).collect();
    // SC_CLK_TCK is 100 on Linux.
    Duration::from_millis((fields[0] + fields[1]) * 10)
}

/// Issue 66 (3): the SPOE agent's accept loop, out of file descriptors
/// (`prlimit --nofile=256`, 300 connections), waits instead of spinning on
/// `EMFILE`, and serves again once connections close.
#[test]
fn the_agent_waits_out_a_descriptor_shortage() {
    if std::process::Command::new("prlimit").arg("--version").output().is_err() {
        eprintln!("\n*** SKIPPED: `prlimit` (util-linux) is not installed ***\n");
        return;
    }
    let origin = Origin::start();
    let spoe = free_port();
    let gate = start_agent(&origin, spoe, "{ request_head_timeout: 60 }", &["prlimit", "--nofile=256:256", "--"]);
    let pid = gate.child.id();
    let held: Vec<std::net::TcpStream> =
        (0..300).filter_map(|_| std::net::TcpStream::connect(("127.0.0.1", spoe)).ok()).collect();
    assert!(held.len() >= 256, "only {} connections", held.len());
    std::thread::sleep(Duration::from_millis(500));
    let (cpu, wall) = (cpu_time(pid), std::time::Instant::now());
    std::thread::sleep(Duration::from_secs(3));
    let share = (cpu_time(pid) - cpu).as_secs_f64() / wall.elapsed().as_secs_f64();
    println!("{} connections held; {:.1}% of a core over 3 s", held.len(), share * 100.0);
    assert!(share < 0.3, "{:.0}% of a core while out of descriptors", share * 100.0);
    drop(held);
    // Served again: a HELLO is answered.
    let served = within(Duration::from_secs(15), || {
        let mut s = connect(spoe);
        s.write_all(&hello("2.0")).is_ok() && read_frame(&mut s).is_some_and(|(kind, _)| kind == 101)
    });
    assert!(served.is_some(), "the agent did not recover");
    assert!(metric(&gate, "robotgate_accept_backoff_total{listener=\"spoe\"}") >= 1.0);
}
