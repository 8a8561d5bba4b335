//! From a decision to its violation record: the one mapping the proxy's log
//! and `robotgate replay` share, so both write the same record for the same
//! request.

use super::{Banned, Decision, Limited, Outcome, Refused, Spoofed, Stale, TrapHit, Violation};
use crate::identity::Identity;
use crate::record::Record;
use crate::robots::LineMap;

/// What a record needs from the request and the site, beside the decision.
/// Strings are as received (attacker-controlled; the record escapes nothing,
/// its readers do).
#[derive(Debug, Clone, Copy)]
pub struct Requested<'a> {
    /// Site name.
    pub site: &'a str,
    /// Client address, after trusted proxies (empty when unknown).
    pub client: &'a str,
    /// Request method.
    pub method: &'a str,
    /// Path and query as received.
    pub path: &'a str,
    /// Host header.
    pub host: &'a str,
    /// User-Agent header.
    pub user_agent: &'a str,
    /// Version of the site's robots.txt in force (its short hash).
    pub robots_hash: &'a str,
    /// Which lines of the served robots.txt robotgate added (a trap, a
    /// managed group), and the site's file line of every other: records
    /// cite the site's own file.
    pub lines: &'a LineMap,
    /// The JA4 of the client's ClientHello, when the host knows it.
    pub ja4: Option<&'a str>,
}

/// The counter a recorded decision moves, with its label values: what the
/// proxy's metrics and the nginx module's count, from one mapping.
///
/// Typed as far as a label allows: the site and the robot are the only
/// values that are not fixed words, and the robot comes with its index in
/// the database, so a host can key a counter by indices and `'static`
/// words (the module's worker cache) rather than by text a snapshot holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tally<'r> {
    /// Which counter.
    pub family: TallyFamily,
    /// The `site` label.
    pub site: &'r str,
    /// The `bot` label: the database robot's name, or `other`.
    pub bot: &'r str,
    /// The robot's index in the database (`Classifier::db`'s bots), `None`
    /// when it counts as `other`.
    pub robot: Option<usize>,
    /// The labels after `site` and `bot`, in order: fixed words.
    pub words: [&'static str; 4],
}

/// The counters a record moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TallyFamily {
    /// `robotgate_violations_total{site,bot,category,action,robots_seen,identity}`.
    Violation,
    /// `robotgate_rate_limited_total{site,bot,directive}`.
    Limited,
    /// `robotgate_stale_robots_total{site,bot,action}`: not violations.
    Stale,
}

impl TallyFamily {
    /// The metric's name and its label names, in the order of the values.
    pub fn family(self) -> (&'static str, &'static [&'static str]) {
        match self {
            TallyFamily::Violation => {
                ("robotgate_violations_total", &["site", "bot", "category", "action", "robots_seen", "identity"])
            }
            TallyFamily::Limited => ("robotgate_rate_limited_total", &["site", "bot", "directive"]),
            TallyFamily::Stale => ("robotgate_stale_robots_total", &["site", "bot", "action"]),
        }
    }
}

impl<'r> Tally<'r> {
    /// The metric's name and its label names, in the order of the values.
    pub fn family(&self) -> (&'static str, &'static [&'static str]) {
        self.family.family()
    }

    /// The label values, as many as [`Tally::family`] names.
    pub fn values(&self) -> TallyValues<'r> {
        let n = self.family().1.len();
        let [a, b, c, d] = self.words;
        TallyValues { all: [self.site, self.bot, a, b, c, d], n }
    }
}

/// [`Tally::values`]: the label values, in place.
#[derive(Debug, Clone, Copy)]
pub struct TallyValues<'r> {
    all: [&'r str; 6],
    n: usize,
}

impl<'r> std::ops::Deref for TallyValues<'r> {
    type Target = [&'r str];
    fn deref(&self) -> &[&'r str] {
        &self.all[..self.n]
    }
}

impl<'a> Decision<'a, '_> {
    /// The counter the decision's record `r` moves on `site`; `None` for a
    /// decision without an agent.
    pub fn tally<'r>(&'r self, site: &'r str, r: &'r Record) -> Option<Tally<'r>> {
        let agent = self.agent.as_ref()?;
        let bot = agent.metric_name();
        let robot = match agent.kind {
            crate::agent::AgentKind::Known(i) if agent.name.is_some() => Some(i),
            _ => None,
        };
        let (family, words) = match self.outcome {
            Outcome::Limited(_) => (TallyFamily::Limited, [r.directive, "", "", ""]),
            Outcome::Stale(_) => (TallyFamily::Stale, [r.action, "", "", ""]),
            _ => {
                let seen = if r.robots_seen == Some(true) { "true" } else { "false" };
                let identity = r.identity.unwrap_or("not-claimed");
                (TallyFamily::Violation, [agent.category.as_str(), r.action, seen, identity])
            }
        };
        Some(Tally { family, site, bot, robot, words })
    }
}

