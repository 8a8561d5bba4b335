//! Web Bot Auth key directories: fetching them, on Pingora (the I/O half of
//! [`crate::identity::signature`]).
//!
//! The rules and the cache are the core's ([`fetch`]): https only, no
//! redirects, every resolved address checked, body, key count and time
//! capped, keys kept an hour and failures five minutes per agent URL, in a
//! bounded table. Here: resolving, connecting to a checked address, and
//! reading the response through Pingora's connector.
//!
//! `verify.allow_private_directories: true` lifts the address rule and allows
//! plain http, for tests that serve a directory on loopback.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use pingora::connectors::http::v1::Connector;
use pingora::http::RequestHeader;
use pingora::upstreams::peer::HttpPeer;

use crate::identity::signature::fetch::{self, Body, KeyCache, Target};
pub use crate::identity::signature::fetch::{is_public, FetchError, FetchLimits};
use crate::identity::signature::{self, Inspection, KeySet, Limits, RequestParts, Verdict};

/// Agent URL -> its directory's keys, fetched on first use and cached.
pub struct DirectoryCache {
    limits: FetchLimits,
    connector: Connector,
    entries: Mutex<KeyCache>,
    /// Agents whose directory is being fetched, each with the turn its
    /// other askers wait for (at most [`fetch::IN_FLIGHT_MAX`]).
    in_flight: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    fetches: AtomicU64,
}

/// An agent's place in [`DirectoryCache::in_flight`], given up when its
/// fetch ends or its asker goes away.
struct Fetching<'c> {
    cache: &'c DirectoryCache,
    agent: &'c str,
}

impl Drop for Fetching<'_> {
    fn drop(&mut self) {
        lock(&self.cache.in_flight).remove(self.agent);
    }
}

impl DirectoryCache {
    /// An empty cache.
    pub fn new(limits: FetchLimits) -> Self {
        DirectoryCache {
            limits: limits.clone(),
            connector: Connector::new(None),
            entries: Mutex::new(KeyCache::new(limits.clone())),
            in_flight: Mutex::new(HashMap::new()),
            fetches: AtomicU64::new(0),
        }
    }

    /// An empty cache with default limits and the configured
    /// `verify.allow_private_directories`.
    pub fn from_settings(verify: &crate::config::Verify) -> Self {
        Self::new(FetchLimits::allowing_private(verify.allow_private_directories))
    }

    /// How many fetches were started (cache misses), for tests and metrics.
    pub fn fetches(&self) -> u64 {
        self.fetches.load(Ordering::Relaxed)
    }

    /// The keys of `agent`'s directory, from the cache or fetched now.
    ///
    /// One fetch per agent at a time: askers who miss while it runs wait
    /// for it and read what it put in the cache. At most
    /// [`fetch::IN_FLIGHT_MAX`] agents are fetched at once
    /// ([`FetchError::Busy`] past that).
    ///
    /// # Errors
    /// The fetch failed (or failed within the negative TTL); see [`FetchError`].
    pub async fn keys(&self, agent: &str) -> Result<Arc<KeySet>, FetchError> {
        if let Some(known) = lock(&self.entries).get(agent, Instant::now()) {
            return known;
        }
        let (turn, first) = {
            let mut in_flight = lock(&self.in_flight);
            match in_flight.get(agent) {
                Some(turn) => (turn.clone(), false),
                None if in_flight.len() >= fetch::IN_FLIGHT_MAX => return Err(FetchError::Busy),
                None => {
                    let turn = Arc::new(tokio::sync::Mutex::new(()));
                    in_flight.insert(agent.to_owned(), turn.clone());
                    (turn, true)
                }
            }
        };
        // (`then`, not `then_some`: a place made and dropped would give up
        // the first asker's.)
        let _place = first.then(|| Fetching { cache: self, agent });
        let _turn = turn.lock().await;
        // The fetch this one waited for answered for it.
        if let Some(known) = lock(&self.entries).get(agent, Instant::now()) {
            return known;
        }
        self.fetches.fetch_add(1, Ordering::Relaxed);
        let result = match tokio::time::timeout(self.limits.timeout, self.fetch(agent)).await {
            Ok(r) => r.map(Arc::new),
            Err(_) => Err(FetchError::Timeout),
        };
        lock(&self.entries).put(agent, &result, Instant::now());
        result
    }

