//! The tokenizer's states and its step function: one byte in one state,
//! and what a step does to the tag being read (its name, the attributes
//! kept, the tree builder's switch at its end).

use super::{Capture, Done, Tokenizer, MAX_NAME_VALUE};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) enum State {
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

fn is_space(b: u8) -> bool {
    matches!(b, b'\t' | b'\n' | b'\x0c' | b'\r' | b' ')
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
    pub(super) fn step(&mut self, b: u8) -> bool {
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
