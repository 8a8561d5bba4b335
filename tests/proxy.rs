//! The proxy end to end: the real `robotgate serve` in front of a real origin,
//! spoken to by a real HTTP client over loopback.

mod common;

use common::*;

const ROBOTS_A: &str = "\
User-agent: *
Disallow: /private/
Allow: /private/press/

User-agent: Googlebot
Disallow: /nogoogle/

User-agent: GPTBot
Disallow: /

User-agent: bingbot
Crawl-delay: 30
Disallow: /nobing/

User-agent: MJ12bot
Disallow: /
";

const ROBOTS_B: &str = "User-agent: *\nDisallow: /b-only/\n";

// A robot whose operator publishes no addresses (PerplexityBot, here before,
// is verifiable by range since #29, so from loopback it is spoofed).
const BYTESPIDER: &str =
    "Mozilla/5.0 (Linux; Android 5.0) AppleWebKit/537.36 (KHTML, like Gecko) Mobile Safari/537.36 (compatible; Bytespider; spider-feedback@bytedance.com)";
const FACEBOOK: &str = "facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)";
const MJ12: &str = "Mozilla/5.0 (compatible; MJ12bot/v1.4.8; http://mj12bot.com/)";

fn config(origin: &Origin) -> String {
    format!(
        r#"
listen: ["127.0.0.1:{{port}}"]
threads: 2
grace_period: 1
sites:
  - name: site-a
    hosts: ["localhost", "127.0.0.1", "a.test"]
    default: true
    upstream: "{origin}"
    robots: {{dir}}/robots-a.txt
    humans: {{dir}}/humans.txt
    policy:
      action: block
      body: "no robots here\n"
      categories:
        seo: {{ action: noindex }}
        social: {{ action: log }}
      bots:
        ClaudeBot: {{ action: alternate, file: {{dir}}/alt.html, status: 200 }}
        Bytespider: {{ action: alternate, redirect: "https://example.com/why" }}
  - name: site-b
    hosts: ["b.test"]
    upstream: "{origin}"
    robots: {{dir}}/robots-b.txt
verify:
  feeds: "{{dir}}/feeds"
  dns: {{ nameservers: ["127.0.0.1:9"], timeout_ms: 300 }}
log:
  violations: {{dir}}/violations.jsonl
  level: warn
metrics:
  listen: "127.0.0.1:{{metrics}}"
"#,
        origin = origin.addr
    )
}

fn start(origin: &Origin) -> Gate {
    Gate::start(
        &config(origin),
        &[
            ("robots-a.txt", ROBOTS_A.as_bytes()),
            ("robots-b.txt", ROBOTS_B.as_bytes()),
            ("humans.txt", b"/* TEAM */ robotgate tests\n"),
            ("alt.html", b"<p>alternate content</p>\n"),
        ],
    )
}

#[test]
fn robots_and_humans_txt_are_served_with_validators_and_304() {
    let origin = Origin::start();
    let gate = start(&origin);
    let r = get(&gate.url("/robots.txt"), &[("User-Agent", GPTBOT)]);
    assert_eq!(r.status, 200, "robots.txt is never blocked, even for a bot disallowed everything");
    assert_eq!(r.body, ROBOTS_A);
    assert_eq!(r.header("content-type"), Some("text/plain; charset=utf-8"));
    let etag = r.header("etag").expect("etag").to_owned();
    let modified = r.header("last-modified").expect("last-modified").to_owned();
    assert_eq!(get(&gate.url("/robots.txt"), &[("If-None-Match", &etag)]).status, 304);
    assert_eq!(get(&gate.url("/robots.txt"), &[("If-Modified-Since", &modified)]).status, 304);
    assert_eq!(get(&gate.url("/robots.txt"), &[("If-None-Match", "\"other\"")]).status, 200);
    let head = request("HEAD", &gate.url("/robots.txt"), &[]);
    assert_eq!((head.status, head.body.as_str()), (200, ""));
    assert_eq!(head.header("content-length"), Some(ROBOTS_A.len().to_string().as_str()));

    let h = get(&gate.url("/humans.txt"), &[]);
    assert_eq!((h.status, h.body.as_str()), (200, "/* TEAM */ robotgate tests\n"));
    // Site B serves its own robots.txt on the same listener.
    let b = get(&gate.url("/robots.txt"), &[("Host", "b.test")]);
    assert_eq!(b.body, ROBOTS_B);
    assert_eq!(origin.hits(), 0, "robots.txt and humans.txt never go upstream");
}

