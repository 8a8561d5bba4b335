//! The violation record, as logged, and the aggregation of repeats.
//!
//! A [`Record`] is plain owned data: the proxy fills it when a request ends
//! and the server's writer turns it into one JSON line (serde_json escapes
//! control characters, so a hostile User-Agent or path stays one line).
//! [`aggregate::Aggregator`] folds repeats of the same violation into one
//! record per window; it reads no clock: callers pass the time in.

pub mod aggregate;
pub mod rotate;

use serde::Serialize;

/// One violation, or `count` repeats of one, as logged.
///
/// Summing `count` over a whole log gives the number of violations.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Record {
    /// RFC 3339 UTC time (of the last violation counted here).
    pub time: String,
    /// Site name.
    pub site: String,
    /// Client address (after trusted-proxy resolution).
    pub client: String,
    /// Request method.
    pub method: String,
    /// Path and query as received (of the last violation counted here).
    pub path: String,
    /// Host header.
    pub host: String,
    /// User-Agent header (lossy UTF-8).
    pub user_agent: String,
    /// Bot name.
    pub bot: Option<String>,
    /// The other robots the User-Agent names, each a claim that was checked
    /// and judged too (issue #32); absent when it names one.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub claims: Vec<String>,
    /// Category.
    pub category: &'static str,
    /// robots.txt group obeyed.
    pub group: Option<String>,
    /// What was broken: `disallow`, `crawl-delay`, `request-rate`, `visit-time`;
    /// or `unsupported-directive` (with the directive in `pattern`): a pace or
    /// hours the robot's operator says it ignores, never a violation.
    pub directive: &'static str,
    /// The rule's pattern (for `disallow`) or value.
    pub pattern: Option<String>,
    /// Line in robots.txt.
    pub line: Option<u32>,
    /// Version of the robots.txt in force.
    pub robots_hash: String,
    /// The rule broken is one robotgate generated (a trap, a managed group),
    /// not a line of the site's file.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub managed: bool,
    /// Whether the bot had fetched the site's robots.txt in the last 24 hours.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub robots_seen: Option<bool>,
    /// `stale-robots`: the version of robots.txt the crawler fetched, which
    /// allows the request (`robots_hash` is the version that does not).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fetched_hash: Option<String>,
    /// `stale-robots`: when the crawler fetched that version (RFC 3339).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fetched_at: Option<String>,
    /// Why an armed trap banned no one: `crowd-address` (the address sent
    /// most of the last minute's traffic, likely a proxy's missing from
    /// `trusted_proxies`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<&'static str>,
    /// For a robot of the database: `verified`, `spoofed` or `unverifiable`
    /// (checked against its operator's published addresses).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub identity: Option<&'static str>,
    /// `weak`: the robot is unknown and named only by weak evidence (a weak
    /// robot word, a bare URL, a shape no browser sends; issue #53), so by
    /// default it is recorded but neither refused nor paced
    /// (`policy.weak_evidence`). Absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evidence: Option<&'static str>,
    /// For a robot in a browser's clothes (category `disguised`, issue
    /// #67): each sign its request showed against the browser it claimed,
    /// strong ones first (docs/classifier.md). Absent otherwise.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub signs: Vec<&'static str>,
    /// With `signs`: the JA4 fingerprint of the client's ClientHello, when
    /// robotgate read it or a trusted edge sent it (`ja4_header`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ja4: Option<String>,
    /// Action taken.
    pub action: &'static str,
    /// Status returned (for proxied actions, the upstream's).
    pub status: u16,
    /// Violations this line stands for: 1, or the repeats folded into it.
    pub count: u64,
    /// Time of the first of the `count` violations (aggregated records only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first: Option<String>,
    /// Time of the last of the `count` violations (aggregated records only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last: Option<String>,
}

impl Record {
    /// [`Record::directive`] of a request refused because its head could
    /// not be read as sent (a control byte in a field value, too many
    /// fields: [`crate::head`]), with the why in [`Record::reason`]. Such a
    /// request is refused by every host, robot or not: no robots.txt line
    /// is involved.
    pub const UNREADABLE: &'static str = "unreadable-request";
}

/// Violations counted when neither the log queue nor the aggregation table
/// had room for their details: written as one line of their own, so the sum
/// of `count` over the log still equals the number of violations.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Overflow {
    /// RFC 3339 UTC time of the last violation counted here.
    pub time: String,
    /// Always `true`: tells this line from a [`Record`].
    pub overflow: bool,
    /// Violations this line stands for.
    pub count: u64,
    /// Time of the first of them.
    pub first: String,
    /// Time of the last of them.
    pub last: String,
}

/// Something noticed on a site that is not a violation, written to the
/// same log so that `robotgate report` can list it: today a page whose own
/// noindex robots.txt hides from a robot (`indexing.observe`). Written when
/// a page's word changes, folded per page, robot and word (see
/// [`aggregate::FindingFold`]), not per request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// RFC 3339 UTC time it was noticed.
    pub time: String,
    /// Site name.
    pub site: String,
    /// What was noticed: [`Finding::HIDDEN_NOINDEX`].
    pub finding: &'static str,
    /// The page: its path, without the query.
    pub path: String,
    /// The robot that never sees the noindex (`*`: every robot without a group of its own).
    pub robot: String,
    /// What the page said, and to whom (`robots: noindex`, `X-Robots-Tag: none`).
    pub said: String,
    /// The robots.txt line that disallows the page for that robot.
    pub line: u32,
    /// That line's pattern.
    pub pattern: String,
}

impl Finding {
    /// A page's noindex that robots.txt hides.
    pub const HIDDEN_NOINDEX: &'static str = "hidden-noindex";
}

/// A GPTBot `disallow` record from `client`, for the unit tests of the
/// aggregation table and of the log writer.
#[cfg(test)]
pub(crate) fn sample(client: &str, user_agent: &str, path: &str, line: u32, time: String) -> Record {
    Record {
        time,
        site: "s".into(),
        client: client.into(),
        method: "GET".into(),
        path: path.into(),
        host: "h".into(),
        user_agent: user_agent.into(),
        bot: Some("GPTBot".into()),
        claims: Vec::new(),
        category: "ai-crawler",
        group: Some("*".into()),
        directive: "disallow",
        pattern: Some("/private/".into()),
        line: Some(line),
        robots_hash: "0123456789ab".into(),
        managed: false,
        robots_seen: Some(false),
        fetched_hash: None,
        fetched_at: None,
        reason: None,
        identity: None,
        evidence: None,
        signs: Vec::new(),
        ja4: None,
        action: "block",
        status: 403,
        count: 1,
        first: None,
        last: None,
    }
}
