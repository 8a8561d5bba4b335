//! Web Bot Auth key directories: fetching and caching them (the I/O half of
//! [`crate::identity::signature`]).
//!
//! A directory URL comes from the request being judged (`Signature-Agent`),
//! so every fetch is an outbound request an attacker chose. Following the
//! draft's SSRF advice (draft-meunier-webbotauth-httpsig-protocol §5.8, A.3):
//!
//! * https only, no redirects followed (a 3xx is a failure);
//! * the host is resolved here and every address checked: private, loopback,
//!   link-local, CGNAT, multicast and unspecified addresses are refused; the
//!   connection goes to the checked address (no second resolution to race);
//! * the body is capped ([`FetchLimits::max_bytes`], 64 KiB), the key count
//!   ([`signature::MAX_DIRECTORY_KEYS`], 16) and the whole fetch time
//!   ([`FetchLimits::timeout`], 2 s);
//! * results are cached per agent URL: keys for an hour, failures for five
//!   minutes (A.5), in a table of bounded size.
//!
//! `verify.allow_private_directories: true` lifts the address rule and allows
//! plain http, for tests that serve a directory on loopback.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pingora::connectors::http::v1::Connector;
use pingora::http::RequestHeader;
use pingora::upstreams::peer::HttpPeer;

use crate::identity::signature::{self, DirectoryError, Inspection, KeySet, Limits, Reason, RequestParts, Verdict};

/// Bounds on one directory fetch and on the cache.
#[derive(Debug, Clone)]
pub struct FetchLimits {
    /// Allow http and private, loopback and link-local addresses (tests).
    pub allow_private: bool,
    /// Largest body read.
    pub max_bytes: usize,
    /// Wall-clock time for resolving, connecting, sending and reading.
    pub timeout: Duration,
    /// How long fetched keys are used.
    pub positive_ttl: Duration,
    /// How long a failed fetch is remembered.
    pub negative_ttl: Duration,
    /// Most agent URLs cached.
    pub max_entries: usize,
}

impl Default for FetchLimits {
    fn default() -> Self {
        FetchLimits {
            allow_private: false,
            max_bytes: 64 * 1024,
            timeout: Duration::from_secs(2),
            positive_ttl: Duration::from_secs(3600),
            negative_ttl: Duration::from_secs(300),
            max_entries: 1024,
        }
    }
}

/// Why an agent's keys could not be had.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FetchError {
    /// The agent is not an absolute http(s) URL with a host.
    #[error("not a directory URL: {0}")]
    BadUrl(String),
    /// http without `allow_private_directories`.
    #[error("directory must be https")]
    NotHttps,
    /// The host resolves to an address that is not public.
    #[error("directory host resolves to a non-public address {0}")]
    PrivateAddress(IpAddr),
    /// Name resolution failed or gave nothing.
    #[error("cannot resolve directory host: {0}")]
    Resolve(String),
    /// Connecting, sending or reading failed.
    #[error("directory fetch failed: {0}")]
    Io(String),
    /// Over [`FetchLimits::timeout`].
    #[error("directory fetch timed out")]
    Timeout,
    /// A redirect (not followed).
    #[error("directory answered a redirect ({0}), not followed")]
    Redirect(u16),
    /// Any other non-200 status.
    #[error("directory answered status {0}")]
    Status(u16),
    /// Body over [`FetchLimits::max_bytes`].
    #[error("directory larger than {0} bytes")]
    TooLarge(usize),
    /// The body is not a usable directory.
    #[error(transparent)]
    Directory(#[from] DirectoryError),
}

enum Entry {
    Keys(Arc<KeySet>, Instant),
    Failed(FetchError, Instant),
}

impl Entry {
    fn expires(&self) -> Instant {
        match self {
            Entry::Keys(_, t) | Entry::Failed(_, t) => *t,
        }
    }
}

/// Agent URL -> its directory's keys, fetched on first use and cached.
pub struct DirectoryCache {
    limits: FetchLimits,
    connector: Connector,
    entries: Mutex<HashMap<String, Entry>>,
    fetches: AtomicU64,
}

impl DirectoryCache {
    /// An empty cache.
    pub fn new(limits: FetchLimits) -> Self {
        DirectoryCache {
            limits,
            connector: Connector::new(None),
            entries: Mutex::new(HashMap::new()),
            fetches: AtomicU64::new(0),
        }
    }

