//! Web Bot Auth in an edge's process: the key directories of a signed
//! request's agents, the I/O half of [`robotgate::identity::signature::fetch`],
//! whose rules and cache are the proxy's (moved here from the nginx module;
//! the Envoy and HAProxy modules fetch with it too).
//!
//! * A directory already known ([`Directories`]: keys for an hour, a failure
//!   for five minutes, at most [`FetchLimits::max_entries`] agents, the
//!   core's [`KeyCache`]) answers at once, on the edge's thread.
//! * Otherwise the request is parked (each module its own way) and a helper
//!   thread fetches what is missing ([`Directories::fetch`]: at most
//!   [`fetch::MAX_AGENTS`] agents, one after the other, all within
//!   [`FetchLimits::timeout`], 2 s), and the request comes back once: what
//!   is still missing then counts as unavailable.
//! * A fetch follows the proxy's rules: https only (http only with
//!   `verify.allow_private_directories`), the host resolved here and every
//!   address checked, the connection made to a checked address, no
//!   redirect followed, the body, the key count and the time capped. TLS is
//!   rustls with the system's roots (and `SSL_CERT_FILE`).
//! * At most [`fetch::IN_FLIGHT_MAX`] fetches run at once for one
//!   [`Directories`]; a request beyond that is judged at once, its missing
//!   directories unavailable.

use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use robotgate::identity::signature::fetch::{self, FetchError, FetchLimits, KeyCache, Response, Target};
use robotgate::identity::signature::{self, Inspection, KeySet, Verdict};
use robotgate::pipeline;

/// Bytes read at once.
const READ_CHUNK: usize = 16 * 1024;

/// Keys by agent URL, as [`fetch::judge`] takes them.
pub type Keys = Vec<(String, Arc<KeySet>)>;

/// The directories one process (or nginx worker) knows, and its fetches
/// under way.
#[derive(Default)]
pub struct Directories {
    cache: Mutex<Option<KeyCache>>,
    in_flight: AtomicUsize,
}

/// What the known directories say of a signed request.
pub enum Known {
    /// Judged: the host of the agent whose signature verified, if any.
    Judged(Option<String>),
    /// These agents' directories are to be fetched first (a fetch slot is
    /// taken: hand it to [`Directories::fetch`], or give it back with
    /// [`Directories::give_back`]).
    Missing(Vec<String>),
}

impl Directories {
    fn lock(&self) -> std::sync::MutexGuard<'_, Option<KeyCache>> {
        self.cache.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Judge `inspection` with the directories known, under `limits`; or
    /// the agents to fetch first. `fetched`: the request was parked for
    /// them already (what is still missing is unavailable).
    pub fn known(&self, inspection: &Inspection, limits: &FetchLimits, fetched: bool) -> Known {
        let now = Instant::now();
        let (mut keys, mut failed, mut missing) = (Vec::new(), false, Vec::new());
        {
            let mut cache = self.lock();
            // A reload that changed `allow_private_directories` starts afresh.
            if cache.as_ref().is_none_or(|c| c.limits().allow_private != limits.allow_private) {
                *cache = Some(KeyCache::new(limits.clone()));
            }
            let cache = cache.as_ref().expect("made above");
            for agent in fetch::agents(inspection) {
                match cache.get(agent, now) {
                    Some(Ok(k)) => keys.push((agent.to_owned(), k)),
                    Some(Err(_)) => failed = true,
                    None => missing.push(agent.to_owned()),
                }
            }
        }
        if missing.is_empty() || fetched {
            return Known::Judged(judged(inspection, &keys, failed || !missing.is_empty()));
        }
        if self.in_flight.fetch_add(1, Ordering::Relaxed) >= fetch::IN_FLIGHT_MAX {
            self.in_flight.fetch_sub(1, Ordering::Relaxed);
            return Known::Judged(judged(inspection, &keys, true));
        }
        Known::Missing(missing)
    }

    /// A fetch slot [`Known::Missing`] took, not used (no helper could be
    /// started, nor the request parked).
    pub fn give_back(&self) {
        self.in_flight.fetch_sub(1, Ordering::Relaxed);
    }

    /// Fetch `agents`' directories by one deadline and keep what came of
    /// each (on a helper thread: this blocks), then give back the slot;
    /// `note` hears of each that could not be had.
    pub fn fetch(&self, agents: &[String], limits: &FetchLimits, note: &dyn Fn(String)) {
        let deadline = Instant::now() + limits.timeout;
        for agent in agents {
            let result = keys_of(agent, limits, deadline).map(Arc::new);
            if let Err(e) = &result {
                note(format!("key directory of {agent}: {e}"));
            }
            if let Some(cache) = self.lock().as_mut() {
                cache.put(agent, &result, Instant::now());
            }
        }
        self.give_back();
    }
}

/// The host of the agent whose signature verifies with `keys`.
fn judged(inspection: &Inspection, keys: &[(String, Arc<KeySet>)], failed: bool) -> Option<String> {
    match fetch::judge(inspection, keys, failed) {
        Verdict::Verified { agent, .. } => pipeline::agent_host(&agent),
        _ => None,
    }
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
pub fn keys_of(agent: &str, limits: &FetchLimits, deadline: Instant) -> Result<KeySet, FetchError> {
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
    TLS.get_or_init(tls_config).clone()
}

/// The system's roots (and `SSL_CERT_FILE`): trust for https directories,
/// and for `rediss://` (the nginx module's store).
pub fn tls_config() -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls_native_certs::load_native_certs().certs {
        let _ = roots.add(cert);
    }
    Arc::new(rustls::ClientConfig::builder().with_root_certificates(roots).with_no_client_auth())
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
