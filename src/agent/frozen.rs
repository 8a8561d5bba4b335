//! The frozen browser strings: the User-Agents most traffic sends, whole.
//!
//! Chromium's User-Agent reduction froze everything but the major version
//! (Windows is always `Windows NT 10.0; Win64; x64`, Android always
//! `Android 10; K`), Firefox froze its platform part, Safari its macOS
//! version; iOS Safari varies only in version numbers, and so do Edge
//! (Chromium's frozen string and `Edg/`) and Chrome on iOS (`CriOS/`). A
//! string of one of these shapes, with nothing after it, is a browser
//! whatever the versions say, and recognising that takes a few word comparisons where the walk of
//! the automaton costs one dependent table load per byte.
//!
//! The shapes are data; whether a shape may skip the automaton is proved per
//! database when the classifier is built (`Automata::quiet_shape`: no pattern
//! but a browser marker can match in any string of the shape), so a site's
//! own `ua_regex` that matches inside a frozen string still sees it.

use super::words::Folded;

/// One part of a shape: a lowercase literal, compared ASCII
/// case-insensitively, or a version (any run, maybe empty, of
/// [`is_version_byte`] bytes).
#[derive(Debug, Clone, Copy)]
pub(super) enum Part {
    Lit(&'static Folded),
    Version,
}

use Part::{Lit, Version};

/// Bytes a version run is made of: `125.0.6422.60`, iOS's `17_4`.
pub(super) fn is_version_byte(b: u8) -> bool {
    b.is_ascii_digit() || b == b'.' || b == b'_'
}

const CHROME_END: Part = Lit(&Folded::new(b" safari/537.36"));
const FIREFOX_MIDDLE: Part = Lit(&Folded::new(b") gecko/20100101 firefox/"));

/// The opening almost every browser UA (and many robot UAs) shares; every
/// shape starts with it.
const WINDOWS_CHROME: &Folded =
    &Folded::new(b"mozilla/5.0 (windows nt 10.0; win64; x64) applewebkit/537.36 (khtml, like gecko) chrome/");
const MAC_CHROME: &Folded =
    &Folded::new(b"mozilla/5.0 (macintosh; intel mac os x 10_15_7) applewebkit/537.36 (khtml, like gecko) chrome/");
const EDGE: Part = Lit(&Folded::new(b" edg/"));
const IPHONE: &Folded = &Folded::new(b"mozilla/5.0 (iphone; cpu iphone os ");
const IPAD: &Folded = &Folded::new(b"mozilla/5.0 (ipad; cpu os ");
const IOS_SAFARI: Part = Lit(&Folded::new(b" like mac os x) applewebkit/605.1.15 (khtml, like gecko) version/"));
const IOS_CHROME: Part = Lit(&Folded::new(b" like mac os x) applewebkit/605.1.15 (khtml, like gecko) crios/"));
const IOS_END: Part = Lit(&Folded::new(b" mobile/15e148 safari/604.1"));

pub(super) static MOZILLA: Folded = Folded::new(b"mozilla/5.0 (");

/// The shapes, each a literal followed by alternating versions and literals.
#[rustfmt::skip]
pub(super) const SHAPES: &[&[Part]] = &[
    &[Lit(WINDOWS_CHROME), Version, CHROME_END],
    &[Lit(MAC_CHROME), Version, CHROME_END],
    &[Lit(&Folded::new(b"mozilla/5.0 (x11; linux x86_64) applewebkit/537.36 (khtml, like gecko) chrome/")), Version, CHROME_END],
    &[Lit(&Folded::new(b"mozilla/5.0 (linux; android 10; k) applewebkit/537.36 (khtml, like gecko) chrome/")), Version, Lit(&Folded::new(b" mobile safari/537.36"))],
    &[Lit(&Folded::new(b"mozilla/5.0 (macintosh; intel mac os x 10_15_7) applewebkit/605.1.15 (khtml, like gecko) version/")), Version, Lit(&Folded::new(b" safari/605.1.15"))],
    &[Lit(IPHONE), Version, IOS_SAFARI, Version, IOS_END],
    &[Lit(IPHONE), Version, IOS_CHROME, Version, IOS_END],
    &[Lit(IPAD), Version, IOS_SAFARI, Version, IOS_END],
    &[Lit(IPAD), Version, IOS_CHROME, Version, IOS_END],
    &[Lit(&Folded::new(b"mozilla/5.0 (windows nt 10.0; win64; x64; rv:")), Version, FIREFOX_MIDDLE, Version],
    &[Lit(&Folded::new(b"mozilla/5.0 (macintosh; intel mac os x 10.15; rv:")), Version, FIREFOX_MIDDLE, Version],
    &[Lit(&Folded::new(b"mozilla/5.0 (x11; linux x86_64; rv:")), Version, FIREFOX_MIDDLE, Version],
    &[Lit(&Folded::new(b"mozilla/5.0 (x11; ubuntu; linux x86_64; rv:")), Version, FIREFOX_MIDDLE, Version],
    // Last: only a string that is not Chrome's whole is compared with them.
    &[Lit(WINDOWS_CHROME), Version, CHROME_END, EDGE, Version],
    &[Lit(MAC_CHROME), Version, CHROME_END, EDGE, Version],
];

/// The shape `ua` opens with and where that shape ends in it: `ua.len()` for
/// a whole frozen string, less for one with more after it (`Edg/...`, an
/// app's product). A shape that ends in a version needs one of at least one
/// byte (`Firefox/` alone is not the frozen string).
pub(super) fn frozen_end(ua: &[u8]) -> Option<(usize, usize)> {
    // Every shape opens with [`MOZILLA`] (tested): the byte after it
    // narrows the shapes worth comparing.
    if ua.len() <= MOZILLA.len() || !MOZILLA.starts(ua) {
        return None;
    }
    let key = ua[MOZILLA.len()].to_ascii_lowercase();
    // A whole string of a shape wins over an opening of another's (Edge's
    // string opens with Chrome's).
    let mut partial = None;
    for (index, parts) in SHAPES.iter().enumerate() {
        if !matches!(parts.first(), Some(Lit(lit)) if lit.text().get(MOZILLA.len()) == Some(&key)) {
            continue;
        }
        match shape_end(ua, parts) {
            Some(end) if end == ua.len() => return Some((index, end)),
            Some(end) => {
                partial.get_or_insert((index, end));
            }
            None => {}
        }
    }
    partial
}

/// Where the shape `parts` ends in `ua`, if `ua` opens with it.
fn shape_end(ua: &[u8], parts: &[Part]) -> Option<usize> {
    let mut at = 0;
    for part in parts {
        match part {
            Lit(lit) => {
                if !lit.starts(&ua[at..]) {
                    return None;
                }
                at += lit.len();
            }
            Version => at += ua[at..].iter().take_while(|b| is_version_byte(**b)).count(),
        }
    }
    let ends_in_version = matches!(parts.last(), Some(Version));
    let last_len = ua[..at].iter().rev().take_while(|b| is_version_byte(**b)).count();
    (!ends_in_version || last_len > 0).then_some(at)
}

/// The first literal of each shape: the openings most browser UAs start
/// with, up to the browser's own version (the automaton's precomputed walks
/// resume after them), each once.
pub(super) fn openings() -> impl Iterator<Item = &'static Folded> {
    let first = |parts: &[Part]| match parts.first() {
        Some(Lit(lit)) => Some(*lit),
        _ => None,
    };
    SHAPES.iter().enumerate().filter_map(move |(i, parts)| {
        let lit = first(parts)?;
        let earlier = SHAPES[..i].iter().any(|p| first(p).is_some_and(|l| l.text() == lit.text()));
        (!earlier).then_some(lit)
    })
}

