//! The deadlines of the edges that ask robotgate, and what robotgate does
//! about them: one table, docs/edge.md ("Deadlines"), whose figures are
//! these constants and the shipped files' timeouts.
//!
//! An edge that asks robotgate about a request (HAProxy's SPOE, Envoy's
//! ext_authz, nginx's `auth_request`) waits for the answer only so long;
//! past it, it does what its own file says, and HAProxy and Envoy as
//! shipped let the request pass. An answer that comes late is no answer.
//! So each listener is told its edge's deadline (`spoe.edge_timeout_ms`,
//! `ext_authz.edge_timeout_ms`, `auth.edge_timeout_ms`) and decides before
//! it ([`decide_by`]) with what it knows by then: a lookup not done (a
//! reverse-DNS check, a Web Bot Auth key directory, the shared store) is
//! answered as one that failed, which the policy judges as an unverifiable
//! identity (held to the claimed robot's group), never by silence.

use std::time::Duration;

use super::Boot;
use crate::identity::signature::fetch::FetchLimits;

/// `spoe.edge_timeout_ms`'s default: `timeout processing 1s` in the shipped
/// `examples/edge/spoe-robotgate.conf`.
pub const DEFAULT_SPOE_EDGE_TIMEOUT: Duration = Duration::from_millis(1000);

/// `ext_authz.edge_timeout_ms`'s default: the ext_authz filter's
/// `grpc_service.timeout: 3s` in the shipped `examples/edge/envoy.yaml`.
pub const DEFAULT_EXT_AUTHZ_EDGE_TIMEOUT: Duration = Duration::from_millis(3000);

/// `auth.edge_timeout_ms`'s default: `proxy_read_timeout 3s` in the
/// subrequest's location of the shipped `examples/edge/nginx.conf`.
pub const DEFAULT_AUTH_EDGE_TIMEOUT: Duration = Duration::from_millis(3000);

/// The values an `edge_timeout_ms` may take, in milliseconds.
pub const EDGE_TIMEOUT_MS: std::ops::RangeInclusive<u64> = 100..=60_000;

/// Each edge listener's deadline, as its edge is configured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EdgeTimeouts {
    /// The forward-auth edge's (`auth.edge_timeout_ms`).
    pub auth: Duration,
    /// HAProxy's `timeout processing` (`spoe.edge_timeout_ms`).
    pub spoe: Duration,
    /// Envoy's ext_authz `timeout` (`ext_authz.edge_timeout_ms`).
    pub ext_authz: Duration,
}

impl Default for EdgeTimeouts {
    fn default() -> Self {
        EdgeTimeouts {
            auth: DEFAULT_AUTH_EDGE_TIMEOUT,
            spoe: DEFAULT_SPOE_EDGE_TIMEOUT,
            ext_authz: DEFAULT_EXT_AUTHZ_EDGE_TIMEOUT,
        }
    }
}

/// By when, counted from the question's arrival, robotgate answers an edge
/// whose deadline is `edge`: a fifth of it is kept for the answer's way
/// back and for the edge's own queueing before it asked (HAProxy starts
/// `timeout processing` when the message is queued).
pub fn decide_by(edge: Duration) -> Duration {
    edge - edge / 5
}

/// The lookup bounds of `boot` that an edge's [`decide_by`] cuts short:
/// one line each, for `robotgate config check`. Such a lookup is never
/// waited for past the deadline (its request is judged as if it had
/// failed), so a bound past it only means that slow answers are thrown
/// away. The key directory's fetch bound is robotgate's own
/// ([`FetchLimits`]); a directory slower than the deadline is decided
/// unsigned, and its fetch goes on and fills the cache for the next request.
pub fn warnings(boot: &Boot) -> Vec<String> {
    let edges = [
        ("auth.edge_timeout_ms", !boot.auth.is_empty(), boot.edge_timeouts.auth),
        ("spoe.edge_timeout_ms", !boot.spoe.is_empty(), boot.edge_timeouts.spoe),
        ("ext_authz.edge_timeout_ms", !boot.ext_authz.is_empty(), boot.edge_timeouts.ext_authz),
    ];
    let mut lookups = vec![("verify.dns.timeout_ms", boot.dns.timeout)];
    if let Some(state) = &boot.shared_state {
        lookups.push(("state.timeout_ms", state.timeout));
    }
    let mut out = Vec::new();
    for (edge, on, timeout) in edges {
        if !on {
            continue;
        }
        let by = decide_by(timeout);
        for (lookup, bound) in &lookups {
            if *bound > by {
                out.push(format!(
                    "{lookup} ({} ms) is longer than the {} ms robotgate has to answer an edge whose deadline is {edge} ({} ms): a lookup still running then is judged as failed (docs/edge.md, \"Deadlines\")",
                    bound.as_millis(),
                    by.as_millis(),
                    timeout.as_millis()
                ));
            }
        }
    }
    out
}

/// The key-directory fetch bound the table lists (the default [`FetchLimits`]).
pub fn key_directory_bound() -> Duration {
    FetchLimits::default().timeout
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINIMAL: &str = include_str!("../../examples/configs/minimal.yaml");

    #[test]
    fn the_shipped_defaults_leave_room_for_the_default_lookups() {
        let c = crate::config::parse(&format!(
            "{MINIMAL}spoe: {{ listen: [\"127.0.0.1:9\"] }}\next_authz: {{ listen: [\"127.0.0.1:10\"] }}\n"
        ))
        .unwrap();
        let boot = &c.settings.boot;
        assert_eq!(boot.edge_timeouts, EdgeTimeouts::default());
        assert_eq!(decide_by(boot.edge_timeouts.spoe), Duration::from_millis(800));
        assert!(warnings(boot).is_empty(), "{:?}", warnings(boot));
        assert!(key_directory_bound() > decide_by(DEFAULT_SPOE_EDGE_TIMEOUT), "the table says so");
    }

    #[test]
    fn a_lookup_longer_than_the_edge_allows_is_named() {
        let c = crate::config::parse(&format!(
            "{MINIMAL}spoe: {{ listen: [\"127.0.0.1:9\"], edge_timeout_ms: 500 }}\nverify: {{ dns: {{ timeout_ms: 450 }} }}\n"
        ))
        .unwrap();
        let w = warnings(&c.settings.boot);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].starts_with("verify.dns.timeout_ms (450 ms)") && w[0].contains("spoe.edge_timeout_ms (500 ms)"));
        let bad =
            crate::config::parse(&format!("{MINIMAL}ext_authz: {{ listen: [\"127.0.0.1:9\"], edge_timeout_ms: 5 }}\n"))
                .unwrap_err();
        assert!(bad.iter().any(|e| e.to_string().contains("ext_authz.edge_timeout_ms")), "{bad:?}");
    }
}
