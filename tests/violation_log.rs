//! The violation log under a flood (issue #19): repeats are aggregated and
//! counted, rotation by SIGUSR1 loses or splits no line, hostile input stays
//! one JSON line. Every check sums `count`, which must equal the violations.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::*;

fn config(origin: &Origin, log_extra: &str) -> String {
    format!(
        r#"
listen: ["127.0.0.1:{{port}}"]
threads: 2
grace_period: 1
sites:
  - hosts: ["127.0.0.1"]
    default: true
    upstream: "{}"
    robots: {{dir}}/robots.txt
verify:
  feeds: "{{dir}}/feeds"
  dns: {{ nameservers: ["127.0.0.1:9"], timeout_ms: 300 }}
log:
  violations: {{dir}}/violations.jsonl
  level: error
{log_extra}
"#,
        origin.addr
    )
}

const ROBOTS: &[u8] = b"User-agent: *\nDisallow: /private/\n";

/// Every line of `path` as JSON (panics on a line that is not).
fn records(path: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    assert!(text.is_empty() || text.ends_with('\n'), "the file ends with a whole line");
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not one JSON record ({e}): {l:?}")))
        .collect()
}

fn sum_counts(records: &[serde_json::Value]) -> u64 {
    records.iter().map(|r| r["count"].as_u64().expect("every line has a count")).sum()
}

/// `total` blocked GPTBot requests from `threads` keep-alive clients;
/// `during(n)` runs on the caller's thread as the count passes `n`. Returns
/// the number answered 403.
fn flood(gate: &Gate, total: usize, threads: usize, at: usize, during: impl FnOnce()) -> usize {
    let sent = Arc::new(AtomicUsize::new(0));
    let refused = Arc::new(AtomicUsize::new(0));
    let clients: Vec<_> = (0..threads)
        .map(|i| {
            let (sent, refused, url) = (sent.clone(), refused.clone(), gate.url(&format!("/private/{i}")));
            std::thread::spawn(move || {
                let agent = ureq::AgentBuilder::new().timeout(Duration::from_secs(10)).build();
                while sent.fetch_add(1, Ordering::SeqCst) < total {
                    match agent.get(&url).set("User-Agent", GPTBOT).call() {
                        Err(ureq::Error::Status(403, _)) => {
                            refused.fetch_add(1, Ordering::SeqCst);
                        }
                        other => panic!("a blocked bot was not refused: {:?}", other.map(|r| r.status())),
                    }
                }
            })
        })
        .collect();
    while refused.load(Ordering::SeqCst) < at {
        std::thread::sleep(Duration::from_millis(5));
    }
    during();
    for c in clients {
        c.join().unwrap();
    }
    refused.load(Ordering::SeqCst)
}

#[test]
fn issue_19_a_flood_from_one_bot_is_a_few_records_whose_counts_sum_to_the_flood() {
    let origin = Origin::start();
    let mut gate = Gate::start(&config(&origin, ""), &[("robots.txt", ROBOTS)]);
    let n = 2_000;
    let refused = flood(&gate, n, 4, 1, || {});
    assert_eq!(refused, n);
    // The first line is written at once, before any window closes.
    let first = wait_lines(&gate.path("violations.jsonl"), 1);
    let v: serde_json::Value = serde_json::from_str(&first[0]).unwrap();
    assert_eq!(v["count"], 1);
    assert!(v.get("first").is_none(), "a single violation has no first/last");
    let status = gate.stop();
    assert!(status.success(), "{}", gate.stderr());
    let recs = records(&gate.path("violations.jsonl"));
    println!("{n} violations -> {} records", recs.len());
    assert!(recs.len() <= 4, "one rule, one bot, one client: {recs:#?}");
    assert_eq!(sum_counts(&recs), n as u64, "summed counts equal the violations");
    let last = recs.last().unwrap();
    assert!(last["count"].as_u64().unwrap() > 1, "{last}");
    assert!(last["first"].as_str().unwrap() <= last["last"].as_str().unwrap());
    assert_eq!(last["last"], last["time"]);
    assert_eq!(last["line"], 2);
    assert_eq!(last["bot"], "GPTBot");
}

#[test]
fn aggregate_window_0_writes_every_violation_on_its_own_line() {
    let origin = Origin::start();
    let mut gate = Gate::start(&config(&origin, "  aggregate_window: 0"), &[("robots.txt", ROBOTS)]);
    let n = 300;
    assert_eq!(flood(&gate, n, 2, 1, || {}), n);
    assert!(gate.stop().success(), "{}", gate.stderr());
    let recs = records(&gate.path("violations.jsonl"));
    assert_eq!(recs.len(), n);
    assert!(recs.iter().all(|r| r["count"] == 1 && r.get("first").is_none()));
}

