//! The configuration, in three layers:
//!
//! * `raw.rs`: the YAML shape ([`RawConfig`]) that serde reads;
//! * `validate/`: [`RawConfig::validate`], which checks everything and
//!   returns the runtime form or every problem at once;
//! * this file: the runtime form ([`Config`]: global [`Settings`] and one
//!   [`Site`] per entry of `sites:`).
//!
//! Paths in the file are taken relative to the working directory, as the
//! minimal example in docs/configuration.md expects (`robots: conf/robots.txt`). The core
//! reads no files and resolves no names: reading the named files and resolving
//! addresses is the loader's job (`server::snapshot`).

mod customer;
pub mod deadlines;
mod host;
mod raw;
mod validate;

use std::path::PathBuf;
use std::time::Duration;

pub use self::customer::{customer_dir, CustomerLinks};
pub use self::host::Host;
pub use self::raw::*;
pub use self::validate::{parse_duration, parse_site_file, MAX_HOSTS_PER_SITE, MAX_SITES_PER_FILE};
use crate::net::{site_host_str, Cidr, ClientHeader};
use crate::policy::PolicyConfig;
pub use crate::policy::{Traps, DEFAULT_TRAP};
use crate::target::TargetOptions;

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

/// A validated configuration: what applies to the whole process, and the sites.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Everything but the sites.
    pub settings: Settings,
    /// Sites, in file order.
    pub sites: Vec<Site>,
}

/// The settings that apply to the whole process: what a reload puts in
/// force, and what only a restart can change ([`Boot`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// What the running process was started with: a reload that changes it
    /// says so, and it holds only after a restart.
    pub boot: Boot,
    /// Host name (lower case) to index in `sites`, sorted by name; shared
    /// by the snapshots of reloads that do not move a site.
    pub hosts: std::sync::Arc<Vec<(String, usize)>>,
    /// Index of the default site in `sites`.
    pub default_site: Option<usize>,
    /// Trusted proxy networks.
    pub trusted_proxies: Vec<Cidr>,
    /// The header they write the client's address in.
    pub client_header: ClientHeader,
    /// The header they write the client's JA4 fingerprint in, in lower
    /// case (issue #67); `None`: no edge's fingerprint is read.
    pub ja4_header: Option<String>,
    /// The header each fact of an edge's original request is read from.
    pub auth_headers: crate::net::edge::EdgeHeaders,
    /// Extra bot database.
    pub bots: Option<PathBuf>,
    /// Replace rather than extend the built-in bot database.
    pub bots_replace: bool,
    /// A directory of IP range feeds replacing the embedded ones of the same name.
    pub verify_feeds: Option<PathBuf>,
    /// A directory of site files (`sites_dir`), each read and checked on
    /// its own by the loader ([`parse_site_file`]).
    pub sites_dir: Option<PathBuf>,
    /// Where a site that names no robots.txt or humans.txt finds them.
    pub site_template: SiteTemplate,
    /// Which links robotgate follows in a customer's directory
    /// (`customer_links`, [`customer_dir`]).
    pub customer_links: CustomerLinks,
    /// `limits.ipv6_prefix`, which every site's policy carries.
    pub ipv6_prefix: u8,
}

/// `site_template:`, validated: path patterns for the robots.txt and
/// humans.txt of a site that names none, with `{host}` (its first host
/// name) and `{name}` (its name) in them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SiteTemplate {
    /// The robots.txt pattern.
    pub robots: Option<String>,
    /// The humans.txt pattern.
    pub humans: Option<String>,
}

impl SiteTemplate {
    /// `pattern` for a site named `name` whose first host is `host` (its
    /// name again when it has none).
    pub fn path(pattern: &str, name: &str, host: Option<&str>) -> PathBuf {
        PathBuf::from(pattern.replace("{host}", host.unwrap_or(name)).replace("{name}", name))
    }
}

/// Which of a site's files came from `site_template`: such a file that
/// does not exist is no file (`/robots.txt` passes through, nothing is
/// enforced) until it is written, rather than an error.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FromTemplate {
    /// `robots` is the template's.
    pub robots: bool,
    /// `humans` is the template's.
    pub humans: bool,
}

