//! Deciding one request: gather its facts, ask the core
//! ([`policy::decide_with`]), count it, and keep what its record will need.
//! The proxy ([`super::proxy`]) turns the [`Step`] into a response.

use std::borrow::Cow;
use std::cell::RefCell;
use std::sync::{Arc, Weak};
use std::thread::LocalKey;
use std::time::Instant;

use std::net::IpAddr;

use http::HeaderMap;
use pingora::proxy::Session;
use prometheus::{IntCounter, IntCounterVec};

use super::forwarded::client_ip;
use super::proxy::{host_of, Ctx, Gate};
use crate::agent::{Agent, AgentKind, Category, Remembered};
use crate::identity::{Identify, Identity};
use crate::load::LiveSite;
use crate::policy::{self, Clock, Outcome, RequestFacts};
use crate::server::snapshot::Snapshot;
use crate::server::store::redis::unix_ms;
use crate::server::telemetry::metrics;
use crate::state::shared::{Answer, Asking, Question};
use crate::target::{self, Gatekeep};

/// Bot label for metrics: only database names, so clients cannot mint series.
pub(super) fn bot_label<'a>(agent: &Agent<'a>) -> &'a str {
    match (agent.is_known(), agent.name) {
        (true, Some(n)) => n,
        _ => "other",
    }
}

/// User-Agents longer than this are classified every time rather than remembered.
const MEMO_MAX_UA: usize = 512;

/// The last User-Agent a thread classified: the snapshot whose classifier
/// did it, the exact bytes, and the verdict without its borrows.
struct Last {
    seen_by: Weak<Snapshot>,
    ua: Vec<u8>,
    agent: Option<Remembered>,
}

thread_local! {
    /// A keep-alive connection repeats its User-Agent on every request, and
    /// so does a crawler or a scraper in a loop: the same bytes classified
    /// by the same classifier give the same verdict, so it is rebuilt
    /// ([`Remembered::recall`]) rather than classified again. The key is the
    /// exact bytes and the snapshot: a reload brings a new classifier in a
    /// new snapshot, hence a miss. The `Weak` keeps the snapshot's
    /// allocation, so no later snapshot can take its address while it is
    /// remembered.
    static LAST: RefCell<Last> = const { RefCell::new(Last { seen_by: Weak::new(), ua: Vec::new(), agent: None }) };
}

/// Classify `ua` with `snap`'s classifier, or rebuild this thread's last
/// verdict when `ua` is the same bytes under the same snapshot. Cost of a
/// repeat: a pointer and a byte comparison, then a few slices.
fn classify<'a>(snap: &'a Arc<Snapshot>, ua: &'a [u8]) -> Agent<'a> {
    let again = LAST.with_borrow(|last| {
        let hit = last.seen_by.as_ptr() == Arc::as_ptr(snap) && last.ua.as_slice() == ua;
        hit.then(|| last.agent.as_ref().map(|r| r.recall(ua, &snap.classifier))).flatten()
    });
    if let Some(agent) = again {
        return agent;
    }
    let agent = snap.classifier.classify(ua);
    if ua.len() <= MEMO_MAX_UA {
        if let Some(kept) = Remembered::of(&agent, ua, &snap.classifier) {
            LAST.with_borrow_mut(|last| {
                if last.seen_by.as_ptr() != Arc::as_ptr(snap) {
                    last.seen_by = Arc::downgrade(snap);
                }
                last.ua.clear();
                last.ua.extend_from_slice(ua);
                last.agent = Some(kept);
            });
        }
    }
    agent
}

thread_local! {
    /// The counter handle of this thread's last violation and rate limit, by
    /// label values: a flood repeats them, and `with_label_values` hashes
    /// every value and takes a lock.
    static LAST_VIOLATION: LastHandle = const { RefCell::new(None) };
    static LAST_LIMITED: LastHandle = const { RefCell::new(None) };
}

