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

use super::terms::TermsReader;

/// The longest tag name told apart (`plaintext`); a longer one is "other".
const NAME: usize = 16;

/// The longest `name` attribute value kept (a robot's token); a longer one is "too long".
pub const MAX_NAME_VALUE: usize = 64;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum State {
    #[default]
    Data,
    TagOpen,
    EndTagOpen,
    TagName,
    BeforeAttrName,
    AttrName,
    AfterAttrName,
    BeforeAttrValue,
    AttrValueDouble,
    AttrValueSingle,
    AttrValueUnquoted,
    AfterAttrValueQuoted,
    SelfClosingStartTag,
    MarkupDeclarationOpen,
    MarkupDeclarationDash,
    BogusComment,
    CommentStart,
    CommentStartDash,
    Comment,
    CommentEndDash,
    CommentEnd,
    CommentEndBang,
    /// RCDATA and RAWTEXT (character references aside, the same).
    RawText,
    RawTextLessThan,
    RawTextEndTagOpen,
    RawTextEndTagName,
    ScriptData,
    ScriptDataLessThan,
    ScriptDataEndTagOpen,
    ScriptDataEndTagName,
    ScriptDataEscapeStart,
    ScriptDataEscapeStartDash,
    ScriptDataEscaped,
    ScriptDataEscapedDash,
    ScriptDataEscapedDashDash,
    ScriptDataEscapedLessThan,
    ScriptDataEscapedEndTagOpen,
    ScriptDataEscapedEndTagName,
    ScriptDataDoubleEscapeStart,
    ScriptDataDoubleEscaped,
    ScriptDataDoubleEscapedDash,
    ScriptDataDoubleEscapedDashDash,
    ScriptDataDoubleEscapedLessThan,
    ScriptDataDoubleEscapeEnd,
    /// `plaintext`: the rest is text; nothing more to read.
    PlainText,
}

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

fn is_space(b: u8) -> bool {
    matches!(b, b'\t' | b'\n' | b'\x0c' | b'\r' | b' ')
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
    fn new_tag(&mut self, end: bool) {
        self.end = end;
        self.tag.clear();
        self.has_name = false;
        self.has_content = false;
        self.name_value.clear();
        self.name_over = false;
        self.content.clear();
        self.capture = Capture::None;
    }

    fn new_attr(&mut self) {
        self.attr.clear();
        self.capture = Capture::None;
    }

    /// The attribute's name is read: decide whether its value is kept.
    fn attr_named(&mut self) {
        self.capture = Capture::None;
        if self.end {
            return;
        }
        if self.attr.is(b"name") && !self.has_name {
            self.has_name = true;
            self.capture = Capture::Name;
        } else if self.attr.is(b"content") && !self.has_content {
            self.has_content = true;
            self.capture = Capture::Content;
        }
    }

    fn value_byte(&mut self, b: u8) {
        match self.capture {
            Capture::None => {}
            Capture::Name => {
                if self.name_value.len() < MAX_NAME_VALUE {
                    self.name_value.push(b);
                } else {
                    self.name_over = true;
                }
            }
            Capture::Content => self.content.push(b),
        }
    }

    fn value_end(&mut self) {
        if self.capture == Capture::Content {
            self.content.end_term();
        }
        self.capture = Capture::None;
    }

    fn tag_done(&mut self) -> Option<Done> {
        self.value_end();
        self.state = State::Data;
        if self.end {
            return Some(Done::End);
        }
        // The tree builder's switches, by name.
        let name = self.tag.get();
        let next = match name {
            b"title" | b"textarea" | b"style" | b"xmp" | b"iframe" | b"noembed" | b"noframes" | b"noscript" => {
                State::RawText
            }
            b"script" => State::ScriptData,
            b"plaintext" => State::PlainText,
            _ => State::Data,
        };
        if next != State::Data {
            self.raw = self.tag;
        }
        self.state = next;
        Some(Done::Start)
    }

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

    /// The end tag being read in RCDATA, RAWTEXT or script data, one more letter.
    fn temp_push(&mut self, b: u8, expected: &[u8]) {
        self.temp = match self.temp {
            Some(n) if expected.get(n) == Some(&b.to_ascii_lowercase()) => Some(n + 1),
            _ => None,
        };
    }

    fn temp_is(&self, expected: &[u8]) -> bool {
        self.temp == Some(expected.len())
    }
}

