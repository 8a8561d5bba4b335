//! Issue #29 through the real proxy: usage preferences by purpose
//! (Content-Usage, Content-Signal), the Content-Usage response header, the
//! signature challenge, the RateLimit headers, and the mirrored feeds.
//!
//! Client addresses are played through a trusted proxy's X-Forwarded-For,
//! from the operators' published ranges (the feeds shipped in conf/feeds/).
//! Reverse DNS goes to a closed loopback port: no system resolver is asked.

mod common;

use common::{get, Gate, Resp, CHATGPT_USER, GOOGLEBOT, GPTBOT};

/// Line 4 refuses training under /novels/; the `*` group's Content-Signal
/// allows search and ai-input everywhere.
const ROBOTS: &str = "User-agent: *\nAllow: /\nContent-Usage: train-ai=y\nContent-Usage: /novels/ train-ai=n\nContent-Signal: search=yes, ai-input=yes\n\nUser-agent: bingbot\nCrawl-delay: 30\nAllow: /\n\nUser-agent: Perplexity-User\nDisallow: /members/\n";

const PERPLEXITY_USER: &str =
    "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; Perplexity-User/1.0; +https://perplexity.ai/perplexity-user)";
const BINGBOT: &str = "Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)";

fn config(origin: &common::Origin) -> String {
    format!(
        r#"
listen: ["127.0.0.1:{{port}}"]
trusted_proxies: ["127.0.0.1/32"]
sites:
  - name: s
    hosts: ["127.0.0.1", "localhost"]
    default: true
    upstream: "{}"
    robots: "{{dir}}/robots.txt"
    managed:
      content_usage: "/managed/ train-ai=n"
log:
  violations: "{{dir}}/violations.jsonl"
  aggregate_window: 0
metrics:
  listen: "127.0.0.1:{{metrics}}"
verify:
  dns: {{ nameservers: ["127.0.0.1:9"], timeout_ms: 300 }}
"#,
        origin.addr
    )
}

fn from(gate: &Gate, ip: &str, ua: &str, path: &str) -> Resp {
    get(&gate.url(path), &[("X-Forwarded-For", ip), ("User-Agent", ua)])
}

#[test]
fn usage_preferences_are_enforced_by_purpose() {
    let origin = common::Origin::start();
    let gate = Gate::start(&config(&origin), &[("robots.txt", ROBOTS.as_bytes())]);
    // GPTBot from OpenAI's published range: verified, and its one purpose is train-ai.
    let gpt_ip = "132.196.86.5";

    // Refused where training is refused, though its group allows the path.
    let r = from(&gate, gpt_ip, GPTBOT, "/novels/one");
    assert_eq!(r.status, 403, "{}", r.body);
    // The page without that preference: through, with the preference in force.
    let r = from(&gate, gpt_ip, GPTBOT, "/news/one");
    assert_eq!((r.status, r.body.as_str()), (200, "origin /news/one"));
    assert_eq!(r.header("content-usage"), Some("train-ai=y, search=y"));

    // Googlebot (search) gets both; the response says what the site prefers.
    let r = from(&gate, "66.249.66.1", GOOGLEBOT, "/novels/one");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-usage"), Some("train-ai=n, search=y"));
    assert_eq!(from(&gate, "66.249.66.1", GOOGLEBOT, "/news/one").status, 200);
    // A browser's response carries it too.
    let r = get(&gate.url("/novels/two"), &[("User-Agent", common::FIREFOX)]);
    assert_eq!((r.status, r.header("content-usage")), (200, Some("train-ai=n, search=y")));

    // The managed rule (managed.content_usage) is served and enforced.
    let served = get(&gate.url("/robots.txt"), &[]).body;
    assert!(served.contains("Content-Usage: /managed/ train-ai=n"), "{served}");
    assert_eq!(from(&gate, gpt_ip, GPTBOT, "/managed/x").status, 403);

    // A robot whose purposes are not documented is not refused, but counted.
    let unknown = "SomeNewCrawler/0.3 (+https://crawler.example/bot)";
    assert_eq!(from(&gate, "192.0.2.7", unknown, "/novels/one").status, 200);

    // The records name the directive, the line and the refused purpose.
    let recs = gate.records(2);
    assert_eq!(recs.len(), 2, "{recs:?}");
    let first = &recs[0];
    assert_eq!(first["directive"], "content-usage");
    assert_eq!(first["line"], 4);
    assert_eq!(first["pattern"], "train-ai");
    assert_eq!(first["bot"], "GPTBot");
    assert_eq!(first["identity"], "verified");
    assert_eq!(first["status"], 403);
    assert_eq!(recs[1]["managed"], true, "{}", recs[1]);
    assert_eq!(recs[1]["path"], "/managed/x");

    let text = get(&format!("http://127.0.0.1:{}/metrics", gate.metrics_port), &[]).body;
    let count = |result: &str| -> f64 {
        text.lines()
            .filter(|l| l.starts_with("robotgate_preferences_total") && l.contains(&format!("result=\"{result}\"")))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    };
    assert_eq!(count("refused"), 2.0, "{text}");
    assert_eq!(count("preference-unknown"), 1.0, "{text}");
}

