//! Crawler IP range feeds and the prefix table compiled from them.
//!
//! Operators publish the addresses their crawlers use as JSON, all in one
//! shape (Google, Bing, OpenAI, Perplexity, Apple, ...):
//!
//! ```json
//! {"creationTime": "2026-08-21T14:45:42.000000",
//!  "prefixes": [{"ipv4Prefix": "66.249.64.0/27"}, {"ipv6Prefix": "2001:4860:4801:10::/64"}]}
//! ```
//!
//! [`Feed::parse`] is strict on purpose: a feed replaces the addresses a site
//! trusts, so anything unexpected (unknown keys, no prefixes, a bad CIDR) is an
//! error and the caller keeps the feed it had. Google's retired feed URLs still
//! answer 200 with a JSON object without prefixes; that is [`FeedError::Empty`].
//!
//! [`RangeTable::compile`] turns named feeds into one immutable table of
//! sorted, disjoint address intervals (one for IPv4, one for IPv6); a lookup is
//! a binary search and allocates nothing.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

use serde::Deserialize;

/// Largest feed text [`Feed::parse`] accepts (the biggest published feed,
/// Google's user-triggered fetchers, is about 70 KiB).
pub const MAX_FEED_BYTES: usize = 4 * 1024 * 1024;

/// Most prefixes one feed may list (Google's largest lists about 1,000).
pub const MAX_PREFIXES: usize = 100_000;

/// Shortest IPv4 prefix accepted. A feed that claims more than a /8 is broken
/// or hostile: it would "verify" a large part of the internet.
pub const MIN_V4_LEN: u8 = 8;

/// Shortest IPv6 prefix accepted, for the same reason as [`MIN_V4_LEN`].
pub const MIN_V6_LEN: u8 = 16;

/// Most feeds one table holds (feed ids are `u16`).
pub const MAX_FEEDS: usize = 1024;

/// One CIDR prefix: a network address (host bits zero) and a length.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Prefix {
    addr: IpAddr,
    len: u8,
}

impl Prefix {
    /// A prefix from its parts.
    ///
    /// # Errors
    /// A reason when `len` is too long for the family or `addr` has host bits
    /// set.
    pub fn new(addr: IpAddr, len: u8) -> Result<Prefix, String> {
        let max = match addr {
            IpAddr::V4(_) => 32,
            IpAddr::V6(_) => 128,
        };
        if len > max {
            return Err(format!("prefix length /{len} is longer than {max}"));
        }
        let p = Prefix { addr, len };
        if p.first() != key(addr) {
            return Err(format!("host bits are set (the network is {})", Prefix { addr: p.network_addr(), len }));
        }
        Ok(p)
    }

    /// The network address.
    pub fn addr(&self) -> IpAddr {
        self.addr
    }

    /// The prefix length in bits.
    pub fn length(&self) -> u8 {
        self.len
    }

    /// Whether `ip` is inside. An IPv4-mapped IPv6 address (`::ffff:a.b.c.d`)
    /// counts as the IPv4 address it carries.
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        match (self.addr, ip) {
            (IpAddr::V4(_), IpAddr::V4(_)) | (IpAddr::V6(_), IpAddr::V6(_)) => {
                (self.first()..=self.last()).contains(&key(ip))
            }
            _ => false,
        }
    }

    /// Bits of the family (32 or 128).
    fn bits(&self) -> u32 {
        match self.addr {
            IpAddr::V4(_) => 32,
            IpAddr::V6(_) => 128,
        }
    }

    /// Host mask within the family's width, as u128.
    fn host_mask(&self) -> u128 {
        let host = self.bits() - u32::from(self.len);
        if host == 0 {
            0
        } else {
            u128::MAX >> (128 - host)
        }
    }

    /// First address, as the family's integer widened to u128.
    fn first(&self) -> u128 {
        key(self.addr) & !self.host_mask()
    }

    /// Last address, likewise.
    fn last(&self) -> u128 {
        self.first() | self.host_mask()
    }

    fn network_addr(&self) -> IpAddr {
        match self.addr {
            IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::from(self.first() as u32)),
            IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::from(self.first())),
        }
    }
}

impl fmt::Display for Prefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.len)
    }
}

