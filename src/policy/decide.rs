//! The decision, in named steps: a fetch of robots.txt ([`robots_fetch`]),
//! a ban or a trap ([`ban_and_trap`]), the site's other files, then judging
//! a robot ([`judge_robot`]). It stops where only the outside world can
//! tell ([`Step`]): a reverse-DNS lookup, or the shared store's rate clock.
//! Nothing is changed before it stops, so the caller resumes by calling
//! again with the answer; what was gathered (the classification) comes
//! back with the step and is not made again.

use std::time::Duration;

use super::claims::{claims, judge_claims, Claimed, Settled};
pub use super::pace::Paced;
use super::pace::{pace, Pace};
use super::{
    judge, last_read, preference, read_robots, read_within_window, seen_keys, stale, Action, Banned, Clock, Decision,
    Outcome, RequestFacts, Requester, SiteFile, SiteRules, Spoofed, TrapHit, Violation,
};
use crate::agent::{Agent, Category, Classifier};
use crate::identity::{Identify, Identity};
use crate::net::client_key;
use crate::state::shared::{rate_key, Question};
use crate::state::{BanKey, State};

/// Where a rate question is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rates {
    /// The local rate table, at once.
    Local,
    /// A store shared with other instances: the decision stops at the
    /// question ([`Step::Ask`]).
    Shared,
}

/// How far a decision got.
// Boxed, the decision would cost every request an allocation; it is
// returned once per request, not stored.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Step<'s, 'r> {
    /// Decided.
    Decided(Decision<'s, 'r>),
    /// Only reverse DNS can tell whether the client is database robot `bot`.
    /// Nothing was changed; decide again with an [`Identify`] that knows.
    Lookup {
        /// The database robot to confirm.
        bot: usize,
    },
    /// The request passes if the shared store's rate clock admits it;
    /// otherwise it is limited ([`Step::answer`]). Everything else of the
    /// decision is done. (Boxed: rare, and large.)
    Ask(Box<Asked<'s, 'r>>),
}

/// A decision waiting on the shared store's rate clock.
#[derive(Debug)]
pub struct Asked<'s, 'r> {
    /// The question, named as the store keys it.
    pub question: Question,
    /// The decision if the store admits.
    pub pass: Decision<'s, 'r>,
    /// How the limit reads for a wait.
    pub paced: Paced<'s, 'r>,
}

impl<'s, 'r> Step<'s, 'r> {
    /// The decision of an [`Step::Ask`] once the store answered: `Ok` admitted,
    /// `Err(wait)` too soon. Computes only what a limit adds (whether the
    /// robot read robots.txt); judges nothing again.
    #[allow(clippy::too_many_arguments)]
    pub fn answer(
        pass: Decision<'s, 'r>,
        paced: &Paced<'s, 'r>,
        admitted: Result<(), Duration>,
        facts: &RequestFacts<'_>,
        site: &SiteRules<'s>,
        state: &dyn State,
        clock: Clock,
    ) -> Decision<'s, 'r> {
        match admitted {
            Ok(()) => pass,
            Err(wait) => {
                let agent = pass.agent.unwrap_or(Agent::browser());
                let outcome = Outcome::Limited(paced.limited(wait));
                let d = Done { facts, site, state, clock };
                d.decision(agent, outcome, pass.identity, pass.preference_unknown)
            }
        }
    }
}

/// Decide a request, with every question answered here: identities the
/// caller's [`Identify`] cannot settle are unverifiable, rates go to
/// `state`. For callers that do no I/O (tests, benchmarks, `check`).
pub fn decide<'s: 'r, 'r>(
    facts: &RequestFacts<'r>,
    site: &SiteRules<'s>,
    classifier: &'s Classifier,
    state: &dyn State,
    identify: &dyn Identify,
    clock: Clock,
) -> Decision<'s, 'r> {
    struct Settle<'a>(&'a dyn Identify);
    impl Identify for Settle<'_> {
        fn identify(&self, bot: usize, client: Option<std::net::IpAddr>) -> Identity {
            match self.0.identify(bot, client) {
                Identity::Pending => Identity::Unverifiable,
                other => other,
            }
        }
    }
    let mut agent = None;
    let classify = || classifier.classify(facts.user_agent);
    match decide_step(facts, site, &mut agent, classify, state, &Settle(identify), clock, Rates::Local) {
        Step::Decided(d) => d,
        Step::Ask(asked) => asked.pass,
        // Not reached: `Settle` leaves nothing pending.
        Step::Lookup { .. } => Decision::of(agent, Outcome::Pass, Identity::Unverifiable, None, false),
    }
}

