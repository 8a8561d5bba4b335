//! What an origin says about indexing, read as the seeds read it: the
//! robots META tag's content and the `X-Robots-Tag` header, leniently (an
//! unknown term is skipped, as a robot skips it).

use super::{meaning, Said, Term};

/// The terms of a META tag's `content` (or a header value without a robot
/// name): known terms, in order; unknown ones skipped.
pub fn terms(content: &str) -> Vec<Term> {
    content.split(',').filter_map(|t| Term::parse(t).ok()).collect()
}

/// One `X-Robots-Tag` value: the robot it names (`googlebot: noindex`), if
/// any, and its terms. A name is a word before the first `:` that is not a
/// directive taking a value (`max-snippet:20`, `unavailable_after: ...`).
pub fn header_value(value: &str) -> (Option<&str>, Vec<Term>) {
    if let Some((name, rest)) = value.split_once(':') {
        let name = name.trim();
        let directive_with_value = ["max-snippet", "max-image-preview", "max-video-preview", "unavailable_after"]
            .iter()
            .any(|d| name.eq_ignore_ascii_case(d));
        if !directive_with_value && !name.is_empty() && !name.contains([',', ' ']) {
            return (Some(name), terms(rest));
        }
    }
    (None, terms(value))
}

/// Whether terms forbid indexing: a plain NOINDEX or NONE (where INDEX meets
/// NOINDEX, the robot decides, and robotgate does not say it hides).
pub fn says_noindex(terms: &[Term]) -> bool {
    meaning(terms).0 == Said::No
}
