//! The `ProxyHttp` implementation: one snapshot per request, classify,
//! decide, respond or proxy, and log violations.
//!
//! Failure policy: deciding cannot fail (the core returns data, never
//! errors), so there is no fail-open path to take; upstream failures answer
//! 502 (refused, reset) or 504 (timed out) and the proxy keeps serving.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use arc_swap::ArcSwap;
use async_trait::async_trait;
use bytes::Bytes;
use pingora::http::{Method, RequestHeader, ResponseHeader};
use pingora::proxy::{FailToProxy, ProxyHttp, Session};
use pingora::upstreams::peer::HttpPeer;
use pingora::{Error, ErrorSource, ErrorType, Result};

use super::limit::RateTable;
use super::respond;
use super::snapshot::Snapshot;
use super::telemetry::metrics;
use super::violations::{now_rfc3339, Record, ViolationLog};
use crate::agent::AgentKind;
use crate::config::{Action, Cidr};
use crate::policy::{self, Requester};

/// The proxy application.
pub struct Gate {
    /// The live snapshot; reload swaps it.
    pub snapshot: Arc<ArcSwap<Snapshot>>,
    /// Last-request times for rate limits (survives reloads).
    pub rates: Arc<RateTable>,
    /// The violation log.
    pub violations: Arc<ViolationLog>,
}

/// A violation waiting for the final status, written in `logging`.
pub struct Pending {
    bot: Option<String>,
    category: &'static str,
    group: Option<String>,
    directive: &'static str,
    pattern: Option<String>,
    line: Option<u32>,
    action: &'static str,
}

/// Per-request state.
#[derive(Default)]
pub struct Ctx {
    snap: Option<Arc<Snapshot>>,
    site: Option<usize>,
    client: Option<IpAddr>,
    /// `X-Robots-Tag` to add to the proxied response.
    noindex: Option<String>,
    pending: Option<Pending>,
    status: u16,
}

