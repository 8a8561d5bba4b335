//! The robots.txt line parser: bytes in, line events out.
//!
//! It accepts any input and never fails. What a crawler would silently skip or
//! repair (a BOM, a missing colon, a misspelt key, an over-long line) becomes a
//! [`LineNote`] for the linter; the matcher builder ignores those notes. Both
//! the builder ([`super::build`]) and the linter ([`super::lint`]) are
//! [`ParseHandler`]s of the same events, so they can never disagree about how
//! a line was read.
//!
//! Behaviour follows Google's reference parser (`robots.cc`), which RFC 9309
//! describes; the comments name the rule where it is decided.

/// Google truncates each line to this many bytes (`kMaxLineLen - 1`, 2083 × 8 − 1).
pub const MAX_LINE_BYTES: usize = 2083 * 8 - 1;

/// Which field a line sets.
///
/// The first four are the fields of RFC 9309 and Google's parser, recognised by
/// prefix; the rest are the extensions robotgate keeps as data (recognised by
/// exact name, case-insensitively). Google reads every one of those as an
/// unknown field, and so does the matcher.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Key {
    /// `user-agent` (also `useragent`, `user agent`).
    UserAgent,
    /// `allow`.
    Allow,
    /// `disallow` (also `dissallow`, `dissalow`, `disalow`, `diasllow`, `disallaw`).
    Disallow,
    /// `sitemap` (also `site-map`).
    Sitemap,
    /// `crawl-delay`: seconds between requests (Bing, Yandex, …; not Google).
    CrawlDelay,
    /// `request-rate`: `n/period`, optionally with a time window.
    RequestRate,
    /// `visit-time`: the UTC window in which crawling is welcome.
    VisitTime,
    /// `host`: the preferred mirror (Yandex).
    Host,
    /// `clean-param`: query parameters that do not change the page (Yandex).
    CleanParam,
    /// `content-signal`: declared uses of the content (`search=yes, ai-train=no`).
    ContentSignal,
    /// `content-usage`: an IETF AI Preferences rule (`[path] train-ai=n`).
    ContentUsage,
    /// Any other field.
    Unknown,
}

impl Key {
    /// The canonical spelling of the field, for messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Key::UserAgent => "user-agent",
            Key::Allow => "allow",
            Key::Disallow => "disallow",
            Key::Sitemap => "sitemap",
            Key::CrawlDelay => "crawl-delay",
            Key::RequestRate => "request-rate",
            Key::VisitTime => "visit-time",
            Key::Host => "host",
            Key::CleanParam => "clean-param",
            Key::ContentSignal => "content-signal",
            Key::ContentUsage => "content-usage",
            Key::Unknown => "unknown",
        }
    }

    /// Whether the field is a path rule (`allow` or `disallow`).
    pub fn is_rule(self) -> bool {
        matches!(self, Key::Allow | Key::Disallow)
    }
}

/// Something about a line that a crawler tolerates but a site owner should fix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineNote {
    /// The key was recognised by prefix or as a known typo, not as written.
    /// Carries the key it was read as.
    Misspelt(Key),
    /// `key value` with no colon: Google accepts it when there are exactly two words.
    MissingColon,
    /// A line with text that is not `key: value` (no separator, or no key). Ignored.
    NotAField,
    /// The line was longer than [`MAX_LINE_BYTES`] and was cut.
    TooLong,
    /// The line holds a NUL byte; the reference parser stops reading the line there.
    Nul,
}

/// Receives the events of one parse, in file order. Lines are numbered from 1,
/// counting LF, CR and CRLF as one line end each (as Google's parser does).
pub trait ParseHandler {
    /// A field line. `value` is as the matcher sees it: for `allow`, `disallow`
    /// and unknown fields it is percent-normalised ([`escape_pattern`]).
    fn field(&mut self, line: u32, key: Key, key_text: &[u8], value: &[u8]);
    /// An oddity of `line`, reported before its field event (if any). `text`
    /// is the line as read (comment and surrounding whitespace removed once
    /// the line is long enough to have them).
    fn note(&mut self, _line: u32, _note: LineNote, _text: &[u8]) {}
}

