//! Each entry of `sites:`: its hosts, origin, policy, request-target
//! options, traps and managed robots.txt lines.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use super::super::{
    ConfigError, FromTemplate, Managed, RawConfig, RawManaged, RawSite, RawTarget, RawTraps, RawUpstream,
    RawUpstreamFull, Settings, Site, SiteTemplate, Traps, Upstream, DEFAULT_TRAP,
};
use super::action::{action, policy};
use super::fields::{header_value, no_crlf, seconds};
use crate::policy::PolicyConfig;
use crate::target::{EncodedSlash, TargetOptions};

/// The most hosts one site may name (issue 66: a file's size is bounded
/// before it is read, [`crate::yaml::MAX_NODES`]; this says which field
/// is too long). 100,000 hosts are checked in milliseconds.
pub const MAX_HOSTS_PER_SITE: usize = 200_000;

/// The most sites one file of `sites_dir` may hold (a hosting panel writes
/// one or a few per customer; the config's own `sites:` is not bounded).
pub const MAX_SITES_PER_FILE: usize = 10_000;

/// The sites, and what the process needs to route to them.
pub(super) struct Sites {
    /// In file order.
    pub(super) sites: Vec<Site>,
    /// The index of the site marked `default: true`.
    pub(super) default_site: Option<usize>,
    /// Every host name (lowercase), with its site's index.
    pub(super) hosts: BTreeMap<String, usize>,
}

/// `sites:`, each checked; host names must be unique over all sites.
pub(super) fn sites(raw: &RawConfig, template: &SiteTemplate, errors: &mut Vec<ConfigError>) -> Sites {
    if raw.sites.is_empty() && raw.sites_dir.is_none() {
        errors.push(ConfigError::new("sites", "needs at least one site (or a `sites_dir`)"));
    }
    let mut sites = Vec::new();
    let mut default_site = None;
    let mut seen_hosts: BTreeMap<String, usize> = BTreeMap::new();
    for (i, s) in raw.sites.iter().enumerate() {
        let field = format!("sites[{i}]");
        let site = site(&field, s, template, &format!("site{i}"), errors);
        unique(&field, i, &site, &mut seen_hosts, &mut default_site, errors);
        sites.push(site);
    }
    Sites { sites, default_site, hosts: seen_hosts }
}

/// Host names are unique over `sites` and at most one is the default:
/// `site`, the `i`th, is checked against the earlier ones.
fn unique(
    field: &str,
    i: usize,
    site: &Site,
    seen_hosts: &mut BTreeMap<String, usize>,
    default_site: &mut Option<usize>,
    errors: &mut Vec<ConfigError>,
) {
    for h in &site.hosts {
        if let Some(other) = seen_hosts.insert(h.clone(), i) {
            errors.push(ConfigError::new(format!("{field}.hosts"), format!("`{h}` is also a host of sites[{other}]")));
        }
    }
    if site.default {
        if let Some(d) = *default_site {
            errors.push(ConfigError::new(format!("{field}.default"), format!("sites[{d}] is already the default")));
        }
        *default_site = Some(i);
    }
}

