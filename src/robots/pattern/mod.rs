//! Rule patterns and the compiled rule set.
//!
//! RFC 9309 2.2.2 / robots.cc `Matches`: a pattern is anchored at the start of
//! the path, `*` matches any sequence of bytes, and `$` anchors the end only
//! as the last byte of the pattern (elsewhere it is a literal `$`). The match
//! priority of a rule is the length of its (normalised) pattern in bytes; the
//! highest priority wins, and on a tie `allow` wins.
//!
//! A [`RuleSet`] of a few rules is a flat list, checked rule by rule. A
//! larger one keeps every rule's literal prefix (the bytes before its first
//! `*`) in a radix trie. A query walks the trie once along the path, so its
//! cost is O(path length) for literal rules however many there are; a rule
//! with a `*` is checked only when the path reaches the end of its literal
//! prefix, and only if it could still beat the best match found so far.

mod trie;
mod wild;

use trie::Trie;
use wild::LINEAR_WILDCARDS;

/// Whether a rule allows or disallows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RuleKind {
    /// `Allow:`
    Allow,
    /// `Disallow:`
    Disallow,
}

impl RuleKind {
    /// `"allow"` or `"disallow"`.
    pub fn as_str(self) -> &'static str {
        match self {
            RuleKind::Allow => "allow",
            RuleKind::Disallow => "disallow",
        }
    }
}

/// Whether `pattern` matches a prefix of `path` (the whole of it, when the
/// pattern ends in `$`).
///
/// This is the plain definition, used for wildcard rules and as the reference
/// in tests. Cost: O(|pattern| × |path|) in the worst case, no allocation.
pub fn pattern_matches(pattern: &[u8], path: &[u8]) -> bool {
    let (pattern, anchored) = match pattern.split_last() {
        Some((b'$', rest)) => (rest, true),
        _ => (pattern, false),
    };
    glob(pattern, path, anchored)
}

/// Greedy glob matching with backtracking to the last `*`, which is exact for
/// patterns whose only metacharacter is `*`. Unanchored means "a prefix of
/// `text` matches", i.e. the pattern has an implicit trailing `*`.
fn glob(p: &[u8], t: &[u8], anchored: bool) -> bool {
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    loop {
        if pi == p.len() && (!anchored || ti == t.len()) {
            return true;
        }
        if pi < p.len() && p[pi] == b'*' {
            // Collapse runs of `*`; remember where to resume.
            while pi < p.len() && p[pi] == b'*' {
                pi += 1;
            }
            if pi == p.len() {
                return true;
            }
            star = Some((pi, ti));
            continue;
        }
        if pi < p.len() && ti < t.len() && p[pi] == t[ti] {
            pi += 1;
            ti += 1;
            continue;
        }
        match star {
            Some((sp, st)) if st < t.len() => {
                star = Some((sp, st + 1));
                pi = sp;
                ti = st + 1;
            }
            _ => return false,
        }
    }
}

/// The best rule of one kind found so far in a query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hit {
    /// Pattern length in bytes (RFC 9309: the most specific match wins).
    pub priority: u32,
    /// Source line of the rule; the earliest line wins among equals.
    pub line: u32,
    /// Index of the rule in the owner's rule table.
    pub rule: u32,
}

impl Hit {
    fn better_than(&self, other: &Option<Hit>) -> bool {
        match other {
            None => true,
            Some(o) => self.priority > o.priority || (self.priority == o.priority && self.line < o.line),
        }
    }
}

/// One rule as the rule set stores it.
#[derive(Debug, Clone)]
pub struct SetRule<'a> {
    /// Allow or disallow.
    pub kind: RuleKind,
    /// The normalised pattern.
    pub pattern: &'a [u8],
    /// Source line.
    pub line: u32,
    /// Index in the owner's rule table, reported back in [`Hit::rule`].
    pub id: u32,
}

