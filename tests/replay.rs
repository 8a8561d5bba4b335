//! Issue #21 against the real binary: `robotgate replay` finds exactly the
//! violations planted in a generated access log (with their lines and
//! counts), agrees with `robotgate serve` on the same requests, and reads
//! hostile logs (broken lines, truncated gzip, bytes that are not UTF-8, a
//! 64 KiB User-Agent) without panicking, saying what it skipped.

mod common;

use std::collections::BTreeSet;
use std::io::Write;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Output};

use common::dns_server::{Answer, Server as Dns};
use common::{get, wait_lines, Gate, Origin, AHREFS, CHROME, FIREFOX, GOOGLEBOT, GPTBOT};

/// Line numbers matter: records and findings point at them.
const ROBOTS: &str = "\
User-agent: *
Disallow: /private/
Disallow: /*.js$

User-agent: AhrefsBot
Crawl-delay: 10
Disallow: /secret/

User-agent: GPTBot
Disallow: /

Sitemap: https://shop.example/private/sitemap.xml
";

/// Googlebot's own address (Google's common-crawlers feed), GPTBot's (OpenAI's feed).
const GOOGLE_IP: &str = "66.249.66.1";
const OPENAI_IP: &str = "132.196.86.1";
/// Outside every feed, with a reverse DNS name outside Google's suffixes.
const FAKE_GOOGLE_IP: &str = "203.0.113.66";

fn config(dns: SocketAddr, upstream: SocketAddr) -> String {
    format!(
        "listen: [\"127.0.0.1:{{port}}\"]\ntrusted_proxies: [\"127.0.0.1/32\"]\nsites:\n  - name: shop\n    hosts: [\"127.0.0.1\", \"localhost\"]\n    default: true\n    upstream: \"{upstream}\"\n    robots: {{dir}}/robots.txt\nlog:\n  violations: {{dir}}/violations.jsonl\n  aggregate_window: 0\nverify:\n  dns: {{ nameservers: [\"{dns}\"], timeout_ms: 1000 }}\n"
    )
}

/// One combined-format line, `second` seconds after 2026-11-23 10:00:00 UTC.
fn line(client: &str, second: u32, target: &str, status: u16, ua: &str) -> String {
    let (m, s) = (second / 60, second % 60);
    format!("{client} - - [23/Nov/2026:10:{m:02}:{s:02} +0000] \"GET {target} HTTP/1.1\" {status} 512 \"-\" \"{ua}\"\n")
}

/// A violation as both paths report it: (client, bot, path, rule line, action).
type Found = (String, String, String, Option<u64>, String);

fn found(records: &str) -> BTreeSet<Found> {
    records
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"));
            assert_eq!(v["count"], 1, "one record per violation (aggregation off): {l}");
            let s = |k: &str| v[k].as_str().unwrap_or_default().to_owned();
            (s("client"), s("bot"), s("path"), v["line"].as_u64(), s("action"))
        })
        .collect()
}

fn replay(dir: &Path, args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_robotgate"))
        .arg("replay")
        .arg("--config")
        .arg(dir.join("robotgate.yaml"))
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "replay failed: {}", String::from_utf8_lossy(&out.stderr));
    out
}

/// Writes the config (with `{dir}` filled in) and robots.txt into `dir`.
fn setup(dir: &Path, dns: SocketAddr) {
    let text =
        config(dns, "127.0.0.1:1".parse().unwrap()).replace("{dir}", dir.to_str().unwrap()).replace("{port}", "8080");
    std::fs::write(dir.join("robotgate.yaml"), text).unwrap();
    std::fs::write(dir.join("robots.txt"), ROBOTS).unwrap();
}

fn fake_google_ptr() -> Dns {
    Dns::answering(&[("66.113.0.203.in-addr.arpa", Answer::Ptr(vec!["crawl-66", "evil", "example"]))])
}

#[test]
fn replay_finds_exactly_the_planted_violations() {
    let dns = fake_google_ptr();
    let dir = tempfile::tempdir().unwrap();
    setup(dir.path(), dns.addr);
    let mut log = String::new();
    // Browsers, anywhere: never violations.
    log += &line("192.0.2.10", 0, "/", 200, FIREFOX);
    log += &line("192.0.2.10", 1, "/private/a", 200, FIREFOX);
    log += &line("192.0.2.11", 2, "/app.js", 200, CHROME);
    // Googlebot from Google: reads robots.txt, crawls, and is served a
    // script and the sitemap this robots.txt would refuse (collateral).
    log += &line(GOOGLE_IP, 3, "/robots.txt", 200, GOOGLEBOT);
    log += &line(GOOGLE_IP, 4, "/shoes", 200, GOOGLEBOT);
    log += &line(GOOGLE_IP, 5, "/static/app.js", 200, GOOGLEBOT);
    log += &line(GOOGLE_IP, 6, "/private/sitemap.xml", 200, GOOGLEBOT);
    // Googlebot's User-Agent from elsewhere.
    log += &line(FAKE_GOOGLE_IP, 7, "/shoes", 200, GOOGLEBOT);
    // A crawl-delay breaker, one second apart, then a disallowed path.
    log += &line("198.51.100.7", 10, "/a", 200, AHREFS);
    log += &line("198.51.100.7", 11, "/b", 200, AHREFS);
    log += &line("198.51.100.7", 12, "/c", 200, AHREFS);
    log += &line("198.51.100.7", 40, "/secret/x", 200, AHREFS);
    // GPTBot from OpenAI, where robots.txt says no.
    log += &line(OPENAI_IP, 41, "/shoes", 200, GPTBOT);
    log += "this is not a log line\n";
    std::fs::write(dir.path().join("access.log"), &log).unwrap();

    let want: BTreeSet<Found> = [
        (GOOGLE_IP, "Googlebot", "/static/app.js", Some(3), "block"),
        (GOOGLE_IP, "Googlebot", "/private/sitemap.xml", Some(2), "block"),
        (FAKE_GOOGLE_IP, "Googlebot", "/shoes", None, "block"),
        ("198.51.100.7", "AhrefsBot", "/b", Some(6), "rate-limit"),
        ("198.51.100.7", "AhrefsBot", "/c", Some(6), "rate-limit"),
        ("198.51.100.7", "AhrefsBot", "/secret/x", Some(7), "block"),
        (OPENAI_IP, "GPTBot", "/shoes", Some(10), "block"),
    ]
    .into_iter()
    .map(|(c, b, p, l, a)| (c.to_owned(), b.to_owned(), p.to_owned(), l, a.to_owned()))
    .collect();
    let log_path = dir.path().join("access.log");
    for threads in ["1", "2"] {
        let report_path = dir.path().join(format!("report-{threads}.json"));
        let out = replay(
            dir.path(),
            &[
                "--dns",
                "--threads",
                threads,
                "--emit",
                "violations",
                "--output",
                "json",
                "--out",
                report_path.to_str().unwrap(),
                log_path.to_str().unwrap(),
            ],
        );
        let stdout = String::from_utf8(out.stdout).unwrap();
        assert_eq!(found(&stdout), want, "threads {threads}:\n{stdout}");
        // The spoofed claim says so.
        assert!(stdout.lines().any(|l| l.contains("\"spoofed-identity\"") && l.contains(FAKE_GOOGLE_IP)));

        let report: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&report_path).unwrap()).unwrap();
        assert_eq!(report["violations"], 7);
        let site = &report["replay"]["sites"][0];
        assert_eq!(site["requests"], 13, "{site}");
        assert_eq!(site["browsers"], 3);
        let bot = |name: &str| site["bots"].as_array().unwrap().iter().find(|b| b["bot"] == name).unwrap().clone();
        let google = bot("Googlebot");
        assert_eq!((google["requests"].as_u64(), google["robots_fetches"].as_u64()), (Some(5), Some(1)));
        // The robots.txt fetch is checked too (issue #39: a read counts for
        // the robot only when it is the robot): it came from Google's ranges.
        assert_eq!((google["verified"].as_u64(), google["spoofed"].as_u64()), (Some(4), Some(1)));
        let ahrefs = bot("AhrefsBot");
        assert_eq!((ahrefs["requests"].as_u64(), ahrefs["violations"].as_u64()), (Some(4), Some(3)));
        assert_eq!(ahrefs["robots_fetches"], 0);
        // Collateral: the script and the sitemap refused to a verified
        // Googlebot, each linked to lint; GPTBot's refusal is not collateral.
        let collateral = site["collateral"].as_array().unwrap();
        let kinds: BTreeSet<(u64, String)> =
            collateral.iter().map(|c| (c["line"].as_u64().unwrap(), c["kind"].as_str().unwrap().to_owned())).collect();
        assert_eq!(kinds, BTreeSet::from([(2, "sitemap".to_owned()), (3, "render-resource".to_owned())]));
        for c in collateral {
            let lint = c["lint"].as_array().unwrap();
            let want = if c["line"] == 2 { "disallow-sitemap" } else { "disallow-render-resources" };
            assert!(lint.iter().any(|l| l.as_str().unwrap().starts_with(want)), "{c}");
        }
        assert_eq!(report["malformed"]["count"], 1);
        assert_eq!(report["malformed"]["samples"][0]["line"], 14);
    }
    // Without --dns, nothing is looked up, and the fake Googlebot is spoofed
    // all the same: Google's lists are complete (issue #39; it was only
    // unverifiable before).
    let asked = dns.count();
    let out = replay(dir.path(), &["--emit", "violations", log_path.to_str().unwrap()]);
    assert_eq!(dns.count(), asked, "no DNS without --dns");
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.lines().any(|l| l.contains("\"spoofed-identity\"") && l.contains(FAKE_GOOGLE_IP)), "{stdout}");
}

#[test]
fn replay_and_serve_agree_on_the_same_requests() {
    // No Crawl-delay here: live requests cannot be sent at the log's pace.
    let robots = ROBOTS.replace("Crawl-delay: 10\n", "");
    let dns = fake_google_ptr();
    let origin = Origin::start();
    let mut gate = Gate::start(&config(dns.addr, origin.addr), &[("robots.txt", robots.as_bytes())]);
    let requests: Vec<(&str, &str, &str)> = vec![
        ("192.0.2.10", "/private/a", FIREFOX),
        (GOOGLE_IP, "/robots.txt", GOOGLEBOT),
        (GOOGLE_IP, "/shoes", GOOGLEBOT),
        (GOOGLE_IP, "/static/app.js", GOOGLEBOT),
        (GOOGLE_IP, "/private/sitemap.xml", GOOGLEBOT),
        ("198.51.100.7", "/a", AHREFS),
        ("198.51.100.7", "/secret/x", AHREFS),
        ("198.51.100.7", "/%73ecret/y", AHREFS),
        ("198.51.100.8", "//secret//b", AHREFS),
        (OPENAI_IP, "/", GPTBOT),
        ("203.0.113.70", "/private/a", GPTBOT),
    ];
    let mut log = String::new();
    for (i, (client, path, ua)) in requests.iter().enumerate() {
        let r = get(&gate.url(path), &[("user-agent", ua), ("x-forwarded-for", client)]);
        // What the origin would have logged had robotgate not been there.
        log += &line(client, i as u32, path, 200, ua);
        assert!(r.status == 200 || r.status == 403, "{path}: {}", r.status);
    }
    let live = wait_lines(&gate.path("violations.jsonl"), 7).join("\n");
    gate.stop();
    let live = found(&live);
    assert_eq!(live.len(), 7, "{live:?}");

    std::fs::write(gate.path("access.log"), &log).unwrap();
    let replayed =
        replay(gate.dir.path(), &["--dns", "--emit", "violations", gate.path("access.log").to_str().unwrap()]);
    assert_eq!(found(&String::from_utf8(replayed.stdout).unwrap()), live, "one set of requests, one answer");
}

#[test]
fn hostile_logs_are_read_without_panic_and_skips_are_reported() {
    let dns = fake_google_ptr();
    let dir = tempfile::tempdir().unwrap();
    setup(dir.path(), dns.addr);
    let mut log: Vec<u8> = Vec::new();
    log.extend_from_slice(line(OPENAI_IP, 0, "/x", 200, GPTBOT).as_bytes());
    log.extend_from_slice(
        b"192.0.2.1 - - [23/Nov/2026:10:00:01 +0000] \"GET /\xff\xfe HTTP/1.1\" 200 1 \"-\" \"caf\xe9 bot\"\n",
    );
    log.extend_from_slice(b"\x00\x01\x02 not a line\n");
    log.extend_from_slice(
        b"192.0.2.2 - - [23/Nov/2026:10:00:02 +0000] \"GET /unterminated HTTP/1.1\" 200 1 \"-\" \"curl\n",
    );
    let huge_ua = format!("Mozilla/5.0 (compatible; {}Bot/1.0)", "A".repeat(64 * 1024));
    log.extend_from_slice(line("192.0.2.3", 3, "/private/z", 200, &huge_ua).as_bytes());
    log.extend_from_slice(line(OPENAI_IP, 4, "/y", 200, GPTBOT).as_bytes());
    // Plain, and gzip cut off half-way.
    std::fs::write(dir.path().join("plain.log"), &log).unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&log.repeat(50)).unwrap();
    let gz = gz.finish().unwrap();
    std::fs::write(dir.path().join("cut.log.gz"), &gz[..gz.len() / 2]).unwrap();

    let report_path = dir.path().join("report.json");
    let out = Command::new(env!("CARGO_BIN_EXE_robotgate"))
        .args(["replay", "--config"])
        .arg(dir.path().join("robotgate.yaml"))
        .args(["--format", "combined", "--output", "json", "--out"])
        .arg(&report_path)
        .arg(dir.path().join("plain.log"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&report_path).unwrap()).unwrap();
    let lines: Vec<u64> =
        report["malformed"]["samples"].as_array().unwrap().iter().map(|s| s["line"].as_u64().unwrap()).collect();
    assert_eq!(lines, [3, 4], "the binary line and the unterminated quote");
    let site = &report["replay"]["sites"][0];
    assert_eq!(site["requests"], 4, "{site}");
    // The 64 KiB robot broke a rule, and its record says so.
    assert!(report["violations"].as_u64().unwrap() >= 3, "{report}");

    // The truncated gzip, after a good log: what was read counts, the cut
    // is reported as the file's last skipped line, and the replay goes on.
    let out = Command::new(env!("CARGO_BIN_EXE_robotgate"))
        .args(["replay", "--config"])
        .arg(dir.path().join("robotgate.yaml"))
        .args(["--format", "combined", "--output", "json", "--out"])
        .arg(&report_path)
        .arg(dir.path().join("cut.log.gz"))
        .arg(dir.path().join("plain.log"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let report: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&report_path).unwrap()).unwrap();
    let cut = &report["replay"]["unreadable"];
    assert_eq!(cut.as_array().unwrap().len(), 1, "{cut}");
    assert!(cut[0]["source"].as_str().unwrap().ends_with("cut.log.gz"), "{cut}");
    assert!(stderr.contains("cut.log.gz") && stderr.contains("read error"), "{stderr}");
    let read_before_cut = report["replay"]["sites"][0]["requests"].as_u64().unwrap();
    assert!(read_before_cut > 4, "lines before the cut count, and plain.log after it: {read_before_cut}");
}

/// Issue #40: replay judges traps as the proxy does, by the log's clock. A
/// trap armed by then (the traps' state file says it was first served long
/// ago) bans a scraper that fetches it; its later lines are `banned` until
/// the ban ends; a verified Googlebot that fetches it gets the site's action
/// and is never banned.
#[test]
fn replay_judges_traps_and_their_bans_by_the_logs_clock() {
    let dns = fake_google_ptr();
    let dir = tempfile::tempdir().unwrap();
    setup(dir.path(), dns.addr);
    let cfg = std::fs::read_to_string(dir.path().join("robotgate.yaml")).unwrap();
    let cfg = cfg.replace("    robots: ", "    traps: { paths: [\"/trap/\"], ban: 60 }\n    robots: ");
    std::fs::write(dir.path().join("robotgate.yaml"), cfg).unwrap();
    std::fs::write(dir.path().join("robotgate-traps.json"), "{\"shop\\t/trap/\": 1000}").unwrap();
    const SCRAPER: &str = "198.51.100.20";
    let log = [
        line(SCRAPER, 0, "/page", 200, FIREFOX),
        line(SCRAPER, 1, "/trap/x", 200, FIREFOX),
        line(SCRAPER, 2, "/page", 200, FIREFOX),
        line(SCRAPER, 62, "/page", 200, FIREFOX), // the ban (60 s) is over
        line(GOOGLE_IP, 3, "/trap/y", 200, GOOGLEBOT),
        line(GOOGLE_IP, 4, "/shoes", 200, GOOGLEBOT),
    ]
    .concat();
    std::fs::write(dir.path().join("access.log"), log).unwrap();
    let out = replay(dir.path(), &["--emit", "violations", dir.path().join("access.log").to_str().unwrap()]);
    let stdout = String::from_utf8(out.stdout).unwrap();
    let recs: Vec<serde_json::Value> =
        stdout.lines().filter(|l| l.starts_with('{')).map(|l| serde_json::from_str(l).unwrap()).collect();
    let of = |client: &str| -> Vec<(String, String, u64)> {
        recs.iter()
            .filter(|r| r["client"] == client)
            .map(|r| {
                let s = |k: &str| r[k].as_str().unwrap_or_default().to_owned();
                (s("path"), s("directive"), r["status"].as_u64().unwrap_or(0))
            })
            .collect()
    };
    assert_eq!(
        of(SCRAPER),
        [("/trap/x".to_owned(), "trap".to_owned(), 403), ("/page".to_owned(), "banned".to_owned(), 403)],
        "{stdout}"
    );
    let google = of(GOOGLE_IP);
    assert_eq!(google.len(), 1, "{stdout}");
    assert_eq!((google[0].0.as_str(), google[0].1.as_str(), google[0].2), ("/trap/y", "trap", 403));
    let g = recs.iter().find(|r| r["client"] == GOOGLE_IP).unwrap();
    assert_eq!(g["identity"].as_str(), Some("verified"), "{g}");
}
