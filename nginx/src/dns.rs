//! Forward-confirmed reverse DNS inside nginx, on nginx's own resolver and
//! event loop (no thread): the I/O half of [`robotgate::identity::rdns`],
//! whose [`Check`] says what to look up next and judges the answers, step
//! for step as for the proxy.
//!
//! * The resolver asks `verify.dns.nameservers` (or, when none are named,
//!   the `nameserver`s of `/etc/resolv.conf`), made at configuration time
//!   with `ngx_resolver_create` as nginx's `resolver` directive makes one.
//! * A check is a PTR lookup of the client address, then an A and AAAA
//!   lookup of each PTR name inside the robot's suffixes (at most
//!   [`rdns::MAX_FORWARD`]). nginx's resolver keeps one PTR name per
//!   address (the first answer), where the proxy's keeps them all.
//! * The request is parked meanwhile ([`crate::park`]); the whole check is
//!   bounded by `verify.dns.timeout_ms`, after which the robot is
//!   unverifiable, as in the proxy.
//! * Verdicts are kept per worker, as long as the proxy keeps them
//!   (a verification for its records' TTL, clamped to a minute..a day; a
//!   failure 5 minutes; trouble 30 seconds), in at most [`CACHE_MAX`]
//!   entries. At most [`IN_FLIGHT_MAX`] checks run at once in a worker; a
//!   claim beyond that is judged unverifiable at once, and not kept.

use std::cell::RefCell;
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use ngx::ffi::{
    ngx_conf_t, ngx_http_request_t, ngx_log_t, ngx_msec_t, ngx_resolver_ctx_t, ngx_resolver_t, ngx_str_t, sockaddr,
    sockaddr_in, sockaddr_in6, AF_INET, AF_INET6,
};

use robotgate::config::DnsSettings;
use robotgate::identity::rdns::{self, Check, DnsVerdict, Lookup as Answer, Step, Trouble};
use robotgate::identity::Identity;
use robotgate::state::series::Series;

use crate::park::{self, Found, Ticket};

/// Verdicts a worker keeps.
pub const CACHE_MAX: usize = 65_536;
/// Checks a worker runs at once.
pub const IN_FLIGHT_MAX: usize = 256;

/// The resolver of the configuration (null: none could be made).
#[derive(Clone, Copy)]
pub struct Resolver(pub *mut ngx_resolver_t);

/// Make the resolver for `settings` (during configuration).
///
/// # Errors
/// No name server to ask, or nginx refused one (its message is in the log).
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
    // SAFETY: the caller's `cf`; the names live in its pool, as nginx's
    // own `resolver` directive keeps its arguments.
    unsafe {
        let pool = (*cf).pool;
        let names = ngx::ffi::ngx_pcalloc(pool, servers.len() * std::mem::size_of::<ngx_str_t>()) as *mut ngx_str_t;
        if names.is_null() {
            return Err("out of memory".into());
        }
        for (i, server) in servers.iter().enumerate() {
            let text = match server {
                SocketAddr::V4(a) => a.to_string(),
                SocketAddr::V6(a) => format!("[{}]:{}", a.ip(), a.port()),
            };
            let Some(s) = crate::ngx_str(pool, &text) else { return Err("out of memory".into()) };
            names.add(i).write(s);
        }
        let r = ngx::ffi::ngx_resolver_create(cf, names, servers.len());
        if r.is_null() {
            return Err(format!("verify.dns: nginx refused the nameservers {servers:?}"));
        }
        Ok(Resolver(r))
    }
}

/// A verdict kept: what it says, and until when (nginx's clock, ms).
#[derive(Clone, Copy)]
struct Kept {
    identity: Identity,
    until: ngx_msec_t,
}

#[derive(Default)]
struct Worker {
    cache: HashMap<(IpAddr, u64), Kept>,
    in_flight: usize,
}

thread_local! {
    static WORKER: RefCell<Worker> = RefCell::new(Worker::default());
}

fn now_ms() -> ngx_msec_t {
    // SAFETY: nginx's clock of this turn of its loop, on its thread.
    unsafe { ngx::ffi::ngx_current_msec }
}

