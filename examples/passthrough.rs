//! The bare Pingora passthrough proxy: the upper bound any Pingora
//! application can reach, for the side-by-side benchmark (issue 6).
//!
//! Run: `cargo run --release --example passthrough -- 127.0.0.1:6190 127.0.0.1:8000 [threads] [forward|refuse]`
//!
//! With `forward`, it also does what robotgate does for every proxied request
//! besides enforcing robots.txt, with robotgate's own functions: the origin
//! peer with robotgate's default timeouts (on tokio's timer, as robotgate
//! runs them), and `X-Forwarded-For` and
//! `X-Forwarded-Proto`. The difference between that and robotgate is the cost
//! of the enforcement itself.
//!
//! With `refuse`, a request whose User-Agent contains `GPTBot` gets a 403
//! with a short body from `request_filter`, and nothing else is done: no
//! robots.txt, no classification, no record. That is the floor of a refusal
//! in any Pingora application, for `benches/block.sh`: the part of a refusal's
//! cost that belongs to Pingora's HTTP/1 session (read the head, write the
//! answer) rather than to robotgate's decision.

use std::net::SocketAddr;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use pingora::http::{RequestHeader, ResponseHeader};
use pingora::proxy::{ProxyHttp, Session};
use pingora::server::configuration::ServerConf;
use pingora::server::Server;
use pingora::upstreams::peer::HttpPeer;
use pingora::Result;
use robotgate::server::http::forwarded::add_forwarded_headers;
use robotgate::server::http::proxy::upstream_peer;

/// mimalloc: measured faster than glibc malloc for Pingora's per-request
/// allocations (see BENCHMARKS.md); the passthrough baseline uses it too.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Proxy everything.
    Bare,
    /// Proxy everything with robotgate's forwarding work.
    Forward,
    /// Refuse `GPTBot` with a 403, proxy the rest.
    Refuse,
}

struct Passthrough {
    upstream: SocketAddr,
    mode: Mode,
}

/// The refusal's body: as long as robotgate's.
const REFUSAL: &[u8] = b"Forbidden: this site's robots.txt disallows this URL for your crawler.\n";

#[async_trait]
impl ProxyHttp for Passthrough {
    type CTX = ();
    fn new_ctx(&self) {}
    async fn request_filter(&self, session: &mut Session, _ctx: &mut ()) -> Result<bool> {
        if self.mode != Mode::Refuse {
            return Ok(false);
        }
        let ua = session.req_header().headers.get("user-agent").map_or(&b""[..], |v| v.as_bytes());
        if !ua.windows(6).any(|w| w == b"GPTBot") {
            return Ok(false);
        }
        let mut resp = ResponseHeader::build(403, Some(4))?;
        resp.insert_header("Content-Type", "text/plain; charset=utf-8")?;
        resp.insert_header("Content-Length", REFUSAL.len().to_string())?;
        session.write_response_header(Box::new(resp), false).await?;
        session.write_response_body(Some(Bytes::from_static(REFUSAL)), true).await?;
        Ok(true)
    }
    async fn upstream_peer(&self, _session: &mut Session, _ctx: &mut ()) -> Result<Box<HttpPeer>> {
        if self.mode == Mode::Forward {
            // robotgate's defaults: `connect_timeout: 5`, `read_timeout: 60`.
            let peer =
                upstream_peer(self.upstream, false, String::new(), Duration::from_secs(5), Duration::from_secs(60));
            return Ok(Box::new(peer));
        }
        Ok(Box::new(HttpPeer::new(self.upstream, false, String::new())))
    }
    async fn upstream_request_filter(
        &self,
        session: &mut Session,
        upstream_request: &mut RequestHeader,
        _ctx: &mut (),
    ) -> Result<()> {
        if self.mode == Mode::Forward {
            add_forwarded_headers(session, upstream_request, Default::default(), &[])?;
        }
        Ok(())
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let listen = args.next().unwrap_or_else(|| "127.0.0.1:6190".into());
    let upstream: SocketAddr =
        args.next().unwrap_or_else(|| "127.0.0.1:8000".into()).parse().expect("upstream host:port");
    let threads: usize = args.next().map_or(1, |t| t.parse().expect("threads"));
    let mode = match args.next().as_deref() {
        None => Mode::Bare,
        Some("forward") => Mode::Forward,
        Some("refuse") => Mode::Refuse,
        Some(other) => panic!("unknown option {other:?} (expected `forward` or `refuse`)"),
    };
    let mut conf = ServerConf { threads, grace_period_seconds: Some(0), ..ServerConf::default() };
    if mode == Mode::Forward {
        // robotgate's timer setting, with its timeouts.
        conf.fast_timeout_to_tokio_threshold_seconds = robotgate::server::TOKIO_TIMERS_FROM_SECONDS;
    }
    let mut server = Server::new_with_opt_and_conf(None, conf);
    server.bootstrap();
    let mut proxy = pingora::proxy::http_proxy_service(&server.configuration, Passthrough { upstream, mode });
    proxy.add_tcp(&listen);
    server.add_service(proxy);
    server.run_forever();
}
