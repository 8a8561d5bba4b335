//! A one-pass reader of a User-Agent's grammar: where its comments are, and
//! which of their fields are a device's or a vendor's words.
//!
//! A User-Agent is a list of products (`name/version`) and comments
//! (`(...)`), RFC 9110 section 10.1.5. Browsers fill their comments with the
//! platform, and some fields of those are written by whoever made the
//! device, not by the browser: the model after `Android N;` (`(Linux;
//! Android 10; CUBOT J9)`, `(Linux; U; Android 4.0.3; ko-kr; LG-L160L
//! Build/IML74K)`), the vendor fields of a television's `HbbTV/1.5.1
//! (+DRM;BOTECH;...)`, a Huawei phone's `HMSCore 6.0.1.300.mirror`. A model
//! may be called anything (`Spider 8`, `XBot Junior`, `RED 90`), so a word in
//! one of these **slots** is never evidence of a robot: [`Reading::in_slot`]
//! says whether a span lies in one.
//!
//! The reader walks the bytes once, left to right, with a fixed amount of
//! state (no backtracking, no allocation): it notes the product a comment
//! follows, and within the comment each `;`-separated field. Nested comments
//! belong to the field they are in. At most [`MAX_SLOTS`] slots are kept;
//! a string with more is no browser's.
//!
//! Cost: O(length), a few comparisons a byte; it runs only for User-Agents in
//! which the automaton found a robot's word, so a browser's request does not
//! pay for it.

use super::db::is_token_byte;

/// A byte of a word: a token byte or a dot (as `words` cuts them).
fn is_word_byte(b: u8) -> bool {
    is_token_byte(b) || b == b'.'
}

/// At most this many slots are noted; real strings have one or two.
pub(super) const MAX_SLOTS: usize = 6;

/// What [`read`] found: the device and vendor slots of a User-Agent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Reading {
    slots: [(u32, u32); MAX_SLOTS],
    n: usize,
}

impl Reading {
    /// Whether `start..end` lies inside a device or vendor slot.
    pub(super) fn in_slot(&self, start: usize, end: usize) -> bool {
        self.slots[..self.n].iter().any(|&(s, e)| s as usize <= start && end <= e as usize)
    }

    /// The slots, as byte ranges, in order.
    pub(super) fn slots(&self) -> impl Iterator<Item = std::ops::Range<usize>> + '_ {
        self.slots[..self.n].iter().map(|&(s, e)| s as usize..e as usize)
    }

    fn push(&mut self, start: usize, end: usize) {
        if self.n < MAX_SLOTS && start < end {
            self.slots[self.n] = (start as u32, end as u32);
            self.n += 1;
        }
    }
}

/// Whether a comment's product names a television's or set-top box's
/// platform, whose comment holds the vendor's own fields: `HbbTV/1.5.1
/// (+DRM;Samsung;SmartTV2015;...)`, `SmartTV/... (...)`, `CE-HTML/1.0 (...)`.
fn vendor_product(name: &[u8]) -> bool {
    ["hbbtv", "smarttv", "smart-tv", "ce-html", "ohtv", "opentv"]
        .iter()
        .any(|p| name.eq_ignore_ascii_case(p.as_bytes()))
}

/// A field like `Android 10`, `Android 8.1.0`, `Android`: the next device
/// field names the model. A misspelt platform word (`Andr0id 9`, `Andriod
/// 9`, as some televisions' firmware writes it, issue #68) is read the same:
/// a spelling mistake is no evidence of a robot.
fn is_android_field(field: &[u8]) -> bool {
    let Some(rest) = field.get(..7).filter(|p| is_android_word(p)).map(|_| &field[7..]) else {
        return false;
    };
    rest.is_empty() || (rest[0] == b' ' && rest[1..].iter().all(|b| b.is_ascii_digit() || *b == b'.'))
}

