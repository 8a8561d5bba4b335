//! The `ProxyHttp` implementation: have the request decided
//! ([`super::decide`], the core's pipeline), carry out its one outcome as a
//! response or a forwarded request, and log violations when the request ends.
//!
//! Failure policy: deciding cannot fail (the core returns data, never
//! errors), so there is no fail-open path to take; upstream failures answer
//! 502 (refused, reset) or 504 (timed out) and the proxy keeps serving.

use std::net::SocketAddr;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use pingora::http::{RequestHeader, ResponseHeader};
use pingora::proxy::{FailToProxy, ProxyHttp, Session};
use pingora::upstreams::peer::HttpPeer;
use pingora::{Error, ErrorSource, ErrorType, Result};

use super::conn;
use super::decide::{Incoming, Step};
use super::forwarded::add_forwarded_headers;
use super::gate::{Ctx, Gate, Observing};
use super::respond::{self, Reader};
use crate::pipeline::answer::Plan;
use crate::pipeline::Peer;
use crate::policy::Enforcement;
use crate::server::ops::violations::{now_rfc3339, Finding, ViolationLog};
use crate::server::snapshot::Snapshot;
use crate::server::telemetry::metrics;

/// Names looked up on every proxied answer, made once (a name given as
/// text is parsed again at each lookup).
const X_ROBOTS_TAG: http::HeaderName = http::HeaderName::from_static("x-robots-tag");
const CONTENT_USAGE: http::HeaderName = http::HeaderName::from_static("content-usage");

/// The peer for a site's origin: its address, TLS, and robotgate's timeouts
/// (connect; every read and write; idle pooled connections). Public so that
/// `examples/passthrough.rs` can set up the same peer.
pub fn upstream_peer(
    addr: SocketAddr,
    tls: bool,
    sni: String,
    connect_timeout: Duration,
    read_timeout: Duration,
) -> HttpPeer {
    let mut peer = HttpPeer::new(addr, tls, sni);
    peer.options.connection_timeout = Some(connect_timeout);
    peer.options.total_connection_timeout = Some(connect_timeout * 2);
    peer.options.read_timeout = Some(read_timeout);
    peer.options.write_timeout = Some(read_timeout);
    peer.options.idle_timeout = Some(Duration::from_secs(60));
    peer
}

/// The length of a response a trap link can be put into: a whole,
/// uncompressed `text/html` 200 of known length up to
/// [`crate::managed::INJECT_MAX_BYTES`]. Compressed, other and streamed
/// (chunked) responses pass untouched.
fn injectable(resp: &ResponseHeader) -> Option<usize> {
    let header = |name: &str| resp.headers.get(name).and_then(|v| v.to_str().ok());
    let html = header("content-type")
        .is_some_and(|t| t.split(';').next().is_some_and(|m| m.trim().eq_ignore_ascii_case("text/html")));
    let plain = header("content-encoding").is_none_or(|e| e.trim().eq_ignore_ascii_case("identity"));
    let len = header("content-length")?.trim().parse::<usize>().ok()?;
    (resp.status.as_u16() == 200 && html && plain && len <= crate::managed::INJECT_MAX_BYTES).then_some(len)
}

/// `indexing.observe`: what the origin's answer says about indexing, its
/// own `X-Robots-Tag` (read here, before robotgate adds any) and, for an
/// HTML page, the robots META tags of its head (read as the body passes).
fn observe(resp: &ResponseHeader, path: &str, ctx: &mut Ctx, log: &ViolationLog) {
    use crate::indexing::meta;
    let told: crate::indexing::Told = resp
        .headers
        .get_all(X_ROBOTS_TAG)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .take(meta::MAX_TAGS)
        .map(|v| {
            let (name, terms) = meta::header_value(v);
            (name.map(str::to_ascii_lowercase), terms)
        })
        .filter(|(_, terms)| !terms.is_empty())
        .collect();
    let header = |name: &str| resp.headers.get(name).and_then(|v| v.to_str().ok());
    let html = header("content-type")
        .is_some_and(|t| t.split(';').next().is_some_and(|m| m.trim().eq_ignore_ascii_case("text/html")));
    let plain = header("content-encoding").is_none_or(|e| e.trim().eq_ignore_ascii_case("identity"));
    let ok = resp.status.as_u16() == 200;
    if ok && html && plain {
        ctx.observing = Some(Box::new(Observing { head: meta::HeadScanner::new(), told }));
    } else if ok {
        told_page(ctx, path, told, log);
    }
}

