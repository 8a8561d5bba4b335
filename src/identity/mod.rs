//! Verified identity: is this client really the robot its User-Agent names?
//!
//! robotgate classifies by User-Agent, which anyone can send. Crawler
//! operators publish where their robots come from; this module turns that into
//! evidence, as pure data:
//!
//! * [`ranges`]: the operators' IP range feeds, parsed strictly and compiled
//!   into one [`RangeTable`]; a lookup is a binary search.
//! * [`check`]: the verdict for one bot entry and one client address.
//! * [`rdns`]: forward-confirmed reverse DNS against a bot's `rdns`
//!   suffixes, judged over answers the server layer (`server::dns`) fetched.
//!
//! Later slices: Web Bot Auth signatures, refreshing the feeds
//! (`robotgate feeds update`) and the proxy's use of the verdict.

pub mod ranges;
pub mod rdns;
pub mod signature;

use std::net::IpAddr;

pub use ranges::{
    is_builtin_feed, Feed, FeedError, FeedId, FeedInfo, Hit, Prefix, RangeTable, TableError, BUILTIN_FEEDS, FEED_URLS,
};

/// What the IP range feeds say about a client claiming to be a bot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Evidence {
    /// The address is in one of the bot's feeds.
    InRange {
        /// The feed that lists it.
        feed: FeedId,
        /// Its most specific prefix containing the address.
        prefix: Prefix,
    },
    /// The bot has feeds and the address is in none of them (it may be in
    /// another operator's feed: an address of Bing claiming to be Googlebot is
    /// `NotInRange`).
    NotInRange,
    /// The bot has no feed, so ranges cannot tell. Reverse DNS or a signature
    /// (later slices) may still.
    NoData,
}

impl Evidence {
    /// Whether this is [`Evidence::InRange`].
    pub fn is_in_range(&self) -> bool {
        matches!(self, Evidence::InRange { .. })
    }
}

/// Judges `ip` against the feeds a bot entry trusts (`entry_ranges`, resolved
/// once with [`resolve`]).
///
/// `NoData` when `entry_ranges` is empty; otherwise `InRange` for the first of
/// the entry's feeds (in table order) listing `ip`, else `NotInRange`.
/// IPv4-mapped IPv6 addresses are judged as IPv4.
///
/// Cost: one binary search plus a scan of the few feeds listing `ip`; no
/// allocation.
///
/// # Example
/// ```
/// use robotgate::identity::{check, resolve, Evidence, RangeTable};
/// let table = RangeTable::builtin();
/// let googlebot = resolve(&table, &["google-common-crawlers"]).unwrap();
/// assert!(check(&googlebot, &table, "66.249.66.1".parse().unwrap()).is_in_range());
/// assert_eq!(check(&googlebot, &table, "192.0.2.1".parse().unwrap()), Evidence::NotInRange);
/// assert_eq!(check(&[], &table, "66.249.66.1".parse().unwrap()), Evidence::NoData);
/// ```
pub fn check(entry_ranges: &[FeedId], table: &RangeTable, ip: IpAddr) -> Evidence {
    if entry_ranges.is_empty() {
        return Evidence::NoData;
    }
    match table.hits(ip).iter().find(|h| entry_ranges.contains(&h.feed)) {
        Some(h) => Evidence::InRange { feed: h.feed, prefix: h.prefix },
        None => Evidence::NotInRange,
    }
}

/// Whether a client is the robot its User-Agent names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Identity {
    /// Not a database robot: nothing is claimed that could be checked.
    NotClaimed,
    /// In one of the robot's published ranges, or its reverse DNS holds.
    Verified,
    /// The robot can be checked, and every check failed.
    Spoofed,
    /// The robot publishes nothing to check, or DNS did not answer in time.
    Unverifiable,
    /// Only a lookup not yet made can tell (reverse DNS): the caller makes it
    /// and decides again; until then this counts as unverifiable.
    Pending,
}

impl Identity {
    /// `not-claimed`, `verified`, `spoofed`, `unverifiable` (also for `Pending`).
    pub fn as_str(self) -> &'static str {
        match self {
            Identity::NotClaimed => "not-claimed",
            Identity::Verified => "verified",
            Identity::Spoofed => "spoofed",
            Identity::Unverifiable | Identity::Pending => "unverifiable",
        }
    }
}

