//! What an origin says about indexing, read as the seeds read it: the
//! robots META tag's content and the `X-Robots-Tag` header, leniently (an
//! unknown term is skipped, as a robot skips it).

use super::{meaning, Said, Term};

/// The terms of a META tag's `content` (or a header value without a robot
/// name): known terms, in order; unknown ones skipped.
pub fn terms(content: &str) -> Vec<Term> {
    content.split(',').filter_map(|t| Term::parse(t).ok()).collect()
}

/// One `X-Robots-Tag` value: the robot it names (`googlebot: noindex`), if
/// any, and its terms. A name is a word before the first `:` that is not a
/// directive taking a value (`max-snippet:20`, `unavailable_after: ...`).
pub fn header_value(value: &str) -> (Option<&str>, Vec<Term>) {
    if let Some((name, rest)) = value.split_once(':') {
        let name = name.trim();
        let directive_with_value = ["max-snippet", "max-image-preview", "max-video-preview", "unavailable_after"]
            .iter()
            .any(|d| name.eq_ignore_ascii_case(d));
        if !directive_with_value && !name.is_empty() && !name.contains([',', ' ']) {
            return (Some(name), terms(rest));
        }
    }
    (None, terms(value))
}

/// Whether terms forbid indexing: a plain NOINDEX or NONE (where INDEX meets
/// NOINDEX, the robot decides, and robotgate does not say it hides).
pub fn says_noindex(terms: &[Term]) -> bool {
    meaning(terms).0 == Said::No
}

/// The most bytes of a document read for its head: META tags after them
/// are not looked for.
pub const MAX_HEAD: usize = 64 << 10;

/// The longest tag kept across two chunks; a longer one is skipped.
const MAX_TAG: usize = 4 << 10;

/// The most META tags kept from one document.
const MAX_TAGS: usize = 16;

/// Reads the robots META tags (`robots`, and per-robot names such as
/// `googlebot`) of an HTML document as it streams, chunk by chunk: nothing
/// of the document is kept but a tag cut by a chunk's end (at most
/// [`MAX_TAG`] bytes), and reading stops at `</head>`, `<body` or
/// [`MAX_HEAD`] bytes. Comments are skipped.
#[derive(Debug, Default)]
pub struct HeadScanner {
    read: usize,
    carry: Vec<u8>,
    in_comment: bool,
    done: bool,
    found: Vec<(String, Vec<Term>)>,
}

impl HeadScanner {
    /// A scanner at a document's start.
    pub fn new() -> HeadScanner {
        HeadScanner::default()
    }

    /// Whether the head is read (or the bound reached): further chunks are not looked at.
    pub fn done(&self) -> bool {
        self.done
    }

    /// The META tags found: the name (lowercase) and its terms.
    pub fn found(&self) -> &[(String, Vec<Term>)] {
        &self.found
    }

    /// Read the next chunk of the document.
    pub fn feed(&mut self, chunk: &[u8]) {
        if self.done {
            return;
        }
        let room = MAX_HEAD.saturating_sub(self.read);
        let chunk = &chunk[..chunk.len().min(room)];
        self.read += chunk.len();
        let mut data = chunk;
        if self.in_comment {
            // `-->` may straddle chunks: look in the carried tail too.
            let mut joined = std::mem::take(&mut self.carry);
            let keep = data.len().min(MAX_TAG);
            joined.extend_from_slice(&data[..keep]);
            match find(&joined, b"-->") {
                Some(end) => {
                    self.in_comment = false;
                    let consumed = (end + 3).saturating_sub(joined.len() - keep);
                    data = &data[consumed.min(data.len())..];
                }
                None => {
                    self.carry = joined[joined.len().saturating_sub(2)..].to_vec();
                    data = &[];
                }
            }
        } else if !self.carry.is_empty() {
            match memchr::memchr(b'>', data) {
                Some(gt) => {
                    let mut tag = std::mem::take(&mut self.carry);
                    tag.extend_from_slice(&data[..=gt]);
                    self.tag(&tag);
                    data = &data[gt + 1..];
                }
                None => {
                    if self.carry.len() + data.len() <= MAX_TAG {
                        self.carry.extend_from_slice(data);
                    } else {
                        self.carry.clear();
                    }
                    data = &[];
                }
            }
        }
        while !self.done && !self.in_comment {
            let Some(lt) = memchr::memchr(b'<', data) else { break };
            let rest = &data[lt..];
            if rest.starts_with(b"<!--") {
                match find(&rest[4..], b"-->") {
                    Some(end) => {
                        data = &rest[4 + end + 3..];
                        continue;
                    }
                    None => {
                        self.in_comment = true;
                        self.carry = rest[rest.len().saturating_sub(2).max(4)..].to_vec();
                        break;
                    }
                }
            }
            match memchr::memchr(b'>', rest) {
                Some(gt) => {
                    self.tag(&rest[..=gt]);
                    data = &rest[gt + 1..];
                }
                None => {
                    if rest.len() <= MAX_TAG {
                        self.carry = rest.to_vec();
                    }
                    break;
                }
            }
        }
        if self.read >= MAX_HEAD {
            self.done = true;
        }
    }