/// A thread's last counter handle and the labels it was made for.
type LastHandle = RefCell<Option<(Vec<String>, IntCounter)>>;

/// Add one to `family{labels}`, through `last`'s handle when the labels repeat.
fn count(last: &'static LocalKey<LastHandle>, family: &IntCounterVec, labels: &[&str]) {
    last.with_borrow_mut(|last| {
        let same = last.as_ref().is_some_and(|(seen, _)| seen.iter().map(String::as_str).eq(labels.iter().copied()));
        if !same {
            let handle = family.with_label_values(labels);
            *last = Some((labels.iter().map(|l| (*l).to_owned()).collect(), handle));
        }
        if let Some((_, handle)) = last {
            handle.inc();
        }
    });
}

/// The request a decision is about, as its entry point read it: the proxy
/// from the request itself ([`Incoming::of`]), the auth listener from the
/// headers its edge forwarded ([`super::auth::original`]). Every part is
/// borrowed from the request: reading it copies nothing.
pub(super) struct Incoming<'r> {
    /// The method, as sent.
    pub method: &'r str,
    /// The request target (path and query) as sent, before normalisation.
    pub target: &'r [u8],
    /// The host the request names (`Host`, or the edge's `X-Forwarded-Host`).
    pub host: &'r str,
    /// The client reached the site over TLS.
    pub https: bool,
    /// Every header of the request (`User-Agent`, the client-address header, signatures).
    pub headers: &'r HeaderMap,
    /// The address of the socket peer: the client, or a proxy in front of it.
    pub peer: Option<IpAddr>,
}

impl<'r> Incoming<'r> {
    /// The request the proxy itself received.
    ///
    /// # Errors
    /// Why it is refused (`400`): its host has two readings ([`host_of`]).
    pub(super) fn of(session: &'r Session) -> Result<Incoming<'r>, &'static str> {
        let req = session.req_header();
        Ok(Incoming {
            method: req.method.as_str(),
            target: req.raw_path(),
            host: host_of(req)?,
            https: session.digest().is_some_and(|d| d.ssl_digest.is_some()),
            headers: &req.headers,
            peer: session.client_addr().and_then(|a| a.as_inet()).map(|a| a.ip()),
        })
    }

    /// Path and query of the target, split at the first `?`, when the target
    /// is UTF-8 (as every target a signature can cover is).
    pub(super) fn path_and_query(&self) -> Option<(&'r str, Option<&'r str>)> {
        let target = std::str::from_utf8(self.target).ok()?;
        Some(match target.split_once('?') {
            Some((path, query)) => (path, Some(query)),
            None => (target, None),
        })
    }
}

