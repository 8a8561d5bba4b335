//! Rule 3's exception: a UA shaped like a modern desktop browser's that
//! carries a word no such browser sends is a robot that copied a browser.

use super::name::{as_str, is_nameable, trim_name};
use crate::agent::vocab::sets;
use crate::agent::words::{eq_any, is_version_like, Word, Words};

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
/// Cost: one pass over the words of at most [`MAX_WORDS_LEN`](super::MAX_WORDS_LEN) bytes, one
/// word-set lookup per word; runs for every browser UA, allocates nothing.
pub(super) fn foreign_word(ua: &[u8]) -> Option<Option<&str>> {
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

#[cfg(test)]
mod tests {
    use super::super::tests::slow;
    use super::*;

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
}
