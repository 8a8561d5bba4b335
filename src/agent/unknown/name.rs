//! Naming an unknown robot: which word of its UA is its name, and how a
//! word is cut to a name.

use super::evidence::is_robot_word;
use super::evidence::Findings;
use crate::agent::vocab::{is_browser_vocabulary, is_marker, sets};
use crate::agent::words::{eq_any, is_version_like, is_word_byte, DeviceModel, Word, Words, MAX_WORD};

/// Picks the name an unknown robot announces, in this order: a distinctive
/// robot word (strong, then weak: `ExampleBot`); the UA's first word if it is
/// a product (`Claude-Web/1.0 (web crawler)`); the word after `compatible;`;
/// a library word; the first product outside comments; a generic robot word
/// widened to the words before it (`Sogou web spider`); the UA's first word;
/// the first product inside a comment; a generic robot word alone; a bare
/// runtime name (`Java`); the last nameable word before the contact address,
/// or without one the first nameable word.
pub(super) fn pick_name<'a>(ua: &'a [u8], f: &Findings) -> Option<&'a str> {
    let word = |w: Word| as_str(trim_name(&ua[w.start..w.end]));
    let generic = f.generic.map(|w| {
        let end = w.start + trim_name(&ua[w.start..w.end]).len();
        let (start, gained) = widen(ua, w.start);
        (start, end, gained)
    });
    let first = f.robot.or(f.weak).or(f.first_product).or(f.compat).or(f.library).or(f.product);
    if let Some(w) = first {
        return word(w);
    }
    if let Some((start, end, true)) = generic {
        return as_str(&ua[start..end]);
    }
    if let Some(w) = f.first_word.or(f.product_paren) {
        return word(w);
    }
    if let Some((start, end, _)) = generic {
        return as_str(&ua[start..end]);
    }
    let fallback = match f.contact {
        Some(end) => nameable_word(&ua[..end], true),
        None => nameable_word(ua, false),
    };
    f.lang.or(fallback).and_then(word)
}

/// Widens a generic robot word with up to three words before it, joined by
/// single spaces in the same segment (`Screaming Frog SEO Spider`). Returns
/// the new start and whether a distinctive word was added.
fn widen(ua: &[u8], start: usize) -> (usize, bool) {
    let mut s = start;
    let mut gained = false;
    for _ in 0..3 {
        if s < 2 || ua[s - 1] != b' ' || !is_word_byte(ua[s - 2]) {
            break;
        }
        let prev_end = s - 1;
        let prev_start = ua[..prev_end].iter().rposition(|&b| !is_word_byte(b)).map_or(0, |i| i + 1);
        let prev = &ua[prev_start..prev_end];
        if prev_start > 0 && ua[prev_start - 1] == b'/' {
            break; // a version
        }
        if !prev.iter().any(u8::is_ascii_alphabetic)
            || is_version_like(prev)
            || eq_any(prev, &["mozilla", "compatible", "like", "by", "from", "via"])
        {
            break;
        }
        gained |= !is_generic(prev) && name_ok(prev);
        s = prev_start;
    }
    (s, gained)
}

/// The last (the one right before a contact address: `Altresium
/// (+http://...)`) or the first (`Mozilla/5.0 (Google-PhysicalWeb)`)
/// nameable word of `ua`.
fn nameable_word(ua: &[u8], last: bool) -> Option<Word> {
    let mut devices = DeviceModel::new(ua);
    let mut found = None;
    for w in Words::new(ua) {
        let name = trim_name(&ua[w.start..w.end]);
        let after_slash = w.start > 0 && ua[w.start - 1] == b'/';
        if !after_slash && !devices.contains(&w) && is_nameable(name) {
            found = Some(w);
            if !last {
                break;
            }
        }
    }
    found
}

