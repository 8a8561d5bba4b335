//! Say when the set-up makes everyone look like one client (issue #27,
//! part 4).
//!
//! Behind a load balancer that `trusted_proxies` does not name, every
//! client is the balancer's address: crawlers cannot be verified, and one
//! trap hit would ban everyone. Each request adds to a few atomic counters
//! ([`Crowd::note`]: no lock, no clock); once a second a background task
//! folds them into the last minute (60 one-second slots) and judges it:
//!
//! * when over 90% of the minute's requests (at least [`MIN_REQUESTS`]) came
//!   from loopback or private addresses, at least one carried
//!   `X-Forwarded-For` or `Forwarded`, and `trusted_proxies` is empty, it
//!   logs one warning naming `trusted_proxies` (again at most hourly), sets
//!   `robotgate_one_client_warning` and shows it on the status page;
//! * a loopback or private address that sent over half of the minute's
//!   requests (found by a majority vote kept in one atomic word) is the
//!   *crowd's* address: a trap hit from it is recorded but bans no one ([`crate::policy::RequestFacts::crowd`]).

use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arc_swap::ArcSwap;
use async_trait::async_trait;
use pingora::server::ShutdownWatch;
use pingora::services::background::BackgroundService;

use crate::server::snapshot::Snapshot;
use crate::server::store::redis::unix_ms;
use crate::server::telemetry::metrics;
use crate::state::shared::fnv1a;

/// Fewer requests in a minute than this say nothing about a set-up.
pub const MIN_REQUESTS: u64 = 10;

/// The warning's text (also on the status page).
pub const WARNING: &str = "over 90% of the last minute's requests came from loopback or private addresses with X-Forwarded-For or Forwarded, and trusted_proxies is empty: every client looks like the proxy in front. Name that proxy in trusted_proxies; until then robots cannot be verified, and trap hits from its address ban no one";

/// The counters of the current second, and what the last minute made of them.
#[derive(Default)]
pub struct Crowd {
    total: AtomicU64,
    local: AtomicU64,
    forwarded: AtomicU64,
    /// Requests from the vote's candidate at the time.
    leader_hits: AtomicU64,
    /// Majority vote (Boyer-Moore): candidate hash (high 32 bits), its count.
    vote: AtomicU64,
    /// The candidate sent over half of the last minute's requests.
    dominant: AtomicBool,
    /// The warning holds for the last minute.
    active: AtomicBool,
    /// The 60 one-second slots: total, local, forwarded, leader hits.
    minute: Mutex<Vec<[u64; 4]>>,
    warned_ms: AtomicU64,
}

fn hash(ip: IpAddr) -> u32 {
    let h = match ip {
        IpAddr::V4(v4) => fnv1a(&v4.octets()),
        IpAddr::V6(v6) => fnv1a(&v6.octets()),
    };
    (h ^ (h >> 32)) as u32 | 1 // never 0: an empty vote
}

impl Crowd {
    /// Count a request from `client` (after trusted proxies), which carried
    /// a forwarding header or not. Returns whether `client` is a loopback or
    /// private address that most of the last minute's traffic came from. Cost: four relaxed
    /// atomic adds and one compare-and-swap loop; no lock.
    pub fn note(&self, client: Option<IpAddr>, forwarded: bool) -> bool {
        self.total.fetch_add(1, Relaxed);
        if forwarded {
            self.forwarded.fetch_add(1, Relaxed);
        }
        let Some(ip) = client else { return false };
        let local = crate::identity::is_local(ip);
        if local {
            self.local.fetch_add(1, Relaxed);
        }
        let h = hash(ip);
        let before = self
            .vote
            .fetch_update(Relaxed, Relaxed, |w| {
                let (cand, n) = ((w >> 32) as u32, w as u32);
                Some(if cand == h {
                    (u64::from(h) << 32) | u64::from(n.saturating_add(1))
                } else if n == 0 {
                    (u64::from(h) << 32) | 1
                } else {
                    (u64::from(cand) << 32) | u64::from(n - 1)
                })
            })
            .unwrap_or_default();
        let leader = (before >> 32) as u32 == h;
        if leader {
            self.leader_hits.fetch_add(1, Relaxed);
        }
        // Only a loopback or private address: a public one sending most of
        // a small site's traffic may be the scraper itself, which must not
        // buy itself out of trap bans by sending more.
        leader && local && self.dominant.load(Relaxed)
    }

    /// Whether the warning holds for the last minute.
    pub fn active(&self) -> bool {
        self.active.load(Relaxed)
    }

    /// Fold this second's counts into the minute and judge it; returns
    /// whether a warning is to be logged now.
    fn tick(&self, no_trusted_proxies: bool, now_ms: u64) -> bool {
        let second = [&self.total, &self.local, &self.forwarded, &self.leader_hits].map(|c| c.swap(0, Relaxed));
        let sum = {
            let mut minute = self.minute.lock().unwrap_or_else(|e| e.into_inner());
            if minute.len() == 60 {
                minute.remove(0);
            }
            minute.push(second);
            minute.iter().fold([0u64; 4], |a, s| [a[0] + s[0], a[1] + s[1], a[2] + s[2], a[3] + s[3]])
        };
        let [total, local, forwarded, leader] = sum;
        let enough = total >= MIN_REQUESTS;
        self.dominant.store(enough && leader * 2 > total, Relaxed);
        let active = enough && no_trusted_proxies && forwarded > 0 && local * 10 > total * 9;
        self.active.store(active, Relaxed);
        metrics().one_client.set(i64::from(active));
        let last = self.warned_ms.load(Relaxed);
        let due = active && (last == 0 || now_ms.saturating_sub(last) >= 3_600_000);
        if due {
            self.warned_ms.store(now_ms, Relaxed);
        }
        due
    }
}

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
                    crate::server::ops::status::board().warn(self.crowd.active().then_some(WARNING));
                }
                _ = shutdown.changed() => break,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn most_traffic_from_one_local_address_with_forwarding_headers_warns_hourly() {
        let crowd = Crowd::default();
        let lb: IpAddr = "10.0.0.2".parse().unwrap();
        for i in 0..20 {
            crowd.note(Some(lb), i == 0);
        }
        crowd.note(Some("203.0.113.9".parse().unwrap()), false);
        assert!(crowd.tick(true, 1_000), "warns at once");
        assert!(crowd.active() && crowd.note(Some(lb), false), "the balancer is the crowd's address");
        assert!(!crowd.note(Some("203.0.113.9".parse().unwrap()), false));
        assert!(!crowd.tick(true, 2_000), "not again within the hour");
        assert!(crowd.tick(true, 1_000 + 3_600_000), "again an hour on");
        // With trusted_proxies set, no warning (the crowd is still known).
        assert!(!crowd.tick(false, 9_000_000) && !crowd.active());
        // Public clients, or no forwarding header: nothing to say.
        let quiet = Crowd::default();
        for i in 0..100u8 {
            quiet.note(Some(IpAddr::from([198, 51, 100, i])), true);
        }
        assert!(!quiet.tick(true, 1_000) && !quiet.note(Some(IpAddr::from([198, 51, 100, 1])), false));
        let direct = Crowd::default();
        for _ in 0..100 {
            direct.note(Some(lb), false);
        }
        assert!(!direct.tick(true, 1_000));
    }
}
