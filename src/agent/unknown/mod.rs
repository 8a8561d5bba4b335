//! The rules for User-Agents that no database entry matches: is it a robot
//! anyway, and what does it call itself? Also the product names any robot's
//! UA announces, for robots.txt group selection.
//!
//! Browsers follow a handful of conventions (`Mozilla/5.0 (platform)
//! engine/version browser/version`, or a handset name followed by
//! `Profile/MIDP-2.0 Configuration/CLDC-1.1`); robots announce themselves with
//! a product name containing "bot", "crawler", "spider"..., a contact URL or
//! e-mail address, or an HTTP library's name. The rules, in order (first that
//! applies wins):
//!
//! 1. empty or whitespace-only UA: robot;
//! 2. robot evidence (see `evidence`): robot;
//! 3. a browser platform/engine marker, or a first word that is a handset
//!    vendor or browser name: browser, unless it is a modern browser string
//!    in a shape no browser produces (see `browser`): robot. An unknown word
//!    alone never makes a robot: browsers add product tokens of their own;
//! 4. anything else does not start like a browser at all: robot.
//!
//! The words come from `words`, their meaning from `vocab`; the automaton's
//! findings arrive as [`Signals`], so nothing here knows about automata.
//!
//! Cost: every function here is linear in the (capped) UA length times a
//! bounded factor: words are compared through a lowercase copy of at most
//! [`MAX_WORD`] bytes against word sets or a fixed number of short needles.
//!
//! One concern per file, by what the rules look at: `evidence` (a word's
//! robot evidence, and one pass over the words for evidence and name
//! candidates), `browser` (whether a browser-shaped string has a shape no
//! browser produces) and `name` (which word names the robot).

mod browser;
mod evidence;
mod name;
mod strength;
mod token;

use self::browser::impossible_shape;
use self::evidence::{evidence_if_hit, findings, has_evidence, Findings, WordEvidence};
use self::name::pick_name;
use self::strength::{named_tool, weak_evidence};
use self::token::{as_str, is_robot_word, name_ok, trim_name};
use super::vocab::{first_word_is_browser, is_browser_vocabulary};
use super::words::{contains_ci, email_at, plus_domain_at, url_at, DeviceModel, Words};

/// The word rules look at this many bytes of a UA at most (the automaton
/// looks at [`crate::agent::MAX_UA_LEN`]). Real UAs are under 600 bytes; the
/// cap bounds the worst case of the per-word rules on hostile input.
const MAX_WORDS_LEN: usize = 1024;

/// The automaton's signals for [`analyze`].
#[derive(Debug, Clone, Copy)]
pub(super) struct Signals<'h> {
    /// Some [`SUSPECT_NEEDLES`](super::vocab::SUSPECT_NEEDLES) substring occurs.
    pub suspect: bool,
    /// End offsets of the suspect needles, if all were recorded; `None` means
    /// unknown (examine every word).
    pub suspect_ends: Option<&'h [u32]>,
    /// Some [`MARKER_NEEDLES`](super::vocab::MARKER_NEEDLES) substring occurs.
    pub marker: bool,
    /// Where the frozen browser shape the UA opens with ends, if it opens
    /// with one (`None` also means not looked for: always safe).
    pub frozen_end: Option<usize>,
    /// Where the last `compatible` or dot before a letter (any case) ends:
    /// `Some(0)` if there is none, `None` if not looked for (then the shape
    /// rule looks itself).
    pub shape_hint_end: Option<usize>,
}

impl Signals<'_> {
    /// Signals computed without the automaton (slow; for tests).
    #[cfg(test)]
    pub(super) fn of(ua: &[u8]) -> Signals<'static> {
        Signals {
            suspect: super::vocab::has_suspect(ua),
            suspect_ends: None,
            marker: super::vocab::has_marker(ua),
            frozen_end: None,
            shape_hint_end: None,
        }
    }
}

/// The result of the word-level rules for a UA the database did not match.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Unknown<'a> {
    /// The product name the robot announces, if one could be picked.
    pub name: Option<&'a str>,
    /// Named only by weak evidence ([`strength`]): recorded, but not
    /// refused or paced unless the site says so (issues #53, #68).
    pub weak: bool,
}

