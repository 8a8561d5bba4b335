//! The classifier: ties the automata, the word rules and the database into
//! one [`Agent`] per User-Agent.
//!
//! A request's UA flows one way: the forward automaton scans it once
//! (`automaton`); the literal matches it reports are resolved and ranked
//! here, with the help of `words` (is a match inside a URL, or a "like ..."
//! claim?); a known robot then gets the product tokens the UA announces, an
//! unmatched UA the rules for unknown robots (`unknown`), both fed the
//! automaton's signals so that they skip what it already ruled out.
//!
//! When several entries match, the winner is, in order: one occurring in the
//! UA proper over one occurring only inside a URL (`+http://www.bing.com/
//! bingbot.htm` does not make a UA bingbot if it names another robot);
//! non-`tool` categories over `tool` (a crawler that mentions its HTTP
//! library is the crawler); the longest matched literal (the most specific);
//! database order. An occurrence right after `like` or `compatible with`
//! ("KHTML, like Gecko", "treat like Googlebot") is a compatibility claim and
//! does not count at all.

use super::automaton::{rank, Automata, Place, Scan};
use super::db::{Bot, BotDb, Category, DbError};
use super::frozen;
use super::grammar;
use super::unknown::{self, Signals};
use super::vocab::{first_word_is_browser, REFERENCE_BROWSERS};
use super::words::{contains_ci, in_url, preceded_by_like};
use super::{Agent, AgentKind, Claim};

/// Only the first this many bytes of a User-Agent are examined.
///
/// Real UAs are well under 1 KiB (the longest common ones, in-app browsers
/// with device details, reach about 500 bytes); the header itself is
/// attacker-controlled and may be as large as the server's header limit.
/// Capping bounds every pass to a few microseconds whatever the input. A
/// robot token after 4 KiB of padding is not seen: such a client is hiding,
/// not announcing itself.
pub const MAX_UA_LEN: usize = 4096;

/// At most this many product tokens taken from the UA itself are added to
/// [`Agent::tokens`], bounding the per-request allocation.
pub const MAX_UA_TOKENS: usize = 6;

/// The compiled User-Agent classifier; immutable and `Sync`.
///
/// # Example
/// ```
/// use robotgate::agent::{Category, Classifier};
/// let c = Classifier::builtin();
/// let a = c.classify(b"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)");
/// assert_eq!(a.name, Some("Googlebot"));
/// assert_eq!(a.category, Category::Search);
/// let b = c.classify(b"Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0");
/// assert!(!b.is_bot());
/// ```
#[derive(Debug, Clone)]
pub struct Classifier {
    db: BotDb,
    automata: Automata,
    /// Per frozen shape (`frozen::SHAPES`): whether a whole string of it is a
    /// browser without the walk, proved for this database in [`Classifier::new`].
    fast_shapes: Vec<bool>,
    /// Told apart from every other classifier of the process ([`Classifier::id`]).
    id: u64,
}

/// The next classifier's [`Classifier::id`].
static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// The automaton's signals, as the word rules take them.
fn signals(scan: &Scan, frozen_end: Option<usize>) -> Signals<'_> {
    Signals {
        suspect: scan.n_suspect > 0,
        suspect_ends: scan.all_suspect_ends(),
        marker: scan.marker,
        frozen_end,
        shape_hint_end: Some(scan.shape_hint_end as usize),
    }
}

