//! Issue #42: indexing rules managed centrally. The real binary in front of
//! an origin started here (an HTML page, a PDF, a page with its own
//! X-Robots-Tag), asked by a real HTTP client; and the CLI's `config check`,
//! `lint` and `check` on the same files.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::process::Command;

use common::{get, Gate, TestConfig, FIREFOX, GOOGLEBOT};

/// Size of the big page.
const BIG: usize = 5 << 20;

/// An origin that answers by the path's suffix: `.pdf` as a PDF, `/own/`
/// with its own `X-Robots-Tag: noimageindex`, `secret` with a robots META
/// noindex, `/big.html` as 5 MB of HTML whose first 64 KiB come at once and
/// the rest only once `go` says so (or after 10 s); anything else as HTML.
fn origin() -> String {
    origin_with(std::sync::mpsc::channel().1)
}

fn origin_with(go: std::sync::mpsc::Receiver<()>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let go = std::sync::Arc::new(std::sync::Mutex::new(go));
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            let go = go.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(conn.try_clone().unwrap());
                let mut writer = conn;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    let path = line.split_whitespace().nth(1).unwrap_or("/").to_owned();
                    loop {
                        let mut h = String::new();
                        if reader.read_line(&mut h).unwrap_or(0) == 0 || h.trim().is_empty() {
                            break;
                        }
                    }
                    if path == "/big.html" {
                        let head =
                            format!("HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {BIG}\r\n\r\n");
                        let mut page = b"<html><head><meta name=robots content=noindex></head><body>".to_vec();
                        page.resize(BIG, b'x');
                        let _ = writer.write_all(head.as_bytes()).and_then(|_| writer.write_all(&page[..64 << 10]));
                        let _ = go.lock().unwrap().recv_timeout(std::time::Duration::from_secs(10));
                        if writer.write_all(&page[64 << 10..]).is_err() {
                            return;
                        }
                        continue;
                    }
                    let (ct, body, extra) = if path.ends_with(".pdf") {
                        ("application/pdf", "%PDF-1.4 not really\n".to_owned(), "")
                    } else if path.contains("secret") {
                        (
                            "text/html",
                            "<html><HEAD><Meta content=\"NOINDEX\" name=\"robots\"></HEAD><body>s</body></html>"
                                .to_owned(),
                            "",
                        )
                    } else if path.starts_with("/own/") {
                        (
                            "text/html",
                            "<html><head></head><body>own</body></html>".to_owned(),
                            "x-robots-tag: noimageindex\r\n",
                        )
                    } else {
                        ("text/html", format!("<html><head><title>{path}</title></head><body>page</body></html>"), "")
                    };
                    let head = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: {ct}\r\ncontent-length: {}\r\n{extra}\r\n",
                        body.len()
                    );
                    if writer.write_all(head.as_bytes()).and_then(|_| writer.write_all(body.as_bytes())).is_err() {
                        return;
                    }
                }
            });
        }
    });
    format!("\"{addr}\"")
}

const RULES: &str = "indexing:\n  rules:\n    - {path: \"/drafts/\", set: \"noindex, nofollow\"}\n    - {path: \"/*.pdf$\", bots: [Googlebot], set: \"NoArchive\"}\n    - {path: \"/own/\", set: \"nosnippet\"}\n    - {path: \"/private/\", set: \"noindex\"}";

const ROBOTS: &[u8] = b"User-agent: *\nDisallow: /private/\n";

#[test]
fn rules_add_x_robots_tag_to_every_response_they_cover() {
    let upstream = origin();
    let config = TestConfig { upstream: &upstream, site: RULES, ..TestConfig::default() }.render();
    let gate = Gate::start(&config, &[("robots.txt", ROBOTS)]);
    let as_firefox = |path: &str| get(&gate.url(path), &[("User-Agent", FIREFOX)]);

    // An HTML page, for every robot: the same bytes whoever asks.
    let r = as_firefox("/drafts/a.html");
    assert_eq!((r.status, r.all("x-robots-tag")), (200, vec!["noindex, nofollow"]));
    let r = get(&gate.url("/drafts/a.html"), &[("User-Agent", GOOGLEBOT), ("X-Forwarded-For", "66.249.66.1")]);
    assert_eq!(r.all("x-robots-tag"), ["noindex, nofollow"]);
    // A PDF, for Googlebot only, in the header's `robot: directives` form.
    let r = as_firefox("/docs/a.pdf");
    assert_eq!(
        (r.header("content-type"), r.all("x-robots-tag")),
        (Some("application/pdf"), vec!["googlebot: noarchive"])
    );
    // Both scopes at once: one header each.
    assert_eq!(as_firefox("/drafts/b.pdf").all("x-robots-tag"), ["noindex, nofollow", "googlebot: noarchive"]);
    // The `$` holds: not a PDF with a query.
    assert!(as_firefox("/docs/a.pdf?page=2").all("x-robots-tag").is_empty());
    // The origin's own X-Robots-Tag is kept beside the rule's.
    let mut own = as_firefox("/own/x.html").all("x-robots-tag").into_iter().map(str::to_owned).collect::<Vec<_>>();
    own.sort();
    assert_eq!(own, ["noimageindex", "nosnippet"]);
    // Pages no rule covers get nothing.
    assert!(as_firefox("/index.html").all("x-robots-tag").is_empty());
}

