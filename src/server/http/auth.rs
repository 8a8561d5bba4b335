//! The forward-auth listener (`auth.listen`): robotgate as the decision
//! service of an edge proxy that stays in front (nginx `auth_request`, Caddy
//! `forward_auth`, Traefik `forwardAuth`).
//!
//! The edge asks before it forwards: it sends robotgate a subrequest without
//! a body that carries the original request's headers, and names the
//! original method, target and host in headers of its own, which the client
//! may have sent too: each is read from the one header the operator names
//! (`auth.headers`), and a competing one with another value is refused
//! ([`crate::net::edge`]). This module reads them into the same [`Incoming`]
//! the proxy reads from its own requests;
//! from there the request goes through the proxy's own steps
//! ([`Gate::settle`], [`Gate::carry_out`]): the same normalisation,
//! classification, identity, rates, bans, traps, record and metrics.
//!
//! The answer: a pass is `200` with an empty body (with `X-Robots-Tag` for a
//! `noindex` pass and the site's indexing rules, for the edge to copy); a refusal is the action's own
//! status, headers and body, marked for the edge ([`crate::pipeline::answer::Plan::for_edge`]).

use pingora::proxy::Session;
use pingora::Result;

use super::decide::{Due, Incoming};
use super::gate::{Ctx, Gate};
use super::respond::{self, Reader};
use crate::config::deadlines::decide_by;
use crate::net::edge::{read_original, EdgeError, EdgeHeaders};
use crate::pipeline::answer::{edge_pass, pass_headers};
use crate::server::snapshot::answer::head;
use crate::server::telemetry::metrics;

/// The original request an edge's subrequest stands for: each fact from the
/// one header the edge writes (`auth.headers`, [`crate::net::edge`]), none
/// from any other. The socket peer is the edge: the client address is read
/// behind it by the same walk as the proxy's (`trusted_proxies`,
/// `client_header`).
///
/// # Errors
/// The reason, for a `400`: a fact missing, doubled, malformed, or
/// contradicted by another header that names it.
pub(super) fn original<'s>(
    session: &'s Session,
    names: &EdgeHeaders,
    due: Option<Due>,
) -> Result<Incoming<'s>, EdgeError> {
    let req = session.req_header();
    let headers = &req.headers;
    let o = read_original(names, || headers.iter().map(|(k, v)| (k.as_str(), v.as_bytes())))?;
    Ok(Incoming {
        method: o.method,
        target: o.target,
        host: o.host,
        https: o.https,
        headers,
        peer: crate::pipeline::Peer::Socket(session.client_addr().and_then(|a| a.as_inet()).map(|a| a.ip())),
        unreadable: super::conn::unreadable(session),
        due,
        // This connection's hello is the edge's, not the client's.
        hello: None,
    })
}

impl Gate {
    /// Answer one authorisation subrequest. Always answers (`Ok(true)`):
    /// nothing is ever proxied from the auth listener.
    pub(super) async fn authorise(&self, session: &mut Session, ctx: &mut Ctx) -> Result<bool> {
        let snap = self.snapshot.load_full();
        ctx.snap = Some(snap.clone());
        // Decided before the edge's own timeout (`auth.edge_timeout_ms`).
        let by = std::time::Instant::now() + decide_by(snap.settings.boot.edge_timeouts.auth);
        let req = match original(session, &snap.settings.auth_headers, Some(Due { by, listener: "auth" })) {
            Ok(req) => req,
            Err(why) => {
                metrics().edge_refused.inc();
                return respond::bad_request(session, ctx, why, Reader::Edge).await;
            }
        };
        let Some(site) = self.site_for(&snap, &req, ctx) else {
            return respond::no_site(session, Reader::Edge).await;
        };
        let step = self.settle(&req, &snap, site, ctx).await;
        if !self.carry_out(session, &snap, site, ctx, step).await? {
            ctx.status = 200;
            let indexing = std::mem::take(&mut ctx.indexing);
            pass(session, ctx.noindex.take(), indexing).await?;
        }
        Ok(true)
    }
}

/// Let the request through: `200`, no body, and the `X-Robots-Tag` values
/// for the edge to copy, as the core lists them ([`edge_pass`]).
async fn pass(session: &mut Session, noindex: Option<String>, indexing: Vec<String>) -> Result<()> {
    let mut resp = head(200, "text/plain", 0, &[])?;
    for (name, value) in edge_pass(pass_headers(noindex.as_deref(), indexing)) {
        resp.append_header(name.into_owned(), value.as_ref())?;
    }
    session.write_response_header(Box::new(resp), true).await
}
