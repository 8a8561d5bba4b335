//! What robotgate's own listeners (the SPOE agent, the ext_authz service)
//! share beneath their protocols: accepting without spinning when file
//! descriptors run out ([`accept`]), and, for the HTTP/2 one, a stream that
//! ends a connection which says nothing or trickles ([`Watched`]).
//! Pingora's listeners (the proxy, auth and metrics) have Pingora's own
//! accept loop, which pauses a second on `EMFILE`, and robotgate's
//! request-head deadline in [`super::conn`].

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Sleep;

use crate::deadline::HeadClock;
use crate::server::telemetry::metrics;

/// How long a listener waits before accepting again after an error that
/// is not one connection's (`EMFILE`, `ENFILE`, `ENOBUFS`, `ENOMEM`): the
/// connection waits in the backlog, so trying again at once fails again at
/// once, a core's worth of failures (issue 66).
pub const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// The pause before accepting again after `error`, if it calls for one:
/// none for an error of the one connection being accepted (it was reset or
/// aborted before it was taken), [`ACCEPT_BACKOFF`] for any other (a
/// shortage of descriptors or memory, which only time mends).
pub fn backoff(error: &io::Error) -> Option<Duration> {
    match error.kind() {
        io::ErrorKind::ConnectionAborted | io::ErrorKind::ConnectionReset | io::ErrorKind::Interrupted => None,
        _ => Some(ACCEPT_BACKOFF),
    }
}

/// The next connection of `listener` (named `name` in the metrics), waiting
/// out errors that are not the connection's ([`backoff`], counted in
/// `robotgate_accept_backoff_total`).
pub async fn accept(listener: &TcpListener, name: &'static str) -> TcpStream {
    loop {
        match listener.accept().await {
            Ok((stream, _)) => return stream,
            Err(e) => {
                if let Some(pause) = backoff(&e) {
                    metrics().accept_backoff.with_label_values(&[name]).inc();
                    tracing::debug!(target: "robotgate", listener = name, error = %e, "cannot accept: pausing");
                    tokio::time::sleep(pause).await;
                }
            }
        }
    }
}

/// An HTTP/2 server connection's stream with two deadlines:
///
/// * a head's: the first header block (after the client preface and
///   SETTINGS, so a silent socket too) must be whole within `head` of the
///   accept, each later one within `head` of its first byte
///   ([`HeadClock`] in its HTTP/2 mode, the proxy's own rules);
/// * an idle one: with no header block under way, the next must start
///   within `idle` of the last one's end. PINGs and their answers do not
///   count: a peer that only answers pings asks nothing.
///
/// Past either, every read fails with `TimedOut` and the server drops the
/// connection; counted in `robotgate_connections_timed_out_total`. Each
/// check is bounded by its edge's deadline, well inside `idle`, so a
/// connection is never cut with a check in flight.
#[derive(Debug)]
pub struct Watched<S> {
    inner: S,
    clock: HeadClock,
    idle: Duration,
    /// When the last header block ended (or the connection's first came in).
    quiet_since: Option<Instant>,
    /// Wakes the connection's task at the deadline while a read waits.
    timer: Option<Pin<Box<Sleep>>>,
    listener: &'static str,
    expired: bool,
}

impl<S> Watched<S> {
    /// `inner`, just accepted, on listener `listener`.
    pub fn new(inner: S, listener: &'static str, head: Duration, idle: Duration) -> Watched<S> {
        let mut clock = HeadClock::new(head, Instant::now());
        clock.http2();
        Watched { inner, clock, idle, quiet_since: None, timer: None, listener, expired: false }
    }

    /// The stream inside.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// The deadline now, and which it is.
    fn due(&self) -> (Instant, &'static str) {
        match (self.clock.deadline(), self.quiet_since) {
            (Some(head), _) => (head, "head"),
            (None, Some(quiet)) => (quiet + self.idle, "idle"),
            // Not reached: a clock without a head under way has seen one end.
            (None, None) => (Instant::now() + self.idle, "idle"),
        }
    }

    fn expire(&mut self, phase: &'static str) -> io::Error {
        if !self.expired {
            self.expired = true;
            metrics().connections_timed_out.with_label_values(&[self.listener, phase]).inc();
            tracing::debug!(target: "robotgate", listener = self.listener, phase, "connection too slow or idle: closed");
        }
        io::Error::new(io::ErrorKind::TimedOut, "connection past its head or idle deadline")
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Watched<S> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let (due, phase) = this.due();
        if this.expired || Instant::now() >= due {
            return Poll::Ready(Err(this.expire(phase)));
        }
        let before = buf.filled().len();
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                let had_head = this.clock.deadline().is_some();
                this.clock.read(&buf.filled()[before..], Instant::now);
                if this.clock.deadline().is_none() && (had_head || this.quiet_since.is_none()) {
                    this.quiet_since = Some(Instant::now());
                }
                this.timer = None;
                return Poll::Ready(Ok(()));
            }
            Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
            Poll::Pending => {}
        }
        let at = tokio::time::Instant::from_std(due);
        match &mut this.timer {
            Some(t) if t.deadline() == at => {}
            slot => *slot = Some(Box::pin(tokio::time::sleep_until(at))),
        }
        if let Some(t) = this.timer.as_mut() {
            if t.as_mut().poll(cx).is_ready() {
                return Poll::Ready(Err(this.expire(phase)));
            }
        }
        Poll::Pending
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Watched<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[test]
    fn a_shortage_pauses_and_a_lost_connection_does_not() {
        let emfile = io::Error::from_raw_os_error(24);
        let enfile = io::Error::from_raw_os_error(23);
        assert_eq!(backoff(&emfile), Some(ACCEPT_BACKOFF));
        assert_eq!(backoff(&enfile), Some(ACCEPT_BACKOFF));
        assert_eq!(backoff(&io::Error::from(io::ErrorKind::ConnectionAborted)), None);
    }

    #[tokio::test]
    async fn a_silent_peer_is_cut_at_the_head_deadline() {
        let (client, server) = tokio::io::duplex(64);
        let mut w = Watched::new(server, "test", Duration::from_millis(100), Duration::from_secs(60));
        let started = Instant::now();
        let mut buf = [0u8; 8];
        let err = w.read(&mut buf).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        assert!(started.elapsed() < Duration::from_secs(5));
        drop(client);
    }

    #[tokio::test]
    async fn after_a_head_the_idle_deadline_runs_and_pings_do_not_stop_it() {
        use tokio::io::AsyncWriteExt;
        let (mut client, server) = tokio::io::duplex(1024);
        let mut w = Watched::new(server, "test", Duration::from_secs(60), Duration::from_millis(300));
        // The preface, then one HEADERS frame with END_HEADERS (empty block).
        let mut bytes = crate::deadline::H2_PREFACE.to_vec();
        bytes.extend([0, 0, 0, 0x1, 0x4, 0, 0, 0, 1]);
        client.write_all(&bytes).await.unwrap();
        let mut buf = [0u8; 64];
        let mut got = 0;
        while got < bytes.len() {
            got += w.read(&mut buf).await.unwrap();
        }
        let started = Instant::now();
        // A PING every 50 ms: still idle.
        let pinger = tokio::spawn(async move {
            for _ in 0..40 {
                if client.write_all(&[0, 0, 8, 0x6, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8]).await.is_err() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        });
        let err = loop {
            match w.read(&mut buf).await {
                Ok(_) => continue,
                Err(e) => break e,
            }
        };
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        assert!(started.elapsed() < Duration::from_secs(1), "{:?}", started.elapsed());
        pinger.abort();
    }
}
