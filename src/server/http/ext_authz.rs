//! The Envoy ext_authz listener (`ext_authz.listen`): robotgate as the gRPC
//! `envoy.service.auth.v3.Authorization` service that Envoy's
//! `envoy.filters.http.ext_authz` filter asks about each request (also
//! under Istio, Envoy Gateway and the Gateway API's external auth).
//!
//! Envoy sends the facts in fields of its own protocol, not in headers
//! a client could also send: the client address in `attributes.source`
//! (the downstream peer after Envoy's own `xff_num_trusted_hops`, taken as
//! it is: [`Peer::Logged`]), the method, path (with its query), host and
//! scheme in `attributes.request.http`, beside the request's headers. A
//! check that lacks one of them is refused (`400`), as the auth listener
//! refuses a subrequest that lacks one.
//!
//! From there the request goes through the proxy's own steps
//! ([`Gate::settle`], [`Gate::reply`]): the same decision, the same record
//! and metrics, and the same answer plan. A pass is an `OkHttpResponse`
//! that adds to the client's answer what the proxy adds (`X-Robots-Tag`
//! beside the origin's own, `Content-Usage` unless the origin sets one);
//! every answer robotgate writes itself (a refusal, a 429, robots.txt and
//! humans.txt) is a `DeniedHttpResponse` with the plan's status, headers
//! and body, which Envoy sends to the client as it is (a `200` included).
//!
//! Bounds: connections at once (`limits.max_connections`, past it a
//! connection is closed at once and counted), streams per connection
//! ([`MAX_STREAMS`]); a connection's handshake and each header block within
//! `limits.request_head_timeout`, and no longer than
//! `limits.keepalive_timeout` without a check ([`Watched`]), so silent
//! sockets cannot hold the connections; and a deadline per check: decided
//! by [`decide_by`] of `ext_authz.edge_timeout_ms` with what is known then
//! (a lookup still running is judged as failed: docs/edge.md, "Deadlines").

use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use async_trait::async_trait;
use envoy_types::ext_authz::v3::pb::{
    Address, Authorization, AuthorizationServer, CheckRequest, CheckResponse, DeniedHttpResponse, HeaderAppendAction,
    HeaderValue, HeaderValueOption, HttpResponse, HttpStatus, OkHttpResponse,
};
use envoy_types::pb::google::rpc;
use http::{HeaderMap, HeaderName};
use pingora::server::ShutdownWatch;
use pingora::services::background::BackgroundService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::decide::{Due, Incoming};
use super::gate::{Ctx, Gate};
use super::listen::Watched;
use super::proxy::Reply;
use crate::config::deadlines::decide_by;
use crate::pipeline::answer::{pass_headers, Plan};
use crate::pipeline::Peer;
use crate::server::ops::violations::now_rfc3339;
use crate::server::snapshot::answer::{body_bytes, Prebuilt};
use crate::server::telemetry::metrics;

/// HTTP/2 streams (checks) in flight on one connection.
pub const MAX_STREAMS: u32 = 256;

/// gRPC status `OK` and `PERMISSION_DENIED` (google.rpc.Code), as Envoy reads
/// `CheckResponse.status`.
const GRPC_OK: i32 = 0;
const GRPC_PERMISSION_DENIED: i32 = 7;

/// What a check lacks, for the `400` that refuses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lacking {
    /// No `attributes.request.http`.
    Request,
    /// No method.
    Method,
    /// No path.
    Path,
    /// No host.
    Host,
    /// No scheme.
    Scheme,
    /// No socket address in `attributes.source`.
    Client,
    /// A header that is not a valid HTTP field.
    Header,
}

impl Lacking {
    /// Why the check is refused, for its body.
    pub fn explain(self) -> &'static str {
        match self {
            Lacking::Request => "ext_authz: the check carries no HTTP request",
            Lacking::Method => "ext_authz: the check names no method",
            Lacking::Path => "ext_authz: the check names no path",
            Lacking::Host => "ext_authz: the check names no host",
            Lacking::Scheme => "ext_authz: the check names no scheme",
            Lacking::Client => "ext_authz: the check names no client address (attributes.source)",
            Lacking::Header => "ext_authz: a header of the check is not a valid HTTP field",
        }
    }
}

