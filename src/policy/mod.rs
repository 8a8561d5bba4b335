//! What to do with one request: a pure function of the request's facts, the
//! site's rules (policy and compiled robots.txt) and the state (rates, bans,
//! robots.txt reads).
//!
//! [`decide_step`] gives one [`Outcome`] (pass, a served file, a violation, a
//! limit, a trap hit, a ban, a spoofed claim, a refused purpose, a stale
//! robots.txt), or stops where only a lookup or the shared store can tell
//! ([`Step`]); [`crate::pipeline`] drives it for every host. Each outcome
//! maps to one [`Enforcement`]: every new reason to refuse is a new outcome
//! here, not a branch in a host. It never fails: the core returns data.
//!
//! [`judge`] is the robots.txt part alone (group, rule, action, pace), for
//! callers that keep no rate state.

use std::net::IpAddr;
use std::time::Duration;

mod action;
mod claims;
mod decide;
mod enforce;
mod judge;
mod pace;
mod preference;
mod record;
mod stale;
pub mod unsupported;

pub use self::action::{
    Action, Disguised, PolicyConfig, TlsEvidence, Unsupported, WeakEvidence, DEFAULT_BLOCK_BODY, DEFAULT_NOINDEX,
    DEFAULT_SPOOFED_BODY,
};
pub use self::enforce::Enforcement;
use self::judge::LOG_ONLY;
pub use self::judge::{judge, Judgement, Rate, Requester, Window};
pub use self::preference::{in_force, usage_header, PreferenceMode, Refused};
pub use self::record::{Requested, Tally, TallyFamily, TallyValues};
pub use self::stale::{ChangeAction, EarlierRobots, RobotsChange, Stale, MAX_GRACE};
use crate::agent::Agent;
use crate::identity::Identity;
use crate::net::client_key;
use crate::robots::{RobotsTxt, Rule};
use crate::state::{SeenKey, State};
pub use crate::time::Clock;

/// The facts of one request, gathered once by the pipeline
/// ([`crate::pipeline::Pipeline::new`]) from what the client sent (all of it
/// attacker-controlled).
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
    /// The client address sent most of the last minute's traffic: likely a
    /// proxy's, so a trap hit from it bans no one.
    pub crowd: bool,
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
    /// Its traps, if any.
    pub traps: Option<&'a Traps>,
    /// When each trap path is armed (Unix seconds), parallel to `traps.paths`.
    pub armed_at: &'a [u64],
    /// Versions of its robots.txt served before the current one ([`stale`]).
    pub earlier: &'a [EarlierRobots],
}

impl<'a> SiteRules<'a> {
    /// A site with only a name, a policy and a robots.txt: no humans.txt,
    /// no traps, no earlier versions (tests, benchmarks; a live site comes
    /// from `load::LiveSite::rules`).
    pub fn new(name: &'a str, policy: &'a PolicyConfig, robots: Option<&'a RobotsTxt>) -> SiteRules<'a> {
        SiteRules { name, policy, robots, humans: false, traps: None, armed_at: &[], earlier: &[] }
    }

    /// The version ([`RobotsTxt::hash`]) of the robots.txt served at Unix
    /// second `unix`: the earlier version then in force (the first one
    /// replaced after it), else the current one. The proxy asks at "now",
    /// which is the current version; replay at a log line's time, which
    /// tells it which version a crawler fetched then.
    pub fn version_at(&self, unix: u64) -> Option<u64> {
        let current = self.robots?.hash();
        let then = self.earlier.iter().filter(|e| e.replaced_at > unix).min_by_key(|e| e.replaced_at);
        Some(then.map_or(current, |e| e.hash))
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
    /// Answer 429; `false` when the bot's action is `log`, or when its
    /// operator says it ignores the directive and
    /// `policy.unsupported_directives` is not `enforce` (then pass).
    pub enforce: bool,
    /// The robot's operator documents that it ignores `directive` (the bot
    /// database's `extensions`): its record says `unsupported-directive`,
    /// never a violation.
    pub unsupported: bool,
    /// Whether the request has a record: `false` for an unsupported
    /// directive under `unsupported_directives: pass` (the default), which
    /// only replay counts.
    pub recorded: bool,
    /// The group's interval between two requests (Crawl-delay, Request-rate);
    /// `None` for Visit-time.
    pub interval: Option<Duration>,
}

/// A fetch of a trap path.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TrapHit<'a> {
    /// The trap path hit.
    pub path: &'a str,
    /// Whether the client is now banned (the trap was armed and the client
    /// is no verified crawler); otherwise the hit is only recorded.
    pub banned: bool,
    /// `banned`, `not-armed`, `verified-crawler` or `crowd-address`.
    pub why: &'static str,
    /// What this request gets, when `enforce`: the traps' action for a
    /// client now banned; the site's action for the robot, for a verified
    /// crawler that fetched an armed trap (a violation of the trap's line
    /// like any other, never a ban).
    pub action: &'a Action,
    /// Whether `action` applies to this request; otherwise the hit is only
    /// recorded (a trap not yet armed).
    pub enforce: bool,
}

/// A client whose User-Agent names a robot it is not (directive
/// `spoofed-identity`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spoofed<'a> {
    /// What it gets (`policy.spoofed`).
    pub action: &'a Action,
}

