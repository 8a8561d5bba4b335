//! Each accepted connection, before and beneath Pingora's HTTP: the PROXY
//! protocol header on the listeners that take one, and the request-head
//! deadline on every connection.
//!
//! # The request-head deadline
//!
//! Pingora bounds each read of a request head, never the head as a whole,
//! and has no hook that runs when a connection is accepted and again when
//! its head is complete. So robotgate puts its own [`ServerApp`], [`Edge`],
//! in front of Pingora's HTTP proxy. For each new connection (after the TLS
//! handshake, if any) it wraps the stream in a [`Guarded`] stream and hands
//! that to Pingora, which then reads every byte of the connection through
//! it. The wrapper owns a [`HeadClock`] (the rules are in
//! [`crate::deadline`]) and, while a head is being read:
//!
//! * a read that would wait arms a tokio timer for the head's deadline, so
//!   the connection's task wakes then even if the client sends nothing;
//! * any read at or after the deadline fails with `TimedOut`, and Pingora
//!   closes the connection.
//!
//! The proxy tells the wrapper when an HTTP/1 head is complete
//! ([`head_complete`], from `early_request_filter`) and when a request is
//! done ([`request_done`], from `logging`): it finds the wrapper through the
//! session's stream (`Session::stream`, the object it was given). HTTP/2
//! streams do not expose it; for HTTP/2 the clock finds the header blocks
//! in the frames it passes on.
//!
//! Nothing here acts on a file descriptor or outlives the connection: the
//! timer lives inside the stream object and is dropped with it, so a
//! deadline can never hit another connection that reuses the descriptor.
//! Connections of an idle keep-alive wait are bounded by Pingora's
//! keep-alive timeout (`limits.keepalive_timeout`); over HTTP/2, by its
//! idle timeout (set to the same).
//!
//! # The PROXY protocol
//!
//! On a listener with `proxy_protocol: true`, [`ProxyProtocol`] reads the
//! header ([`crate::proxy_protocol`]) before anything else: for HTTPS
//! listeners in Pingora's pre-TLS hook ([`PreTlsProcess`](pingora::listeners::PreTlsProcess), which Pingora
//! runs for TLS listeners only), for plain ones in [`Edge`]. The peer must
//! be one of `trusted_proxies`, or nothing is read and the connection is
//! dropped; so is one whose header is missing, invalid, longer than the
//! limit or slower than [`PROXY_HEADER_TIMEOUT`]. The header's source
//! becomes the connection's peer in its socket digest, which is what
//! `session.client_addr()` returns. The forwarding headers a client sent
//! are removed on such a listener before anything reads them
//! ([`drop_forwarding_headers`]).

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant, SystemTime};

use async_trait::async_trait;
use pingora::apps::ServerApp;
use pingora::protocols::http::ServerSession;
use pingora::protocols::raw_connect::ProxyDigest;
use pingora::protocols::tls::{SslDigest, TlsRef};
use pingora::protocols::{
    GetProxyDigest, GetSocketDigest, GetTimingDigest, Peek, Shutdown, SocketDigest, Ssl, Stream, TimingDigest,
    UniqueID, UniqueIDType, ALPN,
};
use pingora::server::ShutdownWatch;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

pub use super::proxy_header::ProxyProtocol;
pub use super::proxy_header::{drop_forwarding_headers, PROXY_HEADER_TIMEOUT};
use super::room::{Room, Seat};

use crate::deadline::{HeadClock, H2_PREFACE};
use crate::head::{HeadScrub, Unreadable, HOLD_MAX};
use crate::server::telemetry::metrics;

/// robotgate's connection handling around a Pingora HTTP app (the proxy,
/// the auth listener, the metrics listener): a bound on connections open at
/// once, the request-head deadline, and the PROXY protocol. See the module
/// documentation.
pub struct Edge<A> {
    app: Arc<A>,
    head_timeout: Duration,
    proxy_protocol: Option<Arc<ProxyProtocol>>,
    /// A place per open connection ([`Room`]): one listener cannot take
    /// every descriptor, nor silent connections hold it shut.
    room: Room,
    /// The listener's name in `robotgate_connections_refused_total`.
    listener: &'static str,
}

