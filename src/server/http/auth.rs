//! The forward-auth listener (`auth.listen`): robotgate as the decision
//! service of an edge proxy that stays in front (nginx `auth_request`, Caddy
//! `forward_auth`, Traefik `forwardAuth`).
//!
//! The edge asks before it forwards: it sends robotgate a subrequest without
//! a body that carries the original request's headers, and names the
//! original method, target and host in headers of its own. This module reads
//! those into the same [`Incoming`] the proxy reads from its own requests;
//! from there the request goes through the proxy's own steps
//! ([`Gate::settle`], [`Gate::carry_out`]): the same normalisation,
//! classification, identity, rates, bans, traps, record and metrics.
//!
//! The answer: a pass is `200` with an empty body (with `X-Robots-Tag` for a
//! `noindex` pass, for the edge to copy); a refusal is the action's own
//! status, headers and body, marked for the edge ([`super::respond::for_edge`]).

use bytes::Bytes;
use http::HeaderMap;
use pingora::proxy::Session;
use pingora::Result;

use super::decide::Incoming;
use super::proxy::{Ctx, Gate};
use super::respond::{self, Reader};
use crate::server::snapshot::answer::head;

/// Headers naming the original target, in the order they are read:
/// Traefik's and Caddy's, then the usual nginx `auth_request` set-up's.
const TARGET: [&str; 2] = ["x-forwarded-uri", "x-original-uri"];
/// Headers naming the original method, in the same order.
const METHOD: [&str; 2] = ["x-forwarded-method", "x-original-method"];

/// The answer to a subrequest that does not say what it is about.
const NO_TARGET: &str = "This is robotgate's forward-auth listener: the subrequest must name the original \
    request's target in X-Forwarded-Uri (Traefik, Caddy) or X-Original-URI (nginx auth_request), and its \
    method in X-Forwarded-Method or X-Original-Method.";

/// The value of the first of `names` the request carries, as bytes; `Err`
/// when that header comes more than once (two readings of one request).
fn one<'r>(headers: &'r HeaderMap, names: &[&'static str]) -> Result<Option<&'r [u8]>, &'static str> {
    for name in names {
        let mut values = headers.get_all(*name).into_iter();
        if let Some(first) = values.next() {
            if values.next().is_some() {
                return Err(name);
            }
            return Ok(Some(first.as_bytes()));
        }
    }
    Ok(None)
}

/// The original request an edge's subrequest stands for. The target is
/// required; the method defaults to the subrequest's own, the host to its
/// `Host` (every edge passes the original one on), the scheme to `http`.
/// The socket peer is the edge: the client address is read behind it by the
/// same walk as the proxy's (`trusted_proxies`, `client_header`).
///
/// # Errors
/// The reason, for a `400`: no target, a header that came twice, or a
/// method or host that is not text.
pub(super) fn original(session: &Session) -> Result<Incoming<'_>, String> {
    let req = session.req_header();
    let headers = &req.headers;
    let twice = |name: &str| format!("{name} came more than once: which request is this about?");
    let target = one(headers, &TARGET).map_err(twice)?.filter(|t| !t.is_empty()).ok_or_else(|| NO_TARGET.to_owned())?;
    let method = match one(headers, &METHOD).map_err(twice)? {
        Some(m) => std::str::from_utf8(m).ok().filter(|m| is_token(m)).ok_or_else(|| NO_TARGET.to_owned())?,
        None => req.method.as_str(),
    };
    let host = match one(headers, &["x-forwarded-host"]).map_err(twice)? {
        Some(h) => std::str::from_utf8(h).map_err(|_| "X-Forwarded-Host is not text".to_owned())?,
        None => super::proxy::host_of(req),
    };
    let https = one(headers, &["x-forwarded-proto"]).map_err(twice)?.is_some_and(|p| p.eq_ignore_ascii_case(b"https"));
    Ok(Incoming {
        method,
        target,
        host,
        https,
        headers,
        peer: session.client_addr().and_then(|a| a.as_inet()).map(|a| a.ip()),
    })
}

/// An HTTP method is a token (RFC 9110 9.1, 5.6.2).
fn is_token(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

impl Gate {
    /// Answer one authorisation subrequest. Always answers (`Ok(true)`):
    /// nothing is ever proxied from the auth listener.
    pub(super) async fn authorise(&self, session: &mut Session, ctx: &mut Ctx) -> Result<bool> {
        let snap = self.snapshot.load_full();
        ctx.snap = Some(snap.clone());
        let req = match original(session) {
            Ok(req) => req,
            Err(why) => {
                ctx.status = 400;
                let body = Bytes::from(format!("{why}\n"));
                respond::send(session, 400, "text/plain; charset=utf-8", &[], body, Reader::Edge).await?;
                return Ok(true);
            }
        };
        let Some(site) = self.site_for(&snap, &req, ctx) else {
            return respond::no_site(session, Reader::Edge).await;
        };
        let step = self.settle(&req, &snap, site, ctx).await;
        if !self.carry_out(session, &snap, site, ctx, step).await? {
            ctx.status = 200;
            pass(session, ctx.noindex.take()).await?;
        }
        Ok(true)
    }
}

/// Let the request through: `200`, no body, and the `X-Robots-Tag` of a
/// `noindex` pass for the edge to put on the origin's answer.
async fn pass(session: &mut Session, noindex: Option<String>) -> Result<()> {
    let mut resp = head(200, "text/plain", 0, &[])?;
    if let Some(value) = noindex {
        resp.insert_header("x-robots-tag", value)?;
    }
    session.write_response_header(Box::new(resp), true).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_that_comes_twice_is_refused_not_guessed() {
        let mut h = HeaderMap::new();
        assert_eq!(one(&h, &TARGET), Ok(None));
        h.append("x-original-uri", "/b".parse().unwrap());
        assert_eq!(one(&h, &TARGET), Ok(Some(&b"/b"[..])));
        h.append("x-forwarded-uri", "/a".parse().unwrap());
        assert_eq!(one(&h, &TARGET), Ok(Some(&b"/a"[..])), "Traefik's and Caddy's header first");
        h.append("x-forwarded-uri", "/c".parse().unwrap());
        assert_eq!(one(&h, &TARGET), Err("x-forwarded-uri"));
    }

    #[test]
    fn methods_are_tokens() {
        assert!(is_token("GET") && is_token("PROPFIND") && is_token("M-SEARCH"));
        assert!(!is_token("") && !is_token("G T") && !is_token("GET\u{e9}"));
    }
}
