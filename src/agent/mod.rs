//! Bot database and User-Agent classifier.
//!
//! [`BotDb`] is the list of known robots (`conf/bots.yaml`, optionally merged
//! with a site's own list); [`Classifier`] compiles it once into a single
//! automaton and answers, per request, "which robot is this, and which
//! robots.txt tokens does it obey?" as an [`Agent`].
//!
//! ```
//! use robotgate::agent::{AgentKind, Classifier};
//! let classifier = Classifier::builtin();
//! let ua = b"Mozilla/5.0 (compatible; SomeNewCrawler/0.3; +https://crawler.example/)";
//! let agent = classifier.classify(ua);
//! assert_eq!(agent.kind, AgentKind::UnknownBot);
//! assert_eq!(agent.name, Some("SomeNewCrawler"));
//! println!("{}", robotgate::agent::to_json_line(ua, &agent, None));
//! ```
//!
//! One concern per file, and a User-Agent flows one way through them:
//! `classify` (the [`Classifier`], the entry point) runs `automaton` (the
//! literals, the trie regex, the precomputed walks, the DFAs) and then
//! `unknown` (the rules for robots the database does not know, and naming),
//! unless `frozen` (the whole frozen strings of today's browsers) answers
//! first; they draw on `vocab` (needle and word lists) and `words` (cutting a UA
//! into words, finding URLs and e-mail addresses). `db` is the database they
//! are compiled from.

mod automaton;
mod classify;
mod db;
pub mod disguise;
pub mod extensions;
mod frozen;
mod grammar;
mod memo;
mod purpose;
mod table;
mod unknown;
mod vocab;
mod words;

pub use classify::{Classifier, MAX_UA_LEN, MAX_UA_TOKENS};
pub use db::{Bot, BotDb, Category, DbError, DB_VERSION};
pub use extensions::{Extension, ExtensionClaim, Ignored};
pub use memo::{claim_here, classify_here, remembered_here, Memo, Remembered, MEMO_MAX_UA};
pub use purpose::{Purpose, PurposeSource, Purposes};

use serde::Serialize;

/// The grammar reader's device and vendor slots of `ua` (issue #53), as
/// byte ranges in order: what the classifier never takes for a robot's
/// word. For the fuzz target `ua_grammar` and `tests/fuzz_regressions.rs`;
/// the classifier reads them itself, only when it has a match to weigh.
#[doc(hidden)]
pub fn grammar_slots(ua: &[u8]) -> Vec<std::ops::Range<usize>> {
    grammar::read(ua).slots().collect()
}

/// The grammar reader's other answers for a span `start..end` of `ua`
/// (issue #53): whether it lies in a slot, whether it stands where a robot
/// names itself, and whether `ua` is shaped like a person's app. For the
/// fuzz target `ua_grammar`.
///
/// # Panics
/// If `start > end` or `end > ua.len()` (the classifier passes only spans
/// of `ua`).
#[doc(hidden)]
pub fn grammar_probe(ua: &[u8], start: usize, end: usize) -> (bool, bool, bool) {
    assert!(start <= end && end <= ua.len(), "a span of the User-Agent");
    (grammar::read(ua).in_slot(start, end), grammar::robot_context(ua, start, end), grammar::is_app(ua))
}

/// How a User-Agent was recognised.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AgentKind {
    /// A database entry; the index is into [`Classifier::db`]`.bots()`.
    Known(usize),
    /// Evidently automated but not in the database (robot word, contact
    /// address, HTTP library, empty UA, or not shaped like a browser).
    UnknownBot,
    /// Looks like a human's browser.
    Browser,
}

