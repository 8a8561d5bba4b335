//! Aggregation of repeated violations, so a flood cannot fill the disk.
//!
//! The scheme (the server's writer applies it; this module only keeps the table):
//!
//! * The **first** violation of a key (site, client, bot, category, robots.txt
//!   version and line, directive, action) is written at once with `count: 1`,
//!   so an operator tailing the log sees it immediately, and opens a window of
//!   `window` milliseconds for that key.
//! * Repeats inside the window are only counted. When the window closes with
//!   repeats, one record is written: the last repeat's fields, `count` = the
//!   repeats since the previous line, `first` and `last` their times. The
//!   window then stays open for another period, so a sustained flood writes
//!   one line per key per window; a window that closes without repeats ends
//!   the run, and the next violation is again written at once.
//! * Summing `count` over the whole log gives the number of violations: every
//!   violation is counted in exactly one line.
//! * The table is bounded (`max_keys`, and `max_bytes` of stored text): when
//!   it is full a new key is written unaggregated (`count: 1`), not dropped.
//! * [`Aggregator::fold`] is for a line the writer's queue had no room for:
//!   it becomes a repeat of its key (a window is opened for it if needed,
//!   even with aggregation off). When the table is full too, only its time is
//!   kept, in one [`Overflow`] line per window.
//!
//! Times are milliseconds on any monotonic clock the caller chooses; the
//! table never reads a clock. Cost per violation: one hash of the key (the
//! client address and names, tens of bytes, with foldhash and a per-process
//! seed) looked up borrowed, and, for repeats, one record move; a new key
//! copies its strings once.

use std::collections::VecDeque;
use std::hash::{BuildHasher, Hash, Hasher};

use hashbrown::{Equivalent, HashMap};

use super::{Finding, Overflow, Record};

/// A violation's identity for aggregation.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Key {
    site: String,
    client: String,
    bot: Option<String>,
    category: &'static str,
    robots_hash: String,
    line: Option<u32>,
    directive: &'static str,
    action: &'static str,
}

impl Key {
    fn of(r: &Record) -> Key {
        Key {
            site: r.site.clone(),
            client: r.client.clone(),
            bot: r.bot.clone(),
            category: r.category,
            robots_hash: r.robots_hash.clone(),
            line: r.line,
            directive: r.directive,
            action: r.action,
        }
    }

    fn size(&self) -> usize {
        self.site.len() + self.client.len() + self.bot.as_ref().map_or(0, String::len) + self.robots_hash.len() + 64
    }
}

/// A record's [`Key`], borrowed: what a repeat is looked up by, with no
/// copy. Its fields are [`Key`]'s, and both hash alike ([`hash_key`]).
struct KeyRef<'r> {
    site: &'r str,
    client: &'r str,
    bot: Option<&'r str>,
    category: &'static str,
    robots_hash: &'r str,
    line: Option<u32>,
    directive: &'static str,
    action: &'static str,
}

impl<'r> KeyRef<'r> {
    fn of(r: &'r Record) -> KeyRef<'r> {
        KeyRef {
            site: &r.site,
            client: &r.client,
            bot: r.bot.as_deref(),
            category: r.category,
            robots_hash: &r.robots_hash,
            line: r.line,
            directive: r.directive,
            action: r.action,
        }
    }
}

/// What a [`Key`] is hashed by: the fields that differ between the keys of
/// one site and snapshot (the client, the robot, the line). Equal keys hash
/// alike; the rest is compared on a match. Hashing every field cost each
/// refusal more than its lookup.
fn hash_key<H: Hasher>(client: &str, bot: Option<&str>, line: Option<u32>, state: &mut H) {
    client.hash(state);
    bot.hash(state);
    line.hash(state);
}

impl Hash for Key {
    fn hash<H: Hasher>(&self, state: &mut H) {
        hash_key(&self.client, self.bot.as_deref(), self.line, state);
    }
}

impl Hash for KeyRef<'_> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        hash_key(self.client, self.bot, self.line, state);
    }
}

