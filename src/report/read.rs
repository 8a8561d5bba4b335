//! Streaming reader of violation logs: one JSON line per [`Record`], plus
//! [`Overflow`] lines.
//!
//! The reader keeps one line buffer for the whole input and parses each line
//! into a [`RecordView`] that borrows from it: strings without JSON escapes
//! are not copied, so a typical record costs no allocation. A line longer
//! than [`MAX_LINE`] is skipped without being buffered (it is counted as
//! malformed), so a corrupt or hostile log cannot make the reader hold more
//! than [`MAX_LINE`] bytes.
//!
//! The reader opens no files: the caller passes any [`BufRead`], optionally
//! through [`decoder`] so rotated `.gz` logs read the same as plain ones.
//!
//! [`Record`]: crate::record::Record
//! [`Overflow`]: crate::record::Overflow

use std::borrow::Cow;
use std::io::{self, BufRead};

use serde::{Deserialize, Deserializer};

pub use crate::lines::{decoder, Line, LineReader, Malformed, MalformedLine, MALFORMED_SAMPLES, MAX_LINE};
use crate::record::Record;

/// One violation record as read from the log, borrowing its strings from
/// the reader's line buffer where it can.
///
/// It has the fields of [`Record`] that the report uses, in the log's own
/// types. [`RecordView::from_record`] makes one from an in-memory [`Record`],
/// so `replay` can feed [`super::Summary`] without writing JSON.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RecordView<'a> {
    /// RFC 3339 time of the last violation counted.
    pub time: Cow<'a, str>,
    /// Site name.
    pub site: Cow<'a, str>,
    /// Client address.
    pub client: Cow<'a, str>,
    /// Request method.
    pub method: Cow<'a, str>,
    /// Path and query.
    pub path: Cow<'a, str>,
    /// Host header.
    pub host: Cow<'a, str>,
    /// User-Agent header.
    pub user_agent: Cow<'a, str>,
    /// Bot name (for an unknown robot, the product name its User-Agent announces).
    pub bot: Option<Cow<'a, str>>,
    /// Category (`ai-crawler`, `other-bot`, ...).
    pub category: Cow<'a, str>,
    /// robots.txt group obeyed.
    pub group: Option<Cow<'a, str>>,
    /// What was broken: `disallow`, `crawl-delay`, ...
    pub directive: Cow<'a, str>,
    /// The rule's pattern or value.
    pub pattern: Option<Cow<'a, str>>,
    /// Line in robots.txt.
    pub line: Option<u32>,
    /// Version of the robots.txt in force.
    pub robots_hash: Cow<'a, str>,
    /// The rule broken is one robotgate generated.
    pub managed: bool,
    /// Whether the bot had fetched robots.txt recently.
    pub robots_seen: Option<bool>,
    /// `verified`, `spoofed` or `unverifiable`, for a robot of the database.
    pub identity: Option<Cow<'a, str>>,
    /// Action taken.
    pub action: Cow<'a, str>,
    /// The record's `"evidence": "weak"`: an unknown robot named only by
    /// weak evidence, only recorded under `policy.weak_evidence: log`
    /// (issues #53, #68).
    pub weak_evidence: bool,
    /// The JA4 fingerprint of a disguised robot's connection (issue #67),
    /// read by robotgate or sent by a trusted edge.
    pub ja4: Option<Cow<'a, str>>,
    /// Status returned.
    pub status: u16,
    /// Violations this record stands for.
    pub count: u64,
    /// Time of the first of the `count` violations.
    pub first: Option<Cow<'a, str>>,
    /// Time of the last of the `count` violations.
    pub last: Option<Cow<'a, str>>,
}

