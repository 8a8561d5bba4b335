//! Who a client is, as the proxy can tell: the published ranges (core), the
//! reverse-DNS cache ([`super::dns`]) and a verified Web Bot Auth signature
//! ([`super::wba`]), combined behind the core's [`Identify`].
//!
//! Deciding stays synchronous: a claim only reverse DNS can settle comes back
//! as [`Identity::Pending`]; the proxy then awaits one bounded lookup
//! ([`DnsVerifier::verify`]) and decides again, now answered from the cache.
//! Browsers and robots that publish nothing never reach DNS.

use std::net::IpAddr;

use super::dns::{DnsVerdict, DnsVerifier};
use super::snapshot::Snapshot;
use crate::identity::rdns::suffix_matches;
use crate::identity::{Identify, Identity};

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
            Identity::Pending => match (self.dns, client) {
                // A private or loopback address is no public crawler's, and
                // its reverse DNS proves nothing: no lookup.
                (_, Some(ip)) if is_local(ip) => Identity::Unverifiable,
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

/// Loopback, private (RFC 1918, unique local), link-local or unspecified.
fn is_local(ip: IpAddr) -> bool {
    match crate::identity::rdns::canonical(ip) {
        IpAddr::V4(v4) => v4.is_loopback() || v4.is_private() || v4.is_link_local() || v4.is_unspecified(),
        IpAddr::V6(v6) => {
            v6.is_loopback()
                || v6.is_unspecified()
                || (v6.segments()[0] & 0xfe00) == 0xfc00
                || (v6.segments()[0] & 0xffc0) == 0xfe80
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
