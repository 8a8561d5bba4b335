//! The configuration: the YAML shape ([`RawConfig`]), its defaults, and
//! [`RawConfig::validate`], which returns the runtime form ([`Config`]) or
//! every problem at once.
//!
//! Paths in the file are taken relative to the working directory, as the
//! minimal example in the README expects (`robots: conf/robots.txt`). The core
//! reads no files: checking that the named files exist is the loader's job
//! (`server::reload`).

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

use crate::agent::Category;

/// One configuration problem, with where it is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {reason}")]
pub struct ConfigError {
    /// Dotted path of the field (`sites[0].upstream`), or `yaml` for syntax errors.
    pub field: String,
    /// What is wrong.
    pub reason: String,
    /// 1-based line in the YAML file, when known.
    pub line: Option<usize>,
}

impl ConfigError {
    fn new(field: impl Into<String>, reason: impl Into<String>) -> ConfigError {
        ConfigError { field: field.into(), reason: reason.into(), line: None }
    }
}

/// Parse YAML text into the raw shape. Unknown keys are errors.
///
/// # Errors
/// The YAML error, with its line.
pub fn from_yaml(text: &str) -> Result<RawConfig, ConfigError> {
    crate::yaml::from_str(text).map_err(|e| ConfigError { field: "yaml".into(), reason: e.message, line: e.line })
}

/// Parse and validate in one step.
///
/// # Errors
/// Every problem found.
pub fn parse(text: &str) -> Result<Config, Vec<ConfigError>> {
    from_yaml(text).map_err(|e| vec![e])?.validate()
}

// ---------------------------------------------------------------------------
// The YAML shape.

/// `listen:` entries: `"127.0.0.1:8080"` or `{address, tls: {cert, key}}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum RawListen {
    /// A plain HTTP listener.
    Plain(String),
    /// A listener with options.
    Full {
        /// `host:port`.
        address: String,
        /// HTTPS certificate and key (PEM files).
        #[serde(default)]
        tls: Option<RawTls>,
    },
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
    /// The origin.
    pub upstream: RawUpstream,
    /// robots.txt to serve and enforce. Absent: pass `/robots.txt` through and enforce nothing.
    #[serde(default)]
    pub robots: Option<PathBuf>,
    /// humans.txt to serve. Absent: pass `/humans.txt` through.
    #[serde(default)]
    pub humans: Option<PathBuf>,
    /// What to do with violations.
    #[serde(default)]
    pub policy: RawPolicy,
}

/// `log:`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawLog {
    /// Where violation records go: `stdout` or a file path (JSON lines).
    pub violations: String,
    /// Level of the other logs (`error`, `warn`, `info`, `debug`).
    pub level: String,
}

impl Default for RawLog {
    fn default() -> Self {
        RawLog { violations: "stdout".into(), level: "info".into() }
    }
}

/// `metrics:`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawMetrics {
    /// Address of the Prometheus listener (loopback by default).
    #[serde(default = "default_metrics_listen")]
    pub listen: String,
}

fn default_metrics_listen() -> String {
    "127.0.0.1:9102".into()
}

/// `limits:`: bounds on per-client state.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawLimits {
    /// Clients (address + bot) tracked for rate limits; the least recently seen are forgotten.
    pub max_clients: usize,
}

impl Default for RawLimits {
    fn default() -> Self {
        RawLimits { max_clients: 100_000 }
    }
}

/// The whole file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawConfig {
    /// Listeners.
    pub listen: Vec<RawListen>,
    /// Worker threads of the proxy service (default 1).
    #[serde(default)]
    pub threads: Option<usize>,
    /// Sites.
    pub sites: Vec<RawSite>,
    /// CIDRs whose `X-Forwarded-For` / `Forwarded` headers are believed.
    #[serde(default)]
    pub trusted_proxies: Vec<String>,
    /// Logging.
    #[serde(default)]
    pub log: RawLog,
    /// Prometheus metrics listener (absent: no metrics listener).
    #[serde(default)]
    pub metrics: Option<RawMetrics>,
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
}

