//! What to do with one request: a pure function of the request's facts, the
//! site's rules (policy and compiled robots.txt) and the rate state.
//!
//! [`decide`] returns one [`Outcome`]: pass, serve a file, a violation (with
//! its action), or limited. The proxy only translates it into a response, so
//! every new reason to refuse (identity, traps, bans) is a new outcome here,
//! not a branch in the proxy. It never fails: the core returns data.
//!
//! [`judge`] is the robots.txt part alone (group, rule, action, pace), for
//! callers that keep no rate state.

use std::net::IpAddr;
use std::time::{Duration, Instant};

mod action;

pub use self::action::{Action, PolicyConfig, DEFAULT_BLOCK_BODY, DEFAULT_NOINDEX};
use crate::agent::{Agent, Category, Classifier};
use crate::robots::{ext::VisitTime, RobotsTxt, Rule, Selection};
use crate::state::{RateKey, RateState};

/// The facts of one request, gathered once by the proxy from what the client
/// sent (all of it attacker-controlled).
#[derive(Debug, Clone, Copy)]
pub struct RequestFacts<'a> {
    /// A GET or HEAD (only those are answered with robots.txt and humans.txt).
    pub fetch: bool,
    /// The normalised path and query that is judged (and forwarded).
    pub target: &'a [u8],
    /// The User-Agent header (empty when absent).
    pub user_agent: &'a [u8],
    /// The client address, after trusted proxies.
    pub client: Option<IpAddr>,
}

/// What a site brings to a decision.
#[derive(Debug, Clone, Copy)]
pub struct SiteRules<'a> {
    /// The site's name (rate keys, logs).
    pub name: &'a str,
    /// Its policy.
    pub policy: &'a PolicyConfig,
    /// Its compiled robots.txt; `None`: nothing is enforced and `/robots.txt`
    /// goes to the origin.
    pub robots: Option<&'a RobotsTxt>,
    /// Whether robotgate serves its `/humans.txt`.
    pub humans: bool,
}

/// The clock a decision reads: monotonic for rates, wall time for Visit-time.
/// Read only when a bot's group has a pace or hours, so most requests never
/// ask the system for the time.
#[derive(Debug, Clone, Copy)]
pub enum Clock {
    /// The system's clocks.
    System,
    /// A fixed time (tests, replays of logs).
    Fixed {
        /// Now, monotonic.
        instant: Instant,
        /// Now, seconds since the Unix epoch (UTC).
        unix_secs: u64,
    },
}

impl Clock {
    /// Now, monotonic.
    pub fn instant(self) -> Instant {
        match self {
            Clock::System => Instant::now(),
            Clock::Fixed { instant, .. } => instant,
        }
    }

    /// Now, seconds since the Unix epoch (UTC).
    pub fn unix_secs(self) -> u64 {
        match self {
            Clock::System => {
                std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
            }
            Clock::Fixed { unix_secs, .. } => unix_secs,
        }
    }
}

/// A file robotgate answers with itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SiteFile {
    /// `/robots.txt`.
    Robots,
    /// `/humans.txt`.
    Humans,
}

impl SiteFile {
    /// `robots.txt` or `humans.txt` (metrics label).
    pub fn as_str(self) -> &'static str {
        match self {
            SiteFile::Robots => "robots.txt",
            SiteFile::Humans => "humans.txt",
        }
    }
}

/// A request that breaks robots.txt.
#[derive(Debug, Clone, Copy)]
pub struct Violation<'a> {
    /// Human name of the group the bot obeys.
    pub group: Option<&'a str>,
    /// The rule that forbids the request.
    pub rule: &'a Rule,
    /// What to do about it.
    pub action: &'a Action,
}

/// A request robots.txt allows, but too soon or outside the bot's hours.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limited<'a> {
    /// Human name of the group the bot obeys.
    pub group: Option<&'a str>,
    /// `crawl-delay`, `request-rate` or `visit-time`.
    pub directive: &'static str,
    /// Its line in robots.txt.
    pub line: u32,
    /// How long until the request would be admitted.
    pub wait: Duration,
    /// Answer 429; `false` when the bot's action is `log` (record, then pass).
    pub enforce: bool,
}

