//! The automata: the `ua` literals and `ua_regex`es of a database, and the
//! suspect and marker needles, compiled into regex-automata DFAs once per
//! database, and the walks over them.
//!
//! A proxy classifies every request, so the per-request cost must not grow
//! with the database, and the automaton must build fast (start-up, reload).
//! Measured alternatives (500 literals, on the corpus UAs):
//!
//! * one unanchored dense DFA with one pattern per literal and
//!   `MatchKind::All` walks fast, but determinization is quadratic in the
//!   number of patterns (every DFA state carries every pattern's start):
//!   several seconds to build;
//! * the lazy DFA (`hybrid`, what `meta::Regex::new_many` uses for
//!   overlapping searches) builds in milliseconds, but needs a per-thread
//!   cache and an adversarial UA can make it determinize states on the
//!   request path;
//! * what is used here: a **forward** unanchored dense DFA with only a few
//!   patterns (0: every `ua` literal as one alternation, with its whole-token
//!   boundaries; 1: the suspect needles; 2: the browser-marker needles; 3:
//!   what the shape rule looks for; then one pattern per `ua_regex`), which
//!   builds in tens of milliseconds and
//!   needs no cache, plus a **reverse** anchored dense DFA with one pattern per
//!   literal (anchored, so it is a trie: cheap to build). The forward pass
//!   reports where a literal ends; the reverse DFA, run backwards from each such
//!   end, says which literals end there and where they start. This is the
//!   forward-then-reverse scheme regex engines use to find match starts.
//!
//! Matching is ASCII case-insensitive: patterns are compiled lowercase and
//! case-sensitive, and the walks read each UA byte lowercased (no copy): the
//! reverse walk through `to_ascii_lowercase`, the forward walk through the
//! column map of its table (`table`), which folds the case in. Compiling the same literals with `(?i)`
//! takes 10-20 times longer to determinize. Unicode is off and UTF-8 is not
//! required: headers may hold any bytes.
//!
//! Both DFAs are immutable and `Sync`; a shared `&Classifier` serves any
//! number of threads. See `benches/classify.rs` for throughput.

use regex_automata::dfa::{dense, Automaton, StartKind};
use regex_automata::nfa::thompson;
use regex_automata::util::primitives::StateID;
use regex_automata::{Anchored, Input, MatchKind};
use regex_syntax::hir::{Class, ClassBytes, ClassBytesRange, ClassUnicode, ClassUnicodeRange, Hir, HirKind};

use super::db::{is_token_byte, syntax_config, Bot, BotDb, Category, DbError};
use super::frozen::{self, is_version_byte, Part, MOZILLA};
use super::table::Table;
use super::vocab::{MARKER_NEEDLES, SUSPECT_NEEDLES};
use super::words::Folded;

/// At most this many literal occurrences are resolved per UA (each costs one
/// short reverse walk); later ones are ignored. Real robot UAs hold one to
/// three.
const MAX_ENDS: usize = 16;

/// Size limit for each DFA and for determinizing it. The builtin database
/// needs a few MiB; the limit turns a pathological local override (e.g.
/// `ua_regex: '[a-z]{1000}'`) into a [`DbError::Build`] instead of a stall.
const DFA_SIZE_LIMIT: usize = 256 << 20;

/// Longest `ua` literal accepted; bounds the reverse walk.
pub(super) const MAX_LITERAL_LEN: usize = 128;

/// Forward pattern ids.
const FWD_LITERALS: usize = 0;
const FWD_SUSPECT: usize = 1;
const FWD_MARKER: usize = 2;
const FWD_SHAPE_HINT: usize = 3;
/// First forward pattern id of the `ua_regex`es.
const FWD_REGEX0: usize = 4;

/// What a browser-shaped string must hold for the shape rule
/// (`unknown::browser`) to find a robot in it: `compatible`, or a dot before
/// a letter (a host name's last label). The walk reads bytes lowercased, so
/// this finds a dot before an uppercase letter too: more than the rule
/// needs, never less.
const SHAPE_HINTS: &str = r"compatible|\.[a-z]";

/// What the forward pass found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Scan {
    /// End offsets of literal matches (the boundary byte included, if any).
    pub(super) ends: [u32; MAX_ENDS],
    pub(super) n_ends: usize,
    /// Best `ua_regex` entry seen, as (rank key, entry index).
    pub(super) regex: Option<(Rank, usize)>,
    /// End offsets of suspect-needle matches; `n_suspect > MAX_ENDS` means
    /// some were not recorded.
    suspect_ends: [u32; MAX_ENDS],
    pub(super) n_suspect: usize,
    pub(super) marker: bool,
    /// End offset of the last [`SHAPE_HINTS`] match; 0 if none.
    pub(super) shape_hint_end: u32,
}

impl Default for Scan {
    fn default() -> Self {
        Scan {
            ends: [0; MAX_ENDS],
            n_ends: 0,
            regex: None,
            suspect_ends: [0; MAX_ENDS],
            n_suspect: 0,
            marker: false,
            shape_hint_end: 0,
        }
    }
}

impl Scan {
    /// End offsets of every suspect needle, or `None` if there were more than
    /// could be recorded.
    pub(super) fn all_suspect_ends(&self) -> Option<&[u32]> {
        (self.n_suspect <= MAX_ENDS).then(|| &self.suspect_ends[..self.n_suspect])
    }
}

/// A `ua` literal as compiled.
#[derive(Debug, Clone)]
pub(super) struct Literal {
    /// Database entry.
    pub(super) entry: u32,
    /// Length without a trailing `*`.
    pub(super) len: u32,
    /// A whole-token boundary is required before it.
    start_boundary: bool,
}

