//! Issue #27, part 1: the robots.txt robotgate serves, with traps and
//! `managed` on, means the same to every mainstream parser as it does to
//! robotgate.
//!
//! For each site file below, the real binary serves `/robots.txt`; then
//! robotgate's own verdict (`robotgate check` on the served body) is compared
//! with those of Python's `urllib.robotparser`, Protego and
//! `robotexclusionrulesparser` (tests/parsers/verdicts.py), the npm
//! `robots-parser` (tests/parsers/verdicts.js), and the Rust crates
//! `robotstxt` (Google's parser, ported) and `texting_robots`, for every trap
//! path, every rule of the served file and every agent it names.
//!
//! One difference is deliberate and documented (docs/robots-engine.md):
//! Google's parser (the `robotstxt` crate) reads a `User-agent` token only up
//! to its first byte outside `[A-Za-z_-]`, so `AI2Bot` names the group of
//! `AI` and `img2dataset` that of `img`; the proxy obeys the group that
//! names the token as written too, as the other five parsers do. That
//! column may differ for such tokens only, and the table counts them.
//!
//! The files use no `*` or `$` in paths and no overlapping Allow/Disallow
//! pairs: `urllib.robotparser` supports neither wildcards nor longest-match
//! (it takes the first matching rule), and that is not what is compared here.
//! What is compared is group selection and merging, and where robotgate puts
//! what it adds. `.ci/run` installs the Python and npm parsers; without them
//! (outside CI) their columns are skipped loudly.

mod common;

use std::collections::BTreeSet;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{Gate, TestConfig};
use robotgate::robots::RobotsTxt;

const TRAPS: [&str; 2] = ["/trap/", "/hidden/snare/"];

/// The site files: what issue #27 lists.
const FILES: &[(&str, &[u8])] = &[
    ("star-first", b"User-agent: *\nDisallow: /private/\n\nUser-agent: Googlebot\nDisallow: /nogoogle/\n"),
    (
        "star-last",
        b"# Search engines\nUser-agent: Googlebot\nDisallow: /nogoogle/\n\nUser-agent: bingbot\nDisallow: /nobing/\n\nUser-agent: *\nDisallow: /private/\n",
    ),
    ("no-star", b"User-agent: Googlebot\nDisallow: /nogoogle/\n\nUser-agent: bingbot\nDisallow: /nobing/\n"),
    (
        "several-agents",
        b"User-agent: Googlebot\nUser-agent: bingbot\nDisallow: /engines-no/\n\nUser-agent: *\nUser-agent: SomeBot\nDisallow: /private/\n\nUser-agent: ClaudeBot\nUser-agent: OtherBot\nDisallow: /noclaude/\n",
    ),
    (
        "gptbot-allowed",
        b"Sitemap: http://example.com/sitemap.xml\n\nUser-agent: *\nDisallow: /private/\n\nUser-agent: GPTBot\nAllow: /\n",
    ),
    (
        "crlf",
        b"User-agent: *\r\nDisallow: /private/\r\n\r\nUser-agent: Googlebot\r\nDisallow: /nogoogle/\r\n",
    ),
    (
        "bom",
        b"\xEF\xBB\xBFUser-agent: Googlebot\nDisallow: /nogoogle/\n\nUser-agent: *\nDisallow: /private/",
    ),
    ("empty", b""),
];

/// The site's extra config: two traps, AI training disallowed, a Content-Signal.
const SITE: &str = "traps:\n  paths: [\"/trap/\", \"/hidden/snare/\"]\n  arm_after: 0\nmanaged:\n  ai_training: disallow\n  content_signal: \"search=yes, ai-train=no\"\n";

fn served_robots(gate: &Gate) -> Vec<u8> {
    let resp = ureq::get(&gate.url("/robots.txt")).call().expect("GET /robots.txt");
    assert_eq!(resp.status(), 200);
    let mut body = Vec::new();
    resp.into_reader().read_to_end(&mut body).unwrap();
    body
}

