//! Writing a [`Summary`] out: [`text`] for a terminal, [`json`] for
//! programs, [`html`] for a browser (one self-contained file).
//!
//! Every renderer works from the sorted [`Report`] of the summary, so the
//! three show the same numbers. Strings from the log (User-Agents, paths,
//! bot names a client announced) are hostile input: each renderer escapes
//! them for its medium.

pub mod html;
pub mod json;
pub mod markup;
pub mod status;
pub mod text;

use std::borrow::Cow;
use std::io::{self, Write};

use super::{Report, Summary};

/// An output format of `robotgate report`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// A terminal table, about 100 columns wide.
    Text,
    /// One JSON document (the [`Report`]).
    Json,
    /// One self-contained HTML page with inline SVG charts.
    Html,
}

impl Format {
    /// Parses `text`, `json` or `html`.
    pub fn from_name(name: &str) -> Option<Format> {
        match name {
            "text" => Some(Format::Text),
            "json" => Some(Format::Json),
            "html" => Some(Format::Html),
            _ => None,
        }
    }
}

/// Writes `summary` to `out` in `format`.
///
/// # Errors
///
/// Errors of `out`.
pub fn render(summary: &Summary, format: Format, out: &mut impl Write) -> io::Result<()> {
    write_report(&Report::from_summary(summary), format, out)
}

/// Writes an already built `report` to `out` in `format` (`robotgate
/// replay` adds its own part to the report first).
///
/// # Errors
///
/// Errors of `out`.
pub fn write_report(report: &Report, format: Format, out: &mut impl Write) -> io::Result<()> {
    match format {
        Format::Text => text::write(report, out),
        Format::Json => json::write(report, out),
        Format::Html => html::write(report, out),
    }
}

/// `n` with thousands separators: `1,234,567`.
pub(crate) fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `YYYY-MM-DD HH:MM` of an RFC 3339 time; other strings as they are.
pub(crate) fn short_time(t: &str) -> Cow<'_, str> {
    let b = t.as_bytes();
    if b.len() >= 16 && b[4] == b'-' && matches!(b[10], b'T' | b't') && b[13] == b':' && t.is_char_boundary(16) {
        Cow::Owned(format!("{} {}", &t[..10], &t[11..16]))
    } else {
        Cow::Borrowed(t)
    }
}

/// Whether `c` reorders or hides text in a terminal or a browser: the
/// Unicode bidirectional controls ("Trojan Source", CVE-2021-42574) and
/// zero-width marks.
pub(crate) fn is_invisible_control(c: char) -> bool {
    matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{FEFF}')
}
