//! A parked request's lookups: reverse DNS (its verdicts kept for every
//! thread of the edge's process), Web Bot Auth's key directories
//! ([`start_keys`], into [`crate::keys::Directories`]) and the shared
//! store's rate questions ([`start_rate`], [`crate::store`]), each done on a
//! helper thread, which wakes the parked request when its answer is in.
//!
//! How a request is parked and woken is the edge's ([`Wake`]): the Envoy
//! module commits a scheduler made on the stream's worker thread, so that
//! Envoy calls the module back there; the HAProxy module wakes nothing, its
//! Lua action yields until [`Lookup::ready`]. Either way the helper never
//! touches the request, only the [`Lookup`] both hold; its last holder
//! drops the waker.
//!
//! At most [`IN_FLIGHT_MAX`] reverse DNS lookups run at once (a claim
//! beyond that is judged unverifiable at once).

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use robotgate::identity::rdns::{self, DnsVerdict};
use robotgate::identity::signature::fetch::FetchLimits;
use robotgate::identity::Identity;

use crate::keys::Directories;
use crate::store::{RateAnswer, Store};

/// Verdicts kept, at most (then the table starts afresh).
pub const CACHE_MAX: usize = 65_536;
/// Lookups under way at once, at most.
pub const IN_FLIGHT_MAX: usize = 256;

/// How a parked request is woken when its lookup has answered: called once,
/// from the helper thread, after the answer is kept.
pub trait Wake: Send + Sync + 'static {
    /// The answer is in.
    fn wake(&self);
}

/// Nothing to wake: the request polls [`Lookup::ready`] (HAProxy's Lua
/// action, which yields between looks).
pub struct Polled;

impl Wake for Polled {
    fn wake(&self) {}
}

/// Reverse DNS for one loaded configuration: the name servers, the verdicts
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
    /// wake the request with `wake` when the answer is in. `None` when no
    /// helper could be started (then judge at once).
    pub fn start<W: Wake>(
        self: &Arc<Dns>,
        wake: W,
        bot: usize,
        ip: IpAddr,
        suffixes: Vec<String>,
    ) -> Option<Arc<Lookup<W>>> {
        if self.in_flight.fetch_add(1, Ordering::Relaxed) >= IN_FLIGHT_MAX {
            self.in_flight.fetch_sub(1, Ordering::Relaxed);
            return None;
        }
        let lookup = Lookup::new(wake, About::Dns(bot));
        let (dns, held) = (self.clone(), lookup.clone());
        let started =
            std::thread::Builder::new().name("robotgate-dns".into()).stack_size(256 * 1024).spawn(move || {
                let deadline = Instant::now() + dns.timeout.max(Duration::from_millis(1));
                let (verdict, ttl) = crate::dns::check(&dns.servers, ip, &suffixes, deadline);
                let identity = match verdict {
                    DnsVerdict::Verified { .. } => Identity::Verified,
                    // No PTR, a name outside the suffixes, or one whose
                    // addresses are not the client's.
                    DnsVerdict::Spoofed { .. } => Identity::Spoofed,
                    DnsVerdict::Unverifiable { .. } => Identity::Unverifiable,
                };
                dns.keep(rdns::verdict_key(ip, &suffixes), identity, ttl);
                held.done(Found::Identity(identity));
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
    /// module's end, before the edge may unload it.
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

/// Fetch `agents`' key directories (Web Bot Auth) into `dirs` on a helper
/// thread, under `limits`, and wake the request with `wake` when they are
/// in; `note` hears of each that could not be had. `None` when no helper
/// could be started (the fetch slot is given back: judge at once).
pub fn start_keys<W: Wake>(
    dirs: &Arc<Directories>,
    wake: W,
    agents: Vec<String>,
    limits: FetchLimits,
    note: fn(String),
) -> Option<Arc<Lookup<W>>> {
    let lookup = Lookup::new(wake, About::Keys);
    let (helper, held) = (dirs.clone(), lookup.clone());
    let started = std::thread::Builder::new().name("robotgate-wba".into()).stack_size(512 * 1024).spawn(move || {
        helper.fetch(&agents, &limits, &note);
        held.done(Found::Nothing);
    });
    if started.is_err() {
        dirs.give_back();
        return None;
    }
    Some(lookup)
}

/// Put a rate question to the shared store (`state.redis`) for a request
/// parked meanwhile, woken with `wake` when the store has answered (within
/// `state.timeout_ms`). `None` when the store takes no question now (down,
/// or its queue full): then the process's own tables answer.
pub fn start_rate<W: Wake, H: crate::store::Host>(
    store: &Store<H>,
    wake: W,
    question: robotgate::state::shared::Question,
) -> Option<Arc<Lookup<W>>> {
    if !store.takes_questions() {
        return None;
    }
    let lookup = Lookup::new(wake, About::Rate);
    let held = lookup.clone();
    store.ask(question, Box::new(move |answer| held.done(Found::Rate(answer)))).then_some(lookup)
}

/// What a parked request waited for, and what came of it: the decision
/// takes it when the request is decided again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Waited {
    /// Reverse DNS's answer for database robot `.0`.
    Dns(usize, Identity),
    /// The key directories were fetched (or failed): what is still missing
    /// is unavailable.
    Keys,
    /// The shared store's answer to the rate question (none: the process's
    /// own tables answer).
    Rate(RateAnswer),
}

/// What a lookup is about.
enum About {
    Dns(usize),
    Keys,
    Rate,
}

/// What a helper found.
enum Found {
    Nothing,
    Identity(Identity),
    Rate(RateAnswer),
}

/// One parked request's lookup: what it is about, its answer, and how the
/// request is woken.
pub struct Lookup<W> {
    wake: W,
    about: About,
    answer: Mutex<Found>,
    ready: AtomicBool,
}

impl<W: Wake> Lookup<W> {
    fn new(wake: W, about: About) -> Arc<Lookup<W>> {
        Arc::new(Lookup { wake, about, answer: Mutex::new(Found::Nothing), ready: AtomicBool::new(false) })
    }

    /// The helper's last step: the answer is in, the request woken.
    fn done(&self, found: Found) {
        *self.answer.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = found;
        self.ready.store(true, Ordering::Release);
        self.wake.wake();
    }
}

impl<W> Lookup<W> {
    /// Whether the answer is in.
    pub fn ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }

    /// What the request waited for, for its decision again (reverse DNS:
    /// unverifiable if no answer came).
    pub fn waited(&self) -> Waited {
        let found = self.answer.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match (&self.about, &*found) {
            (About::Dns(bot), Found::Identity(identity)) => Waited::Dns(*bot, *identity),
            (About::Dns(bot), _) => Waited::Dns(*bot, Identity::Unverifiable),
            (About::Keys, _) => Waited::Keys,
            (About::Rate, Found::Rate(answer)) => Waited::Rate(*answer),
            (About::Rate, _) => Waited::Rate(None),
        }
    }
}
