//! The one place that names `serde_yaml`.
//!
//! `serde_yaml` is deprecated upstream; every YAML document robotgate reads goes
//! through [`from_str`], so replacing the crate is a change to this file alone.
//!
//! A document is bounded before it is expanded (issue 66). An alias
//! (`*a`) repeats its anchor's nodes wherever it stands: serde_yaml caps
//! the depth of that (the "billion laughs" form is refused) but not its
//! breadth, so a 312 KB site file, `a: &a [x, ...10,000]` then
//! `b: [*a, ...100,000]`, expanded into a billion nodes, about 400 MB a
//! second until the allocator gave up and took every site with it. Each
//! document is walked once first, keeping nothing, counting the nodes and
//! scalar bytes it expands to; past [`MAX_NODES`] or [`MAX_SCALAR_BYTES`]
//! it is refused, saying so, before anything is built from it. A document
//! without aliases stays under both (a node takes at least a byte of text,
//! and [`crate::load::file::CONFIG_MAX`] is 4 MiB); a few anchors shared by
//! many sites (`policy: *common`) stay far under them.

use std::cell::Cell;
use std::fmt;

use serde::de::{DeserializeOwned, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

/// The most nodes (scalars, sequences, mappings, each alias counted as the
/// nodes it repeats) a document may expand to.
pub const MAX_NODES: usize = 2_000_000;

/// The most bytes its scalars may hold, expanded.
pub const MAX_SCALAR_BYTES: usize = 16 << 20;

/// A YAML syntax or shape error, with the position serde_yaml reports.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct YamlError {
    /// Human-readable description, including line and column when known.
    pub message: String,
    /// 1-based line of the error, when known.
    pub line: Option<usize>,
}

/// Deserialize one YAML document.
///
/// # Errors
/// Returns the parser's message and line when the text is not valid YAML or does
/// not have the shape of `T` (unknown keys are errors where `T` says so).
pub fn from_str<T: DeserializeOwned>(text: &str) -> Result<T, YamlError> {
    measure(text)?;
    serde_yaml::from_str(text).map_err(yaml_error)
}

fn yaml_error(e: serde_yaml::Error) -> YamlError {
    YamlError { line: e.location().map(|l| l.line()), message: e.to_string() }
}

/// What a document expands to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Size {
    /// Nodes, each alias counted as the nodes it repeats.
    pub nodes: usize,
    /// Bytes of its scalars, expanded.
    pub scalar_bytes: usize,
    /// Its top node is a sequence.
    pub is_sequence: bool,
}

/// Walk `text`'s document once, building nothing, and say what it expands
/// to, stopping as soon as it passes a bound.
///
/// Cost: one YAML parse and a walk of at most [`MAX_NODES`] nodes; memory:
/// serde_yaml's events of the text (proportional to the text, not to what
/// its aliases expand to).
///
/// # Errors
/// The YAML error, or a document that expands past [`MAX_NODES`] or
/// [`MAX_SCALAR_BYTES`] (named, with what to do).
pub fn measure(text: &str) -> Result<Size, YamlError> {
    let counts = Counts { nodes: Cell::new(0), bytes: Cell::new(0), over: Cell::new(false) };
    let walked = Walk { counts: &counts }.deserialize(serde_yaml::Deserializer::from_str(text));
    if counts.over.get() {
        return Err(YamlError {
            message: format!(
                "the document expands to more than {MAX_NODES} nodes or {MAX_SCALAR_BYTES} bytes of text \
                 (its aliases, `*name`, repeat their anchors' nodes): refused before it is read; \
                 write it with fewer aliases"
            ),
            line: None,
        });
    }
    let is_sequence = walked.map_err(yaml_error)?;
    Ok(Size { nodes: counts.nodes.get(), scalar_bytes: counts.bytes.get(), is_sequence })
}

/// The running counts of one [`measure`].
struct Counts {
    nodes: Cell<usize>,
    bytes: Cell<usize>,
    /// A bound was passed (the walk stops with an error of its own).
    over: Cell<bool>,
}

