//! Robot evidence in words: robot words, HTTP libraries and runtimes,
//! contact addresses; and the one pass over a UA's words that collects the
//! evidence and the candidates for a name.

use super::token::{has_bot, is_app_product, is_generic, is_nameable, is_numbered_name, trim_name};
use crate::agent::vocab::sets;
use crate::agent::words::{
    contains, email_at, is_word_byte, lower, obfuscated_at, parts, plus_domain_at, preceded_by_like, url_at,
    DeviceModel, Word, Words, MAX_WORD,
};

/// What kind of robot evidence a word carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum WordEvidence {
    None,
    /// A robot word; `strong` for bot/crawler/spider-like words.
    Robot {
        strong: bool,
    },
    /// An HTTP library, runtime or CLI; `bare_lang` for a runtime name alone
    /// (`Java/1.8.0`), a worse name than a library's.
    Library {
        bare_lang: bool,
    },
}

pub(super) fn word_evidence(ua: &[u8], w: &Word) -> WordEvidence {
    let word = &ua[w.start..w.end];
    let mut buf = [0u8; MAX_WORD];
    let low = lower(&word[..word.len().min(MAX_WORD)], &mut buf).unwrap_or_default();
    let found = sets().robot_words.find(low);
    if found == Some(true) || has_bot(word) {
        return WordEvidence::Robot { strong: true };
    }
    if found == Some(false) {
        return WordEvidence::Robot { strong: false };
    }
    // Automation conventions: `ips-agent`, `GomezAgent` (not `User-Agent` or
    // a bare "Agent"), `CookieHubScan`, `l9scan` (not `Franciscans`), an
    // `SEO` part.
    let agent = low.len() > 5 && low.ends_with(b"agent") && !matches!(low, b"useragent" | b"user-agent");
    let scan = low.len() > 4 && low.ends_with(b"scan");
    if agent || scan || parts(low).any(|p| p == b"seo") {
        return WordEvidence::Robot { strong: false };
    }
    // `http` inside a word: Go-http-client, HttpClient, GuzzleHttp, okhttp.
    // A bare `HTTP` or `HTTPS` is a protocol name (`HTTP/1.1 SonyEricsson...`).
    if contains(low, "http") && low != b"http" && low != b"https" {
        return WordEvidence::Library { bare_lang: false };
    }
    let compound = parts(word).nth(1).is_some();
    let numeric_version =
        ua.get(w.end) == Some(&b'/') && ua.get(w.end + 1).is_some_and(|c| c.is_ascii_digit() || *c == b'v');
    let sets = sets();
    // A version with an edition suffix (`12.9.4-go`: an app for Android's
    // Go edition) names no runtime (issue #53).
    let digits = |p: &[u8]| p.iter().all(|b| b.is_ascii_digit() || *b == b'.');
    if compound && parts(word).all(|p| digits(p) || sets.lang.contains(p)) && parts(word).any(digits) {
        return WordEvidence::None;
    }
    for p in parts(word) {
        if sets.lib.contains(p) {
            return WordEvidence::Library { bare_lang: false };
        }
        if (compound || numeric_version) && sets.lang.contains(p) {
            return WordEvidence::Library { bare_lang: !compound };
        }
    }
    WordEvidence::None
}

/// [`word_evidence`], skipped when `hits` (the end offsets of every suspect
/// needle in the UA, or `None` if unknown) shows no needle ending inside the
/// word (or, for `go/`, right after it): no word can carry evidence without one
/// (`evidence_implies_suspect_needle` checks this).
pub(super) fn evidence_if_hit(ua: &[u8], w: &Word, hits: Option<&[u32]>) -> WordEvidence {
    let hit = hits.is_none_or(|h| h.iter().any(|&e| (w.start + 1..=w.end + 1).contains(&(e as usize))));
    if hit {
        word_evidence(ua, w)
    } else {
        WordEvidence::None
    }
}

/// Whether a suspect needle ends in `w`, right after it, or right at its
/// start (a `+` before it): `hits` as for [`evidence_if_hit`]. Every contact
/// address and every word with robot evidence is near a hit.
fn near_hit(w: &Word, hits: Option<&[u32]>) -> bool {
    hits.is_none_or(|h| h.iter().any(|&e| (w.start..=w.end + 1).contains(&(e as usize))))
}