/// A browser that names itself so (`QtWeb Internet Browser/3.7
/// http://www.QtWeb.net`): its first product's last word is `Browser`, and
/// its only evidence is a bare URL, its home page (issue #53).
fn is_self_named_browser(ua: &[u8], f: &Findings) -> bool {
    let only_url = f.contact.is_some()
        && !f.contact_strong
        && f.robot.is_none()
        && f.weak.is_none()
        && f.generic.is_none()
        && f.library.is_none()
        && f.lang.is_none();
    let Some(slash) = ua.iter().position(|&b| b == b'/') else { return false };
    let head = &ua[..slash];
    only_url && !head.contains(&b'(') && head.len() > 8 && head[head.len() - 8..].eq_ignore_ascii_case(b" browser")
}

/// A person's app named like a brand with a plus (`Capture+`, as `Disney+`
/// or `Google+`), the whole string, with no robot evidence but a weak robot
/// word: robots do not name themselves so (issue #53).
fn is_plus_brand(ua: &[u8], f: &Findings) -> bool {
    let brand = ua.len() > 2
        && ua.ends_with(b"+")
        && ua[..ua.len() - 1].iter().all(u8::is_ascii_alphanumeric)
        && ua[0].is_ascii_alphabetic();
    let strong_generic = f.generic.is_some() && f.generic_strong;
    brand && f.robot.is_none() && !strong_generic && f.library.is_none() && f.contact.is_none()
}

/// Decides a UA the database did not match, given the automaton's signals.
/// Returns `None` for a browser.
///
/// Only the first [`MAX_WORDS_LEN`] bytes are examined word by word.
pub(super) fn analyze<'a>(ua: &'a [u8], sig: &Signals<'_>) -> Option<Unknown<'a>> {
    let ua = &ua[..ua.len().min(MAX_WORDS_LEN)];
    if ua.iter().all(u8::is_ascii_whitespace) {
        // No software a person uses sends none: as strong as evidence gets.
        return Some(Unknown { name: None, weak: false });
    }
    // A shape no browser sends is weak evidence, unless it is a robot's
    // `compatible;` comment in a modern browser's string (`(KHTML, like
    // Gecko; compatible; Qx/1.2)`).
    let shape = |name| Unknown { name, weak: !contains_ci(ua, "compatible") };
    // No suspect needle at all: no word can carry evidence.
    let hits = if sig.suspect { sig.suspect_ends } else { Some(&[][..]) };
    if sig.suspect && has_evidence(ua, sig.marker, hits) {
        let f = findings(ua, sig.marker, true, hits);
        // Issue #53: a person's app whose only evidence is a weak robot word
        // (`Podcasts/... CFNetwork/...`, `Capture+`) is a person.
        let weak_only = f.robot.is_none()
            && !(f.generic.is_some() && f.generic_strong)
            && f.library.is_none()
            && f.lang.is_none()
            && f.contact.is_none();
        if is_self_named_browser(ua, &f) || is_plus_brand(ua, &f) {
            return None;
        }
        if !(weak_only && super::grammar::is_app(ua)) {
            return Some(Unknown { name: pick_name(ua, &f), weak: weak_evidence(ua, &f) });
        }
        if sig.marker || first_word_is_browser(ua) {
            return impossible_shape(ua, sig).map(shape);
        }
        return None;
    }
    if sig.marker || first_word_is_browser(ua) {
        return impossible_shape(ua, sig).map(shape);
    }
    // Not shaped like a browser at all, with no robot evidence: named by
    // nothing but its shape.
    let f = findings(ua, sig.marker, true, hits);
    if is_plus_brand(ua, &f) {
        return None;
    }
    // Issue #68: a tool's product tokens alone, or an operator's family
    // name, is what a robot says of itself.
    Some(Unknown { name: pick_name(ua, &f), weak: !named_tool(ua, &f) })
}

/// Whether `name` is a robot word (`ExampleBot`, `FooCrawler`): a name a
/// robot gives itself, as opposed to a library's or an app's.
pub(super) fn is_robot_name(name: &str) -> bool {
    is_robot_word(name.as_bytes())
}