/// A compiled set of allow/disallow rules: one group, or several merged.
///
/// A set of a few rules ([`FLAT_RULES`] at most, of which at most
/// [`LINEAR_WILDCARDS`] wildcard ones) is a flat list checked rule by rule;
/// a larger one is a trie. Both answer alike (a test compares them): a
/// site's robots.txt has a set per group and per merged target, nearly all
/// of a few rules, and a trie of nodes of 88 bytes was most of a compiled
/// robots.txt (issue 55: 10,000 sites).
#[derive(Debug, Default)]
pub struct RuleSet {
    form: Form,
}

#[derive(Debug)]
enum Form {
    Flat(Flat),
    Trie(Box<Trie>),
}

impl Default for Form {
    fn default() -> Self {
        Form::Flat(Flat::default())
    }
}

/// Up to this many rules a set is a flat list: a query checks each (a byte
/// comparison for a literal rule, most failing on the first bytes), which
/// costs no more than a walk down a trie at this size.
const FLAT_RULES: usize = 16;

/// A set of a few rules, in the order given (rule-table order).
#[derive(Debug, Default)]
struct Flat {
    rules: Box<[FlatRule]>,
    /// The patterns, one after the other.
    bytes: Box<[u8]>,
}

/// One rule of a [`Flat`] set: 20 bytes.
#[derive(Debug, Clone, Copy)]
struct FlatRule {
    kind: RuleKind,
    shape: Shape,
    line: u32,
    rule: u32,
    /// Range of the whole pattern in `Flat::bytes`; its length is the
    /// rule's priority.
    start: u32,
    end: u32,
}

/// How a flat rule's pattern matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// No `*`, no final `$`: a prefix of the path.
    Prefix,
    /// No `*`, a final `$`: the whole path (the pattern less its `$`).
    Exact,
    /// Has a `*`: [`pattern_matches`].
    Wild,
}

/// The outcome of matching a path against a [`RuleSet`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SetMatch {
    /// Best matching allow rule.
    pub allow: Option<Hit>,
    /// Best matching disallow rule.
    pub disallow: Option<Hit>,
}

impl SetMatch {
    /// The deciding rule: the higher priority wins, allow on a tie (RFC 9309
    /// 2.2.2). Rules with an empty pattern (priority 0) never decide, as in
    /// robots.cc `disallow()`.
    pub fn decide(&self) -> Option<(RuleKind, Hit)> {
        let a = self.allow.filter(|h| h.priority > 0);
        let d = self.disallow.filter(|h| h.priority > 0);
        match (a, d) {
            (None, None) => None,
            (Some(a), None) => Some((RuleKind::Allow, a)),
            (None, Some(d)) => Some((RuleKind::Disallow, d)),
            (Some(a), Some(d)) => {
                if d.priority > a.priority {
                    Some((RuleKind::Disallow, d))
                } else {
                    Some((RuleKind::Allow, a))
                }
            }
        }
    }
}

impl RuleSet {
    /// Build a rule set. Cost: O(total pattern bytes × log fan-out).
    pub fn build<'a>(rules: impl IntoIterator<Item = SetRule<'a>>) -> RuleSet {
        let rules: Vec<SetRule<'a>> = rules.into_iter().collect();
        let wild = rules.iter().filter(|r| r.pattern.contains(&b'*')).count();
        match rules.len() <= FLAT_RULES && wild <= LINEAR_WILDCARDS {
            true => RuleSet { form: Form::Flat(Flat::build(&rules)) },
            false => RuleSet::trie(rules),
        }
    }

    /// [`RuleSet::build`] as a trie, whatever its size.
    fn trie(rules: Vec<SetRule<'_>>) -> RuleSet {
        RuleSet { form: Form::Trie(Box::new(Trie::build(rules))) }
    }

    /// Number of rules in the set.
    pub fn len(&self) -> usize {
        match &self.form {
            Form::Flat(f) => f.rules.len(),
            Form::Trie(t) => t.rules,
        }
    }

    /// Whether the set has no rules.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Match `path` (already reduced to path + query) against every rule.
    ///
    /// Cost: a flat set, one check per rule that could still win (a byte
    /// comparison, or a glob check for a wildcard rule); a trie, O(|path|)
    /// trie steps, plus one glob check per wildcard rule whose literal
    /// prefix the path reaches and which could still win.
    pub fn matches(&self, path: &[u8]) -> SetMatch {
        match &self.form {
            Form::Flat(f) => f.matches(path),
            Form::Trie(t) => t.matches(path),
        }
    }
}

