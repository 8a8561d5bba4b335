//! Issue #27 against the real binary: what robotgate adds to a site's
//! robots.txt goes inside the file's own groups, records still cite the
//! file's lines, `robotgate robots show` marks every added line (part 1); and
//! a `$`-anchored rule that ends in a file extension is named by `lint`, and
//! the requests it let through by `replay` (part 6).

mod common;

use std::process::Command;

use common::{get, wait_lines, Gate, Origin, AHREFS, CLAUDEBOT};

/// Line numbers matter: records must cite them.
const ROBOTS: &str = "\
# Our robots.txt
User-agent: *
Disallow: /private/

User-agent: AhrefsBot
Disallow: /no-seo/
";

fn config(upstream: std::net::SocketAddr) -> String {
    "listen: [\"127.0.0.1:{port}\"]\ntrusted_proxies: [\"127.0.0.1/32\"]\nsites:\n  - name: s\n    hosts: [\"127.0.0.1\", \"localhost\"]\n    default: true\n    upstream: \"UPSTREAM\"\n    robots: {dir}/robots.txt\n    traps:\n      paths: [\"/trap/\"]\n    managed:\n      ai_training: disallow\n      content_signal: \"search=yes, ai-train=no\"\nverify:\n  feeds: {dir}/feeds\n  dns: { nameservers: [\"127.0.0.1:9\"], timeout_ms: 300 }\nlog:\n  violations: {dir}/violations.jsonl\n  aggregate_window: 0\n".replace("UPSTREAM", &upstream.to_string())
}

fn robotgate(args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_robotgate")).args(args).output().unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn issue_27_additions_go_into_the_files_groups_and_records_cite_the_file() {
    let origin = Origin::start();
    let gate = Gate::start(&config(origin.addr), &[("robots.txt", ROBOTS.as_bytes())]);
    let served = get(&gate.url("/robots.txt"), &[]).body;
    // One `*` group and one AhrefsBot group, as in the file, each holding the trap first.
    assert_eq!(served.matches("User-agent: *").count(), 1, "{served}");
    assert_eq!(served.matches("User-agent: AhrefsBot").count(), 1, "{served}");
    assert!(
        served.contains(
            "User-agent: *\nDisallow: /trap/\nContent-Signal: search=yes, ai-train=no\nDisallow: /private/\n"
        ),
        "{served}"
    );
    assert!(served.contains("User-agent: AhrefsBot\nDisallow: /trap/\nDisallow: /no-seo/\n"), "{served}");
    // A rule of the file is cited by its line in the file (3 and 6), not in
    // the served text; a managed rule has no line and says so.
    let xff = |ip: &'static str, ua: &'static str| [("X-Forwarded-For", ip), ("User-Agent", ua)];
    assert_eq!(get(&gate.url("/private/a"), &xff("198.51.100.1", AHREFS)).status, 200, "AhrefsBot's own group");
    assert_eq!(get(&gate.url("/no-seo/a"), &xff("198.51.100.1", AHREFS)).status, 403);
    assert_eq!(
        get(&gate.url("/private/a"), &xff("198.51.100.2", "TestCrawler/1.0 (+http://example.com/bot)")).status,
        403
    );
    assert_eq!(get(&gate.url("/page"), &xff("198.51.100.3", CLAUDEBOT)).status, 403);
    let recs: Vec<serde_json::Value> =
        wait_lines(&gate.path("violations.jsonl"), 3).iter().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(recs.len(), 3, "{recs:?}");
    assert_eq!((recs[0]["line"].as_u64(), recs[0].get("managed")), (Some(6), None), "{}", recs[0]);
    assert_eq!((recs[1]["line"].as_u64(), recs[1].get("managed")), (Some(3), None), "{}", recs[1]);
    assert_eq!((recs[2]["line"].as_u64(), recs[2]["managed"].as_bool()), (None, Some(true)), "{}", recs[2]);

    // `robots show` prints the served file, every added line marked.
    let (code, shown) = robotgate(&["robots", "show", "--config", gate.path("robotgate.yaml").to_str().unwrap()]);
    assert_eq!(code, Some(0), "{shown}");
    for line in shown.lines().filter(|l| !l.starts_with("# ----")) {
        let ours = ROBOTS.lines().any(|f| f == line);
        let marked = line.contains("# robotgate: managed");
        assert!(ours || marked || line.is_empty(), "unmarked line not in the file: {line:?}\n{shown}");
        assert!(!(ours && marked && !line.is_empty()), "a line of the file marked as added: {line:?}");
    }
    assert!(shown.contains("Disallow: /trap/  # robotgate: managed: traps: trap path /trap/"), "{shown}");
    assert!(shown.contains("User-agent: ClaudeBot  # robotgate: managed: managed.ai_training"), "{shown}");
}

