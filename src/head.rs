//! What an HTTP/1 request head may carry that an edge in front lets through
//! and robotgate's own HTTP reader (Pingora's, on httparse) refuses: a
//! control byte in a field value, and more field lines than it reads.
//!
//! Why it matters: behind nginx's `auth_request`, Caddy's `forward_auth` or
//! Traefik's `forwardAuth`, the edge copies the client's header fields into
//! its question to robotgate. nginx accepts any byte but NUL, CR and LF in a
//! value, and any number of fields; Pingora answers such a question `400`
//! before robotgate sees it, without robotgate's `X-Robotgate-Status`, and
//! the shipped nginx snippet read that as "robotgate is down" and let the
//! request through (issue 52: `User-Agent: ExampleCrawler/1.0\x7f` got the
//! disallowed page). A request robotgate cannot read must be refused by
//! robotgate, with a record, not by a parser that leaves no trace.
//!
//! So the connection adapter (`server::http::conn`) runs every HTTP/1 head
//! through a [`HeadScrub`] as it is read, before Pingora parses it:
//!
//! * a control byte in a field value (RFC 9110 5.5: `field-vchar` and
//!   spaces only) becomes a space;
//! * the field lines after the first [`MAX_FIELDS`] are joined to the value
//!   of the line before (their line endings become spaces), but for up to
//!   [`MAX_KEPT_PAST`] whose names robotgate reads (the User-Agent, what
//!   names the client, an edge's facts), so the head parses with fewer
//!   fields than Pingora reads, and the record still says who sent it.
//!
//! The head keeps its length, and the request is marked [`Unreadable`]:
//! every host refuses a marked request (`400`, with a record), whatever it
//! would have decided, so what the scrub changed is never acted on. A head
//! with nothing to scrub passes byte for byte.
//!
//! Cost: a chunk with nothing to change and far from the field limit (the
//! usual head) is looked at in wide registers and by its line feeds only:
//! about 1,700 instructions for a 391-byte browser head (callgrind), 0.15 µs.
//! Otherwise one pass, byte by byte; no allocation. A
//! line ending that a later line may have to join is held back until the
//! next byte shows whether it does ([`HeadScrub::feed`]): at most 3 bytes.

/// The field lines a head keeps; those after are joined to the last one.
/// Below Pingora's 256 (`MAX_HEADERS`), which answers more with a bare 400.
pub const MAX_FIELDS: usize = 200;

/// Why a request head could not be read as sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unreadable {
    /// A field value held a control byte (other than horizontal tab).
    ControlByte,
    /// More than [`MAX_FIELDS`] field lines.
    TooManyFields,
}

impl Unreadable {
    /// The name in records and metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            Unreadable::ControlByte => "control-byte",
            Unreadable::TooManyFields => "too-many-fields",
        }
    }

    /// What a client is told, in the body of its `400`.
    pub fn explain(self) -> &'static str {
        match self {
            Unreadable::ControlByte => "a header field value holds a control character (RFC 9110 5.5)",
            Unreadable::TooManyFields => "the request has too many header fields",
        }
    }

    /// As a byte, for an atomic; 0 is none.
    pub fn to_byte(this: Option<Unreadable>) -> u8 {
        match this {
            None => 0,
            Some(Unreadable::ControlByte) => 1,
            Some(Unreadable::TooManyFields) => 2,
        }
    }

    /// From [`Unreadable::to_byte`].
    pub fn from_byte(b: u8) -> Option<Unreadable> {
        match b {
            1 => Some(Unreadable::ControlByte),
            2 => Some(Unreadable::TooManyFields),
            _ => None,
        }
    }
}

/// Field lines past [`MAX_FIELDS`] that are kept all the same: those whose
/// names robotgate reads ([`is_read`]), so a client's padding cannot push
/// the User-Agent, or the fields an edge appends after the client's
/// (Caddy's `X-Forwarded-For`), into another field's value; and the line
/// after each of those, which would otherwise be joined to it and change
/// its value (the lines after that one join it). Pingora reads 256.
pub const MAX_KEPT_PAST: usize = 50;

/// The longest field name looked at past the limit; a longer one is joined.
const NAME_MAX: usize = 40;

