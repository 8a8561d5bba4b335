//! Compile a robots.txt and query it with an arbitrary agent and path.
//!
//! The input is split at the first two NUL bytes: robots.txt, agent, path.
//! Run: `cargo +nightly fuzz run match_path`
#![no_main]

use libfuzzer_sys::fuzz_target;
use robotgate::robots::RobotsTxt;

fuzz_target!(|data: &[u8]| {
    let mut parts = data.splitn(3, |&b| b == 0);
    let robots = parts.next().unwrap_or_default();
    let agent = String::from_utf8_lossy(parts.next().unwrap_or_default()).into_owned();
    let path = parts.next().unwrap_or_default();
    let compiled = RobotsTxt::compile(robots);
    let google = compiled.allows(&agent, &String::from_utf8_lossy(path));
    let selection = compiled.select(&[agent.as_str(), "Googlebot"]);
    let proxy = compiled.check(&selection, path);
    // A verdict that names a rule must name one of the file's rules.
    for verdict in [google, proxy] {
        if let Some(rule) = verdict.rule {
            assert!(compiled.rules().iter().any(|r| std::ptr::eq(r, rule)));
        }
    }
});