impl Equivalent<Key> for KeyRef<'_> {
    fn equivalent(&self, k: &Key) -> bool {
        // The static names first: one text is one address, mostly.
        self.line == k.line
            && same(self.category, k.category)
            && same(self.directive, k.directive)
            && same(self.action, k.action)
            && self.client == k.client
            && self.bot == k.bot.as_deref()
            && self.site == k.site
            && self.robots_hash == k.robots_hash
    }
}

/// Two static names alike: the same address, or else the same text.
fn same(a: &'static str, b: &'static str) -> bool {
    std::ptr::eq(a, b) || a == b
}

/// An open window.
#[derive(Debug)]
struct Open {
    /// When the window closes.
    deadline: u64,
    /// Repeats not yet written.
    count: u64,
    /// Time of the first of them.
    first: Option<String>,
    /// The last of them.
    last: Option<Record>,
}

/// A line to write: a record, or the tally of violations kept only as a count.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(untagged)]
// A line is made once per written record and moved straight to the writer:
// boxing the record would add an allocation per violation for nothing.
#[allow(clippy::large_enum_variant)]
pub enum Line {
    /// A record (`count` 1, or an aggregate).
    Record(Record),
    /// Violations the full table could not key.
    Overflow(Overflow),
    /// Not a violation: something noticed (counts none).
    Finding(Finding),
}

impl Line {
    /// Violations this line stands for.
    pub fn count(&self) -> u64 {
        match self {
            Line::Record(r) => r.count,
            Line::Overflow(o) => o.count,
            Line::Finding(_) => 0,
        }
    }
}

/// What [`Aggregator::offer`] decided.
#[derive(Debug, PartialEq, Eq)]
#[allow(clippy::large_enum_variant)] // as for `Line`: one per offered record, moved once
pub enum Offer {
    /// Write this record now (`count` 1).
    Write(Record),
    /// Counted as a repeat; a later window close writes it.
    Absorbed,
}

/// Where [`Aggregator::fold`] put a violation.
#[derive(Debug, PartialEq, Eq)]
pub enum Folded {
    /// Kept as a repeat of its key.
    Kept,
    /// The table is full: only counted, in the next [`Overflow`] line.
    Counted,
}

/// The aggregation table. Not thread-safe by itself; the server keeps it behind a lock.
#[derive(Debug)]
pub struct Aggregator {
    window: u64,
    fold_window: u64,
    max_keys: usize,
    max_bytes: usize,
    bytes: usize,
    open: HashMap<Key, Open>,
    /// Deadlines in the order windows were opened; an entry whose window was
    /// renewed has a later deadline further back (stale ones are skipped).
    due: VecDeque<(u64, Key)>,
    overflow: Option<Overflow>,
}

/// The window used for folded lines when aggregation is off (milliseconds).
pub const FOLD_WINDOW: u64 = 1_000;

impl Aggregator {
    /// A table that aggregates repeats within `window` milliseconds (0: off,
    /// every violation is its own line unless the queue is full), holding at
    /// most `max_keys` keys and about `max_bytes` of stored records.
    pub fn new(window: u64, max_keys: usize, max_bytes: usize) -> Aggregator {
        Aggregator {
            window,
            fold_window: if window == 0 { FOLD_WINDOW } else { window },
            max_keys,
            max_bytes,
            bytes: 0,
            open: HashMap::new(),
            due: VecDeque::new(),
            overflow: None,
        }
    }

    /// Keys with an open window.
    pub fn len(&self) -> usize {
        self.open.len()
    }

    /// Whether no window is open.
    pub fn is_empty(&self) -> bool {
        self.open.is_empty()
    }

    /// A violation happened at `now`: write it, or count it as a repeat.
    pub fn offer(&mut self, record: Record, now: u64) -> Offer {
        if let Some(open) = self.open.get_mut(&KeyRef::of(&record)) {
            if self.window > 0 {
                absorb(open, record, &mut self.bytes);
                return Offer::Absorbed;
            }
            return Offer::Write(record);
        }
        let key = Key::of(&record);
        if self.window > 0 && self.has_room(&key) {
            self.insert(key, now + self.window, None);
        }
        Offer::Write(record)
    }

