//! The compiled classifier: regex-automata DFAs built once per database.
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
//!   boundaries; 1: the suspect needles; 2: the browser-marker needles; then
//!   one pattern per `ua_regex`), which builds in tens of milliseconds and
//!   needs no cache, plus a **reverse** anchored dense DFA with one pattern per
//!   literal (anchored, so it is a trie: cheap to build). The forward pass
//!   reports where a literal ends; the reverse DFA, run backwards from each such
//!   end, says which literals end there and where they start. This is the
//!   forward-then-reverse scheme regex engines use to find match starts.
//!
//! Matching is ASCII case-insensitive: patterns are compiled lowercase and
//! case-sensitive, and the walks feed each UA byte through
//! `to_ascii_lowercase` (no copy). Compiling the same literals with `(?i)`
//! takes 10-20 times longer to determinize. Unicode is off and UTF-8 is not
//! required: headers may hold any bytes.
//!
//! Both DFAs are immutable and `Sync`; a shared `&Classifier` serves any
//! number of threads. See `benches/classify.rs` for throughput.
//!
//! When several entries match, the winner is, in order: one occurring in the
//! UA proper over one occurring only inside a URL (`+http://www.bing.com/
//! bingbot.htm` does not make a UA bingbot if it names another robot);
//! non-`tool` categories over `tool` (a crawler that mentions its HTTP
//! library is the crawler); the longest matched literal (the most specific);
//! database order. An occurrence right after `like` or `compatible with`
//! ("KHTML, like Gecko", "treat like Googlebot") is a compatibility claim and
//! does not count at all.

use regex_automata::dfa::{dense, Automaton, StartKind};
use regex_automata::nfa::thompson;
use regex_automata::util::primitives::StateID;
use regex_automata::{Anchored, Input, MatchKind};
use regex_syntax::hir::{Class, ClassBytes, ClassBytesRange, ClassUnicode, ClassUnicodeRange, Hir, HirKind};

use super::db::{is_token_byte, syntax_config, Bot, BotDb, Category, DbError};
use super::heuristics;
use super::{Agent, AgentKind};

/// Only the first this many bytes of a User-Agent are examined.
///
/// Real UAs are well under 1 KiB (the longest common ones, in-app browsers
/// with device details, reach about 500 bytes); the header itself is
/// attacker-controlled and may be as large as the server's header limit.
/// Capping bounds every pass to a few microseconds whatever the input. A
/// robot token after 4 KiB of padding is not seen: such a client is hiding,
/// not announcing itself.
pub const MAX_UA_LEN: usize = 4096;

/// At most this many product tokens taken from the UA itself are added to
/// [`Agent::tokens`], bounding the per-request allocation.
pub const MAX_UA_TOKENS: usize = 6;

/// At most this many literal occurrences are resolved per UA (each costs one
/// short reverse walk); later ones are ignored. Real robot UAs hold one to
/// three.
const MAX_ENDS: usize = 16;

/// Size limit for each DFA and for determinizing it. The builtin database
/// needs a few MiB; the limit turns a pathological local override (e.g.
/// `ua_regex: '[a-z]{1000}'`) into a [`DbError::Build`] instead of a stall.
const DFA_SIZE_LIMIT: usize = 256 << 20;

/// Longest `ua` literal accepted; bounds the reverse walk.
pub(crate) const MAX_LITERAL_LEN: usize = 128;

/// Browser UAs no database pattern may match (checked by [`Classifier::new`]).
/// Shapes of current desktop and mobile browsers, written for this check.
const REFERENCE_BROWSERS: &[&str] = &[
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36 Edg/124.0.0.0",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Safari/605.1.15",
    "Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Mobile Safari/537.36",
    "Mozilla/5.0 (Linux; Android 14; SM-S918B) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/24.0 Chrome/117.0.0.0 Mobile Safari/537.36",
    "Mozilla/5.0 (Windows NT 10.0; WOW64; Trident/7.0; rv:11.0) like Gecko",
    "Mozilla/4.0 (compatible; MSIE 8.0; Windows NT 6.1; Trident/4.0; SLCC2; .NET CLR 2.0.50727; Media Center PC 6.0)",
    "Opera/9.80 (Windows NT 6.1; U; en) Presto/2.10.289 Version/12.02",
];