// The step function, apart for its length: one byte in one state.
impl Tokenizer {
    /// Read `b`; returns whether it was consumed (`false`: read it again
    /// in the new state). A completed tag is left in `self.token`.
    fn step(&mut self, b: u8) -> bool {
        use State as S;
        match self.state {
            S::Data => {
                if b == b'<' {
                    self.state = S::TagOpen;
                }
            }
            S::TagOpen => match b {
                b'!' => self.state = S::MarkupDeclarationOpen,
                b'/' => self.state = S::EndTagOpen,
                b'?' => self.state = S::BogusComment,
                _ if b.is_ascii_alphabetic() => {
                    self.new_tag(false);
                    self.state = S::TagName;
                    return false;
                }
                _ => {
                    self.state = S::Data;
                    return false;
                }
            },
            S::EndTagOpen => match b {
                b'>' => self.state = S::Data,
                _ if b.is_ascii_alphabetic() => {
                    self.new_tag(true);
                    self.state = S::TagName;
                    return false;
                }
                _ => {
                    self.state = S::BogusComment;
                    return false;
                }
            },
            S::TagName => match b {
                _ if is_space(b) => self.state = S::BeforeAttrName,
                b'/' => self.state = S::SelfClosingStartTag,
                b'>' => self.token = self.tag_done(),
                _ => self.tag.push(b),
            },
            S::BeforeAttrName => match b {
                _ if is_space(b) => {}
                b'/' | b'>' => {
                    self.state = S::AfterAttrName;
                    return false;
                }
                b'=' => {
                    self.new_attr();
                    self.attr.push(b);
                    self.state = S::AttrName;
                }
                _ => {
                    self.new_attr();
                    self.state = S::AttrName;
                    return false;
                }
            },
            S::AttrName => match b {
                _ if is_space(b) || b == b'/' || b == b'>' => {
                    self.attr_named();
                    self.state = S::AfterAttrName;
                    return false;
                }
                b'=' => {
                    self.attr_named();
                    self.state = S::BeforeAttrValue;
                }
                _ => self.attr.push(b),
            },
            S::AfterAttrName => match b {
                _ if is_space(b) => {}
                b'/' => self.state = S::SelfClosingStartTag,
                b'=' => self.state = S::BeforeAttrValue,
                b'>' => self.token = self.tag_done(),
                _ => {
                    self.new_attr();
                    self.state = S::AttrName;
                    return false;
                }
            },
            S::BeforeAttrValue => match b {
                _ if is_space(b) => {}
                b'"' => self.state = S::AttrValueDouble,
                b'\'' => self.state = S::AttrValueSingle,
                b'>' => self.token = self.tag_done(),
                _ => {
                    self.state = S::AttrValueUnquoted;
                    return false;
                }
            },
            S::AttrValueDouble | S::AttrValueSingle => {
                let quote = if self.state == S::AttrValueDouble { b'"' } else { b'\'' };
                if b == quote {
                    self.value_end();
                    self.state = S::AfterAttrValueQuoted;
                } else {
                    self.value_byte(b);
                }
            }
            S::AttrValueUnquoted => match b {
                _ if is_space(b) => {
                    self.value_end();
                    self.state = S::BeforeAttrName;
                }
                b'>' => self.token = self.tag_done(),
                _ => self.value_byte(b),
            },
            S::AfterAttrValueQuoted => match b {
                _ if is_space(b) => self.state = S::BeforeAttrName,
                b'/' => self.state = S::SelfClosingStartTag,
                b'>' => self.token = self.tag_done(),
                _ => {
                    self.state = S::BeforeAttrName;
                    return false;
                }
            },
            S::SelfClosingStartTag => match b {
                b'>' => self.token = self.tag_done(),
                _ => {
                    self.state = S::BeforeAttrName;
                    return false;
                }
            },
            // `<!`: `--` opens a comment; anything else (DOCTYPE, CDATA in
            // HTML content) is a bogus comment, to the first `>`.
            S::MarkupDeclarationOpen => {
                if b == b'-' {
                    self.state = S::MarkupDeclarationDash;
                } else {
                    self.state = S::BogusComment;
                    return false;
                }
            }
            S::MarkupDeclarationDash => {
                if b == b'-' {
                    self.state = S::CommentStart;
                } else {
                    self.state = S::BogusComment;
                    return false;
                }
            }
            S::BogusComment => {
                if b == b'>' {
                    self.state = S::Data;
                }
            }
            S::CommentStart => match b {
                b'-' => self.state = S::CommentStartDash,
                b'>' => self.state = S::Data,
                _ => {
                    self.state = S::Comment;
                    return false;
                }
            },
            S::CommentStartDash => match b {
                b'-' => self.state = S::CommentEnd,
                b'>' => self.state = S::Data,
                _ => {
                    self.state = S::Comment;
                    return false;
                }
            },
            // The comment less-than sign states only report nested comments:
            // where a comment ends is the same without them.
            S::Comment => {
                if b == b'-' {
                    self.state = S::CommentEndDash;
                }
            }
            S::CommentEndDash => {
                if b == b'-' {
                    self.state = S::CommentEnd;
                } else {
                    self.state = S::Comment;
                    return false;
                }
            }
            S::CommentEnd => match b {
                b'>' => self.state = S::Data,
                b'!' => self.state = S::CommentEndBang,
                b'-' => {}
                _ => {
                    self.state = S::Comment;
                    return false;
                }
            },
            S::CommentEndBang => match b {
                b'-' => self.state = S::CommentEndDash,
                b'>' => self.state = S::Data,
                _ => {
                    self.state = S::Comment;
                    return false;
                }
            },
            S::RawText => {
                if b == b'<' {
                    self.state = S::RawTextLessThan;
                }
            }
            S::RawTextLessThan => {
                if b == b'/' {
                    self.state = S::RawTextEndTagOpen;
                } else {
                    self.state = S::RawText;
                    return false;
                }
            }
            S::RawTextEndTagOpen | S::ScriptDataEndTagOpen | S::ScriptDataEscapedEndTagOpen => {
                let (name, back) = match self.state {
                    S::RawTextEndTagOpen => (S::RawTextEndTagName, S::RawText),
                    S::ScriptDataEndTagOpen => (S::ScriptDataEndTagName, S::ScriptData),
                    _ => (S::ScriptDataEscapedEndTagName, S::ScriptDataEscaped),
                };
                if b.is_ascii_alphabetic() {
                    self.new_tag(true);
                    self.temp = Some(0);
                    self.state = name;
                } else {
                    self.state = back;
                }
                return false;
            }
            S::RawTextEndTagName | S::ScriptDataEndTagName | S::ScriptDataEscapedEndTagName => {
                let raw = self.raw;
                let (expected, back): (&[u8], State) = match self.state {
                    S::RawTextEndTagName => (raw.get(), S::RawText),
                    S::ScriptDataEndTagName => (b"script", S::ScriptData),
                    _ => (b"script", S::ScriptDataEscaped),
                };
                // An appropriate end tag: the open element's own name.
                let appropriate = !expected.is_empty() && self.temp_is(expected);
                match b {
                    _ if is_space(b) && appropriate => self.state = S::BeforeAttrName,
                    b'/' if appropriate => self.state = S::SelfClosingStartTag,
                    b'>' if appropriate => self.token = self.tag_done(),
                    _ if b.is_ascii_alphabetic() => {
                        self.tag.push(b);
                        self.temp_push(b, expected);
                    }
                    _ => {
                        self.state = back;
                        return false;
                    }
                }
            }
            S::ScriptData => {
                if b == b'<' {
                    self.state = S::ScriptDataLessThan;
                }
            }
            S::ScriptDataLessThan => match b {
                b'/' => self.state = S::ScriptDataEndTagOpen,
                b'!' => self.state = S::ScriptDataEscapeStart,
                _ => {
                    self.state = S::ScriptData;
                    return false;
                }
            },
            S::ScriptDataEscapeStart | S::ScriptDataEscapeStartDash => {
                if b == b'-' {
                    self.state = if self.state == S::ScriptDataEscapeStart {
                        S::ScriptDataEscapeStartDash
                    } else {
                        S::ScriptDataEscapedDashDash
                    };
                } else {
                    self.state = S::ScriptData;
                    return false;
                }
            }
            S::ScriptDataEscaped => match b {
                b'-' => self.state = S::ScriptDataEscapedDash,
                b'<' => self.state = S::ScriptDataEscapedLessThan,
                _ => {}
            },
            S::ScriptDataEscapedDash => match b {
                b'-' => self.state = S::ScriptDataEscapedDashDash,
                b'<' => self.state = S::ScriptDataEscapedLessThan,
                _ => self.state = S::ScriptDataEscaped,
            },
            S::ScriptDataEscapedDashDash => match b {
                b'-' => {}
                b'<' => self.state = S::ScriptDataEscapedLessThan,
                b'>' => self.state = S::ScriptData,
                _ => self.state = S::ScriptDataEscaped,
            },
            S::ScriptDataEscapedLessThan => match b {
                b'/' => self.state = S::ScriptDataEscapedEndTagOpen,
                _ if b.is_ascii_alphabetic() => {
                    self.temp = Some(0);
                    self.state = S::ScriptDataDoubleEscapeStart;
                    return false;
                }
                _ => {
                    self.state = S::ScriptDataEscaped;
                    return false;
                }
            },
            S::ScriptDataDoubleEscapeStart | S::ScriptDataDoubleEscapeEnd => {
                let (matched, other) = if self.state == S::ScriptDataDoubleEscapeStart {
                    (S::ScriptDataDoubleEscaped, S::ScriptDataEscaped)
                } else {
                    (S::ScriptDataEscaped, S::ScriptDataDoubleEscaped)
                };
                match b {
                    _ if is_space(b) || b == b'/' || b == b'>' => {
                        self.state = if self.temp_is(b"script") { matched } else { other };
                    }
                    _ if b.is_ascii_alphabetic() => self.temp_push(b, b"script"),
                    _ => {
                        self.state = other;
                        return false;
                    }
                }
            }
            S::ScriptDataDoubleEscaped => match b {
                b'-' => self.state = S::ScriptDataDoubleEscapedDash,
                b'<' => self.state = S::ScriptDataDoubleEscapedLessThan,
                _ => {}
            },
            S::ScriptDataDoubleEscapedDash => match b {
                b'-' => self.state = S::ScriptDataDoubleEscapedDashDash,
                b'<' => self.state = S::ScriptDataDoubleEscapedLessThan,
                _ => self.state = S::ScriptDataDoubleEscaped,
            },
            S::ScriptDataDoubleEscapedDashDash => match b {
                b'-' => {}
                b'<' => self.state = S::ScriptDataDoubleEscapedLessThan,
                b'>' => self.state = S::ScriptData,
                _ => self.state = S::ScriptDataDoubleEscaped,
            },
            S::ScriptDataDoubleEscapedLessThan => {
                if b == b'/' {
                    self.temp = Some(0);
                    self.state = S::ScriptDataDoubleEscapeEnd;
                } else {
                    self.state = S::ScriptDataDoubleEscaped;
                    return false;
                }
            }
            S::PlainText => {}
        }
        true
    }
}
