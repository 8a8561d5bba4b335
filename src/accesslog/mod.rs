//! Access-log readers for `robotgate replay`: nginx/Apache "combined" and
//! "common", and JSON lines (Caddy, Traefik, Envoy, nginx `escape=json`).
//!
//! Each line becomes an [`Entry`]: the facts the policy needs (client,
//! method, target, User-Agent, host, time, status), borrowed from the line
//! where it can. [`Reader`] streams an [`std::io::BufRead`] line by line with
//! one reused buffer, counts the lines it cannot read in a
//! [`Malformed`](crate::report::read::Malformed) summary and never panics or
//! buffers more than its line cap, whatever the input.
//!
//! The readers open no files: the caller passes the input, through
//! [`crate::lines::decoder`] for gzip-compressed rotations.

use std::borrow::Cow;
use std::io::{self, BufRead};

use crate::lines::{LineReader, Malformed, MAX_LINE};

pub mod combined;
pub mod json;

pub use json::{FieldPath, JsonFields};

/// One request of an access log, as the server logged it.
///
/// Strings borrow from the line unless they had to be unescaped or were not
/// UTF-8 (then invalid bytes are replaced by U+FFFD).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry<'a> {
    /// When the request was logged, in Unix seconds (UTC); `None` when the
    /// log has no time the reader understands.
    pub time_unix: Option<i64>,
    /// The client address as logged (an IPv4 or IPv6 address, or a host name
    /// when the server resolved it).
    pub client: Cow<'a, str>,
    /// The request method (`GET`, ...).
    pub method: Cow<'a, str>,
    /// The request target as requested: path and query (or an absolute URI
    /// for a proxy request), not normalised.
    pub target: Cow<'a, str>,
    /// The response status, when logged.
    pub status: Option<u16>,
    /// The User-Agent header; `None` for the common format or a log without
    /// it, `Some("")` for an empty header (logged `-` in combined format).
    pub user_agent: Option<Cow<'a, str>>,
    /// The Host header (or the virtual host), when logged.
    pub host: Option<Cow<'a, str>>,
}

/// Why a line is not an [`Entry`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// The line does not have the format's shape.
    #[error("not {format} format: {what}")]
    Shape {
        /// The format expected.
        format: &'static str,
        /// What is wrong.
        what: &'static str,
    },
    /// The request line is not `METHOD TARGET [HTTP/x]` (`-`, an empty line,
    /// TLS bytes sent to a plain port, ...). The server logged such requests,
    /// but there is no request to judge.
    #[error("request line is not `METHOD TARGET HTTP/x`")]
    RequestLine,
    /// The line is not a JSON object.
    #[error("bad JSON: {0}")]
    Json(String),
    /// A field an entry needs is missing or has the wrong type.
    #[error("no `{0}` field")]
    MissingField(&'static str),
}

/// An access-log format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Format {
    /// `%h %l %u [%t] "%r" %>s %b "%{Referer}i" "%{User-agent}i"`, the
    /// default of nginx (`combined`) and Apache (`LogFormat ... combined`).
    /// Fields after the User-Agent (as many custom formats append) are ignored.
    Combined,
    /// `%h %l %u [%t] "%r" %>s %b`, without User-Agent: only paths can be
    /// judged. Anything after `%b` is ignored.
    Common,
    /// One JSON object per line, with the keys to read each field from.
    Json(JsonFields),
}

