//! Naming an unknown robot: which word of its UA is its name, and how a
//! word is cut to a name.

use super::evidence::Findings;
use super::token::{as_str, is_generic, is_nameable, name_ok, trim_name};
use crate::agent::words::{eq_any, is_version_like, is_word_byte, DeviceModel, Word, Words};

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
