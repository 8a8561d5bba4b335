//! Usage preferences by purpose (issue #29): a robot robots.txt lets in may
//! still be refused when the site says its content is not to be used for
//! what the robot fetches it for.
//!
//! The preference in force for a path is, per category, the stance of the
//! robot's group's `Content-Usage` rule for the path (draft-ietf-aipref-attach),
//! else that of the `*` group's `Content-Signal` (`ai-train` read as
//! `train-ai`). A robot is refused only when every purpose its operator
//! documents is refused: OAI-SearchBot (search, ai-input) under
//! `search=yes, ai-input=no` still fetches. `user-fetch` is never refused
//! here: fetches a person asked for follow `enforce_ai_user`.

use super::{Action, PolicyConfig, LOG_ONLY};
use crate::agent::{Agent, Purpose};
use crate::robots::usage::{Stance, UsagePref};
use crate::robots::{RobotsTxt, Selection};

/// `policy.preferences`: what a refusal by preference does.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum PreferenceMode {
    /// The robot's action, as for a disallowed path (the default).
    #[default]
    Enforce,
    /// Record it, let the request through.
    Log,
    /// Do not look at preferences.
    Off,
}

impl PreferenceMode {
    /// The mode a config word names (`enforce`, `log`, `off`).
    pub fn from_name(name: &str) -> Option<PreferenceMode> {
        match name {
            "enforce" => Some(PreferenceMode::Enforce),
            "log" => Some(PreferenceMode::Log),
            "off" => Some(PreferenceMode::Off),
            _ => None,
        }
    }
}

/// A request robots.txt allows for a purpose the site refuses.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Refused<'a> {
    /// Human name of the group the robot obeys.
    pub group: Option<&'a str>,
    /// `content-usage` or `content-signal`: where the refusal was read.
    pub directive: &'static str,
    /// Its line in robots.txt.
    pub line: u32,
    /// The refused purpose (the robot's first).
    pub purpose: Purpose,
    /// What to do (`log` when `policy.preferences: log`).
    pub action: &'a Action,
}

/// What the preferences come to for one robot and path.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Verdict<'a> {
    /// No preference in force refuses all its purposes (or none is stated).
    Fine,
    /// A preference is in force, and the robot's purposes are not documented.
    Unknown,
    /// Every purpose refused.
    Refused(Refused<'a>),
}