/// One site, checked on its own (`field` names it in errors); its name is
/// `fallback` when it has neither a name nor a host.
pub(super) fn site(
    field: &str,
    s: &RawSite,
    template: &SiteTemplate,
    fallback: &str,
    errors: &mut Vec<ConfigError>,
) -> Site {
    if s.hosts.is_empty() && !s.default {
        errors
            .push(ConfigError::new(format!("{field}.hosts"), "a site that is not the default needs at least one host"));
    }
    let written_hosts = match s.hosts.len() > MAX_HOSTS_PER_SITE {
        true => {
            let why = format!("{} hosts, more than the {MAX_HOSTS_PER_SITE} a site may have", s.hosts.len());
            errors.push(ConfigError::new(format!("{field}.hosts"), why));
            &s.hosts[..0]
        }
        false => &s.hosts[..],
    };
    let mut hosts: Vec<String> = Vec::with_capacity(written_hosts.len());
    // A set: a site of 100,000 hosts is checked in one pass (issue 66: a
    // list's `contains` made it quadratic, 10.7 s at 50,000).
    let mut listed: HashSet<&str> = HashSet::with_capacity(s.hosts.len());
    let mut twice = Vec::new();
    for written in written_hosts {
        // One canonical form (`net::canonical_host`), as requests are
        // compared: case, one trailing dot and U-labels (IDNA) aside.
        match crate::net::canonical_host(written) {
            Ok(h) => hosts.push(h),
            Err(why) => errors.push(ConfigError::new(format!("{field}.hosts"), format!("`{}` {why}", written.trim()))),
        }
    }
    for (i, h) in hosts.iter().enumerate() {
        if !listed.insert(h.as_str()) {
            twice.push(i);
        }
    }
    for &i in &twice {
        errors.push(ConfigError::new(format!("{field}.hosts"), format!("`{}` is listed twice", hosts[i])));
    }
    for &i in twice.iter().rev() {
        hosts.remove(i);
    }
    let upstream = s.upstream.as_ref().map(|u| upstream(&format!("{field}.upstream"), u, errors));
    let policy = policy(field, &s.policy, errors);
    let name = s.name.clone().or_else(|| hosts.first().cloned()).unwrap_or_else(|| fallback.to_owned());
    no_crlf(&format!("{field}.name"), &name, errors);
    let mut from_template = FromTemplate::default();
    let templated = |own: &Option<std::path::PathBuf>, pattern: &Option<String>, flag: &mut bool| {
        own.clone().or_else(|| {
            let path = SiteTemplate::path(pattern.as_deref()?, &name, hosts.first().map(String::as_str));
            *flag = true;
            Some(path)
        })
    };
    let robots = templated(&s.robots, &template.robots, &mut from_template.robots);
    let humans = templated(&s.humans, &template.humans, &mut from_template.humans);
    if s.traps.is_some() && robots.is_none() {
        errors.push(ConfigError::new(
            format!("{field}.traps"),
            "traps need a `robots:` file to be disallowed in (a compliant crawler must be told)",
        ));
    }
    Site {
        hosts,
        upstream,
        tls: s.tls.as_ref().map(|t| Box::new((t.cert.clone(), t.key.clone()))),
        robots,
        humans,
        policy: Arc::new(policy),
        target: target(&format!("{field}.target"), &s.target, errors),
        traps: s.traps.as_ref().and_then(|t| traps(&format!("{field}.traps"), t, errors)).map(Box::new),
        managed: managed(&format!("{field}.managed"), &s.managed, errors),
        indexing: indexing(&format!("{field}.indexing"), s.indexing.as_ref(), errors),
        default: s.default,
        from_template,
        name,
    }
}

/// The sites of one file of `sites_dir`, each checked, the file's hosts
/// unique and at most one default among them; `stem` (the file's name
/// without `.yaml`) names a site that has neither a name nor a host.
pub(super) fn site_file(
    raws: &[RawSite],
    many: bool,
    settings: &Settings,
    stem: &str,
    host: super::super::Host,
    errors: &mut Vec<ConfigError>,
) -> Vec<Site> {
    let (mut seen_hosts, mut default_site) = (BTreeMap::new(), None);
    let mut sites = Vec::new();
    if raws.len() > MAX_SITES_PER_FILE {
        let why = format!("{} sites, more than the {MAX_SITES_PER_FILE} a site file may hold", raws.len());
        errors.push(ConfigError::new("sites", why));
        return sites;
    }
    for (j, raw) in raws.iter().enumerate() {
        let (field, fallback) = match many {
            true => (format!("sites[{j}]"), format!("{stem}-{j}")),
            false => ("site".to_owned(), stem.to_owned()),
        };
        let site = site(&field, raw, &settings.site_template, &fallback, errors);
        errors.extend(host.missing_in(&field, &site));
        unique(&field, j, &site, &mut seen_hosts, &mut default_site, errors);
        sites.push(site);
    }
    share_policies(&mut sites, settings.ipv6_prefix);
    sites
}

/// Sets every site's `ipv6_prefix` (one for all: the sites share the state
/// tables) and makes sites whose policies are alike share one: a hosting
/// provider's thousands of sites have a few policies between them (issue 55).
/// Up to [`SHARED_POLICIES`] distinct ones are shared, so the comparisons
/// stay bounded at any number of sites.
pub(super) fn share_policies(sites: &mut [Site], ipv6_prefix: u8) {
    let mut distinct: Vec<Arc<PolicyConfig>> = Vec::new();
    for site in sites {
        Arc::make_mut(&mut site.policy).ipv6_prefix = ipv6_prefix;
        match distinct.iter().find(|p| **p == site.policy) {
            Some(p) => site.policy = Arc::clone(p),
            None if distinct.len() < SHARED_POLICIES => distinct.push(Arc::clone(&site.policy)),
            None => {}
        }
    }
}

