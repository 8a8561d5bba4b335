//! The compiled robots.txt: a body read into groups, rules and rule sets,
//! once. Choosing a group and deciding a path is `query`.

use std::collections::HashMap;

use super::ext::{self, CleanParam, RequestRate, VisitTime};
use super::parse::{self, Key, ParseHandler};
use super::pattern::{RuleKind, RuleSet, SetRule};
use super::usage;

/// Googlebot reads the first 500 KiB of a robots.txt and ignores the rest
/// (RFC 9309 2.5 asks crawlers to parse at least 500 kibibytes).
pub const DEFAULT_MAX_BYTES: usize = 500 * 1024;

/// A value with the 1-based line it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Located<T> {
    /// Source line.
    pub line: u32,
    /// The value.
    pub value: T,
}

/// One `user-agent` line of a group.
#[derive(Debug, Clone)]
pub struct AgentLine {
    /// Source line.
    pub line: u32,
    /// The value as written.
    pub value: String,
    /// Whether the line opens the global group (`*`).
    pub global: bool,
    /// Length of [`AgentLine::google_token`], a prefix of `value` (no copy
    /// of its own: a proxy keeps a compiled robots.txt per site, issue 55).
    google_len: u32,
    /// Length of [`AgentLine::full_token`], a prefix of `value`.
    full_len: u32,
}

impl AgentLine {
    /// The product token Google's parser obeys (`[A-Za-z_-]` prefix).
    pub fn google_token(&self) -> &str {
        self.value.get(..self.google_len as usize).unwrap_or_default()
    }

    /// The product token as the site owner wrote it (`[A-Za-z0-9._-]` prefix).
    pub fn full_token(&self) -> &str {
        self.value.get(..self.full_len as usize).unwrap_or_default()
    }
}

/// One allow/disallow rule.
#[derive(Debug, Clone)]
pub struct Rule {
    /// Allow or disallow.
    pub kind: RuleKind,
    /// Source line.
    pub line: u32,
    /// Google-specific: this rule was derived from an `Allow: …/index.htm…`
    /// rule, which also allows the directory itself (`…/$`).
    pub index_html: bool,
    /// The pattern as matched (normalised when the options say so).
    raw: Box<[u8]>,
    /// The pattern as written, lossily decoded, when it is not `raw` (one
    /// copy fewer for nearly every rule: a proxy keeps a compiled
    /// robots.txt per site, issue 55).
    written: Option<Box<str>>,
}

impl Rule {
    /// The pattern as written, lossily decoded for display.
    pub fn pattern(&self) -> &str {
        match &self.written {
            Some(w) => w,
            // `written` is only left out when `raw` is this very text.
            None => std::str::from_utf8(&self.raw).unwrap_or_default(),
        }
    }
}

/// A group: its user-agent lines, rules and extension records.
#[derive(Debug, Clone, Default)]
pub struct Group {
    /// The `user-agent` lines that open the group.
    pub agents: Vec<AgentLine>,
    /// Indices into [`RobotsTxt::rules`].
    pub rules: Vec<u32>,
    /// The extension records, when the group has any: boxed, since nearly
    /// no group has and inline they took 100 bytes of each (a proxy keeps a
    /// compiled robots.txt per site, issue 55). See [`Group::ext`].
    ext: Option<Box<GroupExt>>,
}

/// A group's extension records (`Crawl-delay`, `Request-rate`,
/// `Visit-time`, `Content-Signal`, `Content-Usage`).
#[derive(Debug, Clone, Default)]
pub struct GroupExt {
    /// `Crawl-delay`, seconds.
    pub crawl_delay: Option<Located<f64>>,
    /// `Request-rate`.
    pub request_rate: Option<Located<RequestRate>>,
    /// `Visit-time`.
    pub visit_time: Option<Located<VisitTime>>,
    /// `Content-Signal` declarations.
    pub content_signal: Vec<Located<(String, bool)>>,
    /// `Content-Usage` rules (draft-ietf-aipref-attach), in file order.
    pub content_usage: Vec<UsageRule>,
}

/// The records of a group without any.
static NO_EXT: GroupExt = GroupExt {
    crawl_delay: None,
    request_rate: None,
    visit_time: None,
    content_signal: Vec::new(),
    content_usage: Vec::new(),
};

