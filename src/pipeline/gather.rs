//! The facts of a request past its client address (`Pipeline::new`): the
//! target as judged, the User-Agent, what a claimed browser presented and
//! the ClientHello, the crowd, a signature to verify.

use super::*;
use crate::identity::signature::{inspect, Inspection, Limits, RequestParts};

/// The facts past the client address; what was decided when the request
/// is decided before judging.
pub(super) fn gather<'s: 'r, 'r, H: Headers<'r>>(
    env: Env<'s>,
    site: SiteView<'s>,
    req: &Request<'r, H>,
    carried: Carried,
    crowd: Option<&dyn Fn(Option<IpAddr>, bool) -> bool>,
    clock: Clock,
    facts: &mut Facts<'r>,
) -> Option<Early> {
    // What is judged is what the origin serves: the normalised target
    // (`crate::target`). A target no single reading fits is refused.
    let target = match target::gatekeep(req.method.as_bytes(), req.target, site.target) {
        Gatekeep::Judge(t) => t,
        Gatekeep::Pass => return Some(Early::Pass),
        Gatekeep::Refuse(status, why) => return Some(Early::Refuse(status, why)),
    };
    // What proxied responses say about usage (issue #29), whoever asks.
    facts.content_usage = site.rules.robots.and_then(|r| policy::usage_header(r, &target));
    facts.target = Some(target);
    // User-Agent is a singleton field (RFC 9110 10.1.5): with two, a
    // client could show a browser to one reader and a bot to another.
    let mut uas = 0;
    req.headers.each(Header::UserAgent, &mut |v| {
        if uas == 0 {
            facts.user_agent = v;
        }
        uas += 1;
    });
    if uas > 1 {
        return Some(Early::Refuse(400, "more than one User-Agent header".into()));
    }
    if matches!(req.method, "GET" | "HEAD") && site.rules.policy.disguised != policy::Disguised::Off {
        facts.presented = req.headers.presented();
        facts.hello = hello_of(env, req, facts.scheme);
    }
    if let Some(crowd) = crowd {
        facts.crowd = crowd(facts.client, carried.forwarding);
    }
    if carried.signature_input {
        facts.signature = signature_to_verify(env.classifier, req, clock);
    }
    None
}

/// The ClientHello a request's connection opened with: the host's own
/// reading when the socket peer is the client, else the JA4 an edge wrote
/// in `ja4_header`: a proxy in `trusted_proxies`, or the edge that named
/// the client in a field of its own (HAProxy over SPOE, Envoy over
/// ext_authz or with the module), which must write the header over any
/// the client sent (docs/edge.md). Never one from anyone else.
fn hello_of<'r, H: Headers<'r>>(env: Env<'_>, req: &Request<'r, H>, scheme: Scheme) -> Option<Hello> {
    if scheme == Scheme::Https {
        return req.hello.copied();
    }
    let name = env.ja4_header?;
    let from_edge = match req.peer {
        Peer::Socket(Some(peer)) => env.trusted.iter().any(|c| c.contains(peer)),
        Peer::Logged(_) => true,
        Peer::Socket(None) => false,
    };
    if !from_edge {
        return None;
    }
    let mut first = None;
    req.headers.text(&mut |k, v| {
        if first.is_none() && k.eq_ignore_ascii_case(name) {
            first = Some(v);
        }
    });
    first.and_then(disguise::hello::from_edge)
}

/// The signature of a request with `Signature-Input` to verify: only when
/// its agents are all ones some database robot signs as
/// (`signature_agents`, `rdns`), so a client cannot make robotgate fetch
/// from hosts of its choosing. Out of line: few requests are signed.
#[cold]
#[inline(never)]
fn signature_to_verify<'r, H: Headers<'r>>(
    classifier: &Classifier,
    req: &Request<'r, H>,
    clock: Clock,
) -> Option<Inspection> {
    let target = std::str::from_utf8(req.target).ok()?;
    let (path, query) = match target.split_once('?') {
        Some((path, query)) => (path, Some(query)),
        None => (target, None),
    };
    let mut headers: Vec<(&str, &str)> = Vec::new();
    req.headers.text(&mut |k, v| headers.push((k, v)));
    let parts = RequestParts {
        method: req.method,
        scheme: if req.https { "https" } else { "http" },
        authority: req.host,
        path,
        query,
        headers: &headers,
    };
    let inspection = inspect(&parts, clock.unix_secs(), &Limits::default());
    let known = |agent: &str| {
        agent_host(agent).is_some_and(|host| {
            classifier
                .db()
                .bots()
                .iter()
                .any(|b| b.signature_agents.iter().chain(&b.rdns).any(|s| suffix_matches(&host, s)))
        })
    };
    let agents = inspection.agents();
    (!agents.is_empty() && agents.iter().all(|a| known(a))).then_some(inspection)
}
