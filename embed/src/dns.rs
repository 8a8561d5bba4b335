//! Forward-confirmed reverse DNS for an in-process module: the I/O half of
//! [`robotgate::identity::rdns`], whose [`Check`] says what to look up next
//! and judges the answers, step for step as for the proxy (moved here from
//! the nginx module, which runs it on its worker's DNS threads; the Envoy
//! module runs it on threads of its own).
//!
//! The questions go over UDP with EDNS0, and again over TCP when an answer
//! comes back truncated (RFC 7766) or cannot be read whole, so every PTR
//! name of an address is read, as the proxy reads them. A datagram is read
//! whole, however much longer than the size the question announced (a
//! server may ignore it): a long PTR set cut short and taken for no answer
//! at all left a spoofed claim unverifiable (issue 66). Each question goes
//! to each server in turn, two rounds, each try bounded by half the check's
//! time; the whole check is bounded by its deadline.

use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream, UdpSocket};
use std::time::{Duration, Instant};

use hickory_proto::op::{Edns, Message, MessageType, Query, ResponseCode};
use hickory_proto::rr::{Name, RData, RecordType};

use robotgate::identity::rdns::{Check, DnsVerdict, Lookup as Answer, Step, Trouble};

/// The UDP payload announced in EDNS0 (the DNS flag day's 1232).
const UDP_PAYLOAD: u16 = 1232;
/// The room a datagram is read into: the largest UDP payload, so that no
/// answer is cut by the kernel, whatever size the server chose to send.
const DATAGRAM_MAX: usize = 65_535;

/// Whether `ip` is the robot whose host names end in one of `suffixes`:
/// the lookups [`Check`] asks for, of `servers`, until it is done or
/// `deadline` passes (then unverifiable). Blocks the calling thread: a
/// host's helper thread, never its request thread. With the verdict, how
/// long it may be kept.
pub fn check(servers: &[SocketAddr], ip: IpAddr, suffixes: &[String], deadline: Instant) -> (DnsVerdict, Duration) {
    let mut check = Check::new(ip, suffixes);
    // Two tries per question fit in the check's time, as in the proxy.
    let per_try = (deadline.saturating_duration_since(Instant::now()) / 2).max(Duration::from_millis(5));
    loop {
        if Instant::now() >= deadline {
            // Cut short: `finish` says unverifiable (timeout).
            return check.finish();
        }
        match check.step() {
            Step::Ptr => {
                let name = Name::from(check.ip());
                check.ptr(ask(servers, &name, RecordType::PTR, deadline, per_try, |d| match d {
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
                check.forward(ask(servers, &name, rtype, deadline, per_try, |d| match d {
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
