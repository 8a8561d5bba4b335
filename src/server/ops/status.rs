//! What the status page (`metrics.status_page`) shows, kept in memory: the
//! last violations of each site in a bounded ring (the request path only
//! appends, folding a repeat of the newest into its `count`), the last
//! reload's result, and the counters the metrics already keep.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Mutex, OnceLock};

use prometheus::core::Collector;

use crate::agent::Category;
use crate::indexing::{Observed, Told};
use crate::record::Record;
use crate::report::aggregate::{clip, MAX_NAME};
use crate::report::render::status::{BotCount, Paging, ReloadStatus, SiteStatus, StateStatus, StatusView};
use crate::report::sketch::TopCounts;
use crate::report::FingerprintReport;
use crate::server::snapshot::Snapshot;
use crate::server::store::redis::{unix_ms, SharedStore};
use crate::server::telemetry::metrics;
use crate::time::rfc3339_ms;

/// Violations kept per site.
pub const RECENT: usize = 100;

/// JA4 fingerprints of disguised robots listed per site (issue #67): the
/// most frequent, whatever fingerprints a client makes up ([`TopCounts`]
/// holds at most twice this many).
pub const FINGERPRINTS: usize = 20;

/// Sites kept (more than any configuration has; names of sites removed by
/// a reload stay until the process ends).
const MAX_SITES: usize = 1_000;

/// The process's status board.
pub struct Board {
    started_ms: u64,
    recent: Mutex<Vec<(String, VecDeque<Record>)>>,
    reload: Mutex<Option<ReloadStatus>>,
    warning: Mutex<Option<&'static str>>,
    /// What origins' pages said about indexing, per site (`indexing.observe`).
    observed: Mutex<Vec<(String, Observed)>>,
    /// Disguised robots' violations per JA4 fingerprint, per site.
    fingerprints: Mutex<Vec<(String, TopCounts)>>,
}

/// Pages remembered per site (`indexing.observe`).
pub const OBSERVED_PAGES: usize = 10_000;

/// Bytes remembered per site (`indexing.observe`), as
/// [`crate::indexing::page_size`] counts them: past it, the page noted
/// least recently is forgotten. With the terms a page's tags keep bounded
/// ([`crate::indexing::meta::MAX_TAGS`], [`crate::indexing::meta::MAX_OTHER_TERMS`]),
/// what clients can make the proxy hold for `observe` is this per site.
pub const OBSERVED_BYTES: usize = 4 << 20;

/// The board (made on first use; `serve` touches it at start).
pub fn board() -> &'static Board {
    static B: OnceLock<Board> = OnceLock::new();
    B.get_or_init(|| Board {
        started_ms: unix_ms(),
        recent: Mutex::new(Vec::new()),
        reload: Mutex::new(None),
        warning: Mutex::new(None),
        observed: Mutex::new(Vec::new()),
        fingerprints: Mutex::new(Vec::new()),
    })
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The entry of `site` in a per-site table, made by `new` when the table
/// has room for it ([`MAX_SITES`]); `None` past it.
fn of_site<'t, T>(sites: &'t mut Vec<(String, T)>, site: &str, new: impl FnOnce() -> T) -> Option<&'t mut T> {
    let i = match sites.iter().position(|(name, _)| name == site) {
        Some(i) => i,
        None if sites.len() < MAX_SITES => {
            sites.push((site.to_owned(), new()));
            sites.len() - 1
        }
        None => return None,
    };
    Some(&mut sites[i].1)
}

/// Whether `b` repeats `a` (same client, robot, request and rule).
fn repeats(a: &Record, b: &Record) -> bool {
    a.client == b.client
        && a.bot == b.bot
        && a.path == b.path
        && a.directive == b.directive
        && a.line == b.line
        && a.action == b.action
        && a.user_agent == b.user_agent
}

