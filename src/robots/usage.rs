//! Usage preferences: what a site says its content may be used for.
//!
//! Two ways to say it, both read here into one [`UsagePref`]:
//!
//! * IETF AI Preferences (draft-ietf-aipref-attach, draft-ietf-aipref-vocab):
//!   a `Content-Usage: [path] usage-pref` rule in a robots.txt group, and the
//!   `Content-Usage` HTTP response header. The value is an RFC 9651
//!   structured-field dictionary; the vocabulary's categories are `train-ai`
//!   and `search`, each `y` or `n`. Unknown keys and parameters are ignored,
//!   and labels are case-sensitive (RFC 9651 keys are lowercase).
//! * Cloudflare's Content Signals: `Content-Signal: search=yes, ai-input=yes,
//!   ai-train=no` (read by [`super::ext::parse_content_signal`]); `ai-train`
//!   is `train-ai` here, and `ai-input` has no IETF counterpart yet.
//!
//! Everything here is bounded: a value longer than [`MAX_VALUE`] is
//! malformed, the parser makes one pass without recursion past one inner
//! list, and it never panics (every index is checked).

use std::fmt;

/// Longest `Content-Usage` value read; longer is malformed. A real value is
/// a few dozen bytes.
pub const MAX_VALUE: usize = 4096;

/// Most dictionary members read from one value; more is malformed.
pub const MAX_MEMBERS: usize = 64;

/// Labels of earlier vocabulary drafts (and Content Signals' spelling) that
/// the current vocabulary no longer has: the linter names them.
pub const OLD_LABELS: &[&str] = &["tdm", "ai", "genai", "inference", "train-genai", "bots"];

/// The state of one usage category: `Some(true)` allowed (`y`), `Some(false)`
/// refused (`n`), `None` unknown (no preference stated).
pub type Stance = Option<bool>;

/// A usage preference: one stance per category robotgate knows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UsagePref {
    /// `train-ai` (draft-ietf-aipref-vocab; Content Signals' `ai-train`).
    pub train_ai: Stance,
    /// `search` (both vocabularies).
    pub search: Stance,
    /// `ai-input` (Content Signals only): retrieval to answer a question.
    pub ai_input: Stance,
}

/// The most restrictive of two stances: `n` over `y` over unknown
/// (draft-ietf-aipref-attach: conflicting preferences, the most restrictive wins).
fn strictest(a: Stance, b: Stance) -> Stance {
    match (a, b) {
        (Some(false), _) | (_, Some(false)) => Some(false),
        (Some(true), _) | (_, Some(true)) => Some(true),
        _ => None,
    }
}

impl UsagePref {
    /// Whether nothing is stated.
    pub fn is_empty(&self) -> bool {
        *self == UsagePref::default()
    }

    /// Both preferences at once, the most restrictive stance per category.
    pub fn combine(self, other: UsagePref) -> UsagePref {
        UsagePref {
            train_ai: strictest(self.train_ai, other.train_ai),
            search: strictest(self.search, other.search),
            ai_input: strictest(self.ai_input, other.ai_input),
        }
    }

    /// The stance on a purpose's category (`train-ai`, `search`, `ai-input`);
    /// `None` for any other label.
    pub fn stance(&self, label: &str) -> Stance {
        match label {
            "train-ai" => self.train_ai,
            "search" => self.search,
            "ai-input" => self.ai_input,
            _ => None,
        }
    }

    /// The IETF part as a `Content-Usage` header value (`train-ai=n, search=y`);
    /// `None` when neither IETF category is stated.
    pub fn header_value(&self) -> Option<String> {
        let mut parts = Vec::new();
        for (label, s) in [("train-ai", self.train_ai), ("search", self.search)] {
            if let Some(yes) = s {
                parts.push(format!("{label}={}", if yes { 'y' } else { 'n' }));
            }
        }
        (!parts.is_empty()).then(|| parts.join(", "))
    }
}

impl fmt::Display for UsagePref {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for (label, s) in [("train-ai", self.train_ai), ("search", self.search), ("ai-input", self.ai_input)] {
            if let Some(yes) = s {
                if !first {
                    f.write_str(", ")?;
                }
                first = false;
                write!(f, "{label}={}", if yes { 'y' } else { 'n' })?;
            }
        }
        if first {
            f.write_str("none")?;
        }
        Ok(())
    }
}