fn robotgate(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_robotgate")).args(args).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.code().unwrap_or(-1), text)
}

/// A config and robots.txt in a temp dir; returns the dir and the config's path.
fn files(rules: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("robots.txt"), ROBOTS).unwrap();
    let yaml = format!(
        "listen: [\"127.0.0.1:1\"]\nsites:\n  - name: s\n    hosts: [\"example.test\"]\n    default: true\n    upstream: \"127.0.0.1:1\"\n    robots: {}/robots.txt\n{}\n",
        dir.path().display(),
        rules.lines().map(|l| format!("    {l}\n")).collect::<String>()
    );
    let path = dir.path().join("robotgate.yaml");
    std::fs::write(&path, yaml).unwrap();
    (dir, path.display().to_string())
}

#[test]
fn config_check_refuses_an_unknown_directive_at_its_line() {
    let (_dir, config) = files(&RULES.replace("NoArchive", "noarchive, noachive"));
    let (code, out) = robotgate(&["config", "check", "--config", &config]);
    assert_ne!(code, 0, "{out}");
    // The rule is on line 11 of the file: listen, sites, 6 site keys, indexing, rules, drafts, pdf.
    assert!(out.contains("robotgate.yaml:11:") && out.contains("`noachive` is not a directive"), "{out}");
}

#[test]
fn lint_and_config_check_warn_of_a_noindex_behind_a_disallow() {
    let (dir, config) = files(RULES);
    let robots = dir.path().join("robots.txt").display().to_string();
    for args in [vec!["lint", "--config", &config], vec!["config", "check", "--config", &config]] {
        let (code, out) = robotgate(&args);
        assert_eq!(code, 0, "a warning, not an error: {out}");
        // Both lines: robots.txt's Disallow, and the config's rule.
        let warning = out.lines().find(|l| l.contains("sites[0].indexing.rules[3]")).unwrap_or_else(|| panic!("{out}"));
        assert!(warning.starts_with(&format!("{robots}:2:")), "{warning}");
        assert!(warning.contains("`Disallow: /private/`") && warning.contains("`noindex`"), "{warning}");
        assert!(!out.contains("rules[0]"), "/drafts/ is not disallowed: {out}");
    }
}

