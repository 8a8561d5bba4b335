//! The PROXY protocol header, read on the listeners that take one (see
//! [`super::conn`]'s documentation): in Pingora's pre-TLS hook for HTTPS
//! listeners, by [`super::conn::Edge`] for plain ones.

use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use async_trait::async_trait;
use pingora::listeners::PreTlsProcess;
use pingora::protocols::l4::stream::Stream as L4Stream;
use pingora::protocols::{GetSocketDigest, SocketDigest, UniqueID};
use pingora::proxy::Session;
use tokio::io::{AsyncRead, AsyncReadExt};

use crate::proxy_protocol::{self, Parsed};
use crate::server::snapshot::Snapshot;
use crate::server::telemetry::metrics;

/// The longest a load balancer may take to send its PROXY protocol header
/// (it sends it with the connection's first bytes), or the request-head
/// limit if that is shorter.
pub const PROXY_HEADER_TIMEOUT: Duration = Duration::from_secs(5);

/// Remove the headers that name a client (`Forwarded`, `X-Forwarded-For`,
/// `X-Real-IP`) from a request on a PROXY protocol listener: there the
/// header from the load balancer names the client, and what the client
/// wrote is never read. The origin gets `X-Forwarded-For` with the address
/// robotgate judged.
pub fn drop_forwarding_headers(session: &mut Session) {
    let req = session.req_header_mut();
    for name in ["forwarded", "x-forwarded-for", "x-real-ip"] {
        req.remove_header(name);
    }
}

/// Reads the PROXY protocol header on the listeners that take one. See the
/// module documentation.
pub struct ProxyProtocol {
    /// For `trusted_proxies` as they are now (a reload changes them).
    pub snapshot: Arc<ArcSwap<Snapshot>>,
    /// The bound on reading the header.
    pub timeout: Duration,
}

/// Why a connection on a PROXY protocol listener was dropped.
#[derive(Debug)]
pub(super) enum Refusal {
    /// The peer is not one of `trusted_proxies`.
    Untrusted,
    /// The header did not come within the time bound.
    Timeout,
    /// The peer closed the connection, or it failed, before a whole header.
    Closed,
    /// What came is not a valid header.
    Header(proxy_protocol::Error),
}

impl Refusal {
    /// The metric's `reason` label.
    fn reason(&self) -> &'static str {
        match self {
            Refusal::Untrusted => "untrusted_peer",
            Refusal::Timeout => "timeout",
            Refusal::Closed => "closed",
            Refusal::Header(proxy_protocol::Error::Missing) => "missing",
            Refusal::Header(proxy_protocol::Error::TooLong(_)) => "too_long",
            Refusal::Header(_) => "invalid",
        }
    }
}

impl ProxyProtocol {
    /// Check the peer, read the header from `stream`, and make its source
    /// the connection's peer. On `Err` the caller drops the connection.
    pub(super) async fn accept<S>(&self, stream: &mut S) -> Result<(), Refusal>
    where
        S: AsyncRead + Unpin + GetSocketDigest + UniqueID + Send + ?Sized,
    {
        let peer = stream.get_socket_digest().and_then(|d| d.peer_addr().and_then(|a| a.as_inet()).copied());
        let result = match peer {
            Some(peer) if self.trusts(peer.ip()) => {
                match tokio::time::timeout(self.timeout, read_header(stream)).await {
                    Ok(Ok(parsed)) => {
                        adopt(stream, &parsed);
                        Ok(())
                    }
                    Ok(Err(refusal)) => Err(refusal),
                    Err(_) => Err(Refusal::Timeout),
                }
            }
            _ => Err(Refusal::Untrusted),
        };
        if let Err(refusal) = &result {
            metrics().proxy_protocol_refused.with_label_values(&[refusal.reason()]).inc();
            let peer = peer.map_or_else(|| "-".to_owned(), |p| p.to_string());
            match refusal {
                // A bare TCP connect (a port check) is no news.
                Refusal::Closed => {
                    tracing::debug!(target: "robotgate", peer, reason = refusal.reason(), "PROXY protocol listener: connection dropped")
                }
                Refusal::Header(e) => {
                    tracing::warn!(target: "robotgate", peer, reason = refusal.reason(), error = %e, "PROXY protocol listener: connection dropped")
                }
                _ => {
                    tracing::warn!(target: "robotgate", peer, reason = refusal.reason(), "PROXY protocol listener: connection dropped")
                }
            }
        }
        result
    }

    fn trusts(&self, ip: std::net::IpAddr) -> bool {
        self.snapshot.load().settings.trusted_proxies.iter().any(|c| c.contains(ip))
    }
}

#[async_trait]
impl PreTlsProcess for ProxyProtocol {
    async fn process(&self, stream: &mut L4Stream) -> pingora::Result<()> {
        match self.accept(stream).await {
            Ok(()) => Ok(()),
            Err(refusal) => pingora::Error::e_explain(
                pingora::ErrorType::HandshakeError,
                format!("PROXY protocol: {}", refusal.reason()),
            ),
        }
    }
}

/// Read exactly one header: at each step only as many bytes as the parser
/// says a header still needs, so not one byte of the stream after it is
/// taken. Bounded by [`proxy_protocol::V2_MAX`] bytes; the caller bounds the time.
async fn read_header<S>(stream: &mut S) -> Result<Parsed, Refusal>
where
    S: AsyncRead + Unpin + Send + ?Sized,
{
    let mut buf = Vec::with_capacity(proxy_protocol::MIN_LEN * 4);
    loop {
        match proxy_protocol::parse(&buf) {
            Ok(parsed) => return Ok(parsed),
            Err(proxy_protocol::Error::Incomplete { needed }) => {
                let have = buf.len();
                buf.resize(needed, 0);
                stream.read_exact(&mut buf[have..]).await.map_err(|_| Refusal::Closed)?;
            }
            Err(e) => return Err(Refusal::Header(e)),
        }
    }
}

/// Make the header's source the connection's peer: a new socket digest for
/// the same descriptor, whose peer is the source and whose original
/// destination is the address the client connected to. The local address
/// is still read from the socket. A header without addresses (LOCAL,
/// UNKNOWN) leaves the digest as it is.
fn adopt<S>(stream: &mut S, parsed: &Parsed)
where
    S: GetSocketDigest + UniqueID + ?Sized,
{
    let Some(source) = parsed.source else { return };
    let digest = SocketDigest::from_raw_fd(stream.id());
    let _ = digest.peer_addr.set(Some(source.into()));
    if let Some(destination) = parsed.destination {
        let _ = digest.original_dst.set(Some(destination.into()));
    }
    stream.set_socket_digest(digest);
}
