//! A robot in a browser's clothes (issue #67): what the rest of a request
//! says about a client whose User-Agent names a browser.
//!
//! A browser's User-Agent costs nothing to copy; the request around it does.
//! Every current browser sends, on every request, headers that the HTTP
//! libraries robots are written with do not send unless told to, and some
//! that a browser sends only in a secure context. [`judge`] compares what a
//! request presented ([`Presented`]) with what the browser its User-Agent
//! claims ([`Claim`]) always sends, and returns the [`Findings`]: each
//! [`Sign`] it saw, strong or weak.
//!
//! Strong means no release of the claimed browser, of that family and
//! version, can send the request as it arrived, whatever its user set: only
//! strong findings refuse. Anything that a person's setup can produce (an
//! intermediary that strips headers, a WebView, a User-Agent switcher, an
//! automation tool that drops client hints) is weak: recorded, never refused
//! or paced. docs/classifier.md names each case.
//!
//! Sources, for every sign below:
//! - Fetch Metadata (W3C Fetch Metadata Request Headers; Fetch §3.1 "append
//!   a request `Sec-Fetch-*` header" runs only for a potentially trustworthy
//!   URL): `Sec-Fetch-Site`, `-Mode` and `-Dest` on every request, since
//!   Chrome 76 (`-Dest` 80), Firefox 90, Safari 16.4 (caniuse
//!   "mdn-http_headers_sec-fetch-*", the browsers' release notes).
//! - User-Agent Client Hints (WICG UA-CH; Chromium 89 sends `Sec-CH-UA` and
//!   `Sec-CH-UA-Mobile` by default, 93 adds `Sec-CH-UA-Platform`), on secure
//!   contexts only, as a structured-field list (RFC 8941) with a GREASE brand.
//! - `Accept-Language` (RFC 9110 §12.5.4) is sent by Chromium, Firefox and
//!   Safari on every request, built from the user's language list, never `*`
//!   (Chromium's `net::HttpUtil::GenerateAcceptLanguageHeader`, Firefox's
//!   `intl.accept_languages`, WebKit's `NetworkStorageSession`).
//! - Brotli and Zstandard in `Accept-Encoding` only over HTTPS (Chromium:
//!   "br" since 50 and "zstd" since 123 for secure URLs only; Firefox:
//!   `network.http.accept-encoding.secure` vs `network.http.accept-encoding`).
//! - Potentially trustworthy origins (W3C Secure Contexts §3.1): https, and
//!   `localhost`, `*.localhost`, 127.0.0.0/8 and `::1` over plain http.
//! - The ClientHello ([`hello`]): GREASE (RFC 8701) on every connection of
//!   Chromium since 55 (BoringSSL's `SSL_CTX_set_grease_enabled`, on by
//!   default in Chrome since M55, Chromium's `ssl_client_socket_impl.cc`);
//!   `h2` first in ALPN in Chromium, Firefox and Safari (each lists `h2`
//!   before `http/1.1` since HTTP/2 shipped: Chrome 41 with ALPN-only h2
//!   from 51, Firefox 36, Safari 9); TLS 1.3 in `supported_versions` since
//!   Chrome 70, Firefox 63 and Safari 15 (Safari 12.1 and 14 behind a
//!   setting on some systems, so from 15 only).
//!
//! Pure functions of bytes: no allocation, bounded by the header lengths.

mod browser;
mod headers;
pub mod hello;

pub use browser::{Claim, Family};
pub use headers::{brands, Brands, Hints, Presented, PRESENTED_HEADERS};
pub use hello::{Alpn, Hello, Ja4};