/// Product names a UA announces, for robots.txt group selection: words before
/// a `/` and robot words, minus browser vocabulary, URLs and versions. At most
/// `max` names are pushed to `out`; duplicates (ASCII case-insensitive) of
/// names already in `out` are skipped. `sig` are the automaton's signals for
/// `ua` (they spare the robot-word search in words without a suspect needle).
pub(super) fn product_tokens<'a>(ua: &'a [u8], sig: &Signals<'_>, out: &mut Vec<&'a str>, max: usize) {
    let hits = if sig.suspect { sig.suspect_ends } else { Some(&[][..]) };
    let ua = &ua[..ua.len().min(MAX_WORDS_LEN)];
    let mut devices = DeviceModel::new(ua);
    let mut skip_until = 0;
    for w in Words::new(ua) {
        if out.len() >= max {
            break;
        }
        if w.start < skip_until {
            continue;
        }
        if let Some(end) = url_at(ua, &w).or_else(|| email_at(ua, &w)).or_else(|| plus_domain_at(ua, &w)) {
            skip_until = end;
            continue;
        }
        // Cheapest tests first: most words are neither a product name nor a
        // robot word, and are dropped before the word-list lookups.
        let after_slash = w.start > 0 && ua[w.start - 1] == b'/';
        let product = ua.get(w.end) == Some(&b'/');
        if after_slash {
            continue;
        }
        let robot_word = matches!(evidence_if_hit(ua, &w, hits), WordEvidence::Robot { .. });
        if !(product || robot_word) {
            continue;
        }
        let word = trim_name(&ua[w.start..w.end]);
        if !name_ok(word) || is_browser_vocabulary(word) {
            continue;
        }
        if !product && devices.contains(&w) {
            continue;
        }
        if let Some(s) = as_str(word) {
            if !out.iter().any(|t| t.eq_ignore_ascii_case(s)) {
                out.push(s);
            }
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// The unknown-robot rules alone, as `classify` would run them on `ua`:
    /// `None` for a browser, else the name they find. Shared by the rules'
    /// tests in this module's files.
    pub(super) fn slow(ua: &str) -> Option<Option<&str>> {
        let b = ua.as_bytes();
        analyze(b, &Signals::of(b)).map(|u| u.name)
    }

    /// Whether the unknown-robot rules find `ua` a robot named only by
    /// weak evidence; `None` for a browser.
    fn weak(ua: &str) -> Option<bool> {
        let b = ua.as_bytes();
        analyze(b, &Signals::of(b)).map(|u| u.weak)
    }

    #[test]
    fn issue_53_weak_evidence() {
        for ua in [
            // A weak robot word, a generic one out of a robot's place, a bare URL.
            "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36 PodcastAddict",
            "MirrorSync/2.0",
            "Mozilla/5.0 (X11; Linux x86_64) Web Spider Deluxe",
            "Foo/1.0 (http://foo.example/)",
            // No evidence at all but a shape (issue #68: a product alone,
            // `Zorblax/3.1`, is a tool's, and strong).
            "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36 abuse.example.fr",
        ] {
            assert_eq!(weak(ua), Some(true), "{ua}");
        }
        for ua in [
            "",
            "Mozilla/5.0 (compatible; ExampleBot/2.1)",
            "ExampleCrawler/1.0",
            "crawler/1.0",
            "Mozilla/5.0 (compatible; Spider)",
            "python-requests/2.31.0",
            "Java/1.8.0_151",
            "Foo/1.0 (+http://foo.example/)",
            "Foo/1.0 (+foo.example)",
            "Foo/1.0 (admin@foo.example)",
            "Mozilla/5.0 (compatible; Cludo; http://www.cludo.example/)",
            "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko; compatible; Qx/1.2) Chrome/120.0.0.0 Safari/537.36",
        ] {
            assert_eq!(weak(ua), Some(false), "{ua}");
        }
    }

    #[test]
    fn issue_53_a_browser_that_names_itself_and_a_plus_brand_are_people() {
        // QtWeb's own User-Agent, as its site (qtweb.net) gives it.
        assert_eq!(slow("QtWeb Internet Browser/3.7 http://www.QtWeb.net"), None);
        assert_eq!(slow("Capture+"), None);
        // A robot still: a robot word, a robot's contact, no `Browser`.
        assert!(slow("QtWeb Internet Browser/3.7 (+http://www.QtWeb.example)").is_some());
        assert!(slow("Foo Browser/1.0 crawler http://x.example").is_some());
        assert!(slow("Foo/3.7 http://www.foo.example").is_some());
        assert!(slow("Spider+").is_some());
    }

    #[test]
    fn browsers_are_browsers() {
        for ua in [
            "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36",
            "Mozilla/5.0 (Linux; Android 4.2.1; CUBOT ONE Build/JOP40D) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/30.0 Mobile Safari/537.36",
            "Mozilla/4.0 (compatible; MSIE 6.0; Windows NT 4.0; 3COM U.S. Robotics)",
            "Nokia3360/1.2.1 (1.04)",
            "LG-S365/V100 Obigo/WAP2.0 Profile/MIDP-2.1 Configuration/CLDC-1.1",
            "HTTP/1.1 SonyEricssonK510i/R4CJ+Browser/NetFront/3.3",
            "Mozilla/5.0 (Java; U; Id; lg-t300) UCBrowser8.2.1.144/69/444/UCWEB Mobile UNTRUSTED/1.0",
            "Mozilla/5.0 (Linux; Android 4.0.3; ARCHOS 101G9 Build/ICS@ROM_04.06.2012) AppleWebKit/535.19",
        ] {
            assert_eq!(slow(ua), None, "{ua}");
        }
    }

    #[test]
    fn robots_and_their_names() {
        let cases = [
            ("Mozilla/5.0 (compatible; ExampleBot/2.1; +http://example.com/bot)", Some("ExampleBot")),
            ("Screaming Frog SEO Spider/2,01", Some("Screaming Frog SEO Spider")),
            ("python-requests/2.31.0", Some("python-requests")),
            ("Boto/2.48.0 Python/2.7.14 Linux/4.2.0-41-generic", Some("Boto")),
            ("MinIO (darwin; amd64) minio-go/v6.0.45 mc/2019", Some("minio-go")),
            ("Java/1.8.0_151", Some("Java")),
            ("TLSProber/0.8", Some("TLSProber")),
            ("Mozilla/5.0 (compatible; Thumbnailer/2.2; Thumbs; +http://x.example)", Some("Thumbnailer")),
            ("Altresium/4.6 (+http://www.example.com/bot.html)", Some("Altresium")),
            ("FooSpider1.0 (http://x.example)", Some("FooSpider")),
            ("TheUsefulbot_2.3.62 (bot@example.net)", Some("TheUsefulbot")),
            ("Go-http-client/1.1", Some("Go-http-client")),
            ("Claude-Like/1.0 (web crawler; +https://x.example/)", Some("Claude-Like")),
            ("Sogou web spider/3.0(+http://x.example)", Some("Sogou web spider")),
            ("Mozilla/5.0 (compatible; Newsy/1.0; +https://x.example)", Some("Newsy")),
            ("Mozilla/5.0 (compatible; Feedy/1.0 (+https://x.example/fetcher; like FeedFetcher-Google)", Some("Feedy")),
            ("Mozilla/5.0 (compatible; Attracta)", Some("Attracta")),
            // A name of digits, where names stand: first, or after `compatible;`.
            ("42/1.3 (https://x.example/robot)", Some("42")),
            ("Mozilla/5.0 (compatible; 0815/2.0; +https://x.example)", Some("0815")),
            // Not from a version, a bare number or a model number.
            ("Mozilla/5.0 (compatible; 1999; +https://x.example)", None),
            ("Mozilla/5.0", None),
            ("   ", None),
            ("", None),
        ];
        for (ua, name) in cases {
            assert_eq!(slow(ua), Some(name), "{ua}");
        }
    }

    #[test]
    fn product_tokens_skip_browser_vocabulary() {
        let ua = b"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; ExampleBot/1.0; +http://x.example/a/b) Chrome/120 Safari/537.36 Other/1";
        let mut out = Vec::new();
        product_tokens(ua, &Signals::of(ua), &mut out, 8);
        assert_eq!(out, ["ExampleBot", "Other"]);
    }
}
