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
//! 2. robot evidence (see [`findings`]): robot;
//! 3. a browser platform/engine marker, or a first word that is a handset
//!    vendor or browser name: browser, unless it is a modern desktop browser
//!    string holding a word no such browser sends (see [`foreign_word`]):
//!    robot;
//! 4. anything else does not start like a browser at all: robot.
//!
//! The words come from `words`, their meaning from `vocab`; the automaton's
//! findings arrive as [`Signals`], so nothing here knows about automata.
//!
//! Cost: every function here is linear in the (capped) UA length times a
//! bounded factor: words are compared through a lowercase copy of at most
//! [`MAX_WORD`] bytes against word sets or a fixed number of short needles.

use super::vocab::{first_word_is_browser, is_browser_vocabulary, sets, STRONG_BOT_WORDS, WEAK_BOT_WORDS};
use super::words::{
    contains, email_at, eq_any, find_ci, is_version_like, is_word_byte, lower, obfuscated_at, parts, plus_domain_at,
    preceded_by_like, url_at, DeviceModel, Word, Words, MAX_WORD,
};

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
}

impl Signals<'_> {
    /// Signals computed without the automaton (slow; for tests).
    #[cfg(test)]
    pub(super) fn of(ua: &[u8]) -> Signals<'static> {
        Signals { suspect: super::vocab::has_suspect(ua), suspect_ends: None, marker: super::vocab::has_marker(ua) }
    }
}

/// The result of the word-level rules for a UA the database did not match.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Unknown<'a> {
    /// The product name the robot announces, if one could be picked.
    pub name: Option<&'a str>,
}

/// Decides a UA the database did not match, given the automaton's signals.
/// Returns `None` for a browser.
///
/// Only the first [`MAX_WORDS_LEN`] bytes are examined word by word.
pub(super) fn analyze<'a>(ua: &'a [u8], sig: &Signals<'_>) -> Option<Unknown<'a>> {
    let ua = &ua[..ua.len().min(MAX_WORDS_LEN)];
    if ua.iter().all(u8::is_ascii_whitespace) {
        return Some(Unknown { name: None });
    }
    // No suspect needle at all: no word can carry evidence.
    let hits = if sig.suspect { sig.suspect_ends } else { Some(&[][..]) };
    if sig.suspect && findings(ua, sig.marker, false, hits).evidence {
        return Some(Unknown { name: pick_name(ua, &findings(ua, sig.marker, true, hits)) });
    }
    if sig.marker || first_word_is_browser(ua) {
        return foreign_word(ua).map(|name| Unknown { name });
    }
    Some(Unknown { name: pick_name(ua, &findings(ua, sig.marker, true, hits)) })
}