/// Where a literal occurs in a UA, best first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Place {
    /// In the UA proper.
    Clean,
    /// Only inside a URL: used only if no candidate occurs outside one.
    InUrl,
}

/// Ordering key of a candidate entry; smaller wins: the UA proper over a
/// URL, non-`tool` over `tool`, longer over shorter, then database order (see
/// `classify` for why).
pub(super) type Rank = (Place, bool, std::cmp::Reverse<u32>, u32);

/// The rank of database entry `entry` matched at `place` by `len` bytes.
pub(super) fn rank(bots: &[Bot], entry: u32, place: Place, len: u32) -> Rank {
    let tool = bots[entry as usize].category == Category::Tool;
    (place, tool, std::cmp::Reverse(len), entry)
}

/// The compiled automata of one database; immutable and `Sync`.
#[derive(Debug, Clone)]
pub(super) struct Automata {
    fwd: dense::DFA<Vec<u32>>,
    /// Reverse anchored DFA, one pattern per entry of `literals`.
    rev: dense::DFA<Vec<u32>>,
    literals: Vec<Literal>,
    /// Rank (as a match of its minimum length in the UA proper) and entry
    /// index of each `ua_regex`, by forward pattern id minus [`FWD_REGEX0`].
    regexes: Vec<(Rank, usize)>,
    /// Precomputed walks over [`openings`], longest first (see
    /// [`Automata::scan`]).
    shortcuts: Vec<Shortcut>,
    /// `fwd`'s transitions laid out for the walk (see `table`).
    table: Table,
}

/// The openings of the precomputed walks: [`MOZILLA`], which serves every
/// `Mozilla/5.0 (` UA, robots included, and the frozen openings of the most
/// frequent browser UAs (`frozen::openings`: Chromium's reduced strings,
/// Firefox and Safari), which are most of such a UA's bytes. The forward walk
/// over each is computed once, and a walk over a UA that starts with one
/// resumes after it: the walk costs one dependent table load per byte.
fn openings() -> impl Iterator<Item = &'static Folded> {
    std::iter::once(&MOZILLA).chain(frozen::openings())
}

/// Whether `ua` starts with the lowercase `opening`, ASCII case-insensitively,
/// and goes on after it.
#[inline]
fn opens_with(ua: &[u8], opening: &Folded) -> bool {
    ua.len() > opening.len() && opening.starts(ua)
}

/// The walk's state after an opening (as an id of the walk table), and
/// whether a browser marker occurred in it; kept only if nothing else
/// matched inside it.
#[derive(Debug, Clone)]
struct Shortcut {
    opening: &'static Folded,
    /// The opening's byte after [`MOZILLA`]: only openings that agree
    /// on it are compared.
    key: u8,
    id: u32,
    marker: bool,
}

/// Escapes a literal for the regex syntax, ASCII-lowercased (the automata
/// walk the lowercased UA): letters and digits as they are, every other byte
/// as `\xHH`.
fn escape(lit: &str, out: &mut String) {
    for b in lit.bytes() {
        escape_byte(b, out);
    }
}

fn escape_byte(b: u8, out: &mut String) {
    if b.is_ascii_alphanumeric() {
        out.push(char::from(b.to_ascii_lowercase()));
    } else {
        out.push_str(&format!("\\x{b:02X}"));
    }
}

const BOUNDARY: &str = "[^A-Za-z0-9_\\-]";

/// One regex matching every `ua` literal of `db` with its boundaries, ending
/// where [`literal_regex`]'s would: two prefix-factored tries, one for the
/// literals that need a start boundary (behind one shared `(?:^|B)`) and one
/// for those that do not.
fn literals_regex(db: &BotDb) -> String {
    let (mut bounded, mut open) = (Trie::default(), Trie::default());
    for lit in db.bots().iter().flat_map(|b| &b.ua) {
        if lit.bytes().next().is_some_and(is_token_byte) {
            bounded.insert(lit);
        } else {
            open.insert(lit);
        }
    }
    let mut alts = Vec::new();
    if !bounded.is_empty() {
        let mut re = format!("(?:^|{BOUNDARY})");
        bounded.regex(&mut re);
        alts.push(re);
    }
    if !open.is_empty() {
        let mut re = String::new();
        open.regex(&mut re);
        alts.push(re);
    }
    // An empty alternation would match nothing but must still parse.
    if alts.is_empty() {
        return String::from("[^\\x00-\\xFF]");
    }
    format!("(?:{})", alts.join("|"))
}

/// The regex for one `ua` literal with its whole-token boundaries: a boundary
/// is required on each side whose edge byte is a token byte, as the start/end
/// of the UA or a non-token byte (consumed: only which literals match and
/// where is used). A trailing `*` drops the end boundary.
fn literal_regex(lit: &str, out: &mut String) -> (usize, bool) {
    let (body, open_end) = match lit.strip_suffix('*') {
        Some(b) => (b, true),
        None => (lit, false),
    };
    let start_boundary = body.bytes().next().is_some_and(is_token_byte);
    out.push_str("(?:");
    if start_boundary {
        out.push_str("(?:^|");
        out.push_str(BOUNDARY);
        out.push(')');
    }
    escape(body, out);
    if !open_end && body.bytes().last().is_some_and(is_token_byte) {
        out.push_str("(?:$|");
        out.push_str(BOUNDARY);
        out.push(')');
    }
    out.push(')');
    (body.len(), start_boundary)
}

