//! The bot database: the YAML shape, its validation and the runtime form.
//!
//! `conf/bots.yaml` is data, not code: each entry names one robot, who runs it,
//! what it is for, which robots.txt tokens it obeys and how to recognise its
//! User-Agent. [`BotDb::from_yaml`] checks everything a site owner could get
//! wrong in a local override (bad category, duplicate names, empty patterns,
//! CR/LF that would end up in log lines or response headers) and names the
//! entry, so `robotgate lint` can point at it.

use std::collections::HashMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use super::extensions::{claims_of, ExtensionClaim, RawClaim};

/// Embedded copy of `conf/bots.yaml`, the database [`BotDb::builtin`] loads.
pub(crate) const BUILTIN_YAML: &str = include_str!("../../conf/bots.yaml");

/// The only `version:` this code understands.
pub const DB_VERSION: u32 = 1;

/// What a robot is for; drives policy defaults (e.g. "block AI crawlers").
///
/// The YAML names are kebab-case (`ai-crawler`); [`Category::as_str`] returns
/// the same names, so logs and the database use one vocabulary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Category {
    /// Web search engine crawler (Googlebot, bingbot).
    Search,
    /// Collects training data for AI models (GPTBot, ClaudeBot).
    AiCrawler,
    /// Fetches pages to build an AI search index or answer (OAI-SearchBot).
    AiSearch,
    /// Fetches a page because a user asked an AI assistant to (ChatGPT-User).
    AiUser,
    /// SEO and backlink analysis crawler (AhrefsBot, SemrushBot).
    Seo,
    /// Link preview fetcher of a social network or messenger.
    Social,
    /// Uptime or performance monitoring.
    Monitor,
    /// Web archive crawler (archive.org_bot).
    Archiver,
    /// Feed reader or podcast fetcher.
    Feed,
    /// Generic HTTP library, command-line tool or headless browser.
    Tool,
    /// Any other robot, including robots not in the database.
    OtherBot,
    /// A human's browser (never used in the database itself).
    Browser,
}

impl Category {
    /// Every category, in declaration order.
    pub const ALL: [Category; 12] = [
        Category::Search,
        Category::AiCrawler,
        Category::AiSearch,
        Category::AiUser,
        Category::Seo,
        Category::Social,
        Category::Monitor,
        Category::Archiver,
        Category::Feed,
        Category::Tool,
        Category::OtherBot,
        Category::Browser,
    ];

    /// The kebab-case name used in `bots.yaml`, logs and JSON output.
    pub const fn as_str(self) -> &'static str {
        match self {
            Category::Search => "search",
            Category::AiCrawler => "ai-crawler",
            Category::AiSearch => "ai-search",
            Category::AiUser => "ai-user",
            Category::Seo => "seo",
            Category::Social => "social",
            Category::Monitor => "monitor",
            Category::Archiver => "archiver",
            Category::Feed => "feed",
            Category::Tool => "tool",
            Category::OtherBot => "other-bot",
            Category::Browser => "browser",
        }
    }

    /// Parses a kebab-case name; `None` when it is not one of [`Category::ALL`].
    pub fn from_name(name: &str) -> Option<Category> {
        Category::ALL.into_iter().find(|c| c.as_str() == name)
    }
}

