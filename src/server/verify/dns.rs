//! Forward-confirmed reverse DNS over a real resolver (hickory-resolver on
//! tokio): the I/O half of [`crate::identity::rdns`], which judges the answers.
//!
//! A check is a PTR lookup of the client address, then an A (or AAAA) lookup
//! of each PTR name inside the bot's suffixes (at most
//! [`rdns::MAX_FORWARD`]). Everything about it is bounded, because any client
//! can claim to be Googlebot and so make robotgate look its address up:
//!
//! * time: the whole check (PTR and forward) is cut at `timeout` (default
//!   500 ms); a check that runs out is [`DnsVerdict::Unverifiable`];
//! * concurrency: at most `max_in_flight` checks (default 256) run at once.
//!   When all are busy a new check is answered `Unverifiable` at once rather
//!   than queued, so a flood of fake Googlebots cannot pile up waiting work;
//!   concurrent checks of the same address and suffixes share one lookup;
//! * memory: verdicts are cached by (address, suffix set) in a table of at
//!   most `cache_entries` (default 65,536); when full, the oldest entry goes.
//!
//! How long a verdict is kept:
//!
//! * `Verified`: the smallest TTL of the records that proved it, clamped to
//!   between 1 minute and 24 hours;
//! * `Spoofed`: 5 minutes (a fixed negative TTL, so a fixed PTR is seen soon);
//! * `Unverifiable` from a timeout or a resolver failure: 30 seconds, so that
//!   a dead resolver is not asked again for every request of every client,
//!   while a real crawler is verified soon after it recovers;
//! * `Unverifiable` because every slot is busy: not cached (it says nothing
//!   about the address).
//!
//! An answer over UDP that hickory cannot read (a server that ignores the
//! size the question announced sends more than hickory reads, 1,232
//! bytes: a long PTR set is cut, and fails to parse) is asked again of the
//! same servers over TCP, as a truncated one is; before, the check ended
//! unverifiable, and a spoofed claim with 50 PTR names was held to the
//! robot's group (issue 66).
//!
//! hickory's own response cache is off (`cache_size: 0`): this cache holds
//! verdicts, which are smaller, and one cache keeps the TTLs above the only
//! ones in force. `/etc/hosts` is not consulted: only DNS is evidence.

use std::collections::{HashMap, VecDeque};
use std::net::{IpAddr, SocketAddr};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use hickory_resolver::config::{NameServerConfig, ResolveHosts, ResolverConfig, ResolverOpts};
use hickory_resolver::net::runtime::TokioRuntimeProvider;
use hickory_resolver::net::NetError;
use hickory_resolver::proto::rr::{RData, Record};
use hickory_resolver::{Resolver, TokioResolver};
use tokio::sync::{watch, Semaphore};

use crate::config::DnsSettings;
use crate::identity::rdns::{self, Check, Lookup, Step};

pub use crate::identity::rdns::{DnsVerdict, Trouble, MAX_POSITIVE_TTL, MIN_POSITIVE_TTL, NEGATIVE_TTL, TROUBLE_TTL};

/// The verifier's configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DnsConfig {
    /// Name servers, asked over UDP; empty: the system's (`/etc/resolv.conf`).
    pub nameservers: Vec<SocketAddr>,
    /// The bound on one whole check (PTR and forward lookups together).
    pub timeout: Duration,
    /// Checks running at once; more are answered `Unverifiable` at once.
    pub max_in_flight: usize,
    /// Verdicts cached; the oldest goes first.
    pub cache_entries: usize,
}

impl Default for DnsConfig {
    fn default() -> Self {
        DnsConfig::from(&DnsSettings::default())
    }
}

impl From<&DnsSettings> for DnsConfig {
    fn from(s: &DnsSettings) -> Self {
        DnsConfig { nameservers: s.nameservers.clone(), timeout: s.timeout, max_in_flight: 256, cache_entries: 65_536 }
    }
}

/// The resolver could not be set up.
#[derive(Debug, thiserror::Error)]
#[error("DNS resolver: {0}")]
pub struct DnsSetupError(String);