/// Agents to ask about: every one the served file names, and one it does not.
fn agents(served: &[u8]) -> Vec<String> {
    let robots = RobotsTxt::compile(served);
    let mut out: Vec<String> = Vec::new();
    for a in robots.groups().iter().flat_map(|g| g.agents.iter()).filter(|a| !a.global) {
        if !out.iter().any(|o| o.eq_ignore_ascii_case(&a.value)) {
            out.push(a.value.clone());
        }
    }
    out.push("TestCrawler".to_owned());
    out
}

/// Paths to ask about: inside each trap, inside each rule of the served
/// file, and one no rule names.
fn paths(served: &[u8]) -> Vec<String> {
    let robots = RobotsTxt::compile(served);
    let mut out = BTreeSet::new();
    for t in TRAPS {
        out.insert(format!("{t}x.html"));
    }
    for r in robots.rules() {
        assert!(!r.pattern().contains(['*', '$']), "the matrix keeps to plain prefixes: {}", r.pattern());
        out.insert(format!("{}{}", r.pattern(), if r.pattern().ends_with('/') { "x.html" } else { "/x.html" }));
    }
    out.insert("/public/page.html".to_owned());
    out.into_iter().collect()
}

/// robotgate's verdicts: the real binary's `check --proxy` on the served
/// body, the group the proxy chooses for a robot with this token.
fn robotgate(served: &Path, agent: &str, paths: &[String]) -> Vec<bool> {
    let out = Command::new(env!("CARGO_BIN_EXE_robotgate"))
        .args(["check", "--proxy"])
        .arg(served)
        .arg(agent)
        .args(paths.iter().map(|p| format!("http://example.com{p}")))
        .output()
        .unwrap();
    assert!(matches!(out.status.code(), Some(0 | 1)), "check failed: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    // One verdict line per URL; an allowed one may be followed by its usage preference line.
    let verdicts: Vec<bool> =
        text.lines().filter(|l| !l.starts_with("usage preference:")).map(|l| l.starts_with("allowed")).collect();
    assert_eq!(verdicts.len(), paths.len(), "{text}");
    verdicts
}

/// Whether Google's parser reads `token` as a shorter one (it stops at the
/// first byte outside `[A-Za-z_-]`).
fn cut_by_google(token: &str) -> bool {
    !token.bytes().all(|b| b.is_ascii_alphabetic() || b == b'_' || b == b'-')
}

fn venv_python() -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/parsers/.venv/bin/python");
    let ok = p.exists()
        && Command::new(&p)
            .args(["-c", "import protego, robotexclusionrulesparser"])
            .status()
            .is_ok_and(|s| s.success());
    ok.then_some(p)
}

fn node_parser() -> bool {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/parsers/node_modules/robots-parser").exists()
        && Command::new("node").arg("--version").output().is_ok_and(|o| o.status.success())
}

/// In CI every parser must run; elsewhere a missing one is skipped, loudly.
fn missing(what: &str) {
    let msg = format!("SKIPPED: {what} is not installed (bash .ci/run installs it into tests/parsers/)");
    assert!(std::env::var_os("CI").is_none(), "{msg}");
    eprintln!("{msg}");
}

