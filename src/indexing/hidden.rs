//! What robots.txt hides: the noindex rules and the observed pages whose
//! noindex a robot never sees because robots.txt keeps it from fetching
//! them, and the bounded memory of what origins' pages said
//! (`indexing.observe`).

use super::*;

/// A noindex that robots.txt hides: the rule says noindex for a robot, and
/// robots.txt disallows the rule's path for that robot, so the robot never
/// fetches the page and never sees the header; its URL can stay indexed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hidden {
    /// The rule's index in `rules`.
    pub rule: usize,
    /// The robot (a token robots.txt names, or `*` for every other).
    pub robot: String,
    /// The robots.txt rule that disallows it: line and pattern.
    pub robots_line: u32,
    /// Its pattern.
    pub robots_pattern: String,
}

impl Hidden {
    /// The warning, naming both lines: `rule` is the config's field of the
    /// rule (`sites[0].indexing.rules[2]`).
    pub fn message(&self, rules: &Rules, field: &str) -> String {
        let rule = &rules.rules()[self.rule];
        format!(
            "{field} sets `{}` on `{}`, but robots.txt line {} (`Disallow: {}`) disallows it for {}: \
             a robot that keeps robots.txt never fetches the page, never sees the noindex, \
             and can keep its URL in the index",
            rule.set, rule.path, self.robots_line, self.robots_pattern, self.robot
        )
    }
}

/// The start of a pattern that every path it matches begins with (up to the
/// first `*` or a final `$`).
pub(super) fn sample(pattern: &str) -> &str {
    let end = pattern.find(['*', '$']).unwrap_or(pattern.len());
    &pattern[..end]
}

/// The robots a noindex said for `name` reaches: `*` and every robot
/// robots.txt names, for a name of every robot (`None`, `robots`); the
/// robot itself otherwise.
pub(super) fn robots_for(robots: &crate::robots::RobotsTxt, name: Option<&str>) -> Vec<String> {
    match name {
        Some(n) if !n.eq_ignore_ascii_case("robots") => vec![n.to_owned()],
        _ => {
            let mut named: Vec<String> = robots
                .groups()
                .iter()
                .flat_map(|g| g.agents.iter())
                .filter(|a| !a.global)
                .map(|a| a.value.clone())
                .collect();
            named.sort();
            named.dedup();
            std::iter::once("*".to_owned()).chain(named).collect()
        }
    }
}

/// For each of `robots_for`, the robots.txt rule that disallows `pattern`
/// (its literal start) for it: (robot, line, pattern).
pub(super) fn disallowing(
    robots: &crate::robots::RobotsTxt,
    robots_for: Vec<String>,
    pattern: &str,
) -> Vec<(String, u32, String)> {
    let path = sample(pattern);
    let path = if path.is_empty() { "/" } else { path };
    let mut out = Vec::new();
    for robot in robots_for {
        // `*`: a token no group names, so the `*` group decides.
        let token = if robot == "*" { "robotgate-any-other-robot" } else { robot.as_str() };
        let verdict = robots.check(&robots.select(&[token]), path.as_bytes());
        if let (false, Some(r)) = (verdict.allowed, verdict.rule) {
            out.push((robot, r.line, r.pattern().to_owned()));
        }
    }
    out
}

/// Every noindex of `rules` that `robots` hides. A rule for every robot is
/// checked against the `*` group and each group robots.txt names; a rule
/// for named robots, against each of them.
pub fn hidden(rules: &Rules, robots: &crate::robots::RobotsTxt) -> Vec<Hidden> {
    let mut out = Vec::new();
    for (i, rule) in rules.rules().iter().enumerate() {
        if !rule.set.noindex() {
            continue;
        }
        let names: Vec<String> = if rule.bots.is_empty() { robots_for(robots, None) } else { rule.bots.clone() };
        for (robot, robots_line, robots_pattern) in disallowing(robots, names, &rule.path) {
            out.push(Hidden { rule: i, robot, robots_line, robots_pattern });
        }
    }
    out
}

/// What an origin said about indexing one page: the names it said it to
/// (`None`: the header without a robot's name; `robots`; a robot's token)
/// and the terms.
pub type Told = Vec<(Option<String>, Vec<Term>)>;

/// A page whose own noindex (META tag or `X-Robots-Tag`) robots.txt hides.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct HiddenPage {
    /// The page: the path requested, without its query.
    pub path: String,
    /// The robot that never sees it (`*`: every robot without a group of its own).
    pub robot: String,
    /// Who the page said it to (`robots`, a robot's name, or `X-Robots-Tag`) and what.
    pub said: String,
    /// The robots.txt line that disallows the page for that robot.
    pub robots_line: u32,
    /// Its pattern.
    pub robots_pattern: String,
    /// When the page was last seen (RFC 3339).
    pub seen: String,
}

/// The bytes a page held in [`Observed`] is counted as: its path, what it
/// said (names, terms, a date's text) and a fixed share for the table's own
/// entries, so that the count is near what the allocator gives.
pub fn page_size(path: &str, said: &Told) -> usize {
    const PAGE: usize = 160;
    const SAID: usize = 64;
    path.len()
        + PAGE
        + said
            .iter()
            .map(|(name, terms)| {
                SAID + name.as_ref().map_or(0, String::len)
                    + terms.len() * std::mem::size_of::<Term>()
                    + terms.iter().map(|t| if let Term::UnavailableAfter(d) = t { d.len() } else { 0 }).sum::<usize>()
            })
            .sum::<usize>()
}

