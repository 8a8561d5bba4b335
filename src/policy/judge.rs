//! The robots.txt part of a decision alone: which group a requester obeys,
//! whether the target breaks it, the action, and the pace and hours that
//! apply ([`judge`]), for callers that keep no rate state too.

use std::time::Duration;

use super::{Action, PolicyConfig};
use crate::agent::Category;
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

pub(super) static LOG_ONLY: Action = Action::Log;

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
    let rate =
        if policy.rate_limit { super::pace::rate_of(robots, &selection, crate::agent::Ignored::NONE) } else { None };
    let window = if policy.visit_time {
        robots.visit_time(&selection).map(|v| Window { window: v.value, line: v.line })
    } else {
        None
    };
    Judgement { selection: Some(selection), group, rule: None, action: None, rate, window }
}
