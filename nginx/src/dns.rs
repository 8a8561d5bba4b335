//! Forward-confirmed reverse DNS inside nginx: the I/O half of
//! [`robotgate::identity::rdns`], whose [`Check`] says what to look up next
//! and judges the answers, step for step as for the proxy.
//!
//! * The questions go to `verify.dns.nameservers` (or, when none are named,
//!   the `nameserver`s of `/etc/resolv.conf`), over UDP with EDNS0, and
//!   again over TCP when an answer comes back truncated (RFC 7766) or
//!   cannot be read whole, so every PTR name of an address is read, as the
//!   proxy reads them. A datagram is read whole, however much longer than
//!   the size the question announced (a server may ignore it): a long PTR
//!   set cut short and taken for no answer at all left a spoofed claim
//!   unverifiable (issue 66). nginx's own
//!   resolver cannot serve here: it keeps one PTR name per address, and it
//!   reports a truncated PTR answer as "no such name" without asking again.
//! * A check is a PTR lookup of the client address, then an A or AAAA
//!   lookup of each PTR name inside the robot's suffixes (at most
//!   [`rdns::MAX_FORWARD`]). Each question goes to each server in turn, two
//!   rounds, each try bounded by half the check's time; the whole check is
//!   bounded by `verify.dns.timeout_ms`, after which the robot is
//!   unverifiable, as in the proxy.
//! * The lookups run on [`THREADS`] helper threads of the worker, started
//!   at its first check; the request is parked meanwhile ([`crate::park`])
//!   and resumed through the worker's waker, as for the shared store.
//! * Verdicts are kept per worker, as long as the proxy keeps them
//!   (a verification for its records' TTL, clamped to a minute..a day; a
//!   failure 5 minutes; trouble 30 seconds), in at most [`CACHE_MAX`]
//!   entries. At most [`IN_FLIGHT_MAX`] checks wait or run at once in a
//!   worker; a claim beyond that is judged unverifiable at once (counted as
//!   `busy`), and not kept.

use std::cell::RefCell;
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ngx::ffi::{ngx_conf_t, ngx_http_request_t};

use robotgate::config::DnsSettings;
use robotgate::identity::rdns::{self, DnsVerdict};
use robotgate::identity::Identity;
use robotgate::state::series::Series;
// The lookups themselves, shared with the Envoy module.
use robotgate_embed::dns::check;

use crate::park::{self, Found, Ticket, Waker};

/// Verdicts a worker keeps.
pub const CACHE_MAX: usize = 65_536;
/// Checks a worker holds at once (waiting or running).
pub const IN_FLIGHT_MAX: usize = 256;
/// Helper threads a worker runs checks on.
pub const THREADS: usize = 4;

/// The name servers of the configuration, in its pool (plain data, alive
/// as long as the cycle); none: no check can be made.
#[derive(Clone, Copy)]
pub struct Resolver {
    servers: *const SocketAddr,
    len: usize,
}

impl Default for Resolver {
    fn default() -> Resolver {
        Resolver { servers: std::ptr::null(), len: 0 }
    }
}

impl Resolver {
    fn servers(&self) -> &[SocketAddr] {
        if self.servers.is_null() {
            return &[];
        }
        // SAFETY: `resolver` wrote `len` addresses into the cycle's pool,
        // which outlives every request and worker of the cycle.
        unsafe { std::slice::from_raw_parts(self.servers, self.len) }
    }
}

/// The name servers for `settings` (during configuration).
///
/// # Errors
/// No name server to ask.
///
/// # Safety
/// `cf` is the configuration being read.
pub unsafe fn resolver(cf: *mut ngx_conf_t, settings: &DnsSettings) -> Result<Resolver, String> {
    let servers = if settings.nameservers.is_empty() {
        let conf = std::fs::read_to_string("/etc/resolv.conf").unwrap_or_default();
        rdns::resolv_conf_nameservers(&conf)
    } else {
        settings.nameservers.clone()
    };
    if servers.is_empty() {
        return Err("verify.dns: no nameservers, and none in /etc/resolv.conf".into());
    }
    // SAFETY: the caller's `cf`; the pool lives as long as the cycle.
    let at = unsafe { ngx::ffi::ngx_pcalloc((*cf).pool, std::mem::size_of_val(servers.as_slice())) };
    if at.is_null() {
        return Err("out of memory".into());
    }
    let at = at.cast::<SocketAddr>();
    // SAFETY: room for `servers.len()` addresses, just allocated (the pool
    // aligns to the pointer size, enough for a SocketAddr).
    unsafe { std::ptr::copy_nonoverlapping(servers.as_ptr(), at, servers.len()) };
    Ok(Resolver { servers: at, len: servers.len() })
}

/// A verdict kept: what it says, and until when.
#[derive(Clone, Copy)]
struct Kept {
    identity: Identity,
    until: Instant,
}

type Key = (IpAddr, u64);

/// What the worker's threads share with nginx's thread.
struct Shared {
    cache: Mutex<HashMap<Key, Kept>>,
    in_flight: AtomicUsize,
    waker: Arc<Waker>,
    servers: Vec<SocketAddr>,
}

impl Shared {
    fn known(&self, key: &Key) -> Option<Identity> {
        let now = Instant::now();
        lock(&self.cache).get(key).filter(|k| k.until > now).map(|k| k.identity)
    }