/// One piece of evidence that a request did not come from the browser its
/// User-Agent names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Sign {
    /// No `Accept-Language`: every browser sends one.
    NoAcceptLanguage = 0,
    /// `Accept-Language: *`: a browser sends the user's languages (node's
    /// fetch sends `*`).
    WildcardAcceptLanguage,
    /// No `Sec-Fetch-*` in a secure context from a version that sends them.
    NoFetchMetadata,
    /// Some `Sec-Fetch-*` but not `Site`, `Mode` and `Dest` all three, or
    /// one of them with a value no browser sends.
    PartialFetchMetadata,
    /// `Sec-Fetch-*` over plain http to a public name: a browser sends them
    /// only to a potentially trustworthy origin.
    FetchMetadataOverHttp,
    /// `Sec-CH-UA` that is not a structured-field list of brands.
    MalformedClientHints,
    /// Client hints whose brand version or mobile flag contradicts the
    /// User-Agent (weak: a User-Agent switcher does this).
    ClientHintsMismatch,
    /// A Chromium that sends Fetch Metadata but no client hints (weak:
    /// automation's User-Agent override drops them).
    NoClientHints,
    /// Brotli or Zstandard offered over plain http to a public name.
    CompressionOverHttp,
    /// A Chromium whose ClientHello carries no GREASE value: another TLS
    /// stack (OpenSSL, Go, Java, Python) sent it.
    TlsNoGrease,
    /// A browser whose ClientHello does not offer `h2` first in ALPN.
    TlsNoH2,
    /// A browser version that offers TLS 1.3 whose ClientHello does not.
    TlsNoTls13,
}

impl Sign {
    /// Every sign, in order.
    pub const ALL: [Sign; 12] = [
        Sign::NoAcceptLanguage,
        Sign::WildcardAcceptLanguage,
        Sign::NoFetchMetadata,
        Sign::PartialFetchMetadata,
        Sign::FetchMetadataOverHttp,
        Sign::MalformedClientHints,
        Sign::ClientHintsMismatch,
        Sign::NoClientHints,
        Sign::CompressionOverHttp,
        Sign::TlsNoGrease,
        Sign::TlsNoH2,
        Sign::TlsNoTls13,
    ];

    /// Its kebab-case name, in records, metrics and `robotgate classify`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Sign::NoAcceptLanguage => "no-accept-language",
            Sign::WildcardAcceptLanguage => "wildcard-accept-language",
            Sign::NoFetchMetadata => "no-fetch-metadata",
            Sign::PartialFetchMetadata => "partial-fetch-metadata",
            Sign::FetchMetadataOverHttp => "fetch-metadata-over-http",
            Sign::MalformedClientHints => "malformed-client-hints",
            Sign::ClientHintsMismatch => "client-hints-mismatch",
            Sign::NoClientHints => "no-client-hints",
            Sign::CompressionOverHttp => "compression-over-http",
            Sign::TlsNoGrease => "tls-no-grease",
            Sign::TlsNoH2 => "tls-no-h2",
            Sign::TlsNoTls13 => "tls-no-tls13",
        }
    }

    const fn bit(self) -> u16 {
        1 << self as u8
    }
}

/// The signs a request showed, each strong or weak. `Copy`, two words: an
/// agent carries it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Findings {
    strong: u16,
    weak: u16,
}

impl Findings {
    /// None.
    pub const NONE: Findings = Findings { strong: 0, weak: 0 };

    /// Add `sign`, strong or weak (a sign seen strong stays strong).
    pub fn add(&mut self, sign: Sign, strong: bool) {
        if strong {
            self.strong |= sign.bit();
            self.weak &= !sign.bit();
        } else if self.strong & sign.bit() == 0 {
            self.weak |= sign.bit();
        }
    }

    /// Whether any sign was seen.
    pub const fn any(self) -> bool {
        self.strong | self.weak != 0
    }

    /// Whether a sign no real browser can produce was seen: the only
    /// findings that refuse.
    pub const fn strong(self) -> bool {
        self.strong != 0
    }

    /// Whether `sign` was seen, and whether strong.
    pub fn has(self, sign: Sign) -> Option<bool> {
        if self.strong & sign.bit() != 0 {
            Some(true)
        } else if self.weak & sign.bit() != 0 {
            Some(false)
        } else {
            None
        }
    }

    /// Each sign seen, strong ones first, in [`Sign::ALL`] order.
    pub fn signs(self) -> impl Iterator<Item = (Sign, bool)> {
        let strong = Sign::ALL.into_iter().filter(move |s| self.strong & s.bit() != 0).map(|s| (s, true));
        let weak = Sign::ALL.into_iter().filter(move |s| self.weak & s.bit() != 0).map(|s| (s, false));
        strong.chain(weak)
    }

