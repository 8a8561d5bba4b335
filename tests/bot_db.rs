//! The builtin bot database and the classifier built from it.
//!
//! Every entry's `samples` must classify to that entry (so no entry shadows
//! another), names and patterns must be unique, token boundaries must hold,
//! and no input bytes may panic the classifier.

use std::collections::HashMap;

use proptest::prelude::*;
use robotgate::agent::{to_json_line, AgentKind, BotDb, Category, Classifier, MAX_UA_LEN};

fn classifier() -> &'static Classifier {
    static C: std::sync::OnceLock<Classifier> = std::sync::OnceLock::new();
    C.get_or_init(Classifier::builtin)
}

#[test]
fn builtin_db_loads_and_compiles() {
    let db = BotDb::builtin();
    assert!(!db.is_empty());
    let c = Classifier::new(&db).expect("builtin database compiles");
    assert_eq!(c.db().len(), db.len());
}

#[test]
fn every_sample_classifies_to_its_own_entry() {
    let c = classifier();
    let mut failures = Vec::new();
    for (i, bot) in c.db().bots().iter().enumerate() {
        for sample in &bot.samples {
            let agent = c.classify(sample.as_bytes());
            if agent.kind != AgentKind::Known(i) {
                let got = match agent.kind {
                    AgentKind::Known(j) => format!("entry `{}`", c.bot(j).name),
                    other => format!("{other:?}"),
                };
                failures.push(format!("`{}`: sample {sample:?} classified as {got}", bot.name));
            }
        }
    }
    assert!(failures.is_empty(), "{} sample(s) misclassified:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn no_entry_shadows_another_by_identical_pattern() {
    let db = BotDb::builtin();
    let mut seen: HashMap<String, &str> = HashMap::new();
    for bot in db.bots() {
        let patterns = bot.ua.iter().map(|l| format!("lit:{}", l.to_ascii_lowercase()));
        let regex = bot.ua_regex.iter().map(|r| format!("re:{r}"));
        for p in patterns.chain(regex) {
            if let Some(other) = seen.insert(p.clone(), &bot.name) {
                panic!("pattern {p} is shared by `{other}` and `{}`", bot.name);
            }
        }
    }
}

#[test]
fn entry_names_are_unique_case_insensitively() {
    let db = BotDb::builtin();
    let mut seen: HashMap<String, &str> = HashMap::new();
    for bot in db.bots() {
        if let Some(other) = seen.insert(bot.name.to_ascii_lowercase(), &bot.name) {
            panic!("duplicate name `{}` / `{other}`", bot.name);
        }
    }
}

#[test]
fn entries_are_well_formed() {
    let db = BotDb::builtin();
    for bot in db.bots() {
        assert_ne!(bot.category, Category::Browser, "{}", bot.name);
        for t in &bot.control_tokens {
            assert!(
                !bot.robots_tokens.iter().any(|r| r.eq_ignore_ascii_case(t)),
                "`{}`: control token {t} also listed as a robots token",
                bot.name
            );
        }
    }
}

/// A small database where the boundary cases are guaranteed to exist,
/// independent of what the builtin list contains.
fn boundary_db() -> Classifier {
    let db = BotDb::from_yaml(
        r#"
version: 1
bots:
  - name: Exabot
    operator: Exalead
    category: search
    robots_tokens: [Exabot]
    ua: [Exabot]
    obeys_robots: true
  - name: LCC
    operator: Example
    category: other-bot
    robots_tokens: [LCC]
    ua: [LCC]
    obeys_robots: true
  - name: Googlebot
    operator: Google
    category: search
    robots_tokens: [Googlebot]
    ua: [Googlebot]
    obeys_robots: true
"#,
    )
    .unwrap();
    Classifier::new(&db).unwrap()
}

fn known_name<'a>(c: &'a Classifier, ua: &'a [u8]) -> Option<&'a str> {
    let a = c.classify(ua);
    a.is_known().then_some(a.name).flatten()
}

#[test]
fn whole_token_alexabot_is_not_exabot() {
    let c = boundary_db();
    assert_eq!(known_name(&c, b"Mozilla/5.0 (compatible; Exabot/3.0)"), Some("Exabot"));
    assert_eq!(known_name(&c, b"Mozilla/5.0 (compatible; Alexabot/1.0)"), None);
    assert_eq!(known_name(&c, b"Mozilla/5.0 (compatible; Exabot_x/1.0)"), None);
    let b = classifier();
    if b.db().get("Exabot").is_some() {
        assert_ne!(known_name(b, b"Mozilla/5.0 (compatible; Alexabot/1.0)"), Some("Exabot"));
    }
}

#[test]
fn whole_token_slcc_is_not_lcc() {
    let c = boundary_db();
    let ie = b"Mozilla/4.0 (compatible; MSIE 8.0; Windows NT 6.1; Trident/4.0; SLCC2; .NET CLR 2.0.50727)";
    assert_eq!(known_name(&c, ie), None);
    assert!(!c.classify(ie).is_bot());
    assert_eq!(known_name(&c, b"LCC/1.0 (+https://lcc.example/)"), Some("LCC"));
    assert!(!classifier().classify(ie).is_bot());
}

#[test]
fn whole_token_googlebot_is_not_googlebot_image() {
    let c = boundary_db();
    assert_eq!(known_name(&c, b"Googlebot-Image/1.0"), None);
    assert_eq!(known_name(&c, b"Googlebot/2.1"), Some("Googlebot"));
    let b = classifier();
    if b.db().get("Googlebot-Image").is_some() {
        assert_eq!(known_name(b, b"Googlebot-Image/1.0"), Some("Googlebot-Image"));
    }
}

#[test]
fn reference_browsers_are_browsers() {
    let c = classifier();
    for ua in [
        "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36",
        "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Safari/605.1.15",
        "Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0",
        "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1",
        "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Mobile Safari/537.36",
        "Opera/9.80 (J2ME/MIDP; Opera Mini/4.2.15410/22.401; U; en) Presto/2.5.25 Version/10.54",
        "Nokia6230i/2.0 (03.40) Profile/MIDP-2.0 Configuration/CLDC-1.1",
    ] {
        let a = c.classify(ua.as_bytes());
        assert!(!a.is_bot(), "{ua} -> {a:?}");
        assert!(a.name.is_none() && a.tokens.is_empty());
    }
}

#[test]
fn unknown_robots_are_other_bot_with_their_product_name() {
    let c = classifier();
    for (ua, name) in [
        ("Mozilla/5.0 (compatible; Zzyzxbot/0.9; +https://zzyzx.example/bot)", Some("Zzyzxbot")),
        ("QuuxCrawler/1.2 (quux@example.org)", Some("QuuxCrawler")),
        ("Frobnicator/3.1", Some("Frobnicator")),
        ("", None),
        ("  \t ", None),
    ] {
        let a = c.classify(ua.as_bytes());
        assert_eq!(a.kind, AgentKind::UnknownBot, "{ua}");
        assert_eq!(a.category, Category::OtherBot, "{ua}");
        assert_eq!(a.name, name, "{ua}");
        if let Some(n) = name {
            assert_eq!(a.tokens.first().copied(), Some(n), "{ua}");
        }
    }
}

#[test]
fn arbitrary_bytes_do_not_panic() {
    let c = classifier();
    let mut inputs: Vec<Vec<u8>> = vec![
        vec![],
        vec![0; 100],
        (0..=255u8).collect(),
        b"\xff\xfe\xfd Googlebot \x80\x81".to_vec(),
        b"Mozilla/5.0 (\xc3\x28 invalid utf-8) crawler\x00bot".to_vec(),
        vec![b'('; 70_000],
        vec![b'/'; 70_000],
        b"a@b.cd ".repeat(10_000),
        b"http://".repeat(10_000),
        b"like ".repeat(20_000),
    ];
    let mut big = b"Mozilla/5.0 ".to_vec();
    big.resize(64 * 1024, b'x');
    inputs.push(big);
    let mut samples = Vec::new();
    for bot in c.db().bots() {
        samples.extend(bot.samples.iter().map(|s| s.as_bytes().to_vec()));
    }
    // Many literal occurrences in one UA.
    inputs.push(samples.concat());
    for s in &samples {
        inputs.push(s.repeat(MAX_UA_LEN / s.len().max(1) + 2));
    }
    for ua in &inputs {
        let a = c.classify(ua);
        let line = to_json_line(ua, &a, None);
        assert!(!line.contains('\n'));
        serde_json::from_str::<serde_json::Value>(&line).expect("valid JSON");
    }
}

#[test]
fn only_the_first_max_ua_len_bytes_count() {
    let c = classifier();
    let mut ua = b"Mozilla/5.0 (Windows NT 10.0; Win64; x64) ".to_vec();
    ua.resize(MAX_UA_LEN, b' ');
    ua.extend_from_slice(b"Zzyzxbot/1.0");
    assert!(!c.classify(&ua).is_bot());
}

/// Fragments from which plausible and implausible UAs are assembled.
const FRAGMENTS: &[&str] = include!("data/agent/ua_fragments.rs");

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn classify_never_panics_on_random_bytes(ua in proptest::collection::vec(any::<u8>(), 0..6000)) {
        let c = classifier();
        let a = c.classify(&ua);
        if !a.is_bot() {
            prop_assert!(a.name.is_none() && a.tokens.is_empty());
        }
        let line = to_json_line(&ua, &a, Some("*"));
        prop_assert!(serde_json::from_str::<serde_json::Value>(&line).is_ok());
    }

    #[test]
    fn classify_never_panics_on_ua_like_strings(parts in proptest::collection::vec(0..FRAGMENTS.len(), 0..40)) {
        let ua: String = parts.iter().map(|&i| FRAGMENTS[i]).collect();
        let c = classifier();
        let a = c.classify(ua.as_bytes());
        // Names and tokens are substrings of the UA or database strings.
        for t in a.tokens.iter().chain(a.name.iter()) {
            prop_assert!(!t.is_empty());
            prop_assert!(!t.contains('\n') && !t.contains('\r'));
        }
    }
}

/// Issue #43: robots only the maintained lists know are named, with their
/// kind, from the generated conf/bots-lists.yaml (their lists' own samples).
#[test]
fn robots_of_the_maintained_lists_are_named() {
    let c = robotgate::agent::Classifier::builtin();
    for (ua, name, category) in [
        ("Mozilla/4.5 (compatible; HTTrack 3.0x; Windows 98)", "HTTrack", "tool"),
        ("Mozilla/5.0 [en] (X11, U; OpenVAS 7.0.10)", "OpenVAS", "tool"),
        (
            "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/95.0.4638.69 Safari/537.36 Silktide",
            "Silktide",
            "monitor",
        ),
        (
            "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_14_6) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/97.0.4692.71 Safari/537.36 (ThousandEyes Agent)",
            "ThousandEyes",
            "monitor",
        ),
    ] {
        let a = c.classify(ua.as_bytes());
        assert_eq!((a.name, a.category.as_str()), (Some(name), category), "{ua}");
        assert!(a.is_known(), "{ua}");
    }
}