/// Tells whether a client is the robot it claims to be. The proxy's
/// implementation answers at once from the range table and its DNS cache
/// (returning [`Identity::Pending`] when only a lookup can tell), so deciding
/// stays synchronous.
pub trait Identify {
    /// The identity of `client` claiming database entry `bot` (an index into
    /// the classifier's database).
    fn identify(&self, bot: usize, client: Option<IpAddr>) -> Identity;
}

/// Believes every claim: for callers that check nothing (tests, `check`).
pub struct TakeTheirWord;

impl Identify for TakeTheirWord {
    fn identify(&self, _bot: usize, _client: Option<IpAddr>) -> Identity {
        Identity::Unverifiable
    }
}

/// Checks claims against the range table alone (no DNS): `Verified` in a
/// range, `Spoofed` outside the ranges of a robot that publishes ranges and
/// no reverse DNS or whose ranges are complete, `Pending` when reverse DNS
/// could still tell, else `Unverifiable`.
#[derive(Clone, Copy)]
pub struct ByRanges<'a> {
    /// The compiled feeds.
    pub table: &'a RangeTable,
    /// Each database entry's feeds, by entry index.
    pub feeds: &'a [Vec<FeedId>],
    /// What reverse DNS can say of each database entry outside its ranges,
    /// by entry index ([`crate::agent::Bot::rdns_use`]).
    pub rdns: &'a [Rdns],
    /// How old (seconds) a complete list may be and still decide alone
    /// outside its ranges: the feeds' refresh interval (`verify.refresh`);
    /// `None`: at any age (refresh off: the operator keeps them current).
    pub complete_for: Option<u64>,
}

impl ByRanges<'_> {
    /// What a claim of `bot` comes to when reverse DNS, asked, could not
    /// tell (no answer in time, every slot busy, a resolver error):
    /// unverifiable, except for a robot whose operator says its list is
    /// complete. That robot is asked only because its list is older than
    /// its refresh interval (issue #52): DNS may then prove an address the
    /// list does not have yet, but a lookup that fails leaves the list's
    /// word, spoofed, so that a client who holds its own reverse zone
    /// silent gains nothing (issue #39).
    pub fn unanswered(&self, bot: usize) -> Identity {
        match self.rdns.get(bot) {
            Some(Rdns::Complete) => Identity::Spoofed,
            _ => Identity::Unverifiable,
        }
    }
}

impl Identify for ByRanges<'_> {
    fn identify(&self, bot: usize, client: Option<IpAddr>) -> Identity {
        let feeds = self.feeds.get(bot).map_or(&[][..], |f| &f[..]);
        let rdns = self.rdns.get(bot).copied().unwrap_or(Rdns::None);
        // No known client address (a trusted proxy named none): a robot that
        // can be checked cannot be this one (issue #32).
        let Some(ip) = client else {
            return if feeds.is_empty() && rdns == Rdns::None { Identity::Unverifiable } else { Identity::Spoofed };
        };
        match check(feeds, self.table, ip) {
            Evidence::InRange { .. } => Identity::Verified,
            // A loopback or private address is no public crawler's, and what
            // its reverse DNS says proves nothing: no lookup, and no verdict
            // either way for a robot with host names (a deployment where
            // every client looks local lacks `trusted_proxies`).
            _ if rdns != Rdns::None && is_local(ip) => Identity::Unverifiable,
            _ if rdns == Rdns::Asked => Identity::Pending,
            // Outside complete ranges that may be out of date (issue #52):
            // reverse DNS may prove an address added since.
            Evidence::NotInRange
                if rdns == Rdns::Complete
                    && !lists_current(feeds, self.table, self.complete_for, crate::time::Clock::System.unix_secs()) =>
            {
                Identity::Pending
            }
            // Outside complete ranges (issue #39), or ranges and no host names.
            Evidence::NotInRange => Identity::Spoofed,
            Evidence::NoData => Identity::Unverifiable,
        }
    }
}

/// What reverse DNS can say of a robot outside its published ranges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rdns {
    /// Its operator documents no host names: nothing.
    None,
    /// Forward-confirmed reverse DNS may verify it: ask.
    Asked,
    /// It has host names, but its operator says its ranges are complete
    /// (`ranges_complete`): outside them it is not the robot, and DNS is
    /// never asked (issue #39).
    Complete,
}