/// Whether a seven-byte word is `Android` (any case), or a misspelling of
/// it: a digit for a like-looking letter (`Andr0id`, `Andro1d`) or two
/// neighbouring letters swapped (`Andriod`, `Adnroid`). Cost: 7 bytes.
pub(super) fn is_android_word(word: &[u8]) -> bool {
    const ANDROID: &[u8; 7] = b"android";
    if word.len() != 7 {
        return false;
    }
    let mut w = [0u8; 7];
    for (o, &b) in w.iter_mut().zip(word) {
        *o = match b.to_ascii_lowercase() {
            b'0' => b'o',
            b'1' | b'l' => b'i',
            c => c,
        };
    }
    if &w == ANDROID {
        return true;
    }
    // One swap of neighbours, the first letter kept (`Andriod`).
    let Some(i) = (1..6).find(|&i| w[i] != ANDROID[i]) else { return false };
    w[i] == ANDROID[i + 1] && w[i + 1] == ANDROID[i] && w[i + 2..] == ANDROID[i + 2..] && w[0] == b'a'
}

/// A field that comes between the Android version and the model without
/// being the model: a language tag (`en-us`, `zh-CN`, `ko_KR`, `de`), the
/// old security letter `U`, or nothing.
fn is_before_model(field: &[u8]) -> bool {
    let letters = |p: &[u8]| (2..=3).contains(&p.len()) && p.iter().all(u8::is_ascii_alphabetic);
    match field.iter().position(|b| matches!(b, b'-' | b'_')) {
        _ if field.is_empty() || field.eq_ignore_ascii_case(b"u") || field.eq_ignore_ascii_case(b"i") => true,
        None => letters(field) && field.iter().all(u8::is_ascii_lowercase),
        Some(i) => {
            let region = &field[i + 1..];
            letters(&field[..i]) && (2..=4).contains(&region.len()) && region.iter().all(u8::is_ascii_alphanumeric)
        }
    }
}

/// A phone maker's service field in the platform comment (`HMSCore
/// 6.0.1.300`, `GMSCore 21.30.16`): the vendor's own version words.
fn is_core_field(field: &[u8]) -> bool {
    field.len() > 8 && (field[..8].eq_ignore_ascii_case(b"hmscore ") || field[..8].eq_ignore_ascii_case(b"gmscore "))
}

/// Trims spaces (and a TV's leading `+`) off a field: `(start, end)`.
fn trim(ua: &[u8], mut start: usize, mut end: usize) -> (usize, usize) {
    while start < end && ua[start] == b' ' {
        start += 1;
    }
    while end > start && ua[end - 1] == b' ' {
        end -= 1;
    }
    (start, end)
}

/// Whether the word at `start..end` of `ua` stands where a robot names
/// itself: first in the string (`Ruby`, `Operator/1.0`), right after
/// `compatible;` (`(compatible; Speedy)`), or with a contact address after
/// it in the same comment or, outside comments, anywhere after it
/// (`Fluid (+http://...)`). A word elsewhere in a browser's string is a
/// browser's, an app's or a distribution's product (`Red Hat/1.0`,
/// `CocCoc/33`, `Notion/2.0.8`, `CaseDOSA/Operator`).
///
/// Cost: O(length) from `start`, backwards to the word before and forwards
/// to the comment's end.
pub(super) fn robot_context(ua: &[u8], start: usize, end: usize) -> bool {
    if start == 0 {
        return true;
    }
    let before = ua[..start].iter().rposition(|&b| !matches!(b, b' ' | b';' | b',')).map_or(0, |i| i + 1);
    let word_start = ua[..before].iter().rposition(|&b| !is_word_byte(b)).map_or(0, |i| i + 1);
    if ua[word_start..before].eq_ignore_ascii_case(b"compatible") {
        return true;
    }
    if appended_after_browser(&ua[..start]) {
        return true;
    }
    let rest = &ua[end.min(ua.len())..];
    let rest = &rest[..rest.iter().position(|&b| b == b')').unwrap_or(rest.len())];
    rest.windows(4).any(|w| w.eq_ignore_ascii_case(b"http") || w.eq_ignore_ascii_case(b"www.")) || rest.contains(&b'@')
}

