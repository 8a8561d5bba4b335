//! nginx/Apache "combined" and "common" access-log lines, parsed by hand.
//!
//! ```text
//! %h %l %u [%t] "%r" %>s %b "%{Referer}i" "%{User-agent}i"
//! 203.0.113.9 - - [23/Nov/2026:21:09:50 +0000] "GET /a?b=1 HTTP/1.1" 200 612 "-" "curl/8.5.0"
//! ```
//!
//! Quoted fields are escaped by the server: nginx writes `"`, `\` and bytes
//! outside 0x20..0x7e as `\xHH` (`escape=default`); Apache writes `\"`,
//! `\\`, C escapes (`\n`, `\t`, ...) and `\xhh` (`ap_escape_logitem`). Both
//! are undone here; a field without a backslash is borrowed as it is.
//!
//! Cost: one forward pass over the line (`memchr` for the quotes), no
//! allocation for a UTF-8 line without escapes. Any input ends in an
//! [`Entry`] or a [`ParseError`], in time linear in its length.

use std::borrow::Cow;

use super::{text, Entry, ParseError};
use crate::time::days_from_civil;

/// Parses a "combined" line: common format, then the quoted Referer and
/// User-Agent. Fields after the User-Agent are ignored.
///
/// # Errors
///
/// [`ParseError::Shape`] when a field is missing or bad (time, status,
/// quotes), [`ParseError::RequestLine`] when `"%r"` is not a request.
///
/// ```
/// use robotgate::accesslog::combined::parse_combined;
///
/// let e = parse_combined(br#"::1 - - [01/Jan/1970:00:00:10 +0000] "GET / HTTP/1.1" 404 0 "-" "Go-http-client/1.1""#).unwrap();
/// assert_eq!((&*e.client, &*e.method, &*e.target, e.status, e.time_unix), ("::1", "GET", "/", Some(404), Some(10)));
/// assert_eq!(e.user_agent.as_deref(), Some("Go-http-client/1.1"));
/// ```
pub fn parse_combined(line: &[u8]) -> Result<Entry<'_>, ParseError> {
    parse(line, true)
}

/// Parses a "common" line (`%h %l %u [%t] "%r" %>s %b`); the entry has no
/// User-Agent. Anything after `%b` is ignored, so combined lines read too.
///
/// # Errors
///
/// As [`parse_combined`].
pub fn parse_common(line: &[u8]) -> Result<Entry<'_>, ParseError> {
    parse(line, false)
}

fn parse(line: &[u8], agent: bool) -> Result<Entry<'_>, ParseError> {
    let format = if agent { "combined" } else { "common" };
    let shape = |what| ParseError::Shape { format, what };
    let mut p = Fields { s: line, i: 0 };
    let client = p.token().ok_or(shape("no client"))?;
    p.token().ok_or(shape("no ident"))?;
    p.token().ok_or(shape("no user"))?;
    let time = p.bracketed().ok_or(shape("no [time]"))?;
    let time_unix = Some(clf_time(time).ok_or(shape("bad [time]"))?);
    let (request, escaped) = p.quoted().ok_or(shape("no quoted request line"))?;
    let status = p.token().ok_or(shape("no status"))?;
    let status = match status {
        b"-" => None,
        s => Some(status_code(s).ok_or(shape("bad status"))?),
    };
    p.token().ok_or(shape("no size"))?;
    let user_agent = if agent {
        p.quoted().ok_or(shape("no quoted referer"))?;
        let (ua, escaped) = p.quoted().ok_or(shape("no quoted User-Agent"))?;
        Some(if ua == b"-" { Cow::Borrowed("") } else { field(ua, escaped) })
    } else {
        None
    };
    let (method, target) = request_line(request, escaped)?;
    Ok(Entry { time_unix, client: text(client), method, target, status, user_agent, host: None })
}

/// A cursor over the space-separated fields of a line.
struct Fields<'a> {
    s: &'a [u8],
    i: usize,
}

impl<'a> Fields<'a> {
    fn skip_spaces(&mut self) {
        while self.s.get(self.i) == Some(&b' ') {
            self.i += 1;
        }
    }

