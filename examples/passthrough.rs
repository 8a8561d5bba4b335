//! The bare Pingora passthrough proxy: the upper bound any Pingora
//! application can reach, for the side-by-side benchmark (issue 6).
//!
//! Run: `cargo run --release --example passthrough -- 127.0.0.1:6190 127.0.0.1:8000 [threads]`

use std::net::SocketAddr;

use async_trait::async_trait;
use pingora::proxy::{ProxyHttp, Session};
use pingora::server::configuration::ServerConf;
use pingora::server::Server;
use pingora::upstreams::peer::HttpPeer;
use pingora::Result;

/// mimalloc: measured faster than glibc malloc for Pingora's per-request
/// allocations (see README, Benchmarks); the passthrough baseline uses it too.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

struct Passthrough(SocketAddr);

#[async_trait]
impl ProxyHttp for Passthrough {
    type CTX = ();
    fn new_ctx(&self) {}
    async fn upstream_peer(&self, _session: &mut Session, _ctx: &mut ()) -> Result<Box<HttpPeer>> {
        Ok(Box::new(HttpPeer::new(self.0, false, String::new())))
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let listen = args.next().unwrap_or_else(|| "127.0.0.1:6190".into());
    let upstream: SocketAddr =
        args.next().unwrap_or_else(|| "127.0.0.1:8000".into()).parse().expect("upstream host:port");
    let threads: usize = args.next().map_or(1, |t| t.parse().expect("threads"));
    let conf = ServerConf { threads, grace_period_seconds: Some(0), ..ServerConf::default() };
    let mut server = Server::new_with_opt_and_conf(None, conf);
    server.bootstrap();
    let mut proxy = pingora::proxy::http_proxy_service(&server.configuration, Passthrough(upstream));
    proxy.add_tcp(&listen);
    server.add_service(proxy);
    server.run_forever();
}
