//! One decision, everywhere (issue #40): the request's facts gathered once,
//! then a decision that stops where only the outside world can tell, and
//! is resumed with the answer. The proxy, the auth listener and replay (and
//! the nginx module) only drive it: they do the I/O it asks for.
//!
//! ```text
//! let mut p = Pipeline::new(env, site, &request, crowd, rates, clock);   // the facts, once
//! loop {
//!     match p.run(memo, state, clock) {
//!         Next::Need(Need::KeyDirectory(i)) => p.answer_signature(fetch_and_verify(i)),
//!         Next::Need(Need::Dns { bot, client }) => p.answer_dns(bot, look_up(bot, client)),
//!         Next::Need(Need::Store(q)) => p.answer_store(ask(q)),
//!         Next::Done(verdict) => break verdict,
//!     }
//! }
//! ```
//!
//! What is gathered, once, in [`Pipeline::new`]: the client address behind
//! trusted proxies ([`crate::net::client_address`]), the request-target's
//! one reading ([`crate::target::gatekeep`]), the one User-Agent, the
//! site's `Content-Usage` for the path, and whether the client is the
//! crowd's address. The classification is made at most once, through the
//! one memo ([`crate::agent::Memo`]), when the decision first needs it.
//! A resumed decision reuses all of it ([`Pipeline::classifications`]
//! counts, and tests hold it to one).
//!
//! No I/O, no clock but the one given, no Pingora. What robotgate answers
//! with, and what a decision counts, is [`answer`]'s.

pub mod answer;
mod gather;
mod request;

use std::borrow::Cow;
use std::net::IpAddr;
use std::time::Duration;

use crate::agent::disguise::{self, Hello, Presented, Scheme};
use crate::agent::Agent;
use crate::agent::{claim_here, classify_here, AgentKind, Classifier, Memo};
use crate::identity::signature::Inspection;
use crate::identity::{rdns::suffix_matches, ByRanges, Identify, Identity};
use crate::net::{client_address, Cidr, ClientHeader, Unknown};
use crate::policy::{self, Asked, Clock, Decision, Outcome, Rates, RequestFacts, SiteRules, Step};
use crate::state::shared::{Asking, Event, Question};
use crate::state::State;
use crate::target::{self, Gatekeep, TargetOptions};

pub use request::{Carried, Header, Headers, Peer, Request};

/// What every request of one snapshot is decided with.
#[derive(Clone, Copy)]
pub struct Env<'s> {
    /// The User-Agent classifier.
    pub classifier: &'s Classifier,
    /// Identity by the published ranges.
    pub ranges: ByRanges<'s>,
    /// The header trusted proxies write the client address in.
    pub client_header: ClientHeader,
    /// The trusted proxies.
    pub trusted: &'s [Cidr],
    /// The header they write the client's JA4 in (lower case), if any.
    pub ja4_header: Option<&'s str>,
}

impl<'s> Env<'s> {
    /// The environment of a loaded snapshot.
    pub fn of(snap: &'s crate::load::Snapshot) -> Env<'s> {
        Env {
            classifier: &snap.classifier,
            ranges: snap.by_ranges(),
            client_header: snap.settings.client_header,
            trusted: &snap.settings.trusted_proxies,
            ja4_header: snap.settings.ja4_header.as_deref(),
        }
    }
}

/// A site, as a decision needs it.
#[derive(Clone, Copy)]
pub struct SiteView<'s> {
    /// Its rules.
    pub rules: SiteRules<'s>,
    /// How its request-targets are read.
    pub target: &'s TargetOptions,
}

/// What the driver is to find out before the decision can go on.
#[derive(Debug)]
pub enum Need {
    /// Fetch the key directories of the request's signature agents (Web
    /// Bot Auth) and verify it; answer with [`Pipeline::answer_signature`].
    KeyDirectory(Inspection),
    /// Confirm by forward-confirmed reverse DNS whether `client` is database
    /// robot `bot`; answer with [`Pipeline::answer_dns`]. At most once per request.
    Dns {
        /// The database robot.
        bot: usize,
        /// The client address.
        client: IpAddr,
    },
    /// Put the rate question to the shared store; answer with
    /// [`Pipeline::answer_store`].
    Store(Question),
}

/// How a request ends.
// Boxed, the decision would cost every request an allocation; it is
// returned once per request, not stored.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Verdict<'s, 'r> {
    /// Refused before any judging (a target with no safe reading, two
    /// User-Agents): status and reason.
    Refuse(u16, Cow<'static, str>),
    /// What the core decided.
    Decided(Decision<'s, 'r>),
}