type Key = (IpAddr, u64);

/// Forward-confirmed reverse DNS with bounded time, concurrency and memory;
/// see the module documentation. Cheap to share behind an `Arc`.
pub struct DnsVerifier {
    resolver: TokioResolver,
    /// The same servers over TCP only, for an answer over UDP that could
    /// not be read; `None`: no server is known to ask (the system's
    /// configuration names none that `/etc/resolv.conf` lists).
    tcp: Option<TokioResolver>,
    timeout: Duration,
    slots: Semaphore,
    cache: Mutex<Cache>,
    /// Checks under way, for callers of the same key to wait on.
    pending: Mutex<HashMap<Key, watch::Receiver<Option<DnsVerdict>>>>,
}

impl DnsVerifier {
    /// A verifier asking `cfg.nameservers` (or the system's resolvers).
    ///
    /// # Errors
    /// The system resolver configuration cannot be read (when
    /// `cfg.nameservers` is empty), or the resolver cannot be built.
    pub fn new(cfg: &DnsConfig) -> Result<DnsVerifier, DnsSetupError> {
        let provider = TokioRuntimeProvider::default();
        let builder = if cfg.nameservers.is_empty() {
            TokioResolver::builder_tokio().map_err(|e| DnsSetupError(format!("system configuration: {e}")))?
        } else {
            let servers = cfg
                .nameservers
                .iter()
                .map(|a| {
                    // UDP, and TCP when an answer comes back truncated: a long
                    // PTR set is read whole.
                    let mut ns = NameServerConfig::udp_and_tcp(a.ip());
                    for c in &mut ns.connections {
                        c.port = a.port();
                    }
                    ns
                })
                .collect();
            Resolver::builder_with_config(ResolverConfig::from_name_servers(servers), provider.clone())
        };
        let resolver = finish(builder, cfg.timeout)?;
        // The TCP-only twin: the servers named, else resolv.conf's.
        let named = if cfg.nameservers.is_empty() {
            let conf = std::fs::read_to_string("/etc/resolv.conf").unwrap_or_default();
            rdns::resolv_conf_nameservers(&conf)
        } else {
            cfg.nameservers.clone()
        };
        let tcp = if named.is_empty() {
            None
        } else {
            let servers = named
                .iter()
                .map(|a| {
                    let mut ns = NameServerConfig::tcp(a.ip());
                    for c in &mut ns.connections {
                        c.port = a.port();
                    }
                    ns
                })
                .collect();
            let builder = Resolver::builder_with_config(ResolverConfig::from_name_servers(servers), provider);
            Some(finish(builder, cfg.timeout)?)
        };
        Ok(DnsVerifier {
            resolver,
            tcp,
            timeout: cfg.timeout,
            slots: Semaphore::new(cfg.max_in_flight.max(1)),
            cache: Mutex::new(Cache::new(cfg.cache_entries.max(1))),
            pending: Mutex::new(HashMap::new()),
        })
    }

    /// The cached verdict for `ip` and `suffixes`, if one is still fresh.
    /// Synchronous and cheap (one hash, one short lock), for the hot path.
    pub fn cached(&self, ip: IpAddr, suffixes: &[String]) -> Option<DnsVerdict> {
        let key = key(ip, suffixes);
        lock(&self.cache).get(&key, Instant::now())
    }

    /// The cached verdict for `ip` and `suffixes` with the time it has left,
    /// if it is fresh: what another instance may reuse.
    pub fn cached_for(&self, ip: IpAddr, suffixes: &[String]) -> Option<(DnsVerdict, Duration)> {
        let key = key(ip, suffixes);
        let now = Instant::now();
        let cache = lock(&self.cache);
        let (verdict, until, _) = cache.map.get(&key).filter(|(_, until, _)| *until > now)?;
        Some((verdict.clone(), until.duration_since(now)))
    }