impl Board {
    /// Note a violation. A repeat of the site's newest is folded into it;
    /// anything else is copied in, and the oldest goes past [`RECENT`].
    pub fn push(&self, rec: &Record) {
        self.count_fingerprint(rec);
        let mut sites = lock(&self.recent);
        let Some(ring) = of_site(&mut sites, &rec.site, || VecDeque::with_capacity(RECENT)) else { return };
        if let Some(newest) = ring.back_mut().filter(|n| repeats(n, rec)) {
            newest.count = newest.count.saturating_add(rec.count);
            newest.first.get_or_insert_with(|| newest.time.clone());
            newest.time.clone_from(&rec.time);
            newest.status = rec.status;
            return;
        }
        if ring.len() == RECENT {
            ring.pop_front();
        }
        ring.push_back(rec.clone());
    }

    /// Count a disguised robot's violation under its connection's JA4.
    fn count_fingerprint(&self, rec: &Record) {
        let Some(ja4) = rec.ja4.as_deref().filter(|j| !j.is_empty() && rec.category == Category::Disguised.as_str())
        else {
            return;
        };
        let mut sites = lock(&self.fingerprints);
        if let Some(top) = of_site(&mut sites, &rec.site, || TopCounts::new(FINGERPRINTS)) {
            top.add(clip(ja4, MAX_NAME), rec.count.max(1));
        }
    }

    /// Note what a page of `site` (`path`: without its query) said about
    /// indexing (its META tags and `X-Robots-Tag`), replacing what it said before. Returns whether the
    /// page said something new (a silent page is never news).
    pub fn told(&self, site: &str, path: &str, told: Told) -> bool {
        let mut sites = lock(&self.observed);
        if told.is_empty() {
            // Most pages say nothing: only forget what one said before.
            if let Some((_, pages)) = sites.iter_mut().find(|(name, _)| name == site) {
                pages.forget(path);
            }
            return false;
        }
        match of_site(&mut sites, site, || Observed::new(OBSERVED_PAGES, OBSERVED_BYTES)) {
            Some(pages) => pages.note(path, told, unix_ms()),
            None => false,
        }
    }

    /// Show a warning about the set-up, or none ([`super::crowd`]).
    pub fn warn(&self, warning: Option<&'static str>) {
        *lock(&self.warning) = warning;
    }

    /// Note a reload's result.
    pub fn reloaded(&self, ok: bool, message: String) {
        *lock(&self.reload) = Some(ReloadStatus { at: rfc3339_ms(unix_ms()), ok, message });
    }

