//! Property tests: the compiled matcher agrees with a plain reference.
//!
//! The reference below re-reads the file line by line for every query, the
//! way robots.cc's `RobotsMatcher` does (a state machine over user-agent and
//! rule lines), and matches patterns with a textbook dynamic programme. It is
//! slow and obviously correct; the compiled trie must give the same verdicts.
//! Groups with many wildcard rules (the lazy DFA) are also checked against
//! `pattern_matches` applied naively to every rule.

use proptest::prelude::*;
use robotgate::robots::parse::{escape_pattern, path_params_query};
use robotgate::robots::pattern::pattern_matches;
use robotgate::robots::RobotsTxt;

/// Does `pat` match a prefix of `path` (all of it when `pat` ends in `$`)?
fn ref_matches(pat: &[u8], path: &[u8]) -> bool {
    let (pat, anchored) = match pat.last() {
        Some(b'$') => (&pat[..pat.len() - 1], true),
        _ => (pat, false),
    };
    // dp[j]: pattern[..i] can match path[..j].
    let mut dp = vec![false; path.len() + 1];
    dp[0] = true;
    for &c in pat {
        let mut next = vec![false; path.len() + 1];
        for j in 0..=path.len() {
            if c == b'*' {
                // `*` extends any earlier match by any number of bytes.
                next[j] = dp[..=j].iter().any(|&x| x);
            } else if j > 0 && path[j - 1] == c {
                next[j] = dp[j - 1];
            }
        }
        dp = next;
    }
    if anchored {
        dp[path.len()]
    } else {
        dp.iter().any(|&x| x)
    }
}

/// Reference verdict for the generated dialect (LF lines, exact lower-case keys).
fn ref_allowed(robots: &str, agent: &str, path: &str) -> bool {
    #[derive(Default, Clone, Copy)]
    struct Best(i64);
    let (mut spec_allow, mut spec_dis, mut glob_allow, mut glob_dis) = (Best(-1), Best(-1), Best(-1), Best(-1));
    let (mut seen_global, mut seen_specific, mut ever_specific, mut separator) = (false, false, false, false);
    for line in robots.split('\n') {
        let line = line.split('#').next().unwrap().trim();
        let Some((key, value)) = line.split_once(':') else { continue };
        let (key, value) = (key.trim(), value.trim());
        match key {
            "user-agent" => {
                if separator {
                    seen_global = false;
                    seen_specific = false;
                    separator = false;
                }
                if value == "*" {
                    seen_global = true;
                } else {
                    let token: String =
                        value.chars().take_while(|c| c.is_ascii_alphabetic() || *c == '-' || *c == '_').collect();
                    if token.eq_ignore_ascii_case(agent) {
                        seen_specific = true;
                        ever_specific = true;
                    }
                }
            }
            "allow" | "disallow" => {
                if !(seen_global || seen_specific) {
                    continue;
                }
                separator = true;
                if !ref_matches(value.as_bytes(), path.as_bytes()) {
                    continue;
                }
                let p = value.len() as i64;
                let slot = match (key, seen_specific) {
                    ("allow", true) => &mut spec_allow,
                    ("allow", false) => &mut glob_allow,
                    (_, true) => &mut spec_dis,
                    (_, false) => &mut glob_dis,
                };
                slot.0 = slot.0.max(p);
            }
            _ => {}
        }
    }
    if spec_allow.0 > 0 || spec_dis.0 > 0 {
        return spec_dis.0 <= spec_allow.0;
    }
    if ever_specific {
        return true;
    }
    if glob_allow.0 > 0 || glob_dis.0 > 0 {
        return glob_dis.0 <= glob_allow.0;
    }
    true
}

fn pattern() -> impl Strategy<Value = String> {
    proptest::string::string_regex("/[ab/*]{0,6}\\$?").unwrap()
}

fn line() -> impl Strategy<Value = String> {
    prop_oneof![
        2 => prop_oneof![Just("*"), Just("foo"), Just("bar"), Just("FooBot"), Just("foo9x")].prop_map(|a| format!("user-agent: {a}")),
        4 => pattern().prop_map(|p| format!("disallow: {p}")),
        3 => pattern().prop_map(|p| format!("allow: {p}")),
        1 => Just(String::new()),
        1 => Just("sitemap: https://example.com/s.xml".to_owned()),
        1 => Just("crawl-delay: 4".to_owned()),
        1 => Just("# comment".to_owned()),
    ]
}