/// Whether [`findings`] finds evidence (`findings(ua, marker, false,
/// hits).evidence`), looking only at the words near a hit when `hits` are
/// known.
///
/// Evidence needs a suspect needle at the word or right around it
/// ([`near_hit`]), so the words the full pass would look at are those around
/// each hit, at most three per hit, in order. A feature phone's browser
/// string holds two such needles (`Java`, `UNTRUSTED`) among twenty words;
/// the full pass read them all.
pub(super) fn has_evidence(ua: &[u8], marker: bool, hits: Option<&[u32]>) -> bool {
    let Some(ends) = hits else {
        return findings(ua, marker, false, None).evidence;
    };
    let mut devices = DeviceModel::new(ua);
    let mut last: Option<usize> = None;
    // Where the depth was last counted up to, and the depth there: words
    // come in order, so counting resumes (one pass over the UA in all).
    let mut counted = (0, 0);
    for &e in ends {
        let e = e as usize;
        for (start, end) in words_near(ua, e) {
            if last.is_some_and(|l| start <= l) {
                continue; // already looked at
            }
            last = Some(start);
            // The depth is only needed once there is evidence to weigh.
            let mut w = Word { start, end, depth: 0 };
            if url_at(ua, &w).or_else(|| email_at(ua, &w)).or_else(|| plus_domain_at(ua, &w)).is_some()
                || obfuscated_at(ua, &w)
            {
                return true;
            }
            let evidence = evidence_if_hit(ua, &w, hits);
            if evidence == WordEvidence::None {
                continue;
            }
            counted = (start, depth_from(ua, counted, start));
            w.depth = counted.1;
            match evidence {
                _ if devices.contains(&w) => {}
                WordEvidence::Library { .. } if marker && w.depth > 0 => {}
                _ => return true,
            }
        }
    }
    false
}

/// The words `w` of `ua` (as [`Words`] splits it) with `w.start <= e <=
/// w.end + 1`, in order, as `(start, end)`: the one ending right before
/// `e - 1`, the one holding `e - 1`, the one starting at `e`.
fn words_near(ua: &[u8], e: usize) -> impl Iterator<Item = (usize, usize)> + '_ {
    let word_byte = |i: usize| ua.get(i).is_some_and(|&b| is_word_byte(b));
    let around = |i: usize| {
        let start = ua[..i].iter().rposition(|&b| !is_word_byte(b)).map_or(0, |p| p + 1);
        let end = ua[i..].iter().position(|&b| !is_word_byte(b)).map_or(ua.len(), |p| p + i);
        (start, end)
    };
    let before = (e >= 2 && !word_byte(e - 1) && word_byte(e - 2)).then(|| around(e - 2));
    let holding = (e >= 1 && word_byte(e - 1)).then(|| around(e - 1));
    let starting = (word_byte(e) && (e == 0 || !word_byte(e - 1))).then(|| around(e));
    before.into_iter().chain(holding).chain(starting)
}

/// The parenthesis depth [`Words`] gives a word starting at `start`, given
/// the depth `at.1` at `at.0 <= start`.
fn depth_from(ua: &[u8], at: (usize, u32), start: usize) -> u32 {
    ua[at.0..start].iter().fold(at.1, |d, &b| match b {
        b'(' => d.saturating_add(1),
        b')' => d.saturating_sub(1),
        _ => d,
    })
}

/// What one pass of the word rules found: robot evidence and name candidates.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Findings {
    /// Some robot evidence anywhere (robot word, library, contact address).
    pub(super) evidence: bool,
    /// First distinctive strong robot word (`ExampleBot`, `FooCrawler`).
    pub(super) robot: Option<Word>,
    /// First distinctive weak robot word (`HeadlessChrome`, `LinkCheck`).
    pub(super) weak: Option<Word>,
    /// First generic robot word (`crawler`, `Spider`, `Monitoring`), a strong
    /// one preferred.
    pub(super) generic: Option<Word>,
    /// Whether `generic` is a strong robot word.
    pub(super) generic_strong: bool,
    /// First library word (`python-requests`, `okhttp`).
    pub(super) library: Option<Word>,
    /// First bare runtime name with a version (`Java/1.8.0`).
    pub(super) lang: Option<Word>,
    /// The UA's first word, if it is a product (`name/`) and nameable.
    pub(super) first_product: Option<Word>,
    /// The UA's first word, if nameable.
    pub(super) first_word: Option<Word>,
    /// The word after `compatible;`, if nameable (`(compatible; Foo)`).
    pub(super) compat: Option<Word>,
    /// First nameable product (`name/`) outside parentheses.
    pub(super) product: Option<Word>,
    /// First nameable product inside parentheses.
    pub(super) product_paren: Option<Word>,
    /// Start of the first contact address, if any.
    pub(super) contact: Option<usize>,
    /// Some contact address is a robot's own (issue #53): an e-mail
    /// address, or a URL or domain after the `+` convention
    /// (`+http://...`, `+example.org`), as opposed to a bare URL, which a
    /// person's software may carry too (its home page).
    pub(super) contact_strong: bool,
}