impl Flat {
    fn build(rules: &[SetRule<'_>]) -> Flat {
        let mut bytes = Vec::with_capacity(rules.iter().map(|r| r.pattern.len()).sum());
        let rules = rules
            .iter()
            .map(|r| {
                let start = bytes.len() as u32;
                bytes.extend_from_slice(r.pattern);
                let shape = match (r.pattern.contains(&b'*'), r.pattern.last()) {
                    (true, _) => Shape::Wild,
                    (false, Some(b'$')) => Shape::Exact,
                    (false, _) => Shape::Prefix,
                };
                FlatRule { kind: r.kind, shape, line: r.line, rule: r.id, start, end: bytes.len() as u32 }
            })
            .collect();
        Flat { rules, bytes: bytes.into_boxed_slice() }
    }

    fn matches(&self, path: &[u8]) -> SetMatch {
        let mut best = SetMatch::default();
        for r in &self.rules[..] {
            let slot = match r.kind {
                RuleKind::Allow => &mut best.allow,
                RuleKind::Disallow => &mut best.disallow,
            };
            let hit = Hit { priority: r.end - r.start, line: r.line, rule: r.rule };
            // A rule that cannot beat the best of its kind is not checked.
            if !hit.better_than(slot) {
                continue;
            }
            let pattern = &self.bytes[r.start as usize..r.end as usize];
            let matched = match r.shape {
                Shape::Prefix => path.starts_with(pattern),
                Shape::Exact => path == &pattern[..pattern.len() - 1],
                Shape::Wild => pattern_matches(pattern, path),
            };
            if matched {
                *slot = Some(hit);
            }
        }
        best
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glob_semantics() {
        assert!(pattern_matches(b"/fish", b"/fish.html"));
        assert!(!pattern_matches(b"/fish$", b"/fish.html"));
        assert!(pattern_matches(b"/*.php$", b"/a/b.php"));
        assert!(!pattern_matches(b"/*.php$", b"/a/b.php?x"));
        assert!(pattern_matches(b"/fish*.php", b"/fish/salmon.php?x"));
        assert!(pattern_matches(b"/a$b", b"/a$bc"), "`$` inside a pattern is literal");
        assert!(pattern_matches(b"", b"/anything"));
        assert!(pattern_matches(b"*", b""));
        assert!(pattern_matches(b"/$", b"/"));
        assert!(!pattern_matches(b"/a*b$", b"/acbd"));
        assert!(pattern_matches(b"/a*b$", b"/acbdb"));
    }

    fn set(rules: &[(RuleKind, &str)]) -> RuleSet {
        RuleSet::build(set_rules(rules))
    }

    /// Whether `set`'s wildcard rules are in one automaton.
    fn automaton(set: &RuleSet) -> bool {
        matches!(&set.form, Form::Trie(t) if t.wild_index.is_some())
    }

    fn set_rules<'a>(rules: &'a [(RuleKind, &str)]) -> Vec<SetRule<'a>> {
        let rule = |(i, (kind, p)): (usize, &'a (RuleKind, &str))| SetRule {
            kind: *kind,
            pattern: p.as_bytes(),
            line: i as u32 + 1,
            id: i as u32,
        };
        rules.iter().enumerate().map(rule).collect()
    }

    /// The set of `rules` in both forms: a flat list and a trie.
    fn both(rules: &[(RuleKind, &str)]) -> [RuleSet; 2] {
        let flat = set(rules);
        assert!(matches!(flat.form, Form::Flat(_)), "few rules make a flat set");
        [flat, RuleSet::trie(set_rules(rules))]
    }

    #[test]
    fn longest_wins_and_allow_wins_ties() {
        use RuleKind::*;
        for s in both(&[(Disallow, "/a"), (Allow, "/a/b"), (Disallow, "/a/b/c"), (Allow, "/x"), (Disallow, "/x")]) {
            assert_eq!(s.matches(b"/a/z").decide().unwrap().0, Disallow);
            assert_eq!(s.matches(b"/a/b/z").decide().unwrap().0, Allow);
            assert_eq!(s.matches(b"/a/b/c").decide().unwrap().0, Disallow);
            assert_eq!(s.matches(b"/x").decide().unwrap().0, Allow);
            assert!(s.matches(b"/q").decide().is_none());
        }
    }

