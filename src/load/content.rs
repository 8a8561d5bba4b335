//! Whether a robots.txt robotgate is about to enforce is a robots.txt at all.
//!
//! A crawler reads whatever a site serves leniently (RFC 9309 2.3), and
//! finds no rules in an HTML page or a UTF-16 file: everything is allowed.
//! robotgate reads its own operator's file, and the same leniency would turn
//! enforcement off without a word. Measured (#32): an HTML error page a CMS
//! saved over robots.txt, a UTF-16 file with a byte-order mark and binary
//! data were all accepted, and every rule vanished. Such a file is refused
//! instead: on reload the last good one stays, at start and in
//! `config check` it is an error. An empty file stays legal: it allows
//! everything, and says so plainly.
//!
//! So is a file with text in it of which no line is a field a crawler
//! knows (issue 66: 4 KB of bytes 0x80 to 0xFF, no NUL and no line end,
//! passed every check above and dropped every rule). A file in a legacy
//! single-byte encoding (Latin-1 paths) still has its `User-agent:` and
//! `Disallow:` lines in ASCII, and is read as before.

use super::file::Refusal;

/// Byte-order marks of encodings other than UTF-8, longest first (the
/// UTF-32 LE mark begins with the UTF-16 LE one).
const FOREIGN_BOMS: &[(&[u8], &str)] = &[
    (&[0x00, 0x00, 0xFE, 0xFF], "UTF-32 (big-endian)"),
    (&[0xFF, 0xFE, 0x00, 0x00], "UTF-32 (little-endian)"),
    (&[0xFE, 0xFF], "UTF-16 (big-endian)"),
    (&[0xFF, 0xFE], "UTF-16 (little-endian)"),
];

/// Starts of an HTML document (compared case-insensitively).
const HTML_STARTS: &[&[u8]] = &[b"<!doctype", b"<html"];

/// Check that `body` can be a robots.txt: no byte-order mark of UTF-16 or
/// UTF-32, no NUL byte, not an HTML document (its first non-blank bytes,
/// after a UTF-8 byte-order mark, are `<!doctype` or `<html`, in any case),
/// and, when it has any text outside comments, at least one line that the
/// parser reads as a field it knows ([`readable_lines`]). An empty body, or
/// one of blanks and comments, passes.
///
/// Cost: one pass over the body (a NUL search), at most 500 KiB, and the
/// lines up to the first field (the first line, in nearly every file).
///
/// # Errors
/// [`Refusal::NotRobotsTxt`], saying what the file looks like instead.
///
/// # Example
/// ```
/// use robotgate::load::check_robots_body;
/// assert!(check_robots_body(b"User-agent: *\nDisallow: /private/\n").is_ok());
/// assert!(check_robots_body(b"").is_ok());
/// assert!(check_robots_body(b"\n  <!DOCTYPE html><title>404</title>").is_err());
/// ```
pub fn check_robots_body(body: &[u8]) -> Result<(), Refusal> {
    // RFC 9309 2.3: the file is UTF-8.
    if let Some((_, name)) = FOREIGN_BOMS.iter().find(|(bom, _)| body.starts_with(bom)) {
        return Err(Refusal::NotRobotsTxt(format!(
            "it is {name} text (it starts with that byte-order mark); robots.txt must be UTF-8 (RFC 9309 2.3)"
        )));
    }
    if let Some(at) = memchr::memchr(0, body) {
        return Err(Refusal::NotRobotsTxt(format!(
            "it holds a NUL byte (at byte {at}): binary data, not a robots.txt"
        )));
    }
    let text = body.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(body);
    let start = text.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(text.len());
    let head = &text[start..];
    if let Some(tag) = HTML_STARTS.iter().find(|t| head.len() >= t.len() && head[..t.len()].eq_ignore_ascii_case(t)) {
        return Err(Refusal::NotRobotsTxt(format!(
            "it is an HTML document (it starts with `{}`), perhaps an error page saved over it; crawlers would find no rules in it",
            String::from_utf8_lossy(&head[..tag.len()])
        )));
    }
    if let Some(lines) = readable_lines(text).err() {
        return Err(Refusal::NotRobotsTxt(format!(
            "none of its {lines} line(s) of text is a robots.txt field (user-agent, allow, disallow, sitemap ...): \
             binary data, or text in an encoding other than UTF-8 (RFC 9309 2.3); crawlers would find no rules in it"
        )));
    }
    Ok(())
}