/// The most bytes [`HeadScrub::feed`] holds back: a line ending (CR LF, or
/// up to 3 line-ending bytes) and the next line's name, up to [`NAME_MAX`].
pub const HOLD_MAX: usize = 3 + NAME_MAX;

/// Whether robotgate reads field `name` (lowercase): the User-Agent, the
/// host, what names the client, the facts an edge writes and their
/// competitors (`crate::net::edge`), and signatures.
fn is_read(name: &[u8]) -> bool {
    const EXACT: [&[u8]; 5] = [b"user-agent", b"host", b"forwarded", b"x-real-ip", b"x-host"];
    const PREFIX: [&[u8]; 6] =
        [b"x-forwarded-", b"x-original-", b"signature", b"x-http-method", b"x-method-", b"x-rewrite-"];
    EXACT.contains(&name) || PREFIX.iter().any(|p| name.starts_with(p)) || name == b"x-scheme"
}

/// Where the scrub stands in a head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct State {
    /// Lines ended so far (0 while the request line is read).
    lines: usize,
    /// Field lines kept (not joined to another).
    fields: usize,
    /// Of those, kept past [`MAX_FIELDS`].
    kept_past: usize,
    /// The last line was kept past the limit for its name: the next one is
    /// kept too rather than joined to it, which would change its value.
    after_read: bool,
    /// No byte of the current line but line-ending ones yet.
    line_start: bool,
    /// Past the `:` of a field line (or in a joined line).
    in_value: bool,
    /// A line past the limit whose name is being read, to keep or join it.
    naming: bool,
    /// Its name so far, lowercase.
    name: [u8; NAME_MAX],
    name_len: usize,
    /// The head's empty line has been read.
    done: bool,
}

/// A request head's scrub, fed the head's bytes as they are read. See the
/// module documentation.
#[derive(Debug, Clone)]
pub struct HeadScrub {
    state: State,
    found: Option<Unreadable>,
}

impl Default for HeadScrub {
    fn default() -> Self {
        HeadScrub::new()
    }
}

/// A byte RFC 9110 5.5 does not allow in a field value: a control other
/// than HTAB, and DEL. CR and LF end the line before this is asked.
fn is_control(b: u8) -> bool {
    (b < 0x20 && b != b'\t') || b == 0x7f
}

/// How many bytes at the start of `bytes` need no look: none is a control,
/// DEL or `:`. Eight at a time (the usual head is such bytes, a few
/// hundred of them): a word with none of them is passed whole.
fn plain_run(bytes: &[u8]) -> usize {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    // Whether any byte of `w` is zero (exact, for the whole word).
    let has_zero = |w: u64| w.wrapping_sub(ONES) & !w & HIGHS != 0;
    let mut i = 0;
    while let Some(word) = bytes.get(i..i + 8) {
        let w = u64::from_ne_bytes(word.try_into().expect("eight bytes"));
        // A byte below 0x20 (for bytes below 0x80; those above are text).
        let below = w.wrapping_sub(ONES * 0x20) & !w & HIGHS != 0;
        if below || has_zero(w ^ (ONES * 0x7f)) || has_zero(w ^ (ONES * u64::from(b':'))) {
            break;
        }
        i += 8;
    }
    i + bytes[i..].iter().position(|&b| b < 0x20 || b == 0x7f || b == b':').unwrap_or(bytes.len() - i)
}

impl HeadScrub {
    /// The scrub of a new head.
    pub fn new() -> HeadScrub {
        HeadScrub {
            state: State {
                lines: 0,
                fields: 0,
                kept_past: 0,
                after_read: false,
                line_start: true,
                in_value: false,
                naming: false,
                name: [0; NAME_MAX],
                name_len: 0,
                done: false,
            },
            found: None,
        }
    }

    /// Start over, for the connection's next head.
    pub fn restart(&mut self) {
        *self = HeadScrub::new();
    }

    /// The head's empty line has been read: the bytes after it are not
    /// the head's (a body, or the next request).
    pub fn is_done(&self) -> bool {
        self.state.done
    }

    /// What the head held, so far.
    pub fn unreadable(&self) -> Option<Unreadable> {
        self.found
    }