/// What happens to the request.
#[derive(Debug, Clone, Copy)]
pub enum Outcome<'a> {
    /// Forward it to the origin untouched.
    Pass,
    /// Answer with one of the site's files.
    File(SiteFile),
    /// It breaks robots.txt: do what the action says.
    Violation(Violation<'a>),
    /// Allowed, but not now.
    Limited(Limited<'a>),
}

/// A decision: who asked (when it mattered) and what happens.
///
/// The outcome borrows only from the site and the classifier (`'s`), never
/// from the request (`'r`), so a caller can keep it after the request's
/// bytes are gone.
#[derive(Debug, Clone)]
pub struct Decision<'s, 'r> {
    /// The classification; `None` when the request was decided before
    /// classifying (a served file, a site that enforces nothing).
    pub agent: Option<Agent<'r>>,
    /// What happens.
    pub outcome: Outcome<'s>,
}

/// Decide a request.
///
/// Order: the site's own files first (never blocked or limited), then
/// nothing to enforce without a robots.txt, then the User-Agent (browsers
/// pass: robots.txt binds robots, not people), then the bot's group and the
/// matching rule, then its pace and hours.
///
/// Cost: one classification, one group lookup and one matcher query; no
/// allocation for browsers, at most the agent's token vector for robots, and
/// one short lock in the rate state for a group with a pace.
pub fn decide<'s: 'r, 'r>(
    facts: &RequestFacts<'r>,
    site: &SiteRules<'s>,
    classifier: &'s Classifier,
    rates: &dyn RateState,
    clock: Clock,
) -> Decision<'s, 'r> {
    decide_with(facts, site, |ua| classifier.classify(ua), rates, clock)
}

/// [`decide`] with the classification supplied by the caller: `classify`
/// must return what [`Classifier::classify`] returns for the User-Agent it
/// is given. For a caller that remembers verdicts (the proxy remembers the
/// last browser per thread); the order of the decision stays here.
pub fn decide_with<'s: 'r, 'r>(
    facts: &RequestFacts<'r>,
    site: &SiteRules<'s>,
    classify: impl FnOnce(&'r [u8]) -> Agent<'r>,
    rates: &dyn RateState,
    clock: Clock,
) -> Decision<'s, 'r> {
    let path = facts.target.split(|&b| b == b'?').next().unwrap_or_default();
    if facts.fetch && path == b"/robots.txt" {
        let outcome = if site.robots.is_some() { Outcome::File(SiteFile::Robots) } else { Outcome::Pass };
        return Decision { agent: None, outcome };
    }
    if facts.fetch && site.humans && path == b"/humans.txt" {
        return Decision { agent: None, outcome: Outcome::File(SiteFile::Humans) };
    }
    let Some(robots) = site.robots else {
        return Decision { agent: None, outcome: Outcome::Pass };
    };
    let agent = classify(facts.user_agent);
    if !agent.is_bot() {
        return Decision { agent: Some(agent), outcome: Outcome::Pass };
    }
    let who = Requester { is_bot: true, name: agent.name, category: agent.category, tokens: &agent.tokens };
    let j = judge(site.policy, robots, &who, facts.target);
    let outcome = match (j.rule, j.action) {
        (Some(rule), Some(action)) => Outcome::Violation(Violation { group: j.group, rule, action }),
        _ => match pace(&j, site, &agent, facts.client, rates, clock) {
            Some(limited) => Outcome::Limited(limited),
            None => Outcome::Pass,
        },
    };
    Decision { agent: Some(agent), outcome }
}

/// Hold an allowed bot to its group's hours, then its pace.
fn pace<'s>(
    j: &Judgement<'s>,
    site: &SiteRules<'s>,
    agent: &Agent<'_>,
    client: Option<IpAddr>,
    rates: &dyn RateState,
    clock: Clock,
) -> Option<Limited<'s>> {
    let enforce = site.policy.action_for(agent.name, agent.category) != &Action::Log;
    let limited = |directive, line, wait| Limited { group: j.group, directive, line, wait, enforce };
    if let Some(w) = j.window {
        let wait = w.window.secs_until_open((clock.unix_secs() % 86_400) as u32);
        if wait > 0 {
            return Some(limited("visit-time", w.line, Duration::from_secs(u64::from(wait))));
        }
    }
    let (rate, client) = (j.rate?, client?);
    let bot = agent.name.or_else(|| agent.tokens.first().copied()).unwrap_or("");
    let key = RateKey { client, site: site.name, bot };
    rates.admit(&key, rate.interval, clock.instant()).err().map(|wait| limited(rate.directive, rate.line, wait))
}