#[test]
fn each_action_does_what_it_says() {
    let origin = Origin::start();
    let gate = start(&origin);
    // block: 403 with the configured body, origin untouched.
    let r = get(&gate.url("/private/x"), &[("User-Agent", GPTBOT)]);
    assert_eq!((r.status, r.body.as_str()), (403, "no robots here\n"));
    assert_eq!(origin.hits(), 0);
    // alternate file.
    let r = get(&gate.url("/private/x"), &[("User-Agent", CLAUDEBOT)]);
    assert_eq!((r.status, r.body.as_str()), (200, "<p>alternate content</p>\n"));
    // redirect.
    let r = get(&gate.url("/private/x"), &[("User-Agent", BYTESPIDER)]);
    assert_eq!(r.status, 302);
    assert_eq!(r.header("location"), Some("https://example.com/why"));
    assert_eq!(origin.hits(), 0);
    // noindex: proxied, with X-Robots-Tag on the origin's response.
    let r = get(&gate.url("/private/x"), &[("User-Agent", AHREFS)]);
    assert_eq!((r.status, r.body.as_str()), (200, "origin /private/x"));
    assert_eq!(r.header("x-robots-tag"), Some("noindex, nofollow"));
    // log only: proxied untouched.
    let r = get(&gate.url("/private/x"), &[("User-Agent", FACEBOOK)]);
    assert_eq!((r.status, r.body.as_str()), (200, "origin /private/x"));
    assert_eq!(r.header("x-robots-tag"), None);
    // ai-user fetchers are logged, not blocked, by default.
    let r = get(&gate.url("/private/x"), &[("User-Agent", CHATGPT_USER)]);
    assert_eq!(r.status, 200);
    assert_eq!(origin.hits(), 3);
}

#[test]
fn browsers_are_never_blocked() {
    let origin = Origin::start();
    let gate = start(&origin);
    for ua in [FIREFOX, CHROME] {
        let r = get(&gate.url("/private/secret"), &[("User-Agent", ua)]);
        assert_eq!((r.status, r.body.as_str()), (200, "origin /private/secret"));
    }
}

#[test]
fn groups_are_chosen_as_the_bot_would_choose_them() {
    let origin = Origin::start();
    let gate = start(&origin);
    // Googlebot-Image has no group of its own: it obeys Googlebot's, not `*`.
    assert_eq!(get(&gate.url("/private/x"), &[("User-Agent", GOOGLEBOT_IMAGE)]).status, 200);
    assert_eq!(get(&gate.url("/nogoogle/x"), &[("User-Agent", GOOGLEBOT_IMAGE)]).status, 403);
    // A bot with its own group vs. one under `*`.
    assert_eq!(get(&gate.url("/public"), &[("User-Agent", GPTBOT)]).status, 403, "GPTBot: Disallow: /");
    assert_eq!(get(&gate.url("/public"), &[("User-Agent", AHREFS)]).status, 200, "AhrefsBot: the `*` group");
    assert_eq!(
        get(
            &gate.url("/private/press/release"),
            &[("User-Agent", "Mozilla/5.0 (compatible; SomeNewBot/0.3; +https://example.org/bot)")]
        )
        .status,
        200
    );
    assert_eq!(
        get(
            &gate.url("/private/x"),
            &[("User-Agent", "Mozilla/5.0 (compatible; SomeNewBot/0.3; +https://example.org/bot)")]
        )
        .status,
        403
    );
    // MJ12bot's group binds MJ12bot (Google's parser would read the group as `MJ`).
    // (MJ12bot is an SEO crawler, which this site's policy answers with noindex.)
    let r = get(&gate.url("/anything"), &[("User-Agent", MJ12)]);
    assert_eq!(r.header("x-robots-tag"), Some("noindex, nofollow"), "a violation of the MJ12bot group");
}

#[test]
fn crawl_delay_answers_429_with_retry_after() {
    let origin = Origin::start();
    let gate = start(&origin);
    assert_eq!(get(&gate.url("/page1"), &[("User-Agent", BINGBOT)]).status, 200);
    let r = get(&gate.url("/page2"), &[("User-Agent", BINGBOT)]);
    assert_eq!(r.status, 429);
    let retry: u64 = r.header("retry-after").expect("Retry-After").parse().unwrap();
    assert!((1..=30).contains(&retry), "Retry-After {retry}");
    // Another bot is not slowed by bingbot's delay.
    assert_eq!(get(&gate.url("/page2"), &[("User-Agent", GOOGLEBOT)]).status, 200);
}

#[test]
fn two_sites_on_one_listener_enforce_their_own_robots_txt() {
    let origin = Origin::start();
    let gate = start(&origin);
    assert_eq!(get(&gate.url("/b-only/x"), &[("User-Agent", AHREFS), ("Host", "b.test")]).status, 403);
    assert_eq!(get(&gate.url("/b-only/x"), &[("User-Agent", AHREFS), ("Host", "a.test")]).status, 200);
    // Site A's rules do not leak into site B.
    assert_eq!(get(&gate.url("/private/x"), &[("User-Agent", GPTBOT), ("Host", "b.test")]).status, 200);
    assert_eq!(get(&gate.url("/private/x"), &[("User-Agent", GPTBOT), ("Host", "a.test")]).status, 403);
    assert_eq!(get(&gate.url("/nogoogle/x"), &[("User-Agent", GOOGLEBOT), ("Host", "b.test")]).status, 200);
}

