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
    let mut seen = Observed::new(2, usize::MAX);
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

/// What `doc`'s head says, read in the pieces `cuts` makes.
fn read_head(doc: &[u8], cuts: &[usize]) -> (Vec<(String, String)>, bool) {
    use super::meta::HeadScanner;
    let mut s = HeadScanner::new();
    let mut at = 0;
    let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (doc.len() + 1)).collect();
    cuts.sort_unstable();
    for c in cuts {
        s.feed(&doc[at..c]);
        at = c;
    }
    s.feed(&doc[at..]);
    let found = s
        .found()
        .iter()
        .map(|(n, t)| (n.clone(), t.iter().map(ToString::to_string).collect::<Vec<_>>().join(",")))
        .collect();
    (found, s.done())
}

fn said(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs.iter().map(|(n, t)| (n.to_string(), t.to_string())).collect()
}

/// Issue #52, item 7: a tag inside a script's string is text, and `<body`
/// inside one does not end the head.
#[test]
fn issue_52_a_script_string_is_not_a_tag() {
    let quoted = b"<html><head><script>var t = '<meta name=\"robots\" content=\"noindex\">';</script>\
        <title>x</title></head><body></body>";
    let body_in_script = b"<html><head><script>document.write(\"<body\");</script>\
        <meta name=robots content=noindex></head><body>";
    let close_in_script = b"<head><script>if (a</script.length) x = '</scripts>'; y = \"</script \";\
        <meta name=robots content=noindex></head>";
    let escaped = b"<head><script><!-- <script> </script> <meta name=a content=noindex> --></script>\
        <meta name=b content=nofollow></head>";
    let escaped_then_closed = b"<head><script><!-- x </script><meta name=c content=noarchive></head>";
    for cut in 0..quoted.len() {
        assert_eq!(read_head(quoted, &[cut]), (vec![], true), "cut at {cut}");
    }
    for cut in 0..body_in_script.len() {
        assert_eq!(read_head(body_in_script, &[cut]), (said(&[("robots", "noindex")]), true), "cut at {cut}");
    }
    assert_eq!(read_head(close_in_script, &[]).0, said(&[]), "the script ends only at `</script` + a blank, / or >");
    assert_eq!(
        read_head(escaped, &[]).0,
        said(&[("b", "nofollow")]),
        "double-escaped: `</script>` inside does not end it"
    );
    assert_eq!(read_head(escaped_then_closed, &[]).0, said(&[("c", "noarchive")]));
}

#[test]
fn comments_style_title_and_cdata_hold_no_tags() {
    let doc = b"<!DOCTYPE html><html><head>\
        <!-- <meta name=a content=noindex> --!><!--><meta name=b content=noindex>\
        <!---><meta name=c content=noindex><!-- -- > <meta name=x content=noindex> -->\
        <style>p::after { content: '<meta name=x content=noindex>' }</style >\
        <title><meta name=x content=noindex></TITLE>\
        <textarea></textarea  ><![CDATA[<meta name=x content=noindex>]]><![CDATA[ a ]]><meta name=d content=noindex>\
        <noscript><meta name=x content=noindex></noscript>\
        <?php echo '<meta name=x content=noindex>' ?>\
        <meta name=e content=\"none\" name=x content=index><meta content='noindex' name='F'>\
        </head><meta name=x content=noindex>";
    // `<![CDATA[` is a bogus comment in HTML: it ends at the first `>`, as a
    // browser reads it (the first META inside one is in the comment).
    let want = said(&[("b", "noindex"), ("c", "noindex"), ("d", "noindex"), ("e", "none"), ("f", "noindex")]);
    for cut in 0..doc.len() {
        assert_eq!(read_head(doc, &[cut]), (want.clone(), true), "cut at {cut}");
    }
    // `<plaintext>` ends the document's markup.
    assert_eq!(read_head(b"<plaintext><meta name=robots content=noindex>", &[]), (vec![], true));
}

/// Issue #52, item 8: a META of 6,000 terms keeps its meaning in a few.
#[test]
fn terms_kept_are_bounded_and_keep_the_meaning() {
    use super::meta::{MAX_OTHER_TERMS, MAX_TERM};
    // 6,000 terms in 55 KB (a head is read to 64 KiB).
    let mut content: String = (0..1_000).map(|i| format!("max-snippet:{i},")).collect();
    content.push_str(&"nocache,".repeat(4_999));
    content.push_str("noindex");
    let t = terms(&content);
    assert!(t.len() <= 6 + MAX_OTHER_TERMS, "{}", t.len());
    assert!(says_noindex(&t), "the noindex at the end is kept");
    // A term longer than the bound is skipped; blanks fold.
    assert!(terms(&format!("{}noindex", " ".repeat(10 * MAX_TERM))).contains(&Term::NoIndex));
    assert!(terms(&format!("noindex{}", "x".repeat(MAX_TERM))).is_empty());
    assert_eq!(terms("max-snippet  :   20 ,  noindex,noindex"), [Term::MaxSnippet(20), Term::NoIndex]);
    let doc = format!("<head><meta name=robots content='{content}'></head>");
    let (found, _) = read_head(doc.as_bytes(), &[7, 100, 5000]);
    assert_eq!(found.len(), 1);
    assert!(found[0].1.ends_with("noindex"), "{found:?}");
}

