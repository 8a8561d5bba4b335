//! The two facts robotgate reads from a certificate: when it expires, and
//! which host names it covers. A small DER walk over the fields that hold
//! them (RFC 5280 4.1: validity, subject common name, subjectAltName), not
//! a verifier: the TLS library checks the certificate itself.

use crate::time::days_from_civil;

/// What a certificate says about itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertInfo {
    /// `notAfter`, in Unix seconds.
    pub not_after: i64,
    /// The DNS names of its subjectAltName, or the subject's common name
    /// when it has none; lower case.
    pub names: Vec<String>,
}

/// One DER element: tag, content, and what follows it.
fn tlv(der: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = der.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let len = rest[..n].iter().fold(0usize, |l, &b| (l << 8) | usize::from(b));
        (len, &rest[n..])
    };
    (rest.len() >= len).then(|| (tag, &rest[..len], &rest[len..]))
}

/// The elements of a constructed element's content.
fn children(mut content: &[u8]) -> impl Iterator<Item = (u8, &[u8])> {
    std::iter::from_fn(move || {
        let (tag, inner, rest) = tlv(content)?;
        content = rest;
        Some((tag, inner))
    })
}

const SEQUENCE: u8 = 0x30;
const SET: u8 = 0x31;
const OID: u8 = 0x06;
const OCTET_STRING: u8 = 0x04;
const UTC_TIME: u8 = 0x17;
const GENERALIZED_TIME: u8 = 0x18;
/// `[2] dNSName` of a GeneralName (implicit IA5String).
const DNS_NAME: u8 = 0x82;
/// `[3] extensions` of a TBSCertificate.
const EXTENSIONS: u8 = 0xa3;
/// 2.5.29.17 subjectAltName.
const SUBJECT_ALT_NAME: &[u8] = &[0x55, 0x1d, 0x11];
/// 2.5.4.3 commonName.
const COMMON_NAME: &[u8] = &[0x55, 0x04, 0x03];

/// A UTCTime (`YYMMDDHHMMSSZ`) or GeneralizedTime (`YYYYMMDDHHMMSSZ`) as Unix seconds.
fn time(tag: u8, text: &[u8]) -> Option<i64> {
    let digits = |b: &[u8]| -> Option<i64> {
        b.iter().try_fold(0i64, |n, &d| d.is_ascii_digit().then(|| n * 10 + i64::from(d - b'0')))
    };
    let (year, rest) = match tag {
        UTC_TIME if text.len() >= 13 => {
            let yy = digits(&text[..2])?;
            (if yy >= 50 { 1900 + yy } else { 2000 + yy }, &text[2..])
        }
        GENERALIZED_TIME if text.len() >= 15 => (digits(&text[..4])?, &text[4..]),
        _ => return None,
    };
    let field = |i: usize| digits(rest.get(i..i + 2)?);
    let (month, day, h, m, s) = (field(0)?, field(2)?, field(4)?, field(6)?, field(8)?);
    if rest.get(10) != Some(&b'Z') || !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return None;
    }
    Some(days_from_civil(year, month, day) * 86_400 + h * 3600 + m * 60 + s)
}