/// Declares [`Boot`] and, from the same list, what a change of each field
/// is called in the config: a field added here is restart-only by its type.
macro_rules! boot {
    ($($(#[doc = $doc:literal])* $field:ident: $ty:ty => $key:literal,)*) => {
        /// The settings a running process cannot change: listeners, threads,
        /// the logs and the stores it opened, the resolver it set up.
        #[derive(Debug, Clone, PartialEq)]
        pub struct Boot {
            $($(#[doc = $doc])* pub $field: $ty,)*
        }

        impl Boot {
            /// The config keys whose values differ in `new`: what a reload
            /// to `new` cannot put in force.
            pub fn changes(&self, new: &Boot) -> Vec<&'static str> {
                let mut out = Vec::new();
                $(if self.$field != new.$field && !out.contains(&$key) {
                    out.push($key);
                })*
                out
            }
        }
    };
}

boot! {
    /// Listeners.
    listen: Vec<Listen> => "listen",
    /// Worker threads.
    threads: usize => "threads",
    /// Violation log destination.
    violations: LogTarget => "log.violations",
    /// How the violation log aggregates and rotates.
    violation_log: LogOptions => "log.aggregate_window, aggregate_max_keys, max_size, keep",
    /// Level of the other logs.
    log_level: String => "log.level",
    /// Metrics listener, `host:port` (resolved by the loader).
    metrics: Option<String> => "metrics.listen",
    /// The metrics listener also serves the status page.
    status_page: bool => "metrics.status_page",
    /// Sites with metric series of their own; the rest are `site="_other"`.
    metrics_per_site: usize => "metrics.per_site_limit",
    /// Forward-auth listeners, `host:port` (empty: none).
    auth: Vec<String> => "auth.listen",
    /// SPOE agent listeners for HAProxy, `host:port` (empty: none).
    spoe: Vec<String> => "spoe.listen",
    /// Envoy ext_authz gRPC listeners, `host:port` (empty: none).
    ext_authz: Vec<String> => "ext_authz.listen",
    /// The deadline of each edge that asks robotgate ([`deadlines`]).
    edge_timeouts: deadlines::EdgeTimeouts => "auth.edge_timeout_ms, spoe.edge_timeout_ms, ext_authz.edge_timeout_ms",
    /// Clients tracked for rate limits.
    max_clients: usize => "limits.max_clients",
    /// The longest a client may take to send a whole request head
    /// (`limits.request_head_timeout`; see [`crate::deadline`]).
    request_head_timeout: Duration => "limits.request_head_timeout, keepalive_timeout",
    /// The longest a connection may sit idle between requests
    /// (`limits.keepalive_timeout`); whole seconds, as Pingora counts them.
    keepalive_timeout: Duration => "limits.request_head_timeout, keepalive_timeout",
    /// Connections open at once on the proxy's listeners, and on the auth
    /// listener's (`limits.max_connections`).
    max_connections: usize => "limits.max_connections, metrics.max_connections",
    /// Connections open at once on the metrics listener (`metrics.max_connections`).
    metrics_max_connections: usize => "limits.max_connections, metrics.max_connections",
    /// Shutdown grace period.
    grace_period: Duration => "grace_period",
    /// The resolver for forward-confirmed reverse DNS.
    dns: DnsSettings => "verify.dns",
    /// Web Bot Auth and feed refresh settings.
    verify: Verify => "verify.refresh, feed_urls, allow_private_directories",
    /// State shared with other instances, when configured.
    shared_state: Option<SharedState> => "state",
    /// The directory of robotgate's own state files (`state_dir`; see
    /// [`crate::load::traps::state_path`]); none: the default place.
    state_dir: Option<PathBuf> => "state_dir",
}

/// `state:`, validated: a Redis or Valkey server shared by instances.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedState {
    /// The server's URL (`redis://` or `rediss://`), password included.
    pub url: String,
    /// Prefix of every key and of the event channel.
    pub prefix: String,
    /// The longest a request waits on the store.
    pub timeout: Duration,
}

impl SharedState {
    /// The URL with any password replaced by `***`, for logs and messages.
    pub fn redacted_url(&self) -> String {
        let Some((scheme, rest)) = self.url.split_once("://") else { return self.url.clone() };
        let authority = rest.split('/').next().unwrap_or(rest);
        match authority.rsplit_once('@') {
            Some((userinfo, _)) if userinfo.contains(':') => {
                let user = userinfo.split(':').next().unwrap_or("");
                format!("{scheme}://{user}:***@{}", &rest[userinfo.len() + 1..])
            }
            _ => self.url.clone(),
        }
    }
}

/// The default `metrics.per_site_limit`: a hundred sites' series (each a
/// few dozen lines) keep a scrape in the tens of kilobytes.
pub const DEFAULT_METRICS_PER_SITE: usize = 100;

/// The `site` label of the sites past `metrics.per_site_limit`.
pub const OTHER_SITES: &str = "_other";

/// The default `state.timeout_ms`.
pub const DEFAULT_STATE_TIMEOUT_MS: u64 = 50;

/// The default `limits.request_head_timeout`: Apache's `mod_reqtimeout`
/// allows a head 20 s (`header=20-40`), nginx 60 s (`client_header_timeout`).
pub const DEFAULT_REQUEST_HEAD_TIMEOUT: Duration = Duration::from_secs(20);

/// The default `limits.keepalive_timeout`: what robotgate always used
/// (nginx's `keepalive_timeout` is 75 s, Apache's `KeepAliveTimeout` 5 s).
pub const DEFAULT_KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(60);

/// `verify:`, validated (Web Bot Auth).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Verify {
    /// Web Bot Auth directories may live on private, loopback or link-local
    /// addresses and be fetched over plain http (tests only).
    pub allow_private_directories: bool,
    /// Fetch the feeds this often (default 24 hours; `None`: `off`), into
    /// `verify.feeds` or robotgate's own directory ([`crate::load::feeds_dir`]).
    pub refresh: Option<Duration>,
    /// Feed URLs in place of the operators' (name -> URL).
    pub feed_urls: Vec<(String, String)>,
}

/// The resolver for forward-confirmed reverse DNS (`verify.dns`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DnsSettings {
    /// Name servers, asked over UDP (TCP when an answer is truncated); empty:
    /// the system's resolver configuration.
    pub nameservers: Vec<std::net::SocketAddr>,
    /// The bound on one whole check (PTR and forward lookups together).
    pub timeout: Duration,
}

