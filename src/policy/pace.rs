//! A bot's pace and hours: Crawl-delay, Request-rate and Visit-time, none of
//! them part of RFC 9309. Each robot is held only to the ones its operator
//! does not say it ignores, unless `policy.unsupported_directives: enforce`
//! (see [`crate::agent::extensions`]).

use std::net::IpAddr;
use std::time::Duration;

use super::{Action, Clock, Judgement, Limited, Rate, SiteRules, Unsupported};
use crate::agent::{Agent, Extension, Ignored};
use crate::net::client_key;
use crate::robots::{RobotsTxt, Selection};
use crate::state::{RateKey, State};

/// What a robot's pace and hours say of a request, before any rate clock
/// is read.
pub(super) enum Pace<'s, 'r> {
    /// No hours, no pace (or no client to key one to).
    Free,
    /// Outside its hours: limited now, whatever the clock.
    Now(Limited<'s>),
    /// A pace: the rate clock (local, or the shared store's) decides.
    Rate(Paced<'s, 'r>),
}

/// A pace to hold a robot to: its rate key, the interval to probe it at,
/// and how the limit reads for each wait. Made before the clock is asked,
/// so the question can go to a shared store and the answer come back
/// without judging the request again.
#[derive(Debug, Clone)]
pub struct Paced<'s, 'r> {
    /// Whose pace: the client, the site, the robot.
    pub key: RateKey<'r>,
    /// The strictest interval of the group: the one probed.
    pub interval: Duration,
    all: Rate,
    /// The robot's operator says it ignores `all`'s directive.
    all_ignored: bool,
    /// What the robot reads: the stricter of the directives it does not ignore.
    read: Option<Rate>,
    group: Option<&'s str>,
    /// The robot's action is not `log`.
    by_action: bool,
    mode: Unsupported,
}

impl<'s> Paced<'s, '_> {
    fn limited_by(
        &self,
        directive: &'static str,
        line: u32,
        wait: Duration,
        unsupported: bool,
        interval: Option<Duration>,
    ) -> Limited<'s> {
        Limited {
            group: self.group,
            directive,
            line,
            wait,
            interval,
            enforce: self.by_action && (!unsupported || self.mode == Unsupported::Enforce),
            unsupported,
            recorded: !unsupported || self.mode != Unsupported::Pass,
        }
    }

    /// The limit of a request the rate clock refused for `wait` more.
    pub fn limited(&self, wait: Duration) -> Limited<'s> {
        let all = self.all;
        let elapsed = all.interval.saturating_sub(wait);
        match self.read {
            Some(r) if r.directive == all.directive => {
                self.limited_by(all.directive, all.line, wait, self.all_ignored, Some(all.interval))
            }
            // Too soon for a pace the bot reads, too.
            Some(r) if elapsed < r.interval => {
                self.limited_by(r.directive, r.line, r.interval - elapsed, false, Some(r.interval))
            }
            _ => self.limited_by(all.directive, all.line, wait, true, Some(all.interval)),
        }
    }

    /// Ask `state`'s rate clock at `now`: `None` when it admits.
    pub fn probe(&self, state: &dyn State, now: std::time::Instant) -> Option<Limited<'s>> {
        state.admit(&self.key, self.interval, now).err().map(|wait| self.limited(wait))
    }
}

/// Hold an allowed bot to its group's hours, then its pace.
///
/// A directive the bot's operator says it ignores gives, by
/// `policy.unsupported_directives`: `pass`, a limit that is neither answered
/// nor recorded (replay counts it); `log`, a record `unsupported-directive`
/// and the request passes; `enforce`, the limit applies, recorded as
/// `unsupported-directive`. Cost, for a bot that ignores nothing: as
/// before, one clock read for hours; the rate-table probe is the caller's
/// ([`Paced::probe`]).
pub(super) fn pace<'s: 'r, 'r>(
    j: &Judgement<'s>,
    site: &SiteRules<'s>,
    agent: &Agent<'r>,
    client: Option<IpAddr>,
    clock: Clock,
) -> Pace<'s, 'r> {
    // Only recorded: a `log` action, or a robot named only by weak evidence
    // on a site that does not enforce those (issue #53).
    let by_action =
        site.policy.action_for(agent.name, agent.category) != &Action::Log && !site.policy.only_records(agent);
    let mode = site.policy.unsupported;
    if let Some(w) = j.window {
        let wait = w.window.secs_until_open((clock.unix_secs() % 86_400) as u32);
        if wait > 0 {
            let ignored = agent.ignores.contains(Extension::VisitTime);
            let limited = Limited {
                group: j.group,
                directive: "visit-time",
                line: w.line,
                wait: Duration::from_secs(u64::from(wait)),
                interval: None,
                enforce: by_action && (!ignored || mode == Unsupported::Enforce),
                unsupported: ignored,
                recorded: !ignored || mode != Unsupported::Pass,
            };
            return Pace::Now(limited);
        }
    }
    let (Some(all), Some(client)) = (j.rate, client) else { return Pace::Free };
    let ignored = |r: &Rate| Extension::from_name(r.directive).is_some_and(|e| agent.ignores.contains(e));
    let read = if !ignored(&all) || mode == Unsupported::Enforce {
        Some(all)
    } else {
        match (site.robots, &j.selection) {
            (Some(robots), Some(selection)) => rate_of(robots, selection, agent.ignores),
            _ => None,
        }
    };
    let bot = agent.name.or_else(|| agent.tokens.first().copied()).unwrap_or("");
    let key = RateKey { client: client_key(client, site.policy.ipv6_prefix), site: site.name, bot };
    Pace::Rate(Paced {
        key,
        interval: all.interval,
        all,
        all_ignored: ignored(&all),
        read,
        group: j.group,
        by_action,
        mode,
    })
}

