//! One word of a User-Agent, on its own: whether it is a robot word, and
//! whether (cut of its version) it can be a robot's name. What the evidence
//! pass ([`super::evidence`]) and the naming ([`super::name`]) both ask.

use crate::agent::vocab::{is_browser_vocabulary, is_marker, sets};
use crate::agent::words::{find_ci, is_version_like, lower, MAX_WORD};

/// `bot` as a word ending, a camel-case part or before a non-letter:
/// `Googlebot`, `AI2Bot`, `BotLink`, `bot-1`, `bots`, but not `Robotics` or
/// `Botswana`.
pub(super) fn has_bot(word: &[u8]) -> bool {
    let mut from = 0;
    while let Some(i) = find_ci(word, "bot", from) {
        let after = &word[i + 3..];
        let ok = match after.first() {
            None => true,
            Some(c) if !c.is_ascii_lowercase() => true,
            Some(b's') => after.get(1).is_none_or(|c| !c.is_ascii_alphabetic()),
            Some(_) => false,
        };
        if ok {
            return true;
        }
        from = i + 1;
    }
    false
}

/// Whether `word` is a robot word: `bot` as [`has_bot`] finds it, or a
/// strong robot word anywhere in it (`FooCrawler`, `Spider1`).
pub(super) fn is_robot_word(word: &[u8]) -> bool {
    let mut buf = [0u8; MAX_WORD];
    let low = lower(&word[..word.len().min(MAX_WORD)], &mut buf).unwrap_or_default();
    has_bot(word) || sets().robot_words.find(low) == Some(true)
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