/// What the decision leaves the proxy to do, detached from the request's bytes.
pub(super) enum Step<'s> {
    /// Refuse the request itself, before any judging: status and reason.
    Refuse(u16, Cow<'static, str>),
    /// Only reverse DNS can tell whether the client is this database robot:
    /// look it up, then decide again. Nothing was counted or changed.
    Pending(usize),
    /// The shared store is to answer this rate question; then decide again
    /// with its answer. Nothing was counted or changed.
    Ask(Question),
    /// What the core decided.
    Decided(Outcome<'s>),
}

impl Gate {
    /// Decide a request: gather its facts, ask the core, count it, and keep
    /// what the record will need. Borrows the request only inside.
    pub(super) fn decide<'s>(
        &self,
        req: &Incoming<'_>,
        snap: &'s Arc<Snapshot>,
        site: &'s LiveSite,
        ctx: &mut Ctx,
        identify: &dyn Identify,
        rate: Answer,
    ) -> Step<'s> {
        ctx.client = client_ip(req.peer, req.headers, snap.settings.client_header, &snap.settings.trusted_proxies).ok();
        // What is judged is what the origin serves: the normalised target
        // (`crate::target`). A target no single reading fits is refused.
        let target = match target::gatekeep(req.method.as_bytes(), req.target, &site.conf.target) {
            Gatekeep::Judge(t) => t,
            Gatekeep::Pass => return Step::Decided(Outcome::Pass),
            Gatekeep::Refuse(status, why) => return Step::Refuse(status, why),
        };
        // What proxied responses say about usage (issue #29), whoever asks.
        ctx.content_usage = site.robots.as_ref().and_then(|r| policy::usage_header(&r.compiled, &target));
        // User-Agent is a singleton field (RFC 9110 10.1.5): with two, a
        // client could show a browser to one reader and a bot to another.
        let mut uas = req.headers.get_all("user-agent").into_iter();
        let user_agent = uas.next().map_or(&b""[..], |v| v.as_bytes());
        if uas.next().is_some() {
            return Step::Refuse(400, "more than one User-Agent header".into());
        }
        let facts = RequestFacts {
            fetch: matches!(req.method, "GET" | "HEAD"),
            target: &target,
            user_agent,
            client: ctx.client,
            crowd: *ctx.crowd.get_or_insert_with(|| {
                let forwarded = req.headers.contains_key("x-forwarded-for") || req.headers.contains_key("forwarded");
                self.crowd.note(ctx.client, forwarded)
            }),
        };
        let started = Instant::now();
        let classify = |ua| classify(snap, ua);
        // The decision goes through `Asking`: with a shared store, its rate
        // question comes back to be put to the store, and its ban or
        // robots.txt read is announced to the other instances; a read is
        // also kept across restarts ([`Reads`]). Without a store, rate
        // questions go to the local tables (`Answer::Local`).
        let mut asking = Asking::new(&*self.state, rate, (Instant::now(), unix_ms()));
        let decision = policy::decide_with(&facts, &site.rules(), classify, &asking, identify, Clock::System);
        if let (Identity::Pending, Some(bot)) = (decision.identity, decision.lookup) {
            return Step::Pending(bot);
        }
        // A question asked means the outcome is a pass if the store admits:
        // everything below is done as for a pass, and the question goes out
        // in its place. Only a "wait" brings the request back here, as the
        // second decision (`Answer::Given`), which counts nothing again.
        let question = asking.question();
        for event in asking.events() {
            self.reads.note(&event);
            if let Some(store) = &self.shared {
                store.announce(event);
            }
        }
        let second = std::mem::replace(&mut ctx.counted, true);
        if !second {
            let result = match decision.outcome {
                _ if decision.preference_unknown => Some("preference-unknown"),
                Outcome::Refused(_) => Some("refused"),
                _ => None,
            };
            if let Some(result) = result {
                metrics().preferences.with_label_values(&[site.conf.name.as_str(), result]).inc();
            }
        }
        let outcome = decision.outcome;
        let Some(agent) = decision.agent.as_ref() else {
            return Step::Decided(outcome);
        };
        if let Outcome::File(f) = outcome {
            return Step::Decided(Outcome::File(f)); // robots.txt: classified only to remember the read.
        }
        // A refused claim of a robot that signs: ask for a signature.
        ctx.accept_signature = matches!(outcome, Outcome::Spoofed(_))
            && match agent.kind {
                AgentKind::Known(i) => !snap.classifier.bot(i).signature_agents.is_empty(),
                _ => false,
            };
        let category = agent.category;
        if let Some(counter) = Category::ALL
            .iter()
            .position(|c| *c == category)
            .and_then(|i| snap.answers[ctx.site.unwrap_or_default()].requests.get(i))
        {
            if !second {
                counter.inc();
            }
        }
        if matches!(outcome, Outcome::Pass) && !agent.is_bot() {
            return Step::Decided(Outcome::Pass);
        }
        // A pass makes no record, and copies nothing.
        if !matches!(outcome, Outcome::Pass) {
            let site_name = site.conf.name.as_str();
            let client = ctx.client.map(|c| c.to_string()).unwrap_or_default();
            let requested = policy::Requested {
                site: site_name,
                client: &client,
                method: req.method,
                path: &String::from_utf8_lossy(req.target),
                host: req.host,
                user_agent: &String::from_utf8_lossy(user_agent),
                robots_hash: site.robots.as_ref().map_or("", |r| r.hash.as_str()),
                lines: site.robots.as_ref().map_or(crate::robots::LineMap::nothing_added(), |r| &r.lines),
            };
            ctx.pending = decision.record(&requested).map(Box::new);
            if let Some(r) = &ctx.pending {
                let bot = bot_label(agent);
                match outcome {
                    Outcome::Limited(_) => {
                        count(&LAST_LIMITED, &metrics().rate_limited, &[site_name, bot, r.directive])
                    }
                    Outcome::Stale(_) => metrics().stale_robots.with_label_values(&[site_name, bot, r.action]).inc(),
                    _ => {
                        let seen = if r.robots_seen == Some(true) { "true" } else { "false" };
                        let identity = r.identity.unwrap_or("not-claimed");
                        let labels = [site_name, bot, category.as_str(), r.action, seen, identity];
                        count(&LAST_VIOLATION, &metrics().violations, &labels);
                    }
                }
            }
        }
        let step = Step::Decided(outcome);
        if !second {
            metrics().decision_seconds.observe(started.elapsed().as_secs_f64());
        }
        drop(decision); // It borrows the target, which is free to move once it is gone.
        if let Cow::Owned(t) = target {
            ctx.rewrite = Some(t);
        }
        match (question, step) {
            (Some(q), Step::Decided(Outcome::Pass)) => Step::Ask(q),
            (_, step) => step,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot(dir: &std::path::Path) -> Arc<Snapshot> {
        let robots = dir.join("robots.txt");
        std::fs::write(&robots, "User-agent: GPTBot\nDisallow: /\n").unwrap();
        let config = dir.join("robotgate.yaml");
        let text = format!(
            "listen: [\"127.0.0.1:8080\"]\nsites:\n  - hosts: [\"localhost\"]\n    upstream: \"127.0.0.1:8000\"\n    robots: {}\n",
            robots.display()
        );
        std::fs::write(&config, text).unwrap();
        Arc::new(crate::server::snapshot::load(&config).unwrap())
    }

    /// Whether `ua` is what this thread last remembered under `snap`.
    fn remembered(snap: &Arc<Snapshot>, ua: &[u8]) -> bool {
        LAST.with_borrow(|l| l.seen_by.as_ptr() == Arc::as_ptr(snap) && l.ua.as_slice() == ua && l.agent.is_some())
    }

    #[test]
    fn the_memo_replays_only_the_same_bytes_with_the_same_classifier() {
        const FIREFOX: &[u8] = b"Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0";
        const GPTBOT: &[u8] = b"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2)";
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (snapshot(dir.path()), snapshot(dir.path()));
        assert!(!remembered(&a, FIREFOX), "nothing remembered yet");
        assert!(!classify(&a, FIREFOX).is_bot());
        assert!(remembered(&a, FIREFOX));
        assert!(!remembered(&b, FIREFOX), "another snapshot's classifier");
        assert!(!remembered(&a, &FIREFOX[..FIREFOX.len() - 1]), "other bytes");
        let first = classify(&a, GPTBOT);
        assert!(first.is_bot());
        assert!(remembered(&a, GPTBOT), "robots are remembered too");
        assert_eq!(classify(&a, GPTBOT), first, "and replayed as they were classified");
        assert_eq!(classify(&a, GPTBOT), a.classifier.classify(GPTBOT));
        let long = [FIREFOX, &[b'x'; MEMO_MAX_UA][..]].concat();
        assert!(!classify(&b, &long).is_bot());
        assert!(!remembered(&b, &long), "too long to remember");
        assert!(remembered(&a, GPTBOT), "still the last one remembered");
    }
}
