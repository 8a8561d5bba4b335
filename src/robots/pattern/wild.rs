//! The wildcard automaton: a trie set's wildcard rules, past
//! [`LINEAR_WILDCARDS`] of them, as one lazy DFA.

use super::{pattern_matches, Hit, RuleKind, SetMatch};

/// Up to this many wildcard rules a set checks them one by one (each only
/// when the path reaches its literal prefix); past it, they are compiled into
/// one multi-pattern automaton so that a query stays O(path length).
pub(super) const LINEAR_WILDCARDS: usize = 8;

/// All the wildcard rules of a set as one regex-automata lazy DFA.
///
/// An anchored overlapping search reports every (pattern, end) match in one
/// pass over the path, so a query costs O(path length + matches) however many
/// wildcard rules there are. The DFA's states are built on demand into a
/// bounded cache (one per thread, from a pool); should the DFA ever give up,
/// the query falls back to checking the rules one by one, so the answer is
/// always exact.
pub(super) struct WildIndex {
    dfa: regex_automata::hybrid::dfa::DFA,
    caches: regex_automata::util::pool::Pool<regex_automata::hybrid::dfa::Cache, CacheMaker>,
    /// Pattern id -> rule and its pattern (for the fallback).
    rules: Vec<(RuleKind, Hit, Box<[u8]>)>,
}

type CacheMaker = Box<
    dyn Fn() -> regex_automata::hybrid::dfa::Cache + Send + Sync + std::panic::RefUnwindSafe + std::panic::UnwindSafe,
>;

impl std::fmt::Debug for WildIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WildIndex").field("rules", &self.rules.len()).finish()
    }
}

/// Translate a robots.txt pattern into regex syntax for an anchored search:
/// `*` is any byte sequence, a final `$` the end of the path; every other
/// byte is literal.
fn to_regex(pattern: &[u8]) -> String {
    use std::fmt::Write;
    let (body, anchored) = match pattern.split_last() {
        Some((b'$', rest)) => (rest, true),
        _ => (pattern, false),
    };
    let mut re = String::with_capacity(body.len() * 2 + 8);
    re.push_str("(?s-u)");
    for &b in body {
        if b == b'*' {
            re.push_str(".*");
        } else if b.is_ascii_alphanumeric() {
            re.push(char::from(b));
        } else {
            let _ = write!(re, "\\x{b:02X}");
        }
    }
    if anchored {
        re.push('$');
    }
    re
}

impl WildIndex {
    pub(super) fn build(rules: Vec<(RuleKind, Hit, Vec<u8>)>) -> Result<WildIndex, Vec<(RuleKind, Hit, Vec<u8>)>> {
        use regex_automata::{hybrid::dfa::DFA, nfa::thompson, util::syntax, MatchKind};
        let patterns: Vec<String> = rules.iter().map(|r| to_regex(&r.2)).collect();
        // Paths are bytes, and `allows` gets them as the caller wrote them,
        // raw UTF-8 or any other bytes. Both layers must be in byte mode: the
        // syntax so that `.` is any byte, and the NFA so that a match may end
        // inside a UTF-8 sequence. With a UTF-8 NFA and a pattern that can
        // match empty (`*`, `*$`), an anchored overlapping search reports
        // "no match" for a match ending inside a code point, which ended the
        // loop in `matches` and lost every later match (issue #14).
        let built = DFA::builder()
            .syntax(syntax::Config::new().unicode(false).utf8(false))
            .thompson(thompson::Config::new().utf8(false))
            .configure(DFA::config().match_kind(MatchKind::All).cache_capacity(1 << 20).skip_cache_capacity_check(true))
            .build_many(&patterns);
        let Ok(dfa) = built else { return Err(rules) };
        let for_caches = dfa.clone();
        let make: CacheMaker = Box::new(move || for_caches.create_cache());
        Ok(WildIndex {
            dfa,
            caches: regex_automata::util::pool::Pool::new(make),
            rules: rules.into_iter().map(|(k, h, p)| (k, h, p.into_boxed_slice())).collect(),
        })
    }

    // Inlined into `RuleSet::matches` as it was when this lived in the same
    // module (a codegen unit of its own otherwise): the query path is hot.
    #[inline]
    pub(super) fn matches(&self, path: &[u8], best: &mut SetMatch) {
        use regex_automata::{hybrid::dfa::OverlappingState, Anchored, Input};
        let mut offer = |kind: RuleKind, hit: Hit| {
            let slot = match kind {
                RuleKind::Allow => &mut best.allow,
                RuleKind::Disallow => &mut best.disallow,
            };
            if hit.better_than(slot) {
                *slot = Some(hit);
            }
        };
        let input = Input::new(path).anchored(Anchored::Yes);
        let mut cache = self.caches.get();
        let mut state = OverlappingState::start();
        loop {
            if self.dfa.try_search_overlapping_fwd(&mut cache, &input, &mut state).is_err() {
                // The lazy DFA gave up (it cannot with the default settings,
                // but the answer must not depend on that): check each rule.
                for (kind, hit, pattern) in &self.rules {
                    if pattern_matches(pattern, path) {
                        offer(*kind, *hit);
                    }
                }
                return;
            }
            let Some(m) = state.get_match() else { return };
            let (kind, hit, _) = &self.rules[m.pattern().as_usize()];
            offer(*kind, *hit);
        }
    }
}