    /// [`Aggregator::offer`] of a scratch record, one its caller writes
    /// whole before each offer: a repeat is exchanged with the one its
    /// window keeps (no copy, no allocation; `record` then holds that older
    /// repeat's fields), and only a record to write is cloned.
    pub fn offer_scratch(&mut self, record: &mut Record, now: u64) -> Offer {
        if self.window > 0 {
            if let Some(open) = self.open.get_mut(&KeyRef::of(record)) {
                open.count += 1;
                if open.first.is_none() {
                    open.first = Some(record.time.clone());
                }
                self.bytes += record_size(record);
                match open.last.as_mut() {
                    Some(old) => {
                        self.bytes -= record_size(old);
                        std::mem::swap(old, record);
                    }
                    None => open.last = Some(record.clone()),
                }
                return Offer::Absorbed;
            }
        }
        self.offer(record.clone(), now)
    }

    /// A line for `record` could not be queued: keep it as a repeat to be
    /// written when its window closes, or, with the table full, count it.
    pub fn fold(&mut self, record: Record, now: u64) -> Folded {
        if let Some(open) = self.open.get_mut(&KeyRef::of(&record)) {
            absorb(open, record, &mut self.bytes);
            return Folded::Kept;
        }
        let key = Key::of(&record);
        if self.has_room(&key) {
            self.insert(key, now + self.fold_window, Some(record));
            return Folded::Kept;
        }
        match &mut self.overflow {
            Some(o) => {
                o.count += 1;
                o.last.clone_from(&record.time);
                o.time = record.time;
            }
            None => {
                self.overflow = Some(Overflow {
                    time: record.time.clone(),
                    overflow: true,
                    count: 1,
                    first: record.time.clone(),
                    last: record.time,
                })
            }
        }
        Folded::Counted
    }

    /// Close the windows due by `now`; returns the lines to write.
    pub fn close_due(&mut self, now: u64) -> Vec<Line> {
        let mut out = Vec::new();
        while let Some((deadline, _)) = self.due.front() {
            if *deadline > now {
                break;
            }
            let (deadline, key) = self.due.pop_front().expect("front exists");
            let Some(open) = self.open.get_mut(&key) else { continue };
            if open.deadline != deadline {
                continue; // renewed: a later entry in `due` stands for it
            }
            if open.count > 0 {
                out.push(Line::Record(summary(open, &mut self.bytes)));
                if self.window > 0 {
                    // The run goes on: keep counting into a new window.
                    open.deadline = now + self.window;
                    self.due.push_back((open.deadline, key));
                    continue;
                }
            }
            self.bytes -= key.size();
            self.open.remove(&key);
        }
        out.extend(self.overflow.take().map(Line::Overflow));
        out
    }

    /// Close every window (shutdown): the lines of all pending repeats.
    pub fn drain(&mut self) -> Vec<Line> {
        let mut out = Vec::new();
        for (_, key) in std::mem::take(&mut self.due) {
            let Some(mut open) = self.open.remove(&key) else { continue };
            if open.count > 0 {
                out.push(Line::Record(summary(&mut open, &mut self.bytes)));
            }
        }
        self.open.clear();
        self.bytes = 0;
        out.extend(self.overflow.take().map(Line::Overflow));
        out
    }

    fn has_room(&self, key: &Key) -> bool {
        self.open.len() < self.max_keys && self.bytes + key.size() <= self.max_bytes
    }

    fn insert(&mut self, key: Key, deadline: u64, record: Option<Record>) {
        let mut open = Open { deadline, count: 0, first: None, last: None };
        self.bytes += key.size();
        if let Some(r) = record {
            absorb(&mut open, r, &mut self.bytes);
        }
        self.due.push_back((deadline, key.clone()));
        self.open.insert(key, open);
    }
}

