//! The Pingora layer (feature `server`): the only module that names pingora,
//! tokio, notify or arc-swap. Its rooms, bottom up (each imports only rooms
//! below it):
//!
//! * [`telemetry`]: logging and metrics.
//! * [`snapshot`]: what `serve` holds behind an `ArcSwap`: the core's
//!   [`crate::load::Snapshot`] plus prebuilt answers and certificates.
//! * [`verify`]: identity adapters: reverse DNS, Web Bot Auth directories,
//!   feed refresh, the proxy's `Identify`.
//! * [`store`]: state shared between instances (Redis or Valkey).
//! * [`ops`]: reload, the violation log, the status page, `config check`, the demo.
//! * [`http`]: the proxy, its responses, the client address, TLS by SNI.
//!
//! This file wires them into one Pingora server.

pub mod http;
pub mod ops;
pub mod snapshot;
pub mod store;
pub mod telemetry;
pub mod verify;

use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use arc_swap::ArcSwap;
use async_trait::async_trait;
use pingora::apps::http_app::{HttpServer, ServeHttp};
use pingora::protocols::http::ServerSession;
use pingora::server::configuration::ServerConf;
use pingora::server::{RunArgs, Server};
use pingora::services::background::GenBackgroundService;
use pingora::services::listening::Service;

use self::http::gate::Gate;
use self::http::tls;
use self::ops::crowd::{self, Crowd};
use self::ops::reload::{self, Reloader};
use self::ops::{memory, status, violations, violations::ViolationLog};
use self::store::reads::{self, Reads};
use self::store::redis;
use self::verify::{dns, feeds, wba};
use crate::state::MemoryState;

/// Options passed through to Pingora's server.
#[derive(Debug, Clone, Default)]
pub struct ServeOptions {
    /// Run in the background (Pingora's daemon mode).
    pub daemon: bool,
    /// Take over the listeners of a running instance (Pingora's graceful upgrade).
    pub upgrade: bool,
    /// PID file (daemon mode and upgrades).
    pub pid_file: Option<String>,
    /// Unix socket used to hand listeners over on upgrade.
    pub upgrade_sock: Option<String>,
}

/// Serves `/metrics` from the default Prometheus registry, and with
/// `metrics.status_page` the status page at `/status` and `/status.json`.
struct MetricsApp {
    snapshot: Arc<ArcSwap<snapshot::Snapshot>>,
    store: Option<Arc<redis::SharedStore>>,
    status_page: bool,
}

fn answer(status: u16, content_type: &str, body: Vec<u8>) -> ::http::Response<Vec<u8>> {
    ::http::Response::builder()
        .status(status)
        .header(::http::header::CONTENT_TYPE, content_type)
        .header(::http::header::CONTENT_LENGTH, body.len())
        .header(::http::header::CACHE_CONTROL, "no-store")
        .header("x-content-type-options", "nosniff")
        .body(body)
        .expect("a response of a status, two known headers and a body is valid")
}

#[async_trait]
impl ServeHttp for MetricsApp {
    async fn response(&self, session: &mut ServerSession) -> ::http::Response<Vec<u8>> {
        use prometheus::Encoder;
        // The head is in: its deadline stops. One request per connection, so
        // no connection idles here (a scraper opens one per scrape).
        http::conn::head_complete(session);
        session.set_keepalive(None);
        let path = session.req_header().uri.path().to_owned();
        match path.as_str() {
            "/metrics" => {
                feeds::publish_ages(&self.snapshot.load());
                let encoder = prometheus::TextEncoder::new();
                let mut buf = Vec::new();
                let _ = encoder.encode(&prometheus::gather(), &mut buf);
                answer(200, encoder.format_type(), buf)
            }
            "/status" | "/status.json" if self.status_page => {
                let pick = status::Pick::from_query(session.req_header().uri.query());
                let view = status::board().view(&self.snapshot.load(), self.store.as_deref(), &pick);
                if path == "/status" {
                    let html = crate::report::render::status::html(&view);
                    answer(200, "text/html; charset=utf-8", html.into_bytes())
                } else {
                    let json = serde_json::to_vec_pretty(&view).unwrap_or_default();
                    answer(200, "application/json", json)
                }
            }
            _ => answer(404, "text/plain", b"not found\n".to_vec()),
        }
    }
}

