//! Indexing rules, managed centrally (issue #42): the other half of the
//! robots exclusion standard, the robots META tag's terms and the
//! `X-Robots-Tag` header, set by path and robot in robotgate's config.
//!
//! ```yaml
//! indexing:
//!   rules:
//!     - {path: "/drafts/", set: "noindex, nofollow"}
//!     - {path: "/*.pdf$", bots: [Googlebot], set: "noarchive"}
//! ```
//!
//! * A rule's `path` is a robots.txt pattern (`*`, `$`), matched against the
//!   request-target as robots.txt rules are (the same normalisation, the
//!   same compiled matcher): within one scope, the longest match wins, the
//!   earlier rule among equals.
//! * Scopes: the rules without `bots` (every robot), and each robot token
//!   named in a rule's `bots`. A response gets the generic scope's match as
//!   `X-Robots-Tag: noindex, nofollow`, and each named robot's match as
//!   `X-Robots-Tag: googlebot: noarchive` (the header's `robot: directives`
//!   form): the same bytes whoever asks, so a shared cache can hold them. A
//!   robot obeys both its own and the generic values, as search engines
//!   combine them.
//! * `set` takes the seeds' terms (ALL, NONE, INDEX, NOINDEX, FOLLOW,
//!   NOFOLLOW; case-insensitive; NONE is NOINDEX, NOFOLLOW and ALL is INDEX,
//!   FOLLOW) and the directives Google and Bing document ([`Term`]). An
//!   unknown or malformed directive, or two that contradict each other, is a
//!   config error at its line.
//!
//! [`meta`] reads what an origin says (META tags, its own header) with the
//! seeds' semantics, for the noindex that robots.txt hides.

mod hidden;
pub mod html;
pub mod meta;
pub mod terms;

pub use hidden::{hidden, hidden_page, page_size, Hidden, HiddenPage, Observed, Told};

use std::fmt;

use crate::robots::parse::escape_pattern;
use crate::robots::pattern::{RuleKind, RuleSet, SetRule};

/// How much of a preview image a result may show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Preview {
    /// `none`.
    None,
    /// `standard`.
    Standard,
    /// `large`.
    Large,
}

/// One directive of a `set` (or of a META tag's content).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Term {
    /// `all`: INDEX, FOLLOW.
    All,
    /// `none`: NOINDEX, NOFOLLOW.
    None,
    /// `index`.
    Index,
    /// `noindex`.
    NoIndex,
    /// `follow`.
    Follow,
    /// `nofollow`.
    NoFollow,
    /// `noarchive` (Google, Bing).
    NoArchive,
    /// `nocache` (Bing: as noarchive).
    NoCache,
    /// `nosnippet`.
    NoSnippet,
    /// `max-snippet:N` (-1: no limit).
    MaxSnippet(i64),
    /// `max-image-preview:none|standard|large`.
    MaxImagePreview(Preview),
    /// `max-video-preview:N` seconds (-1: no limit).
    MaxVideoPreview(i64),
    /// `notranslate`.
    NoTranslate,
    /// `noimageindex`.
    NoImageIndex,
    /// `unavailable_after:DATE` (a date in a widely used form, as Google reads it).
    UnavailableAfter(String),
    /// `indexifembedded`.
    IndexIfEmbedded,
}

impl fmt::Display for Term {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Term::All => f.write_str("all"),
            Term::None => f.write_str("none"),
            Term::Index => f.write_str("index"),
            Term::NoIndex => f.write_str("noindex"),
            Term::Follow => f.write_str("follow"),
            Term::NoFollow => f.write_str("nofollow"),
            Term::NoArchive => f.write_str("noarchive"),
            Term::NoCache => f.write_str("nocache"),
            Term::NoSnippet => f.write_str("nosnippet"),
            Term::MaxSnippet(n) => write!(f, "max-snippet:{n}"),
            Term::MaxImagePreview(p) => f.write_str(match p {
                Preview::None => "max-image-preview:none",
                Preview::Standard => "max-image-preview:standard",
                Preview::Large => "max-image-preview:large",
            }),
            Term::MaxVideoPreview(n) => write!(f, "max-video-preview:{n}"),
            Term::NoTranslate => f.write_str("notranslate"),
            Term::NoImageIndex => f.write_str("noimageindex"),
            Term::UnavailableAfter(d) => write!(f, "unavailable_after: {d}"),
            Term::IndexIfEmbedded => f.write_str("indexifembedded"),
        }
    }
}