impl<A> Edge<A> {
    /// Serve `app` with request heads bounded by `head_timeout`, at most
    /// `max_connections` connections at once, and with the PROXY protocol
    /// read first on plain connections when `proxy_protocol` is given (TLS
    /// listeners read it in the same object's pre-TLS hook).
    pub fn new(
        app: A,
        listener: &'static str,
        max_connections: usize,
        head_timeout: Duration,
        proxy_protocol: Option<Arc<ProxyProtocol>>,
    ) -> Edge<A> {
        Edge { app: Arc::new(app), head_timeout, proxy_protocol, room: Room::new(max_connections), listener }
    }
}

#[async_trait]
impl<A: ServerApp + Send + Sync + 'static> ServerApp for Edge<A> {
    async fn process_new(self: &Arc<Self>, mut stream: Stream, shutdown: &ShutdownWatch) -> Option<Stream> {
        // Held for the connection's life: the app serves every request of a
        // connection (keep-alive included) inside one call.
        let Some(place) = self.room.enter().await else {
            metrics().connections_refused.with_label_values(&[self.listener]).inc();
            return None;
        };
        if let Some(pp) = &self.proxy_protocol {
            // Over TLS the header came before the handshake, in the pre-TLS hook.
            if stream.get_ssl_digest().is_none() {
                pp.accept(&mut *stream).await.ok()?;
            }
        }
        // The ClientHello read before the handshake is this connection's
        // until it ends (`super::hello`).
        let hello = stream.get_ssl_digest().and_then(|_| super::hello::live(stream.get_socket_digest()));
        let guarded: Stream = Box::new(Guarded::new(stream, self.head_timeout, self.listener, place.seat.clone()));
        let reused = ServerApp::process_new(&self.app, guarded, shutdown).await;
        if let Some(key) = hello {
            super::hello::forget(key);
        }
        reused
    }

    async fn cleanup(&self) {
        ServerApp::cleanup(&*self.app).await;
    }
}

/// The whole HTTP/1 head of `session`'s request is in: its deadline stops.
pub fn head_complete(session: &ServerSession) {
    signal(session, HEAD_COMPLETE);
}

/// `session`'s request is done: until the next head starts, the keep-alive
/// timeout applies, not the head's.
pub fn request_done(session: &ServerSession) {
    signal(session, REQUEST_DONE);
}

/// What the HTTP/1 head of `session`'s request held that could not be read
/// as sent ([`crate::head`]): the request is to be refused, with a record.
pub fn unreadable(session: &ServerSession) -> Option<Unreadable> {
    let guarded = session.stream().and_then(|s| s.as_any().downcast_ref::<Guarded>())?;
    Unreadable::from_byte(guarded.unreadable.load(Ordering::Relaxed))
}

const NO_SIGNAL: u8 = 0;
const HEAD_COMPLETE: u8 = 1;
const REQUEST_DONE: u8 = 2;

fn signal(session: &ServerSession, what: u8) {
    let guarded = session.stream().and_then(|s| s.as_any().downcast_ref::<Guarded>());
    if let Some(g) = guarded {
        g.signal.store(what, Ordering::Relaxed);
        g.seat.seated(); // A head came whole: its place is kept.
    }
}

/// A connection's stream with its request-head deadline, and each HTTP/1
/// head scrubbed of what Pingora's parser would refuse before robotgate
/// sees it ([`crate::head`]). Every other call goes to the stream inside.
#[derive(Debug)]
pub struct Guarded {
    inner: Stream,
    clock: HeadClock,
    /// The scrub of the HTTP/1 head being read.
    scrub: HeadScrub,
    /// Bytes of the head the scrub held back ([`HeadScrub::feed`]), given
    /// first at the next read.
    held: [u8; HOLD_MAX],
    held_len: usize,
    /// What the current head held ([`Unreadable::to_byte`]), for [`unreadable`].
    unreadable: AtomicU8,
    /// The last word from the HTTP session ([`head_complete`],
    /// [`request_done`]), applied at the next read. Only the last matters:
    /// each says where the connection stands.
    signal: AtomicU8,
    /// Wakes the connection's task at the deadline while a read waits.
    timer: Option<Pin<Box<Sleep>>>,
    expired: bool,
    /// The listener's name in the metrics.
    listener: &'static str,
    /// Its place's standing: asked to go while it has sent no head ([`Room`]).
    seat: Arc<Seat>,
}