    /// The next run of non-space bytes.
    fn token(&mut self) -> Option<&'a [u8]> {
        self.skip_spaces();
        let rest = &self.s[self.i..];
        let end = memchr::memchr(b' ', rest).unwrap_or(rest.len());
        self.i += end;
        (end > 0).then(|| &rest[..end])
    }

    /// The inside of the next `[...]`.
    fn bracketed(&mut self) -> Option<&'a [u8]> {
        self.skip_spaces();
        let rest = self.s[self.i..].strip_prefix(b"[")?;
        let end = memchr::memchr(b']', rest)?;
        self.i += end + 2;
        Some(&rest[..end])
    }

    /// The inside of the next `"..."` (still escaped), and whether it has a
    /// backslash.
    fn quoted(&mut self) -> Option<(&'a [u8], bool)> {
        self.skip_spaces();
        let start = self.i + 1;
        if self.s.get(self.i) != Some(&b'"') {
            return None;
        }
        let mut j = start;
        let mut escaped = false;
        loop {
            let k = j + memchr::memchr2(b'"', b'\\', self.s.get(j..)?)?;
            if self.s[k] == b'\\' {
                escaped = true;
                j = k + 2; // `get` above turns a trailing `\` into `None`.
            } else {
                self.i = k + 1;
                return Some((&self.s[start..k], escaped));
            }
        }
    }
}

/// A quoted field as text: borrowed when it has no escapes and is UTF-8.
fn field(raw: &[u8], escaped: bool) -> Cow<'_, str> {
    if escaped {
        Cow::Owned(unescape(raw))
    } else {
        text(raw)
    }
}

/// Undoes nginx (`\xHH`) and Apache (`\"`, `\\`, `\n`, `\xhh`, ...) escapes;
/// an unknown or cut escape stays as it is. The bytes are then read as
/// UTF-8 (U+FFFD for invalid sequences), as nginx escapes UTF-8 byte by byte.
fn unescape(raw: &[u8]) -> String {
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        let b = raw[i];
        if b != b'\\' || i + 1 == raw.len() {
            out.push(b);
            i += 1;
            continue;
        }
        let (byte, used) = match raw[i + 1] {
            b'x' | b'X' => match (raw.get(i + 2).and_then(hex), raw.get(i + 3).and_then(hex)) {
                (Some(h), Some(l)) => (h << 4 | l, 4),
                _ => (b'\\', 1),
            },
            b'"' => (b'"', 2),
            b'\\' => (b'\\', 2),
            b'n' => (b'\n', 2),
            b'r' => (b'\r', 2),
            b't' => (b'\t', 2),
            b'b' => (0x08, 2),
            b'v' => (0x0b, 2),
            _ => (b'\\', 1),
        };
        out.push(byte);
        i += used;
    }
    match String::from_utf8(out) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    }
}

fn hex(b: &u8) -> Option<u8> {
    (*b as char).to_digit(16).map(|d| d as u8)
}

/// Splits `METHOD TARGET [PROTOCOL]` (HTTP/0.9 has no protocol).
fn request_line(raw: &[u8], escaped: bool) -> Result<(Cow<'_, str>, Cow<'_, str>), ParseError> {
    let mut parts = raw.split(|&b| b == b' ');
    let (Some(method), Some(target)) = (parts.next(), parts.next()) else {
        return Err(ParseError::RequestLine);
    };
    let protocol_ok = match parts.next() {
        None => true,
        Some(p) => p.starts_with(b"HTTP/") && parts.next().is_none(),
    };
    // RFC 9110 5.6.2: a method is a token.
    if !protocol_ok || method.is_empty() || !method.iter().all(|&b| crate::net::is_tchar(b)) || target.is_empty() {
        return Err(ParseError::RequestLine);
    }
    Ok((text(method), field(target, escaped && target.contains(&b'\\'))))
}

/// A three-digit status code.
fn status_code(s: &[u8]) -> Option<u16> {
    match s {
        [a @ b'1'..=b'9', b, c] if b.is_ascii_digit() && c.is_ascii_digit() => {
            Some(u16::from(a - b'0') * 100 + u16::from(b - b'0') * 10 + u16::from(c - b'0'))
        }
        _ => None,
    }
}

