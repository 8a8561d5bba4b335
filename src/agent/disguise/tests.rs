use super::*;

const CHROME: &[u8] =
    b"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36";
const CHROME_ANDROID: &[u8] =
    b"Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Mobile Safari/537.36";
const WEBVIEW: &[u8] = b"Mozilla/5.0 (Linux; Android 13; SM-A515F Build/TP1A.220624.014; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/140.0.7339.51 Mobile Safari/537.36";
const FIREFOX: &[u8] = b"Mozilla/5.0 (X11; Linux x86_64; rv:140.0) Gecko/20100101 Firefox/140.0";
const SAFARI: &[u8] = b"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.5 Safari/605.1.15";
const IPHONE_APP: &[u8] =
    b"Mozilla/5.0 (iPhone; CPU iPhone OS 18_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148";
const INSTAGRAM: &[u8] = b"Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/138.0.0.0 Mobile Safari/537.36 Instagram 380.0.0.0.0 Android";
const OLD_CHROME: &[u8] =
    b"Mozilla/5.0 (Windows NT 6.1) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/70.0.3538.77 Safari/537.36";

/// A request as its (lower-case) header lines.
fn presented<'a>(lines: &[(&'a str, &'a str)]) -> Presented<'a> {
    let mut p = Presented::default();
    lines.iter().for_each(|&(k, v)| p.note(k.as_bytes(), v));
    p
}

/// What Chromium 156 sends on a navigation in a secure context (seen on
/// this machine, Debian's chromium 156.0.8078.73, over https and on
/// http://127.0.0.1).
fn chromium_navigation() -> Vec<(&'static str, &'static str)> {
    vec![
        ("sec-ch-ua", "\"Chromium\";v=\"156\", \"Not/A)Brand\";v=\"24\""),
        ("sec-ch-ua-mobile", "?0"),
        ("sec-ch-ua-platform", "\"Linux\""),
        ("upgrade-insecure-requests", "1"),
        ("accept", "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7"),
        ("sec-fetch-site", "none"),
        ("sec-fetch-mode", "navigate"),
        ("sec-fetch-user", "?1"),
        ("sec-fetch-dest", "document"),
        ("accept-encoding", "gzip, deflate, br, zstd"),
        ("accept-language", "en-US,en;q=0.9"),
    ]
}

/// What Firefox sends on a typed navigation in a secure context (no
/// `Sec-Fetch-User`: no user activation).
fn firefox_navigation() -> Vec<(&'static str, &'static str)> {
    vec![
        ("accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"),
        ("accept-language", "en-US,en;q=0.5"),
        ("accept-encoding", "gzip, deflate, br, zstd"),
        ("upgrade-insecure-requests", "1"),
        ("sec-fetch-dest", "document"),
        ("sec-fetch-mode", "navigate"),
        ("sec-fetch-site", "none"),
        ("priority", "u=0, i"),
    ]
}

/// Over plain http to a public name: no Fetch Metadata, no client hints,
/// only gzip and deflate (what both browsers send there).
fn over_http(mut lines: Vec<(&'static str, &'static str)>) -> Vec<(&'static str, &'static str)> {
    lines.retain(|(k, _)| !k.starts_with("sec-"));
    for l in &mut lines {
        if l.0 == "accept-encoding" {
            l.1 = "gzip, deflate";
        }
    }
    lines
}

#[test]
fn claims_are_read_by_family_version_and_app() {
    let c = Claim::of(CHROME);
    assert_eq!((c.family, c.major, c.mobile, c.embedded), (Family::Chromium, 156, false, false));
    assert_eq!(Claim::of(FIREFOX).family, Family::Gecko);
    assert_eq!(Claim::of(FIREFOX).major, 140);
    let s = Claim::of(SAFARI);
    assert_eq!((s.family, s.major, s.embedded), (Family::WebKit, 1805, false));
    assert!(Claim::of(CHROME_ANDROID).mobile && !Claim::of(CHROME_ANDROID).embedded);
    assert!(Claim::of(WEBVIEW).embedded);
    assert!(Claim::of(IPHONE_APP).embedded && Claim::of(IPHONE_APP).family == Family::WebKit);
    assert!(Claim::of(INSTAGRAM).embedded);
    assert_eq!(Claim::of(b"curl/8.5.0").family, Family::Other);
    assert_eq!(Claim::of(b"Mozilla/5.0 (compatible; Googlebot/2.1)").family, Family::Other);
    assert_eq!(Claim::of(OLD_CHROME).sends_fetch_metadata(), Some(false));
}