/// Whether `head` (what precedes a token) ends with a whole browser
/// string's last product, `Safari/537.36 ` or `Firefox/128.0 `: a product a
/// robot appends there names the robot (`... Safari/537.36 Silktide`), and
/// the browsers' own appended products are told apart before
/// ([`is_browsers_own`]).
fn appended_after_browser(head: &[u8]) -> bool {
    let Some(last) = head.iter().rposition(|&b| b != b' ') else { return false };
    if last + 1 == head.len() {
        // Not separated by a space from what comes before.
        return false;
    }
    let token_start = head[..=last].iter().rposition(|&b| b == b' ').map_or(0, |i| i + 1);
    let token = &head[token_start..=last];
    let Some(slash) = token.iter().position(|&b| b == b'/') else { return false };
    let (name, version) = (&token[..slash], &token[slash + 1..]);
    let browser = [&b"Safari"[..], b"Firefox", b"Chrome", b"Mobile"].iter().any(|n| name.eq_ignore_ascii_case(n));
    browser && version.first().is_some_and(u8::is_ascii_digit)
}

/// Whether `ua` is shaped like a person's app rather than a browser or a
/// robot: an Apple app (`Podcasts/1555.2.1 CFNetwork/1237 Darwin/20.4.0`),
/// an Electron app (`Notion/2.0.8 Chrome/... Electron/13.6.3`), a mobile app
/// whose first comment opens with its reverse-DNS id (`CastBox/8.22.1
/// (fm.castbox.audiobook.radio.podcast; build:166; Android 11)`), an app
/// that gives its build number (`Foo Podcasts/1.2 build 345/Android 29`,
/// issue #68), Android's WebView (`; wv)`, `Version/4.0 Chrome/`: the
/// shape Chrome's documentation gives for WebView, developer.chrome.com
/// "User-Agent strings"), a television or console, an in-app browser, a
/// feature phone's WAP browser (`Profile/MIDP-2.0`), a mail client.
///
/// Not evidence of a person by itself: a robot's own evidence (a robot
/// word such as `bot` or `crawler`, a contact address, a library) still
/// makes a robot, though in such a string a robot word or a database name
/// without a robot's contact or `compatible;` is weak evidence (issue #68,
/// [`super::unknown`], [`super::Classifier::classify`]); a weak robot word
/// alone (`podcast`, `capture`, `mirror`) gives way to it. Cost: one pass
/// of a literal matcher over at most 1 KiB; runs for robots and for
/// `robotgate classify`'s report, not for a browser's request.
pub(crate) fn is_app(ua: &[u8]) -> bool {
    const NEEDLES: &[&str] = &[
        "cfnetwork/",
        "electron/",
        "hbbtv",
        "smarttv",
        "smart-tv",
        "web0s",
        "webos",
        "tizen",
        "crkey",
        "playstation",
        "nintendo",
        "xbox",
        "fban/",
        "fbav/",
        "fb_iab",
        "instagram",
        "metaiab",
        "micromessenger",
        "gsa/",
        "; wv)",
        "thunderbird/",
        "outlook",
        "profile/midp",
        "appletv",
        "roku",
        "kodi/",
        "libvlc/",
        "spotify/",
        "galaxyclient",
        "dalvik/",
        "stagefright",
        "applecoremedia",
        "tpapi",
        // Android WebView's reduced and classic strings.
        "version/4.0 chrome/",
    ];
    static APP: std::sync::OnceLock<regex_automata::meta::Regex> = std::sync::OnceLock::new();
    let ua = &ua[..ua.len().min(1024)];
    if let Some(open) = ua.iter().position(|&b| b == b'(') {
        // `App/1.0 (com.example.app; ...)`: a reverse-DNS id first.
        let first = &ua[open + 1..];
        let id = &first[..first.iter().position(|&b| matches!(b, b';' | b')')).unwrap_or(first.len())];
        let dots = id.iter().filter(|&&b| b == b'.').count();
        let starts_with_letter = id.first().is_some_and(u8::is_ascii_lowercase);
        // A host name (`foo.example.com`) is a robot's contact, not an app.
        let last = id.rsplit(|&b| b == b'.').next().unwrap_or_default();
        let host =
            ["com", "net", "org", "io", "co", "de", "fr", "uk", "ru", "nl", "jp", "cn", "info", "dev", "ai", "eu"]
                .iter()
                .any(|t| last.eq_ignore_ascii_case(t.as_bytes()));
        if dots >= 2
            && !host
            && starts_with_letter
            && id.iter().all(|&b| is_word_byte(b))
            && open > 0
            && ua[open - 1] == b' '
        {
            return true;
        }
    }
    let app = APP.get_or_init(|| {
        let mut pattern = String::from("(?i-u)(?:");
        for n in NEEDLES {
            pattern.push_str(&regex_syntax::escape(n));
            pattern.push('|');
        }
        // An app's build number: `build 345`, `build:166` (not `Build/`,
        // Android's build id after a model).
        pattern.push_str("(?:^|[^a-z0-9])build[ :][0-9]|");
        // An iOS app's WKWebView: the engine and `Mobile/15E148`, then the
        // app's own token where Safari's would stand.
        pattern.push_str(r"\(khtml, like gecko\) mobile/[0-9a-z]+ [^s ]|");
        // Amazon's Fire TV models (`AFTT`, `AFTMM`), as a whole word.
        pattern.push_str("(?:^|[^a-z0-9])aft[a-z]{1,3}(?:[^a-z0-9]|$))");
        // Bytes, not text: `[^s ]` may match a byte of no UTF-8 character.
        regex_automata::meta::Builder::new()
            .syntax(regex_automata::util::syntax::Config::new().utf8(false))
            .build(&pattern)
            .expect("a fixed pattern of escaped literals and byte classes compiles")
    });
    app.is_match(ua)
}