/// Whether `body` has a line a crawler can read: `Ok` at the first field
/// whose key the parser knows ([`robots::parse::classify_key`]: user-agent,
/// allow, disallow, sitemap and the extensions), or when no line has text
/// outside a comment; `Err` with how many lines have text otherwise. A line
/// is split as the parser splits it (LF, CR, CRLF; `#` starts a comment;
/// `key: value`, or `key value` without the colon).
fn readable_lines(body: &[u8]) -> Result<(), usize> {
    use crate::robots::parse::{classify_key, trim, Key};
    let mut text_lines = 0;
    for line in body.split(|&b| b == b'\n' || b == b'\r') {
        let line = line.iter().position(|&b| b == b'#').map_or(line, |hash| &line[..hash]);
        let line = trim(line);
        if line.is_empty() {
            continue;
        }
        text_lines += 1;
        let key = match line.iter().position(|&b| b == b':') {
            Some(colon) => &line[..colon],
            None => line.split(|&b| b == b' ' || b == b'\t').next().unwrap_or(line),
        };
        if classify_key(trim(key)).0 != Key::Unknown {
            return Ok(());
        }
    }
    match text_lines {
        0 => Ok(()),
        n => Err(n),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(body: &[u8]) -> String {
        match check_robots_body(body) {
            Err(Refusal::NotRobotsTxt(why)) => why,
            other => panic!("{:?}: {other:?}", String::from_utf8_lossy(body)),
        }
    }

    #[test]
    fn robots_txt_passes_whatever_its_oddities() {
        for body in [
            &b""[..],
            b"\n\n  \t",
            b"User-agent: *\nDisallow: /private/\n",
            b"\xEF\xBB\xBFUser-agent: *\nDisallow: /\n",
            b"# <html> in a comment\nUser-agent: *\n",
            b"User-agent: *\nDisallow: /\n<html>later</html>\n",
            b"Disalow: /typo\n\x01\x7f\xff\xfe garbage",
            b"# only a comment\n\n",
            // Latin-1, as a legacy editor saves it: its fields are ASCII.
            b"User-agent: *\r\nDisallow: /caf\xe9/\r\n",
            b"\xe9t\xe9\nSitemap: https://example.com/s.xml\n",
            b"user-agent foo\n",
        ] {
            assert_eq!(check_robots_body(body), Ok(()), "{:?}", String::from_utf8_lossy(body));
        }
    }

    #[test]
    fn other_encodings_are_named() {
        assert!(refused(b"\xFF\xFEU\x00s\x00").contains("UTF-16 (little-endian)"));
        assert!(refused(b"\xFE\xFF\x00U\x00s").contains("UTF-16 (big-endian)"));
        assert!(refused(b"\xFF\xFE\x00\x00U\x00\x00\x00").contains("UTF-32 (little-endian)"));
        assert!(refused(b"\x00\x00\xFE\xFF\x00\x00\x00U").contains("UTF-32 (big-endian)"));
        // The encodings' own marks, not just their bytes.
        let utf16: Vec<u8> = "\u{feff}User-agent: *".encode_utf16().flat_map(u16::to_le_bytes).collect();
        assert!(refused(&utf16).contains("UTF-16"));
    }

    #[test]
    fn text_with_no_field_a_crawler_knows_is_refused() {
        let high: Vec<u8> = (0x80..=0xFFu8).cycle().take(4096).collect();
        assert!(refused(&high).contains("none of its 1 line(s) of text is a robots.txt field"), "issue 66");
        assert!(refused(b"<htm").contains("none of its 1 line"));
        assert!(refused(b"hello world\nfoo: bar\n\xff\xfe\n").contains("none of its 3 line(s)"));
    }

    #[test]
    fn a_nul_byte_is_binary() {
        assert!(refused(b"User-agent: *\nDisallow: /a\x00\n").contains("NUL byte (at byte 26)"));
        assert!(refused(b"\x00").contains("NUL"));
    }

    #[test]
    fn an_html_document_is_refused_in_any_case_after_blanks_and_a_bom() {
        for body in [
            &b"<!DOCTYPE html>\n<html><body>Not found</body></html>"[..],
            b"<html>oops</html>\nUser-agent: *\n",
            b"\r\n\t <HTML lang=en>",
            b"\xEF\xBB\xBF\n<!doctype html>",
            b"<!DocType html>",
        ] {
            assert!(refused(body).contains("HTML document"), "{:?}", String::from_utf8_lossy(body));
        }
        assert!(refused(b"  <HtMl>").contains("`<HtMl`"));
    }
}
