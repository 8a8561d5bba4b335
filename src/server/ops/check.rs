//! `robotgate config check`: load everything `serve` would, and say what
//! is wrong (problems) and what is odd (warnings).

use std::path::Path;

use crate::config::Host;
use crate::load::Problem;
use crate::robots;
use crate::server::snapshot::load_for;
use crate::server::store::redis::SharedStore;

/// What `robotgate config check` prints: problems, plus robots.txt lint errors
/// as warnings (they do not stop the proxy: crawlers read such files leniently),
/// and the directives a robot that obeys their group says it ignores.
///
/// For `host`: what it needs ([`Host::missing`]) is a problem, and the keys
/// it ignores ([`Host::ignored`]) are listed third.
pub fn check(config_path: &Path, host: Host) -> (Vec<Problem>, Vec<Problem>, Vec<&'static str>) {
    match load_for(config_path, host) {
        Err(problems) => (problems, Vec::new(), Vec::new()),
        Ok(snapshot) => {
            let ignored = host.ignored(&snapshot.settings, snapshot.sites.iter().map(|s| &*s.conf));
            let mut warnings = Vec::new();
            let now = crate::policy::Clock::System.unix_secs() as i64;
            for (file, message) in snapshot.certs.warnings(now) {
                warnings.push(Problem::new(file, None, message));
            }
            for (i, site) in snapshot.sites.iter().enumerate() {
                if let (Some(path), Some(robots)) = (&site.conf.robots, &site.robots) {
                    // A noindex set where robots.txt keeps the robot out (#42).
                    let rules = &site.conf.indexing.rules;
                    for mut h in crate::indexing::hidden(rules, &robots.compiled) {
                        // The site's own line (robotgate's added lines, a trap or a managed group, have none).
                        h.robots_line = robots.lines.file_line(h.robots_line).unwrap_or(h.robots_line);
                        let field = format!("sites[{i}].indexing.rules[{}]", h.rule);
                        warnings.push(Problem::new(path, Some(h.robots_line as usize), h.message(rules, &field)));
                    }
                    for d in robots::lint::lint(&robots.file.body) {
                        if d.severity == robots::lint::Severity::Error {
                            warnings.push(Problem::new(path, Some(d.line as usize), d.message));
                        }
                    }
                    // A Crawl-delay (or Request-rate, Visit-time) that a robot
                    // obeying its group ignores: it will not be held to it.
                    let own = robots::RobotsTxt::compile(&robots.file.body);
                    for d in crate::policy::unsupported::ignored_directives(&own, snapshot.classifier.db()) {
                        warnings.push(Problem::new(path, Some(d.line as usize), d.message));
                    }
                }
            }
            if let Some(why) = edge_untrusted(&snapshot.settings) {
                warnings.push(Problem::new(config_path, None, why));
            }
            // A lookup bound an edge's deadline cuts short (docs/edge.md, "Deadlines").
            for why in crate::config::deadlines::warnings(&snapshot.settings.boot) {
                warnings.push(Problem::new(config_path, None, why));
            }
            // A shared store that cannot be reached is an error: instances
            // would silently stop sharing.
            // A refused file of `sites_dir` (the others are served).
            let mut problems = snapshot.refused.clone();
            if let Some(state) = &snapshot.settings.boot.shared_state {
                let tried = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| e.to_string())
                    .and_then(|rt| rt.block_on(SharedStore::try_connection(state)));
                if let Err(e) = tried {
                    problems.push(Problem::new(
                        config_path,
                        None,
                        format!("state.redis: cannot reach the shared state store: {e}"),
                    ));
                }
            }
            (problems, warnings, ignored)
        }
    }
}

/// The auth listener believes the client address only from a trusted edge
/// (issue #39): with `auth` on and the edge not in `trusted_proxies`, every
/// request is judged as the edge's own, so one robot's ban or rate is
/// everyone's. The edge runs where the auth listener listens: on loopback
/// for a loopback listener, else somewhere `trusted_proxies` must name.
fn edge_untrusted(settings: &crate::config::Settings) -> Option<String> {
    let first = settings.boot.auth.first()?;
    let loopback: [std::net::IpAddr; 2] = [[127, 0, 0, 1].into(), std::net::Ipv6Addr::LOCALHOST.into()];
    let on_loopback = settings.boot.auth.iter().all(|a| {
        let host = a.rsplit_once(':').map_or(a.as_str(), |(h, _)| h).trim_matches(['[', ']']);
        host == "localhost" || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
    });
    let trusted = if on_loopback {
        loopback.iter().any(|ip| settings.trusted_proxies.iter().any(|c| c.contains(*ip)))
    } else {
        !settings.trusted_proxies.is_empty()
    };
    (!trusted).then(|| {
        format!(
            "auth.listen: the edge that asks on {first} is not in trusted_proxies, so the client address it names is \
             not believed and every request is judged as the edge's own (one ban or rate for all); add the edge's \
             address (for an edge on this machine: 127.0.0.1/32 and ::1/128)"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_auth_listener_without_its_edge_trusted_is_warned_of() {
        let base =
            "listen: [\"127.0.0.1:8080\"]\nsites:\n  - hosts: [\"localhost\"]\n    upstream: \"127.0.0.1:8000\"\n";
        let with = |extra: &str| crate::config::parse(&format!("{base}{extra}")).unwrap().settings;
        assert_eq!(edge_untrusted(&with("")), None, "no auth listener");
        assert!(edge_untrusted(&with("auth: { listen: [\"127.0.0.1:9090\"] }\n")).is_some());
        let other = "auth: { listen: [\"127.0.0.1:9090\"] }\ntrusted_proxies: [\"10.0.0.0/8\"]\n";
        assert!(edge_untrusted(&with(other)).is_some(), "loopback edge, only another network trusted");
        let ok = "auth: { listen: [\"127.0.0.1:9090\"] }\ntrusted_proxies: [\"127.0.0.1/32\"]\n";
        assert_eq!(edge_untrusted(&with(ok)), None);
    }
}
