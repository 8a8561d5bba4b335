//! A DNS server on loopback for tests, on `hickory-server`, over UDP and TCP
//! on the same port: answers from a table, stays silent or slow on demand,
//! counts what it is asked. Over UDP an answer is cut at 512 bytes (the
//! table's replies carry no EDNS0), with the TC bit set, as a real server
//! cuts one, so a long PTR set is whole only over TCP; or, as a server
//! that ignores the size a question announces, whole in one datagram
//! ([`Server::whole_over_udp`]).
//!
//! hickory does the wire format and the socket; the request handler is ours
//! rather than its in-memory zone, because the tests want what a zone does
//! not offer: an RCODE per name (SERVFAIL), silence (a handler that sends
//! nothing), a delay, and a count of the questions. A PTR name is built
//! label by label from raw bytes, so a label may hold a dot: hickory
//! encodes it as given.
#![allow(dead_code)]

use std::collections::HashMap;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use hickory_server::net::runtime::Time;
use hickory_server::net::xfer::Protocol;
use hickory_server::proto::op::{Edns, Header, HeaderCounts, Metadata, ResponseCode};
use hickory_server::proto::rr::{rdata, Name, RData, Record, RecordType};
use hickory_server::server::{Request, RequestHandler, ResponseHandler, ResponseInfo};
use hickory_server::zone_handler::MessageResponseBuilder;

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
/// reads queries and never answers; `delay`: it waits that long before each
/// answer. Runs on its own thread and runtime; stops when dropped.
pub struct Server {
    pub addr: SocketAddr,
    queries: Arc<Mutex<Vec<(String, u16)>>>,
    tcp: Arc<Mutex<usize>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    pub fn start(table: &[(&str, Answer)], silent: bool, delay: Duration) -> Server {
        Server::start_with(table, silent, delay, false)
    }

    /// A server that sends every answer whole over UDP, however long (up
    /// to 65,535 bytes), whatever size the question announced, and never
    /// sets TC: what a hand-rolled server or a misconfigured one does. A
    /// resolver that reads only the size it announced loses the end of a
    /// long answer.
    pub fn whole_over_udp(table: &[(&str, Answer)]) -> Server {
        Server::start_with(table, false, Duration::ZERO, true)
    }

    fn start_with(table: &[(&str, Answer)], silent: bool, delay: Duration, whole: bool) -> Server {
        // Bound here, so queries sent as soon as `start` returns are queued;
        // TCP on the UDP socket's port (another may hold it: try again).
        let (socket, listener) = (0..50)
            .find_map(|_| {
                let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
                let tcp = std::net::TcpListener::bind(socket.local_addr().unwrap()).ok()?;
                Some((socket, tcp))
            })
            .expect("a port free for both UDP and TCP");
        socket.set_nonblocking(true).unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = socket.local_addr().unwrap();
        let mut map: HashMap<String, Vec<Answer>> = HashMap::new();
        for (name, a) in table {
            map.entry(name.to_ascii_lowercase()).or_default().push(a.clone());
        }
        let queries = Arc::new(Mutex::new(Vec::new()));
        let tcp = Arc::new(Mutex::new(0));
        let handler = Table { map, queries: queries.clone(), tcp: tcp.clone(), silent, delay, whole };
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            rt.block_on(async move {
                let mut server = hickory_server::Server::new(handler);
                server.register_socket(tokio::net::UdpSocket::from_std(socket).unwrap());
                server.register_listener(
                    tokio::net::TcpListener::from_std(listener).unwrap(),
                    Duration::from_secs(5),
                    65_535,
                );
                let _ = stopped.await;
                let _ = server.shutdown_gracefully().await;
            });
        });
        Server { addr, queries, tcp, stop: Some(stop), thread: Some(thread) }
    }

    pub fn answering(table: &[(&str, Answer)]) -> Server {
        Server::start(table, false, Duration::ZERO)
    }

    pub fn count(&self) -> usize {
        self.queries.lock().unwrap().len()
    }

    /// Questions asked over TCP.
    pub fn count_tcp(&self) -> usize {
        *self.tcp.lock().unwrap()
    }

    pub fn count_type(&self, qtype: u16) -> usize {
        self.queries.lock().unwrap().iter().filter(|(_, t)| *t == qtype).count()
    }

    /// Questions about `name` (without the trailing dot, any case).
    pub fn count_name(&self, name: &str) -> usize {
        let name = name.trim_end_matches('.');
        self.queries.lock().unwrap().iter().filter(|(n, _)| n.trim_end_matches('.').eq_ignore_ascii_case(name)).count()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

struct Table {
    map: HashMap<String, Vec<Answer>>,
    queries: Arc<Mutex<Vec<(String, u16)>>>,
    tcp: Arc<Mutex<usize>>,
    silent: bool,
    delay: Duration,
    /// Answers carry EDNS0 announcing 65,535 bytes, so that hickory sends
    /// them whole over UDP.
    whole: bool,
}

#[async_trait::async_trait]
impl RequestHandler for Table {
    async fn handle_request<R: ResponseHandler, T: Time>(&self, request: &Request, mut response: R) -> ResponseInfo {
        // Flags as an authoritative server that also offers recursion: AA, RA, RD copied.
        let mut meta = Metadata::response_from_request(&request.metadata);
        meta.authoritative = true;
        meta.recursion_available = true;
        let Ok(info) = request.request_info() else {
            meta.response_code = ResponseCode::FormErr;
            return ResponseInfo::from(Header { metadata: meta, counts: HeaderCounts::default() });
        };
        // The question's name as the table spells it: labels joined by dots, no trailing dot.
        let qname = Name::from(info.query.name().clone());
        let key = qname.iter().map(String::from_utf8_lossy).collect::<Vec<_>>().join(".");
        let qtype = info.query.query_type();
        self.queries.lock().unwrap().push((key.clone(), u16::from(qtype)));
        if request.protocol() == Protocol::Tcp {
            *self.tcp.lock().unwrap() += 1;
        }
        if self.silent {
            return ResponseInfo::from(Header { metadata: meta, counts: HeaderCounts::default() });
        }
        tokio::time::sleep(self.delay).await;

        let entry = self.map.get(&key);
        meta.response_code = if entry.is_some() { ResponseCode::NoError } else { ResponseCode::NXDomain };
        let mut records = Vec::new();
        for a in entry.into_iter().flatten() {
            let rdata = match a {
                Answer::Ptr(labels) if qtype == RecordType::PTR => {
                    RData::PTR(rdata::PTR(Name::from_labels(labels.iter().map(|l| l.as_bytes())).unwrap()))
                }
                Answer::A(ip) if qtype == RecordType::A => RData::A(rdata::A(*ip)),
                Answer::Aaaa(ip) if qtype == RecordType::AAAA => RData::AAAA(rdata::AAAA(*ip)),
                Answer::Rcode(r) => {
                    meta.response_code = ResponseCode::from_low(*r);
                    continue;
                }
                _ => continue,
            };
            records.push(Record::from_rdata(qname.clone(), 3600, rdata));
        }
        let mut edns = Edns::new();
        edns.set_max_payload(u16::MAX);
        let mut builder = MessageResponseBuilder::from_message_request(request);
        if self.whole {
            builder.edns(&edns);
        }
        let reply = builder.build(meta, &records, [], [], []);
        match response.send_response(reply).await {
            Ok(sent) => sent,
            Err(_) => ResponseInfo::from(Header { metadata: meta, counts: HeaderCounts::default() }),
        }
    }
}
