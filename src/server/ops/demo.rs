//! `robotgate demo`: robotgate in front of a small built-in static site, with
//! nothing else to install or run.
//!
//! The demo writes its robots.txt, humans.txt and config into a directory
//! (so they can be edited live and the reload seen), starts the static site as
//! a second Pingora service on a free loopback port, and prints `curl` lines
//! to try. Everything listens on 127.0.0.1 only.

use std::path::{Path, PathBuf};

use anyhow::Context;
use async_trait::async_trait;
use pingora::apps::http_app::{HttpServer, ServeHttp};
use pingora::protocols::http::ServerSession;
use pingora::server::{ListenFds, ShutdownWatch};
use pingora::services::listening::Service;
use pingora::services::{Service as ServiceTrait, ServiceReadyNotifier, ServiceWithDependents};

/// The demo site's pages, embedded so the demo runs from anywhere.
const PAGES: &[(&str, &str, &str)] = &[
    ("/", "text/html; charset=utf-8", include_str!("../../../examples/demo/index.html")),
    ("/index.html", "text/html; charset=utf-8", include_str!("../../../examples/demo/index.html")),
    ("/about.html", "text/html; charset=utf-8", include_str!("../../../examples/demo/about.html")),
    ("/private/report.html", "text/html; charset=utf-8", include_str!("../../../examples/demo/private/report.html")),
];

const ROBOTS: &str = include_str!("../../../examples/demo/robots.txt");
const HUMANS: &str = include_str!("../../../examples/demo/humans.txt");

/// The demo origin: serves [`PAGES`], 404 otherwise.
struct StaticSite;

#[async_trait]
impl ServeHttp for StaticSite {
    async fn response(&self, session: &mut ServerSession) -> http::Response<Vec<u8>> {
        let path = session.req_header().uri.path().to_owned();
        let (status, ctype, body) = match PAGES.iter().find(|(p, _, _)| *p == path) {
            Some((_, ctype, body)) => (200, *ctype, body.as_bytes().to_vec()),
            None => (404, "text/plain; charset=utf-8", b"not found\n".to_vec()),
        };
        http::Response::builder()
            .status(status)
            .header(http::header::CONTENT_TYPE, ctype)
            .header(http::header::CONTENT_LENGTH, body.len())
            .header("server", "robotgate-demo-origin")
            .body(body)
            .expect("static response is valid")
    }
}

/// The demo origin, ready only once it accepts connections.
///
/// Pingora reports a listening service ready before it has bound its socket,
/// so a proxy that depends on it could start first and answer the first
/// requests with 502. This wrapper probes its own address and signals
/// readiness only when a connection succeeds.
struct ListeningOrigin {
    inner: Service<HttpServer<StaticSite>>,
    addr: std::net::SocketAddr,
}

