//! Which browser a User-Agent claims to be, read from the product tokens
//! every release of it sends (Chromium's `Chrome/M.0.0.0`, Firefox's
//! `Firefox/M.0`, Safari's `Version/M.m Safari/…`), and whether it says it
//! runs inside an app.

/// A browser engine family: what decides which headers it sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// Chrome, Edge, Opera, Samsung Internet, Brave, Vivaldi… (`Chrome/`).
    Chromium,
    /// Firefox and its forks (`Firefox/`, not on iOS).
    Gecko,
    /// Safari, and every browser on iOS and iPadOS (Apple's rule: WebKit).
    WebKit,
    /// Nothing this module judges.
    Other,
}

/// What a User-Agent claims: the family, the major version of its engine
/// (0 when unread), whether mobile, whether inside an app.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Claim {
    /// The family.
    pub family: Family,
    /// Chromium's and Firefox's major version; Safari's `Version/` as
    /// `major * 100 + minor` (16.4 is 1604). 0: not read.
    pub major: u32,
    /// `Mobile` in the string (Chromium's `?1` hint, Safari on a phone).
    pub mobile: bool,
    /// An app's WebView or in-app browser (Android's `; wv)`, an app's own
    /// token after the browser's, iOS without `Safari/`): headers are the
    /// app's to set, so nothing found is strong.
    pub embedded: bool,
}

impl Claim {
    /// The claim `ua` makes. [`Family::Other`] unless it is shaped as a
    /// browser's: `Mozilla/5.0 (` first.
    pub fn of(ua: &[u8]) -> Claim {
        let other = Claim { family: Family::Other, major: 0, mobile: false, embedded: false };
        if !ua.starts_with(b"Mozilla/5.0 (") {
            return other;
        }
        let mobile = find(ua, b"Mobile").is_some();
        let ios = find(ua, b"iPhone").is_some() || find(ua, b"iPad").is_some() || find(ua, b"iPod").is_some();
        let safari_at = find(ua, b" Safari/");
        let (family, major) = if ios {
            (Family::WebKit, version_after(ua, b"Version/").map_or(0, |(m, n)| m * 100 + n))
        } else if let Some((m, _)) = version_after(ua, b"Chrome/") {
            (Family::Chromium, m)
        } else if let Some((m, _)) = version_after(ua, b"Firefox/") {
            (Family::Gecko, m)
        } else if safari_at.is_some() && find(ua, b"AppleWebKit/").is_some() {
            (Family::WebKit, version_after(ua, b"Version/").map_or(0, |(m, n)| m * 100 + n))
        } else {
            return other;
        };
        // An app's browser: Android's WebView mark, iOS with no `Safari/`
        // (WKWebView), or a token after the last one a browser ends with.
        let embedded = find(ua, b"; wv)").is_some() || ios && safari_at.is_none() || app_after_browser(ua, family);
        Claim { family, major, mobile, embedded }
    }

    /// Whether this version sends `Sec-Fetch-*` on every request in a
    /// secure context: `None` when its version was not read.
    pub fn sends_fetch_metadata(&self) -> Option<bool> {
        let since = match self.family {
            Family::Chromium => 80,
            Family::Gecko => 90,
            Family::WebKit => 1604,
            Family::Other => return Some(false),
        };
        (self.major > 0).then_some(self.major >= since)
    }
}

/// Where `needle` first occurs in `hay`.
fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    memchr::memmem::find(hay, needle)
}

/// The `major.minor` after `token` (`Chrome/124.0.0.0` -> (124, 0)), at most
/// five digits each.
fn version_after(ua: &[u8], token: &[u8]) -> Option<(u32, u32)> {
    let at = find(ua, token)? + token.len();
    let number = |from: usize| {
        let digits = ua[from.min(ua.len())..].iter().take_while(|b| b.is_ascii_digit()).take(5).count();
        let n = ua[from..from + digits].iter().fold(0u32, |n, d| n * 10 + u32::from(d - b'0'));
        (digits > 0).then_some((n, from + digits))
    };
    let (major, end) = number(at)?;
    let minor = if ua.get(end) == Some(&b'.') { number(end + 1).map_or(0, |(m, _)| m) } else { 0 };
    Some((major, minor))
}

/// Whether an app's own product token follows the browser's last one
/// (`… Safari/537.36 Instagram 300.0…`, `… Mobile Safari/537.36 [FBAN/…]`):
/// the tokens Chromium, Firefox and Safari end with, and the branded
/// Chromiums' own (`Edg/`, `OPR/`, `YaBrowser/`, `Vivaldi/`…), are not apps.
fn app_after_browser(ua: &[u8], family: Family) -> bool {
    let end = match family {
        Family::Chromium | Family::WebKit => find(ua, b"Safari/"),
        Family::Gecko => find(ua, b"Firefox/"),
        Family::Other => None,
    };
    let Some(end) = end else { return false };
    let rest = &ua[end..];
    let rest = &rest[rest.iter().position(|&b| b == b' ').unwrap_or(rest.len())..];
    rest.split(|&b| b == b' ').filter(|t| !t.is_empty()).any(|token| {
        let name = token.split(|&b| b == b'/').next().unwrap_or(token);
        !BROWSER_TAILS.iter().any(|t| name.eq_ignore_ascii_case(t))
    })
}

/// Product names a desktop or mobile browser itself puts after `Safari/`
/// or `Firefox/` (the branded Chromiums' own tokens, as their vendors
/// document them).
const BROWSER_TAILS: &[&[u8]] = &[
    b"Edg",
    b"EdgA",
    b"EdgiOS",
    b"OPR",
    b"YaBrowser",
    b"Vivaldi",
    b"Whale",
    b"Brave",
    b"Chrome",
    b"Safari",
    b"Mobile",
    b"Firefox",
    b"SamsungBrowser",
    b"DuckDuckGo",
    b"Ddg",
    b"CriOS",
    b"FxiOS",
    b"Version",
    b"OPX",
    b"Avast",
    b"AVG",
    b"Herring",
    b"Config",
    b"Sleipnir",
    b"UCBrowser",
    b"Quark",
    b"Silk",
];
