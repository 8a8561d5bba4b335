//! An HTML tokenizer for reading a document's head as it streams: the
//! states of the WHATWG HTML standard's tokenizer (section 13.2.5) that
//! decide where a tag is and where it is only text, kept byte by byte so
//! that a chunk may end anywhere, holding nothing of the document but the
//! tag being read (its name, and two attributes' values, bounded).
//!
//! * Data, tag open, end tag open, tag name, the attribute states and the
//!   self-closing start tag state, as the standard has them: a quoted value
//!   may hold `>`; the first of two attributes of one name is the one kept.
//! * Comments: `<!--` to `-->` (or `--!>`), and the abrupt `<!-->` and
//!   `<!--->`. Every other markup declaration (`<!DOCTYPE ...>`, `<?...>`,
//!   `</3>`, and `<![CDATA[`, which outside SVG and MathML content is a
//!   bogus comment) ends at the first `>`.
//! * The tree builder's switches, by the start tag's name (as lol-html and
//!   html5gum make them without a tree): `title` and `textarea` (RCDATA),
//!   `style`, `xmp`, `iframe`, `noembed`, `noframes` and `noscript` (RAWTEXT:
//!   read as a browser with scripting reads it) hold text up to their own
//!   end tag; `script` holds script data, with the escaped and
//!   double-escaped states (`<!-- <script> </script> -->` inside a script
//!   does not end it); `plaintext` holds the rest of the document.
//! * Not done: character references are not decoded (`&#110;oindex` is not
//!   `noindex`), and `<![CDATA[` inside `<svg>` or `<math>` is read as in
//!   HTML content (the head holds neither).
//!
//! Cost: one pass, each byte looked at once (runs of text, comment and
//! script are skipped by `memchr`); memory: a few hundred bytes and what the
//! caller keeps of a `content` value ([`super::terms::TermsReader`]). No
//! input panics (`fuzz/fuzz_targets/meta_head.rs`).

mod states;

use super::terms::TermsReader;
use states::State;

/// The longest tag name told apart (`plaintext`); a longer one is "other".
const NAME: usize = 16;

/// The longest `name` attribute value kept (a robot's token); a longer one is "too long".
pub const MAX_NAME_VALUE: usize = 64;

/// A short name, lowercase, bounded: longer than `N` bytes is "other".
#[derive(Debug, Clone, Copy)]
struct Short<const N: usize> {
    bytes: [u8; N],
    len: usize,
    over: bool,
}

impl<const N: usize> Default for Short<N> {
    fn default() -> Self {
        Short { bytes: [0; N], len: 0, over: false }
    }
}

impl<const N: usize> Short<N> {
    fn clear(&mut self) {
        self.len = 0;
        self.over = false;
    }

    fn push(&mut self, b: u8) {
        if self.len < N {
            self.bytes[self.len] = b.to_ascii_lowercase();
            self.len += 1;
        } else {
            self.over = true;
        }
    }

    /// The name, or empty when it was too long to tell apart.
    fn get(&self) -> &[u8] {
        if self.over {
            b""
        } else {
            &self.bytes[..self.len]
        }
    }

    fn is(&self, name: &[u8]) -> bool {
        !self.over && &self.bytes[..self.len] == name
    }
}

/// Which of the wanted attributes a value belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Capture {
    #[default]
    None,
    Name,
    Content,
}

/// What the tokenizer reports.
#[derive(Debug)]
pub enum Token<'a> {
    /// A start tag: its name (lowercase; empty when longer than any name
    /// told apart), its `name` attribute (`None`: absent; `Some(None)`:
    /// longer than [`MAX_NAME_VALUE`]) and its `content` attribute's terms
    /// (`None`: absent).
    Start { name: &'a [u8], name_attr: Option<Option<&'a [u8]>>, content: Option<&'a mut TermsReader> },
    /// An end tag's name (lowercase; empty when long).
    End { name: &'a [u8] },
}

/// The tokenizer's state between chunks. See the module's notes.
#[derive(Debug, Default)]
pub struct Tokenizer {
    state: State,
    /// The tag being read is an end tag.
    end: bool,
    tag: Short<NAME>,
    attr: Short<8>,
    capture: Capture,
    has_name: bool,
    has_content: bool,
    name_value: Vec<u8>,
    name_over: bool,
    content: TermsReader,
    /// The start tag whose end tag closes RCDATA, RAWTEXT or script data.
    raw: Short<NAME>,
    /// How much of `raw`'s name the end tag being read matched (an
    /// appropriate end tag), or of `script` (double escape); `None`: it differs.
    temp: Option<usize>,
    /// A tag completed by the last byte read.
    token: Option<Done>,
}

impl Tokenizer {
    /// A tokenizer at a document's start.
    pub fn new() -> Tokenizer {
        Tokenizer::default()
    }

    /// Whether the rest of the document is text (`<plaintext>`).
    pub fn is_plaintext(&self) -> bool {
        self.state == State::PlainText
    }

    /// Read `data`, reporting each tag completed in it to `on`, until `on`
    /// returns `false` (then the rest is not read).
    pub fn feed(&mut self, data: &[u8], on: &mut impl FnMut(Token<'_>) -> bool) {
        let mut i = 0;
        while i < data.len() {
            // Runs that cannot change the state, skipped whole.
            let skip_to = |needles: &[u8], i: usize| -> usize {
                let rest = &data[i..];
                let found = match needles {
                    [a] => memchr::memchr(*a, rest),
                    [a, b] => memchr::memchr2(*a, *b, rest),
                    _ => None,
                };
                found.map_or(data.len(), |at| i + at)
            };
            i = match self.state {
                State::Data | State::RawText | State::ScriptData => skip_to(b"<", i),
                State::Comment => skip_to(b"-", i),
                State::BogusComment => skip_to(b">", i),
                State::ScriptDataEscaped | State::ScriptDataDoubleEscaped => skip_to(b"-<", i),
                State::PlainText => return,
                _ => i,
            };
            let Some(&b) = data.get(i) else { return };
            // `false`: the byte is to be read again in the new state.
            let consumed = self.step(b);
            if consumed {
                i += 1;
            }
            if let Some(token) = self.token.take() {
                if !self.emit(token, on) {
                    return;
                }
            }
        }
    }
}

/// A tag completed by the last byte.
#[derive(Debug, Clone, Copy)]
enum Done {
    Start,
    End,
}

impl Tokenizer {
    fn emit(&mut self, done: Done, on: &mut impl FnMut(Token<'_>) -> bool) -> bool {
        match done {
            Done::End => on(Token::End { name: self.tag.get() }),
            Done::Start => {
                let name_attr = self.has_name.then(|| (!self.name_over).then_some(&self.name_value[..]));
                let content = if self.has_content { Some(&mut self.content) } else { None };
                on(Token::Start { name: self.tag.get(), name_attr, content })
            }
        }
    }
}