impl<'a> RecordView<'a> {
    /// A view of an in-memory record (no copies).
    pub fn from_record(r: &'a Record) -> RecordView<'a> {
        let b = |s: &'a str| Cow::Borrowed(s);
        RecordView {
            time: b(&r.time),
            site: b(&r.site),
            client: b(&r.client),
            method: b(&r.method),
            path: b(&r.path),
            host: b(&r.host),
            user_agent: b(&r.user_agent),
            bot: r.bot.as_deref().map(b),
            category: b(r.category),
            group: r.group.as_deref().map(b),
            directive: b(r.directive),
            pattern: r.pattern.as_deref().map(b),
            line: r.line,
            robots_hash: b(&r.robots_hash),
            managed: r.managed,
            robots_seen: r.robots_seen,
            identity: r.identity.map(b),
            action: b(r.action),
            weak_evidence: r.evidence == Some("weak"),
            ja4: r.ja4.as_deref().map(b),
            status: r.status,
            count: r.count,
            first: r.first.as_deref().map(b),
            last: r.last.as_deref().map(b),
        }
    }

    /// Time of the first violation counted: `first`, else `time`.
    pub fn first_time(&self) -> &str {
        self.first.as_deref().unwrap_or(&self.time)
    }

    /// Time of the last violation counted: `last`, else `time`.
    pub fn last_time(&self) -> &str {
        self.last.as_deref().unwrap_or(&self.time)
    }
}

/// Violations the proxy could only count (see [`crate::record::Overflow`]):
/// they belong to no site or bot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OverflowView<'a> {
    /// RFC 3339 time of the last of them.
    pub time: Cow<'a, str>,
    /// Violations this line stands for.
    pub count: u64,
    /// Time of the first of them.
    pub first: Option<Cow<'a, str>>,
}

/// A finding (see [`crate::record::Finding`]): not a violation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FindingView<'a> {
    /// RFC 3339 time it was noticed.
    pub time: Cow<'a, str>,
    /// Site name.
    pub site: Cow<'a, str>,
    /// What was noticed (`hidden-noindex`).
    pub finding: Cow<'a, str>,
    /// The page's path and query.
    pub path: Cow<'a, str>,
    /// The robot it concerns.
    pub robot: Cow<'a, str>,
    /// What the page said, and to whom.
    pub said: Cow<'a, str>,
    /// The robots.txt line.
    pub line: Option<u32>,
    /// That line's pattern.
    pub pattern: Option<Cow<'a, str>>,
}

