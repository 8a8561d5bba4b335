//! Web Bot Auth inside nginx: the key directories of a signed request's
//! agents fetched off nginx's event loop, the I/O half of
//! [`robotgate::identity::signature::fetch`], whose rules and cache are the
//! proxy's.
//!
//! * A directory already known to the worker (keys for an hour, a failure
//!   for five minutes, at most [`FetchLimits::max_entries`] agents: the
//!   core's [`KeyCache`]) answers at once, on nginx's thread.
//! * Otherwise the request is parked ([`crate::park`]) and a helper thread
//!   fetches what is missing (at most [`fetch::MAX_AGENTS`] agents, one after
//!   the other, all within [`FetchLimits::timeout`], 2 s); the worker's
//!   waker brings the request back, and its phases run again, the keys now
//!   at hand. A request comes back once: what is still missing then counts
//!   as unavailable.
//! * A fetch follows the proxy's rules: https only (http only with
//!   `verify.allow_private_directories`), the host resolved here and every
//!   address checked, the connection made to a checked address, no
//!   redirect followed, the body, the key count and the time capped. TLS is
//!   rustls with the system's roots (and `SSL_CERT_FILE`), as for
//!   `rediss://` ([`crate::conn`]).
//! * At most [`IN_FLIGHT_MAX`] fetches run at once in a worker; a request
//!   beyond that is judged at once, its missing directories unavailable.
//!
//! The cache is the worker's: each of nginx's workers fetches a directory
//! once per TTL (the proxy, one process, once).

use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use ngx::ffi::ngx_http_request_t;

use robotgate::config::Verify;
use robotgate::identity::signature::fetch::{self, FetchError, FetchLimits, KeyCache, Response, Target};
use robotgate::identity::signature::{self, Inspection, KeySet, Verdict};
use robotgate::pipeline;

use crate::park::{self, Found, Ticket, Waker};

/// Bytes read at once.
const READ_CHUNK: usize = 16 * 1024;

/// The worker's directories (a worker is a process: this is per worker).
static CACHE: Mutex<Option<KeyCache>> = Mutex::new(None);

/// Fetches under way in this worker.
static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);

fn lock() -> std::sync::MutexGuard<'static, Option<KeyCache>> {
    CACHE.lock().unwrap_or_else(|e| e.into_inner())
}

/// What a signed request comes to now.
pub enum Start {
    /// Judged: the host of the agent whose signature verified, if any.
    Known(Option<String>),
    /// The request is parked until its directories are fetched.
    Parked,
}

/// Keys by agent URL, as [`fetch::judge`] takes them.
type Keys = Vec<(String, Arc<KeySet>)>;

/// The keys of `inspection`'s agents that the worker knows, and the agents
/// it does not; `failed`: some agent's directory could not be had.
fn known(inspection: &Inspection, limits: &FetchLimits) -> (Keys, bool, Vec<String>) {
    let now = Instant::now();
    let mut cache = lock();
    // A reload that changed `allow_private_directories` starts afresh.
    if cache.as_ref().is_none_or(|c| c.limits().allow_private != limits.allow_private) {
        *cache = Some(KeyCache::new(limits.clone()));
    }
    let cache = cache.as_ref().expect("made above");
    let (mut keys, mut failed, mut missing) = (Vec::new(), false, Vec::new());
    for agent in fetch::agents(inspection) {
        match cache.get(agent, now) {
            Some(Ok(k)) => keys.push((agent.to_owned(), k)),
            Some(Err(_)) => failed = true,
            None => missing.push(agent.to_owned()),
        }
    }
    (keys, failed, missing)
}

/// The host of the agent whose signature verifies with `keys`.
fn judged(inspection: &Inspection, keys: &[(String, Arc<KeySet>)], failed: bool) -> Start {
    match fetch::judge(inspection, keys, failed) {
        Verdict::Verified { agent, .. } => Start::Known(pipeline::agent_host(&agent)),
        _ => Start::Known(None),
    }
}

/// Judge `inspection` with the worker's directories, or park request `r`
/// and fetch the missing ones on a helper thread. `fetched`: the request
/// was parked for them already (what is still missing is unavailable).
pub fn signed_by(r: *mut ngx_http_request_t, inspection: &Inspection, verify: &Verify, fetched: bool) -> Start {
    let limits = FetchLimits::allowing_private(verify.allow_private_directories);
    let (keys, failed, missing) = known(inspection, &limits);
    if missing.is_empty() || fetched {
        return judged(inspection, &keys, failed || !missing.is_empty());
    }
    if IN_FLIGHT.fetch_add(1, Ordering::Relaxed) >= fetch::IN_FLIGHT_MAX {
        IN_FLIGHT.fetch_sub(1, Ordering::Relaxed);
        return judged(inspection, &keys, true);
    }
    let unavailable = || {
        IN_FLIGHT.fetch_sub(1, Ordering::Relaxed);
        judged(inspection, &keys, true)
    };
    // SAFETY: nginx's cycle, on its thread; its log lives as long as it.
    let log = unsafe { (*ngx::ffi::ngx_cycle).log };
    let Some(waker) = park::waker(log) else { return unavailable() };
    let Some(ticket) = park::park(r) else { return unavailable() };
    let spawned = std::thread::Builder::new()
        .name("robotgate-wba".into())
        .stack_size(512 * 1024)
        .spawn(move || work(ticket, &missing, &limits, &waker));
    if spawned.is_err() {
        park::unpark(ticket);
        return unavailable();
    }
    Start::Parked
}