#[async_trait]
impl ServiceWithDependents for ListeningOrigin {
    async fn start_service(
        &mut self,
        fds: Option<ListenFds>,
        shutdown: ShutdownWatch,
        listeners_per_fd: usize,
        ready: ServiceReadyNotifier,
    ) {
        let addr = self.addr;
        let serving = ServiceTrait::start_service(&mut self.inner, fds, shutdown, listeners_per_fd);
        tokio::pin!(serving);
        let probe = async move {
            // Bounded: after 10 s the proxy starts anyway (the notifier is dropped).
            for _ in 0..500 {
                if tokio::net::TcpStream::connect(addr).await.is_ok() {
                    return;
                }
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
        };
        tokio::select! {
            () = &mut serving => return,
            () = probe => ready.notify_ready(),
        }
        serving.await;
    }

    fn name(&self) -> &str {
        ServiceTrait::name(&self.inner)
    }

    fn threads(&self) -> Option<usize> {
        ServiceTrait::threads(&self.inner)
    }

    fn listen_addresses(&self) -> Option<Vec<String>> {
        ServiceTrait::listen_addresses(&self.inner)
    }
}

fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// What the demo prints: `(curl line, expected status, why)`.
pub fn try_lines(port: u16) -> Vec<(String, u16, &'static str)> {
    const FIREFOX: &str = "Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0";
    const GOOGLEBOT: &str = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";
    const GPTBOT: &str =
        "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)";
    let base = format!("http://127.0.0.1:{port}");
    let line = |ua: Option<&str>, path: &str| match ua {
        Some(ua) => format!("curl -si -A '{ua}' {base}{path}"),
        None => format!("curl -si {base}{path}"),
    };
    vec![
        (line(None, "/robots.txt"), 200, "robots.txt, served by robotgate"),
        (
            format!(
                "curl -si -A '{FIREFOX}' -H 'Accept-Language: en-US,en;q=0.5' -H 'Sec-Fetch-Site: none' \
                 -H 'Sec-Fetch-Mode: navigate' -H 'Sec-Fetch-Dest: document' {base}/private/report.html"
            ),
            200,
            "a browser (its User-Agent and the headers it sends): people are never blocked",
        ),
        (
            line(Some(FIREFOX), "/private/report.html"),
            403,
            "a browser's User-Agent alone, without a browser's headers: a robot in disguise (policy.disguised)",
        ),
        (line(Some(GOOGLEBOT), "/about.html"), 200, "Googlebot on an allowed page"),
        (line(Some(GOOGLEBOT), "/private/report.html"), 403, "Googlebot on a disallowed page (Disallow: /private/)"),
        (
            line(Some(GPTBOT), "/about.html"),
            403,
            "GPTBot from 127.0.0.1, which is no address OpenAI publishes for GPTBot: a spoofed identity",
        ),
    ]
}

/// Write the demo's files and config into `dir`; returns the config path.
fn prepare(dir: &Path, port: u16, origin: u16, metrics: u16) -> anyhow::Result<PathBuf> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let robots = dir.join("robots.txt");
    if !robots.exists() {
        std::fs::write(&robots, ROBOTS)?;
    }
    let humans = dir.join("humans.txt");
    if !humans.exists() {
        std::fs::write(&humans, HUMANS)?;
    }
    let config = format!(
        r#"# Written by `robotgate demo`.
listen: ["127.0.0.1:{port}"]
threads: 1
grace_period: 1
sites:
  - name: demo
    hosts: ["127.0.0.1", "localhost"]
    default: true
    upstream: "127.0.0.1:{origin}"
    robots: {robots}
    humans: {humans}
    policy:
      action: block
log:
  violations: {violations}
  level: warn
metrics:
  listen: "127.0.0.1:{metrics}"
# Every demo client is on loopback: the operators' lists are not fetched.
verify:
  refresh: "off"
"#,
        robots = robots.display(),
        humans = humans.display(),
        violations = dir.join("violations.jsonl").display(),
    );
    let path = dir.join("robotgate.yaml");
    std::fs::write(&path, config)?;
    Ok(path)
}

/// Run the demo until interrupted.
///
/// # Errors
/// The directory cannot be written or a port cannot be bound.
pub fn run(port: u16, dir: Option<PathBuf>) -> anyhow::Result<()> {
    let dir = match dir {
        Some(d) => d,
        None => std::env::temp_dir().join(format!("robotgate-demo-{port}")),
    };
    let dir = std::path::absolute(&dir).unwrap_or(dir);
    let origin = free_port()?;
    let metrics = free_port()?;
    let config = prepare(&dir, port, origin, metrics)?;

    let mut site: Service<HttpServer<StaticSite>> = Service::new("demo origin".into(), HttpServer::new_app(StaticSite));
    site.add_tcp(&format!("127.0.0.1:{origin}"));
    site.threads = Some(1);
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], origin));
    let extra: Vec<Box<dyn ServiceWithDependents>> = vec![Box::new(ListeningOrigin { inner: site, addr })];

    let mut intro = String::new();
    intro.push_str(&format!(
        "robotgate demo: http://127.0.0.1:{port}/ in front of a built-in site on 127.0.0.1:{origin}\n\n"
    ));
    intro.push_str("Try:\n");
    for (line, status, why) in try_lines(port) {
        intro.push_str(&format!("  {line}\n      # {status}: {why}\n"));
    }
    intro.push_str(&format!(
        "\nViolations are logged to {}\nEdit {} and the new rules hold at once.\nMetrics: http://127.0.0.1:{metrics}/metrics\nStop with Ctrl-C.\n",
        dir.join("violations.jsonl").display(),
        dir.join("robots.txt").display(),
    ));
    crate::server::serve_with(&config, crate::server::ServeOptions::default(), extra, Some(intro))
}