/// See [`Agent::announced`]. `announced` are the product tokens of the UA in
/// order.
fn announced_name<'a>(ua: &'a [u8], bot: &Bot, announced: &[&'a str], scan: &Scan) -> Option<&'a str> {
    let literals = || bot.ua.iter().map(|l| l.trim_end_matches('*')).filter(|l| !l.is_empty());
    let extends = |token: &str, name: &str| {
        token.len() >= name.len() && token.as_bytes()[..name.len()].eq_ignore_ascii_case(name.as_bytes())
    };
    let of_family = |token: &str| extends(token, &bot.name) || literals().any(|l| extends(token, l));
    let tool = bot.category == Category::Tool;
    let name = if tool { unknown::analyze(ua, &signals(scan, None)).and_then(|u| u.name) } else { None };
    // A robot that names itself with a robot word and mentions the library
    // or automation it runs on is the robot, even when it names the library
    // too: `HeadlessChrome/87.0 YextBot/Java`.
    if let Some(name) = name.filter(|n| unknown::is_robot_name(n) && !of_family(n)) {
        return Some(name);
    }
    // A UA that announces the entry's own name is that robot, whatever else it says.
    if announced.iter().any(|t| t.eq_ignore_ascii_case(&bot.name)) {
        return None;
    }
    // A robot that puts the entry in its version slot says what it is built
    // on, and is the robot: `OICrawler/Nutch`.
    let in_version_slot = |t: &str| {
        let rest = after_product(ua, t);
        rest.is_some_and(|r| literals().any(|l| r.len() >= l.len() && r[..l.len()].eq_ignore_ascii_case(l.as_bytes())))
    };
    if let Some(t) =
        announced.iter().copied().find(|t| !of_family(t) && unknown::is_robot_name(t) && in_version_slot(t))
    {
        return Some(t);
    }
    if let Some(token) = announced.iter().copied().find(|t| of_family(t)) {
        return Some(token);
    }
    // Any other name a tool's user gives itself: `Ruby, Twurly v1.1`.
    name.filter(|n| !of_family(n))
}

/// Whether a database robot is named only by weak evidence (issue #68): a
/// name that is no robot word (`Seekr`, `PocketCasts`) in a person's app
/// (a WebView's string with an app's token after it, a podcast app giving
/// its build, a TV, a mail client: [`grammar::is_app`]), with no
/// `compatible;` and no robot's contact (`+http://...`, an e-mail address)
/// to say a robot wrote it. An app may share its name with a robot, or
/// a maintained list may name an app; such a match is recorded, not
/// refused, unless the site enforces weak evidence. HTTP libraries and
/// tools (`okhttp`, `Dalvik`-era clients) stay as they are: a library is
/// what a tool runs on.
///
/// Cost: a few comparisons for a robot word name (most entries); else one
/// scan for `compatible`/contact marks and the app matcher over the UA.
fn known_weak(ua: &[u8], bot: &Bot) -> bool {
    if bot.category == Category::Tool
        || unknown::is_robot_name(&bot.name)
        || bot.ua.iter().any(|l| unknown::is_robot_name(l.trim_end_matches('*')))
    {
        return false;
    }
    let robot_marks =
        contains_ci(ua, "compatible") || contains_ci(ua, "+http") || contains_ci(ua, "+www.") || ua.contains(&b'@');
    !robot_marks && grammar::is_app(ua)
}

/// What follows `token`'s `/` in `ua`, when `token` is a slice of `ua`
/// followed by one (a product's version slot).
fn after_product<'a>(ua: &'a [u8], token: &str) -> Option<&'a [u8]> {
    let start = (token.as_ptr() as usize).checked_sub(ua.as_ptr() as usize)?;
    let end = start.checked_add(token.len()).filter(|&e| e < ua.len())?;
    ua[end..].strip_prefix(b"/")
}

impl Classifier {
    /// Compiles a database.
    ///
    /// # Errors
    /// [`DbError::DuplicateName`]/[`DbError::DuplicatePattern`] for a merged
    /// database with clashes, [`DbError::Invalid`] for an over-long literal,
    /// [`DbError::Regex`] for a `ua_regex` the DFA cannot compile,
    /// [`DbError::MatchesBrowser`] when a pattern matches an ordinary browser
    /// UA, [`DbError::Build`] when an automaton exceeds its size limit.
    pub fn new(db: &BotDb) -> Result<Classifier, DbError> {
        db.check_across()?;
        let automata = Automata::build(db)?;
        let id = NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut classifier = Classifier { db: db.clone(), automata, fast_shapes: Vec::new(), id };
        // A shape skips the walk only if no string of it can match a pattern
        // of this database, and every string of it reports a browser marker
        // or opens like a browser (so that the word rules reach the shape
        // check, which lets a whole frozen string through); its example
        // classified the slow way must agree.
        let fast_shapes = frozen::SHAPES
            .iter()
            .map(|parts| {
                let example = frozen::example(parts);
                classifier
                    .automata
                    .quiet_shape(parts, &example)
                    .is_some_and(|marker| marker || first_word_is_browser(&example))
                    && classifier.classify(&example).kind == AgentKind::Browser
            })
            .collect();
        classifier.fast_shapes = fast_shapes;
        for browser in REFERENCE_BROWSERS {
            if let AgentKind::Known(index) = classifier.classify(browser.as_bytes()).kind {
                return Err(DbError::MatchesBrowser { index, name: classifier.db.bots()[index].name.clone(), browser });
            }
        }
        Ok(classifier)
    }