impl FromStr for Prefix {
    type Err = String;

    /// Parses `addr/len`; host bits must be zero (see [`Feed::parse`]).
    fn from_str(s: &str) -> Result<Prefix, String> {
        let (addr, len) = s.split_once('/').ok_or_else(|| "not `address/length`".to_owned())?;
        let addr: IpAddr = addr.parse().map_err(|_| format!("`{addr}` is not an IP address"))?;
        // Digits only: u8::from_str would accept `+24`.
        if len.is_empty() || len.len() > 3 || !len.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!("`{len}` is not a prefix length"));
        }
        let len: u8 = len.parse().map_err(|_| format!("`{len}` is not a prefix length"))?;
        Prefix::new(addr, len)
    }
}

/// The address as an integer of its family, widened to u128.
fn key(ip: IpAddr) -> u128 {
    match ip {
        IpAddr::V4(a) => u128::from(u32::from(a)),
        IpAddr::V6(a) => u128::from(a),
    }
}

/// IPv4-mapped IPv6 addresses (`::ffff:a.b.c.d`, what a dual-stack socket
/// reports for an IPv4 peer) become the IPv4 address they carry.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => ip,
        },
        v4 => v4,
    }
}

/// A parsed, validated feed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Feed {
    /// The feed's own `creationTime`, as written (not interpreted).
    pub creation_time: Option<String>,
    /// Its prefixes, in feed order (duplicates kept; they are harmless).
    pub prefixes: Vec<Prefix>,
}