#[test]
fn real_browsers_show_no_sign_over_https_http_and_localhost() {
    for (ua, lines) in [(CHROME, chromium_navigation()), (FIREFOX, firefox_navigation())] {
        let claim = Claim::of(ua);
        let f = judge(&claim, &presented(&lines), Scheme::Https, "shop.example", None);
        assert!(!f.any(), "{f:?}");
        let f = judge(&claim, &presented(&lines), Scheme::Http, "127.0.0.1:8080", None);
        assert!(!f.any(), "{f:?}");
        let f = judge(&claim, &presented(&over_http(lines.clone())), Scheme::Http, "shop.example", None);
        assert!(!f.any(), "{f:?}");
        // Behind a proxy that terminated TLS, nothing that depends on it.
        let f = judge(&claim, &presented(&lines), Scheme::Unknown, "shop.example", None);
        assert!(!f.any(), "{f:?}");
    }
}

#[test]
fn a_library_with_a_browsers_user_agent_is_caught_on_every_scheme() {
    // python-requests' own headers.
    let requests = [("accept-encoding", "gzip, deflate"), ("accept", "*/*"), ("connection", "keep-alive")];
    // node's fetch (undici).
    let node =
        [("accept", "*/*"), ("accept-language", "*"), ("sec-fetch-mode", "cors"), ("accept-encoding", "gzip, deflate")];
    // Scrapy's defaults.
    let scrapy = [
        ("accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"),
        ("accept-language", "en"),
        ("accept-encoding", "gzip, deflate, br, zstd"),
    ];
    for ua in [CHROME, FIREFOX, SAFARI] {
        let claim = Claim::of(ua);
        for scheme in [Scheme::Https, Scheme::Http, Scheme::Unknown] {
            for lines in [&requests[..], &node[..]] {
                let f = judge(&claim, &presented(lines), scheme, "shop.example", None);
                assert!(f.strong(), "{scheme:?} {lines:?} {f:?}");
            }
        }
        let f = judge(&claim, &presented(&scrapy), Scheme::Https, "shop.example", None);
        assert_eq!(f.has(Sign::NoFetchMetadata), Some(true), "{f:?}");
        if claim.family != Family::WebKit {
            let f = judge(&claim, &presented(&scrapy), Scheme::Http, "shop.example", None);
            assert_eq!(f.has(Sign::CompressionOverHttp), Some(true), "{f:?}");
        }
    }
}

#[test]
fn what_a_persons_setup_explains_is_weak() {
    // A corporate proxy that strips Accept-Language says so in Via.
    let mut lines = over_http(chromium_navigation());
    lines.retain(|(k, _)| *k != "accept-language");
    lines.push(("via", "1.1 proxy.corp.example"));
    let f = judge(&Claim::of(CHROME), &presented(&lines), Scheme::Http, "shop.example", None);
    assert!(f.any() && !f.strong(), "{f:?}");
    // A WebView sets its app's headers.
    let f = judge(&Claim::of(WEBVIEW), &presented(&[("accept", "*/*")]), Scheme::Https, "shop.example", None);
    assert!(f.any() && !f.strong(), "{f:?}");
    // A User-Agent switcher: Firefox's string, Chromium's hints.
    let f = judge(&Claim::of(FIREFOX), &presented(&chromium_navigation()), Scheme::Https, "shop.example", None);
    assert!(!f.strong(), "{f:?}");
    // Chromium 156's hints under an older Chrome's string (an extension).
    let f = judge(&Claim::of(OLD_CHROME), &presented(&chromium_navigation()), Scheme::Https, "shop.example", None);
    assert!(!f.strong(), "{f:?}");
    // Puppeteer's User-Agent override drops the client hints.
    let mut lines = chromium_navigation();
    lines.retain(|(k, _)| !k.starts_with("sec-ch-"));
    let f = judge(&Claim::of(CHROME), &presented(&lines), Scheme::Https, "shop.example", None);
    assert_eq!(f.has(Sign::NoClientHints), Some(false));
    assert!(!f.strong());
    // An old Chrome sends no Fetch Metadata.
    let f =
        judge(&Claim::of(OLD_CHROME), &presented(&over_http(chromium_navigation())), Scheme::Https, "a.example", None);
    assert!(!f.any(), "{f:?}");
}