impl Counts {
    /// Count one node of `bytes` scalar bytes; `Err` past a bound.
    fn add<E: serde::de::Error>(&self, bytes: usize) -> Result<(), E> {
        let nodes = self.nodes.get() + 1;
        let total = self.bytes.get().saturating_add(bytes);
        self.nodes.set(nodes);
        self.bytes.set(total);
        if nodes > MAX_NODES || total > MAX_SCALAR_BYTES {
            self.over.set(true);
            return Err(E::custom("the document expands past robotgate's bound"));
        }
        Ok(())
    }
}

/// One node of the walk: counts it and what is under it; its value says
/// whether it was a sequence.
#[derive(Clone, Copy)]
struct Walk<'c> {
    counts: &'c Counts,
}

impl<'de> DeserializeSeed<'de> for Walk<'_> {
    type Value = bool;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walk<'_> {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML node")
    }

    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<bool, E> {
        self.counts.add(0).map(|()| false)
    }

    fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<bool, E> {
        self.counts.add(0).map(|()| false)
    }

    fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<bool, E> {
        self.counts.add(0).map(|()| false)
    }

    fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<bool, E> {
        self.counts.add(0).map(|()| false)
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<bool, E> {
        self.counts.add(v.len()).map(|()| false)
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<bool, E> {
        self.counts.add(0).map(|()| false)
    }

    fn visit_none<E: serde::de::Error>(self) -> Result<bool, E> {
        self.counts.add(0).map(|()| false)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        self.deserialize(d)
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        self.deserialize(d)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<bool, A::Error> {
        self.counts.add(0)?;
        while seq.next_element_seed(self)?.is_some() {}
        Ok(true)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        self.counts.add(0)?;
        while map.next_key_seed(self)?.is_some() {
            map.next_value_seed(self)?;
        }
        Ok(false)
    }

    fn visit_enum<A: serde::de::EnumAccess<'de>>(self, data: A) -> Result<bool, A::Error> {
        // A tagged node (`!tag value`): its value is walked as any node.
        use serde::de::VariantAccess;
        self.counts.add(0)?;
        let (_, variant): (serde::de::IgnoredAny, _) = data.variant()?;
        variant.newtype_variant_seed(self).map(|_| false)
    }
}

/// Deserialize a document that is either one `T` or a list of them: the
/// list, and whether the document was one.
///
/// # Errors
/// As [`from_str`], for the shape the document has.
pub fn one_or_many<T: DeserializeOwned>(text: &str) -> Result<(Vec<T>, bool), YamlError> {
    match measure(text)?.is_sequence {
        true => serde_yaml::from_str::<Vec<T>>(text).map(|v| (v, true)).map_err(yaml_error),
        false => serde_yaml::from_str::<T>(text).map(|v| (vec![v], false)).map_err(yaml_error),
    }
}

/// The 1-based line where `path` (`[1].policy.categories`, `upstream.sni`)
/// is written in block-style `text`, found by indentation: each key is
/// looked for in the block of the one before, `[n]` is the `n`th `- ` item
/// of its block. A field not found gives the line of the deepest part that
/// was (`None`: not even the first), so a problem the checks find after
/// reading (they have no positions) still points near its place.
///
/// Cost: one pass over the lines per part of `path`.
pub fn line_of(text: &str, path: &str) -> Option<usize> {
    let lines: Vec<&str> = text.lines().collect();
    let indent = |l: &str| l.len() - l.trim_start_matches(' ').len();
    let blank = |l: &str| {
        let t = l.trim();
        t.is_empty() || t.starts_with('#')
    };
    // The text of a line after its indentation and any `- ` before a key.
    fn content(l: &str) -> &str {
        let mut t = l.trim_start_matches(' ');
        while let Some(rest) = t.strip_prefix("- ") {
            t = rest.trim_start_matches(' ');
        }
        t
    }
    let (mut from, mut to, mut found) = (0, lines.len(), None);
    for part in path.split('.').filter(|p| !p.is_empty()) {
        let (key, index) = match part.split_once('[') {
            Some((k, n)) => (k, n.trim_end_matches(']').parse::<usize>().ok()),
            None => (part, None),
        };
        if !key.is_empty() {
            let is_key = |l: &str| content(l).strip_prefix(key).is_some_and(|r| r.trim_start().starts_with(':'));
            let Some(i) = (from..to).find(|&i| is_key(lines[i])) else { break };
            found = Some(i);
            let col = lines[i].len() - content(lines[i]).len();
            let end = (i + 1..to)
                .find(|&j| {
                    let l = lines[j];
                    !blank(l) && (indent(l) < col || (indent(l) == col && !l.trim_start().starts_with('-')))
                })
                .unwrap_or(to);
            (from, to) = (i + 1, end);
        }
        if let Some(n) = index {
            let item = |l: &str| l.trim_start().starts_with('-');
            let Some(first) = (from..to).find(|&i| item(lines[i])) else { break };
            let col = indent(lines[first]);
            let at_col = |i: &usize| item(lines[*i]) && indent(lines[*i]) == col;
            let Some(start) = (first..to).filter(at_col).nth(n) else { break };
            found = Some(start);
            let end =
                (start + 1..to).find(|j| at_col(j) || (!blank(lines[*j]) && indent(lines[*j]) < col)).unwrap_or(to);
            (from, to) = (start, end);
        }
    }
    found.map(|i| i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIST: &str = "# customers\n- hosts: [a.example]\n  upstream: \"x\"\n- name: b\n  hosts:\n    - b.example\n  policy:\n    categories:\n      ai-crawler: {action: nope}\n";

    #[test]
    fn line_of_finds_a_field_by_indentation() {
        assert_eq!(line_of(LIST, "[0].upstream"), Some(3));
        assert_eq!(line_of(LIST, "[1]"), Some(4));
        assert_eq!(line_of(LIST, "[1].hosts"), Some(5));
        assert_eq!(line_of(LIST, "[1].policy.categories.ai-crawler"), Some(9));
        assert_eq!(line_of(LIST, "[1].upstream"), Some(4), "not there: the item's line");
        assert_eq!(line_of(LIST, "[7].hosts"), None);
        let one = "hosts: [a.example]\nupstream: \"x\"\ntraps:\n  ban: 0\n";
        assert_eq!(line_of(one, "traps.ban"), Some(4));
        assert_eq!(line_of(one, "upstream"), Some(2));
        assert_eq!(line_of("", "upstream"), None);
    }

    #[test]
    fn issue_66_an_alias_breadth_bomb_is_refused_quickly() {
        // `a: &a [x, ...10,000]` then `b: [*a, ...100,000]`: 312 KB of text,
        // a billion nodes expanded.
        let text = format!("a: &a [{}]\nb: [{}]\n", vec!["x"; 10_000].join(","), vec!["*a"; 100_000].join(","));
        assert!(text.len() < 330_000, "{}", text.len());
        let start = std::time::Instant::now();
        let e = from_str::<std::collections::BTreeMap<String, serde_yaml::Value>>(&text).unwrap_err();
        assert!(e.message.contains("expands to more than 2000000 nodes"), "{}", e.message);
        let e = one_or_many::<std::collections::BTreeMap<String, u8>>(&text).unwrap_err();
        assert!(e.message.contains("fewer aliases"), "{}", e.message);
        assert!(start.elapsed() < std::time::Duration::from_secs(10), "{:?}", start.elapsed());
        // A long scalar repeated: few nodes, many bytes.
        let long = format!("a: &a \"{}\"\nb: [{}]\n", "y".repeat(1 << 20), vec!["*a"; 20].join(","));
        assert!(measure(&long).unwrap_err().message.contains("bytes of text"));
    }

    #[test]
    fn a_few_shared_anchors_are_measured_and_read() {
        let text = "common: &c {a: 1, b: [x, y]}\nsites: [*c, *c, *c]\n";
        let size = measure(text).unwrap();
        assert_eq!((size.nodes, size.is_sequence), (32, false), "{size:?}");
        assert!(measure("- 1\n- 2\n").unwrap().is_sequence);
        assert!(measure("a: [\n").unwrap_err().line.is_some());
        let v: std::collections::BTreeMap<String, serde_yaml::Value> = from_str(text).unwrap();
        assert_eq!(v.len(), 2);
    }

    #[test]
    fn one_or_many_says_which() {
        let (v, many) = one_or_many::<std::collections::BTreeMap<String, u8>>("- a: 1\n- b: 2\n").unwrap();
        assert!(many && v.len() == 2);
        let (v, many) = one_or_many::<std::collections::BTreeMap<String, u8>>("a: 1\n").unwrap();
        assert!(!many && v.len() == 1);
        assert!(one_or_many::<std::collections::BTreeMap<String, u8>>("a: [\n").unwrap_err().line.is_some());
    }
}