/// The next thing a driver does.
#[derive(Debug)]
pub enum Next<'s, 'r> {
    /// Find this out, answer it, and run again.
    Need(Need),
    /// Carry this out.
    Done(Verdict<'s, 'r>),
}

/// The facts of one request, gathered once.
#[derive(Debug)]
pub struct Facts<'r> {
    /// The method, as sent.
    pub method: &'r str,
    /// The target as sent.
    pub raw_target: &'r [u8],
    /// The host as named.
    pub host: &'r str,
    /// Over TLS.
    pub https: bool,
    /// The client address after trusted proxies.
    pub client: Option<IpAddr>,
    /// Why a trusted proxy named no client, if it named none (metric
    /// `robotgate_client_unknown_total`).
    pub client_unknown: Option<Unknown>,
    /// The one User-Agent (empty when absent).
    pub user_agent: &'r [u8],
    /// What is judged and forwarded: the normalised target; `None` when
    /// the target is not judged (refused, or `OPTIONS *`).
    pub target: Option<Cow<'r, [u8]>>,
    /// The `Content-Usage` the site's preferences give the path.
    pub content_usage: Option<String>,
    /// The client is the crowd's address ([`crate::policy::RequestFacts::crowd`]).
    pub crowd: bool,
    /// What the request presented, for judging a claimed browser (issue
    /// #67): `None` when not judged (not a GET or HEAD, `policy.disguised:
    /// off`, or a host that holds only some headers).
    pub presented: Option<Presented<'r>>,
    /// What is known of the client's own connection: its scheme when the
    /// socket peer is the client (no trusted proxy in between).
    pub scheme: Scheme,
    /// The client's ClientHello: read by the host when the socket peer is
    /// the client, or the JA4 a trusted proxy computed (`ja4_header`).
    pub hello: Option<Hello>,
    /// A signature to verify before deciding (Web Bot Auth).
    signature: Option<Inspection>,
}

/// One request's decision, from its facts to its verdict. See the module
/// documentation.
pub struct Pipeline<'s, 'r> {
    env: Env<'s>,
    rules: SiteRules<'s>,
    facts: Facts<'r>,
    /// Decided before judging.
    early: Option<Early>,
    rates: Rates,
    agent: Option<Agent<'r>>,
    /// The host of the agent whose signature verified.
    signed_by: Option<String>,
    /// The one lookup's answer, once made.
    dns: Option<(usize, Identity)>,
    /// A decision waiting on the shared store, and the store's answer.
    asked: Option<Box<Asked<'s, 'r>>>,
    store: Option<Option<Result<(), Duration>>>,
    events: Vec<Event>,
    classified: u32,
}

