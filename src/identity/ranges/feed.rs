//! One operator's feed document, parsed strictly.

use std::net::IpAddr;

use serde::Deserialize;

use super::prefix::Prefix;

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
    /// The feed's own date as Unix seconds: `creationTime` read as RFC 3339,
    /// and as UTC when it has no offset (Google writes
    /// `2026-08-21T14:45:42.000000`); `None` when absent or unreadable.
    pub fn created_unix(&self) -> Option<u64> {
        let text = self.creation_time.as_deref()?.trim();
        let ms = crate::time::parse_rfc3339_ms(text).or_else(|| crate::time::parse_rfc3339_ms(&format!("{text}Z")))?;
        Some(ms / 1000)
    }

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

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use super::*;

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
    fn the_feed_date_is_read_as_utc() {
        let f = Feed::parse(&feed(&["66.249.64.0/27"])).unwrap();
        assert_eq!(f.created_unix(), Some(1_787_270_400), "2026-08-21T00:00:00.000000, no offset: UTC");
        let with = |t: &str| Feed { creation_time: Some(t.into()), prefixes: Vec::new() }.created_unix();
        assert_eq!(with("2026-08-21T00:00:00Z"), Some(1_787_270_400));
        assert_eq!(with("2026-08-21T02:00:00+02:00"), Some(1_787_270_400));
        assert_eq!(with("yesterday"), None);
        assert_eq!(Feed { creation_time: None, prefixes: Vec::new() }.created_unix(), None);
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
}