/// Parse `body`, calling `handler` for every field and note.
///
/// Accepts any bytes. Cost: one pass over `body`, plus one copy of each line
/// that needs percent-normalising; memory is bounded by [`MAX_LINE_BYTES`].
pub fn parse(body: &[u8], handler: &mut impl ParseHandler) {
    // robots.cc: a whole or partial UTF-8 BOM is skipped at the very start only.
    let mut start = 0;
    for (i, b) in [0xEF_u8, 0xBB, 0xBF].iter().enumerate() {
        if body.get(i) == Some(b) {
            start = i + 1;
        } else {
            break;
        }
    }
    let body = &body[start..];

    let mut line_num: u32 = 0;
    let mut pos = 0;
    let mut last_was_cr = false;
    loop {
        let end = memchr2(b'\n', b'\r', &body[pos..]).map(|i| pos + i);
        let line_end = end.unwrap_or(body.len());
        let line = &body[pos..line_end];
        // robots.cc: the LF of a CRLF does not make an empty line of its own.
        let crlf_continuation = line.is_empty() && last_was_cr && end.map(|e| body[e]) == Some(b'\n');
        if !crlf_continuation {
            line_num = line_num.saturating_add(1);
            parse_line(line_num, line, handler);
        }
        match end {
            Some(e) => {
                last_was_cr = body[e] == b'\r';
                pos = e + 1;
            }
            None => break,
        }
    }
}

fn memchr2(a: u8, b: u8, hay: &[u8]) -> Option<usize> {
    hay.iter().position(|&c| c == a || c == b)
}

/// ASCII whitespace as `absl::StripAsciiWhitespace` defines it.
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r')
}

/// Trim ASCII whitespace from both ends.
pub fn trim(s: &[u8]) -> &[u8] {
    let start = s.iter().position(|&b| !is_space(b)).unwrap_or(s.len());
    let end = s.iter().rposition(|&b| !is_space(b)).map_or(start, |e| e + 1);
    &s[start..end]
}

fn parse_line(line_num: u32, mut line: &[u8], handler: &mut impl ParseHandler) {
    if line.len() > MAX_LINE_BYTES {
        handler.note(line_num, LineNote::TooLong, &line[..64]);
        line = &line[..MAX_LINE_BYTES];
    }
    // The reference keeps lines in C strings: a NUL ends the line.
    if let Some(nul) = line.iter().position(|&b| b == 0) {
        handler.note(line_num, LineNote::Nul, line);
        line = &line[..nul];
    }
    // `#` starts a comment anywhere on the line.
    if let Some(hash) = line.iter().position(|&b| b == b'#') {
        line = &line[..hash];
    }
    let line = trim(line);
    if line.is_empty() {
        return;
    }
    // <key>[ \t]*:[ \t]*<value>; Google also accepts `key value` (exactly two words).
    let (key_text, value) = match line.iter().position(|&b| b == b':') {
        Some(colon) => (trim(&line[..colon]), trim(&line[colon + 1..])),
        None => {
            let Some(ws) = line.iter().position(|&b| b == b' ' || b == b'\t') else {
                handler.note(line_num, LineNote::NotAField, line);
                return;
            };
            let value = &line[ws..];
            let value = &value[value.iter().position(|&b| b != b' ' && b != b'\t').unwrap_or(value.len())..];
            if value.iter().any(|&b| b == b' ' || b == b'\t') {
                handler.note(line_num, LineNote::NotAField, line);
                return;
            }
            handler.note(line_num, LineNote::MissingColon, line);
            (trim(&line[..ws]), trim(value))
        }
    };
    if key_text.is_empty() {
        handler.note(line_num, LineNote::NotAField, line);
        return;
    }
    let (key, exact) = classify_key(key_text);
    if !exact {
        handler.note(line_num, LineNote::Misspelt(key), key_text);
    }
    match key {
        Key::UserAgent | Key::Sitemap => handler.field(line_num, key, key_text, value),
        _ => {
            let escaped = escape_pattern(value);
            handler.field(line_num, key, key_text, &escaped);
        }
    }
}

fn starts_with_ignore_case(s: &[u8], prefix: &str) -> bool {
    s.len() >= prefix.len() && s[..prefix.len()].eq_ignore_ascii_case(prefix.as_bytes())
}

