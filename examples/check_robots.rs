//! Compile a robots.txt once and check URLs against it, as a library.
//!
//! Run: `cargo run --release --example check_robots`

use robotgate::robots::{GroupMatch, RobotsTxt};

fn main() {
    let robots = RobotsTxt::compile(
        b"User-agent: *\nDisallow: /private/\nAllow: /private/press/\n\n\
          User-agent: Googlebot\nDisallow: /search\n\nSitemap: https://example.com/sitemap.xml\n",
    );
    // Google's semantics (what `robotgate check` does): one crawler name, a URL.
    for (agent, url) in [
        ("FooBot", "https://example.com/private/report.pdf"),
        ("FooBot", "https://example.com/private/press/today"),
        ("Googlebot", "https://example.com/private/report.pdf"),
        ("Googlebot", "https://example.com/search?q=robots"),
    ] {
        let v = robots.allows(agent, url);
        let why = match v.rule {
            Some(r) => format!("line {}: {}: {}", r.line, r.kind.as_str(), r.pattern()),
            None => "no rule matched".to_owned(),
        };
        let group = match v.group {
            GroupMatch::Specific => agent,
            GroupMatch::Global => "*",
            GroupMatch::None => "none",
        };
        println!("{agent:10} {url:45} {:10} ({why}; group {group})", if v.allowed { "allowed" } else { "disallowed" });
    }
    // The proxy's way: choose the group once from a bot's candidate tokens, then check paths.
    let selection = robots.select(&["Googlebot-Image", "Googlebot"]);
    println!("Googlebot-Image obeys group {:?}", robots.selection_name(&selection));
    println!("/search allowed: {}", robots.check(&selection, b"/search").allowed);
    println!("sitemaps: {:?}", robots.sitemaps().iter().map(|s| &s.value).collect::<Vec<_>>());
}