    /// Keep a verdict reached elsewhere (another instance, through the
    /// shared store) for `ttl`, capped as a verdict of this cache would be.
    pub fn remember(&self, ip: IpAddr, suffixes: &[String], verdict: DnsVerdict, ttl: Duration) {
        let cap = match verdict {
            DnsVerdict::Verified { .. } => MAX_POSITIVE_TTL,
            DnsVerdict::Spoofed { .. } => NEGATIVE_TTL,
            DnsVerdict::Unverifiable { .. } => return,
        };
        lock(&self.cache).insert(key(ip, suffixes), verdict, Instant::now() + ttl.min(cap));
    }

    /// Checks that `ip` belongs to a bot whose forward-confirmed reverse DNS
    /// ends in one of `suffixes`. Answers from the cache when it can; never
    /// takes much longer than the configured timeout.
    pub async fn verify(&self, ip: IpAddr, suffixes: &[String]) -> DnsVerdict {
        let ip = rdns::canonical(ip);
        let key = key(ip, suffixes);
        if let Some(v) = lock(&self.cache).get(&key, Instant::now()) {
            return v;
        }
        // Share a check already under way for the same key.
        let started = {
            let mut pending = lock(&self.pending);
            match pending.get(&key) {
                Some(rx) => Err(rx.clone()),
                None => match self.slots.try_acquire() {
                    Ok(permit) => {
                        let (tx, rx) = watch::channel(None);
                        pending.insert(key, rx);
                        Ok((tx, permit))
                    }
                    Err(_) => return DnsVerdict::Unverifiable { reason: Trouble::Busy },
                },
            }
        };
        let (tx, _permit) = match started {
            Ok(s) => s,
            Err(mut rx) => return self.wait(&mut rx).await,
        };
        // Removes the pending entry even if this future is dropped mid-check.
        let _done = Done { pending: &self.pending, key };
        let (verdict, ttl) = match tokio::time::timeout(self.timeout, self.check(ip, suffixes)).await {
            Ok(r) => r,
            Err(_) => (DnsVerdict::Unverifiable { reason: Trouble::Timeout }, TROUBLE_TTL),
        };
        lock(&self.cache).insert(key, verdict.clone(), Instant::now() + ttl);
        let _ = tx.send(Some(verdict.clone()));
        verdict
    }

    async fn wait(&self, rx: &mut watch::Receiver<Option<DnsVerdict>>) -> DnsVerdict {
        match tokio::time::timeout(self.timeout, rx.wait_for(Option::is_some)).await {
            Ok(Ok(v)) => v.clone().unwrap_or(DnsVerdict::Unverifiable { reason: Trouble::Timeout }),
            // The check was dropped before it finished.
            Ok(Err(_)) => DnsVerdict::Unverifiable { reason: Trouble::Resolver("check abandoned".into()) },
            Err(_) => DnsVerdict::Unverifiable { reason: Trouble::Timeout },
        }
    }

    /// The lookups ([`Check`] says which) and the verdict, with how long
    /// to keep it.
    async fn check(&self, ip: IpAddr, suffixes: &[String]) -> (DnsVerdict, Duration) {
        let mut check = Check::new(ip, suffixes);
        loop {
            match check.step() {
                Step::Ptr => {
                    let found = match self.resolver.reverse_lookup(check.ip()).await {
                        // Unreadable over UDP (cut, or mangled): over TCP.
                        Err(NetError::Proto(_)) if self.tcp.is_some() => {
                            self.tcp.as_ref().expect("checked above").reverse_lookup(check.ip()).await
                        }
                        other => other,
                    };
                    check.ptr(lookup(found.map(|l| l.answers().to_vec()), |d| match d {
                        // `to_ascii` escapes a dot inside a label (`\.`), which the
                        // judge refuses: no label boundary can be smuggled in.
                        RData::PTR(p) => Some(p.0.to_ascii()),
                        _ => None,
                    }));
                }
                Step::Forward(name) => {
                    let fqdn = format!("{name}.");
                    let found = match (forward(&self.resolver, check.ip(), &fqdn).await, &self.tcp) {
                        // Unreadable over UDP (cut, or mangled): over TCP.
                        (Err(NetError::Proto(_)), Some(tcp)) => forward(tcp, check.ip(), &fqdn).await,
                        (other, _) => other,
                    };
                    check.forward(lookup(found, |d| match d {
                        RData::A(a) => Some(IpAddr::V4(a.0)),
                        RData::AAAA(a) => Some(IpAddr::V6(a.0)),
                        _ => None,
                    }));
                }
                Step::Done => return check.finish(),
            }
        }
    }

