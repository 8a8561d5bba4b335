//! What an origin says about indexing, read as the seeds read it: the
//! robots META tag's content and the `X-Robots-Tag` header, leniently (an
//! unknown term is skipped, as a robot skips it).

use super::html::{Token, Tokenizer};
use super::{meaning, Said, Term};

/// The longest term read, runs of blanks counted as one; a longer one is
/// skipped, as an unknown term is.
pub const MAX_TERM: usize = 128;

/// The most distinct terms kept from one tag or header value beside those
/// that say index or follow (ALL, NONE, INDEX, NOINDEX, FOLLOW, NOFOLLOW:
/// each is always kept, so the page's meaning never depends on the cap).
/// A repeated term is kept once. So at most 6 + 16 terms of at most
/// [`MAX_TERM`] bytes each, however long the `content` is.
pub const MAX_OTHER_TERMS: usize = 16;

/// Reads terms as their bytes come (a `content` value as it streams):
/// nothing is held but the term being read, at most [`MAX_TERM`] bytes,
/// and the terms kept (see [`MAX_OTHER_TERMS`]). Linear in the input.
#[derive(Debug, Default)]
pub struct TermsReader {
    term: Vec<u8>,
    over: bool,
    blank: bool,
    terms: Vec<Term>,
}

impl TermsReader {
    /// Forget everything read.
    pub fn clear(&mut self) {
        self.term.clear();
        self.over = false;
        self.blank = false;
        self.terms.clear();
    }

    /// One more byte.
    pub fn push(&mut self, b: u8) {
        if b == b',' {
            self.end_term();
        } else if b.is_ascii_whitespace() {
            // Blanks before a term are dropped, a run inside one kept as one.
            self.blank = !self.term.is_empty();
        } else if self.term.len() + 2 > MAX_TERM {
            self.over = true;
        } else {
            if std::mem::take(&mut self.blank) {
                self.term.push(b' ');
            }
            self.term.push(b);
        }
    }

    /// The term being read ends (at a comma, or at the value's end).
    pub fn end_term(&mut self) {
        let term = std::mem::take(&mut self.term);
        if !std::mem::take(&mut self.over) && !term.is_empty() {
            if let Some(t) = std::str::from_utf8(&term).ok().and_then(|t| Term::parse(t).ok()) {
                keep(&mut self.terms, t);
            }
        }
        self.blank = false;
        self.term = term;
        self.term.clear();
    }

    /// The terms read, in order (the one being read ended first); the reader is left empty.
    pub fn take(&mut self) -> Vec<Term> {
        self.end_term();
        std::mem::take(&mut self.terms)
    }
}

/// Whether a term says index or follow.
fn about_index(t: &Term) -> bool {
    matches!(t, Term::All | Term::None | Term::Index | Term::NoIndex | Term::Follow | Term::NoFollow)
}

/// Add `t` to `terms` unless it is there already or, not being about index
/// or follow, past [`MAX_OTHER_TERMS`]. Meaning is unchanged: a repeat
/// says nothing more ([`super::meaning`] folds terms, in any order).
fn keep(terms: &mut Vec<Term>, t: Term) {
    if terms.contains(&t) {
        return;
    }
    if about_index(&t) || terms.iter().filter(|t| !about_index(t)).count() < MAX_OTHER_TERMS {
        terms.push(t);
    }
}

/// The terms of a META tag's `content` (or a header value without a robot
/// name): known terms, in order, each once; unknown ones skipped; bounded
/// as [`TermsReader`] is.
pub fn terms(content: &str) -> Vec<Term> {
    let mut reader = TermsReader::default();
    for &b in content.as_bytes() {
        reader.push(b);
    }
    reader.take()
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

/// The most META tags kept from one document (and `X-Robots-Tag` values
/// from one answer).
pub const MAX_TAGS: usize = 16;

/// Reads the robots META tags (`robots`, and per-robot names such as
/// `googlebot`) of an HTML document as it streams, chunk by chunk, with an
/// HTML tokenizer ([`super::html`]): a tag inside a comment, a script, a
/// style or a title is text, not a tag. Nothing of the document is kept but
/// the tag being read (bounded), and reading stops at the end tag `</head>`,
/// the start tag `<body>`, `<plaintext>` or [`MAX_HEAD`] bytes.
#[derive(Debug, Default)]
pub struct HeadScanner {
    read: usize,
    tokens: Tokenizer,
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
        let (found, done) = (&mut self.found, &mut self.done);
        self.tokens.feed(chunk, &mut |token| match token {
            Token::Start { name: b"body", .. } | Token::End { name: b"head" } => {
                *done = true;
                false
            }
            Token::Start { name: b"meta", name_attr: Some(Some(name)), content: Some(content) } => {
                if found.len() < MAX_TAGS {
                    // Robots' names: `robots`, or a robot token (letters, digits, - _).
                    let name = String::from_utf8_lossy(name).trim().to_ascii_lowercase();
                    let robot =
                        !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_".contains(&b));
                    let terms = content.take();
                    if robot && !terms.is_empty() {
                        found.push((name, terms));
                    }
                }
                true
            }
            _ => true,
        });
        if self.tokens.is_plaintext() || self.read >= MAX_HEAD {
            self.done = true;
        }
    }
}