/// What is wrong with a feed document.
#[derive(Debug, thiserror::Error)]
pub enum FeedError {
    /// Larger than [`MAX_FEED_BYTES`].
    #[error("feed is {bytes} bytes, more than the {max} accepted")]
    TooLarge {
        /// Size of the text given.
        bytes: usize,
        /// The limit.
        max: usize,
    },
    /// Not JSON, or not the `{"creationTime", "prefixes": [...]}` shape
    /// (unknown keys included).
    #[error("not a crawler IP range feed: {0}")]
    Shape(#[source] serde_json::Error),
    /// No prefixes at all: a retired or broken URL, never a real feed.
    #[error("feed lists no prefixes (a retired URL or an error page?); keeping the previous feed is safer")]
    Empty,
    /// More than [`MAX_PREFIXES`] prefixes.
    #[error("feed lists {count} prefixes, more than the {max} accepted")]
    TooMany {
        /// How many were listed.
        count: usize,
        /// The limit.
        max: usize,
    },
    /// One prefix entry is bad.
    #[error("prefixes[{index}] `{value}`: {reason}")]
    Prefix {
        /// 0-based position in `prefixes`.
        index: usize,
        /// The text as written.
        value: String,
        /// What is wrong.
        reason: String,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFeed {
    #[serde(rename = "creationTime", default)]
    creation_time: Option<String>,
    prefixes: Vec<RawPrefix>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPrefix {
    #[serde(rename = "ipv4Prefix", default)]
    ipv4: Option<String>,
    #[serde(rename = "ipv6Prefix", default)]
    ipv6: Option<String>,
}

impl Feed {
    /// Parses and validates one feed document.
    ///
    /// Accepted: a JSON object with an optional string `creationTime` and a
    /// `prefixes` array of 1 to [`MAX_PREFIXES`] objects, each with exactly one
    /// of `ipv4Prefix` / `ipv6Prefix`, a CIDR of that family. Any other key is
    /// an error.
    ///
    /// Host bits must be zero (`66.249.64.5/27` is rejected, not rounded): the
    /// published feeds never set them, so one that does is damaged and should
    /// not replace a good feed. Prefixes shorter than [`MIN_V4_LEN`] /
    /// [`MIN_V6_LEN`] and IPv6 prefixes in `::/8` (where IPv4-mapped addresses
    /// live; IPv4 ranges belong in `ipv4Prefix`) are rejected too.
    ///
    /// # Errors
    /// [`FeedError`] naming the first problem.
    ///
    /// # Example
    /// ```
    /// use robotgate::identity::Feed;
    /// let feed = Feed::parse(r#"{"creationTime": "2026-08-21T14:45:42.000000",
    ///     "prefixes": [{"ipv4Prefix": "66.249.64.0/27"}]}"#)?;
    /// assert_eq!(feed.prefixes[0].to_string(), "66.249.64.0/27");
    /// assert!(Feed::parse(r#"{"creationTime": "x", "prefixes": []}"#).is_err());
    /// # Ok::<(), robotgate::identity::FeedError>(())
    /// ```
    pub fn parse(text: &str) -> Result<Feed, FeedError> {
        if text.len() > MAX_FEED_BYTES {
            return Err(FeedError::TooLarge { bytes: text.len(), max: MAX_FEED_BYTES });
        }
        let raw: RawFeed = serde_json::from_str(text).map_err(FeedError::Shape)?;
        if raw.prefixes.is_empty() {
            return Err(FeedError::Empty);
        }
        if raw.prefixes.len() > MAX_PREFIXES {
            return Err(FeedError::TooMany { count: raw.prefixes.len(), max: MAX_PREFIXES });
        }
        let mut prefixes = Vec::with_capacity(raw.prefixes.len());
        for (index, entry) in raw.prefixes.into_iter().enumerate() {
            let bad = |value: &str, reason: String| FeedError::Prefix { index, value: value.to_owned(), reason };
            let (value, v4) = match (entry.ipv4, entry.ipv6) {
                (Some(v), None) => (v, true),
                (None, Some(v)) => (v, false),
                (Some(_), Some(_)) => return Err(bad("", "both `ipv4Prefix` and `ipv6Prefix`".into())),
                (None, None) => return Err(bad("", "neither `ipv4Prefix` nor `ipv6Prefix`".into())),
            };
            let p: Prefix = value.parse().map_err(|reason| bad(&value, reason))?;
            match (p.addr, v4) {
                (IpAddr::V4(_), true) if p.len < MIN_V4_LEN => {
                    return Err(bad(&value, format!("shorter than /{MIN_V4_LEN}")));
                }
                (IpAddr::V6(a), false) => {
                    if p.len < MIN_V6_LEN {
                        return Err(bad(&value, format!("shorter than /{MIN_V6_LEN}")));
                    }
                    if a.octets()[0] == 0 {
                        return Err(bad(&value, "inside the reserved ::/8 (IPv4 ranges go in `ipv4Prefix`)".into()));
                    }
                }
                (IpAddr::V4(_), true) => {}
                (IpAddr::V6(_), true) => return Err(bad(&value, "an IPv6 prefix under `ipv4Prefix`".into())),
                (IpAddr::V4(_), false) => return Err(bad(&value, "an IPv4 prefix under `ipv6Prefix`".into())),
            }
            prefixes.push(p);
        }
        Ok(Feed { creation_time: raw.creation_time, prefixes })
    }
}

/// Names a feed of a [`RangeTable`] (its position in the table).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FeedId(u16);

impl FeedId {
    /// Position of the feed in [`RangeTable::feeds`].
    pub fn index(self) -> usize {
        usize::from(self.0)
    }
}

/// What a table knows about one of its feeds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeedInfo {
    /// The feed's name (`google-common-crawlers`), as bots.yaml refers to it.
    pub name: String,
    /// The feed's own `creationTime`.
    pub creation_time: Option<String>,
    /// How many prefixes it listed.
    pub prefix_count: usize,
}

/// One feed containing an address, with its most specific prefix doing so.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hit {
    /// The feed.
    pub feed: FeedId,
    /// The longest prefix of that feed containing the address.
    pub prefix: Prefix,
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

/// Sorted, disjoint, inclusive intervals of one family, each with the feeds
/// (and their prefixes) covering it.
#[derive(Debug, Clone, Default)]
struct Intervals<T> {
    starts: Vec<T>,
    ends: Vec<T>,
    /// `hits[spans[i].0 .. spans[i].1]` cover interval `i`, sorted by feed.
    spans: Vec<(u32, u32)>,
    hits: Vec<Hit>,
}

impl<T: Copy + Ord> Intervals<T> {
    /// O(log n), no allocation.
    fn find(&self, x: T) -> &[Hit] {
        let i = self.starts.partition_point(|&s| s <= x);
        if i == 0 || self.ends[i - 1] < x {
            return &[];
        }
        let (a, b) = self.spans[i - 1];
        &self.hits[a as usize..b as usize]
    }
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
    ("google-common-crawlers", include_str!("../../conf/feeds/google-common-crawlers.json")),
    ("google-special-crawlers", include_str!("../../conf/feeds/google-special-crawlers.json")),
    ("google-user-triggered-fetchers", include_str!("../../conf/feeds/google-user-triggered-fetchers.json")),
    ("openai-gptbot", include_str!("../../conf/feeds/openai-gptbot.json")),
    ("openai-searchbot", include_str!("../../conf/feeds/openai-searchbot.json")),
    ("openai-chatgpt-user", include_str!("../../conf/feeds/openai-chatgpt-user.json")),
    ("apple-applebot", include_str!("../../conf/feeds/apple-applebot.json")),
    ("duckduckgo-duckduckbot", include_str!("../../conf/feeds/duckduckgo-duckduckbot.json")),
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
            infos.push(FeedInfo { name, creation_time: feed.creation_time, prefix_count: feed.prefixes.len() });
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

    /// The feeds, in id order.
    pub fn feeds(&self) -> &[FeedInfo] {
        &self.feeds
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

/// Sweeps inclusive `(first, last, hit)` ranges into disjoint intervals.
///
/// At each boundary the active set changes; between two boundaries it does
/// not, so each stretch with a non-empty active set becomes one interval whose
/// hits are, per feed, the longest active prefix.
fn build<T>(mut ranges: Vec<(T, T, Hit)>) -> Intervals<T>
where
    T: Copy + Ord + Bounded,
{
    let mut out = Intervals { starts: Vec::new(), ends: Vec::new(), spans: Vec::new(), hits: Vec::new() };
    if ranges.is_empty() {
        return out;
    }
    // Boundaries: every start, and every end + 1 that exists.
    let mut points: Vec<T> = Vec::with_capacity(ranges.len() * 2);
    for &(a, b, _) in &ranges {
        points.push(a);
        if let Some(next) = b.succ() {
            points.push(next);
        }
    }
    points.sort_unstable();
    points.dedup();
    ranges.sort_unstable_by(|x, y| x.0.cmp(&y.0));
    let mut active: Vec<(T, Hit)> = Vec::new(); // (last, hit)
    let mut next = 0;
    let mut scratch: Vec<Hit> = Vec::new();
    for (i, &p) in points.iter().enumerate() {
        active.retain(|&(last, _)| last >= p);
        while next < ranges.len() && ranges[next].0 == p {
            active.push((ranges[next].1, ranges[next].2));
            next += 1;
        }
        if active.is_empty() {
            continue;
        }
        let end = match points.get(i + 1) {
            Some(&q) => q.pred(),
            None => T::MAX,
        };
        scratch.clear();
        for &(_, h) in &active {
            match scratch.iter_mut().find(|s| s.feed == h.feed) {
                Some(s) if s.prefix.len < h.prefix.len => *s = h,
                Some(_) => {}
                None => scratch.push(h),
            }
        }
        scratch.sort_unstable_by_key(|h| h.feed);
        let a = out.hits.len() as u32;
        out.hits.extend_from_slice(&scratch);
        out.starts.push(p);
        out.ends.push(end);
        out.spans.push((a, out.hits.len() as u32));
    }
    out
}

/// Integer address types of a family.
trait Bounded: Sized {
    const MAX: Self;
    fn succ(self) -> Option<Self>;
    fn pred(self) -> Self;
}

impl Bounded for u32 {
    const MAX: u32 = u32::MAX;
    fn succ(self) -> Option<u32> {
        self.checked_add(1)
    }
    fn pred(self) -> u32 {
        self - 1
    }
}

impl Bounded for u128 {
    const MAX: u128 = u128::MAX;
    fn succ(self) -> Option<u128> {
        self.checked_add(1)
    }
    fn pred(self) -> u128 {
        self - 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn feed(prefixes: &[&str]) -> String {
        let items: Vec<String> = prefixes
            .iter()
            .map(|p| {
                let key = if p.contains(':') { "ipv6Prefix" } else { "ipv4Prefix" };
                format!(r#"{{"{key}": "{p}"}}"#)
            })
            .collect();
        format!(r#"{{"creationTime": "2026-08-21T00:00:00.000000", "prefixes": [{}]}}"#, items.join(", "))
    }

    fn table() -> RangeTable {
        let g = feed(&["66.249.64.0/27", "66.249.64.32/27", "2001:4860:4801:10::/64"]);
        let b = feed(&["157.55.39.0/24", "66.249.64.16/28"]);
        RangeTable::compile(&[("google", &g), ("bing", &b)]).unwrap()
    }

    #[test]
    fn parses_the_published_shape() {
        let f = Feed::parse(&feed(&["66.249.64.0/27", "2001:4860:4801:10::/64"])).unwrap();
        assert_eq!(f.creation_time.as_deref(), Some("2026-08-21T00:00:00.000000"));
        assert_eq!(f.prefixes.len(), 2);
        assert_eq!(f.prefixes[1].to_string(), "2001:4860:4801:10::/64");
        // creationTime is optional.
        assert!(Feed::parse(r#"{"prefixes": [{"ipv4Prefix": "66.249.64.0/27"}]}"#).is_ok());
    }

    #[test]
    fn empty_feed_is_an_error() {
        // Google's retired URLs answer 200 with an object without prefixes.
        assert!(matches!(Feed::parse(r#"{"creationTime": "x", "prefixes": []}"#), Err(FeedError::Empty)));
        assert!(matches!(Feed::parse(r#"{"creationTime": "x"}"#), Err(FeedError::Shape(_))));
        assert!(matches!(Feed::parse("{}"), Err(FeedError::Shape(_))));
        assert!(matches!(Feed::parse(""), Err(FeedError::Shape(_))));
        assert!(matches!(Feed::parse("<html>moved</html>"), Err(FeedError::Shape(_))));
    }

    #[test]
    fn unknown_shapes_are_rejected() {
        for text in [
            r#"{"prefixes": [{"ipv4Prefix": "66.249.64.0/27"}], "extra": 1}"#,
            r#"{"prefixes": [{"ipv4Prefix": "66.249.64.0/27", "service": "x"}]}"#,
            r#"{"prefixes": [{"ipPrefix": "66.249.64.0/27"}]}"#,
            r#"{"prefixes": ["66.249.64.0/27"]}"#,
            r#"{"prefixes": [{"ipv4Prefix": 42}]}"#,
            r#"{"prefixes": {"ipv4Prefix": "66.249.64.0/27"}}"#,
            r#"[{"ipv4Prefix": "66.249.64.0/27"}]"#,
        ] {
            assert!(Feed::parse(text).is_err(), "{text}");
        }
        let both = r#"{"prefixes": [{"ipv4Prefix": "66.249.64.0/27", "ipv6Prefix": "2001:db8::/32"}]}"#;
        assert!(matches!(Feed::parse(both), Err(FeedError::Prefix { index: 0, .. })));
        assert!(matches!(Feed::parse(r#"{"prefixes": [{}]}"#), Err(FeedError::Prefix { index: 0, .. })));
    }

    #[test]
    fn bad_prefixes_name_their_index() {
        let cases = [
            ("66.249.64.5/27", "host bits"),
            ("66.249.64.0", "address/length"),
            ("66.249.64.0/33", "longer than"),
            ("66.249.64.0/+2", "prefix length"),
            ("66.249.64.0/", "prefix length"),
            ("66.249.64/24", "not an IP"),
            ("0.0.0.0/0", "shorter than"),
            ("2001:4860:4801:10::/64", "IPv6 prefix under"),
        ];
        for (p, why) in cases {
            let text = format!(r#"{{"prefixes": [{{"ipv4Prefix": "1.2.3.0/24"}}, {{"ipv4Prefix": "{p}"}}]}}"#);
            match Feed::parse(&text) {
                Err(e @ FeedError::Prefix { index: 1, .. }) => assert!(e.to_string().contains(why), "{p}: {e}"),
                other => panic!("{p}: {other:?}"),
            }
        }
        for (p, why) in [("::ffff:1.2.3.0/120", "::/8"), ("2000::/8", "shorter than"), ("1.2.3.0/24", "IPv4 prefix")] {
            let text = format!(r#"{{"prefixes": [{{"ipv6Prefix": "{p}"}}]}}"#);
            let e = Feed::parse(&text).unwrap_err();
            assert!(e.to_string().contains(why), "{p}: {e}");
        }
    }

    #[test]
    fn size_limits() {
        let big = format!("{{\"prefixes\": [{}]}}", " ".repeat(MAX_FEED_BYTES));
        assert!(matches!(Feed::parse(&big), Err(FeedError::TooLarge { .. })));
        let item = r#"{"ipv4Prefix": "10.0.0.0/24"},"#;
        let many = format!(r#"{{"prefixes": [{}{{"ipv4Prefix": "10.0.0.0/24"}}]}}"#, item.repeat(MAX_PREFIXES));
        assert!(many.len() <= MAX_FEED_BYTES);
        assert!(matches!(Feed::parse(&many), Err(FeedError::TooMany { count, .. }) if count == MAX_PREFIXES + 1));
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
            assert!(f.creation_time.is_some(), "{name}");
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

    /// A naive oracle: every feed with a prefix containing `ip`, and that
    /// feed's longest such prefix.
    fn naive(feeds: &[Vec<Prefix>], ip: IpAddr) -> Vec<(usize, u8)> {
        let mut out = Vec::new();
        for (i, f) in feeds.iter().enumerate() {
            if let Some(len) = f.iter().filter(|p| p.contains(ip)).map(|p| p.len).max() {
                out.push((i, len));
            }
        }
        out
    }

    fn arb_v4() -> impl Strategy<Value = Prefix> {
        // A small space (10.0.0.0/20) so prefixes overlap and nest often.
        (0u32..4096, 20u8..=32).prop_map(|(off, len)| {
            let a = (0x0a00_0000u32 | off) & (u32::MAX << (32 - u32::from(len)));
            Prefix::new(IpAddr::V4(Ipv4Addr::from(a)), len).unwrap()
        })
    }

    fn arb_v6() -> impl Strategy<Value = Prefix> {
        (0u128..4096, 116u8..=128).prop_map(|(off, len)| {
            let base = u128::from("2001:db8::".parse::<Ipv6Addr>().unwrap());
            let a = (base | off) & (u128::MAX << (128 - u32::from(len)));
            Prefix::new(IpAddr::V6(Ipv6Addr::from(a)), len).unwrap()
        })
    }

    fn arb_ip() -> impl Strategy<Value = IpAddr> {
        prop_oneof![
            (0u32..4200).prop_map(|o| IpAddr::V4(Ipv4Addr::from(0x0a00_0000u32 + o))),
            (0u32..4200).prop_map(|o| IpAddr::V6(Ipv4Addr::from(0x0a00_0000u32 + o).to_ipv6_mapped())),
            (0u128..4200)
                .prop_map(|o| IpAddr::V6(Ipv6Addr::from(u128::from("2001:db8::".parse::<Ipv6Addr>().unwrap()) + o))),
            any::<u32>().prop_map(|a| IpAddr::V4(Ipv4Addr::from(a))),
        ]
    }

    proptest! {
        #[test]
        fn lookup_agrees_with_a_linear_scan(
            feeds in prop::collection::vec(prop::collection::vec(prop_oneof![arb_v4(), arb_v6()], 1..12), 1..5),
            ips in prop::collection::vec(arb_ip(), 1..40),
        ) {
            let named: Vec<(String, Feed)> = feeds
                .iter()
                .enumerate()
                .map(|(i, p)| (format!("f{i}"), Feed { creation_time: None, prefixes: p.clone() }))
                .collect();
            let t = RangeTable::from_feeds(named).unwrap();
            for ip in ips {
                let want = naive(&feeds, ip);
                let got: Vec<(usize, u8)> = t.hits(ip).iter().map(|h| (h.feed.index(), h.prefix.length())).collect();
                prop_assert_eq!(&got, &want, "{}", ip);
                for h in t.hits(ip) {
                    prop_assert!(h.prefix.contains(ip));
                }
                prop_assert_eq!(t.lookup(ip).map(FeedId::index), want.first().map(|w| w.0));
            }
        }
    }
}