#[test]
fn sigusr1_reopens_the_file_under_load_without_losing_or_splitting_a_line() {
    let origin = Origin::start();
    // Unaggregated, so the writer is busy with many lines when the signal comes.
    let mut gate = Gate::start(&config(&origin, "  aggregate_window: 0"), &[("robots.txt", ROBOTS)]);
    let (live, rotated) = (gate.path("violations.jsonl"), gate.path("violations.jsonl.1"));
    // Clients keep sending until told to stop; the rename and the signal
    // come in the middle, and the load goes on until the new file has lines.
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let refused = Arc::new(AtomicUsize::new(0));
    let clients: Vec<_> = (0..4)
        .map(|i| {
            let (stop, refused, url) = (stop.clone(), refused.clone(), gate.url(&format!("/private/{i}")));
            std::thread::spawn(move || {
                let agent = ureq::AgentBuilder::new().timeout(Duration::from_secs(10)).build();
                // Bounded even if the writer never reopened.
                for _ in 0..50_000 {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    match agent.get(&url).set("User-Agent", GPTBOT).call() {
                        Err(ureq::Error::Status(403, _)) => {
                            refused.fetch_add(1, Ordering::SeqCst);
                        }
                        other => panic!("a blocked bot was not refused: {:?}", other.map(|r| r.status())),
                    }
                }
            })
        })
        .collect();
    let wait_for = |what: &dyn Fn() -> bool| {
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while !what() && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
    };
    wait_for(&|| refused.load(Ordering::SeqCst) >= 1_000);
    std::fs::rename(&live, &rotated).unwrap();
    gate.signal("USR1");
    let at_signal = refused.load(Ordering::SeqCst);
    wait_for(&|| std::fs::metadata(&live).is_ok_and(|m| m.len() > 0));
    let at_reopen = refused.load(Ordering::SeqCst);
    wait_for(&|| refused.load(Ordering::SeqCst) >= at_reopen + 1_000);
    stop.store(true, Ordering::SeqCst);
    for c in clients {
        c.join().unwrap();
    }
    let n = refused.load(Ordering::SeqCst);
    println!("rotation under load: signal after {at_signal} refusals, new file written after {at_reopen}, {n} in all");
    assert!(gate.stop().success(), "{}", gate.stderr());
    let (old, new) = (records(&rotated), records(&live));
    println!("rotation under load: {} lines before, {} after", old.len(), new.len());
    assert!(!old.is_empty() && !new.is_empty(), "both files were written: {} / {}", old.len(), new.len());
    assert_eq!(sum_counts(&old) + sum_counts(&new), n as u64, "no violation lost or counted twice");
}

#[test]
fn a_hostile_user_agent_stays_one_json_line_when_aggregated() {
    let origin = Origin::start();
    let mut gate = Gate::start(&config(&origin, ""), &[("robots.txt", ROBOTS)]);
    // Quotes, backslashes, a JSON look-alike, a tab, U+2028/U+2029 (line
    // separators to some readers) and bytes that are not UTF-8. (A raw CR or
    // LF would end the header line; Pingora answers obs-fold with 400.)
    let mut ua = b"EvilBot/1.0 \"}\n{\\\"count\\\": 999} \\\" \t\xe2\x80\xa8\xe2\x80\xa9 ".to_vec();
    ua.retain(|b| *b != b'\n');
    ua.extend_from_slice(b"\xff\xfe");
    let n = 20;
    for _ in 0..n {
        let mut req = b"GET /private/%0d%0a%22x HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: ".to_vec();
        req.extend_from_slice(&ua);
        req.extend_from_slice(b"\r\nConnection: close\r\n\r\n");
        let mut s = TcpStream::connect(("127.0.0.1", gate.port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.write_all(&req).unwrap();
        let mut answer = Vec::new();
        let _ = s.read_to_end(&mut answer);
        assert!(answer.starts_with(b"HTTP/1.1 403"), "{}", String::from_utf8_lossy(&answer));
    }
    assert!(gate.stop().success(), "{}", gate.stderr());
    let recs = records(&gate.path("violations.jsonl"));
    assert!(recs.len() <= 2, "{recs:#?}");
    assert_eq!(sum_counts(&recs), n);
    for r in &recs {
        let got = r["user_agent"].as_str().unwrap();
        assert!(got.starts_with("EvilBot/1.0 \"}{\\\"count\\\": 999}"), "{got:?}");
        assert!(got.contains('\u{2028}') && got.ends_with("\u{fffd}\u{fffd}"), "{got:?}");
        assert_eq!(r["path"], "/private/%0d%0a%22x");
    }
}
