//! The named feeds compiled into one [`RangeTable`], and the feeds shipped
//! with robotgate.

use std::net::IpAddr;

use super::feed::{Feed, FeedError};
use super::hit::{FeedId, Hit};
use super::intervals::{build, Intervals};
use super::prefix::canonical;

/// Most feeds one table holds (feed ids are `u16`).
pub const MAX_FEEDS: usize = 1024;

/// What a table knows about one of its feeds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeedInfo {
    /// The feed's name (`google-common-crawlers`), as bots.yaml refers to it.
    pub name: String,
    /// The feed's own `creationTime`.
    pub creation_time: Option<String>,
    /// How many prefixes it listed.
    pub prefix_count: usize,
    /// When the list was last known to be the operator's current one (Unix
    /// seconds): its `creationTime`, or later when the loader knows it was
    /// fetched since ([`RangeTable::known_current_at`]); `None`: unknown.
    pub as_of: Option<u64>,
}

impl FeedInfo {
    /// Seconds since the list was last known current at `now` (Unix
    /// seconds); `None` when that is unknown.
    pub fn age(&self, now: u64) -> Option<u64> {
        self.as_of.map(|t| now.saturating_sub(t))
    }

    /// Whether the list is at most `max_age` seconds old at `now`: a list of
    /// unknown age is not.
    pub fn is_fresh(&self, now: u64, max_age: u64) -> bool {
        self.age(now).is_some_and(|a| a <= max_age)
    }
}

/// What is wrong with a set of feeds given to [`RangeTable::compile`].
#[derive(Debug, thiserror::Error)]
pub enum TableError {
    /// One feed does not parse.
    #[error("feed `{name}`: {source}")]
    Feed {
        /// The feed's name.
        name: String,
        /// Why.
        #[source]
        source: FeedError,
    },
    /// A feed name is empty or not lowercase letters, digits and `-`.
    #[error("feed name `{name}`: use lowercase letters, digits and `-`")]
    Name {
        /// The name as given.
        name: String,
    },
    /// Two feeds have one name.
    #[error("feed name `{name}` is used twice")]
    Duplicate {
        /// The name.
        name: String,
    },
    /// More than [`MAX_FEEDS`] feeds.
    #[error("{count} feeds, more than the {MAX_FEEDS} accepted")]
    TooMany {
        /// How many were given.
        count: usize,
    },
}

/// All compiled feeds: which feed(s) list an address.
///
/// Immutable once built; share it behind an `Arc` and swap it whole when feeds
/// change, like the rest of the snapshot.
#[derive(Debug, Clone, Default)]
pub struct RangeTable {
    feeds: Vec<FeedInfo>,
    v4: Intervals<u32>,
    v6: Intervals<u128>,
}

/// The feeds shipped in `conf/feeds/` (see `conf/feeds/SOURCES.md`), by name.
pub const BUILTIN_FEEDS: &[(&str, &str)] = &[
    ("google-common-crawlers", include_str!("../../../conf/feeds/google-common-crawlers.json")),
    ("google-special-crawlers", include_str!("../../../conf/feeds/google-special-crawlers.json")),
    ("google-user-triggered-fetchers", include_str!("../../../conf/feeds/google-user-triggered-fetchers.json")),
    ("openai-gptbot", include_str!("../../../conf/feeds/openai-gptbot.json")),
    ("openai-searchbot", include_str!("../../../conf/feeds/openai-searchbot.json")),
    ("openai-chatgpt-user", include_str!("../../../conf/feeds/openai-chatgpt-user.json")),
    ("apple-applebot", include_str!("../../../conf/feeds/apple-applebot.json")),
    ("duckduckgo-duckduckbot", include_str!("../../../conf/feeds/duckduckgo-duckduckbot.json")),
    ("bing-bingbot", include_str!("../../../conf/feeds/bing-bingbot.json")),
    ("perplexity-perplexitybot", include_str!("../../../conf/feeds/perplexity-perplexitybot.json")),
    ("perplexity-user", include_str!("../../../conf/feeds/perplexity-user.json")),
    ("commoncrawl-ccbot", include_str!("../../../conf/feeds/commoncrawl-ccbot.json")),
    (
        "google-user-triggered-fetchers-google",
        include_str!("../../../conf/feeds/google-user-triggered-fetchers-google.json"),
    ),
    ("google-user-triggered-agents", include_str!("../../../conf/feeds/google-user-triggered-agents.json")),
];