/// Findings (not violations: [`Finding`]) to write, folded as violations
/// are: a finding's key is its site, kind, page, robot, what the page said
/// and the robots.txt line; within one window of `window` milliseconds the
/// first finding of a key is written and its repeats are not (a page that
/// switches its noindex on and off makes one line a window, not one a
/// switch), and at most `cap` findings are written a window, the rest only
/// counted. The table keeps a 64-bit hash per key written in the window
/// (foldhash, seeded per process), so it holds at most `cap` hashes
/// whatever the keys' lengths; a hash collision can only fold a finding
/// into another's line. The caller's clock, as for [`Aggregator`].
#[derive(Debug)]
pub struct FindingFold {
    window: u64,
    cap: usize,
    start: u64,
    keys: hashbrown::HashSet<u64>,
    hasher: foldhash::fast::RandomState,
    held: u64,
}

/// What [`FindingFold::admit`] decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Admitted {
    /// Write the finding.
    pub write: bool,
    /// Findings the window that just closed did not write for its cap (0 mostly).
    pub held: u64,
}

impl FindingFold {
    /// A fold of `window` milliseconds and at most `cap` lines a window.
    pub fn new(window: u64, cap: usize) -> FindingFold {
        FindingFold {
            window: window.max(1),
            cap,
            start: 0,
            keys: hashbrown::HashSet::new(),
            hasher: foldhash::fast::RandomState::default(),
            held: 0,
        }
    }

    /// Whether `f`, noticed at `now`, is to be written.
    pub fn admit(&mut self, f: &Finding, now: u64) -> Admitted {
        let mut held = 0;
        if now >= self.start.saturating_add(self.window) {
            held = std::mem::take(&mut self.held);
            self.keys.clear();
            self.start = now;
        }
        let key = self.hasher.hash_one((&f.site, f.finding, &f.path, &f.robot, &f.said, f.line, &f.pattern));
        let write = if self.keys.contains(&key) {
            false
        } else if self.keys.len() >= self.cap {
            self.held += 1;
            false
        } else {
            self.keys.insert(key);
            true
        };
        Admitted { write, held }
    }
}

fn record_size(r: &Record) -> usize {
    r.time.len()
        + r.site.len()
        + r.client.len()
        + r.method.len()
        + r.path.len()
        + r.host.len()
        + r.user_agent.len()
        + r.bot.as_ref().map_or(0, String::len)
        + r.group.as_ref().map_or(0, String::len)
        + r.pattern.as_ref().map_or(0, String::len)
        + r.robots_hash.len()
}

fn absorb(open: &mut Open, record: Record, bytes: &mut usize) {
    open.count += 1;
    if open.first.is_none() {
        open.first = Some(record.time.clone());
    }
    *bytes += record_size(&record);
    if let Some(old) = open.last.replace(record) {
        *bytes -= record_size(&old);
    }
}

