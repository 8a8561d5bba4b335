//! `robotgate lint`: one fixture per diagnostic under `tests/data/lint/`.
//!
//! Each fixture's first line is `# expect: code@line ...`; the test checks that
//! exactly those findings (and no other errors) are reported.

use std::collections::BTreeSet;
use std::path::Path;

use robotgate::robots::lint::{lint, lint_with, Severity};
use robotgate::robots::Options;

fn expected(body: &[u8]) -> BTreeSet<(String, u32)> {
    let first = body.split(|&b| b == b'\n').next().unwrap();
    let first = std::str::from_utf8(first).unwrap();
    let list = first.strip_prefix("# expect:").expect("fixture starts with `# expect:`");
    list.split_whitespace()
        .map(|item| {
            let (code, line) = item.split_once('@').unwrap();
            (code.to_owned(), line.parse().unwrap())
        })
        .collect()
}

#[test]
fn each_fixture_reports_exactly_its_diagnostic() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/lint");
    let mut seen_codes = BTreeSet::new();
    let mut count = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let body = std::fs::read(&path).unwrap();
        let want = expected(&body);
        let got = lint(&body);
        let got_set: BTreeSet<(String, u32)> = got.iter().map(|d| (d.code.to_owned(), d.line)).collect();
        for w in &want {
            assert!(got_set.contains(w), "{}: expected {w:?}, got {got:?}", path.display());
            seen_codes.insert(w.0.clone());
        }
        for d in &got {
            assert!(
                want.contains(&(d.code.to_owned(), d.line)),
                "{}: unexpected {:?} {} at line {}: {}",
                path.display(),
                d.severity,
                d.code,
                d.line,
                d.message
            );
        }
        count += 1;
    }
    assert!(count >= 18, "fixtures found: {count}");
    assert!(seen_codes.len() >= 17, "codes covered: {seen_codes:?}");
}

#[test]
fn content_past_the_size_limit_is_an_error_at_the_cut() {
    let mut body = b"User-agent: *\n".to_vec();
    while body.len() < 600 * 1024 {
        body.extend_from_slice(b"Disallow: /a-long-enough-path/\n");
    }
    let d = lint(&body);
    let too_large: Vec<_> = d.iter().filter(|d| d.code == "too-large").collect();
    assert_eq!(too_large.len(), 1);
    assert_eq!(too_large[0].severity, Severity::Error);
    // A smaller limit moves the cut: the limit is a parameter, not a constant.
    let d = lint_with(b"User-agent: *\nDisallow: /a\nDisallow: /b\n", Options { max_bytes: 20, ..Default::default() });
    assert_eq!(d.iter().find(|d| d.code == "too-large").map(|d| d.line), Some(2));
}
