//! What applies to the whole process: listeners, trusted proxies, the
//! violation log, the DNS resolver, feed refreshes and shared state.

use std::path::PathBuf;
use std::time::Duration;

use super::super::{
    ConfigError, DnsSettings, Listen, LogOptions, LogTarget, RawConfig, RawDns, RawDuration, RawLimits, RawListen,
    RawListenFull, RawListenTls, RawLog, RawSiteTemplate, RawState, RawVerify, SharedState, SiteTemplate,
    DEFAULT_DNS_TIMEOUT_MS, DEFAULT_FEED_REFRESH, DEFAULT_KEEPALIVE_TIMEOUT, DEFAULT_REQUEST_HEAD_TIMEOUT,
    DEFAULT_STATE_TIMEOUT_MS,
};
use super::fields::{duration, host_port, size};
use crate::config::deadlines::EdgeTimeouts;
use crate::net::edge::{EdgeHeaders, Fact};
use crate::net::Cidr;

/// `listen:`: each listener's address and protocols.
pub(super) fn listeners(raw: &RawConfig, errors: &mut Vec<ConfigError>) -> Vec<Listen> {
    // None is `robotgate serve`'s problem, not the file's: the nginx module
    // listens with nginx (`crate::config::host`).
    let mut listen = Vec::new();
    for (i, l) in raw.listen.iter().enumerate() {
        let field = format!("listen[{i}]");
        let (address, https, tls, http2, h2c, proxy_protocol) = match l {
            RawListen::Plain(a) => (a.as_str(), false, None, None, false, false),
            RawListen::Full(RawListenFull { address, tls, http2, h2c, proxy_protocol }) => {
                let (https, pair) = match tls {
                    None | Some(RawListenTls::On(false)) => (false, None),
                    Some(RawListenTls::On(true)) => (true, None),
                    Some(RawListenTls::Pair(t)) => (true, Some((t.cert.clone(), t.key.clone()))),
                };
                (address.as_str(), https, pair, *http2, *h2c, *proxy_protocol)
            }
        };
        if proxy_protocol && raw.trusted_proxies.is_empty() {
            errors.push(ConfigError::new(
                format!("{field}.proxy_protocol"),
                "needs `trusted_proxies`: the networks of the load balancers that send the header",
            ));
        }
        if http2.is_some() && !https {
            errors.push(ConfigError::new(
                format!("{field}.http2"),
                "is for HTTPS listeners (ALPN); a plain listener takes `h2c: true`",
            ));
        }
        if h2c && https {
            errors
                .push(ConfigError::new(format!("{field}.h2c"), "is for plain listeners; HTTPS offers HTTP/2 by ALPN"));
        }
        if https && tls.is_none() && !raw.sites.iter().any(|s| s.tls.is_some()) {
            errors.push(ConfigError::new(
                format!("{field}.tls"),
                "`true` needs certificates: give the listener `tls: {cert, key}`, or sites their own `tls:`",
            ));
        }
        if let Some(address) = host_port(&field, address, errors) {
            if listen.iter().any(|l: &Listen| l.address == address) {
                errors.push(ConfigError::new(&field, format!("{address} is listed twice")));
            }
            listen.push(Listen { address, https, tls, http2: https && http2.unwrap_or(true), h2c, proxy_protocol });
        }
    }
    let plain: Vec<&Listen> = listen.iter().filter(|l| !l.https).collect();
    if plain.iter().any(|l| l.h2c) && !plain.iter().all(|l| l.h2c) {
        errors.push(ConfigError::new(
            "listen",
            "`h2c: true` must be on every plain listener or none (one HTTP service serves them all)",
        ));
    }
    listen
}