/// The classification of one User-Agent.
///
/// Borrows from the [`Classifier`] (database names) and from the UA bytes
/// (names of unknown robots), so classifying allocates at most the `tokens`
/// vector, and nothing for browsers: this runs on every proxied request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Agent<'a> {
    /// How it was recognised.
    pub kind: AgentKind,
    /// The robot's name: the database name, or the product name an unknown
    /// robot announces (without `/version`); `None` for browsers and for
    /// robots that announce no usable name.
    pub name: Option<&'a str>,
    /// For a database entry, the name the robot announces when it is more
    /// specific than the entry's: a product token of the UA that extends one
    /// of the entry's names (`aws-sdk-java` for `aws-sdk`, `DuckDuckBot-Https`
    /// for `DuckDuckBot`), or, when the entry is an HTTP library, the robot
    /// built on it (`PHP-Curl-Class` for `curl`). Taken from the UA, so it is
    /// attacker-controlled: policy and metrics use [`Agent::name`].
    pub announced: Option<&'a str>,
    /// [`Category::Browser`] for browsers, [`Category::OtherBot`] for unknown
    /// robots.
    pub category: Category,
    /// Candidate robots.txt user-agent tokens, most specific first: the
    /// database's `robots_tokens`, then product names the UA itself announces
    /// (so a site's own group for a robot the database does not know still
    /// applies). Empty for browsers.
    pub tokens: Tokens<'a>,
    /// Whether the robot is documented to obey robots.txt; `None` if unknown.
    pub obeys_robots: Option<bool>,
    /// What the robot fetches for, as its operator documents it (empty: not
    /// documented, or not a database robot).
    pub purposes: Purposes,
    /// The operator, for database entries.
    pub operator: Option<&'a str>,
    /// Other database robots, of other operators, that the User-Agent names
    /// too (`GPTBot/1.2 Perplexity-User/1.0`). Each is a claim the policy
    /// checks and judges (the strictest wins); empty for almost every
    /// User-Agent, and then allocates nothing.
    pub also: Vec<Claim<'a>>,
    /// The robots.txt extensions its operator says it ignores (the database
    /// entry's `extensions`); empty for robots not in the database.
    pub ignores: Ignored,
    /// An unknown robot named only by weak evidence (issue #53): a weak
    /// robot word, a generic one out of a robot's place, a bare URL, or a
    /// shape alone. Its violations are recorded but, unless the site's
    /// `policy.weak_evidence` is `enforce`, neither refused nor paced.
    /// `false` for database robots and browsers.
    pub weak_evidence: bool,
    /// What the rest of the request says against the browser its
    /// User-Agent claims (issue #67): empty unless the pipeline judged it,
    /// and then a browser with findings is a robot of category
    /// [`Category::Disguised`] ([`Agent::disguised`]).
    pub disguise: disguise::Findings,
}

/// One more database robot a User-Agent names ([`Agent::also`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim<'a> {
    /// Index into [`Classifier::db`]`.bots()`.
    pub index: usize,
    /// Its name.
    pub name: &'a str,
    /// Its category.
    pub category: Category,
    /// Its robots.txt tokens.
    pub tokens: &'a [String],
    /// The extensions its operator says it ignores.
    pub ignores: Ignored,
    /// Its documented purposes.
    pub purposes: Purposes,
}

impl<'a> Claim<'a> {
    /// The claim of database entry `index`, `bot`.
    pub fn of(index: usize, bot: &'a Bot) -> Claim<'a> {
        Claim {
            index,
            name: &bot.name,
            category: bot.category,
            tokens: &bot.robots_tokens,
            ignores: Ignored::of(&bot.extensions),
            purposes: bot.purpose_set(),
        }
    }
}

impl<'a> Agent<'a> {
    /// The name metrics count it under: a database robot's name, else
    /// `other` (a client cannot create series by sending User-Agents).
    pub fn metric_name(&self) -> &'a str {
        match (self.is_known(), self.name) {
            (true, Some(n)) => n,
            _ => "other",
        }
    }

    /// Whether this is a robot in a browser's clothes: a browser's
    /// User-Agent that the rest of its request contradicts (issue #67).
    pub fn disguised(&self) -> bool {
        self.disguise.any()
    }