/// A trie of `ua` literals, emitted as one prefix-factored regex.
///
/// Determinizing an unanchored alternation of hundreds of literals is slow
/// when each literal is its own branch: every DFA state's closure holds every
/// branch's start (1.8 s for the builtin database). Factored into a trie, the
/// closure at the root holds one branch per distinct first byte, and the same
/// language builds in milliseconds.
#[derive(Default)]
struct Trie {
    children: std::collections::BTreeMap<u8, Trie>,
    /// A literal ends here and needs an end boundary.
    end_bounded: bool,
    /// A literal ends here without one (`*`, or a last byte that is not a
    /// token byte).
    end_open: bool,
}

impl Trie {
    fn insert(&mut self, lit: &str) {
        let (body, open_end) = match lit.strip_suffix('*') {
            Some(b) => (b, true),
            None => (lit, false),
        };
        let mut node = self;
        for b in body.bytes() {
            node = node.children.entry(b.to_ascii_lowercase()).or_default();
        }
        // A body ending in a non-token byte needs no boundary after it.
        if open_end || !body.bytes().last().is_some_and(is_token_byte) {
            node.end_open = true;
        } else {
            node.end_bounded = true;
        }
    }

    fn is_empty(&self) -> bool {
        self.children.is_empty() && !self.end_bounded && !self.end_open
    }

    /// The regex matching exactly the inserted literals, each with its end
    /// boundary, as [`literal_regex`] writes them.
    fn regex(&self, out: &mut String) {
        let mut alts: Vec<String> = Vec::new();
        for (&b, child) in &self.children {
            let mut alt = String::new();
            escape_byte(b, &mut alt);
            child.regex(&mut alt);
            alts.push(alt);
        }
        // Both when both: the match ends differ (before and after the
        // boundary byte), and each end is resolved by the reverse DFA.
        if self.end_bounded {
            alts.push(format!("(?:$|{BOUNDARY})"));
        }
        if self.end_open {
            alts.push(String::new());
        }
        match alts.len() {
            0 => {}
            1 => out.push_str(&alts[0]),
            _ => {
                out.push_str("(?:");
                out.push_str(&alts.join("|"));
                out.push(')');
            }
        }
    }
}

fn alternation(needles: &[&str]) -> String {
    let mut re = String::from("(?:");
    for (i, n) in needles.iter().enumerate() {
        if i > 0 {
            re.push('|');
        }
        escape(n, &mut re);
    }
    re.push(')');
    re
}

/// UAs shorter than this are walked by one chain (see [`Ahead`]).
const AHEAD_MIN: usize = 48;
/// The walk ahead covers at most this many bytes, so a UA of up to twice
/// this is split; a longer one is walked by one chain.
const AHEAD_MAX: usize = 256;

/// A second walk over the second half of a UA, from the start state, taken
/// side by side with the walk over the first half.
///
/// Each step of a walk loads the state the previous step found, so one walk
/// runs at the speed of the load latency, about six cycles a byte, while
/// the processor has room for more loads. The walk ahead starts at `from`,
/// the middle, without knowing the state the real walk will be in there,
/// and goes on while it meets no match, dead or quit state (it passes
/// marker-only ones, noting them in `marker`: a marker it meets is in the
/// UA, as marker needles need no context), keeping its state every four
/// bytes. When the real walk reaches `from` it goes on alone until, at one
/// of those four-byte marks, its state is the one the walk ahead had there:
/// from that state the two walks are the same, so it takes the walk ahead's
/// last state and goes on from there. Browser strings forget their
/// beginning within a few bytes, so the real walk rarely goes far before
/// the two agree. A UA that never agrees costs the walk ahead's work and
/// no time lost to its answer: every byte the real walk skips, it would
/// have walked through the same states.
struct Ahead {
    /// Where in the UA (after the opening skipped) the walk ahead started.
    from: usize,
    /// Its state at `from + 4 * k` for `k` in `0..=blocks`.
    states: [u32; AHEAD_MAX / 4 + 1],
    /// How many blocks of four bytes it walked; 0 also once it is used.
    blocks: usize,
    /// Whether it passed a marker-only state.
    marker: bool,
}

