//! Rule 3's exception: a browser-shaped UA whose shape no browser produces.
//!
//! Vocabulary is not evidence here: browsers add product tokens of their own
//! (regional Chromium builds, messengers' embedded browsers, app shells), and
//! no word list names them all. Structure is: the platform and engine
//! comments of today's Blink, WebKit and Gecko strings are written by the
//! browser itself, and browsers name products, not hosts.

use super::token::{as_str, is_nameable, trim_name};
use super::Signals;
use crate::agent::frozen::MOZILLA;
use crate::agent::vocab::is_host_name;
use crate::agent::words::{Folded, Word, Words};

/// Rule 3's exception: a robot that copied a modern browser's UA and wrote
/// into it what no browser writes. Returns `Some(name)` for such a UA (the
/// name, if one can be picked), `None` for a browser.
///
/// A modern browser string is `Mozilla/5.0 (platform) ...` with the engine
/// signature of today's browsers: Blink and WebKit send `AppleWebKit/537.36`
/// or `AppleWebKit/605.1.15` with `(KHTML, like Gecko)`, `Chrome/` or
/// `Version/`, and `Safari/`; Firefox sends the frozen `Gecko/20100101
/// Firefox/`. Two things no such browser writes:
///
/// - `compatible` in the platform or the engine comment (`(compatible; Zeta
///   Agent)`, `(KHTML, like Gecko; compatible; Qx/1.2)`): the word belongs to
///   Internet Explorer and Konqueror, whose engines are not these; here it
///   introduces whoever wrote it, and the word after it is the name;
/// - a host name after the platform comment (`Firefox/103.0 abuse.example.fr`,
///   `Foo/2.0 (foo.example.com)`): a contact address, as a URL would be; the
///   product it follows names the robot, else the host itself.
///
/// Everything else a browser-shaped string carries (a product token after
/// `Safari/537.36`, a word in the platform comment, an in-app browser's
/// block) leaves it a browser; the robot evidence of rule 2 (robot words,
/// contact URLs and addresses, libraries) is what finds robots among them.
///
/// Cost: a few comparisons for nearly every browser string (the walk's
/// hints say whether the shapes can occur), else one pass over the words of
/// at most [`MAX_WORDS_LEN`](super::MAX_WORDS_LEN) bytes with a few byte
/// comparisons per word; runs for every browser UA, allocates nothing.
pub(super) fn impossible_shape<'a>(ua: &'a [u8], sig: &Signals<'_>) -> Option<Option<&'a str>> {
    const OPENING: &Folded = &MOZILLA;
    if ua.len() <= OPENING.len() || !OPENING.starts(ua) {
        return None;
    }
    // Neither shape can occur without `compatible` or a dot before a
    // lowercase letter (a host name's last label), which spares nearly
    // every browser the word pass. After a frozen opening they are looked
    // for from the frozen part's last byte (a version's dot) on. The walk
    // of the automaton notes where the last of them (or of more: a dot
    // before any letter) ends; one that starts at `from` or later ends at
    // `from + 2` or later.
    let from = match sig.frozen_end {
        Some(end) if end == ua.len() => return None,
        Some(end) => end.saturating_sub(1),
        None => 0,
    };
    let may_have_shape = match sig.shape_hint_end {
        Some(end) => end >= from + 2,
        None => may_have_shape(&ua[from..]),
    };
    if !may_have_shape {
        return None;
    }
    // The platform comment: up to the first `)`; a nested `(` is not a shape
    // this rule knows.
    let close = OPENING.len() + ua[OPENING.len()..].iter().position(|&b| matches!(b, b'(' | b')'))?;
    if ua[close] != b')' {
        return None;
    }
    let named = |w: Word| Some(w).filter(|w| is_nameable(trim_name(&ua[w.start..w.end])));
    // `Some(name)` once `compatible` was seen in the platform or engine
    // comment: the word after it, if nameable.
    let mut compatible: Option<Option<Word>> = None;
    let mut after_compatible = false;
    let mut note_compatible = |w: Word| {
        if after_compatible {
            compatible = Some(named(w));
            after_compatible = false;
        } else if compatible.is_none() && ua[w.start..w.end].eq_ignore_ascii_case(b"compatible") {
            after_compatible = true;
            compatible = Some(None);
        }
    };
    for w in Words::new(&ua[..close]).filter(|w| w.start >= OPENING.len()) {
        note_compatible(w);
    }
    let (mut webkit, mut khtml, mut safari, mut chrome_or_version) = (false, false, false, false);
    let (mut frozen_gecko, mut firefox) = (false, false);
    let mut in_engine_comment = false;
    // The first host name, and the last nameable product before it.
    let mut host: Option<Word> = None;
    let mut product: Option<Word> = None;
    for w in Words::new(ua).skip_while(|w| w.start < close) {
        let word = &ua[w.start..w.end];
        let after_slash = ua[w.start - 1] == b'/';
        let is_product = ua.get(w.end) == Some(&b'/');
        if host.is_none() && !after_slash && is_host_name(word) {
            host = Some(w);
            if w.depth == 0 && is_product {
                product = Some(w); // the host is the product: `Foo.example.com/2.0`
            }
        }
        if w.depth > 0 {
            // Only the engine comment is read; other comments are free text.
            let opens = ua[..w.start].iter().rev().find(|b| **b != b' ') == Some(&b'(');
            if opens {
                in_engine_comment = word.eq_ignore_ascii_case(b"khtml");
                khtml |= in_engine_comment;
            } else if in_engine_comment {
                note_compatible(w);
            }
            continue;
        }
        in_engine_comment = false;
        if after_slash {
            continue;
        }
        if host.is_none() && is_product {
            product = named(w).or(product);
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
    if !modern {
        return None;
    }
    let name = match (compatible, host) {
        (Some(name), _) => name,
        (None, Some(host)) => product.or(Some(host)),
        (None, None) => return None,
    };
    Some(name.and_then(|w| as_str(trim_name(&ua[w.start..w.end]))))
}

/// Whether `ua` holds `compatible` (any case) or a dot before a lowercase
/// letter. Eight bytes at a time: the positions of every `.` and `c` (any
/// case) in a chunk are found at once, and only those are looked at (a
/// browser string has a dozen). Classifying does not need it: the walk of
/// the automaton notes where these end ([`Signals::shape_hint_end`]); this
/// is for signals computed without the walk.
fn may_have_shape(ua: &[u8]) -> bool {
    const COMPATIBLE: &[u8] = b"compatible";
    const ONES: u64 = 0x0101_0101_0101_0101;
    const LOW7: u64 = 0x7F7F_7F7F_7F7F_7F7F;
    // The high bit of each byte of `v` that is zero, and of no other byte.
    let zero_bytes = |v: u64| !(((v & LOW7).wrapping_add(LOW7)) | v | LOW7);
    let hit = |i: usize| match ua[i] {
        b'.' => ua.get(i + 1).is_some_and(u8::is_ascii_lowercase),
        b'c' | b'C' => ua[i..].get(..COMPATIBLE.len()).is_some_and(|w| w.eq_ignore_ascii_case(COMPATIBLE)),
        _ => false,
    };
    let mut chunks = ua.chunks_exact(8);
    for (n, chunk) in chunks.by_ref().enumerate() {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let w = u64::from_le_bytes(word);
        let mut candidates =
            zero_bytes(w ^ (ONES * u64::from(b'.'))) | zero_bytes((w | (ONES * 0x20)) ^ (ONES * u64::from(b'c')));
        while candidates != 0 {
            if hit(8 * n + candidates.trailing_zeros() as usize / 8) {
                return true;
            }
            candidates &= candidates - 1;
        }
    }
    (ua.len() - chunks.remainder().len()..ua.len()).any(hit)
}

#[cfg(test)]
mod tests {
    use super::super::tests::slow;
    use super::{impossible_shape, may_have_shape, Signals};

    /// The chunked search answers as looking at every byte does.
    #[test]
    fn may_have_shape_as_byte_by_byte() {
        let naive = |ua: &[u8]| {
            (0..ua.len()).any(|i| match ua[i] {
                b'.' => ua.get(i + 1).is_some_and(u8::is_ascii_lowercase),
                _ => ua[i..].get(..10).is_some_and(|w| w.eq_ignore_ascii_case(b"compatible")),
            })
        };
        let parts = proptest::sample::select(vec![
            &b"."[..],
            b"c",
            b"C",
            b"compatible",
            b"COMPATIBLE",
            b"Compatibl",
            b"a",
            b"0",
            b" ",
            b"\xff",
            b"\x80",
            b"/",
            b".x",
            b"\x2e",
        ]);
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        runner
            .run(&proptest::collection::vec(parts, 0..40), |parts| {
                let ua = parts.concat();
                proptest::prop_assert_eq!(may_have_shape(&ua), naive(&ua));
                Ok(())
            })
            .unwrap();
    }

    #[test]
    fn what_no_modern_browser_writes_makes_a_robot() {
        let cases = [
            // `compatible` in the platform or the engine comment.
            ("Mozilla/5.0 (compatible; Zeta Agent) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/129.0.0.0 Safari/537.36", Some("Zeta")),
            ("Mozilla/5.0 (Windows NT 10.0; compatible; Frobnic) Gecko/20100101 Firefox/125.0", Some("Frobnic")),
            ("Mozilla/5.0 (compatible) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Safari/605.1.15", None),
            ("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko; compatible; Qx/1.2; q.example/x) Chrome/124.0.0.0 Safari/537.36", Some("Qx")),
            // A host name after the platform comment.
            ("Mozilla/5.0 (Macintosh; Intel Mac OS X 10.15; rv:128.0) Gecko/20100101 Firefox/128.0 owl.example.org", Some("owl.example.org")),
            ("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/133.0.0.0 Safari/537.36 Quux/2.0 (quux.com)", Some("Quux")),
            ("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/79.0.3945.0 Safari/537.36 Frob.io/2.0.0", Some("Frob.io")),
        ];
        for (ua, name) in cases {
            assert_eq!(slow(ua), Some(name), "{ua}");
        }
    }

    #[test]
    fn an_unknown_word_alone_leaves_a_browser() {
        // Made-up products where browsers put theirs: no robot evidence, so
        // a browser (regional builds and app shells look exactly like this).
        for ua in [
            "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/138.0.0.0 Safari/537.36 Zorblax/1.0.0",
            "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Quuxly",
            "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Tidewatch/3.1 Version/17.4 Safari/605.1.15",
            "Mozilla/5.0 (Macintosh; Intel Mac OS X 10.15; rv:128.0) Gecko/20100101 Firefox/128.0 Owlfox/128.0",
            "Mozilla/5.0 (X11; Linux x86_64; Frobnic 2.0) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36",
            "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36 Alpha/1.0 Beta/2.0 Gamma",
            // Odd engine comments and later comments are not written by robots alone.
            "Mozilla/5.0 (WebOS; Linux/SmartTV) AppleWebKit/537.36 (KHTML, likeGecko) Chrome/53.0.2785.34 Safari/537.36 HbbTV/1.4.1 ( DRM; LGE; 43UM71007LB; WEBOS4.5 03.50.95;)",
            "Mozilla/5.0 (Web0S; Linux/SmartTV) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/79.0.3945.79 Safari/537.36 HbbTV/1.5.1 (+DRM; LGE; 55UP7700PTA; WEBOS6.0 03.00.15; W6_lm21a;)",
            // An app's reverse-DNS id is not a host name.
            "Mozilla/5.0 (Linux; U; Android 7.1.1; zh-CN; Readboy_G550A Build/NMF26F) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/69.0.3497.100 Mobile Safari/537.36 AliApp(DingTalk/6.5.57.23) com.alibaba.android.rimet/27727534",
        ] {
            assert_eq!(slow(ua), None, "{ua}");
        }
        // The same strings with robot evidence are robots (rule 2).
        assert_eq!(
            slow("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/138.0.0.0 Safari/537.36 ZorblaxBot/1.0"),
            Some(Some("ZorblaxBot"))
        );
        assert_eq!(
            slow("Mozilla/5.0 (Macintosh; Intel Mac OS X 10.15; rv:128.0) Gecko/20100101 Firefox/128.0 Owl/1.0 (+https://owl.example/)"),
            Some(Some("Owl"))
        );
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
    fn a_frozen_opening_changes_no_answer() {
        let firefox = "Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0";
        let chrome = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36";
        let mut n = 0;
        for opening in [firefox, chrome] {
            for tail in [
                "",
                " owl.example.org",
                ".owl.example.org",
                " Edg/124.0",
                " (compatible; Zeta)",
                "compatible",
                " Frob.io/2.0",
            ] {
                let ua = format!("{opening}{tail}");
                let b = ua.as_bytes();
                let frozen_end = crate::agent::frozen::frozen_end(b).map(|(_, end)| end);
                assert!(frozen_end.is_some(), "{ua}");
                // Where the walk's last hint ends: a dot before a letter of
                // any case, or `compatible`.
                let hint_end = (0..b.len())
                    .filter_map(|i| match b[i] {
                        b'.' => b.get(i + 1).is_some_and(u8::is_ascii_alphabetic).then_some(i + 2),
                        _ => b[i..].get(..10).is_some_and(|w| w.eq_ignore_ascii_case(b"compatible")).then_some(i + 10),
                    })
                    .max()
                    .unwrap_or(0);
                let without = impossible_shape(b, &Signals::of(b));
                for shape_hint_end in [None, Some(hint_end)] {
                    let sig = Signals { frozen_end, shape_hint_end, ..Signals::of(b) };
                    assert_eq!(impossible_shape(b, &sig), without, "{ua}");
                }
                n += usize::from(without.is_some());
            }
        }
        assert!(n >= 4, "{n} robots among them");
    }
}