/// `23/Nov/2026:21:09:50 +0100` (`%t`, nginx `$time_local`) as Unix seconds.
pub(crate) fn clf_time(t: &[u8]) -> Option<i64> {
    if t.len() != 26 || t[2] != b'/' || t[6] != b'/' || t[11] != b':' || t[14] != b':' || t[17] != b':' {
        return None;
    }
    if t[20] != b' ' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        t[r].iter().try_fold(0i64, |n, &d| d.is_ascii_digit().then(|| n * 10 + i64::from(d - b'0')))
    };
    const MONTHS: [&[u8; 3]; 12] =
        [b"Jan", b"Feb", b"Mar", b"Apr", b"May", b"Jun", b"Jul", b"Aug", b"Sep", b"Oct", b"Nov", b"Dec"];
    let month = MONTHS.iter().position(|m| t[3..6].eq_ignore_ascii_case(&m[..]))? as i64 + 1;
    let (day, year, h, m, s) = (num(0..2)?, num(7..11)?, num(12..14)?, num(15..17)?, num(18..20)?);
    if !(1..=31).contains(&day) || h > 23 || m > 59 || s > 60 {
        return None;
    }
    let sign = match t[21] {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    let (oh, om) = (num(22..24)?, num(24..26)?);
    if om > 59 {
        return None;
    }
    let offset = sign * (oh * 3600 + om * 60);
    Some(days_from_civil(year, month, day) * 86_400 + h * 3600 + m * 60 + s - offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2026-11-23T21:09:50Z.
    const T: i64 = 1_795_468_190;

    fn ok(line: &str) -> Entry<'_> {
        parse_combined(line.as_bytes()).unwrap_or_else(|e| panic!("{e}: {line}"))
    }

    #[test]
    fn nginx_default_combined() {
        let e = ok(
            r#"203.0.113.9 - - [23/Nov/2026:21:09:50 +0000] "GET /blog/post?id=3&x=%20y HTTP/1.1" 200 5123 "https://example.com/" "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36""#,
        );
        assert_eq!(e.client, "203.0.113.9");
        assert_eq!((e.method.as_ref(), e.target.as_ref()), ("GET", "/blog/post?id=3&x=%20y"));
        assert_eq!((e.status, e.time_unix, e.host.clone()), (Some(200), Some(T), None));
        assert!(e.user_agent.as_deref().unwrap().ends_with("Safari/537.36"));
        assert!(matches!(e.target, Cow::Borrowed(_)) && matches!(e.user_agent, Some(Cow::Borrowed(_))));
    }

    #[test]
    fn apache_combined_with_user_and_escapes() {
        let e = ok(
            r#"198.51.100.4 - alice [23/Nov/2026:16:09:50 -0500] "POST /login HTTP/1.1" 302 - "-" "Mozilla/5.0 \"quoted\" back\\slash\tx""#,
        );
        assert_eq!((e.method.as_ref(), e.status, e.time_unix), ("POST", Some(302), Some(T)));
        assert_eq!(e.user_agent.as_deref(), Some("Mozilla/5.0 \"quoted\" back\\slash\tx"));
    }

    #[test]
    fn nginx_hex_escapes() {
        let e = ok(
            r#"192.0.2.1 - - [23/Nov/2026:21:09:50 +0000] "GET /caf\xC3\xA9?q=\x22 HTTP/1.1" 200 1 "-" "bot \x22evil\x22 \xFF""#,
        );
        assert_eq!(e.target, "/café?q=\"");
        assert_eq!(e.user_agent.as_deref(), Some("bot \"evil\" \u{fffd}"));
    }

    #[test]
    fn ipv6_dashes_and_time_zones() {
        let e = ok(r#"2001:db8:85a3::8a2e:370:7334 - - [24/Nov/2026:02:39:50 +0530] "HEAD / HTTP/2.0" - - "-" "-""#);
        assert_eq!(e.client, "2001:db8:85a3::8a2e:370:7334");
        assert_eq!((e.status, e.time_unix, e.user_agent.as_deref()), (None, Some(T), Some("")));
        assert_eq!(ok(r#"::1 - - [23/Nov/2026:22:09:50 +0100] "GET / HTTP/1.1" 200 0 "-" "x""#).time_unix, Some(T));
        assert_eq!(ok(r#"::1 - - [23/Nov/2026:15:39:50 -0530] "GET / HTTP/1.1" 200 0 "-" "x""#).time_unix, Some(T));
        assert_eq!(ok(r#"::1 - - [31/Dec/1969:23:59:59 +0000] "GET / HTTP/1.1" 200 0 "-" "x""#).time_unix, Some(-1));
        assert_eq!(
            ok(r#"::1 - - [29/Feb/2024:00:00:00 +0000] "GET / HTTP/1.1" 200 0 "-" "x""#).time_unix,
            Some(1_709_164_800)
        );
    }

    #[test]
    fn trailing_fields_and_http09() {
        let e = ok(r#"10.0.0.1 - - [23/Nov/2026:21:09:50 +0000] "GET /x" 200 3 "-" "ua" "198.51.100.1" rt=0.003"#);
        assert_eq!((e.target.as_ref(), e.user_agent.as_deref()), ("/x", Some("ua")));
    }

    #[test]
    fn common_has_no_user_agent() {
        let line = br#"127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif HTTP/1.0" 200 2326"#;
        let e = parse_common(line).unwrap();
        assert_eq!((e.target.as_ref(), e.user_agent, e.time_unix), ("/apache_pb.gif", None, Some(971_211_336)));
        assert!(matches!(parse_combined(line), Err(ParseError::Shape { what: "no quoted referer", .. })));
    }

    #[test]
    fn bad_request_lines_are_errors() {
        for r in [
            "-",
            "",
            "\\x16\\x03\\x01\\x00\\xA5\\x01",
            "GET",
            "GET  HTTP/1.1",
            "G(T / HTTP/1.1",
            "GET / FTP/1",
            "GET /a b HTTP/1.1",
        ] {
            let line = format!(r#"192.0.2.1 - - [23/Nov/2026:21:09:50 +0000] "{r}" 400 150 "-" "-""#);
            assert_eq!(parse_combined(line.as_bytes()), Err(ParseError::RequestLine), "{r}");
        }
    }

    #[test]
    fn broken_lines_are_shape_errors() {
        for line in [
            "",
            "192.0.2.1",
            "192.0.2.1 - - 23/Nov/2026:21:09:50 +0000 \"GET / HTTP/1.1\" 200 1 \"-\" \"-\"",
            "192.0.2.1 - - [23/Nov/2026:21:09:50 +0000 \"GET / HTTP/1.1\" 200 1",
            "192.0.2.1 - - [23/Foo/2026:21:09:50 +0000] \"GET / HTTP/1.1\" 200 1 \"-\" \"-\"",
            "192.0.2.1 - - [23/Nov/2026:21:09:50 0000] \"GET / HTTP/1.1\" 200 1 \"-\" \"-\"",
            "192.0.2.1 - - [23/Nov/2026:25:09:50 +0000] \"GET / HTTP/1.1\" 200 1 \"-\" \"-\"",
            "192.0.2.1 - - [23/Nov/2026:21:09:50 +0000] \"GET / HTTP/1.1\" 2000 1 \"-\" \"-\"",
            "192.0.2.1 - - [23/Nov/2026:21:09:50 +0000] \"GET / HTTP/1.1\" 200",
            "192.0.2.1 - - [23/Nov/2026:21:09:50 +0000] \"GET / HTTP/1.1\" 200 1 \"-\" \"cut",
            "192.0.2.1 - - [23/Nov/2026:21:09:50 +0000] \"GET / HTTP/1.1\" 200 1 \"-\" \"cut\\",
            "192.0.2.1 - - [23/Nov/2026:21:09:50 +0000] \"GET / HTTP/1.1",
        ] {
            assert!(matches!(parse_combined(line.as_bytes()), Err(ParseError::Shape { .. })), "{line}");
        }
    }

    #[test]
    fn unescape_edge_cases() {
        assert_eq!(unescape(br"a\"), "a\\");
        assert_eq!(unescape(br"\x4"), "\\x4");
        assert_eq!(unescape(br"\q\x41\X42"), "\\qAB");
    }

    /// A tiny deterministic generator (xorshift64*).
    fn rng(seed: &mut u64) -> u64 {
        *seed ^= *seed >> 12;
        *seed ^= *seed << 25;
        *seed ^= *seed >> 27;
        seed.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    #[test]
    fn random_bytes_and_truncations_never_panic() {
        let good =
            br#"2001:db8::1 - - [23/Nov/2026:21:09:50 +0000] "GET /a\x22b HTTP/1.1" 200 5 "-" "Mozilla/5.0 \"x\"""#;
        for end in 0..=good.len() {
            let cut = &good[..end];
            let _ = parse_combined(cut);
            let _ = parse_common(cut);
            let _ = super::super::Format::sniff(&[&String::from_utf8_lossy(cut)]);
        }
        assert!(parse_combined(good).is_ok());
        let alphabet = b" -[]\"\\x0123456789:/+GETHTP.aN\xff\xc3";
        let mut seed = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..20_000 {
            let len = (rng(&mut seed) % 120) as usize;
            let mut line: Vec<u8> = (0..len)
                .map(|_| {
                    let r = rng(&mut seed);
                    if r.is_multiple_of(4) {
                        r as u8
                    } else {
                        alphabet[(r >> 8) as usize % alphabet.len()]
                    }
                })
                .collect();
            let _ = parse_combined(&line);
            let _ = parse_common(&line);
            // Mutate a good line in one place.
            line = good.to_vec();
            let at = (rng(&mut seed) % line.len() as u64) as usize;
            line[at] = rng(&mut seed) as u8;
            let _ = parse_combined(&line);
        }
    }
}
