//! From the YAML shape to the runtime form: every check, every default, and
//! every problem reported at once with the field it is in.
//!
//! One concern per file: this file walks the whole configuration in order;
//! `settings` checks what applies to the process (listeners, logs, proxies,
//! verification), `site` each entry of `sites:`, `action` the responses a
//! policy chooses, and `fields` the value syntaxes shared by all (durations,
//! sizes, header values, `host:port`).

mod action;
mod fields;
mod settings;
mod site;

use std::path::PathBuf;
use std::time::Duration;

use self::fields::host_port;
pub use self::fields::parse_duration;
pub use self::site::{MAX_HOSTS_PER_SITE, MAX_SITES_PER_FILE};
use super::{Boot, Config, ConfigError, LogTarget, Settings, Verify};
use super::{RawConfig, RawSite, Site};
use crate::net::ClientHeader;

impl RawConfig {
    /// Check everything and build the runtime form.
    ///
    /// # Errors
    /// Every problem found, each naming its field.
    pub fn validate(self) -> Result<Config, Vec<ConfigError>> {
        let mut errors = Vec::new();
        let listen = settings::listeners(&self, &mut errors);
        let threads = self.threads.unwrap_or(1);
        if threads == 0 || threads > 1024 {
            errors.push(ConfigError::new("threads", format!("must be between 1 and 1024, not {threads}")));
        }
        let site_template = settings::site_template(self.site_template.as_ref(), &mut errors);
        let customer_links = match self.customer_links.as_deref().map(str::trim) {
            None => super::CustomerLinks::default(),
            Some(name) => super::CustomerLinks::from_name(name).unwrap_or_else(|| {
                errors.push(ConfigError::new("customer_links", format!("`{name}` is not one of inside, owner")));
                super::CustomerLinks::default()
            }),
        };
        let site::Sites { mut sites, default_site, hosts: seen_hosts } =
            site::sites(&self, &site_template, &mut errors);
        site::share_policies(&mut sites, self.limits.ipv6_prefix);
        let trusted_proxies = settings::trusted_proxies(&self.trusted_proxies, &mut errors);
        let client_header = match self.client_header.as_deref().map(str::trim) {
            None => ClientHeader::default(),
            Some(name) => ClientHeader::from_name(name).unwrap_or_else(|| {
                errors.push(ConfigError::new(
                    "client_header",
                    format!("`{name}` is not one of X-Forwarded-For, Forwarded, X-Real-IP"),
                ));
                ClientHeader::default()
            }),
        };
        let ja4_header = self.ja4_header.as_deref().map(str::trim).and_then(|name| {
            let token = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
            if name.is_empty() || name.len() > 64 || !name.bytes().all(token) {
                errors.push(ConfigError::new("ja4_header", format!("`{name}` is not a header name")));
                return None;
            }
            Some(name.to_ascii_lowercase())
        });
        if !(8..=128).contains(&self.limits.ipv6_prefix) {
            errors.push(ConfigError::new(
                "limits.ipv6_prefix",
                format!("must be between 8 and 128, not {}", self.limits.ipv6_prefix),
            ));
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
        let violation_log = settings::log_options(&self.log, &violations, &mut errors);
        let metrics = self.metrics.as_ref().and_then(|m| host_port("metrics.listen", &m.listen, &mut errors));
        if let Some(m) = &metrics {
            if listen.iter().any(|l| l.address == *m) {
                errors.push(ConfigError::new("metrics.listen", format!("{m} is also a proxy listener")));
            }
        }
        let (auth, auth_headers) =
            settings::auth_listeners(self.auth.as_ref(), &listen, metrics.as_deref(), &mut errors);
        let spoe_raw = self.spoe.as_ref().map(|s| &s.listen[..]);
        let spoe = settings::edge_listeners("spoe", spoe_raw, &listen, metrics.as_deref(), &[&auth], &mut errors);
        let ext_authz = settings::edge_listeners(
            "ext_authz",
            self.ext_authz.as_ref().map(|e| &e.listen[..]),
            &listen,
            metrics.as_deref(),
            &[&auth, &spoe],
            &mut errors,
        );
        let edge_timeouts = settings::edge_timeouts(&self, &mut errors);
        if self.limits.max_clients == 0 {
            errors.push(ConfigError::new("limits.max_clients", "must be at least 1"));
        }
        if self.limits.max_connections == 0 {
            errors.push(ConfigError::new("limits.max_connections", "must be at least 1"));
        }
        let metrics_max_connections = self.metrics.as_ref().and_then(|m| m.max_connections).unwrap_or(64);
        if metrics_max_connections == 0 {
            errors.push(ConfigError::new("metrics.max_connections", "must be at least 1"));
        }
        let (request_head_timeout, keepalive_timeout) = settings::connection_timeouts(&self.limits, &mut errors);
        let dns = settings::dns("verify.dns", &self.verify.dns, &mut errors);
        let refresh_every = settings::feed_sources(&self.verify, &mut errors);
        let shared_state = self.state.as_ref().map(|s| settings::shared_state(s, &mut errors));
        let state_dir = self.state_dir.as_deref().and_then(|d| settings::state_dir(d, &mut errors));
        if !errors.is_empty() {
            return Err(errors);
        }
        let hosts = std::sync::Arc::new(seen_hosts.into_iter().collect::<Vec<_>>());
        let boot = Boot {
            listen,
            threads,
            violations,
            violation_log,
            log_level: self.log.level,
            metrics,
            status_page: self.metrics.as_ref().is_some_and(|m| m.status_page),
            metrics_per_site: self
                .metrics
                .as_ref()
                .and_then(|m| m.per_site_limit)
                .unwrap_or(super::DEFAULT_METRICS_PER_SITE),
            auth,
            spoe,
            ext_authz,
            edge_timeouts,
            max_clients: self.limits.max_clients,
            request_head_timeout,
            keepalive_timeout,
            max_connections: self.limits.max_connections,
            metrics_max_connections,
            grace_period: Duration::from_secs(self.grace_period.unwrap_or(5)),
            dns,
            verify: Verify {
                allow_private_directories: self.verify.allow_private_directories,
                refresh: refresh_every,
                feed_urls: self.verify.feed_urls.clone().into_iter().collect(),
            },
            shared_state,
            state_dir,
        };
        let settings = Settings {
            boot,
            hosts,
            default_site,
            trusted_proxies,
            client_header,
            ja4_header,
            auth_headers,
            bots: self.bots,
            bots_replace: self.bots_replace,
            verify_feeds: self.verify.feeds.clone(),
            sites_dir: self.sites_dir.clone(),
            site_template,
            customer_links,
            ipv6_prefix: self.limits.ipv6_prefix,
        };
        Ok(Config { settings, sites })
    }
}

/// Parse and check one file of `sites_dir` on its own: one site, or a list
/// of sites, each shaped as an entry of `sites:` and checked as one, with
/// `settings`' template and limits, and what `host` needs of a site. `stem` names a site that has neither a
/// name nor a host. Whether its hosts and names clash with other files'
/// is the loader's to say, which sees them all.
///
/// # Errors
/// Every problem, each with its field (`site.upstream` for a file of one
/// site, `sites[1].upstream` for a list) and the line it is on, found by
/// [`crate::yaml::line_of`] where the YAML reader gave none.
pub fn parse_site_file(
    text: &str,
    settings: &Settings,
    stem: &str,
    host: super::Host,
) -> Result<Vec<Site>, Vec<ConfigError>> {
    let (raws, many) = crate::yaml::one_or_many::<RawSite>(text)
        .map_err(|e| vec![ConfigError { field: "yaml".into(), reason: e.message, line: e.line }])?;
    let mut errors = Vec::new();
    let sites = site::site_file(&raws, many, settings, stem, host, &mut errors);
    if errors.is_empty() {
        return Ok(sites);
    }
    for e in &mut errors {
        if e.line.is_none() {
            // `sites[1].policy.categories` is `[1].policy.categories` of a
            // list, `site.upstream` is `upstream` of one site.
            let path = match e.field.strip_prefix("sites") {
                Some(rest) => rest.to_owned(),
                None => e.field.strip_prefix("site").unwrap_or(&e.field).to_owned(),
            };
            e.line = crate::yaml::line_of(text, &path);
        }
    }
    Err(errors)
}
