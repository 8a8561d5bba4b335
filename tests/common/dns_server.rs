//! A UDP DNS server on loopback for tests: answers from a table, stays
//! silent on demand, counts what it is asked. A few dozen lines rather than
//! a DNS server crate: it can also build answers a real server refuses to
//! serve (a dot inside a label).
#![allow(dead_code)]

use std::collections::HashMap;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

pub const PTR: u16 = 12;
pub const A: u16 = 1;
pub const AAAA: u16 = 28;

#[derive(Clone)]
pub enum Answer {
    /// A PTR name, label by label (so a label may hold a dot).
    Ptr(Vec<&'static str>),
    A(Ipv4Addr),
    Aaaa(Ipv6Addr),
    /// Answer the name with this RCODE (2: SERVFAIL).
    Rcode(u8),
}

/// A UDP DNS server on 127.0.0.1 answering from `table` (name without the
/// trailing dot, lower case -> answers); an unknown name is NXDOMAIN, a known
/// name without records of the asked type is an empty NOERROR. `silent`: it
/// reads queries and never answers. Stops when dropped.
pub struct Server {
    pub addr: SocketAddr,
    queries: Arc<Mutex<Vec<(String, u16)>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    pub fn start(table: &[(&str, Answer)], silent: bool, delay: Duration) -> Server {
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        socket.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
        let addr = socket.local_addr().unwrap();
        let mut map: HashMap<String, Vec<Answer>> = HashMap::new();
        for (name, a) in table {
            map.entry(name.to_ascii_lowercase()).or_default().push(a.clone());
        }
        let queries = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (q, s) = (queries.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while !s.load(Ordering::Relaxed) {
                let Ok((n, peer)) = socket.recv_from(&mut buf) else { continue };
                let Some((name, qtype, qend)) = question(&buf[..n]) else { continue };
                q.lock().unwrap().push((name.clone(), qtype));
                if silent {
                    continue;
                }
                std::thread::sleep(delay);
                let reply = answer(&buf[..qend], &name, qtype, map.get(&name));
                let _ = socket.send_to(&reply, peer);
            }
        });
        Server { addr, queries, stop, thread: Some(thread) }
    }

    pub fn answering(table: &[(&str, Answer)]) -> Server {
        Server::start(table, false, Duration::ZERO)
    }

    pub fn count(&self) -> usize {
        self.queries.lock().unwrap().len()
    }

    pub fn count_type(&self, qtype: u16) -> usize {
        self.queries.lock().unwrap().iter().filter(|(_, t)| *t == qtype).count()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The question's name (lower case, no trailing dot), type, and where it ends.
fn question(msg: &[u8]) -> Option<(String, u16, usize)> {
    if msg.len() < 12 || u16::from_be_bytes([msg[4], msg[5]]) != 1 {
        return None;
    }
    let mut i = 12;
    let mut labels = Vec::new();
    loop {
        let len = usize::from(*msg.get(i)?);
        i += 1;
        if len == 0 {
            break;
        }
        labels.push(String::from_utf8_lossy(msg.get(i..i + len)?).to_ascii_lowercase());
        i += len;
    }
    let qtype = u16::from_be_bytes([*msg.get(i)?, *msg.get(i + 1)?]);
    Some((labels.join("."), qtype, i + 4))
}

/// A response to the query whose header and question are `query`.
fn answer(query: &[u8], _name: &str, qtype: u16, entry: Option<&Vec<Answer>>) -> Vec<u8> {
    let mut rcode = if entry.is_none() { 3 } else { 0 };
    let mut records: Vec<(u16, Vec<u8>)> = Vec::new();
    for a in entry.into_iter().flatten() {
        match a {
            Answer::Ptr(labels) if qtype == PTR => {
                let mut rdata = Vec::new();
                for l in labels {
                    rdata.push(l.len() as u8);
                    rdata.extend_from_slice(l.as_bytes());
                }
                rdata.push(0);
                records.push((PTR, rdata));
            }
            Answer::A(ip) if qtype == A => records.push((A, ip.octets().to_vec())),
            Answer::Aaaa(ip) if qtype == AAAA => records.push((AAAA, ip.octets().to_vec())),
            Answer::Rcode(r) => rcode = *r,
            _ => {}
        }
    }
    let mut out = query.to_vec();
    // QR, opcode 0, AA, RD copied, RA; RCODE.
    out[2] = 0x84 | (query[2] & 0x01);
    out[3] = 0x80 | rcode;
    out[6..8].copy_from_slice(&(records.len() as u16).to_be_bytes());
    out[8..12].fill(0); // no authority, no additional (the query's OPT is not echoed)
    for (t, rdata) in records {
        out.extend_from_slice(&[0xc0, 12]); // the question's name
        out.extend_from_slice(&t.to_be_bytes());
        out.extend_from_slice(&1u16.to_be_bytes()); // IN
        out.extend_from_slice(&3600u32.to_be_bytes());
        out.extend_from_slice(&(rdata.len() as u16).to_be_bytes());
        out.extend_from_slice(&rdata);
    }
    out
}
