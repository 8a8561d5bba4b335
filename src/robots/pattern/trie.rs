//! The radix trie of a larger [`RuleSet`](super::RuleSet) (its rules'
//! literal prefixes, walked once along the path) and the builder that grows it.

use super::wild::{WildIndex, LINEAR_WILDCARDS};
use super::{pattern_matches, Hit, RuleKind, SetMatch, SetRule};

#[derive(Debug, Clone, Copy)]
struct Wild {
    kind: RuleKind,
    hit: Hit,
    /// Range of the pattern remainder (from the first `*`) in `Trie::bytes`.
    start: u32,
    end: u32,
}

/// A trie node while the set is built.
#[derive(Debug, Default, Clone)]
struct BuildNode {
    /// Edge label from the parent (range into `Builder::bytes`).
    label: (u32, u32),
    /// Children, sorted by the first byte of their label.
    children: Vec<(u8, u32)>,
    /// Best literal rule (no `*`, no `$`) of each kind ending here.
    prefix: [Option<Hit>; 2],
    /// Best `$`-anchored literal rule of each kind ending here.
    exact: [Option<Hit>; 2],
    /// Wildcard rules whose literal prefix ends here.
    wild: Vec<Wild>,
}

/// A trie node as a built set keeps it: its children and wildcard rules are
/// ranges into the set's one edge table and one wildcard table, not vectors
/// of their own (issue 55: a site's robots.txt has a set per group and per
/// merged target, and a vector per node was most of a small set's heap).
#[derive(Debug, Clone)]
struct Node {
    /// Edge label from the parent (range into `Trie::bytes`).
    label: (u32, u32),
    /// Children (range into `Trie::edges`), sorted by first label byte.
    children: (u32, u32),
    /// Wildcard rules whose literal prefix ends here (range into
    /// `Trie::wilds`), by priority, descending.
    wild: (u32, u32),
    /// Best literal rule (no `*`, no `$`) of each kind ending here.
    prefix: [Option<Hit>; 2],
    /// Best `$`-anchored literal rule of each kind ending here.
    exact: [Option<Hit>; 2],
}

/// The growing trie of [`RuleSet::build`](super::RuleSet::build).
#[derive(Default)]
struct Builder {
    nodes: Vec<BuildNode>,
    bytes: Vec<u8>,
}

/// A set as a radix trie of its literal prefixes.
#[derive(Debug, Default)]
pub(super) struct Trie {
    nodes: Box<[Node]>,
    edges: Box<[(u8, u32)]>,
    wilds: Box<[Wild]>,
    bytes: Box<[u8]>,
    pub(super) rules: usize,
    /// Boxed: the automaton and its cache pool take about 730 bytes, which
    /// every set without one (nearly all) would otherwise carry inline; a
    /// site's robots.txt has a set per group and per merged target (issue 55).
    pub(super) wild_index: Option<Box<WildIndex>>,
}

fn kind_index(kind: RuleKind) -> usize {
    match kind {
        RuleKind::Allow => 0,
        RuleKind::Disallow => 1,
    }
}

impl Trie {
    pub(super) fn build(rules: Vec<SetRule<'_>>) -> Trie {
        let mut trie = Builder { nodes: vec![BuildNode::default()], bytes: Vec::new() };
        let mut count = 0;
        let mut wild: Vec<(RuleKind, Hit, Vec<u8>)> = Vec::new();
        for rule in rules {
            trie.insert(&rule, &mut wild);
            count += 1;
        }
        let mut wild_index = None;
        if wild.len() > LINEAR_WILDCARDS {
            match WildIndex::build(wild) {
                Ok(index) => {
                    wild_index = Some(Box::new(index));
                    wild = Vec::new();
                }
                Err(rules) => wild = rules,
            }
        }
        // Few wildcards (or an automaton too large to build): check each at
        // the trie node where its literal prefix ends.
        for (kind, hit, pattern) in wild {
            let star = pattern.iter().position(|&b| b == b'*').unwrap_or(pattern.len());
            let node = trie.walk_insert(&pattern[..star]);
            let (start, end) = trie.push_bytes(&pattern[star..]);
            trie.nodes[node].wild.push(Wild { kind, hit, start, end });
        }
        // Freeze: every node's children and wildcards into two flat tables.
        let edge_count = trie.nodes.iter().map(|n| n.children.len()).sum();
        let wild_count = trie.nodes.iter().map(|n| n.wild.len()).sum();
        let mut edges = Vec::with_capacity(edge_count);
        let mut wilds = Vec::with_capacity(wild_count);
        let mut nodes = Vec::with_capacity(trie.nodes.len());
        for mut n in trie.nodes {
            n.wild.sort_by(|a, b| b.hit.priority.cmp(&a.hit.priority).then(a.hit.line.cmp(&b.hit.line)));
            let children = (edges.len() as u32, (edges.len() + n.children.len()) as u32);
            edges.extend_from_slice(&n.children);
            let wild = (wilds.len() as u32, (wilds.len() + n.wild.len()) as u32);
            wilds.extend_from_slice(&n.wild);
            nodes.push(Node { label: n.label, children, wild, prefix: n.prefix, exact: n.exact });
        }
        Trie {
            nodes: nodes.into_boxed_slice(),
            edges: edges.into_boxed_slice(),
            wilds: wilds.into_boxed_slice(),
            bytes: trie.bytes.into_boxed_slice(),
            rules: count,
            wild_index,
        }
    }

