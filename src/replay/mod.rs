//! `robotgate replay`: a site's existing access logs, decided line by line
//! as the proxy would have decided them.
//!
//! Each line goes through the proxy's own pipeline ([`crate::pipeline`]), not
//! a copy of it: the same facts gathered the same way, the same decision,
//! the same [`policy::Decision::record`]. Replay only drives it, as the
//! proxy does; what differs is only where the facts come from:
//!
//! * **Time** is the line's: [`Clock::Fixed`] at the logged second, so
//!   Crawl-delay, Request-rate and Visit-time are judged from the log's
//!   timestamps, per client and bot, as the proxy's rate table would have.
//! * **Identity** comes from the published IP ranges; what only reverse DNS
//!   could confirm is `unverifiable`, unless `--dns` looks it up on the spot
//!   ([`Setup::lookup`]).
//! * **robots.txt reads** record the version served at the line's time: an
//!   earlier one while it was in force (the versions' state file), so a
//!   crawler holding the copy it fetched is judged as the proxy judged it.
//! * **Traps** are judged as the proxy judges them (issue #40), by the log's
//!   time: a hit of a trap armed by then (when the traps' state file says it
//!   was first served, plus `arm_after`) bans the client on the worker's
//!   table until the ban's end, by the log's clock, and the client's later
//!   lines are `banned`; a verified crawler gets the site's action, never a
//!   ban; a hit before arming is recorded only. Whether the trap link was in
//!   the pages those clients saw, a log cannot tell.
//! * **The client** is the address the web server logged: behind a CDN or a
//!   load balancer that is not the crawler's, unless the server logged the
//!   forwarded address.
//!
//! The module opens no files and reads no clock: [`run`] takes readers and
//! returns a [`Tally`] and records. A [`Worker`] is single-threaded; [`run`]
//! spreads lines over workers by client address, so every client's requests
//! stay in order on one worker (its rate accounting is exact), and gives
//! every worker every `/robots.txt` fetch (so "has it read robots.txt" is
//! judged in log order too).

pub mod compare;
mod run;
mod tally;
mod view;

use std::net::IpAddr;
use std::time::{Duration, Instant};

pub use self::run::{run, Input, Options, Outcome as RunOutcome};
pub use self::tally::{BotTally, Collateral, CollateralKind, SiteTally, Tally, UnjudgedPath};
use crate::accesslog::{Entry, Format};
use crate::agent::{Agent, AgentKind, Classifier, Memo};
use crate::config::Settings;
use crate::identity::Identity;
use crate::pipeline::{Env, Need, Next, Peer, Pipeline, Request, SiteView, Verdict as PipelineVerdict};
use crate::policy::{self, Clock, Outcome, Rates, Requested, SiteRules};
use crate::record::Record;
pub use crate::report::replay::{ReplayBot, ReplayReport, ReplayRule, ReplaySite, Unreadable, LIMITS};
use crate::robots::lint::Diagnostic;
use crate::state::MemoryState;
use crate::target::{self, Gatekeep, TargetOptions};
use crate::time::rfc3339_ms;

/// A log line's headers: its User-Agent, if the format has one.
struct Logged<'r> {
    user_agent: Option<&'r str>,
}

impl<'r> crate::pipeline::Headers<'r> for Logged<'r> {
    fn each(&self, header: crate::pipeline::Header, each: &mut dyn FnMut(&'r [u8])) {
        if let (crate::pipeline::Header::UserAgent, Some(ua)) = (header, self.user_agent) {
            each(ua.as_bytes());
        }
    }

    fn text(&self, each: &mut dyn FnMut(&'r str, &'r str)) {
        if let Some(ua) = self.user_agent {
            each("user-agent", ua);
        }
    }

    /// A log line holds a few fields, not the request's headers: what a
    /// claimed browser did not send cannot be told (issue #67).
    fn presented(&self) -> Option<crate::agent::disguise::Presented<'r>> {
        None
    }
}

/// One site as replay judges it.
pub struct Site<'s> {
    /// What the site brings to a decision (traps included: see the module docs).
    pub rules: SiteRules<'s>,
    /// How its request-targets are read.
    pub target: &'s TargetOptions,
    /// Version of its robots.txt (short hash).
    pub robots_hash: &'s str,
    /// Which lines of its served robots.txt robotgate added (records and
    /// findings cite the site's own file).
    pub lines: &'s crate::robots::LineMap,
    /// Paths of the `Sitemap:` URLs of its robots.txt.
    pub sitemaps: Vec<String>,
    /// Served lines of its `$`-anchored rules that end in a file extension ([`anchored_lines`]).
    pub anchored: Vec<u32>,
    /// `robotgate lint`'s findings on its robots.txt, by file line.
    pub lint: Vec<Diagnostic>,
}