/// `limits.request_head_timeout` and `limits.keepalive_timeout`: each from 1
/// second to an hour; the keep-alive timeout in whole seconds (Pingora's unit).
pub(super) fn connection_timeouts(raw: &RawLimits, errors: &mut Vec<ConfigError>) -> (Duration, Duration) {
    let mut bounded = |field: &str, raw: &Option<RawDuration>, default: Duration| match raw.as_ref().map(duration) {
        None => default,
        Some(Ok(d)) if d >= Duration::from_secs(1) && d <= Duration::from_secs(3600) => d,
        Some(Ok(_)) => {
            errors.push(ConfigError::new(field, "must be between 1 second and 1 hour"));
            default
        }
        Some(Err(e)) => {
            errors.push(ConfigError::new(field, e));
            default
        }
    };
    let head = bounded("limits.request_head_timeout", &raw.request_head_timeout, DEFAULT_REQUEST_HEAD_TIMEOUT);
    let keepalive = bounded("limits.keepalive_timeout", &raw.keepalive_timeout, DEFAULT_KEEPALIVE_TIMEOUT);
    (head, Duration::from_secs(keepalive.as_secs()))
}

/// `auth.listen:`: the forward-auth listeners, each `host:port`, none of
/// them a proxy or the metrics listener. An auth listener asks the edge in
/// front to name the client, so without `trusted_proxies` every request it
/// judges is its edge's: said here rather than found out in production.
pub(super) fn auth_listeners(
    raw: Option<&super::super::RawAuth>,
    listen: &[Listen],
    metrics: Option<&str>,
    errors: &mut Vec<ConfigError>,
) -> (Vec<String>, EdgeHeaders) {
    let mut headers = EdgeHeaders::default();
    let Some(raw) = raw else { return (Vec::new(), headers) };
    let h = &raw.headers;
    for (fact, name) in
        [(Fact::Target, &h.target), (Fact::Method, &h.method), (Fact::Host, &h.host), (Fact::Proto, &h.proto)]
    {
        if let Some(name) = name {
            if let Err(why) = headers.set(fact, name) {
                errors.push(ConfigError::new(format!("auth.headers.{}", fact.key()), why));
            }
        }
    }
    if raw.listen.is_empty() {
        errors.push(ConfigError::new("auth.listen", "names no address (remove `auth:` to have no auth listener)"));
    }
    let mut out: Vec<String> = Vec::new();
    for (i, a) in raw.listen.iter().enumerate() {
        let field = format!("auth.listen[{i}]");
        let Some(a) = host_port(&field, a, errors) else { continue };
        if listen.iter().any(|l| l.address == a) || metrics == Some(a.as_str()) || out.contains(&a) {
            errors.push(ConfigError::new(field, format!("{a} is also another listener")));
        } else {
            out.push(a);
        }
    }
    (out, headers)
}

/// `KEY.listen:` of an edge's own listener (`spoe`: HAProxy's SPOE agent;
/// `ext_authz`: Envoy's Check service): each `host:port`, none of them the
/// proxy's, the metrics', or one of `others` (the auth listener's, the
/// other edge's). The edge names the client in a field of its own
/// protocol, so `trusted_proxies` plays no part.
pub(super) fn edge_listeners(
    key: &str,
    raw: Option<&[String]>,
    listen: &[Listen],
    metrics: Option<&str>,
    others: &[&[String]],
    errors: &mut Vec<ConfigError>,
) -> Vec<String> {
    let Some(raw) = raw else { return Vec::new() };
    if raw.is_empty() {
        let why = format!("names no address (remove `{key}:` to have no {key} listener)");
        errors.push(ConfigError::new(format!("{key}.listen"), why));
    }
    let mut out: Vec<String> = Vec::new();
    for (i, a) in raw.iter().enumerate() {
        let field = format!("{key}.listen[{i}]");
        let Some(a) = host_port(&field, a, errors) else { continue };
        let taken = listen.iter().any(|l| l.address == a)
            || metrics == Some(a.as_str())
            || others.iter().any(|o| o.contains(&a));
        if taken || out.contains(&a) {
            errors.push(ConfigError::new(field, format!("{a} is also another listener")));
        } else {
            out.push(a);
        }
    }
    out
}