impl Guarded {
    fn new(inner: Stream, limit: Duration, listener: &'static str, seat: Arc<Seat>) -> Guarded {
        // Pingora stamps the connection when it accepts it; time spent since
        // (a TLS handshake) counts against the first head.
        let accepted = inner
            .get_timing_digest()
            .first()
            .and_then(Option::as_ref)
            .and_then(|t| SystemTime::now().duration_since(t.established_ts).ok())
            .and_then(|age| Instant::now().checked_sub(age))
            .unwrap_or_else(Instant::now);
        let mut clock = HeadClock::new(limit, accepted);
        if matches!(inner.selected_alpn_proto(), Some(ALPN::H2)) {
            clock.http2();
        }
        Guarded {
            inner,
            clock,
            scrub: HeadScrub::new(),
            held: [0; HOLD_MAX],
            held_len: 0,
            unreadable: AtomicU8::new(0),
            signal: AtomicU8::new(NO_SIGNAL),
            timer: None,
            expired: false,
            listener,
            seat,
        }
    }

    fn take_signal(&mut self) {
        match std::mem::replace(self.signal.get_mut(), NO_SIGNAL) {
            HEAD_COMPLETE => self.clock.head_complete(),
            REQUEST_DONE => {
                self.clock.request_done();
                // The next head is scrubbed afresh.
                self.scrub.restart();
                *self.unreadable.get_mut() = 0;
            }
            _ => {}
        }
    }

    /// Whether the bytes read next are an HTTP/1 head's to scrub.
    fn scrubbing(&self) -> bool {
        !self.clock.is_http2() && !self.scrub.is_done()
    }

    /// Scrub the head bytes just read (`buf` from `from` on, the held bytes
    /// first), keeping back what the scrub holds. Returns whether any byte
    /// is left to hand on.
    fn scrub_read(&mut self, buf: &mut ReadBuf<'_>, from: usize) -> bool {
        let end = buf.filled().len();
        let hold = self.scrub.feed(&mut buf.filled_mut()[from..]);
        let hold = hold.min(self.held.len());
        self.held[..hold].copy_from_slice(&buf.filled()[end - hold..end]);
        self.held_len = hold;
        buf.set_filled(end - hold);
        if let Some(u) = self.scrub.unreadable() {
            *self.unreadable.get_mut() = Unreadable::to_byte(Some(u));
        }
        end - hold > from
    }

    /// Close: past the head deadline (`head`), or headless for a newcomer (`evicted`, [`Room`]).
    fn expire(&mut self, phase: &'static str) -> io::Error {
        if !self.expired {
            self.expired = true;
            if phase == "head" {
                metrics().request_head_timeouts.inc();
            }
            metrics().connections_timed_out.with_label_values(&[self.listener, phase]).inc();
            let peer = self.inner.get_socket_digest().and_then(|d| d.peer_addr().map(ToString::to_string));
            tracing::debug!(target: "robotgate", peer = peer.as_deref().unwrap_or("-"), phase, "request head too slow: connection closed");
        }
        io::Error::new(io::ErrorKind::TimedOut, "request head not complete within limits.request_head_timeout")
    }
}