/// Everything the workers share, immutable.
pub struct Setup<'s> {
    /// The sites, in config order.
    pub sites: Vec<Site<'s>>,
    /// Routes a `Host` to a site (the proxy's routing).
    pub settings: &'s Settings,
    /// The classifier.
    pub classifier: &'s Classifier,
    /// Identity by the published ranges (see the module docs).
    pub ranges: crate::identity::ByRanges<'s>,
    /// Reverse DNS, on the spot (`--dns`): what it says of a claim of
    /// database robot `bot` from an address. Without it, what only reverse
    /// DNS could tell is unverifiable.
    pub lookup: Option<&'s (dyn Fn(usize, IpAddr) -> Identity + Sync)>,
    /// Each database robot's feeds, by entry index: a robot with none can
    /// only be taken at its word.
    pub bot_feeds: &'s [Vec<crate::identity::FeedId>],
    /// Only this site (`--site`), an index into `sites`.
    pub only_site: Option<usize>,
    /// Lines logged before this Unix second are skipped (`--since`).
    pub since_unix: Option<i64>,
    /// The log format.
    pub format: Format,
}

impl Setup<'_> {
    /// The site a line is judged for: by its Host, else the default site;
    /// `None` for a line of another site than `--site`.
    fn site_of(&self, entry: &Entry<'_>) -> Option<usize> {
        let i = match entry.host.as_deref() {
            Some(host) => self.settings.site_for_host(host),
            None => self.settings.site_for_host(""),
        }?;
        self.only_site.is_none_or(|only| only == i).then_some(i)
    }
}

/// What a worker does with a parsed line before deciding it, shared with
/// the reader that spreads lines over workers.
pub(crate) enum Route {
    /// Skipped: before `--since`, or another site.
    Skip,
    /// Decide it for this site; `robots` when it fetches `/robots.txt`.
    Judge { site: usize, robots: bool },
}

pub(crate) fn route(setup: &Setup<'_>, entry: &Entry<'_>) -> Route {
    if let (Some(since), Some(t)) = (setup.since_unix, entry.time_unix) {
        if t < since {
            return Route::Skip;
        }
    }
    let Some(site) = setup.site_of(entry) else { return Route::Skip };
    let robots = matches!(entry.method.as_ref(), "GET" | "HEAD")
        && match target::gatekeep(entry.method.as_bytes(), entry.target.as_bytes(), setup.sites[site].target) {
            Gatekeep::Judge(t) => t.split(|&b| b == b'?').next() == Some(b"/robots.txt"),
            _ => false,
        };
    Route::Judge { site, robots }
}

/// Slots of a worker's classification memo: logs repeat a few thousand
/// User-Agents millions of times, interleaved.
const MEMO_SLOTS: usize = 4096;

/// What robotgate would have done with one line: what `--compare` sets
/// side by side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verdict {
    /// robotgate would answer it itself (403, 429, other content, a
    /// redirect); otherwise the origin sees it (`log` and `noindex` too).
    pub refused: bool,
    /// The record's directive (`disallow`, `crawl-delay`, ...), or `""`.
    pub directive: &'static str,
    /// Its robots.txt line, if any.
    pub line: Option<u32>,
    /// A search engine verified by its operator's ranges.
    pub verified_search: bool,
}

impl Verdict {
    /// Passed, no record.
    pub const PASS: Verdict = Verdict { refused: false, directive: "", line: None, verified_search: false };
}

/// Decides lines, one after another, with its own rate and robots.txt-read
/// state.
pub struct Worker<'s> {
    setup: &'s Setup<'s>,
    state: MemoryState,
    memo: Memo,
    /// The monotonic instant of Unix second 0 on this worker's clock.
    base: Instant,
    /// The last logged time seen (a line without a time is taken to be then).
    last_unix: i64,
    /// What was seen.
    pub tally: Tally,
}

/// Clients and keys the state of one worker holds (least recently used go first).
const STATE_CLIENTS: usize = 1 << 18;