/// The page observed: the request's path, as requested, without its query
/// (a client choosing queries makes no new page, and no new finding).
fn path_of(session: &Session) -> &str {
    session.req_header().uri.path()
}

/// Note what the page said; when that is news and robots.txt hides a
/// noindex of it from a robot, say so in the violation log (one finding per
/// robot), for `robotgate report`.
fn told_page(ctx: &Ctx, path: &str, told: crate::indexing::Told, log: &ViolationLog) {
    let Some(site) = ctx.site() else { return };
    let noindex = told.iter().any(|(_, terms)| crate::indexing::meta::says_noindex(terms));
    let said = noindex.then(|| told.clone());
    if !crate::server::ops::status::board().told(&site.conf.name, path, told) {
        return;
    }
    let (Some(said), Some(robots)) = (said, site.robots.as_ref()) else { return };
    let now = crate::server::store::redis::unix_ms();
    for h in crate::indexing::hidden_page(path, &said, now, &robots.compiled) {
        log.note(Finding {
            time: h.seen,
            site: site.conf.name.clone(),
            finding: Finding::HIDDEN_NOINDEX,
            path: h.path,
            robot: h.robot,
            said: h.said,
            line: robots.lines.file_line(h.robots_line).unwrap_or(h.robots_line),
            pattern: h.robots_pattern,
        });
    }
}

/// What a decided request is answered with, before any I/O: every host
/// (the proxy, the auth listener, the ext_authz service) writes it in its
/// own form, and none picks its own.
pub(super) enum Reply<'a> {
    /// The origin answers (a pass; a site file the edge serves).
    Forward,
    /// A refusal built once per snapshot ([`crate::server::snapshot::answer::Prebuilt`]);
    /// with `Accept-Signature` when the second field says so.
    Prebuilt(&'a crate::server::snapshot::answer::Prebuilt, bool),
    /// A plan made for this request; the connection closes after it when
    /// the second field says so (a request read two ways).
    Plan(Plan<'a>, bool),
}

impl Gate {
    /// The one place the outcome becomes an answer. `has`: what a
    /// conditional request says it has (for robots.txt and humans.txt),
    /// read only when a file is answered.
    pub(super) fn reply<'a, 'c>(
        &self,
        snap: &'a Snapshot,
        site: usize,
        ctx: &mut Ctx,
        step: Step<'a>,
        has: impl FnOnce() -> crate::pipeline::answer::Conditional<'c>,
    ) -> Reply<'a> {
        let (live, answers, to) = (&snap.sites[site], &snap.answers[site], self.reader());
        let enforcement = match step {
            // A target that came in a header cannot leave the connection out of step.
            Step::Refuse(status, why) => return Reply::Plan(Plan::refuse(status, &why), true),
            Step::Decided(outcome) => outcome.enforcement(),
        };
        match enforcement {
            Enforcement::Pass { noindex } => {
                ctx.noindex = noindex.map(str::to_owned);
                Reply::Forward
            }
            // The edge serves what the auth listener lets through: the
            // snippets send robots.txt and humans.txt to the proxy listener.
            Enforcement::File(_) if self.auth => Reply::Forward,
            // Built once per snapshot: nothing is formatted per request.
            Enforcement::Answer(action) => match answers.refusal(action, to) {
                Some(answer) => Reply::Prebuilt(answer, ctx.accept_signature),
                // Every refusing action of the site has its answer (a file
                // not loaded is a refused load).
                None => Reply::Forward,
            },
            e => match Plan::of(e, live, ctx.accept_signature, has()) {
                Some(plan) => Reply::Plan(plan, false),
                None => Reply::Forward,
            },
        }
    }

    /// Carry the outcome out as a response on `session`. `Ok(true)`: answered here.
    pub(super) async fn carry_out(
        &self,
        session: &mut Session,
        snap: &Snapshot,
        site: usize,
        ctx: &mut Ctx,
        step: Step<'_>,
    ) -> Result<bool> {
        let to = self.reader();
        let headers = &session.req_header().headers;
        match self.reply(snap, site, ctx, step, || respond::conditional(headers)) {
            Reply::Forward => Ok(false),
            Reply::Prebuilt(answer, signature) => {
                ctx.status = respond::send_prebuilt(session, answer, signature).await?;
                Ok(true)
            }
            Reply::Plan(plan, close) => {
                ctx.status = respond::send(session, plan, to, close).await?;
                Ok(true)
            }
        }
    }
}

