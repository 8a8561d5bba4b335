//! Issue #68, through the real `robotgate classify` process: a robot that
//! says it is one is held to robots.txt (strong evidence, refused by
//! default); people's software is a person or weak evidence at most (only
//! recorded by default).
//!
//! The robots' strings are the ones their operators or projects publish (the
//! source is beside each group); the people's strings are written in the
//! forms their platforms document, with made-up app names of the shapes
//! issue #68 describes. None comes from another parser's test data.

use std::io::Write;
use std::process::{Command, Stdio};

/// `robotgate classify` over `uas`, one JSON object per User-Agent.
fn classify(uas: &[&str]) -> Vec<serde_json::Value> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_robotgate"))
        .arg("classify")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("robotgate runs");
    let input: String = uas.iter().map(|ua| format!("{ua}\n")).collect();
    child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let lines: Vec<serde_json::Value> =
        String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), uas.len());
    lines
}

/// Robots' own published User-Agents: each must be a robot on strong
/// evidence.
const ROBOTS: &[&str] = &[
    // Prometheus's scraper sends `Prometheus/<version>` (prometheus.io,
    // "Configuration": the scrape request's User-Agent).
    "Prometheus/2.51.0",
    // Grafana's data-source proxy: `Grafana/<version>` (grafana.com docs,
    // "Data source proxy").
    "Grafana/11.2.0",
    // The Blackbox exporter's probes (prometheus/blackbox_exporter README).
    "Blackbox Exporter/0.25.0",
    // Reactor Netty's default client User-Agent: `ReactorNetty/<version>`
    // (projectreactor.io, "HTTP Client").
    "ReactorNetty/1.1.13",
    // Google's special-case and user-triggered agents as Google lists them
    // (developers.google.com/search/docs/crawling-indexing, "Google's
    // common, special-case and user-triggered fetchers").
    "GoogleOther",
    "Google-Site-Verification/1.0",
    "FeedFetcher-Google; (+http://www.google.com/feedfetcher.html)",
    "APIs-Google (+https://developers.google.com/webmasters/APIs-Google.html)",
    "Mozilla/5.0 (compatible; Google-InspectionTool/1.0)",
    // Microsoft's link preview (bing.com/webmasters/help, "Which crawlers
    // does Bing use").
    "MicrosoftPreview/2.0 (+https://aka.ms/MicrosoftPreview)",
    // Slack's link expander (api.slack.com/robots).
    "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)",
    // HTTP libraries and download tools, as their projects document their
    // default User-Agent.
    "Go-http-client/2.0",
    "curl/8.5.0",
    "Wget/1.21.4",
    "aria2/1.37.0",
    "axios/1.6.7",
];

/// People's software in the shapes issue #68 names (made-up app names):
/// each must be a browser, an app, or a robot on weak evidence, never one
/// refused by default.
const PEOPLE: &[&str] = &[
    // An app's token after Android WebView's whole string (Chrome's
    // documented WebView shape, `; wv` and `Version/4.0 Chrome/`).
    "Mozilla/5.0 (Linux; Android 13; SM-A536B Build/TP1A.220624.014; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/120.0.6099.144 Mobile Safari/537.36 Seekr/4.2",
    "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/120.0.0.0 Mobile Safari/537.36 QuuxSeekBot/4.2",
    // A podcast app that names itself with its build and platform.
    "PocketCasts/7.57 build 9312/Android 29",
    "Quux Podcast Spider/1.2 build 345/Android 29",
    // A television whose firmware misspells its platform, and a model name
    // with robot words.
    "Mozilla/5.0 (Linux; Andr0id 9; SpiderBot TV 55) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/87.0.4280.101 Safari/537.36",
    "Mozilla/5.0 (Linux; U; Andriod 4.4.2; Crawler X1 Build/KOT49H) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/30.0.0.0 Safari/537.36",
    // An iOS app's WKWebView with the app's token where Safari's stands.
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_2 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 QuuxCrawlerApp/3.0",
    // A media player and an app on a phone.
    "Quux Player/4.1",
    "Quux/1.2 iOS/17.2",
];

#[test]
fn issue_68_published_robots_are_held_on_strong_evidence() {
    let lines = classify(ROBOTS);
    let weak: Vec<String> = ROBOTS
        .iter()
        .zip(&lines)
        .filter(|(_, l)| l["is_bot"] != true || l["evidence"]["strength"] != "strong")
        .map(|(ua, l)| format!("{ua} -> is_bot {} {}", l["is_bot"], l["evidence"]))
        .collect();
    assert!(weak.is_empty(), "{} robots not held:\n{}", weak.len(), weak.join("\n"));
}

#[test]
fn issue_68_peoples_software_is_weak_at_most() {
    let lines = classify(PEOPLE);
    let refused: Vec<String> = PEOPLE
        .iter()
        .zip(&lines)
        .filter(|(_, l)| l["is_bot"] == true && l["evidence"]["strength"] != "weak")
        .map(|(ua, l)| format!("{ua} -> {} {}", l["name"], l["evidence"]))
        .collect();
    assert!(refused.is_empty(), "{} people refused by default:\n{}", refused.len(), refused.join("\n"));
}