#[test]
fn observed_pages_are_bounded_in_bytes_least_recent_first() {
    let said = || vec![(Some("robots".to_owned()), terms("noindex"))];
    let one = page_size("/p/0000", &said());
    let mut seen = Observed::new(1_000, one * 10);
    for i in 0..10 {
        assert!(seen.note(&format!("/p/{i:04}"), said(), i));
    }
    // /p/0000 noted again: the least recent is now /p/0001.
    assert!(!seen.note("/p/0000", said(), 10), "the same word is not news");
    assert!(seen.note("/p/0010", said(), 11));
    assert_eq!((seen.len(), seen.bytes()), (10, one * 10));
    let robots = crate::robots::RobotsTxt::compile(b"User-agent: *\nDisallow: /p/\n");
    let paths: Vec<String> = seen.hidden(&robots).into_iter().map(|h| h.path).collect();
    assert!(paths.contains(&"/p/0000".to_owned()) && !paths.contains(&"/p/0001".to_owned()), "{paths:?}");
    // A long path counts its bytes: it pushes out as many as it weighs.
    let long = format!("/p/{}", "x".repeat(one * 3));
    seen.note(&long, said(), 12);
    assert!(seen.bytes() <= one * 10 && seen.len() <= 7, "{} {}", seen.len(), seen.bytes());
    // Forgetting and many notes of one page keep the order's upkeep bounded.
    for i in 0..100_000u64 {
        seen.note("/p/0000", said(), i);
    }
    seen.forget("/p/0000");
    assert!(seen.order.len() <= 2 * seen.len() + 65, "{}", seen.order.len());
    assert!(seen.bytes() <= one * 10);
}

/// The head as html5gum (a WHATWG tokenizer, switching states by tag name
/// as this reader does) reads it: the robots META tags before `</head>`,
/// `<body>` or `<plaintext>`.
fn oracle(doc: &[u8]) -> Vec<(String, String)> {
    use html5gum::{DefaultEmitter, Token, Tokenizer};
    let mut emitter = DefaultEmitter::default();
    emitter.naively_switch_states(true);
    let mut out = Vec::new();
    for token in Tokenizer::new_with_emitter(doc, emitter).flatten() {
        match token {
            Token::StartTag(t) if [&b"body"[..], b"plaintext"].contains(&&t.name[..]) => break,
            Token::EndTag(t) if &t.name[..] == b"head" => break,
            Token::StartTag(t) if &t.name[..] == b"meta" => {
                let attr = |n: &[u8]| t.attributes.iter().find(|(k, _)| &k[..] == n).map(|(_, v)| v.value.to_vec());
                let (Some(name), Some(content)) = (attr(b"name"), attr(b"content")) else { continue };
                if name.len() > super::html::MAX_NAME_VALUE || out.len() >= super::meta::MAX_TAGS {
                    continue;
                }
                let name = String::from_utf8_lossy(&name).trim().to_ascii_lowercase();
                let t = terms(&String::from_utf8_lossy(&content));
                if !name.is_empty()
                    && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_".contains(&b))
                    && !t.is_empty()
                {
                    out.push((name, t.iter().map(ToString::to_string).collect::<Vec<_>>().join(",")));
                }
            }
            _ => {}
        }
    }
    out
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(4_000))]

    /// Documents made of the pieces that change a tokenizer's state, cut
    /// anywhere: the reader finds what html5gum finds.
    #[test]
    fn the_head_reader_agrees_with_a_whatwg_tokenizer(
        pieces in proptest::collection::vec(0usize..PIECES.len(), 0..48),
        cuts in proptest::collection::vec(0usize..4096, 0..4),
    ) {
        let doc: Vec<u8> = pieces.iter().flat_map(|&i| PIECES[i].bytes()).collect();
        let (found, _) = read_head(&doc, &cuts);
        proptest::prop_assert_eq!(found, oracle(&doc), "{}", String::from_utf8_lossy(&doc));
    }

    /// Any bytes: no panic, and the reading does not depend on the cuts.
    #[test]
    fn any_bytes_read_alike_however_cut(doc in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..512),
        cuts in proptest::collection::vec(0usize..512, 0..6)) {
        proptest::prop_assert_eq!(read_head(&doc, &cuts), read_head(&doc, &[]));
    }
}

/// The pieces: markup that moves a tokenizer between its states, and text.
/// (No `&`, NUL or CR: character references and the input stream's
/// preprocessing are not this reader's; no `noframes`, which html5gum 0.9
/// spells `noframe`.)
const PIECES: &[&str] = &[
    "<",
    ">",
    "/",
    "!",
    "-",
    "--",
    "=",
    "\"",
    "'",
    " ",
    "\n",
    "x",
    "a b",
    "<meta",
    "<META ",
    " name=robots",
    " name='googlebot'",
    " NAME=\"Robots\"",
    " name",
    " content=noindex",
    " content=\"none, max-snippet:3\"",
    " content='nofollow'",
    " content",
    "<meta name=robots content=noindex>",
    "<meta content=noarchive name=bingbot/>",
    "<script>",
    "<script",
    "</script>",
    "</script",
    "</SCRIPT ",
    "<style>",
    "</style>",
    "<title>",
    "</title>",
    "<textarea>",
    "</textarea>",
    "<xmp>",
    "</xmp>",
    "<iframe>",
    "</iframe>",
    "<noscript>",
    "</noscript>",
    "<noembed>",
    "</noembed>",
    "<!--",
    "-->",
    "--!>",
    "<!-->",
    "<!--->",
    "<!",
    "<!DOCTYPE html>",
    "<![CDATA[",
    "]]>",
    "<?",
    "</",
    "</3",
    "<body",
    "<body>",
    "</head>",
    "</head",
    "<head>",
    "<plaintext>",
    "<scripts>",
    "</scripts>",
    "<p>",
    "<div class=a>",
    "\t",
    "/>",
    "<x y='>'>",
];