#[test]
fn a_refused_signing_robot_is_asked_for_a_signature_and_a_fast_one_told_its_pace() {
    let origin = common::Origin::start();
    let gate = Gate::start(&config(&origin), &[("robots.txt", ROBOTS.as_bytes())]);
    // ChatGPT-User signs with Web Bot Auth (its entry lists signature_agents;
    // Googlebot's does not). From outside OpenAI's range, unsigned: spoofed.
    let r = from(&gate, "203.0.113.9", CHATGPT_USER, "/page");
    assert_eq!(r.status, 403);
    let accept = r.header("accept-signature").expect("Accept-Signature on the 403");
    assert!(accept.contains("tag=\"web-bot-auth\"") && accept.contains("\"@authority\""), "{accept}");
    // A robot that does not sign is not asked.
    let r = from(&gate, "203.0.113.9", GPTBOT, "/page");
    assert_eq!(r.status, 403);
    assert_eq!(r.header("accept-signature"), None);

    // bingbot, from Bing's published range (the mirrored feed): its group asks
    // for 30 s between requests.
    assert_eq!(from(&gate, "157.55.39.7", BINGBOT, "/a").status, 200);
    let r = from(&gate, "157.55.39.7", BINGBOT, "/b");
    assert_eq!(r.status, 429);
    let retry: u64 = r.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=30).contains(&retry), "{retry}");
    assert_eq!(r.header("ratelimit-policy"), Some("\"crawl-delay\";q=1;w=30"));
    assert_eq!(r.header("ratelimit"), Some(format!("\"crawl-delay\";r=0;t={retry}").as_str()));
}

#[test]
fn perplexity_user_is_verified_from_its_published_range() {
    let origin = common::Origin::start();
    let gate = Gate::start(&config(&origin), &[("robots.txt", ROBOTS.as_bytes())]);
    // From Perplexity's published range: believed, and only logged on a
    // disallowed path (an ai-user fetcher, enforce_ai_user: false).
    let r = from(&gate, "18.97.43.81", PERPLEXITY_USER, "/members/x");
    assert_eq!(r.status, 200);
    // From anywhere else: a spoofed identity, now that Perplexity publishes ranges.
    assert_eq!(from(&gate, "203.0.113.9", PERPLEXITY_USER, "/page").status, 403);
    let recs = gate.records(2);
    assert_eq!(recs[0]["bot"], "Perplexity-User");
    assert_eq!(recs[0]["identity"], "verified", "{}", recs[0]);
    assert_eq!(recs[0]["action"], "log");
    assert_eq!(recs[1]["directive"], "spoofed-identity");
}
