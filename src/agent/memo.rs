//! A classification kept without borrowing, so the same [`Agent`] can be
//! rebuilt for the same User-Agent bytes without classifying again.
//!
//! A keep-alive connection, and a crawler or scraper in a loop, repeat one
//! User-Agent on every request. Classifying a robot's User-Agent costs about
//! 10,000 instructions; rebuilding it from a [`Remembered`] costs a few
//! slices. An [`Agent`] borrows its strings from two places only: the
//! User-Agent itself (an unknown robot's name, announced product tokens) and
//! the classifier's database entry (name, operator, robots.txt tokens).
//! [`Remembered`] names each string by where it came from, so rebuilding is
//! plain safe slicing; a string from anywhere else (none today) means the
//! agent is not remembered, which only costs the next classification.

use super::disguise::{Claim as Claimed, Hints};
use super::{Agent, AgentKind, Category, Claim, Classifier};

/// Where one string of an [`Agent`] came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Text {
    /// Bytes `start..start + len` of the User-Agent.
    Ua { start: u32, len: u32 },
    /// The database entry's name.
    Name,
    /// The database entry's operator.
    Operator,
    /// The database entry's robots.txt token at this index.
    Token(u32),
}

/// An [`Agent`], without its borrows; see the module documentation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Remembered {
    kind: AgentKind,
    category: Category,
    obeys_robots: Option<bool>,
    purposes: super::Purposes,
    name: Option<Text>,
    announced: Option<Text>,
    operator: Option<Text>,
    tokens: Vec<Text>,
    also: Vec<usize>,
    weak_evidence: bool,
}

fn within(s: &str, outer: &[u8]) -> Option<(u32, u32)> {
    let (start, end) = (outer.as_ptr() as usize, outer.as_ptr() as usize + outer.len());
    let p = s.as_ptr() as usize;
    (p >= start && p + s.len() <= end).then(|| ((p - start) as u32, s.len() as u32))
}

fn same(a: &str, b: &str) -> bool {
    a.as_ptr() == b.as_ptr() && a.len() == b.len()
}

impl Remembered {
    /// What `agent`, the classification of `ua` by `classifier`, is made of;
    /// `None` if one of its strings came from somewhere this cannot name.
    pub fn of(agent: &Agent<'_>, ua: &[u8], classifier: &Classifier) -> Option<Remembered> {
        let entry = match agent.kind {
            AgentKind::Known(i) => Some(classifier.bot(i)),
            _ => None,
        };
        let text = |s: &str| -> Option<Text> {
            if let Some((start, len)) = within(s, ua) {
                return Some(Text::Ua { start, len });
            }
            let bot = entry?;
            if same(s, &bot.name) {
                return Some(Text::Name);
            }
            if same(s, &bot.operator) {
                return Some(Text::Operator);
            }
            bot.robots_tokens.iter().position(|t| same(s, t)).map(|i| Text::Token(i as u32))
        };
        let optional = |s: Option<&str>| -> Option<Option<Text>> {
            match s {
                None => Some(None),
                Some(s) => text(s).map(Some),
            }
        };
        Some(Remembered {
            kind: agent.kind,
            category: agent.category,
            obeys_robots: agent.obeys_robots,
            purposes: agent.purposes,
            name: optional(agent.name)?,
            announced: optional(agent.announced)?,
            operator: optional(agent.operator)?,
            tokens: agent.tokens.iter().map(|t| text(t)).collect::<Option<Vec<_>>>()?,
            also: agent.also.iter().map(|c| c.index).collect(),
            weak_evidence: agent.weak_evidence,
        })
    }

