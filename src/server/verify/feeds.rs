//! Keeping the IP range feeds fresh: `robotgate feeds update` and
//! `verify.refresh` (on by default, every 24 hours), the same in the
//! background.
//!
//! A feed is fetched with the bounds of [`wba::fetch_bytes`] (no redirects,
//! at most 4 MiB, 10 s), parsed strictly ([`Feed::parse`]: an empty or
//! malformed feed is an error), held to the embedded snapshot as a floor (a
//! list whose own date is older than the embedded one's is refused) and
//! only then written into the feeds directory, through a temporary file and
//! a rename, so a bad answer never replaces a good feed. The watcher sees
//! the new file and the reload puts it in force; its age counts from then.
//!
//! The refresher keeps one schedule per feed: after a success the next
//! fetch is due in the refresh interval, after a failure in at most an hour
//! (both shortened by up to a tenth, at random, so that instances started
//! together spread out). A round that fails is logged once at `warn`, with
//! each feed's reason; the same failures again are logged at `debug` only,
//! so an instance that cannot reach the operators says so once, not every
//! hour (the feeds' ages on `/status` and in `robotgate_feed_age_seconds`
//! keep showing it).

use std::collections::{BTreeMap, HashMap};
use std::hash::BuildHasher;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use arc_swap::ArcSwap;
use async_trait::async_trait;
use pingora::connectors::http::v1::Connector;
use pingora::server::ShutdownWatch;
use pingora::services::background::BackgroundService;
use tokio::time::Instant;

use crate::identity::{Feed, BUILTIN_FEEDS, FEED_URLS};
use crate::server::snapshot::Snapshot;
use crate::server::verify::wba::{fetch_bytes, FetchLimits};

/// The feeds to fetch: the operators' URLs, with `overrides` (name -> URL)
/// in their place or added.
pub fn sources(overrides: &[(String, String)]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = FEED_URLS
        .iter()
        .filter(|(n, _)| !overrides.iter().any(|(o, _)| o == n))
        .map(|(n, u)| ((*n).to_owned(), (*u).to_owned()))
        .collect();
    out.extend(overrides.iter().cloned());
    out
}

/// Fetch one feed and, when it parses and lists prefixes, write it as
/// `dir/NAME.json`. Returns the feed.
///
/// # Errors
/// What went wrong; the old file, if any, is untouched.
pub async fn update(connector: &Connector, dir: &Path, name: &str, url: &str) -> Result<Feed, String> {
    // Feeds are public data at URLs the operator chose: http and any address are allowed.
    let limits = FetchLimits {
        allow_private: true,
        max_bytes: 4 << 20,
        timeout: Duration::from_secs(10),
        ..FetchLimits::default()
    };
    let body =
        match tokio::time::timeout(limits.timeout, fetch_bytes(connector, url, "application/json", &limits)).await {
            Ok(r) => r.map_err(|e| e.to_string())?,
            Err(_) => return Err("timed out".into()),
        };
    let text = String::from_utf8(body).map_err(|_| "not UTF-8".to_owned())?;
    let feed = Feed::parse(&text).map_err(|e| e.to_string())?;
    if let (Some(embedded), Some(fetched)) = (embedded_date(name), feed.created_unix()) {
        if fetched < embedded {
            let date = feed.creation_time.as_deref().unwrap_or("");
            return Err(format!("its date {date} is older than the embedded list's; the newer list stays"));
        }
    }
    let path = dir.join(format!("{name}.json"));
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, text.as_bytes()).and_then(|()| std::fs::rename(&tmp, &path)).map_err(|e| e.to_string())?;
    Ok(feed)
}

/// The own date of the embedded feed `name`, if it has one.
fn embedded_date(name: &str) -> Option<u64> {
    let text = BUILTIN_FEEDS.iter().find(|(n, _)| *n == name)?.1;
    Feed::parse(text).ok()?.created_unix()
}

/// After a failure, the next try is due in at most this.
pub const RETRY_AFTER_FAILURE: Duration = Duration::from_secs(3600);

/// The first round waits this after start, and up to as long again at
/// random (more when the feeds in force are younger than the refresh
/// interval).
pub const FIRST_ROUND_AFTER: Duration = Duration::from_secs(2);

/// Each feed's last failed refresh since its last success, by name.
fn errors() -> &'static Mutex<HashMap<String, String>> {
    static ERRORS: OnceLock<Mutex<HashMap<String, String>>> = OnceLock::new();
    ERRORS.get_or_init(Mutex::default)
}

/// Why the last refresh of feed `name` failed, when it has not succeeded
/// since.
pub fn refresh_error(name: &str) -> Option<String> {
    errors().lock().unwrap_or_else(|e| e.into_inner()).get(name).cloned()
}

/// Set `robotgate_feed_age_seconds{feed}` from the feeds in force (when
/// `/metrics` is scraped).
pub fn publish_ages(snap: &Snapshot) {
    let gauge = &crate::server::telemetry::metrics().feed_age;
    gauge.reset();
    let now = crate::time::Clock::System.unix_secs();
    for (feed, age) in snap.ranges.ages(now) {
        gauge.with_label_values(&[feed]).set(i64::try_from(age).unwrap_or(i64::MAX));
    }
}