/// Rule 3's exception: a robot that copied a modern desktop browser's UA and
/// added a word of its own. Returns `Some(name)` (the first nameable foreign
/// word, if any) for such a UA, `None` for a browser.
///
/// A modern desktop browser string is `Mozilla/5.0 (platform) ...` with the
/// engine signature of today's browsers: Blink and WebKit send
/// `AppleWebKit/... (KHTML, like Gecko) ... Safari/...` with `Chrome/` or
/// `Version/`, Firefox sends the frozen `Gecko/20100101 Firefox/...`. Such
/// a string is a closed vocabulary: the platform comment holds only
/// [`PLATFORM_WORDS`](super::vocab::PLATFORM_WORDS), versions and language
/// tags; the engine comment is exactly `KHTML, like Gecko`; the products after
/// the platform comment are the engine's, the browser's and its derivatives'
/// ([`BROWSER_PRODUCTS`](super::vocab::BROWSER_PRODUCTS)). Anything else
/// (`(X11; Linux x86_64; Rigor)`, `(KHTML, like Gecko; Finder)`,
/// `Safari/537.36 Sindup/1.0`, `Firefox/103.0 abuse.example.fr`) was added by
/// whoever sent it, and browsers do not add words.
///
/// Left alone, because people's UAs legitimately carry free text there:
/// phones, tablets, TVs, consoles and headsets
/// ([`DEVICE_PLATFORM_WORDS`](super::vocab::DEVICE_PLATFORM_WORDS): device
/// models, in-app browsers appending their app's token), Internet Explorer
/// (its comment lists installed software), desktop apps built on Electron
/// (they add their own name), an in-app browser's bracketed block, older
/// engines (toolbars and distribution tags
/// in old Gecko tails), and later comments (`(.NET CLR ...)`).
///
/// Cost: one pass over the words of at most [`MAX_WORDS_LEN`] bytes, one
/// word-set lookup per word; runs for every browser UA, allocates nothing.
fn foreign_word(ua: &[u8]) -> Option<Option<&str>> {
    const OPENING: &[u8] = b"mozilla/5.0 (";
    if ua.len() <= OPENING.len() || !ua[..OPENING.len()].eq_ignore_ascii_case(OPENING) || is_plain_frozen(ua) {
        return None;
    }
    let sets = sets();
    // The platform comment: up to the first `)`; a nested `(` is not a shape
    // this rule knows.
    let close = OPENING.len() + ua[OPENING.len()..].iter().position(|&b| matches!(b, b'(' | b')'))?;
    if ua[close] != b')' {
        return None;
    }
    let mut foreign = false;
    let mut name: Option<Word> = None;
    let mut note = |w: Word| {
        foreign = true;
        if name.is_none() && is_nameable(trim_name(&ua[w.start..w.end])) {
            name = Some(w);
        }
    };
    let mut desktop = false;
    for w in Words::new(&ua[..close]).filter(|w| w.start >= OPENING.len()) {
        let word = &ua[w.start..w.end];
        if sets.device_platform.contains(word) {
            return None;
        }
        // `compatible` belongs to Internet Explorer and Konqueror, which the
        // engine signature below rules out; in a modern string it announces
        // whoever wrote it, and the words after it are foreign.
        if eq_any(word, &["windows", "macintosh", "x11", "cros", "compatible"]) {
            desktop = true;
        } else if !(sets.platform.contains(word) || is_version_like(word) || is_language_tag(word)) {
            note(w);
        }
    }
    if !desktop {
        return None;
    }
    let (mut webkit, mut khtml, mut safari, mut chrome_or_version) = (false, false, false, false);
    let (mut frozen_gecko, mut firefox) = (false, false);
    let mut in_engine_comment = false;
    for w in Words::new(ua).skip_while(|w| w.start < close) {
        let word = &ua[w.start..w.end];
        let after_slash = ua[w.start - 1] == b'/';
        if w.depth > 0 {
            // Only the engine comment is read; other comments are free text.
            let opens = ua[..w.start].iter().rev().find(|b| **b != b' ') == Some(&b'(');
            if opens {
                in_engine_comment = word.eq_ignore_ascii_case(b"khtml");
                khtml |= in_engine_comment;
            } else if in_engine_comment && !after_slash && !eq_any(word, &["like", "gecko"]) {
                note(w);
            }
            continue;
        }
        if after_slash || is_version_like(word) {
            continue;
        }
        if ua[w.start - 1] == b'[' {
            break; // an in-app browser's `[FBAN/...;...]` block: the app's own data
        }
        if eq_any(word, &["electron"]) {
            return None;
        }
        if !sets.browser_products.contains(word) {
            note(w);
            continue;
        }
        let is = |name: &[u8]| word.eq_ignore_ascii_case(name);
        // Blink froze its engine token at `537.36` and Safari at `605.1.15`;
        // older versions belong to old devices whose strings vary.
        webkit |= is(b"applewebkit") && (ua[w.end..].starts_with(b"/537.36") || ua[w.end..].starts_with(b"/605.1.15"));
        safari |= is(b"safari");
        chrome_or_version |= is(b"chrome") || is(b"version");
        firefox |= is(b"firefox");
        frozen_gecko |= is(b"gecko") && ua[w.end..].starts_with(b"/20100101");
    }
    let modern = (webkit && khtml && safari && chrome_or_version) || (frozen_gecko && firefox);
    if !(modern && foreign) {
        return None;
    }
    Some(name.and_then(|w| as_str(trim_name(&ua[w.start..w.end]))))
}