/// `auth.edge_timeout_ms`, `spoe.edge_timeout_ms`, `ext_authz.edge_timeout_ms`:
/// each edge's deadline, its shipped file's by default
/// ([`crate::config::deadlines`]).
pub(super) fn edge_timeouts(raw: &RawConfig, errors: &mut Vec<ConfigError>) -> EdgeTimeouts {
    use crate::config::deadlines::EDGE_TIMEOUT_MS;
    let defaults = EdgeTimeouts::default();
    let mut each = |key: &str, ms: Option<u64>, default: Duration| match ms {
        None => default,
        Some(ms) if EDGE_TIMEOUT_MS.contains(&ms) => Duration::from_millis(ms),
        Some(ms) => {
            let (lo, hi) = (EDGE_TIMEOUT_MS.start(), EDGE_TIMEOUT_MS.end());
            errors.push(ConfigError::new(key, format!("must be between {lo} and {hi} milliseconds, not {ms}")));
            default
        }
    };
    EdgeTimeouts {
        auth: each("auth.edge_timeout_ms", raw.auth.as_ref().and_then(|a| a.edge_timeout_ms), defaults.auth),
        spoe: each("spoe.edge_timeout_ms", raw.spoe.as_ref().and_then(|a| a.edge_timeout_ms), defaults.spoe),
        ext_authz: each(
            "ext_authz.edge_timeout_ms",
            raw.ext_authz.as_ref().and_then(|a| a.edge_timeout_ms),
            defaults.ext_authz,
        ),
    }
}

/// `trusted_proxies:`, each a CIDR.
pub(super) fn trusted_proxies(raw: &[String], errors: &mut Vec<ConfigError>) -> Vec<Cidr> {
    let mut trusted_proxies = Vec::new();
    for (i, c) in raw.iter().enumerate() {
        match Cidr::parse(c) {
            Some(c) => trusted_proxies.push(c),
            None => errors.push(ConfigError::new(
                format!("trusted_proxies[{i}]"),
                format!("`{c}` is not a CIDR such as 10.0.0.0/8 or ::1/128"),
            )),
        }
    }
    trusted_proxies
}

/// `log:` past its target: aggregation and rotation.
pub(super) fn log_options(log: &RawLog, target: &LogTarget, errors: &mut Vec<ConfigError>) -> LogOptions {
    if log.aggregate_max_keys == 0 {
        errors.push(ConfigError::new("log.aggregate_max_keys", "must be at least 1"));
    }
    if log.aggregate_window > 86_400 {
        errors.push(ConfigError::new("log.aggregate_window", "must be at most 86400 seconds"));
    }
    let max_size = log.max_size.as_ref().and_then(|s| match size(s) {
        Ok(0) => {
            errors.push(ConfigError::new("log.max_size", "must be more than 0 bytes"));
            None
        }
        Ok(n) => Some(n),
        Err(reason) => {
            errors.push(ConfigError::new("log.max_size", reason));
            None
        }
    });
    if max_size.is_some() && *target == LogTarget::Stdout {
        errors.push(ConfigError::new("log.max_size", "needs `log.violations` to be a file"));
    }
    LogOptions {
        aggregate_window: Duration::from_secs(log.aggregate_window),
        aggregate_max_keys: log.aggregate_max_keys,
        max_size,
        keep: log.keep,
    }
}

pub(super) fn dns(field: &str, raw: &RawDns, errors: &mut Vec<ConfigError>) -> DnsSettings {
    let mut nameservers = Vec::new();
    for (i, ns) in raw.nameservers.iter().enumerate() {
        match ns.trim().parse::<std::net::SocketAddr>() {
            Ok(a) if a.port() != 0 => {
                if nameservers.contains(&a) {
                    errors.push(ConfigError::new(format!("{field}.nameservers[{i}]"), format!("{a} is listed twice")));
                }
                nameservers.push(a);
            }
            _ => errors.push(ConfigError::new(
                format!("{field}.nameservers[{i}]"),
                format!("`{ns}` is not an address of the form IP:port (127.0.0.1:53, [::1]:53)"),
            )),
        }
    }
    let ms = raw.timeout_ms.unwrap_or(DEFAULT_DNS_TIMEOUT_MS);
    if !(10..=30_000).contains(&ms) {
        errors.push(ConfigError::new(
            format!("{field}.timeout_ms"),
            format!("must be between 10 and 30000 milliseconds, not {ms}"),
        ));
    }
    DnsSettings { nameservers, timeout: Duration::from_millis(ms.clamp(10, 30_000)) }
}

