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

/// Hold an allowed bot to its group's hours, then its pace.
///
/// A directive the bot's operator says it ignores gives, by
/// `policy.unsupported_directives`: `pass`, a limit that is neither answered
/// nor recorded (replay counts it); `log`, a record `unsupported-directive`
/// and the request passes; `enforce`, the limit applies, recorded as
/// `unsupported-directive`. Cost, for a bot that ignores nothing: as
/// before, one clock read for hours and one rate-table probe for a pace.
pub(super) fn pace<'s>(
    j: &Judgement<'s>,
    site: &SiteRules<'s>,
    agent: &Agent<'_>,
    client: Option<IpAddr>,
    state: &dyn State,
    clock: Clock,
) -> Option<Limited<'s>> {
    let by_action = site.policy.action_for(agent.name, agent.category) != &Action::Log;
    let mode = site.policy.unsupported;
    let limited = |directive, line, wait, unsupported: bool, interval: Option<Duration>| Limited {
        group: j.group,
        directive,
        line,
        wait,
        interval,
        enforce: by_action && (!unsupported || mode == Unsupported::Enforce),
        unsupported,
        recorded: !unsupported || mode != Unsupported::Pass,
    };
    if let Some(w) = j.window {
        let wait = w.window.secs_until_open((clock.unix_secs() % 86_400) as u32);
        if wait > 0 {
            let ignored = agent.ignores.contains(Extension::VisitTime);
            return Some(limited("visit-time", w.line, Duration::from_secs(u64::from(wait)), ignored, None));
        }
    }
    let (all, client) = (j.rate?, client?);
    let ignored = |r: &Rate| Extension::from_name(r.directive).is_some_and(|e| agent.ignores.contains(e));
    // What the bot reads: the stricter of the directives it does not ignore.
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
    // One probe, at the strictest interval: a request it admits is within
    // every pace the group asks for.
    let wait = state.admit(&key, all.interval, clock.instant()).err()?;
    let elapsed = all.interval.saturating_sub(wait);
    match read {
        Some(r) if r.directive == all.directive => {
            Some(limited(all.directive, all.line, wait, ignored(&all), Some(all.interval)))
        }
        // Too soon for a pace the bot reads, too.
        Some(r) if elapsed < r.interval => {
            Some(limited(r.directive, r.line, r.interval - elapsed, false, Some(r.interval)))
        }
        _ => Some(limited(all.directive, all.line, wait, true, Some(all.interval))),
    }
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