/// Cuts a version glued to a name and trailing punctuation: `Spider1.0`,
/// `Usefulbot_2.3.62`, `DirBuster-1.0-RC1`, `Harvester2024`; keeps `AI2Bot`
/// and `FastCrawler3`.
pub(super) fn trim_name(word: &[u8]) -> &[u8] {
    if word.len() > MAX_WORD {
        return word; // never a name (see `name_ok`); keeps this O(MAX_WORD²)
    }
    // A `-`/`_` part starting with a digit (or `v` + digit) starts a version
    // if what follows is dotted or a long number: `-1.0-RC1`, `_2.3.62`,
    // `-v1.2`, `-2024`, but not `aws-sdk-go-v2` or `aws-sdk-dotnet-45`.
    let mut w = word;
    for (i, &b) in word.iter().enumerate().skip(1) {
        if matches!(b, b'-' | b'_') {
            let rest = &word[i + 1..];
            let rest = rest.strip_prefix(b"v").or_else(|| rest.strip_prefix(b"V")).unwrap_or(rest);
            let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
            let versionish = rest.contains(&b'.') || (digits >= 4 && digits == rest.len());
            // A robot's name with a release suffix: `SeznamBot-v2`.
            let release = digits > 0 && digits + 1 == word.len() - i - 1 && matches!(word[i + 1], b'v' | b'V');
            let versionish = versionish || (release && is_robot_word(&word[..i]));
            if digits > 0 && versionish && word[..i].iter().any(u8::is_ascii_alphabetic) {
                w = &word[..i];
                break;
            }
        }
    }
    while let [rest @ .., b'.' | b'-' | b'_'] = w {
        w = rest;
    }
    // Glued digits: cut when they hold a dot (`1.0`) or are a long number.
    let digits = w.iter().rev().take_while(|b| b.is_ascii_digit() || **b == b'.').count();
    if digits > 0 && digits < w.len() {
        let (head, tail) = w.split_at(w.len() - digits);
        if (tail.contains(&b'.') || tail.len() >= 4) && head.iter().any(u8::is_ascii_alphabetic) {
            let mut head = head;
            while let [rest @ .., b'.' | b'-' | b'_'] = head {
                head = rest;
            }
            // `Foo-v1.0`: drop the `v` only after a separator.
            if let [rest @ .., b'.' | b'-' | b'_', b'v' | b'V'] = head {
                head = rest;
            }
            return head;
        }
    }
    w
}

/// Whether a (trimmed) word may be a robot's name: see [`name_ok`], and not
/// generic, a bare runtime name or browser vocabulary.
pub(super) fn is_nameable(name: &[u8]) -> bool {
    name_ok(name) && !is_generic(name) && !sets().lang.contains(name) && !is_browser_vocabulary(name)
}

/// Whether the UA's first product may name the robot although it is a
/// handset vendor's or an app's word (see [`is_nameable`]): anything
/// nameable but a browser platform/engine marker.
pub(super) fn is_app_product(name: &[u8]) -> bool {
    name_ok(name) && !is_generic(name) && !sets().lang.contains(name) && !is_marker(name)
}

/// Whether a product name of digits alone may be a name (`008` of `008/0.83`):
/// two to eight digits, not a year-like or version-like run with dots.
pub(super) fn is_numbered_name(name: &[u8]) -> bool {
    (2..=8).contains(&name.len()) && name.iter().all(u8::is_ascii_digit)
}

pub(super) fn name_ok(word: &[u8]) -> bool {
    (2..=MAX_WORD).contains(&word.len())
        && word.iter().any(u8::is_ascii_alphabetic)
        && !is_version_like(word)
        && !sets().not_a_name.contains(word)
}

pub(super) fn is_generic(word: &[u8]) -> bool {
    let generic = &sets().generic;
    word.split(|&b| matches!(b, b'-' | b'_' | b'.' | b' ')).filter(|p| !p.is_empty()).all(|p| generic.contains(p))
}

pub(super) fn as_str(bytes: &[u8]) -> Option<&str> {
    std::str::from_utf8(bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trim_name_cuts_glued_versions() {
        assert_eq!(trim_name(b"Spider1.0"), b"Spider");
        assert_eq!(trim_name(b"bot_2.3.62"), b"bot");
        assert_eq!(trim_name(b"AI2Bot"), b"AI2Bot");
        assert_eq!(trim_name(b"FastCrawler3"), b"FastCrawler3");
        assert_eq!(trim_name(b"Crawler."), b"Crawler");
        assert_eq!(trim_name(b"DirBuster-1.0-RC1"), b"DirBuster");
        assert_eq!(trim_name(b"grub-client-1.5.3"), b"grub-client");
        assert_eq!(trim_name(b"Harvester2024"), b"Harvester");
        assert_eq!(trim_name(b"minio-go"), b"minio-go");
        assert_eq!(trim_name(b"Foo-v1.2"), b"Foo");
        assert_eq!(trim_name(b"zebra-v2-bot"), b"zebra-v2-bot");
        assert_eq!(trim_name(b"aws-sdk-go-v2"), b"aws-sdk-go-v2");
        assert_eq!(trim_name(b"aws-sdk-dotnet-45"), b"aws-sdk-dotnet-45");
        assert_eq!(trim_name(b"yoozBot-2.2"), b"yoozBot");
        assert_eq!(trim_name(b"SeznamBot-v2"), b"SeznamBot");
        assert_eq!(trim_name(b"FooCrawler-V10"), b"FooCrawler");
        assert_eq!(trim_name(b"Foo-v2"), b"Foo-v2");
    }
}