impl fmt::Display for Category {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One robot of the database, validated.
///
/// Field meanings follow `conf/bots.yaml`; see [`BotDb::from_yaml`] for what is
/// checked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Bot {
    /// Canonical name: the product token the robot announces in its UA.
    pub name: String,
    /// Who runs it (company or project).
    pub operator: String,
    /// What it is for. Never [`Category::Browser`].
    pub category: Category,
    /// robots.txt tokens it obeys, most specific first.
    pub robots_tokens: Vec<String>,
    /// Usage-control tokens (e.g. `Google-Extended`) that never appear in a UA.
    /// Not used to choose a robots.txt group.
    pub control_tokens: Vec<String>,
    /// Case-insensitive whole-token literals; a trailing `*` allows more token
    /// characters after the literal.
    pub ua: Vec<String>,
    /// Optional raw regex (regex-automata syntax, ASCII, case-insensitive).
    pub ua_regex: Option<String>,
    /// Whether the operator says it honours robots.txt.
    pub obeys_robots: bool,
    /// Documentation page of the robot.
    pub url: Option<String>,
    /// Real UA strings of this robot; tests check each classifies to it.
    pub samples: Vec<String>,
    /// IP range feeds (by name, see [`crate::identity::BUILTIN_FEEDS`]) its
    /// operator publishes for it; used by [`crate::identity::check`].
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ip_ranges: Vec<String>,
    /// Host-name suffixes its forward-confirmed reverse DNS ends in
    /// (`googlebot.com`), as the operator documents them. Matched on label
    /// boundaries by the later DNS step.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rdns: Vec<String>,
    /// The operator's page saying that `ip_ranges` list every address the
    /// robot crawls from; then an address outside them is not the robot,
    /// and reverse DNS is not asked (issue #39). `None`: the ranges may be
    /// incomplete, and reverse DNS (if any) decides outside them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ranges_complete: Option<String>,
    /// Hosts (or host suffixes, on label boundaries) of the Web Bot Auth
    /// agents that sign for this robot (`Signature-Agent`); a request signed
    /// by one of them, or by a host under one of its `rdns` suffixes, is the
    /// robot.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub signature_agents: Vec<String>,
    /// The robots.txt extensions its operator says it follows or ignores,
    /// each with the page that says so (see [`crate::agent::extensions`]);
    /// empty: unknown.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<ExtensionClaim>,
    /// What it fetches for, each with where that is documented (issue #29).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub purposes: Vec<super::PurposeSource>,
}

/// The YAML shape of one entry. Category stays a string so that a bad value is
/// reported with the entry's index and name rather than as a bare serde error.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBot {
    name: String,
    operator: String,
    category: String,
    robots_tokens: Vec<String>,
    #[serde(default)]
    control_tokens: Vec<String>,
    #[serde(default)]
    ua: Vec<String>,
    #[serde(default)]
    ua_regex: Option<String>,
    obeys_robots: bool,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    samples: Vec<String>,
    #[serde(default)]
    ip_ranges: Vec<String>,
    #[serde(default)]
    rdns: Vec<String>,
    #[serde(default)]
    ranges_complete: Option<String>,
    #[serde(default)]
    signature_agents: Vec<String>,
    #[serde(default)]
    extensions: Vec<RawClaim>,
    #[serde(default)]
    purposes: std::collections::BTreeMap<String, String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDb {
    version: u32,
    bots: Vec<RawBot>,
}

