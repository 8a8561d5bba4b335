//! The YAML shape of the configuration: what serde reads, nothing more.
//!
//! Every struct denies unknown keys, so a typo is an error with its line
//! rather than a setting silently ignored. [`RawConfig::validate`]
//! (in `validate/`) turns this shape into the runtime form.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;

/// `listen:` entries: `"127.0.0.1:8080"` or `{address, tls, http2, h2c, proxy_protocol}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum RawListen {
    /// A plain HTTP listener.
    Plain(String),
    /// A listener with options.
    Full(RawListenFull),
}

/// The long form of a `listen:` entry. A struct of its own so that unknown
/// keys are errors: a misspelt `proxy_protocol` must not pass unnoticed.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawListenFull {
    /// `host:port`.
    pub address: String,
    /// HTTPS: the listener's own certificate and key (PEM files), or
    /// `true` for the sites' certificates only (chosen by SNI).
    #[serde(default)]
    pub tls: Option<RawListenTls>,
    /// Offer HTTP/2 by ALPN on an HTTPS listener (default true).
    #[serde(default)]
    pub http2: Option<bool>,
    /// Accept HTTP/2 without TLS (prior knowledge) on a plain listener (default false).
    #[serde(default)]
    pub h2c: bool,
    /// Every connection starts with a PROXY protocol header (v1 or v2)
    /// from one of `trusted_proxies`, which names the client (default false).
    #[serde(default)]
    pub proxy_protocol: bool,
}

/// A listener's `tls:`.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum RawListenTls {
    /// `true`: HTTPS with the sites' certificates only; `false`: plain.
    On(bool),
    /// The listener's own certificate, for names no site's covers.
    Pair(RawTls),
}

/// Certificate and key for an HTTPS listener.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTls {
    /// PEM certificate chain.
    pub cert: PathBuf,
    /// PEM private key.
    pub key: PathBuf,
}

/// `upstream:`: `"host:port"` or `{address, tls, sni, connect_timeout, read_timeout}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum RawUpstream {
    /// `host:port`, plain HTTP.
    Plain(String),
    /// With options.
    Full(RawUpstreamFull),
}

/// The long form of `upstream:`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawUpstreamFull {
    /// `host:port`.
    pub address: String,
    /// Connect with TLS.
    #[serde(default)]
    pub tls: bool,
    /// SNI and certificate name (default: the host part of `address`).
    #[serde(default)]
    pub sni: Option<String>,
    /// Seconds to wait for a connection (default 5).
    #[serde(default)]
    pub connect_timeout: Option<f64>,
    /// Seconds to wait for each read from the upstream (default 60).
    #[serde(default)]
    pub read_timeout: Option<f64>,
    /// Speak HTTP/2 to the origin (over TLS by ALPN, else prior knowledge; default false).
    #[serde(default)]
    pub h2: bool,
}

/// One action, as written under `policy:` or its overrides.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawAction {
    /// `block`, `alternate`, `noindex` or `log`.
    pub action: Option<String>,
    /// Status for `block` (default 403) or `alternate` (default 200; 302 with `redirect`).
    pub status: Option<u16>,
    /// Body for `block`.
    pub body: Option<String>,
    /// `alternate`: the file to serve instead.
    pub file: Option<PathBuf>,
    /// `alternate`: Content-Type of `file` (default `text/html; charset=utf-8`).
    pub content_type: Option<String>,
    /// `alternate`: redirect to this URL instead of serving a file.
    pub redirect: Option<String>,
    /// `noindex`: the `X-Robots-Tag` value (default `noindex, nofollow`).
    pub header: Option<String>,
}

