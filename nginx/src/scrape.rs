//! `robotgate_metrics`'s text: the proxy's families that nginx can keep,
//! with the proxy's names, help, types and bucket bounds
//! ([`robotgate::metric`]).
//!
//! Kept in the zone, by every worker: the counters ([`zone::Shared::series`]),
//! `robotgate_decision_seconds` ([`zone::Shared::decisions`]) and the crowd
//! check's `robotgate_one_client_warning`. Read from the snapshot in force
//! in the worker that takes the scrape: `robotgate_robots_info` (the first
//! `metrics.per_site_limit` sites, as the proxy's) and
//! `robotgate_feed_age_seconds`; and from that worker's connection to the
//! store, `robotgate_state_up`.

use std::sync::Arc;

use robotgate::load::Snapshot;
use robotgate::metric::{self, write_head, write_sample};

use crate::worker::{STORE, WORKER};
use crate::{store, zone, MainConf};

/// The counters whose help the scrape says (the others: their type only).
const HELPS: [metric::Family; 2] = [metric::RELOADS, metric::RELOAD_FAILURES];

/// Everything a scrape serves, as Prometheus text.
pub(crate) fn render(main: &MainConf, shared: &zone::Shared) -> String {
    let mut out = String::with_capacity(16 << 10);
    shared.series.render(&mut out, &HELPS);
    shared.decisions.render(&metric::DECISION_SECONDS, &mut out);
    write_head(&mut out, &metric::ONE_CLIENT_WARNING, "gauge");
    write_sample(&mut out, metric::ONE_CLIENT_WARNING.name, &[], &[], u8::from(shared.crowd.active()));
    // The worker's snapshot (each worker reloads on its own: a scrape
    // amid a reload may see the one before).
    let live = WORKER.with(|w| w.try_borrow().ok().and_then(|w| w.live.clone()));
    if let Some(snap) = live.as_ref().or(main.snapshot.as_ref()) {
        snapshot_gauges(&mut out, snap);
    }
    // `state.redis` configured: this worker's connection to it.
    if let Some(up) = STORE.with_borrow(|s| s.as_ref().map(store::Store::is_up)) {
        write_head(&mut out, &metric::STATE_UP, "gauge");
        write_sample(&mut out, metric::STATE_UP.name, &[], &[], u8::from(up));
    }
    out
}

/// `robotgate_robots_info` and `robotgate_feed_age_seconds` of `snap`,
/// each left out when it has no series (as the proxy's).
fn snapshot_gauges(out: &mut String, snap: &Arc<Snapshot>) {
    let mut versions = snap.robots_versions().peekable();
    if versions.peek().is_some() {
        write_head(out, &metric::ROBOTS_INFO, "gauge");
        for (site, hash) in versions {
            write_sample(out, metric::ROBOTS_INFO.name, &metric::ROBOTS_INFO_LABELS, &[site, hash], 1);
        }
    }
    let now = robotgate::time::Clock::System.unix_secs();
    let mut ages = snap.ranges.ages(now).peekable();
    if ages.peek().is_some() {
        write_head(out, &metric::FEED_AGE, "gauge");
        for (feed, age) in ages {
            write_sample(out, metric::FEED_AGE.name, &["feed"], &[feed], age);
        }
    }
}
