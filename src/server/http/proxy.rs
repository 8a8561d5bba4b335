//! The `ProxyHttp` implementation: gather the request's facts once, let the
//! core decide ([`policy::decide`]), and translate its one outcome into a
//! response or a forwarded request; log violations when the request ends.
//!
//! Failure policy: deciding cannot fail (the core returns data, never
//! errors), so there is no fail-open path to take; upstream failures answer
//! 502 (refused, reset) or 504 (timed out) and the proxy keeps serving.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use async_trait::async_trait;
use bytes::Bytes;
use pingora::http::{RequestHeader, ResponseHeader};
use pingora::proxy::{FailToProxy, ProxyHttp, Session};
use pingora::upstreams::peer::HttpPeer;
use pingora::{Error, ErrorSource, ErrorType, Result};

use super::conn;
use super::decide::{Incoming, Step};
use super::forwarded::add_forwarded_headers;
use super::respond::{self, Reader};
use crate::identity::signature::{Limits, RequestParts, Verdict};
use crate::load::LiveSite;
use crate::policy::{Action, Enforcement, Outcome, SiteFile};
use crate::server::ops::crowd::Crowd;
use crate::server::ops::violations::{now_rfc3339, Record, ViolationLog};
use crate::server::snapshot::{SiteAnswers, Snapshot};
use crate::server::store::reads::Reads;
use crate::server::store::redis::SharedStore;
use crate::server::telemetry::metrics;
use crate::server::verify::dns::{DnsVerdict, DnsVerifier, Trouble};
use crate::server::verify::identity::{ServerIdentity, Settled};
use crate::server::verify::wba::{self, DirectoryCache};
use crate::state::shared::Answer;
use crate::state::MemoryState;

/// The proxy application. One per Pingora service: listeners with and
/// without the PROXY protocol are two services (see `server::serve_with`).
#[derive(Clone)]
pub struct Gate {
    /// The live snapshot; reload swaps it.
    pub snapshot: Arc<ArcSwap<Snapshot>>,
    /// Rate clocks, bans and robots.txt reads (survive reloads).
    pub state: Arc<MemoryState>,
    /// The violation log.
    pub violations: Arc<ViolationLog>,
    /// Forward-confirmed reverse DNS, when a resolver could be set up.
    pub dns: Option<Arc<DnsVerifier>>,
    /// Web Bot Auth key directories.
    pub wba: Arc<DirectoryCache>,
    /// The store shared with other instances (`state.redis`), if any.
    pub shared: Option<Arc<SharedStore>>,
    /// The robots.txt reads, kept across restarts.
    pub reads: Arc<Reads>,
    /// Whether every client looks like one ([`Crowd`]).
    pub crowd: Arc<Crowd>,
    /// Keep the last violations for the status page.
    pub status_page: bool,
    /// Seconds an idle keep-alive connection stays open (`limits.keepalive_timeout`).
    pub keepalive: u64,
    /// This service's listeners take the PROXY protocol: its header names
    /// the client, and the client's forwarding headers are dropped.
    pub proxy_protocol: bool,
    /// This service answers an edge proxy's authorisation subrequests
    /// (`auth.listen`, [`super::auth`]) instead of proxying.
    pub auth: bool,
}

/// Per-request state.
#[derive(Default)]
pub struct Ctx {
    /// The snapshot this request is decided and proxied with.
    pub(super) snap: Option<Arc<Snapshot>>,
    /// The request's site, an index into `snap.sites`.
    pub(super) site: Option<usize>,
    /// The client address, after trusted proxies.
    pub(super) client: Option<IpAddr>,
    /// `X-Robots-Tag` to add to the proxied response.
    pub(super) noindex: Option<String>,
    /// `Content-Usage` to add to the proxied response, unless the origin sets one.
    pub(super) content_usage: Option<String>,
    /// Refused as a spoofed claim of a robot that signs (Web Bot Auth): the
    /// refusal carries `Accept-Signature`.
    pub(super) accept_signature: bool,
    /// A page to put the trap link into: the link, and the body held so far.
    pub(super) inject: Option<(Bytes, Vec<u8>)>,
    /// The normalised target a robot was judged by, when it differs from
    /// what it sent: the origin gets exactly what was judged.
    pub(super) rewrite: Option<Vec<u8>>,
    /// A violation's record, made when the decision is; its time and final
    /// status are filled in by `logging`.
    /// Boxed: the context lives inside Pingora's per-request future, which is
    /// moved whole (copied) at every request; a record inline would add its
    /// size to each copy, for the few requests that make one.
    pub(super) pending: Option<Box<Record>>,
    pub(super) status: u16,
    /// The request was counted by a first decision (a second one follows
    /// a shared store's answer).
    pub(super) counted: bool,
    /// The request was counted for [`Crowd`], and whether its client is the crowd's address.
    pub(super) crowd: Option<bool>,
}

