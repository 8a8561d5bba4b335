//! Bounded line reading for the log readers: violation logs ([`crate::report`])
//! and access logs ([`crate::accesslog`]) read their input through the same
//! [`LineReader`], optionally behind [`decoder`] for gzip-rotated files.
//!
//! No line costs more memory than its cap, whatever the input holds.

use std::io::{self, BufRead, BufReader, Cursor, Read};

/// The longest line read (1 MiB); longer lines are counted as malformed.
///
/// A record is a few hundred bytes; the proxy caps the User-Agent and path it
/// logs well below this.
pub const MAX_LINE: usize = 1 << 20;

/// Malformed lines whose number and reason are kept for the summary.
pub const MALFORMED_SAMPLES: usize = 5;

/// Wraps `r` in a gzip decoder when its first bytes are the gzip magic
/// (`1f 8b`); otherwise returns it as it is.
///
/// Concatenated gzip members (as `cat a.gz b.gz` or some log rotators
/// produce) are all read. Nothing is consumed from a plain input.
///
/// # Errors
///
/// The error of the first read from `r`, if any. A corrupt gzip stream shows
/// up later, as an error of the returned reader.
pub fn decoder<R: BufRead + Send + 'static>(mut r: R) -> io::Result<Box<dyn BufRead + Send>> {
    const MAGIC: [u8; 2] = [0x1f, 0x8b];
    let head = loop {
        match r.fill_buf() {
            Ok(b) => break b,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    };
    if head.len() >= 2 {
        return Ok(if head[..2] == MAGIC {
            Box::new(BufReader::new(flate2::bufread::MultiGzDecoder::new(r)))
        } else {
            Box::new(r)
        });
    }
    if head.is_empty() {
        return Ok(Box::new(r));
    }
    // A short first read (a pipe, say): take up to two bytes out of `r` and
    // put them back in front of it.
    let mut prefix = Vec::with_capacity(2);
    r.by_ref().take(2).read_to_end(&mut prefix)?;
    let joined = Cursor::new(prefix.clone()).chain(r);
    Ok(if prefix == MAGIC {
        Box::new(BufReader::new(flate2::bufread::MultiGzDecoder::new(joined)))
    } else {
        Box::new(joined)
    })
}

/// A skipped line: where, and why (a short reason, at most 100 bytes).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct MalformedLine {
    /// 1-based line number in its input.
    pub line: u64,
    /// Why it was skipped.
    pub reason: String,
}

/// The lines an input had that were neither records, overflow lines nor blank.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Malformed {
    /// How many.
    pub count: u64,
    /// The first [`MALFORMED_SAMPLES`] of them.
    pub samples: Vec<MalformedLine>,
}

impl Malformed {
    /// Counts line `line` as malformed, keeping `reason` (cut to 100 bytes)
    /// among the first [`MALFORMED_SAMPLES`].
    pub fn note(&mut self, line: u64, reason: impl FnOnce() -> String) {
        self.count += 1;
        if self.samples.len() < MALFORMED_SAMPLES {
            let mut reason = reason();
            truncate_at_char(&mut reason, 100);
            self.samples.push(MalformedLine { line, reason });
        }
    }
}

/// Cuts `s` to at most `max` bytes, at a character boundary.
pub(crate) fn truncate_at_char(s: &mut String, max: usize) {
    if s.len() > max {
        let mut end = max;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
    }
}

/// One line handed out by [`LineReader::next_line`].
#[derive(Debug)]
pub struct Line<'a> {
    /// 1-based line number in the input.
    pub number: u64,
    /// The line without its `\n` (or `\r\n`), or `Err(max_line)` when it was
    /// longer than the cap and has been skipped unread.
    pub text: Result<&'a [u8], usize>,
}

/// Splits a [`BufRead`] into lines with one reused buffer and a length cap.
///
/// Shared by the violation-log reader and the access-log readers
/// ([`crate::accesslog`]). A line longer than the cap is consumed without
/// being buffered, so memory stays below the cap on any input. Bytes are not
/// checked for UTF-8: that is up to the line's parser.
pub struct LineReader<R> {
    inner: R,
    pub(crate) buf: Vec<u8>,
    line: u64,
    max_line: usize,
}

impl<R: BufRead> LineReader<R> {
    /// A line reader of `inner` that skips lines longer than `max_line` bytes.
    pub fn new(inner: R, max_line: usize) -> LineReader<R> {
        LineReader { inner, buf: Vec::with_capacity(1024), line: 0, max_line }
    }

    /// Lines read so far.
    pub fn line_number(&self) -> u64 {
        self.line
    }

    /// The next line, or `None` at the end of the input.
    ///
    /// Cost: one `memchr` pass over the line and one copy into the buffer
    /// (none beyond the cap).
    ///
    /// # Errors
    ///
    /// Errors of the underlying reader (`Interrupted` is retried).
    pub fn next_line(&mut self) -> io::Result<Option<Line<'_>>> {
        let LineReader { inner, buf, max_line, .. } = self;
        buf.clear();
        let mut any = false;
        let mut too_long = false;
        loop {
            let avail = match inner.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if avail.is_empty() {
                if !any {
                    return Ok(None);
                }
                break;
            }
            any = true;
            let (chunk, used, done) = match memchr::memchr(b'\n', avail) {
                Some(i) => (&avail[..i], i + 1, true),
                None => (avail, avail.len(), false),
            };
            if !too_long {
                if buf.len() + chunk.len() > *max_line {
                    too_long = true;
                    buf.clear();
                } else {
                    buf.extend_from_slice(chunk);
                }
            }
            inner.consume(used);
            if done {
                break;
            }
        }
        self.line += 1;
        let text = if too_long {
            Err(self.max_line)
        } else {
            let b: &[u8] = &self.buf;
            Ok(b.strip_suffix(b"\r").unwrap_or(b))
        };
        Ok(Some(Line { number: self.line, text }))
    }

    /// The next line that is not blank, with its number, or `None` at the
    /// end of the input. Lines over the cap are noted in `malformed` and
    /// skipped, as are blank ones: what both log readers want.
    ///
    /// # Errors
    ///
    /// Errors of the underlying reader.
    pub fn next_text(&mut self, malformed: &mut Malformed) -> io::Result<Option<(u64, &[u8])>> {
        loop {
            let (number, keep) = match self.next_line()? {
                None => return Ok(None),
                Some(Line { number, text: Err(max) }) => {
                    malformed.note(number, || format!("line longer than {max} bytes"));
                    (number, false)
                }
                Some(Line { number, text: Ok(t) }) => (number, !t.iter().all(u8::is_ascii_whitespace)),
            };
            if keep {
                let b: &[u8] = &self.buf;
                return Ok(Some((number, b.strip_suffix(b"\r").unwrap_or(b))));
            }
        }
    }
}