/// Decide a request, or say what only the outside world can tell.
///
/// `agent` holds the classification once made (by `classify`, of
/// `facts.user_agent`, the first time it is needed): a caller that resumes after a [`Step::Lookup`] passes the
/// same slot back, and nothing is classified twice.
///
/// Order: `/robots.txt` first (never refused; the read is remembered), then
/// bans, then trap paths (whatever the User-Agent), then the other files,
/// then nothing to enforce without a robots.txt, then the User-Agent
/// (browsers pass: robots.txt binds robots, not people), then the bot's
/// group and the matching rule, then its pace and hours.
///
/// Cost: one classification, one group lookup and one matcher query; no
/// allocation for browsers, at most the agent's token vector for robots; one
/// short lock in the state for a site with traps (the ban check), and for a
/// bot whose group has a pace or that broke a rule.
#[allow(clippy::too_many_arguments)]
pub fn decide_step<'s: 'r, 'r>(
    facts: &RequestFacts<'_>,
    site: &SiteRules<'s>,
    agent: &mut Option<Agent<'r>>,
    classify: impl FnOnce() -> Agent<'r>,
    state: &dyn State,
    identify: &dyn Identify,
    clock: Clock,
    rates: Rates,
) -> Step<'s, 'r> {
    let mut who = Who { slot: agent, classify: Some(classify) };
    let d = Done { facts, site, state, clock };
    let path = facts.target.split(|&b| b == b'?').next().unwrap_or_default();
    if facts.fetch && path == b"/robots.txt" {
        return robots_fetch(&d, &mut who, identify);
    }
    if let Some(step) = ban_and_trap(&d, &mut who, identify, path) {
        return step;
    }
    if facts.fetch && site.humans && path == b"/humans.txt" {
        return Step::Decided(Decision::of(None, Outcome::File(SiteFile::Humans), Identity::NotClaimed, None, false));
    }
    if site.robots.is_none() {
        return Step::Decided(Decision::of(None, Outcome::Pass, Identity::NotClaimed, None, false));
    }
    judge_robot(&d, &mut who, identify, rates)
}

/// The requester, classified the first time a step needs it.
struct Who<'x, 'r, F> {
    slot: &'x mut Option<Agent<'r>>,
    classify: Option<F>,
}

impl<'r, F: FnOnce() -> Agent<'r>> Who<'_, 'r, F> {
    fn get(&mut self) -> &Agent<'r> {
        let classify = &mut self.classify;
        self.slot.get_or_insert_with(|| classify.take().map_or_else(|| Agent::browser(), |c| c()))
    }

    /// The classification, out of the slot: the step that takes it decides.
    fn take(&mut self) -> Agent<'r> {
        self.get();
        self.slot.take().unwrap_or_else(|| Agent::browser())
    }
}

/// What every finished decision reads.
struct Done<'a, 'f, 's> {
    facts: &'a RequestFacts<'f>,
    site: &'a SiteRules<'s>,
    state: &'a dyn State,
    clock: Clock,
}

impl<'s> Done<'_, '_, 's> {
    /// The decision: the outcome, and for an outcome that gets a record,
    /// whether the robot read robots.txt ([`read_robots`]).
    fn decision<'r>(
        &self,
        agent: Agent<'r>,
        outcome: Outcome<'s>,
        identity: Identity,
        preference_unknown: bool,
    ) -> Decision<'s, 'r> {
        let recorded = !matches!(outcome, Outcome::Pass | Outcome::File(_));
        let robots_seen =
            recorded.then(|| read_robots(self.state, self.site, &agent, self.facts, identity, self.clock));
        Decision::of(Some(agent), outcome, identity, robots_seen, preference_unknown)
    }

    /// [`Done::decision`] of a refused rule, whose robot's last read is known.
    fn refused<'r>(
        &self,
        agent: Agent<'r>,
        outcome: Outcome<'s>,
        identity: Identity,
        read: Option<(std::time::Instant, u64)>,
    ) -> Decision<'s, 'r> {
        let robots_seen = Some(read_within_window(read, self.clock));
        Decision::of(Some(agent), outcome, identity, robots_seen, false)
    }
}

impl<'s, 'r> Decision<'s, 'r> {
    /// A pass with nothing known of the requester: a request not judged.
    pub fn passed() -> Decision<'s, 'r> {
        Decision::of(None, Outcome::Pass, Identity::NotClaimed, None, false)
    }