/// A request from a banned client.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Banned<'a> {
    /// How long the ban still runs.
    pub remaining: Duration,
    /// What the client gets.
    pub action: &'a Action,
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
    /// A trap path was fetched.
    Trap(TrapHit<'a>),
    /// The client is banned.
    Banned(Banned<'a>),
    /// The client is not the robot it claims to be.
    Spoofed(Spoofed<'a>),
    /// robots.txt allows it, but the site's usage preferences refuse every
    /// purpose the robot fetches for.
    Refused(Refused<'a>),
    /// Only the current robots.txt disallows it, not the crawler's copy.
    Stale(Stale<'a>),
}

impl Outcome<'_> {
    /// A short name of the outcome (tests, logs): `pass`, `robots.txt`,
    /// `humans.txt`, `violation`, `limited`, `trap`, `banned`, `spoofed`,
    /// `refused`, `stale-robots`.
    pub fn name(&self) -> &'static str {
        match self {
            Outcome::Pass => "pass",
            Outcome::File(f) => f.as_str(),
            Outcome::Violation(_) => "violation",
            Outcome::Limited(_) => "limited",
            Outcome::Trap(_) => "trap",
            Outcome::Banned(_) => "banned",
            Outcome::Spoofed(_) => "spoofed",
            Outcome::Refused(_) => "refused",
            Outcome::Stale(_) => "stale-robots",
        }
    }
}

/// A decision: who asked (when it mattered) and what happens. Every
/// decision is final: what is still to be found out (a lookup, the shared
/// store's answer) is a [`Step`], never a state of this.
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
    /// For a violation, limit, trap or ban: whether this bot fetched the
    /// site's robots.txt in the last [`ROBOTS_READ_WINDOW`].
    pub robots_seen: Option<bool>,
    /// Whether the client is the robot it claims to be (never
    /// [`Identity::Pending`]).
    pub identity: Identity,
    /// A usage preference was in force for the path, and the robot's purposes
    /// are not documented (metric `preference-unknown`).
    pub preference_unknown: bool,
}

pub use self::decide::{decide, decide_step, Asked, Paced, Rates, Step};
pub use crate::state::ROBOTS_READ_WINDOW;
/// The keys a robots.txt read of this requester is remembered under, and
/// looked up by ([`SeenKey`], issue #39): always the client's own (its ban
/// key, and the database robot it names); and, for a robot verified to be
/// who it says, the robot's name, which crawlers that read robots.txt from
/// one address and crawl from others need.
pub(super) fn seen_keys<'a>(
    site: &SiteRules<'a>,
    agent: &'a Agent<'_>,
    facts: &RequestFacts<'a>,
    identity: Identity,
) -> [Option<SeenKey<'a>>; 2] {
    let name = agent.name.filter(|_| agent.is_known());
    let client = facts.client.map(|client| SeenKey::Client {
        site: site.name,
        client: client_key(client, site.policy.ipv6_prefix),
        robot: name.unwrap_or(""),
    });
    let bot = name.filter(|_| identity == Identity::Verified).map(|name| SeenKey::Bot { site: site.name, name });
    [client, bot]
}

