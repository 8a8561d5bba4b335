//! Issue #18 as a person would look: the HTML report of a real violation log
//! and the live status page, each loaded in real headless Chromium. The
//! pages load without an error, their charts have a size, a hostile
//! User-Agent shows as text and runs nothing, and the status page lists a
//! violation made a moment before.
//!
//! With ROBOTGATE_SCREENSHOTS=DIR the screenshots are written there
//! (`scripts/screenshots.sh` regenerates the README's pictures that way).

mod common;

use std::process::Command;
use std::time::Duration;

use common::browser::Browser;
use common::{get, within, Gate, Origin, AHREFS, CLAUDEBOT, GPTBOT};

/// A robot's User-Agent that tries to run script wherever it is shown.
const HOSTILE: &str = "EvilBot/6.6 <script>window.__xss=1</script>\"><img src=x onerror=\"window.__xss=2\">";

fn config(origin: &Origin) -> String {
    format!(
        r#"
listen: ["127.0.0.1:{{port}}"]
trusted_proxies: ["127.0.0.1/32"]
sites:
  - name: shop
    hosts: ["127.0.0.1", "localhost"]
    default: true
    upstream: "{}"
    robots: "{{dir}}/robots.txt"
metrics:
  listen: "127.0.0.1:{{metrics}}"
  status_page: true
verify:
  feeds: "{{dir}}/feeds"
  dns: {{ nameservers: ["127.0.0.1:9"], timeout_ms: 300 }}
log:
  violations: "{{dir}}/violations.jsonl"
  aggregate_window: 0
  level: warn
"#,
        origin.addr
    )
}

const ROBOTS: &str = "User-agent: *\nDisallow: /private/\n\nUser-agent: GPTBot\nDisallow: /\n";

fn violate(gate: &Gate, ip: &str, ua: &str, path: &str) {
    let status = get(&gate.url(path), &[("X-Forwarded-For", ip), ("User-Agent", ua)]).status;
    assert_eq!(status, 403, "{ua} {path}");
}

fn save(name: &str, png: &[u8]) {
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n") && png.len() > 10_000, "a real screenshot ({} bytes)", png.len());
    if let Ok(dir) = std::env::var("ROBOTGATE_SCREENSHOTS") {
        std::fs::write(std::path::Path::new(&dir).join(name), png).unwrap();
    }
}

/// What a page must be: no error reported, no hostile script run, the
/// hostile User-Agent shown as text.
fn assert_safe_and_clean(page: &mut common::browser::Page) {
    assert_eq!(page.errors(), Vec::<String>::new(), "the page reported errors");
    assert_eq!(page.eval("typeof window.__xss"), "undefined", "a User-Agent ran script");
    assert_eq!(page.eval("document.querySelectorAll('img[src=x]').length"), 0, "a User-Agent made an element");
    let shown = page.eval(&format!("document.body.innerText.includes({})", serde_json::to_string(HOSTILE).unwrap()));
    assert_eq!(shown, true, "the hostile User-Agent is not shown as text");
}

#[test]
fn the_html_report_of_a_real_log_renders_in_chromium() {
    let origin = Origin::start();
    let gate = Gate::start(&config(&origin), &[("robots.txt", ROBOTS.as_bytes())]);
    // A few robots, each breaking the rules a few times.
    let mut made = 0;
    for (i, (ip, ua, n)) in [
        ("127.0.0.5", GPTBOT, 9),
        ("203.0.113.7", HOSTILE, 6),
        ("198.51.100.3", CLAUDEBOT, 5),
        ("198.51.100.4", AHREFS, 3),
        ("192.0.2.10", "Mozilla/5.0 (compatible; SomeScraper/2.1)", 2),
    ]
    .into_iter()
    .enumerate()
    {
        for j in 0..n {
            let path = if ua == GPTBOT { format!("/page/{j}") } else { format!("/private/{i}-{j}") };
            violate(&gate, ip, ua, &path);
            made += 1;
        }
    }
    let log = gate.path("violations.jsonl");
    assert!(within(Duration::from_secs(10), || common::wait_lines(&log, made).len() >= made).is_some());
    let html = gate.path("report.html");
    let out = Command::new(env!("CARGO_BIN_EXE_robotgate"))
        .args(["report", "--format", "html", "--out"])
        .arg(&html)
        .arg(&log)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    let browser = Browser::start();
    let mut page = browser.page();
    page.navigate(&format!("file://{}", html.display()));
    assert_safe_and_clean(&mut page);
    // Every chart is an inline SVG with a size on the page.
    let charts = page.eval(
        "[...document.querySelectorAll('svg.chart')].map(s => { const r = s.getBoundingClientRect(); \
         return [s.id, r.width, r.height]; })",
    );
    let charts = charts.as_array().unwrap();
    assert!(charts.len() >= 3, "{charts:?}");
    for c in charts {
        assert!(c[1].as_f64().unwrap() > 100.0 && c[2].as_f64().unwrap() > 20.0, "{c}");
    }
    for id in ["chart-over-time", "table-bots"] {
        assert_eq!(page.eval(&format!("!!document.getElementById('{id}')")), true, "{id}");
    }
    // Nothing was fetched: the page is whole in itself.
    let fetched = page.eval("performance.getEntriesByType('resource').length");
    assert_eq!(fetched, 0);
    // The bot table sorts on a click (and reads without it).
    assert_eq!(page.eval("document.querySelectorAll('#table-bots tbody tr').length"), 5);
    page.eval("document.querySelector('#table-bots thead th').click()");
    assert_eq!(page.eval("document.querySelector('#table-bots thead th').getAttribute('aria-sort')"), "descending");
    assert_eq!(page.errors(), Vec::<String>::new());
    save("report.png", &page.screenshot());
}

#[test]
fn the_status_page_lists_a_violation_made_a_moment_before() {
    let origin = Origin::start();
    let gate = Gate::start(&config(&origin), &[("robots.txt", ROBOTS.as_bytes())]);
    let status = format!("http://127.0.0.1:{}/status", gate.metrics_port);
    violate(&gate, "127.0.0.5", GPTBOT, "/page/1");
    violate(&gate, "203.0.113.7", HOSTILE, "/private/just-now");
    // The JSON twin has it at once (the ring is filled when the request ends).
    let listed = within(Duration::from_secs(5), || {
        let json: serde_json::Value = serde_json::from_str(&get(&format!("{status}.json"), &[]).body).unwrap();
        json["sites"][0]["recent"][0]["path"] == "/private/just-now"
    });
    assert!(listed.is_some(), "{}", get(&format!("{status}.json"), &[]).body);

    let browser = Browser::start();
    let mut page = browser.page();
    page.navigate(&status);
    assert_safe_and_clean(&mut page);
    let text = page.eval("document.body.innerText").as_str().unwrap().to_owned();
    assert!(text.contains("/private/just-now") && text.contains("GPTBot"), "{text}");
    assert!(text.contains("memory (this instance only)"), "{text}");
    // It needs no script: it refreshes itself with a meta refresh.
    assert_eq!(page.eval("document.scripts.length"), 0);
    assert_eq!(page.eval("!!document.querySelector('meta[http-equiv=refresh]')"), true);
    save("status.png", &page.screenshot());
    // Off unless asked for: the same listener without `status_page` has none.
    let plain = config(&origin).replace("  status_page: true\n", "");
    let other = Gate::start(&plain, &[("robots.txt", ROBOTS.as_bytes())]);
    assert_eq!(get(&format!("http://127.0.0.1:{}/status", other.metrics_port), &[]).status, 404);
}