/// What is wrong with a bot database.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    /// Not YAML, or not the shape of `bots.yaml` (unknown keys included).
    #[error("bots.yaml: {0}")]
    Yaml(#[from] crate::yaml::YamlError),
    /// `version:` is not [`DB_VERSION`].
    #[error("bots.yaml: unsupported version {found} (this build reads version {DB_VERSION})")]
    Version {
        /// The version found in the file.
        found: u32,
    },
    /// One entry has a bad field.
    #[error("bots[{index}] `{name}`: {reason}")]
    Invalid {
        /// 0-based position in `bots:` (after merging, in the merged list).
        index: usize,
        /// The entry's name as written.
        name: String,
        /// What is wrong, naming the field.
        reason: String,
    },
    /// Two entries share a name (compared case-insensitively).
    #[error("bots[{index}] `{name}`: duplicate name, already used by bots[{first}]")]
    DuplicateName {
        /// Position of the second entry.
        index: usize,
        /// The duplicated name.
        name: String,
        /// Position of the first entry with that name.
        first: usize,
    },
    /// Two entries have the same `ua` literal, so one could never win.
    #[error("bots[{index}] `{name}`: ua `{pattern}` is also a pattern of bots[{other}] `{other_name}`")]
    DuplicatePattern {
        /// Position of the later entry.
        index: usize,
        /// Its name.
        name: String,
        /// The shared literal.
        pattern: String,
        /// Position of the earlier entry.
        other: usize,
        /// Its name.
        other_name: String,
    },
    /// `ua_regex` does not parse or compile.
    #[error("bots[{index}] `{name}`: bad ua_regex")]
    Regex {
        /// Position of the entry.
        index: usize,
        /// Its name.
        name: String,
        /// The parser's or compiler's explanation.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A pattern matches an ordinary browser UA, so it would flag humans.
    #[error("bots[{index}] `{name}`: a pattern matches the browser UA `{browser}`")]
    MatchesBrowser {
        /// Position of the entry.
        index: usize,
        /// Its name.
        name: String,
        /// The reference browser UA it matched.
        browser: &'static str,
    },
    /// The combined automaton could not be built (e.g. size limit exceeded).
    #[error("bot database: cannot build the UA automaton")]
    Build {
        /// regex-automata's explanation.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

/// A validated, ordered list of robots.
///
/// Order matters: it breaks ties between entries matching one UA (see
/// [`crate::agent::Classifier`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BotDb {
    bots: Vec<Bot>,
}

impl BotDb {
    /// Parses and validates a `bots.yaml` document.
    ///
    /// Checked per entry: name, operator and tokens non-empty; no control
    /// characters (CR/LF would split log lines); category known and not
    /// `browser`; at least one `ua` literal or a `ua_regex`; `ua` literals
    /// ASCII with `*` only at the end; `ua_regex` parses (ASCII,
    /// case-insensitive, no Unicode classes) and cannot match the empty
    /// string. Across entries: names unique case-insensitively, and no `ua`
    /// literal shared by two entries.
    ///
    /// # Errors
    /// [`DbError`] naming the first offending entry.
    ///
    /// # Example
    /// ```
    /// let db = robotgate::agent::BotDb::from_yaml(r#"
    /// version: 1
    /// bots:
    ///   - name: ExampleBot
    ///     operator: Example
    ///     category: other-bot
    ///     robots_tokens: [ExampleBot]
    ///     ua: [ExampleBot]
    ///     obeys_robots: true
    /// "#)?;
    /// assert_eq!(db.bots()[0].name, "ExampleBot");
    /// # Ok::<(), robotgate::agent::DbError>(())
    /// ```
    pub fn from_yaml(text: &str) -> Result<BotDb, DbError> {
        let raw: RawDb = crate::yaml::from_str(text)?;
        if raw.version != DB_VERSION {
            return Err(DbError::Version { found: raw.version });
        }
        let bots =
            raw.bots.into_iter().enumerate().map(|(index, raw)| raw.validate(index)).collect::<Result<Vec<_>, _>>()?;
        let db = BotDb { bots };
        db.check_across()?;
        Ok(db)
    }

    /// The database compiled into the binary (`conf/bots.yaml`).
    ///
    /// # Panics
    /// Only if the embedded file is invalid; `tests/bot_db.rs` proves it is not.
    pub fn builtin() -> BotDb {
        BotDb::from_yaml(BUILTIN_YAML).expect("embedded conf/bots.yaml is valid (tests/bot_db.rs)")
    }

    /// Builds a database from entries made in code, with the same checks as
    /// [`BotDb::from_yaml`].
    ///
    /// # Errors
    /// [`DbError`] naming the first offending entry.
    pub fn from_bots(bots: Vec<Bot>) -> Result<BotDb, DbError> {
        for (index, bot) in bots.iter().enumerate() {
            bot.check(index)?;
        }
        let db = BotDb { bots };
        db.check_across()?;
        Ok(db)
    }

    /// Overlays `other` on `self`: an entry of `other` whose name equals one of
    /// `self` (case-insensitively) replaces it in place, so it keeps its
    /// priority; the other entries of `other` are appended in their order.
    ///
    /// This is how a site extends or corrects the builtin list with its own
    /// file. The result is not re-validated here: two entries could now share
    /// a `ua` literal, which [`crate::agent::Classifier::new`] reports.
    pub fn merge(mut self, other: BotDb) -> BotDb {
        let mut by_name: HashMap<String, usize> =
            self.bots.iter().enumerate().map(|(i, b)| (b.name.to_ascii_lowercase(), i)).collect();
        for bot in other.bots {
            let key = bot.name.to_ascii_lowercase();
            match by_name.get(&key) {
                Some(&i) => self.bots[i] = bot,
                None => {
                    by_name.insert(key, self.bots.len());
                    self.bots.push(bot);
                }
            }
        }
        self
    }

    /// The entries, in priority order.
    pub fn bots(&self) -> &[Bot] {
        &self.bots
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.bots.len()
    }

    /// Whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.bots.is_empty()
    }

    /// Finds an entry by name, case-insensitively.
    pub fn get(&self, name: &str) -> Option<&Bot> {
        self.bots.iter().find(|b| b.name.eq_ignore_ascii_case(name))
    }

    /// Checks between entries: unique names, no shared literal.
    pub(crate) fn check_across(&self) -> Result<(), DbError> {
        let mut names: HashMap<String, usize> = HashMap::new();
        let mut literals: HashMap<String, usize> = HashMap::new();
        for (index, bot) in self.bots.iter().enumerate() {
            if let Some(&first) = names.get(&bot.name.to_ascii_lowercase()) {
                return Err(DbError::DuplicateName { index, name: bot.name.clone(), first });
            }
            names.insert(bot.name.to_ascii_lowercase(), index);
            for lit in &bot.ua {
                let key = lit.to_ascii_lowercase();
                match literals.get(&key) {
                    Some(&other) if other != index => {
                        return Err(DbError::DuplicatePattern {
                            index,
                            name: bot.name.clone(),
                            pattern: lit.clone(),
                            other,
                            other_name: self.bots[other].name.clone(),
                        });
                    }
                    Some(_) => {
                        return Err(invalid(index, &bot.name, format!("ua `{lit}` listed twice")));
                    }
                    None => {
                        literals.insert(key, index);
                    }
                }
            }
        }
        Ok(())
    }
}

impl RawBot {
    fn validate(mut self, index: usize) -> Result<Bot, DbError> {
        let category = match Category::from_name(&self.category) {
            Some(c) => c,
            None => {
                let known: Vec<&str> = Category::ALL[..11].iter().map(|c| c.as_str()).collect();
                return Err(invalid(
                    index,
                    &self.name,
                    format!("unknown category `{}` (one of: {})", self.category, known.join(", ")),
                ));
            }
        };
        let extensions = claims_of(self.extensions).map_err(|reason| invalid(index, &self.name, reason))?;
        let raw: Vec<(String, String)> = std::mem::take(&mut self.purposes).into_iter().collect();
        let purposes =
            super::purpose::validate(&raw, self.url.is_some()).map_err(|reason| invalid(index, &self.name, reason))?;
        let bot = Bot {
            purposes,
            name: self.name,
            operator: self.operator,
            category,
            robots_tokens: self.robots_tokens,
            control_tokens: self.control_tokens,
            ua: self.ua,
            ua_regex: self.ua_regex,
            obeys_robots: self.obeys_robots,
            url: self.url,
            samples: self.samples,
            ip_ranges: self.ip_ranges,
            rdns: self.rdns,
            ranges_complete: self.ranges_complete,
            signature_agents: self.signature_agents,
            extensions,
        };
        bot.check(index)?;
        Ok(bot)
    }
}

/// Characters of a product token, as RFC 9110 section 5.5 and robots.txt use
/// them in practice: the whole-token boundary is any other byte.
pub(crate) const fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

fn invalid(index: usize, name: &str, reason: String) -> DbError {
    DbError::Invalid { index, name: name.to_owned(), reason }
}

impl Bot {
    /// What reverse DNS can say of it outside its published ranges: nothing
    /// without `rdns` suffixes; nothing either when its operator says its
    /// ranges are complete (`ranges_complete`); else it may verify it.
    pub fn rdns_use(&self) -> crate::identity::Rdns {
        use crate::identity::Rdns;
        match (self.rdns.is_empty(), &self.ranges_complete) {
            (true, _) => Rdns::None,
            (false, Some(_)) => Rdns::Complete,
            (false, None) => Rdns::Asked,
        }
    }

    /// Its documented purposes as a set (empty: not documented).
    pub fn purpose_set(&self) -> super::Purposes {
        self.purposes.iter().map(|p| p.purpose).collect()
    }

    /// Per-entry checks (see [`BotDb::from_yaml`]).
    fn check(&self, index: usize) -> Result<(), DbError> {
        let bad = |reason: String| Err(invalid(index, &self.name, reason));
        // CR/LF or other controls would forge log lines or headers downstream.
        let text_fields = [("name", &self.name), ("operator", &self.operator)];
        for (field, value) in text_fields {
            if value.trim().is_empty() {
                return bad(format!("`{field}` is empty"));
            }
        }
        let lists = [
            ("robots_tokens", &self.robots_tokens),
            ("control_tokens", &self.control_tokens),
            ("ua", &self.ua),
            ("samples", &self.samples),
            ("ip_ranges", &self.ip_ranges),
            ("rdns", &self.rdns),
            ("signature_agents", &self.signature_agents),
        ];
        let singles = [("url", &self.url), ("ua_regex", &self.ua_regex), ("ranges_complete", &self.ranges_complete)];
        let all = text_fields
            .iter()
            .map(|&(f, v)| (f, v.as_str()))
            .chain(lists.iter().flat_map(|&(f, l)| l.iter().map(move |v| (f, v.as_str()))))
            .chain(singles.iter().filter_map(|&(f, v)| v.as_deref().map(|v| (f, v))));
        for (field, value) in all {
            if value.bytes().any(|b| b.is_ascii_control()) {
                return bad(format!("`{field}` contains a control character (CR, LF, tab...)"));
            }
        }
        if self.name.trim() != self.name {
            return bad("`name` has leading or trailing spaces".into());
        }
        if self.category == Category::Browser {
            return bad("category `browser` is not for database entries".into());
        }
        for token in self.robots_tokens.iter().chain(&self.control_tokens) {
            if token.is_empty() || !token.bytes().all(|b| is_token_byte(b) || b == b'.') {
                return bad(format!("robots.txt token `{token}` must be non-empty letters, digits, `_`, `-` or `.`"));
            }
        }
        if let Some(source) = &self.ranges_complete {
            if self.ip_ranges.is_empty() {
                return bad("ranges_complete: says complete ranges, but `ip_ranges` names none".into());
            }
            if !source.starts_with("https://") {
                return bad(format!(
                    "ranges_complete: `{source}` must be the https:// page where the operator says so"
                ));
            }
        }
        for feed in &self.ip_ranges {
            if !crate::identity::is_builtin_feed(feed) {
                let known: Vec<&str> = crate::identity::BUILTIN_FEEDS.iter().map(|(n, _)| *n).collect();
                return bad(format!("ip_ranges: unknown feed `{feed}` (one of: {})", known.join(", ")));
            }
        }
        for suffix in self.rdns.iter().chain(&self.signature_agents) {
            let labels_ok = suffix.split('.').all(|l| {
                !l.is_empty()
                    && l.len() <= 63
                    && !l.starts_with('-')
                    && !l.ends_with('-')
                    && l.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            });
            // At least two labels: a bare `com` would verify anyone's host name.
            if !labels_ok || !suffix.contains('.') || suffix.len() > 253 {
                return bad(format!(
                    "rdns `{suffix}`: a lowercase host-name suffix with at least two labels (googlebot.com), no leading dot"
                ));
            }
        }
        if self.ua.is_empty() && self.ua_regex.is_none() {
            return bad("no `ua` literal and no `ua_regex`: the entry could never match".into());
        }
        for lit in &self.ua {
            let body = lit.strip_suffix('*').unwrap_or(lit);
            if body.trim().is_empty() {
                return bad("empty `ua` literal".into());
            }
            if body.trim() != body {
                return bad(format!("ua `{lit}` has leading or trailing spaces"));
            }
            if !body.is_ascii() {
                return bad(format!("ua `{lit}` is not ASCII (matching is on ASCII bytes)"));
            }
            if body.contains('*') {
                return bad(format!("ua `{lit}`: `*` is only allowed at the end"));
            }
            if body.len() < 2 {
                return bad(format!("ua `{lit}` is shorter than 2 characters"));
            }
        }
        if let Some(re) = &self.ua_regex {
            if !re.is_ascii() {
                return bad("`ua_regex` is not ASCII".into());
            }
            let hir = regex_automata::util::syntax::parse_with(re, &syntax_config()).map_err(|e| DbError::Regex {
                index,
                name: self.name.clone(),
                source: Box::new(e),
            })?;
            if hir.properties().minimum_len().unwrap_or(0) == 0 {
                return bad("`ua_regex` can match the empty string".into());
            }
        }
        Ok(())
    }
}

/// Syntax options shared by every pattern: bytes, not UTF-8 (headers may hold
/// obs-text), ASCII case folding.
pub(crate) fn syntax_config() -> regex_automata::util::syntax::Config {
    regex_automata::util::syntax::Config::new().unicode(false).utf8(false).case_insensitive(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str, extra: &str) -> String {
        format!(
            "  - name: {name}\n    operator: Op\n    category: search\n    robots_tokens: [{name}]\n    obeys_robots: true\n{extra}"
        )
    }

    fn db(entries: &[String]) -> String {
        format!("version: 1\nbots:\n{}", entries.concat())
    }

    #[test]
    fn category_names_round_trip() {
        for c in Category::ALL {
            assert_eq!(Category::from_name(c.as_str()), Some(c));
            let yaml: Category = crate::yaml::from_str(c.as_str()).unwrap();
            assert_eq!(yaml, c);
        }
        assert_eq!(Category::from_name("AI-crawler"), None);
    }

    #[test]
    fn minimal_entry_loads() {
        let db = BotDb::from_yaml(&db(&[entry("FooBot", "    ua: [FooBot]\n")])).unwrap();
        assert_eq!(db.len(), 1);
        assert_eq!(db.bots()[0].category, Category::Search);
        assert!(db.bots()[0].control_tokens.is_empty());
    }

    #[test]
    fn bad_category_names_entry() {
        let text = db(&[
            entry("A-bot", "    ua: [A-bot]\n"),
            entry("B-bot", "    ua: [B-bot]\n").replace("search", "searching"),
        ]);
        let err = BotDb::from_yaml(&text).unwrap_err().to_string();
        assert!(err.contains("bots[1] `B-bot`") && err.contains("searching"), "{err}");
    }

    #[test]
    fn unknown_key_is_error() {
        let text = db(&[entry("A-bot", "    ua: [A-bot]\n    uas: [x]\n")]);
        assert!(matches!(BotDb::from_yaml(&text), Err(DbError::Yaml(_))));
    }

    #[test]
    fn wrong_version_is_error() {
        let text = db(&[entry("A-bot", "    ua: [A-bot]\n")]).replace("version: 1", "version: 2");
        assert!(matches!(BotDb::from_yaml(&text), Err(DbError::Version { found: 2 })));
    }

    #[test]
    fn duplicate_name_case_insensitive() {
        let text = db(&[entry("FooBot", "    ua: [FooBot]\n"), entry("foobot", "    ua: [foobot2]\n")]);
        assert!(matches!(BotDb::from_yaml(&text), Err(DbError::DuplicateName { index: 1, first: 0, .. })));
    }

    #[test]
    fn shared_literal_is_error() {
        let text = db(&[entry("FooBot", "    ua: [FooBot]\n"), entry("BarBot", "    ua: [foobot]\n")]);
        assert!(matches!(BotDb::from_yaml(&text), Err(DbError::DuplicatePattern { index: 1, other: 0, .. })));
    }

    #[test]
    fn empty_ua_is_error() {
        let text = db(&[entry("FooBot", "")]);
        let err = BotDb::from_yaml(&text).unwrap_err().to_string();
        assert!(err.contains("could never match"), "{err}");
        let text = db(&[entry("FooBot", "    ua: ['  ']\n")]);
        assert!(BotDb::from_yaml(&text).is_err());
    }

    #[test]
    fn star_only_at_end() {
        let text = db(&[entry("FooBot", "    ua: ['Foo*Bot']\n")]);
        assert!(BotDb::from_yaml(&text).is_err());
        let text = db(&[entry("FooBot", "    ua: ['FooBot*']\n")]);
        assert!(BotDb::from_yaml(&text).is_ok());
    }

    #[test]
    fn crlf_in_fields_is_error() {
        let text = db(&[entry("FooBot", "    ua: [\"Foo\\r\\nBot\"]\n")]);
        let err = BotDb::from_yaml(&text).unwrap_err().to_string();
        assert!(err.contains("control character"), "{err}");
        let text = db(&[entry("FooBot", "    ua: [FooBot]\n    url: \"http://x/\\n\"\n")]);
        assert!(BotDb::from_yaml(&text).is_err());
    }

    #[test]
    fn bad_regex_is_error() {
        let text = db(&[entry("FooBot", "    ua_regex: 'foo(bar'\n")]);
        assert!(matches!(BotDb::from_yaml(&text), Err(DbError::Regex { index: 0, .. })));
        let text = db(&[entry("FooBot", "    ua_regex: 'x*'\n")]);
        let err = BotDb::from_yaml(&text).unwrap_err().to_string();
        assert!(err.contains("empty string"), "{err}");
        let text = db(&[entry("FooBot", "    ua_regex: 'foo[0-9]+bot'\n")]);
        assert!(BotDb::from_yaml(&text).is_ok());
    }

    #[test]
    fn browser_category_rejected() {
        let text = db(&[entry("FooBot", "    ua: [FooBot]\n").replace("search", "browser")]);
        assert!(BotDb::from_yaml(&text).is_err());
    }

    #[test]
    fn merge_replaces_by_name_and_appends() {
        let base =
            BotDb::from_yaml(&db(&[entry("FooBot", "    ua: [FooBot]\n"), entry("BarBot", "    ua: [BarBot]\n")]))
                .unwrap();
        let over =
            BotDb::from_yaml(&db(&[entry("BAZBOT", "    ua: [BazBot]\n"), entry("foobot", "    ua: [FooBot2]\n")]))
                .unwrap();
        let merged = base.merge(over);
        let names: Vec<&str> = merged.bots().iter().map(|b| b.name.as_str()).collect();
        assert_eq!(names, ["foobot", "BarBot", "BAZBOT"]);
        assert_eq!(merged.get("FOOBOT").unwrap().ua, ["FooBot2"]);
    }

    #[test]
    fn ip_ranges_must_name_an_embedded_feed() {
        let ok = db(&[entry("FooBot", "    ua: [FooBot]\n    ip_ranges: [google-common-crawlers]\n")]);
        assert_eq!(BotDb::from_yaml(&ok).unwrap().bots()[0].ip_ranges, ["google-common-crawlers"]);
        let bad = db(&[entry("FooBot", "    ua: [FooBot]\n    ip_ranges: [google-crawlers]\n")]);
        let err = BotDb::from_yaml(&bad).unwrap_err().to_string();
        assert!(err.contains("unknown feed `google-crawlers`"), "{err}");
    }

    #[test]
    fn rdns_suffixes_are_checked() {
        let ok = db(&[entry("FooBot", "    ua: [FooBot]\n    rdns: [googlebot.com, crawl.yahoo.net]\n")]);
        assert_eq!(BotDb::from_yaml(&ok).unwrap().bots()[0].rdns, ["googlebot.com", "crawl.yahoo.net"]);
        for bad in ["com", ".googlebot.com", "GoogleBot.com", "google..com", "-x.com", "x_y.com", "a.com."] {
            let text = db(&[entry("FooBot", &format!("    ua: [FooBot]\n    rdns: ['{bad}']\n"))]);
            assert!(BotDb::from_yaml(&text).is_err(), "{bad}");
        }
    }
}
