//! What a replay adds to the report, as data: requests per robot, identity,
//! robots.txt fetches, collateral findings. `robotgate replay` fills it
//! ([`crate::replay`]); the renderers of this module show it.

use serde::Serialize;

/// What a replay adds to the report.
#[derive(Debug, Clone, Serialize)]
pub struct ReplayReport {
    /// The log format read.
    pub format: String,
    /// Log lines read (blank and malformed ones included).
    pub lines: u64,
    /// Lines skipped by `--since` or `--site`.
    pub skipped: u64,
    /// What replay cannot judge from a log, said once.
    pub limits: Vec<&'static str>,
    /// Logs that ended in a read error (a truncated gzip, say); their lines
    /// before it were judged.
    pub unreadable: Vec<Unreadable>,
    /// Per site, in config order.
    pub sites: Vec<ReplaySite>,
}

/// A log that ended in a read error.
#[derive(Debug, Clone, Serialize)]
pub struct Unreadable {
    /// The log.
    pub source: String,
    /// Lines read before the error.
    pub after_line: u64,
    /// The error.
    pub error: String,
}

/// One site.
#[derive(Debug, Clone, Serialize)]
pub struct ReplaySite {
    /// Its name.
    pub site: String,
    /// Requests judged.
    pub requests: u64,
    /// Of them, from browsers.
    pub browsers: u64,
    /// Would-be violations.
    pub violations: u64,
    /// Requests the gate would refuse before any policy: status, count.
    pub refused: Vec<(u16, u64)>,
    /// Robots, most violations first, then most requests.
    pub bots: Vec<ReplayBot>,
    /// Robot rows not listed.
    pub bots_not_listed: usize,
    /// Allowed traffic the policy would refuse, most first.
    pub collateral: Vec<Collateral>,
    /// Findings past the cap.
    pub collateral_other: u64,
    /// Requests a pace or hours would have limited, from robots whose
    /// operators say they ignore that directive (#27).
    pub unsupported: Vec<UnsupportedHit>,
    /// Lines without a User-Agent that the `*` group disallows.
    pub unjudged: Vec<UnjudgedPath>,
    /// Such lines past the cap.
    pub unjudged_other: u64,
}

/// One robot on one site.
#[derive(Debug, Clone, Serialize)]
pub struct ReplayBot {
    /// Name, or `unknown:<category>`.
    pub bot: String,
    /// Category.
    pub category: &'static str,
    /// A robot of the database.
    pub known: bool,
    /// Requests.
    pub requests: u64,
    /// Would-be violations.
    pub violations: u64,
    /// Whether it fetched `/robots.txt` in the period, and how often.
    pub robots_fetches: u64,
    /// Requests whose address its operator's ranges confirm.
    pub verified: u64,
    /// Requests from addresses its operator's ranges contradict.
    pub spoofed: u64,
    /// Requests the ranges cannot tell about.
    pub unverifiable: u64,
    /// Rules broken, most first.
    pub rules: Vec<ReplayRule>,
    /// Violations of rules not listed.
    pub other_rules: u64,
}

impl ReplayBot {
    /// A one-word identity: the only outcome seen, `mixed`, or `None` (not claimed).
    pub fn identity(&self) -> Option<&'static str> {
        let all = [(self.verified, "verified"), (self.spoofed, "spoofed"), (self.unverifiable, "unverifiable")];
        let mut seen = all.iter().filter(|(n, _)| *n > 0);
        match (seen.next(), seen.next()) {
            (None, _) => None,
            (Some((_, one)), None) => Some(one),
            _ => Some("mixed"),
        }
    }
}

/// A rule broken by one robot.
#[derive(Debug, Clone, Serialize)]
pub struct ReplayRule {
    /// `disallow`, `crawl-delay`, `spoofed-identity`, ...
    pub directive: &'static str,
    /// Its line in the effective robots.txt, if it has one.
    pub line: Option<u32>,
    /// Would-be violations.
    pub count: u64,
}

/// What replay cannot see in a log; every report says it.
pub const LIMITS: &[&str] = &[
    "traps are judged from when the traps' state says they were armed; whether a trap link was in the pages a client saw, a log cannot tell",
    "identity is from the published IP ranges (reverse DNS only with --dns): without it, robots that only DNS confirms are unverifiable",
    "every line is judged by today's robots.txt; a crawler's copy is the version served when the log shows its fetch (kept 24 hours), and a fetch the log does not hold is unknown",
    "the client is the address the web server logged: behind a CDN or load balancer, log the forwarded address or every crawler looks spoofed",
];

/// What kind of mistake a collateral finding suggests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CollateralKind {
    /// A stylesheet or script: search engines render pages with them.
    RenderResource,
    /// A sitemap the robots.txt itself names, or one by its usual name.
    Sitemap,
    /// Any other page.
    Page,
    /// Not refused: a `$`-anchored rule ending in a file extension
    /// (`Disallow: /*.pdf$`) does not match the file with a query, which
    /// was fetched (`lint`'s `anchored-extension`).
    QueryLetThrough,
}

impl CollateralKind {
    /// `render-resource`, `sitemap`, `page` or `query-let-through`.
    pub fn as_str(self) -> &'static str {
        match self {
            CollateralKind::RenderResource => "render-resource",
            CollateralKind::Sitemap => "sitemap",
            CollateralKind::Page => "page",
            CollateralKind::QueryLetThrough => "query-let-through",
        }
    }
}

/// One rule that would refuse a robot the site served, and that keeps to
/// robots.txt (verified by its operator's ranges, or a database robot known
/// to obey it and not caught lying).
#[derive(Debug, Clone, Serialize)]
pub struct Collateral {
    /// What it suggests.
    pub kind: CollateralKind,
    /// The rule's line in the effective robots.txt.
    pub line: u32,
    /// The rule's pattern.
    pub pattern: String,
    /// Requests it would have refused.
    pub count: u64,
    /// The first such path (cut to 200 bytes).
    pub example: String,
    /// Line of the log with the first one.
    pub log_line: u64,
    /// Robots it would have refused (the first few).
    pub bots: Vec<String>,
    /// `robotgate lint`'s findings on that line: `code: message`.
    pub lint: Vec<String>,
}

/// Lines without a User-Agent that a rule of the `*` group disallows.
#[derive(Debug, Clone, Serialize)]
pub struct UnjudgedPath {
    /// The rule's line.
    pub line: u32,
    /// The rule's pattern.
    pub pattern: String,
    /// Lines.
    pub count: u64,
    /// The first path.
    pub example: String,
}

/// A Crawl-delay, Request-rate or Visit-time line that would have limited
/// robots whose operators say they ignore it: collateral of the directive
/// (by default robotgate lets them through; `unsupported_directives:
/// enforce` answers them 429).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UnsupportedHit {
    /// `crawl-delay`, `request-rate` or `visit-time`.
    pub directive: &'static str,
    /// Its line in the effective robots.txt.
    pub line: u32,
    /// Requests it would have limited.
    pub count: u64,
    /// The robots (the first few).
    pub bots: Vec<String>,
}