#[cfg(test)]
thread_local! {
    /// How many walks of this thread took a walk ahead over (for tests).
    static TAKEN_OVER: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

impl Ahead {
    fn new() -> Ahead {
        Ahead { from: 0, states: [0; AHEAD_MAX / 4 + 1], blocks: 0, marker: false }
    }

    /// Walks one block of four bytes with a stop among them, one byte at a
    /// time from `b`; `false` if it meets a state that is not marker-only
    /// below `bound`: the walk ahead ends before this block.
    fn block(&mut self, table: &Table, b: &mut u32, bound: &mut u32, bytes: [u8; 4]) -> bool {
        for byte in bytes {
            *b = table.step(*b, byte);
            if *b < *bound {
                if !table.is_marker_only(*b) {
                    return false;
                }
                self.marker = true;
                *bound = table.stop_bound(true);
            }
        }
        true
    }
}

impl Automata {
    /// Compiles the patterns of `db` (checked across entries by the caller).
    ///
    /// # Errors
    /// [`DbError::Invalid`] for an over-long literal, [`DbError::Regex`] for a
    /// `ua_regex` the DFA cannot compile, [`DbError::Build`] when an automaton
    /// exceeds its size limit.
    pub(super) fn build(db: &BotDb) -> Result<Automata, DbError> {
        let build_err = |source| DbError::Build { source };
        let mut literal_res: Vec<String> = Vec::new();
        let mut literals = Vec::new();
        let mut regex_res: Vec<String> = Vec::new();
        let mut regexes = Vec::new();
        for (i, bot) in db.bots().iter().enumerate() {
            let entry = u32::try_from(i).map_err(|_| DbError::Build { source: "too many entries".into() })?;
            for lit in &bot.ua {
                if lit.len() > MAX_LITERAL_LEN {
                    return Err(DbError::Invalid {
                        index: i,
                        name: bot.name.clone(),
                        reason: format!("ua literal longer than {MAX_LITERAL_LEN} bytes"),
                    });
                }
                let mut re = String::new();
                let (len, start_boundary) = literal_regex(lit, &mut re);
                literal_res.push(re);
                literals.push(Literal { entry, len: len as u32, start_boundary });
            }
            if let Some(re) = &bot.ua_regex {
                let regex_err = |source: Box<dyn std::error::Error + Send + Sync>| DbError::Regex {
                    index: i,
                    name: bot.name.clone(),
                    source,
                };
                let hir = regex_automata::util::syntax::parse_with(re, &syntax_config())
                    .map_err(|e| regex_err(Box::new(e)))?;
                let min_len = hir.properties().minimum_len().unwrap_or(0);
                // Compile alone first so that an error names the entry.
                build_fwd(std::slice::from_ref(re)).map_err(regex_err)?;
                regex_res.push(format!("(?i:{re})"));
                let min_len = u32::try_from(min_len).unwrap_or(u32::MAX);
                regexes.push((rank(db.bots(), entry, Place::Clean, min_len), i));
            }
        }
        let all_literals = literals_regex(db);
        let mut fwd_patterns =
            vec![all_literals, alternation(SUSPECT_NEEDLES), alternation(MARKER_NEEDLES), SHAPE_HINTS.to_owned()];
        fwd_patterns.extend(regex_res);
        let fwd = build_fwd(&fwd_patterns).map_err(build_err)?;
        let rev = build_rev(&literal_res).map_err(build_err)?;
        let marker_only = |sid| (0..fwd.match_len(sid)).all(|i| fwd.match_pattern(sid, i).as_usize() == FWD_MARKER);
        let table = Table::build(&fwd, marker_only).map_err(|e| build_err(e.into()))?;
        let mut automata = Automata { fwd, rev, literals, regexes, shortcuts: Vec::new(), table };
        automata.shortcuts = openings().filter_map(|o| automata.walk_opening(o)).collect();
        automata.shortcuts.sort_by_key(|s| std::cmp::Reverse(s.opening.len()));
        Ok(automata)
    }

    /// Heap bytes used by the automata.
    pub(super) fn memory_usage(&self) -> usize {
        self.fwd.memory_usage() + self.rev.memory_usage() + self.table.memory_usage()
    }

    /// Runs the reverse DFA backwards from `end`; calls `found` with each
    /// literal whose match ends at `end` and the start of its body.
    pub(super) fn literals_ending_at(&self, ua: &[u8], end: usize, mut found: impl FnMut(&Literal, usize)) {
        let rev = &self.rev;
        let input = Input::new(ua).range(..end).anchored(Anchored::Yes);
        let Ok(mut sid) = rev.start_state_reverse(&input) else { return };
        let mut report = |sid: StateID, at: usize| {
            for i in 0..rev.match_len(sid) {
                let lit = &self.literals[rev.match_pattern(sid, i).as_usize()];
                // The match may begin with the consumed boundary byte.
                let start = if lit.start_boundary && at < end && !is_token_byte(ua[at]) { at + 1 } else { at };
                found(lit, start);
            }
        };
        let lo = end.saturating_sub(MAX_LITERAL_LEN + 2);
        for at in (lo..end).rev() {
            sid = rev.next_state(sid, ua[at].to_ascii_lowercase());
            if rev.is_special_state(sid) {
                if rev.is_match_state(sid) {
                    report(sid, at + 1);
                } else if rev.is_dead_state(sid) || rev.is_quit_state(sid) {
                    return;
                }
            }
        }
        if lo == 0 {
            sid = rev.next_eoi_state(sid);
            if rev.is_match_state(sid) {
                report(sid, 0);
            }
        }
    }

    /// One walk of the forward DFA over the ASCII-lowercased bytes. Matches in a dense DFA are reported one
    /// byte late (a match state reached on byte `i` means a match ending at
    /// `i`) and at end of input, hence the final EOI transition.
    pub(super) fn scan(&self, ua: &[u8]) -> Scan {
        self.scan_with(ua, &self.shortcuts)
    }

    fn scan_with(&self, ua: &[u8], shortcuts: &[Shortcut]) -> Scan {
        let mut scan = Scan::default();
        let table = &self.table;
        let mut id = table.start();
        // The walk over an opening always ends in the same state and reports
        // at most a browser marker on the way (checked when it was computed).
        let mut skip = 0;
        if opens_with(ua, &MOZILLA) {
            let key = ua[MOZILLA.len()].to_ascii_lowercase();
            if let Some(s) = shortcuts.iter().find(|s| (s.key == key || s.key == 0) && opens_with(ua, s.opening)) {
                id = s.id;
                skip = s.opening.len();
                scan.marker = s.marker;
            }
        }
        let mut bound = table.stop_bound(scan.marker);
        let rest = &ua[skip..];
        let mut i = 0;
        // A walk is a chain of dependent loads, so a second walk over the
        // second half, side by side with the first, costs little time; see
        // `Ahead`. The first walk takes it over where the two agree.
        let mut ahead = Ahead::new();
        if (AHEAD_MIN..=2 * AHEAD_MAX).contains(&rest.len()) {
            ahead.from = (rest.len() / 2) & !3;
            let mut b = table.start();
            let mut b_bound = table.stop_bound(false);
            ahead.states[0] = b;
            let mut alive = true;
            while let (Some(&a), Some(&c)) = (
                rest.get(i..i + 4).filter(|_| i + 4 <= ahead.from).and_then(|s| <&[u8; 4]>::try_from(s).ok()),
                rest.get(ahead.from + 4 * ahead.blocks..ahead.from + 4 * ahead.blocks + 4)
                    .filter(|_| alive)
                    .and_then(|s| <&[u8; 4]>::try_from(s).ok()),
            ) {
                let (s3, s_low) = table.step4(id, a);
                let (t3, t_low) = table.step4(b, c);
                if s_low < bound {
                    if !self.walk_block(&mut id, &mut bound, &rest[i..i + 4], skip + i, &mut scan) {
                        return self.end(scan, id, ua.len(), false);
                    }
                } else {
                    id = s3;
                }
                i += 4;
                if t_low < b_bound {
                    alive = ahead.block(table, &mut b, &mut b_bound, c);
                } else {
                    b = t3;
                }
                if alive {
                    ahead.blocks += 1;
                    ahead.states[ahead.blocks] = b;
                }
            }
        }
        'walk: loop {
            // Four steps at a time while none of them stops: one comparison
            // for four bytes. The four with a stop among them, or the last
            // few bytes, are walked again one at a time, from the state
            // before them.
            for &bytes in rest[i..].as_chunks::<4>().0 {
                if ahead.blocks > 0 && i >= ahead.from {
                    let k = (i - ahead.from) / 4;
                    if k >= ahead.blocks {
                        ahead.blocks = 0; // past where the walk ahead stopped
                    } else if id == ahead.states[k] {
                        // From here on this walk is the one ahead: take its end.
                        #[cfg(test)]
                        TAKEN_OVER.with(|n| n.set(n.get() + 1));
                        id = ahead.states[ahead.blocks];
                        i = ahead.from + 4 * ahead.blocks;
                        if ahead.marker {
                            scan.marker = true;
                            bound = table.stop_bound(true);
                        }
                        ahead.blocks = 0;
                        continue 'walk;
                    }
                }
                let (last, lowest) = table.step4(id, bytes);
                if lowest < bound {
                    break;
                }
                id = last;
                i += 4;
            }
            let block = &rest[i..rest.len().min(i + 4)];
            if block.is_empty() {
                break;
            }
            if !self.walk_block(&mut id, &mut bound, block, skip + i, &mut scan) {
                return self.end(scan, id, ua.len(), false);
            }
            i += block.len();
        }
        self.end(scan, id, ua.len(), true)
    }

    /// Walks `block` (at `at` in the UA) one byte at a time from `id`,
    /// reporting what its stops hold; `false` if it reached a dead or quit
    /// state (the walk is over).
    fn walk_block(&self, id: &mut u32, bound: &mut u32, block: &[u8], at: usize, scan: &mut Scan) -> bool {
        let table = &self.table;
        for (k, &b) in block.iter().enumerate() {
            *id = table.step(*id, b);
            if *id >= *bound {
                continue;
            }
            if table.is_marker_only(*id) {
                scan.marker = true;
                *bound = table.stop_bound(true);
                continue;
            }
            let sid = table.dfa_state(*id);
            if !self.fwd.is_match_state(sid) {
                return false; // dead or quit
            }
            self.collect(sid, at + k, scan);
            *bound = table.stop_bound(scan.marker);
        }
        true
    }

    /// The end of a walk in `id` at the end of a UA of `len` bytes: the
    /// end-of-input transition, unless the walk `ended` in a dead or quit state.
    fn end(&self, mut scan: Scan, id: u32, len: usize, ended: bool) -> Scan {
        if ended {
            let sid = self.fwd.next_eoi_state(self.table.dfa_state(id));
            if self.fwd.is_match_state(sid) {
                self.collect(sid, len, &mut scan);
            }
        }
        scan
    }

    /// [`Automata::scan`] walking the DFA itself, without shortcuts: what
    /// the table's walk must agree with.
    #[cfg(test)]
    fn scan_dfa(&self, ua: &[u8]) -> Scan {
        let mut scan = Scan::default();
        let fwd = &self.fwd;
        let mut sid = fwd.start_state_forward(&Input::new(ua)).unwrap();
        for (i, &b) in ua.iter().enumerate() {
            sid = fwd.next_state(sid, b.to_ascii_lowercase());
            if fwd.is_special_state(sid) {
                if fwd.is_match_state(sid) {
                    self.collect(sid, i, &mut scan);
                } else if fwd.is_dead_state(sid) || fwd.is_quit_state(sid) {
                    break;
                }
            }
        }
        sid = fwd.next_eoi_state(sid);
        if fwd.is_match_state(sid) {
            self.collect(sid, ua.len(), &mut scan);
        }
        scan
    }

    fn collect(&self, sid: StateID, end: usize, scan: &mut Scan) {
        for i in 0..self.fwd.match_len(sid) {
            match self.fwd.match_pattern(sid, i).as_usize() {
                FWD_LITERALS => {
                    if scan.n_ends < MAX_ENDS {
                        scan.ends[scan.n_ends] = end as u32;
                        scan.n_ends += 1;
                    }
                }
                FWD_SUSPECT => {
                    if let Some(slot) = scan.suspect_ends.get_mut(scan.n_suspect) {
                        *slot = end as u32;
                    }
                    scan.n_suspect = (scan.n_suspect + 1).min(MAX_ENDS + 1);
                }
                FWD_MARKER => scan.marker = true,
                FWD_SHAPE_HINT => scan.shape_hint_end = end as u32,
                pid => {
                    let (rank, entry) = self.regexes[pid - FWD_REGEX0];
                    if scan.regex.is_none_or(|(b, _)| rank < b) {
                        scan.regex = Some((rank, entry));
                    }
                }
            }
        }
    }

    /// Whether no string of the frozen shape `parts` (see `frozen`) makes the
    /// forward walk report anything but a browser marker: the walk over each
    /// literal from every state the walk can be in there, and over every
    /// version run (all states reachable by version bytes), then the end of
    /// input. `Some(marker)` if so, `marker` telling whether every such
    /// string reports a marker; `None` also when the states to follow exceed
    /// a bound or the walk can quit: then the shape is not proved.
    pub(super) fn quiet_shape(&self, parts: &[Part], example: &[u8]) -> Option<bool> {
        const MAX_STATES: usize = 4096;
        let fwd = &self.fwd;
        // `Some(is a marker)` for a state that reports nothing else.
        let quiet = |sid: StateID| {
            if fwd.is_quit_state(sid) {
                return None;
            }
            if !fwd.is_match_state(sid) {
                return Some(false);
            }
            let pattern = |i| fwd.match_pattern(sid, i).as_usize();
            (0..fwd.match_len(sid)).all(|i| pattern(i) == FWD_MARKER).then_some(true)
        };
        let mut states = vec![fwd.start_state_forward(&Input::new(example)).ok()?];
        let mut marker = false;
        for part in parts {
            match part {
                Part::Lit(lit) => {
                    let mut all_marked = true;
                    for sid in &mut states {
                        let mut marked = false;
                        for &b in lit.text() {
                            *sid = fwd.next_state(*sid, b);
                            marked |= quiet(*sid)?;
                        }
                        all_marked &= marked;
                    }
                    marker |= all_marked;
                    states.sort_unstable();
                    states.dedup();
                }
                Part::Version => {
                    let mut seen: std::collections::HashSet<StateID> = states.iter().copied().collect();
                    let mut todo = states;
                    while let Some(sid) = todo.pop() {
                        for b in (0..=u8::MAX).filter(|b| is_version_byte(*b)) {
                            let next = fwd.next_state(sid, b);
                            quiet(next)?;
                            if seen.insert(next) {
                                if seen.len() > MAX_STATES {
                                    return None;
                                }
                                todo.push(next);
                            }
                        }
                    }
                    states = seen.into_iter().collect();
                    states.sort_unstable();
                }
            }
        }
        for sid in states {
            quiet(fwd.next_eoi_state(sid))?;
        }
        Some(marker)
    }

    /// The walk over a lowercase `opening` at the start of a UA, or `None`
    /// if something other than a browser marker matches inside it, or it
    /// reaches a dead or quit state: then skipping it would lose a report.
    fn walk_opening(&self, opening: &'static Folded) -> Option<Shortcut> {
        let text = opening.text();
        let mut sid = self.fwd.start_state_forward(&Input::new(text)).ok()?;
        let mut scan = Scan::default();
        for (i, &b) in text.iter().enumerate() {
            sid = self.fwd.next_state(sid, b);
            if self.fwd.is_dead_state(sid) || self.fwd.is_quit_state(sid) {
                return None;
            }
            if self.fwd.is_match_state(sid) {
                self.collect(sid, i, &mut scan);
            }
        }
        let only_marker = Scan { marker: scan.marker, ..Scan::default() };
        let key = text.get(MOZILLA.len()).copied().unwrap_or(0);
        let id = self.table.id(sid)?;
        (scan == only_marker).then_some(Shortcut { opening, key, id, marker: scan.marker })
    }
}