/// Where a stance came from: (directive, line).
type Origin = (&'static str, u32);

/// The preference in force for `target` under `selection`: the group's
/// `Content-Usage`, then the `*` group's `Content-Signal`, per category.
pub fn in_force(robots: &RobotsTxt, selection: &Selection, target: &[u8]) -> Option<(UsagePref, [Option<Origin>; 3])> {
    if !robots.states_usage() {
        return None;
    }
    let usage = robots.usage(selection, target);
    let global = robots.select::<&str>(&[]);
    let mut signal = UsagePref::default();
    let mut signal_line = 0;
    for g in robots.selected_groups(&global) {
        for s in &g.ext().content_signal {
            let (key, yes) = (&s.value.0, s.value.1);
            let slot = match key.as_str() {
                "ai-train" => &mut signal.train_ai,
                "search" => &mut signal.search,
                "ai-input" => &mut signal.ai_input,
                _ => continue,
            };
            *slot = Some(yes);
            signal_line = s.line;
        }
    }
    if usage.is_none() && signal.is_empty() {
        return None;
    }
    let mut pref = UsagePref::default();
    let mut origins = [None; 3];
    let pick = |u: Stance, s: Stance, origin: &mut Option<Origin>| -> Stance {
        match (u, usage) {
            (Some(v), Some(m)) => {
                *origin = Some(("content-usage", m.line));
                Some(v)
            }
            _ => {
                *origin = s.map(|_| ("content-signal", signal_line));
                s
            }
        }
    };
    let u = usage.map(|m| m.pref).unwrap_or_default();
    pref.train_ai = pick(u.train_ai, signal.train_ai, &mut origins[0]);
    pref.search = pick(u.search, signal.search, &mut origins[1]);
    pref.ai_input = pick(u.ai_input, signal.ai_input, &mut origins[2]);
    Some((pref, origins))
}

/// The `Content-Usage` response header for `target`: the `*` group's
/// preference in force (the same reading as [`in_force`]), when that group
/// allows the path (draft-ietf-aipref-attach: a rule applies only to paths
/// the group allows) and the preference states `train-ai` or `search`.
///
/// Cost: nothing for a file without `Content-Usage` or `Content-Signal` in
/// its `*` group; otherwise one matcher query and one match per rule.
pub fn usage_header(robots: &RobotsTxt, target: &[u8]) -> Option<String> {
    if !robots.states_usage() {
        return None;
    }
    let global = robots.select::<&str>(&[]);
    let (pref, _) = in_force(robots, &global, target)?;
    let value = pref.header_value()?;
    robots.check(&global, target).allowed.then_some(value)
}

/// Judge a robot robots.txt allows by the site's usage preferences.
///
/// Cost: nothing unless the file has `Content-Usage` or `Content-Signal`
/// lines for the groups concerned; then one pattern match per rule.
pub(super) fn judge<'a>(
    policy: &'a PolicyConfig,
    robots: &'a RobotsTxt,
    selection: &Selection,
    group: Option<&'a str>,
    agent: &Agent<'_>,
    target: &[u8],
) -> Verdict<'a> {
    if policy.preferences == PreferenceMode::Off {
        return Verdict::Fine;
    }
    let Some((pref, origins)) = in_force(robots, selection, target) else { return Verdict::Fine };
    if agent.purposes.is_unknown() {
        return Verdict::Unknown;
    }
    let mut first: Option<(Purpose, Origin)> = None;
    for purpose in agent.purposes.iter() {
        let slot = match purpose {
            Purpose::TrainAi => 0,
            Purpose::Search => 1,
            Purpose::AiInput => 2,
            Purpose::UserFetch => return Verdict::Fine,
        };
        let stance = [pref.train_ai, pref.search, pref.ai_input][slot];
        match (stance, origins[slot]) {
            (Some(false), Some(origin)) => {
                first.get_or_insert((purpose, origin));
            }
            _ => return Verdict::Fine,
        }
    }
    let Some((purpose, (directive, line))) = first else { return Verdict::Fine };
    let action = match policy.preferences {
        PreferenceMode::Log => &LOG_ONLY,
        _ => policy.action_for(agent.name, agent.category),
    };
    Verdict::Refused(Refused { group, directive, line, purpose, action })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::Classifier;

    const ROBOTS: &[u8] = b"User-agent: *\nAllow: /\nContent-Usage: train-ai=y\nContent-Usage: /novels/ train-ai=n\nContent-Signal: search=yes, ai-input=no\n\nUser-agent: Googlebot\nDisallow: /private\n";

    fn verdict(ua: &[u8], path: &[u8], policy: &PolicyConfig) -> Verdict<'static> {
        let c = Box::leak(Box::new(Classifier::builtin()));
        let robots = Box::leak(Box::new(RobotsTxt::compile(ROBOTS)));
        let policy = Box::leak(Box::new(policy.clone()));
        let agent = c.classify(ua);
        let sel = robots.select(&agent.tokens);
        let group = robots.selection_name(&sel);
        judge(policy, robots, &sel, group, &agent, path)
    }

    #[test]
    fn purposes_against_preferences() {
        let p = PolicyConfig::default();
        let gpt = b"Mozilla/5.0 (compatible; GPTBot/1.2; +https://openai.com/gptbot)";
        match verdict(gpt, b"/novels/one", &p) {
            Verdict::Refused(r) => {
                assert_eq!((r.directive, r.line, r.purpose), ("content-usage", 4, Purpose::TrainAi));
                assert_eq!(r.action.name(), "block");
            }
            v => panic!("{v:?}"),
        }
        assert_eq!(verdict(gpt, b"/news/one", &p), Verdict::Fine, "train-ai=y on the rest");
        // Googlebot (search): nothing refuses search.
        assert_eq!(verdict(b"Googlebot/2.1", b"/novels/one", &p), Verdict::Fine);
        // OAI-SearchBot (search, ai-input): ai-input=no alone does not refuse it.
        assert_eq!(verdict(b"OAI-SearchBot/1.0", b"/novels/one", &p), Verdict::Fine);
        // A robot without documented purposes is counted, not refused.
        assert_eq!(verdict(b"SomeNewCrawler/0.3 (+https://x.example/bot)", b"/novels/one", &p), Verdict::Unknown);
        // log and off.
        let log = PolicyConfig { preferences: PreferenceMode::Log, ..PolicyConfig::default() };
        assert!(matches!(verdict(gpt, b"/novels/x", &log), Verdict::Refused(r) if r.action.name() == "log"));
        let off = PolicyConfig { preferences: PreferenceMode::Off, ..PolicyConfig::default() };
        assert_eq!(verdict(gpt, b"/novels/x", &off), Verdict::Fine);
    }

    #[test]
    fn the_header_is_the_global_groups() {
        let robots = RobotsTxt::compile(b"User-agent: *\nDisallow: /private\nContent-Usage: train-ai=n\nContent-Usage: /open/ train-ai=y, search=y\n");
        assert_eq!(usage_header(&robots, b"/a").as_deref(), Some("train-ai=n"));
        assert_eq!(usage_header(&robots, b"/open/x").as_deref(), Some("train-ai=y, search=y"));
        assert_eq!(usage_header(&robots, b"/private/x"), None, "a path the group disallows");
        assert_eq!(usage_header(&RobotsTxt::compile(b"User-agent: *\nDisallow: /x\n"), b"/a"), None);
    }

    #[test]
    fn content_signal_when_no_rule_says() {
        let robots = RobotsTxt::compile(b"User-agent: *\nContent-Signal: ai-train=no, search=yes\nAllow: /\n");
        let (pref, origins) = in_force(&robots, &robots.select::<&str>(&[]), b"/a").unwrap();
        assert_eq!(pref.train_ai, Some(false));
        assert_eq!(origins[0], Some(("content-signal", 2)));
    }
}