/// One good line of the log.
// Handed to a callback by value and dropped; boxing the record would cost
// an allocation per line.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry<'a> {
    /// A violation record.
    Record(RecordView<'a>),
    /// An overflow line.
    Overflow(OverflowView<'a>),
    /// A finding.
    Finding(FindingView<'a>),
}

/// Streaming parser of a violation log.
///
/// [`Reader::for_each_entry`] passes on one good line at a time. Blank lines
/// are skipped; malformed and over-long lines are skipped and counted in
/// [`Reader::malformed`].
///
/// ```
/// use robotgate::report::read::{Entry, Reader};
///
/// let log = "{\"time\":\"2025-01-01T00:00:00Z\",\"site\":\"s\",\"count\":3}\n\nnot json\n";
/// let mut reader = Reader::new(log.as_bytes());
/// let mut n = 0;
/// reader
///     .for_each_entry(|entry| {
///         if let Entry::Record(r) = entry {
///             n += r.count;
///         }
///     })
///     .unwrap();
/// assert_eq!(n, 3);
/// assert_eq!(reader.malformed().count, 1);
/// assert_eq!(reader.malformed().samples[0].line, 3);
/// ```
pub struct Reader<R> {
    lines: LineReader<R>,
    malformed: Malformed,
}

impl<R: BufRead> Reader<R> {
    /// A reader of `inner` with the [`MAX_LINE`] cap.
    pub fn new(inner: R) -> Reader<R> {
        Reader::with_max_line(inner, MAX_LINE)
    }

    /// A reader of `inner` that skips lines longer than `max_line` bytes.
    pub fn with_max_line(inner: R, max_line: usize) -> Reader<R> {
        Reader { lines: LineReader::new(inner, max_line), malformed: Malformed::default() }
    }

    /// The malformed lines seen so far.
    pub fn malformed(&self) -> &Malformed {
        &self.malformed
    }

    /// Lines read so far (including blank and malformed ones).
    pub fn lines(&self) -> u64 {
        self.lines.line_number()
    }

    /// Calls `f` with each record and overflow line, in order, to the end of
    /// the input.
    ///
    /// The entry borrows the reader's line buffer, hence a callback rather
    /// than an [`Iterator`]. Cost per line: one pass to find its end, one to
    /// parse it; no allocation unless a string has JSON escapes (or the line
    /// is malformed and among the first [`MALFORMED_SAMPLES`]).
    ///
    /// # Errors
    ///
    /// Errors of the underlying reader (for a gzip input, a corrupt stream);
    /// the entries before it have been passed to `f`. Bad lines are not errors.
    pub fn for_each_entry(&mut self, mut f: impl FnMut(Entry<'_>)) -> io::Result<()> {
        let Reader { lines, malformed } = self;
        while let Some((number, text)) = lines.next_text(malformed)? {
            match serde_json::from_slice::<Raw<'_>>(text).map_err(|e| e.to_string()).and_then(|raw| raw.check()) {
                Ok(entry) => f(entry),
                Err(reason) => malformed.note(number, || reason),
            }
        }
        Ok(())
    }
}

/// Reads every line of `input` into `summary`, then adds the input's
/// malformed lines to it under the name `source` (a file name, for the
/// summary's list of bad lines).
///
/// # Errors
///
/// Errors of the underlying reader; what was read before one stays in `summary`.
pub fn feed(input: impl BufRead, source: &str, summary: &mut super::Summary) -> io::Result<()> {
    let mut reader = Reader::new(input);
    let result = reader.for_each_entry(|entry| match entry {
        Entry::Record(r) => summary.add(&r),
        Entry::Overflow(o) => summary.add_overflow(&o),
        Entry::Finding(f) => summary.add_finding(&f),
    });
    summary.add_malformed(source, reader.malformed());
    result
}

/// The serde shape of a line: a record or an overflow line. Unknown fields
/// are ignored, so a newer proxy's logs still read.
#[derive(Deserialize)]
struct Raw<'a> {
    #[serde(default, borrow, deserialize_with = "opt_cow")]
    time: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "opt_cow")]
    site: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    client: Cow<'a, str>,
    #[serde(default, borrow)]
    method: Cow<'a, str>,
    #[serde(default, borrow)]
    path: Cow<'a, str>,
    #[serde(default, borrow)]
    host: Cow<'a, str>,
    #[serde(default, borrow)]
    user_agent: Cow<'a, str>,
    #[serde(default, borrow, deserialize_with = "opt_cow")]
    bot: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    category: Cow<'a, str>,
    #[serde(default, borrow, deserialize_with = "opt_cow")]
    group: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    directive: Cow<'a, str>,
    #[serde(default, borrow, deserialize_with = "opt_cow")]
    pattern: Option<Cow<'a, str>>,
    #[serde(default)]
    line: Option<u32>,
    #[serde(default, borrow)]
    robots_hash: Cow<'a, str>,
    #[serde(default)]
    managed: bool,
    #[serde(default)]
    robots_seen: Option<bool>,
    #[serde(default, borrow, deserialize_with = "opt_cow")]
    identity: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    action: Cow<'a, str>,
    #[serde(default, borrow, deserialize_with = "opt_cow")]
    evidence: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "opt_cow")]
    ja4: Option<Cow<'a, str>>,
    #[serde(default)]
    status: u16,
    #[serde(default = "one")]
    count: u64,
    #[serde(default, borrow, deserialize_with = "opt_cow")]
    first: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "opt_cow")]
    last: Option<Cow<'a, str>>,
    #[serde(default)]
    overflow: bool,
    #[serde(default, borrow, deserialize_with = "opt_cow")]
    finding: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    robot: Cow<'a, str>,
    #[serde(default, borrow)]
    said: Cow<'a, str>,
}

fn one() -> u64 {
    1
}

/// `Option<Cow<str>>` that borrows when the JSON string has no escapes
/// (serde's `borrow` alone does not reach inside an `Option`).
fn opt_cow<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Cow<'de, str>>, D::Error> {
    #[derive(Deserialize)]
    struct Borrowed<'a>(#[serde(borrow)] Cow<'a, str>);
    Ok(Option::<Borrowed<'de>>::deserialize(d)?.map(|b| b.0))
}