impl Group {
    /// The group's extension records (all empty for a group without any).
    pub fn ext(&self) -> &GroupExt {
        self.ext.as_deref().unwrap_or(&NO_EXT)
    }

    /// The records, to add one.
    fn ext_mut(&mut self) -> &mut GroupExt {
        self.ext.get_or_insert_with(Box::default)
    }
}

/// One `Content-Usage: [path] usage-pref` rule.
#[derive(Debug, Clone)]
pub struct UsageRule {
    /// Source line.
    pub line: u32,
    /// The path pattern as written (`None`: every path).
    pub path: Option<String>,
    /// The preference.
    pub pref: super::usage::UsagePref,
    /// The matched form of the path (normalised like the rules).
    pub(super) raw: Box<[u8]>,
}

#[derive(Debug, Clone)]
pub(super) struct Target {
    /// Groups in file order.
    pub(super) groups: Box<[u32]>,
    /// Rule sets to evaluate (one merged set, or one per group past the budget).
    pub(super) sets: Box<[u32]>,
}

/// Compilation options.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// Bytes read from the body; the rest is ignored. Default [`DEFAULT_MAX_BYTES`].
    pub max_bytes: usize,
    /// Spell every rule pattern as [`crate::target::normalise`] spells
    /// requests (see [`crate::target::normalise_pattern`]), so the proxy's
    /// normalised targets compare with them byte for byte. `None` (the
    /// default) keeps Google's spelling, for `robotgate check`.
    pub normalise: Option<crate::target::TargetOptions>,
}

impl Default for Options {
    fn default() -> Self {
        Options { max_bytes: DEFAULT_MAX_BYTES, normalise: None }
    }
}

/// A compiled robots.txt: parsed once, immutable, queried per request.
#[derive(Debug)]
pub struct RobotsTxt {
    pub(super) groups: Vec<Group>,
    pub(super) rules: Vec<Rule>,
    pub(super) sets: Vec<RuleSet>,
    pub(super) targets: Vec<Target>,
    /// Group targets by lower-case token (looked up for every request: a
    /// fast hash, since SipHash's cost is most of a lookup; the keys are the
    /// site's, never the client's).
    pub(super) google: hashbrown::HashMap<Box<[u8]>, u32>,
    /// Empty when it would be `google` (no agent line's token as written
    /// is longer than Google's reading): see [`RobotsTxt::proxy_map`].
    pub(super) proxy: hashbrown::HashMap<Box<[u8]>, u32>,
    pub(super) proxy_is_google: bool,
    pub(super) global: Option<u32>,
    sitemaps: Vec<Located<String>>,
    hosts: Vec<Located<String>>,
    clean_params: Vec<Located<CleanParam>>,
    hash: u64,
    len: usize,
    truncated_at: Option<usize>,
    /// Some group has `Content-Usage` or `Content-Signal` lines.
    states_usage: bool,
}

impl Default for RobotsTxt {
    fn default() -> Self {
        RobotsTxt::compile(b"")
    }
}

/// The body up to `max`, cut at the last line end within it so that a rule is
/// never read half-way (`Disallow: /private` must not become `Disallow: /p`).
pub(crate) fn limit_body(body: &[u8], max: usize) -> (&[u8], bool) {
    if body.len() <= max {
        return (body, false);
    }
    let head = &body[..max];
    let cut = head.iter().rposition(|&b| b == b'\n' || b == b'\r').map_or(0, |i| i + 1);
    (&body[..cut], true)
}

/// A [`RobotsTxt::hash`] as 12 hex digits, as logs and metrics show it.
pub fn short_hash(hash: u64) -> String {
    format!("{:012x}", hash >> 16)
}