/// Runs a script that prints `{"parser": [bool, ...], ...}` for the queries.
fn script(cmd: &mut Command, served: &Path, queries: &Path) -> serde_json::Map<String, serde_json::Value> {
    let out = cmd.arg(served).arg(queries).output().unwrap();
    assert!(out.status.success(), "{cmd:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn issue_27_every_parser_reads_the_served_robots_txt_as_robotgate_does() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/parsers");
    let python = venv_python();
    if python.is_none() {
        missing("the Python parsers (urllib.robotparser via the venv, protego, robotexclusionrulesparser)");
    }
    let node = node_parser();
    if !node {
        missing("node with the npm package robots-parser");
    }
    let tmp = tempfile::tempdir().unwrap();
    // (parser, file, agreeing, documented differences, asked)
    let mut table: Vec<(String, String, usize, usize, usize)> = Vec::new();
    let mut failures: Vec<String> = Vec::new();
    for (name, file) in FILES {
        let config = TestConfig { site: SITE, ..TestConfig::default() }.render();
        let gate = Gate::start(&config, &[("robots.txt", file)]);
        let served = served_robots(&gate);
        drop(gate);
        let served_path = tmp.path().join(format!("{name}.txt"));
        std::fs::write(&served_path, &served).unwrap();
        let agents = agents(&served);
        let paths = paths(&served);
        let mut queries: Vec<(String, String)> = Vec::new();
        let mut expected: Vec<bool> = Vec::new();
        for a in &agents {
            expected.extend(robotgate(&served_path, a, &paths));
            queries.extend(paths.iter().map(|p| (a.clone(), p.clone())));
        }
        // Sanity: robotgate itself keeps every agent out of every trap.
        for (i, (a, p)) in queries.iter().enumerate() {
            if TRAPS.iter().any(|t| p.starts_with(t)) {
                assert!(!expected[i], "{name}: robotgate lets {a} into {p}");
            }
        }
        let mut verdicts: Vec<(String, Vec<bool>)> = Vec::new();
        let text = std::str::from_utf8(&served).expect("served robots.txt is UTF-8");
        verdicts.push((
            "robotstxt (Rust, Google's parser)".into(),
            queries
                .iter()
                .map(|(a, p)| {
                    robotstxt::DefaultMatcher::default().one_agent_allowed_by_robots(
                        text,
                        a,
                        &format!("http://example.com{p}"),
                    )
                })
                .collect(),
        ));
        verdicts.push((
            "texting_robots (Rust)".into(),
            queries
                .iter()
                .map(|(a, p)| {
                    texting_robots::Robot::new(a, &served).unwrap().allowed(&format!("http://example.com{p}"))
                })
                .collect(),
        ));
        let queries_path = tmp.path().join(format!("{name}.json"));
        std::fs::write(&queries_path, serde_json::to_vec(&queries).unwrap()).unwrap();
        let mut scripted = serde_json::Map::new();
        if let Some(python) = &python {
            scripted.extend(script(Command::new(python).arg(dir.join("verdicts.py")), &served_path, &queries_path));
        }
        if node {
            scripted.extend(script(Command::new("node").arg(dir.join("verdicts.js")), &served_path, &queries_path));
        }
        for (parser, v) in scripted {
            let v = v.as_array().unwrap().iter().map(|b| b.as_bool().unwrap()).collect();
            verdicts.push((parser, v));
        }
        for (parser, got) in &verdicts {
            assert_eq!(got.len(), expected.len(), "{parser}");
            let (mut agree, mut documented) = (0, 0);
            for (i, (g, e)) in got.iter().zip(&expected).enumerate() {
                let token = &queries[i].0;
                if g == e {
                    agree += 1;
                } else if parser.starts_with("robotstxt") && cut_by_google(token) {
                    documented += 1;
                } else if failures.len() < 40 {
                    let (a, p) = &queries[i];
                    failures.push(format!(
                        "{name}: {parser} says {} for {a} {p}, robotgate {}",
                        if *g { "allowed" } else { "disallowed" },
                        if *e { "allowed" } else { "disallowed" }
                    ));
                }
            }
            table.push((parser.clone(), name.to_string(), agree, documented, expected.len()));
        }
        if failures.iter().any(|f| f.starts_with(name)) {
            failures.push(format!("{name}: served robots.txt:\n{}", String::from_utf8_lossy(&served)));
        }
    }
    // The matrix, for the issue's report (`-- --nocapture`).
    let mut parsers: Vec<&str> = table.iter().map(|t| t.0.as_str()).collect();
    parsers.dedup();
    let parsers: Vec<&str> = parsers.into_iter().collect::<BTreeSet<_>>().into_iter().collect();
    eprintln!("| file | {} |", parsers.join(" | "));
    eprintln!("|---|{}", "---|".repeat(parsers.len()));
    for (name, _) in FILES {
        let cells: Vec<String> = parsers
            .iter()
            .map(|p| {
                table.iter().find(|t| t.0 == *p && t.1 == *name).map_or("-".into(), |t| match t.3 {
                    0 => format!("{}/{}", t.2, t.4),
                    d => format!("{}/{} (+{d} documented)", t.2, t.4),
                })
            })
            .collect();
        eprintln!("| {name} | {} |", cells.join(" | "));
    }
    assert!(failures.is_empty(), "parsers disagree with robotgate:\n{}", failures.join("\n"));
}
