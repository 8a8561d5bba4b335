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
use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hickory_proto::op::{Edns, Message, MessageType, Query, ResponseCode};
use hickory_proto::rr::{Name, RData, RecordType};
use ngx::ffi::{ngx_conf_t, ngx_http_request_t};

use robotgate::config::DnsSettings;
use robotgate::identity::rdns::{self, Check, DnsVerdict, Lookup as Answer, Step, Trouble};
use robotgate::identity::Identity;
use robotgate::state::series::Series;

use crate::park::{self, Found, Ticket, Waker};

/// Verdicts a worker keeps.
pub const CACHE_MAX: usize = 65_536;
/// Checks a worker holds at once (waiting or running).
pub const IN_FLIGHT_MAX: usize = 256;
/// Helper threads a worker runs checks on.
pub const THREADS: usize = 4;
/// The UDP payload announced in EDNS0 (the DNS flag day's 1232).
const UDP_PAYLOAD: u16 = 1232;
/// The room a datagram is read into: the largest UDP payload, so that no
/// answer is cut by the kernel, whatever size the server chose to send.
const DATAGRAM_MAX: usize = 65_535;

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
        let (verdict, ttl) = check(&shared.servers, &job);
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

/// The lookups [`Check`] asks for, until it is done or the deadline passes.
fn check(servers: &[SocketAddr], job: &Job) -> (DnsVerdict, Duration) {
    let mut check = Check::new(job.ip, &job.suffixes);
    // Two tries per question fit in the check's time, as in the proxy.
    let per_try = (job.deadline.saturating_duration_since(Instant::now()) / 2).max(Duration::from_millis(5));
    loop {
        if Instant::now() >= job.deadline {
            // Cut short: `finish` says unverifiable (timeout).
            return check.finish();
        }
        match check.step() {
            Step::Ptr => {
                let name = Name::from(check.ip());
                check.ptr(ask(servers, &name, RecordType::PTR, job.deadline, per_try, |d| match d {
                    // `to_ascii` escapes a dot inside a label (`\.`), which
                    // the judge refuses: no label boundary can be smuggled in.
                    RData::PTR(p) => Some(p.0.to_ascii()),
                    _ => None,
                }));
            }
            Step::Forward(name) => {
                let Ok(name) = Name::from_ascii(format!("{name}.")) else {
                    check.forward(Answer::Nothing);
                    continue;
                };
                let rtype = if check.ip().is_ipv4() { RecordType::A } else { RecordType::AAAA };
                check.forward(ask(servers, &name, rtype, job.deadline, per_try, |d| match d {
                    RData::A(a) => Some(IpAddr::V4(a.0)),
                    RData::AAAA(a) => Some(IpAddr::V6(a.0)),
                    _ => None,
                }));
            }
            Step::Done => return check.finish(),
        }
    }
}

/// Ask `name`/`rtype` of the servers in turn (two rounds) until one
/// answers, within `deadline`; the records `pick` keeps, with the smallest
/// TTL of the answer.
fn ask<T>(
    servers: &[SocketAddr],
    name: &Name,
    rtype: RecordType,
    deadline: Instant,
    per_try: Duration,
    pick: impl Fn(&RData) -> Option<T>,
) -> Answer<T> {
    let mut trouble = Trouble::Timeout;
    for server in servers.iter().chain(servers) {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        let until = Instant::now() + left.min(per_try);
        let reply = match udp(*server, name, rtype, until) {
            // Truncated, or not readable as a whole message: the whole
            // answer over TCP, in the check's time.
            Ok(Datagram::Unreadable) => tcp(*server, name, rtype, deadline),
            Ok(Datagram::Reply(m)) if m.metadata.truncation => tcp(*server, name, rtype, deadline),
            Ok(Datagram::Reply(m)) => Ok(m),
            Err(t) => Err(t),
        };
        match reply {
            Ok(m) => match m.metadata.response_code {
                ResponseCode::NoError | ResponseCode::NXDomain => return records(&m, pick),
                code => trouble = Trouble::Resolver(format!("{server} answered {code}")),
            },
            Err(t) => trouble = t,
        }
    }
    Answer::Trouble(trouble)
}

/// The answer section's records `pick` keeps (a CNAME's target's included),
/// with the smallest TTL of the section.
fn records<T>(m: &Message, pick: impl Fn(&RData) -> Option<T>) -> Answer<T> {
    let ttl = m.answers.iter().map(|r| r.ttl).min().unwrap_or(u32::MAX);
    let records: Vec<T> = m.answers.iter().filter_map(|r| pick(&r.data)).collect();
    if records.is_empty() {
        Answer::Nothing
    } else {
        Answer::Found { records, ttl: Duration::from_secs(u64::from(ttl)) }
    }
}

/// The question, with a fresh random id, recursion desired and EDNS0.
fn question(name: &Name, rtype: RecordType) -> Result<(u16, Vec<u8>), Trouble> {
    let mut m = Message::query();
    m.metadata.recursion_desired = true;
    m.add_query(Query::query(name.clone(), rtype));
    let mut edns = Edns::new();
    edns.set_max_payload(UDP_PAYLOAD);
    m.set_edns(edns);
    let bytes = m.to_vec().map_err(|e| Trouble::Resolver(format!("question for {name}: {e}")))?;
    Ok((m.metadata.id, bytes))
}