/// Whether every one of `feeds` is at most `max_age` seconds old at `now`
/// (Unix seconds), so that a robot's complete list may decide alone
/// outside its ranges; always with no `max_age`. A list of unknown age is
/// not current.
pub fn lists_current(feeds: &[FeedId], table: &RangeTable, max_age: Option<u64>, now: u64) -> bool {
    match max_age {
        None => true,
        Some(max) => feeds.iter().all(|&f| table.feed(f).is_fresh(now, max)),
    }
}

/// Loopback, private (RFC 1918, unique local), link-local or unspecified:
/// no public crawler's address.
pub fn is_local(ip: IpAddr) -> bool {
    match rdns::canonical(ip) {
        IpAddr::V4(v4) => v4.is_loopback() || v4.is_private() || v4.is_link_local() || v4.is_unspecified(),
        IpAddr::V6(v6) => {
            v6.is_loopback()
                || v6.is_unspecified()
                || (v6.segments()[0] & 0xfe00) == 0xfc00
                || (v6.segments()[0] & 0xffc0) == 0xfe80
        }
    }
}

/// [`ByRanges`] for callers that make no lookups: what only reverse DNS
/// could tell is what an unanswered lookup comes to
/// ([`ByRanges::unanswered`]).
pub struct RangesOnly<'a>(pub ByRanges<'a>);

impl Identify for RangesOnly<'_> {
    fn identify(&self, bot: usize, client: Option<IpAddr>) -> Identity {
        match self.0.identify(bot, client) {
            Identity::Pending => self.0.unanswered(bot),
            other => other,
        }
    }
}