/// The facts of the request Envoy asks about, read from its own fields.
pub struct Original<'c> {
    /// The method.
    pub method: &'c str,
    /// The path, with its query, as sent.
    pub path: &'c str,
    /// `:authority` (or `Host`).
    pub host: &'c str,
    /// The scheme is `https`.
    pub https: bool,
    /// The client, as Envoy resolved it.
    pub client: IpAddr,
    /// The request's headers (pseudo-headers left out).
    pub headers: HeaderMap,
}

/// Read `check`. Headers come from `header_map` when Envoy sends raw values
/// (`encode_raw_headers`), else from `headers`; pseudo-headers (`:path`…)
/// are left out: their facts are read from their own fields.
///
/// # Errors
/// What the check lacks.
pub fn original(check: &CheckRequest) -> Result<Original<'_>, Lacking> {
    let attributes = check.attributes.as_ref().ok_or(Lacking::Request)?;
    let http = attributes.request.as_ref().and_then(|r| r.http.as_ref()).ok_or(Lacking::Request)?;
    let client = attributes
        .source
        .as_ref()
        .and_then(|p| p.address.as_ref())
        .and_then(|a| match a.address.as_ref()? {
            Address::SocketAddress(s) => s.address.parse::<IpAddr>().ok(),
            _ => None,
        })
        .ok_or(Lacking::Client)?;
    let non_empty = |v: &'_ str, lack| if v.is_empty() { Err(lack) } else { Ok(()) };
    non_empty(&http.method, Lacking::Method)?;
    non_empty(&http.path, Lacking::Path)?;
    non_empty(&http.host, Lacking::Host)?;
    non_empty(&http.scheme, Lacking::Scheme)?;
    let mut headers = HeaderMap::new();
    let mut add = |name: &str, value: &[u8]| -> Result<(), Lacking> {
        if name.starts_with(':') {
            return Ok(());
        }
        let name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| Lacking::Header)?;
        let value = http::HeaderValue::from_bytes(value).map_err(|_| Lacking::Header)?;
        headers.append(name, value);
        Ok(())
    };
    match &http.header_map {
        Some(map) => {
            for h in &map.headers {
                let value = if h.raw_value.is_empty() { h.value.as_bytes() } else { &h.raw_value[..] };
                add(&h.key, value)?;
            }
        }
        None => {
            for (name, value) in &http.headers {
                add(name, value.as_bytes())?;
            }
        }
    }
    Ok(Original {
        method: &http.method,
        path: &http.path,
        host: &http.host,
        https: http.scheme.eq_ignore_ascii_case("https"),
        client,
        headers,
    })
}

/// One header for Envoy to write.
fn header(key: &str, value: &str, action: HeaderAppendAction) -> HeaderValueOption {
    #[allow(deprecated)] // `append`: replaced by `append_action`.
    HeaderValueOption {
        header: Some(HeaderValue { key: key.to_owned(), value: value.to_owned(), raw_value: Vec::new() }),
        append: None,
        append_action: action.into(),
        keep_empty_value: false,
    }
}

/// A `CheckResponse` with gRPC status `code` and `http`.
fn response(code: i32, http: HttpResponse) -> CheckResponse {
    CheckResponse {
        status: Some(rpc::Status { code, message: String::new(), details: Vec::new() }),
        http_response: Some(http),
        ..Default::default()
    }
}

/// The plan as Envoy's denied response: its status, `Content-Type`, every
/// header, and its body (text: the gRPC field is a string).
fn denied(plan: Plan<'_>) -> CheckResponse {
    let mut headers = vec![header("content-type", plan.content_type, HeaderAppendAction::OverwriteIfExistsOrAdd)];
    for (name, value) in &plan.headers {
        headers.push(header(name, value, HeaderAppendAction::AppendIfExistsOrAdd));
    }
    let status = plan.status;
    let body = String::from_utf8_lossy(&body_bytes(plan.body)).into_owned();
    let denied = DeniedHttpResponse { status: Some(HttpStatus { code: status.into() }), headers, body };
    response(GRPC_PERMISSION_DENIED, HttpResponse::DeniedResponse(denied))
}

