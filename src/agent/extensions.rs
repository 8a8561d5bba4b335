//! The robots.txt extensions a robot's operator says it follows or ignores.
//!
//! Crawl-delay, Request-rate and Visit-time are not part of RFC 9309: each
//! crawler's operator decides whether to read them, and some document that
//! they do not (Google: only `user-agent`, `allow`, `disallow` and `sitemap`;
//! Yandex: no Crawl-delay since 2018-02-22; Amazon: no Crawl-delay). A robot
//! that was never told to keep to a directive does not break it by going
//! faster, so the policy does not hold it to one its operator says it ignores
//! (`policy.unsupported_directives`).
//!
//! In `bots.yaml` each entry may carry `extensions:`, a list of claims, each
//! with the operator's page that makes it:
//!
//! ```yaml
//! extensions: [{ignores: [crawl-delay], source: "https://yandex.com/support/webmaster/robot-workings/crawl-delay.html"}]
//! ```

use std::fmt;

use serde::{Deserialize, Serialize};

/// A robots.txt extension a robot may or may not read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Extension {
    /// `Crawl-delay`: seconds between two requests.
    CrawlDelay,
    /// `Request-rate`: requests per period.
    RequestRate,
    /// `Visit-time`: the UTC hours a robot may come.
    VisitTime,
}

impl Extension {
    /// Every extension, in the order of [`Extension::as_str`]'s names.
    pub const ALL: [Extension; 3] = [Extension::CrawlDelay, Extension::RequestRate, Extension::VisitTime];

    /// `crawl-delay`, `request-rate` or `visit-time`: the names of
    /// `bots.yaml`, of the violation record's `directive` and of the metrics.
    pub const fn as_str(self) -> &'static str {
        match self {
            Extension::CrawlDelay => "crawl-delay",
            Extension::RequestRate => "request-rate",
            Extension::VisitTime => "visit-time",
        }
    }

    /// Parses a name of [`Extension::as_str`] (ASCII case-insensitive).
    pub fn from_name(name: &str) -> Option<Extension> {
        Extension::ALL.into_iter().find(|e| e.as_str().eq_ignore_ascii_case(name))
    }

    const fn bit(self) -> u8 {
        1 << self as u8
    }
}

impl fmt::Display for Extension {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One documented fact: the robot follows (or ignores) `extension`, says
/// `source`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExtensionClaim {
    /// The extension.
    pub extension: Extension,
    /// Whether the robot reads it.
    pub follows: bool,
    /// The operator's page that says so.
    pub source: String,
}

/// The extensions a robot ignores, as a set small enough to copy into every
/// [`crate::agent::Agent`]: one byte.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Ignored(u8);

impl Ignored {
    /// Nothing is known to be ignored (robots not in the database, or whose
    /// operator says nothing).
    pub const NONE: Ignored = Ignored(0);

    /// The set of the claims that say "ignores".
    pub fn of(claims: &[ExtensionClaim]) -> Ignored {
        Ignored(claims.iter().filter(|c| !c.follows).fold(0, |set, c| set | c.extension.bit()))
    }

    /// Whether `extension` is in the set.
    pub const fn contains(self, extension: Extension) -> bool {
        self.0 & extension.bit() != 0
    }

    /// Whether the set is empty.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }
}

/// The YAML shape of one claim: extensions followed, extensions ignored, and
/// the page that says so.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawClaim {
    #[serde(default)]
    follows: Vec<String>,
    #[serde(default)]
    ignores: Vec<String>,
    source: String,
}

/// The claims of one entry, checked: known names, a source that is an
/// `http(s)` URL, and no extension claimed twice.
///
/// # Errors
/// What is wrong, naming the field (the caller names the entry).
pub(super) fn claims_of(raw: Vec<RawClaim>) -> Result<Vec<ExtensionClaim>, String> {
    let mut out: Vec<ExtensionClaim> = Vec::new();
    for claim in raw {
        let source = claim.source.trim();
        if !(source.starts_with("https://") || source.starts_with("http://"))
            || source.contains(char::is_whitespace)
            || source.bytes().any(|b| b.is_ascii_control())
        {
            return Err(format!("extensions: source `{}` is not an http(s) URL", claim.source));
        }
        if claim.follows.is_empty() && claim.ignores.is_empty() {
            return Err(format!("extensions: the claim of `{source}` names no extension (`follows:` or `ignores:`)"));
        }
        let named = claim.follows.iter().map(|n| (n, true)).chain(claim.ignores.iter().map(|n| (n, false)));
        for (name, follows) in named {
            let Some(extension) = Extension::from_name(name) else {
                let known: Vec<&str> = Extension::ALL.iter().map(|e| e.as_str()).collect();
                return Err(format!("extensions: unknown extension `{name}` (one of: {})", known.join(", ")));
            };
            if out.iter().any(|c| c.extension == extension) {
                return Err(format!("extensions: `{extension}` is claimed twice"));
            }
            out.push(ExtensionClaim { extension, follows, source: source.to_owned() });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(follows: &[&str], ignores: &[&str], source: &str) -> RawClaim {
        RawClaim {
            follows: follows.iter().map(|s| s.to_string()).collect(),
            ignores: ignores.iter().map(|s| s.to_string()).collect(),
            source: source.into(),
        }
    }

    #[test]
    fn claims_become_a_set_of_ignored_extensions() {
        let claims = claims_of(vec![
            raw(&["request-rate"], &["Crawl-Delay"], "https://a.example/bot"),
            raw(&[], &["visit-time"], "https://b.example/"),
        ])
        .unwrap();
        assert_eq!(claims.len(), 3);
        assert_eq!(claims[1].extension, Extension::CrawlDelay);
        assert_eq!(claims[2].source, "https://b.example/");
        let set = Ignored::of(&claims);
        assert!(set.contains(Extension::CrawlDelay) && set.contains(Extension::VisitTime));
        assert!(!set.contains(Extension::RequestRate));
        assert!(Ignored::NONE.is_empty() && !set.is_empty());
    }

    #[test]
    fn bad_claims_are_named() {
        let err = claims_of(vec![raw(&[], &["crawl-speed"], "https://a.example/")]).unwrap_err();
        assert!(err.contains("unknown extension `crawl-speed`"), "{err}");
        let err = claims_of(vec![raw(&[], &["crawl-delay"], "a.example")]).unwrap_err();
        assert!(err.contains("not an http(s) URL"), "{err}");
        let err = claims_of(vec![raw(&[], &[], "https://a.example/")]).unwrap_err();
        assert!(err.contains("names no extension"), "{err}");
        let twice = vec![raw(&["crawl-delay"], &[], "https://a.example/"), raw(&[], &["crawl-delay"], "https://b/")];
        assert!(claims_of(twice).unwrap_err().contains("claimed twice"));
    }
}