/// Fail now, with a clear message, on what Pingora would only notice inside a
/// service task (where a failure leaves the process running without that
/// listener): ports in use, unreadable certificates.
fn preflight(config: &crate::config::Settings, upgrade: bool) -> anyhow::Result<()> {
    for l in &config.boot.listen {
        if !upgrade {
            std::net::TcpListener::bind(l.address.as_str())
                .with_context(|| format!("cannot listen on {}", l.address))?;
        }
    }
    let edges = [("auth", &config.boot.auth), ("spoe", &config.boot.spoe), ("ext_authz", &config.boot.ext_authz)];
    for (what, addresses) in edges {
        for a in addresses {
            if !upgrade {
                std::net::TcpListener::bind(a.as_str()).with_context(|| format!("cannot listen on {a} ({what})"))?;
            }
        }
    }
    if let Some(m) = &config.boot.metrics {
        if !upgrade {
            std::net::TcpListener::bind(m.as_str()).with_context(|| format!("cannot listen on {m} (metrics)"))?;
        }
    }
    Ok(())
}

/// Timeouts of this many seconds or more run on tokio's timer, not on
/// Pingora's shared fast-timer map (`ServerConf::fast_timeout_to_tokio_threshold_seconds`).
/// Every proxied request waits under two 60 s timeouts (the keep-alive read
/// and the origin's answer); a fast timer stays in the map until its
/// deadline even when the request is long done, so at load that map holds
/// thousands of 10 ms buckets, and each registration searches it and
/// subscribes to a `Notify`. A tokio timer is removed when its request ends.
/// Callgrind: about 1,600 fewer instructions per proxied request. The
/// deadlines, and the 502/504 they lead to, are the same.
pub const TOKIO_TIMERS_FROM_SECONDS: Option<u64> = Some(0);

/// One proxy service: `gate` behind robotgate's connection handling
/// ([`http::conn::Edge`]: the request-head deadline, and the PROXY protocol
/// if `gate` takes it), listening on `listen`.
fn proxy_service(
    server: &Server,
    shared: &Arc<ArcSwap<snapshot::Snapshot>>,
    config: &crate::config::Settings,
    gate: Gate,
    name: &str,
    listen: &[&crate::config::Listen],
) -> anyhow::Result<Service<http::conn::Edge<pingora::proxy::HttpProxy<Gate>>>> {
    let proxy_protocol = gate.proxy_protocol;
    let mut proxy = pingora::proxy::http_proxy(&server.configuration, gate);
    let mut options = proxy.server_options.clone().unwrap_or_default();
    // Pingora's h2c is per service: the configuration makes every plain
    // listener say the same.
    options.h2c = config.boot.listen.iter().any(|l| l.h2c);
    // An HTTP/2 connection without a stream in flight is idle as an HTTP/1
    // connection between requests is.
    options.h2_idle_timeout = Some(config.boot.keepalive_timeout);
    proxy.server_options = Some(options);
    let reader = proxy_protocol.then(|| {
        // The header must come within the head's own limit too.
        let timeout = http::conn::PROXY_HEADER_TIMEOUT.min(config.boot.request_head_timeout);
        Arc::new(http::conn::ProxyProtocol { snapshot: shared.clone(), timeout })
    });
    let edge = http::conn::Edge::new(
        proxy,
        "proxy",
        config.boot.max_connections,
        config.boot.request_head_timeout,
        reader.clone(),
    );
    let mut service = Service::new(name.to_owned(), edge);
    // Pingora runs it for TLS listeners only (`Edge` reads the PROXY
    // header of plain ones): the PROXY header, or else the ClientHello.
    match reader {
        Some(reader) => service.endpoints().set_pre_tls_callback(reader),
        None => service
            .endpoints()
            .set_pre_tls_callback(Arc::new(http::hello::BeforeTls { timeout: config.boot.request_head_timeout })),
    }
    for l in listen {
        let addr = &l.address;
        if !l.https {
            service.add_tcp(addr);
            continue;
        }
        // Certificates come from the snapshot at each handshake (by SNI).
        let mut tls = pingora::listeners::tls::TlsSettings::intermediate("", "")
            .with_context(|| format!("TLS listener {addr}"))?;
        tls.set_cert_resolver(Arc::new(tls::SniResolver { snapshot: shared.clone(), listener: addr.clone() }));
        if l.http2 {
            tls.enable_h2();
        }
        service.add_tls_with_settings(addr, None, tls);
    }
    Ok(service)
}

/// Run the proxy until a signal stops it. SIGTERM and SIGQUIT finish
/// in-flight requests (up to the grace period); every violation record
/// accepted before the stop is written before this returns.
///
/// # Errors
/// The configuration or its files cannot be loaded, or a listener cannot start.
pub fn serve(config_path: &Path, options: ServeOptions) -> anyhow::Result<()> {
    serve_with(config_path, options, Vec::new(), None)
}