/// A prebuilt refusal as Envoy's denied response (`Content-Length` is Envoy's).
fn denied_prebuilt(answer: &Prebuilt, signature: bool) -> CheckResponse {
    let mut headers = Vec::with_capacity(answer.header.headers.len() + 1);
    for (name, value) in &answer.header.headers {
        if name == http::header::CONTENT_LENGTH {
            continue;
        }
        let value = String::from_utf8_lossy(value.as_bytes());
        headers.push(header(name.as_str(), &value, HeaderAppendAction::AppendIfExistsOrAdd));
    }
    if signature {
        headers.push(header(
            "accept-signature",
            crate::pipeline::answer::ACCEPT_SIGNATURE,
            HeaderAppendAction::AppendIfExistsOrAdd,
        ));
    }
    let body = String::from_utf8_lossy(&answer.body).into_owned();
    let denied = DeniedHttpResponse { status: Some(HttpStatus { code: answer.status().into() }), headers, body };
    response(GRPC_PERMISSION_DENIED, HttpResponse::DeniedResponse(denied))
}

/// The pass: the request goes on to the origin unchanged, and the client's
/// answer gets what the proxy adds to it.
fn allowed(ctx: &mut Ctx) -> CheckResponse {
    let indexing = std::mem::take(&mut ctx.indexing);
    let noindex = ctx.noindex.take();
    let mut add = Vec::new();
    // Beside the origin's own X-Robots-Tag, never in its place.
    for value in pass_headers(noindex.as_deref(), indexing) {
        add.push(header("x-robots-tag", &value, HeaderAppendAction::AppendIfExistsOrAdd));
    }
    if let Some(value) = ctx.content_usage.take() {
        add.push(header("content-usage", &value, HeaderAppendAction::AddIfAbsent));
    }
    #[allow(deprecated)] // `dynamic_metadata`: replaced by the response's own.
    let ok = OkHttpResponse { response_headers_to_add: add, ..Default::default() };
    response(GRPC_OK, HttpResponse::OkResponse(ok))
}

/// The service: the proxy's gate, answering Envoy's checks.
pub struct ExtAuthz {
    /// The gate (as the proxy's: it serves robots.txt and humans.txt itself).
    pub gate: Gate,
}

impl ExtAuthz {
    /// Decide one check and say what Envoy is to do; the result's label.
    async fn decide(&self, check: &CheckRequest, due: Due) -> (CheckResponse, &'static str) {
        let snap = self.gate.snapshot.load_full();
        let mut ctx = Ctx { snap: Some(snap.clone()), ..Ctx::default() };
        let o = match original(check) {
            Ok(o) => o,
            Err(lack) => {
                return (denied(Plan::refuse(400, lack.explain())), "refused");
            }
        };
        let req = Incoming {
            method: o.method,
            target: o.path.as_bytes(),
            host: o.host,
            https: o.https,
            headers: &o.headers,
            peer: Peer::Logged(Some(o.client)),
            unreadable: None,
            due: Some(due),
            hello: None,
        };
        let Some(site) = self.gate.site_for(&snap, &req, &mut ctx) else {
            return (denied(Plan::no_site()), "denied");
        };
        let step = self.gate.settle(&req, &snap, site, &mut ctx).await;
        let has = || super::respond::conditional(&o.headers);
        let (answer, result) = match self.gate.reply(&snap, site, &mut ctx, step, has) {
            Reply::Forward => {
                ctx.status = 200;
                (allowed(&mut ctx), "allowed")
            }
            Reply::Prebuilt(answer, signature) => {
                ctx.status = answer.status();
                (denied_prebuilt(answer, signature), "denied")
            }
            Reply::Plan(plan, _) => {
                ctx.status = plan.status;
                (denied(plan), "denied")
            }
        };
        if let Some(mut record) = ctx.pending.take() {
            record.time = now_rfc3339();
            record.status = ctx.status;
            if self.gate.status_page {
                crate::server::ops::status::board().push(&record);
            }
            // Never waits: a full log queue folds the record into the aggregation table.
            self.gate.violations.write(*record);
        }
        (answer, result)
    }
}