/// Whether `ua` is, whole, one of the frozen strings most desktop traffic
/// sends (Chrome, Firefox and Safari after their UA reductions) with only the
/// versions varying: the common case of [`foreign_word`] in one comparison
/// instead of a word-by-word pass.
fn is_plain_frozen(ua: &[u8]) -> bool {
    const CHROME: &[u8] = b" safari/537.36";
    const FIREFOX: &[u8] = b") gecko/20100101 firefox/";
    #[rustfmt::skip]
    const SHAPES: &[(&[u8], &[u8], bool)] = &[
        (b"mozilla/5.0 (windows nt 10.0; win64; x64) applewebkit/537.36 (khtml, like gecko) chrome/", CHROME, false),
        (b"mozilla/5.0 (macintosh; intel mac os x 10_15_7) applewebkit/537.36 (khtml, like gecko) chrome/", CHROME, false),
        (b"mozilla/5.0 (x11; linux x86_64) applewebkit/537.36 (khtml, like gecko) chrome/", CHROME, false),
        (b"mozilla/5.0 (macintosh; intel mac os x 10_15_7) applewebkit/605.1.15 (khtml, like gecko) version/", b" safari/605.1.15", false),
        (b"mozilla/5.0 (windows nt 10.0; win64; x64; rv:", FIREFOX, true),
        (b"mozilla/5.0 (macintosh; intel mac os x 10.15; rv:", FIREFOX, true),
        (b"mozilla/5.0 (x11; linux x86_64; rv:", FIREFOX, true),
        (b"mozilla/5.0 (x11; ubuntu; linux x86_64; rv:", FIREFOX, true),
    ];
    let version = |s: &[u8]| s.iter().take_while(|b| b.is_ascii_digit() || **b == b'.').count();
    SHAPES.iter().any(|&(opening, middle, versioned_end)| {
        if ua.len() <= opening.len() || !ua[..opening.len()].eq_ignore_ascii_case(opening) {
            return false;
        }
        let rest = &ua[opening.len()..];
        let rest = &rest[version(rest)..];
        if rest.len() < middle.len() || !rest[..middle.len()].eq_ignore_ascii_case(middle) {
            return false;
        }
        let rest = &rest[middle.len()..];
        if versioned_end {
            version(rest) == rest.len() && !rest.is_empty()
        } else {
            rest.is_empty()
        }
    })
}

/// `en`, `de-DE`, `zh_CN`, `es-419`: a language tag in a platform comment.
fn is_language_tag(word: &[u8]) -> bool {
    let mut parts = word.split(|&b| b == b'-' || b == b'_');
    let lang = parts.next().unwrap_or_default();
    (2..=3).contains(&lang.len())
        && lang.iter().all(u8::is_ascii_alphabetic)
        && parts.all(|p| (2..=4).contains(&p.len()) && p.iter().all(u8::is_ascii_alphanumeric))
}

/// Whether `name` is a robot word (`ExampleBot`, `FooCrawler`): a name a
/// robot gives itself, as opposed to a library's or an app's.
pub(super) fn is_robot_name(name: &str) -> bool {
    let word = name.as_bytes();
    let mut buf = [0u8; MAX_WORD];
    let low = lower(&word[..word.len().min(MAX_WORD)], &mut buf).unwrap_or_default();
    has_bot(word) || STRONG_BOT_WORDS.iter().any(|n| contains(low, n))
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

/// What kind of robot evidence a word carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WordEvidence {
    None,
    /// A robot word; `strong` for bot/crawler/spider-like words.
    Robot {
        strong: bool,
    },
    /// An HTTP library, runtime or CLI; `bare_lang` for a runtime name alone
    /// (`Java/1.8.0`), a worse name than a library's.
    Library {
        bare_lang: bool,
    },
}