/// One page held.
#[derive(Debug)]
pub(super) struct Page {
    /// When it was last noted, on the table's own count (its place in `order`).
    tick: u64,
    /// When it was last noted (Unix ms).
    at: u64,
    said: Told,
    /// [`page_size`].
    bytes: usize,
}

/// The last directives origins' pages said, per page (a path without its
/// query: a client choosing queries makes no new page), bounded both in
/// pages and in bytes ([`page_size`]): the page noted least recently gives
/// way. Cost: a note is one hash lookup, and amortised O(1) upkeep of the
/// recency order.
#[derive(Debug)]
pub struct Observed {
    max_pages: usize,
    max_bytes: usize,
    bytes: usize,
    tick: u64,
    pages: std::collections::HashMap<std::sync::Arc<str>, Page>,
    /// Pages by when they were noted, oldest first; an entry whose tick is
    /// not its page's any more (noted again since, or forgotten) is skipped.
    pub(super) order: std::collections::VecDeque<(u64, std::sync::Arc<str>)>,
}

impl Observed {
    /// A table of at most `max_pages` pages and `max_bytes` bytes.
    pub fn new(max_pages: usize, max_bytes: usize) -> Observed {
        Observed {
            max_pages: max_pages.max(1),
            max_bytes,
            bytes: 0,
            tick: 0,
            pages: std::collections::HashMap::new(),
            order: std::collections::VecDeque::new(),
        }
    }

    /// Pages held.
    pub fn len(&self) -> usize {
        self.pages.len()
    }

    /// Whether no page is held.
    pub fn is_empty(&self) -> bool {
        self.pages.is_empty()
    }

    /// The bytes held, as [`page_size`] counts them.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Remember what the page at `path` said at `now_ms` (replacing what it
    /// said before). Returns whether that is news: the page was not held, or
    /// said something else.
    pub fn note(&mut self, path: &str, said: Told, now_ms: u64) -> bool {
        self.tick += 1;
        let tick = self.tick;
        let bytes = page_size(path, &said);
        let (key, news) = match self.pages.get_key_value(path) {
            Some((key, page)) => (key.clone(), page.said != said),
            None => (std::sync::Arc::<str>::from(path), true),
        };
        let old = self.pages.insert(key.clone(), Page { tick, at: now_ms, said, bytes });
        self.bytes = self.bytes - old.map_or(0, |p| p.bytes) + bytes;
        self.order.push_back((tick, key));
        // The newest page is never the one to go: the loop stops at it.
        while self.pages.len() > self.max_pages || (self.bytes > self.max_bytes && self.pages.len() > 1) {
            let Some((t, old)) = self.order.pop_front() else { break };
            if self.pages.get(&old).is_some_and(|p| p.tick == t) {
                if let Some(p) = self.pages.remove(&old) {
                    self.bytes -= p.bytes;
                }
            }
        }
        self.compact();
        news
    }

    /// Forget what the page at `path` said (it says nothing now).
    pub fn forget(&mut self, path: &str) {
        if let Some(p) = self.pages.remove(path) {
            self.bytes -= p.bytes;
            self.compact();
        }
    }

    /// Drop the order's stale entries once they outnumber the pages: each
    /// pass is paid for by as many notes as pages.
    fn compact(&mut self) {
        if self.order.len() > 2 * self.pages.len() + 64 {
            let pages = &self.pages;
            self.order.retain(|(t, p)| pages.get(p).is_some_and(|page| page.tick == *t));
        }
    }

    /// The pages whose noindex `robots` hides, by path, then robot.
    pub fn hidden(&self, robots: &crate::robots::RobotsTxt) -> Vec<HiddenPage> {
        let mut out: Vec<HiddenPage> =
            self.pages.iter().flat_map(|(path, page)| hidden_page(path, &page.said, page.at, robots)).collect();
        out.sort_by(|a, b| (&a.path, &a.robot).cmp(&(&b.path, &b.robot)));
        out
    }
}

/// What of `said` (what the page at `path` said, at `at_ms`) `robots` hides:
/// one entry per noindex and robot that robots.txt keeps from the page.
pub fn hidden_page(path: &str, said: &Told, at_ms: u64, robots: &crate::robots::RobotsTxt) -> Vec<HiddenPage> {
    let mut out = Vec::new();
    for (name, terms) in said {
        if !meta::says_noindex(terms) {
            continue;
        }
        let text = terms.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ");
        let to = name.as_deref().unwrap_or("X-Robots-Tag");
        for (robot, robots_line, robots_pattern) in disallowing(robots, robots_for(robots, name.as_deref()), path) {
            out.push(HiddenPage {
                path: path.to_owned(),
                robot,
                said: format!("{to}: {text}"),
                robots_line,
                robots_pattern,
                seen: crate::time::rfc3339_ms(at_ms),
            });
        }
    }
    out
}
