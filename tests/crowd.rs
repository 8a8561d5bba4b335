//! Issue #27, part 4, against the real binary: when the set-up makes every
//! client look like one. The test client on 127.0.0.1 plays a load balancer
//! that robotgate was not told about (`trusted_proxies` empty): it sends
//! X-Forwarded-For, and every request comes from loopback.

mod common;

use std::time::Duration;

use common::{get, metric, wait_lines, within, Gate, Origin, FIREFOX};

const ROBOTS: &str = "User-agent: *\nDisallow: /private/\n";

fn config(origin: &Origin, trusted: &str) -> String {
    format!(
        r#"
listen: ["127.0.0.1:{{port}}"]
threads: 2
grace_period: 1
{trusted}
metrics: {{ listen: "127.0.0.1:{{metrics}}", status_page: true }}
sites:
  - name: s
    hosts: ["127.0.0.1", "localhost"]
    default: true
    upstream: "{}"
    robots: "{{dir}}/robots.txt"
    traps: {{ paths: ["/trap/"], arm_after: 0, ban: 600 }}
log:
  violations: "{{dir}}/violations.jsonl"
  aggregate_window: 0
  level: warn
"#,
        origin.addr
    )
}

fn browse(gate: &Gate, n: u8) {
    for i in 0..n {
        let xff = format!("203.0.113.{i}");
        let r = get(&gate.url(&format!("/page{i}")), &[("X-Forwarded-For", &xff), ("User-Agent", FIREFOX)]);
        assert_eq!(r.status, 200);
    }
}

fn warnings(gate: &Gate) -> usize {
    gate.stderr().lines().filter(|l| l.contains("robotgate::setup") && l.contains("trusted_proxies")).count()
}

#[test]
fn a_proxy_missing_from_trusted_proxies_is_named_once_and_its_trap_hit_bans_no_one() {
    let origin = Origin::start();
    let gate = Gate::start(&config(&origin, ""), &[("robots.txt", ROBOTS.as_bytes())]);
    browse(&gate, 20);
    let warned = within(Duration::from_secs(5), || metric(&gate, "robotgate_one_client_warning") == 1.0);
    assert!(warned.is_some(), "no warning metric:\n{}", gate.stderr());
    assert!(within(Duration::from_secs(2), || warnings(&gate) == 1).is_some(), "{}", gate.stderr());
    let status = get(&format!("http://127.0.0.1:{}/status.json", gate.metrics_port), &[]);
    assert!(status.body.contains("trusted_proxies"), "{}", status.body);
    let page = get(&format!("http://127.0.0.1:{}/status", gate.metrics_port), &[]);
    assert!(page.body.contains("Warning") && page.body.contains("trusted_proxies"));
    // A trap hit from the balancer's address: recorded, not a ban on everyone.
    let hit = get(&gate.url("/trap/x"), &[("X-Forwarded-For", "203.0.113.66"), ("User-Agent", FIREFOX)]);
    assert_eq!(hit.status, 200);
    browse(&gate, 5);
    let recs: Vec<serde_json::Value> =
        wait_lines(&gate.path("violations.jsonl"), 1).iter().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(recs.len(), 1, "{recs:?}");
    let r = &recs[0];
    assert_eq!((r["directive"].as_str(), r["action"].as_str()), (Some("trap"), Some("log")), "{r}");
    assert_eq!(r["reason"].as_str(), Some("crowd-address"), "{r}");
    // More traffic within the hour: still one warning line.
    browse(&gate, 20);
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(warnings(&gate), 1, "{}", gate.stderr());
}

#[test]
fn with_the_proxy_trusted_there_is_no_warning_and_a_trap_bans_its_client() {
    let origin = Origin::start();
    let gate =
        Gate::start(&config(&origin, "trusted_proxies: [\"127.0.0.1/32\"]"), &[("robots.txt", ROBOTS.as_bytes())]);
    browse(&gate, 20);
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(metric(&gate, "robotgate_one_client_warning"), 0.0);
    assert_eq!(warnings(&gate), 0, "{}", gate.stderr());
    let hit = get(&gate.url("/trap/x"), &[("X-Forwarded-For", "198.51.100.9"), ("User-Agent", FIREFOX)]);
    assert_eq!(hit.status, 403);
    let after = get(&gate.url("/page"), &[("X-Forwarded-For", "198.51.100.9"), ("User-Agent", FIREFOX)]);
    assert_eq!(after.status, 403, "banned");
    assert_eq!(get(&gate.url("/page"), &[("X-Forwarded-For", "198.51.100.10"), ("User-Agent", FIREFOX)]).status, 200);
}