impl<'s: 'r, 'r> Pipeline<'s, 'r> {
    /// Gather the facts of `req` for `site`. `crowd`, when the host keeps
    /// one, is told the client and whether the request came with forwarding
    /// headers, and says whether it is the crowd's address; asked only for
    /// requests that are judged. Without one, no client is the crowd's.
    /// `clock` dates a signature.
    pub fn new<H: Headers<'r>>(
        env: Env<'s>,
        site: SiteView<'s>,
        req: &Request<'r, H>,
        crowd: Option<&dyn Fn(Option<IpAddr>, bool) -> bool>,
        rates: Rates,
        clock: Clock,
    ) -> Pipeline<'s, 'r> {
        // The scheme is the client's own only when nothing stands between:
        // not a trusted proxy, and no forwarding header (nginx behind a
        // balancer names the client after its realip module, and its
        // scheme is the balancer's connection's).
        let carried = req.headers.carried();
        let direct = match req.peer {
            Peer::Socket(Some(peer)) => !env.trusted.iter().any(|c| c.contains(peer)) && !carried.forwarding,
            _ => false,
        };
        let scheme = match (direct, req.https) {
            (false, _) => Scheme::Unknown,
            (true, true) => Scheme::Https,
            (true, false) => Scheme::Http,
        };
        let (client, client_unknown) = match req.peer {
            Peer::Logged(ip) => (ip.map(crate::net::canonical), None),
            Peer::Socket(None) => (None, None),
            Peer::Socket(Some(peer)) => {
                // Most peers are not trusted proxies: their headers are not
                // read. The walk runs from the right, so the fields are listed.
                let mut fields: Vec<&[u8]> = Vec::new();
                if env.trusted.iter().any(|c| c.contains(peer)) {
                    req.headers.each(Header::of_client(env.client_header), &mut |v| fields.push(v));
                }
                match client_address(peer, env.client_header, fields, env.trusted) {
                    Ok(ip) => (Some(ip), None),
                    Err(why) => (None, Some(why)),
                }
            }
        };
        let mut facts = Facts {
            method: req.method,
            raw_target: req.target,
            host: req.host,
            https: req.https,
            client,
            client_unknown,
            user_agent: b"",
            target: None,
            content_usage: None,
            crowd: false,
            presented: None,
            scheme,
            hello: None,
            signature: None,
        };
        let early = gather::gather(env, site, req, carried, crowd, clock, &mut facts);
        Pipeline {
            env,
            rules: site.rules,
            facts,
            early,
            rates,
            agent: None,
            signed_by: None,
            dns: None,
            asked: None,
            store: None,
            events: Vec::new(),
            classified: 0,
        }
    }

    /// The facts gathered.
    pub fn facts(&self) -> &Facts<'r> {
        &self.facts
    }

    /// How many times the User-Agent was classified (at most once: what
    /// "each fact once" means here, held by tests).
    pub fn classifications(&self) -> u32 {
        self.classified
    }

    /// The bans and robots.txt reads the decision made, to announce to the
    /// other instances.
    pub fn take_events(&mut self) -> Vec<Event> {
        std::mem::take(&mut self.events)
    }

    /// The normalised target, when it differs from what was sent: the origin
    /// gets exactly what was judged.
    pub fn take_rewrite(&mut self) -> Option<Vec<u8>> {
        match self.facts.target.take() {
            Some(Cow::Owned(t)) => Some(t),
            other => {
                self.facts.target = other;
                None
            }
        }
    }

    /// Answer [`Need::KeyDirectory`]: the host of the agent whose signature
    /// verified, if any.
    pub fn answer_signature(&mut self, agent_host: Option<String>) {
        self.signed_by = agent_host;
    }

    /// Answer [`Need::Dns`]: what the lookup said ([`Identity::Pending`] is
    /// read as unverifiable: a lookup was made, and told nothing).
    pub fn answer_dns(&mut self, bot: usize, identity: Identity) {
        let identity = if identity == Identity::Pending { Identity::Unverifiable } else { identity };
        self.dns = Some((bot, identity));
    }

    /// Answer [`Need::Store`]: admitted, or how long to wait; `None` when
    /// the store could not be reached (the local rate table answers).
    pub fn answer_store(&mut self, answer: Option<Result<(), Duration>>) {
        self.store = Some(answer);
    }

    /// Decide as far as can be, or say what is needed first. `memo`: the
    /// driver's memo, or `None` for this thread's memo ([`crate::agent::classify_here`]).
    pub fn run(&mut self, memo: Option<&mut Memo>, state: &dyn State, clock: Clock) -> Next<'s, 'r> {
        if let Some(early) = self.early.take() {
            return Next::Done(early.verdict());
        }
        if let Some(inspection) = self.facts.signature.take() {
            return Next::Need(Need::KeyDirectory(inspection));
        }
        let Some(target) = self.facts.target.as_deref() else {
            return Next::Done(Verdict::Decided(Decision::passed()));
        };
        let facts = RequestFacts {
            fetch: matches!(self.facts.method, "GET" | "HEAD"),
            target,
            user_agent: self.facts.user_agent,
            client: self.facts.client,
            crowd: self.facts.crowd,
        };
        let asking = Asking::new(state, clock);
        if let Some(asked) = self.asked.take() {
            let answer = self.store.take().flatten();
            return Next::Done(Verdict::Decided(resume(*asked, answer, &facts, &self.rules, (state, &asking), clock)));
        }
        let identify = Knows { env: &self.env, signed_by: self.signed_by.as_deref(), dns: self.dns };
        let (classifier, ua) = (self.env.classifier, self.facts.user_agent);
        let classified = &mut self.classified;
        let (presented, scheme, host) = (self.facts.presented.as_ref(), self.facts.scheme, self.facts.host);
        let hello = self.facts.hello.as_ref();
        let tls_weak = self.rules.policy.tls_evidence == policy::TlsEvidence::Weak;
        let classify = || {
            *classified += 1;
            // A browser is judged by the rest of its request (issue #67),
            // by the claim its User-Agent makes, read once per User-Agent.
            let judged = |agent: &crate::agent::Agent<'_>| presented.is_some() && agent.kind == AgentKind::Browser;
            let hints = presented.and_then(|p| p.sec_ch_ua);
            let (agent, claim) = match memo {
                Some(memo) => {
                    let agent = memo.classify(classifier, ua);
                    let claim = judged(&agent).then(|| memo.claim(classifier, ua, hints));
                    (agent, claim)
                }
                None => {
                    let agent = classify_here(classifier, ua);
                    let claim = judged(&agent).then(|| claim_here(classifier, ua, hints));
                    (agent, claim)
                }
            };
            match (presented, claim) {
                (Some(p), Some((claim, read))) => {
                    let findings = disguise::judge_read(&claim, p, read, scheme, host, hello);
                    agent.unmasked(if tls_weak { findings.tls_weak() } else { findings })
                }
                _ => agent,
            }
        };
        let step =
            policy::decide_step(&facts, &self.rules, &mut self.agent, classify, &asking, &identify, clock, self.rates);
        self.events.extend(asking.into_events());
        match step {
            Step::Decided(d) => Next::Done(Verdict::Decided(d)),
            Step::Lookup { bot } => match (self.dns, facts.client) {
                (None, Some(client)) => Next::Need(Need::Dns { bot, client }),
                // One lookup per request, and none without an address: what
                // it could not tell stays unverifiable.
                _ => {
                    self.dns = Some((bot, Identity::Unverifiable));
                    self.run_again(state, clock)
                }
            },
            Step::Ask(asked) => {
                let question = asked.question.clone();
                self.asked = Some(asked);
                Next::Need(Need::Store(question))
            }
        }
    }

    /// [`Pipeline::run`] once more, after an answer the pipeline gave itself.
    fn run_again(&mut self, state: &dyn State, clock: Clock) -> Next<'s, 'r> {
        // The classification is in `self.agent` already: no memo is needed.
        self.run(None, state, clock)
    }

    /// Whether a refusal of this decision asks for a signature: a spoofed
    /// claim of a robot that signs (Web Bot Auth).
    pub fn asks_for_signature(&self, decision: &Decision<'_, '_>) -> bool {
        matches!(decision.outcome, Outcome::Spoofed(_))
            && match decision.agent.as_ref().map(|a| a.kind) {
                Some(AgentKind::Known(i)) => !self.env.classifier.bot(i).signature_agents.is_empty(),
                _ => false,
            }
    }
}

