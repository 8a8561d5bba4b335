//! Say when the set-up makes everyone look like one client (issue #27,
//! part 4).
//!
//! Behind a load balancer that `trusted_proxies` does not name, every
//! client is the balancer's address: crawlers cannot be verified, and one
//! trap hit would ban everyone. Each request adds to a few atomic counters
//! ([`Crowd::note`], the core's, which the nginx module shares); once a
//! second a background task folds them into the last minute and judges it
//! ([`Crowd::tick`]):
//!
//! * when over 90% of the minute's requests (at least [`MIN_REQUESTS`]) came
//!   from loopback or private addresses, at least one carried
//!   `X-Forwarded-For` or `Forwarded`, and `trusted_proxies` is empty, it
//!   logs one warning naming `trusted_proxies` (again at most hourly), sets
//!   `robotgate_one_client_warning` and shows it on the status page;
//! * a loopback or private address that sent over half of the minute's
//!   requests (found by a majority vote kept in one atomic word) is the
//!   *crowd's* address: a trap hit from it is recorded but bans no one ([`crate::policy::RequestFacts::crowd`]).

use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use async_trait::async_trait;
use pingora::server::ShutdownWatch;
use pingora::services::background::BackgroundService;

pub use crate::state::crowd::{Crowd, MIN_REQUESTS};

use crate::server::snapshot::Snapshot;
use crate::server::store::redis::unix_ms;
use crate::server::telemetry::metrics;

/// The warning's text (also on the status page).
pub const WARNING: &str = "over 90% of the last minute's requests came from loopback or private addresses with X-Forwarded-For or Forwarded, and trusted_proxies is empty: every client looks like the proxy in front. Name that proxy in trusted_proxies; until then robots cannot be verified, and trap hits from its address ban no one";

/// The background task that judges each second's minute.
pub struct Judge {
    /// The counters the proxy adds to.
    pub crowd: Arc<Crowd>,
    /// The snapshot in force (for `trusted_proxies`).
    pub snapshot: Arc<ArcSwap<Snapshot>>,
}

#[async_trait]
impl BackgroundService for Judge {
    async fn start(&self, mut shutdown: ShutdownWatch) {
        let mut every = tokio::time::interval(Duration::from_secs(1));
        loop {
            tokio::select! {
                _ = every.tick() => {
                    let no_trusted = self.snapshot.load().settings.trusted_proxies.is_empty();
                    if self.crowd.tick(no_trusted, unix_ms()) {
                        tracing::warn!(target: "robotgate::setup", setting = "trusted_proxies", "{WARNING}");
                    }
                    metrics().one_client.set(i64::from(self.crowd.active()));
                    crate::server::ops::status::board().warn(self.crowd.active().then_some(WARNING));
                }
                _ = shutdown.changed() => break,
            }
        }
    }
}
