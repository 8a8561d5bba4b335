//! The words of a User-Agent: cutting it into words, lowercasing them, and
//! finding what is not a name (URLs, e-mail addresses, an Android device
//! model, a "like ..." compatibility claim).
//!
//! A UA is a list of products (`name/version`) and comments (`(...)`)
//! (RFC 9110 section 10.1.5). A word here is a maximal run of
//! `[A-Za-z0-9_.-]`, with the parenthesis depth it stands at. This module
//! knows no vocabulary: it says where things are, `vocab` says what words
//! mean and `unknown` decides.
//!
//! Cost: every function is linear in the UA length (times a short needle) and
//! allocates nothing.

use super::db::is_token_byte;
use super::grammar::{read, Reading};

/// Words longer than this are never in a word list (the longest entry is
/// shorter) and only their first `MAX_WORD` bytes are searched for needles.
pub(super) const MAX_WORD: usize = 64;

/// ASCII-lowercases `word` into `buf`; `None` if longer than [`MAX_WORD`].
pub(super) fn lower<'b>(word: &[u8], buf: &'b mut [u8; MAX_WORD]) -> Option<&'b [u8]> {
    let out = buf.get_mut(..word.len())?;
    for (o, b) in out.iter_mut().zip(word) {
        *o = b.to_ascii_lowercase();
    }
    Some(out)
}

/// One word of a UA: a maximal run of `[A-Za-z0-9_.-]`.
#[derive(Debug, Clone, Copy)]
pub(super) struct Word {
    pub(super) start: usize,
    pub(super) end: usize,
    /// Parenthesis depth at the word.
    pub(super) depth: u32,
}

pub(super) const fn is_word_byte(b: u8) -> bool {
    WORD_BYTES[b as usize]
}

/// [`is_word_byte`] for every byte: one load where the comparisons it stands
/// for cost about eleven instructions a byte in the word loop.
const WORD_BYTES: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        t[b] = is_token_byte(b as u8) || b as u8 == b'.';
        b += 1;
    }
    t
};

/// Iterates words; linear, no allocation.
pub(super) struct Words<'a> {
    ua: &'a [u8],
    pos: usize,
    depth: u32,
}

impl<'a> Words<'a> {
    pub(super) fn new(ua: &'a [u8]) -> Self {
        Words { ua, pos: 0, depth: 0 }
    }
}

impl Iterator for Words<'_> {
    type Item = Word;
    fn next(&mut self) -> Option<Word> {
        let ua = self.ua;
        while self.pos < ua.len() && !is_word_byte(ua[self.pos]) {
            match ua[self.pos] {
                b'(' => self.depth = self.depth.saturating_add(1),
                b')' => self.depth = self.depth.saturating_sub(1),
                _ => {}
            }
            self.pos += 1;
        }
        if self.pos >= ua.len() {
            return None;
        }
        let start = self.pos;
        while self.pos < ua.len() && is_word_byte(ua[self.pos]) {
            self.pos += 1;
        }
        Some(Word { start, end: self.pos, depth: self.depth })
    }
}

/// A lowercase ASCII prefix compared ASCII case-insensitively, eight bytes at
/// a time: a UA byte matches a letter of the prefix in either case and any
/// other byte only as itself. The frozen openings of browser strings are
/// 40 to 100 bytes long and are compared on every request; byte by byte that
/// was a fifth of a browser's classification.
#[derive(Debug, Clone, Copy)]
pub(super) struct Folded {
    text: &'static [u8],
    len: usize,
    /// The prefix, little-endian, zero-padded.
    lower: [u64; FOLDED_WORDS],
    /// 0x20 where the prefix has a letter: OR-ing it into a UA byte lowercases
    /// that byte if it is a letter, and changes nothing a letter could match.
    mask: [u64; FOLDED_WORDS],
}

const FOLDED_WORDS: usize = 16;

impl Folded {
    /// # Panics
    /// At compile time (in a `const`) or at build, if `prefix` is longer than
    /// 128 bytes or holds an uppercase letter.
    pub(super) const fn new(prefix: &'static [u8]) -> Folded {
        assert!(prefix.len() <= FOLDED_WORDS * 8, "a folded prefix is at most 128 bytes");
        let mut lower = [0u64; FOLDED_WORDS];
        let mut mask = [0u64; FOLDED_WORDS];
        let mut i = 0;
        while i < prefix.len() {
            let b = prefix[i];
            assert!(!b.is_ascii_uppercase(), "a folded prefix is lowercase");
            lower[i / 8] |= (b as u64) << (8 * (i % 8));
            if b.is_ascii_lowercase() {
                mask[i / 8] |= 0x20 << (8 * (i % 8));
            }
            i += 1;
        }
        Folded { text: prefix, len: prefix.len(), lower, mask }
    }