    /// What the page shows, for the snapshot in force.
    pub fn view(&self, snap: &Snapshot, store: Option<&SharedStore>, pick: &Pick) -> StatusView {
        let mut counts: BTreeMap<(String, String, String), u64> = BTreeMap::new();
        for family in metrics().violations.collect() {
            for m in family.get_metric() {
                let label = |name: &str| {
                    m.get_label().iter().find(|l| l.get_name() == name).map_or("", |l| l.get_value()).to_owned()
                };
                *counts.entry((label("site"), label("bot"), label("category"))).or_default() +=
                    m.get_counter().get_value() as u64;
            }
        }
        let recent = lock(&self.recent);
        let observed = lock(&self.observed);
        let fingerprints = lock(&self.fingerprints);
        let loaded_at =
            rfc3339_ms(snap.read_at.duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64));
        let total = snap.sites.len();
        let limit = pick.limit.clamp(1, MAX_PAGE);
        let pages = total.div_ceil(limit);
        let (page, shown): (usize, Vec<&std::sync::Arc<crate::load::LiveSite>>) = match &pick.site {
            Some(name) => (1, snap.sites.iter().filter(|s| s.conf.name == *name).collect()),
            None => {
                let page = pick.page.max(1);
                (page, snap.sites.iter().skip((page - 1).saturating_mul(limit)).take(limit).collect())
            }
        };
        let sites = shown
            .into_iter()
            .map(|site| {
                let name = site.conf.name.clone();
                let mut bots: Vec<BotCount> = counts
                    .iter()
                    .filter(|((s, _, _), _)| *s == name)
                    .map(|((_, bot, category), n)| BotCount {
                        bot: bot.clone(),
                        category: category.clone(),
                        violations: *n,
                    })
                    .collect();
                bots.sort_by(|a, b| b.violations.cmp(&a.violations).then_with(|| a.bot.cmp(&b.bot)));
                let recent = recent
                    .iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, ring)| ring.iter().rev().cloned().collect())
                    .unwrap_or_default();
                let hidden_noindex = match (observed.iter().find(|(n, _)| *n == name), &site.robots) {
                    (Some((_, pages)), Some(robots)) => {
                        let mut hidden = pages.hidden(&robots.compiled);
                        for h in &mut hidden {
                            h.robots_line = robots.lines.file_line(h.robots_line).unwrap_or(h.robots_line);
                        }
                        hidden
                    }
                    _ => Vec::new(),
                };
                let (disguised_fingerprints, disguised_fingerprints_floor) =
                    match fingerprints.iter().find(|(n, _)| *n == name) {
                        Some((_, top)) => (
                            top.top(FINGERPRINTS)
                                .into_iter()
                                .map(|(ja4, violations, error)| FingerprintReport {
                                    ja4: ja4.to_owned(),
                                    violations,
                                    error,
                                })
                                .collect(),
                            top.floor(),
                        ),
                        None => (Vec::new(), 0),
                    };
                SiteStatus {
                    disguised_fingerprints,
                    disguised_fingerprints_floor,
                    hidden_noindex,
                    robots_hash: site.robots.as_ref().map_or_else(String::new, |r| r.hash.clone()),
                    loaded_at: loaded_at.clone(),
                    name,
                    bots,
                    recent,
                }
            })
            .collect();
        let state = match store {
            None => StateStatus { backend: "memory", up: None, url: None, errors: 0 },
            Some(s) => StateStatus {
                backend: "redis",
                up: Some(s.is_up()),
                url: Some(s.redacted_url()),
                errors: metrics().state_errors.get(),
            },
        };
        StatusView {
            feeds: feeds_view(snap),
            version: env!("CARGO_PKG_VERSION"),
            started: rfc3339_ms(self.started_ms),
            now: rfc3339_ms(unix_ms()),
            last_reload: lock(&self.reload).clone(),
            warnings: lock(&self.warning).iter().map(|w| (*w).to_owned()).collect(),
            state,
            sites,
            paging: Paging { total, page, limit, pages },
        }
    }
}

/// The most sites one status page shows.
pub const MAX_PAGE: usize = 500;

/// Sites one status page shows unless asked (`?limit=`).
pub const DEFAULT_PAGE: usize = 50;

/// Which sites a status view shows: `?site=NAME`, or `?page=N&limit=M`
/// (from 1; at most [`MAX_PAGE`] a page, [`DEFAULT_PAGE`] by default).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pick {
    /// One site by name.
    pub site: Option<String>,
    /// The page, from 1.
    pub page: usize,
    /// Sites a page.
    pub limit: usize,
}

impl Pick {
    /// Read from a request's query; what does not parse is the default.
    pub fn from_query(query: Option<&str>) -> Pick {
        let mut pick = Pick { site: None, page: 1, limit: DEFAULT_PAGE };
        for pair in query.unwrap_or("").split('&').take(16) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            match k {
                "page" => pick.page = v.parse().unwrap_or(1),
                "limit" => pick.limit = v.parse::<usize>().map_or(DEFAULT_PAGE, |n| n.clamp(1, MAX_PAGE)),
                "site" => pick.site = Some(query_value(v)),
                _ => {}
            }
        }
        pick
    }
}