type BuildResult = Result<dense::DFA<Vec<u32>>, Box<dyn std::error::Error + Send + Sync>>;

fn build_fwd<P: AsRef<str>>(patterns: &[P]) -> BuildResult {
    build(patterns, StartKind::Unanchored, false)
}

fn build_rev<P: AsRef<str>>(patterns: &[P]) -> BuildResult {
    build(patterns, StartKind::Anchored, true)
}

fn build<P: AsRef<str>>(patterns: &[P], start: StartKind, reverse: bool) -> BuildResult {
    // Case-sensitive over lowercase patterns: the walks feed
    // `to_ascii_lowercase` bytes. Case-insensitive compilation of the same
    // literals is 10-20 times slower to determinize.
    let syntax = syntax_config().case_insensitive(false);
    let hirs = patterns
        .iter()
        .map(|p| regex_automata::util::syntax::parse_with(p.as_ref(), &syntax).map(without_uppercase).map_err(Box::new))
        .collect::<Result<Vec<_>, _>>()?;
    let nfa = thompson::Compiler::new()
        .configure(thompson::Config::new().utf8(false).reverse(reverse).which_captures(thompson::WhichCaptures::None))
        .build_many_from_hir(&hirs)?;
    let dfa = dense::Builder::new()
        .configure(
            dense::DFA::config()
                .match_kind(MatchKind::All)
                .start_kind(start)
                .dfa_size_limit(Some(DFA_SIZE_LIMIT))
                .determinize_size_limit(Some(DFA_SIZE_LIMIT)),
        )
        .build_from_nfa(&nfa)?;
    Ok(dfa)
}

