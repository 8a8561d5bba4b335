//! One request decided in an edge's process: the facts the edge read (its
//! request line, its headers, its reading of the client), the core pipeline
//! run over them, the decision counted and recorded, and its answer
//! planned. Nothing here words a body or picks a header: the core does
//! ([`robotgate::pipeline::answer`]). Each module only reads its edge's
//! API into a [`Line`] and [`Fields`], and writes the [`Answer`] back.

use std::borrow::Cow;
use std::cell::RefCell;
use std::net::IpAddr;

use robotgate::agent::disguise::Presented;
use robotgate::agent::Memo;
use robotgate::identity::signature::fetch::FetchLimits;
use robotgate::load::Snapshot;
use robotgate::metric;
use robotgate::pipeline::answer::{pass_headers, Conditional, Counts, Plan};
use robotgate::pipeline::{Carried, Env, Header, Headers, Need, Next, Peer, Pipeline, Request, SiteView, Verdict};
use robotgate::policy::{Clock, Decision, Enforcement, Outcome, Rates, Requested, TallyFamily};
use robotgate::record::Record;
use robotgate::state::crowd::Crowd;
use robotgate::state::State;

use robotgate::state::shared::Question;

use crate::keys::{Directories, Known};
use crate::log::{now_ms, Violations};
use crate::module::Books;
use crate::park::{Dns, Waited};
use crate::store::Store;

/// Slots of a worker thread's [`Memo`] (the nginx module's size: the
/// distinct User-Agents a busy site sees at once).
const MEMO_SLOTS: usize = 512;

thread_local! {
    /// This worker thread's classifications, by User-Agent.
    static MEMO: RefCell<Memo> = RefCell::new(Memo::new(MEMO_SLOTS));
    /// The record each refusal is written into (no allocation once its
    /// strings are long enough).
    static SCRATCH: RefCell<Record> = RefCell::new(Record::default());
}

/// The request's headers as the edge holds them, names and values as bytes:
/// Envoy's header map (pseudo-headers `:method`, `:path`, `:authority`,
/// `:scheme` included, names in lower case), HAProxy's `req.hdrs_bin`.
#[derive(Clone, Copy)]
pub struct Fields<'r> {
    pub all: &'r [(&'r [u8], &'r [u8])],
}

impl<'r> Fields<'r> {
    /// The first value of `name`.
    pub fn first(&self, name: &[u8]) -> Option<&'r [u8]> {
        self.all.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| *v)
    }
}

impl<'r> Headers<'r> for Fields<'r> {
    fn each(&self, header: Header, each: &mut dyn FnMut(&'r [u8])) {
        let name = header.name().as_bytes();
        for (k, v) in self.all {
            if k.eq_ignore_ascii_case(name) {
                each(v);
            }
        }
    }

    fn text(&self, each: &mut dyn FnMut(&'r str, &'r str)) {
        for (k, v) in self.all {
            // Pseudo-headers are the request line's, not fields.
            if k.first() == Some(&b':') {
                continue;
            }
            if let (Ok(k), Ok(v)) = (std::str::from_utf8(k), std::str::from_utf8(v)) {
                each(k, v);
            }
        }
    }

    /// Read as bytes, not through [`Headers::text`]: no UTF-8 check of
    /// every header (a pseudo-header's name matches none read).
    fn presented(&self) -> Option<Presented<'r>> {
        let mut p = Presented::default();
        for (k, v) in self.all {
            p.note_any_case(k, *v);
        }
        Some(p)
    }

    /// One walk, not a search by name for each header asked about.
    fn carried(&self) -> Carried {
        let mut c = Carried::default();
        for (k, _) in self.all {
            c.note(k);
        }
        c
    }
}

/// The request line as the edge read it (HTTP/1 and HTTP/2 alike).
#[derive(Clone, Copy)]
pub struct Line<'r> {
    /// The method.
    pub method: &'r [u8],
    /// The request target, path and query, as sent.
    pub target: &'r [u8],
    /// The host as sent, port and all (`Host`, or HTTP/2's `:authority`).
    pub host: &'r [u8],
    /// The client reached the edge over TLS.
    pub https: bool,
}