#[test]
fn shapes_no_browser_sends_are_strong() {
    let mut lines = chromium_navigation();
    lines[0].1 = "Chromium v=156";
    let f = judge(&Claim::of(CHROME), &presented(&lines), Scheme::Https, "a.example", None);
    assert_eq!(f.has(Sign::MalformedClientHints), Some(true));
    let mut lines = chromium_navigation();
    lines.retain(|(k, _)| *k != "sec-fetch-dest");
    let f = judge(&Claim::of(CHROME), &presented(&lines), Scheme::Https, "a.example", None);
    assert_eq!(f.has(Sign::PartialFetchMetadata), Some(true));
    let f = judge(&Claim::of(CHROME), &presented(&chromium_navigation()), Scheme::Http, "a.example", None);
    assert_eq!(f.has(Sign::FetchMetadataOverHttp), Some(true));
    assert_eq!(f.names()[0], "fetch-metadata-over-http");
}

#[test]
fn trustworthy_hosts_are_the_secure_contexts_list() {
    for h in [
        "localhost",
        "localhost:8080",
        "127.0.0.1",
        "127.3.4.5:80",
        "[::1]:443",
        "a.localhost",
        "LOCALHOST.",
        "é.localhost",
    ] {
        assert!(trustworthy_host(h), "{h}");
    }
    for h in ["example.com", "10.0.0.1", "localhost.example", "[::2]", "", ":::", "xlocalhost", "\u{7ec}localhost"] {
        assert!(!trustworthy_host(h), "{h}");
    }
    // 127.0.0.0/8 read by hand, as the standard library's parser reads it.
    let mut names = vec!["127.0.0.01".to_string(), "127.0.0".into(), "127.0.0.1.2".into(), "127..0.1".into()];
    for a in ["0", "1", "00", "01", "9", "10", "99", "100", "255", "256", "999", "1000", "", "x", "+1"] {
        names.push(format!("127.{a}.0.1"));
        names.push(format!("127.0.{a}.1"));
        names.push(format!("127.0.1.{a}"));
        names.push(format!("{a}.0.0.1"));
        names.push(format!("127{a}.0.0.1"));
    }
    for name in &names {
        let std = name.parse::<std::net::Ipv4Addr>().is_ok_and(|ip| ip.is_loopback());
        assert_eq!(trustworthy_host(name), std, "{name}");
        // With a port, or an empty one (RFC 3986 §3.2.3 allows it); not
        // with anything else after the colon.
        assert_eq!(trustworthy_host(&format!("{name}:8080")), std, "{name}:8080");
        assert_eq!(trustworthy_host(&format!("{name}:")), std, "{name}:");
        assert!(!trustworthy_host(&format!("{name}:80x")), "{name}:80x");
    }
}

#[test]
fn brands_read_the_structured_list_and_nothing_else() {
    let b = brands(b"\"Chromium\";v=\"156\", \"Not/A)Brand\";v=\"24\", \"Google Chrome\";v=\"156\"").unwrap();
    assert!(b.matches(156) && b.matches(24) && !b.matches(155));
    // GREASE brands, old and new: `;` and `=` inside the quotes.
    let b = brands(b"\" Not A;Brand\";v=\"99\", \"Chromium\";v=\"90\"").unwrap();
    assert!(b.matches(90));
    assert!(brands(b"\"Not;A=Brand\";v=\"8\", \"Chromium\";v=\"129\"").unwrap().matches(129));
    assert!(brands(b"\"Chromium\";v=\"156.0.8078.73\"").unwrap().matches(156));
    for bad in
        ["", "Chromium", "\"Chromium\"", "\"Chromium\";v=156", "\"a\";v=\"\"", "\"a\";v=\"1\" x", "\"a\u{7f}\";v=\"1\""]
    {
        assert!(brands(bad.as_bytes()).is_none(), "{bad}");
    }
    let many = ["\"a\";v=\"1\""; 9].join(", ");
    assert!(brands(many.as_bytes()).is_none());
}

