//! Deciding one request: drive the core's pipeline ([`crate::pipeline`]),
//! doing the I/O it asks for (a signature's key directory, one reverse-DNS
//! lookup, the shared store's rate clock), then count what it decided and
//! keep what the record will need. The proxy ([`super::proxy`]) and the
//! auth listener ([`super::auth`]) turn the [`Step`] into a response.

use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::net::IpAddr;
use std::sync::Arc;
use std::thread::LocalKey;
use std::time::{Duration, Instant};

use http::{HeaderMap, HeaderName};
use pingora::http::RequestHeader;
use pingora::proxy::Session;
use prometheus::{IntCounter, IntCounterVec};

use super::gate::{Ctx, Gate};
use crate::agent::disguise::{Hello, Presented};
use crate::agent::Category;
use crate::head::Unreadable;
use crate::identity::signature::Inspection;
use crate::identity::signature::Verdict as Signed;
use crate::identity::Identity;
use crate::pipeline::answer::{self, Counts};
use crate::pipeline::{self, Carried, Env, Header, Need, Next, Peer, Pipeline, Request, SiteView, Verdict};
use crate::policy::{self, Clock, Decision, Outcome, Rates, TallyFamily};
use crate::server::snapshot::Snapshot;
use crate::server::telemetry::metrics;
use crate::server::verify::dns::{DnsVerdict, Trouble};
use crate::server::verify::identity::identity_of;
use crate::server::verify::wba::{self};

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
    /// Where the client address comes from: the socket peer (the client, or
    /// a proxy in front of it), or the field an edge's protocol names it in.
    pub peer: Peer,
    /// What its head held that could not be read as sent ([`crate::head`]):
    /// refused whatever else it is, with a record.
    pub unreadable: Option<Unreadable>,
    /// By when the edge that asks must have its answer (none for the
    /// proxy's own requests: each lookup is bounded on its own).
    pub due: Option<Due>,
    /// The ClientHello the proxy read before its TLS handshake.
    pub hello: Option<Hello>,
}

/// When an edge's question must be decided ([`crate::config::deadlines::decide_by`]
/// after it came), and the listener it came to, for the counts.
#[derive(Debug, Clone, Copy)]
pub(super) struct Due {
    /// The instant.
    pub by: Instant,
    /// The listener's name (`spoe`, `ext_authz`, `auth`).
    pub listener: &'static str,
}

/// `lookup`'s answer, unless `due` comes first (then `None`, counted as
/// `lookup` in `robotgate_edge_deadline_total`). Without a deadline, the
/// lookup's own bound is the only one.
async fn within<T>(due: Option<Due>, lookup: &'static str, f: impl std::future::Future<Output = T>) -> Option<T> {
    let Some(due) = due else { return Some(f.await) };
    match tokio::time::timeout_at(tokio::time::Instant::from_std(due.by), f).await {
        Ok(answer) => Some(answer),
        Err(_) => {
            metrics().edge_deadline.with_label_values(&[due.listener, lookup]).inc();
            None
        }
    }
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
            peer: Peer::Socket(session.client_addr().and_then(|a| a.as_inet()).map(|a| a.ip())),
            unreadable: super::conn::unreadable(session),
            due: None,
            hello: super::hello::of(session),
        })
    }
}

/// The host a request names, as the origin reads it (RFC 9112 3.2.2): an
/// absolute-form target's authority (and HTTP/2's `:authority`) before
/// `Host`. Sites are matched on its one reading ([`crate::net::site_host`]).
///
/// # Errors
/// For a `400`: two `Host` headers (RFC 9112 3.2: two readings of one
/// request), or a `Host` that is not text.
pub(super) fn host_of(req: &RequestHeader) -> Result<&str, &'static str> {
    if let Some(authority) = req.uri.authority() {
        return Ok(authority.as_str());
    }
    let mut hosts = req.headers.get_all(http::header::HOST).into_iter();
    let host = hosts.next().map_or(Ok(""), |h| std::str::from_utf8(h.as_bytes()).map_err(|_| "Host is not text"))?;
    if hosts.next().is_some() {
        return Err("more than one Host header");
    }
    Ok(host)
}

impl Gate {
    /// The site `req` is for, noted in `ctx`; `None` (answer 421) when no
    /// site has its host and none is the default.
    pub(super) fn site_for(&self, snap: &Snapshot, req: &Incoming<'_>, ctx: &mut Ctx) -> Option<usize> {
        ctx.site = snap.settings.site_for_host(req.host);
        if ctx.site.is_none() {
            ctx.status = 421;
        }
        ctx.site
    }
}