    #[test]
    fn wildcards_and_anchors_in_the_trie() {
        use RuleKind::*;
        for s in both(&[(Disallow, "/*.gif$"), (Allow, "/img/*"), (Disallow, "/img/$"), (Disallow, "/p*q")]) {
            assert_eq!(s.matches(b"/x.gif").decide().unwrap().0, Disallow);
            assert_eq!(s.matches(b"/img/a.gif").decide().unwrap().0, Disallow, "7 bytes beat 6");
            assert_eq!(s.matches(b"/img/").decide().unwrap().0, Allow, "6 bytes each: allow wins the tie");
            assert_eq!(s.matches(b"/img/x").decide().unwrap().0, Allow);
            assert_eq!(s.matches(b"/pxxq").decide().unwrap().0, Disallow);
            assert!(s.matches(b"/pxx").decide().is_none());
        }
    }

    #[test]
    fn a_set_past_the_flat_size_is_a_trie() {
        let many: Vec<String> = (0..=FLAT_RULES).map(|i| format!("/p{i}/")).collect();
        let rules: Vec<(RuleKind, &str)> = many.iter().map(|p| (RuleKind::Disallow, p.as_str())).collect();
        let s = RuleSet::build(set_rules(&rules));
        assert!(matches!(s.form, Form::Trie(_)));
        assert_eq!(s.len(), FLAT_RULES + 1);
        assert_eq!(s.matches(b"/p16/x").decide().unwrap().1.line, 17);
        // Few rules but past the wildcards a flat set checks one by one.
        let stars: Vec<String> = (0..=LINEAR_WILDCARDS).map(|i| format!("/*{i}")).collect();
        let rules: Vec<(RuleKind, &str)> = stars.iter().map(|p| (RuleKind::Disallow, p.as_str())).collect();
        assert!(matches!(RuleSet::build(set_rules(&rules)).form, Form::Trie(_)));
    }

    #[test]
    fn many_wildcards_use_the_automaton_and_agree_with_the_plain_check() {
        use RuleKind::*;
        let mut rules: Vec<(RuleKind, String)> = (0..40).map(|i| (Disallow, format!("/*.{i}.json$"))).collect();
        rules.push((Allow, "/*/ok/*".into()));
        rules.push((Disallow, "/a$b*".into()));
        rules.push((Allow, "/x.y+z(*".into()));
        let refs: Vec<(RuleKind, &str)> = rules.iter().map(|(k, p)| (*k, p.as_str())).collect();
        let s = set(&refs);
        assert!(automaton(&s));
        for path in ["/a/b.7.json", "/a/b.7.json?x", "/q/ok/b.3.json", "/a$bc", "/x.y+z(w", "/x.yyz(w", "/"] {
            let want = refs
                .iter()
                .enumerate()
                .filter(|(_, (_, p))| pattern_matches(p.as_bytes(), path.as_bytes()))
                .max_by_key(|(i, (k, p))| (p.len(), *k == Allow, std::cmp::Reverse(*i)))
                .map(|(_, (k, _))| *k);
            assert_eq!(s.matches(path.as_bytes()).decide().map(|d| d.0), want, "{path}");
        }
    }

    /// The plain definition over every rule, as the set must answer it:
    /// most octets wins, allow on a tie (RFC 9309 2.2.2), earliest line among
    /// rules of one kind and length; an empty pattern never decides.
    fn naive(rules: &[(RuleKind, Vec<u8>)], path: &[u8]) -> Option<(RuleKind, u32, u32)> {
        rules
            .iter()
            .enumerate()
            .filter(|(_, (_, p))| !p.is_empty() && pattern_matches(p, path))
            .max_by_key(|(i, (k, p))| (p.len(), *k == RuleKind::Allow, std::cmp::Reverse(*i)))
            .map(|(i, (k, p))| (*k, p.len() as u32, i as u32 + 1))
    }