/// What to do with the request.
pub enum Answer<'s> {
    /// Let it through to the origin, adding these to the origin's answer:
    /// `X-Robots-Tag` values, and `Content-Usage` (unless the origin sets one).
    Pass { robots_tags: Vec<String>, content_usage: Option<String> },
    /// Answer it with this plan.
    Plan(Plan<'s>),
    /// Only reverse DNS can tell whether `client` is database robot `bot`
    /// (host names ending in `suffixes`): look it up, and decide again with
    /// the answer ([`crate::park`]).
    Lookup { bot: usize, client: IpAddr, suffixes: Vec<String> },
    /// A Web Bot Auth signature's key directories of these agents are not
    /// known: fetch them under `limits` ([`crate::park::start_keys`], a
    /// fetch slot taken), and decide again with [`Waited::Keys`].
    Fetch { agents: Vec<String>, limits: FetchLimits },
    /// A robot whose group sets a pace, with a shared store (`state.redis`)
    /// up: put `question` to it ([`crate::park::start_rate`]), and decide
    /// again with [`Waited::Rate`].
    Ask { question: Question },
}

/// The shared store a decision may ask and tell, if robotgate.yaml names one.
pub type Shared<'a> = Option<&'a Store<Books>>;

/// Counts one in a metric family ([`families`]) with these label values;
/// called with `robotgate_decision_seconds` ([`metric::DECISION_SECONDS`])
/// and no values once a decision is one the proxy times (a robot's, or one
/// with an outcome): the edge observes its own clock's time since it began.
pub type Count<'a> = &'a dyn Fn(&'static str, &[&str]);

/// The counters a decision counts in, as the proxy names them, with their
/// label names: every family [`books`] counts in.
pub fn families() -> [(&'static str, &'static [&'static str]); 6] {
    [
        ("robotgate_requests_total", &["site", "category"]),
        ("robotgate_preferences_total", &["site", "result"]),
        ("robotgate_files_served_total", &["site", "file"]),
        TallyFamily::Violation.family(),
        TallyFamily::Limited.family(),
        TallyFamily::Stale.family(),
    ]
}

/// Decide the request of `line` and `fields`, from client `client` (the
/// edge's own reading of it: Envoy's `source.address`, HAProxy's `src`),
/// with `snap` and the process's `state`; the decision is counted with
/// `count`, and one that has a record offers it to `book`. A claim only
/// reverse DNS can settle is answered from `dns`'s verdicts or `waited`
/// (what the lookup the request was parked for found), a Web Bot Auth
/// signature from the key directories `dirs` knows; else the request is to
/// be parked ([`Answer::Lookup`], [`Answer::Fetch`]); a robot's pace is
/// asked of `store` while it is up ([`Answer::Ask`]), and the bans and
/// reads the decision makes are told to it. `own` is how many
/// `X-Forwarded-For` entries the edge itself has appended before the
/// module runs (Envoy at the edge: one; HAProxy: none), for the crowd check.
pub fn decide<'s>(
    snap: &'s Snapshot,
    (state, crowd, book, count): (&dyn State, &Crowd, Option<&Violations>, Count<'_>),
    (dns, dirs, store, waited): (&Dns, &Directories, Shared<'_>, Option<Waited>),
    (line, fields, own): (Line<'_>, &Fields<'_>, usize),
    client: Option<IpAddr>,
) -> Answer<'s> {
    // A request without a method or target (CONNECT has no path) is
    // refused, never passed undecided.
    if line.method.is_empty() || line.target.is_empty() {
        return Answer::Plan(Plan::refuse(400, "Bad Request: no method or path"));
    }
    let Ok(method) = std::str::from_utf8(line.method) else {
        return Answer::Plan(Plan::refuse(400, "Bad Request: the method is not text"));
    };
    let target = line.target;
    // Bytes that are not UTF-8 read as a name no site has, never as "no host".
    let host = std::str::from_utf8(line.host).unwrap_or("?");
    let https = line.https;
    let Some(site) = snap.settings.site_for_host(host) else {
        return Answer::Plan(Plan::no_site());
    };
    let live = &snap.sites[site];
    let req = Request {
        method,
        target,
        host,
        https,
        // The edge's own reading of the client (Envoy's after its
        // `xff_num_trusted_hops`, HAProxy's after any `set-src`): a field
        // of the edge's, never a header the client wrote, taken as it is.
        peer: Peer::Logged(client),
        headers: *fields,
        // The edge's TLS is its own: header evidence, and the JA4 it writes
        // in `ja4_header` (docs/classifier.md).
        hello: None,
    };
    let view = SiteView { rules: live.rules(), target: &live.conf.target };
    // The crowd check, as the proxy's: every thread counts into one. A
    // forwarding header of the client's own is an `X-Forwarded-For` with
    // more than the entries the edge appends, or a `Forwarded`.
    let note = |client: Option<IpAddr>, _: bool| crowd.note(client, forwarded(fields, own));
    // A rate question goes to the shared store only while it answers (or
    // when this request was answered by it already).
    let shared = matches!(waited, Some(Waited::Rate(_))) || store.is_some_and(Store::is_up);
    let rates = if shared { Rates::Shared } else { Rates::Local };
    let mut p = Pipeline::new(Env::of(snap), view, &req, Some(&note), rates, Clock::System);
    let verdict = MEMO.with(|memo| {
        // Only this thread borrows it, and nothing below calls back here.
        let mut memo = memo.try_borrow_mut().ok();
        loop {
            match p.run(memo.as_deref_mut(), state, Clock::System) {
                Next::Done(v) => break Ok(v),
                Next::Need(Need::Dns { bot, client }) => match waited {
                    Some(Waited::Dns(b, identity)) if b == bot => p.answer_dns(bot, identity),
                    _ => {
                        let suffixes = &snap.classifier.bot(bot).rdns;
                        match dns.known(client, suffixes) {
                            Some(identity) => p.answer_dns(bot, identity),
                            None => break Err(Answer::Lookup { bot, client, suffixes: suffixes.clone() }),
                        }
                    }
                },
                // Only robots whose group sets a pace get here.
                Next::Need(Need::Store(question)) => match waited {
                    Some(Waited::Rate(answer)) => p.answer_store(answer),
                    _ if store.is_some() => break Err(Answer::Ask { question }),
                    _ => p.answer_store(None),
                },
                Next::Need(Need::KeyDirectory(inspection)) => {
                    let limits = FetchLimits::allowing_private(snap.settings.boot.verify.allow_private_directories);
                    match dirs.known(&inspection, &limits, waited == Some(Waited::Keys)) {
                        Known::Judged(host) => p.answer_signature(host),
                        Known::Missing(agents) => break Err(Answer::Fetch { agents, limits }),
                    }
                }
            }
        }
    });
    let verdict = match verdict {
        Ok(v) => v,
        Err(park) => return park,
    };
    // The bans and robots.txt reads the decision made, told to the other
    // instances through the store.
    if let Some(store) = store {
        p.take_events().into_iter().for_each(|e| store.announce(e));
    }
    let decision = match verdict {
        Verdict::Refuse(status, why) => return Answer::Plan(Plan::refuse(status, &why)),
        Verdict::Decided(d) => d,
    };
    let ja4 = p.facts().hello.as_ref().map(|h| h.ja4);
    let seen = Seen { method, target, host, user_agent: p.facts().user_agent, client: p.facts().client, ja4 };
    if books(&decision, (snap, site), &seen, book, count) {
        count(metric::DECISION_SECONDS.name, &[]);
    }
    let enforcement = decision.outcome.enforcement();
    let has = match enforcement {
        Enforcement::File(_) => conditional(fields),
        _ => Conditional::default(),
    };
    if let Some(plan) = Plan::of(enforcement, live, p.asks_for_signature(&decision), has) {
        return Answer::Plan(plan);
    }
    // The site's indexing rules, beside whatever X-Robots-Tag the origin adds.
    let rules = &live.conf.indexing.rules;
    let indexing = match p.facts().target.as_deref() {
        Some(target) if !rules.is_empty() => rules.header_values(target),
        _ => Vec::new(),
    };
    let noindex = match enforcement {
        Enforcement::Pass { noindex } => noindex,
        _ => None,
    };
    let robots_tags = pass_headers(noindex, indexing).map(Cow::into_owned).collect();
    Answer::Pass { robots_tags, content_usage: p.facts().content_usage.clone() }
}

/// What a record says of the request, as it came.
struct Seen<'r> {
    method: &'r str,
    target: &'r [u8],
    host: &'r str,
    user_agent: &'r [u8],
    client: Option<IpAddr>,
    /// The JA4 the edge wrote in `ja4_header`, as judged (issue #67).
    ja4: Option<robotgate::agent::disguise::Ja4>,
}

/// Count `d` as the proxy counts it (the core's one list, [`Counts`]), and
/// offer its record, if it has one, to `book`; `true` when its time counts
/// in `robotgate_decision_seconds`.
fn books(
    d: &Decision<'_, '_>,
    (snap, at): (&Snapshot, usize),
    seen: &Seen<'_>,
    book: Option<&Violations>,
    count: Count<'_>,
) -> bool {
    let live = &snap.sites[at];
    let site = snap.metric_site(at);
    // A site file counts only when it was loaded, and so answered.
    let served = match d.outcome {
        Outcome::File(which) => robotgate::pipeline::answer::site_file(live, which).is_some(),
        _ => false,
    };
    let counts = Counts::of(d, served);
    if let Some(result) = counts.preference {
        count("robotgate_preferences_total", &[site, result]);
    }
    if let Some(file) = counts.file {
        count("robotgate_files_served_total", &[site, file.as_str()]);
    }
    let Some(category) = counts.request else { return counts.timed };
    count("robotgate_requests_total", &[site, category.as_str()]);
    if counts.record {
        record(d, (snap, at), seen, book, count);
    }
    counts.timed
}

/// The record of a decision that has one: its tally counted, and offered
/// to `book`. Out of line: a browser's pass never comes here.
#[inline(never)]
fn record(
    d: &Decision<'_, '_>,
    (snap, at): (&Snapshot, usize),
    seen: &Seen<'_>,
    book: Option<&Violations>,
    count: Count<'_>,
) {
    let live = &snap.sites[at];
    let requested = Requested {
        site: live.conf.name.as_str(),
        // Written into the record, in its own buffer.
        client: "",
        method: seen.method,
        path: &String::from_utf8_lossy(seen.target),
        host: seen.host,
        user_agent: &String::from_utf8_lossy(seen.user_agent),
        robots_hash: live.robots.as_ref().map_or("", |r| r.hash.as_str()),
        lines: live.robots.as_ref().map_or(robotgate::robots::LineMap::nothing_added(), |r| &r.lines),
        ja4: seen.ja4.as_ref().map(|j| j.as_str()),
    };
    SCRATCH.with(|scratch| {
        let Ok(mut r) = scratch.try_borrow_mut() else { return };
        if !d.record_into(&requested, &mut r) {
            return;
        }
        match seen.client {
            Some(ip) => robotgate::net::write_ip_text(&mut r.client, ip),
            None => r.client.clear(),
        }
        if let Some(tally) = d.tally(snap.metric_site(at), &r) {
            count(tally.family().0, &tally.values());
        }
        let Some(book) = book else { return };
        let now = now_ms();
        robotgate::time::write_rfc3339_ms(&mut r.time, now);
        r.status = d.outcome.enforcement().status().unwrap_or(0);
        book.offer(&mut r, now);
    });
}

/// Whether the request came with a forwarding header of its own (the
/// crowd check), past the `own` entries the edge appended (Envoy's
/// connection manager appends the peer, `use_remote_address: true`).
fn forwarded(fields: &Fields<'_>, own: usize) -> bool {
    let mut entries = 0;
    for (k, v) in fields.all {
        if k.eq_ignore_ascii_case(b"forwarded") {
            return true;
        }
        if k.eq_ignore_ascii_case(b"x-forwarded-for") {
            entries += 1 + v.iter().filter(|&&b| b == b',').count();
        }
    }
    entries > own
}

/// What a conditional request says it has (only a site file asks).
fn conditional<'r>(fields: &Fields<'r>) -> Conditional<'r> {
    Conditional { if_none_match: fields.first(b"if-none-match"), if_modified_since: fields.first(b"if-modified-since") }
}