    /// The agent again, for the same `ua` bytes and the same `classifier`
    /// it was remembered from (the caller keys on both). Cost: one slice and
    /// a UTF-8 check per string, and the `tokens` vector.
    pub fn recall<'a>(&self, ua: &'a [u8], classifier: &'a Classifier) -> Agent<'a> {
        let entry = match self.kind {
            AgentKind::Known(i) => Some(classifier.bot(i)),
            _ => None,
        };
        let text = |t: &Text| -> &'a str {
            match (*t, entry) {
                (Text::Ua { start, len }, _) => {
                    let bytes = ua.get(start as usize..(start + len) as usize).unwrap_or_default();
                    std::str::from_utf8(bytes).unwrap_or_default()
                }
                (Text::Name, Some(bot)) => &bot.name,
                (Text::Operator, Some(bot)) => &bot.operator,
                (Text::Token(i), Some(bot)) => bot.robots_tokens.get(i as usize).map_or("", String::as_str),
                (_, None) => "",
            }
        };
        Agent {
            kind: self.kind,
            name: self.name.as_ref().map(text),
            announced: self.announced.as_ref().map(text),
            category: self.category,
            // A browser has neither: no collecting for nothing.
            tokens: self.tokens.iter().map(text).collect(),
            obeys_robots: self.obeys_robots,
            purposes: self.purposes,
            operator: self.operator.as_ref().map(text),
            also: if self.also.is_empty() {
                Vec::new()
            } else {
                self.also.iter().map(|&i| Claim::of(i, classifier.bot(i))).collect()
            },
            ignores: entry.map_or(super::Ignored::NONE, |bot| super::Ignored::of(&bot.extensions)),
            weak_evidence: self.weak_evidence,
            disguise: super::disguise::Findings::NONE,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recalling_gives_the_same_agent_for_robots_libraries_and_browsers() {
        let classifier = Classifier::builtin();
        let uas: &[&[u8]] = &[
            b"Mozilla/5.0 (compatible; GPTBot/1.2; +https://openai.com/gptbot)",
            b"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
            b"Mozilla/5.0 (compatible; SomeNewCrawler/0.3; +https://crawler.example/)",
            b"python-requests/2.31.0",
            b"curl/8.5.0 PHP-Curl-Class/9.0",
            b"",
            b"Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0",
            b"\xff\xfe bot \x00",
            b"Mozilla/5.0 (compatible; GPTBot/1.2) Perplexity-User/1.0 Claude-User/1.0",
        ];
        for ua in uas {
            let agent = classifier.classify(ua);
            let kept = Remembered::of(&agent, ua, &classifier).expect("every string has a known home");
            assert_eq!(kept.recall(ua, &classifier), agent, "{}", String::from_utf8_lossy(ua));
        }
    }
}

/// User-Agents longer than this are classified every time, not remembered.
pub const MEMO_MAX_UA: usize = 512;

/// Verdicts remembered by User-Agent bytes and classifier ([`Classifier::id`]),
/// in a fixed number of direct-mapped slots: the one memo every caller
/// classifies through (the proxy keeps [`HERE_SLOTS`] per thread,
/// [`classify_here`]; replay a few thousand per worker, since logs
/// interleave clients). A reload brings a new classifier, hence misses.
pub struct Memo {
    slots: Vec<Slot>,
    /// The slot of the last hit: a connection's requests come in runs, and
    /// comparing with it first spares the hash.
    last: usize,
    /// Chooses a slot: foldhash, seeded per memo (a client that makes its
    /// User-Agents collide only costs itself classifications).
    hasher: foldhash::fast::RandomState,
}

#[derive(Default)]
struct Slot {
    classifier: u64,
    ua: Vec<u8>,
    agent: Option<Remembered>,
    /// The browser the User-Agent claims, once it was asked ([`Memo::claim`]).
    claim: Option<Claimed>,
    /// The last `Sec-CH-UA` that came with it, and its reading (`None`:
    /// none kept).
    hints: Vec<u8>,
    hints_read: Option<Hints>,
}

/// The longest `Sec-CH-UA` a slot keeps: Chromium's are under 100 bytes.
const MEMO_MAX_HINTS: usize = 160;

impl Memo {
    /// A memo of `slots` slots (at least one).
    pub fn new(slots: usize) -> Memo {
        Memo { slots: (0..slots.max(1)).map(|_| Slot::default()).collect(), last: 0, hasher: Default::default() }
    }