/// The default `verify.refresh`: Google regenerates its lists daily.
pub const DEFAULT_FEED_REFRESH: Duration = Duration::from_secs(24 * 3600);

/// The default `verify.dns.timeout_ms`.
pub const DEFAULT_DNS_TIMEOUT_MS: u64 = 500;

impl Default for DnsSettings {
    fn default() -> Self {
        DnsSettings { nameservers: Vec::new(), timeout: Duration::from_millis(DEFAULT_DNS_TIMEOUT_MS) }
    }
}

/// The answer to a request whose host no site has (421 Misdirected Request,
/// RFC 9110 15.5.20), the same from every host.
pub const NO_SITE_STATUS: u16 = 421;
/// Its body.
pub const NO_SITE_BODY: &str = "No site is configured for this host.\n";

impl Settings {
    /// The index of the site for a `Host` header value, read once by
    /// [`site_host`](crate::net::site_host) (port, case and one trailing dot ignored), else the
    /// default site; `None` when no site has it and none is the default.
    ///
    /// A value that is no host name at all (`x@y`, `a{b}`, non-ASCII: what
    /// an edge such as nginx lets through) matches no named site and goes to
    /// the default site like any other host no site claims: every host
    /// decides such a request, or answers 421 when no site is the default
    /// (issue 52: nginx accepted these and the module passed them
    /// undecided). A linear scan: sites are few, and it allocates nothing.
    pub fn site_for_host(&self, host: &str) -> Option<usize> {
        let Some(host) = site_host_str(host) else { return self.default_site };
        // `hosts` is sorted and lower case: a binary search, lowering `host`
        // as it compares (thousands of sites from `sites_dir`).
        let lowered = |h: &str| h.bytes().cmp(host.bytes().map(|b| b.to_ascii_lowercase()));
        match self.hosts.binary_search_by(|(h, _)| lowered(h)) {
            Ok(i) => Some(self.hosts[i].1),
            Err(_) => self.default_site,
        }
    }

    /// Route to `sites`: their hosts (sorted) and their default site, as
    /// the loader merges the config's sites with those of `sites_dir`. The
    /// caller has made sure no host is two sites' and at most one is the default.
    pub fn route<S: std::borrow::Borrow<Site>>(&mut self, sites: &[S]) {
        let mut hosts: Vec<(String, usize)> =
            sites.iter().enumerate().flat_map(|(i, s)| s.borrow().hosts.iter().map(move |h| (h.clone(), i))).collect();
        hosts.sort_unstable();
        // The same table as before (a reload that moved no site): kept shared.
        if *self.hosts != hosts {
            self.hosts = std::sync::Arc::new(hosts);
        }
        self.default_site = sites.iter().position(|s| s.borrow().default);
    }
}

