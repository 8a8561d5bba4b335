//! What to do with one request: a pure function of the bot, the site's
//! robots.txt and the site's policy.
//!
//! `decide` never fails and touches no state; rate limits need memory of past
//! requests, so it only says which limit applies ([`Decision::rate`]) and the
//! proxy keeps the clock (`server::limit`).

use std::time::Duration;

use crate::agent::Category;
use crate::config::{Action, PolicyConfig};
use crate::robots::{ext::VisitTime, RobotsTxt, Rule, Selection};

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

/// The decision for one request.
#[derive(Debug, Clone)]
pub struct Decision<'a> {
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

impl Decision<'_> {
    /// Whether the request breaks robots.txt.
    pub fn is_violation(&self) -> bool {
        self.rule.is_some()
    }

    /// A decision that lets the request through untouched.
    pub fn pass() -> Decision<'static> {
        Decision { selection: None, group: None, rule: None, action: None, rate: None, window: None }
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

/// Decide a request: which group the requester obeys, whether the path breaks
/// it, and what to do.
///
/// Cost: one group lookup (a hash probe per candidate token) and one matcher
/// query; no allocation unless the path needs percent-normalising.
pub fn decide<'a, S: AsRef<str>>(
    policy: &'a PolicyConfig,
    robots: &'a RobotsTxt,
    who: &Requester<'_, S>,
    path_and_query: &[u8],
) -> Decision<'a> {
    // robots.txt binds robots, not people.
    if !who.is_bot || who.category == Category::Browser {
        return Decision::pass();
    }
    let selection = robots.select(who.tokens);
    let group = robots.selection_name(&selection);
    let verdict = robots.check(&selection, path_and_query);
    if !verdict.allowed {
        return Decision {
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
    Decision { selection: Some(selection), group, rule: None, action: None, rate, window }
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
    use crate::config::{Action, PolicyConfig};

    const ROBOTS: &[u8] = b"User-agent: *\nDisallow: /private\n\nUser-agent: Googlebot\nDisallow: /nogoogle\n\nUser-agent: bingbot\nCrawl-delay: 5\nRequest-rate: 1/10s\nVisit-time: 0100-0500\n";

    fn bot<'a>(name: &'a str, category: Category, tokens: &'a [&'a str]) -> Requester<'a, &'a str> {
        Requester { is_bot: true, name: Some(name), category, tokens }
    }

    #[test]
    fn browsers_always_pass() {
        let robots = RobotsTxt::compile(ROBOTS);
        let p = PolicyConfig::default();
        let who: Requester<&str> = Requester { is_bot: false, name: None, category: Category::Browser, tokens: &[] };
        let d = decide(&p, &robots, &who, b"/private/x");
        assert!(!d.is_violation() && d.action.is_none() && d.selection.is_none());
    }

    #[test]
    fn violation_names_rule_group_and_action() {
        let robots = RobotsTxt::compile(ROBOTS);
        let p = PolicyConfig::default();
        let d = decide(&p, &robots, &bot("GPTBot", Category::AiCrawler, &["GPTBot"]), b"/private/x");
        assert!(d.is_violation());
        assert_eq!(d.rule.unwrap().line, 2);
        assert_eq!(d.group, Some("*"));
        assert_eq!(d.action.unwrap().name(), "block");
        // Googlebot-Image falls back to the Googlebot group, which allows /private.
        let d = decide(
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
        assert_eq!(decide(&p, &robots, &who, b"/private").action, Some(&Action::Log));
        p.enforce_ai_user = true;
        assert_eq!(decide(&p, &robots, &who, b"/private").action.unwrap().name(), "block");
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
        let d = decide(&p, &robots, &bot("SemrushBot", Category::Seo, &["SemrushBot"]), b"/private");
        assert_eq!(d.action.unwrap().name(), "noindex");
    }

    #[test]
    fn rates_and_windows_come_from_the_group() {
        let robots = RobotsTxt::compile(ROBOTS);
        let mut p = PolicyConfig::default();
        let d = decide(&p, &robots, &bot("bingbot", Category::Search, &["bingbot"]), b"/page");
        let rate = d.rate.unwrap();
        assert_eq!((rate.interval, rate.directive, rate.line), (Duration::from_secs(10), "request-rate", 9));
        assert_eq!(d.window.unwrap().line, 10);
        p.rate_limit = false;
        p.visit_time = false;
        let d = decide(&p, &robots, &bot("bingbot", Category::Search, &["bingbot"]), b"/page");
        assert!(d.rate.is_none() && d.window.is_none());
    }
}