    /// Verdicts in the cache (fresh or not yet evicted).
    pub fn cache_len(&self) -> usize {
        lock(&self.cache).map.len()
    }
}

/// The addresses of `fqdn` of `ip`'s family (A for IPv4, AAAA for IPv6).
async fn forward(resolver: &TokioResolver, ip: IpAddr, fqdn: &str) -> Result<Vec<Record>, NetError> {
    match ip {
        IpAddr::V4(_) => resolver.ipv4_lookup(fqdn).await.map(|l| l.answers().to_vec()),
        IpAddr::V6(_) => resolver.ipv6_lookup(fqdn).await.map(|l| l.answers().to_vec()),
    }
}

/// The resolver `builder` makes, with the verifier's options: two tries
/// per query within the check's `timeout`, no cache of hickory's own, no
/// `/etc/hosts`.
fn finish(
    mut builder: hickory_resolver::ResolverBuilder<TokioRuntimeProvider>,
    timeout: Duration,
) -> Result<TokioResolver, DnsSetupError> {
    let opts: &mut ResolverOpts = builder.options_mut();
    // Two tries per query fit in the budget; the whole check is cut at `timeout` anyway.
    opts.timeout = (timeout / 2).max(Duration::from_millis(5));
    opts.attempts = 2;
    opts.cache_size = 0;
    opts.use_hosts_file = ResolveHosts::Never;
    builder.build().map_err(|e| DnsSetupError(e.to_string()))
}

/// hickory's answer as the core's [`Lookup`]: the records `pick` keeps,
/// with their smallest TTL.
fn lookup<T>(found: Result<Vec<Record>, NetError>, pick: impl Fn(&RData) -> Option<T>) -> Lookup<T> {
    match found {
        Ok(records) => {
            let ttl = records.iter().map(|r| r.ttl).min().unwrap_or(u32::MAX);
            let records: Vec<T> = records.iter().filter_map(|r| pick(&r.data)).collect();
            if records.is_empty() {
                Lookup::Nothing
            } else {
                Lookup::Found { records, ttl: Duration::from_secs(u64::from(ttl)) }
            }
        }
        Err(e) if e.is_no_records_found() => Lookup::Nothing,
        Err(NetError::Timeout) => Lookup::Trouble(Trouble::Timeout),
        Err(e) => Lookup::Trouble(Trouble::Resolver(e.to_string())),
    }
}

/// A check's key ([`rdns::verdict_key`], as every host keys it).
fn key(ip: IpAddr, suffixes: &[String]) -> Key {
    rdns::verdict_key(ip, suffixes)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic while holding the lock leaves plain data behind; keep going.
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Drops the pending entry of a finished (or abandoned) check.
struct Done<'a> {
    pending: &'a Mutex<HashMap<Key, watch::Receiver<Option<DnsVerdict>>>>,
    key: Key,
}

impl Drop for Done<'_> {
    fn drop(&mut self) {
        lock(self.pending).remove(&self.key);
    }
}

/// Verdicts with expiry, at most `cap` of them; inserting into a full cache
/// removes the oldest insertion. Memory: `cap` map entries plus an order
/// queue kept under `2 * cap` by compaction.
struct Cache {
    cap: usize,
    map: HashMap<Key, (DnsVerdict, Instant, u64)>,
    order: VecDeque<(Key, u64)>,
    seq: u64,
}

