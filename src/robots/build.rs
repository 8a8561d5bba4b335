//! The compiled robots.txt: groups, rule sets, and the two ways to choose a group.

use std::collections::HashMap;

use super::ext::{self, CleanParam, RequestRate, VisitTime};
use super::parse::{self, Key, ParseHandler};
use super::pattern::{Hit, RuleKind, RuleSet, SetMatch, SetRule};

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
    /// The product token Google's parser obeys (`[A-Za-z_-]` prefix).
    pub google_token: String,
    /// The product token as the site owner wrote it (`[A-Za-z0-9._-]` prefix).
    pub full_token: String,
}

/// One allow/disallow rule.
#[derive(Debug, Clone)]
pub struct Rule {
    /// Allow or disallow.
    pub kind: RuleKind,
    /// The normalised pattern, lossily decoded for display.
    pub pattern: String,
    /// Source line.
    pub line: u32,
    /// Google-specific: this rule was derived from an `Allow: …/index.htm…`
    /// rule, which also allows the directory itself (`…/$`).
    pub index_html: bool,
    raw: Box<[u8]>,
}

/// A group: its user-agent lines, rules and extension records.
#[derive(Debug, Clone, Default)]
pub struct Group {
    /// The `user-agent` lines that open the group.
    pub agents: Vec<AgentLine>,
    /// Indices into [`RobotsTxt::rules`].
    pub rules: Vec<u32>,
    /// `Crawl-delay`, seconds.
    pub crawl_delay: Option<Located<f64>>,
    /// `Request-rate`.
    pub request_rate: Option<Located<RequestRate>>,
    /// `Visit-time`.
    pub visit_time: Option<Located<VisitTime>>,
    /// `Content-Signal` declarations.
    pub content_signal: Vec<Located<(String, bool)>>,
}

/// Which group(s) a query was decided by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupMatch {
    /// Groups naming the agent (merged when several do).
    Specific,
    /// The `*` groups.
    Global,
    /// No group applies: everything is allowed.
    None,
}

/// The answer to "may this agent fetch this path?".
#[derive(Debug, Clone, Copy)]
pub struct Verdict<'a> {
    /// Whether the fetch is allowed.
    pub allowed: bool,
    /// The deciding rule, or `None` when no rule matched (or `/robots.txt`).
    pub rule: Option<&'a Rule>,
    /// Which group decided.
    pub group: GroupMatch,
}

/// The groups an agent obeys, chosen once per request (see [`RobotsTxt::select`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Selection {
    /// Specific, global, or none.
    pub group: GroupMatch,
    /// Index of the candidate token that chose a specific group.
    pub token_index: Option<usize>,
    target: Option<u32>,
}

