//! The replay's own part of the report, sorted: requests per robot,
//! identity, robots.txt fetches, collateral. The violations themselves are
//! the report's ([`crate::report::Report`]), from the same records.

use serde::Serialize;

use super::tally::{Collateral, UnjudgedPath};

/// Robot rows shown per site (the JSON has them all).
const TOP_BOTS: usize = 500;

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
    "traps are not judged: no past request followed a link robotgate had not served",
    "identity is from the published IP ranges only (no reverse DNS): robots that only DNS confirms are unverifiable",
    "the client is the address the web server logged: behind a CDN or load balancer, log the forwarded address or every crawler looks spoofed",
];

impl ReplayReport {
    /// The sorted view of a replay's outcome, for sites named `names` (config order).
    pub fn new(outcome: &super::RunOutcome, names: &[&str], format: &str) -> ReplayReport {
        let (tally, lines, skipped) = (&outcome.tally, outcome.lines, outcome.skipped);
        let unreadable = outcome
            .unreadable
            .iter()
            .map(|(source, after_line, error)| Unreadable {
                source: source.clone(),
                after_line: *after_line,
                error: error.clone(),
            })
            .collect();
        let sites = tally
            .sites
            .iter()
            .zip(names)
            .filter(|(s, _)| s.requests > 0)
            .map(|(s, name)| {
                let mut bots: Vec<ReplayBot> = s
                    .bots
                    .iter()
                    .map(|(name, b)| {
                        let mut rules: Vec<ReplayRule> = b
                            .rules
                            .iter()
                            .map(|((directive, line), count)| ReplayRule { directive, line: *line, count: *count })
                            .collect();
                        rules.sort_by(|a, b| b.count.cmp(&a.count).then(a.line.cmp(&b.line)));
                        ReplayBot {
                            bot: name.clone(),
                            category: b.category,
                            known: b.known,
                            requests: b.requests,
                            violations: b.violations,
                            robots_fetches: b.robots_fetches,
                            verified: b.identity[0],
                            spoofed: b.identity[1],
                            unverifiable: b.identity[2],
                            rules,
                            other_rules: b.other_rules,
                        }
                    })
                    .collect();
                bots.sort_by(|a, b| {
                    (b.violations, b.requests).cmp(&(a.violations, a.requests)).then_with(|| a.bot.cmp(&b.bot))
                });
                let bots_not_listed = bots.len().saturating_sub(TOP_BOTS);
                bots.truncate(TOP_BOTS);
                let mut collateral = s.collateral.clone();
                collateral.sort_by(|a, b| b.count.cmp(&a.count).then(a.line.cmp(&b.line)));
                let mut unjudged = s.unjudged.clone();
                unjudged.sort_by(|a, b| b.count.cmp(&a.count).then(a.line.cmp(&b.line)));
                let mut refused = s.refused.clone();
                refused.sort_unstable();
                ReplaySite {
                    site: (*name).to_owned(),
                    requests: s.requests,
                    browsers: s.browsers,
                    violations: s.violations,
                    refused,
                    bots,
                    bots_not_listed,
                    collateral,
                    collateral_other: s.collateral_other,
                    unjudged,
                    unjudged_other: s.unjudged_other,
                }
            })
            .collect();
        ReplayReport { format: format.to_owned(), lines, skipped, limits: LIMITS.to_vec(), unreadable, sites }
    }
}