    /// The classifier of the builtin database ([`BotDb::builtin`]).
    ///
    /// # Panics
    /// Only if the embedded `conf/bots.yaml` is invalid; `tests/bot_db.rs`
    /// proves it is not.
    pub fn builtin() -> Classifier {
        Classifier::new(&BotDb::builtin()).expect("embedded conf/bots.yaml compiles (tests/bot_db.rs)")
    }

    /// A number no other classifier built by this process has (a clone
    /// keeps it: it classifies alike). What [`super::Memo`] keys verdicts by.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The database this classifier was compiled from.
    pub fn db(&self) -> &BotDb {
        &self.db
    }

    /// The entry an [`AgentKind::Known`] index refers to.
    ///
    /// # Panics
    /// If `index` did not come from this classifier.
    pub fn bot(&self, index: usize) -> &Bot {
        &self.db.bots()[index]
    }

    /// Heap bytes used by the automata.
    pub fn memory_usage(&self) -> usize {
        self.automata.memory_usage()
    }

    /// Classifies a User-Agent header value (any bytes; only the first
    /// [`MAX_UA_LEN`] are examined).
    ///
    /// Cost: one forward DFA pass over at most [`MAX_UA_LEN`] bytes; per
    /// literal occurrence (at most 16) a reverse walk of at most
    /// `MAX_LITERAL_LEN` + 1 bytes; for robots (and for browsers containing a
    /// suspicious substring, such as a phone's `Java` token) a linear pass of
    /// word rules. Allocates only the `tokens` vector of a robot; a browser
    /// allocates nothing. Never panics.
    pub fn classify<'a>(&'a self, ua: &'a [u8]) -> Agent<'a> {
        let ua = &ua[..ua.len().min(MAX_UA_LEN)];
        let frozen = frozen::frozen_end(ua);
        if let Some((shape, end)) = frozen {
            if end == ua.len() && self.fast_shapes.get(shape) == Some(&true) {
                return Agent::browser();
            }
        }
        let scan = self.automata.scan(ua);
        let sig = signals(&scan, frozen.map(|(_, end)| end));
        if let Some((index, others)) = self.pick(ua, &scan) {
            let bot = &self.db.bots()[index];
            let also = self.claims(bot, &others);
            let mut from_ua = Vec::with_capacity(MAX_UA_TOKENS);
            unknown::product_tokens(ua, &sig, &mut from_ua, MAX_UA_TOKENS);
            let announced = announced_name(ua, bot, &from_ua, &scan);
            let mut tokens = Vec::with_capacity(bot.robots_tokens.len() + from_ua.len());
            tokens.extend(bot.robots_tokens.iter().map(String::as_str));
            for t in from_ua {
                if !tokens.iter().any(|have| have.eq_ignore_ascii_case(t)) {
                    tokens.push(t);
                }
            }
            return Agent {
                kind: AgentKind::Known(index),
                name: Some(&bot.name),
                announced,
                category: bot.category,
                tokens: tokens.into(),
                obeys_robots: Some(bot.obeys_robots),
                purposes: bot.purpose_set(),
                operator: Some(&bot.operator),
                also,
                ignores: super::Ignored::of(&bot.extensions),
                weak_evidence: known_weak(ua, bot),
                disguise: super::disguise::Findings::NONE,
            };
        }
        match unknown::analyze(ua, &sig) {
            None => Agent::browser(),
            Some(robot) => {
                let mut tokens = Vec::new();
                if let Some(name) = robot.name.filter(|n| !n.contains(' ')) {
                    tokens.push(name);
                }
                unknown::product_tokens(ua, &sig, &mut tokens, MAX_UA_TOKENS);
                Agent {
                    kind: AgentKind::UnknownBot,
                    name: robot.name,
                    announced: None,
                    category: Category::OtherBot,
                    tokens: tokens.into(),
                    obeys_robots: None,
                    purposes: crate::agent::Purposes::UNKNOWN,
                    operator: None,
                    also: Vec::new(),
                    ignores: super::Ignored::NONE,
                    weak_evidence: robot.weak,
                    disguise: super::disguise::Findings::NONE,
                }
            }
        }
    }