impl<'a> Raw<'a> {
    /// The entry this line is, or why it is none.
    fn check(self) -> Result<Entry<'a>, String> {
        let time = self.time.ok_or("no `time`")?;
        if self.overflow {
            return Ok(Entry::Overflow(OverflowView { time, count: self.count, first: self.first }));
        }
        let site = self.site.ok_or("no `site`")?;
        if let Some(finding) = self.finding {
            return Ok(Entry::Finding(FindingView {
                time,
                site,
                finding,
                path: self.path,
                robot: self.robot,
                said: self.said,
                line: self.line,
                pattern: self.pattern,
            }));
        }
        Ok(Entry::Record(RecordView {
            time,
            site,
            client: self.client,
            method: self.method,
            path: self.path,
            host: self.host,
            user_agent: self.user_agent,
            bot: self.bot,
            category: self.category,
            group: self.group,
            directive: self.directive,
            pattern: self.pattern,
            line: self.line,
            robots_hash: self.robots_hash,
            managed: self.managed,
            robots_seen: self.robots_seen,
            identity: self.identity,
            action: self.action,
            weak_evidence: self.evidence.as_deref() == Some("weak"),
            ja4: self.ja4,
            status: self.status,
            count: self.count,
            first: self.first,
            last: self.last,
        }))
    }
}

#[cfg(test)]
mod tests {
    use std::io::Cursor;
    use std::io::Write as _;

    use super::*;
    use crate::record::{sample, Overflow, Record};

    fn line(r: &Record) -> String {
        serde_json::to_string(r).unwrap()
    }

    fn read_all(input: impl BufRead, max_line: usize) -> (Vec<String>, u64, Malformed) {
        let mut reader = Reader::with_max_line(input, max_line);
        let mut seen = Vec::new();
        let mut overflow = 0;
        reader
            .for_each_entry(|e| match e {
                Entry::Record(r) => seen.push(format!("{}:{}:{}", r.client, r.path, r.count)),
                Entry::Overflow(o) => overflow += o.count,
                Entry::Finding(_) => {}
            })
            .unwrap();
        (seen, overflow, reader.malformed().clone())
    }

    #[test]
    fn records_round_trip_borrowed() {
        let r = Record {
            identity: Some("spoofed"),
            count: 5,
            ..sample("192.0.2.1", "GPTBot/1.0", "/private/a", 3, "t".into())
        };
        let text = line(&r);
        let mut reader = Reader::new(text.as_bytes());
        let mut n = 0;
        reader
            .for_each_entry(|e| {
                let Entry::Record(v) = e else { panic!("not a record") };
                assert_eq!(v, RecordView::from_record(&r));
                assert!(matches!(v.path, Cow::Borrowed(_)) && matches!(v.bot, Some(Cow::Borrowed(_))));
                n += 1;
            })
            .unwrap();
        assert_eq!(n, 1);
    }

    /// Issue #68: the report says how many violations were only recorded
    /// because their robot was named only by weak evidence, in all and
    /// robot by robot.
    #[test]
    fn issue_68_weak_evidence_is_counted() {
        let weak = Record {
            bot: Some("Zorblax".into()),
            evidence: Some("weak"),
            action: "log",
            count: 4,
            ..sample("192.0.2.1", "Zorblax/3.1", "/private/a", 3, "2026-01-01T00:00:00Z".into())
        };
        let strong = sample("192.0.2.2", "GPTBot/1.0", "/private/b", 3, "2026-01-01T00:00:01Z".into());
        let log = format!("{}\n{}\n", line(&weak), line(&strong));
        let mut summary = crate::report::Summary::new(crate::report::Filter::default());
        feed(log.as_bytes(), "log", &mut summary).unwrap();
        let report = crate::report::Report::from_summary(&summary);
        assert_eq!((report.violations, report.weak_evidence), (5, 4));
        let bots = &report.sites[0].bots;
        let of = |name: &str| bots.iter().find(|b| b.bot == name).map(|b| b.weak_evidence);
        assert_eq!((of("Zorblax"), of("GPTBot")), (Some(4), Some(0)));
        let mut text = Vec::new();
        crate::report::render::render(&summary, crate::report::render::Format::Text, &mut text).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(text.contains("of which 4 only recorded"), "{text}");
        assert!(text.contains("weak evidence 4 (only recorded)"), "{text}");
    }