/// Forward pattern ids.
const FWD_LITERALS: usize = 0;
const FWD_SUSPECT: usize = 1;
const FWD_MARKER: usize = 2;
/// First forward pattern id of the `ua_regex`es.
const FWD_REGEX0: usize = 3;

/// What the forward pass found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Scan {
    /// End offsets of literal matches (the boundary byte included, if any).
    ends: [u32; MAX_ENDS],
    n_ends: usize,
    /// Best `ua_regex` entry seen, as (rank key, entry index).
    regex: Option<(Rank, usize)>,
    /// End offsets of suspect-needle matches; `n_suspect > MAX_ENDS` means
    /// some were not recorded.
    suspect_ends: [u32; MAX_ENDS],
    n_suspect: usize,
    marker: bool,
}

impl Default for Scan {
    fn default() -> Self {
        Scan { ends: [0; MAX_ENDS], n_ends: 0, regex: None, suspect_ends: [0; MAX_ENDS], n_suspect: 0, marker: false }
    }
}

impl Scan {
    fn signals(&self) -> heuristics::Signals<'_> {
        heuristics::Signals {
            suspect: self.n_suspect > 0,
            suspect_ends: (self.n_suspect <= MAX_ENDS).then(|| &self.suspect_ends[..self.n_suspect]),
            marker: self.marker,
        }
    }
}

/// A `ua` literal as compiled.
#[derive(Debug, Clone)]
struct Literal {
    /// Database entry.
    entry: u32,
    /// Length without a trailing `*`.
    len: u32,
    /// A whole-token boundary is required before it.
    start_boundary: bool,
}

/// Where a literal occurs in a UA, best first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Place {
    /// In the UA proper.
    Clean,
    /// Only inside a URL: used only if no candidate occurs outside one.
    InUrl,
}

/// Ordering key of a candidate entry; smaller wins.
type Rank = (Place, bool, std::cmp::Reverse<u32>, u32);

/// The compiled User-Agent classifier; immutable and `Sync`.
///
/// # Example
/// ```
/// use robotgate::agent::{Category, Classifier};
/// let c = Classifier::builtin();
/// let a = c.classify(b"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)");
/// assert_eq!(a.name, Some("Googlebot"));
/// assert_eq!(a.category, Category::Search);
/// let b = c.classify(b"Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0");
/// assert!(!b.is_bot());
/// ```
#[derive(Debug, Clone)]
pub struct Classifier {
    db: BotDb,
    fwd: dense::DFA<Vec<u32>>,
    /// Reverse anchored DFA, one pattern per entry of `literals`.
    rev: dense::DFA<Vec<u32>>,
    literals: Vec<Literal>,
    /// Entry index and minimum match length of each `ua_regex`, by forward
    /// pattern id minus [`FWD_REGEX0`].
    regexes: Vec<(u32, u32)>,
    /// Precomputed walks over [`OPENINGS`], longest first (see
    /// [`Classifier::scan`]).
    shortcuts: Vec<Shortcut>,
}

/// The opening almost every browser UA (and many robot UAs) shares.
const COMMON_PREFIX: &[u8] = b"mozilla/5.0 (";