/// FNV-1a, 64 bits: a stable, dependency-free fingerprint of a robots.txt
/// version for logs and metrics (not a security hash).
pub fn fingerprint(body: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in body {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

impl RobotsTxt {
    /// Whether any group states usage preferences (`Content-Usage`,
    /// `Content-Signal`): without them, no request needs to look.
    pub fn states_usage(&self) -> bool {
        self.states_usage
    }

    /// Parse and compile a robots.txt body with the default options.
    ///
    /// Never fails: whatever a crawler would skip is skipped (see `lint`).
    ///
    /// ```
    /// let robots = robotgate::robots::RobotsTxt::compile(b"User-agent: *\nDisallow: /private\n");
    /// assert!(!robots.allows("FooBot", "https://example.com/private/x").allowed);
    /// assert!(robots.allows("FooBot", "/public").allowed);
    /// ```
    pub fn compile(body: &[u8]) -> RobotsTxt {
        Self::compile_with(body, Options::default())
    }

    /// Parse and compile with explicit [`Options`].
    pub fn compile_with(body: &[u8], options: Options) -> RobotsTxt {
        let (used, truncated) = limit_body(body, options.max_bytes);
        let mut b = Builder { normalise: options.normalise, ..Builder::default() };
        parse::parse(used, &mut b);
        let mut robots = RobotsTxt {
            groups: b.groups,
            rules: b.rules,
            sets: Vec::new(),
            targets: Vec::new(),
            google: hashbrown::HashMap::new(),
            proxy: hashbrown::HashMap::new(),
            proxy_is_google: false,
            global: None,
            sitemaps: b.sitemaps,
            hosts: b.hosts,
            clean_params: b.clean_params,
            hash: fingerprint(body),
            len: body.len(),
            truncated_at: truncated.then_some(used.len()),
            states_usage: false,
        };
        robots.states_usage =
            robots.groups.iter().any(|g| !g.ext().content_usage.is_empty() || !g.ext().content_signal.is_empty());
        robots.index();
        robots.shrink();
        robots
    }

    /// Build the rule sets and the token maps.
    fn index(&mut self) {
        // One set per group; merged sets for tokens named in several groups.
        for g in &self.groups {
            let set = RuleSet::build(g.rules.iter().map(|&i| self.rule_ref(i)));
            self.sets.push(set);
        }
        let mut google: HashMap<Box<[u8]>, Vec<u32>> = HashMap::new();
        let mut proxy: HashMap<Box<[u8]>, Vec<u32>> = HashMap::new();
        let mut global: Vec<u32> = Vec::new();
        for (gi, g) in self.groups.iter().enumerate() {
            let gi = gi as u32;
            for a in &g.agents {
                if a.global {
                    push_unique(&mut global, gi);
                    continue;
                }
                let gkey: Box<[u8]> = a.google_token().to_ascii_lowercase().into_bytes().into();
                let fkey: Box<[u8]> = a.full_token().to_ascii_lowercase().into_bytes().into();
                push_unique(google.entry(gkey.clone()).or_default(), gi);
                // The proxy obeys a group named by either reading of the token.
                push_unique(proxy.entry(gkey).or_default(), gi);
                push_unique(proxy.entry(fkey).or_default(), gi);
            }
        }
        // Merging copies rules; cap the copies so that a hostile file with many
        // overlapping agent lists cannot make compilation quadratic. Past the
        // budget a target evaluates its groups one by one instead.
        let total_rules = self.rules.len();
        let mut budget = total_rules.saturating_mul(4).saturating_add(10_000);
        let mut cache: HashMap<Vec<u32>, u32> = HashMap::new();
        let mut make = |this: &mut RobotsTxt, mut groups: Vec<u32>| -> u32 {
            groups.sort_unstable();
            if let Some(&t) = cache.get(&groups) {
                return t;
            }
            let sets: Box<[u32]> = if groups.len() == 1 {
                Box::new([groups[0]])
            } else {
                let size: usize = groups.iter().map(|&g| this.groups[g as usize].rules.len()).sum();
                if size <= budget {
                    budget -= size;
                    let mut ids: Vec<u32> =
                        groups.iter().flat_map(|&g| this.groups[g as usize].rules.iter().copied()).collect();
                    ids.sort_unstable();
                    let set = RuleSet::build(ids.iter().map(|&i| this.rule_ref(i)));
                    this.sets.push(set);
                    Box::new([(this.sets.len() - 1) as u32])
                } else {
                    groups.clone().into_boxed_slice()
                }
            };
            this.targets.push(Target { groups: groups.clone().into_boxed_slice(), sets });
            let t = (this.targets.len() - 1) as u32;
            cache.insert(groups, t);
            t
        };
        if !global.is_empty() {
            self.global = Some(make(self, global));
        }
        for (k, v) in google {
            let t = make(self, v);
            self.google.insert(k, t);
        }
        for (k, v) in proxy {
            let t = make(self, v);
            self.proxy.insert(k, t);
        }
        // Nearly always the two readings of every token agree: one map
        // then (issue 55: a compiled robots.txt per site at 10,000 sites).
        if self.proxy == self.google {
            self.proxy = hashbrown::HashMap::new();
            self.proxy_is_google = true;
        }
        // A group's own set that no target evaluates (its agents all name
        // merged targets too) is dropped: an empty set owns no memory. The
        // linter asks the set of a group with `Content-Usage` rules
        // (`group_allows`): those stay.
        let mut used = vec![false; self.sets.len()];
        for (used, g) in used.iter_mut().zip(&self.groups) {
            *used = !g.ext().content_usage.is_empty();
        }
        for t in &self.targets {
            for &s in &t.sets[..] {
                used[s as usize] = true;
            }
        }
        for (set, used) in self.sets.iter_mut().zip(used) {
            if !used {
                *set = RuleSet::default();
            }
        }
    }

    /// The map [`RobotsTxt::select`] looks tokens up in.
    pub(super) fn proxy_map(&self) -> &hashbrown::HashMap<Box<[u8]>, u32> {
        match self.proxy_is_google {
            true => &self.google,
            false => &self.proxy,
        }
    }

    /// Give back what the vectors grew by while building: a proxy keeps
    /// one compiled robots.txt per site for good (issue 55: 10,000 sites).
    fn shrink(&mut self) {
        for g in &mut self.groups {
            g.agents.shrink_to_fit();
            g.rules.shrink_to_fit();
        }
        self.groups.shrink_to_fit();
        self.rules.shrink_to_fit();
        self.sets.shrink_to_fit();
        self.targets.shrink_to_fit();
        self.google.shrink_to_fit();
        self.proxy.shrink_to_fit();
    }

    fn rule_ref(&self, i: u32) -> SetRule<'_> {
        let r = &self.rules[i as usize];
        SetRule { kind: r.kind, pattern: &r.raw, line: r.line, id: i }
    }

    /// All groups, in file order.
    pub fn groups(&self) -> &[Group] {
        &self.groups
    }

    /// All rules, in file order (plus derived index.html rules).
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// `Sitemap` URLs (global records).
    pub fn sitemaps(&self) -> &[Located<String>] {
        &self.sitemaps
    }

    /// `Host` records (Yandex).
    pub fn hosts(&self) -> &[Located<String>] {
        &self.hosts
    }

    /// `Clean-param` records (Yandex).
    pub fn clean_params(&self) -> &[Located<CleanParam>] {
        &self.clean_params
    }

    /// Fingerprint of the whole body (FNV-1a 64).
    pub fn hash(&self) -> u64 {
        self.hash
    }

    /// The fingerprint as 12 hex digits, as logs and metrics show it.
    pub fn short_hash(&self) -> String {
        short_hash(self.hash)
    }

    /// Size of the body in bytes, before the size limit.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the body was empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Where the body was cut by the size limit, if it was.
    pub fn truncated_at(&self) -> Option<usize> {
        self.truncated_at
    }
}

fn push_unique(v: &mut Vec<u32>, x: u32) {
    if v.last() != Some(&x) {
        v.push(x);
    }
}

/// Collects groups as Google's matcher forms them.
#[derive(Default)]
struct Builder {
    groups: Vec<Group>,
    rules: Vec<Rule>,
    sitemaps: Vec<Located<String>>,
    hosts: Vec<Located<String>>,
    clean_params: Vec<Located<CleanParam>>,
    /// A non-agent line has been seen since the last `user-agent` line, so the
    /// next `user-agent` line opens a new group (robots.cc `seen_separator_`).
    separator: bool,
    /// [`Options::normalise`].
    normalise: Option<crate::target::TargetOptions>,
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

impl Builder {
    fn current(&mut self) -> Option<&mut Group> {
        self.groups.last_mut()
    }

    fn push_rule(&mut self, line: u32, kind: RuleKind, pattern: &[u8], index_html: bool) {
        let id = self.rules.len() as u32;
        // The display form stays as written, for logs; the matched form may be normalised.
        let raw = match &self.normalise {
            Some(opts) => crate::target::normalise_pattern(pattern, opts).into_owned().into_boxed_slice(),
            None => pattern.into(),
        };
        let written = match std::str::from_utf8(pattern).is_ok() && *raw == *pattern {
            true => None,
            false => Some(lossy(pattern).into_boxed_str()),
        };
        self.rules.push(Rule { kind, line, index_html, raw, written });
        if let Some(g) = self.groups.last_mut() {
            g.rules.push(id);
        }
    }
}

impl ParseHandler for Builder {
    fn field(&mut self, line: u32, key: Key, _key_text: &[u8], value: &[u8]) {
        if key == Key::UserAgent {
            if self.separator || self.groups.is_empty() {
                self.groups.push(Group::default());
                self.separator = false;
            }
            // Both tokens are ASCII prefixes of the value, so prefixes of its
            // lossy decoding too, of the same length.
            let agent = AgentLine {
                line,
                value: lossy(value),
                global: parse::is_global_agent(value),
                google_len: parse::google_agent_token(value).len() as u32,
                full_len: parse::full_agent_token(value).len() as u32,
            };
            if let Some(g) = self.current() {
                g.agents.push(agent);
            }
            return;
        }
        if self.groups.is_empty() && key != Key::Sitemap && key != Key::Host && key != Key::CleanParam {
            return; // Before any user-agent: ignored (the linter says so).
        }
        // RFC 9309 2.1 and robots_test.cc ID_LineSyntax_Groups_OtherRules: only
        // a rule ends the list of user-agent lines; sitemap, crawl-delay and
        // unknown lines do not close a group.
        if key.is_rule() {
            self.separator = true;
        }
        let text = String::from_utf8_lossy(value);
        match key {
            Key::UserAgent => unreachable!("handled above"),
            Key::Allow | Key::Disallow => {
                // RFC 9309 2.2.2: an empty value matches nothing worth a rule.
                if value.is_empty() {
                    return;
                }
                let kind = if key == Key::Allow { RuleKind::Allow } else { RuleKind::Disallow };
                self.push_rule(line, kind, value, false);
                // Google-specific: `Allow: /dir/index.htm…` also allows `/dir/`.
                if kind == RuleKind::Allow {
                    if let Some(slash) = value.iter().rposition(|&b| b == b'/') {
                        if value[slash..].starts_with(b"/index.htm") {
                            let mut derived = value[..=slash].to_vec();
                            derived.push(b'$');
                            self.push_rule(line, kind, &derived, true);
                        }
                    }
                }
            }
            Key::Sitemap => self.sitemaps.push(Located { line, value: text.into_owned() }),
            Key::Host => self.hosts.push(Located { line, value: text.into_owned() }),
            Key::CleanParam => {
                if let Some(value) = ext::parse_clean_param(&text) {
                    self.clean_params.push(Located { line, value });
                }
            }
            Key::CrawlDelay => {
                if let (Some(v), Some(g)) = (ext::parse_crawl_delay(&text), self.groups.last_mut()) {
                    g.ext_mut().crawl_delay.get_or_insert(Located { line, value: v });
                }
            }
            Key::RequestRate => {
                if let (Some(v), Some(g)) = (ext::parse_request_rate(&text), self.groups.last_mut()) {
                    g.ext_mut().request_rate.get_or_insert(Located { line, value: v });
                }
            }
            Key::VisitTime => {
                if let (Some(v), Some(g)) = (ext::parse_visit_time(&text), self.groups.last_mut()) {
                    g.ext_mut().visit_time.get_or_insert(Located { line, value: v });
                }
            }
            Key::ContentSignal => {
                if let (Some(v), Some(g)) = (ext::parse_content_signal(&text), self.groups.last_mut()) {
                    g.ext_mut().content_signal.extend(v.into_iter().map(|value| Located { line, value }));
                }
            }
            Key::ContentUsage => {
                if let (Ok((path, parsed)), Some(g)) = (usage::parse_rule(&text), self.groups.last_mut()) {
                    let raw: Box<[u8]> = match (path, &self.normalise) {
                        (None, _) => Box::default(),
                        (Some(p), Some(opts)) => {
                            crate::target::normalise_pattern(p.as_bytes(), opts).into_owned().into_boxed_slice()
                        }
                        (Some(p), None) => p.as_bytes().into(),
                    };
                    let path = path.map(str::to_owned);
                    g.ext_mut().content_usage.push(UsageRule { line, path, pref: parsed.pref, raw });
                }
            }
            Key::Unknown => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allowed(robots: &str, agent: &str, url: &str) -> bool {
        RobotsTxt::compile(robots.as_bytes()).allows(agent, url).allowed
    }

    #[test]
    fn groups_with_the_same_token_merge() {
        let r = "user-agent: a\ndisallow: /x\n\nuser-agent: b\ndisallow: /y\n\nuser-agent: a\ndisallow: /z\n";
        assert!(!allowed(r, "a", "/x") && !allowed(r, "a", "/z") && allowed(r, "a", "/y"));
    }

    #[test]
    fn consecutive_agents_share_a_group() {
        let r = "user-agent: a\nuser-agent: b\ndisallow: /x\n";
        assert!(!allowed(r, "a", "/x") && !allowed(r, "b", "/x"));
    }

    #[test]
    fn only_rules_close_a_group() {
        let r = "user-agent: a\nsitemap: http://x/s\ncrawl-delay: 3\nuser-agent: b\ndisallow: /\n";
        assert!(!allowed(r, "a", "/x") && !allowed(r, "b", "/x"));
        let robots = RobotsTxt::compile(r.as_bytes());
        assert_eq!(robots.groups().len(), 1);
        assert_eq!(robots.crawl_delay(&robots.select(&["a"])).unwrap().value, 3.0);
    }

    #[test]
    fn extensions_attach_to_their_group() {
        let robots = RobotsTxt::compile(
            b"sitemap: https://e.com/s.xml\nuser-agent: bingbot\ncrawl-delay: 5\nrequest-rate: 1/10s\nvisit-time: 0100-0500\ndisallow: /x\nuser-agent: *\ndisallow:\n",
        );
        let sel = robots.select(&["bingbot"]);
        assert_eq!(robots.crawl_delay(&sel).unwrap().value, 5.0);
        assert_eq!(robots.request_rate(&sel).unwrap().value.seconds, 10);
        assert_eq!(robots.visit_time(&sel).unwrap().line, 5);
        assert_eq!(robots.sitemaps()[0].value, "https://e.com/s.xml");
        assert!(robots.crawl_delay(&robots.select(&["other"])).is_none());
    }

    #[test]
    fn size_limit_cuts_at_a_line_end() {
        let mut body = b"user-agent: *\n".to_vec();
        body.extend_from_slice(b"disallow: /private\n");
        let robots = RobotsTxt::compile_with(&body, Options { max_bytes: 25, ..Options::default() });
        assert_eq!(robots.truncated_at(), Some(14));
        assert!(robots.allows("x", "/private").allowed, "the half-read rule is dropped, not shortened");
    }

    #[test]
    fn sets_no_target_evaluates_are_dropped_and_answers_stay() {
        // `a` names groups 0 and 2 (one merged target); `b` group 1 alone.
        let body = b"user-agent: a\ndisallow: /x\n\nuser-agent: b\ndisallow: /y\n\nuser-agent: a\nallow: /x/ok\n";
        let robots = RobotsTxt::compile(body);
        assert!(robots.sets[0].is_empty() && robots.sets[2].is_empty(), "only the merged set is evaluated");
        assert_eq!(robots.sets[1].len(), 1);
        assert!(robots.proxy_is_google && robots.proxy.is_empty());
        let a = robots.select(&["a"]);
        assert!(!robots.check(&a, b"/x/1").allowed);
        assert!(robots.check(&a, b"/x/ok").allowed);
        assert!(!robots.check(&robots.select(&["b"]), b"/y").allowed);
        assert!(!robots.allows("a", "/x/1").allowed && robots.allows("a", "/x/ok").allowed);
        // A token whose two readings differ keeps a map of its own.
        let robots = RobotsTxt::compile(b"user-agent: MJ12bot\ndisallow: /\n");
        assert!(!robots.proxy_is_google);
        assert!(!robots.check(&robots.select(&["MJ12bot"]), b"/a").allowed);
        assert!(robots.allows("MJ12bot", "/a").allowed, "Google reads the group as `MJ`");
    }
}