impl Config {
    /// The site for a `Host` header value; see [`Settings::site_for_host`].
    pub fn site_for_host(&self, host: &str) -> Option<usize> {
        self.settings.site_for_host(host)
    }
}

/// A listener.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listen {
    /// `host:port` (a literal address, or a name the loader resolves).
    pub address: String,
    /// HTTPS (with the sites' certificates, and this listener's own if set).
    pub https: bool,
    /// The listener's own certificate and key.
    pub tls: Option<(PathBuf, PathBuf)>,
    /// Offer HTTP/2 by ALPN (HTTPS listeners).
    pub http2: bool,
    /// Accept HTTP/2 with prior knowledge (plain listeners).
    pub h2c: bool,
    /// Every connection starts with a PROXY protocol header (v1 or v2), from
    /// a peer in `trusted_proxies`, whose source address is the client's.
    pub proxy_protocol: bool,
}

/// Where violation records go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogTarget {
    /// Standard output.
    Stdout,
    /// A file, appended to.
    File(PathBuf),
}

/// How the violation log aggregates repeats and rotates its file (`log:`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogOptions {
    /// Repeats of one violation within this time become one record (zero: off).
    pub aggregate_window: Duration,
    /// Keys aggregated at once; beyond, records are written unaggregated.
    pub aggregate_max_keys: usize,
    /// Rotate the file before it grows past this many bytes.
    pub max_size: Option<u64>,
    /// Rotated files kept.
    pub keep: u32,
}

impl Default for LogOptions {
    fn default() -> Self {
        LogOptions { aggregate_window: Duration::from_secs(10), aggregate_max_keys: 65_536, max_size: None, keep: 5 }
    }
}

/// An origin.
#[derive(Debug, Clone, PartialEq)]
pub struct Upstream {
    /// `host:port` as written (resolved by the loader).
    pub address: String,
    /// Connect with TLS.
    pub tls: bool,
    /// SNI.
    pub sni: String,
    /// Connect timeout.
    pub connect_timeout: Duration,
    /// Read timeout.
    pub read_timeout: Duration,
    /// Speak HTTP/2 to the origin.
    pub h2: bool,
}

/// A site.
#[derive(Debug, Clone, PartialEq)]
pub struct Site {
    /// Name for logs and metrics.
    pub name: String,
    /// Lower-case host names.
    pub hosts: Vec<String>,
    /// The origin; `None` where the host forwards itself (nginx).
    pub upstream: Option<Upstream>,
    /// robots.txt path.
    pub robots: Option<PathBuf>,
    /// humans.txt path.
    pub humans: Option<PathBuf>,
    /// The policy: one shared by the sites of a file whose policies are
    /// alike (nearly all, as a hosting provider's are: 240 bytes and a few
    /// strings fewer per site, issue 55).
    pub policy: std::sync::Arc<PolicyConfig>,
    /// How request-targets are read.
    pub target: TargetOptions,
    /// Trap paths, when set (boxed: rarely set, 144 bytes each site would
    /// carry inline).
    pub traps: Option<Box<Traps>>,
    /// What robotgate adds to the site's robots.txt.
    pub managed: Managed,
    /// The site's certificate and key, chosen by SNI on HTTPS listeners
    /// (boxed: rarely set).
    pub tls: Option<Box<(PathBuf, PathBuf)>>,
    /// Indexing rules (`X-Robots-Tag` by path and robot).
    pub indexing: crate::indexing::Indexing,
    /// The site answers requests for hosts no site has (`default: true`).
    pub default: bool,
    /// Which of `robots` and `humans` came from `site_template`.
    pub from_template: FromTemplate,
}