/// A random fraction of `d`.
fn random_part(d: Duration) -> Duration {
    let r = std::collections::hash_map::RandomState::new().hash_one(std::process::id()) % 1000;
    d.mul_f64(r as f64 / 1000.0)
}

/// `d` shortened by up to a tenth, at random.
fn jittered(d: Duration) -> Duration {
    d.saturating_sub(random_part(d / 10))
}

/// `verify.refresh`: fetch the feeds into `dir`, each every `every`.
pub struct Refresher {
    /// The feeds directory (`verify.feeds`, else robotgate's own).
    pub dir: PathBuf,
    /// How often.
    pub every: Duration,
    /// Name -> URL (the operators', with `verify.feed_urls` in their place).
    pub sources: Vec<(String, String)>,
    /// The snapshot in force: the first round waits until its feeds are
    /// due.
    pub snapshot: Arc<ArcSwap<Snapshot>>,
}

impl Refresher {
    /// When each feed is first due: when the one in force grows older than
    /// the interval, and not before [`FIRST_ROUND_AFTER`].
    fn first_due(&self, start: Instant) -> BTreeMap<String, Instant> {
        let snap = self.snapshot.load();
        let now = crate::time::Clock::System.unix_secs();
        // One draw for all: the feeds due at start go in one round.
        let first = FIRST_ROUND_AFTER + random_part(FIRST_ROUND_AFTER);
        self.sources
            .iter()
            .map(|(name, _)| {
                let age = snap.ranges.feed_id(name).and_then(|id| snap.ranges.feed(id).age(now));
                let left = age.map_or(Duration::ZERO, |a| self.every.saturating_sub(Duration::from_secs(a)));
                (name.clone(), start + left.max(first))
            })
            .collect()
    }
}

#[async_trait]
impl BackgroundService for Refresher {
    async fn start(&self, mut shutdown: ShutdownWatch) {
        let connector = Arc::new(Connector::new(None));
        let mut due = self.first_due(Instant::now());
        // What the last failed round said, so that the same is said once.
        let mut last_failures: BTreeMap<String, String> = BTreeMap::new();
        loop {
            let Some(next) = due.values().min().copied() else { return };
            tokio::select! {
                _ = shutdown.changed() => return,
                () = tokio::time::sleep_until(next) => {}
            }
            let now = Instant::now();
            let mut round = tokio::task::JoinSet::new();
            for (name, url) in self.sources.iter().filter(|(n, _)| due.get(n).is_some_and(|t| *t <= now)) {
                let (connector, dir, name, url) = (connector.clone(), self.dir.clone(), name.clone(), url.clone());
                round.spawn(async move {
                    let result = update(&connector, &dir, &name, &url).await;
                    (name, url, result)
                });
            }
            // One draw per round, counted from its start: the feeds of a
            // round stay together in the next.
            let (after_success, after_failure) =
                (now + jittered(self.every), now + jittered(self.every.min(RETRY_AFTER_FAILURE)));
            let mut failures: BTreeMap<String, String> = BTreeMap::new();
            while let Some(done) = round.join_next().await {
                let Ok((name, url, result)) = done else { continue };
                match result {
                    Ok(feed) => {
                        errors().lock().unwrap_or_else(|e| e.into_inner()).remove(&name);
                        due.insert(name.clone(), after_success);
                        tracing::info!(target: "robotgate::feeds", feed = %name, prefixes = feed.prefixes.len(), date = feed.creation_time.as_deref().unwrap_or("-"), "feed refreshed");
                    }
                    Err(e) => {
                        tracing::debug!(target: "robotgate::feeds", feed = %name, url = %url, error = %e, "feed refresh failed");
                        crate::server::telemetry::metrics()
                            .feed_refresh_failures
                            .with_label_values(&[name.as_str()])
                            .inc();
                        errors().lock().unwrap_or_else(|e| e.into_inner()).insert(name.clone(), e.clone());
                        due.insert(name.clone(), after_failure);
                        failures.insert(name, e);
                    }
                }
            }
            if !failures.is_empty() && failures != last_failures {
                let feeds: Vec<&str> = failures.keys().map(String::as_str).collect();
                let reasons: Vec<String> = failures.iter().map(|(n, e)| format!("{n}: {e}")).collect();
                let retry = self.every.min(RETRY_AFTER_FAILURE);
                tracing::warn!(target: "robotgate::feeds", failed = failures.len(), feeds = %feeds.join(", "), errors = %reasons.join("; "), retry_secs = retry.as_secs(), dir = %self.dir.display(), "feed refresh failed; the last good feeds stay in force (never older than the embedded ones), and a complete list older than the refresh interval no longer decides alone: reverse DNS may verify an address outside it");
            }
            if !failures.is_empty() {
                last_failures = failures;
            } else if !last_failures.is_empty() && due.keys().all(|n| refresh_error(n).is_none()) {
                last_failures.clear();
            }
        }
    }
}