/// A request's headers, as the pipeline reads them: what is asked of them
/// by presence and the headers a claimed browser is judged by are read in
/// one walk, at the first ask.
struct Fields<'r> {
    map: &'r HeaderMap,
    walked: Cell<Option<(Presented<'r>, Carried)>>,
}

impl<'r> Fields<'r> {
    fn new(map: &'r HeaderMap) -> Fields<'r> {
        Fields { map, walked: Cell::new(None) }
    }

    /// The one walk (`HeaderMap` names are lower case; values read as bytes).
    fn walk(&self) -> (Presented<'r>, Carried) {
        if let Some(walked) = self.walked.get() {
            return walked;
        }
        let (mut p, mut c) = (Presented::default(), Carried::default());
        for (name, value) in self.map {
            let name = name.as_str().as_bytes();
            p.note(name, value);
            c.note(name);
        }
        self.walked.set(Some((p, c)));
        (p, c)
    }
}

/// The pipeline's headers by name, made once.
fn name_of(header: Header) -> HeaderName {
    const XFF: HeaderName = HeaderName::from_static("x-forwarded-for");
    const X_REAL_IP: HeaderName = HeaderName::from_static("x-real-ip");
    const SIGNATURE_INPUT: HeaderName = HeaderName::from_static("signature-input");
    match header {
        Header::UserAgent => http::header::USER_AGENT,
        Header::XForwardedFor => XFF,
        Header::Forwarded => http::header::FORWARDED,
        Header::XRealIp => X_REAL_IP,
        Header::SignatureInput => SIGNATURE_INPUT,
    }
}

impl<'r> pipeline::Headers<'r> for Fields<'r> {
    fn each(&self, header: Header, each: &mut dyn FnMut(&'r [u8])) {
        for value in self.map.get_all(name_of(header)) {
            each(value.as_bytes());
        }
    }

    fn text(&self, each: &mut dyn FnMut(&'r str, &'r str)) {
        for (name, value) in self.map {
            if let Ok(value) = value.to_str() {
                each(name.as_str(), value);
            }
        }
    }

    fn has(&self, header: Header) -> bool {
        self.map.contains_key(name_of(header))
    }

    fn carried(&self) -> Carried {
        self.walk().1
    }

    fn presented(&self) -> Option<Presented<'r>> {
        Some(self.walk().0)
    }
}

