//! RFC 9309 2.4: a crawler may use the robots.txt it fetched for up to 24
//! hours. A request the site's current robots.txt disallows, but which the
//! version this crawler last fetched allows, is no violation while that
//! fetch is younger than the grace: it is a `stale-robots` outcome, passed
//! or refused as `robots_change.action` says, never counted as a violation.
//!
//! Pure: the earlier versions come with the site ([`super::SiteRules::earlier`]),
//! the crawler's last fetch from the state, the time from the clock.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::claims::judge_claims;
use super::{Action, Clock, Rule, SiteRules};
use crate::agent::Agent;
use crate::robots::RobotsTxt;

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
    target: &[u8],
    read: Option<(Instant, u64)>,
    clock: Clock,
    group: Option<&'s str>,
    rule: &'s Rule,
    action: &'s Action,
) -> Option<Stale<'s>> {
    let change = site.policy.robots_change;
    let current = site.robots?.hash();
    // Only a read that counts for this requester (issue #39): `read` is
    // [`super::last_read`]'s, made once by the caller.
    let (at, fetched) = read?;
    let age = clock.instant().checked_duration_since(at).unwrap_or_default();
    if fetched == current || age >= change.grace.min(MAX_GRACE) {
        return None;
    }
    let earlier = site.earlier.iter().find(|e| e.hash == fetched)?;
    if judge_claims(site.policy, &earlier.robots, agent, target).is_violation() {
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
    use crate::identity::Identity;
    use crate::identity::TakeTheirWord;
    use crate::policy::RequestFacts;
    use crate::policy::{decide, Outcome, PolicyConfig};
    use crate::state::MemoryState;
    use crate::state::State;

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
        // GPTBot fetched the old version at t0, from the address it crawls from
        // (nothing verifies it here: only its own client's read counts).
        let own = crate::state::SeenKey::Client { site: "s", client: "192.0.2.1".parse().unwrap(), robot: "GPTBot" };
        state.saw_robots(&own, old.hash(), t0);
        assert_eq!(run(&policy, &state, b"/newly/x", 1), ("stale", Some(true)));
        assert_eq!(run(&policy, &state, b"/old/x", 1).0, "violation", "its copy forbids that too");
        assert_eq!(run(&policy, &state, b"/newly/x", 86_399).0, "stale");
        assert_eq!(run(&policy, &state, b"/newly/x", 86_400).0, "violation", "24 hours on");
        policy.robots_change = RobotsChange { grace: Duration::from_secs(60), action: ChangeAction::Enforce };
        assert_eq!(run(&policy, &state, b"/newly/x", 59).0, "stale-enforced");
        assert_eq!(run(&policy, &state, b"/newly/x", 60).0, "violation");
        // A fetch of the current version, or of one not kept, gives nothing.
        let state = MemoryState::new(64);
        let key = crate::state::SeenKey::Client { site: "s", client: "192.0.2.1".parse().unwrap(), robot: "GPTBot" };
        state.saw_robots(&key, new.hash(), t0);
        assert_eq!(run(&policy, &state, b"/newly/x", 1).0, "violation");
        state.saw_robots(&key, 12_345, t0);
        assert_eq!(run(&policy, &state, b"/newly/x", 1).0, "violation");
    }

    /// Says every claim is verified: the robot is who it says.
    struct Verified;

    impl crate::identity::Identify for Verified {
        fn identify(&self, _bot: usize, _client: Option<std::net::IpAddr>) -> Identity {
            Identity::Verified
        }
    }

    #[test]
    fn only_the_robot_itself_moves_its_copy() {
        // Issue #39: a verified Googlebot read v1; a stranger claiming
        // Googlebot reads v2; the real one keeps its grace for v1.
        const GOOGLEBOT: &[u8] = b"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";
        let v1 = Arc::new(RobotsTxt::compile(b"User-agent: *\nDisallow: /old/\n"));
        let v2 = RobotsTxt::compile(b"User-agent: *\nDisallow: /old/\nDisallow: /newly/\n");
        let earlier = [EarlierRobots { hash: v1.hash(), robots: v1.clone(), replaced_at: 1_000 }];
        let policy = PolicyConfig::default();
        let c = Classifier::builtin();
        let state = MemoryState::new(64);
        let t0 = Instant::now();
        let at = |secs: u64| Clock::Fixed { instant: t0 + Duration::from_secs(secs), unix_secs: 1_000 + secs };
        let from = |ip: &str| RequestFacts {
            fetch: true,
            target: b"/robots.txt",
            user_agent: GOOGLEBOT,
            client: ip.parse().ok(),
            crowd: false,
        };
        let (real, stranger) = (from("66.249.66.1"), from("45.33.32.156"));
        // The real one reads v1 (the site served v1 then).
        let old_site = SiteRules::new("s", &policy, Some(&v1));
        decide(&real, &old_site, &c, &state, &Verified, at(0));
        // v2 is in force; a stranger, whom nothing verifies, reads it under Googlebot's name.
        let site = SiteRules { earlier: &earlier, ..SiteRules::new("s", &policy, Some(&v2)) };
        decide(&stranger, &site, &c, &state, &TakeTheirWord, at(5));
        let page = |f: RequestFacts<'static>| RequestFacts { target: b"/newly/x", ..f };
        let d = decide(&page(real), &site, &c, &state, &Verified, at(10));
        assert_eq!((name(&d.outcome), d.robots_seen), ("stale", Some(true)), "the grace of v1 survives");
        // The stranger's read counts for the stranger's own address only.
        let d = decide(&page(stranger), &site, &c, &state, &TakeTheirWord, at(10));
        assert_eq!((name(&d.outcome), d.robots_seen), ("violation", Some(true)));
        // A verified read from another of the robot's addresses counts for the robot.
        let other = from("66.249.66.2");
        let d = decide(&page(other), &site, &c, &state, &Verified, at(10));
        assert_eq!(name(&d.outcome), "stale");
        // An unverified claim from a third address has read nothing.
        let d = decide(&page(from("198.51.100.7")), &site, &c, &state, &TakeTheirWord, at(10));
        assert_eq!((name(&d.outcome), d.robots_seen), ("violation", Some(false)));
    }
}