#[async_trait]
impl ProxyHttp for Gate {
    type CTX = Ctx;

    fn new_ctx(&self) -> Ctx {
        Ctx::default()
    }

    async fn early_request_filter(&self, session: &mut Session, _ctx: &mut Ctx) -> Result<()> {
        conn::head_complete(session);
        if self.proxy_protocol {
            conn::drop_forwarding_headers(session);
        }
        // Pingora keeps idle HTTP/1.1 keep-alive connections forever after the
        // first request; bound them.
        if session.get_keepalive().is_some() {
            session.set_keepalive(Some(self.keepalive));
        }
        Ok(())
    }

    async fn request_filter(&self, session: &mut Session, ctx: &mut Ctx) -> Result<bool> {
        if self.auth {
            return self.authorise(session, ctx).await;
        }
        let snap = self.snapshot.load_full();
        ctx.snap = Some(snap.clone());
        let mut req = match Incoming::of(session) {
            Ok(req) => req,
            Err(why) => return respond::bad_request(session, ctx, why, Reader::Client).await,
        };
        if self.proxy_protocol {
            // The balancer named the client in a field of its own; the
            // connection (its scheme, its ClientHello) is the balancer's,
            // which may have made it anew (HTTP mode): neither is judged.
            if let Peer::Socket(client) = req.peer {
                req.peer = Peer::Logged(client);
            }
            req.hello = None;
        }
        let Some(site) = self.site_for(&snap, &req, ctx) else {
            return respond::no_site(session, Reader::Client).await;
        };
        let step = self.settle(&req, &snap, site, ctx).await;
        self.carry_out(session, &snap, site, ctx, step).await
    }

    async fn upstream_peer(&self, _session: &mut Session, ctx: &mut Ctx) -> Result<Box<HttpPeer>> {
        let Some(site) = ctx.site() else {
            return Error::e_explain(ErrorType::InternalError, "no site chosen");
        };
        // `robotgate serve` loads no site without one (`crate::config::host`).
        let (Some(up), Some(addr)) = (site.conf.upstream.as_ref(), site.upstream_addr) else {
            return Error::e_explain(ErrorType::InternalError, "the site has no upstream");
        };
        let mut peer = upstream_peer(addr, up.tls, up.sni.clone(), up.connect_timeout, up.read_timeout);
        if up.h2 {
            // Over TLS, HTTP/2 when the origin's ALPN agrees; in the clear,
            // prior knowledge (the origin must speak h2c).
            peer.options.set_http_version(2, if up.tls { 1 } else { 2 });
        }
        Ok(Box::new(peer))
    }

    async fn upstream_request_filter(
        &self,
        session: &mut Session,
        upstream_request: &mut RequestHeader,
        ctx: &mut Ctx,
    ) -> Result<()> {
        if let Some(target) = ctx.rewrite.take() {
            upstream_request.set_raw_path(&target)?;
        }
        // An origin that takes `Upgrade: h2c` would speak HTTP/2 on this
        // connection from then on, and every request in it would pass
        // unjudged (h2c smuggling): the upgrade is not passed on, and the
        // origin answers in HTTP/1.1. Other upgrades (WebSocket) pass; what
        // goes through their tunnel is outside robotgate's judgement (the
        // opening request is judged as any other).
        let h2c = upstream_request
            .headers
            .get_all(http::header::UPGRADE)
            .iter()
            .any(|v| v.as_bytes().split(|&b| b == b',').any(|t| t.trim_ascii().eq_ignore_ascii_case(b"h2c")));
        if h2c {
            upstream_request.remove_header("upgrade");
            upstream_request.remove_header("http2-settings");
        }
        let (header, trusted) = match ctx.snap.as_ref() {
            Some(s) => (s.settings.client_header, &s.settings.trusted_proxies[..]),
            None => (Default::default(), &[][..]),
        };
        add_forwarded_headers(session, upstream_request, header, trusted)
    }