    /// The other robots a User-Agent names beside `chosen`: each entry of
    /// `others` of another operator, once. An operator's own names are one
    /// claim (`Googlebot` inside `Googlebot-Image`, `ChatGPT-Agent` beside
    /// `ChatGPT-User`): the chosen entry stands for them. Tools and HTTP
    /// libraries are no claim (`W3C-checklink/4.5 libwww-perl/5.823`,
    /// `Apache-HttpClient/4.5 (Java/11)`): they name what a robot is built
    /// with, not who it is, and since leaving such a token out costs a liar
    /// nothing, holding an honest robot to the library's group would stop
    /// no one and wrong the robot.
    fn claims(&self, chosen: &Bot, others: &Others) -> Vec<Claim<'_>> {
        let mut also: Vec<Claim<'_>> = Vec::new();
        for &entry in &others.entries[..others.n] {
            let bot = &self.db.bots()[entry as usize];
            let same_operator = bot.operator.eq_ignore_ascii_case(&chosen.operator);
            let tool = bot.category == Category::Tool;
            if same_operator || tool || also.iter().any(|c| c.index == entry as usize) {
                continue;
            }
            also.push(Claim::of(entry as usize, bot));
        }
        also
    }

    /// Whether the literal of `entry` found at `start..end` counts
    /// (issue #53): never in a device or vendor slot of the grammar (a
    /// phone may be called `CUBOT J9` or `RED 90`); and a maintained list's
    /// literal that is no robot word and no distinctive name (`RED`,
    /// `Speedy`, `Operator`, `Notion`: [`grammar::is_distinctive`]) in a
    /// browser-shaped string only where a robot names itself
    /// ([`grammar::robot_context`]), and a browser's own product name
    /// (`CocCoc`) never there.
    fn counts(
        &self,
        ua: &[u8],
        entry: usize,
        start: usize,
        end: usize,
        browser_shaped: bool,
        reading: &mut Option<grammar::Reading>,
    ) -> bool {
        if reading.get_or_insert_with(|| grammar::read(ua)).in_slot(start, end) {
            return false;
        }
        let bot = &self.db.bots()[entry];
        if !bot.listed || !browser_shaped {
            return true;
        }
        let lit = &ua[start..end];
        if grammar::is_browsers_own(lit) {
            return false;
        }
        let robot_word = std::str::from_utf8(lit).is_ok_and(unknown::is_robot_name);
        robot_word || grammar::is_distinctive(lit) || grammar::robot_context(ua, start, end)
    }

    /// The winning entry (see the module documentation), resolving each
    /// literal end found by the forward pass with the reverse DFA.
    ///
    /// Also returns the other entries named in plain text (not in a URL, not
    /// after `like`), except those whose name lies inside the winner's
    /// (`Googlebot` in `Googlebot-Image`): each is a claim of its own
    /// (issue #32: a robot's token appended to a User-Agent must not turn
    /// the request into that robot's).
    fn pick(&self, ua: &[u8], scan: &Scan) -> Option<(usize, Others)> {
        // Nearly every browser: nothing matched, and nothing to set up.
        if scan.n_ends == 0 && scan.regex.is_none() {
            return None;
        }
        let mut best = scan.regex.map(|(rank, entry)| (rank, entry, 0..0));
        let mut hits = Others::default();
        let mut spans = [(0u32, 0usize, 0usize); MAX_OTHERS];
        // The grammar is read only when a literal matched (issue #53).
        let mut reading: Option<grammar::Reading> = None;
        let browser_shaped = scan.marker || first_word_is_browser(ua);
        for &end in &scan.ends[..scan.n_ends] {
            self.automata.literals_ending_at(ua, end as usize, |lit, start| {
                if preceded_by_like(ua, start) {
                    return;
                }
                let stop = start + lit.len as usize;
                if !self.counts(ua, lit.entry as usize, start, stop, browser_shaped, &mut reading) {
                    return;
                }
                let place = if in_url(ua, start) { Place::InUrl } else { Place::Clean };
                let span = start..start + lit.len as usize;
                if place == Place::Clean && hits.n < MAX_OTHERS {
                    spans[hits.n] = (lit.entry, span.start, span.end);
                    hits.entries[hits.n] = lit.entry;
                    hits.n += 1;
                }
                let rank = rank(self.db.bots(), lit.entry, place, lit.len);
                if best.as_ref().is_none_or(|(b, _, _)| rank < *b) {
                    best = Some((rank, lit.entry as usize, span));
                }
            });
        }
        let (_, entry, won) = best?;
        let mut others = Others::default();
        if let Some((_, regex_entry)) = scan.regex.filter(|(_, e)| *e != entry) {
            others.entries[0] = regex_entry as u32;
            others.n = 1;
        }
        for &(e, start, end) in &spans[..hits.n] {
            let inside = won.start <= start && end <= won.end;
            if e as usize != entry && !inside && others.n < MAX_OTHERS {
                others.entries[others.n] = e;
                others.n += 1;
            }
        }
        Some((entry, others))
    }
}