impl Format {
    /// The format name (`combined`, `common`, `json`).
    pub fn name(&self) -> &'static str {
        match self {
            Format::Combined => "combined",
            Format::Common => "common",
            Format::Json(_) => "json",
        }
    }

    /// Parses one line (without its line end).
    ///
    /// # Errors
    ///
    /// Why the line is not an entry of this format.
    pub fn parse<'a>(&self, line: &'a [u8]) -> Result<Entry<'a>, ParseError> {
        match self {
            Format::Combined => combined::parse_combined(line),
            Format::Common => combined::parse_common(line),
            Format::Json(fields) => json::parse(line, fields),
        }
    }

    /// Guesses the format from the first lines of a log (for `--format auto`).
    ///
    /// Each non-blank line votes for the formats it parses as: a line that
    /// parses as combined does not also count for common, and a JSON line
    /// must give at least a method and a target with the default
    /// [`JsonFields`]. The format with most votes wins if it has more than
    /// half of the non-blank lines; `None` when no format does (the caller
    /// should ask for `--format`). Cost: one parse per line and format.
    ///
    /// ```
    /// use robotgate::accesslog::Format;
    ///
    /// let line = r#"192.0.2.7 - - [23/Nov/2026:21:09:50 +0000] "GET / HTTP/1.1" 200 612 "-" "curl/8.5.0""#;
    /// assert_eq!(Format::sniff(&[line]), Some(Format::Combined));
    /// ```
    pub fn sniff(first_lines: &[&str]) -> Option<Format> {
        let json = Format::Json(JsonFields::default());
        let (mut n_combined, mut n_common, mut n_json, mut total) = (0usize, 0usize, 0usize, 0usize);
        for line in first_lines {
            let line = line.trim_end_matches(['\r', '\n']);
            if line.trim().is_empty() {
                continue;
            }
            total += 1;
            let bytes = line.as_bytes();
            if line.trim_start().starts_with('{') {
                n_json += usize::from(json.parse(bytes).is_ok());
            } else if combined::parse_combined(bytes).is_ok() {
                n_combined += 1;
            } else if combined::parse_common(bytes).is_ok() {
                n_common += 1;
            }
        }
        let (best, votes) = [(Format::Combined, n_combined), (Format::Common, n_common), (json, n_json)]
            .into_iter()
            .max_by_key(|(_, n)| *n)
            .expect("three candidates");
        (votes > 0 && votes * 2 > total).then_some(best)
    }
}

/// Streaming reader of an access log in one [`Format`].
///
/// ```
/// use robotgate::accesslog::{Format, Reader};
///
/// let log = concat!(
///     "2001:db8::7 - - [23/Nov/2026:22:09:50 +0100] \"GET /a?b=1 HTTP/1.1\" 200 5 \"-\" \"GPTBot/1.2\"\n",
///     "garbage\n",
/// );
/// let mut reader = Reader::new(log.as_bytes(), Format::Combined);
/// let mut seen = Vec::new();
/// reader.for_each_entry(|line, e| seen.push((line, e.client.into_owned(), e.time_unix))).unwrap();
/// assert_eq!(seen, [(1, "2001:db8::7".to_string(), Some(1_795_468_190))]);
/// assert_eq!(reader.malformed().samples[0].line, 2);
/// ```
pub struct Reader<R> {
    lines: LineReader<R>,
    format: Format,
    malformed: Malformed,
    entries: u64,
}

impl<R: BufRead> Reader<R> {
    /// A reader of `inner` in `format`, skipping lines longer than
    /// [`MAX_LINE`] (1 MiB).
    pub fn new(inner: R, format: Format) -> Reader<R> {
        Reader::with_max_line(inner, format, MAX_LINE)
    }

    /// A reader of `inner` in `format` that skips lines longer than
    /// `max_line` bytes.
    pub fn with_max_line(inner: R, format: Format, max_line: usize) -> Reader<R> {
        Reader { lines: LineReader::new(inner, max_line), format, malformed: Malformed::default(), entries: 0 }
    }

    /// The format read.
    pub fn format(&self) -> &Format {
        &self.format
    }

    /// The lines skipped so far: how many, and the first few with a reason.
    pub fn malformed(&self) -> &Malformed {
        &self.malformed
    }

    /// Lines read so far (including blank and malformed ones).
    pub fn lines(&self) -> u64 {
        self.lines.line_number()
    }

    /// Entries passed on so far.
    pub fn entries(&self) -> u64 {
        self.entries
    }

