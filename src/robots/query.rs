//! Asking the compiled robots.txt: which groups a bot obeys, and whether a
//! path is allowed, with the rule and group that decided.

use super::build::{Group, Located, RobotsTxt, Rule};
use super::ext::{RequestRate, VisitTime};
use super::parse;
use super::pattern::{pattern_matches, Hit, RuleKind, SetMatch};
use super::usage::UsagePref;

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

/// The `Content-Usage` preference in force for a path (see [`RobotsTxt::usage`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UsageMatch {
    /// The line of the rule that set the most restrictive stance.
    pub line: u32,
    /// The preference.
    pub pref: UsagePref,
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

impl RobotsTxt {
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
            if let Some(t) = with_lowercase(token, |k| self.proxy_map().get(k).copied()) {
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

    /// The `Content-Usage` preference in force for a path, among the
    /// selected groups' rules (draft-ietf-aipref-attach): the rule whose path
    /// pattern matches with the most octets selects (a rule without a path
    /// matches every path, with none); among rules that match equally long,
    /// the most restrictive stance per category wins. It says nothing about
    /// whether the group allows the path: callers ask [`check`](Self::check).
    ///
    /// Cost: one pattern match per `Content-Usage` rule of the selected
    /// groups (a site writes a handful), each O(pattern × path) at worst.
    pub fn usage(&self, selection: &Selection, path_and_query: &[u8]) -> Option<UsageMatch> {
        let mut best: Option<(usize, UsageMatch)> = None;
        let mut path = None;
        for g in self.selected_groups(selection) {
            for r in &g.ext().content_usage {
                let len = r.raw.len();
                if best.as_ref().is_some_and(|(l, _)| *l > len) {
                    continue;
                }
                let path = path.get_or_insert_with(|| parse::escape_pattern(path_and_query));
                if len > 0 && !pattern_matches(&r.raw, path) {
                    continue;
                }
                match &mut best {
                    Some((l, m)) if *l == len => {
                        let combined = m.pref.combine(r.pref);
                        if combined != m.pref {
                            *m = UsageMatch { line: r.line, pref: combined };
                        }
                    }
                    _ => best = Some((len, UsageMatch { line: r.line, pref: r.pref })),
                }
            }
        }
        best.map(|(_, m)| m)
    }

    /// Whether group `index` alone (by its own rules) allows `path`; for the
    /// linter, for a group with `Content-Usage` rules (the set of a group
    /// without them may have been dropped). An index out of range allows.
    pub(super) fn group_allows(&self, index: usize, path: &[u8]) -> bool {
        let Some(set) = self.sets.get(index) else { return true };
        set.matches(path).decide().is_none_or(|(kind, _)| kind == RuleKind::Allow)
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
        self.selected_groups(selection).find_map(|g| g.ext().crawl_delay.as_ref())
    }

    /// The first `Request-rate` among the selected groups.
    pub fn request_rate(&self, selection: &Selection) -> Option<&Located<RequestRate>> {
        self.selected_groups(selection).find_map(|g| g.ext().request_rate.as_ref())
    }

    /// The first `Visit-time` among the selected groups.
    pub fn visit_time(&self, selection: &Selection) -> Option<&Located<VisitTime>> {
        self.selected_groups(selection).find_map(|g| g.ext().visit_time.as_ref())
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
                .map(|a| a.full_token()),
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::robots::RobotsTxt;

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
    fn deciding_rule_and_line_are_reported() {
        let robots = RobotsTxt::compile(b"user-agent: *\ndisallow: /a\nallow: /a/b\n");
        let v = robots.allows("x", "http://h/a/b/c");
        assert!(v.allowed);
        let rule = v.rule.unwrap();
        assert_eq!((rule.kind, rule.pattern(), rule.line), (RuleKind::Allow, "/a/b", 3));
        assert_eq!(v.group, GroupMatch::Global);
    }

    #[test]
    fn robots_txt_is_always_allowed_to_the_proxy_but_not_in_googles_check() {
        let robots = RobotsTxt::compile(b"user-agent: *\ndisallow: /\n");
        assert!(!robots.allows("x", "/robots.txt").allowed, "robots_main has no exception");
        assert!(robots.check(&robots.select(&["x"]), b"/robots.txt").allowed);
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
        assert_eq!(v.rule.map(|r| (r.line, r.pattern())), Some((2, "/*$")));
        // The proxy percent-encodes the path first; same verdict.
        let v = robots.check(&robots.select(&["bingbot"]), url.as_bytes());
        assert_eq!(v.rule.map(|r| (r.line, v.allowed)), Some((2, true)));
    }
}