/// Openings of the most frequent browser UAs, lowercase. Chromium's
/// User-Agent reduction froze the platform part of its UA (Windows is always
/// `Windows NT 10.0; Win64; x64`, macOS always `10_15_7`, Android always
/// `Android 10; K`), Firefox froze its macOS version, and Safari on macOS its
/// OS version; so most real browser traffic starts with one of these, up to
/// the browser's own version. The forward walk over each is computed once, and
/// a walk over a UA that starts with one resumes after it: the walk costs one
/// dependent table load per byte, and these openings are most of a browser
/// UA's bytes. Every entry starts with [`COMMON_PREFIX`], which alone serves
/// every other `Mozilla/5.0 (` UA, robots included.
const OPENINGS: &[&[u8]] = &[
    COMMON_PREFIX,
    b"mozilla/5.0 (windows nt 10.0; win64; x64) applewebkit/537.36 (khtml, like gecko) chrome/",
    b"mozilla/5.0 (macintosh; intel mac os x 10_15_7) applewebkit/537.36 (khtml, like gecko) chrome/",
    b"mozilla/5.0 (x11; linux x86_64) applewebkit/537.36 (khtml, like gecko) chrome/",
    b"mozilla/5.0 (linux; android 10; k) applewebkit/537.36 (khtml, like gecko) chrome/",
    b"mozilla/5.0 (macintosh; intel mac os x 10_15_7) applewebkit/605.1.15 (khtml, like gecko) version/",
    b"mozilla/5.0 (iphone; cpu iphone os ",
    b"mozilla/5.0 (windows nt 10.0; win64; x64; rv:",
    b"mozilla/5.0 (macintosh; intel mac os x 10.15; rv:",
    b"mozilla/5.0 (x11; linux x86_64; rv:",
    b"mozilla/5.0 (x11; ubuntu; linux x86_64; rv:",
];

/// Whether `ua` starts with the lowercase `opening`, ASCII case-insensitively,
/// and goes on after it.
fn opens_with(ua: &[u8], opening: &[u8]) -> bool {
    ua.len() > opening.len() && ua[..opening.len()].eq_ignore_ascii_case(opening)
}

/// The forward DFA's state after an opening, and whether a browser marker
/// occurred in it; kept only if nothing else matched inside it.
#[derive(Debug, Clone)]
struct Shortcut {
    opening: &'static [u8],
    state: StateID,
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

/// See [`Agent::announced`]. `announced` are the product tokens of the UA in
/// order.
fn announced_name<'a>(ua: &'a [u8], bot: &Bot, announced: &[&'a str], scan: &Scan) -> Option<&'a str> {
    let literals = || bot.ua.iter().map(|l| l.trim_end_matches('*')).filter(|l| !l.is_empty());
    let extends = |token: &str, name: &str| {
        token.len() >= name.len() && token.as_bytes()[..name.len()].eq_ignore_ascii_case(name.as_bytes())
    };
    // A UA that announces the entry's own name is that robot, whatever else it says.
    if announced.iter().any(|t| t.eq_ignore_ascii_case(&bot.name)) {
        return None;
    }
    let of_family = |token: &str| extends(token, &bot.name) || literals().any(|l| extends(token, l));
    if let Some(token) = announced.iter().copied().find(|t| of_family(t)) {
        return Some(token);
    }
    if bot.category == Category::Tool {
        // A robot that names itself and mentions its library is the robot.
        let name = heuristics::analyze(ua, &scan.signals())?.name?;
        return (!of_family(name)).then_some(name);
    }
    None
}

impl Classifier {
    /// Compiles a database.
    ///
    /// # Errors
    /// [`DbError::DuplicateName`]/[`DbError::DuplicatePattern`] for a merged
    /// database with clashes, [`DbError::Invalid`] for an over-long literal,
    /// [`DbError::Regex`] for a `ua_regex` the DFA cannot compile,
    /// [`DbError::MatchesBrowser`] when a pattern matches an ordinary browser
    /// UA, [`DbError::Build`] when an automaton exceeds its size limit.
    pub fn new(db: &BotDb) -> Result<Classifier, DbError> {
        db.check_across()?;
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
                build_fwd(std::slice::from_ref(re)).map_err(|e| regex_err(e))?;
                regex_res.push(format!("(?i:{re})"));
                regexes.push((entry, u32::try_from(min_len).unwrap_or(u32::MAX)));
            }
        }
        let all_literals = literals_regex(db);
        let mut fwd_patterns =
            vec![all_literals, alternation(heuristics::SUSPECT_NEEDLES), alternation(heuristics::MARKER_NEEDLES)];
        fwd_patterns.extend(regex_res);
        let fwd = build_fwd(&fwd_patterns).map_err(build_err)?;
        let rev = build_rev(&literal_res).map_err(build_err)?;
        let mut classifier = Classifier { db: db.clone(), fwd, rev, literals, regexes, shortcuts: Vec::new() };
        classifier.shortcuts = OPENINGS.iter().filter_map(|o| classifier.walk_opening(o)).collect();
        classifier.shortcuts.sort_by_key(|s| std::cmp::Reverse(s.opening.len()));
        for browser in REFERENCE_BROWSERS {
            if let AgentKind::Known(index) = classifier.classify(browser.as_bytes()).kind {
                return Err(DbError::MatchesBrowser { index, name: classifier.db.bots()[index].name.clone(), browser });
            }
        }
        Ok(classifier)
    }