/// The stricter of the group's Crawl-delay and Request-rate, leaving out
/// those in `ignored`.
pub(super) fn rate_of(robots: &RobotsTxt, selection: &Selection, ignored: Ignored) -> Option<Rate> {
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
    let delay = delay.filter(|_| !ignored.contains(Extension::CrawlDelay));
    let rate = rate.filter(|_| !ignored.contains(Extension::RequestRate));
    match (delay, rate) {
        (Some(a), Some(b)) => Some(if a.interval >= b.interval { a } else { b }),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::super::{decide, Outcome, PolicyConfig, RequestFacts, SiteRules, Unsupported};
    use crate::agent::Classifier;
    use crate::identity::TakeTheirWord;
    use crate::policy::Clock;
    use crate::robots::RobotsTxt;

    const YANDEX: &[u8] = b"Mozilla/5.0 (compatible; YandexBot/3.0; +http://yandex.com/bots)";

    /// (outcome, directive, enforced, recorded) of YandexBot's requests at
    /// the given seconds, under `mode`.
    fn run(robots: &[u8], mode: Unsupported, at: &[u64]) -> Vec<(&'static str, &'static str, bool, bool)> {
        let robots = RobotsTxt::compile(robots);
        let policy = PolicyConfig { unsupported: mode, ..PolicyConfig::default() };
        let site = SiteRules::new("s", &policy, Some(&robots));
        let (c, state, base) = (Classifier::builtin(), crate::state::MemoryState::new(64), Instant::now());
        at.iter()
            .map(|&s| {
                let clock = Clock::Fixed { instant: base + Duration::from_secs(s), unix_secs: 3600 + s };
                let facts = RequestFacts {
                    fetch: true,
                    target: b"/p",
                    user_agent: YANDEX,
                    client: Some("192.0.2.1".parse().unwrap()),
                    crowd: false,
                };
                match decide(&facts, &site, &c, &state, &TakeTheirWord, clock).outcome {
                    Outcome::Pass => ("pass", "", false, false),
                    Outcome::Limited(l) => ("limited", l.directive, l.enforce, l.recorded && l.unsupported),
                    _ => ("other", "", false, false),
                }
            })
            .collect()
    }

    #[test]
    fn a_robot_is_held_to_the_request_rate_it_reads_not_the_crawl_delay_it_ignores() {
        // Yandex ignores Crawl-delay (30 s); its Request-rate (one per 10 s) is unknown, so it holds.
        let robots = b"User-agent: *\nDisallow: /private/\nCrawl-delay: 30\nRequest-rate: 1/10s\n";
        let got = run(robots, Unsupported::Pass, &[0, 5, 12]);
        assert_eq!(got[0].0, "pass");
        assert_eq!(got[1], ("limited", "request-rate", true, false), "too soon for the Request-rate");
        // 12 s after the first: past the Request-rate, within the ignored Crawl-delay: let through, unrecorded.
        assert_eq!(got[2], ("limited", "crawl-delay", false, false));
        let got = run(robots, Unsupported::Log, &[0, 12]);
        assert_eq!(got[1], ("limited", "crawl-delay", false, true), "recorded as unsupported-directive");
        let got = run(robots, Unsupported::Enforce, &[0, 12]);
        assert_eq!(got[1], ("limited", "crawl-delay", true, true));
    }

    #[test]
    fn visit_time_is_not_ignored_unless_the_operator_says_so() {
        // Yandex says nothing about Visit-time: outside the hours it is limited.
        let got = run(b"User-agent: *\nDisallow: /x\nVisit-time: 0500-0600\n", Unsupported::Pass, &[0]);
        assert_eq!(got[0], ("limited", "visit-time", true, false));
    }
}
