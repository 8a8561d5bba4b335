//! Issue #14: what robotgate judges must be what the origin serves.
//!
//! The origin here is a static file server that reads paths the way common
//! ones do (percent-decoding everything, `%2F` included, resolving `.` and
//! `..`, merging `//`), started by the test. Requests go over a raw TCP
//! socket, byte for byte as written: an HTTP client library would tidy the
//! very spellings under test.

mod common;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{Gate, CHROME, FIREFOX, GPTBOT};

const SECRET: &str = "SECRET-private-document";
const PDF: &str = "SECRET-pdf-report";

/// The files the static origin holds, by resolved path.
fn files() -> HashMap<&'static str, &'static str> {
    HashMap::from([
        ("/private/doc-1.html", SECRET),
        ("/files/report-1.pdf", PDF),
        ("/public.html", "public page"),
        ("/~user/page.html", "SECRET-tilde"),
        ("/blog/index.html", "blog"),
    ])
}

fn hex(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

/// What a decoding static server serves for a request-target: query cut,
/// every `%XX` decoded, dot-segments resolved, empty segments dropped.
/// `None`: it would answer 400.
fn origin_reads(target: &str) -> Option<String> {
    let path = target.split(['?', '#']).next().unwrap_or("");
    let path = path.strip_prefix("http://localhost").unwrap_or(path);
    let bytes = path.as_bytes();
    let mut decoded = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let (h, l) = (hex(*bytes.get(i + 1)?)?, hex(*bytes.get(i + 2)?)?);
            decoded.push(h * 16 + l);
            i += 3;
        } else {
            decoded.push(bytes[i]);
            i += 1;
        }
    }
    let decoded = String::from_utf8(decoded).ok()?;
    let mut segments: Vec<&str> = Vec::new();
    for seg in decoded.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                segments.pop();
            }
            s => segments.push(s),
        }
    }
    Some(format!("/{}", segments.join("/")))
}

/// The static origin: serves [`files`] by [`origin_reads`], and records every
/// request-target it received.
struct StaticOrigin {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<String>>>,
}

impl StaticOrigin {
    fn start() -> StaticOrigin {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { continue };
                let log = log.clone();
                std::thread::spawn(move || serve(conn, &log));
            }
        });
        StaticOrigin { addr, seen }
    }

    fn seen(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
}

fn serve(conn: TcpStream, seen: &Mutex<Vec<String>>) {
    let _ = conn.set_read_timeout(Some(Duration::from_secs(30)));
    let Ok(mut writer) = conn.try_clone() else { return };
    let mut reader = BufReader::new(conn);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let target = line.split_whitespace().nth(1).unwrap_or("").to_owned();
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h).unwrap_or(0) == 0 || h.trim().is_empty() {
                break;
            }
        }
        seen.lock().unwrap().push(target.clone());
        let files = files();
        let (status, body) = match origin_reads(&target) {
            None => ("400 Bad Request", "bad path".to_owned()),
            Some(p) => match files.get(p.as_str()) {
                Some(body) => ("200 OK", (*body).to_owned()),
                None => ("404 Not Found", format!("no file {p}")),
            },
        };
        let resp = format!("HTTP/1.1 {status}\r\ncontent-length: {}\r\n\r\n{body}", body.len());
        if writer.write_all(resp.as_bytes()).is_err() {
            return;
        }
    }
}

/// Send `head` (request line and headers, without the final blank line) and
/// read one response: status and body.
fn raw(port: u16, head: &str) -> (u16, String) {
    let r = common::raw(port, format!("{head}\r\nConnection: close\r\n\r\n").as_bytes());
    (r.status, r.body)
}

fn get(port: u16, target: &str, ua: &str) -> (u16, String) {
    raw(port, &format!("GET {target} HTTP/1.1\r\nHost: localhost\r\nUser-Agent: {ua}{}", common::browser_lines(ua)))
}

const ROBOTS: &str = "User-agent: *\nDisallow: /private/\nDisallow: /*.pdf$\nDisallow: /%7Euser/\n";

fn gate(origin: &StaticOrigin, target: &str) -> Gate {
    let config = format!(
        r#"
listen: ["127.0.0.1:{{port}}"]
sites:
  - hosts: ["localhost"]
    default: true
    upstream: "{}"
    robots: "{{dir}}/robots.txt"
{target}
verify:
  feeds: "{{dir}}/feeds"
  dns: {{ nameservers: ["127.0.0.1:9"], timeout_ms: 300 }}
log:
  violations: "{{dir}}/violations.jsonl"
"#,
        origin.addr
    );
    Gate::start(&config, &[("robots.txt", ROBOTS.as_bytes())])
}

/// The five spellings of the issue, each of which fetched the disallowed
/// file with 200 before the target was normalised.
const EVASIONS: &[(&str, &str)] = &[
    ("/%70rivate/doc-1.html", SECRET),
    ("/files/report-1.pd%66", PDF),
    ("/blog/../private/doc-1.html", SECRET),
    ("//private/doc-1.html", SECRET),
    ("/private%2fdoc-1.html", SECRET),
];