    /// This browser as the robot `findings` say it is: an unknown robot of
    /// category [`Category::Disguised`], held to the `*` group (no token of
    /// its own). A browser with no findings, and any robot, is returned as
    /// it is.
    pub fn unmasked(self, findings: disguise::Findings) -> Agent<'a> {
        if self.kind != AgentKind::Browser || !findings.any() {
            return self;
        }
        Agent {
            kind: AgentKind::UnknownBot,
            category: Category::Disguised,
            weak_evidence: !findings.strong(),
            disguise: findings,
            ..self
        }
    }

    /// This agent as the one robot `index` it names (the chosen entry or
    /// one of [`Agent::also`]), with the others dropped: what a client
    /// verified as that robot is judged as.
    pub fn narrowed_to(mut self, index: usize) -> Agent<'a> {
        if self.kind == AgentKind::Known(index) {
            self.also.clear();
            return self;
        }
        let Some(claim) = self.also.iter().find(|c| c.index == index).cloned() else { return self };
        Agent {
            kind: AgentKind::Known(index),
            name: Some(claim.name),
            announced: None,
            category: claim.category,
            tokens: claim.tokens.iter().map(String::as_str).collect(),
            obeys_robots: self.obeys_robots,
            purposes: claim.purposes,
            operator: None,
            also: Vec::new(),
            ignores: claim.ignores,
            weak_evidence: false,
            disguise: disguise::Findings::NONE,
        }
    }
}

/// How many of an agent's tokens are held without an allocation: what a
/// database robot's `robots_tokens` and the few its User-Agent adds
/// usually come to.
pub const TOKENS_INLINE: usize = 3;

/// An agent's robots.txt tokens ([`Agent::tokens`]), most specific first:
/// up to [`TOKENS_INLINE`] inline, so that an agent recalled from the memo
/// for each request of a robot allocates nothing; more on the heap. Reads
/// as a slice.
#[derive(Clone)]
pub struct Tokens<'a>(Repr<'a>);

#[derive(Clone)]
enum Repr<'a> {
    Inline([&'a str; TOKENS_INLINE], u8),
    Heap(Vec<&'a str>),
}

impl Default for Tokens<'_> {
    fn default() -> Self {
        Tokens::new()
    }
}

impl<'a> Tokens<'a> {
    /// No tokens.
    pub const fn new() -> Tokens<'a> {
        Tokens(Repr::Inline([""; TOKENS_INLINE], 0))
    }

    /// Add `token` last.
    pub fn push(&mut self, token: &'a str) {
        match &mut self.0 {
            Repr::Inline(a, n) if usize::from(*n) < TOKENS_INLINE => {
                a[usize::from(*n)] = token;
                *n += 1;
            }
            Repr::Inline(a, _) => {
                let mut v = a.to_vec();
                v.push(token);
                self.0 = Repr::Heap(v);
            }
            Repr::Heap(v) => v.push(token),
        }
    }
}

impl<'a> std::ops::Deref for Tokens<'a> {
    type Target = [&'a str];
    fn deref(&self) -> &[&'a str] {
        match &self.0 {
            Repr::Inline(a, n) => &a[..usize::from(*n)],
            Repr::Heap(v) => v,
        }
    }
}

impl<'a> FromIterator<&'a str> for Tokens<'a> {
    fn from_iter<I: IntoIterator<Item = &'a str>>(iter: I) -> Tokens<'a> {
        let mut t = Tokens::new();
        iter.into_iter().for_each(|s| t.push(s));
        t
    }
}

impl<'a> From<Vec<&'a str>> for Tokens<'a> {
    fn from(v: Vec<&'a str>) -> Tokens<'a> {
        if v.len() > TOKENS_INLINE {
            Tokens(Repr::Heap(v))
        } else {
            v.into_iter().collect()
        }
    }
}

impl PartialEq for Tokens<'_> {
    fn eq(&self, other: &Tokens<'_>) -> bool {
        **self == **other
    }
}

impl Eq for Tokens<'_> {}

impl<const N: usize> PartialEq<[&str; N]> for Tokens<'_> {
    fn eq(&self, other: &[&str; N]) -> bool {
        **self == other[..]
    }
}

