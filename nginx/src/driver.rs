//! The request handler: the pipeline driven for one request.

use std::sync::Arc;

use ngx::core::Status;
use ngx::ffi::ngx_int_t;
use ngx::http::{self, HttpModuleLocationConf, HttpModuleMainConf};

use robotgate::agent::Memo;
use robotgate::load::Snapshot;
use robotgate::pipeline::answer::Plan;
use robotgate::pipeline::{Env, Need, Next, Peer, Pipeline, Request, SiteView, Verdict};
use robotgate::policy::{Clock, Rates};

use crate::answer::{self, Answer};
use crate::books::{count_and_record, Books};
use crate::headers::{client_of, host_of, https_of, Fields};
use crate::worker::{current, site_of, Hot, Scratch, Worker, STORE, WORKER};
use crate::{dns, once, park, store, wba, zone, Module};

/// Decide `request` (nginx's rewrite phase, [`crate::robotgate_handler`]).
pub(crate) fn handle(request: &mut http::Request) -> Status {
    let on = Module::location_conf(request).and_then(|c| c.enable).unwrap_or(false);
    if !on || !request.is_main() {
        return Status::NGX_DECLINED;
    }
    // Parked, and its phases run by a write event before the answer came.
    let waited = park::waited(request);
    if waited.waiting {
        return Status::NGX_DONE;
    }
    // Where the request is, for parking it (its context slot and its main
    // request's count: nothing the borrows below read).
    let raw: *mut ngx::ffi::ngx_http_request_t = std::ptr::from_mut(request).cast();
    // Redirected inside nginx (index, try_files, error_page...) after a
    // first pass decided it: that decision stands, counted once ([`once`]).
    // SAFETY: this request, on nginx's thread.
    if unsafe { once::decided(raw) } {
        return Status::NGX_DECLINED;
    }
    let Some(main) = Module::main_conf(request) else { return Status::NGX_DECLINED };
    let Some(shared) = main.shared.as_ref() else { return Status::NGX_DECLINED };
    WORKER.with(|worker| {
        // Nothing this borrow reaches runs a request handler: it is never
        // taken twice. Were it, the request is refused, not let through.
        let Ok(mut worker) = worker.try_borrow_mut() else {
            return Status(ngx::ffi::NGX_HTTP_INTERNAL_SERVER_ERROR as ngx_int_t);
        };
        let Worker { live, hot, memo, scratch } = &mut *worker;
        let Some(snap) = current(main, live) else { return Status::NGX_DECLINED };
        let host = host_of(request);
        // No site has the host nginx accepted, and none is the default: the
        // proxy's 421, never a pass undecided.
        let Some(site) = site_of(hot, snap, host) else {
            // SAFETY: this request, on nginx's thread.
            unsafe { once::mark(raw) };
            return answer::write(request, &Plan::no_site());
        };
        let logging = !main.violations.is_null();
        let answer =
            decide((request, raw), host, (snap, site), (shared, main.resolver), (hot, memo, scratch), logging, waited);
        if !matches!(answer, Answer::Parked) {
            // SAFETY: this request, on nginx's thread.
            unsafe { once::mark(raw) };
        }
        match answer {
            Answer::Pass { headers } => {
                for (name, value) in headers {
                    request.add_header_out(name, &value);
                }
                Status::NGX_DECLINED
            }
            Answer::Plan(plan) => answer::write(request, &plan),
            Answer::Parked => Status::NGX_DONE,
        }
    })
}

