//! The command line, run as a real process: `check`, `lint`, `classify`.

use std::io::Write;
use std::process::{Command, Output, Stdio};

fn robotgate(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_robotgate")).args(args).output().expect("robotgate runs")
}

fn robots_file(body: &str) -> tempfile::NamedTempFile {
    let mut f = tempfile::NamedTempFile::new().unwrap();
    f.write_all(body.as_bytes()).unwrap();
    f
}

const ROBOTS: &str = "User-agent: *\nDisallow: /private\nAllow: /private/ok\n\nUser-agent: FooBot\nDisallow: /\n";

#[test]
fn check_exit_codes_follow_robots_main() {
    let f = robots_file(ROBOTS);
    let path = f.path().to_str().unwrap();
    let ok = robotgate(&["check", path, "BarBot", "https://example.com/public"]);
    assert_eq!(ok.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&ok.stdout).trim(), "allowed: no rule matched (group *)");

    let no = robotgate(&["check", path, "BarBot", "https://example.com/private/x"]);
    assert_eq!(no.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&no.stdout).trim(), "disallowed: line 2: disallow: /private (group *)");

    let foo = robotgate(&["check", path, "foobot", "/anything"]);
    assert_eq!(foo.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&foo.stdout).contains("line 6"));

    let missing = robotgate(&["check", "/nonexistent/robots.txt", "x", "/"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("/nonexistent/robots.txt"));
}

#[test]
fn check_takes_the_user_agent_literally_and_accepts_empty_arguments() {
    let f = robots_file("User-agent: Foo Bar\nDisallow: /\n");
    let path = f.path().to_str().unwrap();
    // The group is `Foo` (cut at the space); the crawler `Foo Bar` is not `Foo`.
    assert_eq!(robotgate(&["check", path, "Foo Bar", "/x"]).status.code(), Some(0));
    assert_eq!(robotgate(&["check", path, "Foo", "/x"]).status.code(), Some(1));
    // Empty user-agent and URL are input, not usage errors.
    assert_eq!(robotgate(&["check", path, "", ""]).status.code(), Some(0));
}

#[test]
fn check_json_names_the_rule() {
    let f = robots_file(ROBOTS);
    let out = robotgate(&["check", "--json", f.path().to_str().unwrap(), "x", "/private/ok/1"]);
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["allowed"], true);
    assert_eq!(v["group"], "*");
    assert_eq!(v["rule"]["directive"], "allow");
    assert_eq!(v["rule"]["pattern"], "/private/ok");
    assert_eq!(v["rule"]["line"], 3);
    assert_eq!(v["robots_hash"].as_str().unwrap().len(), 12);
}

#[test]
fn lint_reports_file_line_severity_and_exit_code() {
    let bad = robots_file("Disallow: /early\nUser-agent: *\nDisallow: /a /b\n");
    let out = robotgate(&["lint", bad.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    let name = bad.path().display().to_string();
    assert!(text.lines().any(|l| l.starts_with(&format!("{name}:1: error: "))), "{text}");
    assert!(text.lines().any(|l| l.starts_with(&format!("{name}:3: error: "))), "{text}");

    let json = robotgate(&["lint", "--format", "json", bad.path().to_str().unwrap()]);
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let codes: Vec<&str> = v.as_array().unwrap().iter().map(|d| d["code"].as_str().unwrap()).collect();
    assert_eq!(codes, vec!["rule-before-user-agent", "several-paths"]);

    let good = robots_file("User-agent: *\nDisallow: /private/\n");
    let out = robotgate(&["lint", good.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty());
}

#[test]
fn classify_reads_stdin_and_writes_one_json_line_each() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_robotgate"))
        .arg("classify")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let input = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)\n\
                 Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36\n\
                 curl/8.5.0\n";
    child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let lines: Vec<serde_json::Value> =
        String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[0]["name"], "Googlebot");
    assert_eq!(lines[0]["is_bot"], true);
    assert_eq!(lines[1]["is_bot"], false);
    assert_eq!(lines[2]["category"], "tool");
}

#[test]
fn classify_with_robots_names_the_group() {
    let f = robots_file("User-agent: MJ12bot\nDisallow: /\n\nUser-agent: *\nDisallow: /x\n");
    let out = robotgate(&[
        "classify",
        "--robots",
        f.path().to_str().unwrap(),
        "Mozilla/5.0 (compatible; MJ12bot/v1.4.8; http://mj12bot.com/)",
        "Mozilla/5.0 (compatible; SomeNewBot/0.1; +https://example.org/bot)",
        "Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0",
    ]);
    assert!(out.status.success());
    let lines: Vec<serde_json::Value> =
        String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines[0]["group"], "MJ12bot");
    assert_eq!(lines[1]["group"], "*");
    assert!(lines[2]["group"].is_null(), "a browser obeys no group");
}

/// `classify --headers` (issue #67): a request head judged as a claimed
/// browser, each sign named; a browser's own head shows none.
#[test]
fn classify_headers_names_each_sign_against_the_claimed_browser() {
    let dir = tempfile::tempdir().unwrap();
    let chrome =
        "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36";
    // python-requests with Chrome's User-Agent.
    let robot = dir.path().join("robot.txt");
    std::fs::write(
        &robot,
        format!("GET /private/ HTTP/1.1\r\nHost: shop.example\r\nUser-Agent: {chrome}\r\nAccept-Encoding: gzip, deflate\r\nAccept: */*\r\nConnection: keep-alive\r\n\r\n"),
    )
    .unwrap();
    let out = robotgate(&["classify", "--headers", robot.to_str().unwrap()]);
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["disguised"], true, "{v}");
    assert_eq!(v["refused_by_default"], true, "{v}");
    assert_eq!(v["category"], "disguised", "{v}");
    assert_eq!(v["claim"]["family"], "chromium");
    let signs: Vec<&str> = v["signs"].as_array().unwrap().iter().map(|s| s["sign"].as_str().unwrap()).collect();
    assert!(signs.contains(&"no-accept-language") && signs.contains(&"no-fetch-metadata"), "{signs:?}");
    // Over plain http, what depends on the scheme is not a sign.
    let out = robotgate(&["classify", "--headers", robot.to_str().unwrap(), "--scheme", "http"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let signs: Vec<&str> = v["signs"].as_array().unwrap().iter().map(|s| s["sign"].as_str().unwrap()).collect();
    assert_eq!(signs, ["no-accept-language"]);
    // Chromium's own navigation, from stdin.
    let browser = format!(
        "user-agent: {chrome}\nsec-ch-ua: \"Chromium\";v=\"156\", \"Not/A)Brand\";v=\"24\"\nsec-ch-ua-mobile: ?0\n\
         accept-language: en-US,en;q=0.9\nsec-fetch-site: none\nsec-fetch-mode: navigate\nsec-fetch-dest: document\n\
         accept-encoding: gzip, deflate, br, zstd\n"
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_robotgate"))
        .args(["classify", "--headers", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(browser.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["disguised"], false, "{v}");
    assert_eq!(v["is_bot"], false, "{v}");
    assert!(v["signs"].as_array().unwrap().is_empty());
}