/// `policy:` of a site.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawPolicy {
    /// The default action (and its options), flattened.
    #[serde(flatten)]
    pub default: RawAction,
    /// Overrides by category (`ai-crawler: {action: block}`).
    #[serde(default)]
    pub categories: BTreeMap<String, RawAction>,
    /// Overrides by bot name (`Googlebot: {action: log}`).
    #[serde(default)]
    pub bots: BTreeMap<String, RawAction>,
    /// Hold `ai-user` fetchers (fetches a person asked for) to robots.txt:
    /// `false` (default) only logs their violations.
    #[serde(default)]
    pub enforce_ai_user: bool,
    /// Enforce Crawl-delay and Request-rate with 429 (default true).
    #[serde(default)]
    pub rate_limit: Option<bool>,
    /// Enforce Visit-time with 429 (default true).
    #[serde(default)]
    pub visit_time: Option<bool>,
    /// What a client gets whose User-Agent names a robot it is not (default
    /// `block` with 403); `log` records it and judges it as an unknown robot.
    #[serde(default)]
    pub spoofed: Option<RawAction>,
    /// A Crawl-delay, Request-rate or Visit-time the robot's operator says
    /// it ignores (the bot database's `extensions`): `pass` (default),
    /// `log` (record `unsupported-directive`, let through) or `enforce`.
    #[serde(default)]
    pub unsupported_directives: Option<String>,
    /// Usage preferences (Content-Usage, Content-Signal) by the robot's
    /// purposes: `enforce` (default), `log` or `off`.
    #[serde(default)]
    pub preferences: Option<String>,
    /// What a crawler still using the robots.txt it fetched before a change
    /// gets (RFC 9309 2.4).
    #[serde(default)]
    pub robots_change: RawRobotsChange,
    /// An unknown robot named only by weak evidence: `log` (default:
    /// recorded, not refused or paced) or `enforce` (issue #53).
    #[serde(default)]
    pub weak_evidence: Option<String>,
    /// `enforce` (default), `log` or `off` (issue #67).
    pub disguised: Option<String>,
    /// `strong` (default) or `weak`: the ClientHello's signs (issue #67).
    pub tls_evidence: Option<String>,
}

/// `policy.robots_change`: `{grace: 24h, action: pass}` by default.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRobotsChange {
    /// How long after its fetch a crawler's copy counts (at most 24h; 0: never).
    pub grace: Option<RawDuration>,
    /// `pass` (default) or `enforce`.
    pub action: Option<String>,
}

/// One entry of `sites:`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSite {
    /// A name for logs and metrics (default: the first host).
    #[serde(default)]
    pub name: Option<String>,
    /// `Host` header values this site answers (port ignored, case-insensitive).
    #[serde(default)]
    pub hosts: Vec<String>,
    /// Answer requests for unknown hosts (at most one site).
    #[serde(default)]
    pub default: bool,
    /// The origin (`robotgate serve` needs one; nginx forwards itself).
    #[serde(default)]
    pub upstream: Option<RawUpstream>,
    /// robots.txt to serve and enforce. Absent: pass `/robots.txt` through and enforce nothing.
    #[serde(default)]
    pub robots: Option<PathBuf>,
    /// humans.txt to serve. Absent: pass `/humans.txt` through.
    #[serde(default)]
    pub humans: Option<PathBuf>,
    /// What to do with violations.
    #[serde(default)]
    pub policy: RawPolicy,
    /// How request-targets are read before they are judged.
    #[serde(default)]
    pub target: RawTarget,
    /// Trap paths: disallowed for every group, a client that fetches one is banned.
    #[serde(default)]
    pub traps: Option<RawTraps>,
    /// Lines robotgate adds to the site's robots.txt.
    #[serde(default)]
    pub managed: RawManaged,
    /// The site's own certificate and key, presented on HTTPS listeners to
    /// clients that ask for one of its hosts (SNI).
    #[serde(default)]
    pub tls: Option<RawTls>,
    /// Indexing rules: `X-Robots-Tag` by path and robot (issue #42).
    #[serde(default)]
    pub indexing: Option<RawIndexing>,
}

/// `site_template:`: path patterns for the files a site does not name.
/// `{host}` is the site's first host name, `{name}` its name.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSiteTemplate {
    /// The robots.txt of a site without `robots:`.
    pub robots: Option<String>,
    /// The humans.txt of a site without `humans:`.
    pub humans: Option<String>,
}

/// `indexing:` of a site.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawIndexing {
    /// The rules.
    #[serde(default)]
    pub rules: Vec<RawIndexRule>,
    /// Read the robots META tags and `X-Robots-Tag` of the origin's answers.
    #[serde(default)]
    pub observe: bool,
}