/// Decide `request` through the pipeline, and say how to answer it.
/// `raw`: where it is, to park it. `waited`: what helpers answered it so
/// far (a resumed request). `hot`, `memo`, `scratch`: the worker's.
pub(crate) fn decide<'s>(
    (request, raw): (&http::Request, *mut ngx::ffi::ngx_http_request_t),
    host: &str,
    (snap, site): (&'s Arc<Snapshot>, usize),
    (shared, resolver): (&zone::Shared, dns::Resolver),
    (hot, memo, scratch): (&mut Hot, &mut Memo, &mut Scratch),
    logging: bool,
    waited: park::Wait,
) -> Answer<'s> {
    let live = &snap.sites[site];
    let method = request.method();
    let uri = request.unparsed_uri().as_bytes();
    let req = Request {
        method: method.as_str(),
        target: uri,
        host,
        https: https_of(request),
        // The address nginx names after its realip module, as the proxy's
        // socket peer: realip has read `real_ip_header` from the addresses
        // of `set_real_ip_from`, and an address it leaves that robotgate.yaml's
        // `trusted_proxies` still lists is a proxy that named no client
        // (a request from the balancer without the header), judged as the
        // proxy judges it: verified as no crawler, banned and paced as no
        // one. The pipeline is given no forwarding header to walk again
        // ([`Fields`]): realip has walked it.
        peer: Peer::Socket(client_of(request)),
        headers: Fields::of(request),
        // nginx's OpenSSL hides the ClientHello from a module: header
        // evidence only (docs/edge.md).
        hello: None,
    };
    let view = SiteView { rules: live.rules(), target: &live.conf.target };
    // A rate question goes to the shared store only while it answers (or
    // when this request was answered by it already).
    let store_up = waited.rate.is_some()
        || (snap.settings.boot.shared_state.is_some()
            && STORE.with_borrow(|s| s.as_ref().is_some_and(store::Store::is_up)));
    let rates = if store_up { Rates::Shared } else { Rates::Local };
    // The crowd check, as the proxy's: every worker counts into the zone.
    let crowd = |client: Option<std::net::IpAddr>, forwarded: bool| shared.crowd.note(client, forwarded);
    let mut p = Pipeline::new(Env::of(snap), view, &req, Some(&crowd), rates, Clock::System);
    if let Some(why) = p.facts().client_unknown {
        // A trusted proxy that named no client, as the proxy counts it.
        shared.series.add("robotgate_client_unknown_total", &["reason"], &[why.as_str()], 1);
    }
    // The decision's time, as the proxy times it (a resumed request: this
    // pass, which decides it again with the answers).
    let started = std::time::Instant::now();
    let verdict = loop {
        match p.run(Some(&mut *memo), &shared.state, Clock::System) {
            Next::Done(v) => break v,
            Next::Need(need) => {
                if find_out(&mut p, need, raw, snap, (shared, resolver), waited) {
                    return Answer::Parked;
                }
            }
        }
    };
    let events = p.take_events();
    if !events.is_empty() {
        announce(events);
    }
    let decision = match verdict {
        Verdict::Refuse(status, why) => return Answer::Plan(Plan::refuse(status, &why)),
        Verdict::Decided(d) => d,
    };
    // The site's indexing rules, beside whatever X-Robots-Tag the content adds.
    let rules = &live.conf.indexing.rules;
    let indexing = match p.facts().target.as_deref() {
        Some(target) if !rules.is_empty() => rules.header_values(target),
        _ => Vec::new(),
    };
    let books =
        Books { request, snap, at: site, shared, logging, client: p.facts().client, user_agent: p.facts().user_agent };
    if count_and_record(&books, &decision, hot, scratch) {
        observe(shared, started);
    }
    let signature = p.asks_for_signature(&decision);
    answer::answer(request, live, &decision, signature, p.facts().content_usage.as_deref(), indexing)
}

/// Observe a decision's time since `started` in the worker's lane of
/// `robotgate_decision_seconds`: a monotonic clock read (vDSO, no system
/// call) and two atomic adds on the worker's own cache lines.
fn observe(shared: &zone::Shared, started: std::time::Instant) {
    let ns = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
    // SAFETY: nginx's global, set before the worker's first request.
    let lane = unsafe { ngx::ffi::ngx_worker };
    shared.decisions.observe(lane, ns);
}

/// Answer what the pipeline asked (`need`), from what helpers answered
/// (`waited`) or by asking them; `true` when the request is parked for it.
/// Out of the usual path (few requests ask anything): kept out of line, so
/// the code every request runs stays compact.
#[cold]
#[inline(never)]
pub(crate) fn find_out<'s: 'r, 'r>(
    p: &mut Pipeline<'s, 'r>,
    need: Need,
    raw: *mut ngx::ffi::ngx_http_request_t,
    snap: &Snapshot,
    (shared, resolver): (&zone::Shared, dns::Resolver),
    waited: park::Wait,
) -> bool {
    match need {
        Need::Dns { bot, client } => match waited.dns {
            Some((b, identity)) if b == bot => p.answer_dns(bot, identity),
            _ => {
                let entry = snap.classifier.bot(bot);
                let claim = dns::Claim { bot, name: &entry.name, suffixes: &entry.rdns, ip: client };
                // SAFETY: the zone's counters live in the main
                // configuration, as long as the cycle and its lookups.
                let series = unsafe { &*std::ptr::from_ref(&shared.series) };
                match dns::look_up(raw, resolver, &claim, snap.settings.boot.dns.timeout, series) {
                    dns::Start::Known(identity) => p.answer_dns(bot, identity),
                    dns::Start::Parked => return true,
                }
            }
        },
        Need::Store(question) => match waited.rate {
            Some(answer) => p.answer_store(answer),
            None => {
                // Only robots whose group sets a pace get here: park the
                // request until the store answers (within
                // `state.timeout_ms`), or ask the zone.
                let parked = STORE.with_borrow(|s| {
                    let s = s.as_ref().filter(|s| s.takes_questions())?;
                    let ticket = park::park(raw)?;
                    if s.ask(question, ticket) {
                        return Some(());
                    }
                    park::unpark(ticket);
                    None
                });
                match parked {
                    Some(()) => return true,
                    None => p.answer_store(None),
                }
            }
        },
        Need::KeyDirectory(inspection) => {
            match wba::signed_by(raw, &inspection, &snap.settings.boot.verify, waited.keys) {
                wba::Start::Known(host) => p.answer_signature(host),
                wba::Start::Parked => return true,
            }
        }
    }
    false
}

/// Tell the other instances (through the store) of the bans and robots.txt
/// reads a decision made.
#[cold]
#[inline(never)]
pub(crate) fn announce(events: Vec<robotgate::state::shared::Event>) {
    STORE.with_borrow(|s| {
        if let Some(s) = s {
            events.into_iter().for_each(|e| s.announce(e));
        }
    });
}