    /// [`Classifier::classify`], or the remembered verdict of the same bytes
    /// under the same classifier. Cost of a hit: a slot choice (none with
    /// one slot), a byte comparison, then a few slices ([`Remembered::recall`]).
    pub fn classify<'a>(&mut self, classifier: &'a Classifier, ua: &'a [u8]) -> Agent<'a> {
        if let Some(kept) = self.slots[self.last].holding(classifier, ua) {
            return kept.recall(ua, classifier);
        }
        let i = match self.slots.len() {
            1 => 0,
            n => {
                use std::hash::BuildHasher;
                (self.hasher.hash_one(ua) % n as u64) as usize
            }
        };
        self.last = i;
        let slot = &mut self.slots[i];
        if let Some(kept) = slot.holding(classifier, ua) {
            return kept.recall(ua, classifier);
        }
        let agent = classifier.classify(ua);
        if ua.len() <= MEMO_MAX_UA {
            if let Some(kept) = Remembered::of(&agent, ua, classifier) {
                slot.classifier = classifier.id();
                slot.ua.clear();
                slot.ua.extend_from_slice(ua);
                slot.agent = Some(kept);
                slot.claim = None;
                slot.hints_read = None;
            }
        }
        agent
    }

    /// The browser `ua` claims to be ([`super::disguise::Claim::of`]),
    /// kept beside its classification: read once per User-Agent, not once
    /// per request (issue 67: reading it was 4,800 instructions of each
    /// browser's request). Asked right after [`Memo::classify`] of the same
    /// `ua`, so the slot it used is looked at first, without a hash.
    ///
    /// With it, the reading of the `Sec-CH-UA` value `hints` the request
    /// sent ([`Hints::of`]), kept in the same slot while the same value
    /// comes with it (reading it was 1,150 instructions a request).
    pub fn claim(&mut self, classifier: &Classifier, ua: &[u8], hints: Option<&[u8]>) -> (Claimed, Hints) {
        let slot = &mut self.slots[self.last];
        if slot.holding(classifier, ua).is_none() {
            return (Claimed::of(ua), Hints::of(hints));
        }
        let claim = *slot.claim.get_or_insert_with(|| Claimed::of(ua));
        let read = match (hints, slot.hints_read) {
            (None, _) => Hints::Absent,
            (Some(v), Some(kept)) if slot.hints == v => kept,
            (Some(v), _) => {
                let read = Hints::of(Some(v));
                if v.len() <= MEMO_MAX_HINTS {
                    slot.hints.clear();
                    slot.hints.extend_from_slice(v);
                    slot.hints_read = Some(read);
                }
                read
            }
        };
        (claim, read)
    }

    /// Whether `ua` under `classifier` is remembered (tests).
    pub fn remembers(&self, classifier: &Classifier, ua: &[u8]) -> bool {
        self.slots.iter().any(|s| s.holding(classifier, ua).is_some())
    }
}

impl Slot {
    /// What this slot remembers of `ua` under `classifier`, if it does.
    fn holding(&self, classifier: &Classifier, ua: &[u8]) -> Option<&Remembered> {
        (self.classifier == classifier.id() && self.ua == ua).then_some(self.agent.as_ref()).flatten()
    }
}

thread_local! {
    /// A keep-alive connection repeats its User-Agent on every request, and
    /// so does a crawler or a scraper in a loop; a thread serves many such
    /// connections at once, interleaved, so one slot would mostly miss:
    /// [`HERE_SLOTS`] catch them at the cost of a hash and a comparison.
    static HERE: std::cell::RefCell<Memo> = std::cell::RefCell::new(Memo::new(HERE_SLOTS));
}

/// Slots of each thread's memo ([`classify_here`]): a few hundred distinct
/// browsers and robots at once, about 80 KiB.
pub const HERE_SLOTS: usize = 256;

/// Classify through this thread's [`Memo`].
pub fn classify_here<'a>(classifier: &'a Classifier, ua: &'a [u8]) -> Agent<'a> {
    HERE.with_borrow_mut(|memo| memo.classify(classifier, ua))
}

/// [`Memo::claim`] through this thread's memo, after [`classify_here`].
pub fn claim_here(classifier: &Classifier, ua: &[u8], hints: Option<&[u8]>) -> (Claimed, Hints) {
    HERE.with_borrow_mut(|memo| memo.claim(classifier, ua, hints))
}

/// Whether this thread's memo holds `ua` under `classifier` (tests).
pub fn remembered_here(classifier: &Classifier, ua: &[u8]) -> bool {
    HERE.with_borrow(|memo| memo.remembers(classifier, ua))
}

#[cfg(test)]
mod memo_tests {
    use super::*;