/// Where each embedded feed is published (the operators' own URLs), for
/// `robotgate feeds update`.
pub const FEED_URLS: &[(&str, &str)] = &[
    ("google-common-crawlers", "https://developers.google.com/static/crawling/ipranges/common-crawlers.json"),
    ("google-special-crawlers", "https://developers.google.com/static/crawling/ipranges/special-crawlers.json"),
    (
        "google-user-triggered-fetchers",
        "https://developers.google.com/static/crawling/ipranges/user-triggered-fetchers.json",
    ),
    ("openai-gptbot", "https://openai.com/gptbot.json"),
    ("openai-searchbot", "https://openai.com/searchbot.json"),
    ("openai-chatgpt-user", "https://openai.com/chatgpt-user.json"),
    ("apple-applebot", "https://search.developer.apple.com/applebot.json"),
    ("duckduckgo-duckduckbot", "https://duckduckgo.com/duckduckbot.json"),
    ("bing-bingbot", "https://www.bing.com/toolbox/bingbot.json"),
    ("perplexity-perplexitybot", "https://www.perplexity.ai/perplexitybot.json"),
    ("perplexity-user", "https://www.perplexity.ai/perplexity-user.json"),
    ("commoncrawl-ccbot", "https://index.commoncrawl.org/ccbot.json"),
    (
        "google-user-triggered-fetchers-google",
        "https://developers.google.com/static/search/apis/ipranges/user-triggered-fetchers-google.json",
    ),
    (
        "google-user-triggered-agents",
        "https://developers.google.com/static/search/apis/ipranges/user-triggered-agents.json",
    ),
];

/// Whether `name` is one of [`BUILTIN_FEEDS`].
pub fn is_builtin_feed(name: &str) -> bool {
    BUILTIN_FEEDS.iter().any(|(n, _)| *n == name)
}

impl RangeTable {
    /// Parses and compiles named feed documents (`(name, json)`).
    ///
    /// Feed ids follow the order given. Build cost is O(n log n) in the total
    /// number of prefixes; do it at start-up or reload, never per request.
    ///
    /// # Errors
    /// [`TableError`] for the first bad name or feed.
    pub fn compile(feeds: &[(&str, &str)]) -> Result<RangeTable, TableError> {
        let parsed = feeds
            .iter()
            .map(|&(name, text)| {
                Feed::parse(text)
                    .map(|f| (name.to_owned(), f))
                    .map_err(|source| TableError::Feed { name: name.to_owned(), source })
            })
            .collect::<Result<Vec<_>, _>>()?;
        RangeTable::from_feeds(parsed)
    }

