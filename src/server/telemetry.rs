//! Logging set-up and Prometheus metrics.
//!
//! Metrics live in the `prometheus` crate's default registry, which
//! robotgate's own `MetricsApp` (in `server`, on the metrics listener) encodes
//! as Prometheus text at `/metrics`. Label
//! values are bounded: sites come from the config, categories and actions are
//! fixed sets, and bot names come only from the bot database (unknown bots are
//! `other`), so a client cannot create series by sending User-Agents. File
//! labels are the operator's own paths (the config's, and the feeds
//! directory's `*.json`).

use std::sync::OnceLock;

use prometheus::{
    register_histogram, register_int_counter, register_int_counter_vec, register_int_gauge, register_int_gauge_vec,
    Histogram, IntCounter, IntCounterVec, IntGauge, IntGaugeVec,
};

use crate::metric;

/// All of robotgate's metrics.
pub struct Metrics {
    /// `robotgate_client_unknown_total{reason}`: requests through a trusted
    /// proxy that named no client address.
    pub client_unknown: IntCounterVec,
    /// `robotgate_requests_total{site,category}`.
    pub requests: IntCounterVec,
    /// `robotgate_violations_total{site,bot,category,action}`.
    pub violations: IntCounterVec,
    /// `robotgate_rate_limited_total{site,bot,directive}`.
    pub rate_limited: IntCounterVec,
    /// `robotgate_files_served_total{site,file}` (robots.txt, humans.txt).
    pub served: IntCounterVec,
    /// `robotgate_preferences_total{site,result}`: requests a usage
    /// preference was in force for, by what came of it (`preference-unknown`:
    /// the robot's purposes are not documented, so it was not judged).
    pub preferences: IntCounterVec,
    /// `robotgate_upstream_errors_total{site,status}`.
    pub upstream_errors: IntCounterVec,
    /// `robotgate_reloads_total`.
    pub reloads: IntCounter,
    /// `robotgate_reload_failures_total`.
    pub reload_failures: IntCounter,
    /// `robotgate_reload_refused_total{file,reason}`: files a reload refused
    /// ([`crate::load::Reason`]), whether the rest was loaded or not.
    pub reload_refused: IntCounterVec,
    /// `robotgate_feed_refresh_failures_total{feed}`: background feed refreshes that kept the old feed.
    pub feed_refresh_failures: IntCounterVec,
    /// `robotgate_feed_age_seconds{feed}`: seconds since each feed in force
    /// was last known current (its own date, or its last successful
    /// refresh); set when scraped, absent when unknown.
    pub feed_age: IntGaugeVec,
    /// `robotgate_robots_info{site,hash}`: 1 for the robots.txt version in force.
    pub robots_info: IntGaugeVec,
    /// `robotgate_decision_seconds`: time to classify and decide a request.
    pub decision_seconds: Histogram,
    /// `robotgate_violation_records_aggregated_total`: violations counted into an aggregate record.
    pub log_aggregated: IntCounter,
    /// `robotgate_violation_records_folded_total`: lines the full queue could not take, kept as repeats.
    pub log_folded: IntCounter,
    /// `robotgate_violation_records_overflow_total`: violations kept only as a count (queue and table full).
    pub log_overflow: IntCounter,
    /// `robotgate_violation_log_reopens_total`: reopens of the file (SIGUSR1 or rotation).
    pub log_reopens: IntCounter,
    /// `robotgate_violation_log_rotations_total`: rotations by size.
    pub log_rotations: IntCounter,
    /// `robotgate_state_errors_total`: shared-store commands and connection attempts that failed or timed out.
    pub state_errors: IntCounter,
    /// `robotgate_state_up`: 1 while the shared store answers (absent without one).
    pub state_up: IntGauge,
    /// `robotgate_certificate_expiry_seconds{site}`: Unix time at which each certificate expires.
    pub certificate_expiry: IntGaugeVec,
    /// `robotgate_request_head_timeouts_total`: connections closed because a
    /// request head was not whole within `limits.request_head_timeout`.
    pub request_head_timeouts: IntCounter,
    /// `robotgate_proxy_protocol_refused_total{reason}`: connections dropped
    /// on a PROXY protocol listener.
    pub proxy_protocol_refused: IntCounterVec,
    /// `robotgate_stale_robots_total{site,bot,action}`: requests only the
    /// current robots.txt disallows, from a crawler still within the grace
    /// of the version it fetched (RFC 9309 2.4): not violations.
    pub stale_robots: IntCounterVec,
    /// `robotgate_one_client_warning`: 1 while most traffic comes from
    /// loopback or private addresses carrying forwarding headers and
    /// `trusted_proxies` is empty.
    pub one_client: IntGauge,
    /// `robotgate_auth_refused_total`: edge subrequests answered 400 because
    /// a fact of the original request was missing, doubled or contradicted
    /// by another header ([`crate::net::edge`]).
    pub edge_refused: IntCounter,
    /// `robotgate_ext_authz_checks_total{result}`: Envoy ext_authz checks
    /// answered: `allowed`, `denied` (robotgate's own answer), `refused`
    /// (400: the check lacked a fact), `timeout` (an error to Envoy, whose
    /// `failure_mode_allow` decides).
    pub ext_authz_checks: IntCounterVec,
    /// `robotgate_unreadable_requests_total{reason}`: requests refused
    /// (400, with a record) because their head could not be read as sent
    /// (`control-byte`, `too-many-fields`: [`crate::head`]).
    pub unreadable: IntCounterVec,
    /// `robotgate_identity_unchecked_total{bot,reason}`: claims that only
    /// reverse DNS could settle and that it did not (`timeout`, `busy`,
    /// `resolver`): judged as the robot they claim, unverified.
    pub identity_unchecked: IntCounterVec,
    /// `robotgate_connections_refused_total{listener}`: connections closed at
    /// once because their listener had `max_connections` open.
    pub connections_refused: IntCounterVec,
    /// `robotgate_connections_timed_out_total{listener,phase}`: connections
    /// closed by robotgate's own deadlines: `head` (a request head, an
    /// HTTP/2 handshake or header block, an SPOE frame not whole in time),
    /// `idle` (nothing asked for too long).
    pub connections_timed_out: IntCounterVec,
    /// `robotgate_accept_backoff_total{listener}`: times a listener of
    /// robotgate's own (SPOE, ext_authz) paused accepting because the
    /// process or the system had no file descriptor left ([`crate::server::http::listen`]).
    pub accept_backoff: IntCounterVec,
    /// `robotgate_edge_deadline_total{listener,lookup}`: lookups not waited
    /// for because the edge's deadline came first (`key-directory`, `dns`,
    /// `store`): judged as failed (docs/edge.md, "Deadlines").
    pub edge_deadline: IntCounterVec,
    /// `robotgate_spoe_notifications_total{result}`: HAProxy's
    /// `robotgate-check` messages answered by the SPOE agent: `pass`,
    /// `answer` (robotgate's own answer: a refusal, a 429, a redirect),
    /// `refused` (a fact missing or malformed: 400).
    pub spoe_notifications: IntCounterVec,
    /// `robotgate_spoe_failures_total{reason}`: SPOE connections ended by a
    /// protocol failure (the SPOP status's name: `timeout`, `too-big`,
    /// `invalid`, ...), and answers sent without their body because the
    /// frame could not hold it (`body-too-big`).
    pub spoe_failures: IntCounterVec,
}