// ---------------------------------------------------------------------------
// The runtime form.

/// A validated configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Listeners.
    pub listen: Vec<Listen>,
    /// Worker threads.
    pub threads: usize,
    /// Sites, in file order.
    pub sites: Vec<Site>,
    /// Index of the default site in `sites`.
    pub default_site: Option<usize>,
    /// Trusted proxy networks.
    pub trusted_proxies: Vec<Cidr>,
    /// Violation log destination.
    pub violations: LogTarget,
    /// Level of the other logs.
    pub log_level: String,
    /// Metrics listener.
    pub metrics: Option<SocketAddr>,
    /// Extra bot database.
    pub bots: Option<PathBuf>,
    /// Replace rather than extend the built-in bot database.
    pub bots_replace: bool,
    /// Clients tracked for rate limits.
    pub max_clients: usize,
    /// Shutdown grace period.
    pub grace_period: Duration,
}

/// A listener.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listen {
    /// Address.
    pub address: SocketAddr,
    /// Certificate and key, for HTTPS.
    pub tls: Option<(PathBuf, PathBuf)>,
}

/// Where violation records go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogTarget {
    /// Standard output.
    Stdout,
    /// A file, appended to.
    File(PathBuf),
}

/// An origin.
#[derive(Debug, Clone, PartialEq)]
pub struct Upstream {
    /// `host:port` as written (resolved when connecting).
    pub address: String,
    /// Connect with TLS.
    pub tls: bool,
    /// SNI.
    pub sni: String,
    /// Connect timeout.
    pub connect_timeout: Duration,
    /// Read timeout.
    pub read_timeout: Duration,
}

/// A site.
#[derive(Debug, Clone, PartialEq)]
pub struct Site {
    /// Name for logs and metrics.
    pub name: String,
    /// Lower-case host names.
    pub hosts: Vec<String>,
    /// The origin.
    pub upstream: Upstream,
    /// robots.txt path.
    pub robots: Option<PathBuf>,
    /// humans.txt path.
    pub humans: Option<PathBuf>,
    /// The policy.
    pub policy: PolicyConfig,
}

/// What to do with a request that breaks robots.txt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Answer `status` with `body` (default 403).
    Block {
        /// Status code.
        status: u16,
        /// Response body (when no `file`).
        body: String,
        /// A file to answer with instead of `body`, and its Content-Type.
        file: Option<(PathBuf, String)>,
    },
    /// Serve a configured file instead of the page.
    Alternate {
        /// Status code.
        status: u16,
        /// The file (only files named in the config can be served).
        file: PathBuf,
        /// Its Content-Type.
        content_type: String,
    },
    /// Redirect.
    Redirect {
        /// Status code (default 302).
        status: u16,
        /// Location.
        location: String,
    },
    /// Proxy the request and add `X-Robots-Tag: value` to the response.
    Noindex {
        /// Header value.
        value: String,
    },
    /// Proxy the request; only log the violation.
    Log,
}

impl Action {
    /// `block`, `alternate`, `redirect`, `noindex` or `log`.
    pub fn name(&self) -> &'static str {
        match self {
            Action::Block { .. } => "block",
            Action::Alternate { .. } => "alternate",
            Action::Redirect { .. } => "redirect",
            Action::Noindex { .. } => "noindex",
            Action::Log => "log",
        }
    }

    /// Whether the request still goes to the upstream.
    pub fn proxies(&self) -> bool {
        matches!(self, Action::Noindex { .. } | Action::Log)
    }
}

/// The default body of a `block` answer.
pub const DEFAULT_BLOCK_BODY: &str = "Forbidden: this site's robots.txt disallows this URL for your crawler.\n";
/// The default `X-Robots-Tag` of `noindex`.
pub const DEFAULT_NOINDEX: &str = "noindex, nofollow";