    /// Issue #67: disguised robots are counted per JA4 fingerprint, site by
    /// site; a fingerprint on another category's record is not.
    #[test]
    fn disguised_robots_are_counted_per_fingerprint() {
        const CURL: &str = "t13d3112h2_e8f1e7e78f70_6bebaf5329ac";
        const REQUESTS: &str = "t13d4907h2_0d8feac7bc37_7395dae3b2f3";
        let disguised = |ja4: Option<&str>, n: u64| Record {
            category: "disguised",
            bot: None,
            ja4: ja4.map(Into::into),
            count: n,
            ..sample("192.0.2.1", "Mozilla/5.0 Chrome/142", "/private/a", 3, "2026-01-01T00:00:00Z".into())
        };
        let other = Record {
            ja4: Some(CURL.into()),
            ..sample("192.0.2.2", "GPTBot/1.0", "/private/b", 3, "2026-01-01T00:00:01Z".into())
        };
        let log: String = [disguised(Some(CURL), 3), disguised(Some(REQUESTS), 1), disguised(Some(CURL), 2)]
            .iter()
            .chain([&disguised(None, 5), &other])
            .map(|r| line(r) + "\n")
            .collect();
        let mut summary = crate::report::Summary::new(crate::report::Filter::default());
        feed(log.as_bytes(), "log", &mut summary).unwrap();
        let report = crate::report::Report::from_summary(&summary);
        let counts: Vec<(&str, u64)> =
            report.sites[0].disguised_fingerprints.iter().map(|f| (f.ja4.as_str(), f.violations)).collect();
        assert_eq!(counts, [(CURL, 5), (REQUESTS, 1)]);
        let mut text = Vec::new();
        crate::report::render::render(&summary, crate::report::render::Format::Text, &mut text).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(text.contains("TLS fingerprints (JA4) of disguised robots"), "{text}");
        assert!(text.contains(&format!("         5  {CURL}")), "{text}");
    }

    #[test]
    fn escaped_strings_are_owned() {
        let r = sample("c", "a\"b\x1b", "/p\n", 1, "t".into());
        let text = line(&r);
        assert_eq!(text.lines().count(), 1);
        Reader::new(text.as_bytes())
            .for_each_entry(|e| {
                let Entry::Record(v) = e else { panic!() };
                assert_eq!(v.user_agent, "a\"b\x1b");
                assert_eq!(v.path, "/p\n");
            })
            .unwrap();
    }

    #[test]
    fn malformed_blank_and_crlf() {
        let good = line(&sample("c", "u", "/p", 1, "t".into()));
        let input = format!(
            "{good}\r\n\n   \n{{\"time\":1}}\nnot json\n{{\"site\":\"s\"}}\n{good}\n@@\n{{}}\n[1]\n{{\"time\":\"t\",\"site\":\"s\",\"count\":-1}}\n{good}"
        );
        let input = input.replace("@@", "\u{1}").into_bytes();
        let input: Vec<u8> = input.into_iter().map(|b| if b == 1 { 0xff } else { b }).collect();
        let (seen, _, m) = read_all(&input[..], MAX_LINE);
        assert_eq!(seen.len(), 3);
        assert_eq!(m.count, 7);
        let lines: Vec<u64> = m.samples.iter().map(|s| s.line).collect();
        assert_eq!(lines, vec![4, 5, 6, 8, 9]);
        assert!(m.samples[2].reason.contains("time"), "{:?}", m.samples[2]);
        assert!(m.samples.iter().all(|s| s.reason.len() <= 100));
    }