/// A query value with `+` and `%XX` decoded (lossy UTF-8).
fn query_value(v: &str) -> String {
    let (b, mut out, mut i) = (v.as_bytes(), Vec::with_capacity(v.len()), 0);
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => match (hex(b[i + 1]), hex(b[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push((h * 16 + l) as u8);
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The feeds in force, how old each is, and what its refresh last said.
fn feeds_view(snap: &Snapshot) -> Vec<crate::report::render::status::FeedStatus> {
    let now = unix_ms() / 1000;
    let max_age = snap.settings.boot.verify.refresh.map(|d| d.as_secs());
    snap.ranges
        .feeds()
        .iter()
        .map(|f| crate::report::render::status::FeedStatus {
            name: f.name.clone(),
            date: f.creation_time.clone(),
            as_of: f.as_of.map(|t| rfc3339_ms(t.saturating_mul(1000))),
            age_seconds: f.age(now),
            current: max_age.is_none_or(|m| f.is_fresh(now, m)),
            refresh_error: crate::server::verify::feeds::refresh_error(&f.name),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(client: &str, path: &str) -> Record {
        Record {
            time: "2026-11-23T10:00:00.000Z".into(),
            site: "s".into(),
            client: client.into(),
            method: "GET".into(),
            path: path.into(),
            host: "h".into(),
            user_agent: "GPTBot".into(),
            bot: Some("GPTBot".into()),
            claims: Vec::new(),
            category: "ai-crawler",
            group: None,
            directive: "disallow",
            pattern: None,
            line: Some(2),
            robots_hash: String::new(),
            managed: false,
            robots_seen: None,
            fetched_hash: None,
            fetched_at: None,
            reason: None,
            identity: None,
            evidence: None,
            signs: Vec::new(),
            ja4: None,
            action: "block",
            status: 403,
            count: 1,
            first: None,
            last: None,
        }
    }

    #[test]
    fn the_ring_folds_repeats_and_keeps_the_last_hundred() {
        let b = Board {
            started_ms: 0,
            recent: Mutex::new(Vec::new()),
            reload: Mutex::new(None),
            warning: Mutex::new(None),
            observed: Mutex::new(Vec::new()),
            fingerprints: Mutex::new(Vec::new()),
        };
        for _ in 0..5 {
            b.push(&rec("192.0.2.1", "/p"));
        }
        {
            let sites = lock(&b.recent);
            assert_eq!(sites[0].1.len(), 1);
            assert_eq!(sites[0].1[0].count, 5);
        }
        for i in 0..250 {
            b.push(&rec("192.0.2.1", &format!("/p{i}")));
        }
        let sites = lock(&b.recent);
        assert_eq!(sites[0].1.len(), RECENT);
        assert_eq!(sites[0].1.back().unwrap().path, "/p249");
        assert_eq!(sites[0].1.front().unwrap().path, "/p150");
        // None of these was disguised: no fingerprint is counted.
        assert!(lock(&b.fingerprints).is_empty());
    }

    /// Issue #67: a disguised robot's violations are counted under its JA4,
    /// however many fingerprints clients make up; another category's
    /// fingerprint is not counted.
    #[test]
    fn disguised_robots_are_counted_per_fingerprint_in_a_bounded_table() {
        let b = board();
        let mut r = rec("192.0.2.1", "/p");
        r.site = "fingerprints".into();
        r.ja4 = Some("t13d1812h1_85036bcba153_b26ce05bbdd6".into());
        b.push(&r);
        r.category = Category::Disguised.as_str();
        for i in 0..1_000 {
            b.push(&r);
            let mut made_up = r.clone();
            made_up.ja4 = Some(format!("t13d0000h2_{i:012}_000000000000"));
            b.push(&made_up);
        }
        let sites = lock(&b.fingerprints);
        let top = &sites.iter().find(|(n, _)| n == "fingerprints").unwrap().1;
        assert!(top.len() <= 2 * FINGERPRINTS);
        assert_eq!(top.top(1)[0].0, "t13d1812h1_85036bcba153_b26ce05bbdd6");
        let (_, count, error) = top.top(1)[0];
        assert!(count - error <= 1_000 && count >= 1_000, "{count} {error}");
    }
}