/// A site's validated policy.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyConfig {
    /// The default action.
    pub default: Action,
    /// Overrides by category.
    pub categories: Vec<(Category, Action)>,
    /// Overrides by lower-case bot name.
    pub bots: Vec<(String, Action)>,
    /// Hold `ai-user` fetchers to robots.txt.
    pub enforce_ai_user: bool,
    /// Enforce Crawl-delay and Request-rate.
    pub rate_limit: bool,
    /// Enforce Visit-time.
    pub visit_time: bool,
}

impl Default for PolicyConfig {
    fn default() -> Self {
        PolicyConfig {
            default: Action::Block { status: 403, body: DEFAULT_BLOCK_BODY.into(), file: None },
            categories: Vec::new(),
            bots: Vec::new(),
            enforce_ai_user: false,
            rate_limit: true,
            visit_time: true,
        }
    }
}

/// An IPv4 or IPv6 network.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    addr: IpAddr,
    prefix: u8,
}

impl Cidr {
    /// Parse `10.0.0.0/8`, `::1/128` or a bare address (a /32 or /128).
    pub fn parse(s: &str) -> Option<Cidr> {
        let (a, p) = match s.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (s, None),
        };
        let addr: IpAddr = a.trim().parse().ok()?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match p {
            Some(p) => p.trim().parse::<u8>().ok().filter(|&p| p <= max)?,
            None => max,
        };
        Some(Cidr { addr, prefix })
    }

    /// Whether `ip` lies in the network (IPv4-mapped IPv6 addresses count as IPv4).
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            v4 => v4,
        };
        match (self.addr, ip) {
            (IpAddr::V4(n), IpAddr::V4(a)) => {
                let mask = if self.prefix == 0 { 0 } else { u32::MAX << (32 - u32::from(self.prefix)) };
                u32::from(n) & mask == u32::from(a) & mask
            }
            (IpAddr::V6(n), IpAddr::V6(a)) => {
                let mask = if self.prefix == 0 { 0 } else { u128::MAX << (128 - u32::from(self.prefix)) };
                u128::from(n) & mask == u128::from(a) & mask
            }
            _ => false,
        }
    }
}

// ---------------------------------------------------------------------------
// Validation.

fn no_crlf(field: &str, value: &str, errors: &mut Vec<ConfigError>) {
    // Header values and bodies must not smuggle in headers.
    if value.contains(['\r', '\n', '\0']) {
        errors.push(ConfigError::new(field, "must not contain CR, LF or NUL"));
    }
}

fn header_value(field: &str, value: &str, errors: &mut Vec<ConfigError>) {
    no_crlf(field, value, errors);
    if value.bytes().any(|b| b < 0x20 && b != b'\t' || b == 0x7f) {
        errors.push(ConfigError::new(field, "must be a valid HTTP header value (no control characters)"));
    }
}

fn seconds(field: &str, v: Option<f64>, default: f64, errors: &mut Vec<ConfigError>) -> Duration {
    let v = v.unwrap_or(default);
    if !(v.is_finite() && v > 0.0 && v <= 86_400.0) {
        errors.push(ConfigError::new(field, format!("must be a number of seconds between 0 and 86400, not {v}")));
        return Duration::from_secs_f64(default);
    }
    Duration::from_secs_f64(v)
}

fn socket_addr(field: &str, s: &str, errors: &mut Vec<ConfigError>) -> Option<SocketAddr> {
    match s.parse::<SocketAddr>() {
        Ok(a) => Some(a),
        Err(_) => {
            // Allow `localhost:8080` and other names that resolve locally.
            match s.to_socket_addrs().ok().and_then(|mut a| a.next()) {
                Some(a) if s.contains(':') => Some(a),
                _ => {
                    errors.push(ConfigError::new(field, format!("`{s}` is not an address of the form host:port")));
                    None
                }
            }
        }
    }
}