/// At most this many other robots named in one User-Agent are claims; more
/// is no crawler's User-Agent, and the first ones already make it strict.
const MAX_OTHERS: usize = 8;

/// The other entries [`Classifier::pick`] found, without allocating.
#[derive(Default)]
struct Others {
    entries: [u32; MAX_OTHERS],
    n: usize,
}

#[cfg(test)]
mod tests {
    use super::super::vocab;
    use super::*;

    fn db() -> BotDb {
        BotDb::from_yaml(
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
    operator: Test
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
  - name: Googlebot-Image
    operator: Google
    category: search
    robots_tokens: [Googlebot-Image, Googlebot]
    ua: [Googlebot-Image]
    obeys_robots: true
  - name: curl
    operator: curl
    category: tool
    robots_tokens: [curl]
    ua: [curl]
    obeys_robots: false
  - name: Yahoo! Slurp
    operator: Yahoo
    category: search
    robots_tokens: [Slurp]
    ua: ["Yahoo! Slurp"]
    obeys_robots: true
  - name: Wildbot
    operator: Test
    category: other-bot
    robots_tokens: [Wildbot]
    ua: ["Wildbot*"]
    obeys_robots: true
  - name: RegexBot
    operator: Test
    category: other-bot
    robots_tokens: [RegexBot]
    ua_regex: 'regex[0-9]+bot'
    obeys_robots: true
"#,
        )
        .unwrap()
    }

    fn name<'a>(c: &'a Classifier, ua: &'a str) -> Option<&'a str> {
        let a = c.classify(ua.as_bytes());
        match a.kind {
            AgentKind::Known(_) => a.name,
            _ => None,
        }
    }

    #[test]
    fn whole_token_boundaries() {
        let c = Classifier::new(&db()).unwrap();
        assert_eq!(name(&c, "Mozilla/5.0 (compatible; Exabot/3.0)"), Some("Exabot"));
        assert_eq!(name(&c, "Mozilla/5.0 (compatible; Alexabot/1.0)"), None);
        assert_eq!(name(&c, "Mozilla/5.0 (compatible; Exabot-Thumbnails)"), None);
        assert_eq!(name(&c, "Mozilla/4.0 (compatible; MSIE 8.0; Windows NT 6.1; SLCC2)"), None);
        assert_eq!(name(&c, "LCC (+http://example.org)"), Some("LCC"));
        assert_eq!(name(&c, "Googlebot-Image/1.0"), Some("Googlebot-Image"));
        assert_eq!(name(&c, "googlebot"), Some("Googlebot"));
        assert_eq!(name(&c, "x GOOGLEBOT/2.1"), Some("Googlebot"));
        assert_eq!(name(&c, "Wildbot-News/2"), Some("Wildbot"));
        assert_eq!(name(&c, "Mozilla/5.0 (compatible; Yahoo! Slurp; http://x)"), Some("Yahoo! Slurp"));
        assert_eq!(name(&c, "my regex42bot"), Some("RegexBot"));
    }