/// The last robots.txt read that counts for this requester: the newer of
/// its keys' ([`seen_keys`]).
pub(super) fn last_read(
    state: &dyn State,
    site: &SiteRules<'_>,
    agent: &Agent<'_>,
    facts: &RequestFacts<'_>,
    identity: Identity,
) -> Option<(std::time::Instant, u64)> {
    seen_keys(site, agent, facts, identity)
        .into_iter()
        .flatten()
        .filter_map(|k| state.robots_read(&k))
        .max_by_key(|r| r.0)
}

fn read_robots(
    state: &dyn State,
    site: &SiteRules<'_>,
    agent: &Agent<'_>,
    facts: &RequestFacts<'_>,
    identity: Identity,
    clock: Clock,
) -> bool {
    read_within_window(last_read(state, site, agent, facts, identity), clock)
}

/// Whether a read ([`last_read`]) is young enough to count.
fn read_within_window(read: Option<(std::time::Instant, u64)>, clock: Clock) -> bool {
    read.is_some_and(|(at, _)| clock.instant().saturating_duration_since(at) <= ROBOTS_READ_WINDOW)
}

/// A site's traps: paths every group of its robots.txt disallows, which only
/// a crawler that ignores robots.txt fetches.
#[derive(Debug, Clone, PartialEq)]
pub struct Traps {
    /// Path prefixes.
    pub paths: Vec<String>,
    /// How long a trapped client stays banned.
    pub ban: Duration,
    /// How long a path must have been served before a hit bans.
    pub arm_after: Duration,
    /// What a banned client gets.
    pub action: Action,
    /// Add a hidden link to the first trap in HTML pages.
    pub inject_link: bool,
}