const PDFS: &str = "User-agent: *\nDisallow: /*.pdf$\nDisallow: /private/\n";

#[test]
fn issue_27_lint_names_what_an_anchored_extension_rule_lets_through() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("robots.txt");
    std::fs::write(&file, PDFS).unwrap();
    let (code, out) = robotgate(&["lint", file.to_str().unwrap()]);
    assert_eq!(code, Some(0), "a warning, not an error: {out}");
    let line = out.lines().find(|l| l.contains("[anchored-extension]")).unwrap_or_else(|| panic!("{out}"));
    assert!(line.contains(":2: warning:"), "{line}");
    assert!(line.contains("`/x.pdf?v=1`") && line.contains("`Disallow: /*.pdf`"), "{line}");
    // What it says is what robotgate does.
    let (code, _) = robotgate(&["check", file.to_str().unwrap(), "foobot", "/files/report.pdf?v=1"]);
    assert_eq!(code, Some(0), "the query form is allowed");
    let (code, _) = robotgate(&["check", file.to_str().unwrap(), "foobot", "/files/report.pdf"]);
    assert_eq!(code, Some(1));
}

/// One combined-format line.
fn line(client: &str, second: u32, target: &str, status: u16, ua: &str) -> String {
    format!(
        "{client} - - [23/Nov/2026:10:00:{second:02} +0000] \"GET {target} HTTP/1.1\" {status} 512 \"-\" \"{ua}\"\n"
    )
}

#[test]
fn issue_27_replay_lists_what_an_anchored_extension_rule_let_through() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let config = format!(
        "listen: [\"127.0.0.1:8080\"]\nsites:\n  - name: s\n    hosts: [\"127.0.0.1\"]\n    default: true\n    upstream: \"127.0.0.1:1\"\n    robots: {}\nlog:\n  violations: {}\n",
        d.join("robots.txt").display(),
        d.join("violations.jsonl").display()
    );
    std::fs::write(d.join("robotgate.yaml"), config).unwrap();
    std::fs::write(d.join("robots.txt"), PDFS).unwrap();
    let bot = "TestCrawler/1.0 (+http://example.com/bot)";
    let mut log = String::new();
    log += &line("198.51.100.1", 1, "/files/report.pdf?x=1", 200, bot);
    log += &line("198.51.100.1", 2, "/files/other.pdf?v=2", 200, bot);
    log += &line("198.51.100.1", 3, "/files/plain.html?x=1", 200, bot);
    log += &line("198.51.100.2", 4, "/files/report.pdf?x=1", 200, common::FIREFOX);
    std::fs::write(d.join("access.log"), log).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_robotgate"))
        .args(["replay", "--output", "json", "--config"])
        .arg(d.join("robotgate.yaml"))
        .arg(d.join("access.log"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let site = &report["replay"]["sites"][0];
    assert_eq!(report["violations"], 0, "the query forms are allowed: {report}");
    let collateral = site["collateral"].as_array().unwrap();
    assert_eq!(collateral.len(), 1, "{site}");
    let c = &collateral[0];
    assert_eq!(
        (c["kind"].as_str(), c["line"].as_u64(), c["count"].as_u64()),
        (Some("query-let-through"), Some(2), Some(2)),
        "{c}"
    );
    assert_eq!(c["example"], "/files/report.pdf?x=1");
    assert!(c["lint"].as_array().unwrap().iter().any(|l| l.as_str().unwrap().starts_with("anchored-extension")), "{c}");
    // The text report shows it.
    let out = Command::new(env!("CARGO_BIN_EXE_robotgate"))
        .args(["replay", "--config"])
        .arg(d.join("robotgate.yaml"))
        .arg(d.join("access.log"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("query-let-through"), "{text}");
}