fn summary(open: &mut Open, bytes: &mut usize) -> Record {
    let mut r = open.last.take().expect("a window with repeats holds the last one");
    *bytes -= record_size(&r);
    r.count = std::mem::take(&mut open.count);
    r.first = open.first.take();
    r.last = Some(r.time.clone());
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(client: &str, line: u32, t: u64) -> Record {
        crate::record::sample(client, "GPTBot", &format!("/private/{t}"), line, format!("t{t}"))
    }

    /// Offering a scratch record writes the same lines as offering by value.
    #[test]
    fn offering_a_scratch_record_writes_what_offering_it_does() {
        let run = |by_ref: bool| {
            let mut a = Aggregator::new(1_000, 100, 1 << 20);
            let mut out = Vec::new();
            for t in 0..50u64 {
                let mut r = rec(&format!("10.0.0.{}", t % 3), 7 + (t % 2) as u32, t * 100);
                r.user_agent = format!("GPTBot/{t}");
                let offered = if by_ref { a.offer_scratch(&mut r, t * 100) } else { a.offer(r, t * 100) };
                if let Offer::Write(w) = offered {
                    out.push(Line::Record(w));
                }
                out.extend(a.close_due(t * 100));
            }
            out.extend(a.drain());
            out
        };
        let (by_value, by_ref) = (run(false), run(true));
        assert!(by_value.len() > 6);
        assert_eq!(by_value, by_ref);
    }

    fn records(lines: &[Line]) -> Vec<&Record> {
        lines.iter().filter_map(|l| if let Line::Record(r) = l { Some(r) } else { None }).collect()
    }

    #[test]
    fn first_is_written_at_once_repeats_when_the_window_closes() {
        let mut a = Aggregator::new(10_000, 100, usize::MAX);
        assert!(matches!(a.offer(rec("1.1.1.1", 2, 0), 0), Offer::Write(r) if r.count == 1));
        for t in 1..=5 {
            assert_eq!(a.offer(rec("1.1.1.1", 2, t), t), Offer::Absorbed);
        }
        assert!(a.close_due(9_999).is_empty(), "window still open");
        let lines = a.close_due(10_000);
        let r = records(&lines);
        assert_eq!(r.len(), 1);
        assert_eq!((r[0].count, r[0].first.as_deref(), r[0].last.as_deref()), (5, Some("t1"), Some("t5")));
        assert_eq!(r[0].path, "/private/5", "the last repeat's fields");
        assert_eq!(r[0].time, "t5");
    }

    #[test]
    fn a_sustained_flood_writes_one_line_per_window_and_a_quiet_window_ends_the_run() {
        let mut a = Aggregator::new(1_000, 100, usize::MAX);
        let mut written = Vec::new();
        for t in 0..5_000u64 {
            if let Offer::Write(r) = a.offer(rec("c", 2, t), t) {
                written.push(Line::Record(r));
            }
            written.extend(a.close_due(t));
        }
        // t = 0 at once, then one summary per second (closing at 1000 .. 4000).
        assert_eq!(written.len(), 5, "{written:#?}");
        written.extend(a.close_due(5_000)); // repeats 4001..4999
        assert_eq!(written.len(), 6);
        assert!(a.close_due(6_000).is_empty(), "no repeats: the run ends");
        assert!(a.is_empty());
        assert_eq!(written.iter().map(Line::count).sum::<u64>(), 5_000);
        // A new run starts with a line at once.
        assert!(matches!(a.offer(rec("c", 2, 7_000), 7_000), Offer::Write(_)));
    }

    #[test]
    fn keys_differ_by_client_line_and_action() {
        let mut a = Aggregator::new(1_000, 100, usize::MAX);
        assert!(matches!(a.offer(rec("a", 2, 0), 0), Offer::Write(_)));
        assert!(matches!(a.offer(rec("b", 2, 0), 0), Offer::Write(_)));
        assert!(matches!(a.offer(rec("a", 3, 0), 0), Offer::Write(_)));
        let mut log = rec("a", 2, 0);
        log.action = "log";
        assert!(matches!(a.offer(log, 0), Offer::Write(_)));
        assert_eq!(a.offer(rec("a", 2, 1), 1), Offer::Absorbed, "same path or not, same key");
        assert_eq!(a.len(), 4);
    }

    #[test]
    fn window_zero_writes_every_violation() {
        let mut a = Aggregator::new(0, 100, usize::MAX);
        for t in 0..10 {
            assert!(matches!(a.offer(rec("c", 2, t), t), Offer::Write(_)));
        }
        assert!(a.is_empty());
        assert!(a.drain().is_empty());
    }

    #[test]
    fn a_full_table_writes_new_keys_unaggregated() {
        let mut a = Aggregator::new(1_000, 2, usize::MAX);
        let mut writes = 0;
        for t in 0..100u64 {
            for c in ["a", "b", "c"] {
                if matches!(a.offer(rec(c, 2, t), t), Offer::Write(_)) {
                    writes += 1;
                }
            }
        }
        assert_eq!(a.len(), 2);
        assert_eq!(writes, 2 + 100, "a and b once, c every time");
        let lines = a.drain();
        assert_eq!(writes + lines.iter().map(Line::count).sum::<u64>(), 300);
    }

    #[test]
    fn the_byte_bound_counts_too() {
        let mut a = Aggregator::new(1_000, 1_000, 200);
        for c in 0..10 {
            a.offer(rec(&c.to_string(), 2, 0), 0);
        }
        assert!(a.len() < 10, "{}", a.len());
    }

    #[test]
    fn folded_lines_are_written_later_and_overflow_is_counted() {
        // Aggregation off: a full queue still folds, for FOLD_WINDOW.
        let mut a = Aggregator::new(0, 1, usize::MAX);
        assert_eq!(a.fold(rec("a", 2, 0), 0), Folded::Kept);
        assert_eq!(a.fold(rec("a", 2, 1), 1), Folded::Kept);
        assert_eq!(a.fold(rec("b", 2, 2), 2), Folded::Counted, "table full");
        assert_eq!(a.fold(rec("c", 2, 3), 3), Folded::Counted);
        assert!(matches!(a.offer(rec("a", 2, 4), 4), Offer::Write(_)), "aggregation off: room means a line");
        let lines = a.close_due(FOLD_WINDOW);
        assert_eq!(lines.len(), 2, "{lines:#?}");
        assert_eq!(lines[0].count(), 2);
        assert_eq!(
            lines[1],
            Line::Overflow(Overflow {
                time: "t3".into(),
                overflow: true,
                count: 2,
                first: "t2".into(),
                last: "t3".into()
            })
        );
        assert!(a.is_empty(), "aggregation off: folded windows are not renewed");
    }

    #[test]
    fn drain_writes_every_pending_repeat_and_the_sum_holds() {
        let mut a = Aggregator::new(10_000, 3, usize::MAX);
        let mut written = 0u64;
        let mut n = 0u64;
        for t in 0..1_000u64 {
            let r = rec(&(t % 5).to_string(), (t % 2) as u32, t);
            n += 1;
            if t % 7 == 0 {
                a.fold(r, t); // a full queue: written by a later close
            } else if let Offer::Write(_) = a.offer(r, t) {
                written += 1;
            }
            written += a.close_due(t).iter().map(Line::count).sum::<u64>();
        }
        written += a.drain().iter().map(Line::count).sum::<u64>();
        assert!(a.is_empty());
        assert_eq!(written, n);
    }
    fn finding(path: &str, said: &str) -> Finding {
        Finding {
            time: "t".into(),
            site: "s".into(),
            finding: Finding::HIDDEN_NOINDEX,
            path: path.into(),
            robot: "*".into(),
            said: said.into(),
            line: 2,
            pattern: "/private/".into(),
        }
    }

    #[test]
    fn findings_fold_once_per_key_per_window_with_a_cap() {
        let mut f = FindingFold::new(1_000, 3);
        assert!(f.admit(&finding("/private/a", "robots: noindex"), 0).write);
        // The same page saying the same: folded, however often.
        for t in 1..500 {
            assert!(!f.admit(&finding("/private/a", "robots: noindex"), t).write);
        }
        // A change is a new key.
        assert!(f.admit(&finding("/private/a", "robots: none"), 500).write);
        assert!(f.admit(&finding("/private/b", "robots: noindex"), 501).write);
        // The cap: a fourth key in the window is held, and counted.
        assert!(!f.admit(&finding("/private/c", "robots: noindex"), 502).write);
        assert!(!f.admit(&finding("/private/d", "robots: noindex"), 503).write);
        // The next window writes each key once more, and says what the last held.
        let next = f.admit(&finding("/private/a", "robots: noindex"), 1_000);
        assert_eq!(next, Admitted { write: true, held: 2 });
        assert!(f.admit(&finding("/private/c", "robots: noindex"), 1_001).write);
        assert!(!f.admit(&finding("/private/a", "robots: noindex"), 1_999).write);
    }
}