    /// Calls `f` with the 1-based line number and entry of each good line,
    /// in order, to the end of the input. Blank lines are skipped; other
    /// lines that do not parse are counted in [`Reader::malformed`].
    ///
    /// The entry borrows the reader's buffer, hence a callback. Cost per
    /// line: one pass to find its end and one to parse it; for combined and
    /// common formats no allocation unless a field is escaped or not UTF-8.
    ///
    /// # Errors
    ///
    /// Errors of the underlying reader (for gzip, a corrupt stream); the
    /// entries before it have been passed to `f`. Bad lines are not errors.
    pub fn for_each_entry(&mut self, mut f: impl FnMut(u64, Entry<'_>)) -> io::Result<()> {
        let Reader { lines, format, malformed, entries } = self;
        while let Some((number, text)) = lines.next_text(malformed)? {
            match format.parse(text) {
                Ok(entry) => {
                    *entries += 1;
                    f(number, entry);
                }
                Err(e) => malformed.note(number, || e.to_string()),
            }
        }
        Ok(())
    }
}

/// `bytes` as a string: borrowed when valid UTF-8, else with U+FFFD for
/// each invalid sequence.
fn text(bytes: &[u8]) -> Cow<'_, str> {
    String::from_utf8_lossy(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NGINX: &str = r#"203.0.113.9 - - [23/Nov/2026:21:09:50 +0000] "GET /robots.txt HTTP/1.1" 200 67 "-" "Mozilla/5.0 (compatible; GPTBot/1.2; +https://openai.com/gptbot)""#;
    const COMMON: &str = r#"203.0.113.9 - frank [23/Nov/2026:21:09:50 +0000] "GET /a HTTP/1.0" 200 2326"#;
    const CADDY: &str = r#"{"level":"info","ts":1795468190.5,"logger":"http.log.access","msg":"handled request","request":{"remote_ip":"192.0.2.1","method":"GET","host":"example.com","uri":"/a","headers":{"User-Agent":["curl/8"]}},"status":200}"#;

    #[test]
    fn sniff_each_format() {
        assert_eq!(Format::sniff(&[NGINX, NGINX, "junk"]), Some(Format::Combined));
        assert_eq!(Format::sniff(&[COMMON, COMMON]), Some(Format::Common));
        assert_eq!(Format::sniff(&[CADDY, "", CADDY]), Some(Format::Json(JsonFields::default())));
        assert_eq!(Format::sniff(&[]), None);
        assert_eq!(Format::sniff(&["junk", "more junk", NGINX]), None);
        assert_eq!(Format::sniff(&["{\"a\":1}"]), None);
    }

    #[test]
    fn reader_counts_blank_and_malformed() {
        let log = format!("{NGINX}\r\n\n  \n\"-\"\n{NGINX}\n{}\n{NGINX}", "x".repeat(300));
        let mut reader = Reader::with_max_line(log.as_bytes(), Format::Combined, 200);
        let mut lines = Vec::new();
        reader.for_each_entry(|n, e| lines.push((n, e.target.into_owned()))).unwrap();
        assert_eq!(lines.iter().map(|l| l.0).collect::<Vec<_>>(), [1, 5, 7]);
        assert!(lines.iter().all(|l| l.1 == "/robots.txt"));
        assert_eq!(reader.entries(), 3);
        assert_eq!(reader.lines(), 7);
        let m = reader.malformed();
        assert_eq!(m.count, 2);
        assert_eq!((m.samples[0].line, m.samples[1].line), (4, 6));
        assert!(m.samples[1].reason.contains("longer than 200"), "{:?}", m.samples[1]);
    }

    #[test]
    fn huge_user_agent_and_non_utf8_lines() {
        let ua = "A".repeat(64 * 1024);
        let mut log = NGINX.replace("Mozilla/5.0", &ua).into_bytes();
        log.push(b'\n');
        log.extend_from_slice(&NGINX.as_bytes()[..60]);
        log.extend_from_slice(b"\xff\xfe\n");
        log.extend_from_slice(&NGINX.replace("/robots.txt", "/\u{e9}").into_bytes());
        let at = log.len() - 10;
        log[at] = 0xff; // inside the User-Agent (`.../gptbot)"`)
        let mut reader = Reader::new(&log[..], Format::Combined);
        let mut got = Vec::new();
        reader.for_each_entry(|n, e| got.push((n, e.user_agent.unwrap().into_owned(), e.target.into_owned()))).unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!((got[0].0, got[0].2.as_str()), (1, "/robots.txt"));
        assert!(got[0].1.len() > 64 * 1024);
        assert!(got[1].1.contains('\u{fffd}'), "{}", got[1].1);
        assert_eq!((got[1].0, got[1].2.as_str()), (3, "/\u{e9}"));
        assert_eq!(reader.malformed().count, 1);
        assert_eq!(reader.malformed().samples[0].line, 2);
    }

    #[test]
    fn reader_of_json_and_common() {
        let log = format!("{CADDY}\nnot json\n");
        let mut reader = Reader::new(log.as_bytes(), Format::Json(JsonFields::default()));
        let mut n = 0;
        reader.for_each_entry(|_, e| n += usize::from(e.user_agent.as_deref() == Some("curl/8"))).unwrap();
        assert_eq!((n, reader.malformed().count), (1, 1));

        let mut reader = Reader::new(COMMON.as_bytes(), Format::Common);
        let mut ua = Some(None);
        reader.for_each_entry(|_, e| ua = Some(e.user_agent.map(Cow::into_owned))).unwrap();
        assert_eq!(ua, Some(None));
    }
}