/// The facts about the requester that policy needs.
#[derive(Debug, Clone, Copy)]
pub struct Requester<'a, S: AsRef<str>> {
    /// Whether it is a robot (browsers are never held to robots.txt).
    pub is_bot: bool,
    /// Canonical bot name, if known.
    pub name: Option<&'a str>,
    /// Category.
    pub category: Category,
    /// Candidate robots.txt tokens, most specific first.
    pub tokens: &'a [S],
}

/// A rate the bot's group asks for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate {
    /// Minimum interval between two requests.
    pub interval: Duration,
    /// Which record: `crawl-delay` or `request-rate`.
    pub directive: &'static str,
    /// Its line in robots.txt.
    pub line: u32,
}

/// A time window the bot's group asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// The UTC window.
    pub window: VisitTime,
    /// Its line in robots.txt.
    pub line: u32,
}

/// The robots.txt verdict for one requester and target.
#[derive(Debug, Clone)]
pub struct Judgement<'a> {
    /// The group chosen (`*`, a token), when robots.txt applies to the requester.
    pub selection: Option<Selection>,
    /// Human name of the group.
    pub group: Option<&'a str>,
    /// The rule that forbids the request, when it is a violation.
    pub rule: Option<&'a Rule>,
    /// What to do about the violation; `None` when the request is allowed.
    pub action: Option<&'a Action>,
    /// Rate limit to enforce (when the request is allowed and enforcement is on).
    pub rate: Option<Rate>,
    /// Visit-time window to enforce (likewise).
    pub window: Option<Window>,
}

impl Judgement<'_> {
    /// Whether the request breaks robots.txt.
    pub fn is_violation(&self) -> bool {
        self.rule.is_some()
    }

    /// A decision that lets the request through untouched.
    pub fn pass() -> Judgement<'static> {
        Judgement { selection: None, group: None, rule: None, action: None, rate: None, window: None }
    }
}

static LOG_ONLY: Action = Action::Log;

impl PolicyConfig {
    /// The action for a violation by this requester: a per-bot override, else a
    /// per-category override, else the default. `ai-user` fetchers (a person
    /// asked for the page) are only logged unless `enforce_ai_user` is set,
    /// since their operators say robots.txt does not bind them.
    pub fn action_for(&self, name: Option<&str>, category: Category) -> &Action {
        if let Some(name) = name {
            if let Some((_, a)) = self.bots.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)) {
                return a;
            }
        }
        if category == Category::AiUser && !self.enforce_ai_user {
            return &LOG_ONLY;
        }
        self.categories.iter().find(|(c, _)| *c == category).map_or(&self.default, |(_, a)| a)
    }
}

/// Judge a request by robots.txt alone: which group the requester obeys,
/// whether the target breaks it, what to do, and which pace and hours apply.
///
/// Cost: one group lookup (a hash probe per candidate token) and one matcher
/// query; no allocation unless the path needs percent-normalising.
pub fn judge<'a, S: AsRef<str>>(
    policy: &'a PolicyConfig,
    robots: &'a RobotsTxt,
    who: &Requester<'_, S>,
    path_and_query: &[u8],
) -> Judgement<'a> {
    // robots.txt binds robots, not people.
    if !who.is_bot || who.category == Category::Browser {
        return Judgement::pass();
    }
    let selection = robots.select(who.tokens);
    let group = robots.selection_name(&selection);
    let verdict = robots.check(&selection, path_and_query);
    if !verdict.allowed {
        return Judgement {
            selection: Some(selection),
            group,
            rule: verdict.rule,
            action: Some(policy.action_for(who.name, who.category)),
            rate: None,
            window: None,
        };
    }
    let rate = if policy.rate_limit { rate_of(robots, &selection) } else { None };
    let window = if policy.visit_time {
        robots.visit_time(&selection).map(|v| Window { window: v.value, line: v.line })
    } else {
        None
    };
    Judgement { selection: Some(selection), group, rule: None, action: None, rate, window }
}

