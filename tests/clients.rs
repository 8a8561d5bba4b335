//! Issue #32, parts 1 to 3, through the real proxy: clients that lie about
//! where and who they are.
//!
//! The test plays a trusted load balancer on 127.0.0.1 that appends to
//! `X-Forwarded-For`, as nginx's `proxy_add_x_forwarded_for` does. Requests
//! are written on a raw socket, so header bytes that are not ASCII go out as
//! they are.

mod common;

use std::io::{Read, Write};
use std::time::Duration;

use common::{wait_lines, Gate, FIREFOX, GOOGLEBOT};

/// Only Google may crawl, a common robots.txt.
const ROBOTS: &str = "User-agent: *\nDisallow: /\n\nUser-agent: Googlebot\nAllow: /\n";

/// An address in OpenAI's published GPTBot ranges (`conf/feeds/openai-gptbot.json`).
const OPENAI: &str = "132.196.86.9";
const GPTBOT: &str = "Mozilla/5.0 (compatible; GPTBot/1.2; +https://openai.com/gptbot)";

fn config(origin: &common::Origin, extra: &str) -> String {
    format!(
        r#"
listen: ["127.0.0.1:{{port}}"]
trusted_proxies: ["127.0.0.1/32"]
metrics: {{ listen: "127.0.0.1:{{metrics}}" }}
sites:
  - name: s
    hosts: ["127.0.0.1", "localhost"]
    default: true
    upstream: "{}"
    robots: "{{dir}}/robots.txt"
{extra}
log:
  violations: "{{dir}}/violations.jsonl"
  aggregate_window: 0
"#,
        origin.addr
    )
}

/// Send one GET with `headers` (name, raw value bytes) and return the status.
fn raw_get(gate: &Gate, path: &str, headers: &[(&str, &[u8])]) -> u16 {
    let mut req = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n").into_bytes();
    let text: Vec<(&str, &str)> =
        headers.iter().filter_map(|(k, v)| Some((*k, std::str::from_utf8(v).ok()?))).collect();
    let browser: Vec<(&str, &[u8])> =
        common::as_browser("http://127.0.0.1/", &text).into_iter().map(|(k, v)| (k, v.as_bytes())).collect();
    for (name, value) in headers.iter().chain(&browser) {
        req.extend_from_slice(name.as_bytes());
        req.extend_from_slice(b": ");
        req.extend_from_slice(value);
        req.extend_from_slice(b"\r\n");
    }
    req.extend_from_slice(b"\r\n");
    common::raw(gate.port, &req).status
}

fn from(gate: &Gate, xff: &str, ua: &str, path: &str) -> u16 {
    raw_get(gate, path, &[("X-Forwarded-For", xff.as_bytes()), ("User-Agent", ua.as_bytes())])
}

#[test]
fn the_client_address_comes_from_the_one_header_the_proxies_write() {
    let origin = common::Origin::start();
    let gate = Gate::start(&config(&origin, ""), &[("robots.txt", ROBOTS.as_bytes())]);

    // The honest cases first: Google from its range, a person anywhere.
    assert_eq!(from(&gate, "66.249.66.1", GOOGLEBOT, "/page"), 200);
    assert_eq!(from(&gate, "203.0.113.9", FIREFOX, "/page"), 200);
    assert_eq!(from(&gate, "203.0.113.9", GOOGLEBOT, "/page"), 403, "a Googlebot User-Agent from elsewhere");

    // A client's own `Forwarded` header is not read: the proxies write X-Forwarded-For.
    let forged = raw_get(
        &gate,
        "/page",
        &[("X-Forwarded-For", b"203.0.113.9"), ("Forwarded", b"for=66.249.66.1"), ("User-Agent", GOOGLEBOT.as_bytes())],
    );
    assert_eq!(forged, 403, "Forwarded: for=66.249.66.1 must not make the client Google");

    // A byte >= 0x80 in the chain: the walk stops there with no client, and
    // never falls back to the proxy's own (private, hence unchecked) address.
    let status = raw_get(
        &gate,
        "/page",
        &[("X-Forwarded-For", b"1.2.3.4\xff, 203.0.113.9"), ("User-Agent", GOOGLEBOT.as_bytes())],
    );
    assert_eq!(status, 403, "203.0.113.9 is the client; the byte lies left of it");
    let status =
        raw_get(&gate, "/page", &[("X-Forwarded-For", b"66.249.66.1\xff"), ("User-Agent", GOOGLEBOT.as_bytes())]);
    assert_eq!(status, 403, "an entry that is not an address verifies no crawler");

    // `unknown` (RFC 7239) ends the walk: what the client wrote left of it is not read.
    assert_eq!(from(&gate, "66.249.66.1, unknown", GOOGLEBOT, "/page"), 403);
    assert_eq!(from(&gate, "66.249.66.1, _hidden", GOOGLEBOT, "/page"), 403);

    // Counted, by reason.
    let unknown = common::metric(&gate, "robotgate_client_unknown_total{reason=\"not-an-address\"}");
    assert!(unknown >= 3.0, "{unknown}");
    // And the honest client next to them is still served.
    assert_eq!(from(&gate, "198.51.100.20", FIREFOX, "/page"), 200);
}