/// Lines robotgate adds to a site's robots.txt.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Managed {
    /// Disallow `/` to every AI-training crawler the file does not name.
    pub ai_training_disallow: bool,
    /// A `Content-Signal:` value for the `*` group.
    pub content_signal: Option<String>,
    /// A `Content-Usage:` rule for the `*` group.
    pub content_usage: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::Category;
    use crate::policy::{Action, DEFAULT_BLOCK_BODY, DEFAULT_NOINDEX};

    /// The smallest working file, as shipped to operators.
    const MINIMAL: &str = include_str!("../../examples/configs/minimal.yaml");

    #[test]
    fn the_minimal_file_from_the_readme_is_valid() {
        let c = parse(MINIMAL).unwrap();
        assert_eq!(c.settings.boot.listen[0].address, "127.0.0.1:8080");
        assert_eq!(
            c.sites[0].policy.default,
            Action::Block { status: 403, body: DEFAULT_BLOCK_BODY.into(), file: None }
        );
        assert_eq!(c.settings.boot.violations, LogTarget::File("violations.jsonl".into()));
        assert_eq!(c.site_for_host("LOCALHOST:8080"), Some(0));
        assert_eq!(c.site_for_host("unknown.example"), Some(0), "default site");
        assert_eq!(c.site_for_host("LOCALHOST.:8080"), Some(0), "one trailing dot");
        // What nginx accepts as a Host and robotgate reads as no host name:
        // the default site's, as any host no site names (issue 52).
        for odd in ["local host", "x@y", "a{b}", "x\"y", "[zz]", "a|b", "x\\y", "sh\u{e9}p.example", ""] {
            assert_eq!(c.site_for_host(odd), Some(0), "{odd:?}: the default site");
        }
        let mut no_default = c.clone();
        no_default.settings.default_site = None;
        for odd in ["local host", "x@y", "sh\u{e9}p.example", "", "unknown.example"] {
            assert_eq!(no_default.site_for_host(odd), None, "{odd:?}: no site (421)");
        }
        assert_eq!(no_default.site_for_host("localhost"), Some(0));
        assert!(!c.sites[0].policy.enforce_ai_user);
    }

    #[test]
    fn issue_53_weak_evidence_is_logged_unless_the_site_enforces_it() {
        use crate::policy::WeakEvidence;
        assert_eq!(parse(MINIMAL).unwrap().sites[0].policy.weak_evidence, WeakEvidence::Log);
        let with = |value: &str| MINIMAL.replace("      action: block", &format!("      weak_evidence: {value}"));
        assert_eq!(parse(&with("enforce")).unwrap().sites[0].policy.weak_evidence, WeakEvidence::Enforce);
        assert_eq!(parse(&with("log")).unwrap().sites[0].policy.weak_evidence, WeakEvidence::Log);
        let e = parse(&with("block")).unwrap_err();
        assert!(
            e.iter().any(|e| e.field.ends_with("policy.weak_evidence") && e.to_string().contains("log, enforce")),
            "{e:?}"
        );
    }

    /// Issue #67: an edge's JA4 is read from `trusted_proxies`, or from the
    /// edge asking over SPOE or ext_authz; with neither, `serve` refuses the
    /// key, and the nginx module says it ignores it (the Envoy module reads
    /// the one Envoy writes).
    #[test]
    fn the_ja4_header_needs_someone_to_write_it() {
        use crate::config::Host;
        let with = |top: &str| parse(&format!("{MINIMAL}ja4_header: X-Client-JA4\n{top}")).unwrap();
        let alone = with("");
        let missing = Host::Serve.missing(&alone.settings, alone.sites.iter());
        assert!(missing.iter().any(|e| e.field == "ja4_header" && e.to_string().contains("none is configured")));
        let ignored = Host::Nginx.ignored(&alone.settings, alone.sites.iter());
        assert!(ignored.iter().any(|k| k.starts_with("ja4_header:")), "{ignored:?}");
        assert_eq!(alone.settings.ja4_header.as_deref(), Some("x-client-ja4"));
        for top in [
            "trusted_proxies: [\"10.0.0.0/8\"]\n",
            "ext_authz: { listen: [\"127.0.0.1:9191\"] }\n",
            "spoe: { listen: [\"127.0.0.1:12345\"] }\n",
        ] {
            let c = with(top);
            let missing = Host::Serve.missing(&c.settings, c.sites.iter());
            assert!(missing.iter().all(|e| e.field != "ja4_header"), "{top}: {missing:?}");
        }
    }

    #[test]
    fn slow_client_limits() {
        let c = parse(MINIMAL).unwrap();
        assert_eq!(c.settings.boot.request_head_timeout, DEFAULT_REQUEST_HEAD_TIMEOUT);
        assert_eq!(c.settings.boot.keepalive_timeout, DEFAULT_KEEPALIVE_TIMEOUT);
        let limits = |l: &str| format!("{MINIMAL}limits: {l}\n");
        let c = parse(&limits("{ request_head_timeout: 2, keepalive_timeout: \"90s\" }")).unwrap();
        assert_eq!(c.settings.boot.request_head_timeout, Duration::from_secs(2));
        assert_eq!(c.settings.boot.keepalive_timeout, Duration::from_secs(90));
        let bad = parse(&limits("{ request_head_timeout: 0, keepalive_timeout: \"2h\" }")).unwrap_err();
        let fields: Vec<&str> = bad.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["limits.request_head_timeout", "limits.keepalive_timeout"]);
        assert!(parse(&limits("{ request_head_timeout: \"soon\" }")).is_err());
    }

    #[test]
    fn listeners_https_http2_h2c_and_state() {
        let listen = |l: &str| MINIMAL.replace("listen: [\"127.0.0.1:8080\"]", l);
        let c = parse(&listen(
            "listen:\n  - { address: \"127.0.0.1:8443\", tls: { cert: c.pem, key: k.pem } }\n  - { address: \"127.0.0.1:8080\", h2c: true }",
        ))
        .unwrap();
        let (tls, plain) = (&c.settings.boot.listen[0], &c.settings.boot.listen[1]);
        assert!(tls.https && tls.http2 && !tls.h2c, "HTTP/2 by ALPN by default");
        assert!(!plain.https && plain.h2c && !plain.http2);
        let c = parse(&listen(
            "listen:\n  - { address: \"127.0.0.1:8443\", tls: { cert: c.pem, key: k.pem }, http2: false }",
        ))
        .unwrap();
        assert!(!c.settings.boot.listen[0].http2);
        let errors =
            |l: &str| parse(&listen(l)).unwrap_err().iter().map(ToString::to_string).collect::<Vec<_>>().join("\n");
        assert!(errors("listen:\n  - { address: \"127.0.0.1:8080\", http2: true }").contains("listen[0].http2"));
        assert!(errors("listen:\n  - { address: \"127.0.0.1:8443\", tls: { cert: c.pem, key: k.pem }, h2c: true }")
            .contains("listen[0].h2c"));
        assert!(errors("listen:\n  - { address: \"127.0.0.1:8443\", tls: true }").contains("needs certificates"));
        assert!(errors("listen:\n  - { address: \"127.0.0.1:80\", h2c: true }\n  - \"127.0.0.1:81\"")
            .contains("every plain listener or none"));
        // PROXY protocol: only with trusted proxies to send it.
        let c = parse(&format!(
            "{}trusted_proxies: [\"10.0.0.0/8\"]\n",
            listen("listen:\n  - { address: \"127.0.0.1:8080\", proxy_protocol: true }\n  - \"127.0.0.1:8081\"")
        ))
        .unwrap();
        assert!(c.settings.boot.listen[0].proxy_protocol && !c.settings.boot.listen[1].proxy_protocol);
        assert!(errors("listen:\n  - { address: \"127.0.0.1:8080\", proxy_protocol: true }")
            .contains("listen[0].proxy_protocol: needs `trusted_proxies`"));
        assert!(parse(&listen("listen:\n  - { address: \"127.0.0.1:8080\", proxy_protocl: true }")).is_err());
        // A site's own certificate makes `tls: true` enough.
        let site_tls = listen("listen:\n  - { address: \"127.0.0.1:8443\", tls: true }")
            .replace("    upstream:", "    tls: { cert: s.pem, key: s.key }\n    upstream:");
        let c = parse(&site_tls).unwrap();
        assert_eq!(c.sites[0].tls, Some(Box::new(("s.pem".into(), "s.key".into()))));
        assert_eq!(c.settings.boot.listen[0].tls, None);
        // Shared state.
        let state = |s: &str| format!("{MINIMAL}state: {s}\n");
        let c = parse(&state("{ redis: \"redis://:pw@127.0.0.1:6379/0\" }")).unwrap();
        let s = c.settings.boot.shared_state.unwrap();
        assert_eq!((s.prefix.as_str(), s.timeout), ("robotgate:", Duration::from_millis(50)));
        assert_eq!(s.redacted_url(), "redis://:***@127.0.0.1:6379/0");
        let bad = parse(&state("{ redis: \"127.0.0.1:6379\", prefix: \"a b\", timeout_ms: 0 }")).unwrap_err();
        let fields: Vec<&str> = bad.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["state.redis", "state.prefix", "state.timeout_ms"]);
    }

    #[test]
    fn log_aggregation_and_rotation_keys() {
        let c = parse(MINIMAL).unwrap();
        assert_eq!(c.settings.boot.violation_log, LogOptions::default());
        let with = |extra: &str| MINIMAL.replace("log:\n", &format!("log:\n  {extra}\n"));
        let c = parse(&with("aggregate_window: 0")).unwrap();
        assert_eq!(c.settings.boot.violation_log.aggregate_window, Duration::ZERO);
        for (text, bytes) in [("1048576", 1_048_576), ("\"100MB\"", 100_000_000), ("\"512 KiB\"", 524_288)] {
            let c = parse(&with(&format!("max_size: {text}"))).unwrap();
            assert_eq!(c.settings.boot.violation_log.max_size, Some(bytes), "{text}");
        }
        for bad in ["max_size: \"10 parsecs\"", "max_size: 0", "aggregate_max_keys: 0", "aggregate_windw: 3"] {
            assert!(parse(&with(bad)).is_err(), "{bad}");
        }
        let stdout = with("max_size: 100").replace("violations: violations.jsonl", "violations: stdout");
        assert!(parse(&stdout).unwrap_err()[0].field == "log.max_size");
    }

    #[test]
    fn verify_allow_private_directories() {
        assert!(!parse(MINIMAL).unwrap().settings.boot.verify.allow_private_directories);
        let c = parse(&format!("{MINIMAL}\nverify:\n  allow_private_directories: true\n")).unwrap();
        assert!(c.settings.boot.verify.allow_private_directories);
        assert!(parse(&format!("{MINIMAL}\nverify:\n  allow_privat: true\n")).is_err());
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
    fn verify_dns_defaults_and_keys() {
        let c = parse(MINIMAL).unwrap();
        assert_eq!(c.settings.boot.dns, DnsSettings::default());
        assert!(c.settings.boot.dns.nameservers.is_empty(), "system resolver by default");
        assert_eq!(c.settings.boot.dns.timeout, Duration::from_millis(500));
        let text = format!(
            "{MINIMAL}\nverify:\n  dns:\n    nameservers: [\"127.0.0.1:5353\", \"[::1]:53\"]\n    timeout_ms: 300\n"
        );
        let c = parse(&text).unwrap();
        assert_eq!(c.settings.boot.dns.nameservers, ["127.0.0.1:5353".parse().unwrap(), "[::1]:53".parse().unwrap()]);
        assert_eq!(c.settings.boot.dns.timeout, Duration::from_millis(300));
        // Every key is optional.
        assert_eq!(parse(&format!("{MINIMAL}\nverify: {{}}\n")).unwrap().settings.boot.dns, DnsSettings::default());
        assert_eq!(
            parse(&format!("{MINIMAL}\nverify: {{dns: {{}}}}\n")).unwrap().settings.boot.dns,
            DnsSettings::default()
        );
    }

    #[test]
    fn verify_dns_problems_name_their_field() {
        let text = format!(
            "{MINIMAL}\nverify:\n  dns:\n    nameservers: [\"dns.example:53\", \"127.0.0.1\", \"127.0.0.1:0\", \"10.0.0.1:53\", \"10.0.0.1:53\"]\n    timeout_ms: 0\n"
        );
        let e = parse(&text).unwrap_err();
        let fields: Vec<&str> = e.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(
            fields,
            [
                "verify.dns.nameservers[0]",
                "verify.dns.nameservers[1]",
                "verify.dns.nameservers[2]",
                "verify.dns.nameservers[4]",
                "verify.dns.timeout_ms"
            ],
            "{e:?}"
        );
        let e = parse(&format!("{MINIMAL}\nverify:\n  dns:\n    timeout: 3\n")).unwrap_err();
        assert!(e[0].reason.contains("timeout"), "{e:?}");
        let e = parse(&format!("{MINIMAL}\nverify:\n  rdns: {{}}\n")).unwrap_err();
        assert!(e[0].reason.contains("rdns"), "{e:?}");
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
}
