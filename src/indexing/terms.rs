//! A `content` value's terms, read as its bytes stream
//! ([`TermsReader`]): what the HTML tokenizer ([`super::html`]) fills while
//! it reads a META tag and what [`super::meta`] keeps, bounded both ways.

use super::Term;

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