/// [`serve`], with extra Pingora services (the demo's origin) and a message
/// printed on stdout once everything is set up.
///
/// # Errors
/// As [`serve`].
pub fn serve_with(
    config_path: &Path,
    options: ServeOptions,
    extra: Vec<Box<dyn pingora::services::ServiceWithDependents>>,
    intro: Option<String>,
) -> anyhow::Result<()> {
    let snap = snapshot::load(config_path).map_err(|problems| {
        let lines: Vec<String> = problems.iter().map(ToString::to_string).collect();
        anyhow::anyhow!("{}", lines.join("\n"))
    })?;
    telemetry::init_logging(&snap.settings.boot.log_level);
    // At start, only a file of `sites_dir`, or a customer's file (issue 66),
    // is refused alone (any other is an error).
    for p in &snap.refused {
        tracing::error!(target: "robotgate::reload", file = %p.file.display(), line = p.line, problem = %p.message, "file refused alone; the other sites are served");
    }
    preflight(&snap.settings, options.upgrade)?;
    reload::publish_info(&snap);
    reload::persist_traps(&snap, None);
    // What the load parsed on the way is freed: give it back.
    memory::give_back();
    let config = snap.settings.clone();
    let n_sites = snap.sites.len();
    // robotgate's own feeds directory is made now, before the watches are
    // set, so that a refreshed feed written there reloads; one it cannot
    // make shows as the refresh's failure.
    let feeds_dir = snap.feeds_dir.clone();
    if let (Some(dir), None) = (&feeds_dir, &config.verify_feeds) {
        let _ = std::fs::create_dir_all(dir);
    }
    let violations = Arc::new(
        ViolationLog::open_idle(&config.boot.violations, &config.boot.violation_log)
            .context("opening the violation log")?,
    );
    // Without a fork, start now: the SIGUSR1 handler is then in place before
    // any listener opens. A daemon starts them in the child (`Starter`).
    if !options.daemon {
        violations.start().context("starting the violation log writer")?;
    }
    let shared = Arc::new(ArcSwap::from_pointee(snap));

    let mut conf = ServerConf {
        threads: config.boot.threads,
        grace_period_seconds: Some(config.boot.grace_period.as_secs()),
        graceful_shutdown_timeout_seconds: Some(5),
        daemon: options.daemon,
        fast_timeout_to_tokio_threshold_seconds: TOKIO_TIMERS_FROM_SECONDS,
        ..ServerConf::default()
    };
    if let Some(p) = options.pid_file {
        conf.pid_file = p;
    }
    if let Some(s) = options.upgrade_sock {
        conf.upgrade_sock = s;
    }
    let opt =
        pingora::server::configuration::Opt { upgrade: options.upgrade, daemon: options.daemon, ..Default::default() };
    let mut server = Server::new_with_opt_and_conf(Some(opt), conf);
    server.bootstrap();

    let state = Arc::new(MemoryState::new(config.boot.max_clients));
    let reads = Arc::new(Reads::open(Reads::state_path(&shared.load().traps_state), &*state));
    server.add_service(GenBackgroundService::new("robots.txt reads".into(), Arc::new(reads::Writer(reads.clone()))));
    let crowd = Arc::new(Crowd::default());
    let judge = crowd::Judge { crowd: crowd.clone(), snapshot: shared.clone() };
    server.add_service(GenBackgroundService::new("one-client check".into(), Arc::new(judge)));
    let store = match &config.boot.shared_state {
        Some(s) => Some(Arc::new(redis::SharedStore::new(s, state.clone()).map_err(anyhow::Error::msg)?)),
        None => None,
    };
    if let Some(store) = &store {
        server.add_service(GenBackgroundService::new("shared state".into(), Arc::new(redis::Keeper(store.clone()))));
    }
    status::board(); // Its start time is the process's.
    let gate = Gate {
        snapshot: shared.clone(),
        state,
        shared: store.clone(),
        reads,
        crowd: crowd.clone(),
        status_page: config.boot.status_page,
        dns: match dns::DnsVerifier::new(&dns::DnsConfig::from(&config.boot.dns)) {
            Ok(d) => Some(Arc::new(d)),
            Err(e) => {
                tracing::warn!(target: "robotgate", error = %e, "no resolver for reverse-DNS checks: robots that only DNS can verify stay unverifiable");
                None
            }
        },
        wba: Arc::new(wba::DirectoryCache::from_settings(&config.boot.verify)),
        violations: violations.clone(),
        keepalive: config.boot.keepalive_timeout.as_secs(),
        proxy_protocol: false,
        auth: false,
    };
    // The proxy starts after the services it fronts (the demo's origin).
    let extra: Vec<_> = extra.into_iter().map(|s| server.add_boxed_service(s)).collect();
    // Pingora's pre-TLS hook (the PROXY protocol) is per service, so
    // listeners with and without the PROXY protocol are two services.
    for proxy_protocol in [false, true] {
        let listen: Vec<_> = config.boot.listen.iter().filter(|l| l.proxy_protocol == proxy_protocol).collect();
        if listen.is_empty() {
            continue;
        }
        let name = if proxy_protocol { "robotgate (PROXY protocol)" } else { "robotgate" };
        let proxy = proxy_service(&server, &shared, &config, Gate { proxy_protocol, ..gate.clone() }, name, &listen)?;
        server.add_service(proxy).add_dependencies(extra.iter());
    }
    if !config.boot.auth.is_empty() {
        // The decision service of an edge proxy: the same gate, answering
        // every request itself (`http::auth`).
        let proxy = pingora::proxy::http_proxy(&server.configuration, Gate { auth: true, ..gate.clone() });
        let edge =
            http::conn::Edge::new(proxy, "auth", config.boot.max_connections, config.boot.request_head_timeout, None);
        let mut service = Service::new("robotgate auth".to_owned(), edge);
        for addr in &config.boot.auth {
            service.add_tcp(addr);
        }
        server.add_service(service);
    }
    if !config.boot.spoe.is_empty() {
        // HAProxy's SPOE agent: the same gate, answering over SPOP (`http::spoe`).
        let agent = http::spoe::Agent {
            gate: Arc::new(Gate { auth: true, ..gate.clone() }),
            listen: config.boot.spoe.clone(),
            max_connections: config.boot.max_connections,
            frame_timeout: config.boot.request_head_timeout,
            idle_timeout: config.boot.keepalive_timeout,
        };
        server.add_service(GenBackgroundService::new("robotgate spoe".into(), Arc::new(agent)));
    }
    if !config.boot.ext_authz.is_empty() {
        // Envoy's ext_authz service: the proxy's gate, answering each check
        // with the same plan (`http::ext_authz`).
        let listener = http::ext_authz::Listener {
            service: Arc::new(http::ext_authz::ExtAuthz { gate: gate.clone() }),
            addresses: config.boot.ext_authz.clone(),
            max_connections: config.boot.max_connections,
            head_timeout: config.boot.request_head_timeout,
            idle_timeout: config.boot.keepalive_timeout,
        };
        server.add_service(GenBackgroundService::new("robotgate ext_authz".into(), Arc::new(listener)));
    }
    if let Some(addr) = &config.boot.metrics {
        // The same bounds as the other listeners (issue #39): a head
        // deadline, one request per connection, and few connections at once,
        // so that idle connections here cannot take the proxy's descriptors.
        let app = HttpServer::new_app(MetricsApp {
            snapshot: shared.clone(),
            store: store.clone(),
            status_page: config.boot.status_page,
        });
        let edge = http::conn::Edge::new(
            app,
            "metrics",
            config.boot.metrics_max_connections,
            config.boot.request_head_timeout,
            None,
        );
        let mut metrics = Service::new("metrics".into(), edge);
        metrics.add_tcp(addr);
        metrics.threads = Some(1);
        server.add_service(metrics);
    }
    server.add_service(GenBackgroundService::new(
        "violation log".into(),
        Arc::new(violations::Starter(violations.clone())),
    ));
    if let (Some(dir), Some(every)) = (&feeds_dir, config.boot.verify.refresh) {
        let refresher = feeds::Refresher {
            dir: dir.clone(),
            every,
            sources: feeds::sources(&config.boot.verify.feed_urls),
            snapshot: shared.clone(),
        };
        server.add_service(GenBackgroundService::new("feeds".into(), Arc::new(refresher)));
    }
    let reloader = Reloader { config_path: config_path.to_path_buf(), snapshot: shared };
    server.add_service(GenBackgroundService::new("reload".into(), Arc::new(reloader)));

    tracing::info!(target: "robotgate", listen = ?config.boot.listen.iter().map(|l| l.address.as_str()).collect::<Vec<_>>(), sites = n_sites, "robotgate started");

    if let Some(intro) = intro {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(intro.as_bytes());
        let _ = out.flush();
    }
    server.run(RunArgs::default());
    let written = violations.close().context("flushing the violation log")?;
    tracing::info!(target: "robotgate", violations_written = written, "robotgate stopped");
    Ok(())
}