/// A `Content-Usage` value read as the vocabulary says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ParsedUsage {
    /// The stances on the known categories.
    pub pref: UsagePref,
    /// Labels of earlier drafts found among the keys (for the linter).
    pub old_labels: Vec<&'static str>,
    /// Known labels whose value is not the token `y` or `n`, so they state
    /// nothing (`train-ai=no`, `search`; for the linter).
    pub unreadable: Vec<&'static str>,
}

/// Why a `Content-Usage` value is not a preference.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum UsageError {
    /// Not an RFC 9651 dictionary (or too long, or too many members).
    #[error("not a structured-field dictionary (RFC 9651 4.2.2) at byte {0}")]
    Syntax(usize),
    /// A path with no preference after it.
    #[error("a path with no preference after it")]
    NoPreference,
}

/// Read a usage preference (`train-ai=n, search=y`), the value of the HTTP
/// header or of a robots.txt rule after its path.
///
/// RFC 9651 4.2.2: a dictionary that does not parse is ignored as a whole;
/// the last occurrence of a key wins. draft-ietf-aipref-vocab: a member whose
/// value is not the token `y` or `n` states nothing; unknown keys and all
/// parameters are ignored.
///
/// # Errors
/// [`UsageError::Syntax`] with the byte offset where the dictionary breaks.
///
/// ```
/// use robotgate::robots::usage::parse_usage;
/// let p = parse_usage("train-ai=n, search=y;q=1, x=(a b)").unwrap().pref;
/// assert_eq!((p.train_ai, p.search), (Some(false), Some(true)));
/// assert!(parse_usage("train-ai=n,").is_err());
/// ```
pub fn parse_usage(value: &str) -> Result<ParsedUsage, UsageError> {
    let members = parse_dictionary(value.as_bytes())?;
    let mut out = ParsedUsage::default();
    for (key, item) in members {
        let stance = match item {
            Item::Token(t) if t == b"y" => Some(true),
            Item::Token(t) if t == b"n" => Some(false),
            _ => None,
        };
        let known = match key {
            b"train-ai" => Some("train-ai"),
            b"search" => Some("search"),
            _ => None,
        };
        if let (Some(label), None) = (known, stance) {
            if !out.unreadable.contains(&label) {
                out.unreadable.push(label);
            }
        }
        match key {
            b"train-ai" => out.pref.train_ai = stance,
            b"search" => out.pref.search = stance,
            _ => {
                if let Some(old) = OLD_LABELS.iter().find(|l| l.as_bytes() == key) {
                    if !out.old_labels.contains(old) {
                        out.old_labels.push(old);
                    }
                }
            }
        }
    }
    Ok(out)
}

/// A robots.txt `Content-Usage` value: the optional path pattern (starting
/// with `/` or `*`) and the preference.
///
/// # Errors
/// As [`parse_usage`]; [`UsageError::NoPreference`] for a lone path.
pub fn parse_rule(value: &str) -> Result<(Option<&str>, ParsedUsage), UsageError> {
    let v = value.trim_matches(|c| c == ' ' || c == '\t');
    if v.starts_with('/') || v.starts_with('*') {
        let Some(ws) = v.find([' ', '\t']) else { return Err(UsageError::NoPreference) };
        let (path, rest) = v.split_at(ws);
        return Ok((Some(path), parse_usage(rest.trim_start_matches([' ', '\t']))?));
    }
    Ok((None, parse_usage(v)?))
}

/// A bare item, as far as the vocabulary cares.
#[derive(Debug, PartialEq, Eq)]
enum Item<'a> {
    Token(&'a [u8]),
    Other,
}

/// RFC 9651 4.2.2 "Parsing a Dictionary", returning the members in order
/// (duplicates kept: the caller's last assignment wins).
fn parse_dictionary(input: &[u8]) -> Result<Vec<(&[u8], Item<'_>)>, UsageError> {
    if input.len() > MAX_VALUE {
        return Err(UsageError::Syntax(MAX_VALUE));
    }
    let mut p = Cursor { s: input, i: 0 };
    p.skip_sp();
    let mut out = Vec::new();
    // An empty field value is an empty dictionary.
    if p.at_end() {
        return Ok(out);
    }
    loop {
        if out.len() >= MAX_MEMBERS {
            return Err(UsageError::Syntax(p.i));
        }
        let key = p.key()?;
        let item = if p.eat(b'=') {
            if p.peek() == Some(b'(') {
                p.inner_list()?;
                Item::Other
            } else {
                let item = p.bare_item()?;
                p.parameters()?;
                item
            }
        } else {
            // A key alone is Boolean true: not `y` or `n`.
            p.parameters()?;
            Item::Other
        };
        out.push((key, item));
        p.skip_ows();
        if p.at_end() {
            return Ok(out);
        }
        if !p.eat(b',') {
            return Err(UsageError::Syntax(p.i));
        }
        p.skip_ows();
        if p.at_end() {
            return Err(UsageError::Syntax(p.i)); // A trailing comma.
        }
    }
}