#[cfg(test)]
mod tests {
    use super::{forwarded, Fields};
    use robotgate::pipeline::{Header, Headers};

    #[test]
    fn fields_are_the_headers_and_pseudo_headers_are_not_text() {
        let all: &[(&[u8], &[u8])] = &[
            (b":path", b"/a"),
            (b":authority", b"example.com:8080"),
            (b"user-agent", b"one"),
            (b"User-Agent", b"two"),
            (b"accept", b"\xff"),
            (b"accept-language", b"en"),
        ];
        let fields = Fields { all };
        let mut uas = Vec::new();
        fields.each(Header::UserAgent, &mut |v| uas.push(v));
        assert_eq!(uas, [&b"one"[..], b"two"], "every value, in order, any case");
        let mut text = Vec::new();
        fields.text(&mut |k, v| text.push((k, v)));
        assert_eq!(text, [("user-agent", "one"), ("User-Agent", "two"), ("accept-language", "en")]);
        assert_eq!(fields.first(b":authority"), Some(&b"example.com:8080"[..]));
        assert!(!fields.has(Header::SignatureInput));
    }

    #[test]
    fn a_forwarding_header_is_one_besides_envoys_own_entry() {
        let fields = |all: &[(&'static [u8], &'static [u8])]| forwarded(&Fields { all }, 1);
        assert!(!fields(&[(b"x-forwarded-for", b"10.0.0.1")]), "Envoy's own entry");
        assert!(fields(&[(b"x-forwarded-for", b"203.0.113.9, 10.0.0.1")]));
        assert!(fields(&[(b"x-forwarded-for", b"203.0.113.9"), (b"x-forwarded-for", b"10.0.0.1")]));
        assert!(fields(&[(b"forwarded", b"for=203.0.113.9")]));
        assert!(!fields(&[(b"user-agent", b"a, b")]));
        assert!(forwarded(&Fields { all: &[(b"x-forwarded-for", b"203.0.113.9")] }, 0), "HAProxy appends none");
    }
}