fn action(field: &str, raw: &RawAction, errors: &mut Vec<ConfigError>) -> Option<Action> {
    let name = raw.action.as_deref().unwrap_or("block");
    let status = |default: u16, errors: &mut Vec<ConfigError>| -> u16 {
        match raw.status {
            Some(s) if (200..=599).contains(&s) => s,
            Some(s) => {
                errors
                    .push(ConfigError::new(format!("{field}.status"), format!("{s} is not an HTTP status (200-599)")));
                default
            }
            None => default,
        }
    };
    let unused = |keys: &[(&str, bool)], errors: &mut Vec<ConfigError>| {
        for (key, set) in keys {
            if *set {
                errors
                    .push(ConfigError::new(format!("{field}.{key}"), format!("has no meaning with `action: {name}`")));
            }
        }
    };
    let a = match name {
        "block" => {
            unused(&[("redirect", raw.redirect.is_some()), ("header", raw.header.is_some())], errors);
            if raw.body.is_some() && raw.file.is_some() {
                errors.push(ConfigError::new(field, "`action: block` takes `body` or `file`, not both"));
            }
            let body = raw.body.clone().unwrap_or_else(|| DEFAULT_BLOCK_BODY.into());
            if body.contains('\0') {
                errors.push(ConfigError::new(format!("{field}.body"), "must not contain NUL"));
            }
            let content_type = raw.content_type.clone().unwrap_or_else(|| "text/html; charset=utf-8".into());
            header_value(&format!("{field}.content_type"), &content_type, errors);
            let file = raw.file.clone().map(|f| (f, content_type));
            Action::Block { status: status(403, errors), body, file }
        }
        "alternate" => {
            unused(&[("body", raw.body.is_some()), ("header", raw.header.is_some())], errors);
            match (&raw.file, &raw.redirect) {
                (Some(file), None) => {
                    let content_type = raw.content_type.clone().unwrap_or_else(|| "text/html; charset=utf-8".into());
                    header_value(&format!("{field}.content_type"), &content_type, errors);
                    Action::Alternate { status: status(200, errors), file: file.clone(), content_type }
                }
                (None, Some(location)) => {
                    header_value(&format!("{field}.redirect"), location, errors);
                    let s = status(302, errors);
                    if !(300..400).contains(&s) {
                        errors.push(ConfigError::new(format!("{field}.status"), "a redirect needs a 3xx status"));
                    }
                    Action::Redirect { status: s, location: location.clone() }
                }
                _ => {
                    errors
                        .push(ConfigError::new(field, "`action: alternate` needs exactly one of `file` or `redirect`"));
                    return None;
                }
            }
        }
        "noindex" => {
            unused(
                &[
                    ("file", raw.file.is_some()),
                    ("redirect", raw.redirect.is_some()),
                    ("body", raw.body.is_some()),
                    ("status", raw.status.is_some()),
                ],
                errors,
            );
            let value = raw.header.clone().unwrap_or_else(|| DEFAULT_NOINDEX.into());
            header_value(&format!("{field}.header"), &value, errors);
            Action::Noindex { value }
        }
        "log" => {
            unused(
                &[
                    ("file", raw.file.is_some()),
                    ("redirect", raw.redirect.is_some()),
                    ("body", raw.body.is_some()),
                    ("status", raw.status.is_some()),
                    ("header", raw.header.is_some()),
                ],
                errors,
            );
            Action::Log
        }
        other => {
            errors.push(ConfigError::new(
                format!("{field}.action"),
                format!("`{other}` is not one of block, alternate, noindex, log"),
            ));
            return None;
        }
    };
    Some(a)
}