fn robots_file() -> impl Strategy<Value = String> {
    proptest::collection::vec(line(), 0..24).prop_map(|lines| lines.join("\n"))
}

fn path() -> impl Strategy<Value = String> {
    // Not `//…`: a URL starting with two slashes has an authority (GetPathParamsQuery).
    proptest::string::string_regex("/([ab][ab/]{0,7})?").unwrap()
}

/// Pieces of the rules of a wildcard-heavy group: repeated `*`, `$` (an
/// anchor at the end, a literal elsewhere), escapes and raw non-ASCII (which
/// the parser percent-encodes), few enough that equal lengths are common.
fn rule_pattern(with_star: bool) -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        4 => Just("*"), 1 => Just("**"), 3 => Just("a"), 2 => Just("/"),
        1 => Just("$"), 1 => Just("é"), 1 => Just("%e6"), 1 => Just("?"),
    ];
    (any::<bool>(), proptest::collection::vec(piece, 0..5), any::<bool>()).prop_map(move |(slash, pieces, anchored)| {
        let mut p = String::from(if slash { "/" } else { "" });
        p.extend(pieces);
        if with_star && !p.contains('*') {
            p.push('*');
        }
        if anchored {
            p.push('$');
        }
        p
    })
}

/// Paths with `$`, `*`, escapes and raw non-ASCII.
fn wild_path() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        3 => Just("a"), 2 => Just("/"), 1 => Just("$"), 1 => Just("*"), 1 => Just("?"),
        1 => Just("é"), 1 => Just("日"), 1 => Just("%E6"), 1 => Just("%c3%a9"),
    ];
    proptest::collection::vec(piece, 0..8).prop_map(|pieces| {
        let mut p = String::from("/");
        p.extend(pieces);
        p
    })
}