    /// The one place a decision is put together.
    pub(super) fn of(
        agent: Option<Agent<'r>>,
        outcome: Outcome<'s>,
        identity: Identity,
        robots_seen: Option<bool>,
        preference_unknown: bool,
    ) -> Decision<'s, 'r> {
        Decision { agent, outcome, robots_seen, identity, preference_unknown }
    }
}

/// The claims of the requester's User-Agent, settled; `Err` the robot only a
/// lookup can confirm.
fn settle<'r, F: FnOnce() -> Agent<'r>>(
    who: &mut Who<'_, 'r, F>,
    identify: &dyn Identify,
    facts: &RequestFacts<'_>,
) -> Result<Settled, usize> {
    match claims(who.get(), identify, facts.client) {
        Claimed::Pending(bot) => Err(bot),
        Claimed::Settled(c) => Ok(c),
    }
}

/// The requester, narrowed to the robot it was verified to be.
fn narrowed<'r>(agent: Agent<'r>, claimed: &Settled) -> Agent<'r> {
    match claimed.verified {
        Some(i) => agent.narrowed_to(i),
        None => agent,
    }
}

/// `/robots.txt`: always served. A robot's read is remembered, under its
/// own client, and under its name only when it was verified (issue #39).
fn robots_fetch<'s: 'r, 'r, F: FnOnce() -> Agent<'r>>(
    d: &Done<'_, '_, 's>,
    who: &mut Who<'_, 'r, F>,
    identify: &dyn Identify,
) -> Step<'s, 'r> {
    let Some(robots) = d.site.robots else {
        return Step::Decided(Decision::of(None, Outcome::Pass, Identity::NotClaimed, None, false));
    };
    let mut identity = Identity::NotClaimed;
    if who.get().is_bot() {
        let claimed = match settle(who, identify, d.facts) {
            Ok(c) => c,
            Err(bot) => return Step::Lookup { bot },
        };
        let agent = narrowed(who.take(), &claimed);
        identity = claimed.identity;
        // Which version it read: the one served now (for replay, then).
        let version = match d.site.earlier {
            [] => robots.hash(),
            _ => d.site.version_at(d.clock.unix_secs()).unwrap_or_else(|| robots.hash()),
        };
        for key in seen_keys(d.site, &agent, d.facts, identity).into_iter().flatten() {
            d.state.saw_robots(&key, version, d.clock.instant());
        }
        *who.slot = Some(agent);
    }
    Step::Decided(Decision::of(Some(who.take()), Outcome::File(SiteFile::Robots), identity, None, false))
}

/// A banned client, or a fetch of a trap path; `None` when neither.
fn ban_and_trap<'s: 'r, 'r, F: FnOnce() -> Agent<'r>>(
    d: &Done<'_, '_, 's>,
    who: &mut Who<'_, 'r, F>,
    identify: &dyn Identify,
    path: &[u8],
) -> Option<Step<'s, 'r>> {
    let (site, facts, clock) = (d.site, d.facts, d.clock);
    let (traps, client) = (site.traps?, facts.client?);
    let key = BanKey { client: client_key(client, site.policy.ipv6_prefix), site: site.name };
    let banned = d.state.banned(&key, clock.instant());
    let trap = traps.paths.iter().position(|t| path.starts_with(t.as_bytes()));
    if banned.is_none() && trap.is_none() {
        return None;
    }
    // A verified crawler is never banned, nor held by a ban: its address is
    // its operator's, whatever shared it before. Checked here, before
    // either, so no order of the two can forget it.
    let claimed = match settle(who, identify, facts) {
        Ok(c) => c,
        Err(bot) => return Some(Step::Lookup { bot }),
    };
    let verified = claimed.identity == Identity::Verified;
    if let Some(remaining) = banned.filter(|_| !verified) {
        // (The record names no identity: the ban is the address's, whoever it claims to be.)
        let outcome = Outcome::Banned(Banned { remaining, action: &traps.action });
        let agent = who.take();
        let robots_seen = Some(read_robots(d.state, site, &agent, facts, claimed.identity, clock));
        return Some(Step::Decided(Decision::of(Some(agent), outcome, Identity::NotClaimed, robots_seen, false)));
    }
    let i = trap?;
    let agent = narrowed(who.take(), &claimed);
    let armed = site.armed_at.get(i).is_some_and(|&at| clock.unix_secs() >= at);
    let banned = armed && !verified && !facts.crowd;
    if banned {
        d.state.ban(&key, clock.instant() + traps.ban);
    }
    let (why, action) = if banned {
        ("banned", &traps.action)
    } else if armed && !verified {
        // Most traffic comes from this address: a ban would shut everyone
        // out (issue #27); recorded, not enforced.
        ("crowd-address", &traps.action)
    } else if verified {
        // Never a ban: a ban would cut a search engine off for its whole
        // duration. Once armed, the site's action for it.
        ("verified-crawler", site.policy.action_for(agent.name, agent.category))
    } else {
        ("not-armed", &traps.action)
    };
    let enforce = armed && why != "crowd-address";
    let hit = TrapHit { path: &traps.paths[i], banned, why, action, enforce };
    Some(Step::Decided(d.decision(agent, Outcome::Trap(hit), claimed.identity, false)))
}

