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
//!
//! One concern per file: `prefix` (one CIDR prefix), `feed` (the strict feed
//! parser), `table` (the named feeds compiled into a [`RangeTable`]) and
//! `intervals` (the sweep that turns overlapping prefixes into disjoint
//! intervals).

mod feed;
mod hit;
mod intervals;
mod prefix;
mod table;

pub use feed::{Feed, FeedError, MAX_FEED_BYTES, MAX_PREFIXES, MIN_V4_LEN, MIN_V6_LEN};
pub use hit::{FeedId, Hit};
pub use prefix::Prefix;
pub use table::{is_builtin_feed, FeedInfo, RangeTable, TableError, BUILTIN_FEEDS, FEED_URLS, MAX_FEEDS};

#[cfg(test)]
mod testkit;