/// A reply to question `id` about `name`/`rtype`, or `None` (someone
/// else's, or not a reply at all).
fn reply_to(bytes: &[u8], id: u16, name: &Name, rtype: RecordType) -> Option<Message> {
    let m = Message::from_vec(bytes).ok()?;
    let q = m.queries.first()?;
    let ours = m.metadata.id == id
        && m.metadata.message_type == MessageType::Response
        && m.queries.len() == 1
        && q.query_type() == rtype
        && q.name() == name;
    ours.then_some(m)
}

fn io_trouble(server: SocketAddr, e: &std::io::Error) -> Trouble {
    match e.kind() {
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => Trouble::Timeout,
        _ => Trouble::Resolver(format!("{server}: {e}")),
    }
}

/// The time left before `until`, or a timeout.
fn left(until: Instant) -> Result<Duration, Trouble> {
    let left = until.saturating_duration_since(Instant::now());
    if left.is_zero() {
        Err(Trouble::Timeout)
    } else {
        Ok(left)
    }
}

/// What a UDP question got back.
enum Datagram {
    /// The reply, read whole.
    Reply(Message),
    /// A reply to the question (its id, the response bit, from the server)
    /// that is no message one can read: cut short (a truncated answer
    /// whose end is missing) or malformed. Over TCP it may be whole.
    Unreadable,
}

/// Whether `bytes` start as a reply to question `id`: its id, and the
/// response bit (RFC 1035 4.1.1).
fn answers_id(bytes: &[u8], id: u16) -> bool {
    bytes.len() >= 3 && u16::from_be_bytes([bytes[0], bytes[1]]) == id && bytes[2] & 0x80 != 0
}

/// One question over UDP, from a fresh socket (a fresh port), until `until`.
fn udp(server: SocketAddr, name: &Name, rtype: RecordType, until: Instant) -> Result<Datagram, Trouble> {
    let (id, bytes) = question(name, rtype)?;
    let local: SocketAddr = if server.is_ipv4() { ([0, 0, 0, 0], 0).into() } else { ([0u16; 8], 0).into() };
    let socket = UdpSocket::bind(local).map_err(|e| io_trouble(server, &e))?;
    // Connected: replies from any other address are not read.
    socket.connect(server).map_err(|e| io_trouble(server, &e))?;
    socket.send(&bytes).map_err(|e| io_trouble(server, &e))?;
    // Room for the largest datagram: a server that sends more than the
    // question announced is still read to the end.
    let mut buf = vec![0u8; DATAGRAM_MAX];
    loop {
        socket.set_read_timeout(Some(left(until)?)).map_err(|e| io_trouble(server, &e))?;
        let n = socket.recv(&mut buf).map_err(|e| io_trouble(server, &e))?;
        if let Some(m) = reply_to(&buf[..n], id, name, rtype) {
            return Ok(Datagram::Reply(m));
        }
        // The connected socket reads only the server's datagrams; one
        // with the question's id that does not parse is its answer, cut
        // or mangled, not someone else's: ask again over TCP rather than
        // wait out the deadline for an answer that will not come.
        if answers_id(&buf[..n], id) && Message::from_vec(&buf[..n]).is_err() {
            return Ok(Datagram::Unreadable);
        }
    }
}

/// One question over TCP (a length before each message), until `until`:
/// each write and read is bounded by the time left, so no trickle can
/// stretch it.
fn tcp(server: SocketAddr, name: &Name, rtype: RecordType, until: Instant) -> Result<Message, Trouble> {
    let (id, bytes) = question(name, rtype)?;
    let mut stream = TcpStream::connect_timeout(&server, left(until)?).map_err(|e| io_trouble(server, &e))?;
    let _ = stream.set_nodelay(true);
    let mut framed = Vec::with_capacity(bytes.len() + 2);
    framed.extend_from_slice(&(bytes.len() as u16).to_be_bytes());
    framed.extend_from_slice(&bytes);
    stream.set_write_timeout(Some(left(until)?)).map_err(|e| io_trouble(server, &e))?;
    stream.write_all(&framed).map_err(|e| io_trouble(server, &e))?;
    let mut read = |buf: &mut [u8]| -> Result<(), Trouble> {
        let mut at = 0;
        while at < buf.len() {
            stream.set_read_timeout(Some(left(until)?)).map_err(|e| io_trouble(server, &e))?;
            match stream.read(&mut buf[at..]) {
                Ok(0) => return Err(Trouble::Resolver(format!("{server}: closed over TCP"))),
                Ok(n) => at += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(io_trouble(server, &e)),
            }
        }
        Ok(())
    };
    let mut len = [0u8; 2];
    read(&mut len)?;
    let mut body = vec![0u8; usize::from(u16::from_be_bytes(len))];
    read(&mut body)?;
    let m = reply_to(&body, id, name, rtype)
        .ok_or_else(|| Trouble::Resolver(format!("{server}: no reply to the question over TCP")))?;
    if m.metadata.truncation {
        return Err(Trouble::Resolver(format!("{server}: truncated over TCP")));
    }
    Ok(m)
}