impl std::fmt::Debug for Tokens<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl Agent<'_> {
    /// A browser: no name, no tokens.
    pub const fn browser() -> Agent<'static> {
        Agent {
            kind: AgentKind::Browser,
            name: None,
            announced: None,
            category: Category::Browser,
            tokens: Tokens::new(),
            obeys_robots: None,
            purposes: Purposes::UNKNOWN,
            operator: None,
            also: Vec::new(),
            ignores: Ignored::NONE,
            weak_evidence: false,
            disguise: disguise::Findings::NONE,
        }
    }

    /// Whether this is a robot (known or not).
    pub fn is_bot(&self) -> bool {
        self.kind != AgentKind::Browser
    }

    /// Whether a database entry matched (as opposed to an unknown robot or a
    /// browser).
    pub fn is_known(&self) -> bool {
        matches!(self.kind, AgentKind::Known(_))
    }
}

#[derive(Serialize)]
struct JsonLine<'a> {
    user_agent: &'a str,
    is_bot: bool,
    kind: &'static str,
    name: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    entry: Option<&'a str>,
    category: &'static str,
    tokens: &'a [&'a str],
    operator: Option<&'a str>,
    obeys_robots: Option<bool>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    claims: Vec<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    group: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    evidence: Option<Evidence<'a>>,
}

/// Why a User-Agent is a robot, for `robotgate classify` (issue #53).
#[derive(Serialize)]
struct Evidence<'a> {
    /// The robot's token as the UA writes it (empty when it names none).
    token: &'a str,
    /// Where it stands: `first` (the string's first product), `compatible`
    /// (after `compatible;`), `comment`, `product` (a `Name/version` later
    /// on), `text`, or `none`.
    position: &'static str,
    /// `known` (a database robot's token) or `unknown` (the word rules).
    kind: &'static str,
    /// `weak` for an unknown robot named only by weak evidence
    /// ([`Agent::weak_evidence`]: recorded, not refused or paced by
    /// default), else `strong`.
    strength: &'static str,
}

/// The evidence of a robot agent: the first place in `ua` where its name
/// or one of its tokens stands (ASCII case-insensitive, whole word).
fn evidence<'u>(ua: &'u str, agent: &Agent<'_>) -> Option<Evidence<'u>> {
    if !agent.is_bot() {
        return None;
    }
    let kind = if agent.is_known() { "known" } else { "unknown" };
    let strength = if agent.weak_evidence { "weak" } else { "strong" };
    let names = agent.announced.into_iter().chain(agent.name).chain(agent.tokens.iter().copied());
    let bytes = ua.as_bytes();
    for name in names.filter(|n| !n.is_empty()) {
        let Some(start) = (0..bytes.len().saturating_sub(name.len() - 1)).find(|&i| {
            ua.is_char_boundary(i)
                && ua.is_char_boundary(i + name.len())
                && bytes[i..i + name.len()].eq_ignore_ascii_case(name.as_bytes())
        }) else {
            continue;
        };
        let end = start + name.len();
        let depth = bytes[..start].iter().fold(0i32, |d, &b| match b {
            b'(' => d + 1,
            b')' => (d - 1).max(0),
            _ => d,
        });
        let before = ua[..start].trim_end_matches([' ', ';', ',']);
        let position = if start == 0 {
            "first"
        } else if before.len() >= 10 && before.as_bytes()[before.len() - 10..].eq_ignore_ascii_case(b"compatible") {
            "compatible"
        } else if depth > 0 {
            "comment"
        } else if bytes.get(end) == Some(&b'/') {
            "product"
        } else {
            "text"
        };
        return Some(Evidence { token: &ua[start..end], position, kind, strength });
    }
    Some(Evidence { token: "", position: "none", kind, strength })
}