#[test]
fn check_prints_the_directives_a_url_gets() {
    let (dir, config) = files(RULES);
    let robots = dir.path().join("robots.txt").display().to_string();
    let (code, out) =
        robotgate(&["check", "--config", &config, &robots, "Googlebot", "https://example.test/drafts/x.pdf"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("indexing: X-Robots-Tag: noindex, nofollow (sites[0].indexing.rules[0], path /drafts/)"),
        "{out}"
    );
    assert!(
        out.contains("indexing: X-Robots-Tag: googlebot: noarchive (sites[0].indexing.rules[1], path /*.pdf$)"),
        "{out}"
    );
    // Another robot: not Googlebot's rule.
    let (_, out) = robotgate(&["check", "--config", &config, &robots, "Bingbot", "/drafts/x.pdf"]);
    assert!(out.contains("noindex, nofollow") && !out.contains("googlebot:"), "{out}");
    // A noindex robots.txt hides, said so.
    let (code, out) = robotgate(&["check", "--config", &config, &robots, "Bingbot", "/private/x"]);
    assert_eq!(code, 1);
    assert!(out.contains("hidden: robots.txt keeps the robot from seeing it"), "{out}");
}

/// `observe: true`: a page's own noindex under a disallowed path shows on
/// /status.json as hidden; a 5 MB page streams through, its first bytes at
/// the client while the origin still holds the rest.
#[test]
fn observe_finds_the_noindex_robots_txt_hides_and_buffers_nothing() {
    use std::io::Read;
    let (go, wait) = std::sync::mpsc::channel();
    let upstream = origin_with(wait);
    let site = format!("{RULES}\n  observe: true");
    let config =
        TestConfig { upstream: &upstream, site: &site, metrics: true, ..TestConfig::default() }.render().replace(
            "metrics:\n  listen: \"127.0.0.1:{metrics}\"\n",
            "metrics:\n  listen: \"127.0.0.1:{metrics}\"\n  status_page: true\n",
        );
    let gate = Gate::start(&config, &[("robots.txt", ROBOTS)]);
    // A browser fetches the page (people are not bound by robots.txt).
    let r = get(&gate.url("/private/secret.html"), &[("User-Agent", FIREFOX)]);
    assert_eq!(r.status, 200);
    let status = |gate: &Gate| -> serde_json::Value {
        let r = get(&format!("http://127.0.0.1:{}/status.json", gate.metrics_port), &[]);
        serde_json::from_str(&r.body).unwrap_or_else(|e| panic!("{e}: {}", r.body))
    };
    let s = status(&gate);
    let hidden = &s["sites"][0]["hidden_noindex"];
    let rows = hidden.as_array().unwrap_or_else(|| panic!("{s}"));
    let row = rows.iter().find(|h| h["path"] == "/private/secret.html").unwrap_or_else(|| panic!("{s}"));
    assert_eq!((row["robot"].as_str(), row["robots_line"].as_u64()), (Some("*"), Some(2)), "{row}");
    assert_eq!(row["said"], "robots: noindex");
    // The same finding goes to the violation log, once (not per request),
    // for `robotgate report`; it counts no violation.
    get(&gate.url("/private/secret.html"), &[("User-Agent", FIREFOX)]);
    let log = gate.path("violations.jsonl");
    let lines = common::wait_lines(&log, 1);
    let finding: serde_json::Value = serde_json::from_str(&lines[0]).unwrap();
    assert_eq!(
        (finding["finding"].as_str(), finding["path"].as_str(), finding["robot"].as_str(), finding["line"].as_u64()),
        (Some("hidden-noindex"), Some("/private/secret.html"), Some("*"), Some(2)),
        "{finding}"
    );
    std::thread::sleep(std::time::Duration::from_millis(600));
    assert_eq!(std::fs::read_to_string(&log).unwrap().lines().count(), 1, "one finding for two fetches");
    let (code, text) = robotgate(&["report", log.to_str().unwrap()]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("Noindex hidden by robots.txt"), "{text}");
    assert!(text.contains("/private/secret.html") && text.contains("robots: noindex"), "{text}");
    let (code, json) = robotgate(&["report", "--format", "json", log.to_str().unwrap()]);
    assert_eq!(code, 0, "{json}");
    let report: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(report["violations"], 0, "{report}");
    let listed = &report["sites"][0]["hidden_noindex"][0];
    assert_eq!((listed["path"].as_str(), listed["line"].as_u64()), (Some("/private/secret.html"), Some(2)), "{report}");
    // A page robots.txt allows is not listed, whatever it says.
    get(&gate.url("/drafts/open.html"), &[("User-Agent", FIREFOX)]);
    assert!(status(&gate)["sites"][0]["hidden_noindex"]
        .as_array()
        .unwrap()
        .iter()
        .all(|h| h["path"] != "/drafts/open.html"));

    // 5 MB: the first 64 KiB reach the client before the origin sends the rest.
    let mut conn = std::net::TcpStream::connect(("127.0.0.1", gate.port)).unwrap();
    conn.set_read_timeout(Some(std::time::Duration::from_secs(5))).unwrap();
    conn.write_all(b"GET /big.html HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: Mozilla/5.0 Firefox/125.0\r\nConnection: close\r\n\r\n").unwrap();
    let mut got = Vec::new();
    let mut buf = vec![0u8; 64 << 10];
    while got.len() < 60 << 10 {
        let n =
            conn.read(&mut buf).expect("the page's start arrives while the origin holds the rest: nothing is buffered");
        assert!(n > 0, "closed early");
        got.extend_from_slice(&buf[..n]);
    }
    go.send(()).unwrap();
    conn.set_read_timeout(Some(std::time::Duration::from_secs(20))).unwrap();
    conn.read_to_end(&mut got).unwrap();
    let body_at = got.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    assert_eq!(got.len() - body_at, BIG, "the whole page");
}