/// Read a certificate (DER). `None` when it is not one this walk understands.
pub fn parse(der: &[u8]) -> Option<CertInfo> {
    let (SEQUENCE, cert, _) = tlv(der)? else { return None };
    let (SEQUENCE, tbs, _) = tlv(cert)? else { return None };
    let mut fields = children(tbs).peekable();
    if fields.peek().is_some_and(|(tag, _)| *tag == 0xa0) {
        fields.next(); // version
    }
    let _serial = fields.next()?;
    let _signature = fields.next()?;
    let _issuer = fields.next()?;
    let (SEQUENCE, validity) = fields.next()? else { return None };
    let mut times = children(validity);
    let _not_before = times.next()?;
    let (tag, text) = times.next()?;
    let not_after = time(tag, text)?;
    let (SEQUENCE, subject) = fields.next()? else { return None };
    let mut names = Vec::new();
    for (tag, ext_list) in fields {
        if tag != EXTENSIONS {
            continue;
        }
        let Some((SEQUENCE, exts, _)) = tlv(ext_list) else { continue };
        for (_, ext) in children(exts) {
            let mut parts = children(ext);
            if parts.next() != Some((OID, SUBJECT_ALT_NAME)) {
                continue;
            }
            let Some((_, value)) = parts.find(|(tag, _)| *tag == OCTET_STRING) else { continue };
            let Some((SEQUENCE, general_names, _)) = tlv(value) else { continue };
            names.extend(
                children(general_names)
                    .filter(|(tag, _)| *tag == DNS_NAME)
                    .map(|(_, n)| String::from_utf8_lossy(n).to_ascii_lowercase()),
            );
        }
    }
    if names.is_empty() {
        for (_, rdn) in children(subject).filter(|(tag, _)| *tag == SET) {
            for (_, atv) in children(rdn) {
                let mut parts = children(atv);
                if parts.next() == Some((OID, COMMON_NAME)) {
                    if let Some((_, cn)) = parts.next() {
                        names.push(String::from_utf8_lossy(cn).to_ascii_lowercase());
                    }
                }
            }
        }
    }
    Some(CertInfo { not_after, names })
}

/// Whether a certificate naming `names` is valid for `host` (RFC 6125: an
/// exact name, or `*.` standing for exactly one leftmost label).
pub fn covers(names: &[String], host: &str) -> bool {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    names.iter().any(|n| match n.strip_prefix("*.") {
        Some(suffix) => host.split_once('.').is_some_and(|(label, rest)| !label.is_empty() && rest == suffix),
        None => *n == host,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -days 30
    /// -subj /CN=shop.example -addext subjectAltName=DNS:shop.example,DNS:*.shop.example`,
    /// made 2026-11-23, valid until 2026-12-23T22:16:22Z.
    const CERT: &str = include_str!("../tests/data/tls/shop.pem");

    fn der(pem: &str) -> Vec<u8> {
        use base64::Engine as _;
        let body: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
        base64::engine::general_purpose::STANDARD.decode(body).unwrap()
    }

    #[test]
    fn reads_expiry_and_names() {
        let info = parse(&der(CERT)).expect("a certificate");
        assert_eq!(info.names, vec!["shop.example".to_owned(), "*.shop.example".to_owned()]);
        assert_eq!(crate::time::rfc3339_ms(info.not_after as u64 * 1000), "2026-12-23T22:16:22.000Z");
    }

    #[test]
    fn names_cover_hosts_as_rfc_6125_says() {
        let names = vec!["shop.example".to_owned(), "*.shop.example".to_owned()];
        assert!(covers(&names, "shop.example"));
        assert!(covers(&names, "WWW.Shop.Example."));
        assert!(!covers(&names, "a.b.shop.example"), "one label only");
        assert!(!covers(&names, "blog.example"));
        assert!(!covers(&names, ".shop.example"));
    }

    #[test]
    fn times_of_both_kinds() {
        assert_eq!(time(UTC_TIME, b"700101000000Z"), Some(0));
        assert_eq!(time(GENERALIZED_TIME, b"20500101000000Z"), Some(2_524_608_000));
        assert_eq!(time(UTC_TIME, b"491231235959Z"), Some(2_524_607_999));
        assert_eq!(time(UTC_TIME, b"701301000000Z"), None);
        assert_eq!(time(UTC_TIME, b"7001010000"), None);
    }

    #[test]
    fn garbage_is_none_and_never_panics() {
        assert_eq!(parse(b""), None);
        assert_eq!(parse(&[0x30, 0x84, 0xff, 0xff, 0xff, 0xff]), None);
        let good = der(CERT);
        for cut in 0..good.len() {
            let _ = parse(&good[..cut]);
        }
        let mut flipped = good.clone();
        for i in 0..flipped.len() {
            flipped[i] ^= 0x5a;
            let _ = parse(&flipped);
            flipped[i] ^= 0x5a;
        }
    }
}