    /// The classifier of the builtin database ([`BotDb::builtin`]).
    ///
    /// # Panics
    /// Only if the embedded `conf/bots.yaml` is invalid; `tests/bot_db.rs`
    /// proves it is not.
    pub fn builtin() -> Classifier {
        Classifier::new(&BotDb::builtin()).expect("embedded conf/bots.yaml compiles (tests/bot_db.rs)")
    }

    /// The database this classifier was compiled from.
    pub fn db(&self) -> &BotDb {
        &self.db
    }

    /// The entry an [`AgentKind::Known`] index refers to.
    ///
    /// # Panics
    /// If `index` did not come from this classifier.
    pub fn bot(&self, index: usize) -> &Bot {
        &self.db.bots()[index]
    }

    /// Heap bytes used by the automata.
    pub fn memory_usage(&self) -> usize {
        self.fwd.memory_usage() + self.rev.memory_usage()
    }

    /// Classifies a User-Agent header value (any bytes; only the first
    /// [`MAX_UA_LEN`] are examined).
    ///
    /// Cost: one forward DFA pass over at most [`MAX_UA_LEN`] bytes; per
    /// literal occurrence (at most 16) a reverse walk of at most
    /// [`MAX_LITERAL_LEN`] + 1 bytes; for robots (and for browsers containing a
    /// suspicious substring, such as a phone's `Java` token) a linear pass of
    /// word rules. Allocates only the `tokens` vector of a robot; a browser
    /// allocates nothing. Never panics.
    pub fn classify<'a>(&'a self, ua: &'a [u8]) -> Agent<'a> {
        let ua = &ua[..ua.len().min(MAX_UA_LEN)];
        let scan = self.scan(ua);
        if let Some(index) = self.pick(ua, &scan) {
            let bot = &self.db.bots()[index];
            let mut from_ua = Vec::with_capacity(MAX_UA_TOKENS);
            heuristics::product_tokens(ua, &scan.signals(), &mut from_ua, MAX_UA_TOKENS);
            let announced = announced_name(ua, bot, &from_ua, &scan);
            let mut tokens = Vec::with_capacity(bot.robots_tokens.len() + from_ua.len());
            tokens.extend(bot.robots_tokens.iter().map(String::as_str));
            for t in from_ua {
                if !tokens.iter().any(|have| have.eq_ignore_ascii_case(t)) {
                    tokens.push(t);
                }
            }
            return Agent {
                kind: AgentKind::Known(index),
                name: Some(&bot.name),
                announced,
                category: bot.category,
                tokens,
                obeys_robots: Some(bot.obeys_robots),
                operator: Some(&bot.operator),
            };
        }
        match heuristics::analyze(ua, &scan.signals()) {
            None => Agent::browser(),
            Some(unknown) => {
                let mut tokens = Vec::new();
                if let Some(name) = unknown.name.filter(|n| !n.contains(' ')) {
                    tokens.push(name);
                }
                heuristics::product_tokens(ua, &scan.signals(), &mut tokens, MAX_UA_TOKENS);
                Agent {
                    kind: AgentKind::UnknownBot,
                    name: unknown.name,
                    announced: None,
                    category: Category::OtherBot,
                    tokens,
                    obeys_robots: None,
                    operator: None,
                }
            }
        }
    }

