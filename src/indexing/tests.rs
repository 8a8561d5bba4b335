use super::meta::{header_value, says_noindex, terms};
use super::*;

fn rule(path: &str, bots: &[&str], set: &str) -> Rule {
    Rule { path: path.into(), bots: bots.iter().map(|b| b.to_string()).collect(), set: Directives::parse(set).unwrap() }
}

#[test]
fn the_seeds_terms_and_their_defaults() {
    // A missing tag means ALL: index, follow.
    assert_eq!(meaning(&[]), (Said::Nothing, Said::Nothing));
    assert!(Said::Nothing.allows());
    // NONE is NOINDEX, NOFOLLOW; ALL is INDEX, FOLLOW; case does not matter.
    assert_eq!(meaning(&terms("NONE")), (Said::No, Said::No));
    assert_eq!(meaning(&terms("All")), (Said::Yes, Said::Yes));
    assert_eq!(meaning(&terms("noindex, FOLLOW")), (Said::No, Said::Yes));
    // Where opposite terms meet, the robot decides: neither forbids.
    let (index, follow) = meaning(&terms("follow, nofollow, follow, noindex"));
    assert_eq!((index, follow), (Said::No, Said::Both));
    assert!(follow.allows(), "FOLLOW wins a conflict");
    assert!(!says_noindex(&terms("index, noindex")));
    assert!(says_noindex(&terms("none")));
    // Unknown terms are skipped in what an origin says.
    assert_eq!(terms("noindex, bogus, nofollow").len(), 2);
}

#[test]
fn a_set_is_strict() {
    let d =
        Directives::parse("NoIndex, max-snippet: 20, max-image-preview:LARGE, unavailable_after: 2027-01-31").unwrap();
    assert_eq!(d.to_string(), "noindex, max-snippet:20, max-image-preview:large, unavailable_after: 2027-01-31");
    assert!(d.noindex());
    for (bad, says) in [
        ("noindex, nosuch", "`nosuch` is not a directive"),
        ("max-snippet:lots", "number of at least -1"),
        ("max-snippet", "needs a number"),
        ("max-image-preview:huge", "none, standard or large"),
        ("noindex,,nofollow", "empty directive"),
        ("index, noindex", "both index and noindex"),
        ("all, none", "both index and noindex"),
        ("noarchive:1", "takes no value"),
        ("", "empty set"),
    ] {
        let e = Directives::parse(bad).unwrap_err();
        assert!(e.contains(says), "{bad}: {e}");
    }
}

#[test]
fn longest_match_per_scope_and_the_robot_form() {
    let rules = Rules::new(vec![
        rule("/drafts/", &[], "noindex, nofollow"),
        rule("/drafts/public/", &[], "all"),
        rule("/*.pdf$", &["Googlebot"], "noarchive"),
        rule("/", &["Googlebot", "bingbot"], "max-snippet:50"),
    ]);
    assert_eq!(
        rules.header_values(b"/drafts/a.html"),
        ["noindex, nofollow", "bingbot: max-snippet:50", "googlebot: max-snippet:50"]
    );
    assert_eq!(
        rules.header_values(b"/drafts/public/a"),
        ["all", "bingbot: max-snippet:50", "googlebot: max-snippet:50"]
    );
    // The longer pattern wins within Googlebot's scope.
    assert_eq!(rules.header_values(b"/a.pdf"), ["bingbot: max-snippet:50", "googlebot: noarchive"]);
    assert_eq!(rules.header_values(b"/a.pdf?x"), ["bingbot: max-snippet:50", "googlebot: max-snippet:50"]);
    // A robot's rules: its own scope's and the generic one's.
    let g: Vec<usize> = rules.for_robot(&["googlebot"], b"/drafts/x.pdf").iter().map(|a| a.index).collect();
    assert_eq!(g, [0, 2]);
    let other: Vec<usize> = rules.for_robot(&["gptbot"], b"/drafts/x.pdf").iter().map(|a| a.index).collect();
    assert_eq!(other, [0]);
    assert!(Rules::default().header_values(b"/x").is_empty());
}

#[test]
fn header_values_name_a_robot_or_not() {
    assert_eq!(header_value("googlebot: noindex, nofollow").0, Some("googlebot"));
    assert_eq!(header_value("noindex").0, None);
    assert_eq!(header_value("max-snippet: 20").0, None);
    assert_eq!(header_value("unavailable_after: 25 Jun 2027 15:00:00 PST").0, None);
    assert!(says_noindex(&header_value("otherbot: noindex").1));
}

#[test]
fn a_noindex_behind_a_disallow_is_found() {
    let robots = crate::robots::RobotsTxt::compile(
        b"User-agent: *\nDisallow: /old/\n\nUser-agent: Googlebot\nDisallow: /drafts/\n",
    );
    let rules = Rules::new(vec![
        rule("/drafts/", &[], "noindex"),
        rule("/old/*.html", &["Bingbot"], "none"),
        rule("/old/", &[], "noarchive"),
        rule("/new/", &[], "noindex"),
    ]);
    let found = hidden(&rules, &robots);
    let said: Vec<(usize, &str, u32)> = found.iter().map(|h| (h.rule, h.robot.as_str(), h.robots_line)).collect();
    // Googlebot never sees the noindex on /drafts/; Bingbot (the * group) never sees /old/'s.
    assert_eq!(said, [(0, "Googlebot", 5), (1, "Bingbot", 2)]);
}