    fn label(&self, node: usize) -> &[u8] {
        let (s, e) = self.nodes[node].label;
        &self.bytes[s as usize..e as usize]
    }

    // Inlined into `RuleSet::matches` as it was when this lived in the same
    // module (a codegen unit of its own otherwise): the query path is hot.
    #[inline]
    pub(super) fn matches(&self, path: &[u8]) -> SetMatch {
        let mut best = SetMatch::default();
        if let Some(index) = &self.wild_index {
            index.matches(path, &mut best);
        }
        let mut node = 0;
        let mut depth = 0;
        loop {
            let n = &self.nodes[node];
            for k in 0..2 {
                let slot = if k == 0 { &mut best.allow } else { &mut best.disallow };
                if let Some(h) = n.prefix[k] {
                    if h.better_than(slot) {
                        *slot = Some(h);
                    }
                }
                if depth == path.len() {
                    if let Some(h) = n.exact[k] {
                        if h.better_than(slot) {
                            *slot = Some(h);
                        }
                    }
                }
            }
            for w in &self.wilds[n.wild.0 as usize..n.wild.1 as usize] {
                let floor = |h: &Option<Hit>| h.map_or(0, |h| h.priority);
                // A rule below both current bests can change nothing; the list is sorted.
                if w.hit.priority < floor(&best.allow).min(floor(&best.disallow))
                    && best.allow.is_some()
                    && best.disallow.is_some()
                {
                    break;
                }
                let slot = match w.kind {
                    RuleKind::Allow => &mut best.allow,
                    RuleKind::Disallow => &mut best.disallow,
                };
                if !w.hit.better_than(slot) {
                    continue;
                }
                let tail = &self.bytes[w.start as usize..w.end as usize];
                if pattern_matches(tail, &path[depth..]) {
                    *slot = Some(w.hit);
                }
            }
            let Some(&next) = path.get(depth) else { break };
            let children = &self.edges[n.children.0 as usize..n.children.1 as usize];
            let Ok(at) = children.binary_search_by_key(&next, |c| c.0) else {
                break;
            };
            let child = children[at].1 as usize;
            let label = self.label(child);
            if !path[depth..].starts_with(label) {
                break;
            }
            depth += label.len();
            node = child;
        }
        best
    }
}

impl Builder {
    fn label(&self, node: usize) -> &[u8] {
        let (s, e) = self.nodes[node].label;
        &self.bytes[s as usize..e as usize]
    }

    fn push_bytes(&mut self, b: &[u8]) -> (u32, u32) {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(b);
        (start as u32, self.bytes.len() as u32)
    }

    fn insert(&mut self, rule: &SetRule<'_>, wild: &mut Vec<(RuleKind, Hit, Vec<u8>)>) {
        let hit = Hit { priority: rule.pattern.len() as u32, line: rule.line, rule: rule.id };
        let star = rule.pattern.iter().position(|&b| b == b'*');
        let (literal, tail) = match star {
            Some(s) => (&rule.pattern[..s], Some(&rule.pattern[s..])),
            None => (rule.pattern, None),
        };
        let (literal, exact) = match (tail, literal.split_last()) {
            (None, Some((b'$', rest))) => (rest, true),
            _ => (literal, false),
        };
        if tail.is_some() {
            // Placed after all rules are read: in the trie or in the automaton.
            wild.push((rule.kind, hit, rule.pattern.to_vec()));
            return;
        }
        let node = self.walk_insert(literal);
        let k = kind_index(rule.kind);
        match tail {
            Some(_) => {}
            None if exact => {
                if hit.better_than(&self.nodes[node].exact[k]) {
                    self.nodes[node].exact[k] = Some(hit);
                }
            }
            None => {
                if hit.better_than(&self.nodes[node].prefix[k]) {
                    self.nodes[node].prefix[k] = Some(hit);
                }
            }
        }
    }

    /// Find or create the node at the end of `key`, splitting edges as needed.
    fn walk_insert(&mut self, mut key: &[u8]) -> usize {
        let mut node = 0;
        while let Some(&first) = key.first() {
            let slot = self.nodes[node].children.binary_search_by_key(&first, |c| c.0);
            match slot {
                Err(at) => {
                    let label = self.push_bytes(key);
                    let child = self.nodes.len();
                    self.nodes.push(BuildNode { label, ..BuildNode::default() });
                    self.nodes[node].children.insert(at, (first, child as u32));
                    return child;
                }
                Ok(at) => {
                    let child = self.nodes[node].children[at].1 as usize;
                    let label = self.label(child);
                    let common = label.iter().zip(key).take_while(|(a, b)| a == b).count();
                    if common == label.len() {
                        node = child;
                        key = &key[common..];
                        continue;
                    }
                    // Split the edge: parent -> mid (common part) -> child (rest).
                    let (ls, le) = self.nodes[child].label;
                    let split = ls + common as u32;
                    let mid = self.nodes.len();
                    self.nodes.push(BuildNode { label: (ls, split), ..BuildNode::default() });
                    self.nodes[child].label = (split, le);
                    let child_first = self.bytes[split as usize];
                    self.nodes[mid].children.push((child_first, child as u32));
                    self.nodes[node].children[at].1 = mid as u32;
                    node = mid;
                    key = &key[common..];
                }
            }
        }
        node
    }
}