    /// An empty cache with default limits and the configured
    /// `verify.allow_private_directories`.
    pub fn from_settings(verify: &crate::config::Verify) -> Self {
        Self::new(FetchLimits { allow_private: verify.allow_private_directories, ..FetchLimits::default() })
    }

    /// How many fetches were started (cache misses), for tests and metrics.
    pub fn fetches(&self) -> u64 {
        self.fetches.load(Ordering::Relaxed)
    }

    /// The keys of `agent`'s directory, from the cache or fetched now.
    ///
    /// Concurrent misses for one agent may each fetch (no coalescing yet);
    /// the cache bounds the rate to one fetch per agent per TTL otherwise.
    ///
    /// # Errors
    /// The fetch failed (or failed within the negative TTL); see [`FetchError`].
    pub async fn keys(&self, agent: &str) -> Result<Arc<KeySet>, FetchError> {
        let now = Instant::now();
        if let Some(e) = self.lock().get(agent) {
            if e.expires() > now {
                return match e {
                    Entry::Keys(k, _) => Ok(k.clone()),
                    Entry::Failed(err, _) => Err(err.clone()),
                };
            }
        }
        self.fetches.fetch_add(1, Ordering::Relaxed);
        let result = match tokio::time::timeout(self.limits.timeout, self.fetch(agent)).await {
            Ok(r) => r.map(Arc::new),
            Err(_) => Err(FetchError::Timeout),
        };
        let now = Instant::now();
        let entry = match &result {
            Ok(k) => Entry::Keys(k.clone(), now + self.limits.positive_ttl),
            Err(e) => Entry::Failed(e.clone(), now + self.limits.negative_ttl),
        };
        let mut map = self.lock();
        if map.len() >= self.limits.max_entries && !map.contains_key(agent) {
            map.retain(|_, e| e.expires() > now);
            // Still full: drop the entry closest to expiry. O(n) on a full table only.
            if map.len() >= self.limits.max_entries {
                if let Some(k) = map.iter().min_by_key(|(_, e)| e.expires()).map(|(k, _)| k.clone()) {
                    map.remove(&k);
                }
            }
        }
        map.insert(agent.to_owned(), entry);
        result
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        // A panic while holding the lock leaves a valid map: keep using it.
        self.entries.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    async fn fetch(&self, agent: &str) -> Result<KeySet, FetchError> {
        let url = signature::directory_url(agent);
        let accept = format!("{}, application/json", signature::DIRECTORY_MEDIA_TYPE);
        let body = fetch_bytes(&self.connector, &url, &accept, &self.limits).await?;
        Ok(KeySet::from_directory(&body)?)
    }
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
    let target = Target::parse(url)?;
    if !target.tls && !limits.allow_private {
        return Err(FetchError::NotHttps);
    }
    let addrs: Vec<SocketAddr> = tokio::net::lookup_host((target.host.as_str(), target.port))
        .await
        .map_err(|e| FetchError::Resolve(e.to_string()))?
        .take(16)
        .collect();
    let first = *addrs.first().ok_or_else(|| FetchError::Resolve("no address".into()))?;
    if !limits.allow_private {
        if let Some(bad) = addrs.iter().map(SocketAddr::ip).find(|ip| !is_public(*ip)) {
            return Err(FetchError::PrivateAddress(bad));
        }
    }
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
    req.insert_header("User-Agent", concat!("robotgate/", env!("CARGO_PKG_VERSION"))).map_err(io)?;
    req.insert_header("Connection", "close").map_err(io)?;
    session.write_request_header(Box::new(req)).await.map_err(io)?;
    session.finish_body().await.map_err(io)?;
    session.read_response().await.map_err(io)?;
    let status = session.get_status().map_or(0, |s| s.as_u16());
    if (300..400).contains(&status) {
        return Err(FetchError::Redirect(status));
    }
    if status != 200 {
        return Err(FetchError::Status(status));
    }
    let max = limits.max_bytes;
    let declared =
        session.get_header("Content-Length").and_then(|v| v.to_str().ok()).and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|n| n > max as u64) {
        return Err(FetchError::TooLarge(max));
    }
    let mut body = Vec::new();
    while let Some(chunk) = session.read_body_bytes().await.map_err(io)? {
        if body.len() + chunk.len() > max {
            return Err(FetchError::TooLarge(max));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// Checks a request's Web Bot Auth signature, fetching the directories of
/// the agents it names through `cache` (at most two agents per request).
///
/// When a needed directory cannot be fetched, the verdict is `Invalid` with
/// [`Reason::DirectoryUnavailable`] (the draft's "unverified": A.1, 5.11).
pub async fn verify_request(cache: &DirectoryCache, req: &RequestParts<'_>, now: u64, limits: &Limits) -> Verdict {
    let inspection = signature::inspect(req, now, limits);
    verify_inspection(cache, &inspection).await
}

/// [`verify_request`] for an already inspected request.
pub async fn verify_inspection(cache: &DirectoryCache, inspection: &Inspection) -> Verdict {
    let mut keys: Vec<(String, Arc<KeySet>)> = Vec::new();
    let mut failed = false;
    for agent in inspection.agents().into_iter().take(2) {
        match cache.keys(agent).await {
            Ok(k) => keys.push((agent.to_owned(), k)),
            Err(_) => failed = true,
        }
    }
    match inspection.verify(&keys) {
        Verdict::Invalid { reason: Reason::UnknownKey } if failed && keys.is_empty() => {
            Verdict::Invalid { reason: Reason::DirectoryUnavailable }
        }
        v => v,
    }
}

/// The parts of a directory URL the fetch needs.
struct Target {
    tls: bool,
    host: String,
    port: u16,
    authority: String,
    path: String,
}

impl Target {
    fn parse(url: &str) -> Result<Target, FetchError> {
        let bad = || FetchError::BadUrl(url.to_owned());
        let uri: http::Uri = url.parse().map_err(|_| bad())?;
        let tls = match uri.scheme_str() {
            Some("https") => true,
            Some("http") => false,
            _ => return Err(bad()),
        };
        let authority = uri.authority().ok_or_else(bad)?;
        if authority.as_str().contains('@') {
            return Err(bad());
        }
        let host = authority.host().trim_start_matches('[').trim_end_matches(']').to_owned();
        if host.is_empty() {
            return Err(bad());
        }
        let port = authority.port_u16().unwrap_or(if tls { 443 } else { 80 });
        let path = uri.path_and_query().map_or("/", |p| p.as_str()).to_owned();
        Ok(Target { tls, host, port, authority: authority.as_str().to_owned(), path })
    }
}

/// Whether `ip` is a public unicast address (draft §5.8: no private, loopback
/// or link-local targets; also CGNAT, multicast, unspecified, documentation
/// and IPv4-mapped forms of those).
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_public_v4(v4);
            }
            let s = v6.segments();
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (s[0] & 0xfe00) == 0xfc00 // unique local fc00::/7
                || (s[0] & 0xffc0) == 0xfe80 // link-local fe80::/10
                || (s[0] == 0x2001 && s[1] == 0x0db8) // documentation
                || (s[0] == 0x0064 && s[1] == 0xff9b) // NAT64 (may reach IPv4 private space)
                || v6 == Ipv6Addr::new(0, 0, 0, 0, 0, 0, 0, 1))
        }
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let o = ip.octets();
    !(ip.is_private()
        || ip.is_loopback()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_multicast()
        || ip.is_documentation()
        || o[0] == 0 // "this network"
        || (o[0] == 100 && (o[1] & 0xc0) == 64) // CGNAT 100.64/10
        || (o[0] == 192 && o[1] == 0 && o[2] == 0) // IETF protocol assignments
        || o[0] >= 240) // reserved
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_addresses() {
        for ip in ["8.8.8.8", "1.1.1.1", "2606:4700::1111"] {
            assert!(is_public(ip.parse().unwrap()), "{ip}");
        }
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "255.255.255.255",
            "::1",
            "::",
            "fe80::1",
            "fd00::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "224.0.0.1",
        ] {
            assert!(!is_public(ip.parse().unwrap()), "{ip}");
        }
    }

    #[test]
    fn targets() {
        let t = Target::parse("https://Crawler.example/.well-known/http-message-signatures-directory").unwrap();
        assert!(t.tls);
        assert_eq!((t.host.as_str(), t.port), ("Crawler.example", 443));
        assert_eq!(t.path, "/.well-known/http-message-signatures-directory");
        let t = Target::parse("http://[::1]:8080/x?y").unwrap();
        assert_eq!((t.host.as_str(), t.port, t.path.as_str()), ("::1", 8080, "/x?y"));
        assert!(Target::parse("ftp://x/").is_err());
        assert!(Target::parse("https://user@x/").is_err());
    }
}