impl Term {
    /// One directive, as written (case-insensitive; blanks around it and
    /// around a `:` ignored).
    ///
    /// # Errors
    /// What is wrong with it, naming it.
    pub fn parse(text: &str) -> Result<Term, String> {
        let text = text.trim();
        let (name, value) = match text.split_once(':') {
            Some((n, v)) => (n.trim(), Some(v.trim())),
            None => (text, None),
        };
        let lower = name.to_ascii_lowercase();
        let number = |v: Option<&str>| -> Result<i64, String> {
            let v = v.filter(|v| !v.is_empty()).ok_or_else(|| format!("`{lower}` needs a number, as `{lower}:20`"))?;
            match v.parse::<i64>() {
                Ok(n) if n >= -1 => Ok(n),
                _ => Err(format!("`{lower}:{v}`: the value is a number of at least -1 (-1: no limit)")),
            }
        };
        let bare = |t: Term| match value {
            None => Ok(t),
            Some(v) => Err(format!("`{lower}` takes no value (`{lower}:{v}`)")),
        };
        match lower.as_str() {
            "all" => bare(Term::All),
            "none" => bare(Term::None),
            "index" => bare(Term::Index),
            "noindex" => bare(Term::NoIndex),
            "follow" => bare(Term::Follow),
            "nofollow" => bare(Term::NoFollow),
            "noarchive" => bare(Term::NoArchive),
            "nocache" => bare(Term::NoCache),
            "nosnippet" => bare(Term::NoSnippet),
            "notranslate" => bare(Term::NoTranslate),
            "noimageindex" => bare(Term::NoImageIndex),
            "indexifembedded" => bare(Term::IndexIfEmbedded),
            "max-snippet" => number(value).map(Term::MaxSnippet),
            "max-video-preview" => number(value).map(Term::MaxVideoPreview),
            "max-image-preview" => match value.map(str::to_ascii_lowercase).as_deref() {
                Some("none") => Ok(Term::MaxImagePreview(Preview::None)),
                Some("standard") => Ok(Term::MaxImagePreview(Preview::Standard)),
                Some("large") => Ok(Term::MaxImagePreview(Preview::Large)),
                _ => Err(format!("`{text}`: max-image-preview is none, standard or large")),
            },
            "unavailable_after" => match value {
                Some(d) if !d.is_empty() && d.len() <= 64 && !d.contains([',', '\r', '\n']) => {
                    Ok(Term::UnavailableAfter(d.to_owned()))
                }
                _ => Err(format!("`{text}`: unavailable_after needs a date, as `unavailable_after: 2027-01-31`")),
            },
            "" => Err("an empty directive (two commas, or one at an end)".to_owned()),
            _ => Err(format!(
                "`{name}` is not a directive (all, none, index, noindex, follow, nofollow, noarchive, nocache, \
                 nosnippet, max-snippet:N, max-image-preview:none|standard|large, max-video-preview:N, \
                 notranslate, noimageindex, unavailable_after:DATE, indexifembedded)"
            )),
        }
    }
}

/// What a list of terms says about indexing and following, with the seeds'
/// semantics: a missing term means ALL (index, follow); NONE and ALL stand
/// for their pairs; where opposite terms meet, the robot decides, so the
/// answer is [`Said::Both`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Said {
    /// Not said: the default (index, follow).
    #[default]
    Nothing,
    /// Yes (INDEX, FOLLOW, or ALL).
    Yes,
    /// No (NOINDEX, NOFOLLOW, or NONE).
    No,
    /// Both: the robot decides.
    Both,
}

impl Said {
    fn add(self, yes: bool) -> Said {
        match (self, yes) {
            (Said::Nothing | Said::Yes, true) => Said::Yes,
            (Said::Nothing | Said::No, false) => Said::No,
            _ => Said::Both,
        }
    }

    /// Whether the robot may do it: only a plain "no" forbids.
    pub fn allows(self) -> bool {
        self != Said::No
    }
}

/// The `index` and `follow` meaning of terms.
pub fn meaning(terms: &[Term]) -> (Said, Said) {
    let (mut index, mut follow) = (Said::Nothing, Said::Nothing);
    for t in terms {
        match t {
            Term::All => (index, follow) = (index.add(true), follow.add(true)),
            Term::None => (index, follow) = (index.add(false), follow.add(false)),
            Term::Index => index = index.add(true),
            Term::NoIndex => index = index.add(false),
            Term::Follow => follow = follow.add(true),
            Term::NoFollow => follow = follow.add(false),
            _ => {}
        }
    }
    (index, follow)
}

/// A rule's `set`: directives that do not contradict each other.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Directives {
    terms: Vec<Term>,
}

impl Directives {
    /// Parse a `set` (directives separated by commas).
    ///
    /// # Errors
    /// An unknown or malformed directive, or two that contradict each other
    /// (INDEX with NOINDEX, FOLLOW with NOFOLLOW, ALL with NONE: in a META
    /// tag the robot would decide; in robotgate's own config it is a
    /// mistake).
    pub fn parse(text: &str) -> Result<Directives, String> {
        if text.trim().is_empty() {
            return Err("an empty set: name at least one directive, as `noindex`".to_owned());
        }
        let terms = text.split(',').map(Term::parse).collect::<Result<Vec<_>, _>>()?;
        let (index, follow) = meaning(&terms);
        if index == Said::Both {
            return Err(format!("`{text}` says both index and noindex"));
        }
        if follow == Said::Both {
            return Err(format!("`{text}` says both follow and nofollow"));
        }
        Ok(Directives { terms })
    }

    /// The terms.
    pub fn terms(&self) -> &[Term] {
        &self.terms
    }

    /// Whether the page may not be indexed (NOINDEX or NONE).
    pub fn noindex(&self) -> bool {
        meaning(&self.terms).0 == Said::No
    }
}