impl Cache {
    fn new(cap: usize) -> Cache {
        Cache { cap, map: HashMap::new(), order: VecDeque::new(), seq: 0 }
    }

    fn get(&self, key: &Key, now: Instant) -> Option<DnsVerdict> {
        self.map.get(key).filter(|(_, until, _)| *until > now).map(|(v, _, _)| v.clone())
    }

    fn insert(&mut self, key: Key, verdict: DnsVerdict, until: Instant) {
        // Busy says nothing about the address.
        if matches!(verdict, DnsVerdict::Unverifiable { reason: Trouble::Busy }) {
            return;
        }
        self.seq += 1;
        self.map.insert(key, (verdict, until, self.seq));
        self.order.push_back((key, self.seq));
        while self.map.len() > self.cap {
            let Some((k, seq)) = self.order.pop_front() else { break };
            // Only the entry's latest insertion evicts it.
            if self.map.get(&k).is_some_and(|e| e.2 == seq) {
                self.map.remove(&k);
            }
        }
        if self.order.len() > 2 * self.cap {
            let map = &self.map;
            self.order.retain(|(k, seq)| map.get(k).is_some_and(|e| e.2 == *seq));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(i: u32) -> IpAddr {
        IpAddr::V4(i.into())
    }

    fn verified() -> DnsVerdict {
        DnsVerdict::Verified { ptr: "crawl-1.googlebot.com".into() }
    }

    #[test]
    fn cache_expires_entries() {
        let mut c = Cache::new(4);
        let now = Instant::now();
        c.insert((ip(1), 7), verified(), now + Duration::from_secs(10));
        assert_eq!(c.get(&(ip(1), 7), now), Some(verified()));
        assert_eq!(c.get(&(ip(1), 8), now), None, "another suffix set");
        assert_eq!(c.get(&(ip(1), 7), now + Duration::from_secs(10)), None);
    }

    #[test]
    fn cache_is_capped_and_evicts_the_oldest() {
        let mut c = Cache::new(3);
        let until = Instant::now() + Duration::from_secs(60);
        for i in 0..1000 {
            c.insert((ip(i), 0), verified(), until);
            assert!(c.map.len() <= 3 && c.order.len() <= 6, "{} {}", c.map.len(), c.order.len());
        }
        let now = Instant::now();
        assert!(c.get(&(ip(999), 0), now).is_some());
        assert!(c.get(&(ip(997), 0), now).is_some());
        assert!(c.get(&(ip(996), 0), now).is_none());
        // Re-inserting one key over and over keeps the queue bounded too.
        for _ in 0..1000 {
            c.insert((ip(5), 0), verified(), until);
            assert!(c.order.len() <= 6);
        }
        assert!(c.get(&(ip(5), 0), now).is_some());
    }

    #[test]
    fn busy_is_not_cached() {
        let mut c = Cache::new(3);
        let until = Instant::now() + Duration::from_secs(60);
        c.insert((ip(1), 0), DnsVerdict::Unverifiable { reason: Trouble::Busy }, until);
        assert!(c.map.is_empty());
        c.insert((ip(1), 0), DnsVerdict::Unverifiable { reason: Trouble::Timeout }, until);
        assert_eq!(c.map.len(), 1);
    }

    /// The proxy holds the verifier in shared state and awaits `verify` in a
    /// request filter: both must cross threads.
    #[allow(dead_code)]
    fn verify_is_send(v: &DnsVerifier, suffixes: &[String]) {
        fn send<T: Send>(_: T) {}
        fn sync<T: Send + Sync>() {}
        sync::<DnsVerifier>();
        send(v.verify(ip(1), suffixes));
    }

    #[test]
    fn keys_fold_ipv4_mapped_addresses() {
        let s = vec!["googlebot.com".to_owned()];
        assert_eq!(key("::ffff:66.249.66.1".parse().unwrap(), &s), key("66.249.66.1".parse().unwrap(), &s));
        assert_ne!(key("66.249.66.1".parse().unwrap(), &s), key("66.249.66.1".parse().unwrap(), &[]));
    }
}