impl Gate {
    /// Who reads this service's answers.
    pub(super) fn reader(&self) -> Reader {
        if self.auth {
            Reader::Edge
        } else {
            Reader::Client
        }
    }

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

impl Ctx {
    fn site(&self) -> Option<&LiveSite> {
        self.snap.as_ref()?.sites.get(self.site?)
    }
}

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
    let mut hosts = req.headers.get_all("host").into_iter();
    let host = hosts.next().map_or(Ok(""), |h| std::str::from_utf8(h.as_bytes()).map_err(|_| "Host is not text"))?;
    if hosts.next().is_some() {
        return Err("more than one Host header");
    }
    Ok(host)
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

impl Gate {
    /// The host of the Web Bot Auth agent whose signature on this request
    /// verifies (RFC 9421, draft-meunier-webbotauth-httpsig-protocol). Only
    /// requests that carry `Signature-Input` pay for it; the directory fetch
    /// is bounded and cached by [`DirectoryCache`], and made only for an
    /// agent that some robot of the database signs as (`signature_agents`,
    /// `rdns`): a client cannot make robotgate fetch from hosts of its choosing.
    async fn signature_agent(&self, req: &Incoming<'_>, snap: &Snapshot) -> Option<String> {
        if !req.headers.contains_key("signature-input") {
            return None;
        }
        let (path, query) = req.path_and_query()?;
        let headers: Vec<(&str, &str)> =
            req.headers.iter().filter_map(|(k, v)| Some((k.as_str(), v.to_str().ok()?))).collect();
        let parts = RequestParts {
            method: req.method,
            scheme: if req.https { "https" } else { "http" },
            authority: req.host,
            path,
            query,
            headers: &headers,
        };
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
        let inspection = crate::identity::signature::inspect(&parts, now, &Limits::default());
        let known = |agent: &str| {
            agent_host(agent).is_some_and(|host| {
                snap.classifier.db().bots().iter().any(|b| {
                    b.signature_agents.iter().chain(&b.rdns).any(|s| crate::identity::rdns::suffix_matches(&host, s))
                })
            })
        };
        if !inspection.agents().iter().all(|a| known(a)) || inspection.agents().is_empty() {
            return None;
        }
        match wba::verify_inspection(&self.wba, &inspection).await {
            Verdict::Verified { agent, .. } => agent_host(&agent),
            _ => None,
        }
    }
}

impl Gate {
    /// Settle `ip`'s claim to a robot with reverse-DNS domains `suffixes`:
    /// from a verdict another instance shared, or by a lookup whose verdict
    /// is then shared.
    async fn verify_dns(&self, dns: &DnsVerifier, ip: IpAddr, suffixes: &[String]) -> DnsVerdict {
        if let Some(store) = &self.shared {
            if let Some((verdict, ttl)) = store.rdns(ip, suffixes).await {
                dns.remember(ip, suffixes, verdict.clone(), ttl);
                return verdict;
            }
        }
        let verdict = dns.verify(ip, suffixes).await;
        if let (Some(store), Some((verdict, ttl))) = (&self.shared, dns.cached_for(ip, suffixes)) {
            store.share_rdns(ip, suffixes, &verdict, ttl);
        }
        verdict
    }

