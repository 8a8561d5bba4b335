//! The proxy's metrics kept by a module in its edge's process, for an edge
//! that has no stats a module can count in (HAProxy; Envoy counts in its
//! own, `envoy/`): the counters of [`families`] and the reloads',
//! `robotgate_decision_seconds`, and the gauges read from the snapshot in
//! force, as Prometheus text for a scrape path the edge serves. The same
//! tables as the nginx module's ([`Series`], [`Histogram`]), here in the
//! process's own memory: every thread counts into one, without a lock.

use std::alloc::Layout;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use robotgate::load::Snapshot;
use robotgate::metric::{self, write_head, write_sample};
use robotgate::state::crowd::Crowd;
use robotgate::state::histogram::Histogram;
use robotgate::state::series::Series;

use crate::decide::families;

/// Series a module keeps (as the nginx module's zone): label values come
/// from bounded sets (sites up to `metrics.per_site_limit`, the database's
/// robots), so this is room, not a bound that is met.
pub const SERIES: usize = 4096;

/// The counters whose help a scrape says (the others: their type only).
const HELPS: [metric::Family; 2] = [metric::RELOADS, metric::RELOAD_FAILURES];

/// A module's counters and decision histogram.
pub struct Metrics {
    series: Series,
    decisions: Histogram,
    /// The memory both are in, freed with them (nothing of theirs is lent
    /// out past a method's call).
    region: *mut u8,
    layout: Layout,
}

// SAFETY: `series` and `decisions` are lock-free tables of atomics, made
// for threads (and processes) counting at once; `region` is only freed.
unsafe impl Send for Metrics {}
// SAFETY: as above.
unsafe impl Sync for Metrics {}

impl Metrics {
    /// Empty tables (zeroed memory, taken from the system as it is touched).
    pub fn new() -> Metrics {
        let series_len = Series::region_bytes(SERIES).next_multiple_of(128);
        let len = series_len + Histogram::region_bytes();
        let layout = Layout::from_size_align(len, 128).unwrap_or_else(|_| unreachable!("a fixed, valid layout"));
        // SAFETY: a layout of non-zero size.
        let region = unsafe { std::alloc::alloc_zeroed(layout) };
        if region.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        // SAFETY: zeroed memory of the tables' sizes, aligned as they ask
        // (the histogram's at a multiple of 128), alive until `drop`, and
        // used by this process only.
        let (series, decisions) = unsafe {
            (
                Series::in_region(region, series_len, SERIES),
                Histogram::in_region(region.add(series_len), Histogram::region_bytes(), &metric::DECISION_BOUNDS_NS),
            )
        };
        let (Some(series), Some(decisions)) = (series, decisions) else {
            unreachable!("the regions are sized and aligned for the tables")
        };
        Metrics { series, decisions, region, layout }
    }

    /// Count one in `family` (one of [`families`]) with label `values`; a
    /// family not among them is not counted.
    pub fn count(&self, family: &str, values: &[&str]) {
        if let Some((name, labels)) = families().into_iter().find(|(name, _)| *name == family) {
            self.series.add(name, labels, values, 1);
        }
    }

    /// The counters' table: where reloads are counted ([`crate::reloads::count`]).
    pub fn series(&self) -> &Series {
        &self.series
    }

    /// Count a failed command of the shared store, as the proxy does.
    pub fn state_error(&self) {
        self.series.add("robotgate_state_errors_total", &[], &[], 1);
    }

    /// Observe a decision's time since `started` (the calling thread's lane).
    pub fn observe(&self, started: Instant) {
        let ns = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.decisions.observe(lane(), ns);
    }

    /// Everything a scrape serves, as Prometheus text: the counters, the
    /// decision histogram, the crowd check's gauge, and `snap`'s gauges.
    pub fn render(&self, snap: &Snapshot, crowd: &Crowd) -> String {
        let mut out = String::with_capacity(16 << 10);
        render(&mut out, (&self.series, &self.decisions, crowd.active()), Some(snap));
        out
    }
}

impl Default for Metrics {
    fn default() -> Metrics {
        Metrics::new()
    }
}

impl Drop for Metrics {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout; the tables are gone
        // with `self`, and nothing of theirs outlives a method's call.
        unsafe { std::alloc::dealloc(self.region, self.layout) };
    }
}

/// The calling thread's lane of the histogram: threads numbered as they
/// first observe (two sharing a lane past [`robotgate::state::histogram::LANES`]
/// still count right: the adds are atomic).
fn lane() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static LANE: usize = NEXT.fetch_add(1, Ordering::Relaxed);
    }
    LANE.with(|l| *l)
}

/// A scrape's text: the counters of `series`, the histogram `decisions`,
/// the crowd check's gauge (`warning`: on), and `snap`'s gauges. The nginx
/// module's scrape (from its zone's tables) and [`Metrics::render`] alike.
pub fn render(out: &mut String, (series, decisions, warning): (&Series, &Histogram, bool), snap: Option<&Snapshot>) {
    series.render(out, &HELPS);
    decisions.render(&metric::DECISION_SECONDS, out);
    write_head(out, &metric::ONE_CLIENT_WARNING, "gauge");
    write_sample(out, metric::ONE_CLIENT_WARNING.name, &[], &[], u8::from(warning));
    if let Some(snap) = snap {
        snapshot_gauges(out, snap);
    }
}

/// `robotgate_robots_info` and `robotgate_feed_age_seconds` of `snap`,
/// each left out when it has no series (as the proxy's).
fn snapshot_gauges(out: &mut String, snap: &Snapshot) {
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

#[cfg(test)]
mod tests {
    use super::Metrics;
    use std::time::Instant;

    #[test]
    fn counts_and_observations_are_in_the_text() {
        let m = Metrics::new();
        m.count("robotgate_requests_total", &["s", "ai-crawler"]);
        m.count("robotgate_requests_total", &["s", "ai-crawler"]);
        m.count("not_a_family", &["x"]);
        crate::reloads::count(Some(m.series()), true, &[]);
        m.observe(Instant::now());
        let mut out = String::new();
        m.series.render(&mut out, &super::HELPS);
        m.decisions.render(&robotgate::metric::DECISION_SECONDS, &mut out);
        assert!(out.contains("robotgate_requests_total{site=\"s\",category=\"ai-crawler\"} 2\n"), "{out}");
        assert!(out.contains("robotgate_reloads_total 1\n"), "{out}");
        assert!(out.contains("robotgate_decision_seconds_count 1\n"), "{out}");
        assert!(!out.contains("not_a_family"), "{out}");
    }
}
