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

/// `robotgate classify` over `uas`, one JSON object per User-Agent.
fn classify<'a>(uas: impl Iterator<Item = &'a str>) -> Vec<serde_json::Value> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_robotgate"))
        .arg("classify")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("robotgate runs");
    let input: String = uas.map(|ua| format!("{ua}\n")).collect();
    child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn every_collected_browser_is_a_browser() {
    let people = people();
    assert!(people.len() >= 100, "the set holds {} strings", people.len());
    let lines = classify(people.iter().map(|(_, ua)| *ua));
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

mod common;

/// A site's robots.txt for issue #53: a private directory and a crawl delay
/// for every robot.
const ROBOTS_53: &str = "User-agent: *\nDisallow: /private/\nCrawl-delay: 10\n";

/// People whose User-Agents hold robot-ish words (a phone's model, an app's
/// name) and robots that hide in a browser's string (issue #53).
const PEOPLE_53: &[&str] = &[
    // A phone whose model is CUBOT J9 (no `Build/` after it).
    "Mozilla/5.0 (Linux; Android 10; CUBOT J9) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Mobile Safari/537.36",
    // Ladybird, as its source writes its User-Agent.
    "Mozilla/5.0 (Linux; x86_64) LibWeb+LibJS/1.0 Ladybird/1.0",
    // Notion's desktop app on Electron.
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Notion/2.0.8 Chrome/91.0.4472.164 Electron/13.6.3 Safari/537.36",
    // Apple's Podcasts app.
    "Podcasts/1555.2.1 CFNetwork/1237 Darwin/20.4.0",
];

const ROBOTS_HIDING_53: &[&str] = &[
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36 CloudflareObservatory/1.0",
    "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko; Google-Assess) Chrome/125.0.0.0 Mobile Safari/537.36",
    "Newsboat/2.29.0 (Linux x86_64)",
];

#[test]
fn issue_53_people_with_robotish_words_pass_the_proxy_and_hiding_robots_do_not() {
    let origin = common::Origin::start();
    let upstream = format!("\"{}\"", origin.addr);
    let config = common::TestConfig { upstream: &upstream, ..common::TestConfig::default() }.render();
    let gate = common::Gate::start(&config, &[("robots.txt", ROBOTS_53.as_bytes())]);
    for ua in PEOPLE_53 {
        assert_eq!(common::get(&gate.url("/private/report.html"), &[("User-Agent", ua)]).status, 200, "{ua}");
        // Not paced under the crawl delay: three pages in a row.
        for page in ["/a", "/b", "/c"] {
            assert_eq!(common::get(&gate.url(page), &[("User-Agent", ua)]).status, 200, "{ua} {page}");
        }
    }
    for ua in ROBOTS_HIDING_53 {
        assert_eq!(common::get(&gate.url("/private/report.html"), &[("User-Agent", ua)]).status, 403, "{ua}");
    }
}

/// An unknown robot named only by a weak robot word (`mirror`), which a
/// person's software may carry too (issue #53).
const WEAK_53: &str = "MirrorSync/2.0 (Linux x86_64)";

#[test]
fn issue_53_a_robot_named_only_by_weak_evidence_is_recorded_not_refused() {
    let origin = common::Origin::start();
    let upstream = format!("\"{}\"", origin.addr);
    for (site, weak_status) in [("", 200), ("policy:\n  weak_evidence: enforce", 403)] {
        let config = common::TestConfig { upstream: &upstream, site, ..common::TestConfig::default() }.render();
        let gate = common::Gate::start(&config, &[("robots.txt", ROBOTS_53.as_bytes())]);
        let weak = |path: &str| common::get(&gate.url(path), &[("User-Agent", WEAK_53)]).status;
        assert_eq!(weak("/private/report.html"), weak_status, "{site:?}");
        // A known robot is held to the rule either way.
        let known = common::get(&gate.url("/private/report.html"), &[("User-Agent", common::GPTBOT)]);
        assert_eq!(known.status, 403, "{site:?}");
        // Not paced by default under the crawl delay; paced when enforced.
        let paced: Vec<u16> = ["/a", "/b"].iter().map(|p| weak(p)).collect();
        let expect = if weak_status == 200 { [200, 200] } else { [200, 429] };
        assert_eq!(paced, expect, "{site:?}");
        // Every refusal or not has its record; the weak robot's says so.
        let lines = common::wait_lines(&gate.path("violations.jsonl"), 2);
        let records: Vec<serde_json::Value> = lines.iter().map(|l| serde_json::from_str(l).unwrap()).collect();
        let mine = records.iter().find(|r| r["user_agent"] == WEAK_53 && r["path"] == "/private/report.html");
        let mine = mine.unwrap_or_else(|| panic!("no record of the weak robot: {lines:?}"));
        assert_eq!(mine["evidence"], "weak");
        assert_eq!(mine["action"], if weak_status == 200 { "log" } else { "block" });
        let gpt = records.iter().find(|r| r["user_agent"] == common::GPTBOT).expect("GPTBot's record");
        assert!(gpt.get("evidence").is_none(), "{gpt}");
    }
}

#[test]
fn issue_53_apps_are_people_with_a_kind_of_their_own() {
    let lines = classify(PEOPLE_53.iter().chain(ROBOTS_HIDING_53).copied());
    let kinds: Vec<(&str, &str, bool)> = lines
        .iter()
        .map(|l| (l["kind"].as_str().unwrap(), l["category"].as_str().unwrap(), l["is_bot"] == true))
        .collect();
    assert_eq!(
        kinds,
        [
            ("browser", "browser", false),
            ("browser", "browser", false),
            ("app", "app", false),
            ("app", "app", false),
            ("known", "monitor", true),
            ("known", "other-bot", true),
            ("known", "feed", true),
        ]
    );
    // A robot says why: its token, where it stands, and how it is known.
    assert_eq!(
        lines[4]["evidence"],
        serde_json::json!({"token": "CloudflareObservatory", "position": "product", "kind": "known", "strength": "strong"})
    );
    assert_eq!(lines[5]["evidence"]["position"], "comment");
    assert!(lines[0].get("evidence").is_none());
}