/// The verdict over every rule, naively: most octets of the normalised
/// pattern wins, allow on a tie (RFC 9309 2.2.2); nothing matching allows.
fn naive_allowed(rules: &[(bool, String)], path: &[u8]) -> bool {
    let best = |allow: bool| {
        rules
            .iter()
            .filter(|(a, _)| *a == allow)
            .map(|(_, p)| escape_pattern(p.as_bytes()))
            .filter(|p| !p.is_empty() && pattern_matches(p, path))
            .map(|p| p.len())
            .max()
    };
    best(false).is_none_or(|d| best(true).is_some_and(|a| a >= d))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, .. ProptestConfig::default() })]

    #[test]
    fn wildcard_heavy_group_agrees_with_naive_longest_match(
        wild in proptest::collection::vec((any::<bool>(), rule_pattern(true)), 9..24),
        literal in proptest::collection::vec((any::<bool>(), rule_pattern(false)), 0..6),
        twins in proptest::collection::vec(any::<prop::sample::Index>(), 0..4),
        global in any::<bool>(),
        path in wild_path(),
    ) {
        // Nine or more rules with a `*` in one group: the group's rule set is
        // the lazy DFA (LINEAR_WILDCARDS is 8). Twins repeat a pattern with
        // the other kind, an exact tie.
        let mut rules = wild;
        rules.extend(literal);
        for t in twins {
            let (allow, p) = t.get(&rules).clone();
            rules.push((!allow, p));
        }
        let wildcards = rules.iter().filter(|(_, p)| p.contains('*')).count();
        prop_assert!(wildcards > 8, "only {} wildcard rules", wildcards);
        let mut robots = String::from(if global { "user-agent: *\n" } else { "user-agent: bingbot\n" });
        for (allow, p) in &rules {
            robots.push_str(if *allow { "allow: " } else { "disallow: " });
            robots.push_str(p);
            robots.push('\n');
        }
        let compiled = RobotsTxt::compile(robots.as_bytes());
        // Google's check matches the URL as given (not percent-encoded).
        let url = format!("https://example.com{path}");
        let want = naive_allowed(&rules, &path_params_query(url.as_bytes()));
        prop_assert_eq!(compiled.allows("bingbot", &url).allowed, want, "robots:\n{}\nurl {}", robots, url);
        // The proxy percent-encodes the path first.
        let sel = compiled.select(&["bingbot"]);
        let want = naive_allowed(&rules, &escape_pattern(path.as_bytes()));
        prop_assert_eq!(compiled.check(&sel, path.as_bytes()).allowed, want, "robots:\n{}\npath {}", robots, path);
    }

    #[test]
    fn compiled_matcher_agrees_with_reference(robots in robots_file(), agent in prop_oneof![Just("foo"), Just("bar"), Just("foobot"), Just("baz")], path in path()) {
        let compiled = RobotsTxt::compile(robots.as_bytes());
        let got = compiled.allows(agent, &path).allowed;
        let want = ref_allowed(&robots, agent, &path);
        prop_assert_eq!(got, want, "robots:\n{}\nagent {} path {}", robots, agent, path);
    }

    #[test]
    fn wildcard_automaton_agrees_with_reference(
        wild in proptest::collection::vec((any::<bool>(), proptest::string::string_regex("/[ab]{0,2}\\*[ab*/]{0,3}\\$?").unwrap()), 9..30),
        rest in robots_file(),
        path in path(),
    ) {
        // More than eight wildcard rules in one group: the set uses the lazy DFA.
        let mut robots = String::from("user-agent: foo\n");
        for (allow, p) in &wild {
            robots.push_str(if *allow { "allow: " } else { "disallow: " });
            robots.push_str(p);
            robots.push('\n');
        }
        robots.push_str(&rest);
        let compiled = RobotsTxt::compile(robots.as_bytes());
        prop_assert_eq!(compiled.allows("foo", &path).allowed, ref_allowed(&robots, "foo", &path), "robots:\n{}\npath {}", robots, path);
    }

    #[test]
    fn rule_order_within_a_group_never_changes_a_verdict(rules in proptest::collection::vec((any::<bool>(), pattern()), 1..16), path in path(), seed in any::<u64>()) {
        let render = |rules: &[(bool, String)]| {
            let mut s = String::from("user-agent: *\n");
            for (allow, p) in rules {
                s.push_str(if *allow { "allow: " } else { "disallow: " });
                s.push_str(p);
                s.push('\n');
            }
            s
        };
        let mut shuffled = rules.clone();
        // A deterministic shuffle from the seed.
        let mut x = seed | 1;
        for i in (1..shuffled.len()).rev() {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            shuffled.swap(i, (x % (i as u64 + 1)) as usize);
        }
        let a = RobotsTxt::compile(render(&rules).as_bytes()).allows("x", &path).allowed;
        let b = RobotsTxt::compile(render(&shuffled).as_bytes()).allows("x", &path).allowed;
        prop_assert_eq!(a, b);
    }

    #[test]
    fn proxy_selection_agrees_with_check_for_letter_tokens(robots in robots_file(), agent in prop_oneof![Just("foo"), Just("bar"), Just("foobot"), Just("baz")], path in path()) {
        // For tokens of letters only, Google's reading and the proxy's coincide.
        let compiled = RobotsTxt::compile(robots.as_bytes());
        prop_assume!(path != "/robots.txt");
        let sel = compiled.select(&[agent]);
        prop_assert_eq!(compiled.check(&sel, path.as_bytes()).allowed, compiled.allows(agent, &path).allowed);
    }

    #[test]
    fn parser_never_panics_on_any_bytes(body in proptest::collection::vec(any::<u8>(), 0..2048), url in ".{0,64}") {
        let robots = RobotsTxt::compile(&body);
        let _ = robots.allows("foo", &url);
        let sel = robots.select(&["foo", "bar"]);
        let _ = robots.check(&sel, url.as_bytes());
        let _ = robotgate::robots::lint::lint(&body);
    }
}

#[test]
fn reference_self_check() {
    // The reference itself must get the textbook cases right.
    assert!(ref_matches(b"/a*b$", b"/axxb"));
    assert!(!ref_matches(b"/a*b$", b"/axxbc"));
    assert!(ref_matches(b"/a", b"/ab"));
    assert!(!ref_allowed("user-agent: *\ndisallow: /a\n", "x", "/a"));
    assert!(ref_allowed("user-agent: *\ndisallow: /a\nallow: /a\n", "x", "/a"));
}