/// One string of each shape, versions `1`: what the classifier's build
/// classifies the slow way to prove the shape's fast answer.
pub(super) fn example(parts: &[Part]) -> Vec<u8> {
    let mut out = Vec::new();
    for part in parts {
        match part {
            Lit(lit) => out.extend_from_slice(lit.text()),
            Version => out.push(b'1'),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frozen_strings_end_where_their_shape_does() {
        let whole = |ua: &str| frozen_end(ua.as_bytes()).map(|(_, end)| end) == Some(ua.len());
        for ua in [
            "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36",
            "Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0",
            "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36",
            "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4.1 Mobile/15E148 Safari/604.1",
            "MOZILLA/5.0 (X11; LINUX X86_64; RV:125.0) GECKO/20100101 FIREFOX/125.0",
            "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.0.0",
            "Mozilla/5.0 (iPhone; CPU iPhone OS 17_7 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) CriOS/131.0.6778.73 Mobile/15E148 Safari/604.1",
            "Mozilla/5.0 (iPad; CPU OS 17_7 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.7 Mobile/15E148 Safari/604.1",
        ] {
            assert!(whole(ua), "{ua}");
        }
        let firefox = "Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0";
        assert_eq!(frozen_end(format!("{firefox} Zorblax").as_bytes()).map(|s| s.1), Some(firefox.len()));
        assert_eq!(frozen_end(b"Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/"), None);
        assert_eq!(frozen_end(b"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Mobile Safari/537.36"), None);
        assert_eq!(frozen_end(b"Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) GSA/300.0 Mobile/15E148 Safari/604.1"), None);
        // Edge's whole string is Edge's shape, not Chrome's opening.
        let edge = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.0.0";
        let chrome = edge.len() - " Edg/131.0.0.0".len();
        assert_eq!(frozen_end(edge.as_bytes()), Some((SHAPES.len() - 1, edge.len())));
        assert_eq!(frozen_end(format!("{edge} Zorblax").as_bytes()), Some((1, chrome)));
        for parts in SHAPES {
            assert!(matches!(parts.first(), Some(Lit(lit)) if MOZILLA.starts(lit.text()) && lit.len() > MOZILLA.len()));
            let ua = example(parts);
            assert_eq!(frozen_end(&ua).map(|s| s.1), Some(ua.len()), "{}", String::from_utf8_lossy(&ua));
        }
    }
}