    fn build(rules: &[(RuleKind, Vec<u8>)]) -> RuleSet {
        RuleSet::build(rules.iter().enumerate().map(|(i, (kind, p))| SetRule {
            kind: *kind,
            pattern: p,
            line: i as u32 + 1,
            id: i as u32,
        }))
    }

    #[test]
    fn issue_14_non_ascii_paths_in_the_automaton() {
        use RuleKind::*;
        // Nine wildcard rules, one of which (`*`) matches the empty string.
        let mut rules: Vec<(RuleKind, Vec<u8>)> = (0..7).map(|i| (Disallow, format!("/{i}*x").into_bytes())).collect();
        rules.push((Allow, b"*".to_vec()));
        rules.push((Disallow, b"/**".to_vec()));
        rules.push((Allow, b"/*$".to_vec()));
        let s = build(&rules);
        assert!(automaton(&s));
        for path in ["/é".as_bytes(), "/日本語/a$".as_bytes(), b"/\xff\xfe", b"/a\xe6", b"/1\xe6x", b"/%E6x"] {
            let got = s.matches(path).decide().map(|(k, h)| (k, h.priority, h.line));
            assert_eq!(got, naive(&rules, path), "{}", path.escape_ascii());
        }
    }

    mod prop {
        use super::super::*;
        use super::{automaton, build, naive};
        use proptest::prelude::*;

        /// Pattern pieces: repeated `*`, a literal `$` inside, percent escapes,
        /// and letters, so that patterns of equal length are common.
        fn piece() -> impl Strategy<Value = &'static str> {
            prop_oneof![
                4 => Just("*"),
                1 => Just("**"),
                3 => Just("a"),
                2 => Just("/"),
                1 => Just("$"),
                1 => Just("%E6"),
                1 => Just("?"),
            ]
        }

        fn pattern(with_star: bool) -> impl Strategy<Value = Vec<u8>> {
            (any::<bool>(), proptest::collection::vec(piece(), 0..5), any::<bool>()).prop_map(
                move |(slash, pieces, anchored)| {
                    let mut p = Vec::new();
                    if slash {
                        p.push(b'/');
                    }
                    for piece in pieces {
                        p.extend_from_slice(piece.as_bytes());
                    }
                    if with_star && !p.contains(&b'*') {
                        p.push(b'*');
                    }
                    if anchored {
                        p.push(b'$');
                    }
                    p
                },
            )
        }

        /// Request paths as `allows` sees them: not percent-encoded, so raw
        /// UTF-8 and stray bytes ≥ 0x80 as well as `$`, `*` and escapes.
        fn path() -> impl Strategy<Value = Vec<u8>> {
            let byte_piece = prop_oneof![
                3 => Just(&b"a"[..]),
                2 => Just(&b"/"[..]),
                1 => Just(&b"$"[..]),
                1 => Just(&b"*"[..]),
                1 => Just(&b"?"[..]),
                1 => Just(&b"%E6"[..]),
                1 => Just("é".as_bytes()),
                1 => Just("日".as_bytes()),
                1 => Just(&b"\xe6"[..]),
                1 => Just(&b"\xff"[..]),
            ];
            proptest::collection::vec(byte_piece, 0..8).prop_map(|pieces| {
                let mut p = b"/".to_vec();
                for piece in pieces {
                    p.extend_from_slice(piece);
                }
                p
            })
        }

        fn kind() -> impl Strategy<Value = RuleKind> {
            prop_oneof![Just(RuleKind::Allow), Just(RuleKind::Disallow)]
        }

        /// A group past [`LINEAR_WILDCARDS`], with literal rules mixed in and
        /// some patterns repeated with the other kind (an exact tie).
        fn group() -> impl Strategy<Value = Vec<(RuleKind, Vec<u8>)>> {
            (
                proptest::collection::vec((kind(), pattern(true)), LINEAR_WILDCARDS + 1..LINEAR_WILDCARDS + 16),
                proptest::collection::vec((kind(), pattern(false)), 0..6),
                proptest::collection::vec(any::<prop::sample::Index>(), 0..4),
                any::<u64>(),
            )
                .prop_map(|(wild, literal, twins, seed)| {
                    let mut rules = wild;
                    rules.extend(literal);
                    for t in twins {
                        let (k, p) = t.get(&rules).clone();
                        let other = if k == RuleKind::Allow { RuleKind::Disallow } else { RuleKind::Allow };
                        rules.push((other, p));
                    }
                    // A deterministic shuffle, so that lines are in no particular order.
                    shuffle(&mut rules, seed);
                    rules
                })
        }

