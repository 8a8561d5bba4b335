//! Who a client is, as the proxy can tell: the published ranges (core), the
//! reverse-DNS cache ([`crate::server::verify::dns`]) and a verified Web Bot Auth signature
//! ([`crate::server::verify::wba`]), combined behind the core's [`Identify`].
//!
//! Deciding stays synchronous: a claim only reverse DNS can settle comes back
//! as [`Identity::Pending`]; the proxy then awaits one bounded lookup
//! ([`DnsVerifier::verify`]) and decides again, now answered from the cache.
//! Browsers and robots that publish nothing never reach DNS.

use std::net::IpAddr;

use crate::identity::rdns::suffix_matches;
use crate::identity::{Identify, Identity};
use crate::load::Snapshot;
use crate::server::verify::dns::{DnsVerdict, DnsVerifier};

/// The proxy's identity check for one request.
pub struct ServerIdentity<'a> {
    /// The snapshot (range table, bot database).
    pub snap: &'a Snapshot,
    /// The reverse-DNS verifier, when one could be set up.
    pub dns: Option<&'a DnsVerifier>,
    /// The host of the Web Bot Auth agent whose signature on this request
    /// verified, if any.
    pub signed_by: Option<&'a str>,
}

impl Identify for ServerIdentity<'_> {
    fn identify(&self, bot: usize, client: Option<IpAddr>) -> Identity {
        let entry = self.snap.classifier.bot(bot);
        if let Some(host) = self.signed_by {
            // A signature proves the agent; it is this robot only if the
            // robot's operator signs as that agent.
            if entry.signature_agents.iter().chain(&entry.rdns).any(|s| suffix_matches(host, s)) {
                return Identity::Verified;
            }
        }
        match self.snap.by_ranges().identify(bot, client) {
            // (A private or loopback address never gets here: it proves nothing.)
            Identity::Pending => match (self.dns, client) {
                (Some(dns), Some(ip)) => match dns.cached(ip, &entry.rdns) {
                    Some(DnsVerdict::Verified { .. }) => Identity::Verified,
                    Some(DnsVerdict::Spoofed { .. }) => Identity::Spoofed,
                    Some(DnsVerdict::Unverifiable { .. }) => Identity::Unverifiable,
                    None => Identity::Pending,
                },
                _ => Identity::Unverifiable,
            },
            other => other,
        }
    }
}

/// [`ServerIdentity`] after the lookup was made: what DNS still could not
/// tell (busy, timed out and not cached) is unverifiable, never pending.
pub struct Settled<'a>(pub ServerIdentity<'a>);

impl Identify for Settled<'_> {
    fn identify(&self, bot: usize, client: Option<IpAddr>) -> Identity {
        match self.0.identify(bot, client) {
            Identity::Pending => Identity::Unverifiable,
            other => other,
        }
    }
}

/// [`ServerIdentity`] for offline callers (`robotgate replay --dns`): what
/// only reverse DNS can tell is looked up on the spot, blocking the calling
/// thread on `runtime` (bounded by the resolver's timeout), and cached.
pub struct LookingUp<'a> {
    /// The snapshot (database, ranges).
    pub snap: &'a Snapshot,
    /// The resolver.
    pub dns: &'a DnsVerifier,
    /// Where lookups run.
    pub runtime: &'a tokio::runtime::Handle,
}

impl Identify for LookingUp<'_> {
    fn identify(&self, bot: usize, client: Option<IpAddr>) -> Identity {
        let server = ServerIdentity { snap: self.snap, dns: Some(self.dns), signed_by: None };
        match (server.identify(bot, client), client) {
            (Identity::Pending, Some(ip)) => {
                self.runtime.block_on(self.dns.verify(ip, &self.snap.classifier.bot(bot).rdns));
                Settled(server).identify(bot, client)
            }
            (other, _) => other,
        }
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
pub async fn report(
    classifier: &crate::agent::Classifier,
    ranges: &crate::identity::RangeTable,
    dns: Option<&DnsVerifier>,
    ip: IpAddr,
    user_agent: &[u8],
) -> Report {
    use crate::agent::AgentKind;
    use crate::identity::{check, is_local, resolve, Evidence, Rdns};
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
        Evidence::NotInRange if entry.rdns_use() != Rdns::Asked => {
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
    let Some(dns) = dns else {
        return Report { outcome: "unverifiable", bot, evidence: "no resolver for reverse DNS".into() };
    };
    let (outcome, evidence) = match dns.verify(ip, &entry.rdns).await {
        DnsVerdict::Verified { ptr } => ("verified", format!("{ip} has PTR `{ptr}`, which resolves back to it")),
        DnsVerdict::Spoofed { reason } => ("spoofed", format!("reverse DNS: {reason}")),
        DnsVerdict::Unverifiable { reason } => ("unverifiable", format!("reverse DNS: {reason}")),
    };
    Report { outcome, bot, evidence }
}
