//! SIGTERM under load: every violation a client was answered for is in the
//! log once robotgate has exited.

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::*;

#[test]
fn clean_shutdown_under_load_loses_no_violation_record() {
    let origin = Origin::start();
    let config = format!(
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
log: {{ violations: {{dir}}/violations.jsonl, level: error }}
"#,
        origin.addr
    );
    let mut gate = Gate::start(&config, &[("robots.txt", b"User-agent: *\nDisallow: /private/\n")]);
    let stop = Arc::new(AtomicBool::new(false));
    let answered = Arc::new(AtomicUsize::new(0));
    let mut clients = Vec::new();
    for _ in 0..4 {
        let (stop, answered, url) = (stop.clone(), answered.clone(), gate.url("/private/x"));
        clients.push(std::thread::spawn(move || {
            let agent = ureq::AgentBuilder::new().timeout(Duration::from_secs(5)).build();
            while !stop.load(Ordering::Relaxed) {
                match agent.get(&url).set("User-Agent", GPTBOT).call() {
                    Err(ureq::Error::Status(403, _)) => {
                        answered.fetch_add(1, Ordering::SeqCst);
                    }
                    Ok(_) | Err(ureq::Error::Status(..)) => panic!("a blocked bot got through"),
                    Err(_) => break, // the listener has closed
                }
            }
        }));
    }
    std::thread::sleep(Duration::from_millis(1500));
    let status = gate.stop();
    stop.store(true, Ordering::Relaxed);
    for c in clients {
        c.join().unwrap();
    }
    assert!(status.success(), "exit status {status:?}\n{}", gate.stderr());
    let answered = answered.load(Ordering::SeqCst);
    let text = std::fs::read_to_string(gate.path("violations.jsonl")).unwrap();
    let parsed: Vec<serde_json::Value> = text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    assert_eq!(parsed.len(), text.lines().count(), "every line is a whole JSON record");
    // Repeats are aggregated: each record counts the violations it stands for.
    let counted: u64 = parsed.iter().map(|r| r["count"].as_u64().unwrap()).sum();
    println!("shutdown under load: {answered} blocked requests answered, {} records counting {counted}", parsed.len());
    assert!(answered > 100, "the load ran: {answered}");
    assert!(counted >= answered as u64, "counted {counted} < answered {answered}");
}
