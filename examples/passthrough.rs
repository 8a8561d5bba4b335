//! The bare Pingora passthrough proxy: the upper bound any Pingora
//! application can reach, for the side-by-side benchmark (issue 6).
//!
//! Run: `cargo run --release --example passthrough -- 127.0.0.1:6190 127.0.0.1:8000 [threads] [forward]`
//!
//! With `forward`, it also does what robotgate does for every proxied request
//! besides enforcing robots.txt, with robotgate's own functions: the origin
//! peer with robotgate's default timeouts (on tokio's timer, as robotgate
//! runs them), and `X-Forwarded-For` and
//! `X-Forwarded-Proto`. The difference between that and robotgate is the cost
//! of the enforcement itself.

use std::net::SocketAddr;
use std::time::Duration;

use async_trait::async_trait;
use pingora::http::RequestHeader;
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

struct Passthrough {
    upstream: SocketAddr,
    forward: bool,
}

#[async_trait]
impl ProxyHttp for Passthrough {
    type CTX = ();
    fn new_ctx(&self) {}
    async fn upstream_peer(&self, _session: &mut Session, _ctx: &mut ()) -> Result<Box<HttpPeer>> {
        if self.forward {
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
        if self.forward {
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
    let forward = match args.next().as_deref() {
        None => false,
        Some("forward") => true,
        Some(other) => panic!("unknown option {other:?} (expected `forward`)"),
    };
    let mut conf = ServerConf { threads, grace_period_seconds: Some(0), ..ServerConf::default() };
    if forward {
        // robotgate's timer setting, with its timeouts.
        conf.fast_timeout_to_tokio_threshold_seconds = robotgate::server::TOKIO_TIMERS_FROM_SECONDS;
    }
    let mut server = Server::new_with_opt_and_conf(None, conf);
    server.bootstrap();
    let mut proxy = pingora::proxy::http_proxy_service(&server.configuration, Passthrough { upstream, forward });
    proxy.add_tcp(&listen);
    server.add_service(proxy);
    server.run_forever();
}
