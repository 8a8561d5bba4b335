//! `/metrics` after a scripted sequence of requests shows the right counts.

mod common;

use common::*;

/// The value of the series whose line starts with `series` (name and labels).
fn value(text: &str, series: &str) -> f64 {
    text.lines().find(|l| l.starts_with(series)).and_then(|l| l.rsplit(' ').next()?.parse().ok()).unwrap_or(0.0)
}

#[test]
fn counters_match_a_scripted_sequence() {
    let origin = Origin::start();
    let upstream = format!("\"{}\"", origin.addr);
    let down = format!(
        "  - name: down\n    hosts: [\"down.test\"]\n    upstream: \"127.0.0.1:{}\"\n    robots: {{dir}}/robots.txt\n",
        free_port()
    );
    let config = TestConfig {
        upstream: &upstream,
        threads: 1,
        site: "humans: {dir}/humans.txt",
        more_sites: &down,
        metrics: true,
        ..TestConfig::default()
    }
    .render();
    let robots = "User-agent: *\nDisallow: /private/\n\nUser-agent: bingbot\nCrawl-delay: 60\n";
    let gate = Gate::start(&config, &[("robots.txt", robots.as_bytes()), ("humans.txt", b"hi\n")]);

    for _ in 0..3 {
        get(&gate.url("/private/x"), &[("User-Agent", GPTBOT)]); // 3 violations, blocked
    }
    get(&gate.url("/public"), &[("User-Agent", GPTBOT)]); // allowed bot
    for _ in 0..2 {
        get(&gate.url("/private/x"), &[("User-Agent", FIREFOX)]); // browsers
    }
    get(&gate.url("/robots.txt"), &[]);
    get(&gate.url("/robots.txt"), &[]);
    get(&gate.url("/humans.txt"), &[]);
    get(&gate.url("/a"), &[("User-Agent", BINGBOT)]);
    assert_eq!(get(&gate.url("/b"), &[("User-Agent", BINGBOT)]).status, 429);
    assert_eq!(get(&gate.url("/x"), &[("User-Agent", FIREFOX), ("Host", "down.test")]).status, 502);

    let text = get(&format!("http://127.0.0.1:{}/metrics", gate.metrics_port), &[]).body;
    let v = |s: &str| value(&text, s);
    assert_eq!(v(r#"robotgate_requests_total{category="ai-crawler",site="s"}"#), 4.0, "{text}");
    assert_eq!(v(r#"robotgate_requests_total{category="browser",site="s"}"#), 2.0);
    assert_eq!(v(r#"robotgate_requests_total{category="search",site="s"}"#), 2.0);
    assert_eq!(
        v(
            r#"robotgate_violations_total{action="block",bot="GPTBot",category="ai-crawler",identity="verified",robots_seen="false",site="s"}"#
        ),
        3.0
    );
    assert_eq!(v(r#"robotgate_rate_limited_total{bot="bingbot",directive="crawl-delay",site="s"}"#), 1.0);
    assert_eq!(v(r#"robotgate_files_served_total{file="robots.txt",site="s"}"#), 2.0);
    assert_eq!(v(r#"robotgate_files_served_total{file="humans.txt",site="s"}"#), 1.0);
    assert_eq!(v(r#"robotgate_upstream_errors_total{site="down",status="502"}"#), 1.0, "{text}");
    assert_eq!(v("robotgate_reload_failures_total"), 0.0);
    let hash = robotgate::robots::RobotsTxt::compile(robots.as_bytes()).short_hash();
    assert_eq!(v(&format!(r#"robotgate_robots_info{{hash="{hash}",site="s"}}"#)), 1.0, "{text}");
    // Every bot request that reached a decision was timed (4 GPTBot, 2 bingbot).
    assert_eq!(v("robotgate_decision_seconds_count"), 6.0, "{text}");
    // The metrics listener answers only /metrics.
    assert_eq!(get(&format!("http://127.0.0.1:{}/other", gate.metrics_port), &[]).status, 404);
}