    /// Compiles already parsed feeds.
    ///
    /// # Errors
    /// [`TableError`] for a bad or duplicate name, or too many feeds.
    pub fn from_feeds(feeds: Vec<(String, Feed)>) -> Result<RangeTable, TableError> {
        if feeds.len() > MAX_FEEDS {
            return Err(TableError::TooMany { count: feeds.len() });
        }
        let mut infos: Vec<FeedInfo> = Vec::with_capacity(feeds.len());
        let mut v4 = Vec::new();
        let mut v6 = Vec::new();
        for (i, (name, feed)) in feeds.into_iter().enumerate() {
            if name.is_empty() || !name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-') {
                return Err(TableError::Name { name });
            }
            if infos.iter().any(|f| f.name == name) {
                return Err(TableError::Duplicate { name });
            }
            let id = FeedId(u16::try_from(i).expect("at most MAX_FEEDS feeds, checked above"));
            for &p in &feed.prefixes {
                let hit = Hit { feed: id, prefix: p };
                match p.addr {
                    IpAddr::V4(_) => v4.push((p.first() as u32, p.last() as u32, hit)),
                    IpAddr::V6(_) => v6.push((p.first(), p.last(), hit)),
                }
            }
            let as_of = feed.created_unix();
            infos.push(FeedInfo { name, creation_time: feed.creation_time, prefix_count: feed.prefixes.len(), as_of });
        }
        Ok(RangeTable { feeds: infos, v4: build(v4), v6: build(v6) })
    }

    /// The feeds shipped with robotgate ([`BUILTIN_FEEDS`]).
    ///
    /// # Panics
    /// Only if an embedded feed is invalid; a unit test proves none is.
    pub fn builtin() -> RangeTable {
        RangeTable::with_overrides(&[]).expect("embedded conf/feeds/*.json are valid (identity::ranges tests)")
    }

    /// The embedded feeds, with those named in `overrides` replaced (and
    /// other names added): how a directory of fresher or site-specific feeds
    /// (`verify.feeds`) comes into force.
    ///
    /// # Errors
    /// An override that does not parse, or a bad name.
    pub fn with_overrides(overrides: &[(&str, &str)]) -> Result<RangeTable, TableError> {
        let mut feeds: Vec<(&str, &str)> =
            BUILTIN_FEEDS.iter().filter(|(n, _)| !overrides.iter().any(|(o, _)| o == n)).copied().collect();
        feeds.extend_from_slice(overrides);
        RangeTable::compile(&feeds)
    }

    /// Note that feed `id` was known to be its operator's current list at
    /// `unix_secs` (it was fetched then): its age counts from then, unless
    /// its own date is later. For the loader, before the table is shared.
    ///
    /// # Panics
    /// If `id` comes from another table with fewer feeds.
    pub fn known_current_at(&mut self, id: FeedId, unix_secs: u64) {
        let info = &mut self.feeds[id.index()];
        info.as_of = Some(info.as_of.map_or(unix_secs, |t| t.max(unix_secs)));
    }

    /// The feeds, in id order.
    pub fn feeds(&self) -> &[FeedInfo] {
        &self.feeds
    }

    /// `robotgate_feed_age_seconds`'s series at `now` (Unix seconds): each
    /// feed's name and age ([`FeedInfo::age`]), those of unknown age left out.
    pub fn ages(&self, now: u64) -> impl Iterator<Item = (&str, u64)> {
        self.feeds.iter().filter_map(move |f| Some((f.name.as_str(), f.age(now)?)))
    }

    /// A feed's id by name (exact, names are lowercase).
    pub fn feed_id(&self, name: &str) -> Option<FeedId> {
        self.feeds.iter().position(|f| f.name == name).map(|i| FeedId(i as u16))
    }

    /// A feed's description.
    ///
    /// # Panics
    /// If `id` comes from another table with fewer feeds.
    pub fn feed(&self, id: FeedId) -> &FeedInfo {
        &self.feeds[id.index()]
    }

    /// Number of disjoint intervals (IPv4, IPv6) the feeds compiled to.
    pub fn interval_counts(&self) -> (usize, usize) {
        (self.v4.starts.len(), self.v6.starts.len())
    }

    /// Every feed listing `ip`, in feed order, each with its most specific
    /// prefix containing `ip`. IPv4-mapped IPv6 addresses are looked up as
    /// IPv4.
    ///
    /// Cost: one binary search over the family's intervals; no allocation.
    pub fn hits(&self, ip: IpAddr) -> &[Hit] {
        match canonical(ip) {
            IpAddr::V4(a) => self.v4.find(u32::from(a)),
            IpAddr::V6(a) => self.v6.find(u128::from(a)),
        }
    }

    /// The first feed (lowest id) listing `ip`, if any. See [`RangeTable::hits`].
    pub fn lookup(&self, ip: IpAddr) -> Option<FeedId> {
        self.hits(ip).first().map(|h| h.feed)
    }
}

#[cfg(test)]
mod tests {
    use std::str::FromStr;

    use super::super::testkit::*;
    use super::super::*;

    fn table() -> RangeTable {
        let g = feed(&["66.249.64.0/27", "66.249.64.32/27", "2001:4860:4801:10::/64"]);
        let b = feed(&["157.55.39.0/24", "66.249.64.16/28"]);
        RangeTable::compile(&[("google", &g), ("bing", &b)]).unwrap()
    }

    #[test]
    fn lookup_names_the_feed() {
        let t = table();
        let google = t.feed_id("google").unwrap();
        let bing = t.feed_id("bing").unwrap();
        assert_eq!(t.lookup(ip("66.249.64.1")), Some(google));
        assert_eq!(t.lookup(ip("66.249.64.63")), Some(google));
        assert_eq!(t.lookup(ip("66.249.64.64")), None);
        assert_eq!(t.lookup(ip("157.55.39.200")), Some(bing));
        assert_eq!(t.lookup(ip("2001:4860:4801:10::1")), Some(google));
        assert_eq!(t.lookup(ip("2001:4860:4801:11::1")), None);
        assert_eq!(t.lookup(ip("192.0.2.1")), None);
        assert_eq!(t.lookup(ip("::1")), None);
    }

