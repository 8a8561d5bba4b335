//! `robotgate demo` runs with nothing else installed, and the curl lines it
//! prints do what it says they do.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

/// A printed `curl -si [-A 'UA'] URL` line -> (UA, URL).
/// A printed curl line's User-Agent, its other headers (`-H '…'`), and URL.
fn parse_curl(line: &str) -> (Option<String>, Vec<(String, String)>, String) {
    let ua = line.split_once("-A '").map(|(_, rest)| rest.split('\'').next().unwrap().to_owned());
    let headers = line
        .split("-H '")
        .skip(1)
        .filter_map(|h| h.split('\'').next()?.split_once(": ").map(|(k, v)| (k.to_owned(), v.to_owned())))
        .collect();
    let url = line.split_whitespace().last().unwrap().to_owned();
    (ua, headers, url)
}

#[test]
fn the_demo_does_what_it_prints() {
    let port = free_port();
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_robotgate"))
        .args(["demo", "--port", &port.to_string(), "--dir"])
        .arg(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut printed = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let mut line = String::new();
        if out.read_line(&mut line).unwrap() == 0 || Instant::now() > deadline {
            break;
        }
        let done = line.starts_with("Stop with");
        printed.push(line.trim_end().to_owned());
        if done {
            break;
        }
    }
    let text = printed.join("\n");
    assert!(text.contains("violations.jsonl"), "says where violations go:\n{text}");

    // Wait until the proxy answers.
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "demo did not listen");
        std::thread::sleep(Duration::from_millis(50));
    }

    let mut tried = 0;
    for (i, line) in printed.iter().enumerate() {
        let line = line.trim();
        if !line.starts_with("curl ") {
            continue;
        }
        let expect: u16 = printed[i + 1].trim().trim_start_matches("# ").split(':').next().unwrap().parse().unwrap();
        let (ua, extra, url) = parse_curl(line);
        let mut headers: Vec<(&str, &str)> = ua.as_deref().map(|u| vec![("User-Agent", u)]).unwrap_or_default();
        headers.extend(extra.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        // What curl itself sends besides (so that the helper adds no browser's headers).
        headers.push(("Accept", "*/*"));
        let r = get(&url, &headers);
        assert_eq!(r.status, expect, "{line}\n{}", r.body);
        tried += 1;
    }
    assert!(tried >= 6, "printed curl lines: {tried}\n{text}");
    // Issue #53: a phone whose model is CUBOT J9 is a person, as Firefox is.
    let cubot = "Mozilla/5.0 (Linux; Android 10; CUBOT J9) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Mobile Safari/537.36";
    let report = format!("http://127.0.0.1:{port}/private/report.html");
    assert_eq!(get(&report, &[("User-Agent", cubot)]).status, 200);
    // The three 403s were logged where the demo said, the disguised robot
    // among them.
    let lines = wait_lines(&dir.path().join("violations.jsonl"), 3);
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert!(lines.iter().any(|l| l.contains("\"category\":\"disguised\"")), "{lines:?}");

    let _ = Command::new("kill").arg(child.id().to_string()).status();
    let _ = child.wait();
}