/// One pass over the words: evidence and every name candidate.
///
/// `marker`: the UA has browser platform/engine words; then a library word
/// inside a comment is not evidence (`(...+HAS_CMD_HTTP_SERVER)` in a TV's
/// capability list), and words of an Android device model never are.
///
/// Cost: O(len × needles) with short needles; run only when the automaton saw
/// a [`SUSPECT_NEEDLES`](super::vocab::SUSPECT_NEEDLES) substring, or to
/// name a robot.
pub(super) fn findings(ua: &[u8], marker: bool, names: bool, hits: Option<&[u32]>) -> Findings {
    let mut f = Findings::default();
    let mut devices = DeviceModel::new(ua);
    let mut skip_until = 0;
    let mut compat_end: Option<usize> = None;
    // The product a comment annotates (RFC 9110 10.1.5: a comment follows
    // the product it describes): the last nameable product outside comments,
    // kept across its version.
    let mut owner: Option<Word> = None;
    for w in Words::new(ua) {
        if w.start < skip_until {
            continue;
        }
        // A contact address needs a suspect needle at the word or right
        // around it (`http`, `www.`, `@` after it, `+` before it, `(at)`),
        // and so does robot evidence (see `evidence_if_hit`).
        let near = near_hit(&w, hits);
        if !near && !names {
            continue;
        }
        let contact = if near {
            let plus = w.start > 0 && ua[w.start - 1] == b'+';
            url_at(ua, &w)
                .map(|end| (end, plus))
                .or_else(|| email_at(ua, &w).map(|end| (end, true)))
                .or_else(|| plus_domain_at(ua, &w).map(|end| (end, true)))
        } else {
            None
        };
        if let Some((end, strong)) = contact {
            f.evidence = true;
            f.contact.get_or_insert(w.start);
            f.contact_strong |= strong;
            skip_until = end;
            continue;
        }
        if near && obfuscated_at(ua, &w) {
            f.evidence = true;
            f.contact.get_or_insert(w.start);
            f.contact_strong = true;
            continue;
        }
        if f.evidence && !names {
            break; // evidence is all the caller wants
        }
        let evidence = if near { evidence_if_hit(ua, &w, hits) } else { WordEvidence::None };
        if !names && evidence == WordEvidence::None {
            continue;
        }
        let word = &ua[w.start..w.end];
        let name = trim_name(word);
        let after_slash = w.start > 0 && ua[w.start - 1] == b'/';
        let product = ua.get(w.end) == Some(&b'/');
        let device = devices.contains(&w);
        // Only the name rules need this, and only for a few words.
        let nameable = || !after_slash && !device && is_nameable(name);
        // A product token all of digits, with its version, where a name
        // stands (first, or after `compatible;`) is a name too: `008/0.83`.
        // Elsewhere digits are versions, build numbers and model numbers.
        let named_product = || nameable() || (product && !after_slash && !device && is_numbered_name(name));
        if w.depth == 0 && !after_slash {
            owner = (product && nameable()).then_some(w);
        }
        match evidence {
            WordEvidence::None => {}
            _ if device => {}
            WordEvidence::Robot { strong } => {
                f.evidence = true;
                if !after_slash && !preceded_by_like(ua, w.start) && name.len() >= 2 {
                    let slot = if is_generic(name) {
                        if strong && !f.generic_strong {
                            f.generic = None;
                            f.generic_strong = true;
                        }
                        &mut f.generic
                    } else if strong {
                        &mut f.robot
                    } else {
                        &mut f.weak
                    };
                    // A distinctive robot word in a product's comment
                    // describes that product, which is the robot's name:
                    // `PingdomPageSpeed/1.0 (pingbot/2.0; ...)`.
                    let described = if strong && w.depth > 0 && !is_generic(name) { owner } else { None };
                    slot.get_or_insert(described.unwrap_or(w));
                }
            }
            WordEvidence::Library { .. } if marker && w.depth > 0 => {}
            WordEvidence::Library { bare_lang } => {
                f.evidence = true;
                let slot = if bare_lang { &mut f.lang } else { &mut f.library };
                slot.get_or_insert(w);
            }
        }
        if !names {
            continue;
        }
        if w.start == 0 && nameable() {
            f.first_word = Some(w);
        }
        // A robot's first product names it even when it is an app's or a
        // handset vendor's word: `Pinterest/0.2 (+http://.../bot.html)`.
        if w.start == 0 && product && (named_product() || (!device && is_app_product(name))) {
            f.first_product = Some(w);
        }
        if let Some(end) = compat_end.take() {
            let gap = &ua[end..w.start];
            let named = if product { named_product() } else { nameable() };
            if f.compat.is_none() && gap.iter().all(|b| matches!(b, b' ' | b';' | b',' | b'+')) && named {
                f.compat = Some(w);
            }
        }
        if word.eq_ignore_ascii_case(b"compatible") {
            compat_end = Some(w.end);
            owner = None; // `(compatible; X)` names the client, not the product before it
        }
        if product {
            let slot = if w.depth == 0 { &mut f.product } else { &mut f.product_paren };
            if slot.is_none() && nameable() {
                *slot = Some(w);
            }
        }
    }
    f
}