    /// Scrub `chunk`, the head's next bytes, in place. Returns how many
    /// bytes at the end of it the caller must hold back and give again at
    /// the front of the next chunk (at most [`HOLD_MAX`]: past the field
    /// limit, a line ending and as much of the next line's name as came,
    /// until its `:` tells whether that line is kept or joined to the one
    /// before); the rest is scrubbed for good. Bytes after the head's end
    /// are left alone.
    pub fn feed(&mut self, chunk: &mut [u8]) -> usize {
        if self.fast(chunk) {
            return 0;
        }
        self.feed_bytes(chunk)
    }

    /// The usual chunk, in a few instructions a byte: no control byte but
    /// HTAB, CR and LF, and far from the field limit. Nothing in it is
    /// changed; only its line feeds are looked at, to count lines and find
    /// the head's end. `false`: the chunk needs [`HeadScrub::feed_bytes`].
    fn fast(&mut self, chunk: &[u8]) -> bool {
        let s = &mut self.state;
        if s.naming || s.done {
            return false;
        }
        // (A chunk of n bytes holds at most n lines.)
        if s.fields + chunk.len() + 1 >= MAX_FIELDS
            && s.fields + memchr::memchr_iter(b'\n', chunk).count() + 1 >= MAX_FIELDS
        {
            return false;
        }
        // Branch-free over the whole chunk, so the compiler can do it in
        // wide registers.
        let bad = chunk
            .iter()
            .fold(false, |bad, &b| bad | ((b < 0x20) & (b != b'\t') & (b != b'\r') & (b != b'\n')) | (b == 0x7f));
        if bad {
            return false;
        }
        let mut start = 0;
        for lf in memchr::memchr_iter(b'\n', chunk) {
            // The line this LF ends: empty when nothing but CRs came since
            // the last LF (or the head's start).
            let blank = (start > 0 || s.line_start) && chunk[start..lf].iter().all(|&b| b == b'\r');
            if blank {
                if s.lines > 0 {
                    // The head's end: the bytes after it are not the head's.
                    s.done = true;
                    return true;
                }
            } else {
                s.lines += 1;
            }
            s.line_start = true;
            s.in_value = false;
            start = lf + 1;
        }
        let rest = &chunk[start..];
        if rest.iter().any(|&b| b != b'\r') {
            s.line_start = false;
            if rest.contains(&b':') {
                s.in_value = true;
            }
        }
        // Under the limit every line after the request line is a field,
        // counted from its first byte.
        s.fields = s.lines.saturating_sub(1) + usize::from(s.lines > 0 && !s.line_start);
        true
    }