    #[test]
    fn skipping_words_without_a_suspect_needle_changes_no_token() {
        // `product_tokens` runs the robot-word search only in words where the
        // automaton saw a suspect needle end; it must find what a search of
        // every word finds.
        let c = Classifier::builtin();
        let extra = [
            "Mozilla/5.0 (compatible; Zzyzxbot/1.0; +https://zzyzx.example/bot) Go-http-client/1.1",
            "QuuxCrawler/3.2 (quux@example.org) minio-go/v6 aws-sdk-go-v2 Python/3.11 foo.go",
            "Mozilla/5.0 (Java; U; en-US; samsung-gt-s5380) UCBrowser8.2.0.154/69/444/UCWEB Mobile",
            "Screaming Frog SEO Spider/19.0 GomezAgent l9scan CookieHubScan okhttp/4.9",
        ];
        let samples = c.db().bots().iter().flat_map(|b| b.samples.iter().map(String::as_str));
        let mut n = 0;
        for ua in samples.chain(extra) {
            let ua = ua.as_bytes();
            let scan = c.automata.scan(ua);
            let (mut fast, mut full) = (Vec::new(), Vec::new());
            unknown::product_tokens(ua, &signals(&scan, None), &mut fast, MAX_UA_TOKENS);
            let every_word = Signals {
                suspect: true,
                suspect_ends: None,
                marker: scan.marker,
                frozen_end: None,
                shape_hint_end: None,
            };
            unknown::product_tokens(ua, &every_word, &mut full, MAX_UA_TOKENS);
            assert_eq!(fast, full, "{}", String::from_utf8_lossy(ua));
            n += 1;
        }
        assert!(n > 200, "{n}");
    }

    #[test]
    fn non_tool_wins_over_tool() {
        let c = Classifier::new(&db()).unwrap();
        assert_eq!(name(&c, "curl/8.0 Googlebot/2.1"), Some("Googlebot"));
        assert_eq!(name(&c, "curl/8.0"), Some("curl"));
    }

    #[test]
    fn a_robot_on_an_automation_tool_is_the_robot() {
        let c = Classifier::builtin();
        let ua = b"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/120.0.0.0 ZorbBot/Java Safari/537.36";
        let a = c.classify(ua);
        assert_eq!((a.name, a.announced), (Some("HeadlessChrome"), Some("ZorbBot")));
        // A plain tool keeps its name.
        let ua = b"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/120.0.0.0 Safari/537.36";
        assert_eq!(c.classify(ua).announced, None);
    }

    #[test]
    fn a_robot_with_a_framework_for_version_is_the_robot() {
        let c = Classifier::builtin();
        let a = c.classify(b"ShopCrawler/Nutch (+https://x.example)");
        assert_eq!((a.name, a.announced), (Some("Nutch"), Some("ShopCrawler")));
        let a = c.classify(b"OrchardBot/scrapy (+https://x.example)");
        assert_eq!((a.name, a.announced), (Some("Scrapy"), Some("OrchardBot")));
        // Not a robot's name before the slash, or the framework itself: the entry.
        assert_eq!(c.classify(b"Shop/Nutch").announced, None);
        assert_eq!(c.classify(b"Nutch/2.4 (+http://nutch.apache.org/bot.html)").announced, None);
    }

    #[test]
    fn compatibility_claims_and_urls_rank_last() {
        let c = Classifier::new(&db()).unwrap();
        assert_eq!(name(&c, "FreshFeed/1.1 (+https://x.example) like Googlebot"), None);
        assert_eq!(name(&c, "SentiBot (compatible with Googlebot)"), None);
        assert_eq!(name(&c, "Exabot/1.0 (+http://x.example/googlebot.html)"), Some("Exabot"));
        assert_eq!(name(&c, "Foo (+http://x.example/googlebot.html)"), Some("Googlebot"));
    }

    #[test]
    fn tokens_most_specific_first() {
        let c = Classifier::new(&db()).unwrap();
        let a = c.classify(b"Googlebot-Image/1.0 Extra/2");
        assert_eq!(a.tokens, ["Googlebot-Image", "Googlebot", "Extra"]);
        let b = c.classify(b"Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0");
        assert_eq!(b.kind, AgentKind::Browser);
        assert!(b.tokens.is_empty() && b.name.is_none());
    }

    #[test]
    fn unknown_bot_is_other_bot() {
        let c = Classifier::new(&db()).unwrap();
        let a = c.classify(b"Mozilla/5.0 (compatible; NewCrawler/0.1; +https://new.example/bot)");
        assert_eq!(a.kind, AgentKind::UnknownBot);
        assert_eq!(a.category, Category::OtherBot);
        assert_eq!(a.name, Some("NewCrawler"));
        assert_eq!(a.tokens, ["NewCrawler"]);
        assert_eq!(c.classify(b"").kind, AgentKind::UnknownBot);
    }