/// A request of a site with a robots.txt, past bans and traps: a browser
/// passes; a robot is held to its claims, its group's rules, the site's
/// usage preferences, and its group's pace and hours.
fn judge_robot<'s: 'r, 'r, F: FnOnce() -> Agent<'r>>(
    d: &Done<'_, '_, 's>,
    who: &mut Who<'_, 'r, F>,
    identify: &dyn Identify,
    rates: Rates,
) -> Step<'s, 'r> {
    let (site, facts) = (d.site, d.facts);
    let Some(robots) = site.robots else {
        return Step::Decided(Decision::of(None, Outcome::Pass, Identity::NotClaimed, None, false));
    };
    if !who.get().is_bot() {
        return Step::Decided(Decision::of(Some(who.take()), Outcome::Pass, Identity::NotClaimed, None, false));
    }
    let claimed = match settle(who, identify, facts) {
        Ok(c) => c,
        Err(bot) => return Step::Lookup { bot },
    };
    // A client verified as one of the robots it names is that robot alone.
    let agent = narrowed(who.take(), &claimed);
    let identity = claimed.identity;
    let spoofed = identity == Identity::Spoofed;
    if spoofed && !matches!(site.policy.spoofed, Action::Log | Action::Noindex { .. }) {
        let outcome = Outcome::Spoofed(Spoofed { action: &site.policy.spoofed });
        return Step::Decided(d.decision(agent, outcome, identity, false));
    }
    // A spoofed claim that is only logged is judged as what it is: an unknown
    // robot, held to the `*` group.
    let j = if spoofed {
        let who: Requester<'_, &str> =
            Requester { is_bot: true, name: None, category: Category::OtherBot, tokens: &[] };
        judge(site.policy, robots, &who, facts.target)
    } else {
        judge_claims(site.policy, robots, &agent, facts.target)
    };
    if let (Some(rule), Some(action)) = (j.rule, j.action) {
        // The robot's last robots.txt read, once: whether its copy allowed
        // this (stale), and whether it had read the rule at all.
        let read = last_read(d.state, site, &agent, facts, identity);
        let outcome = match stale::stale(site, &agent, facts.target, read, d.clock, j.group, rule, action) {
            Some(s) if !spoofed => Outcome::Stale(s),
            _ => Outcome::Violation(Violation { group: j.group, rule, action }),
        };
        return Step::Decided(d.refused(agent, outcome, identity, read));
    }
    if spoofed {
        let outcome = Outcome::Spoofed(Spoofed { action: &site.policy.spoofed });
        return Step::Decided(d.decision(agent, outcome, identity, false));
    }
    // Only robots whose identity is not spoofed get here.
    let usage = j.selection.as_ref().map_or(preference::Verdict::Fine, |sel| {
        preference::judge(site.policy, robots, sel, j.group, &agent, facts.target)
    });
    let preference_unknown = usage == preference::Verdict::Unknown;
    if let preference::Verdict::Refused(r) = usage {
        return Step::Decided(d.decision(agent, Outcome::Refused(r), identity, preference_unknown));
    }
    let paced = match pace(&j, site, &agent, facts.client, d.clock) {
        Pace::Free => None,
        Pace::Now(limited) => {
            return Step::Decided(d.decision(agent, Outcome::Limited(limited), identity, preference_unknown));
        }
        Pace::Rate(paced) => Some(paced),
    };
    let Some(paced) = paced else {
        return Step::Decided(d.decision(agent, Outcome::Pass, identity, preference_unknown));
    };
    if rates == Rates::Shared {
        let question = Question { key: rate_key(&paced.key), interval: paced.interval };
        let pass = d.decision(agent, Outcome::Pass, identity, preference_unknown);
        return Step::Ask(Box::new(Asked { question, pass, paced }));
    }
    let outcome = paced.probe(d.state, d.clock.instant()).map_or(Outcome::Pass, Outcome::Limited);
    Step::Decided(d.decision(agent, outcome, identity, preference_unknown))
}
