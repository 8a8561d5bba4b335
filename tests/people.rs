//! People are not robots: real browser User-Agents from public sources,
//! through the real `robotgate classify` process. Each must come out a
//! browser; a browser taken for a robot is judged by the `*` group of
//! robots.txt and refused where it matters (cart, checkout, account).
//!
//! The strings and where they come from are in `tests/data/agent/people.txt`.

use std::io::Write;
use std::process::{Command, Stdio};

const PEOPLE: &str = include_str!("data/agent/people.txt");

/// The User-Agents of `people.txt` with their section (the comment line
/// above them), skipping blank lines and comments.
fn people() -> Vec<(&'static str, &'static str)> {
    let mut section = "";
    let mut out = Vec::new();
    for line in PEOPLE.lines() {
        if let Some(title) = line.strip_prefix("## ") {
            section = title;
        } else if !line.trim().is_empty() && !line.starts_with('#') {
            out.push((section, line));
        }
    }
    out
}

#[test]
fn every_collected_browser_is_a_browser() {
    let people = people();
    assert!(people.len() >= 100, "the set holds {} strings", people.len());
    let mut child = Command::new(env!("CARGO_BIN_EXE_robotgate"))
        .arg("classify")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("robotgate runs");
    let input: String = people.iter().map(|(_, ua)| format!("{ua}\n")).collect();
    child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let lines: Vec<serde_json::Value> =
        String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), people.len());
    let robots: Vec<String> = people
        .iter()
        .zip(&lines)
        .filter(|(_, l)| l["is_bot"] != false)
        .map(|((section, ua), l)| format!("{section}: {ua} -> {} {}", l["kind"], l["name"]))
        .collect();
    assert!(robots.is_empty(), "{} people taken for robots:\n{}", robots.len(), robots.join("\n"));
    for ((_, ua), l) in people.iter().zip(&lines) {
        assert_eq!(l["user_agent"], *ua);
    }
}

#[test]
fn the_set_covers_every_kind_of_browser() {
    let sections: Vec<&str> = people().iter().map(|(s, _)| *s).collect();
    for kind in [
        "regional",
        "messenger",
        "alternative engine",
        "text-mode",
        "TV",
        "console",
        "e-reader",
        "car",
        "app shell",
        "feature phone",
        "Internet Explorer",
        "current",
    ] {
        assert!(sections.iter().any(|s| s.contains(kind)), "no section for {kind}");
    }
}