#[async_trait]
impl Authorization for ExtAuthz {
    async fn check(
        &self,
        request: tonic::Request<CheckRequest>,
    ) -> Result<tonic::Response<CheckResponse>, tonic::Status> {
        let check = request.into_inner();
        // Decided before Envoy's own timeout; the check as a whole is cut at it.
        let edge = self.gate.snapshot.load().settings.boot.edge_timeouts.ext_authz;
        let due = Due { by: std::time::Instant::now() + decide_by(edge), listener: "ext_authz" };
        match tokio::time::timeout(edge, self.decide(&check, due)).await {
            Ok((answer, result)) => {
                metrics().ext_authz_checks.with_label_values(&[result]).inc();
                Ok(tonic::Response::new(answer))
            }
            Err(_) => {
                metrics().ext_authz_checks.with_label_values(&["timeout"]).inc();
                Err(tonic::Status::deadline_exceeded("robotgate: the check took too long"))
            }
        }
    }
}

/// A connection, holding its place among `limits.max_connections`, with
/// its head and idle deadlines.
struct Counted {
    stream: Watched<TcpStream>,
    _place: OwnedSemaphorePermit,
}

impl tonic::transport::server::Connected for Counted {
    type ConnectInfo = tonic::transport::server::TcpConnectInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        self.stream.get_ref().connect_info()
    }
}