/// Whether a literal is a distinctive name rather than a word of a
/// language: it holds a `-`, `_` or digit (`ips-agent`), or a capital after
/// a small letter (`MarketGoo`, `ZyBorg`, `NewsNow`). `RED`, `Speedy`,
/// `Operator`, `Notion` are words.
pub(super) fn is_distinctive(lit: &[u8]) -> bool {
    lit.iter().any(|&b| matches!(b, b'-' | b'_') || b.is_ascii_digit())
        || lit.windows(2).any(|p| p[0].is_ascii_lowercase() && p[1].is_ascii_uppercase())
}

/// Product names browsers and in-app browsers append to their own strings
/// that a maintained list also names as a robot: never evidence inside a
/// browser-shaped string (`... (KHTML, like Gecko) CocCoc/33 Chrome/...`).
pub(super) fn is_browsers_own(lit: &[u8]) -> bool {
    ["coccoc", "metaiab", "notion", "ladybird"].iter().any(|p| lit.eq_ignore_ascii_case(p.as_bytes()))
}

/// Reads `ua` once; see the module documentation.
pub(super) fn read(ua: &[u8]) -> Reading {
    let mut r = Reading::default();
    let mut i = 0;
    // The start of the last product name at depth 0 and its end (before `/`).
    let mut product: (usize, usize) = (0, 0);
    let mut word_start: Option<usize> = None;
    while i < ua.len() {
        let b = ua[i];
        if b == b'(' {
            let name = &ua[product.0..product.1];
            i = comment(ua, i, vendor_product(name), &mut r);
            word_start = None;
            continue;
        }
        if is_word_byte(b) || b == b'+' || b == b'!' {
            word_start.get_or_insert(i);
        } else {
            if b == b'/' {
                if let Some(s) = word_start {
                    product = (s, i);
                }
            }
            word_start = None;
        }
        i += 1;
    }
    r
}

