//! What an origin says about indexing, read as the seeds read it: the
//! robots META tag's content and the `X-Robots-Tag` header, leniently (an
//! unknown term is skipped, as a robot skips it).

use super::html::{Token, Tokenizer};
use super::terms::TermsReader;
pub use super::terms::{MAX_OTHER_TERMS, MAX_TERM};
use super::{meaning, Said, Term};

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