/// The default trap path.
pub const DEFAULT_TRAP: &str = "/.well-known/robotgate/trap/";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::{Category, Classifier};
    use crate::identity::Identify;
    use std::time::Instant;

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
        RequestFacts { fetch: true, target, user_agent: ua, client: Some("192.0.2.1".parse().unwrap()), crowd: false }
    }

    fn outcome_name(o: &Outcome<'_>) -> &'static str {
        o.name()
    }

    #[test]
    fn decide_gives_one_outcome_per_request() {
        let robots = RobotsTxt::compile(ROBOTS);
        let policy = PolicyConfig::default();
        let site = SiteRules { humans: true, ..SiteRules::new("s", &policy, Some(&robots)) };
        let c = Classifier::builtin();
        let rates = crate::state::MemoryState::new(64);
        let clock = Clock::Fixed { instant: Instant::now(), unix_secs: 2 * 3600 }; // 02:00 UTC, inside bingbot's hours
        let d = |target: &'static [u8], ua: &'static [u8]| {
            let d = decide(&facts(target, ua), &site, &c, &rates, &crate::identity::TakeTheirWord, clock);
            (outcome_name(&d.outcome), d.agent.map(|a| a.category))
        };
        assert_eq!(d(b"/robots.txt", GPTBOT).0, "robots.txt", "files are served before anything else");
        assert_eq!(d(b"/robots.txt?x=1", GPTBOT).0, "robots.txt");
        assert_eq!(d(b"/humans.txt", FIREFOX), ("humans.txt", None));
        assert_eq!(d(b"/private/a", FIREFOX), ("pass", Some(Category::Browser)), "people are not bound");
        assert_eq!(d(b"/private/a", GPTBOT), ("violation", Some(Category::AiCrawler)));
        assert_eq!(d(b"/public", GPTBOT), ("pass", Some(Category::AiCrawler)));
        // bingbot's group asks for one request every 10 s: the second is limited.
        assert_eq!(d(b"/page", BING).0, "pass");
        assert_eq!(d(b"/page", BING).0, "limited");
        let no_robots = SiteRules { robots: None, humans: false, ..site };
        let d = decide(&facts(b"/robots.txt", GPTBOT), &no_robots, &c, &rates, &crate::identity::TakeTheirWord, clock);
        assert_eq!(outcome_name(&d.outcome), "pass", "no robots.txt: the origin's /robots.txt, nothing enforced");
        let d = decide(&facts(b"/humans.txt", GPTBOT), &no_robots, &c, &rates, &crate::identity::TakeTheirWord, clock);
        assert_eq!(outcome_name(&d.outcome), "pass");
    }

    #[test]
    fn a_shared_store_answers_the_rate_question_between_two_decisions() {
        let robots = RobotsTxt::compile(ROBOTS);
        let policy = PolicyConfig::default();
        let site = SiteRules::new("s", &policy, Some(&robots));
        let c = Classifier::builtin();
        let local = crate::state::MemoryState::new(64);
        let now = Instant::now();
        let clock = Clock::Fixed { instant: now, unix_secs: 2 * 3600 };
        let step = |target: &'static [u8], ua: &'static [u8]| {
            let f = facts(target, ua);
            let mut agent = None;
            let classify = || c.classify(ua);
            let identify = &crate::identity::TakeTheirWord;
            match decide_step(&f, &site, &mut agent, classify, &local, identify, clock, Rates::Shared) {
                Step::Decided(d) => (outcome_name(&d.outcome), None),
                Step::Ask(asked) => {
                    let Asked { question, pass, paced } = *asked;
                    assert_eq!(outcome_name(&pass.outcome), "pass", "a pass if the store admits");
                    // The store's "wait": limited, without judging again.
                    let waited = Step::answer(pass, &paced, Err(Duration::from_secs(3)), &f, &site, &local, clock);
                    match waited.outcome {
                        Outcome::Limited(l) => {
                            assert_eq!((l.directive, l.wait), ("request-rate", Duration::from_secs(3)))
                        }
                        o => panic!("{o:?}"),
                    }
                    assert_eq!(waited.robots_seen, Some(false), "a limit says whether robots.txt was read");
                    ("ask", Some(question))
                }
                Step::Lookup { .. } => ("lookup", None),
            }
        };
        let (outcome, question) = step(b"/page", BING);
        assert_eq!(outcome, "ask");
        let question = question.expect("bingbot's group sets a pace");
        assert_eq!(question.interval, Duration::from_secs(10), "the stricter of Crawl-delay 5 and Request-rate 1/10s");
        assert_eq!(question.key, "rate:s:bingbot:192.0.2.1");
        // The local clock was not moved: the question is the store's.
        assert_eq!(step(b"/page", BING).0, "ask");
        // No question where no pace applies: a browser, a violation, a group without a pace.
        assert_eq!(step(b"/page", FIREFOX), ("pass", None));
        assert_eq!(step(b"/private/x", GPTBOT), ("violation", None));
        assert_eq!(step(b"/page", GPTBOT), ("pass", None));
    }

    #[test]
    fn a_violation_names_its_rule_and_action_and_a_limit_its_directive() {
        let robots = RobotsTxt::compile(ROBOTS);
        let policy = PolicyConfig::default();
        let c = Classifier::builtin();
        let rates = crate::state::MemoryState::new(64);
        let clock = Clock::Fixed { instant: Instant::now(), unix_secs: 12 * 3600 }; // noon: outside 01:00-05:00
        let site = SiteRules::new("s", &policy, Some(&robots));
        match decide(&facts(b"/private/x", GPTBOT), &site, &c, &rates, &crate::identity::TakeTheirWord, clock).outcome {
            Outcome::Violation(v) => {
                assert_eq!((v.rule.line, v.group, v.action.name()), (2, Some("*"), "block"));
            }
            o => panic!("{o:?}"),
        }
        match decide(&facts(b"/page", BING), &site, &c, &rates, &crate::identity::TakeTheirWord, clock).outcome {
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
        match decide(&facts(b"/page", BING), &site, &c, &rates, &crate::identity::TakeTheirWord, clock).outcome {
            Outcome::Limited(l) => assert!(!l.enforce),
            o => panic!("{o:?}"),
        }
    }

    #[test]
    fn issue_53_a_robot_named_only_by_weak_evidence_is_recorded_not_refused_or_paced() {
        const WEAK: &[u8] = b"MirrorSync/2.0 (Linux x86_64)";
        let robots = RobotsTxt::compile(b"User-agent: *\nDisallow: /private\nCrawl-delay: 10\n");
        let c = Classifier::builtin();
        assert!(c.classify(WEAK).weak_evidence && !c.classify(GPTBOT).weak_evidence);
        let clock = Clock::Fixed { instant: Instant::now(), unix_secs: 12 * 3600 };
        let enforced = PolicyConfig { weak_evidence: WeakEvidence::Enforce, ..PolicyConfig::default() };
        let named = PolicyConfig { bots: vec![("mirrorsync".into(), Action::Log)], ..PolicyConfig::default() };
        for (policy, action, enforce) in
            [(PolicyConfig::default(), "log", false), (enforced, "block", true), (named, "log", false)]
        {
            let rates = crate::state::MemoryState::new(64);
            let site = SiteRules::new("s", &policy, Some(&robots));
            let d = |target: &'static [u8], ua: &'static [u8]| {
                decide(&facts(target, ua), &site, &c, &rates, &crate::identity::TakeTheirWord, clock)
            };
            let refused = d(b"/private/x", WEAK);
            match refused.outcome {
                Outcome::Violation(v) => assert_eq!(v.action.name(), action),
                o => panic!("{o:?}"),
            }
            assert!(refused.agent.as_ref().is_some_and(|a| a.weak_evidence));
            assert_eq!(d(b"/a", WEAK).outcome.name(), "pass");
            match d(b"/b", WEAK).outcome {
                Outcome::Limited(l) => assert_eq!(l.enforce, enforce, "{action}"),
                o => panic!("{o:?}"),
            }
            // A known robot is refused whatever the key says.
            match d(b"/private/x", GPTBOT).outcome {
                Outcome::Violation(v) => assert_eq!(v.action.name(), "block"),
                o => panic!("{o:?}"),
            }
        }
    }

    /// Verified for 192.0.2.3, spoofed for 192.0.2.4, unverifiable elsewhere.
    struct Says;

    impl Identify for Says {
        fn identify(&self, _bot: usize, client: Option<IpAddr>) -> Identity {
            match client.map(|c| c.to_string()).as_deref() {
                Some("192.0.2.3") => Identity::Verified,
                Some("192.0.2.4") => Identity::Spoofed,
                _ => Identity::Unverifiable,
            }
        }
    }

    #[test]
    fn a_trap_bans_whoever_fetches_it_once_armed_and_robots_txt_stays_open() {
        let robots = RobotsTxt::compile(ROBOTS);
        let policy = PolicyConfig::default();
        let traps = Traps {
            paths: vec!["/trap/".into()],
            ban: Duration::from_secs(60),
            arm_after: Duration::from_secs(0),
            action: policy.default.clone(),
            inject_link: false,
        };
        let c = Classifier::builtin();
        let state = crate::state::MemoryState::new(64);
        let t0 = Instant::now();
        let at = |secs: u64| Clock::Fixed { instant: t0 + Duration::from_secs(secs), unix_secs: 1_000 + secs };
        let armed_at = [1_000 + 10];
        let site =
            SiteRules { traps: Some(&traps), armed_at: &armed_at, ..SiteRules::new("s", &policy, Some(&robots)) };
        let from = |ip: &str, target: &'static [u8], ua: &'static [u8], secs: u64| {
            let f =
                RequestFacts { fetch: true, target, user_agent: ua, client: Some(ip.parse().unwrap()), crowd: false };
            let d = decide(&f, &site, &c, &state, &Says, at(secs));
            match d.outcome {
                Outcome::Trap(t) => format!("trap:{}", t.why),
                o => outcome_name(&o).to_owned(),
            }
        };
        // Not armed yet: recorded, not banned.
        assert_eq!(from("192.0.2.1", b"/trap/x", FIREFOX, 5), "trap:not-armed");
        assert_eq!(from("192.0.2.1", b"/page", FIREFOX, 5), "pass");
        // Armed: a browser-UA client is banned on every path but robots.txt.
        assert_eq!(from("192.0.2.1", b"/trap/x", FIREFOX, 20), "trap:banned");
        assert_eq!(from("192.0.2.1", b"/page", FIREFOX, 21), "banned");
        assert_eq!(from("192.0.2.1", b"/robots.txt", FIREFOX, 21), "robots.txt");
        assert_eq!(from("192.0.2.2", b"/page", FIREFOX, 21), "pass", "others are not banned");
        // A verified crawler is only recorded; one that only claims to be is banned.
        assert_eq!(from("192.0.2.3", b"/trap/x", BING, 22), "trap:verified-crawler");
        assert_eq!(from("192.0.2.3", b"/page", FIREFOX, 22), "pass");
        assert_eq!(from("192.0.2.5", b"/trap/x", BING, 22), "trap:banned");
        // The ban expires.
        assert_eq!(from("192.0.2.1", b"/page", FIREFOX, 20 + 61), "pass");
    }

    #[test]
    fn violations_say_whether_the_bot_read_robots_txt() {
        let robots = RobotsTxt::compile(ROBOTS);
        let policy = PolicyConfig::default();
        let c = Classifier::builtin();
        let state = crate::state::MemoryState::new(64);
        let clock = Clock::Fixed { instant: Instant::now(), unix_secs: 0 };
        let site = SiteRules::new("s", &policy, Some(&robots));
        // GPTBot from `ip` asks for `target`, its claim judged by `identify`.
        let ask = |ip: &str, target: &'static [u8], identify: &dyn Identify| {
            let f = RequestFacts {
                fetch: true,
                target,
                user_agent: GPTBOT,
                client: Some(ip.parse().unwrap()),
                crowd: false,
            };
            decide(&f, &site, &c, &state, identify, clock).robots_seen
        };
        let seen = |ip: &str| ask(ip, b"/private/x", &crate::identity::TakeTheirWord);
        let read = |ip: &str, identify: &dyn Identify| {
            ask(ip, b"/robots.txt", identify);
        };
        assert_eq!(seen("192.0.2.1"), Some(false));
        // An unverified read from another address is that address's only
        // (issue #39): anyone can say GPTBot.
        read("198.51.100.1", &crate::identity::TakeTheirWord);
        assert_eq!(seen("192.0.2.1"), Some(false));
        assert_eq!(seen("198.51.100.1"), Some(true), "the reader's own");
        // A read verified to be GPTBot counts for GPTBot wherever it crawls from.
        struct Verified;
        impl Identify for Verified {
            fn identify(&self, _bot: usize, _client: Option<IpAddr>) -> Identity {
                Identity::Verified
            }
        }
        read("198.51.100.2", &Verified);
        assert_eq!(seen("192.0.2.1"), Some(false), "an unverified request is still judged by its own reads");
        assert_eq!(ask("192.0.2.1", b"/private/x", &Verified), Some(true));
    }

    #[test]
    fn a_spoofed_claim_is_refused_or_judged_as_an_unknown_robot() {
        let robots = RobotsTxt::compile(b"User-agent: *\nDisallow: /private/\n\nUser-agent: bingbot\nAllow: /\n");
        let mut policy = PolicyConfig::default();
        let c = Classifier::builtin();
        let state = crate::state::MemoryState::new(64);
        let clock = Clock::Fixed { instant: Instant::now(), unix_secs: 0 };
        let decide_as = |policy: &PolicyConfig, ip: &str, target: &'static [u8]| {
            let site = SiteRules::new("s", policy, Some(&robots));
            let f =
                RequestFacts { fetch: true, target, user_agent: BING, client: Some(ip.parse().unwrap()), crowd: false };
            let d = decide(&f, &site, &c, &state, &Says, clock);
            (outcome_name(&d.outcome).to_owned(), d.identity)
        };
        assert_eq!(decide_as(&policy, "192.0.2.3", b"/private/x"), ("pass".into(), Identity::Verified));
        assert_eq!(decide_as(&policy, "192.0.2.4", b"/page"), ("spoofed".into(), Identity::Spoofed));
        // Logged only: judged by the `*` group, as the unknown robot it is.
        policy.spoofed = Action::Log;
        assert_eq!(decide_as(&policy, "192.0.2.4", b"/private/x"), ("violation".into(), Identity::Spoofed));
        assert_eq!(decide_as(&policy, "192.0.2.4", b"/page"), ("spoofed".into(), Identity::Spoofed));
    }
}