/// A helper thread: fetch `agents`' directories by one deadline, keep what
/// came of each, and wake the request.
fn work(ticket: Ticket, agents: &[String], limits: &FetchLimits, waker: &Waker) {
    let deadline = Instant::now() + limits.timeout;
    for agent in agents {
        let result = keys_of(agent, limits, deadline).map(Arc::new);
        if let Err(e) = &result {
            waker.note(ngx::ffi::NGX_LOG_INFO as usize, format!("key directory of {agent}: {e}"));
        }
        if let Some(cache) = lock().as_mut() {
            cache.put(agent, &result, Instant::now());
        }
    }
    IN_FLIGHT.fetch_sub(1, Ordering::Relaxed);
    waker.finish(ticket, Found::Keys);
}

/// Time left until `deadline`, or [`FetchError::Timeout`].
fn left(deadline: Instant) -> Result<Duration, FetchError> {
    let now = Instant::now();
    if now >= deadline {
        return Err(FetchError::Timeout);
    }
    Ok(deadline - now)
}

/// The keys of `agent`'s directory, by `deadline`.
fn keys_of(agent: &str, limits: &FetchLimits, deadline: Instant) -> Result<KeySet, FetchError> {
    let url = signature::directory_url(agent);
    let target = Target::check(&url, limits)?;
    let addrs = resolve(&target, deadline)?;
    fetch::check_addresses(&addrs.iter().map(SocketAddr::ip).collect::<Vec<IpAddr>>(), limits)?;
    let body = get(&target, &addrs, limits, deadline)?;
    Ok(KeySet::from_directory(&body)?)
}

/// The addresses of `target`'s host. A name is resolved on a thread of its
/// own, waited for until `deadline` only (the system's resolver has no
/// deadline of ours; a late answer is dropped with its thread).
fn resolve(target: &Target, deadline: Instant) -> Result<Vec<SocketAddr>, FetchError> {
    if let Ok(ip) = target.host.parse::<IpAddr>() {
        return Ok(vec![SocketAddr::new(ip, target.port)]);
    }
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    let (host, port) = (target.host.clone(), target.port);
    std::thread::Builder::new()
        .name("robotgate-wba-dns".into())
        .stack_size(256 * 1024)
        .spawn(move || {
            let addrs = (host.as_str(), port)
                .to_socket_addrs()
                .map(|a| a.take(fetch::MAX_ADDRESSES).collect::<Vec<_>>())
                .map_err(|e| FetchError::Resolve(e.to_string()));
            let _ = tx.send(addrs);
        })
        .map_err(|e| FetchError::Resolve(e.to_string()))?;
    match rx.recv_timeout(left(deadline)?) {
        Ok(addrs) => addrs,
        Err(_) => Err(FetchError::Timeout),
    }
}

/// Trust for https directories: the system's roots (and `SSL_CERT_FILE`).
fn tls() -> Arc<rustls::ClientConfig> {
    static TLS: OnceLock<Arc<rustls::ClientConfig>> = OnceLock::new();
    TLS.get_or_init(crate::conn::tls_config).clone()
}

/// GET `target` from the first of `addrs` that takes the connection, by
/// `deadline`: the body, within `limits.max_bytes`.
fn get(target: &Target, addrs: &[SocketAddr], limits: &FetchLimits, deadline: Instant) -> Result<Vec<u8>, FetchError> {
    let io = |e: std::io::Error| FetchError::Io(e.to_string());
    let mut last = FetchError::Resolve("no address".into());
    let mut socket = None;
    for a in addrs {
        match TcpStream::connect_timeout(a, left(deadline)?) {
            Ok(s) => {
                socket = Some(s);
                break;
            }
            Err(e) => last = FetchError::Io(format!("{a}: {e}")),
        }
    }
    let socket = socket.ok_or(last)?;
    // The same socket, to set its timeouts while the stream is borrowed.
    let control = socket.try_clone().map_err(io)?;
    let head = target.request_head();
    if target.tls {
        let name = rustls::pki_types::ServerName::try_from(target.host.clone())
            .map_err(|e| FetchError::BadUrl(format!("{}: {e}", target.host)))?;
        let conn = rustls::ClientConnection::new(tls(), name).map_err(|e| FetchError::Io(e.to_string()))?;
        let mut stream = rustls::StreamOwned::new(conn, socket);
        exchange(&mut stream, &control, head.as_bytes(), limits.max_bytes, deadline)
    } else {
        let mut stream = socket;
        exchange(&mut stream, &control, head.as_bytes(), limits.max_bytes, deadline)
    }
}

/// Write `head` and read the response, every step by `deadline`.
fn exchange(
    stream: &mut (impl Read + Write),
    control: &TcpStream,
    head: &[u8],
    max: usize,
    deadline: Instant,
) -> Result<Vec<u8>, FetchError> {
    let timed_out = |e: &std::io::Error| {
        matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) || Instant::now() >= deadline
    };
    let io = |e: std::io::Error| if timed_out(&e) { FetchError::Timeout } else { FetchError::Io(e.to_string()) };
    let wait = left(deadline)?;
    // Both ways: a TLS handshake reads inside the first write.
    control.set_write_timeout(Some(wait)).map_err(io)?;
    control.set_read_timeout(Some(wait)).map_err(io)?;
    stream.write_all(head).and_then(|()| stream.flush()).map_err(io)?;
    let mut response = Response::new(max);
    let mut chunk = vec![0u8; READ_CHUNK];
    loop {
        control.set_read_timeout(Some(left(deadline)?)).map_err(io)?;
        match stream.read(&mut chunk) {
            Ok(0) => return response.finish(),
            Ok(n) => {
                if response.feed(&chunk[..n])? {
                    return response.finish();
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            // A TLS peer that closes without close_notify: the body read so
            // far, if whole by its framing.
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return response.finish(),
            Err(e) => return Err(io(e)),
        }
    }
}