    /// One whole tag, `<...>`.
    fn tag(&mut self, tag: &[u8]) {
        let name_end = tag[1..]
            .iter()
            .position(|b| b.is_ascii_whitespace() || *b == b'>' || *b == b'/')
            .map_or(tag.len(), |i| i + 1);
        let name = &tag[1..name_end];
        if name.eq_ignore_ascii_case(b"/head") || name.eq_ignore_ascii_case(b"body") {
            self.done = true;
            return;
        }
        if !name.eq_ignore_ascii_case(b"meta") || self.found.len() >= MAX_TAGS {
            return;
        }
        let (mut meta_name, mut content) = (None, None);
        for (k, v) in attributes(&tag[name_end..tag.len() - 1]) {
            if k.eq_ignore_ascii_case(b"name") {
                meta_name = Some(String::from_utf8_lossy(v).trim().to_ascii_lowercase());
            } else if k.eq_ignore_ascii_case(b"content") {
                content = Some(String::from_utf8_lossy(v).into_owned());
            }
        }
        if let (Some(n), Some(c)) = (meta_name, content) {
            // Robots' names: `robots`, or a robot token (letters, digits, - _).
            if !n.is_empty() && n.len() <= 64 && n.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_".contains(&b)) {
                let t = terms(&c);
                if !t.is_empty() {
                    self.found.push((n, t));
                }
            }
        }
    }
}

/// The first place `needle` is in `hay`.
fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    memchr::memmem::find(hay, needle)
}

/// A tag's attributes: `name=value`, `name="value"`, `name='value'`, or a bare `name`.
/// `s` past its leading bytes that `skipped` says yes to.
fn skip(s: &[u8], skipped: impl Fn(u8) -> bool) -> &[u8] {
    let start = s.iter().position(|&b| !skipped(b)).unwrap_or(s.len());
    &s[start..]
}

fn attributes(mut s: &[u8]) -> Vec<(&[u8], &[u8])> {
    let mut out = Vec::new();
    loop {
        s = skip(s, |b| b.is_ascii_whitespace() || b == b'/');
        if s.is_empty() || out.len() >= 32 {
            return out;
        }
        let end = s.iter().position(|b| b.is_ascii_whitespace() || *b == b'=' || *b == b'/').unwrap_or(s.len());
        let (key, rest) = s.split_at(end);
        s = skip(rest, |b| b.is_ascii_whitespace());
        let value: &[u8] = if let [b'=', rest @ ..] = s {
            s = skip(rest, |b| b.is_ascii_whitespace());
            match s {
                [q @ (b'"' | b'\''), rest @ ..] => {
                    let close = rest.iter().position(|b| b == q).unwrap_or(rest.len());
                    let v = &rest[..close];
                    s = &rest[(close + 1).min(rest.len())..];
                    v
                }
                _ => {
                    let e = s.iter().position(|b| b.is_ascii_whitespace()).unwrap_or(s.len());
                    let v = &s[..e];
                    s = &s[e..];
                    v
                }
            }
        } else {
            b""
        };
        if key.is_empty() {
            // A stray `=`: skip a byte, never loop.
            s = s.get(1..).unwrap_or(b"");
            continue;
        }
        out.push((key, value));
    }
}