/// One indexing rule. `set` is parsed as it is read, so a bad directive is
/// reported at its line.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawIndexRule {
    /// A robots.txt pattern.
    pub path: String,
    /// robots.txt tokens; absent: every robot.
    #[serde(default)]
    pub bots: Vec<String>,
    /// The directives.
    pub set: crate::indexing::Directives,
}

/// `traps:` of a site.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTraps {
    /// Path prefixes (default `["/.well-known/robotgate/trap/"]`).
    pub paths: Option<Vec<String>>,
    /// Seconds a trapped client stays banned (default 3600).
    pub ban: Option<u64>,
    /// Seconds a trap path must have been in the served robots.txt before a
    /// hit bans (default 86400: crawlers may cache robots.txt for a day).
    pub arm_after: Option<u64>,
    /// What a banned client gets (default `block`), with its options.
    #[serde(flatten)]
    pub action: RawAction,
    /// Add a hidden link to the first trap in HTML pages (default false).
    #[serde(default)]
    pub inject_link: bool,
}

/// `managed:` of a site.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawManaged {
    /// `disallow`: add a group that disallows `/` to every AI-training
    /// crawler and control token the file does not name; `allow` (default): add nothing.
    pub ai_training: Option<String>,
    /// A `Content-Signal:` value (contentsignals.org) for the `*` group.
    pub content_signal: Option<String>,
    /// A `Content-Usage:` rule (draft-ietf-aipref-attach, `train-ai=n` or
    /// `/path train-ai=n`) for the `*` group.
    pub content_usage: Option<String>,
}

/// `target:` of a site: how robotgate reads a request-target, to match how
/// the site's origin reads it (see `robotgate::target`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTarget {
    /// Collapse runs of `/` in the path, as nginx does (default true).
    pub merge_slashes: Option<bool>,
    /// `decode` (default: `%2F` in the path is a `/`) or `reject` (400, as
    /// Apache does by default).
    pub encoded_slash: Option<String>,
    /// The longest request-target accepted, in bytes (default 8192; longer: 414).
    pub max_len: Option<usize>,
}

/// `log:`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawLog {
    /// Where violation records go: `stdout` or a file path (JSON lines).
    pub violations: String,
    /// Level of the other logs (`error`, `warn`, `info`, `debug`).
    pub level: String,
    /// Seconds in which repeats of one violation become one record (0: off).
    pub aggregate_window: u64,
    /// Keys (site, client, bot, rule, action) aggregated at once; beyond, records are written unaggregated.
    pub aggregate_max_keys: usize,
    /// Rotate the violation file when it would grow past this size: bytes, or `"100MB"` (absent: never).
    pub max_size: Option<RawSize>,
    /// Rotated files kept (`violations.jsonl.1` .. `.N`).
    pub keep: u32,
}

impl Default for RawLog {
    fn default() -> Self {
        RawLog {
            violations: "stdout".into(),
            level: "info".into(),
            aggregate_window: 10,
            aggregate_max_keys: 65_536,
            max_size: None,
            keep: 5,
        }
    }
}

/// A duration: seconds, or text such as `"24h"`, `"90m"`, `"3600s"`.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum RawDuration {
    /// Seconds.
    Secs(u64),
    /// A number with a unit (`s`, `m`, `h`, `d`).
    Text(String),
}

/// A size: a number of bytes, or text such as `"100MB"`, `"512 KiB"`.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum RawSize {
    /// Bytes.
    Bytes(u64),
    /// A number with a unit (`B`, `KB`, `MB`, `GB`, `KiB`, `MiB`, `GiB`).
    Text(String),
}

/// `metrics:`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawMetrics {
    /// Address of the Prometheus listener (loopback by default).
    #[serde(default = "default_metrics_listen")]
    pub listen: String,
    /// Serve the status page at `/status` and `/status.json` (default false).
    #[serde(default)]
    pub status_page: bool,
    /// Connections open at once; more are closed at once (default 64).
    #[serde(default)]
    pub max_connections: Option<usize>,
    /// Sites with series of their own (the first ones, in the order sites
    /// are served); the others are counted together under `site="_other"`
    /// (default 100; 0: all together).
    #[serde(default)]
    pub per_site_limit: Option<usize>,
}

