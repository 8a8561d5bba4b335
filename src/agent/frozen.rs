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
pub(super) const fn is_version_byte(b: u8) -> bool {
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
/// Shapes that open with the same parts follow one another, the shorter
/// first (see [`SHARED`]).
#[rustfmt::skip]
pub(super) const SHAPES: &[&[Part]] = &[
    &[Lit(WINDOWS_CHROME), Version, CHROME_END],
    &[Lit(WINDOWS_CHROME), Version, CHROME_END, EDGE, Version],
    &[Lit(MAC_CHROME), Version, CHROME_END],
    &[Lit(MAC_CHROME), Version, CHROME_END, EDGE, Version],
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
];

/// The shape `ua` opens with and where that shape ends in it: `ua.len()` for
/// a whole frozen string, less for one with more after it (`Edg/...`, an
/// app's product). A shape that ends in a version needs one of at least one
/// byte (`Firefox/` alone is not the frozen string).
///
/// This runs for every request, so it compares as little as it can: the
/// byte after [`MOZILLA`] picks the shapes worth comparing ([`BY_KEY`]), and
/// a shape that opens with the same parts as the one before it resumes where
/// those parts ended ([`SHARED`]): Edge's string is Chrome's and more, and
/// the iPhone's and iPad's two shapes differ only after the OS version.
pub(super) fn frozen_end(ua: &[u8]) -> Option<(usize, usize)> {
    // Every shape opens with [`MOZILLA`] (tested).
    if ua.len() <= MOZILLA.len() || !MOZILLA.starts(ua) {
        return None;
    }
    let key = ua[MOZILLA.len()].to_ascii_lowercase();
    let mut shapes = if key.is_ascii_lowercase() { BY_KEY[usize::from(key - b'a')] } else { 0 };
    // How far the shape compared last matched.
    let mut reach = Reach { parts: 0, after: [0; MAX_PARTS] };
    // A whole string of a shape wins over an opening of another's (Edge's
    // string opens with Chrome's).
    let mut partial = None;
    while shapes != 0 {
        let index = shapes.trailing_zeros() as usize;
        shapes &= shapes - 1;
        let parts = SHAPES[index];
        // Shapes of one key are compared in order, so a shape that shares
        // parts with the one before it comes right after that one.
        let shared = SHARED[index];
        if reach.parts < shared {
            continue; // it fails where the one before it did
        }
        reach.follow(ua, parts, shared);
        if reach.parts < parts.len() {
            continue;
        }
        let end = reach.after[parts.len() - 1];
        if matches!(parts.last(), Some(Version)) && end == reach.after[parts.len() - 2] {
            continue; // an empty last version
        }
        if end == ua.len() {
            return Some((index, end));
        }
        partial.get_or_insert((index, end));
    }
    partial
}

/// The most parts a shape has.
const MAX_PARTS: usize = 5;

/// How far one shape matched in a UA.
#[derive(Debug, Clone, Copy)]
struct Reach {
    /// How many of its parts matched.
    parts: usize,
    /// Where each matched part ended.
    after: [usize; MAX_PARTS],
}

impl Reach {
    /// Matches `parts[from..]` in `ua` after the first `from` parts, which
    /// matched already, recording where each part ends.
    fn follow(&mut self, ua: &[u8], parts: &[Part], from: usize) {
        let mut at = if from == 0 { 0 } else { self.after[from - 1] };
        self.parts = from;
        for (part, after) in parts[from..].iter().zip(&mut self.after[from..]) {
            match part {
                Lit(lit) => {
                    if !lit.starts(&ua[at..]) {
                        return;
                    }
                    at += lit.len();
                }
                Version => at += version_run(&ua[at..]),
            }
            *after = at;
            self.parts += 1;
        }
    }
}

/// How many [`is_version_byte`] bytes `s` opens with: eight at a time, then
/// one at a time.
fn version_run(s: &[u8]) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const LOW7: u64 = 0x7F7F_7F7F_7F7F_7F7F;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let mut n = 0;
    while let Some(&chunk) = s.get(n..n + 8).and_then(|c| <&[u8; 8]>::try_from(c).ok()) {
        let w = u64::from_le_bytes(chunk);
        // With the high bits cleared, adding to a byte carries into no
        // other: `h + 0x50` reaches 0x80 from `0`, `h + 0x46` from `:`, and
        // `(h ^ c) + 0x7F` from every byte but `c`.
        let h = w & LOW7;
        let digit = h.wrapping_add(ONES * 0x50) & !h.wrapping_add(ONES * 0x46);
        let is = |c: u8| !(h ^ (ONES * u64::from(c))).wrapping_add(LOW7);
        let version = (digit | is(b'.') | is(b'_')) & !w & HIGH;
        let other = !version & HIGH;
        if other != 0 {
            return n + other.trailing_zeros() as usize / 8;
        }
        n += 8;
    }
    n + s[n..].iter().take_while(|&&b| is_version_byte(b)).count()
}