/// A ClientHello's facts, as [`hello`] reads them.
fn tls(grease: Option<bool>, alpn: Alpn, tls13: bool) -> Hello {
    Hello { grease, tls13, alpn, ja4: Ja4([b'0'; 36]) }
}

#[test]
fn a_browsers_own_tls_shows_no_sign() {
    let chromium = tls(Some(true), Alpn::H2, true);
    let firefox = tls(Some(false), Alpn::H2, true); // NSS sends no GREASE
    for (ua, lines, h) in [(CHROME, chromium_navigation(), chromium), (FIREFOX, firefox_navigation(), firefox)] {
        let f = judge(&Claim::of(ua), &presented(&lines), Scheme::Https, "shop.example", Some(&h));
        assert!(!f.any(), "{}: {:?}", String::from_utf8_lossy(ua), f.names());
    }
    // Safari: GREASE is not judged, h2 and TLS 1.3 are.
    let f = judge(&Claim::of(SAFARI), &presented(&firefox_navigation()), Scheme::Https, "a.example", Some(&firefox));
    assert!(!f.any(), "{:?}", f.names());
}

#[test]
fn chromiums_headers_from_another_tls_stack_are_strong_signs() {
    // curl (OpenSSL): h2 and TLS 1.3, no GREASE.
    let curl = tls(Some(false), Alpn::H2, true);
    let f = judge(&Claim::of(CHROME), &presented(&chromium_navigation()), Scheme::Https, "a.example", Some(&curl));
    assert_eq!(f.has(Sign::TlsNoGrease), Some(true));
    assert!(f.strong() && f.names() == ["tls-no-grease"], "{:?}", f.names());
    // python-requests (urllib3 2, OpenSSL): http/1.1 only.
    let requests = tls(Some(false), Alpn::NotH2, true);
    let f = judge(&Claim::of(CHROME), &presented(&chromium_navigation()), Scheme::Https, "a.example", Some(&requests));
    assert_eq!(f.names(), ["tls-no-grease", "tls-no-h2"]);
    // With Firefox's headers and User-Agent only ALPN can tell.
    let f = judge(&Claim::of(FIREFOX), &presented(&firefox_navigation()), Scheme::Https, "a.example", Some(&requests));
    assert_eq!((f.names(), f.strong()), (vec!["tls-no-h2"], true));
    // TLS 1.2 only, from a version that offers 1.3.
    let old = tls(Some(true), Alpn::H2, false);
    let f = judge(&Claim::of(CHROME), &presented(&chromium_navigation()), Scheme::Https, "a.example", Some(&old));
    assert_eq!(f.names(), ["tls-no-tls13"]);
    let f = judge(
        &Claim::of(OLD_CHROME),
        &presented(&over_http(chromium_navigation())),
        Scheme::Https,
        "a.example",
        Some(&old),
    );
    assert_eq!(f.has(Sign::TlsNoTls13), Some(true)); // 70 offers TLS 1.3
}

#[test]
fn tls_signs_from_an_app_or_through_a_named_proxy_are_weak() {
    let curl = tls(Some(false), Alpn::NotH2, true);
    for ua in [WEBVIEW, INSTAGRAM] {
        let f = judge(&Claim::of(ua), &presented(&chromium_navigation()), Scheme::Https, "a.example", Some(&curl));
        assert!(f.has(Sign::TlsNoGrease) == Some(false) && !f.strong(), "{:?}", f.names());
    }
    let mut via = chromium_navigation();
    via.push(("via", "1.1 proxy.corp.example"));
    let f = judge(&Claim::of(CHROME), &presented(&via), Scheme::Https, "a.example", Some(&curl));
    assert!(f.has(Sign::TlsNoH2) == Some(false) && !f.strong(), "{:?}", f.names());
    // A version not read is weak; an edge's JA4 says nothing of GREASE.
    let unread =
        b"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Safari/605.1.15";
    let f = judge(&Claim::of(unread), &presented(&firefox_navigation()), Scheme::Https, "a.example", Some(&curl));
    assert!(f.has(Sign::TlsNoH2) == Some(false) && !f.strong(), "{:?}", f.names());
    let edge = hello::from_edge("t13d1516h1_8daaf6152771_e5627efa2ab1").unwrap();
    let f = judge(&Claim::of(CHROME), &presented(&chromium_navigation()), Scheme::Unknown, "a.example", Some(&edge));
    assert_eq!((f.names(), f.strong()), (vec!["tls-no-h2"], true));
}