/// `auth:`: the listener that answers an edge proxy's authorisation
/// subrequests (nginx `auth_request`, Caddy `forward_auth`, Traefik `forwardAuth`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawAuth {
    /// Addresses to listen on, `host:port` (loopback, where the edge runs).
    pub listen: Vec<String>,
    /// The one header the edge names each fact of the original request in
    /// (absent: `X-Forwarded-Uri`, `-Method`, `-Host`, `-Proto`, as the
    /// shipped nginx, Caddy and Traefik files write them).
    #[serde(default)]
    pub headers: RawEdgeHeaders,
    /// How long the edge waits for an answer (its own timeout: nginx's
    /// `proxy_read_timeout` in the subrequest's location), in milliseconds;
    /// robotgate decides before it (docs/edge.md, "Deadlines"). Default 3000.
    #[serde(default)]
    pub edge_timeout_ms: Option<u64>,
}

/// `spoe:`: the SPOE agent HAProxy's `filter spoe` asks about each request
/// (`examples/edge/spoe-robotgate.conf`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSpoe {
    /// Addresses to listen on, `host:port` (where HAProxy runs).
    pub listen: Vec<String>,
    /// HAProxy's `timeout processing` in milliseconds; robotgate decides
    /// before it (docs/edge.md, "Deadlines"). Default 1000, the shipped file's.
    #[serde(default)]
    pub edge_timeout_ms: Option<u64>,
}

/// `ext_authz:`: the gRPC listener that answers Envoy's `ext_authz` filter
/// (`envoy.service.auth.v3.Authorization/Check`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawExtAuthz {
    /// Addresses to listen on, `host:port` (loopback, where Envoy runs).
    pub listen: Vec<String>,
    /// The `timeout` of Envoy's ext_authz `grpc_service` in milliseconds;
    /// robotgate decides before it (docs/edge.md, "Deadlines"). Default
    /// 3000, the shipped file's.
    #[serde(default)]
    pub edge_timeout_ms: Option<u64>,
}

/// `auth.headers:`: which header names each fact of the original request.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawEdgeHeaders {
    /// The request-target (default `X-Forwarded-Uri`).
    pub target: Option<String>,
    /// The method (default `X-Forwarded-Method`).
    pub method: Option<String>,
    /// The host (default `X-Forwarded-Host`).
    pub host: Option<String>,
    /// The scheme (default `X-Forwarded-Proto`).
    pub proto: Option<String>,
}

fn default_metrics_listen() -> String {
    "127.0.0.1:9102".into()
}

/// `limits:`: bounds on per-client state and on slow clients.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawLimits {
    /// Clients (address + bot) tracked for rate limits; the least recently seen are forgotten.
    pub max_clients: usize,
    /// The prefix an IPv6 client is banned and rate-limited by (default 64).
    pub ipv6_prefix: u8,
    /// The longest a client may take to send a whole request head, from the
    /// accept (first request) or from its first byte (later ones): seconds
    /// or text (`20s`). Default 20 seconds.
    pub request_head_timeout: Option<RawDuration>,
    /// The longest a connection may sit idle between two requests: seconds
    /// or text (`60s`). Default 60 seconds.
    pub keepalive_timeout: Option<RawDuration>,
    /// Connections open at once on the proxy's listeners, and again on the
    /// auth listener's; more are closed at once (default 10,000).
    pub max_connections: usize,
}

impl Default for RawLimits {
    fn default() -> Self {
        RawLimits {
            max_clients: 100_000,
            ipv6_prefix: crate::net::BAN_PREFIX_V6,
            request_head_timeout: None,
            keepalive_timeout: None,
            max_connections: 10_000,
        }
    }
}

/// `verify:`: how robotgate checks that a bot is who its User-Agent says.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawVerify {
    /// A directory of IP range feeds (`NAME.json`, the published format) that
    /// replace the embedded feeds of the same name (default: the embedded ones).
    pub feeds: Option<PathBuf>,
    /// Forward-confirmed reverse DNS.
    pub dns: RawDns,
    /// Web Bot Auth: let `Signature-Agent` directories be fetched from
    /// private, loopback and link-local addresses, and over plain http. For
    /// tests only (default false).
    pub allow_private_directories: bool,
    /// Fetch the operators' feeds this often (`24h`, `90m`, `3600s` or
    /// seconds; `off`: never), into `feeds` or, without it, robotgate's own
    /// `robotgate-feeds` directory beside its state files; absent: `24h`.
    pub refresh: Option<RawDuration>,
    /// Feed URLs in place of the operators' (name: URL), e.g. a mirror.
    pub feed_urls: BTreeMap<String, String>,
}