    #[test]
    fn over_long_lines_are_skipped_unbuffered() {
        let good = line(&sample("c", "u", "/p", 1, "t".into()));
        let long = format!("{{\"time\":\"t\",\"site\":\"s\",\"path\":\"{}\"}}", "a".repeat(10_000));
        let input = format!("{good}\n{long}\n{good}\n{long}");
        // A tiny BufReader so the long line arrives in many pieces.
        let reader = io::BufReader::with_capacity(16, input.as_bytes());
        let mut r = Reader::with_max_line(reader, 1000);
        let mut n = 0;
        r.for_each_entry(|_| n += 1).unwrap();
        assert_eq!(n, 2);
        assert_eq!(r.malformed().count, 2);
        assert_eq!(r.malformed().samples[0].line, 2);
        assert_eq!(r.malformed().samples[1].line, 4);
        assert!(r.lines.buf.capacity() < 4096, "buffered {}", r.lines.buf.capacity());
    }

    #[test]
    fn overflow_lines() {
        let o = Overflow { time: "t2".into(), overflow: true, count: 40, first: "t1".into(), last: "t2".into() };
        let input =
            format!("{}\n{}\n", serde_json::to_string(&o).unwrap(), line(&sample("c", "u", "/p", 1, "t".into())));
        let (seen, overflow, m) = read_all(input.as_bytes(), MAX_LINE);
        assert_eq!((seen.len(), overflow, m.count), (1, 40, 0));
    }

    #[test]
    fn unknown_fields_ignored_and_count_defaults() {
        let input = "{\"time\":\"t\",\"site\":\"s\",\"new_field\":{\"x\":[1,2]},\"client\":\"c\"}\n";
        let (seen, _, m) = read_all(input.as_bytes(), MAX_LINE);
        assert_eq!(seen, vec!["c::1"]);
        assert_eq!(m.count, 0);
    }

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        enc.write_all(data).unwrap();
        enc.finish().unwrap()
    }

    #[test]
    fn gzip_and_plain_read_the_same() {
        let mut text = String::new();
        for i in 0..1000 {
            text.push_str(&line(&sample(&format!("c{i}"), "u", "/p", 1, "t".into())));
            text.push('\n');
        }
        let (plain, ..) = read_all(decoder(Cursor::new(text.clone().into_bytes())).unwrap(), MAX_LINE);
        let (gz, ..) = read_all(decoder(Cursor::new(gzip(text.as_bytes()))).unwrap(), MAX_LINE);
        assert_eq!(plain.len(), 1000);
        assert_eq!(plain, gz);
        // Two gzip members back to back (concatenated rotations).
        let (half1, half2) = text.split_at(text.len() / 2);
        let mut two = gzip(half1.as_bytes());
        two.extend(gzip(half2.as_bytes()));
        let (multi, ..) = read_all(decoder(Cursor::new(two)).unwrap(), MAX_LINE);
        assert_eq!(multi, plain);
    }

    #[test]
    fn decoder_handles_short_first_reads() {
        let text = line(&sample("c", "u", "/p", 1, "t".into())) + "\n";
        for data in [text.clone().into_bytes(), gzip(text.as_bytes()), Vec::new(), vec![0x1f]] {
            // One byte per read: the magic arrives split.
            let input = io::BufReader::with_capacity(1, Cursor::new(data.clone()));
            let mut out = Vec::new();
            let result = decoder(input).and_then(|mut d| d.read_to_end(&mut out));
            if data.len() > 1 {
                assert_eq!(out, text.as_bytes());
            } else {
                assert_eq!(out, data, "{result:?}");
            }
        }
    }

    #[test]
    fn corrupt_gzip_is_an_error_not_a_panic() {
        let mut data = gzip(b"{\"time\":\"t\",\"site\":\"s\"}\n");
        let n = data.len();
        data[n / 2] ^= 0xff;
        data.truncate(n - 3);
        let mut reader = Reader::new(decoder(Cursor::new(data)).unwrap());
        let _ = reader.for_each_entry(|_| {});
    }

    #[test]
    fn feed_counts_into_summary() {
        let r = Record { count: 5, ..sample("c", "u", "/p", 1, "2025-01-01T00:00:00Z".into()) };
        let input = format!("{}\nbad\n{}\n", line(&r), line(&r));
        let mut s = crate::report::Summary::new(Default::default());
        feed(input.as_bytes(), "a.log", &mut s).unwrap();
        assert_eq!(s.violations(), 10);
        assert_eq!(s.malformed(), 1);
    }
}