impl RawConfig {
    /// Check everything and build the runtime form.
    ///
    /// # Errors
    /// Every problem found, each naming its field.
    pub fn validate(self) -> Result<Config, Vec<ConfigError>> {
        let mut errors = Vec::new();
        if self.listen.is_empty() {
            errors.push(ConfigError::new("listen", "needs at least one address"));
        }
        let mut listen = Vec::new();
        for (i, l) in self.listen.iter().enumerate() {
            let field = format!("listen[{i}]");
            let (address, tls) = match l {
                RawListen::Plain(a) => (a.as_str(), None),
                RawListen::Full { address, tls } => {
                    (address.as_str(), tls.as_ref().map(|t| (t.cert.clone(), t.key.clone())))
                }
            };
            if let Some(address) = socket_addr(&field, address, &mut errors) {
                if listen.iter().any(|l: &Listen| l.address == address) {
                    errors.push(ConfigError::new(&field, format!("{address} is listed twice")));
                }
                listen.push(Listen { address, tls });
            }
        }
        let threads = self.threads.unwrap_or(1);
        if threads == 0 || threads > 1024 {
            errors.push(ConfigError::new("threads", format!("must be between 1 and 1024, not {threads}")));
        }
        if self.sites.is_empty() {
            errors.push(ConfigError::new("sites", "needs at least one site"));
        }
        let mut sites = Vec::new();
        let mut default_site = None;
        let mut seen_hosts: BTreeMap<String, usize> = BTreeMap::new();
        for (i, s) in self.sites.iter().enumerate() {
            let field = format!("sites[{i}]");
            if s.hosts.is_empty() && !s.default {
                errors.push(ConfigError::new(
                    format!("{field}.hosts"),
                    "a site that is not the default needs at least one host",
                ));
            }
            let mut hosts = Vec::new();
            for h in &s.hosts {
                let h = h.trim().to_ascii_lowercase();
                if h.is_empty() || h.contains(['/', ' ', '\r', '\n']) {
                    errors.push(ConfigError::new(format!("{field}.hosts"), format!("`{h}` is not a host name")));
                    continue;
                }
                if let Some(other) = seen_hosts.insert(h.clone(), i) {
                    errors.push(ConfigError::new(
                        format!("{field}.hosts"),
                        format!("`{h}` is also a host of sites[{other}]"),
                    ));
                }
                hosts.push(h);
            }
            if s.default {
                if let Some(d) = default_site {
                    errors.push(ConfigError::new(
                        format!("{field}.default"),
                        format!("sites[{d}] is already the default"),
                    ));
                }
                default_site = Some(i);
            }
            let upstream = match &s.upstream {
                RawUpstream::Plain(a) => RawUpstreamFull {
                    address: a.clone(),
                    tls: false,
                    sni: None,
                    connect_timeout: None,
                    read_timeout: None,
                },
                RawUpstream::Full(f) => f.clone(),
            };
            let ufield = format!("{field}.upstream");
            let host_part = upstream.address.rsplit_once(':').map(|(h, _)| h.trim_matches(['[', ']'])).unwrap_or("");
            let port_ok = upstream.address.rsplit_once(':').is_some_and(|(_, p)| p.parse::<u16>().is_ok_and(|p| p > 0));
            if host_part.is_empty() || !port_ok {
                errors.push(ConfigError::new(
                    &ufield,
                    format!("`{}` is not an address of the form host:port", upstream.address),
                ));
            }
            let sni = upstream.sni.clone().unwrap_or_else(|| host_part.to_owned());
            header_value(&format!("{ufield}.sni"), &sni, &mut errors);
            let connect_timeout =
                seconds(&format!("{ufield}.connect_timeout"), upstream.connect_timeout, 5.0, &mut errors);
            let read_timeout = seconds(&format!("{ufield}.read_timeout"), upstream.read_timeout, 60.0, &mut errors);
            let policy = self.policy(&field, &s.policy, &mut errors);
            let name = s.name.clone().or_else(|| hosts.first().cloned()).unwrap_or_else(|| format!("site{i}"));
            no_crlf(&format!("{field}.name"), &name, &mut errors);
            sites.push(Site {
                name,
                hosts,
                upstream: Upstream {
                    address: upstream.address.clone(),
                    tls: upstream.tls,
                    sni,
                    connect_timeout,
                    read_timeout,
                },
                robots: s.robots.clone(),
                humans: s.humans.clone(),
                policy,
            });
        }
        let mut trusted_proxies = Vec::new();
        for (i, c) in self.trusted_proxies.iter().enumerate() {
            match Cidr::parse(c) {
                Some(c) => trusted_proxies.push(c),
                None => errors.push(ConfigError::new(
                    format!("trusted_proxies[{i}]"),
                    format!("`{c}` is not a CIDR such as 10.0.0.0/8 or ::1/128"),
                )),
            }
        }
        let violations = match self.log.violations.trim() {
            "" => {
                errors.push(ConfigError::new("log.violations", "must be `stdout` or a file path"));
                LogTarget::Stdout
            }
            "stdout" | "-" => LogTarget::Stdout,
            path => LogTarget::File(PathBuf::from(path)),
        };
        if !["error", "warn", "info", "debug", "trace"].contains(&self.log.level.as_str()) {
            errors.push(ConfigError::new(
                "log.level",
                format!("`{}` is not one of error, warn, info, debug, trace", self.log.level),
            ));
        }
        let metrics = self.metrics.as_ref().and_then(|m| socket_addr("metrics.listen", &m.listen, &mut errors));
        if let Some(m) = metrics {
            if listen.iter().any(|l| l.address == m) {
                errors.push(ConfigError::new("metrics.listen", format!("{m} is also a proxy listener")));
            }
        }
        if self.limits.max_clients == 0 {
            errors.push(ConfigError::new("limits.max_clients", "must be at least 1"));
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        Ok(Config {
            listen,
            threads,
            sites,
            default_site,
            trusted_proxies,
            violations,
            log_level: self.log.level,
            metrics,
            bots: self.bots,
            bots_replace: self.bots_replace,
            max_clients: self.limits.max_clients,
            grace_period: Duration::from_secs(self.grace_period.unwrap_or(5)),
        })
    }

    fn policy(&self, site_field: &str, raw: &RawPolicy, errors: &mut Vec<ConfigError>) -> PolicyConfig {
        let field = format!("{site_field}.policy");
        let default = action(&field, &raw.default, errors).unwrap_or_else(|| PolicyConfig::default().default);
        let mut categories = Vec::new();
        for (name, a) in &raw.categories {
            let f = format!("{field}.categories.{name}");
            match Category::from_name(name) {
                Some(c) => {
                    if let Some(a) = action(&f, a, errors) {
                        categories.push((c, a));
                    }
                }
                None => errors.push(ConfigError::new(
                    f,
                    format!("`{name}` is not a category ({})", Category::ALL.map(|c| c.as_str()).join(", ")),
                )),
            }
        }
        let mut bots = Vec::new();
        for (name, a) in &raw.bots {
            if let Some(a) = action(&format!("{field}.bots.{name}"), a, errors) {
                bots.push((name.to_ascii_lowercase(), a));
            }
        }
        PolicyConfig {
            default,
            categories,
            bots,
            enforce_ai_user: raw.enforce_ai_user,
            rate_limit: raw.rate_limit.unwrap_or(true),
            visit_time: raw.visit_time.unwrap_or(true),
        }
    }
}

impl Config {
    /// The site for a `Host` header value (port and case ignored), else the default.
    pub fn site_for_host(&self, host: &str) -> Option<usize> {
        let host = strip_port(host);
        self.sites.iter().position(|s| s.hosts.iter().any(|h| h.eq_ignore_ascii_case(host))).or(self.default_site)
    }
}

/// `example.com:8080` -> `example.com`; `[::1]:80` -> `::1`.
pub fn strip_port(host: &str) -> &str {
    let host = host.trim();
    if let Some(rest) = host.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    match host.rsplit_once(':') {
        Some((h, p)) if !h.contains(':') && p.bytes().all(|b| b.is_ascii_digit()) => h,
        _ => host,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The smallest working file, as shipped to operators.
    const MINIMAL: &str = include_str!("../examples/configs/minimal.yaml");

    #[test]
    fn the_minimal_file_from_the_readme_is_valid() {
        let c = parse(MINIMAL).unwrap();
        assert_eq!(c.listen[0].address, "127.0.0.1:8080".parse().unwrap());
        assert_eq!(
            c.sites[0].policy.default,
            Action::Block { status: 403, body: DEFAULT_BLOCK_BODY.into(), file: None }
        );
        assert_eq!(c.violations, LogTarget::File("violations.jsonl".into()));
        assert_eq!(c.site_for_host("LOCALHOST:8080"), Some(0));
        assert_eq!(c.site_for_host("unknown.example"), Some(0), "default site");
        assert!(!c.sites[0].policy.enforce_ai_user);
    }

    #[test]
    fn unknown_keys_are_errors_with_a_line() {
        let e = parse(&MINIMAL.replace("threads: 1", "threads: 1\nthreds: 2")).unwrap_err();
        assert_eq!(e.len(), 1);
        assert!(e[0].reason.contains("threds"), "{e:?}");
        // `threds` is the file's third line.
        assert_eq!(e[0].line, Some(3));
    }

    #[test]
    fn every_problem_is_reported_at_once() {
        let text = MINIMAL
            .replace("\"127.0.0.1:8000\"", "\"nowhere\"")
            .replace("action: block", "action: explode")
            .replace("threads: 1", "threads: 0\ntrusted_proxies: [\"10.0.0.0/33\"]");
        let e = parse(&text).unwrap_err();
        let fields: Vec<&str> = e.iter().map(|e| e.field.as_str()).collect();
        assert!(fields.contains(&"sites[0].upstream"), "{fields:?}");
        assert!(fields.contains(&"sites[0].policy.action"), "{fields:?}");
        assert!(fields.contains(&"threads"), "{fields:?}");
        assert!(fields.contains(&"trusted_proxies[0]"), "{fields:?}");
    }

    #[test]
    fn header_values_cannot_inject_headers() {
        let text = MINIMAL.replace("action: block", "action: noindex\n      header: \"noindex\\r\\nSet-Cookie: x=1\"");
        let e = parse(&text).unwrap_err();
        assert!(e.iter().any(|e| e.field == "sites[0].policy.header"), "{e:?}");
    }

    #[test]
    fn overrides_by_category_and_bot() {
        let text = MINIMAL.replace(
            "action: block        # block | alternate | noindex | log",
            "action: noindex\n      categories:\n        ai-crawler: {action: block, status: 451}\n      bots:\n        Googlebot: {action: log}",
        );
        let c = parse(&text).unwrap();
        let p = &c.sites[0].policy;
        assert_eq!(p.default, Action::Noindex { value: DEFAULT_NOINDEX.into() });
        assert_eq!(
            p.categories,
            vec![(Category::AiCrawler, Action::Block { status: 451, body: DEFAULT_BLOCK_BODY.into(), file: None })]
        );
        assert_eq!(p.bots, vec![("googlebot".into(), Action::Log)]);
    }

    #[test]
    fn cidrs() {
        let c = Cidr::parse("10.0.0.0/8").unwrap();
        assert!(c.contains("10.1.2.3".parse().unwrap()));
        assert!(!c.contains("11.0.0.1".parse().unwrap()));
        assert!(c.contains("::ffff:10.0.0.1".parse().unwrap()));
        assert!(Cidr::parse("::1").unwrap().contains("::1".parse().unwrap()));
        assert!(Cidr::parse("0.0.0.0/0").unwrap().contains("8.8.8.8".parse().unwrap()));
        assert!(Cidr::parse("10.0.0.0/33").is_none());
        assert!(Cidr::parse("banana").is_none());
    }

    #[test]
    fn host_ports_are_stripped() {
        assert_eq!(strip_port("example.com:8080"), "example.com");
        assert_eq!(strip_port("[::1]:80"), "::1");
        assert_eq!(strip_port("::1"), "::1");
        assert_eq!(strip_port("example.com"), "example.com");
    }
}