/// `hir` without the ASCII uppercase letters.
///
/// The walks feed lowercased bytes, so no uppercase letter ever reaches an
/// automaton and removing them changes no match. What it changes is the
/// alphabet: a `(?i)` `ua_regex` such as `Java/[0-9]` splits `A`-`Z` into
/// classes of their own, which took the forward DFA's byte classes from 59
/// to 65, each state's row from 64 to 128 transitions, and the table from
/// about 1.2 to 2.5 MiB, so a walk missed the cache far more often.
fn without_uppercase(hir: Hir) -> Hir {
    let upper = || ClassBytes::new([ClassBytesRange::new(b'A', b'Z')]);
    match hir.into_kind() {
        HirKind::Empty => Hir::empty(),
        HirKind::Look(look) => Hir::look(look),
        HirKind::Literal(regex_syntax::hir::Literal(bytes)) if bytes.iter().any(u8::is_ascii_uppercase) => Hir::fail(),
        HirKind::Literal(regex_syntax::hir::Literal(bytes)) => Hir::literal(bytes),
        HirKind::Class(Class::Bytes(mut class)) => {
            class.difference(&upper());
            Hir::class(Class::Bytes(class))
        }
        HirKind::Class(Class::Unicode(mut class)) => {
            class.difference(&ClassUnicode::new([ClassUnicodeRange::new('A', 'Z')]));
            Hir::class(Class::Unicode(class))
        }
        HirKind::Repetition(mut rep) => {
            rep.sub = Box::new(without_uppercase(*rep.sub));
            Hir::repetition(rep)
        }
        HirKind::Capture(mut cap) => {
            cap.sub = Box::new(without_uppercase(*cap.sub));
            Hir::capture(cap)
        }
        HirKind::Concat(subs) => Hir::concat(subs.into_iter().map(without_uppercase).collect()),
        HirKind::Alternation(subs) => Hir::alternation(subs.into_iter().map(without_uppercase).collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::super::vocab::REFERENCE_BROWSERS;
    use super::*;

    #[test]
    fn uppercase_in_a_ua_regex_matches_any_case_and_costs_no_classes() {
        let yaml = "version: 1\nbots:\n  - {name: Jav, operator: T, category: tool, robots_tokens: [Jav], \
                    ua_regex: '(?:^|[^A-Za-z0-9_-])JaVa/[0-9]', obeys_robots: false}\n";
        let a = Automata::build(&BotDb::from_yaml(yaml).unwrap()).unwrap();
        let entry = |ua: &str| a.scan(ua.as_bytes()).regex.map(|(_, entry)| entry);
        for ua in ["Java/17.0.9", "JAVA/1.8", "x java/8"] {
            assert_eq!(entry(ua), Some(0), "{ua}");
        }
        assert_eq!(entry("Javanese/1.0"), None);
        // The walks never see uppercase, so the alphabet must not split it.
        let classes = a.fwd.byte_classes();
        assert!((b'A'..=b'Z').all(|b| classes.get(b) == classes.get(b'A')));
    }

    /// The walk over the table finds what the walk over the DFA finds, for
    /// every sample, reference browser and opening, in both cases, and for
    /// bytes of any value.
    #[test]
    fn the_table_walks_as_the_dfa_does() {
        let db = BotDb::builtin();
        let c = Automata::build(&db).unwrap();
        let samples = db.bots().iter().flat_map(|b| b.samples.iter().cloned());
        let openings = openings().map(|o| String::from_utf8_lossy(o.text()).into_owned());
        let texts: Vec<String> = samples
            .chain(REFERENCE_BROWSERS.iter().map(|s| s.to_string()))
            .chain(openings)
            .flat_map(|t| [t.to_uppercase(), t.clone(), t[..t.len() / 2].to_owned(), t])
            .collect();
        for t in &texts {
            assert_eq!(c.scan_with(t.as_bytes(), &[]), c.scan_dfa(t.as_bytes()), "{t}");
        }
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        runner
            .run(&proptest::collection::vec(proptest::num::u8::ANY, 0..300), |bytes| {
                proptest::prop_assert_eq!(c.scan_with(&bytes, &[]), c.scan_dfa(&bytes));
                Ok(())
            })
            .unwrap();
        // A database with regexes and open-ended literals.
        let yaml = "version: 1\nbots:\n  - {name: Jav, operator: T, category: tool, robots_tokens: [Jav], \
                    ua_regex: '(?:^|[^A-Za-z0-9_-])JaVa/[0-9]+x?$', ua: ['Zq*', '.net'], obeys_robots: false}\n";
        let a = Automata::build(&BotDb::from_yaml(yaml).unwrap()).unwrap();
        for t in ["Java/17", "x JAVA/8x", "java/1y", "Zqq .NET clr", ""] {
            assert_eq!(a.scan_with(t.as_bytes(), &[]), a.scan_dfa(t.as_bytes()), "{t}");
            assert_eq!(a.scan(t.as_bytes()), a.scan_dfa(t.as_bytes()), "{t}");
        }
    }

    /// Long UAs made of browser tokens, robot names, needles and hints, in
    /// any case: the walk with a walk ahead reports what the DFA's own walk
    /// does, and takes the walk ahead over in most of them.
    #[test]
    fn the_walk_ahead_changes_nothing() {
        let db = BotDb::builtin();
        let c = Automata::build(&db).unwrap();
        let yaml = "version: 1\nbots:\n  - {name: Jav, operator: T, category: tool, robots_tokens: [Jav], \
                    ua_regex: '(?:^|[^A-Za-z0-9_-])JaVa/[0-9]+x?$', ua: ['Zq*', '.net'], obeys_robots: false}\n";
        let regexes = Automata::build(&BotDb::from_yaml(yaml).unwrap()).unwrap();
        let mut parts: Vec<String> = [
            "Mozilla/5.0 (",
            "Linux; Android 13; ",
            "SM-S918B",
            ") AppleWebKit/537.36 (KHTML, like Gecko) ",
            "Chrome/120.0.0.0 ",
            "Mobile Safari/537.36",
            " [FB_IAB/FB4A;FBAV/440.0.0.0;]",
            "Java/17",
            "java/1y",
            " .NET CLR 2.0",
            "compatible; ",
            "x.example.com",
            " ",
            ";",
            "(",
            ")",
            "/",
            "0",
            "é",
            "\u{0}",
        ]
        .map(String::from)
        .to_vec();
        parts.extend(db.bots().iter().flat_map(|b| b.samples.iter().cloned()).step_by(7));
        let part = proptest::sample::select(parts);
        let case = proptest::bool::weighted(0.2);
        let before = TAKEN_OVER.with(|n| n.get());
        let mut runner = proptest::test_runner::TestRunner::new(proptest::test_runner::Config {
            cases: 3000,
            ..proptest::test_runner::Config::default()
        });
        runner
            .run(&(proptest::collection::vec(part, 1..16), case), |(parts, upper)| {
                let ua = parts.concat();
                let ua = if upper { ua.to_uppercase() } else { ua };
                for a in [&c, &regexes] {
                    proptest::prop_assert_eq!(a.scan(ua.as_bytes()), a.scan_dfa(ua.as_bytes()), "{}", ua);
                }
                Ok(())
            })
            .unwrap();
        let taken = TAKEN_OVER.with(|n| n.get()) - before;
        assert!(taken > 1000, "{taken} walks took the walk ahead over");
    }

    #[test]
    fn starting_after_an_opening_changes_nothing() {
        let db = BotDb::builtin();
        let c = Automata::build(&db).unwrap();
        assert_eq!(c.shortcuts.len(), openings().count(), "the builtin database allows every shortcut");
        let samples = db.bots().iter().flat_map(|b| b.samples.iter().map(String::as_str));
        // Each opening alone, with one more byte, and as a whole browser UA
        // (in upper case too).
        let texts: Vec<String> = openings()
            .map(|o| String::from_utf8_lossy(o.text()).into_owned())
            .flat_map(|o| [o.clone(), format!("{o}1"), format!("{o}124.0 Safari/537.36"), o.to_uppercase() + "1"])
            .collect();
        let mut n = 0;
        for ua in samples.chain(REFERENCE_BROWSERS.iter().copied()).chain(texts.iter().map(String::as_str)) {
            let ua = ua.as_bytes();
            assert_eq!(c.scan(ua), c.scan_with(ua, &[]), "{}", String::from_utf8_lossy(ua));
            n += usize::from(c.shortcuts.iter().any(|s| opens_with(ua, s.opening)));
        }
        assert!(n > 100, "{n} UAs took a shortcut");
        // Every sample glued right after each opening: literals that start
        // at, or run across, the point where the fast walk resumes.
        for o in openings() {
            for sample in db.bots().iter().flat_map(|b| b.samples.iter()) {
                let ua = [o.text(), sample.as_bytes()].concat();
                assert_eq!(c.scan(&ua), c.scan_with(&ua, &[]), "{}", String::from_utf8_lossy(&ua));
            }
        }
    }

    /// The factored trie matches exactly where the plain alternation of the
    /// per-literal regexes does (same match ends, overlapping included).
    #[test]
    fn trie_regex_ends_where_the_plain_alternation_does() {
        let db = BotDb::from_yaml(
            r#"
version: 1
bots:
  - {name: A, operator: t, category: other-bot, robots_tokens: [A], ua: [bot, botx, "bot*", "Bo-T", "web.crawl"], obeys_robots: true}
  - {name: B, operator: t, category: other-bot, robots_tokens: [B], ua: ["+http", ".NET CLR x", "zz!"], obeys_robots: true}
  - {name: C, operator: t, category: tool, robots_tokens: [C], ua: ["aws-sdk-*", "aws-cli", "Yahoo! Slurp"], obeys_robots: false}
"#,
        )
        .unwrap();
        let mut plain = Vec::new();
        for lit in db.bots().iter().flat_map(|b| &b.ua) {
            let mut re = String::new();
            literal_regex(lit, &mut re);
            plain.push(re);
        }
        let plain = build_fwd(&[plain.join("|")]).unwrap();
        let trie = build_fwd(&[literals_regex(&db)]).unwrap();
        let ends = |dfa: &dense::DFA<Vec<u32>>, hay: &[u8]| {
            let mut out = Vec::new();
            let mut sid = dfa.start_state_forward(&Input::new(hay)).unwrap();
            for (i, &b) in hay.iter().enumerate() {
                sid = dfa.next_state(sid, b.to_ascii_lowercase());
                if dfa.is_match_state(sid) {
                    out.push(i);
                }
            }
            if dfa.is_match_state(dfa.next_eoi_state(sid)) {
                out.push(hay.len());
            }
            out
        };
        let hays: &[&[u8]] = &[
            b"bot",
            b"Bot/1 botx botxy xbot bot-t bo-t Bo-T/2",
            b"a.web.crawl.b webxcrawl +http://x .net clr x zz!zz",
            b"fa\xc3\xa7ade Fa\xc3\xa7ade/1 aws-sdk-java/1 aws-cli/2 aws-clix Yahoo! Slurp;",
            b"",
            b"\xff\x00bot\x00botx\xff",
        ];
        for hay in hays {
            assert_eq!(ends(&plain, hay), ends(&trie, hay), "{}", String::from_utf8_lossy(hay));
        }
        // Pseudo-random mixes of the literals' pieces.
        let pieces: &[&[u8]] = &[b"bot", b"x", b"-", b"t", b" ", b"aws-", b"sdk", b"cli", b"/", b"+http", b".", b"zz!"];
        let mut seed = 0x2545_f491_u32;
        for _ in 0..2000 {
            let mut hay = Vec::new();
            for _ in 0..8 {
                seed ^= seed << 13;
                seed ^= seed >> 17;
                seed ^= seed << 5;
                hay.extend_from_slice(pieces[seed as usize % pieces.len()]);
            }
            assert_eq!(ends(&plain, &hay), ends(&trie, &hay), "{}", String::from_utf8_lossy(&hay));
        }
    }
}
