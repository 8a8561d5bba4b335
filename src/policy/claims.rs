//! The robots a User-Agent names, each a claim (issue #32): checked one by
//! one against what can verify them, and judged each by its own group.

use std::net::IpAddr;

use super::{judge, Judgement, PolicyConfig, Requester, LOG_ONLY};
use crate::agent::{Agent, AgentKind};
use crate::identity::{Identify, Identity};
use crate::robots::RobotsTxt;

/// What the robots a User-Agent names come to.
pub(super) struct Settled {
    /// Verified if one claim is; else spoofed if one is; else unverifiable,
    /// or not claimed (no database robot named).
    pub(super) identity: Identity,
    /// The database index of the verified claim.
    pub(super) verified: Option<usize>,
}

pub(super) enum Claimed {
    /// Only a lookup can tell about this database robot; nothing was decided.
    Pending(usize),
    Settled(Settled),
}

/// Check every database robot `agent` names (issue #32): a verified one
/// decides; otherwise one that can be checked and fails makes the request
/// spoofed. Cost: one identity check per claim (one, for almost every
/// User-Agent).
pub(super) fn claims(agent: &Agent<'_>, identify: &dyn Identify, client: Option<IpAddr>) -> Claimed {
    let AgentKind::Known(first) = agent.kind else {
        return Claimed::Settled(Settled { identity: Identity::NotClaimed, verified: None });
    };
    let mut identity = Identity::Unverifiable;
    for bot in std::iter::once(first).chain(agent.also.iter().map(|c| c.index)) {
        match identify.identify(bot, client) {
            Identity::Verified => {
                return Claimed::Settled(Settled { identity: Identity::Verified, verified: Some(bot) });
            }
            Identity::Pending => return Claimed::Pending(bot),
            Identity::Spoofed => identity = Identity::Spoofed,
            Identity::Unverifiable | Identity::NotClaimed => {}
        }
    }
    Claimed::Settled(Settled { identity, verified: None })
}

/// Judge every robot `agent` names by its own group: the request passes
/// only if every group allows it, and a refusal takes the strictest action
/// among the groups that refuse. "Only logged" for `ai-user` fetchers
/// (`enforce_ai_user: false`) therefore holds only when every refusing
/// claim is one. Pace and hours are the named robot's (the first claim).
/// A robot named only by weak evidence is only logged unless the site's
/// `policy.weak_evidence` is `enforce` ([`PolicyConfig::only_records`]).
pub(super) fn judge_claims<'s>(
    policy: &'s PolicyConfig,
    robots: &'s RobotsTxt,
    agent: &Agent<'_>,
    target: &[u8],
) -> Judgement<'s> {
    let first = Requester { is_bot: true, name: agent.name, category: agent.category, tokens: &agent.tokens[..] };
    let mut j = judge(policy, robots, &first, target);
    for claim in &agent.also {
        let who = Requester { is_bot: true, name: Some(claim.name), category: claim.category, tokens: claim.tokens };
        let other = judge(policy, robots, &who, target);
        let stricter = match (other.action, j.action) {
            (Some(a), Some(b)) => a.strictness() > b.strictness(),
            (Some(_), None) => true,
            _ => false,
        };
        if stricter {
            j = other;
        }
    }
    // Issue #53: a robot named only by weak evidence is recorded, not refused.
    if j.action.is_some() && policy.only_records(agent) {
        j.action = Some(&LOG_ONLY);
    }
    j
}
