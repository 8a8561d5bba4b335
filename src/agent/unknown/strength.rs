//! How strong the evidence is that makes an unknown User-Agent a robot
//! (issues #53 and #68): graded by what the string says, not by whether its
//! name is known.
//!
//! A robot named by **weak** evidence is recorded but neither refused nor
//! paced by default (`policy.weak_evidence: log`): it is the verdict a
//! person's odd software most likely meets. What a robot says of itself is
//! **strong**:
//!
//! - a robot's own word (crawler, spider, monitor, scanner, fetcher,
//!   preview, checker...) beside a URL or a mail address, or in the comment
//!   of a string that is no browser's (`Cert Spider (http://...)`,
//!   `ExampleGuide.com Crawler/1.0 (https://...)`, `Foo/1.0 (site
//!   monitor)`): RFC 9110 section 10.1.5 puts a product's description in the
//!   comment after it, and robots' operators document their agents so
//!   (Google's, Bing's and Yandex's published crawler strings all give a
//!   robot word and a URL);
//! - a library's or a tool's product tokens alone, with no platform comment
//!   and no engine (`Prometheus/2.51.0`, `ReactorNetty/1.1.13`,
//!   `buildkit/v0.12.5`): a person's browser always names its platform or
//!   engine, and a person's app its platform (`Android 11`, `iOS/17.2`,
//!   `CFNetwork/`); RFC 9110 10.1.5 describes exactly this shape, a list of
//!   product identifiers, as what a client sends;
//! - an operator's family name first, with no browser around it
//!   (`Google-Lens`, `GoogleOther`, `BingLocalSearch`, `YandexSomething`,
//!   `Baiduspider-render`): Google, Microsoft, Yandex and Baidu name their
//!   agents so in their published lists (developers.google.com/search/docs/
//!   crawling-indexing/overview-google-crawlers, yandex.com/support/webmaster/
//!   robot-workings/check-yandex-robots.html, bing.com/webmasters/help/
//!   which-crawlers-does-bing-use-8c184ec0).
//!
//! People's software stays safe: in a person's app (a WebView or in-app
//! browser, a podcast or media app, a TV or console, a mail client:
//! [`is_app`]) a robot word without a robot's contact or `compatible;` is
//! weak at most; a person's-app word (`podcast`, `capture`, `mirror`,
//! `rss`) is never made strong by a URL beside it; device models, vendor
//! and build fields and misspelt platform words are never evidence at all
//! (the grammar's slots, [`crate::agent::grammar`]).
//!
//! Cost: each test is one pass over the (capped) words of the string, run
//! only for a UA already found to be a robot.

use super::evidence::Findings;
use crate::agent::grammar::{is_android_word, is_app};
use crate::agent::vocab::first_word_is_browser;
use crate::agent::words::{contains_ci, lower, Word, Words, MAX_WORD};

/// Whether the word at `start` comes right after `compatible;` (`(compatible;
/// Spider)`).
pub(super) fn after_compatible(ua: &[u8], start: usize) -> bool {
    let before = ua[..start].iter().rposition(|&b| !matches!(b, b' ' | b';' | b',' | b'+')).map_or(0, |i| i + 1);
    before >= 10 && ua[before - 10..before].eq_ignore_ascii_case(b"compatible")
}

/// Whether what makes a UA a robot is only weak evidence, given what the
/// word pass found (see the module documentation).
pub(super) fn weak_evidence(ua: &[u8], f: &Findings) -> bool {
    let generic_named = f.generic_strong && f.generic.is_some_and(|g| g.start == 0 || after_compatible(ua, g.start));
    let compat_named = f.compat.is_some() && f.evidence;
    // What no person's software carries: a library or runtime, a robot's
    // own contact (an e-mail address, `+http://...`), a robot's comment.
    let robot_marks = f.library.is_some() || f.lang.is_some() || f.contact_strong || compat_named;
    if robot_marks {
        return false;
    }
    if f.robot.is_some() || generic_named {
        // Issue #68: a robot word in a person's app (`... Mobile Safari/537.36
        // FooSeekBot` after a WebView's string) is weak at most.
        return is_app(ua);
    }
    !(described_by_contact(ua, f) || described_in_comment(ua, f) || named_tool(ua, f))
}