    #[test]
    fn overlapping_feeds_are_all_reported() {
        let t = table();
        let hits = t.hits(ip("66.249.64.20"));
        let names: Vec<(&str, String)> =
            hits.iter().map(|h| (t.feed(h.feed).name.as_str(), h.prefix.to_string())).collect();
        assert_eq!(names, [("google", "66.249.64.0/27".into()), ("bing", "66.249.64.16/28".into())]);
        assert_eq!(t.hits(ip("66.249.64.15")).len(), 1);
        assert_eq!(t.hits(ip("66.249.64.32")).len(), 1);
    }

    #[test]
    fn nested_prefixes_report_the_most_specific() {
        let f = feed(&["10.0.0.0/8", "10.1.0.0/16"]);
        let t = RangeTable::compile(&[("x", &f)]).unwrap();
        assert_eq!(t.hits(ip("10.1.2.3"))[0].prefix.to_string(), "10.1.0.0/16");
        assert_eq!(t.hits(ip("10.2.0.0"))[0].prefix.to_string(), "10.0.0.0/8");
        assert_eq!(t.interval_counts(), (3, 0));
    }

    #[test]
    fn ipv4_mapped_ipv6_counts_as_ipv4() {
        let t = table();
        assert_eq!(t.lookup(ip("::ffff:66.249.64.1")), t.feed_id("google"));
        assert!(Prefix::from_str("66.249.64.0/27").unwrap().contains(ip("::ffff:66.249.64.1")));
    }

    #[test]
    fn edges_of_the_address_space() {
        let f = feed(&["255.255.255.0/24", "255.0.0.0/8", "ffff:ffff::/32"]);
        let t = RangeTable::compile(&[("edge", &f)]).unwrap();
        assert!(t.lookup(ip("255.255.255.255")).is_some());
        assert!(t.lookup(ip("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff")).is_some());
        assert!(t.lookup(ip("254.255.255.255")).is_none());
    }

    #[test]
    fn bad_names_and_feeds_are_named() {
        let g = feed(&["66.249.64.0/27"]);
        assert!(matches!(RangeTable::compile(&[("Google", &g)]), Err(TableError::Name { .. })));
        assert!(matches!(RangeTable::compile(&[("", &g)]), Err(TableError::Name { .. })));
        assert!(matches!(RangeTable::compile(&[("a", &g), ("a", &g)]), Err(TableError::Duplicate { .. })));
        let e = RangeTable::compile(&[("a", &g), ("b", r#"{"prefixes": []}"#)]).unwrap_err();
        assert!(e.to_string().starts_with("feed `b`: "), "{e}");
    }

    #[test]
    fn builtin_feeds_parse_and_are_not_empty() {
        for (name, text) in BUILTIN_FEEDS {
            let f = Feed::parse(text).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(!f.prefixes.is_empty(), "{name}");
            // The mirrored lists carry no creationTime (conf/feeds/SOURCES.md).
            let mirrored = [
                "bing-",
                "perplexity-",
                "commoncrawl-",
                "google-user-triggered-fetchers-google",
                "google-user-triggered-agents",
            ];
            assert!(f.creation_time.is_some() || mirrored.iter().any(|m| name.starts_with(m)), "{name}");
        }
        let t = RangeTable::builtin();
        assert_eq!(t.feeds().len(), BUILTIN_FEEDS.len());
        for (name, _) in BUILTIN_FEEDS {
            assert!(is_builtin_feed(name));
            assert!(t.feed_id(name).is_some());
        }
    }

    #[test]
    fn builtin_data_facts() {
        // What the 2026-08-21 snapshot says (conf/feeds/SOURCES.md).
        let t = RangeTable::builtin();
        let names = |s: &str| -> Vec<&str> { t.hits(ip(s)).iter().map(|h| t.feed(h.feed).name.as_str()).collect() };
        assert_eq!(names("66.249.66.1"), ["google-common-crawlers"]);
        assert_eq!(t.hits(ip("66.249.66.1"))[0].prefix.to_string(), "66.249.66.0/27");
        assert_eq!(names("2001:4860:4801:10::1"), ["google-common-crawlers"]);
        assert_eq!(names("132.196.86.1"), ["openai-gptbot"]);
        assert!(names("192.0.2.1").is_empty());
        assert!(names("8.8.8.8").is_empty());
    }
}