/// Read a field name as Google does (prefix match, with its list of accepted
/// typos), then robotgate's extensions by exact name. Returns the key and
/// whether it was written exactly as its canonical name.
pub fn classify_key(text: &[u8]) -> (Key, bool) {
    // robots.cc ParsedRobotsKey::Parse: tried in this order, by prefix.
    const TABLE: &[(Key, &str, bool)] = &[
        (Key::UserAgent, "user-agent", true),
        (Key::UserAgent, "useragent", false),
        (Key::UserAgent, "user agent", false),
        (Key::Allow, "allow", true),
        (Key::Disallow, "disallow", true),
        (Key::Disallow, "dissallow", false),
        (Key::Disallow, "dissalow", false),
        (Key::Disallow, "disalow", false),
        (Key::Disallow, "diasllow", false),
        (Key::Disallow, "disallaw", false),
        (Key::Sitemap, "sitemap", true),
        (Key::Sitemap, "site-map", false),
    ];
    for &(key, name, canonical) in TABLE {
        if starts_with_ignore_case(text, name) {
            return (key, canonical && text.len() == name.len());
        }
    }
    const EXTENSIONS: &[(Key, &str, bool)] = &[
        (Key::CrawlDelay, "crawl-delay", true),
        (Key::CrawlDelay, "crawldelay", false),
        (Key::CrawlDelay, "crawl delay", false),
        (Key::RequestRate, "request-rate", true),
        (Key::RequestRate, "requestrate", false),
        (Key::VisitTime, "visit-time", true),
        (Key::VisitTime, "visittime", false),
        (Key::Host, "host", true),
        (Key::CleanParam, "clean-param", true),
        (Key::CleanParam, "cleanparam", false),
        (Key::ContentSignal, "content-signal", true),
        (Key::ContentSignal, "contentsignal", false),
        (Key::ContentUsage, "content-usage", true),
        (Key::ContentUsage, "contentusage", false),
    ];
    for &(key, name, canonical) in EXTENSIONS {
        if text.eq_ignore_ascii_case(name.as_bytes()) {
            return (key, canonical);
        }
    }
    (Key::Unknown, true)
}

/// The first character of a robots.txt user-agent value that is outside
/// `[A-Za-z_-]` ends the product token (robots.cc `ExtractUserAgent`).
///
/// So `MJ12bot` names the token `MJ`, and `Foo Bar` names `Foo`. This is what
/// `check` obeys; the proxy also knows the [`full_agent_token`].
pub fn google_agent_token(value: &[u8]) -> &[u8] {
    let end = value.iter().position(|&b| !(b.is_ascii_alphabetic() || b == b'-' || b == b'_')).unwrap_or(value.len());
    &value[..end]
}