impl<'s> Worker<'s> {
    /// A worker with empty state.
    pub fn new(setup: &'s Setup<'s>) -> Worker<'s> {
        Worker {
            setup,
            state: MemoryState::new(STATE_CLIENTS),
            memo: Memo::new(MEMO_SLOTS),
            base: Instant::now(),
            last_unix: 0,
            tally: Tally::new(setup.sites.len()),
        }
    }

    /// Decide one parsed line. `counted`: the line is this worker's own (a
    /// `/robots.txt` fetch is given to every worker, so each knows who read
    /// it, but counted by one). `emit` gets its violation record, if any.
    pub fn decide(
        &mut self,
        line: u64,
        entry: &Entry<'_>,
        site_index: usize,
        counted: bool,
        emit: &mut dyn FnMut(Record),
    ) -> Verdict {
        let setup = self.setup;
        let site = &setup.sites[site_index];
        let unix = entry.time_unix.unwrap_or(self.last_unix).max(0);
        self.last_unix = unix;
        let clock = Clock::Fixed { instant: self.base + Duration::from_secs(unix as u64), unix_secs: unix as u64 };
        let client: Option<IpAddr> = entry.client.parse().ok();
        let req = Request {
            method: &entry.method,
            target: entry.target.as_bytes(),
            host: entry.host.as_deref().unwrap_or_default(),
            https: false,
            peer: Peer::Logged(client),
            headers: Logged { user_agent: entry.user_agent.as_deref() },
            hello: None,
        };
        let env = Env {
            classifier: setup.classifier,
            ranges: setup.ranges,
            client_header: Default::default(),
            trusted: &[],
            ja4_header: None,
        };
        let view = SiteView { rules: site.rules, target: site.target };
        // A log cannot tell a proxy's address (said in every report): no crowd.
        let mut pipeline = Pipeline::new(env, view, &req, None, Rates::Local, clock);
        if pipeline.facts().target.is_none() {
            // Not judged: refused (its status), or `OPTIONS *`.
            let refused = match pipeline.run(None, &self.state, clock) {
                Next::Done(PipelineVerdict::Refuse(status, _)) => Some(status),
                _ => None,
            };
            if counted {
                self.tally.sites[site_index].requests += 1;
                if let Some(status) = refused {
                    self.tally.refused(site_index, status);
                }
            }
            return match refused {
                Some(_) => Verdict { refused: true, directive: "request-target", line: None, verified_search: false },
                None => Verdict::PASS,
            };
        }
        let Some(user_agent) = entry.user_agent.as_deref() else {
            // The common format: no User-Agent, so no robot to hold to a group.
            if counted {
                self.tally.sites[site_index].requests += 1;
                let target = pipeline.facts().target.as_deref().unwrap_or_default();
                self.unjudged(site_index, target, entry);
            }
            return Verdict::PASS;
        };
        let decision = loop {
            match pipeline.run(Some(&mut self.memo), &self.state, clock) {
                Next::Done(PipelineVerdict::Decided(d)) => break d,
                Next::Done(PipelineVerdict::Refuse(..)) => return Verdict::PASS,
                // Only with `--dns`: looked up on the spot.
                Next::Need(Need::Dns { bot, client }) => {
                    let identity = setup.lookup.map_or(Identity::Unverifiable, |look| look(bot, client));
                    pipeline.answer_dns(bot, identity);
                }
                // Not asked: rates are local, and a log carries no signature.
                Next::Need(Need::Store(_)) => pipeline.answer_store(None),
                Next::Need(Need::KeyDirectory(_)) => pipeline.answer_signature(None),
            }
        };
        let classifier = setup.classifier;
        if !counted {
            return Verdict::PASS;
        }
        let target = pipeline.facts().target.as_deref().unwrap_or_default();
        let Some(agent) = decision.agent.as_ref() else {
            self.tally.sites[site_index].requests += 1;
            return Verdict::PASS;
        };
        // A search engine that keeps to robots.txt: verified by its ranges,
        // or one that publishes none and keeps to it by the database.
        let keeps_to_robots = match agent.kind {
            AgentKind::Known(i) if agent.category == crate::agent::Category::Search => {
                decision.identity == Identity::Verified
                    || (classifier.bot(i).obeys_robots
                        && setup.bot_feeds.get(i).is_none_or(Vec::is_empty)
                        && decision.identity != Identity::Spoofed)
            }
            _ => false,
        };
        let robots_fetch = matches!(decision.outcome, Outcome::File(policy::SiteFile::Robots));
        self.tally.request(site_index, agent, decision.identity, robots_fetch);
        if matches!(decision.outcome, Outcome::Pass) && !site.anchored.is_empty() {
            let_through(&mut self.tally, site_index, site, (target, &entry.target), agent, line);
        }
        let verified_search =
            agent.category == crate::agent::Category::Search && decision.identity == Identity::Verified;
        if let Outcome::Limited(l) = &decision.outcome {
            if l.unsupported && counted {
                // A pace or hours the robot says it ignores (#27): collateral
                // of the directive, whatever the policy does with it.
                self.tally.unsupported(
                    site_index,
                    l.directive,
                    site.lines.file_line(l.line).unwrap_or(l.line),
                    agent.name,
                );
            }
        }
        let enforcement = decision.outcome.enforcement();
        let refused = enforcement.status().is_some();
        if matches!(decision.outcome, Outcome::Pass | Outcome::File(_)) {
            return Verdict { verified_search, ..Verdict::PASS };
        }
        let requested = Requested {
            site: site.rules.name,
            client: &entry.client,
            method: &entry.method,
            path: &entry.target,
            host: entry.host.as_deref().unwrap_or_default(),
            user_agent,
            robots_hash: site.robots_hash,
            lines: site.lines,
            ja4: None,
        };
        let Some(mut record) = decision.record(&requested) else {
            return Verdict { verified_search, ..Verdict::PASS };
        };
        let verdict = Verdict { refused, directive: record.directive, line: record.line, verified_search };
        record.time = rfc3339_ms((unix as u64).saturating_mul(1000));
        record.status = enforcement.status().unwrap_or(entry.status.unwrap_or(0));
        self.tally.violation(site_index, &record);
        // Collateral: a search engine that keeps to robots.txt was served a
        // page the policy would refuse it, so the robots.txt robotgate would
        // serve is not the one it read. On a healthy site, that is a mistake
        // in it (refusing AI crawlers, say, is not: that is the point).
        // A rule robotgate adds (a trap, a managed group) is no mistake of the file's.
        let served = entry.status.is_some_and(|s| s < 400);
        if let (Outcome::Violation(v), true, true) = (&decision.outcome, keeps_to_robots, served) {
            if let Some(file_line) = site.lines.file_line(v.rule.line) {
                let kind = tally::kind_of(target, &site.sitemaps);
                let (rule, bot) = ((file_line, v.rule.pattern()), (record.bot.as_deref(), record.category));
                self.tally.collateral(site_index, site, kind, rule, bot, &record.path, line);
            }
        }
        emit(record);
        verdict
    }

    /// A line without a User-Agent: judged for the `*` group, as an
    /// unnamed robot would be, and counted by path only.
    fn unjudged(&mut self, site_index: usize, target: &[u8], entry: &Entry<'_>) {
        let site = &self.setup.sites[site_index];
        let Some(robots) = site.rules.robots else { return };
        let who = policy::Requester {
            is_bot: true,
            name: None,
            category: crate::agent::Category::OtherBot,
            tokens: &[] as &[&str],
        };
        let j = policy::judge(site.rules.policy, robots, &who, target);
        if let Some((rule, file_line)) = j.rule.and_then(|r| Some((r, site.lines.file_line(r.line)?))) {
            self.tally.unjudged(site_index, file_line, rule.pattern(), &entry.target);
        }
    }
}