#[test]
fn tls_signs_can_be_made_weak_and_leave_the_others_as_they_are() {
    let curl = tls(Some(false), Alpn::NotH2, true);
    let mut lines = chromium_navigation();
    lines.retain(|(k, _)| *k != "accept-language");
    let f = judge(&Claim::of(CHROME), &presented(&lines), Scheme::Https, "a.example", Some(&curl));
    let w = f.tls_weak();
    assert_eq!(f.signs().count(), w.signs().count());
    assert_eq!(w.has(Sign::TlsNoGrease), Some(false));
    assert_eq!(w.has(Sign::TlsNoH2), Some(false));
    assert_eq!(w.has(Sign::NoAcceptLanguage), Some(true));
    let only_tls =
        judge(&Claim::of(CHROME), &presented(&chromium_navigation()), Scheme::Https, "a.example", Some(&curl));
    assert!(only_tls.strong() && !only_tls.tls_weak().strong() && only_tls.tls_weak().any());
}

#[test]
fn the_names_a_host_asks_for_are_the_ones_presented_reads() {
    // Each of them is kept (its value asked for, or the request marked as
    // through an intermediary), and no other name is.
    let kept = |name: &str| {
        let mut p = Presented::default();
        p.note(name.as_bytes(), "x");
        p != Presented::default()
    };
    for name in PRESENTED_HEADERS {
        assert!(kept(name), "{name}");
    }
    for other in ["accept", "Accept-Language", "sec-fetch-user", "sec-ch-ua-platform", "vias", "x-proxy-if", ""] {
        assert!(!kept(other), "{other}");
    }
}

#[test]
fn a_name_in_any_case_is_read_as_its_lower_case_and_no_other_is() {
    let any_case = |name: &str| {
        let mut p = Presented::default();
        p.note_any_case(name.as_bytes(), "x");
        p
    };
    for name in PRESENTED_HEADERS {
        let mut lower = Presented::default();
        lower.note(name.as_bytes(), "x");
        assert_eq!(any_case(name), lower, "{name}");
        assert_eq!(any_case(&name.to_ascii_uppercase()), lower, "{name}");
        let title: String =
            name.split('-').map(|w| w[..1].to_ascii_uppercase() + &w[1..]).collect::<Vec<_>>().join("-");
        assert_eq!(any_case(&title), lower, "{title}");
    }
    // Longer than any name read, or a byte no name has: nothing kept.
    for other in ["Accept-Language-X", "Sec-CH-UA-Mobile-Extra", "Sec-Fetch-Sit\u{e9}", "Accept", "Vi\0"] {
        assert_eq!(any_case(other), Presented::default(), "{other}");
    }
}

#[test]
fn fetch_metadata_is_whole_only_with_the_values_the_specifications_define() {
    let read = |site: &str, mode: &str, dest: &str| {
        presented(&[("sec-fetch-site", site), ("sec-fetch-mode", mode), ("sec-fetch-dest", dest)]).fetch_metadata()
    };
    for site in ["cross-site", "same-origin", "same-site", "none", " none "] {
        for mode in ["cors", "navigate", "no-cors", "same-origin", "websocket"] {
            assert_eq!(read(site, mode, "document"), headers::Fetch::Whole, "{site} {mode}");
        }
    }
    for (site, mode, dest) in [
        ("None", "navigate", "document"),
        ("nonf", "navigate", "document"),
        ("same-sitf", "navigate", "document"),
        ("cross-sitf", "navigate", "document"),
        ("same-origim", "navigate", "document"),
        ("", "navigate", "document"),
        ("none", "navigatf", "document"),
        ("none", "corz", "document"),
        ("none", "no-corz", "document"),
        ("none", "websockef", "document"),
        ("none", "same-originn", "document"),
        ("none", "navigate", "Document"),
        ("none", "navigate", ""),
        ("none", "navigate", "docu\u{e9}ment"),
    ] {
        assert_eq!(read(site, mode, dest), headers::Fetch::Partial, "{site} {mode} {dest}");
    }
    assert_eq!(presented(&[("sec-fetch-site", "none")]).fetch_metadata(), headers::Fetch::Partial);
    assert_eq!(presented(&[("accept", "*/*")]).fetch_metadata(), headers::Fetch::None);
}