/// The product token as a site owner means it: the value up to the first byte
/// outside `[A-Za-z0-9._-]`, so `MJ12bot` stays `MJ12bot` and
/// `archive.org_bot` stays whole, while `Googlebot/2.1` is `Googlebot`.
pub fn full_agent_token(value: &[u8]) -> &[u8] {
    let end = value
        .iter()
        .position(|&b| !(b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.')))
        .unwrap_or(value.len());
    &value[..end]
}

/// Whether a user-agent value opens the global group: `*` alone or followed by
/// whitespace (robots.cc `HandleUserAgent`).
pub fn is_global_agent(value: &[u8]) -> bool {
    value.first() == Some(&b'*') && (value.len() == 1 || is_space(value[1]))
}

/// Normalise a rule path as robots.cc `MaybeEscapePattern` does: `%xx` escapes
/// get upper-case hex digits and bytes ≥ 0x80 are percent-encoded. Nothing else
/// changes (RFC 9309 2.2.2 asks for percent-encoded comparison).
///
/// The same function normalises request paths in the proxy, so a rule written
/// with raw UTF-8 matches a request that percent-encodes it.
pub fn escape_pattern(src: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    // The usual path is ASCII without `%`: two scans a word (and a vector)
    // at a time, instead of one byte at a time.
    if src.is_ascii() && memchr::memchr(b'%', src).is_none() {
        return std::borrow::Cow::Borrowed(src);
    }
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut out = Vec::with_capacity(src.len() + 8);
    let mut i = 0;
    while i < src.len() {
        let b = src[i];
        if b == b'%' && i + 2 < src.len() && src[i + 1].is_ascii_hexdigit() && src[i + 2].is_ascii_hexdigit() {
            out.push(b'%');
            out.push(src[i + 1].to_ascii_uppercase());
            out.push(src[i + 2].to_ascii_uppercase());
            i += 3;
        } else if b >= 0x80 {
            out.extend_from_slice(&[b'%', HEX[usize::from(b >> 4)], HEX[usize::from(b & 0xF)]]);
            i += 1;
        } else {
            out.push(b);
            i += 1;
        }
    }
    if out == src {
        std::borrow::Cow::Borrowed(src)
    } else {
        std::borrow::Cow::Owned(out)
    }
}

/// Reduce a URL to the path, params and query that rules match against,
/// as robots.cc `GetPathParamsQuery` does: scheme, authority and fragment are
/// dropped and the result always starts with `/`. The path is not decoded.
pub fn path_params_query(url: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    use std::borrow::Cow;
    let find_from = |from: usize, pred: &dyn Fn(u8) -> bool| {
        url.get(from..).and_then(|s| s.iter().position(|&b| pred(b))).map(|i| i + from)
    };
    let is_path_start = |b: u8| b == b'/' || b == b'?' || b == b';';
    // Initial two slashes are ignored.
    let search_start = if url.starts_with(b"//") { 2 } else { 0 };
    let early_path = find_from(search_start, &is_path_start);
    let mut protocol_end =
        url.get(search_start..).and_then(|s| s.windows(3).position(|w| w == b"://")).map(|i| i + search_start);
    if let (Some(early), Some(proto)) = (early_path, protocol_end) {
        if early < proto {
            protocol_end = None;
        }
    }
    let protocol_end = protocol_end.map_or(search_start, |p| p + 3);
    let Some(path_start) = find_from(protocol_end, &is_path_start) else {
        return Cow::Borrowed(b"/");
    };
    let hash_pos = find_from(search_start, &|b| b == b'#');
    if let Some(h) = hash_pos {
        if h < path_start {
            return Cow::Borrowed(b"/");
        }
    }
    let path_end = hash_pos.unwrap_or(url.len());
    let path = &url[path_start..path_end];
    if url[path_start] != b'/' {
        let mut v = Vec::with_capacity(path.len() + 1);
        v.push(b'/');
        v.extend_from_slice(path);
        return Cow::Owned(v);
    }
    Cow::Borrowed(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Collect(Vec<(u32, Key, String)>, Vec<(u32, LineNote)>);
    impl ParseHandler for Collect {
        fn field(&mut self, line: u32, key: Key, _k: &[u8], value: &[u8]) {
            self.0.push((line, key, String::from_utf8_lossy(value).into_owned()));
        }
        fn note(&mut self, line: u32, note: LineNote, _text: &[u8]) {
            self.1.push((line, note));
        }
    }

    fn fields(body: &[u8]) -> Vec<(u32, Key, String)> {
        let mut c = Collect::default();
        parse(body, &mut c);
        c.0
    }

    #[test]
    fn line_endings_count_like_the_reference() {
        let f = fields(b"user-agent: a\r\ndisallow: /b\rallow: /c\ndisallow: /d");
        let lines: Vec<u32> = f.iter().map(|x| x.0).collect();
        assert_eq!(lines, vec![1, 2, 3, 4]);
        // An empty line between two CRs still counts.
        let f = fields(b"user-agent: a\r\rdisallow: /b");
        assert_eq!(f[1].0, 3);
    }

    #[test]
    fn bom_and_partial_bom_are_skipped_at_start_only() {
        assert_eq!(fields(b"\xEF\xBB\xBFuser-agent: a")[0].1, Key::UserAgent);
        assert_eq!(fields(b"\xEF\xBBuser-agent: a")[0].1, Key::UserAgent);
        // A BOM in the middle of the file is text.
        assert_eq!(fields(b"x\n\xEF\xBB\xBFuser-agent: a")[0].1, Key::Unknown);
    }

    #[test]
    fn comments_whitespace_and_missing_colon() {
        let f = fields(b"  Disallow :  /a b  # comment\nDisallow /x\nDisallow /x /y\n");
        assert_eq!(f.len(), 2);
        assert_eq!(f[0].2, "/a b");
        assert_eq!((f[1].0, f[1].2.as_str()), (2, "/x"));
    }

    #[test]
    fn typos_and_prefixes_are_accepted_and_noted() {
        let mut c = Collect::default();
        parse(b"useragent: a\ndissallow: /x\nDisallowed: /y\nsite-map: http://a/s.xml\n", &mut c);
        let keys: Vec<Key> = c.0.iter().map(|f| f.1).collect();
        assert_eq!(keys, vec![Key::UserAgent, Key::Disallow, Key::Disallow, Key::Sitemap]);
        assert_eq!(c.1.len(), 4, "{:?}", c.1);
    }

    #[test]
    fn escape_pattern_like_maybe_escape_pattern() {
        assert_eq!(&*escape_pattern(b"/a%aa%2f"), b"/a%AA%2F");
        assert_eq!(&*escape_pattern("/SanJoséSellers".as_bytes()), b"/SanJos%C3%A9Sellers");
        assert_eq!(&*escape_pattern(b"/100%"), b"/100%");
        assert_eq!(&*escape_pattern(b"/%zz"), b"/%zz");
    }

    #[test]
    fn agent_tokens() {
        assert_eq!(google_agent_token(b"MJ12bot"), b"MJ");
        assert_eq!(full_agent_token(b"MJ12bot"), b"MJ12bot");
        assert_eq!(full_agent_token(b"archive.org_bot"), b"archive.org_bot");
        assert_eq!(full_agent_token(b"Googlebot/2.1"), b"Googlebot");
        assert_eq!(google_agent_token(b"Foo Bar"), b"Foo");
        assert!(is_global_agent(b"*"));
        assert!(is_global_agent(b"* foo"));
        assert!(!is_global_agent(b"*foo"));
    }
}