    async fn fetch(&self, agent: &str) -> Result<KeySet, FetchError> {
        let url = signature::directory_url(agent);
        let body = fetch_bytes(&self.connector, &url, &fetch::accept(), &self.limits).await?;
        Ok(KeySet::from_directory(&body)?)
    }
}

/// A lock of the cache's tables: a panic while one was held leaves a valid
/// table, so it is used on.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// GET `url` within `limits`: no redirects followed, at most
/// `limits.max_bytes`, each step bounded by `limits.timeout`; https and
/// public addresses only unless `limits.allow_private`. Used for Web Bot Auth
/// directories and IP range feeds.
///
/// # Errors
/// See [`FetchError`].
pub async fn fetch_bytes(
    connector: &Connector,
    url: &str,
    accept: &str,
    limits: &FetchLimits,
) -> Result<Vec<u8>, FetchError> {
    let target = Target::check(url, limits)?;
    let addrs: Vec<SocketAddr> = tokio::net::lookup_host((target.host.as_str(), target.port))
        .await
        .map_err(|e| FetchError::Resolve(e.to_string()))?
        .take(fetch::MAX_ADDRESSES)
        .collect();
    fetch::check_addresses(&addrs.iter().map(SocketAddr::ip).collect::<Vec<IpAddr>>(), limits)?;
    let first = addrs[0];
    let mut peer = HttpPeer::new(first, target.tls, target.host.clone());
    peer.options.connection_timeout = Some(limits.timeout);
    peer.options.total_connection_timeout = Some(limits.timeout);
    peer.options.read_timeout = Some(limits.timeout);
    peer.options.write_timeout = Some(limits.timeout);
    let io = |e: Box<pingora::Error>| FetchError::Io(e.to_string());
    let (mut session, _) = connector.get_http_session(&peer).await.map_err(io)?;
    let mut req = RequestHeader::build("GET", target.path.as_bytes(), Some(4)).map_err(io)?;
    req.insert_header("Host", target.authority.as_str()).map_err(io)?;
    req.insert_header("Accept", accept).map_err(io)?;
    req.insert_header("User-Agent", fetch::user_agent()).map_err(io)?;
    req.insert_header("Connection", "close").map_err(io)?;
    session.write_request_header(Box::new(req)).await.map_err(io)?;
    session.finish_body().await.map_err(io)?;
    session.read_response().await.map_err(io)?;
    fetch::check_status(session.get_status().map_or(0, |s| s.as_u16()))?;
    let declared =
        session.get_header("Content-Length").and_then(|v| v.to_str().ok()).and_then(|v| v.trim().parse::<u64>().ok());
    fetch::check_declared(declared, limits.max_bytes)?;
    let mut body = Body::new(limits.max_bytes);
    while let Some(chunk) = session.read_body_bytes().await.map_err(io)? {
        body.push(&chunk)?;
    }
    Ok(body.into_bytes())
}

/// Checks a request's Web Bot Auth signature, fetching the directories of
/// the agents it names through `cache` (at most two agents per request).
///
/// When a needed directory cannot be fetched, the verdict is `Invalid` with
/// [`signature::Reason::DirectoryUnavailable`] (the draft's "unverified": A.1, 5.11).
pub async fn verify_request(cache: &DirectoryCache, req: &RequestParts<'_>, now: u64, limits: &Limits) -> Verdict {
    let inspection = signature::inspect(req, now, limits);
    verify_inspection(cache, &inspection).await
}

/// [`verify_request`] for an already inspected request: the keys of its
/// agents (at most [`fetch::MAX_AGENTS`]) from `cache`, judged by
/// [`fetch::judge`].
pub async fn verify_inspection(cache: &DirectoryCache, inspection: &Inspection) -> Verdict {
    let mut keys: Vec<(String, Arc<KeySet>)> = Vec::new();
    let mut failed = false;
    for agent in fetch::agents(inspection) {
        match cache.keys(agent).await {
            Ok(k) => keys.push((agent.to_owned(), k)),
            Err(_) => failed = true,
        }
    }
    fetch::judge(inspection, &keys, failed)
}