    /// The prefix, as given (lowercase).
    pub(super) const fn text(&self) -> &'static [u8] {
        self.text
    }

    /// The prefix's length in bytes.
    pub(super) const fn len(&self) -> usize {
        self.len
    }

    /// Whether `hay` starts with the prefix, ASCII case-insensitively.
    #[inline]
    pub(super) fn starts(&self, hay: &[u8]) -> bool {
        if hay.len() < self.len {
            return false;
        }
        let full = self.len / 8;
        for i in 0..full.min(FOLDED_WORDS) {
            let mut word = [0u8; 8];
            word.copy_from_slice(&hay[8 * i..8 * i + 8]);
            if u64::from_le_bytes(word) | self.mask[i] != self.lower[i] {
                return false;
            }
        }
        let tail = &hay[8 * full..self.len];
        if tail.is_empty() {
            return true;
        }
        let mut last = [0u8; 8];
        last[..tail.len()].copy_from_slice(tail);
        u64::from_le_bytes(last) | self.mask[full] == self.lower[full]
    }
}

pub(super) fn contains_ci(hay: &[u8], needle: &str) -> bool {
    let n = needle.as_bytes();
    let Some(&first) = n.first() else { return true };
    n.len() <= hay.len() && hay.windows(n.len()).any(|w| w[0].eq_ignore_ascii_case(&first) && w.eq_ignore_ascii_case(n))
}

pub(super) fn find_ci(hay: &[u8], needle: &str, from: usize) -> Option<usize> {
    let n = needle.as_bytes();
    if from > hay.len() || n.len() > hay.len() - from {
        return None;
    }
    let Some(&first) = n.first() else { return Some(from) };
    hay[from..]
        .windows(n.len())
        .position(|w| w[0].eq_ignore_ascii_case(&first) && w.eq_ignore_ascii_case(n))
        .map(|i| i + from)
}

pub(super) fn contains(hay: &[u8], needle: &str) -> bool {
    // Called for every robot word with each of some fifty needles: compare
    // the first byte inline before the rest (a slice comparison is a call).
    let n = needle.as_bytes();
    let Some((&first, rest)) = n.split_first() else { return true };
    n.len() <= hay.len() && hay.windows(n.len()).any(|w| w[0] == first && &w[1..] == rest)
}

pub(super) fn eq_any(word: &[u8], list: &[&str]) -> bool {
    list.iter().any(|s| word.eq_ignore_ascii_case(s.as_bytes()))
}

/// Parts of a word split on `-`, `_`, `.`.
pub(super) fn parts(word: &[u8]) -> impl Iterator<Item = &[u8]> {
    word.split(|&b| b == b'-' || b == b'_' || b == b'.').filter(|p| !p.is_empty())
}

pub(super) fn is_version_like(word: &[u8]) -> bool {
    let w = word.strip_prefix(b"v").or_else(|| word.strip_prefix(b"V")).unwrap_or(word);
    w.first().is_some_and(u8::is_ascii_digit)
}

/// Android puts the device model in the platform comment, in the segment
/// that ends with ` Build/...` (`Linux; Android 4.2; CUBOT ONE Build/JOP40D`);
/// a robot word there is a brand, not a robot.
///
/// Remembers the current comment segment, so that asking for every word of a
/// UA in order costs O(len) in total (each segment is scanned once).
pub(super) struct DeviceModel<'a> {
    ua: &'a [u8],
    /// End of the segment last scanned.
    end: usize,
    /// Whether that segment holds `Build/`.
    build: bool,
    /// The device and vendor slots of the UA's comments, read when first
    /// asked: most callers never ask (a browser's string with a suspect
    /// needle but no evidence near it).
    slots: Option<Reading>,
}

impl<'a> DeviceModel<'a> {
    pub(super) fn new(ua: &'a [u8]) -> Self {
        DeviceModel { ua, end: 0, build: false, slots: None }
    }

    /// Whether `w` lies in a comment segment holding `Build/`, or in a
    /// device or vendor slot of the grammar (`grammar`). Words must be
    /// asked in increasing position.
    pub(super) fn contains(&mut self, w: &Word) -> bool {
        if w.depth == 0 {
            return false;
        }
        let ua = self.ua;
        if self.slots.get_or_insert_with(|| read(ua)).in_slot(w.start, w.end) {
            return true;
        }
        if w.start >= self.end {
            let rest = &self.ua[w.start..];
            let len = rest.iter().position(|&b| matches!(b, b';' | b')' | b'(')).unwrap_or(rest.len());
            self.end = w.start + len.max(1);
            self.build = contains_ci(&rest[..len], "build/");
        }
        self.build
    }
}

fn url_end(ua: &[u8], from: usize) -> usize {
    ua[from..]
        .iter()
        .position(|&b| b.is_ascii_whitespace() || matches!(b, b')' | b';' | b',' | b'"' | b'<' | b'>'))
        .map_or(ua.len(), |i| i + from)
}

/// If a URL starts at `w` (`http://`, `https://`, `www.`), its end.
pub(super) fn url_at(ua: &[u8], w: &Word) -> Option<usize> {
    let word = &ua[w.start..w.end];
    let scheme =
        (word.eq_ignore_ascii_case(b"http") || word.eq_ignore_ascii_case(b"https")) && ua[w.end..].starts_with(b"://");
    let www = word.len() > 4 && word[..4].eq_ignore_ascii_case(b"www.");
    (scheme || www).then(|| url_end(ua, w.start))
}