    fn rank(&self, entry: u32, place: Place, len: u32) -> Rank {
        let tool = self.db.bots()[entry as usize].category == Category::Tool;
        (place, tool, std::cmp::Reverse(len), entry)
    }

    /// The winning entry (see the module documentation), resolving each
    /// literal end found by the forward pass with the reverse DFA.
    fn pick(&self, ua: &[u8], scan: &Scan) -> Option<usize> {
        let mut best = scan.regex;
        for &end in &scan.ends[..scan.n_ends] {
            self.literals_ending_at(ua, end as usize, |lit, start| {
                if heuristics::preceded_by_like(ua, start) {
                    return;
                }
                let place = if heuristics::in_url(ua, start) { Place::InUrl } else { Place::Clean };
                let rank = self.rank(lit.entry, place, lit.len);
                if best.is_none_or(|(b, _)| rank < b) {
                    best = Some((rank, lit.entry as usize));
                }
            });
        }
        best.map(|(_, entry)| entry)
    }

    /// Runs the reverse DFA backwards from `end`; calls `found` with each
    /// literal whose match ends at `end` and the start of its body.
    fn literals_ending_at(&self, ua: &[u8], end: usize, mut found: impl FnMut(&Literal, usize)) {
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
    fn scan(&self, ua: &[u8]) -> Scan {
        self.scan_with(ua, &self.shortcuts)
    }

    fn scan_with(&self, ua: &[u8], shortcuts: &[Shortcut]) -> Scan {
        let mut scan = Scan::default();
        let fwd = &self.fwd;
        let Ok(mut sid) = fwd.start_state_forward(&Input::new(ua)) else {
            // Cannot happen with these patterns (no Unicode word boundaries);
            // fall back to the word rules alone.
            scan.n_suspect = MAX_ENDS + 1;
            scan.marker = heuristics::has_marker(ua);
            return scan;
        };
        // The walk over an opening always ends in the same state and reports
        // at most a browser marker on the way (checked when it was computed).
        let mut skip = 0;
        if opens_with(ua, COMMON_PREFIX) {
            let rest = &ua[COMMON_PREFIX.len()..];
            if let Some(s) = shortcuts.iter().find(|s| opens_with(rest, &s.opening[COMMON_PREFIX.len()..])) {
                sid = s.state;
                skip = s.opening.len();
                scan.marker = s.marker;
            }
        }
        for (i, &b) in ua.iter().enumerate().skip(skip) {
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
                pid => {
                    let (entry, min_len) = self.regexes[pid - FWD_REGEX0];
                    let rank = self.rank(entry, Place::Clean, min_len);
                    if scan.regex.is_none_or(|(b, _)| rank < b) {
                        scan.regex = Some((rank, entry as usize));
                    }
                }
            }
        }
    }