    fn keep(&self, key: Key, identity: Identity, ttl: Duration) {
        let now = Instant::now();
        let mut cache = lock(&self.cache);
        if cache.len() >= CACHE_MAX {
            cache.retain(|_, k| k.until > now);
            if cache.len() >= CACHE_MAX {
                cache.clear();
            }
        }
        cache.insert(key, Kept { identity, until: now + ttl });
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// One check waiting for a thread.
struct Job {
    ticket: Ticket,
    bot: usize,
    ip: IpAddr,
    suffixes: Vec<String>,
    key: Key,
    deadline: Instant,
    name: String,
    series: &'static Series,
}

/// The worker's threads: their queue, and what they share.
struct Pool {
    queue: SyncSender<Box<Job>>,
    shared: Arc<Shared>,
}

thread_local! {
    static POOL: RefCell<Option<Pool>> = const { RefCell::new(None) };
}

/// The worker's pool, started on first use; `None` when it cannot be (no
/// waker, no thread).
fn pool(resolver: Resolver) -> Option<Arc<Shared>> {
    POOL.with_borrow_mut(|p| {
        if let Some(p) = p {
            return Some(p.shared.clone());
        }
        // SAFETY: nginx's cycle, on its thread; its log lives as long as it.
        let log = unsafe { (*ngx::ffi::ngx_cycle).log };
        let waker = park::waker(log)?;
        let shared = Arc::new(Shared {
            cache: Mutex::new(HashMap::new()),
            in_flight: AtomicUsize::new(0),
            waker,
            servers: resolver.servers().to_vec(),
        });
        let (queue, jobs) = sync_channel::<Box<Job>>(IN_FLIGHT_MAX);
        let jobs = Arc::new(Mutex::new(jobs));
        let mut started = 0;
        for i in 0..THREADS {
            let (shared, jobs) = (shared.clone(), jobs.clone());
            let spawned = std::thread::Builder::new()
                .name(format!("robotgate-dns-{i}"))
                .stack_size(512 * 1024)
                .spawn(move || work(&shared, &jobs));
            started += usize::from(spawned.is_ok());
        }
        if started == 0 {
            return None;
        }
        *p = Some(Pool { queue, shared: shared.clone() });
        Some(shared)
    })
}

/// A worker's exit: the threads end once the checks under way are done
/// (each within its deadline); none is waited for.
pub fn stop() {
    POOL.with_borrow_mut(|p| *p = None);
}

/// What a claim comes to now.
pub enum Start {
    /// Known already, or nothing can be asked: this.
    Known(Identity),
    /// The request is parked until the check ends.
    Parked,
}

/// The robot a check is for, as the proxy names it in its metric.
pub struct Claim<'a> {
    pub bot: usize,
    pub name: &'a str,
    pub suffixes: &'a [String],
    pub ip: IpAddr,
}

/// Look the claim up: at once from the worker's verdicts, or by parking
/// request `r` and handing the check to a helper thread.
pub fn look_up(
    r: *mut ngx_http_request_t,
    resolver: Resolver,
    claim: &Claim<'_>,
    timeout: Duration,
    series: &'static Series,
) -> Start {
    let unchecked = |reason: &str| {
        series.add("robotgate_identity_unchecked_total", &["bot", "reason"], &[claim.name, reason], 1);
        Start::Known(Identity::Unverifiable)
    };
    if resolver.servers().is_empty() {
        return unchecked("resolver");
    }
    let Some(shared) = pool(resolver) else { return unchecked("resolver") };
    let key = rdns::verdict_key(claim.ip, claim.suffixes);
    if let Some(identity) = shared.known(&key) {
        return Start::Known(identity);
    }
    if shared.in_flight.fetch_add(1, Ordering::Relaxed) >= IN_FLIGHT_MAX {
        shared.in_flight.fetch_sub(1, Ordering::Relaxed);
        return unchecked("busy");
    }
    let Some(ticket) = park::park(r) else {
        shared.in_flight.fetch_sub(1, Ordering::Relaxed);
        return Start::Known(Identity::Unverifiable);
    };
    let job = Job {
        ticket,
        bot: claim.bot,
        ip: claim.ip,
        suffixes: claim.suffixes.to_vec(),
        key,
        deadline: Instant::now() + timeout.max(Duration::from_millis(1)),
        name: claim.name.to_owned(),
        series,
    };
    let unsent = POOL.with_borrow(|p| match p.as_ref().map(|p| p.queue.try_send(Box::new(job))) {
        Some(Ok(())) => None,
        Some(Err(TrySendError::Full(j) | TrySendError::Disconnected(j))) => Some((j.ticket, j.bot)),
        None => None,
    });
    if let Some((ticket, bot)) = unsent {
        // Every thread is gone (the queue has room for IN_FLIGHT_MAX): the
        // request resumes, unverifiable.
        shared.in_flight.fetch_sub(1, Ordering::Relaxed);
        shared.waker.finish(ticket, Found::Dns { bot, identity: Identity::Unverifiable });
    }
    Start::Parked
}

/// A helper thread: checks, until the worker's pool is dropped.
fn work(shared: &Shared, jobs: &Mutex<Receiver<Box<Job>>>) {
    loop {
        let job = match lock(jobs).recv() {
            Ok(job) => job,
            Err(_) => return,
        };
        let (verdict, ttl) = check(&shared.servers, job.ip, &job.suffixes, job.deadline);
        let identity = match verdict {
            DnsVerdict::Verified { .. } => Identity::Verified,
            // No PTR, a name outside the suffixes, or one whose addresses
            // are not the client's.
            DnsVerdict::Spoofed { .. } => Identity::Spoofed,
            DnsVerdict::Unverifiable { reason } => {
                job.series.add(
                    "robotgate_identity_unchecked_total",
                    &["bot", "reason"],
                    &[&job.name, reason.label()],
                    1,
                );
                Identity::Unverifiable
            }
        };
        shared.keep(job.key, identity, ttl);
        shared.in_flight.fetch_sub(1, Ordering::Relaxed);
        shared.waker.finish(job.ticket, Found::Dns { bot: job.bot, identity });
    }
}