/// `verify.refresh` and `verify.feed_urls`: how often fresh feeds are
/// fetched, and from where. The refresh period: [`DEFAULT_FEED_REFRESH`]
/// when absent, `None` for `off`.
pub(super) fn feed_sources(raw: &RawVerify, errors: &mut Vec<ConfigError>) -> Option<Duration> {
    let refresh_every = match &raw.refresh {
        None => Some(DEFAULT_FEED_REFRESH),
        Some(RawDuration::Text(t)) if t.trim().eq_ignore_ascii_case("off") => None,
        Some(raw) => match duration(raw) {
            Ok(d) if d.as_secs() >= 1 && d.as_secs() <= 30 * 86_400 => Some(d),
            Ok(_) => {
                errors.push(ConfigError::new("verify.refresh", "must be between 1 second and 30 days, or `off`"));
                None
            }
            Err(e) => {
                errors.push(ConfigError::new("verify.refresh", format!("{e}, or `off`")));
                None
            }
        },
    };
    for (name, url) in &raw.feed_urls {
        if !(url.starts_with("https://") || url.starts_with("http://")) {
            errors.push(ConfigError::new(format!("verify.feed_urls.{name}"), format!("`{url}` is not an http(s) URL")));
        }
    }
    refresh_every
}

pub(super) fn shared_state(raw: &RawState, errors: &mut Vec<ConfigError>) -> SharedState {
    let url = raw.redis.trim().to_owned();
    // Read as both hosts' clients read it (the nginx module's own client
    // connects by it).
    if let Err(why) = crate::state::wire::Endpoint::parse(&url) {
        errors.push(ConfigError::new(
            "state.redis",
            format!("must be a URL of the form redis://host:port/db or rediss://host:port/db (a login as user:password@host): {why}"),
        ));
    }
    let prefix = raw.prefix.clone().unwrap_or_else(|| "robotgate:".to_owned());
    if prefix.len() > 64 || prefix.chars().any(|c| c.is_whitespace() || c.is_control()) {
        errors.push(ConfigError::new("state.prefix", "must be at most 64 characters, without spaces"));
    }
    let ms = raw.timeout_ms.unwrap_or(DEFAULT_STATE_TIMEOUT_MS);
    if !(1..=10_000).contains(&ms) {
        errors
            .push(ConfigError::new("state.timeout_ms", format!("must be between 1 and 10000 milliseconds, not {ms}")));
    }
    SharedState { url, prefix, timeout: Duration::from_millis(ms.clamp(1, 10_000)) }
}

/// `state_dir:`: a directory path, taken as given (relative to the working
/// directory, like every path in the file); whether it exists and can be
/// written is found out when the state is first kept, as for the log.
pub(super) fn state_dir(raw: &str, errors: &mut Vec<ConfigError>) -> Option<PathBuf> {
    let dir = raw.trim();
    if dir.is_empty() {
        errors.push(ConfigError::new(
            "state_dir",
            "must be a directory path (remove the key to keep the state beside the violation log)",
        ));
        return None;
    }
    Some(PathBuf::from(dir))
}

/// `site_template:`: each pattern a path with `{host}` or `{name}` in it,
/// and no other `{...}`.
pub(super) fn site_template(raw: Option<&RawSiteTemplate>, errors: &mut Vec<ConfigError>) -> SiteTemplate {
    let Some(raw) = raw else { return SiteTemplate::default() };
    let mut check = |key: &str, pattern: &Option<String>| {
        let p = pattern.as_deref()?;
        let field = format!("site_template.{key}");
        let rest = p.replace("{host}", "").replace("{name}", "");
        if rest.contains(['{', '}']) || rest.len() == p.len() {
            errors.push(ConfigError::new(
                field,
                format!(
                    "`{p}` must name the site by `{{host}}` (its first host) or `{{name}}`, and nothing else in braces"
                ),
            ));
            return None;
        }
        if p.contains(['\r', '\n', '\0']) {
            errors.push(ConfigError::new(field, "a path has no line breaks"));
            return None;
        }
        Some(p.to_owned())
    };
    SiteTemplate { robots: check("robots", &raw.robots), humans: check("humans", &raw.humans) }
}