/// At most this many distinct policies are shared among the sites of a file.
const SHARED_POLICIES: usize = 16;

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
    if let Some(v) = &raw.content_usage {
        no_crlf(&format!("{field}.content_usage"), v, errors);
        if let Err(e) = crate::robots::usage::parse_rule(v) {
            errors.push(ConfigError::new(
                format!("{field}.content_usage"),
                format!("`{v}`: {e}; write e.g. \"train-ai=n\" or \"/novels/ train-ai=n, search=y\" (draft-ietf-aipref-vocab)"),
            ));
        }
    }
    Managed {
        ai_training_disallow,
        content_signal: raw.content_signal.clone(),
        content_usage: raw.content_usage.clone(),
    }
}

/// The most indexing rules a site may have (each a pattern in a matcher).
const MAX_INDEXING_RULES: usize = 10_000;

/// `indexing:`: patterns as robots.txt writes them, robots by token (the
/// directives were parsed as the file was read, at their line).
fn indexing(
    field: &str,
    raw: Option<&crate::config::raw::RawIndexing>,
    errors: &mut Vec<ConfigError>,
) -> crate::indexing::Indexing {
    let Some(raw) = raw else { return crate::indexing::Indexing::default() };
    if raw.rules.len() > MAX_INDEXING_RULES {
        errors.push(ConfigError::new(format!("{field}.rules"), format!("at most {MAX_INDEXING_RULES} rules")));
    }
    let mut rules = Vec::new();
    for (j, r) in raw.rules.iter().enumerate().take(MAX_INDEXING_RULES) {
        let rfield = format!("{field}.rules[{j}]");
        if !(r.path.starts_with('/') || r.path.starts_with('*')) || r.path.len() > 2048 {
            errors.push(ConfigError::new(
                format!("{rfield}.path"),
                format!("`{}` is not a robots.txt pattern (it starts with / or *)", r.path),
            ));
        }
        if r.path.bytes().any(|b| b.is_ascii_control() || b == b' ') {
            errors.push(ConfigError::new(format!("{rfield}.path"), "blanks and control characters are not in a path"));
        }
        for bot in &r.bots {
            if bot.is_empty() || !bot.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b)) {
                errors.push(ConfigError::new(
                    format!("{rfield}.bots"),
                    format!("`{bot}` is not a robots.txt token (letters, digits, - _ .)"),
                ));
            }
        }
        rules.push(crate::indexing::Rule { path: r.path.clone(), bots: r.bots.clone(), set: r.set.clone() });
    }
    crate::indexing::Indexing { rules: std::sync::Arc::new(crate::indexing::Rules::new(rules)), observe: raw.observe }
}

/// `upstream:`: an address of the form host:port, and its options.
fn upstream(ufield: &str, raw: &RawUpstream, errors: &mut Vec<ConfigError>) -> Upstream {
    let upstream = match raw {
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
    let host_part = upstream.address.rsplit_once(':').map(|(h, _)| h.trim_matches(['[', ']'])).unwrap_or("");
    let port_ok = upstream.address.rsplit_once(':').is_some_and(|(_, p)| p.parse::<u16>().is_ok_and(|p| p > 0));
    if host_part.is_empty() || !port_ok {
        errors
            .push(ConfigError::new(ufield, format!("`{}` is not an address of the form host:port", upstream.address)));
    }
    let sni = upstream.sni.clone().unwrap_or_else(|| host_part.to_owned());
    header_value(&format!("{ufield}.sni"), &sni, errors);
    let connect_timeout = seconds(&format!("{ufield}.connect_timeout"), upstream.connect_timeout, 5.0, errors);
    let read_timeout = seconds(&format!("{ufield}.read_timeout"), upstream.read_timeout, 60.0, errors);
    Upstream { address: upstream.address, tls: upstream.tls, sni, connect_timeout, read_timeout, h2: upstream.h2 }
}