#[derive(Debug, Clone)]
struct Target {
    /// Groups in file order.
    groups: Box<[u32]>,
    /// Rule sets to evaluate (one merged set, or one per group past the budget).
    sets: Box<[u32]>,
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
    groups: Vec<Group>,
    rules: Vec<Rule>,
    sets: Vec<RuleSet>,
    targets: Vec<Target>,
    google: HashMap<Box<[u8]>, u32>,
    proxy: HashMap<Box<[u8]>, u32>,
    global: Option<u32>,
    sitemaps: Vec<Located<String>>,
    hosts: Vec<Located<String>>,
    clean_params: Vec<Located<CleanParam>>,
    hash: u64,
    len: usize,
    truncated_at: Option<usize>,
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
            google: HashMap::new(),
            proxy: HashMap::new(),
            global: None,
            sitemaps: b.sitemaps,
            hosts: b.hosts,
            clean_params: b.clean_params,
            hash: fingerprint(body),
            len: body.len(),
            truncated_at: truncated.then_some(used.len()),
        };
        robots.index();
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
                let gkey: Box<[u8]> = a.google_token.to_ascii_lowercase().into_bytes().into();
                let fkey: Box<[u8]> = a.full_token.to_ascii_lowercase().into_bytes().into();
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
    }

    fn rule_ref(&self, i: u32) -> SetRule<'_> {
        let r = &self.rules[i as usize];
        SetRule { kind: r.kind, pattern: &r.raw, line: r.line, id: i }
    }

    /// May `agent` fetch `url`? Google's `robots_main` semantics, used by
    /// `robotgate check` and the conformance suite.
    ///
    /// `agent` is the crawler's product token, compared case-insensitively and
    /// literally with each group's token as Google reads it (cut at the first
    /// byte outside `[A-Za-z_-]`), so `Foo Bar` never matches and a group
    /// written `MJ12bot` is the group of `MJ`. `url` may be a full URL or a
    /// path; it is reduced to path + query but not decoded.
    ///
    /// Like Google's library, this has no special case for `/robots.txt`
    /// (the conformance suite expects `Disallow: /` to cover it); the proxy
    /// path, [`check`](Self::check), has one.
    pub fn allows(&self, agent: &str, url: &str) -> Verdict<'_> {
        let path = parse::path_params_query(url.as_bytes());
        let target = with_lowercase(agent.as_bytes(), |k| self.google.get(k).copied());
        let selection = match target {
            Some(t) => Selection { group: GroupMatch::Specific, token_index: Some(0), target: Some(t) },
            None => self.global_selection(),
        };
        self.decide(&selection, &path)
    }

    fn global_selection(&self) -> Selection {
        match self.global {
            Some(t) => Selection { group: GroupMatch::Global, token_index: None, target: Some(t) },
            None => Selection { group: GroupMatch::None, token_index: None, target: None },
        }
    }

    /// Choose the groups a bot obeys, for the proxy.
    ///
    /// `tokens` are the bot's candidate product tokens, most specific first
    /// (`["Googlebot-Image", "Googlebot"]`). The first token that names any
    /// group wins; a group is named by a token when the token equals, case-
    /// insensitively, either the group's token as Google reads it (`MJ` for
    /// `MJ12bot`) or the token as written (`MJ12bot`, `archive.org_bot`).
    /// The second reading is what lets a site's `User-agent: MJ12bot` group
    /// bind MJ12bot, while [`allows`](Self::allows) keeps Google's reading.
    /// Without a named group the `*` groups apply.
    pub fn select<S: AsRef<str>>(&self, tokens: &[S]) -> Selection {
        for (i, token) in tokens.iter().enumerate() {
            let token = token.as_ref().as_bytes();
            if token.is_empty() {
                continue;
            }
            if let Some(t) = with_lowercase(token, |k| self.proxy.get(k).copied()) {
                return Selection { group: GroupMatch::Specific, token_index: Some(i), target: Some(t) };
            }
        }
        self.global_selection()
    }

    /// Decide a request path (path + query, as received) for a [`Selection`].
    ///
    /// The path is percent-normalised like the rules (`%xx` upper-cased,
    /// non-ASCII bytes encoded), so `/caf%c3%a9` and `/café` both match a
    /// rule written `/café`. `/robots.txt` is always allowed.
    pub fn check(&self, selection: &Selection, path_and_query: &[u8]) -> Verdict<'_> {
        // RFC 9309 2.2.2: "/robots.txt" is implicitly allowed.
        if path_and_query == b"/robots.txt" {
            return Verdict { allowed: true, rule: None, group: selection.group };
        }
        let path = parse::escape_pattern(path_and_query);
        self.decide(selection, &path)
    }

    fn decide(&self, selection: &Selection, path: &[u8]) -> Verdict<'_> {
        let Some(t) = selection.target else {
            return Verdict { allowed: true, rule: None, group: GroupMatch::None };
        };
        let target = &self.targets[t as usize];
        let mut best = SetMatch::default();
        for &s in target.sets.iter() {
            let m = self.sets[s as usize].matches(path);
            merge_hit(&mut best.allow, m.allow);
            merge_hit(&mut best.disallow, m.disallow);
        }
        match best.decide() {
            Some((kind, hit)) => Verdict {
                allowed: kind == RuleKind::Allow,
                rule: Some(&self.rules[hit.rule as usize]),
                group: selection.group,
            },
            // robots.cc disallow(): a specific group with no matching rule
            // allows; it does not fall back to the global group.
            None => Verdict { allowed: true, rule: None, group: selection.group },
        }
    }

    /// The groups behind a selection, in file order.
    pub fn selected_groups(&self, selection: &Selection) -> impl Iterator<Item = &Group> {
        let groups: &[u32] = match selection.target {
            Some(t) => &self.targets[t as usize].groups,
            None => &[],
        };
        groups.iter().map(move |&g| &self.groups[g as usize])
    }

    /// The first `Crawl-delay` among the selected groups.
    pub fn crawl_delay(&self, selection: &Selection) -> Option<&Located<f64>> {
        self.selected_groups(selection).find_map(|g| g.crawl_delay.as_ref())
    }

    /// The first `Request-rate` among the selected groups.
    pub fn request_rate(&self, selection: &Selection) -> Option<&Located<RequestRate>> {
        self.selected_groups(selection).find_map(|g| g.request_rate.as_ref())
    }

    /// The first `Visit-time` among the selected groups.
    pub fn visit_time(&self, selection: &Selection) -> Option<&Located<VisitTime>> {
        self.selected_groups(selection).find_map(|g| g.visit_time.as_ref())
    }

    /// A human name for the selection: the first agent line's token, or `*`.
    pub fn selection_name(&self, selection: &Selection) -> Option<&str> {
        match selection.group {
            GroupMatch::None => None,
            GroupMatch::Global => Some("*"),
            GroupMatch::Specific => self
                .selected_groups(selection)
                .flat_map(|g| g.agents.iter())
                .find(|a| !a.global)
                .map(|a| a.full_token.as_str()),
        }
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
        format!("{:012x}", self.hash >> 16)
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

fn merge_hit(slot: &mut Option<Hit>, new: Option<Hit>) {
    if let Some(h) = new {
        let better = match slot {
            None => true,
            Some(o) => h.priority > o.priority || (h.priority == o.priority && h.line < o.line),
        };
        if better {
            *slot = Some(h);
        }
    }
}

fn push_unique(v: &mut Vec<u32>, x: u32) {
    if v.last() != Some(&x) {
        v.push(x);
    }
}

/// Run `f` on the ASCII-lowercased `s`, without allocating for short input.
fn with_lowercase<R>(s: &[u8], f: impl FnOnce(&[u8]) -> R) -> R {
    let mut buf = [0u8; 64];
    if s.len() <= buf.len() {
        let b = &mut buf[..s.len()];
        b.copy_from_slice(s);
        b.make_ascii_lowercase();
        f(b)
    } else {
        f(&s.to_ascii_lowercase())
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
        self.rules.push(Rule { kind, pattern: lossy(pattern), line, index_html, raw });
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
            let full = parse::full_agent_token(value);
            let agent = AgentLine {
                line,
                value: lossy(value),
                global: parse::is_global_agent(value),
                google_token: lossy(parse::google_agent_token(value)),
                full_token: lossy(full),
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
                    g.crawl_delay.get_or_insert(Located { line, value: v });
                }
            }
            Key::RequestRate => {
                if let (Some(v), Some(g)) = (ext::parse_request_rate(&text), self.groups.last_mut()) {
                    g.request_rate.get_or_insert(Located { line, value: v });
                }
            }
            Key::VisitTime => {
                if let (Some(v), Some(g)) = (ext::parse_visit_time(&text), self.groups.last_mut()) {
                    g.visit_time.get_or_insert(Located { line, value: v });
                }
            }
            Key::ContentSignal => {
                if let (Some(v), Some(g)) = (ext::parse_content_signal(&text), self.groups.last_mut()) {
                    g.content_signal.extend(v.into_iter().map(|value| Located { line, value }));
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
    fn specific_group_beats_global_even_without_rules() {
        let r = "user-agent: *\ndisallow: /\n\nuser-agent: FooBot\nallow: /x\n";
        assert!(!allowed(r, "BarBot", "/a"));
        assert!(allowed(r, "FooBot", "/a"), "FooBot's own group has no matching rule");
        assert!(allowed(r, "foobot", "/x"));
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
    fn deciding_rule_and_line_are_reported() {
        let robots = RobotsTxt::compile(b"user-agent: *\ndisallow: /a\nallow: /a/b\n");
        let v = robots.allows("x", "http://h/a/b/c");
        assert!(v.allowed);
        let rule = v.rule.unwrap();
        assert_eq!((rule.kind, rule.pattern.as_str(), rule.line), (RuleKind::Allow, "/a/b", 3));
        assert_eq!(v.group, GroupMatch::Global);
    }

    #[test]
    fn robots_txt_is_always_allowed_to_the_proxy_but_not_in_googles_check() {
        let robots = RobotsTxt::compile(b"user-agent: *\ndisallow: /\n");
        assert!(!robots.allows("x", "/robots.txt").allowed, "robots_main has no exception");
        assert!(robots.check(&robots.select(&["x"]), b"/robots.txt").allowed);
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
    fn proxy_selection_reads_digits_and_dots() {
        let robots = RobotsTxt::compile(b"user-agent: MJ12bot\ndisallow: /\n\nuser-agent: archive.org_bot\ndisallow: /old\n\nuser-agent: *\nallow: /\n");
        // Google's reading: MJ12bot is not named (the group belongs to `MJ`).
        assert!(robots.allows("MJ12bot", "/x").allowed);
        assert!(!robots.allows("MJ", "/x").allowed);
        // The proxy's reading: both.
        let sel = robots.select(&["MJ12bot"]);
        assert_eq!(sel.group, GroupMatch::Specific);
        assert!(!robots.check(&sel, b"/x").allowed);
        let sel = robots.select(&["archive.org_bot"]);
        assert!(!robots.check(&sel, b"/old/page").allowed);
        let sel = robots.select(&["Googlebot-Image", "Googlebot"]);
        assert_eq!(sel.group, GroupMatch::Global);
    }

    #[test]
    fn fallback_token_order() {
        let robots = RobotsTxt::compile(b"user-agent: Googlebot\ndisallow: /g\n\nuser-agent: *\ndisallow: /\n");
        let sel = robots.select(&["Googlebot-Image", "Googlebot"]);
        assert_eq!(sel.token_index, Some(1));
        assert!(!robots.check(&sel, b"/g").allowed);
        assert!(robots.check(&sel, b"/other").allowed);
        assert_eq!(robots.selection_name(&sel), Some("Googlebot"));
    }

    #[test]
    fn request_paths_are_percent_normalised() {
        let robots = RobotsTxt::compile("user-agent: *\ndisallow: /café\n".as_bytes());
        let sel = robots.select::<&str>(&[]);
        assert!(!robots.check(&sel, "/café/x".as_bytes()).allowed);
        assert!(!robots.check(&sel, b"/caf%c3%a9/x").allowed);
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
    fn issue_14_lazy_dfa_tie() {
        // Found by differential testing against Google's robots_main: nine
        // wildcard rules put the group in the lazy DFA, `*$` can match the
        // empty string, and the URL has raw non-ASCII bytes (robots_main
        // matches the URL as given, without percent-encoding it).
        // `Allow: /*$` and `Disallow: /**` both match with 3 octets: allow wins.
        let body = "user-agent: *\nAllow: /*$\nAllow: *$\nDisallow: /**\nDisallow: /?id=/*.pdf\nAllow: /*.php/+*\n\
                    Allow: /x*private*v1\nDisallow: /print/print*\nDisallow  /%3F/fish*\nDisallow: /folder*\n";
        let robots = RobotsTxt::compile(body.as_bytes());
        let url = "/日本語/'/p/(/admin/a$";
        let v = robots.allows("bingbot", url);
        assert!(v.allowed, "decided by line {:?}", v.rule.map(|r| r.line));
        assert_eq!(v.rule.map(|r| (r.line, r.pattern.as_str())), Some((2, "/*$")));
        // The proxy percent-encodes the path first; same verdict.
        let v = robots.check(&robots.select(&["bingbot"]), url.as_bytes());
        assert_eq!(v.rule.map(|r| (r.line, v.allowed)), Some((2, true)));
    }

    #[test]
    fn size_limit_cuts_at_a_line_end() {
        let mut body = b"user-agent: *\n".to_vec();
        body.extend_from_slice(b"disallow: /private\n");
        let robots = RobotsTxt::compile_with(&body, Options { max_bytes: 25, ..Options::default() });
        assert_eq!(robots.truncated_at(), Some(14));
        assert!(robots.allows("x", "/private").allowed, "the half-read rule is dropped, not shortened");
    }
}