impl AsyncRead for Guarded {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        this.take_signal();
        if this.expired || this.clock.is_expired(Instant::now()) {
            return Poll::Ready(Err(this.expire("head")));
        }
        if this.clock.deadline().is_none() {
            this.seat.seated();
        } else if this.seat.is_evicted(cx.waker()) {
            return Poll::Ready(Err(this.expire("evicted")));
        }
        let before = buf.filled().len();
        loop {
            // The bytes the scrub held back go first (when they fit with
            // room to read more: else they go on as they are).
            let scrub = this.scrubbing() && buf.remaining() > this.held_len;
            let held = if scrub { this.held_len } else { 0 };
            if held > 0 {
                buf.put_slice(&this.held[..held]);
            } else if this.held_len > 0 {
                // No room to scrub them with what follows: as they are, in order.
                let n = this.held_len.min(buf.remaining());
                buf.put_slice(&this.held[..n]);
                this.held.copy_within(n..this.held_len, 0);
                this.held_len -= n;
                this.clock.read(&buf.filled()[before..], Instant::now);
                return Poll::Ready(Ok(()));
            }
            match Pin::new(&mut this.inner).poll_read(cx, buf) {
                Poll::Ready(Ok(())) => {
                    let eof = buf.filled().len() == before + held;
                    if scrub && !eof && !this.scrub_read(buf, before) {
                        // All of it held back: read on.
                        continue;
                    }
                    if eof {
                        this.held_len = 0;
                    }
                    this.clock.read(&buf.filled()[before..], Instant::now);
                    return Poll::Ready(Ok(()));
                }
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => {
                    // The held bytes wait with the rest.
                    buf.set_filled(before);
                    break;
                }
            }
        }
        let Some(deadline) = this.clock.deadline() else {
            // No head under way: drop a timer that could only wake the task for nothing.
            this.timer = None;
            return Poll::Pending;
        };
        let deadline = tokio::time::Instant::from_std(deadline);
        let timer = this.timer.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
        if timer.deadline() != deadline {
            timer.as_mut().reset(deadline);
        }
        match timer.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(this.expire("head"))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl AsyncWrite for Guarded {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

#[async_trait]
impl Shutdown for Guarded {
    async fn shutdown(&mut self) {
        self.inner.shutdown().await;
    }
}

impl UniqueID for Guarded {
    fn id(&self) -> UniqueIDType {
        self.inner.id()
    }
}

impl Ssl for Guarded {
    fn get_ssl(&self) -> Option<&TlsRef> {
        self.inner.get_ssl()
    }

    fn get_ssl_digest(&self) -> Option<Arc<SslDigest>> {
        self.inner.get_ssl_digest()
    }

    fn selected_alpn_proto(&self) -> Option<ALPN> {
        self.inner.selected_alpn_proto()
    }
}

impl GetTimingDigest for Guarded {
    fn get_timing_digest(&self) -> Vec<Option<TimingDigest>> {
        self.inner.get_timing_digest()
    }

    fn get_read_pending_time(&self) -> Duration {
        self.inner.get_read_pending_time()
    }

    fn get_write_pending_time(&self) -> Duration {
        self.inner.get_write_pending_time()
    }
}

impl GetProxyDigest for Guarded {
    fn get_proxy_digest(&self) -> Option<Arc<ProxyDigest>> {
        self.inner.get_proxy_digest()
    }

    fn set_proxy_digest(&mut self, digest: ProxyDigest) {
        self.inner.set_proxy_digest(digest);
    }
}

impl GetSocketDigest for Guarded {
    fn get_socket_digest(&self) -> Option<Arc<SocketDigest>> {
        self.inner.get_socket_digest()
    }

    fn set_socket_digest(&mut self, digest: SocketDigest) {
        self.inner.set_socket_digest(digest);
    }
}

#[async_trait]
impl Peek for Guarded {
    /// Pingora peeks at a plain connection's first 24 bytes for the HTTP/2
    /// preface (h2c). The peek waits for those bytes, so it runs under the
    /// head's deadline too; a connection that turns out to speak HTTP/2
    /// switches its clock to HTTP/2 framing.
    async fn try_peek(&mut self, buf: &mut [u8]) -> io::Result<bool> {
        let peeked = match self.clock.deadline() {
            Some(deadline) => {
                let deadline = tokio::time::Instant::from_std(deadline);
                match tokio::time::timeout_at(deadline, self.inner.try_peek(buf)).await {
                    Ok(peeked) => peeked?,
                    Err(_) => return Err(self.expire("head")),
                }
            }
            None => self.inner.try_peek(buf).await?,
        };
        if peeked && buf == H2_PREFACE {
            self.clock.http2();
        }
        Ok(peeked)
    }
}
