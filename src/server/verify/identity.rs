//! Who a client is, as the proxy can tell beyond the published ranges (which
//! the core reads, [`crate::pipeline`]): the reverse-DNS verdict
//! ([`crate::server::verify::dns`]) as an identity, and the report of
//! `robotgate verify`.
//!
//! Deciding stays synchronous: a claim only reverse DNS can settle stops the
//! pipeline ([`crate::pipeline::Need::Dns`]); the driver awaits one bounded
//! lookup ([`DnsVerifier::verify`]) and resumes with [`identity_of`] its
//! verdict. Browsers and robots that publish nothing never reach DNS.

use std::net::IpAddr;

use crate::identity::Identity;
use crate::server::verify::dns::{DnsVerdict, DnsVerifier};

/// What a reverse-DNS verdict says of a claim.
pub fn identity_of(verdict: &DnsVerdict) -> Identity {
    match verdict {
        DnsVerdict::Verified { .. } => Identity::Verified,
        DnsVerdict::Spoofed { .. } => Identity::Spoofed,
        DnsVerdict::Unverifiable { .. } => Identity::Unverifiable,
    }
}

/// What `robotgate verify` and `robotgate classify --ip` report: the outcome
/// and the evidence behind it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// `verified`, `spoofed`, `unverifiable` or `not-claimed`.
    pub outcome: &'static str,
    /// The database robot the User-Agent names.
    pub bot: Option<String>,
    /// Why: the feed and prefix, the PTR name and its forward answer, or what
    /// could not be checked.
    pub evidence: String,
}

/// Check a claim as the proxy does, making the reverse-DNS lookup itself
/// (through `dns`, when given) rather than only reading a cache.
///
/// `complete_for`: how old a complete list may be and still decide alone
/// (the refresh interval, [`crate::identity::ByRanges::complete_for`]).
pub async fn report(
    classifier: &crate::agent::Classifier,
    ranges: &crate::identity::RangeTable,
    dns: Option<&DnsVerifier>,
    complete_for: Option<u64>,
    ip: IpAddr,
    user_agent: &[u8],
) -> Report {
    use crate::agent::AgentKind;
    use crate::identity::{check, is_local, lists_current, resolve, Evidence, Rdns};
    let agent = classifier.classify(user_agent);
    let AgentKind::Known(i) = agent.kind else {
        let evidence = if agent.is_bot() { "not a robot of the database" } else { "a browser" };
        return Report { outcome: "not-claimed", bot: agent.name.map(str::to_owned), evidence: evidence.into() };
    };
    let entry = classifier.bot(i);
    let bot = Some(entry.name.clone());
    let feeds = resolve(ranges, &entry.ip_ranges).unwrap_or_default();
    match check(&feeds, ranges, ip) {
        Evidence::InRange { feed, prefix } => {
            let evidence = format!("{ip} is in {prefix} of the `{}` feed", ranges.feed(feed).name);
            return Report { outcome: "verified", bot, evidence };
        }
        _ if !entry.rdns.is_empty() && is_local(ip) => {
            return Report { outcome: "unverifiable", bot, evidence: format!("{ip} is a local address") };
        }
        Evidence::NotInRange
            if entry.rdns_use() == Rdns::None
                || (entry.rdns_use() == Rdns::Complete
                    && lists_current(&feeds, ranges, complete_for, crate::time::Clock::System.unix_secs())) =>
        {
            let names: Vec<&str> = entry.ip_ranges.iter().map(String::as_str).collect();
            let complete = if entry.ranges_complete.is_some() { ", which its operator says are complete" } else { "" };
            let evidence = format!("{ip} is in none of its published ranges ({}){complete}", names.join(", "));
            return Report { outcome: "spoofed", bot, evidence };
        }
        Evidence::NoData if entry.rdns.is_empty() => {
            return Report {
                outcome: "unverifiable",
                bot,
                evidence: "its operator publishes no ranges or domains".into(),
            };
        }
        _ => {}
    }
    // Outside a complete list older than its refresh interval (issue #52),
    // DNS may verify; a lookup that cannot tell leaves the list's word.
    let stale = entry.rdns_use() == Rdns::Complete;
    let unanswered = if stale { "spoofed" } else { "unverifiable" };
    let outside = if stale {
        "; it is in none of its published ranges, which its operator says are complete \
         (older than their refresh interval, so reverse DNS was asked)"
    } else {
        ""
    };
    let Some(dns) = dns else {
        return Report { outcome: unanswered, bot, evidence: format!("no resolver for reverse DNS{outside}") };
    };
    let (outcome, evidence) = match dns.verify(ip, &entry.rdns).await {
        DnsVerdict::Verified { ptr } => ("verified", format!("{ip} has PTR `{ptr}`, which resolves back to it")),
        DnsVerdict::Spoofed { reason } => ("spoofed", format!("reverse DNS: {reason}{outside}")),
        DnsVerdict::Unverifiable { reason } => (unanswered, format!("reverse DNS: {reason}{outside}")),
    };
    Report { outcome, bot, evidence }
}