/// The client address: the socket peer, or, when the peer is a trusted proxy,
/// the right-most untrusted address of `X-Forwarded-For` (or `Forwarded: for=`).
/// Headers from anyone else are ignored, so a bot cannot choose its address.
pub fn client_ip(peer: Option<IpAddr>, req: &RequestHeader, trusted: &[Cidr]) -> Option<IpAddr> {
    let peer = peer?;
    let is_trusted = |ip: IpAddr| trusted.iter().any(|c| c.contains(ip));
    if !is_trusted(peer) {
        return Some(peer);
    }
    let mut hops: Vec<IpAddr> = Vec::new();
    for v in req.headers.get_all("forwarded") {
        for elem in v.to_str().unwrap_or("").split(',') {
            for pair in elem.split(';') {
                if let Some((k, val)) = pair.trim().split_once('=') {
                    if k.trim().eq_ignore_ascii_case("for") {
                        let val = val.trim().trim_matches('"');
                        let val = val.strip_prefix('[').map_or(val, |v| v.split(']').next().unwrap_or(v));
                        let val =
                            if val.matches(':').count() == 1 { val.split(':').next().unwrap_or(val) } else { val };
                        if let Ok(ip) = val.parse() {
                            hops.push(ip);
                        }
                    }
                }
            }
        }
    }
    if hops.is_empty() {
        for v in req.headers.get_all("x-forwarded-for") {
            hops.extend(v.to_str().unwrap_or("").split(',').filter_map(|s| s.trim().parse::<IpAddr>().ok()));
        }
    }
    // Walk from the nearest hop outwards; the first untrusted one is the client.
    Some(
        hops.iter().rev().copied().find(|ip| !is_trusted(*ip)).unwrap_or_else(|| hops.first().copied().unwrap_or(peer)),
    )
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

/// Sets `X-Forwarded-For` (the socket peer, appended to the chain only when
/// the peer is one of `trusted` proxies; otherwise the client's own header is
/// replaced) and `X-Forwarded-Proto` on the request to the origin.
pub fn add_forwarded_headers(session: &Session, upstream_request: &mut RequestHeader, trusted: &[Cidr]) -> Result<()> {
    let peer = session.client_addr().and_then(|a| a.as_inet()).map(|a| a.ip());
    if let Some(peer) = peer {
        // Keep the chain only when it came from a trusted proxy.
        let prior = if trusted.iter().any(|c| c.contains(peer)) {
            upstream_request.headers.get("x-forwarded-for").and_then(|v| v.to_str().ok()).map(str::to_owned)
        } else {
            None
        };
        let value = match prior {
            Some(p) if !p.trim().is_empty() => format!("{p}, {peer}"),
            _ => peer.to_string(),
        };
        upstream_request.insert_header("x-forwarded-for", value)?;
    }
    let tls = session.digest().is_some_and(|d| d.ssl_digest.is_some());
    upstream_request.insert_header("x-forwarded-proto", if tls { "https" } else { "http" })?;
    Ok(())
}

fn host_of(req: &RequestHeader) -> &str {
    req.headers.get("host").and_then(|h| h.to_str().ok()).or_else(|| req.uri.host()).unwrap_or("")
}

/// Bot label for metrics: only database names, so clients cannot mint series.
fn bot_label(known: bool, name: Option<&str>) -> &str {
    match (known, name) {
        (true, Some(n)) => n,
        _ => "other",
    }
}

impl Gate {
    async fn answer_locally(
        &self,
        session: &mut Session,
        ctx: &mut Ctx,
        action: &Action,
        snap: &Snapshot,
        site: usize,
    ) -> Result<()> {
        let status = match action {
            Action::Block { status, body, file } => {
                let (content_type, body) = match file {
                    // Only files named in the config were loaded; no request can pick another.
                    Some((path, ct)) => {
                        (ct.as_str(), snap.sites[site].alternates.get(path).map(|f| f.body.clone()).unwrap_or_default())
                    }
                    None => ("text/plain; charset=utf-8", Bytes::from(body.clone())),
                };
                respond::send(session, *status, content_type, &[("cache-control", "no-store".into())], body).await?;
                *status
            }
            Action::Alternate { status, file, content_type } => {
                // Only files named in the config were loaded; no request can pick another.
                let body = snap.sites[site].alternates.get(file).map(|f| f.body.clone()).unwrap_or_default();
                respond::send(session, *status, content_type, &[("cache-control", "no-store".into())], body).await?;
                *status
            }
            Action::Redirect { status, location } => {
                respond::send(
                    session,
                    *status,
                    "text/plain; charset=utf-8",
                    &[("location", location.clone())],
                    Bytes::from_static(b"Moved\n"),
                )
                .await?;
                *status
            }
            Action::Noindex { .. } | Action::Log => unreachable!("proxied actions are not answered locally"),
        };
        ctx.status = status;
        Ok(())
    }
}

#[async_trait]
impl ProxyHttp for Gate {
    type CTX = Ctx;

    fn new_ctx(&self) -> Ctx {
        Ctx::default()
    }

    async fn early_request_filter(&self, session: &mut Session, _ctx: &mut Ctx) -> Result<()> {
        // Pingora keeps idle HTTP/1.1 keep-alive connections forever after the
        // first request; bound them.
        if session.get_keepalive().is_some() {
            session.set_keepalive(Some(60));
        }
        Ok(())
    }

    async fn request_filter(&self, session: &mut Session, ctx: &mut Ctx) -> Result<bool> {
        let started = Instant::now();
        let snap = self.snapshot.load_full();
        ctx.snap = Some(snap.clone());
        let config = &snap.config;
        let req = session.req_header();
        let Some(site_idx) = config.site_for_host(host_of(req)) else {
            ctx.status = 421;
            respond::send(
                session,
                421,
                "text/plain; charset=utf-8",
                &[],
                Bytes::from_static(b"No site is configured for this host.\n"),
            )
            .await?;
            return Ok(true);
        };
        ctx.site = Some(site_idx);
        let site = &config.sites[site_idx];
        let files = &snap.sites[site_idx];
        let peer = session.client_addr().and_then(|a| a.as_inet()).map(|a| a.ip());
        ctx.client = client_ip(peer, req, &config.trusted_proxies);

        // robots.txt and humans.txt: answered here, never blocked or limited.
        let is_get = matches!(req.method, Method::GET | Method::HEAD);
        let path = req.uri.path();
        if is_get && (path == "/robots.txt" || path == "/humans.txt") {
            let (file, name) = if path == "/robots.txt" {
                (files.robots.as_ref().map(|r| &r.file), "robots.txt")
            } else {
                (files.humans.as_ref(), "humans.txt")
            };
            if let Some(file) = file {
                metrics().served.with_label_values(&[site.name.as_str(), name]).inc();
                ctx.status = respond::serve_file(session, file, "text/plain; charset=utf-8").await?;
                return Ok(true);
            }
            if path == "/robots.txt" {
                return Ok(false); // No robots file configured: pass through, enforce nothing.
            }
        }
        let Some(robots) = files.robots.as_ref() else {
            return Ok(false);
        };

        // A cheap handle on the header bytes, so the session can be written to later.
        let ua_header = req.headers.get("user-agent").cloned();
        let ua = ua_header.as_ref().map_or(&b""[..], |v| v.as_bytes());
        let agent = snap.classifier.classify(ua);
        let category = agent.category;
        if let Some(counter) =
            crate::agent::Category::ALL.iter().position(|c| *c == category).and_then(|i| files.requests.get(i))
        {
            counter.inc();
        }
        if !agent.is_bot() {
            return Ok(false);
        }
        let raw = req.raw_path();
        let path_q = if raw.starts_with(b"/") {
            std::borrow::Cow::Borrowed(raw)
        } else {
            crate::robots::parse::path_params_query(raw)
        };
        let name = agent.name;
        let who = Requester { is_bot: true, name, category, tokens: &agent.tokens };
        let decision = policy::decide(&site.policy, &robots.compiled, &who, &path_q);
        let known = matches!(agent.kind, AgentKind::Known(_));
        let label = bot_label(known, name);

        if let (Some(rule), Some(action)) = (decision.rule, decision.action) {
            metrics()
                .violations
                .with_label_values(&[site.name.as_str(), label, category.as_str(), action.name()])
                .inc();
            ctx.pending = Some(Pending {
                bot: name.map(str::to_owned),
                category: category.as_str(),
                group: decision.group.map(str::to_owned),
                directive: rule.kind.as_str(),
                pattern: Some(rule.pattern.clone()),
                line: Some(rule.line),
                action: action.name(),
            });
            metrics().decision_seconds.observe(started.elapsed().as_secs_f64());
            return match action {
                Action::Noindex { value } => {
                    ctx.noindex = Some(value.clone());
                    Ok(false)
                }
                Action::Log => Ok(false),
                _ => {
                    self.answer_locally(session, ctx, action, &snap, site_idx).await?;
                    Ok(true)
                }
            };
        }

        // Allowed: hold the bot to its group's pace and hours.
        let enforce = site.policy.action_for(name, category) != &Action::Log;
        let mut limited: Option<(&'static str, u32, Duration)> = None;
        if let Some(w) = decision.window {
            let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_secs();
            let wait = w.window.secs_until_open((now % 86_400) as u32);
            if wait > 0 {
                limited = Some(("visit-time", w.line, Duration::from_secs(u64::from(wait))));
            }
        }
        if limited.is_none() {
            if let (Some(rate), Some(ip)) = (decision.rate, ctx.client) {
                let key = (ip, site_idx, name.or_else(|| agent.tokens.first().copied()).unwrap_or(""));
                if let Err(wait) = self.rates.admit(key, rate.interval, Instant::now()) {
                    limited = Some((rate.directive, rate.line, wait));
                }
            }
        }
        metrics().decision_seconds.observe(started.elapsed().as_secs_f64());
        let Some((directive, line, wait)) = limited else {
            return Ok(false);
        };
        let action = if enforce { "rate-limit" } else { "log" };
        metrics().rate_limited.with_label_values(&[site.name.as_str(), label, directive]).inc();
        ctx.pending = Some(Pending {
            bot: name.map(str::to_owned),
            category: category.as_str(),
            group: decision.group.map(str::to_owned),
            directive,
            pattern: None,
            line: Some(line),
            action,
        });
        if !enforce {
            return Ok(false);
        }
        let retry = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
        ctx.status = 429;
        respond::send(
            session,
            429,
            "text/plain; charset=utf-8",
            &[("retry-after", retry.max(1).to_string())],
            Bytes::from(format!("Too Many Requests: this site's robots.txt asks your crawler to slow down ({directive}, line {line}).\n")),
        )
        .await?;
        Ok(true)
    }

    async fn upstream_peer(&self, _session: &mut Session, ctx: &mut Ctx) -> Result<Box<HttpPeer>> {
        let (Some(snap), Some(site)) = (ctx.snap.as_ref(), ctx.site) else {
            return Error::e_explain(ErrorType::InternalError, "no site chosen");
        };
        let up = &snap.config.sites[site].upstream;
        let addr: SocketAddr = snap.sites[site].upstream_addr;
        Ok(Box::new(upstream_peer(addr, up.tls, up.sni.clone(), up.connect_timeout, up.read_timeout)))
    }

    async fn upstream_request_filter(
        &self,
        session: &mut Session,
        upstream_request: &mut RequestHeader,
        ctx: &mut Ctx,
    ) -> Result<()> {
        let trusted = ctx.snap.as_ref().map_or(&[][..], |s| &s.config.trusted_proxies[..]);
        add_forwarded_headers(session, upstream_request, trusted)
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
        ctx.status = upstream_response.status.as_u16();
        Ok(())
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
            if let (Some(snap), Some(site)) = (ctx.snap.as_ref(), ctx.site) {
                metrics()
                    .upstream_errors
                    .with_label_values(&[snap.config.sites[site].name.as_str(), &code.to_string()])
                    .inc();
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
            )
            .await;
        }
        ctx.status = code;
        FailToProxy { error_code: code, can_reuse_downstream: false }
    }

    async fn logging(&self, session: &mut Session, _e: Option<&Error>, ctx: &mut Ctx) {
        let Some(p) = ctx.pending.take() else { return };
        let (Some(snap), Some(site)) = (ctx.snap.as_ref(), ctx.site) else { return };
        let req = session.req_header();
        let status = session.response_written().map_or(ctx.status, |r| r.status.as_u16());
        let ua = req
            .headers
            .get("user-agent")
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
            .unwrap_or_default();
        let path = String::from_utf8_lossy(req.raw_path()).into_owned();
        let hash = snap.sites[site].robots.as_ref().map_or("", |r| r.hash.as_str());
        let record = Record {
            time: now_rfc3339(),
            site: &snap.config.sites[site].name,
            client: ctx.client.map(|c| c.to_string()).unwrap_or_default(),
            method: req.method.as_str(),
            path: &path,
            host: host_of(req),
            user_agent: &ua,
            bot: p.bot.as_deref(),
            category: p.category,
            group: p.group.as_deref(),
            directive: p.directive,
            pattern: p.pattern.as_deref(),
            line: p.line,
            robots_hash: hash,
            action: p.action,
            status,
        };
        if self.violations.write(&record) {
            metrics().log_waits.inc();
        }
    }

    fn suppress_error_log(&self, _session: &Session, _ctx: &Ctx, _error: &Error) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(headers: &[(&'static str, &str)]) -> RequestHeader {
        let mut r = RequestHeader::build("GET", b"/", None).unwrap();
        for (k, v) in headers {
            r.append_header(*k, *v).unwrap();
        }
        r
    }

    #[test]
    fn forwarded_headers_are_believed_only_from_trusted_proxies() {
        let trusted = vec![Cidr::parse("10.0.0.0/8").unwrap()];
        let spoof = req(&[("x-forwarded-for", "1.2.3.4")]);
        let peer: IpAddr = "203.0.113.9".parse().unwrap();
        assert_eq!(client_ip(Some(peer), &spoof, &trusted), Some(peer), "untrusted peer: header ignored");
        let lb: IpAddr = "10.0.0.2".parse().unwrap();
        let chain = req(&[("x-forwarded-for", "1.2.3.4, 198.51.100.7, 10.0.0.3")]);
        assert_eq!(
            client_ip(Some(lb), &chain, &trusted),
            Some("198.51.100.7".parse().unwrap()),
            "right-most untrusted hop"
        );
        let fwd = req(&[("forwarded", "for=\"[2001:db8::1]:4711\";proto=https")]);
        assert_eq!(client_ip(Some(lb), &fwd, &trusted), Some("2001:db8::1".parse().unwrap()));
        let fwd4 = req(&[("forwarded", "for=192.0.2.60:8080")]);
        assert_eq!(client_ip(Some(lb), &fwd4, &trusted), Some("192.0.2.60".parse().unwrap()));
        assert_eq!(client_ip(Some(lb), &req(&[]), &trusted), Some(lb), "no header: the proxy itself");
    }
}