#[test]
fn issue_14_rewritten_urls_do_not_get_a_bot_past_robots_txt() {
    let origin = StaticOrigin::start();
    let gate = gate(&origin, "");
    for (target, secret) in EVASIONS {
        // The origin really serves the file for this spelling: a browser,
        // which robots.txt does not bind, gets it through robotgate.
        let (status, body) = get(gate.port, target, FIREFOX);
        assert_eq!((status, body.as_str()), (200, *secret), "{target}: the origin serves it to a browser");
        // A crawler gets 403 and never the content.
        let (status, body) = get(gate.port, target, GPTBOT);
        assert_eq!(status, 403, "{target}: {body}");
        assert!(!body.contains(secret), "{target}: the secret leaked");
    }
    // The same for the absolute form of a request-target.
    let (status, body) = get(gate.port, "http://localhost/%70rivate/doc-1.html", GPTBOT);
    assert_eq!(status, 403, "{body}");
    // Rules are spelled as requests are: `Disallow: /%7Euser/` holds for `~`
    // and for its escape, whichever the crawler sends.
    for target in ["/~user/page.html", "/%7Euser/page.html", "/%7euser/page.html"] {
        assert_eq!(get(gate.port, target, GPTBOT).0, 403, "{target}");
    }
    // Nothing disallowed reached the origin from the crawler: every target it
    // saw resolves to an allowed file or came from the browser round.
    let crawler_saw: Vec<String> = origin.seen().into_iter().skip(EVASIONS.len()).collect();
    assert!(crawler_saw.is_empty(), "the crawler's requests reached the origin: {crawler_saw:?}");
}

#[test]
fn an_allowed_robot_gets_the_target_it_was_judged_by() {
    let origin = StaticOrigin::start();
    let gate = gate(&origin, "");
    let (status, body) = get(gate.port, "/%70ublic.html?a=%7e", GPTBOT);
    assert_eq!((status, body.as_str()), (200, "public page"));
    assert_eq!(origin.seen().last().map(String::as_str), Some("/public.html?a=~"), "forwarded as judged");
    // A browser's target is forwarded as sent: it was not judged.
    let (status, _) = get(gate.port, "/%70ublic.html", CHROME);
    assert_eq!(status, 200);
    assert_eq!(origin.seen().last().map(String::as_str), Some("/%70ublic.html"));
}

#[test]
fn targets_no_reading_fits_are_refused() {
    let origin = StaticOrigin::start();
    let gate = gate(&origin, "");
    let long = format!("/{}", "a".repeat(9000));
    for (target, status) in [
        ("/%zz/x", 400),                // stray `%` in the path
        ("/a%00b", 400),                // NUL
        ("/private%5cdoc-1.html", 400), // backslash: `/` to IIS, a byte elsewhere
        ("?only=query", 400),           // not a request-target
        ("ftp://localhost/private/", 400),
        (long.as_str(), 414),
    ] {
        for ua in [GPTBOT, FIREFOX] {
            assert_eq!(get(gate.port, target, ua).0, status, "{target} as {ua}");
        }
    }
    assert!(origin.seen().is_empty(), "refused targets never reach the origin: {:?}", origin.seen());
    // CONNECT is not for a reverse proxy.
    assert_eq!(raw(gate.port, "CONNECT localhost:443 HTTP/1.1\r\nHost: localhost:443").0, 405);
    // A fragment is dropped; the rest is judged.
    assert_eq!(get(gate.port, "/private/doc-1.html#top", GPTBOT).0, 403);
}

#[test]
fn apache_style_sites_can_refuse_encoded_slashes() {
    let origin = StaticOrigin::start();
    let gate = gate(&origin, "    target: { encoded_slash: reject, merge_slashes: false }");
    assert_eq!(get(gate.port, "/private%2fdoc-1.html", FIREFOX).0, 400);
    assert_eq!(get(gate.port, "/public.html", FIREFOX).0, 200);
}

#[test]
fn headers_that_disagree() {
    let origin = StaticOrigin::start();
    let gate = gate(&origin, "");
    // Two User-Agents, a browser's first: not judged as the browser.
    let head =
        format!("GET /private/doc-1.html HTTP/1.1\r\nHost: localhost\r\nUser-Agent: {FIREFOX}\r\nUser-Agent: {GPTBOT}");
    let (status, body) = raw(gate.port, &head);
    assert_eq!(status, 400, "{body}");
    assert!(!body.contains(SECRET));
    // A browser's UA folded onto a bot's (obs-fold), or glued to it with a
    // control byte, is refused by the HTTP parser; glued with a TAB it is
    // one UA, and the bot in it is found.
    for (glue, status) in [("\r\n ", 400), ("\u{1}", 400), ("\t", 403)] {
        let head =
            format!("GET /private/doc-1.html HTTP/1.1\r\nHost: localhost\r\nUser-Agent: {FIREFOX}{glue}{GPTBOT}");
        assert_eq!(raw(gate.port, &head).0, status, "{glue:?}");
    }
    // Two Host headers.
    let head = format!("GET /public.html HTTP/1.1\r\nHost: localhost\r\nHost: other.test\r\nUser-Agent: {FIREFOX}");
    assert_eq!(raw(gate.port, &head).0, 400);
    // HTTP/1.0 without Host reaches the default site, and is judged there.
    assert_eq!(raw(gate.port, &format!("GET /public.html HTTP/1.0\r\nUser-Agent: {GPTBOT}")).0, 200);
    assert_eq!(raw(gate.port, &format!("GET /private/doc-1.html HTTP/1.0\r\nUser-Agent: {GPTBOT}")).0, 403);
}
