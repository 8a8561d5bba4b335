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
            // A head and a body in two writes would wait for a delayed ACK each answer.
            let _ = conn.set_nodelay(true);
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
                    let (ct, body, extra) = if let Some(page) = issue_52_page(&path) {
                        ("text/html", page, "")
                    } else if path.ends_with(".pdf") {
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

/// The 6,000 terms of `/private/terms.html`'s META (55 KB: a head is read to 64 KiB).
fn many_terms() -> String {
    let mut content: String = (0..1_000).map(|i| format!("max-snippet:{i},")).collect();
    content.push_str(&"nocache,".repeat(4_999));
    content + "noindex"
}

/// Issue #52's pages: `/any/...` says `index, follow` (as WordPress does),
/// whatever follows; `/private/script-string.html` has a META only inside
/// a script's string; `/private/script-body.html` has `<body` in a script's
/// string before a real noindex; `/private/flap.html` says noindex on every
/// other fetch; `/private/terms.html` a META of 6,000 terms.
fn issue_52_page(target: &str) -> Option<String> {
    static FLAP: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let path = target.split('?').next().unwrap_or(target);
    let head = |h: &str| Some(format!("<!doctype html><html><head>{h}</head><body>page</body></html>"));
    if path.starts_with("/any/") {
        return head("<meta name=\"robots\" content=\"index, follow\">");
    }
    match path {
        "/private/script-string.html" => {
            head("<script>var tag = '<meta name=\"robots\" content=\"noindex\">';</script><title>t</title>")
        }
        "/private/script-body.html" => {
            head("<script>document.write(\"<body\" + '>');</script><meta name=\"robots\" content=\"noindex\">")
        }
        "/private/flap.html" => {
            let on = FLAP.fetch_add(1, std::sync::atomic::Ordering::SeqCst).is_multiple_of(2);
            head(&format!("<meta name=robots content={}>", if on { "noindex" } else { "index" }))
        }
        "/private/terms.html" => head(&format!("<meta name=robots content=\"{}\">", many_terms())),
        _ => None,
    }
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

/// The gate with `observe: true` and the status page, in front of [`origin`].
fn observing_gate() -> Gate {
    let upstream = origin();
    let site = format!("{RULES}\n  observe: true");
    let config =
        TestConfig { upstream: &upstream, site: &site, metrics: true, ..TestConfig::default() }.render().replace(
            "metrics:\n  listen: \"127.0.0.1:{metrics}\"\n",
            "metrics:\n  listen: \"127.0.0.1:{metrics}\"\n  status_page: true\n",
        );
    Gate::start(&config, &[("robots.txt", ROBOTS)])
}

fn hidden_noindex(gate: &Gate) -> Vec<serde_json::Value> {
    let r = get(&format!("http://127.0.0.1:{}/status.json", gate.metrics_port), &[]);
    let s: serde_json::Value = serde_json::from_str(&r.body).unwrap_or_else(|e| panic!("{e}: {}", r.body));
    s["sites"][0]["hidden_noindex"].as_array().unwrap_or_else(|| panic!("{s}")).clone()
}

/// GET each target as a browser over one keep-alive connection (a new one
/// when the proxy closes it); returns how many were answered 200.
fn fetch_all(port: u16, targets: impl Iterator<Item = String>) -> usize {
    use std::io::Read;
    let connect = || {
        let conn = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        conn.set_nodelay(true).unwrap();
        conn.set_read_timeout(Some(std::time::Duration::from_secs(10))).unwrap();
        BufReader::new(conn)
    };
    let mut conn = connect();
    let mut ok = 0;
    for target in targets {
        let req = format!(
            "GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: {FIREFOX}{}\r\n\r\n",
            common::browser_lines(FIREFOX)
        );
        let once = |conn: &mut BufReader<std::net::TcpStream>| -> Option<u16> {
            conn.get_mut().write_all(req.as_bytes()).ok()?;
            let mut status = String::new();
            conn.read_line(&mut status).ok().filter(|n| *n > 0)?;
            let mut len = 0usize;
            loop {
                let mut h = String::new();
                conn.read_line(&mut h).ok().filter(|n| *n > 0)?;
                if h.trim().is_empty() {
                    break;
                }
                if let Some((k, v)) = h.split_once(':') {
                    if k.eq_ignore_ascii_case("content-length") {
                        len = v.trim().parse().ok()?;
                    }
                }
            }
            let mut body = vec![0; len];
            conn.read_exact(&mut body).ok()?;
            status.split_whitespace().nth(1)?.parse().ok()
        };
        let status = once(&mut conn).or_else(|| {
            conn = connect();
            once(&mut conn)
        });
        if status == Some(200) {
            ok += 1;
        }
    }
    ok
}

/// Lines of the violation log that are findings.
fn findings(gate: &Gate) -> Vec<serde_json::Value> {
    std::fs::read_to_string(gate.path("violations.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["finding"].is_string())
        .collect()
}

/// Issue #52, item 7: a META inside a script's string is no tag, and
/// `<body` inside one does not end the head.
#[test]
fn issue_52_observe_reads_a_head_as_a_browser_does() {
    let gate = observing_gate();
    for path in ["/private/script-string.html", "/private/script-body.html"] {
        assert_eq!(get(&gate.url(path), &[("User-Agent", FIREFOX)]).status, 200);
    }
    let hidden = hidden_noindex(&gate);
    let paths: Vec<&str> = hidden.iter().filter_map(|h| h["path"].as_str()).collect();
    assert_eq!(paths, ["/private/script-body.html"], "{hidden:?}");
    assert_eq!(hidden[0]["said"], "robots: noindex");
    std::thread::sleep(std::time::Duration::from_millis(600));
    let found = findings(&gate);
    let logged: Vec<&str> = found.iter().filter_map(|f| f["path"].as_str()).collect();
    assert_eq!(logged, ["/private/script-body.html"], "{found:?}");
}

/// Issue #52, item 9: 2,000 query strings on one hidden-noindex page make
/// one finding line, and so does a page switching its noindex on and off
/// 1,000 times.
#[test]
fn issue_52_findings_are_one_line_per_page_robot_and_word() {
    let gate = observing_gate();
    let n = fetch_all(gate.port, (0..2_000).map(|i| format!("/private/secret.html?utm={i}&x={}", i * 7919)));
    assert_eq!(n, 2_000);
    let n = fetch_all(gate.port, (0..1_000).map(|i| format!("/private/flap.html?v={i}")));
    assert_eq!(n, 1_000);
    std::thread::sleep(std::time::Duration::from_millis(800));
    let found = findings(&gate);
    let mut pages: Vec<(&str, &str, &str)> = found
        .iter()
        .map(|f| (f["path"].as_str().unwrap(), f["robot"].as_str().unwrap(), f["said"].as_str().unwrap()))
        .collect();
    pages.sort();
    assert_eq!(
        pages,
        [("/private/flap.html", "*", "robots: noindex"), ("/private/secret.html", "*", "robots: noindex")],
        "{found:#?}"
    );
    // The status page lists each page once, without its query.
    let hidden = hidden_noindex(&gate);
    let mut listed: Vec<&str> = hidden.iter().filter_map(|h| h["path"].as_str()).collect();
    listed.sort();
    assert!(
        listed == ["/private/secret.html"] || listed == ["/private/flap.html", "/private/secret.html"],
        "{listed:?}"
    );
}

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).expect("VmRSS in /proc/PID/status");
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Issue #52, item 8: 12,000 distinct 6 KB query strings on a page with a
/// robots META, a page whose META has 6,000 terms fetched 3,000 times, and
/// 12,000 distinct 6 KB paths under a robots META grow the proxy by at
/// most 16 MB (it grew 120-131 MB and 458-469 MB before).
#[test]
fn issue_52_observe_memory_is_bounded_whatever_clients_ask() {
    let gate = observing_gate();
    let pid = gate.child.id();
    // Warm up: the allocator's and the connections' steady state.
    let warm = fetch_all(gate.port, (0..2_000).map(|i| format!("/any/warm-{}.html?q={i}", i % 50)));
    assert_eq!(warm, 2_000);
    // What the start and the warm-up freed goes back to the system first.
    std::thread::sleep(std::time::Duration::from_secs(2));
    let before = rss_kib(pid);
    let junk = |i: usize| format!("{i:06}{}", "q".repeat(6 << 10));
    let n = fetch_all(gate.port, (0..12_000).map(|i| format!("/any/page.html?{}", junk(i))));
    assert_eq!(n, 12_000);
    let after_queries = rss_kib(pid);
    let n = fetch_all(gate.port, (0..3_000).map(|i| format!("/private/terms.html?q={i}")));
    assert_eq!(n, 3_000);
    let after_terms = rss_kib(pid);
    // The 6,000-term page is read: its noindex (the last term) is found and hidden.
    let hidden = hidden_noindex(&gate);
    let terms =
        hidden.iter().find(|h| h["path"] == "/private/terms.html").unwrap_or_else(|| panic!("{} rows", hidden.len()));
    let said = terms["said"].as_str().unwrap();
    assert!(said.starts_with("robots: ") && said.ends_with("noindex") && said.len() < 1_000, "{said}");
    // Distinct paths are distinct pages: the table's byte bound holds them.
    let n = fetch_all(gate.port, (0..12_000).map(|i| format!("/any/{}", junk(i))));
    assert_eq!(n, 12_000);
    let after_paths = rss_kib(pid);
    eprintln!("RSS KiB: before {before}, after queries {after_queries}, terms {after_terms}, paths {after_paths}");
    for (what, rss) in [("queries", after_queries), ("terms", after_terms), ("paths", after_paths)] {
        assert!(rss.saturating_sub(before) <= 16 << 10, "{what}: grew {} KiB", rss.saturating_sub(before));
    }
}