/// A weak or generic robot word of `f` that describes a robot: any but a
/// person's-app word (`podcast`, `capture`, `mirror`...).
fn describing_word(ua: &[u8], f: &Findings) -> Option<Word> {
    [f.weak, f.generic].into_iter().flatten().find(|w| !is_people_word(&ua[w.start..w.end]))
}

/// Words a person's app may carry in its own name or description: a podcast
/// or feed reader, a screen-capture or mirroring app, a proxy or an
/// analytics SDK, a headless shell. A URL beside them is the app's home page.
fn is_people_word(word: &[u8]) -> bool {
    const PEOPLE: &[&str] = &[
        "podcast",
        "capture",
        "mirror",
        "rss",
        "proxy",
        "index",
        "analytics",
        "optimizer",
        "subscriber",
        "headless",
        "extract",
    ];
    PEOPLE.iter().any(|p| contains_ci(word, p))
}

/// A robot's own word beside a URL or mail address (`Cert Spider
/// (http://...)`), outside a person's app.
fn described_by_contact(ua: &[u8], f: &Findings) -> bool {
    f.contact.is_some() && describing_word(ua, f).is_some() && !is_app(ua)
}

/// A robot's own word in a comment of a string that is no browser's
/// (`Foo/1.0 (site monitor)`; RFC 9110 10.1.5: the comment describes the
/// product before it), outside a person's app.
fn described_in_comment(ua: &[u8], f: &Findings) -> bool {
    describing_word(ua, f).is_some_and(|w| w.depth > 0) && !browserish(ua) && !is_app(ua)
}

/// Whether `ua` opens like a browser or carries a browser engine: the
/// strong rules for strings that are no browser's do not apply.
fn browserish(ua: &[u8]) -> bool {
    const ENGINES: &[&str] = &["applewebkit", "gecko", "khtml", "trident", "presto"];
    first_word_is_browser(ua)
        || ua.len() >= 8 && ua[..8].eq_ignore_ascii_case(b"mozilla/")
        || ENGINES.iter().any(|e| contains_ci(ua, e))
}

/// A tool's product tokens alone (`Prometheus/2.51.0`, `ReactorNetty/1.1.13
/// buildkit/v0.12.5`), or an operator's family name first (`Google-Lens`,
/// `GoogleOther`, `BingFoo`, `YandexFoo/1.0`, `Baidu...`), with no browser,
/// no platform and no person's app around it, and no person's-app word.
pub(super) fn named_tool(ua: &[u8], f: &Findings) -> bool {
    if !ua.iter().all(|&b| b.is_ascii_graphic() || b == b' ') || !ua.iter().any(u8::is_ascii_alphabetic) {
        return false;
    }
    if [f.weak, f.generic].into_iter().flatten().any(|w| is_people_word(&ua[w.start..w.end])) {
        return false;
    }
    if browserish(ua) || has_platform_word(ua) || is_app(ua) {
        return false;
    }
    !ua.contains(&b'(') || operator_first(ua)
}

/// Whether the string's first word is an operator's family name: `Google-`
/// or `Google` and a capital (`GoogleOther`, not `Googler`), `Bing`,
/// `Yandex`, `Baidu` (any case) and more.
pub(super) fn operator_first(ua: &[u8]) -> bool {
    let word = &ua[..ua.iter().position(|&b| matches!(b, b'/' | b' ' | b'(' | b';')).unwrap_or(ua.len())];
    let starts = |p: &[u8]| word.len() > p.len() && word[..p.len()].eq_ignore_ascii_case(p);
    let google = starts(b"google") && (word[6] == b'-' || word[6].is_ascii_uppercase());
    google || starts(b"bing") || starts(b"yandex") || starts(b"baidu")
}