    async fn response_filter(
        &self,
        session: &mut Session,
        upstream_response: &mut ResponseHeader,
        ctx: &mut Ctx,
    ) -> Result<()> {
        if std::mem::take(&mut ctx.observe) {
            observe(upstream_response, path_of(session), ctx, &self.violations);
        }
        // Added beside the origin's own X-Robots-Tag, never in its place.
        if let Some(value) = ctx.noindex.take() {
            upstream_response.append_header("x-robots-tag", value)?;
        }
        for value in std::mem::take(&mut ctx.indexing) {
            upstream_response.append_header("x-robots-tag", value)?;
        }
        if let Some(value) = ctx.content_usage.take() {
            if !upstream_response.headers.contains_key(CONTENT_USAGE) {
                upstream_response.insert_header("content-usage", value)?;
            }
        }
        ctx.status = upstream_response.status.as_u16();
        if let Some(link) = ctx.site().and_then(|s| s.trap_link.clone()) {
            if let Some(len) = injectable(upstream_response) {
                upstream_response.insert_header("content-length", len + link.len())?;
                ctx.inject = Some((link, Vec::with_capacity(len)));
            }
        }
        Ok(())
    }

    fn response_body_filter(
        &self,
        session: &mut Session,
        body: &mut Option<Bytes>,
        end_of_stream: bool,
        ctx: &mut Ctx,
    ) -> Result<Option<Duration>> {
        // The head of an observed page, read as it passes: nothing is held.
        if let Some(o) = ctx.observing.as_mut() {
            if let Some(chunk) = body.as_ref() {
                o.head.feed(chunk);
            }
            if o.head.done() || end_of_stream {
                if let Some(o) = ctx.observing.take() {
                    let mut told = o.told;
                    told.extend(o.head.found().iter().map(|(name, terms)| (Some(name.clone()), terms.clone())));
                    told_page(ctx, path_of(session), told, &self.violations);
                }
            }
        }
        // Hold the page whole (it is bounded by `injectable`), then send it
        // with the trap link in.
        if let Some((link, held)) = ctx.inject.as_mut() {
            if let Some(chunk) = body.take() {
                held.extend_from_slice(&chunk);
            }
            if end_of_stream {
                *body = Some(Bytes::from(crate::managed::inject(held, link)));
                ctx.inject = None;
            }
        }
        Ok(None)
    }

    async fn fail_to_proxy(&self, session: &mut Session, e: &Error, ctx: &mut Ctx) -> FailToProxy {
        let code = match e.etype() {
            ErrorType::HTTPStatus(c) => *c,
            _ => match e.esource() {
                ErrorSource::Upstream => match e.etype() {
                    ErrorType::ConnectTimedout
                    | ErrorType::ReadTimedout
                    | ErrorType::WriteTimedout
                    | ErrorType::TLSHandshakeTimedout => 504,
                    _ => 502,
                },
                ErrorSource::Downstream => match e.etype() {
                    ErrorType::WriteError | ErrorType::ReadError | ErrorType::ConnectionClosed => 0,
                    _ => 400,
                },
                ErrorSource::Internal | ErrorSource::Unset => 500,
            },
        };
        // A response already under way cannot be replaced; the client sees it cut.
        let code = if session.response_written().is_some() { 0 } else { code };
        if code > 0 {
            // Count before answering, so a client that has its answer sees it counted.
            if let Some(answers) = ctx.snap.as_ref().zip(ctx.site).and_then(|(s, i)| s.answers.get(i)) {
                metrics().upstream_errors.with_label_values(&[answers.metric_site.as_str(), &code.to_string()]).inc();
            }
            let _ = respond::send(session, Plan::upstream_failed(code), Reader::Client, false).await;
        }
        ctx.status = code;
        FailToProxy { error_code: code, can_reuse_downstream: false }
    }

    async fn logging(&self, session: &mut Session, _e: Option<&Error>, ctx: &mut Ctx) {
        conn::request_done(session);
        let Some(mut record) = ctx.pending.take() else { return };
        record.time = now_rfc3339();
        record.status = session.response_written().map_or(ctx.status, |r| r.status.as_u16());
        if self.status_page {
            crate::server::ops::status::board().push(&record);
        }
        // Never waits: a full log queue folds the record into the aggregation table.
        self.violations.write(*record);
    }

    fn suppress_error_log(&self, _session: &Session, _ctx: &Ctx, _error: &Error) -> bool {
        false
    }
}