#[test]
fn forwarded_for_from_an_untrusted_client_is_ignored() {
    let origin = Origin::start();
    let gate = start(&origin);
    let r = get(&gate.url("/hello"), &[("User-Agent", FIREFOX), ("X-Forwarded-For", "6.6.6.6")]);
    assert_eq!(r.header("x-seen-xff"), Some("127.0.0.1"), "the spoofed hop is dropped");
    assert_eq!(r.header("x-seen-proto"), Some("http"));
    let r = get(&gate.url("/private/x"), &[("User-Agent", GPTBOT), ("X-Forwarded-For", "6.6.6.6")]);
    assert_eq!(r.status, 403);
    let lines = wait_lines(&gate.path("violations.jsonl"), 1);
    let v: serde_json::Value = serde_json::from_str(&lines[0]).unwrap();
    assert_eq!(v["client"], "127.0.0.1");
}

#[test]
fn forwarded_for_from_a_trusted_proxy_keeps_its_chain() {
    let origin = Origin::start();
    let cfg = format!("{}trusted_proxies: [\"127.0.0.1/32\"]\n", config(&origin));
    let gate = Gate::start(
        &cfg,
        &[
            ("robots-a.txt", ROBOTS_A.as_bytes()),
            ("robots-b.txt", ROBOTS_B.as_bytes()),
            ("humans.txt", b"h\n"),
            ("alt.html", b"a\n"),
        ],
    );
    let seen = |xff: &str| get(&gate.url("/hello"), &[("User-Agent", FIREFOX), ("X-Forwarded-For", xff)]);
    assert_eq!(seen("6.6.6.6").header("x-seen-xff"), Some("6.6.6.6, 127.0.0.1"));
    assert_eq!(seen("10.0.0.1, 6.6.6.6").header("x-seen-xff"), Some("10.0.0.1, 6.6.6.6, 127.0.0.1"));
    assert_eq!(seen(" ").header("x-seen-xff"), Some("127.0.0.1"), "an empty chain is not kept");
    let r = get(&gate.url("/hello"), &[("User-Agent", FIREFOX)]);
    assert_eq!(r.header("x-seen-xff"), Some("127.0.0.1"));
    assert_eq!(r.header("x-seen-proto"), Some("http"));
}

#[test]
fn upstream_down_is_502_and_the_proxy_keeps_serving() {
    let origin = Origin::start();
    let dead = free_port();
    let cfg = config(&origin).replacen(
        &format!("upstream: \"{}\"", origin.addr),
        &format!("upstream: \"127.0.0.1:{dead}\""),
        1,
    );
    let gate = Gate::start(
        &cfg,
        &[
            ("robots-a.txt", ROBOTS_A.as_bytes()),
            ("robots-b.txt", ROBOTS_B.as_bytes()),
            ("humans.txt", b"h\n"),
            ("alt.html", b"a\n"),
        ],
    );
    for _ in 0..3 {
        let r = get(&gate.url("/x"), &[("User-Agent", FIREFOX)]);
        assert_eq!(r.status, 502);
        assert!(r.body.contains("Bad Gateway"), "{}", r.body);
    }
    // Still alive: local answers and the other site work.
    assert_eq!(get(&gate.url("/robots.txt"), &[]).status, 200);
    assert_eq!(get(&gate.url("/x"), &[("User-Agent", FIREFOX), ("Host", "b.test")]).status, 200);
}

#[test]
fn every_violation_is_one_json_record_naming_its_line() {
    let origin = Origin::start();
    let mut gate = start(&origin);
    let cases = [
        (GPTBOT, "/private/a", 403, "block", 9u64, "/"),
        (AHREFS, "/private/b?q=1", 200, "noindex", 2, "/private/"),
        (GOOGLEBOT, "/nogoogle/c", 403, "block", 6, "/nogoogle/"),
        (FACEBOOK, "/private/d", 200, "log", 2, "/private/"),
    ];
    for (ua, path, status, _, _, _) in &cases {
        assert_eq!(get(&gate.url(path), &[("User-Agent", ua)]).status, *status, "{ua} {path}");
    }
    // Allowed requests make no record.
    get(&gate.url("/public"), &[("User-Agent", GOOGLEBOT)]);
    get(&gate.url("/private/x"), &[("User-Agent", FIREFOX)]);
    gate.stop();
    let lines = wait_lines(&gate.path("violations.jsonl"), cases.len());
    assert_eq!(lines.len(), cases.len(), "{lines:#?}");
    // Records are written as requests finish, not necessarily in request order.
    let records: Vec<serde_json::Value> = lines.iter().map(|l| serde_json::from_str(l).unwrap()).collect();
    for (ua, path, status, action, robots_line, pattern) in &cases {
        let v =
            records.iter().find(|v| v["path"] == *path).unwrap_or_else(|| panic!("no record for {path}: {lines:#?}"));
        let line = v.to_string();
        assert_eq!(v["user_agent"], *ua);
        assert_eq!(v["status"], *status);
        assert_eq!(v["action"], *action);
        assert_eq!(v["line"], *robots_line, "{line}");
        assert_eq!(v["pattern"], *pattern);
        assert_eq!(v["directive"], "disallow");
        assert_eq!(v["site"], "site-a");
        assert_eq!(v["robots_hash"].as_str().unwrap().len(), 12);
        assert!(v["time"].as_str().unwrap().ends_with('Z'));
        assert!(v["bot"].is_string() && v["category"].is_string() && v["group"].is_string());
    }
}
