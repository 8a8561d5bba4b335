//! A stream parked for a lookup, and woken through Envoy's scheduler.
//!
//! The request hook returns `StopIteration` with a [`Lookup`] under way: a
//! scheduler made on the stream's worker thread
//! (`…_http_filter_scheduler_new`), and a helper thread that does the
//! lookup, keeps its answer in the [`Lookup`] and commits the scheduler
//! (`…_scheduler_commit`, from its own thread). Envoy then calls
//! `…_on_http_filter_scheduled` on the stream's worker thread, where the
//! request is decided again with the answer ([`crate::hooks`]). A stream
//! reset meanwhile destroys its filter: Envoy's scheduler holds the stream
//! weakly and delivers nothing then; the helper never touches the filter,
//! only the [`Lookup`] both hold, whose last holder deletes the scheduler.
//!
//! The lookup here is reverse DNS ([`Dns`]): its verdicts kept for all of
//! Envoy's threads, at most [`IN_FLIGHT_MAX`] at once (a claim beyond that
//! is judged unverifiable at once).

use std::collections::HashMap;
use std::ffi::c_void;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use robotgate::identity::rdns::{self, DnsVerdict};
use robotgate::identity::Identity;

use crate::abi::{self, FilterEnvoyPtr};

/// Verdicts kept, at most (then the table starts afresh).
pub const CACHE_MAX: usize = 65_536;
/// Lookups under way at once, at most.
pub const IN_FLIGHT_MAX: usize = 256;

/// Reverse DNS for one filter configuration: the name servers, the verdicts
/// kept, the lookups under way.
pub struct Dns {
    servers: Vec<SocketAddr>,
    timeout: Duration,
    kept: Mutex<HashMap<(IpAddr, u64), (Identity, Instant)>>,
    in_flight: AtomicUsize,
}

impl Dns {
    /// `verify.dns.nameservers`, or the `nameserver`s of /etc/resolv.conf
    /// when none are named; none at all: no check can be made.
    pub fn new(settings: &robotgate::config::DnsSettings) -> Dns {
        let servers = if settings.nameservers.is_empty() {
            std::fs::read_to_string("/etc/resolv.conf").map(|c| rdns::resolv_conf_nameservers(&c)).unwrap_or_default()
        } else {
            settings.nameservers.clone()
        };
        Dns { servers, timeout: settings.timeout, kept: Mutex::new(HashMap::new()), in_flight: AtomicUsize::new(0) }
    }

    /// The verdict kept for `ip` as a robot of `suffixes`, if still good;
    /// [`Identity::Unverifiable`] when no check can be made (no server, or
    /// too many under way).
    pub fn known(&self, ip: IpAddr, suffixes: &[String]) -> Option<Identity> {
        if self.servers.is_empty() || self.in_flight.load(Ordering::Relaxed) >= IN_FLIGHT_MAX {
            return Some(Identity::Unverifiable);
        }
        let key = rdns::verdict_key(ip, suffixes);
        let kept = self.kept.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        kept.get(&key).filter(|(_, until)| *until > Instant::now()).map(|(identity, _)| *identity)
    }

    /// Check `ip` as the robot `bot` of `suffixes` on a helper thread, and
    /// wake the stream of `envoy` with the answer. `None` when no helper
    /// could be started or Envoy gave no scheduler (then judge at once).
    ///
    /// # Safety
    /// `envoy` is the stream's filter, on its worker thread, in a hook.
    pub unsafe fn start(
        self: &Arc<Dns>,
        envoy: FilterEnvoyPtr,
        bot: usize,
        ip: IpAddr,
        suffixes: Vec<String>,
    ) -> Option<Arc<Lookup>> {
        if self.in_flight.fetch_add(1, Ordering::Relaxed) >= IN_FLIGHT_MAX {
            self.in_flight.fetch_sub(1, Ordering::Relaxed);
            return None;
        }
        // SAFETY: the caller's: Envoy's stream, its thread, in a hook.
        let scheduler = unsafe { abi::envoy_dynamic_module_callback_http_filter_scheduler_new(envoy) };
        if scheduler.is_null() {
            self.in_flight.fetch_sub(1, Ordering::Relaxed);
            return None;
        }
        let lookup = Arc::new(Lookup { scheduler: Scheduler(scheduler), bot, answer: Mutex::new(None) });
        let (dns, held) = (self.clone(), lookup.clone());
        let started =
            std::thread::Builder::new().name("robotgate-dns".into()).stack_size(256 * 1024).spawn(move || {
                let deadline = Instant::now() + dns.timeout.max(Duration::from_millis(1));
                let (verdict, ttl) = robotgate_embed::dns::check(&dns.servers, ip, &suffixes, deadline);
                let identity = match verdict {
                    DnsVerdict::Verified { .. } => Identity::Verified,
                    // No PTR, a name outside the suffixes, or one whose
                    // addresses are not the client's.
                    DnsVerdict::Spoofed { .. } => Identity::Spoofed,
                    DnsVerdict::Unverifiable { .. } => Identity::Unverifiable,
                };
                dns.keep(rdns::verdict_key(ip, &suffixes), identity, ttl);
                *held.answer.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(identity);
                // SAFETY: the scheduler lives as long as `held`; committing is
                // what it is for, from any thread.
                unsafe { abi::envoy_dynamic_module_callback_http_filter_scheduler_commit(held.scheduler.0, 0) };
                drop(held);
                // Last: the module's end waits for this ([`Dns::settle`]).
                dns.in_flight.fetch_sub(1, Ordering::Relaxed);
            });
        if started.is_err() {
            self.in_flight.fetch_sub(1, Ordering::Relaxed);
            return None;
        }
        Some(lookup)
    }

    /// Wait (a lookup's time at most) until no helper is under way: the
    /// module's end, before Envoy may unload it.
    pub fn settle(&self) {
        let until = Instant::now() + self.timeout + Duration::from_millis(100);
        while self.in_flight.load(Ordering::Relaxed) > 0 && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    fn keep(&self, key: (IpAddr, u64), identity: Identity, ttl: Duration) {
        let mut kept = self.kept.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if kept.len() >= CACHE_MAX {
            kept.clear();
        }
        kept.insert(key, (identity, Instant::now() + ttl));
    }
}

/// Envoy's scheduler of one stream (its `_module_ptr`: the module deletes it).
struct Scheduler(*mut c_void);

// SAFETY: Envoy's scheduler may be committed from any thread, and deleted
// from any (it holds its stream weakly, and a reference to the worker's
// dispatcher, which outlives it).
unsafe impl Send for Scheduler {}
// SAFETY: as above; nothing of it is read by the module.
unsafe impl Sync for Scheduler {}

/// One parked stream's lookup: the robot it is about, and its answer.
pub struct Lookup {
    scheduler: Scheduler,
    /// The database robot looked up.
    pub bot: usize,
    answer: Mutex<Option<Identity>>,
}

impl Lookup {
    /// The answer (unverifiable if none came: a woken stream decides).
    pub fn answer(&self) -> Identity {
        self.answer.lock().unwrap_or_else(std::sync::PoisonError::into_inner).unwrap_or(Identity::Unverifiable)
    }
}

impl Drop for Lookup {
    /// Its last holder (the woken or destroyed filter, or the helper)
    /// deletes the scheduler.
    fn drop(&mut self) {
        // SAFETY: made by `scheduler_new`, deleted once, here.
        unsafe { abi::envoy_dynamic_module_callback_http_filter_scheduler_delete(self.scheduler.0) };
    }
}