fn key(ip: IpAddr, suffixes: &[String]) -> (IpAddr, u64) {
    rdns::verdict_key(ip, suffixes)
}

fn keep(key: (IpAddr, u64), identity: Identity, ttl: Duration) {
    WORKER.with_borrow_mut(|w| {
        let now = now_ms();
        if w.cache.len() >= CACHE_MAX {
            w.cache.retain(|_, k| k.until.wrapping_sub(now) as isize > 0);
            if w.cache.len() >= CACHE_MAX {
                w.cache.clear();
            }
        }
        w.cache.insert(key, Kept { identity, until: now.wrapping_add(ttl.as_millis() as ngx_msec_t) });
    });
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

/// One check under way, owned by nginx's resolver contexts in turn.
struct Lookup {
    ticket: Ticket,
    bot: usize,
    check: Check,
    key: (IpAddr, u64),
    /// When the check must end (nginx's clock, ms).
    deadline: ngx_msec_t,
    resolver: Resolver,
    log: *mut ngx_log_t,
    series: &'static Series,
    name: String,
    /// The client address, as nginx's resolver reads it.
    sockaddr: [u8; std::mem::size_of::<sockaddr_in6>()],
    socklen: u32,
    /// The name being looked up, NUL-less, alive until its lookup is done.
    asking: Vec<u8>,
}

/// Look the claim up: at once from the worker's verdicts, or by parking
/// request `r` and asking nginx's resolver.
pub fn look_up(
    r: *mut ngx_http_request_t,
    resolver: Resolver,
    claim: &Claim<'_>,
    timeout: Duration,
    series: &'static Series,
) -> Start {
    let key = key(claim.ip, claim.suffixes);
    let now = now_ms();
    let (known, busy) = WORKER.with_borrow(|w| {
        let known = w.cache.get(&key).filter(|k| k.until.wrapping_sub(now) as isize > 0).map(|k| k.identity);
        (known, w.in_flight >= IN_FLIGHT_MAX)
    });
    if let Some(identity) = known {
        return Start::Known(identity);
    }
    if resolver.0.is_null() || busy {
        let reason = if busy { "busy" } else { "resolver" };
        series.add("robotgate_identity_unchecked_total", &["bot", "reason"], &[claim.name, reason], 1);
        return Start::Known(Identity::Unverifiable);
    }
    let Some(ticket) = park::park(r) else { return Start::Known(Identity::Unverifiable) };
    let mut sockaddr = [0u8; std::mem::size_of::<sockaddr_in6>()];
    let socklen = write_sockaddr(&mut sockaddr, rdns::canonical(claim.ip));
    let lookup = Box::new(Lookup {
        ticket,
        bot: claim.bot,
        check: Check::new(claim.ip, claim.suffixes),
        key,
        deadline: now.wrapping_add(timeout.as_millis().max(1) as ngx_msec_t),
        resolver,
        // SAFETY: the request nginx is running; its connection's log.
        log: unsafe { (*(*r).connection).log },
        series,
        name: claim.name.to_owned(),
        sockaddr,
        socklen,
        asking: Vec::new(),
    });
    WORKER.with_borrow_mut(|w| w.in_flight += 1);
    let lookup = Box::into_raw(lookup);
    // SAFETY: nginx's resolver, on its thread; the lookup is handed to its
    // context, which gives it back to `on_ptr` (or here, on failure).
    unsafe {
        let ctx = start(resolver);
        if ctx.is_null() {
            abandon(Box::from_raw(lookup));
            return Start::Parked;
        }
        (*ctx).addr.sockaddr = (*lookup).sockaddr.as_mut_ptr().cast::<sockaddr>();
        (*ctx).addr.socklen = (*lookup).socklen;
        (*ctx).handler = Some(on_ptr);
        (*ctx).data = lookup.cast();
        (*ctx).timeout = remaining(&*lookup);
        if ngx::ffi::ngx_resolve_addr(ctx) != ngx::ffi::NGX_OK as ngx::ffi::ngx_int_t {
            // nginx freed the context.
            abandon(Box::from_raw(lookup));
        }
    }
    Start::Parked
}

/// A resolver context, or null.
///
/// # Safety
/// On nginx's thread, with a resolver of this cycle.
unsafe fn start(resolver: Resolver) -> *mut ngx_resolver_ctx_t {
    // SAFETY: the caller's.
    let ctx = unsafe { ngx::ffi::ngx_resolve_start(resolver.0, std::ptr::null_mut()) };
    // NGX_NO_RESOLVER is (void *) -1.
    if ctx as isize == -1 {
        return std::ptr::null_mut();
    }
    ctx
}

/// The time left for the check, at least a millisecond.
fn remaining(l: &Lookup) -> ngx_msec_t {
    let left = l.deadline.wrapping_sub(now_ms()) as isize;
    left.max(1) as ngx_msec_t
}

fn write_sockaddr(buf: &mut [u8; std::mem::size_of::<sockaddr_in6>()], ip: IpAddr) -> u32 {
    match ip {
        IpAddr::V4(v4) => {
            // SAFETY: a zeroed sockaddr_in is valid; the buffer is larger.
            let mut sin: sockaddr_in = unsafe { std::mem::zeroed() };
            sin.sin_family = AF_INET as _;
            sin.sin_addr.s_addr = u32::from_ne_bytes(v4.octets());
            // SAFETY: the buffer holds a sockaddr_in6, larger than a sockaddr_in.
            unsafe { std::ptr::write_unaligned(buf.as_mut_ptr().cast::<sockaddr_in>(), sin) };
            std::mem::size_of::<sockaddr_in>() as u32
        }
        IpAddr::V6(v6) => {
            // SAFETY: a zeroed sockaddr_in6 is valid.
            let mut sin6: sockaddr_in6 = unsafe { std::mem::zeroed() };
            sin6.sin6_family = AF_INET6 as _;
            sin6.sin6_addr.__in6_u.__u6_addr8 = v6.octets();
            // SAFETY: the buffer is a sockaddr_in6's size.
            unsafe { std::ptr::write_unaligned(buf.as_mut_ptr().cast::<sockaddr_in6>(), sin6) };
            std::mem::size_of::<sockaddr_in6>() as u32
        }
    }
}

/// How long the records of a context that answered live yet.
///
/// # Safety
/// `ctx` is a context nginx handed its handler.
unsafe fn ttl_of(ctx: *const ngx_resolver_ctx_t) -> Duration {
    // SAFETY: the caller's; nginx's cached time, on its thread.
    let (valid, now) = unsafe { ((*ctx).valid, (*ngx::ffi::ngx_cached_time).sec) };
    Duration::from_secs(valid.saturating_sub(now).max(0) as u64)
}

/// What a context's state says, when it is not an answer.
fn failed<T>(state: ngx::ffi::ngx_int_t) -> Answer<T> {
    if state == ngx::ffi::NGX_RESOLVE_NXDOMAIN as ngx::ffi::ngx_int_t {
        Answer::Nothing
    } else if state == ngx::ffi::NGX_RESOLVE_TIMEDOUT as ngx::ffi::ngx_int_t {
        Answer::Trouble(Trouble::Timeout)
    } else {
        Answer::Trouble(Trouble::Resolver(format!("nginx's resolver: state {state}")))
    }
}

/// The PTR answer. nginx's resolver keeps one name per address (the
/// first), and does not ask again over TCP when the answer is truncated.
extern "C" fn on_ptr(ctx: *mut ngx_resolver_ctx_t) {
    // SAFETY: nginx calls the handler with the context `look_up` made, whose
    // data is the lookup; the name is copied before the context is done.
    let l = unsafe {
        let mut l = Box::from_raw((*ctx).data as *mut Lookup);
        let state = (*ctx).state;
        let answer = if state == ngx::ffi::NGX_OK as ngx::ffi::ngx_int_t {
            let name = std::slice::from_raw_parts((*ctx).name.data, (*ctx).name.len);
            Answer::Found { records: vec![String::from_utf8_lossy(name).into_owned()], ttl: ttl_of(ctx) }
        } else {
            failed(state)
        };
        ngx::ffi::ngx_resolve_addr_done(ctx);
        l.check.ptr(answer);
        l
    };
    next(l);
}

/// Look up what the check needs next, or end it.
fn next(mut l: Box<Lookup>) {
    let Step::Forward(name) = l.check.step() else { return end(l) };
    if l.deadline.wrapping_sub(now_ms()) as isize <= 0 {
        // Cut short: unverifiable (timeout).
        return end(l);
    }
    l.asking = name.into_bytes();
    // SAFETY: nginx's resolver, on its thread; the lookup goes with the
    // context to `on_name`, and its name lives in the lookup until then.
    unsafe {
        let ctx = start(l.resolver);
        if ctx.is_null() {
            return abandon(l);
        }
        (*ctx).name = ngx_str_t { len: l.asking.len(), data: l.asking.as_mut_ptr() };
        (*ctx).handler = Some(on_name);
        (*ctx).timeout = remaining(&l);
        let l = Box::into_raw(l);
        (*ctx).data = l.cast();
        if ngx::ffi::ngx_resolve_name(ctx) != ngx::ffi::NGX_OK as ngx::ffi::ngx_int_t {
            // nginx freed the context.
            abandon(Box::from_raw(l));
        }
    }
}

/// A candidate's A and AAAA answers.
extern "C" fn on_name(ctx: *mut ngx_resolver_ctx_t) {
    // SAFETY: nginx calls the handler with the context `next` made, whose
    // data is the lookup; the addresses are copied before it is done.
    let l = unsafe {
        let mut l = Box::from_raw((*ctx).data as *mut Lookup);
        let state = (*ctx).state;
        let answer = if state == ngx::ffi::NGX_OK as ngx::ffi::ngx_int_t {
            let records = (0..(*ctx).naddrs)
                .filter_map(|i| {
                    let a = &*(*ctx).addrs.add(i);
                    ip_of(a.sockaddr, a.socklen)
                })
                .collect();
            Answer::Found { records, ttl: ttl_of(ctx) }
        } else {
            failed(state)
        };
        ngx::ffi::ngx_resolve_name_done(ctx);
        l.check.forward(answer);
        l
    };
    next(l);
}

/// An address nginx's resolver returned.
///
/// # Safety
/// `sa` points at `len` bytes of a socket address.
unsafe fn ip_of(sa: *const sockaddr, len: u32) -> Option<IpAddr> {
    // SAFETY: the caller's.
    unsafe {
        match u32::from((*sa).sa_family) {
            AF_INET if len as usize >= std::mem::size_of::<sockaddr_in>() => {
                let sin = std::ptr::read_unaligned(sa.cast::<sockaddr_in>());
                Some(IpAddr::from(sin.sin_addr.s_addr.to_ne_bytes()))
            }
            AF_INET6 if len as usize >= std::mem::size_of::<sockaddr_in6>() => {
                let sin6 = std::ptr::read_unaligned(sa.cast::<sockaddr_in6>());
                Some(IpAddr::from(sin6.sin6_addr.__in6_u.__u6_addr8))
            }
            _ => None,
        }
    }
}

/// nginx's resolver could not start a lookup: the check ends unverifiable.
fn abandon(mut l: Box<Lookup>) {
    l.check.abandon(Trouble::Resolver("nginx's resolver refused the lookup".into()));
    end(l);
}

/// The check is over: judge, keep the verdict, and resume the request.
fn end(l: Box<Lookup>) {
    WORKER.with_borrow_mut(|w| w.in_flight = w.in_flight.saturating_sub(1));
    let Lookup { check, key, ticket, bot, log, series, name, .. } = *l;
    let (verdict, ttl) = check.finish();
    let identity = match verdict {
        DnsVerdict::Verified { .. } => Identity::Verified,
        // No PTR, a name outside the suffixes, or one whose addresses are
        // not the client's.
        DnsVerdict::Spoofed { .. } => Identity::Spoofed,
        DnsVerdict::Unverifiable { reason } => {
            series.add("robotgate_identity_unchecked_total", &["bot", "reason"], &[&name, reason.label()], 1);
            Identity::Unverifiable
        }
    };
    keep(key, identity, ttl);
    park::finish_here(ticket, Found::Dns { bot, identity }, log);
}