    /// A claim that only reverse DNS could settle, and it did not: never
    /// silent (issue #39). The robot is judged as what it claims, unverified;
    /// robots whose operator publishes complete ranges never get here.
    fn unchecked(bot: &str, ip: IpAddr, trouble: &Trouble) {
        let reason = match trouble {
            Trouble::Timeout => "timeout",
            Trouble::Busy => "busy",
            Trouble::Resolver(_) => "resolver",
        };
        metrics().identity_unchecked.with_label_values(&[bot, reason]).inc();
        tracing::warn!(target: "robotgate::identity", bot, client = %ip, reason = %trouble, "claim not checked: reverse DNS gave no answer; judged unverified");
    }
}

/// The host of an agent URL (`https://chatgpt.com` -> `chatgpt.com`), lower case.
fn agent_host(url: &str) -> Option<String> {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next()?;
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host =
        if host.starts_with('[') { host.split(']').next()?.trim_start_matches('[') } else { host.split(':').next()? };
    (!host.is_empty()).then(|| host.to_ascii_lowercase())
}

/// Answer a violation whose action robotgate answers itself, with the
/// answer the snapshot built for it at load time ([`SiteAnswers::refusal`]):
/// nothing is formatted per request and nothing goes upstream. Returns the
/// status sent, 0 for the actions that forward.
async fn answer_violation(
    session: &mut Session,
    site: &SiteAnswers,
    action: &Action,
    extra: Option<(&'static str, &'static str)>,
    to: Reader,
) -> Result<u16> {
    match site.refusal(action) {
        Some(answer) => respond::send_prebuilt_with(session, answer, extra, to).await,
        // Every refusing action of the site has its answer; one without is
        // a forwarding one (noindex, log).
        None => Ok(0),
    }
}

impl Gate {
    /// Decide the request, making at most one reverse-DNS lookup and
    /// putting at most one question to the shared store on the way.
    pub(super) async fn settle<'s>(
        &self,
        req: &Incoming<'_>,
        snap: &'s Arc<Snapshot>,
        site: usize,
        ctx: &mut Ctx,
    ) -> Step<'s> {
        let live = &snap.sites[site];
        // The rare awaits below (a signature's key directory, a DNS lookup, a
        // question to the shared store) are boxed: their futures are large,
        // and inline they would make every request's future as large, which
        // Pingora copies whole at each request (async_trait boxes it).
        let signed_by = if req.headers.contains_key("signature-input") {
            Box::pin(self.signature_agent(req, snap)).await
        } else {
            None
        };
        let mut looked_up = false;
        // A rate question goes to the shared store only while it answers.
        let mut rate = if self.shared.as_ref().is_some_and(|s| s.is_up()) { Answer::Ask } else { Answer::Local };
        loop {
            let identity =
                ServerIdentity { snap: &snap.files, dns: self.dns.as_deref(), signed_by: signed_by.as_deref() };
            let step = if looked_up {
                self.decide(req, snap, live, ctx, &Settled(identity), rate)
            } else {
                self.decide(req, snap, live, ctx, &identity, rate)
            };
            match step {
                // At most one bounded lookup per request; browsers never get here.
                Step::Pending(bot) if !looked_up => {
                    looked_up = true;
                    if let (Some(dns), Some(ip)) = (self.dns.as_deref(), ctx.client) {
                        let entry = snap.classifier.bot(bot);
                        let verdict = Box::pin(self.verify_dns(dns, ip, &entry.rdns)).await;
                        if let DnsVerdict::Unverifiable { reason } = &verdict {
                            Gate::unchecked(&entry.name, ip, reason);
                        }
                    }
                }
                // At most one question per request (only `Ask` asks), bounded
                // by `state.timeout_ms`; only robots whose group sets a pace get here.
                Step::Ask(question) => {
                    let answer = match &self.shared {
                        Some(store) => Box::pin(store.admit(&question)).await,
                        None => None,
                    };
                    match answer {
                        // Admitted: the pass this step stands for.
                        Some(Ok(())) => return Step::Decided(Outcome::Pass),
                        Some(wait) => rate = Answer::Given(wait),
                        // Store out of reach: the local tables answer. The
                        // first decision did not count a limit; this one may.
                        None => rate = Answer::Local,
                    }
                }
                step => return step,
            }
        }
    }

    /// The one place the outcome becomes a response. `Ok(true)`: answered here.
    pub(super) async fn carry_out(
        &self,
        session: &mut Session,
        snap: &Snapshot,
        site: usize,
        ctx: &mut Ctx,
        step: Step<'_>,
    ) -> Result<bool> {
        let (live, answers) = (&snap.sites[site], &snap.answers[site]);
        match step {
            // Not reached: a settled identity is never pending, an answered question not asked again.
            Step::Pending(_) | Step::Ask(_) => Ok(false),
            Step::Refuse(status, why) => {
                ctx.status = status;
                let body = Bytes::from(format!("{why}\n"));
                let to = self.reader();
                // A target that came in a header cannot leave the connection out of step.
                let close: &[_] = if to == Reader::Edge { &[] } else { &[("connection", "close".into())] };
                respond::send(session, status, "text/plain; charset=utf-8", close, body, to).await?;
                if to == Reader::Client {
                    session.set_keepalive(None);
                }
                Ok(true)
            }
            Step::Decided(outcome) => match outcome.enforcement() {
                Enforcement::Pass { noindex } => {
                    ctx.noindex = noindex.map(str::to_owned);
                    Ok(false)
                }
                // The edge serves what the auth listener lets through: the
                // snippets send robots.txt and humans.txt to the proxy listener.
                Enforcement::File(_) if self.auth => Ok(false),
                Enforcement::File(which) => {
                    let file = match which {
                        SiteFile::Robots => live.robots.as_ref().map(|r| &r.file),
                        SiteFile::Humans => live.humans.as_ref(),
                    };
                    let Some(file) = file else { return Ok(false) };
                    metrics().served.with_label_values(&[live.conf.name.as_str(), which.as_str()]).inc();
                    ctx.status = respond::serve_file(session, file, "text/plain; charset=utf-8").await?;
                    Ok(true)
                }
                Enforcement::Answer(action) => {
                    let extra = ctx.accept_signature.then_some(("accept-signature", respond::ACCEPT_SIGNATURE));
                    ctx.status = answer_violation(session, answers, action, extra, self.reader()).await?;
                    Ok(true)
                }
                Enforcement::TooManyRequests { retry_after, directive, line, interval } => {
                    ctx.status = 429;
                    respond::too_many_requests(session, retry_after, directive, line, interval, self.reader()).await?;
                    Ok(true)
                }
            },
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
        let req = match Incoming::of(session) {
            Ok(req) => req,
            Err(why) => return respond::bad_request(session, ctx, why, Reader::Client).await,
        };
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
        let up = &site.conf.upstream;
        let mut peer = upstream_peer(site.upstream_addr, up.tls, up.sni.clone(), up.connect_timeout, up.read_timeout);
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
            .get_all("upgrade")
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
        _session: &mut Session,
        upstream_response: &mut ResponseHeader,
        ctx: &mut Ctx,
    ) -> Result<()> {
        if let Some(value) = ctx.noindex.take() {
            upstream_response.insert_header("x-robots-tag", value)?;
        }
        if let Some(value) = ctx.content_usage.take() {
            if upstream_response.headers.get("content-usage").is_none() {
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
        _session: &mut Session,
        body: &mut Option<Bytes>,
        end_of_stream: bool,
        ctx: &mut Ctx,
    ) -> Result<Option<Duration>> {
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
            if let Some(site) = ctx.site() {
                metrics().upstream_errors.with_label_values(&[site.conf.name.as_str(), &code.to_string()]).inc();
            }
            let body = match code {
                502 => "Bad Gateway: the origin server could not be reached.\n",
                504 => "Gateway Timeout: the origin server did not answer in time.\n",
                _ => "The request could not be completed.\n",
            };
            let _ = respond::send(
                session,
                code,
                "text/plain; charset=utf-8",
                &[("cache-control", "no-store".into())],
                Bytes::from_static(body.as_bytes()),
                Reader::Client,
            )
            .await;
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