/// One JSON object (no trailing newline) describing a classification, for
/// `robotgate classify` and logs.
///
/// Keys: `user_agent` (lossy UTF-8 of the whole header), `is_bot`, `kind`
/// (`known`, `unknown-bot`, `browser`), `name` (the name the robot goes by:
/// [`Agent::announced`] if any, else [`Agent::name`]), `entry` (the database
/// entry's name, for a known robot), `category`, `tokens`,
/// `operator`, `obeys_robots`, `claims` (the other robots the UA names,
/// [`Agent::also`]) only when there are any, and `group` (the chosen
/// robots.txt group) only when given, and `evidence` (a robot's token as
/// the UA writes it, its `position`, `kind` and `strength`) for robots. A person's app
/// (a media player, a podcast or mail app, a TV, an in-app browser,
/// an Electron app: `grammar::is_app`) is reported with `kind` and
/// `category` `app`; it is a browser to everything else (policy, metrics).
/// serde_json escapes control characters, so a hostile UA still
/// yields exactly one valid line.
pub fn to_json_line(ua: &[u8], agent: &Agent<'_>, group: Option<&str>) -> String {
    let user_agent = String::from_utf8_lossy(ua);
    let app = agent.kind == AgentKind::Browser && grammar::is_app(ua);
    let line = JsonLine {
        user_agent: &user_agent,
        is_bot: agent.is_bot(),
        kind: match agent.kind {
            AgentKind::Known(_) => "known",
            AgentKind::UnknownBot => "unknown-bot",
            AgentKind::Browser if app => "app",
            AgentKind::Browser => "browser",
        },
        name: agent.announced.or(agent.name),
        entry: agent.is_known().then_some(agent.name).flatten(),
        category: if app { "app" } else { agent.category.as_str() },
        tokens: &agent.tokens,
        operator: agent.operator,
        obeys_robots: agent.obeys_robots,
        claims: agent.also.iter().map(|c| c.name).collect(),
        group,
        evidence: evidence(&user_agent, agent),
    };
    serde_json::to_string(&line).expect("a struct of strings, bools and options always serializes")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_line_is_one_valid_line() {
        let c = Classifier::builtin();
        let ua = b"evil\r\n{\"is_bot\":false}\xff\x00 crawler";
        let agent = c.classify(ua);
        let line = to_json_line(ua, &agent, Some("*"));
        assert!(!line.contains('\n') && !line.contains('\r'));
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["is_bot"], true);
        assert_eq!(v["group"], "*");
        assert_eq!(v["category"], "other-bot");
        assert!(v["user_agent"].as_str().unwrap().starts_with("evil\r\n"));
    }

    #[test]
    fn json_line_browser_has_null_name_and_no_group() {
        let c = Classifier::builtin();
        let ua = b"Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0";
        let v: serde_json::Value = serde_json::from_str(&to_json_line(ua, &c.classify(ua), None)).unwrap();
        assert_eq!(v["is_bot"], false);
        assert!(v["name"].is_null());
        assert_eq!(v["category"], "browser");
        assert!(v.get("group").is_none());
        assert_eq!(v["tokens"], serde_json::json!([]));
    }

    #[test]
    fn known_bot_json() {
        let c = Classifier::builtin();
        let ua = b"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";
        let v: serde_json::Value = serde_json::from_str(&to_json_line(ua, &c.classify(ua), None)).unwrap();
        assert_eq!(v["name"], "Googlebot");
        assert_eq!(v["kind"], "known");
        assert_eq!(v["obeys_robots"], true);
        assert_eq!(v["tokens"][0], "Googlebot");
    }

    #[test]
    fn announced_name_is_reported_but_policy_uses_the_entry() {
        let c = Classifier::builtin();
        let json = |ua: &[u8]| -> serde_json::Value {
            serde_json::from_str(&to_json_line(ua, &c.classify(ua), None)).unwrap()
        };
        // A family member announces a more specific name than its entry.
        let ua = b"aws-sdk-java/1.11.129 Linux/4.4.35 OpenJDK_64-Bit_Server_VM/25.141-b16/1.8.0_141";
        let a = c.classify(ua);
        assert_eq!((a.name, a.announced), (Some("aws-sdk"), Some("aws-sdk-java")));
        assert_eq!((json(ua)["name"].as_str(), json(ua)["entry"].as_str()), (Some("aws-sdk-java"), Some("aws-sdk")));
        // A UA naming the entry itself keeps the entry's name, whatever else it holds.
        let ua = b"rogerbot/1.0 (http://moz.com/help/pro/what-is-rogerbot-, rogerbot-crawler+shiny@moz.com)";
        assert_eq!(c.classify(ua).announced, None);
        assert_eq!(json(ua)["name"], "rogerbot");
        // Unknown robots and browsers have no entry.
        assert!(json(b"SomeNewCrawler/0.3 (+https://crawler.example/)").get("entry").is_none());
    }
}