/// `verify.dns:`: the resolver used for forward-confirmed reverse DNS.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawDns {
    /// Name servers as `IP:port`, asked over UDP (empty: the system's, from
    /// `/etc/resolv.conf`).
    pub nameservers: Vec<String>,
    /// Milliseconds for a whole check, PTR and forward lookups together
    /// (default 500).
    pub timeout_ms: Option<u64>,
}

/// The whole file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawConfig {
    /// Listeners (`robotgate serve` needs one; nginx listens itself).
    #[serde(default)]
    pub listen: Vec<RawListen>,
    /// Worker threads of the proxy service (default 1).
    #[serde(default)]
    pub threads: Option<usize>,
    /// Sites.
    #[serde(default)]
    pub sites: Vec<RawSite>,
    /// A directory of YAML files (`*.yaml`, `*.yml`), each one site or a
    /// list of sites shaped as an entry of `sites:`; each file is checked
    /// on its own, so a broken one is refused alone.
    #[serde(default)]
    pub sites_dir: Option<PathBuf>,
    /// Where a site that names no robots.txt or humans.txt finds them, by
    /// pattern (`/srv/www/{host}/robots.txt`).
    #[serde(default)]
    pub site_template: Option<RawSiteTemplate>,
    /// Which links robotgate follows in a customer's directory: `inside`
    /// (default: none out of it) or `owner` (only to the link's owner's files).
    #[serde(default)]
    pub customer_links: Option<String>,
    /// CIDRs whose client-address header is believed.
    #[serde(default)]
    pub trusted_proxies: Vec<String>,
    /// The one header the trusted proxies write the client's address in:
    /// `X-Forwarded-For` (default), `Forwarded` or `X-Real-IP`.
    #[serde(default)]
    pub client_header: Option<String>,
    /// The header a trusted proxy writes the client's JA4 in (CloudFront's
    /// `CloudFront-Viewer-JA4-Fingerprint`); absent: none is read.
    #[serde(default)]
    pub ja4_header: Option<String>,
    /// Logging.
    #[serde(default)]
    pub log: RawLog,
    /// Prometheus metrics listener (absent: no metrics listener).
    #[serde(default)]
    pub metrics: Option<RawMetrics>,
    /// Forward-auth listener for an edge proxy (absent: none).
    #[serde(default)]
    pub auth: Option<RawAuth>,
    /// SPOE agent listener for HAProxy (absent: none).
    #[serde(default)]
    pub spoe: Option<RawSpoe>,
    /// Envoy ext_authz gRPC listener (absent: none).
    #[serde(default)]
    pub ext_authz: Option<RawExtAuthz>,
    /// A bot database file that extends (or with `bots_replace`, replaces) the built-in one.
    #[serde(default)]
    pub bots: Option<PathBuf>,
    /// Replace the built-in bot database instead of extending it.
    #[serde(default)]
    pub bots_replace: bool,
    /// Bounds on per-client state.
    #[serde(default)]
    pub limits: RawLimits,
    /// Seconds to finish in-flight requests on shutdown (default 5).
    #[serde(default)]
    pub grace_period: Option<u64>,
    /// Identity checks of robots' claims.
    #[serde(default)]
    pub verify: RawVerify,
    /// Where state shared between instances lives (absent: in process only).
    #[serde(default)]
    pub state: Option<RawState>,
    /// The directory of robotgate's own state files (absent: beside the
    /// violation log, or beside this file when the log is stdout).
    #[serde(default)]
    pub state_dir: Option<String>,
}

/// `state:`: a Redis or Valkey server that instances share.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawState {
    /// `redis://[user:password@]host:port/db` or `rediss://` (TLS).
    pub redis: String,
    /// Prefix of every key and of the event channel (default `robotgate:`).
    #[serde(default)]
    pub prefix: Option<String>,
    /// The longest a request waits on the store, in milliseconds (default 50).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
}