    #[test]
    fn pattern_matching_a_browser_is_rejected() {
        let text = "version: 1\nbots:\n  - name: Bad\n    operator: x\n    category: seo\n    robots_tokens: [Bad]\n    ua: [AppleWebKit]\n    obeys_robots: true\n";
        let err = Classifier::new(&BotDb::from_yaml(text).unwrap()).unwrap_err();
        assert!(matches!(err, DbError::MatchesBrowser { index: 0, .. }), "{err}");
    }

    /// Issue #68: a database name that is no robot word, in a person's app
    /// (a WebView with the app's token after it, a podcast app that gives
    /// its build), is weak evidence; a robot's contact, `compatible;` or a
    /// robot word keeps it strong, and so does the same name elsewhere.
    #[test]
    fn issue_68_a_known_name_in_a_persons_app_is_weak() {
        let c = Classifier::builtin();
        let webview = "Mozilla/5.0 (Linux; Android 13; SM-A536B Build/TP1A.220624.014; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/120.0.6099.144 Mobile Safari/537.36";
        for ua in [format!("{webview} Seekr/4.2"), "PocketCasts/7.57 build 9312/Android 29".to_owned()] {
            let a = c.classify(ua.as_bytes());
            assert!(a.is_known() && a.weak_evidence, "{ua}: {a:?}");
        }
        for ua in [
            format!("{webview} Seekr/4.2 (+https://seekr.example/bot)"),
            "Seekr/4.2".to_owned(),
            "PocketCasts/1.0 (+http://pocketcasts.com/)".to_owned(),
            "Mozilla/5.0 (compatible; SeekportBot; +https://bot.seekport.com)".to_owned(),
            format!("{webview} (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"),
        ] {
            let a = c.classify(ua.as_bytes());
            assert!(a.is_known() && !a.weak_evidence, "{ua}: {a:?}");
        }
    }

    #[test]
    fn fast_path_agrees_with_word_rules() {
        // The automaton's signals must give the same answer as the slow
        // substring checks they stand for.
        let c = Classifier::new(&db()).unwrap();
        for ua in [
            "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36",
            "Nokia3360/1.2.1 (1.04)",
            "TLSProber/0.8",
            "Mozilla/5.0 (Java; U; Id; lg-t300) UCBrowser8.2.1.144/69/444/UCWEB Mobile UNTRUSTED/1.0",
            "python-requests/2.0",
            "foo@example.com",
        ] {
            let b = ua.as_bytes();
            let scan = c.automata.scan(b);
            assert_eq!(scan.n_suspect > 0, vocab::has_suspect(b), "{ua}");
            assert_eq!(scan.marker, vocab::has_marker(b), "{ua}");
        }
    }