    /// The walk over a lowercase `opening` at the start of a UA, or `None`
    /// if something other than a browser marker matches inside it, or it
    /// reaches a dead or quit state: then skipping it would lose a report.
    fn walk_opening(&self, opening: &'static [u8]) -> Option<Shortcut> {
        let mut sid = self.fwd.start_state_forward(&Input::new(opening)).ok()?;
        let mut scan = Scan::default();
        for (i, &b) in opening.iter().enumerate() {
            sid = self.fwd.next_state(sid, b);
            if self.fwd.is_dead_state(sid) || self.fwd.is_quit_state(sid) {
                return None;
            }
            if self.fwd.is_match_state(sid) {
                self.collect(sid, i, &mut scan);
            }
        }
        let only_marker = Scan { marker: scan.marker, ..Scan::default() };
        (scan == only_marker).then_some(Shortcut { opening, state: sid, marker: scan.marker })
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
        .map(|p| regex_automata::util::syntax::parse_with(p.as_ref(), &syntax).map(without_uppercase))
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
    use super::*;

    fn db() -> BotDb {
        BotDb::from_yaml(
            r#"
version: 1
bots:
  - name: Exabot
    operator: Exalead
    category: search
    robots_tokens: [Exabot]
    ua: [Exabot]
    obeys_robots: true
  - name: LCC
    operator: Test
    category: other-bot
    robots_tokens: [LCC]
    ua: [LCC]
    obeys_robots: true
  - name: Googlebot
    operator: Google
    category: search
    robots_tokens: [Googlebot]
    ua: [Googlebot]
    obeys_robots: true
  - name: Googlebot-Image
    operator: Google
    category: search
    robots_tokens: [Googlebot-Image, Googlebot]
    ua: [Googlebot-Image]
    obeys_robots: true
  - name: curl
    operator: curl
    category: tool
    robots_tokens: [curl]
    ua: [curl]
    obeys_robots: false
  - name: Yahoo! Slurp
    operator: Yahoo
    category: search
    robots_tokens: [Slurp]
    ua: ["Yahoo! Slurp"]
    obeys_robots: true
  - name: Wildbot
    operator: Test
    category: other-bot
    robots_tokens: [Wildbot]
    ua: ["Wildbot*"]
    obeys_robots: true
  - name: RegexBot
    operator: Test
    category: other-bot
    robots_tokens: [RegexBot]
    ua_regex: 'regex[0-9]+bot'
    obeys_robots: true
"#,
        )
        .unwrap()
    }

    fn name<'a>(c: &'a Classifier, ua: &'a str) -> Option<&'a str> {
        let a = c.classify(ua.as_bytes());
        match a.kind {
            AgentKind::Known(_) => a.name,
            _ => None,
        }
    }

    #[test]
    fn whole_token_boundaries() {
        let c = Classifier::new(&db()).unwrap();
        assert_eq!(name(&c, "Mozilla/5.0 (compatible; Exabot/3.0)"), Some("Exabot"));
        assert_eq!(name(&c, "Mozilla/5.0 (compatible; Alexabot/1.0)"), None);
        assert_eq!(name(&c, "Mozilla/5.0 (compatible; Exabot-Thumbnails)"), None);
        assert_eq!(name(&c, "Mozilla/4.0 (compatible; MSIE 8.0; Windows NT 6.1; SLCC2)"), None);
        assert_eq!(name(&c, "LCC (+http://example.org)"), Some("LCC"));
        assert_eq!(name(&c, "Googlebot-Image/1.0"), Some("Googlebot-Image"));
        assert_eq!(name(&c, "googlebot"), Some("Googlebot"));
        assert_eq!(name(&c, "x GOOGLEBOT/2.1"), Some("Googlebot"));
        assert_eq!(name(&c, "Wildbot-News/2"), Some("Wildbot"));
        assert_eq!(name(&c, "Mozilla/5.0 (compatible; Yahoo! Slurp; http://x)"), Some("Yahoo! Slurp"));
        assert_eq!(name(&c, "my regex42bot"), Some("RegexBot"));
    }

    #[test]
    fn uppercase_in_a_ua_regex_matches_any_case_and_costs_no_classes() {
        let yaml = "version: 1\nbots:\n  - {name: Jav, operator: T, category: tool, robots_tokens: [Jav], \
                    ua_regex: '(?:^|[^A-Za-z0-9_-])JaVa/[0-9]', obeys_robots: false}\n";
        let c = Classifier::new(&BotDb::from_yaml(yaml).unwrap()).unwrap();
        for ua in ["Java/17.0.9", "JAVA/1.8", "x java/8"] {
            assert_eq!(name(&c, ua), Some("Jav"), "{ua}");
        }
        assert_eq!(name(&c, "Javanese/1.0"), None);
        // The walks never see uppercase, so the alphabet must not split it.
        let classes = c.fwd.byte_classes();
        assert!((b'A'..=b'Z').all(|b| classes.get(b) == classes.get(b'A')));
    }

    #[test]
    fn skipping_words_without_a_suspect_needle_changes_no_token() {
        // `product_tokens` runs the robot-word search only in words where the
        // automaton saw a suspect needle end; it must find what a search of
        // every word finds.
        let c = Classifier::builtin();
        let extra = [
            "Mozilla/5.0 (compatible; Zzyzxbot/1.0; +https://zzyzx.example/bot) Go-http-client/1.1",
            "QuuxCrawler/3.2 (quux@example.org) minio-go/v6 aws-sdk-go-v2 Python/3.11 foo.go",
            "Mozilla/5.0 (Java; U; en-US; samsung-gt-s5380) UCBrowser8.2.0.154/69/444/UCWEB Mobile",
            "Screaming Frog SEO Spider/19.0 GomezAgent l9scan CookieHubScan okhttp/4.9",
        ];
        let samples = c.db().bots().iter().flat_map(|b| b.samples.iter().map(String::as_str));
        let mut n = 0;
        for ua in samples.chain(extra) {
            let ua = ua.as_bytes();
            let scan = c.scan(ua);
            let (mut fast, mut full) = (Vec::new(), Vec::new());
            heuristics::product_tokens(ua, &scan.signals(), &mut fast, MAX_UA_TOKENS);
            let every_word = heuristics::Signals { suspect: true, suspect_ends: None, marker: scan.marker };
            heuristics::product_tokens(ua, &every_word, &mut full, MAX_UA_TOKENS);
            assert_eq!(fast, full, "{}", String::from_utf8_lossy(ua));
            n += 1;
        }
        assert!(n > 200, "{n}");
    }

    #[test]
    fn starting_after_an_opening_changes_nothing() {
        let c = Classifier::builtin();
        assert_eq!(c.shortcuts.len(), OPENINGS.len(), "the builtin database allows every shortcut");
        let samples = c.db().bots().iter().flat_map(|b| b.samples.iter().map(String::as_str));
        // Each opening alone, with one more byte, and as a whole browser UA
        // (in upper case too).
        let openings: Vec<String> = OPENINGS
            .iter()
            .map(|o| String::from_utf8_lossy(o).into_owned())
            .flat_map(|o| [o.clone(), format!("{o}1"), format!("{o}124.0 Safari/537.36"), o.to_uppercase() + "1"])
            .collect();
        let mut n = 0;
        for ua in samples.chain(REFERENCE_BROWSERS.iter().copied()).chain(openings.iter().map(String::as_str)) {
            let ua = ua.as_bytes();
            assert_eq!(c.scan(ua), c.scan_with(ua, &[]), "{}", String::from_utf8_lossy(ua));
            n += usize::from(c.shortcuts.iter().any(|s| opens_with(ua, s.opening)));
        }
        assert!(n > 100, "{n} UAs took a shortcut");
        // Every sample glued right after each opening: literals that start
        // at, or run across, the point where the fast walk resumes.
        for o in OPENINGS {
            for sample in c.db().bots().iter().flat_map(|b| b.samples.iter()) {
                let ua = [o, sample.as_bytes()].concat();
                assert_eq!(c.scan(&ua), c.scan_with(&ua, &[]), "{}", String::from_utf8_lossy(&ua));
            }
        }
    }

    #[test]
    fn non_tool_wins_over_tool() {
        let c = Classifier::new(&db()).unwrap();
        assert_eq!(name(&c, "curl/8.0 Googlebot/2.1"), Some("Googlebot"));
        assert_eq!(name(&c, "curl/8.0"), Some("curl"));
    }

    #[test]
    fn compatibility_claims_and_urls_rank_last() {
        let c = Classifier::new(&db()).unwrap();
        assert_eq!(name(&c, "FreshFeed/1.1 (+https://x.example) like Googlebot"), None);
        assert_eq!(name(&c, "SentiBot (compatible with Googlebot)"), None);
        assert_eq!(name(&c, "Exabot/1.0 (+http://x.example/googlebot.html)"), Some("Exabot"));
        assert_eq!(name(&c, "Foo (+http://x.example/googlebot.html)"), Some("Googlebot"));
    }

    #[test]
    fn tokens_most_specific_first() {
        let c = Classifier::new(&db()).unwrap();
        let a = c.classify(b"Googlebot-Image/1.0 Extra/2");
        assert_eq!(a.tokens, ["Googlebot-Image", "Googlebot", "Extra"]);
        let b = c.classify(b"Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0");
        assert_eq!(b.kind, AgentKind::Browser);
        assert!(b.tokens.is_empty() && b.name.is_none());
    }

    #[test]
    fn unknown_bot_is_other_bot() {
        let c = Classifier::new(&db()).unwrap();
        let a = c.classify(b"Mozilla/5.0 (compatible; NewCrawler/0.1; +https://new.example/bot)");
        assert_eq!(a.kind, AgentKind::UnknownBot);
        assert_eq!(a.category, Category::OtherBot);
        assert_eq!(a.name, Some("NewCrawler"));
        assert_eq!(a.tokens, ["NewCrawler"]);
        assert_eq!(c.classify(b"").kind, AgentKind::UnknownBot);
    }

    #[test]
    fn pattern_matching_a_browser_is_rejected() {
        let text = "version: 1\nbots:\n  - name: Bad\n    operator: x\n    category: seo\n    robots_tokens: [Bad]\n    ua: [AppleWebKit]\n    obeys_robots: true\n";
        let err = Classifier::new(&BotDb::from_yaml(text).unwrap()).unwrap_err();
        assert!(matches!(err, DbError::MatchesBrowser { index: 0, .. }), "{err}");
    }

    #[test]
    fn fast_path_agrees_with_word_rules() {
        // The automaton's signals must give the same answer as the slow
        // substring checks they stand for.
        let c = Classifier::new(&db()).unwrap();
        for ua in [
            "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36",
            "Nokia3360/1.2.1 (1.04)",
            "TLSProber/0.8",
            "Mozilla/5.0 (Java; U; Id; lg-t300) UCBrowser8.2.1.144/69/444/UCWEB Mobile UNTRUSTED/1.0",
            "python-requests/2.0",
            "foo@example.com",
        ] {
            let b = ua.as_bytes();
            let scan = c.scan(b);
            assert_eq!(scan.n_suspect > 0, heuristics::has_suspect(b), "{ua}");
            assert_eq!(scan.marker, heuristics::has_marker(b), "{ua}");
        }
    }

    /// UA fragments rich in needles, boundaries and odd bytes.
    const FRAGMENTS: &[&str] = include!("../../tests/data/agent/ua_fragments.rs");

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]