/// Whether a word of `ua` names a platform a person's device runs
/// (`Android`, misspelt too, `iOS`, `iPhone`, `Windows`, `Linux`,
/// `Darwin`...) or an app's build (`build`), or says it is an app, a player
/// or a television.
fn has_platform_word(ua: &[u8]) -> bool {
    const PLATFORMS: &[&str] = &[
        "ios",
        "ipados",
        "iphone",
        "ipad",
        "ipod",
        "tvos",
        "watchos",
        "macos",
        "mac",
        "osx",
        "darwin",
        "windows",
        "win32",
        "win64",
        "linux",
        "x11",
        "cfnetwork",
        "build",
        "app",
        "player",
        "tv",
        "mobile",
        "phone",
        "tablet",
        "watch",
        "kaios",
        "tizen",
        "webos",
        "harmonyos",
        "openharmony",
    ];
    Words::new(ua).any(|w| {
        let word = &ua[w.start..w.end];
        let mut buf = [0u8; MAX_WORD];
        let low = lower(&word[..word.len().min(MAX_WORD)], &mut buf).unwrap_or_default();
        // `iOS/17.2`, `Android 11`, `Andr0id`: a platform word is cut at
        // its version.
        let name = &low[..low.iter().position(|b| b.is_ascii_digit() || *b == b'.').unwrap_or(low.len())];
        is_android_word(name) || PLATFORMS.iter().any(|p| p.as_bytes() == name)
    })
}

#[cfg(test)]
mod tests {
    use super::super::{analyze, Signals};

    /// Whether the unknown-robot rules find `ua` a robot named only by
    /// weak evidence; `None` for a browser.
    fn weak(ua: &str) -> Option<bool> {
        let b = ua.as_bytes();
        analyze(b, &Signals::of(b)).map(|u| u.weak)
    }

    /// Issue #68 item 1: shapes of robots' strings that the issue quotes
    /// (with made-up names), and strings their operators publish.
    #[test]
    fn issue_68_what_a_robot_says_of_itself_is_strong() {
        for ua in [
            // A robot's word beside a URL or mail address.
            "ExampleGuide.com Crawler/1.0 (https://exampleguide.example/crawler)",
            "Cert Spider (http://certspider.example/)",
            "Quux Site Monitor/2.0 (https://quux.example/monitor)",
            "LinkPreview Fetcher (ops@preview.example)",
            // ... or in the comment of a string that is no browser's.
            "Quuxmon/1.0 (uptime monitor)",
            "Frobnicate/3.1 (link checker; v3)",
            // A tool's product tokens alone (RFC 9110 10.1.5 shapes).
            "Prometheus/2.51.0",
            "Grafana/11.2.0",
            "ReactorNetty/1.1.13",
            "buildkit/v0.12.5",
            "Zorblax/3.1",
            "Frob",
            // An operator's family name first, no browser around it.
            "Google-Lens",
            "GoogleOther",
            "Google-Safety",
            "YandexFavicons/1.0 (beta)",
            "BingLocalSearch/1.0 (nothing here)",
        ] {
            assert_eq!(weak(ua), Some(false), "{ua}");
        }
    }

    /// Issue #68 item 2: people's software is a person or weak at most.
    #[test]
    fn issue_68_peoples_software_is_weak_at_most() {
        for ua in [
            // An app's token after a WebView's whole string (Chrome's
            // documented WebView shape: `; wv)`, `Version/4.0 Chrome/`).
            "Mozilla/5.0 (Linux; Android 13; Pixel 7 Build/TQ3A.230805.001; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/120.0.6099.210 Mobile Safari/537.36 QuuxSeekBot/4.2",
            "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/120.0.0.0 Mobile Safari/537.36 FrobCrawler",
            // A podcast app that names itself with its build and platform.
            "Quux Podcast Spider/1.2 build 345/Android 29",
            // A podcast app's home page is no robot's contact.
            "QuuxPodcast/2.1 (https://quuxpodcast.example)",
            "MirrorSync/2.0",
            // A person's app is no tool.
            "Quux/1.2 iOS/17.2",
            "Quux Player/4.1",
            "YandexMusic/2023.10 (Android 11)",
        ] {
            assert_ne!(weak(ua), Some(false), "{ua}");
        }
    }

    #[test]
    fn operator_family_names() {
        for ua in ["Google-Lens", "GoogleOther/1.0", "bingpreview", "YandexRCA/1.0", "Baiduspider-render"] {
            assert!(super::operator_first(ua.as_bytes()), "{ua}");
        }
        for ua in ["Googler/1.0", "Google", "Bin/1.0", "Frob Google-Lens"] {
            assert!(!super::operator_first(ua.as_bytes()), "{ua}");
        }
    }
}