/// `local@domain.tld` with an alphabetic TLD of two or more letters (so that
/// `Build/ICS@ROM_04.06.2012` is not an address).
pub(super) fn email_at(ua: &[u8], w: &Word) -> Option<usize> {
    if ua.get(w.end) != Some(&b'@') {
        return None;
    }
    let dom_start = w.end + 1;
    let dom_len = ua[dom_start..].iter().take_while(|&&b| is_word_byte(b)).count();
    let domain = &ua[dom_start..dom_start + dom_len];
    let domain = domain.strip_suffix(b".").unwrap_or(domain);
    let tld = domain.rsplit(|&b| b == b'.').next()?;
    let has_dot = domain.contains(&b'.');
    (has_dot && tld.len() >= 2 && tld.iter().all(u8::is_ascii_alphabetic)).then_some(dom_start + dom_len)
}

/// `+example.org` (a contact without scheme, after the `+` convention of
/// `+http://...`): the word after `+` has a dot and an alphabetic TLD.
pub(super) fn plus_domain_at(ua: &[u8], w: &Word) -> Option<usize> {
    if w.start == 0 || ua[w.start - 1] != b'+' {
        return None;
    }
    let word = &ua[w.start..w.end];
    let word = word.strip_suffix(b".").unwrap_or(word);
    let tld = word.rsplit(|&b| b == b'.').next()?;
    (word.contains(&b'.') && tld.len() >= 2 && tld.iter().all(u8::is_ascii_alphabetic)).then_some(w.end)
}

/// `name (at) example dot com` and `[at]`: obfuscated e-mail addresses.
pub(super) fn obfuscated_at(ua: &[u8], w: &Word) -> bool {
    let word = &ua[w.start..w.end];
    word.eq_ignore_ascii_case(b"at")
        && w.start > 0
        && matches!((ua[w.start - 1], ua.get(w.end)), (b'(', Some(b')')) | (b'[', Some(b']')))
}

/// The word ending right before `end`, skipping spaces, and its start.
fn word_before(ua: &[u8], end: usize) -> Option<(usize, &[u8])> {
    let head = &ua[..end];
    let trimmed = head.len() - head.iter().rev().take_while(|&&b| b == b' ').count();
    if trimmed == head.len() && trimmed > 0 {
        return None; // no space: not a separate word
    }
    let start = head[..trimmed].iter().rposition(|&b| !is_word_byte(b)).map_or(0, |i| i + 1);
    (start < trimmed).then(|| (start, &head[start..trimmed]))
}

/// Whether the words right before `start` claim compatibility rather than
/// identity: "like Gecko", "treat like Googlebot", "compatible with
/// Googlebot".
pub(super) fn preceded_by_like(ua: &[u8], start: usize) -> bool {
    match word_before(ua, start) {
        Some((_, w)) if w.eq_ignore_ascii_case(b"like") => true,
        Some((s, w)) if w.eq_ignore_ascii_case(b"with") => {
            word_before(ua, s).is_some_and(|(_, w)| w.eq_ignore_ascii_case(b"compatible"))
        }
        _ => false,
    }
}

/// Whether `pos` lies inside a URL (`http://...`, `www....`): the run of
/// non-separator bytes around it holds `://` or starts with `www.`. Cost:
/// O(length of that run).
pub(super) fn in_url(ua: &[u8], pos: usize) -> bool {
    let sep = |b: &u8| b.is_ascii_whitespace() || matches!(b, b'(' | b')' | b';' | b',' | b'"' | b'+');
    let start = ua[..pos].iter().rposition(sep).map_or(0, |i| i + 1);
    let run = &ua[start..pos];
    run.windows(3).any(|w| w == b"://") || (run.len() >= 4 && run[..4].eq_ignore_ascii_case(b"www."))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn email_needs_alphabetic_tld() {
        let ua = b"x ICS@ROM_04.06.2012 y";
        let w = Words::new(ua).find(|w| &ua[w.start..w.end] == b"ICS").unwrap();
        assert_eq!(email_at(ua, &w), None);
        let ua = b"(crawler@example.org)";
        let w = Words::new(ua).next().unwrap();
        assert!(email_at(ua, &w).is_some());
    }

    #[test]
    fn folded_prefix_is_eq_ignore_ascii_case() {
        let prefixes: [&[u8]; 5] =
            [b"", b"mozilla/5.0 (", b"x_y@[`{", b"mozilla/5.0 (windows nt 10.0; win64; x64) applewebkit/", b"abcdefgh"];
        // Every byte at every position of each prefix, and each prefix cut short.
        for p in prefixes {
            let f = Folded::new(p);
            assert_eq!(f.len(), p.len());
            for at in 0..p.len() {
                for b in 0..=255u8 {
                    let mut hay = p.to_vec();
                    hay[at] = b;
                    hay.push(b'!');
                    assert_eq!(f.starts(&hay), hay[..p.len()].eq_ignore_ascii_case(p), "{p:?} with {b:#x} at {at}");
                }
            }
            assert!(f.starts(p) && f.starts(&p.to_ascii_uppercase()));
            assert!(p.is_empty() || !f.starts(&p[..p.len() - 1]));
        }
    }
}