#[cfg(test)]
mod tests {
    const MINIMAL: &str = include_str!("../../../examples/configs/minimal.yaml");

    #[test]
    fn state_dir_is_a_directory_path_or_absent() {
        let with = |extra: &str| crate::config::parse(&format!("{MINIMAL}{extra}"));
        assert_eq!(crate::config::parse(MINIMAL).unwrap().settings.boot.state_dir, None, "absent: the default place");
        assert_eq!(with("state_dir: ~\n").unwrap().settings.boot.state_dir, None, "null: the default place");
        let c = with("state_dir: /var/lib/robotgate\n").unwrap();
        assert_eq!(c.settings.boot.state_dir.as_deref(), Some(std::path::Path::new("/var/lib/robotgate")));
        let c = with("state_dir: \" state \"\n").unwrap();
        assert_eq!(c.settings.boot.state_dir.as_deref(), Some(std::path::Path::new("state")), "trimmed, relative");
        for empty in ["\"\"", "\"  \""] {
            let errors = with(&format!("state_dir: {empty}\n")).unwrap_err();
            assert!(
                errors.iter().any(|e| e.field == "state_dir" && e.reason.contains("directory path")),
                "{empty}: {errors:?}"
            );
        }
        assert!(with("state_dir: [a]\n").is_err(), "a list is no path");
    }

    #[test]
    fn spoe_listeners_are_addresses_of_their_own() {
        let with = |spoe: &str| {
            crate::config::parse(&format!(
                "{MINIMAL}spoe: {spoe}\nauth: {{ listen: [\"127.0.0.1:9090\"] }}\nmetrics: {{ listen: \"127.0.0.1:9102\" }}\n"
            ))
        };
        assert!(crate::config::parse(MINIMAL).unwrap().settings.boot.spoe.is_empty(), "none unless asked for");
        let c = with("{ listen: [\"127.0.0.1:12345\", \"[::1]:12345\"] }").unwrap();
        assert_eq!(c.settings.boot.spoe, ["127.0.0.1:12345", "[::1]:12345"]);
        for (spoe, why) in [
            ("{ listen: [] }", "names no address"),
            ("{ listen: [\"127.0.0.1:8080\"] }", "also another listener"),
            ("{ listen: [\"127.0.0.1:9090\"] }", "also another listener"),
            ("{ listen: [\"127.0.0.1:9102\"] }", "also another listener"),
            ("{ listen: [\"127.0.0.1:1\", \"127.0.0.1:1\"] }", "also another listener"),
            ("{ listen: [\"twelve\"] }", "host:port"),
            ("{ listen: [\"127.0.0.1:1\"], message: x }", "unknown field"),
        ] {
            let errors = with(spoe).unwrap_err();
            assert!(errors.iter().any(|e| e.to_string().contains(why)), "{spoe}: {errors:?}");
        }
    }

    #[test]
    fn auth_listeners_are_addresses_of_their_own() {
        let with = |auth: &str| {
            crate::config::parse(&format!("{MINIMAL}auth: {auth}\nmetrics: {{ listen: \"127.0.0.1:9102\" }}\n"))
        };
        assert!(crate::config::parse(MINIMAL).unwrap().settings.boot.auth.is_empty(), "none unless asked for");
        let c = with("{ listen: [\"127.0.0.1:9090\", \"[::1]:9090\"] }").unwrap();
        assert_eq!(c.settings.boot.auth, ["127.0.0.1:9090", "[::1]:9090"]);
        for (auth, why) in [
            ("{ listen: [] }", "names no address"),
            ("{ listen: [\"127.0.0.1:8080\"] }", "also another listener"),
            ("{ listen: [\"127.0.0.1:9102\"] }", "also another listener"),
            ("{ listen: [\"127.0.0.1:9090\", \"127.0.0.1:9090\"] }", "also another listener"),
            ("{ listen: [\"nine thousand\"] }", "host:port"),
            ("{ listen: [\"127.0.0.1:9090\"], port: 1 }", "unknown field"),
        ] {
            let errors = with(auth).unwrap_err();
            assert!(errors.iter().any(|e| e.to_string().contains(why)), "{auth}: {errors:?}");
        }
    }
}