    /// The same, with the ClientHello's signs weak (`policy.tls_evidence: weak`).
    pub fn tls_weak(self) -> Findings {
        let tls = Sign::TlsNoGrease.bit() | Sign::TlsNoH2.bit() | Sign::TlsNoTls13.bit();
        Findings { strong: self.strong & !tls, weak: self.weak | (self.strong & tls) }
    }

    /// The signs' names, strong first (what a record lists).
    pub fn names(self) -> Vec<&'static str> {
        self.signs().map(|(s, _)| s.as_str()).collect()
    }
}

/// What the host knows about the connection the request came on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// The client's own connection was TLS.
    Https,
    /// The client's own connection was plain http.
    Http,
    /// Not known (a proxy in front terminated it, or the host cannot tell):
    /// no sign that depends on it is judged.
    Unknown,
}

/// Whether `host` (a request's host, with or without a port) names a
/// potentially trustworthy origin over plain http (W3C Secure Contexts
/// §3.1): `localhost`, a name under `.localhost`, 127.0.0.0/8, `::1`.
pub fn trustworthy_host(host: &str) -> bool {
    // As bytes throughout: a host from an edge may be any UTF-8 (ten bytes
    // from its end need not start a character: found by fuzzing
    // `disguise_headers`), and `str`'s searches were most of this
    // function's 335 instructions on `127.0.0.1:port` (issue #67's cost).
    let b = host.as_bytes();
    let name = match b.strip_prefix(b"[") {
        Some(rest) => rest.iter().position(|&c| c == b']').map_or(rest, |end| &rest[..end]),
        // A port: the digits after the last `:`.
        None => {
            let digits = b.iter().rev().take_while(|c| c.is_ascii_digit()).count();
            match b.len().checked_sub(digits + 1) {
                Some(colon) if b[colon] == b':' => &b[..colon],
                _ => b,
            }
        }
    };
    let name = name.strip_suffix(b".").unwrap_or(name);
    if name.eq_ignore_ascii_case(b"localhost")
        || name.len() > 10 && name[name.len() - 10..].eq_ignore_ascii_case(b".localhost")
    {
        return true;
    }
    match name.first() {
        Some(b'0'..=b'9') => ipv4_loopback(name),
        Some(_) if name.contains(&b':') => std::str::from_utf8(name)
            .ok()
            .and_then(|n| n.parse::<std::net::Ipv6Addr>().ok())
            .is_some_and(|ip| ip.is_loopback()),
        _ => false,
    }
}

/// Whether `name` is an address of 127.0.0.0/8 written as a browser writes
/// one in `Host` (WHATWG URL's IPv4 serializer: four decimal parts, no
/// leading zero). By hand: `IpAddr`'s parser was a tenth of the judging of
/// a request to a loopback host.
fn ipv4_loopback(name: &[u8]) -> bool {
    let Some(rest) = name.strip_prefix(b"127.") else { return false };
    // One pass: three parts, each 1 to 3 digits, no leading zero, ≤ 255.
    let (mut parts, mut value, mut digits) = (1, 0u32, 0);
    for &c in rest {
        match c {
            b'0'..=b'9' if !(digits == 1 && value == 0) => {
                value = value * 10 + u32::from(c - b'0');
                digits += 1;
                if value > 255 {
                    return false;
                }
            }
            b'.' if digits > 0 => (parts, value, digits) = (parts + 1, 0, 0),
            _ => return false,
        }
    }
    digits > 0 && parts == 3
}

/// The findings of a request whose User-Agent made `claim`, that presented
/// `presented`, on a connection of `scheme`, to `host`, whose ClientHello
/// (read by robotgate, or the JA4 of a trusted edge) was `hello`.
pub fn judge(claim: &Claim, presented: &Presented<'_>, scheme: Scheme, host: &str, hello: Option<&Hello>) -> Findings {
    judge_read(claim, presented, Hints::of(presented.sec_ch_ua), scheme, host, hello)
}