        /// Shuffle `rules` by `seed` (xorshift), the same way every time.
        fn shuffle<T>(rules: &mut [T], seed: u64) {
            let mut x = seed | 1;
            for i in (1..rules.len()).rev() {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                rules.swap(i, (x % (i as u64 + 1)) as usize);
            }
        }

        /// A group a flat set takes: up to [`FLAT_RULES`] rules, literal
        /// and wildcard ones, some repeated with the other kind.
        fn small_group() -> impl Strategy<Value = Vec<(RuleKind, Vec<u8>)>> {
            (
                proptest::collection::vec((kind(), pattern(true)), 0..=LINEAR_WILDCARDS),
                proptest::collection::vec((kind(), pattern(false)), 0..8),
                any::<u64>(),
            )
                .prop_map(|(wild, literal, seed)| {
                    let mut rules = wild;
                    rules.extend(literal);
                    if let Some((k, p)) = rules.first().cloned() {
                        let other = if k == RuleKind::Allow { RuleKind::Disallow } else { RuleKind::Allow };
                        rules.push((other, p));
                    }
                    // The literal pieces have stars too: keep a flat set's share.
                    let mut stars = 0;
                    rules.retain(|(_, p)| {
                        stars += usize::from(p.contains(&b'*'));
                        !p.contains(&b'*') || stars <= LINEAR_WILDCARDS
                    });
                    shuffle(&mut rules, seed);
                    rules
                })
        }

        proptest! {
            #![proptest_config(ProptestConfig { cases: 4000, .. ProptestConfig::default() })]

            #[test]
            fn a_flat_set_answers_as_the_trie(rules in small_group(), paths in proptest::collection::vec(path(), 1..8)) {
                let flat = build(&rules);
                prop_assert!(matches!(flat.form, Form::Flat(_)), "not flat");
                let trie = RuleSet::trie(rules.iter().enumerate().map(|(i, (kind, p))| SetRule {
                    kind: *kind,
                    pattern: p,
                    line: i as u32 + 1,
                    id: i as u32,
                }).collect());
                for path in &paths {
                    // The whole answer: each kind's best rule, not only the verdict.
                    prop_assert_eq!(flat.matches(path), trie.matches(path), "path {}", path.escape_ascii());
                    let got = flat.matches(path).decide().map(|(k, h)| (k, h.priority, h.line));
                    prop_assert_eq!(got, naive(&rules, path), "path {}", path.escape_ascii());
                }
            }

            #[test]
            fn automaton_agrees_with_the_plain_definition(rules in group(), paths in proptest::collection::vec(path(), 1..8)) {
                let set = build(&rules);
                // The generator's point: every case goes through the lazy DFA.
                prop_assert!(automaton(&set), "not in the automaton");
                for path in &paths {
                    let got = set.matches(path).decide().map(|(k, h)| (k, h.priority, h.line));
                    prop_assert_eq!(got, naive(&rules, path), "path {}", path.escape_ascii());
                }
            }
        }
    }

    #[test]
    fn edge_splitting_keeps_all_rules() {
        use RuleKind::*;
        for s in both(&[(Disallow, "/abcdef"), (Allow, "/abc"), (Disallow, "/abd"), (Allow, "/ab")]) {
            assert_eq!(s.matches(b"/abcdefg").decide().unwrap().1.line, 1);
            assert_eq!(s.matches(b"/abcx").decide().unwrap().1.line, 2);
            assert_eq!(s.matches(b"/abdx").decide().unwrap().1.line, 3);
            assert_eq!(s.matches(b"/abx").decide().unwrap().1.line, 4);
        }
    }
}