struct Cursor<'a> {
    s: &'a [u8],
    i: usize,
}

impl<'a> Cursor<'a> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn at_end(&self) -> bool {
        self.i >= self.s.len()
    }

    fn eat(&mut self, b: u8) -> bool {
        let hit = self.peek() == Some(b);
        if hit {
            self.i += 1;
        }
        hit
    }

    fn skip_sp(&mut self) {
        while self.eat(b' ') {}
    }

    fn skip_ows(&mut self) {
        while self.eat(b' ') || self.eat(b'\t') {}
    }

    fn fail<T>(&self) -> Result<T, UsageError> {
        Err(UsageError::Syntax(self.i))
    }

    fn take_while(&mut self, f: impl Fn(u8) -> bool) -> &'a [u8] {
        let start = self.i;
        while self.peek().is_some_and(&f) {
            self.i += 1;
        }
        self.s.get(start..self.i).unwrap_or_default()
    }

    /// 4.2.3.3: lcalpha / `*`, then lcalpha, digits, `_ - . *`.
    fn key(&mut self) -> Result<&'a [u8], UsageError> {
        match self.peek() {
            Some(b) if b.is_ascii_lowercase() || b == b'*' => {}
            _ => return self.fail(),
        }
        Ok(self.take_while(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'_' | b'-' | b'.' | b'*')))
    }

    /// 4.2.3.2: `;key[=bare-item]`, repeated.
    fn parameters(&mut self) -> Result<(), UsageError> {
        while self.eat(b';') {
            self.skip_sp();
            self.key()?;
            if self.eat(b'=') {
                self.bare_item()?;
            }
        }
        Ok(())
    }

    /// 4.2.1.2: `(item item ...)` with parameters after each and after the list.
    fn inner_list(&mut self) -> Result<(), UsageError> {
        if !self.eat(b'(') {
            return self.fail();
        }
        loop {
            self.skip_sp();
            if self.eat(b')') {
                return self.parameters();
            }
            self.bare_item()?;
            self.parameters()?;
            match self.peek() {
                Some(b' ') | Some(b')') => {}
                _ => return self.fail(),
            }
        }
    }

    /// 4.2.3.1: integer or decimal, string, token, byte sequence, boolean,
    /// date, display string.
    fn bare_item(&mut self) -> Result<Item<'a>, UsageError> {
        match self.peek() {
            Some(b) if b == b'-' || b.is_ascii_digit() => self.number().map(|_| Item::Other),
            Some(b'"') => self.string().map(|_| Item::Other),
            Some(b) if b.is_ascii_alphabetic() || b == b'*' => {
                Ok(Item::Token(self.take_while(|b| crate::net::is_tchar(b) || b == b':' || b == b'/')))
            }
            Some(b':') => {
                self.i += 1;
                self.take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='));
                if self.eat(b':') {
                    Ok(Item::Other)
                } else {
                    self.fail()
                }
            }
            Some(b'?') => {
                self.i += 1;
                if self.eat(b'0') || self.eat(b'1') {
                    Ok(Item::Other)
                } else {
                    self.fail()
                }
            }
            Some(b'@') => {
                self.i += 1;
                self.number().map(|_| Item::Other)
            }
            Some(b'%') => {
                self.i += 1;
                self.display_string().map(|_| Item::Other)
            }
            _ => self.fail(),
        }
    }

    /// 4.2.4: at most 15 integer digits, or 12 + `.` + 1 to 3.
    fn number(&mut self) -> Result<(), UsageError> {
        self.eat(b'-');
        let int = self.take_while(|b| b.is_ascii_digit()).len();
        if int == 0 {
            return self.fail();
        }
        if self.eat(b'.') {
            let frac = self.take_while(|b| b.is_ascii_digit()).len();
            if int > 12 || frac == 0 || frac > 3 {
                return self.fail();
            }
        } else if int > 15 {
            return self.fail();
        }
        Ok(())
    }

    /// 4.2.5: `"` printable ASCII, with `\"` and `\\` escapes, `"`.
    fn string(&mut self) -> Result<(), UsageError> {
        self.i += 1;
        loop {
            match self.peek() {
                Some(b'\\') => {
                    self.i += 1;
                    if !(self.eat(b'"') || self.eat(b'\\')) {
                        return self.fail();
                    }
                }
                Some(b'"') => {
                    self.i += 1;
                    return Ok(());
                }
                Some(b) if (0x20..0x7f).contains(&b) => self.i += 1,
                _ => return self.fail(),
            }
        }
    }

    /// 4.2.10 (RFC 9651): `%"` then printable ASCII with `%xx` (lowercase hex) escapes, `"`.
    fn display_string(&mut self) -> Result<(), UsageError> {
        if !self.eat(b'"') {
            return self.fail();
        }
        loop {
            match self.peek() {
                Some(b'%') => {
                    self.i += 1;
                    for _ in 0..2 {
                        if !self.peek().is_some_and(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
                            return self.fail();
                        }
                        self.i += 1;
                    }
                }
                Some(b'"') => {
                    self.i += 1;
                    return Ok(());
                }
                Some(b) if (0x20..0x7f).contains(&b) => self.i += 1,
                _ => return self.fail(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pref(v: &str) -> UsagePref {
        parse_usage(v).unwrap().pref
    }

    #[test]
    fn vocabulary_values() {
        assert_eq!(pref("train-ai=n").train_ai, Some(false));
        assert_eq!(pref("search=y, train-ai=n").search, Some(true));
        // Last occurrence wins (RFC 9651 4.2.2).
        assert_eq!(pref("train-ai=n, train-ai=y").train_ai, Some(true));
        // Not the token y/n: nothing stated.
        assert_eq!(pref("train-ai=\"n\"").train_ai, None);
        assert_eq!(pref("train-ai").train_ai, None);
        assert_eq!(pref("train-ai=?0").train_ai, None);
        assert_eq!(pref("train-ai=no").train_ai, None);
        // Labels are case-sensitive: an uppercase key is not even a key.
        assert!(parse_usage("Train-AI=n").is_err());
        // Parameters and unknown keys are ignored.
        assert_eq!(pref("train-ai=n;exp=1, foo=(a b);q, bar=:aGk=:").train_ai, Some(false));
        assert!(pref("").is_empty());
    }

    #[test]
    fn malformed_dictionaries() {
        for bad in ["train-ai=n,", ",train-ai=n", "train-ai=n search=y", "train-ai=", "=n", "a=(b", "a=\"x", "a=1.2345"]
        {
            assert!(parse_usage(bad).is_err(), "{bad:?}");
        }
        assert!(parse_usage(&"a=1,".repeat(100)).is_err(), "too many members");
        assert!(parse_usage(&"a".repeat(MAX_VALUE + 1)).is_err());
    }

    #[test]
    fn old_labels_are_named() {
        let p = parse_usage("tdm=n, train-genai=n, search=y").unwrap();
        assert_eq!(p.old_labels, vec!["tdm", "train-genai"]);
    }

    #[test]
    fn rules_with_and_without_paths() {
        let (path, p) = parse_rule("/news/ train-ai=n").unwrap();
        assert_eq!((path, p.pref.train_ai), (Some("/news/"), Some(false)));
        let (path, p) = parse_rule("train-ai=y").unwrap();
        assert_eq!((path, p.pref.train_ai), (None, Some(true)));
        assert_eq!(parse_rule("/news/"), Err(UsageError::NoPreference));
    }

    #[test]
    fn most_restrictive_wins() {
        let a = pref("train-ai=y, search=y");
        let b = pref("train-ai=n");
        let c = a.combine(b);
        assert_eq!((c.train_ai, c.search), (Some(false), Some(true)));
        assert_eq!(c.header_value().as_deref(), Some("train-ai=n, search=y"));
        assert_eq!(c.to_string(), "train-ai=n, search=y");
    }

    #[test]
    fn arbitrary_bytes_never_panic() {
        let mut seed = 7u64;
        for _ in 0..20_000 {
            let len = (seed % 24) as usize;
            let s: String = (0..len)
                .map(|_| {
                    seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    b"a-=,;() \"\\:?@%*1.ny/\t"[(seed >> 33) as usize % 21] as char
                })
                .collect();
            let _ = parse_rule(&s);
        }
    }
}