/// The stricter of the group's Crawl-delay and Request-rate.
fn rate_of(robots: &RobotsTxt, selection: &Selection) -> Option<Rate> {
    let delay = robots.crawl_delay(selection).filter(|d| d.value > 0.0).map(|d| Rate {
        interval: Duration::from_secs_f64(d.value),
        directive: "crawl-delay",
        line: d.line,
    });
    let rate = robots.request_rate(selection).map(|r| Rate {
        interval: Duration::from_secs_f64(r.value.interval_secs()),
        directive: "request-rate",
        line: r.line,
    });
    match (delay, rate) {
        (Some(a), Some(b)) => Some(if a.interval >= b.interval { a } else { b }),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROBOTS: &[u8] = b"User-agent: *\nDisallow: /private\n\nUser-agent: Googlebot\nDisallow: /nogoogle\n\nUser-agent: bingbot\nCrawl-delay: 5\nRequest-rate: 1/10s\nVisit-time: 0100-0500\n";

    fn bot<'a>(name: &'a str, category: Category, tokens: &'a [&'a str]) -> Requester<'a, &'a str> {
        Requester { is_bot: true, name: Some(name), category, tokens }
    }

    #[test]
    fn browsers_always_pass() {
        let robots = RobotsTxt::compile(ROBOTS);
        let p = PolicyConfig::default();
        let who: Requester<&str> = Requester { is_bot: false, name: None, category: Category::Browser, tokens: &[] };
        let d = judge(&p, &robots, &who, b"/private/x");
        assert!(!d.is_violation() && d.action.is_none() && d.selection.is_none());
    }

    #[test]
    fn violation_names_rule_group_and_action() {
        let robots = RobotsTxt::compile(ROBOTS);
        let p = PolicyConfig::default();
        let d = judge(&p, &robots, &bot("GPTBot", Category::AiCrawler, &["GPTBot"]), b"/private/x");
        assert!(d.is_violation());
        assert_eq!(d.rule.unwrap().line, 2);
        assert_eq!(d.group, Some("*"));
        assert_eq!(d.action.unwrap().name(), "block");
        // Googlebot-Image falls back to the Googlebot group, which allows /private.
        let d = judge(
            &p,
            &robots,
            &bot("Googlebot-Image", Category::Search, &["Googlebot-Image", "Googlebot"]),
            b"/private/x",
        );
        assert!(!d.is_violation());
        assert_eq!(d.group, Some("Googlebot"));
    }

    #[test]
    fn ai_user_fetchers_are_logged_unless_enforced() {
        let robots = RobotsTxt::compile(ROBOTS);
        let mut p = PolicyConfig::default();
        let who = bot("ChatGPT-User", Category::AiUser, &["ChatGPT-User"]);
        assert_eq!(judge(&p, &robots, &who, b"/private").action, Some(&Action::Log));
        p.enforce_ai_user = true;
        assert_eq!(judge(&p, &robots, &who, b"/private").action.unwrap().name(), "block");
    }

    #[test]
    fn overrides_bot_before_category_before_default() {
        let robots = RobotsTxt::compile(ROBOTS);
        let p = PolicyConfig {
            categories: vec![(Category::Seo, Action::Noindex { value: "noindex".into() })],
            bots: vec![("ahrefsbot".into(), Action::Log)],
            ..PolicyConfig::default()
        };
        assert_eq!(p.action_for(Some("AhrefsBot"), Category::Seo), &Action::Log);
        assert_eq!(p.action_for(Some("SemrushBot"), Category::Seo).name(), "noindex");
        assert_eq!(p.action_for(Some("GPTBot"), Category::AiCrawler).name(), "block");
        let d = judge(&p, &robots, &bot("SemrushBot", Category::Seo, &["SemrushBot"]), b"/private");
        assert_eq!(d.action.unwrap().name(), "noindex");
    }

    #[test]
    fn rates_and_windows_come_from_the_group() {
        let robots = RobotsTxt::compile(ROBOTS);
        let mut p = PolicyConfig::default();
        let d = judge(&p, &robots, &bot("bingbot", Category::Search, &["bingbot"]), b"/page");
        let rate = d.rate.unwrap();
        assert_eq!((rate.interval, rate.directive, rate.line), (Duration::from_secs(10), "request-rate", 9));
        assert_eq!(d.window.unwrap().line, 10);
        p.rate_limit = false;
        p.visit_time = false;
        let d = judge(&p, &robots, &bot("bingbot", Category::Search, &["bingbot"]), b"/page");
        assert!(d.rate.is_none() && d.window.is_none());
    }

    const GPTBOT: &[u8] =
        b"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)";
    const BING: &[u8] = b"Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)";
    const FIREFOX: &[u8] = b"Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0";

    fn facts<'a>(target: &'a [u8], ua: &'a [u8]) -> RequestFacts<'a> {
        RequestFacts { fetch: true, target, user_agent: ua, client: Some("192.0.2.1".parse().unwrap()) }
    }

    fn outcome_name(o: &Outcome<'_>) -> &'static str {
        match o {
            Outcome::Pass => "pass",
            Outcome::File(SiteFile::Robots) => "robots.txt",
            Outcome::File(SiteFile::Humans) => "humans.txt",
            Outcome::Violation(_) => "violation",
            Outcome::Limited(_) => "limited",
        }
    }

    #[test]
    fn decide_gives_one_outcome_per_request() {
        let robots = RobotsTxt::compile(ROBOTS);
        let policy = PolicyConfig::default();
        let site = SiteRules { name: "s", policy: &policy, robots: Some(&robots), humans: true };
        let c = Classifier::builtin();
        let rates = crate::state::RateTable::new(64);
        let clock = Clock::Fixed { instant: Instant::now(), unix_secs: 2 * 3600 }; // 02:00 UTC, inside bingbot's hours
        let d = |target: &'static [u8], ua: &'static [u8]| {
            let d = decide(&facts(target, ua), &site, &c, &rates, clock);
            (outcome_name(&d.outcome), d.agent.map(|a| a.category))
        };
        assert_eq!(d(b"/robots.txt", GPTBOT), ("robots.txt", None), "files are served before anything else");
        assert_eq!(d(b"/robots.txt?x=1", GPTBOT), ("robots.txt", None));
        assert_eq!(d(b"/humans.txt", FIREFOX), ("humans.txt", None));
        assert_eq!(d(b"/private/a", FIREFOX), ("pass", Some(Category::Browser)), "people are not bound");
        assert_eq!(d(b"/private/a", GPTBOT), ("violation", Some(Category::AiCrawler)));
        assert_eq!(d(b"/public", GPTBOT), ("pass", Some(Category::AiCrawler)));
        // bingbot's group asks for one request every 10 s: the second is limited.
        assert_eq!(d(b"/page", BING).0, "pass");
        assert_eq!(d(b"/page", BING).0, "limited");
        let no_robots = SiteRules { robots: None, humans: false, ..site };
        let d = decide(&facts(b"/robots.txt", GPTBOT), &no_robots, &c, &rates, clock);
        assert_eq!(outcome_name(&d.outcome), "pass", "no robots.txt: the origin's /robots.txt, nothing enforced");
        let d = decide(&facts(b"/humans.txt", GPTBOT), &no_robots, &c, &rates, clock);
        assert_eq!(outcome_name(&d.outcome), "pass");
    }

    #[test]
    fn a_violation_names_its_rule_and_action_and_a_limit_its_directive() {
        let robots = RobotsTxt::compile(ROBOTS);
        let policy = PolicyConfig::default();
        let c = Classifier::builtin();
        let rates = crate::state::RateTable::new(64);
        let clock = Clock::Fixed { instant: Instant::now(), unix_secs: 12 * 3600 }; // noon: outside 01:00-05:00
        let site = SiteRules { name: "s", policy: &policy, robots: Some(&robots), humans: false };
        match decide(&facts(b"/private/x", GPTBOT), &site, &c, &rates, clock).outcome {
            Outcome::Violation(v) => {
                assert_eq!((v.rule.line, v.group, v.action.name()), (2, Some("*"), "block"));
            }
            o => panic!("{o:?}"),
        }
        match decide(&facts(b"/page", BING), &site, &c, &rates, clock).outcome {
            Outcome::Limited(l) => {
                assert_eq!((l.directive, l.line, l.enforce), ("visit-time", 10, true));
                assert_eq!(l.wait, Duration::from_secs(13 * 3600));
            }
            o => panic!("{o:?}"),
        }
        // A bot whose action is `log` is recorded, not refused.
        let mut logged = policy.clone();
        logged.bots.push(("bingbot".into(), Action::Log));
        let site = SiteRules { policy: &logged, ..site };
        match decide(&facts(b"/page", BING), &site, &c, &rates, clock).outcome {
            Outcome::Limited(l) => assert!(!l.enforce),
            o => panic!("{o:?}"),
        }
    }
}