        /// The automaton's signals (suspect needle positions, markers) must
        /// give exactly the answer of the slow substring checks.
        #[test]
        fn fast_path_equals_slow_path(parts in proptest::collection::vec(0..FRAGMENTS.len(), 0..30)) {
            static C: std::sync::OnceLock<Classifier> = std::sync::OnceLock::new();
            let c = C.get_or_init(|| Classifier::new(&db()).unwrap());
            let ua: String = parts.iter().map(|&i| FRAGMENTS[i]).collect();
            let b = ua.as_bytes();
            let scan = c.scan(b);
            proptest::prop_assert_eq!(scan.n_suspect > 0, heuristics::has_suspect(b));
            proptest::prop_assert_eq!(scan.marker, heuristics::has_marker(b));
            let fast = heuristics::analyze(b, &scan.signals());
            let slow = heuristics::analyze(b, &heuristics::Signals::of(b));
            proptest::prop_assert_eq!(fast, slow, "{}", ua);
        }
    }

    #[test]
    fn long_and_odd_input() {
        let c = Classifier::new(&db()).unwrap();
        let mut big = vec![b'A'; 100_000];
        big.extend_from_slice(b" Googlebot");
        assert_eq!(c.classify(&big).kind, AgentKind::UnknownBot); // beyond the cap
        let weird = [0u8, 0xff, 0xfe, b'(', b')', b';', 0x80, b'G'];
        let _ = c.classify(&weird);
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