    fn feed_bytes(&mut self, chunk: &mut [u8]) -> usize {
        // Past the limit: where the last line ending began in `chunk`, and
        // the state before it, to hand it back undone while the next line
        // is undecided.
        let mut ending: Option<(usize, State)> = None;
        // Where the line being named began.
        let mut line_at = 0;
        let mut i = 0;
        while i < chunk.len() && !self.state.done {
            // The usual bytes (inside a line: a name, a value, the request
            // line) in one tight scan, to the next byte that matters.
            if !self.state.naming && !self.state.line_start {
                let skip = plain_run(&chunk[i..]);
                if skip > 0 {
                    i += skip;
                    ending = None;
                    continue;
                }
            }
            let b = chunk[i];
            if self.state.naming {
                let s = &mut self.state;
                let read = b == b':' && is_read(&s.name[..s.name_len]);
                let decided = match b {
                    b':' | b'\r' | b'\n' => Some(read || s.after_read),
                    _ if s.name_len == NAME_MAX => Some(s.after_read),
                    _ => {
                        s.name[s.name_len] = b.to_ascii_lowercase();
                        s.name_len += 1;
                        None
                    }
                };
                match decided {
                    None => {
                        i += 1;
                        continue;
                    }
                    Some(keep) => {
                        let keep = keep && s.kept_past < MAX_KEPT_PAST;
                        s.naming = false;
                        s.after_read = keep && read;
                        self.found.get_or_insert(Unreadable::TooManyFields);
                        if keep {
                            s.kept_past += 1;
                            s.fields += 1;
                        } else if let Some((at, _)) = ending {
                            // Joined to the line before: its ending becomes spaces.
                            chunk[at..line_at].fill(b' ');
                            s.in_value = true;
                        }
                        ending = None;
                    }
                }
            }
            let s = &mut self.state;
            match b {
                b'\r' | b'\n' => {
                    if ending.is_none() && s.lines > 0 && s.fields >= MAX_FIELDS {
                        ending = Some((i, *s));
                    } else if ending.is_some_and(|(at, _)| i - at >= 3) {
                        // More line-ending bytes than CR LF and an empty
                        // line's CR (bare CRs, which httparse refuses
                        // anyway): no line is joined across them.
                        ending = None;
                    }
                    if b == b'\n' {
                        if s.line_start {
                            // An empty line: the head's end, or a blank
                            // before the request line (RFC 9112 2.2).
                            if s.lines > 0 {
                                s.done = true;
                            }
                            ending = None;
                        } else {
                            s.lines += 1;
                            s.line_start = true;
                            s.in_value = false;
                        }
                    }
                }
                _ => {
                    let first = s.line_start && s.lines > 0;
                    s.line_start = false;
                    if first {
                        // The first byte of a field line.
                        if s.fields < MAX_FIELDS {
                            s.fields += 1;
                            ending = None;
                        } else {
                            // Past the limit: kept or joined by its name.
                            s.naming = true;
                            s.name_len = 0;
                            line_at = i;
                            continue;
                        }
                    } else {
                        ending = None;
                    }
                    if s.lines > 0 {
                        if s.in_value {
                            if is_control(b) {
                                chunk[i] = b' ';
                                self.found.get_or_insert(Unreadable::ControlByte);
                            }
                        } else if b == b':' {
                            s.in_value = true;
                        }
                    }
                }
            }
            i += 1;
        }
        // A line ending at the end of the chunk, or the name after it, when
        // the next line may be joined to this one: held back until known.
        match ending {
            Some((at, before)) if !self.state.done && chunk.len() - at <= HOLD_MAX => {
                self.state = before;
                chunk.len() - at
            }
            _ => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feed `head` in pieces of `step` bytes, holding back as asked.
    fn scrub(head: &[u8], step: usize) -> (Vec<u8>, Option<Unreadable>, bool) {
        scrub_with(head, step, HeadScrub::feed)
    }

    /// As [`scrub`], with `feed` for [`HeadScrub::feed`].
    fn scrub_with(
        head: &[u8],
        step: usize,
        feed: fn(&mut HeadScrub, &mut [u8]) -> usize,
    ) -> (Vec<u8>, Option<Unreadable>, bool) {
        let mut s = HeadScrub::new();
        let (mut out, mut held) = (Vec::new(), Vec::new());
        for piece in head.chunks(step.max(1)) {
            let mut chunk = std::mem::take(&mut held);
            chunk.extend_from_slice(piece);
            let hold = feed(&mut s, &mut chunk);
            assert!(hold <= HOLD_MAX, "holds {hold}");
            held = chunk.split_off(chunk.len() - hold);
            out.extend_from_slice(&chunk);
        }
        out.extend_from_slice(&held);
        (out, s.unreadable(), s.is_done())
    }

    fn head_with(fields: &[String]) -> Vec<u8> {
        let mut h = b"GET /private/x HTTP/1.1\r\nHost: shop.example\r\n".to_vec();
        for f in fields {
            h.extend_from_slice(f.as_bytes());
            h.extend_from_slice(b"\r\n");
        }
        h.extend_from_slice(b"\r\n");
        h
    }

    fn parses(head: &[u8]) -> Option<usize> {
        let mut headers = [httparse::EMPTY_HEADER; 256];
        let mut req = httparse::Request::new(&mut headers);
        match req.parse(head) {
            Ok(httparse::Status::Complete(_)) => Some(req.headers.len()),
            _ => None,
        }
    }

    #[test]
    fn plain_runs_stop_at_the_first_byte_that_matters() {
        for special in [0u8, 0x01, b'\t', b'\r', b'\n', 0x1f, 0x7f, b':'] {
            for at in 0..20 {
                let mut bytes = vec![b'a'; 20];
                bytes[5..9].copy_from_slice(&[0x80, 0xff, 0xe9, 0x7e]);
                bytes[at] = special;
                assert_eq!(plain_run(&bytes), at, "{special:#x} at {at}");
            }
        }
        assert_eq!(plain_run(&[0x80, 0xff, b' ', b'~', 0x20, 0x7e, 0xc3, 0xa9, b'x']), 9);
        assert_eq!(plain_run(b""), 0);
    }

    #[test]
    fn a_usual_head_passes_byte_for_byte() {
        let head = head_with(&["User-Agent: Mozilla/5.0 (X11; Linux x86_64)\tFirefox/140.0".into()]);
        for step in [1, 2, 3, 7, head.len()] {
            let (out, found, done) = scrub(&head, step);
            assert_eq!(out, head);
            assert_eq!(found, None);
            assert!(done);
        }
    }

    #[test]
    fn a_control_byte_in_any_value_is_marked_and_made_a_space() {
        for bad in ["User-Agent: ExampleCrawler/1.0\x7f", "X-Foo: a\x01b", "Cookie: a=\x0bb", "X: \x00"] {
            let head = head_with(&[bad.to_owned()]);
            assert_eq!(parses(&head), None, "httparse refuses {bad:?}");
            for step in [1, 5, head.len()] {
                let (out, found, _) = scrub(&head, step);
                assert_eq!(found, Some(Unreadable::ControlByte), "{bad:?}");
                assert_eq!(out.len(), head.len());
                assert_eq!(parses(&out), Some(2), "{bad:?} scrubbed: {:?}", String::from_utf8_lossy(&out));
            }
        }
    }

    #[test]
    fn the_body_after_the_head_is_left_alone() {
        let mut head = head_with(&[]);
        head.extend_from_slice(b"\x01\x7f\r\n\r\n");
        let (out, found, done) = scrub(&head, 4);
        assert_eq!(out, head);
        assert_eq!((found, done), (None, true));
    }

    #[test]
    fn fields_past_the_limit_join_the_line_before() {
        let mut fields: Vec<String> = (0..300).map(|i| format!("X-F{i}: v")).collect();
        fields.push("User-Agent: ExampleCrawler/1.0".into());
        let head = head_with(&fields);
        assert_eq!(parses(&head), None, "more than httparse's 256");
        for step in [1, 2, 3, 64, head.len()] {
            let (out, found, done) = scrub(&head, step);
            assert!(done);
            assert_eq!(found, Some(Unreadable::TooManyFields), "step {step}");
            assert_eq!(out.len(), head.len());
            assert_eq!(parses(&out), Some(MAX_FIELDS + 1), "step {step}: the User-Agent kept");
        }
        // The names robotgate reads stay fields of their own, up to a bound.
        let mut fields: Vec<String> = (0..300).map(|i| format!("X-F{i}: v")).collect();
        fields.push("user-Agent: ExampleCrawler/1.0".into());
        fields.push("X-Forwarded-For: 192.0.2.7".into());
        fields.push("Connection: close".into());
        fields.push("X-After: 1".into());
        let head = head_with(&fields);
        for step in [1, 7, head.len()] {
            let (out, found, _) = scrub(&head, step);
            assert_eq!(found, Some(Unreadable::TooManyFields));
            let mut headers = [httparse::EMPTY_HEADER; 256];
            let mut req = httparse::Request::new(&mut headers);
            assert!(matches!(req.parse(&out), Ok(httparse::Status::Complete(_))));
            let value = |n: &str| req.headers.iter().find(|h| h.name.eq_ignore_ascii_case(n)).map(|h| h.value);
            assert_eq!(value("user-agent"), Some(&b"ExampleCrawler/1.0"[..]), "step {step}");
            assert_eq!(value("x-forwarded-for"), Some(&b"192.0.2.7"[..]), "step {step}");
            assert_eq!(value("connection"), Some(&b"close  X-After: 1"[..]), "step {step}: joined to the unread line");
            assert_eq!(req.headers.len(), MAX_FIELDS + 3);
        }
        let many_uas: Vec<String> = (0..300).map(|i| format!("User-Agent: u{i}")).collect();
        let (out, _, _) = scrub(&head_with(&many_uas), 3);
        assert_eq!(parses(&out), Some(MAX_FIELDS + MAX_KEPT_PAST), "the kept ones are bounded");
        // At the limit exactly, nothing changes.
        let fields: Vec<String> = (0..MAX_FIELDS - 1).map(|i| format!("X-F{i}: v")).collect();
        let head = head_with(&fields);
        let (out, found, _) = scrub(&head, 1);
        assert_eq!((out, found), (head, None));
    }

    #[test]
    fn bare_line_feeds_and_blank_lines_before_the_request() {
        let head = b"\r\nGET / HTTP/1.1\nHost: a\nX: b\x02\n\n".to_vec();
        let (out, found, done) = scrub(&head, 1);
        assert_eq!((found, done), (Some(Unreadable::ControlByte), true));
        assert_eq!(&out[..], &b"\r\nGET / HTTP/1.1\nHost: a\nX: b \n\n"[..]);
    }

    /// The scrub with the byte-by-byte path only.
    fn scrub_slowly(head: &[u8], step: usize) -> (Vec<u8>, Option<Unreadable>, bool) {
        scrub_with(head, step, HeadScrub::feed_bytes)
    }

    proptest::proptest! {
        /// The fast path leaves every head as the byte-by-byte one does,
        /// whatever the pieces: heads of lines of text, CRs, LFs, colons and
        /// now and then a control byte, long enough to reach the limit.
        #[test]
        fn the_fast_path_reads_as_the_slow_one(
            lines in proptest::collection::vec(proptest::collection::vec(proptest::sample::select(
                vec![b'a', b':', b' ', b'\r', b'\t', 0x7f, 0x01, b'U']), 0..6), 0..260),
            step in 1usize..300,
            blank_first in proptest::bool::ANY,
        ) {
            let mut head = if blank_first { b"\r\n".to_vec() } else { Vec::new() };
            head.extend_from_slice(b"GET / HTTP/1.1\r\n");
            for l in &lines {
                head.extend_from_slice(l);
                head.push(b'\n');
            }
            head.extend_from_slice(b"\r\nbody\x01\r\n\r\n");
            proptest::prop_assert_eq!(scrub(&head, step), scrub_slowly(&head, step));
            proptest::prop_assert_eq!(scrub(&head, head.len()), scrub_slowly(&head, 1));
        }

        /// Any bytes, in any pieces: never a panic, the length kept, at
        /// most HOLD_MAX bytes held, and nothing changed but in a marked head.
        #[test]
        fn any_bytes_any_pieces(head in proptest::collection::vec(proptest::num::u8::ANY, 0..600), step in 1usize..40) {
            let (out, found, done) = scrub(&head, step);
            proptest::prop_assert_eq!(out.len(), head.len());
            proptest::prop_assert_eq!((&out, found, done), (&scrub(&head, head.len()).0, found, done), "cut every {} bytes", step);
            if found.is_none() {
                proptest::prop_assert_eq!(out, head);
            }
        }

        /// A head of readable lines with control bytes and too many fields
        /// anywhere in its values: scrubbed, httparse reads it.
        #[test]
        fn scrubbed_heads_parse(
            values in proptest::collection::vec(proptest::collection::vec(proptest::sample::select(
                vec![b'a', b' ', b'\t', 0x01, 0x0b, 0x1f, 0x7f, 0x00, 0xe9, b':']), 1..12), 0..400),
            step in 1usize..50,
        ) {
            let fields: Vec<String> = Vec::new();
            let mut head = head_with(&fields);
            head.truncate(head.len() - 2);
            for (i, v) in values.iter().enumerate() {
                head.extend_from_slice(format!("X-{i}: ").as_bytes());
                head.extend_from_slice(v);
                head.extend_from_slice(b"\r\n");
            }
            head.extend_from_slice(b"\r\n");
            let (out, _, done) = scrub(&head, step);
            proptest::prop_assert!(done);
            proptest::prop_assert!(parses(&out).is_some(), "{:?}", String::from_utf8_lossy(&out));
        }
    }
}