/// [`judge`], with `presented.sec_ch_ua` already read as `hints` (the
/// pipeline keeps the reading beside the claim; issue #67's cost).
pub fn judge_read(
    claim: &Claim,
    presented: &Presented<'_>,
    hints: Hints,
    scheme: Scheme,
    host: &str,
    hello: Option<&Hello>,
) -> Findings {
    let mut f = Findings::NONE;
    if claim.family == Family::Other {
        return f;
    }
    // What a person's setup can explain is weak: an intermediary that
    // rewrites headers, an app's WebView.
    let soft = presented.intermediary || claim.embedded;
    let secure = match scheme {
        Scheme::Https => Some(true),
        _ if trustworthy_host(host) => Some(true),
        Scheme::Http => Some(false),
        Scheme::Unknown => None,
    };
    match presented.accept_language {
        None => f.add(Sign::NoAcceptLanguage, !soft),
        Some(v) if v.trim_ascii() == b"*" => f.add(Sign::WildcardAcceptLanguage, !claim.embedded),
        Some(_) => {}
    }
    let fetch = presented.fetch_metadata();
    match (fetch, secure) {
        (headers::Fetch::None, Some(true)) if claim.sends_fetch_metadata() != Some(false) => {
            f.add(Sign::NoFetchMetadata, !soft && claim.sends_fetch_metadata() == Some(true))
        }
        (headers::Fetch::Partial, _) => f.add(Sign::PartialFetchMetadata, !presented.intermediary),
        (headers::Fetch::Whole, Some(false)) => f.add(Sign::FetchMetadataOverHttp, !presented.intermediary),
        _ => {}
    }
    match hints {
        Hints::Malformed => f.add(Sign::MalformedClientHints, true),
        Hints::Read(brands) => {
            if claim.family == Family::Chromium && !brands.matches(claim.major)
                || presented.mobile_contradicts(claim.mobile)
            {
                f.add(Sign::ClientHintsMismatch, false);
            }
        }
        Hints::Absent => {}
    }
    if matches!(hints, Hints::Absent)
        && claim.family == Family::Chromium
        && claim.major >= 93
        && secure == Some(true)
        && fetch == headers::Fetch::Whole
    {
        f.add(Sign::NoClientHints, false);
    }
    if secure == Some(false)
        && matches!(claim.family, Family::Chromium | Family::Gecko)
        && presented.offers_br_or_zstd()
    {
        f.add(Sign::CompressionOverHttp, !presented.intermediary);
    }
    if let Some(h) = hello {
        tls(&mut f, claim, h, soft);
    }
    f
}

/// The ClientHello's signs. A version not read is weak evidence; so is any
/// sign where something else may have made the connection: an app's own
/// HTTP stack behind its WebView's User-Agent, an intermediary that names
/// itself (`Via`). A TLS-intercepting middlebox that does not is the one
/// case these signs cannot tell from a robot (docs/classifier.md).
fn tls(f: &mut Findings, claim: &Claim, h: &Hello, soft: bool) {
    let since = |chromium: u32, gecko: u32, webkit: u32| match claim.family {
        Family::Chromium => Some(chromium),
        Family::Gecko => Some(gecko),
        Family::WebKit => Some(webkit),
        Family::Other => None,
    };
    let judged = |from: Option<u32>| match from {
        Some(v) if claim.major >= v => Some(!soft),
        Some(_) if claim.major == 0 => Some(false),
        _ => None,
    };
    if claim.family == Family::Chromium && h.grease == Some(false) {
        if let Some(strong) = judged(Some(55)) {
            f.add(Sign::TlsNoGrease, strong);
        }
    }
    if h.alpn == Alpn::NotH2 {
        if let Some(strong) = judged(since(51, 36, 900)) {
            f.add(Sign::TlsNoH2, strong);
        }
    }
    if !h.tls13 {
        if let Some(strong) = judged(since(70, 63, 1500)) {
            f.add(Sign::TlsNoTls13, strong);
        }
    }
}

#[cfg(test)]
mod tests;