// ---------------------------------------------------------------------------
// Issue #14: the proxy's verdict on a request-target equals its verdict on
// the path a decoding origin would serve (or the target is refused).

/// What a static origin that decodes every escape, resolves dot-segments and
/// merges slashes serves for `target` (query kept as sent, but decoded).
fn origin_serves(target: &[u8]) -> Option<Vec<u8>> {
    let q = target.iter().position(|&b| b == b'?').unwrap_or(target.len());
    let (path, query) = target.split_at(q);
    let mut decoded = Vec::new();
    let mut i = 0;
    while i < path.len() {
        if path[i] == b'%' {
            let h = (*path.get(i + 1)? as char).to_digit(16)?;
            let l = (*path.get(i + 2)? as char).to_digit(16)?;
            decoded.push((h * 16 + l) as u8);
            i += 3;
        } else {
            decoded.push(path[i]);
            i += 1;
        }
    }
    let mut segs: Vec<&[u8]> = Vec::new();
    for seg in decoded.split(|&b| b == b'/') {
        match seg {
            b"" | b"." => {}
            b".." => {
                segs.pop();
            }
            s => segs.push(s),
        }
    }
    let mut out = b"/".to_vec();
    out.extend(segs.join(&b'/'));
    // RFC 3986 5.2.4: a path ending in `/`, `/.` or `/..` names a directory.
    let last = decoded.rsplit(|&b| b == b'/').next().unwrap_or_default();
    if !segs.is_empty() && matches!(last, b"" | b"." | b"..") {
        out.push(b'/');
    }
    out.extend(query);
    Some(out)
}

const TARGET_PARTS: &[&str] = &[
    "a", "private", "p", "%70", "rivate", "%2e", "%2E", "..", ".", "", "%2f", "~", "%7E", "user", "x.pdf", "pd%66", "f",
];
const RULES: &[&str] = &["/private/", "/*.pdf$", "/%7Euser", "/~user/", "/a/", "/p*e/", "/f", "/a/../"];

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    #[test]
    fn the_proxy_judges_what_the_origin_serves(
        parts in proptest::collection::vec(0..TARGET_PARTS.len(), 1..8),
        rules in proptest::collection::vec((0..RULES.len(), any::<bool>()), 1..6),
        query in proptest::option::of(0..TARGET_PARTS.len()),
    ) {
        use robotgate::target::{normalise, Target, TargetOptions};
        let mut target = String::new();
        for &p in &parts {
            target.push('/');
            target.push_str(TARGET_PARTS[p]);
        }
        if let Some(q) = query {
            target.push_str("?q=");
            target.push_str(TARGET_PARTS[q]);
        }
        let mut body = String::from("user-agent: *\n");
        for (r, allow) in &rules {
            body.push_str(if *allow { "allow: " } else { "disallow: " });
            body.push_str(RULES[*r]);
            body.push('\n');
        }
        let opts = TargetOptions::default();
        let robots = RobotsTxt::compile_with(
            body.as_bytes(),
            robotgate::robots::Options { normalise: Some(opts), ..Default::default() },
        );
        let sel = robots.select(&["foobot"]);
        let judged = match normalise(b"GET", target.as_bytes(), &opts) {
            Ok(Target::Path(p)) => p.into_owned(),
            Ok(_) => unreachable!("origin-form only"),
            Err(_) => return Ok(()), // refused: never reaches the origin
        };
        let served = origin_serves(target.as_bytes());
        prop_assert!(served.is_some(), "the origin refuses {target} but the proxy accepts it as {:?}",
            String::from_utf8_lossy(&judged));
        let served = served.unwrap();
        // Spell what the origin serves as a request again, and judge that.
        let respelled = match normalise(b"GET", &served, &opts) {
            Ok(Target::Path(p)) => p.into_owned(),
            _ => return Ok(()),
        };
        let a = robots.check(&sel, &judged);
        let b = robots.check(&sel, &respelled);
        prop_assert_eq!(a.allowed, b.allowed, "{} judged as {:?}, origin serves {:?}", target,
            String::from_utf8_lossy(&judged), String::from_utf8_lossy(&served));
    }
}