#[test]
fn a_user_agent_that_names_several_robots_is_held_to_every_claim() {
    let origin = common::Origin::start();
    let robots = "User-agent: *\nDisallow: /private/\n\nUser-agent: GPTBot\nDisallow: /\n";
    let gate = Gate::start(&config(&origin, ""), &[("robots.txt", robots.as_bytes())]);

    // GPTBot from outside OpenAI's ranges is spoofed; appending an ai-user
    // fetcher's token no longer turns it into that fetcher.
    assert_eq!(from(&gate, "203.0.113.9", GPTBOT, "/page"), 403);
    assert_eq!(from(&gate, "203.0.113.9", &format!("{GPTBOT} Perplexity-User/1.0"), "/page"), 403);
    // A verified GPTBot is judged as GPTBot whatever else it names.
    assert_eq!(from(&gate, OPENAI, &format!("{GPTBOT} Claude-User/1.0"), "/page"), 403, "GPTBot's group: Disallow /");
    // Honest parties keep their verdicts: a plain ai-user fetch is only
    // logged (enforce_ai_user: false), a browser passes.
    let claude_user =
        "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; Claude-User/1.0; +Claude-User@anthropic.com)";
    assert_eq!(from(&gate, "203.0.113.10", claude_user, "/private/x"), 200, "ai-user alone: logged");
    assert_eq!(from(&gate, "203.0.113.11", FIREFOX, "/private/x"), 200);
    // Two ai-user fetchers, one of them verifiable by its operator's
    // published range (Perplexity-User, #29): from outside it, spoofed.
    let two = "Mozilla/5.0 (compatible; Claude-User/1.0) Perplexity-User/1.0";
    assert_eq!(from(&gate, "203.0.113.12", two, "/private/x"), 403);

    // The record names every claimed robot.
    let lines = wait_lines(&gate.path("violations.jsonl"), 5);
    let appended = lines.iter().find(|l| l.contains("Perplexity-User/1.0") && l.contains("GPTBot/1.2"));
    let appended = appended.unwrap_or_else(|| panic!("no record of the appended UA: {lines:?}"));
    let record: serde_json::Value = serde_json::from_str(appended).unwrap();
    let mut named: Vec<&str> =
        record["claims"].as_array().map_or(vec![], |c| c.iter().filter_map(|v| v.as_str()).collect());
    named.extend(record["bot"].as_str());
    named.sort_unstable();
    assert_eq!(named, ["GPTBot", "Perplexity-User"], "{appended}");
    assert_eq!(record["directive"], "spoofed-identity", "{appended}");
}