/// What the decision leaves the proxy to do, detached from the request's bytes.
pub(super) enum Step<'s> {
    /// Refuse the request itself, before any judging: status and reason.
    Refuse(u16, Cow<'static, str>),
    /// What the core decided.
    Decided(Outcome<'s>),
}

impl Gate {
    /// Decide `req` for site `site`: the pipeline's facts, its needs met
    /// (at most one key-directory fetch, one lookup and one store question,
    /// each bounded), then counted and its record kept in `ctx`.
    pub(super) async fn settle<'s>(
        &self,
        req: &Incoming<'_>,
        snap: &'s Arc<Snapshot>,
        site: usize,
        ctx: &mut Ctx,
    ) -> Step<'s> {
        let live = &snap.sites[site];
        let view = SiteView { rules: live.rules(), target: &live.conf.target };
        // A rate question goes to the shared store only while it answers.
        let rates = if self.shared.as_ref().is_some_and(|s| s.is_up()) { Rates::Shared } else { Rates::Local };
        let request = Request {
            method: req.method,
            target: req.target,
            host: req.host,
            https: req.https,
            peer: req.peer,
            headers: Fields::new(req.headers),
            hello: req.hello.as_ref(),
        };
        let crowd = |client: Option<IpAddr>, forwarded: bool| self.crowd.note(client, forwarded);
        let mut p = Pipeline::new(Env::of(&snap.files), view, &request, Some(&crowd), rates, Clock::System);
        if let Some(why) = p.facts().client_unknown {
            metrics().client_unknown.with_label_values(&[why.as_str()]).inc();
        }
        ctx.client = p.facts().client;
        if let Some(why) = req.unreadable {
            ctx.pending = Some(Box::new(self.unreadable_record(req, snap, site, ctx, why, p.facts().user_agent)));
            return Step::Refuse(400, why.explain().into());
        }
        // Only the time spent deciding, not the waits for answers (and the
        // clock is read again only for a decision that is timed).
        let (mut spent, mut segment) = (Duration::ZERO, Instant::now());
        // The rare awaits below are boxed: their futures are large, and
        // inline they would make every request's future as large, which
        // Pingora copies whole at each request (async_trait boxes it).
        let verdict = loop {
            let next = p.run(None, &*self.state, Clock::System);
            if let Next::Need(_) = next {
                spent += segment.elapsed();
            }
            match next {
                Next::Done(verdict) => break verdict,
                // Past an edge's deadline each lookup is answered as one
                // that failed (docs/edge.md, "Deadlines"): a signature as
                // unverified, reverse DNS as unverifiable (the claimed
                // robot's group), the store as unreachable (the local table).
                Next::Need(Need::KeyDirectory(inspection)) => {
                    let signed = match req.due {
                        None => Some(Box::pin(self.signed_by(&inspection)).await),
                        Some(_) => {
                            Box::pin(within(req.due, "key-directory", self.signed_by_detached(inspection))).await
                        }
                    };
                    p.answer_signature(signed.flatten());
                }
                Next::Need(Need::Dns { bot, client }) => {
                    let identity = Box::pin(within(req.due, "dns", self.look_up(snap, bot, client))).await;
                    p.answer_dns(
                        bot,
                        identity.unwrap_or_else(|| {
                            unchecked(&snap.classifier.bot(bot).name, client, &Trouble::Deadline);
                            Identity::Unverifiable
                        }),
                    );
                }
                // Bounded by `state.timeout_ms`; only robots whose group sets a pace get here.
                Next::Need(Need::Store(question)) => {
                    let answer = match &self.shared {
                        Some(store) => Box::pin(within(req.due, "store", store.admit(&question))).await.flatten(),
                        None => None,
                    };
                    p.answer_store(answer);
                }
            }
            segment = Instant::now();
        };
        let decision = match verdict {
            Verdict::Refuse(status, why) => return Step::Refuse(status, why),
            Verdict::Decided(d) => d,
        };
        for event in p.take_events() {
            self.reads.note(&event);
            if let Some(store) = &self.shared {
                store.announce(event);
            }
        }
        ctx.content_usage = p.facts().content_usage.clone();
        let indexing = &snap.sites[site].conf.indexing;
        if !indexing.rules.is_empty() {
            if let Some(target) = p.facts().target.as_deref() {
                ctx.indexing = indexing.rules.header_values(target);
            }
        }
        ctx.observe = indexing.observe;
        ctx.accept_signature = p.asks_for_signature(&decision);
        // A robot's request, or one with an outcome: timed, and forwarded as
        // judged. A browser's pass goes on as sent (it was not judged).
        if self.count(req, snap, site, ctx, &decision, p.facts()) {
            metrics().decision_seconds.observe((spent + segment.elapsed()).as_secs_f64());
            ctx.rewrite = p.take_rewrite();
        }
        Step::Decided(decision.outcome)
    }

    /// Count a decision, and make its record (kept in `ctx` for `logging`).
    /// Whether it is timed ([`Counts::timed`]: it judged a robot, or a
    /// request with an outcome; not a browser's pass, a served file, or a
    /// request never classified).
    fn count(
        &self,
        req: &Incoming<'_>,
        snap: &Snapshot,
        site: usize,
        ctx: &mut Ctx,
        d: &Decision<'_, '_>,
        facts: &pipeline::Facts<'_>,
    ) -> bool {
        let live = &snap.sites[site];
        let site_name = live.conf.name.as_str();
        // Its metrics' label (`_other` past `metrics.per_site_limit`).
        let metric_site = snap.answers[site].metric_site.as_str();
        // A site file is served here by the proxy listener only (the edge
        // serves what the auth listener lets through), when it was loaded.
        let served = match d.outcome {
            Outcome::File(which) => !self.auth && answer::site_file(live, which).is_some(),
            _ => false,
        };
        let counts = Counts::of(d, served);
        if let Some(result) = counts.preference {
            metrics().preferences.with_label_values(&[metric_site, result]).inc();
        }
        if let Some(file) = counts.file {
            metrics().served.with_label_values(&[metric_site, file.as_str()]).inc();
        }
        let Some(category) = counts.request else { return counts.timed };
        if let Some(counter) =
            Category::ALL.iter().position(|c| *c == category).and_then(|i| snap.answers[site].requests.get(i))
        {
            counter.inc();
        }
        // A pass makes no record, and copies nothing.
        if !counts.record {
            return counts.timed;
        }
        let client = ctx.client.map(crate::net::ip_text).unwrap_or_default();
        let requested = policy::Requested {
            site: site_name,
            client: &client,
            method: req.method,
            path: &String::from_utf8_lossy(req.target),
            host: req.host,
            user_agent: &String::from_utf8_lossy(facts.user_agent),
            robots_hash: live.robots.as_ref().map_or("", |r| r.hash.as_str()),
            lines: live.robots.as_ref().map_or(crate::robots::LineMap::nothing_added(), |r| &r.lines),
            ja4: facts.hello.as_ref().map(|h| h.ja4.as_str()),
        };
        ctx.pending = d.record(&requested).map(Box::new);
        let Some(r) = &ctx.pending else { return counts.timed };
        if let Some(tally) = d.tally(metric_site, r) {
            let labels = tally.values();
            match tally.family {
                TallyFamily::Limited => count(&LAST_LIMITED, &metrics().rate_limited, &labels),
                TallyFamily::Stale => metrics().stale_robots.with_label_values(&labels).inc(),
                TallyFamily::Violation => count(&LAST_VIOLATION, &metrics().violations, &labels),
            }
        }
        counts.timed
    }

    /// The record of a request refused for what its head held: who sent it
    /// (the client, and what the scrubbed User-Agent reads as), what for,
    /// and why; counted.
    fn unreadable_record(
        &self,
        req: &Incoming<'_>,
        snap: &Snapshot,
        site: usize,
        ctx: &Ctx,
        why: Unreadable,
        ua: &[u8],
    ) -> crate::record::Record {
        let live = &snap.sites[site];
        let agent = snap.classifier.classify(ua);
        metrics().unreadable.with_label_values(&[why.as_str()]).inc();
        crate::record::Record {
            site: live.conf.name.clone(),
            client: ctx.client.map(crate::net::ip_text).unwrap_or_default(),
            method: req.method.to_owned(),
            path: String::from_utf8_lossy(req.target).into_owned(),
            host: req.host.to_owned(),
            user_agent: String::from_utf8_lossy(ua).into_owned(),
            bot: agent.name.map(str::to_owned),
            category: agent.category.as_str(),
            directive: crate::record::Record::UNREADABLE,
            reason: Some(why.as_str()),
            robots_hash: live.robots.as_ref().map_or(String::new(), |r| r.hash.clone()),
            action: "block",
            status: 400,
            count: 1,
            ..Default::default()
        }
    }

    /// The host of the Web Bot Auth agent whose signature verifies (RFC 9421,
    /// draft-meunier-webbotauth-httpsig-protocol): the directory fetch is
    /// bounded and cached by [`wba::DirectoryCache`].
    async fn signed_by(&self, inspection: &Inspection) -> Option<String> {
        match wba::verify_inspection(&self.wba, inspection).await {
            Signed::Verified { agent, .. } => pipeline::agent_host(&agent),
            _ => None,
        }
    }

    /// [`Gate::signed_by`] in a task of its own, for an edge's deadline: a
    /// directory slower than the deadline is still fetched (bounded by its
    /// own limits) and cached, so the robot's next request finds its keys.
    async fn signed_by_detached(&self, inspection: Inspection) -> Option<String> {
        let cache = self.wba.clone();
        let task = tokio::spawn(async move {
            match wba::verify_inspection(&cache, &inspection).await {
                Signed::Verified { agent, .. } => pipeline::agent_host(&agent),
                _ => None,
            }
        });
        task.await.ok().flatten()
    }

    /// Whether `ip` is database robot `bot`, by forward-confirmed reverse
    /// DNS: from this instance's cache, else a verdict another instance
    /// shared, else a lookup whose verdict is then shared. No resolver:
    /// unverifiable.
    async fn look_up(&self, snap: &Snapshot, bot: usize, ip: IpAddr) -> Identity {
        let Some(dns) = self.dns.as_deref() else { return Identity::Unverifiable };
        let entry = snap.classifier.bot(bot);
        let suffixes = &entry.rdns;
        if let Some(verdict) = dns.cached(ip, suffixes) {
            return identity_of(&verdict);
        }
        let shared = match &self.shared {
            Some(store) => store.rdns(ip, suffixes).await,
            None => None,
        };
        let verdict = match shared {
            Some((verdict, ttl)) => {
                dns.remember(ip, suffixes, verdict.clone(), ttl);
                verdict
            }
            None => {
                let verdict = dns.verify(ip, suffixes).await;
                if let (Some(store), Some((verdict, ttl))) = (&self.shared, dns.cached_for(ip, suffixes)) {
                    store.share_rdns(ip, suffixes, &verdict, ttl);
                }
                verdict
            }
        };
        if let DnsVerdict::Unverifiable { reason } = &verdict {
            unchecked(&entry.name, ip, reason);
        }
        identity_of(&verdict)
    }
}

/// A claim that only reverse DNS could settle, and it did not: never
/// silent (issue #39). The robot is judged as what it claims, unverified;
/// robots whose operator publishes complete ranges never get here.
fn unchecked(bot: &str, ip: IpAddr, trouble: &Trouble) {
    let reason = trouble.label();
    metrics().identity_unchecked.with_label_values(&[bot, reason]).inc();
    tracing::warn!(target: "robotgate::identity", bot, client = %ip, reason = %trouble, "claim not checked: reverse DNS gave no answer; judged unverified");
}