/// The process-wide metrics (registered on first use).
pub fn metrics() -> &'static Metrics {
    static M: OnceLock<Metrics> = OnceLock::new();
    M.get_or_init(|| Metrics {
        client_unknown: register_int_counter_vec!(
            "robotgate_client_unknown_total",
            "Requests through a trusted proxy whose forwarded header named no client address, by reason",
            &["reason"]
        )
        .expect("metric registers once"),
        requests: register_int_counter_vec!(
            "robotgate_requests_total",
            "Requests by site and requester category",
            &["site", "category"]
        )
        .expect("metric registers once"),
        violations: register_int_counter_vec!(
            "robotgate_violations_total",
            "Requests that break the site's robots.txt, by bot and action taken",
            &["site", "bot", "category", "action", "robots_seen", "identity"]
        )
        .expect("metric registers once"),
        rate_limited: register_int_counter_vec!(
            "robotgate_rate_limited_total",
            "Requests answered 429 for Crawl-delay, Request-rate or Visit-time",
            &["site", "bot", "directive"]
        )
        .expect("metric registers once"),
        preferences: register_int_counter_vec!(
            "robotgate_preferences_total",
            "requests a usage preference (Content-Usage, Content-Signal) was in force for, by result",
            &["site", "result"]
        )
        .expect("metric registers once"),
        served: register_int_counter_vec!(
            "robotgate_files_served_total",
            "robots.txt and humans.txt answered by robotgate",
            &["site", "file"]
        )
        .expect("metric registers once"),
        upstream_errors: register_int_counter_vec!(
            "robotgate_upstream_errors_total",
            "Failed upstream requests by answered status",
            &["site", "status"]
        )
        .expect("metric registers once"),
        reloads: register_int_counter!(metric::RELOADS.name, metric::RELOADS.help).expect("metric registers once"),
        reload_failures: register_int_counter!(metric::RELOAD_FAILURES.name, metric::RELOAD_FAILURES.help)
            .expect("metric registers once"),
        reload_refused: register_int_counter_vec!(
            metric::RELOAD_REFUSED.name,
            metric::RELOAD_REFUSED.help,
            &metric::RELOAD_REFUSED_LABELS
        )
        .expect("metric registers once"),
        feed_refresh_failures: register_int_counter_vec!(
            "robotgate_feed_refresh_failures_total",
            "Background IP range feed refreshes that failed (the old feed stayed)",
            &["feed"]
        )
        .expect("metric registers once"),
        feed_age: register_int_gauge_vec!(metric::FEED_AGE.name, metric::FEED_AGE.help, &["feed"])
        .expect("metric registers once"),
        robots_info: register_int_gauge_vec!(metric::ROBOTS_INFO.name, metric::ROBOTS_INFO.help, &metric::ROBOTS_INFO_LABELS)
        .expect("metric registers once"),
        decision_seconds: register_histogram!(
            metric::DECISION_SECONDS.name,
            metric::DECISION_SECONDS.help,
            metric::decision_buckets()
        )
        .expect("metric registers once"),
        log_aggregated: register_int_counter!(
            "robotgate_violation_records_aggregated_total",
            "Violations counted into an aggregate record instead of a line of their own"
        )
        .expect("metric registers once"),
        log_folded: register_int_counter!(
            "robotgate_violation_records_folded_total",
            "Violation lines the full log queue could not take, kept as repeats for a later record"
        )
        .expect("metric registers once"),
        log_overflow: register_int_counter!(
            "robotgate_violation_records_overflow_total",
            "Violations kept only as a count in an overflow line (log queue and aggregation table full)"
        )
        .expect("metric registers once"),
        log_reopens: register_int_counter!(
            "robotgate_violation_log_reopens_total",
            "Reopens of the violation log file (SIGUSR1 or rotation)"
        )
        .expect("metric registers once"),
        log_rotations: register_int_counter!(
            "robotgate_violation_log_rotations_total",
            "Rotations of the violation log file by size"
        )
        .expect("metric registers once"),
        state_errors: register_int_counter!(
            "robotgate_state_errors_total",
            "Shared state store commands and connection attempts that failed or timed out"
        )
        .expect("metric registers once"),
        state_up: register_int_gauge!(metric::STATE_UP.name, metric::STATE_UP.help)
            .expect("metric registers once"),
        certificate_expiry: register_int_gauge_vec!(
            "robotgate_certificate_expiry_seconds",
            "Unix time at which each HTTPS certificate in force expires (site, or `listen ADDRESS`)",
            &["site"]
        )
        .expect("metric registers once"),
        spoe_notifications: register_int_counter_vec!(
            "robotgate_spoe_notifications_total",
            "robotgate-check messages answered by the SPOE agent, by result (pass, answer, refused)",
            &["result"]
        )
        .expect("metric registers once"),
        spoe_failures: register_int_counter_vec!(
            "robotgate_spoe_failures_total",
            "SPOE connections ended by a protocol failure, and answers sent without their body (body-too-big), by reason",
            &["reason"]
        )
        .expect("metric registers once"),
        edge_refused: register_int_counter!(
            "robotgate_auth_refused_total",
            "Edge subrequests answered 400: a fact of the original request missing, doubled or contradicted"
        )
        .expect("metric registers once"),
        ext_authz_checks: register_int_counter_vec!(
            "robotgate_ext_authz_checks_total",
            "Envoy ext_authz checks answered: allowed, denied, refused (a fact missing), timeout",
            &["result"]
        )
        .expect("metric registers once"),
        unreadable: register_int_counter_vec!(
            "robotgate_unreadable_requests_total",
            "Requests refused because their head could not be read as sent (a control byte in a field value, too many fields)",
            &["reason"]
        )
        .expect("metric registers once"),
        identity_unchecked: register_int_counter_vec!(
            "robotgate_identity_unchecked_total",
            "Robot claims only reverse DNS could settle, left unverified because the lookup could not be made",
            &["bot", "reason"]
        )
        .expect("metric registers once"),
        connections_refused: register_int_counter_vec!(
            "robotgate_connections_refused_total",
            "Connections closed at once because their listener had max_connections open",
            &["listener"]
        )
        .expect("metric registers once"),
        connections_timed_out: register_int_counter_vec!(
            "robotgate_connections_timed_out_total",
            "Connections closed by robotgate's deadlines: head (a head, handshake or frame not whole in time), idle",
            &["listener", "phase"]
        )
        .expect("metric registers once"),
        accept_backoff: register_int_counter_vec!(
            "robotgate_accept_backoff_total",
            "Pauses of a listener's accepting because no file descriptor was left",
            &["listener"]
        )
        .expect("metric registers once"),
        edge_deadline: register_int_counter_vec!(
            "robotgate_edge_deadline_total",
            "Lookups not waited for because the edge's deadline came first, judged as failed",
            &["listener", "lookup"]
        )
        .expect("metric registers once"),
        request_head_timeouts: register_int_counter!(
            "robotgate_request_head_timeouts_total",
            "Connections closed because a request head was not whole within limits.request_head_timeout"
        )
        .expect("metric registers once"),
        proxy_protocol_refused: register_int_counter_vec!(
            "robotgate_proxy_protocol_refused_total",
            "Connections dropped on a PROXY protocol listener: untrusted_peer, missing, invalid, too_long, timeout, closed",
            &["reason"]
        )
        .expect("metric registers once"),
        stale_robots: register_int_counter_vec!(
            "robotgate_stale_robots_total",
            "Requests only the current robots.txt disallows, from crawlers within the grace of the version they fetched (not violations)",
            &["site", "bot", "action"]
        )
        .expect("metric registers once"),
        one_client: register_int_gauge!(metric::ONE_CLIENT_WARNING.name, metric::ONE_CLIENT_WARNING.help)
        .expect("metric registers once"),
    })
}

/// Set up `tracing` (JSON lines on stderr) with the `log` bridge so Pingora's
/// records arrive too. `level` is `error`, `warn`, `info`, `debug` or `trace`;
/// `RUST_LOG` overrides it.
pub fn init_logging(level: &str) {
    use tracing_subscriber::{fmt, EnvFilter};
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(level));
    let _ = fmt().json().with_env_filter(filter).with_writer(std::io::stderr).with_current_span(false).try_init();
}