/// `bot` as a word ending, a camel-case part or before a non-letter:
/// `Googlebot`, `AI2Bot`, `BotLink`, `bot-1`, `bots`, but not `Robotics` or
/// `Botswana`.
fn has_bot(word: &[u8]) -> bool {
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

fn word_evidence(ua: &[u8], w: &Word) -> WordEvidence {
    let word = &ua[w.start..w.end];
    let mut buf = [0u8; MAX_WORD];
    let low = lower(&word[..word.len().min(MAX_WORD)], &mut buf).unwrap_or_default();
    if has_bot(word) || STRONG_BOT_WORDS.iter().any(|n| contains(low, n)) {
        return WordEvidence::Robot { strong: true };
    }
    if WEAK_BOT_WORDS.iter().any(|n| contains(low, n)) {
        return WordEvidence::Robot { strong: false };
    }
    // Automation conventions: `ips-agent`, `GomezAgent` (not `User-Agent` or
    // a bare "Agent"), `CookieHubScan`, `l9scan` (not `Franciscans`), an
    // `SEO` part.
    let agent = low.len() > 5 && low.ends_with(b"agent") && !matches!(low, b"useragent" | b"user-agent");
    let scan = low.len() > 4 && low.ends_with(b"scan");
    if agent || scan || parts(low).any(|p| p == b"seo") {
        return WordEvidence::Robot { strong: false };
    }
    // `http` inside a word: Go-http-client, HttpClient, GuzzleHttp, okhttp.
    // A bare `HTTP` or `HTTPS` is a protocol name (`HTTP/1.1 SonyEricsson...`).
    if contains(low, "http") && low != b"http" && low != b"https" {
        return WordEvidence::Library { bare_lang: false };
    }
    let compound = parts(word).nth(1).is_some();
    let numeric_version =
        ua.get(w.end) == Some(&b'/') && ua.get(w.end + 1).is_some_and(|c| c.is_ascii_digit() || *c == b'v');
    let sets = sets();
    for p in parts(word) {
        if sets.lib.contains(p) {
            return WordEvidence::Library { bare_lang: false };
        }
        if (compound || numeric_version) && sets.lang.contains(p) {
            return WordEvidence::Library { bare_lang: !compound };
        }
    }
    WordEvidence::None
}

/// [`word_evidence`], skipped when `hits` (the end offsets of every suspect
/// needle in the UA, or `None` if unknown) shows no needle ending inside the
/// word (or, for `go/`, right after it): no word can carry evidence without one
/// (`evidence_implies_suspect_needle` checks this).
fn evidence_if_hit(ua: &[u8], w: &Word, hits: Option<&[u32]>) -> WordEvidence {
    let hit = hits.is_none_or(|h| h.iter().any(|&e| (w.start + 1..=w.end + 1).contains(&(e as usize))));
    if hit {
        word_evidence(ua, w)
    } else {
        WordEvidence::None
    }
}

/// What one pass of the word rules found: robot evidence and name candidates.
#[derive(Debug, Clone, Copy, Default)]
struct Findings {
    /// Some robot evidence anywhere (robot word, library, contact address).
    evidence: bool,
    /// First distinctive strong robot word (`ExampleBot`, `FooCrawler`).
    robot: Option<Word>,
    /// First distinctive weak robot word (`HeadlessChrome`, `LinkCheck`).
    weak: Option<Word>,
    /// First generic robot word (`crawler`, `Spider`, `Monitoring`), a strong
    /// one preferred.
    generic: Option<Word>,
    /// Whether `generic` is a strong robot word.
    generic_strong: bool,
    /// First library word (`python-requests`, `okhttp`).
    library: Option<Word>,
    /// First bare runtime name with a version (`Java/1.8.0`).
    lang: Option<Word>,
    /// The UA's first word, if it is a product (`name/`) and nameable.
    first_product: Option<Word>,
    /// The UA's first word, if nameable.
    first_word: Option<Word>,
    /// The word after `compatible;`, if nameable (`(compatible; Foo)`).
    compat: Option<Word>,
    /// First nameable product (`name/`) outside parentheses.
    product: Option<Word>,
    /// First nameable product inside parentheses.
    product_paren: Option<Word>,
    /// Start of the first contact address, if any.
    contact: Option<usize>,
}

/// One pass over the words: evidence and every name candidate.
///
/// `marker`: the UA has browser platform/engine words; then a library word
/// inside a comment is not evidence (`(...+HAS_CMD_HTTP_SERVER)` in a TV's
/// capability list), and words of an Android device model never are.
///
/// Cost: O(len × needles) with short needles; run only when the automaton saw
/// a [`SUSPECT_NEEDLES`](super::vocab::SUSPECT_NEEDLES) substring, or to
/// name a robot.
fn findings(ua: &[u8], marker: bool, names: bool, hits: Option<&[u32]>) -> Findings {
    let mut f = Findings::default();
    let mut devices = DeviceModel::new(ua);
    let mut skip_until = 0;
    let mut compat_end: Option<usize> = None;
    // The product a comment annotates (RFC 9110 10.1.5: a comment follows
    // the product it describes): the last nameable product outside comments,
    // kept across its version.
    let mut owner: Option<Word> = None;
    for w in Words::new(ua) {
        if w.start < skip_until {
            continue;
        }
        if let Some(end) = url_at(ua, &w).or_else(|| email_at(ua, &w)).or_else(|| plus_domain_at(ua, &w)) {
            f.evidence = true;
            f.contact.get_or_insert(w.start);
            skip_until = end;
            continue;
        }
        if obfuscated_at(ua, &w) {
            f.evidence = true;
            f.contact.get_or_insert(w.start);
            continue;
        }
        if f.evidence && !names {
            break; // evidence is all the caller wants
        }
        let evidence = evidence_if_hit(ua, &w, hits);
        if !names && evidence == WordEvidence::None {
            continue;
        }
        let word = &ua[w.start..w.end];
        let name = trim_name(word);
        let after_slash = w.start > 0 && ua[w.start - 1] == b'/';
        let product = ua.get(w.end) == Some(&b'/');
        let device = devices.contains(&w);
        // Only the name rules need this, and only for a few words.
        let nameable = || !after_slash && !device && is_nameable(name);
        // A product token all of digits, with its version, where a name
        // stands (first, or after `compatible;`) is a name too: `008/0.83`.
        // Elsewhere digits are versions, build numbers and model numbers.
        let named_product = || nameable() || (product && !after_slash && !device && is_numbered_name(name));
        if w.depth == 0 && !after_slash {
            owner = (product && nameable()).then_some(w);
        }
        match evidence {
            WordEvidence::None => {}
            _ if device => {}
            WordEvidence::Robot { strong } => {
                f.evidence = true;
                if !after_slash && !preceded_by_like(ua, w.start) && name.len() >= 2 {
                    let slot = if is_generic(name) {
                        if strong && !f.generic_strong {
                            f.generic = None;
                            f.generic_strong = true;
                        }
                        &mut f.generic
                    } else if strong {
                        &mut f.robot
                    } else {
                        &mut f.weak
                    };
                    // A distinctive robot word in a product's comment
                    // describes that product, which is the robot's name:
                    // `PingdomPageSpeed/1.0 (pingbot/2.0; ...)`.
                    let described = if strong && w.depth > 0 && !is_generic(name) { owner } else { None };
                    slot.get_or_insert(described.unwrap_or(w));
                }
            }
            WordEvidence::Library { .. } if marker && w.depth > 0 => {}
            WordEvidence::Library { bare_lang } => {
                f.evidence = true;
                let slot = if bare_lang { &mut f.lang } else { &mut f.library };
                slot.get_or_insert(w);
            }
        }
        if !names {
            continue;
        }
        if w.start == 0 && nameable() {
            f.first_word = Some(w);
        }
        if w.start == 0 && product && named_product() {
            f.first_product = Some(w);
        }
        if let Some(end) = compat_end.take() {
            let gap = &ua[end..w.start];
            let named = if product { named_product() } else { nameable() };
            if f.compat.is_none() && gap.iter().all(|b| matches!(b, b' ' | b';' | b',' | b'+')) && named {
                f.compat = Some(w);
            }
        }
        if word.eq_ignore_ascii_case(b"compatible") {
            compat_end = Some(w.end);
            owner = None; // `(compatible; X)` names the client, not the product before it
        }
        if product {
            let slot = if w.depth == 0 { &mut f.product } else { &mut f.product_paren };
            if slot.is_none() && nameable() {
                *slot = Some(w);
            }
        }
    }
    f
}

/// Picks the name an unknown robot announces, in this order: a distinctive
/// robot word (strong, then weak: `ExampleBot`); the UA's first word if it is
/// a product (`Claude-Web/1.0 (web crawler)`); the word after `compatible;`;
/// a library word; the first product outside comments; a generic robot word
/// widened to the words before it (`Sogou web spider`); the UA's first word;
/// the first product inside a comment; a generic robot word alone; a bare
/// runtime name (`Java`); the last nameable word before the contact address,
/// or without one the first nameable word.
fn pick_name<'a>(ua: &'a [u8], f: &Findings) -> Option<&'a str> {
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
fn trim_name(word: &[u8]) -> &[u8] {
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
fn is_nameable(name: &[u8]) -> bool {
    name_ok(name) && !is_generic(name) && !sets().lang.contains(name) && !is_browser_vocabulary(name)
}

/// Whether a product name of digits alone may be a name (`008` of `008/0.83`):
/// two to eight digits, not a year-like or version-like run with dots.
fn is_numbered_name(name: &[u8]) -> bool {
    (2..=8).contains(&name.len()) && name.iter().all(u8::is_ascii_digit)
}

fn name_ok(word: &[u8]) -> bool {
    (2..=MAX_WORD).contains(&word.len())
        && word.iter().any(u8::is_ascii_alphabetic)
        && !is_version_like(word)
        && !sets().not_a_name.contains(word)
}

fn is_generic(word: &[u8]) -> bool {
    let generic = &sets().generic;
    word.split(|&b| matches!(b, b'-' | b'_' | b'.' | b' ')).filter(|p| !p.is_empty()).all(|p| generic.contains(p))
}

fn as_str(bytes: &[u8]) -> Option<&str> {
    std::str::from_utf8(bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::super::vocab;
    use super::*;

    fn slow(ua: &str) -> Option<Option<&str>> {
        let b = ua.as_bytes();
        analyze(b, &Signals::of(b)).map(|u| u.name)
    }

    #[test]
    fn bot_word_rule() {
        for w in ["Googlebot", "AI2Bot", "BotLink", "bot-1", "bots", "bot", "msnbot-media"] {
            assert!(has_bot(w.as_bytes()), "{w}");
        }
        for w in ["Robotics", "Botswana", "abbotsford"] {
            assert!(!has_bot(w.as_bytes()), "{w}");
        }
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
    fn foreign_word_in_a_modern_browser_string_is_a_robot() {
        let cases = [
            // After the browser's last product, with or without a version.
            ("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/138.0.0.0 Safari/537.36 Zorblax/1.0.0", Some("Zorblax")),
            ("Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Quuxly", Some("Quuxly")),
            ("Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Safari/605.1.15 Tidewatch/3.1", Some("Tidewatch")),
            ("Mozilla/5.0 (Macintosh; Intel Mac OS X 10.15; rv:128.0) Gecko/20100101 Firefox/128.0 owl.example.org", Some("owl.example.org")),
            // Inside the platform comment or the engine comment.
            ("Mozilla/5.0 (X11; Linux x86_64; Frobnic) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36", Some("Frobnic")),
            ("Mozilla/5.0 (Frobnic; Windows NT 10.0; Win64; x64; rv:125.0) Gecko/20100101 Firefox/125.0", Some("Frobnic")),
            ("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko; PriceFinder) Chrome/124.0.0.0 Safari/537.36", Some("PriceFinder")),
            // `compatible` in a modern string.
            ("Mozilla/5.0 (compatible; Zeta Agent) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/129.0.0.0 Safari/537.36", Some("Zeta")),
        ];
        for (ua, name) in cases {
            assert_eq!(slow(ua), Some(name), "{ua}");
        }
    }

    #[test]
    fn real_browsers_and_in_app_browsers_stay_browsers() {
        for ua in [
            "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.0.0",
            "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0.0.0 Safari/537.36 OPR/115.0.0.0",
            "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/128.0.0.0 YaBrowser/24.10.0.0 Safari/537.36",
            "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/128.0.0.0 Safari/537.36 Vivaldi/6.9",
            "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Ubuntu Chromium/80.0.3987.149 Chrome/80.0.3987.149 Safari/537.36",
            "Mozilla/5.0 (X11; CrOS x86_64 14541.0.0) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36",
            "Mozilla/5.0 (X11; Ubuntu; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0",
            "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:128.0) Gecko/20100101 Firefox/128.0",
            "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Safari/605.1.15",
            "Mozilla/5.0 (Windows NT 10.0; Win64; x64; Xbox; Xbox One) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36 Edg/120.0.0.0",
            "Mozilla/5.0 (X11; Linux armv7l) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/90.0.4430.225 Safari/537.36 CrKey/1.56.500000 DeviceType/Chromecast",
            // Desktop apps on Electron add their own name.
            "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Slack/4.36.140 Chrome/120.0.6099.56 Electron/28.0.0 Safari/537.36",
            // In-app browsers: phones are left alone, brackets are the app's.
            "Mozilla/5.0 (Linux; Android 12; SM-G991B Build/SP1A.210812.016; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/120.0.6099.144 Mobile Safari/537.36 Instagram 312.1.0.34.111 Android (31/12; 480dpi; 1080x2176; samsung; SM-G991B; o1s; exynos2100; en_US; 548323757)",
            "Mozilla/5.0 (Linux; Android 13; Pixel 7 Build/TQ3A.230805.001; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/120.0.0.0 Mobile Safari/537.36 [FB_IAB/FB4A;FBAV/440.0.0.0;]",
            "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 [FBAN/FBIOS;FBAV/455.0.0.38.107;FBBV/590000000;FBDV/iPhone15,2;FBMD/iPhone;FBSN/iOS;FBSV/17.4;FBSS/3;FBID/phone;FBLC/en_US;FBOP/5]",
            "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) GSA/300.0.598994205 Mobile/15E148 Safari/604.1",
            "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1 Line/14.3.0",
            "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Mobile Safari/537.36 MyBankApp/5.4.1",
            "Mozilla/5.0 (Mobile; LYF/F300B/LYF-F300B-001-01-15-130718-i; Android; rv:48.0) Gecko/48.0 Firefox/48.0 KAIOS/2.5",
            // Internet Explorer and older engines carry free text.
            "Mozilla/5.0 (Windows NT 10.0; WOW64; Trident/7.0; .NET4.0C; .NET4.0E; rv:11.0) like Gecko",
            "Mozilla/5.0 (Windows; U; Windows NT 6.1; en-US; rv:1.9.2.3) Gecko/20100401 Firefox/3.6.3 (.NET CLR 3.5.30729)",
            "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36 (.NET CLR 3.5.30729)",
        ] {
            assert_eq!(slow(ua), None, "{ua}");
        }
    }

    #[test]
    fn plain_frozen_shapes_are_only_whole_strings() {
        assert!(is_plain_frozen(b"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36"));
        assert!(is_plain_frozen(b"Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0"));
        assert!(!is_plain_frozen(b"Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0 Zorblax"));
        assert!(!is_plain_frozen(b"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36 Zorblax/1"));
        assert!(!is_plain_frozen(b"Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/"));
    }

    #[test]
    fn a_robot_word_in_a_comment_names_the_product_it_follows() {
        assert_eq!(slow("Quuxmon/1.0 (quuxbot/2.0; +https://x.example/)"), Some(Some("Quuxmon")));
        // ... but `compatible;` introduces the client itself.
        assert_eq!(slow("Frob/2.0 (compatible; BarBot/1.0)"), Some(Some("BarBot")));
        assert_eq!(slow("Mozilla/5.0 (compatible; BarBot/1.0; +https://x.example/)"), Some(Some("BarBot")));
    }

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
    }

    #[test]
    fn evidence_implies_suspect_needle() {
        // The fast path skips `evidence` when no suspect needle occurs.
        for ua in [
            "Mozilla/5.0 (compatible; ExampleBot/2.1)",
            "curl/8.0",
            "x a@b.org",
            "see www.example.com",
            "Go-http-client/1.1",
            "Foo/1.0 (+example.org)",
            "Foo (admin (at) example.org)",
            "Mozilla/5.0 (compatible; Reader; 3 subscribers)",
        ] {
            assert!(findings(ua.as_bytes(), false, false, None).evidence, "{ua}");
            assert!(vocab::has_suspect(ua.as_bytes()), "{ua}");
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