/// A request decided before judging (small: the pipeline is made for every
/// request, and moved).
#[derive(Debug)]
enum Early {
    /// Refused: status and reason ([`Verdict::Refuse`]).
    Refuse(u16, Cow<'static, str>),
    /// Let through unjudged (`OPTIONS *`).
    Pass,
}

impl Early {
    fn verdict<'s, 'r>(self) -> Verdict<'s, 'r> {
        match self {
            Early::Refuse(status, why) => Verdict::Refuse(status, why),
            Early::Pass => Verdict::Decided(Decision::passed()),
        }
    }
}

/// The decision that waited on the store, with the store's `answer` (`None`:
/// out of reach). Out of line: few requests wait, and the code every
/// request runs stays compact.
#[cold]
#[inline(never)]
fn resume<'s, 'r>(
    asked: Asked<'s, 'r>,
    answer: Option<Result<(), Duration>>,
    facts: &RequestFacts<'_>,
    rules: &SiteRules<'s>,
    (state, asking): (&dyn State, &Asking<'_>),
    clock: Clock,
) -> Decision<'s, 'r> {
    let Asked { pass, paced, .. } = asked;
    let admitted = match answer {
        Some(answer) => answer,
        // Out of reach: the local rate table answers.
        None => paced.probe(state, clock.instant()).map_or(Ok(()), |l| Err(l.wait)),
    };
    Step::answer(pass, &paced, admitted, facts, rules, asking, clock)
}

/// The host of an agent URL (`https://chatgpt.com` -> `chatgpt.com`), lower case.
pub fn agent_host(url: &str) -> Option<String> {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next()?;
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host =
        if host.starts_with('[') { host.split(']').next()?.trim_start_matches('[') } else { host.split(':').next()? };
    (!host.is_empty()).then(|| host.to_ascii_lowercase())
}

/// Identity as the pipeline knows it: a verified signature, then the
/// published ranges, then the one lookup's answer.
struct Knows<'a> {
    env: &'a Env<'a>,
    signed_by: Option<&'a str>,
    dns: Option<(usize, Identity)>,
}

impl Identify for Knows<'_> {
    fn identify(&self, bot: usize, client: Option<IpAddr>) -> Identity {
        let entry = self.env.classifier.bot(bot);
        if let Some(host) = self.signed_by {
            // A signature proves the agent; it is this robot only if the
            // robot's operator signs as that agent.
            if entry.signature_agents.iter().chain(&entry.rdns).any(|s| suffix_matches(host, s)) {
                return Identity::Verified;
            }
        }
        match self.env.ranges.identify(bot, client) {
            Identity::Pending => match self.dns {
                Some((b, identity @ (Identity::Verified | Identity::Spoofed))) if b == bot => identity,
                // The lookup could not tell, or the one lookup was for
                // another claim.
                Some(_) => self.env.ranges.unanswered(bot),
                None => Identity::Pending,
            },
            other => other,
        }
    }
}

#[cfg(test)]
mod tests;