impl AsyncRead for Counted {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for Counted {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

/// The listener as a Pingora background service: tonic's HTTP/2 server on
/// each address, until the server stops.
pub struct Listener {
    /// The service.
    pub service: Arc<ExtAuthz>,
    /// `ext_authz.listen`.
    pub addresses: Vec<String>,
    /// Connections open at once (`limits.max_connections`).
    pub max_connections: usize,
    /// The longest the handshake and a header block may take (`limits.request_head_timeout`).
    pub head_timeout: Duration,
    /// The longest a connection may go without a check (`limits.keepalive_timeout`).
    pub idle_timeout: Duration,
}

impl Listener {
    /// Serve `addr` until `shutdown`.
    async fn serve(&self, addr: SocketAddr, mut shutdown: ShutdownWatch) {
        let listener = match TcpListener::bind(addr).await {
            Ok(l) => l,
            Err(e) => {
                tracing::error!(target: "robotgate", address = %addr, error = %e, "cannot listen (ext_authz)");
                return;
            }
        };
        let places = Arc::new(Semaphore::new(self.max_connections));
        let (head, idle) = (self.head_timeout, self.idle_timeout);
        let incoming = futures_util::stream::unfold((listener, places), move |(listener, places)| async move {
            loop {
                let stream = super::listen::accept(&listener, "ext_authz").await;
                let Ok(place) = places.clone().try_acquire_owned() else {
                    metrics().connections_refused.with_label_values(&["ext_authz"]).inc();
                    continue;
                };
                let _ = stream.set_nodelay(true);
                let counted = Counted { stream: Watched::new(stream, "ext_authz", head, idle), _place: place };
                return Some((Ok::<_, std::io::Error>(counted), (listener, places)));
            }
        });
        // One service: any other method's path is answered UNIMPLEMENTED by it.
        let server = tonic::transport::Server::builder()
            .max_concurrent_streams(MAX_STREAMS)
            .http2_keepalive_interval(Some(Duration::from_secs(30)))
            .http2_keepalive_timeout(Some(Duration::from_secs(10)));
        let service = AuthorizationServer::from_arc(self.service.clone());
        let result = server
            .serve_with_incoming_shutdown(service, incoming, async move {
                let _ = shutdown.changed().await;
            })
            .await;
        if let Err(e) = result {
            tracing::error!(target: "robotgate", address = %addr, error = %e, "ext_authz listener stopped");
        }
    }
}

#[async_trait]
impl BackgroundService for Listener {
    async fn start(&self, shutdown: ShutdownWatch) {
        let mut each = Vec::new();
        for a in &self.addresses {
            match a.parse::<SocketAddr>() {
                Ok(addr) => each.push(self.serve(addr, shutdown.clone())),
                Err(e) => tracing::error!(target: "robotgate", address = %a, error = %e, "cannot listen (ext_authz)"),
            }
        }
        futures_util::future::join_all(each).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use envoy_types::pb::envoy::config::core::v3::{address, SocketAddress};
    use envoy_types::pb::envoy::service::auth::v3::attribute_context::{HttpRequest, Peer as EnvoyPeer, Request};
    use envoy_types::pb::envoy::service::auth::v3::AttributeContext;

    fn check(client: Option<&str>, http: HttpRequest) -> CheckRequest {
        let source = client.map(|c| EnvoyPeer {
            address: Some(envoy_types::pb::envoy::config::core::v3::Address {
                address: Some(address::Address::SocketAddress(SocketAddress {
                    address: c.to_owned(),
                    ..Default::default()
                })),
            }),
            ..Default::default()
        });
        CheckRequest {
            attributes: Some(AttributeContext {
                source,
                request: Some(Request { http: Some(http), ..Default::default() }),
                ..Default::default()
            }),
        }
    }

    fn get(path: &str) -> HttpRequest {
        HttpRequest {
            method: "GET".into(),
            path: path.into(),
            host: "example.org".into(),
            scheme: "https".into(),
            headers: [
                (":path".to_owned(), "/other".to_owned()),
                ("user-agent".to_owned(), "GPTBot/1.0".to_owned()),
                ("x-forwarded-for".to_owned(), "203.0.113.9".to_owned()),
            ]
            .into(),
            ..Default::default()
        }
    }

    #[test]
    fn the_facts_come_from_envoys_fields() {
        let c = check(Some("192.0.2.1"), get("/a?b=c"));
        let o = original(&c).unwrap();
        assert_eq!((o.method, o.path, o.host, o.https), ("GET", "/a?b=c", "example.org", true));
        assert_eq!(o.client, "192.0.2.1".parse::<IpAddr>().unwrap());
        // The pseudo-header is not a header: the path is the field's.
        assert!(o.headers.get(":path").is_none());
        assert_eq!(o.headers.get("user-agent").unwrap(), "GPTBot/1.0");
    }

    #[test]
    fn a_check_lacking_a_fact_is_refused() {
        assert_eq!(original(&check(None, get("/"))).err(), Some(Lacking::Client));
        assert_eq!(original(&check(Some("not an address"), get("/"))).err(), Some(Lacking::Client));
        assert_eq!(
            original(&check(Some("192.0.2.1"), HttpRequest { path: String::new(), ..get("/") })).err(),
            Some(Lacking::Path)
        );
        assert_eq!(
            original(&check(Some("192.0.2.1"), HttpRequest { host: String::new(), ..get("/") })).err(),
            Some(Lacking::Host)
        );
        assert_eq!(
            original(&check(Some("192.0.2.1"), HttpRequest { method: String::new(), ..get("/") })).err(),
            Some(Lacking::Method)
        );
        assert_eq!(
            original(&check(Some("192.0.2.1"), HttpRequest { scheme: String::new(), ..get("/") })).err(),
            Some(Lacking::Scheme)
        );
        let mut bad = get("/");
        bad.headers.insert("user-agent".into(), "a\nb".into());
        assert_eq!(original(&check(Some("192.0.2.1"), bad)).err(), Some(Lacking::Header));
        assert_eq!(original(&CheckRequest { attributes: None }).err(), Some(Lacking::Request));
    }

    #[test]
    fn a_plan_becomes_a_denied_response_as_it_is() {
        let r = denied(Plan::too_many_requests(7, "crawl-delay", 3, None));
        assert_eq!(r.status.as_ref().map(|s| s.code), Some(GRPC_PERMISSION_DENIED));
        let Some(HttpResponse::DeniedResponse(d)) = r.http_response else { panic!("not denied") };
        assert_eq!(d.status.map(|s| s.code), Some(429));
        let names: Vec<_> =
            d.headers.iter().filter_map(|h| h.header.as_ref()).map(|h| (h.key.as_str(), h.value.as_str())).collect();
        assert!(names.contains(&("retry-after", "7")), "{names:?}");
        assert!(d.body.ends_with("(crawl-delay, line 3).\n"), "{}", d.body);
    }
}
