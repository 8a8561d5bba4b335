//! From the YAML shape to the runtime form: every check, every default, and
//! every problem reported at once with the field it is in.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use super::{
    Config, ConfigError, DnsSettings, Listen, LogOptions, LogTarget, Managed, Settings, SharedState, Site, Traps,
    Upstream, Verify, DEFAULT_DNS_TIMEOUT_MS, DEFAULT_STATE_TIMEOUT_MS, DEFAULT_TRAP,
};
use super::{
    RawAction, RawConfig, RawDns, RawDuration, RawListen, RawListenTls, RawManaged, RawPolicy, RawSize, RawState,
    RawTarget, RawTraps, RawUpstream, RawUpstreamFull,
};
use crate::agent::Category;
use crate::net::{is_host_port, Cidr};
use crate::policy::{Action, PolicyConfig, DEFAULT_BLOCK_BODY, DEFAULT_NOINDEX, DEFAULT_SPOOFED_BODY};
use crate::target::{EncodedSlash, TargetOptions};

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

/// A `host:port` address, checked for syntax only (the loader resolves names).
fn host_port(field: &str, s: &str, errors: &mut Vec<ConfigError>) -> Option<String> {
    let s = s.trim();
    if is_host_port(s) {
        // A literal address is written in one canonical form, so that two
        // spellings of one listener compare equal.
        Some(s.parse::<std::net::SocketAddr>().map_or_else(|_| s.to_owned(), |a| a.to_string()))
    } else {
        errors.push(ConfigError::new(field, format!("`{s}` is not an address of the form host:port")));
        None
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

fn target(field: &str, raw: &RawTarget, errors: &mut Vec<ConfigError>) -> TargetOptions {
    let default = TargetOptions::default();
    let encoded_slash = match raw.encoded_slash.as_deref() {
        None | Some("decode") => EncodedSlash::Decode,
        Some("reject") => EncodedSlash::Reject,
        Some(other) => {
            errors.push(ConfigError::new(
                format!("{field}.encoded_slash"),
                format!("`{other}` is not one of decode, reject"),
            ));
            default.encoded_slash
        }
    };
    let max_len = raw.max_len.unwrap_or(default.max_len);
    if !(256..=1 << 20).contains(&max_len) {
        errors.push(ConfigError::new(
            format!("{field}.max_len"),
            format!("must be between 256 and 1048576 bytes, not {max_len}"),
        ));
    }
    TargetOptions { merge_slashes: raw.merge_slashes.unwrap_or(default.merge_slashes), encoded_slash, max_len }
}

fn traps(field: &str, raw: &RawTraps, errors: &mut Vec<ConfigError>) -> Option<Traps> {
    let paths = raw.paths.clone().unwrap_or_else(|| vec![DEFAULT_TRAP.to_owned()]);
    if paths.is_empty() {
        errors.push(ConfigError::new(format!("{field}.paths"), "needs at least one path"));
    }
    for p in &paths {
        // Written into robots.txt as a literal rule, and matched as a prefix
        // of the normalised target: it must be a plain, normal path.
        let normal = crate::target::normalise(b"GET", p.as_bytes(), &Default::default())
            .is_ok_and(|t| matches!(t, crate::target::Target::Path(std::borrow::Cow::Borrowed(_))));
        if !p.starts_with('/') || p == "/" || p.contains(['*', '$', '?', '#']) || !normal {
            errors.push(ConfigError::new(
                format!("{field}.paths"),
                format!("`{p}` must be a normalised path below `/`, without `*`, `$`, `?` or `#`"),
            ));
        }
    }
    let secs = |key: &str, v: Option<u64>, default: u64, errors: &mut Vec<ConfigError>| {
        let v = v.unwrap_or(default);
        if v > 365 * 86_400 {
            errors.push(ConfigError::new(format!("{field}.{key}"), format!("{v} seconds is more than a year")));
        }
        Duration::from_secs(v)
    };
    let ban = secs("ban", raw.ban, 3600, errors);
    if ban.is_zero() {
        errors.push(ConfigError::new(format!("{field}.ban"), "must be at least 1 second"));
    }
    let arm_after = secs("arm_after", raw.arm_after, 86_400, errors);
    let action = action(field, &raw.action, errors)?;
    Some(Traps { paths, ban, arm_after, action, inject_link: raw.inject_link })
}

fn managed(field: &str, raw: &RawManaged, errors: &mut Vec<ConfigError>) -> Managed {
    let ai_training_disallow = match raw.ai_training.as_deref() {
        None | Some("allow") => false,
        Some("disallow") => true,
        Some(other) => {
            errors.push(ConfigError::new(
                format!("{field}.ai_training"),
                format!("`{other}` is not one of allow, disallow"),
            ));
            false
        }
    };
    if let Some(v) = &raw.content_signal {
        no_crlf(&format!("{field}.content_signal"), v, errors);
        if crate::robots::ext::parse_content_signal(v).is_none() {
            errors.push(ConfigError::new(
                format!("{field}.content_signal"),
                format!("`{v}` is not a list of `name=yes|no` (contentsignals.org), e.g. \"search=yes, ai-train=no\""),
            ));
        }
    }
    Managed { ai_training_disallow, content_signal: raw.content_signal.clone() }
}

fn dns(field: &str, raw: &RawDns, errors: &mut Vec<ConfigError>) -> DnsSettings {
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

fn shared_state(raw: &RawState, errors: &mut Vec<ConfigError>) -> SharedState {
    let url = raw.redis.trim().to_owned();
    let host = url.strip_prefix("redis://").or_else(|| url.strip_prefix("rediss://"));
    match host {
        Some(rest) if !rest.is_empty() && !rest.starts_with('/') => {}
        _ => errors.push(ConfigError::new(
            "state.redis",
            "must be a URL of the form redis://host:port/db or rediss://host:port/db",
        )),
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
            let (address, https, tls, http2, h2c) = match l {
                RawListen::Plain(a) => (a.as_str(), false, None, None, false),
                RawListen::Full { address, tls, http2, h2c } => {
                    let (https, pair) = match tls {
                        None | Some(RawListenTls::On(false)) => (false, None),
                        Some(RawListenTls::On(true)) => (true, None),
                        Some(RawListenTls::Pair(t)) => (true, Some((t.cert.clone(), t.key.clone()))),
                    };
                    (address.as_str(), https, pair, *http2, *h2c)
                }
            };
            if http2.is_some() && !https {
                errors.push(ConfigError::new(
                    format!("{field}.http2"),
                    "is for HTTPS listeners (ALPN); a plain listener takes `h2c: true`",
                ));
            }
            if h2c && https {
                errors.push(ConfigError::new(
                    format!("{field}.h2c"),
                    "is for plain listeners; HTTPS offers HTTP/2 by ALPN",
                ));
            }
            if https && tls.is_none() && !self.sites.iter().any(|s| s.tls.is_some()) {
                errors.push(ConfigError::new(
                    format!("{field}.tls"),
                    "`true` needs certificates: give the listener `tls: {cert, key}`, or sites their own `tls:`",
                ));
            }
            if let Some(address) = host_port(&field, address, &mut errors) {
                if listen.iter().any(|l: &Listen| l.address == address) {
                    errors.push(ConfigError::new(&field, format!("{address} is listed twice")));
                }
                listen.push(Listen { address, https, tls, http2: https && http2.unwrap_or(true), h2c });
            }
        }
        let plain: Vec<&Listen> = listen.iter().filter(|l| !l.https).collect();
        if plain.iter().any(|l| l.h2c) && !plain.iter().all(|l| l.h2c) {
            errors.push(ConfigError::new(
                "listen",
                "`h2c: true` must be on every plain listener or none (one HTTP service serves them all)",
            ));
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
                    h2: false,
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
                    h2: upstream.h2,
                },
                tls: s.tls.as_ref().map(|t| (t.cert.clone(), t.key.clone())),
                robots: s.robots.clone(),
                humans: s.humans.clone(),
                policy,
                target: target(&format!("{field}.target"), &s.target, &mut errors),
                traps: s.traps.as_ref().and_then(|t| traps(&format!("{field}.traps"), t, &mut errors)),
                managed: managed(&format!("{field}.managed"), &s.managed, &mut errors),
            });
            if s.traps.is_some() && s.robots.is_none() {
                errors.push(ConfigError::new(
                    format!("{field}.traps"),
                    "traps need a `robots:` file to be disallowed in (a compliant crawler must be told)",
                ));
            }
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
        let violation_log = self.log_options(&violations, &mut errors);
        let metrics = self.metrics.as_ref().and_then(|m| host_port("metrics.listen", &m.listen, &mut errors));
        if let Some(m) = &metrics {
            if listen.iter().any(|l| l.address == *m) {
                errors.push(ConfigError::new("metrics.listen", format!("{m} is also a proxy listener")));
            }
        }
        if self.limits.max_clients == 0 {
            errors.push(ConfigError::new("limits.max_clients", "must be at least 1"));
        }
        let dns = dns("verify.dns", &self.verify.dns, &mut errors);
        let refresh_every = match &self.verify.refresh {
            None => None,
            Some(raw) => match duration(raw) {
                Ok(d) if d.as_secs() >= 1 && d.as_secs() <= 30 * 86_400 => Some(d),
                Ok(_) => {
                    errors.push(ConfigError::new("verify.refresh", "must be between 1 second and 30 days"));
                    None
                }
                Err(e) => {
                    errors.push(ConfigError::new("verify.refresh", e));
                    None
                }
            },
        };
        if refresh_every.is_some() && self.verify.feeds.is_none() {
            errors.push(ConfigError::new(
                "verify.refresh",
                "needs `verify.feeds`: the directory the feeds are written to",
            ));
        }
        for (name, url) in &self.verify.feed_urls {
            if !(url.starts_with("https://") || url.starts_with("http://")) {
                errors.push(ConfigError::new(
                    format!("verify.feed_urls.{name}"),
                    format!("`{url}` is not an http(s) URL"),
                ));
            }
        }
        let shared_state = self.state.as_ref().map(|s| shared_state(s, &mut errors));
        if !errors.is_empty() {
            return Err(errors);
        }
        let hosts = seen_hosts.into_iter().collect::<Vec<_>>();
        let settings = Settings {
            listen,
            threads,
            hosts,
            default_site,
            trusted_proxies,
            violations,
            violation_log,
            log_level: self.log.level,
            metrics,
            status_page: self.metrics.as_ref().is_some_and(|m| m.status_page),
            bots: self.bots,
            bots_replace: self.bots_replace,
            max_clients: self.limits.max_clients,
            grace_period: Duration::from_secs(self.grace_period.unwrap_or(5)),
            verify_feeds: self.verify.feeds.clone(),
            dns,
            verify: Verify {
                allow_private_directories: self.verify.allow_private_directories,
                refresh: refresh_every,
                feed_urls: self.verify.feed_urls.clone().into_iter().collect(),
            },
            shared_state,
        };
        Ok(Config { settings, sites })
    }

    fn log_options(&self, target: &LogTarget, errors: &mut Vec<ConfigError>) -> LogOptions {
        let log = &self.log;
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
            spoofed: match &raw.spoofed {
                None => PolicyConfig::default().spoofed,
                Some(a) => {
                    let a =
                        RawAction { body: a.body.clone().or_else(|| Some(DEFAULT_SPOOFED_BODY.into())), ..a.clone() };
                    let a = if a.file.is_some() { RawAction { body: None, ..a } } else { a };
                    action(&format!("{field}.spoofed"), &a, errors).unwrap_or_else(|| PolicyConfig::default().spoofed)
                }
            },
        }
    }
}