#[cfg(test)]
mod tests {
    use super::super::tests::slow;
    use super::*;
    use crate::agent::vocab;

    #[test]
    fn bot_word_rule() {
        for w in ["Googlebot", "AI2Bot", "BotLink", "bot-1", "bots", "bot", "msnbot-media"] {
            assert!(has_bot(w.as_bytes()), "{w}");
        }
        for w in ["Robotics", "Botswana", "abbotsford"] {
            assert!(!has_bot(w.as_bytes()), "{w}");
        }
    }

    /// The one-pass needle search finds what searching for each needle in
    /// turn finds.
    #[test]
    fn robot_words_in_one_pass_as_one_by_one() {
        use crate::agent::vocab::{STRONG_BOT_WORDS, WEAK_BOT_WORDS};
        let naive = |low: &[u8]| {
            if STRONG_BOT_WORDS.iter().any(|n| contains(low, n)) {
                Some(true)
            } else {
                WEAK_BOT_WORDS.iter().any(|n| contains(low, n)).then_some(false)
            }
        };
        let needles: Vec<&str> = STRONG_BOT_WORDS.iter().chain(WEAK_BOT_WORDS).copied().collect();
        let mut words: Vec<String> = Vec::new();
        for a in &needles {
            words.push((*a).to_owned());
            words.push(a[1..].to_owned());
            words.push(a[..a.len() - 1].to_owned());
            for b in &needles {
                words.push(format!("{a}{b}"));
                words.push(format!("x{}{}", &a[..a.len() - 1], &b[1..]));
            }
        }
        words.extend(["", "c", "untrusted", "java", "crawlerbot", "mirrorcheck"].map(String::from));
        for w in &words {
            assert_eq!(sets().robot_words.find(w.as_bytes()), naive(w.as_bytes()), "{w}");
        }
        let alphabet = proptest::sample::select(vec![b'a', b'c', b'e', b'h', b'k', b'r', b's', b'w', b'l', b'o', b'-']);
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        runner
            .run(&proptest::collection::vec(alphabet, 0..40), |w| {
                proptest::prop_assert_eq!(sets().robot_words.find(&w), naive(&w));
                Ok(())
            })
            .unwrap();
    }

    #[test]
    fn evidence_implies_suspect_needle() {
        // The fast path skips `evidence` when no suspect needle occurs.
        for ua in [
            "Mozilla/5.0 (compatible; ExampleBot/2.1)",
            "curl/8.0",
            "x a@b.org",
            "see www.example.com",
            "Go-http-client/1.1",
            "Foo/1.0 (+example.org)",
            "Foo (admin (at) example.org)",
            "Mozilla/5.0 (compatible; Reader; 3 subscribers)",
        ] {
            assert!(findings(ua.as_bytes(), false, false, None).evidence, "{ua}");
            assert!(vocab::has_suspect(ua.as_bytes()), "{ua}");
        }
    }

    #[test]
    fn a_robot_word_in_a_comment_names_the_product_it_follows() {
        assert_eq!(slow("Quuxmon/1.0 (quuxbot/2.0; +https://x.example/)"), Some(Some("Quuxmon")));
        // ... but `compatible;` introduces the client itself.
        assert_eq!(slow("Frob/2.0 (compatible; BarBot/1.0)"), Some(Some("BarBot")));
        assert_eq!(slow("Mozilla/5.0 (compatible; BarBot/1.0; +https://x.example/)"), Some(Some("BarBot")));
    }
}