    /// UA fragments rich in needles, boundaries and odd bytes.
    const FRAGMENTS: &[&str] = include!("../../tests/data/agent/ua_fragments.rs");

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]

        /// The automaton's signals (suspect needle positions, markers) must
        /// give exactly the answer of the slow substring checks.
        #[test]
        fn fast_path_equals_slow_path(parts in proptest::collection::vec(0..FRAGMENTS.len(), 0..30)) {
            static C: std::sync::OnceLock<Classifier> = std::sync::OnceLock::new();
            let c = C.get_or_init(|| Classifier::new(&db()).unwrap());
            let ua: String = parts.iter().map(|&i| FRAGMENTS[i]).collect();
            let b = ua.as_bytes();
            let scan = c.automata.scan(b);
            proptest::prop_assert_eq!(scan.n_suspect > 0, vocab::has_suspect(b));
            proptest::prop_assert_eq!(scan.marker, vocab::has_marker(b));
            let fast = unknown::analyze(b, &signals(&scan, frozen::frozen_end(b).map(|(_, end)| end)));
            let slow = unknown::analyze(b, &Signals::of(b));
            proptest::prop_assert_eq!(fast, slow, "{}", ua);
        }
    }

    #[test]
    fn long_and_odd_input() {
        let c = Classifier::new(&db()).unwrap();
        let mut big = vec![b'A'; 100_000];
        big.extend_from_slice(b" Googlebot");
        assert_eq!(c.classify(&big).kind, AgentKind::UnknownBot); // beyond the cap
        let weird = [0u8, 0xff, 0xfe, b'(', b')', b';', 0x80, b'G'];
        let _ = c.classify(&weird);
    }

    #[test]
    fn issue_32_every_robot_of_another_operator_a_user_agent_names_is_a_claim() {
        let c = Classifier::builtin();
        let also =
            |ua: &str| -> Vec<String> { c.classify(ua.as_bytes()).also.iter().map(|a| a.name.to_owned()).collect() };
        let names = |ua: &str| {
            let a = c.classify(ua.as_bytes());
            let mut all: Vec<String> = a.also.iter().map(|x| x.name.to_owned()).collect();
            all.extend(a.name.map(str::to_owned));
            all.sort();
            all
        };
        assert_eq!(names("Mozilla/5.0 (compatible; GPTBot/1.2) Perplexity-User/1.0"), ["GPTBot", "Perplexity-User"]);
        assert_eq!(
            names("Mozilla/5.0 (compatible; Claude-User/1.0) ChatGPT-User/1.0 GPTBot/1.2").len(),
            2,
            "OpenAI once"
        );
        // One claim each: an operator's own names, a name after `like`, in a URL, a library.
        assert!(also("Googlebot-Image/1.0").is_empty());
        assert!(also("TelegramBot (like TwitterBot)").is_empty());
        assert!(also("Mozilla/5.0 (compatible; GPTBot/1.2; +https://openai.com/gptbot)").is_empty());
        assert!(also("W3C-checklink/4.5 [4.154] libwww-perl/5.823").is_empty());
        assert!(also("Apache-HttpClient/4.5.7 (Java/11.0.3)").is_empty());
        assert!(also("Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0").is_empty());
    }

    #[test]
    fn a_whole_frozen_string_answers_as_the_walk_would() {
        let c = Classifier::builtin();
        assert!(
            c.fast_shapes.iter().all(|&fast| fast),
            "the builtin database lets every frozen shape skip the walk: {:?}",
            c.fast_shapes
        );
        let slow = Classifier { fast_shapes: Vec::new(), ..c.clone() };
        let versions = ["", "1", "124.0.0.0", "17_4_1", "9.", "..", "0_0.0"];
        let tails = ["", " ", " Edg/124.0.0.0", " owl.example.org", "bot", ".x", " (compatible; Zeta)"];
        let mut n = 0;
        for parts in frozen::SHAPES {
            for v in versions {
                for tail in tails {
                    let mut ua = Vec::new();
                    for part in *parts {
                        match part {
                            frozen::Part::Lit(lit) => ua.extend_from_slice(lit.text()),
                            frozen::Part::Version => ua.extend_from_slice(v.as_bytes()),
                        }
                    }
                    ua.extend_from_slice(tail.as_bytes());
                    for ua in [ua.clone(), ua.to_ascii_uppercase()] {
                        assert_eq!(c.classify(&ua), slow.classify(&ua), "{}", String::from_utf8_lossy(&ua));
                        n += usize::from(frozen::frozen_end(&ua).is_some_and(|(_, end)| end == ua.len()));
                    }
                }
            }
        }
        assert!(n > 100, "{n} strings took the fast answer");
    }

    #[test]
    fn a_pattern_that_matches_inside_a_frozen_string_keeps_the_walk() {
        let db = BotDb::from_yaml(
            r#"
version: 1
bots:
  - name: Chrome124
    operator: Test
    category: other-bot
    robots_tokens: [Chrome124]
    ua_regex: 'chrome/99\.1\.2\.3 safari'
    obeys_robots: true
"#,
        )
        .unwrap();
        let c = Classifier::new(&db).unwrap();
        let windows = frozen::SHAPES
            .iter()
            .position(|p| frozen::example(p).starts_with(b"mozilla/5.0 (windows nt 10.0; win64; x64) applewebkit"))
            .unwrap();
        assert!(!c.fast_shapes[windows]);
        let ua = b"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/99.1.2.3 Safari/537.36";
        assert_eq!(c.classify(ua).name, Some("Chrome124"));
        let firefox = b"Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0";
        assert!(!c.classify(firefox).is_bot());
    }
}