/// Resolves feed names (a bot entry's `ip_ranges`) to ids of `table`.
///
/// # Errors
/// The first name `table` does not have.
pub fn resolve<S: AsRef<str>>(table: &RangeTable, names: &[S]) -> Result<Vec<FeedId>, String> {
    names.iter().map(|n| table.feed_id(n.as_ref()).ok_or_else(|| n.as_ref().to_owned())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn table() -> RangeTable {
        RangeTable::compile(&[
            ("google", r#"{"prefixes": [{"ipv4Prefix": "66.249.64.0/27"}, {"ipv6Prefix": "2001:4860:4801:10::/64"}]}"#),
            ("bing", r#"{"prefixes": [{"ipv4Prefix": "157.55.39.0/24"}, {"ipv4Prefix": "66.249.64.16/28"}]}"#),
        ])
        .unwrap()
    }

    #[test]
    fn in_range_names_feed_and_prefix() {
        let t = table();
        let g = resolve(&t, &["google"]).unwrap();
        match check(&g, &t, ip("66.249.64.1")) {
            Evidence::InRange { feed, prefix } => {
                assert_eq!(t.feed(feed).name, "google");
                assert_eq!(prefix.to_string(), "66.249.64.0/27");
            }
            other => panic!("{other:?}"),
        }
        assert!(check(&g, &t, ip("::ffff:66.249.64.1")).is_in_range());
        assert!(check(&g, &t, ip("2001:4860:4801:10::abcd")).is_in_range());
    }

    #[test]
    fn another_operators_range_is_not_verification() {
        let t = table();
        let g = resolve(&t, &["google"]).unwrap();
        // A Bing address claiming to be Googlebot.
        assert_eq!(check(&g, &t, ip("157.55.39.7")), Evidence::NotInRange);
        // In both feeds: verified for each, by its own feed.
        let b = resolve(&t, &["bing"]).unwrap();
        match check(&b, &t, ip("66.249.64.20")) {
            Evidence::InRange { feed, prefix } => {
                assert_eq!(t.feed(feed).name, "bing");
                assert_eq!(prefix.to_string(), "66.249.64.16/28");
            }
            other => panic!("{other:?}"),
        }
        assert!(check(&g, &t, ip("66.249.64.20")).is_in_range());
    }

    #[test]
    fn issue_52_a_complete_list_older_than_its_refresh_lets_dns_verify() {
        let t = table();
        let google = resolve(&t, &["google"]).unwrap();
        let feeds = vec![google];
        let rdns = [Rdns::Complete];
        // The test feed is dated 2026-08-21 (no creationTime: unknown age).
        let now = crate::time::Clock::System.unix_secs();
        let age = t.feed(feeds[0][0]).age(now);
        assert_eq!(age, None, "a feed without a date has no known age");
        let by = |complete_for| ByRanges { table: &t, feeds: &feeds, rdns: &rdns, complete_for };
        let outside = Some(ip("192.0.2.7"));
        assert_eq!(by(None).identify(0, outside), Identity::Spoofed, "refresh off: the list decides alone");
        assert_eq!(by(Some(86_400)).identify(0, outside), Identity::Pending, "unknown age: DNS may verify");
        assert_eq!(by(Some(86_400)).unanswered(0), Identity::Spoofed, "an unanswered lookup leaves the list's word");
        assert_eq!(RangesOnly(by(Some(86_400))).identify(0, outside), Identity::Spoofed);
        assert_eq!(by(Some(86_400)).identify(0, Some(ip("66.249.64.1"))), Identity::Verified);
        // Known current: decides alone again.
        let mut fresh = table();
        fresh.known_current_at(fresh.feed_id("google").unwrap(), now - 60);
        let by = ByRanges { table: &fresh, feeds: &feeds, rdns: &rdns, complete_for: Some(86_400) };
        assert_eq!(by.identify(0, outside), Identity::Spoofed);
        assert!(lists_current(&feeds[0], &fresh, Some(86_400), now));
        assert!(!lists_current(&feeds[0], &fresh, Some(30), now), "older than a 30 s interval");
        // An Asked robot's unanswered lookup stays unverifiable.
        let asked = [Rdns::Asked];
        let by = ByRanges { table: &fresh, feeds: &feeds, rdns: &asked, complete_for: Some(86_400) };
        assert_eq!(by.unanswered(0), Identity::Unverifiable);
    }

    #[test]
    fn no_feeds_is_no_data() {
        let t = table();
        assert_eq!(check(&[], &t, ip("66.249.64.1")), Evidence::NoData);
        assert_eq!(check(&[], &t, ip("192.0.2.1")), Evidence::NoData);
    }

    #[test]
    fn resolve_reports_unknown_names() {
        let t = table();
        assert_eq!(resolve(&t, &["google", "nope"]), Err("nope".to_owned()));
        assert_eq!(resolve(&t, &["bing", "google"]).unwrap().len(), 2);
    }

    #[test]
    fn builtin_bot_db_links_resolve() {
        let t = RangeTable::builtin();
        let db = crate::agent::BotDb::builtin();
        for bot in db.bots() {
            resolve(&t, &bot.ip_ranges).unwrap_or_else(|n| panic!("{}: feed `{n}`", bot.name));
        }
        let googlebot = resolve(&t, &db.get("Googlebot").unwrap().ip_ranges).unwrap();
        assert!(check(&googlebot, &t, ip("66.249.66.1")).is_in_range());
        // A GPTBot address claiming to be Googlebot.
        assert_eq!(check(&googlebot, &t, ip("132.196.86.1")), Evidence::NotInRange);
        let gptbot = resolve(&t, &db.get("GPTBot").unwrap().ip_ranges).unwrap();
        assert!(check(&gptbot, &t, ip("132.196.86.1")).is_in_range());
        // The mirrored feeds (issue #29): Bing, Perplexity, Common Crawl.
        let bingbot = resolve(&t, &db.get("bingbot").unwrap().ip_ranges).unwrap();
        assert_eq!(check(&bingbot, &t, ip("1.2.3.4")), Evidence::NotInRange);
        assert!(check(&bingbot, &t, ip("157.55.39.7")).is_in_range());
        let user = resolve(&t, &db.get("Perplexity-User").unwrap().ip_ranges).unwrap();
        assert!(check(&user, &t, ip("18.97.43.81")).is_in_range());
        let ccbot = resolve(&t, &db.get("CCBot").unwrap().ip_ranges).unwrap();
        assert!(check(&ccbot, &t, ip("18.97.14.81")).is_in_range());
        // Apple's and DuckDuckGo's feeds: a /27 and single addresses.
        let applebot = resolve(&t, &db.get("Applebot").unwrap().ip_ranges).unwrap();
        assert!(check(&applebot, &t, ip("17.241.208.170")).is_in_range());
        assert_eq!(check(&applebot, &t, ip("17.241.208.200")), Evidence::NotInRange);
        let duckduckbot = resolve(&t, &db.get("DuckDuckBot").unwrap().ip_ranges).unwrap();
        assert!(check(&duckduckbot, &t, ip("20.191.45.212")).is_in_range());
        assert_eq!(check(&duckduckbot, &t, ip("20.191.45.213")), Evidence::NotInRange);
    }
}
