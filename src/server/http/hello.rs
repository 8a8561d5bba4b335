//! The ClientHello of each HTTPS connection, read before rustls takes it
//! (issue #67): [`crate::agent::disguise::hello`] reads the bytes; this
//! module gets them off the socket and keeps what they said for the
//! connection's requests.
//!
//! Pingora runs a listener's pre-TLS hook ([`PreTlsProcess`]) on the raw
//! connection before its handshake: [`BeforeTls`] reads exactly the records
//! of the ClientHello, no byte more, and puts them back
//! ([`L4Stream::rewind`]) for rustls to read as if untouched. A PROXY
//! protocol listener's hook reads the PROXY header instead
//! ([`super::conn::ProxyProtocol`]) and no hello: a balancer in HTTP mode
//! makes its own TLS connection, and nothing in the bytes says which kind
//! of balancer sent them (`super::proxy`). A
//! connection whose first bytes are not a hello this reader takes (not
//! TLS, longer than 16 KiB) goes on to rustls with nothing recorded; one
//! that sends no whole hello within the request-head limit is closed, as
//! a head that does not come is.
//!
//! What the hello said is kept in a table by the connection's addresses
//! (its peer, after the PROXY protocol, and its local address): that is
//! what an HTTP/1 and an HTTP/2 session alike can name (`Session::digest`),
//! where the stream object is out of reach of HTTP/2. An entry is made
//! live when the connection's handshake is done ([`super::conn::Edge`]) and
//! removed when the connection ends; the entry of a handshake that failed
//! is dropped once older than twice the head limit, when its shard is
//! full. A full table records nothing new: those connections are judged by
//! their headers only.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use pingora::listeners::PreTlsProcess;
use pingora::protocols::l4::stream::Stream as L4Stream;
use pingora::protocols::GetSocketDigest;
use pingora::proxy::Session;
use tokio::io::AsyncReadExt;

use crate::agent::disguise::hello::{self, Hello, Read};

/// A connection, by its peer and local addresses.
pub type Key = (SocketAddr, SocketAddr);

struct Entry {
    hello: Hello,
    at: Instant,
    /// The handshake is done and the connection is being served.
    live: bool,
}

const SHARDS: usize = 16;
/// Entries per shard: 64 Ki connections in all, about 6 MB.
const SHARD_CAP: usize = 4096;

static TABLE: [Mutex<Option<HashMap<Key, Entry>>>; SHARDS] = [const { Mutex::new(None) }; SHARDS];

fn shard(key: &Key) -> &'static Mutex<Option<HashMap<Key, Entry>>> {
    let port = key.0.port() as usize ^ (key.1.port() as usize).rotate_left(3);
    &TABLE[port % SHARDS]
}

fn key_of(digest: Option<Arc<pingora::protocols::SocketDigest>>) -> Option<Key> {
    let digest = digest?;
    let peer = *digest.peer_addr()?.as_inet()?;
    let local = *digest.local_addr()?.as_inet()?;
    Some((peer, local))
}

/// The pre-TLS hook of the proxy's HTTPS listeners. See the module
/// documentation.
pub struct BeforeTls {
    /// The longest the hello may take to come (the request-head limit).
    pub timeout: Duration,
}

#[async_trait]
impl PreTlsProcess for BeforeTls {
    async fn process(&self, stream: &mut L4Stream) -> pingora::Result<()> {
        let key = key_of(stream.get_socket_digest());
        let read = match tokio::time::timeout(self.timeout, take(stream)).await {
            Ok(read) => read,
            Err(_) => {
                crate::server::telemetry::metrics().request_head_timeouts.inc();
                return pingora::Error::e_explain(pingora::ErrorType::HandshakeError, "no ClientHello in time");
            }
        };
        let hello = match read {
            Ok(hello) => hello,
            Err(e) => {
                return pingora::Error::e_explain(pingora::ErrorType::HandshakeError, format!("ClientHello: {e}"))
            }
        };
        if let Some(key) = key {
            let mut guard = shard(&key).lock().unwrap_or_else(|p| p.into_inner());
            let map = guard.get_or_insert_with(HashMap::new);
            match hello {
                Some(hello) => {
                    if map.len() >= SHARD_CAP {
                        let stale = self.timeout * 2;
                        map.retain(|_, e| e.live || e.at.elapsed() < stale);
                    }
                    if map.len() < SHARD_CAP || map.contains_key(&key) {
                        map.insert(key, Entry { hello, at: Instant::now(), live: false });
                    }
                }
                None => {
                    map.remove(&key);
                }
            }
        }
        Ok(())
    }
}

/// Read the hello's records off `stream` and put every byte back: what it
/// said, or `None` when the bytes are not a hello this reader takes.
async fn take(stream: &mut L4Stream) -> std::io::Result<Option<Hello>> {
    let mut buf = Vec::with_capacity(2048);
    let found = loop {
        match hello::read(&buf) {
            Read::Need(n) => {
                let have = buf.len();
                buf.resize(n, 0);
                stream.read_exact(&mut buf[have..]).await?;
            }
            Read::Hello(h) => break Some(h),
            Read::NotHello => break None,
        }
    };
    stream.rewind(&buf);
    Ok(found)
}

/// The connection `digest` names is being served: its entry stays until
/// [`forget`].
pub fn live(digest: Option<Arc<pingora::protocols::SocketDigest>>) -> Option<Key> {
    let key = key_of(digest)?;
    let mut guard = shard(&key).lock().unwrap_or_else(|p| p.into_inner());
    let entry = guard.as_mut()?.get_mut(&key)?;
    entry.live = true;
    Some(key)
}

/// The connection `key` names has ended.
pub fn forget(key: Key) {
    let mut guard = shard(&key).lock().unwrap_or_else(|p| p.into_inner());
    if let Some(map) = guard.as_mut() {
        map.remove(&key);
    }
}

/// The hello of `session`'s connection, when the proxy read one.
pub fn of(session: &Session) -> Option<Hello> {
    let digest = session.digest()?;
    digest.ssl_digest.as_ref()?;
    let key = key_of(digest.socket_digest.clone())?;
    let guard = shard(&key).lock().unwrap_or_else(|p| p.into_inner());
    guard.as_ref()?.get(&key).filter(|e| e.live).map(|e| e.hello)
}
