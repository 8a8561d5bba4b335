//! The one place that names `serde_yaml`.
//!
//! `serde_yaml` is deprecated upstream; every YAML document robotgate reads goes
//! through [`from_str`], so replacing the crate is a change to this file alone.

use serde::de::DeserializeOwned;

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
    serde_yaml::from_str(text).map_err(|e| YamlError { line: e.location().map(|l| l.line()), message: e.to_string() })
}

/// Deserialize a document that is either one `T` or a list of them: the
/// list, and whether the document was one.
///
/// # Errors
/// As [`from_str`], for the shape the document has.
pub fn one_or_many<T: DeserializeOwned>(text: &str) -> Result<(Vec<T>, bool), YamlError> {
    let value: serde_yaml::Value = from_str(text)?;
    match value.is_sequence() {
        true => from_str::<Vec<T>>(text).map(|v| (v, true)),
        false => from_str::<T>(text).map(|v| (vec![v], false)),
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
    fn one_or_many_says_which() {
        let (v, many) = one_or_many::<std::collections::BTreeMap<String, u8>>("- a: 1\n- b: 2\n").unwrap();
        assert!(many && v.len() == 2);
        let (v, many) = one_or_many::<std::collections::BTreeMap<String, u8>>("a: 1\n").unwrap();
        assert!(!many && v.len() == 1);
        assert!(one_or_many::<std::collections::BTreeMap<String, u8>>("a: [\n").unwrap_err().line.is_some());
    }
}
