//! One configuration file, several hosts (issue #54): what each host of
//! robotgate's pipeline needs the file to name, and which of its keys a
//! host does not use because its own configuration does that job.
//! `robotgate serve` listens and forwards, so it needs `listen` and every
//! site's `upstream`; the nginx module does neither (nginx's `listen` and
//! `proxy_pass` do), so it needs neither, and says which keys it ignores
//! when it loads the file (and `robotgate config check --host nginx`).

use super::{ConfigError, Settings, Site};

/// A program that decides requests with the configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Host {
    /// `robotgate serve`: the proxy, and the auth listener beside it.
    Serve,
    /// The nginx module (`robotgate_config`).
    Nginx,
}

impl Host {
    /// `serve` or `nginx`.
    pub fn from_name(name: &str) -> Option<Host> {
        match name {
            "serve" => Some(Host::Serve),
            "nginx" => Some(Host::Nginx),
            _ => None,
        }
    }

    /// What this host needs that `config` does not name, each with its field.
    pub fn missing<'a>(self, settings: &Settings, sites: impl Iterator<Item = &'a Site>) -> Vec<ConfigError> {
        let mut missing = Vec::new();
        if self == Host::Nginx {
            return missing;
        }
        if settings.boot.listen.is_empty() {
            missing.push(ConfigError::new("listen", "needs at least one address (robotgate serve listens on it)"));
        }
        // An edge's JA4 (issue #67) comes from a proxy in `trusted_proxies`
        // or from the edge asking over SPOE or ext_authz, which names the
        // client in a field of its own and writes the header itself. (Inside
        // Envoy, the module reads the one Envoy writes.)
        let boot = &settings.boot;
        if settings.ja4_header.is_some()
            && settings.trusted_proxies.is_empty()
            && boot.spoe.is_empty()
            && boot.ext_authz.is_empty()
        {
            missing.push(ConfigError::new(
                "ja4_header",
                "is read only from `trusted_proxies` or an edge asking over `spoe` or `ext_authz`, and none is configured",
            ));
        }
        for (i, site) in sites.enumerate() {
            missing.extend(self.missing_in(&format!("sites[{i}]"), site));
        }
        missing
    }

    /// What this host needs that `site` (named `field` in errors) does not name.
    pub fn missing_in(self, field: &str, site: &Site) -> Option<ConfigError> {
        (self == Host::Serve && site.upstream.is_none()).then(|| {
            ConfigError::new(
                format!("{field}.upstream"),
                "needs the origin's host:port (robotgate serve forwards to it)",
            )
        })
    }

    /// The keys `config` sets that this host does not use, each with what
    /// does their job there.
    pub fn ignored<'a>(self, settings: &Settings, sites: impl Iterator<Item = &'a Site>) -> Vec<&'static str> {
        let mut ignored = Vec::new();
        if self == Host::Serve {
            return ignored;
        }
        let boot = &settings.boot;
        let sites: Vec<&Site> = sites.collect();
        if !boot.listen.is_empty() {
            ignored.push("listen: nginx's `listen`");
        }
        if sites.iter().any(|s| s.upstream.is_some()) {
            ignored.push("sites[].upstream: nginx's `proxy_pass`, `root` ...");
        }
        // nginx reads the client's header itself, in its realip module; the
        // module takes the address realip leaves as the socket peer, and
        // reads `trusted_proxies` only to know it for a proxy.
        if settings.client_header != crate::net::ClientHeader::default() {
            ignored.push("client_header: nginx's realip, `real_ip_header`");
        }
        if boot.threads != 1 {
            ignored.push("threads: `worker_processes`");
        }
        // nginx makes the TLS handshake; only a proxy in front of it that
        // `trusted_proxies` lists can send the client's JA4 (issue #67).
        if settings.ja4_header.is_some() && settings.trusted_proxies.is_empty() {
            ignored.push("ja4_header: read inside nginx only from `trusted_proxies`, and none is listed");
        }
        if sites.iter().any(|s| s.tls.is_some()) || boot.listen.iter().any(|l| l.tls.is_some()) {
            ignored.push("tls: `ssl_certificate`");
        }
        if boot.metrics.is_some() {
            ignored.push("metrics.listen: `robotgate_metrics;` in a location");
        }
        if !boot.auth.is_empty() {
            ignored.push("auth.listen: not needed, robotgate decides inside nginx");
        }
        if !boot.ext_authz.is_empty() {
            ignored.push("ext_authz.listen: not needed, robotgate decides inside nginx");
        }
        if !boot.spoe.is_empty() {
            ignored.push("spoe.listen: not needed, robotgate decides inside nginx");
        }
        // Said only when the file moves them from their defaults: an
        // operator who never wrote `limits` is not told each start.
        let defaults = super::raw::RawLimits::default();
        if boot.request_head_timeout != crate::config::DEFAULT_REQUEST_HEAD_TIMEOUT
            || boot.keepalive_timeout != crate::config::DEFAULT_KEEPALIVE_TIMEOUT
            || boot.max_connections != defaults.max_connections
        {
            ignored.push("limits.request_head_timeout, keepalive_timeout, max_connections: `client_header_timeout`, `keepalive_timeout`, `worker_connections`");
        }
        ignored
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NGINX_ONLY: &str = "sites:\n  - hosts: [\"example.com\"]\n    default: true\n";

    #[test]
    fn nginx_needs_no_listen_and_no_upstream() {
        let config = crate::config::parse(NGINX_ONLY).expect("a file without listen and upstream parses");
        assert!(Host::Nginx.missing(&config.settings, config.sites.iter()).is_empty());
        let missing: Vec<String> =
            Host::Serve.missing(&config.settings, config.sites.iter()).into_iter().map(|e| e.field).collect();
        assert_eq!(missing, ["listen", "sites[0].upstream"]);
        // Nothing the file sets is ignored: not even nginx's own limits, left at their defaults.
        assert_eq!(Host::Nginx.ignored(&config.settings, config.sites.iter()), Vec::<&str>::new());
        let limits = crate::config::parse(&format!("{NGINX_ONLY}limits: {{ keepalive_timeout: 90 }}\n")).unwrap();
        let ignored = Host::Nginx.ignored(&limits.settings, limits.sites.iter());
        assert!(ignored.len() == 1 && ignored[0].starts_with("limits."), "{ignored:?}");
        let full = format!("listen: [\"127.0.0.1:8080\"]\n{NGINX_ONLY}    upstream: \"127.0.0.1:8000\"\n");
        let config = crate::config::parse(&full).unwrap();
        assert!(
            Host::Serve.missing(&config.settings, config.sites.iter()).is_empty()
                && Host::Serve.ignored(&config.settings, config.sites.iter()).is_empty()
        );
        let ignored = Host::Nginx.ignored(&config.settings, config.sites.iter());
        assert!(ignored.iter().any(|k| k.starts_with("listen:")) && ignored.iter().any(|k| k.contains("upstream")));
        // nginx's realip reads the client's header: robotgate's own choice
        // of header is not used there; its trusted proxies are.
        let proxied = crate::config::parse(&format!("client_header: Forwarded\n{NGINX_ONLY}")).unwrap();
        let ignored = Host::Nginx.ignored(&proxied.settings, proxied.sites.iter());
        assert!(ignored.len() == 1 && ignored[0].starts_with("client_header:"), "{ignored:?}");
        assert!(Host::Serve.ignored(&proxied.settings, proxied.sites.iter()).is_empty());
        let trusting = crate::config::parse(&format!("trusted_proxies: [\"10.0.0.0/8\"]\n{NGINX_ONLY}")).unwrap();
        assert!(Host::Nginx.ignored(&trusting.settings, trusting.sites.iter()).is_empty());
    }
}
