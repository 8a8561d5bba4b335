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

#[test]
fn the_head_is_read_as_it_streams() {
    use super::meta::HeadScanner;
    let doc = b"<!doctype html><html><head><!-- <meta name=robots content=nofollow> -->\
        <meta charset=utf-8><META NAME=\"Robots\" CONTENT=\"NoIndex, follow\">\
        <meta name='googlebot' content='noarchive'><title>x</title></head>\
        <body><meta name=robots content=none></body></html>";
    // Every way of cutting the document gives the same reading.
    for cut in 0..doc.len() {
        let mut s = HeadScanner::new();
        s.feed(&doc[..cut]);
        s.feed(&doc[cut..]);
        assert!(s.done(), "cut at {cut}");
        let found: Vec<(&str, String)> = s
            .found()
            .iter()
            .map(|(n, t)| (n.as_str(), t.iter().map(ToString::to_string).collect::<Vec<_>>().join(",")))
            .collect();
        assert_eq!(
            found,
            [("robots", "noindex,follow".to_owned()), ("googlebot", "noarchive".to_owned())],
            "cut at {cut}"
        );
    }
    // A document with no head end stops at the bound.
    let mut s = HeadScanner::new();
    for _ in 0..20 {
        s.feed(&[b'x'; 4096]);
    }
    assert!(s.done());
}

#[test]
fn observed_pages_whose_noindex_robots_txt_hides() {
    let robots = crate::robots::RobotsTxt::compile(
        b"User-agent: *\nDisallow: /private/\n\nUser-agent: Googlebot\nDisallow: /g/\n",
    );
    let mut seen = Observed::new(2);
    seen.note("/private/a.html", vec![(Some("robots".into()), terms("noindex"))], 0);
    seen.note(
        "/g/b.html",
        vec![(Some("googlebot".into()), terms("none")), (Some("bingbot".into()), terms("noindex"))],
        0,
    );
    let hidden = seen.hidden(&robots);
    let said: Vec<(&str, &str, u32)> =
        hidden.iter().map(|h| (h.path.as_str(), h.robot.as_str(), h.robots_line)).collect();
    // /private/ is hidden from every robot but Googlebot, whose group does not disallow it.
    assert_eq!(said, [("/g/b.html", "googlebot", 5), ("/private/a.html", "*", 2)]);
    // Bounded: a third page pushes out the first.
    seen.note("/private/c.html", vec![(None, terms("index"))], 1);
    assert_eq!(seen.len(), 2);
    assert!(seen.hidden(&robots).iter().all(|h| h.path != "/private/a.html"));
}
