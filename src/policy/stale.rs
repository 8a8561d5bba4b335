//! RFC 9309 2.4: a crawler may use the robots.txt it fetched for up to 24
//! hours. A request the site's current robots.txt disallows, but which the
//! version this crawler last fetched allows, is no violation while that
//! fetch is younger than the grace: it is a `stale-robots` outcome, passed
//! or refused as `robots_change.action` says, never counted as a violation.
//!
//! Pure: the earlier versions come with the site ([`super::SiteRules::earlier`]),
//! the crawler's last fetch from the state, the time from the clock.

use std::sync::Arc;
use std::time::Duration;

use super::claims::judge_claims;
use super::{seen_key, Action, Clock, RequestFacts, Rule, SiteRules};
use crate::agent::Agent;
use crate::robots::RobotsTxt;
use crate::state::State;

/// The longest grace: RFC 9309 2.4 lets a crawler use its copy for at most
/// 24 hours, and earlier versions are kept no longer.
pub const MAX_GRACE: Duration = crate::state::ROBOTS_READ_WINDOW;

/// What a request that only the current robots.txt disallows gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeAction {
    /// Let it through (recorded as `stale-robots`).
    Pass,
    /// Apply the current rule's action (still recorded as `stale-robots`).
    Enforce,
}

/// `policy.robots_change` of a site.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RobotsChange {
    /// How long after its fetch a crawler's copy still counts (0: never).
    pub grace: Duration,
    /// What the request gets meanwhile.
    pub action: ChangeAction,
}

impl Default for RobotsChange {
    fn default() -> Self {
        RobotsChange { grace: MAX_GRACE, action: ChangeAction::Pass }
    }
}

/// A version of a site's robots.txt served before the current one.
#[derive(Debug, Clone)]
pub struct EarlierRobots {
    /// The served text's [`RobotsTxt::hash`]: what a crawler's fetch names.
    pub hash: u64,
    /// The compiled version.
    pub robots: Arc<RobotsTxt>,
    /// When it stopped being served (Unix seconds).
    pub replaced_at: u64,
}

/// A request the current robots.txt disallows and the crawler's copy allows.
#[derive(Debug, Clone, Copy)]
pub struct Stale<'a> {
    /// Human name of the current group that disallows it.
    pub group: Option<&'a str>,
    /// The current rule that disallows it.
    pub rule: &'a Rule,
    /// The current rule's action, with `action: enforce`; `None`: pass.
    pub action: Option<&'a Action>,
    /// The version the crawler fetched ([`RobotsTxt::hash`]).
    pub fetched: u64,
    /// When it fetched it (Unix seconds).
    pub fetched_at: u64,
}

/// The `stale-robots` outcome for a request the current robots.txt refuses
/// by `rule`, if the crawler's last fetch is younger than the grace and
/// that version allows the request; `None`: a violation as ever (no fetch
/// on record, too old, the current version, or an unknown one).
///
/// Cost: only for a request already refused: one state lookup, and one
/// more judgement against the earlier version.
#[allow(clippy::too_many_arguments)]
pub(super) fn stale<'s>(
    site: &SiteRules<'s>,
    agent: &Agent<'_>,
    facts: &RequestFacts<'_>,
    state: &dyn State,
    clock: Clock,
    group: Option<&'s str>,
    rule: &'s Rule,
    action: &'s Action,
) -> Option<Stale<'s>> {
    let change = site.policy.robots_change;
    let current = site.robots?.hash();
    let (at, fetched) = state.robots_read(&seen_key(site, agent, facts)?)?;
    let age = clock.instant().checked_duration_since(at).unwrap_or_default();
    if fetched == current || age >= change.grace.min(MAX_GRACE) {
        return None;
    }
    let earlier = site.earlier.iter().find(|e| e.hash == fetched)?;
    if judge_claims(site.policy, &earlier.robots, agent, facts.target).is_violation() {
        return None;
    }
    let action = (change.action == ChangeAction::Enforce).then_some(action);
    let fetched_at = clock.unix_secs().saturating_sub(age.as_secs());
    Some(Stale { group, rule, action, fetched, fetched_at })
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;
    use crate::agent::Classifier;
    use crate::identity::TakeTheirWord;
    use crate::policy::{decide, Outcome, PolicyConfig};
    use crate::state::MemoryState;

    const GPTBOT: &[u8] = b"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2)";

    fn facts(target: &[u8]) -> RequestFacts<'_> {
        RequestFacts { fetch: true, target, user_agent: GPTBOT, client: "192.0.2.1".parse().ok(), crowd: false }
    }

    fn name(o: &Outcome<'_>) -> &'static str {
        match o {
            Outcome::Stale(s) if s.action.is_some() => "stale-enforced",
            Outcome::Stale(_) => "stale",
            Outcome::Violation(_) => "violation",
            Outcome::Pass => "pass",
            _ => "other",
        }
    }

    #[test]
    fn a_crawler_is_judged_by_its_copy_for_the_grace_only() {
        let old = Arc::new(RobotsTxt::compile(b"User-agent: *\nDisallow: /old/\n"));
        let new = RobotsTxt::compile(b"User-agent: *\nDisallow: /old/\nDisallow: /newly/\n");
        let earlier = [EarlierRobots { hash: old.hash(), robots: old.clone(), replaced_at: 1_000 }];
        let mut policy = PolicyConfig::default();
        let c = Classifier::builtin();
        let state = MemoryState::new(64);
        let t0 = Instant::now(); // after the table's epoch, which it cannot go before
        let at = |secs: u64| Clock::Fixed { instant: t0 + Duration::from_secs(secs), unix_secs: 1_000 + secs };
        let run = |policy: &PolicyConfig, state: &MemoryState, target: &'static [u8], secs| {
            let site = SiteRules { earlier: &earlier, ..SiteRules::new("s", policy, Some(&new)) };
            let d = decide(&facts(target), &site, &c, state, &TakeTheirWord, at(secs));
            (name(&d.outcome), d.robots_seen)
        };
        // No fetch on record: no grace.
        assert_eq!(run(&policy, &state, b"/newly/x", 0).0, "violation");
        // GPTBot fetched the old version at t0.
        state.saw_robots(&crate::state::SeenKey::Bot { site: "s", name: "GPTBot" }, old.hash(), t0);
        assert_eq!(run(&policy, &state, b"/newly/x", 1), ("stale", Some(true)));
        assert_eq!(run(&policy, &state, b"/old/x", 1).0, "violation", "its copy forbids that too");
        assert_eq!(run(&policy, &state, b"/newly/x", 86_399).0, "stale");
        assert_eq!(run(&policy, &state, b"/newly/x", 86_400).0, "violation", "24 hours on");
        policy.robots_change = RobotsChange { grace: Duration::from_secs(60), action: ChangeAction::Enforce };
        assert_eq!(run(&policy, &state, b"/newly/x", 59).0, "stale-enforced");
        assert_eq!(run(&policy, &state, b"/newly/x", 60).0, "violation");
        // A fetch of the current version, or of one not kept, gives nothing.
        let state = MemoryState::new(64);
        let key = crate::state::SeenKey::Bot { site: "s", name: "GPTBot" };
        state.saw_robots(&key, new.hash(), t0);
        assert_eq!(run(&policy, &state, b"/newly/x", 1).0, "violation");
        state.saw_robots(&key, 12_345, t0);
        assert_eq!(run(&policy, &state, b"/newly/x", 1).0, "violation");
    }
}