    const FIREFOX: &[u8] = b"Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0";
    const GPTBOT: &[u8] = b"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2)";

    #[test]
    fn a_claim_keeps_the_reading_of_its_last_client_hints_and_reads_any_other_value() {
        const CHROME: &[u8] =
            b"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36";
        const HINTS: &[u8] = b"\"Chromium\";v=\"156\", \"Not/A)Brand\";v=\"24\"";
        let c = Classifier::builtin();
        let reads = |read: Hints, major: u32| matches!(read, Hints::Read(b) if b.matches(major));
        for mut memo in [Memo::new(1), Memo::new(8)] {
            assert!(!memo.classify(&c, CHROME).is_bot());
            let (claim, read) = memo.claim(&c, CHROME, Some(HINTS));
            assert_eq!((claim.family, claim.major), (super::super::disguise::Family::Chromium, 156));
            assert!(reads(read, 156) && !reads(read, 155));
            assert!(reads(memo.claim(&c, CHROME, Some(HINTS)).1, 156), "kept");
            let other = memo.claim(&c, CHROME, Some(b"\"Chromium\";v=\"120\"")).1;
            assert!(reads(other, 120) && !reads(other, 156), "another value is read, not recalled");
            assert!(matches!(memo.claim(&c, CHROME, Some(b"Chromium 156")).1, Hints::Malformed));
            assert!(matches!(memo.claim(&c, CHROME, None).1, Hints::Absent));
            let long = [HINTS, b", \"x\";v=\"1\"".repeat(20).as_slice()].concat();
            assert!(matches!(memo.claim(&c, CHROME, Some(&long)).1, Hints::Malformed), "too many members");
            assert!(reads(memo.claim(&c, CHROME, Some(HINTS)).1, 156));
            // Another User-Agent in the slot: nothing of the first is recalled.
            memo.classify(&c, FIREFOX);
            let (claim, read) = memo.claim(&c, FIREFOX, Some(b"\"Chromium\";v=\"120\""));
            assert_eq!(claim.family, super::super::disguise::Family::Gecko);
            assert!(reads(read, 120) && !reads(read, 156));
        }
    }

    #[test]
    fn the_memo_replays_only_the_same_bytes_with_the_same_classifier() {
        let (a, b) = (Classifier::builtin(), Classifier::builtin());
        assert_ne!(a.id(), b.id());
        let mut memo = Memo::new(1);
        assert!(!memo.remembers(&a, FIREFOX), "nothing remembered yet");
        assert!(!memo.classify(&a, FIREFOX).is_bot());
        assert!(memo.remembers(&a, FIREFOX));
        assert!(!memo.remembers(&b, FIREFOX), "another classifier");
        assert!(!memo.remembers(&a, &FIREFOX[..FIREFOX.len() - 1]), "other bytes");
        let first = memo.classify(&a, GPTBOT);
        assert!(first.is_bot());
        assert!(memo.remembers(&a, GPTBOT), "robots are remembered too");
        assert_eq!(memo.classify(&a, GPTBOT), first, "and replayed as they were classified");
        assert_eq!(memo.classify(&a, GPTBOT), a.classify(GPTBOT));
        let long = [FIREFOX, &[b'x'; MEMO_MAX_UA][..]].concat();
        assert!(!memo.classify(&b, &long).is_bot());
        assert!(!memo.remembers(&b, &long), "too long to remember");
        assert!(memo.remembers(&a, GPTBOT), "still the last one remembered");
        // Many slots keep many.
        let mut many = Memo::new(64);
        many.classify(&a, FIREFOX);
        many.classify(&a, GPTBOT);
        assert!(many.remembers(&a, FIREFOX) || many.remembers(&a, GPTBOT));
        assert!(!remembered_here(&a, GPTBOT));
        classify_here(&a, GPTBOT);
        assert!(remembered_here(&a, GPTBOT), "this thread's memo");
    }
}