impl fmt::Display for Directives {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, t) in self.terms.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{t}")?;
        }
        Ok(())
    }
}

impl<'de> serde::Deserialize<'de> for Directives {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Directives, D::Error> {
        let text = String::deserialize(d)?;
        Directives::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// One rule, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// The robots.txt pattern, as written.
    pub path: String,
    /// The robots.txt tokens it is for, as written; empty: every robot.
    pub bots: Vec<String>,
    /// The directives.
    pub set: Directives,
}

/// A site's rules, compiled: one matcher per scope.
pub struct Rules {
    rules: Vec<Rule>,
    /// Every robot's rules.
    generic: RuleSet,
    /// Each named token (lowercase), its rules, and their header values in
    /// its name (`token: directives`), by rule index.
    named: Vec<(String, RuleSet, Vec<String>)>,
    /// The header value of each rule for the generic scope (`directives`).
    values: Vec<String>,
}

impl fmt::Debug for Rules {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(&self.rules).finish()
    }
}

impl PartialEq for Rules {
    fn eq(&self, other: &Rules) -> bool {
        self.rules == other.rules
    }
}

/// A site's `indexing:`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Indexing {
    /// The rules, compiled.
    pub rules: std::sync::Arc<Rules>,
    /// Read the robots META tags and `X-Robots-Tag` of the origin's answers.
    pub observe: bool,
}

impl Default for Rules {
    fn default() -> Rules {
        Rules::new(Vec::new())
    }
}

/// The rules that apply to one request, for one robot or for every one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Applied<'a> {
    /// The index of the rule in the config's `rules`.
    pub index: usize,
    /// The rule.
    pub rule: &'a Rule,
    /// The robot token it is for (as the rule writes it); `None`: every robot.
    pub bot: Option<&'a str>,
}

impl Rules {
    /// Compile `rules`.
    pub fn new(rules: Vec<Rule>) -> Rules {
        let set = |pick: &dyn Fn(&Rule) -> bool| {
            let patterns: Vec<_> = rules.iter().map(|r| escape_pattern(r.path.as_bytes()).into_owned()).collect();
            RuleSet::build(rules.iter().enumerate().filter(|(_, r)| pick(r)).map(|(i, _)| SetRule {
                kind: RuleKind::Disallow,
                pattern: &patterns[i],
                line: i as u32 + 1,
                id: i as u32,
            }))
        };
        let generic = set(&|r: &Rule| r.bots.is_empty());
        let mut tokens: Vec<String> =
            rules.iter().flat_map(|r| r.bots.iter().map(|b| b.to_ascii_lowercase())).collect();
        tokens.sort();
        tokens.dedup();
        let named = tokens
            .into_iter()
            .map(|t| {
                let s = set(&|r: &Rule| r.bots.iter().any(|b| b.eq_ignore_ascii_case(&t)));
                let values = rules.iter().map(|r| format!("{t}: {}", r.set)).collect();
                (t, s, values)
            })
            .collect();
        let values = rules.iter().map(|r| r.set.to_string()).collect();
        Rules { rules, generic, named, values }
    }

    /// Whether there are no rules (then nothing is matched, nothing costs).
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The rules.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    fn best(set: &RuleSet, target: &[u8]) -> Option<usize> {
        set.matches(target).disallow.map(|h| h.rule as usize)
    }

    /// Every scope's rule for `target` (a request-target as robots.txt rules
    /// are matched against): the generic one first, then each named robot's.
    pub fn applied(&self, target: &[u8]) -> Vec<Applied<'_>> {
        let mut out = Vec::new();
        if self.rules.is_empty() {
            return out;
        }
        if let Some(i) = Self::best(&self.generic, target) {
            out.push(Applied { index: i, rule: &self.rules[i], bot: None });
        }
        for (token, set, _) in &self.named {
            if let Some(i) = Self::best(set, target) {
                let rule = &self.rules[i];
                let bot = rule.bots.iter().find(|b| b.eq_ignore_ascii_case(token)).map(String::as_str);
                out.push(Applied { index: i, rule, bot });
            }
        }
        out
    }

    /// The `X-Robots-Tag` values for `target`: `directives` for every
    /// robot, `token: directives` for a named one (lowercase token).
    pub fn header_values(&self, target: &[u8]) -> Vec<String> {
        let mut out = Vec::new();
        if self.rules.is_empty() {
            return out;
        }
        if let Some(i) = Self::best(&self.generic, target) {
            out.push(self.values[i].clone());
        }
        for (_, set, values) in &self.named {
            if let Some(i) = Self::best(set, target) {
                out.push(values[i].clone());
            }
        }
        out
    }

    /// The rules a robot announcing `tokens` obeys for `target`: its own
    /// scope's and the generic one's.
    pub fn for_robot<'a>(&'a self, tokens: &[&str], target: &[u8]) -> Vec<Applied<'a>> {
        self.applied(target)
            .into_iter()
            .filter(|a| a.bot.is_none_or(|b| tokens.iter().any(|t| t.eq_ignore_ascii_case(b))))
            .collect()
    }
}

#[cfg(test)]
mod tests;
