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

use robotgate::metric::{self, write_head, write_sample};

use crate::worker::{STORE, WORKER};
use crate::{store, zone, MainConf};

/// Everything a scrape serves, as Prometheus text (the families and their
/// order as every module's: [`robotgate_embed::metrics::render`]).
pub(crate) fn render(main: &MainConf, shared: &zone::Shared) -> String {
    let mut out = String::with_capacity(16 << 10);
    // The worker's snapshot (each worker reloads on its own: a scrape
    // amid a reload may see the one before).
    let live = WORKER.with(|w| w.try_borrow().ok().and_then(|w| w.live.clone()));
    let snap = live.as_ref().or(main.snapshot.as_ref()).map(|s| &**s);
    robotgate_embed::metrics::render(&mut out, (&shared.series, &shared.decisions, shared.crowd.active()), snap);
    // `state.redis` configured: this worker's connection to it.
    if let Some(up) = STORE.with_borrow(|s| s.as_ref().map(store::Store::is_up)) {
        write_head(&mut out, &metric::STATE_UP, "gauge");
        write_sample(&mut out, metric::STATE_UP.name, &[], &[], u8::from(up));
    }
    out
}