#[test]
fn a_ban_covers_the_mapped_form_and_the_whole_ipv6_64_but_never_a_verified_crawler() {
    let origin = common::Origin::start();
    let traps = "    traps:\n      paths: [\"/trap/\"]\n      ban: 60\n      arm_after: 0";
    let robots = "User-agent: *\nDisallow: /private/\n";
    let gate = Gate::start(&config(&origin, traps), &[("robots.txt", robots.as_bytes())]);
    let scraper = "Mozilla/5.0 (compatible; Scrapy/2.11; +https://scrapy.org)";

    // IPv4, then the same client in IPv4-mapped IPv6 form.
    assert_eq!(from(&gate, "198.51.100.7", scraper, "/trap/x"), 403);
    assert_eq!(from(&gate, "198.51.100.7", scraper, "/page"), 403, "banned");
    assert_eq!(from(&gate, "::ffff:198.51.100.7", scraper, "/page"), 403, "the mapped form is the same client");
    assert_eq!(from(&gate, "198.51.100.8", scraper, "/page"), 200, "its neighbour is not");

    // IPv6: the ban covers the /64, not one /128.
    assert_eq!(from(&gate, "2001:db8:1:2::1", scraper, "/trap/y"), 403);
    assert_eq!(from(&gate, "2001:db8:1:2:ffff:1:2:3", scraper, "/page"), 403, "same /64");
    assert_eq!(from(&gate, "2001:db8:1:3::1", scraper, "/page"), 200, "another /64");

    // A verified crawler that fetches a trap (its parser missed the line,
    // or an old robots.txt) is recorded, never banned.
    assert_eq!(from(&gate, "66.249.66.1", GOOGLEBOT, "/trap/z"), 403);
    assert_eq!(from(&gate, "66.249.66.1", GOOGLEBOT, "/page"), 200, "not banned");
    // Not even when its address was banned before it came (a shared address).
    assert_eq!(from(&gate, "66.249.66.2", scraper, "/trap/z"), 403);
    assert_eq!(from(&gate, "66.249.66.2", scraper, "/page"), 403, "the scraper is banned");
    assert_eq!(from(&gate, "66.249.66.2", GOOGLEBOT, "/page"), 200, "Google from that address is not");
    // Its hit is recorded with the site's action for it, as any other violation.
    let lines = wait_lines(&gate.path("violations.jsonl"), 8);
    let google = lines.iter().find(|l| l.contains("/trap/z") && l.contains("Googlebot"));
    let google = google.unwrap_or_else(|| panic!("Google's trap hit is recorded: {lines:?}"));
    assert!(google.contains("\"identity\":\"verified\"") && google.contains("\"action\":\"block\""), "{google}");
    assert!(!lines.iter().any(|l| l.contains("Googlebot") && l.contains("\"action\":\"ban\"")), "{lines:?}");
}

/// An origin that keeps the raw bytes of the last request head it got.
fn raw_origin() -> (std::net::SocketAddr, std::sync::Arc<std::sync::Mutex<Vec<u8>>>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let last = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let keep = last.clone();
    std::thread::spawn(move || {
        for mut conn in listener.incoming().flatten() {
            let _ = conn.set_read_timeout(Some(Duration::from_secs(10)));
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && conn.read(&mut byte).unwrap_or(0) == 1 {
                head.push(byte[0]);
            }
            *keep.lock().unwrap() = head;
            let _ = conn.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok");
        }
    });
    (addr, last)
}

#[test]
fn the_origin_gets_the_chain_robotgate_judged() {
    let (addr, last) = raw_origin();
    let config = format!(
        "listen: [\"127.0.0.1:{{port}}\"]\ntrusted_proxies: [\"127.0.0.1/32\"]\nsites:\n  - name: s\n    hosts: [\"127.0.0.1\"]\n    default: true\n    upstream: \"{addr}\"\n"
    );
    let gate = Gate::start(&config, &[]);
    // Non-ASCII bytes in the chain reach the origin as they came, with the
    // peer appended, so the origin's own real-IP module reaches the same client.
    let chain: &[u8] = b"1.2.3.4\xff, 198.51.100.7";
    let status = raw_get(&gate, "/echo", &[("X-Forwarded-For", chain), ("User-Agent", FIREFOX.as_bytes())]);
    assert_eq!(status, 200);
    let head = last.lock().unwrap().clone();
    let want: &[u8] = b"\r\nx-forwarded-for: 1.2.3.4\xff, 198.51.100.7, 127.0.0.1\r\n";
    assert!(head.windows(want.len()).any(|w| w.eq_ignore_ascii_case(want)), "{}", String::from_utf8_lossy(&head));
}