/// Reads the comment opening at `open` (a `(` at depth 0) and returns where
/// reading resumes (after its `)`, or the end). `vendor`: the whole comment
/// is a vendor's fields.
fn comment(ua: &[u8], open: usize, vendor: bool, r: &mut Reading) -> usize {
    let mut depth = 0u32;
    let mut field_start = open + 1;
    let mut android = false;
    let mut i = open;
    while i < ua.len() {
        match ua[i] {
            b'(' => depth += 1,
            b')' => {
                depth -= 1;
                if depth == 0 {
                    field(ua, field_start, i, vendor, &mut android, r);
                    return i + 1;
                }
            }
            b';' if depth == 1 => {
                field(ua, field_start, i, vendor, &mut android, r);
                field_start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    field(ua, field_start, ua.len(), vendor, &mut android, r);
    ua.len()
}

/// One field `start..end` of a comment. `android`: the Android version was
/// the last field and the model is still to come.
fn field(ua: &[u8], start: usize, end: usize, vendor: bool, android: &mut bool, r: &mut Reading) {
    let (start, end) = trim(ua, start, end);
    let text = &ua[start..end];
    if vendor || is_core_field(text) {
        r.push(start, end);
    } else if is_android_field(text) {
        *android = true;
    } else if *android && !is_before_model(text) {
        // The model, up to `Build/` and the build id with it.
        r.push(start, end);
        *android = false;
    } else if is_build_field(text) {
        // `(Linux; U; Andr0id 4.4; CRAWLER-X Build/KOT49H)`: a field that
        // ends in Android's build id is a device model wherever it stands.
        r.push(start, end);
    }
}

/// Whether a comment field is a device model with Android's build id
/// (`SM-G960F Build/PPR1.180610.011`): a model, a space, `Build/`.
fn is_build_field(field: &[u8]) -> bool {
    field.windows(7).position(|w| w.eq_ignore_ascii_case(b" build/")).is_some_and(|i| i > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apps_by_shape() {
        for ua in [
            "Podcasts/1555.2.1 CFNetwork/1237 Darwin/20.4.0",
            "CastBox/8.22.1 (fm.castbox.audiobook.radio.podcast; build:166; Android 11)",
            "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Notion/2.0.8 Chrome/91.0.4472.164 Electron/13.6.3 Safari/537.36",
            "Nokia6300/2.0 (05.00) Profile/MIDP-2.0 Configuration/CLDC-1.1",
            "Mozilla/5.0 (Linux; Android 9; AFTT Build/PS7233; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/91.0.4472.120 Mobile Safari/537.36 (Amazon;AFTT;PS7233;tpapi)",
        ] {
            assert!(is_app(ua.as_bytes()), "{ua}");
        }
        for ua in [
            "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36",
            "Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0",
            "Mozilla/5.0 (compatible; Foo/1.0; +https://foo.example/bot)",
            "Foo/1.0 (foo.example.com)",
        ] {
            assert!(!is_app(ua.as_bytes()), "{ua}");
        }
    }

    /// Issue #68: a WebView's string with an app's token after it, an app
    /// that gives its build, an iOS app's WKWebView, a Fire TV are people's
    /// apps; a word with `aft` inside is not a Fire TV.
    #[test]
    fn issue_68_more_apps_by_shape() {
        for ua in [
            // developer.chrome.com "User-Agent strings": WebView's `Version/4.0 Chrome/`.
            "Mozilla/5.0 (Linux; Android 10) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/120.0.0.0 Mobile Safari/537.36 QuuxApp/2.1",
            "Quux Podcasts/1.2 build 345/Android 29",
            "Mozilla/5.0 (iPhone; CPU iPhone OS 17_2 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 QuuxApp/3.0",
            "Mozilla/5.0 (Linux; Android 9; AFTMM Build/PS7242) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Mobile Safari/537.36",
        ] {
            assert!(is_app(ua.as_bytes()), "{ua}");
        }
        for ua in [
            "CraftBot/1.0 (+https://craft.example/bot)",
            "Mozilla/5.0 (iPhone; CPU iPhone OS 17_2 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.2 Mobile/15E148 Safari/604.1",
            "Quux/1.0 (Build/1.2)",
        ] {
            assert!(!is_app(ua.as_bytes()), "{ua}");
        }
    }

    /// Issue #68: a misspelt platform word and a build field are read as
    /// Android's: the model beside them is a slot, never evidence.
    #[test]
    fn issue_68_misspelt_android_and_build_fields() {
        for w in ["Android", "ANDROID", "Andr0id", "Andro1d", "Andriod", "Adnroid", "Androdi"] {
            assert!(is_android_word(w.as_bytes()), "{w}");
        }
        for w in ["Androids", "Andrxid", "Bndroid", "Android7", "nAdroid"] {
            assert!(!is_android_word(w.as_bytes()), "{w}");
        }
        let chrome = "AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36";
        assert_eq!(slots(&format!("Mozilla/5.0 (Linux; Andr0id 9; SpiderTV 55) {chrome}")), ["SpiderTV 55"]);
        assert_eq!(
            slots(&format!("Mozilla/5.0 (Linux; U; Andriod 4.4; CrawlerX Build/KOT49H) {chrome}")),
            ["CrawlerX Build/KOT49H"]
        );
        assert_eq!(
            slots(&format!("Mozilla/5.0 (Linux; U; Linux 3.4; BotBox Build/KOT49H) {chrome}")),
            ["BotBox Build/KOT49H"]
        );
    }

    fn slots(ua: &str) -> Vec<&str> {
        read(ua.as_bytes()).slots().map(|s| &ua[s]).collect()
    }

    #[test]
    fn the_device_model_after_android() {
        let chrome = "AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Mobile Safari/537.36";
        for (platform, model) in [
            ("(Linux; Android 10; CUBOT J9)", "CUBOT J9"),
            ("(Linux; Android 13; Spider 8)", "Spider 8"),
            ("(Linux; Android 8.1.0; XBot Junior)", "XBot Junior"),
            ("(Linux; U; Android 4.0.3; ko-kr; LG-L160L Build/IML74K)", "LG-L160L Build/IML74K"),
            ("(Linux; U; Android 9; zh-CN; M bot 54 Build/PPR1)", "M bot 54 Build/PPR1"),
            ("(Linux; Android 13; Pixel 7 Build/TQ3A.230805.001; wv)", "Pixel 7 Build/TQ3A.230805.001"),
            ("(Linux; Android 10; K)", "K"),
        ] {
            assert_eq!(slots(&format!("Mozilla/5.0 {platform} {chrome}")), [model], "{platform}");
        }
    }

    #[test]
    fn vendor_fields() {
        assert_eq!(
            slots("Mozilla/5.0 (Linux; Tizen 2.3) AppleWebKit/538.1 (KHTML, like Gecko) Version/2.3 TV Safari/538.1 HbbTV/1.5.1 (+DRM;BOTECH;BT-43;1.0;;)"),
            ["+DRM", "BOTECH", "BT-43", "1.0"]
        );
        assert_eq!(
            slots("Mozilla/5.0 (Linux; Android 10; HMSCore 6.0.1.300.mirror; GMSCore 21.30.16) AppleWebKit/537.36"),
            ["HMSCore 6.0.1.300.mirror", "GMSCore 21.30.16"]
        );
    }

    #[test]
    fn what_is_no_slot() {
        // A robot's own comment, and the fields after the model.
        for ua in [
            "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
            "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36",
            "SpiderBot/1.0 (Android 10)",
            "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko; Google-Assess) Chrome/125.0 Safari/537.36",
        ] {
            assert!(slots(ua).is_empty(), "{ua}");
        }
        assert_eq!(
            slots("Mozilla/5.0 (Linux; Android 11; Pixel 2; DuplexWeb-Google/1.0) AppleWebKit/537.36"),
            ["Pixel 2"]
        );
    }

    #[test]
    fn odd_input_is_read_to_its_end() {
        for ua in ["(", ")", "((;;))", "Android 10; x)", "a/(Android 1;;;(", "HbbTV/(", "(Android 1; )"] {
            let r = read(ua.as_bytes());
            assert!(r.slots().all(|s| s.end <= ua.len()), "{ua}");
        }
        let deep = "(".repeat(10_000) + "Android 1; bot" + &")".repeat(10_000);
        let _ = read(deep.as_bytes());
        let many = "(Linux; Android 1; a)".repeat(100);
        assert_eq!(read(many.as_bytes()).slots().count(), MAX_SLOTS);
    }

    proptest::proptest! {
        #[test]
        fn never_panics_and_slots_lie_inside(ua in proptest::collection::vec(proptest::sample::select(
            vec![&b"("[..], b")", b";", b" ", b"Android 9", b"HbbTV/1", b"/", b"bot", b"en-us", b"\xff", b"HMSCore 1"]), 0..40)) {
            let ua = ua.concat();
            let r = read(&ua);
            for s in r.slots() {
                proptest::prop_assert!(s.start < s.end && s.end <= ua.len());
            }
        }
    }
}