/// Per lowercase letter, the shapes whose byte after [`MOZILLA`] it is: bit
/// `i` for `SHAPES[i]`.
static BY_KEY: [u32; 26] = {
    assert!(SHAPES.len() <= 32, "BY_KEY holds a shape per bit");
    let mut by_key = [0u32; 26];
    let mut i = 0;
    while i < SHAPES.len() {
        assert!(SHAPES[i].len() <= MAX_PARTS, "a shape has at most MAX_PARTS parts");
        if let Lit(lit) = SHAPES[i][0] {
            let key = lit.text()[MOZILLA.len()];
            assert!(key.is_ascii_lowercase(), "a shape's byte after MOZILLA is a letter");
            by_key[(key - b'a') as usize] |= 1 << i;
        }
        i += 1;
    }
    by_key
};

/// Per shape, how many of its first parts are those of the shape before
/// it. Shapes that share parts follow one another (checked here): a shape
/// shares no more with any earlier one than with the one right before it.
static SHARED: [usize; SHAPES.len()] = {
    let mut shared = [0; SHAPES.len()];
    let mut j = 1;
    while j < SHAPES.len() {
        shared[j] = common(j - 1, j);
        assert!(shared[j] < SHAPES[j].len(), "no shape is all of the one before it");
        let mut i = 0;
        while i + 1 < j {
            assert!(common(i, j) <= shared[j], "shapes that share parts follow one another");
            i += 1;
        }
        j += 1;
    }
    shared
};

/// How many first parts `SHAPES[i]` and `SHAPES[j]` have in common.
const fn common(i: usize, j: usize) -> usize {
    let mut n = 0;
    while n < SHAPES[i].len() && n < SHAPES[j].len() && same_part(SHAPES[i][n], SHAPES[j][n]) {
        n += 1;
    }
    n
}

const fn same_part(a: Part, b: Part) -> bool {
    match (a, b) {
        (Version, Version) => true,
        (Lit(a), Lit(b)) => {
            let (a, b) = (a.text(), b.text());
            if a.len() != b.len() {
                return false;
            }
            let mut i = 0;
            while i < a.len() {
                if a[i] != b[i] {
                    return false;
                }
                i += 1;
            }
            true
        }
        _ => false,
    }
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
    fn version_runs_as_byte_by_byte() {
        let naive = |s: &[u8]| s.iter().take_while(|&&b| is_version_byte(b)).count();
        let bytes = proptest::sample::select(b"0123456789._/:-^`@ aZ\x2f\x3a\xae\xb0\xdf\x00\xff".to_vec());
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        runner
            .run(&proptest::collection::vec(bytes, 0..40), |s| {
                proptest::prop_assert_eq!(version_run(&s), naive(&s));
                Ok(())
            })
            .unwrap();
        for at in 0..17 {
            for b in 0..=255u8 {
                let mut s = *b"1.2_3.4.5.6_7.8.9";
                s[at] = b;
                assert_eq!(version_run(&s), naive(&s), "{b:#x} at {at}");
            }
        }
    }

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
        assert_eq!(frozen_end(edge.as_bytes()), Some((3, edge.len())));
        assert_eq!(frozen_end(format!("{edge} Zorblax").as_bytes()), Some((2, chrome)));
        for parts in SHAPES {
            assert!(matches!(parts.first(), Some(Lit(lit)) if MOZILLA.starts(lit.text()) && lit.len() > MOZILLA.len()));
            let ua = example(parts);
            assert_eq!(frozen_end(&ua).map(|s| s.1), Some(ua.len()), "{}", String::from_utf8_lossy(&ua));
        }
    }
}