/// A robot's request that a `$`-anchored rule ending in a file extension
/// (`Disallow: /*.pdf$`) of its group refuses without the query: allowed
/// (RFC 9309 2.2.3), but most likely not what the rule's author meant (see
/// [`crate::robots::lint::anchored_extension`]). `target`: as judged, and as
/// logged. Cost: one more group query, only for allowed robots' requests with
/// a query, on sites that have such a rule.
fn let_through(
    tally: &mut Tally,
    site_index: usize,
    site: &Site<'_>,
    target: (&[u8], &str),
    agent: &Agent<'_>,
    log_line: u64,
) {
    let (judged, logged) = target;
    let (Some(q), Some(robots)) = (judged.iter().position(|&b| b == b'?'), site.rules.robots) else { return };
    let who = policy::Requester { is_bot: true, name: agent.name, category: agent.category, tokens: &agent.tokens[..] };
    let j = policy::judge(site.rules.policy, robots, &who, &judged[..q]);
    let Some(rule) = j.rule.filter(|r| site.anchored.contains(&r.line)) else { return };
    let Some(file_line) = site.lines.file_line(rule.line) else { return };
    let (kind, bot) = (CollateralKind::QueryLetThrough, (agent.name, agent.category.as_str()));
    tally.collateral(site_index, site, kind, (file_line, rule.pattern()), bot, logged, log_line);
}

/// The paths of a robots.txt's `Sitemap:` URLs (`https://host/a/map.xml`
/// gives `/a/map.xml`), to tell a refused sitemap from other pages.
pub fn sitemap_paths(robots: &crate::robots::RobotsTxt) -> Vec<String> {
    robots
        .sitemaps()
        .iter()
        .filter_map(|s| {
            let rest = s.value.split_once("://").map_or(s.value.as_str(), |(_, r)| r);
            rest.find('/').map(|i| rest[i..].to_owned())
        })
        .collect()
}

/// The served lines of the `Disallow` rules that `lint` warns let a query
/// through ([`crate::robots::lint::anchored_extension`]).
pub fn anchored_lines(robots: &crate::robots::RobotsTxt) -> Vec<u32> {
    let rules = robots.rules().iter().filter(|r| r.kind == crate::robots::RuleKind::Disallow);
    rules
        .filter(|r| crate::robots::lint::anchored_extension(r.pattern().as_bytes()).is_some())
        .map(|r| r.line)
        .collect()
}