/// Bytes in a [`RawSize`]: a number, or a number and a unit (`KB` = 1000, `KiB` = 1024).
fn duration(raw: &RawDuration) -> Result<Duration, String> {
    let secs = match raw {
        RawDuration::Secs(n) => *n,
        RawDuration::Text(t) => return parse_duration(t),
    };
    Ok(Duration::from_secs(secs))
}

/// A duration written as a number of seconds or a number and a unit:
/// `3600`, `3600s`, `90m`, `24h`, `7d`.
///
/// # Errors
/// Anything else, or a duration too long to count in seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (n, unit) = t.split_at(split);
    let bad = || format!("`{t}` is not a duration such as 24h, 90m or 3600s");
    let n: u64 = n.parse().map_err(|_| bad())?;
    let scale = match unit.trim() {
        "" | "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return Err(bad()),
    };
    Ok(Duration::from_secs(n.checked_mul(scale).ok_or_else(|| format!("`{t}` is too long"))?))
}

fn size(raw: &RawSize) -> Result<u64, String> {
    let text = match raw {
        RawSize::Bytes(n) => return Ok(*n),
        RawSize::Text(t) => t.trim(),
    };
    let split = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (digits, unit) = text.split_at(split);
    let bad = || format!("`{text}` is not a size such as 1048576, \"100MB\" or \"512KiB\"");
    let n: u64 = digits.parse().map_err(|_| bad())?;
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" => 1_000,
        "m" | "mb" => 1_000_000,
        "g" | "gb" => 1_000_000_000,
        "kib" => 1 << 10,
        "mib" => 1 << 20,
        "gib" => 1 << 30,
        _ => return Err(bad()),
    };
    n.checked_mul(mult).ok_or_else(bad)
}