impl Decision<'_, '_> {
    /// The record of a violation, a limit, a trap hit, a banned or a spoofed
    /// request; `None` for a pass, a served file, or a limit by a directive
    /// the robot ignores that is not recorded ([`Limited::recorded`]).
    ///
    /// `time` and `status` are left empty (`""`, 0): they are the caller's,
    /// the proxy's clock and answer, or a log line's. Cost: the owned copies
    /// of the record's strings, only for requests that have a record.
    pub fn record(&self, req: &Requested<'_>) -> Option<Record> {
        let mut r = Record::default();
        self.record_into(req, &mut r).then_some(r)
    }

    /// [`Decision::record`] written into `out`, in the buffers it has (a
    /// record kept for the purpose allocates nothing once its strings are
    /// long enough); `false`, leaving `out` as it was, when there is none.
    pub fn record_into(&self, req: &Requested<'_>, out: &mut Record) -> bool {
        let Some(agent) = self.agent.as_ref() else { return false };
        // (directive, group, pattern, line, action, managed)
        let (directive, group, pattern, line, action, managed) = match self.outcome {
            Outcome::Pass | Outcome::File(_) => return false,
            Outcome::Violation(Violation { group, rule, action }) => {
                // An added rule has no line in the site's file.
                let line = req.lines.file_line(rule.line);
                (rule.kind.as_str(), group, Some(rule.pattern()), line, action.name(), line.is_none())
            }
            Outcome::Limited(Limited { recorded: false, .. }) => return false,
            Outcome::Limited(Limited { group, directive, line, enforce, unsupported, .. }) => {
                let action = if enforce { "rate-limit" } else { "log" };
                let line = req.lines.file_line(line);
                if unsupported {
                    // Not a violation: the robot never promised to keep to it.
                    ("unsupported-directive", group, Some(directive), line, action, line.is_none())
                } else {
                    (directive, group, None, line, action, line.is_none())
                }
            }
            Outcome::Trap(TrapHit { path, banned, enforce, action, .. }) => {
                let taken = match (banned, enforce) {
                    (true, _) => "ban",
                    (false, true) => action.name(),
                    (false, false) => "log",
                };
                ("trap", None, Some(path), None, taken, true)
            }
            Outcome::Banned(Banned { action, .. }) => ("banned", None, None, None, action.name(), false),
            Outcome::Spoofed(Spoofed { action }) => ("spoofed-identity", None, None, None, action.name(), false),
            // The pattern field names the refused purpose (`train-ai`).
            Outcome::Refused(Refused { group, directive, line, purpose, action }) => {
                let line = req.lines.file_line(line);
                (directive, group, Some(purpose.as_str()), line, action.name(), line.is_none())
            }
            // RFC 9309 2.4: no violation, whatever it gets (`policy.robots_change`).
            Outcome::Stale(Stale { group, rule, action, .. }) => {
                let action = action.map_or("pass", |a| a.name());
                let line = req.lines.file_line(rule.line);
                ("stale-robots", group, Some(rule.pattern()), line, action, line.is_none())
            }
        };
        let stale = match self.outcome {
            Outcome::Stale(s) => Some(s),
            _ => None,
        };
        fn set(to: &mut String, from: &str) {
            to.clear();
            to.push_str(from);
        }
        fn set_opt(to: &mut Option<String>, from: Option<&str>) {
            match (to.as_mut(), from) {
                (Some(t), Some(f)) => set(t, f),
                (_, f) => *to = f.map(str::to_owned),
            }
        }
        out.time.clear();
        set(&mut out.site, req.site);
        set(&mut out.client, req.client);
        set(&mut out.method, req.method);
        set(&mut out.path, req.path);
        set(&mut out.host, req.host);
        set(&mut out.user_agent, req.user_agent);
        set_opt(&mut out.bot, agent.name);
        out.claims.clear();
        out.claims.extend(agent.also.iter().map(|c| c.name.to_owned()));
        out.category = agent.category.as_str();
        set_opt(&mut out.group, group);
        out.directive = directive;
        set_opt(&mut out.pattern, pattern);
        out.line = line;
        set(&mut out.robots_hash, req.robots_hash);
        out.managed = managed;
        out.robots_seen = self.robots_seen;
        out.fetched_hash = stale.map(|s| crate::robots::short_hash(s.fetched));
        out.fetched_at = stale.map(|s| crate::time::rfc3339_ms(s.fetched_at.saturating_mul(1000)));
        out.reason = match self.outcome {
            Outcome::Trap(TrapHit { why: "crowd-address", .. }) => Some("crowd-address"),
            _ => None,
        };
        out.identity = (self.identity != Identity::NotClaimed).then(|| self.identity.as_str());
        out.evidence = agent.weak_evidence.then_some("weak");
        out.signs.clear();
        out.signs.extend(agent.disguise.signs().map(|(s, _)| s.as_str()));
        set_opt(&mut out.ja4, req.ja4.filter(|_| agent.disguise.any()));
        out.action = action;
        out.status = 0;
        out.count = 1;
        out.first = None;
        out.last = None;
        true
    }
}
