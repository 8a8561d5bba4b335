//! Keeping the IP range feeds fresh: `robotgate feeds update` and, with
//! `verify.refresh`, the same in the background.
//!
//! A feed is fetched with the bounds of [`wba::fetch_bytes`] (no redirects,
//! at most 4 MiB, 10 s), parsed strictly ([`Feed::parse`]: an empty or
//! malformed feed is an error) and only then written into the feeds
//! directory, through a temporary file and a rename, so a bad answer never
//! replaces a good feed. The watcher sees the new file and the reload puts
//! it in force.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use pingora::connectors::http::v1::Connector;
use pingora::server::ShutdownWatch;
use pingora::services::background::BackgroundService;

use crate::identity::{Feed, FEED_URLS};
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
    let path = dir.join(format!("{name}.json"));
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, text.as_bytes()).and_then(|()| std::fs::rename(&tmp, &path)).map_err(|e| e.to_string())?;
    Ok(feed)
}

/// `verify.refresh`: fetch every feed into `dir` every `every`.
pub struct Refresher {
    /// The feeds directory (`verify.feeds`).
    pub dir: PathBuf,
    /// How often.
    pub every: Duration,
    /// Name -> URL (the operators', with `verify.feed_urls` in their place).
    pub sources: Vec<(String, String)>,
}

#[async_trait]
impl BackgroundService for Refresher {
    async fn start(&self, mut shutdown: ShutdownWatch) {
        let connector = Arc::new(Connector::new(None));
        loop {
            tokio::select! {
                _ = shutdown.changed() => return,
                () = tokio::time::sleep(self.every) => {}
            }
            for (name, url) in &self.sources {
                match update(&connector, &self.dir, name, url).await {
                    Ok(feed) => {
                        tracing::info!(target: "robotgate::feeds", feed = %name, prefixes = feed.prefixes.len(), "feed refreshed");
                    }
                    Err(e) => {
                        tracing::warn!(target: "robotgate::feeds", feed = %name, url = %url, error = %e, "feed refresh failed; the last good feed stays");
                        crate::server::telemetry::metrics()
                            .feed_refresh_failures
                            .with_label_values(&[name.as_str()])
                            .inc();
                    }
                }
            }
        }
    }
}
