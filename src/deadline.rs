//! The request-head deadline: by when a connection must have sent a whole
//! request head, as a state machine fed with the bytes read and the time.
//!
//! Why robotgate needs its own: Pingora bounds each read of a request head
//! (`read_timeout`, and the keep-alive timeout between requests), not the
//! head as a whole, so a client that sends one byte a second holds a
//! connection for as long as it likes (slowloris). The limit here is the
//! one nginx's `client_header_timeout` and Apache's `mod_reqtimeout`
//! (`header=20-40`) set.
//!
//! When the clock runs, for one connection:
//!
//! * From the accept until the first request's head is complete (so a TLS
//!   handshake counts against it, as in nginx).
//! * HTTP/1: between requests the connection is idle and the keep-alive
//!   timeout applies; the clock starts again with the first byte of the
//!   next head, and stops when the whole head is in. The adapter says when
//!   that is ([`HeadClock::head_complete`]); the end of a request is
//!   [`HeadClock::request_done`].
//! * HTTP/2: heads are HEADERS frames (with their CONTINUATIONs), which
//!   this clock finds in the bytes itself: it runs from the first byte of a
//!   HEADERS frame until the frame that ends the header block (flag
//!   `END_HEADERS`, RFC 9113 6.2, 6.10) has been read whole. A block is
//!   never interleaved with other frames (RFC 9113 4.3), so at most one
//!   runs at a time.
//!
//! The server's adapter (`server::http::conn`) owns one clock per
//! connection, feeds it every read, and closes the connection once
//! [`HeadClock::deadline`] has passed.

use std::time::{Duration, Instant};

/// The HTTP/2 client connection preface (RFC 9113 3.4).
pub const H2_PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// RFC 9113 6.2: HEADERS.
const HEADERS: u8 = 0x1;
/// RFC 9113 6.10: CONTINUATION.
const CONTINUATION: u8 = 0x9;
/// RFC 9113 6.2, 6.10: the flag that ends a header block.
const END_HEADERS: u8 = 0x4;

/// Where a connection stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// A head is being read; it must be whole by this instant.
    Head(Instant),
    /// A request is being served (its body read, its response written).
    Request,
    /// Between two HTTP/1 requests, waiting for the next (keep-alive).
    Idle,
}

/// The frame being read on an HTTP/2 connection.
#[derive(Debug, Clone)]
struct Frames {
    /// Bytes of the client preface still to come.
    preface: usize,
    /// The frame header read so far (9 bytes, RFC 9113 4.1).
    header: [u8; 9],
    /// How many bytes of `header` are in.
    have: usize,
    /// When the first byte of the frame being read came.
    started: Option<Instant>,
    /// Payload bytes of the current frame still to come.
    payload: usize,
    /// The current frame ends a header block.
    ends_block: bool,
}

/// One connection's request-head deadline. See the module documentation.
#[derive(Debug, Clone)]
pub struct HeadClock {
    limit: Duration,
    phase: Phase,
    /// HTTP/2 framing, once the connection is known to speak it.
    h2: Option<Frames>,
}

impl HeadClock {
    /// A clock for a connection accepted at `accepted`: its first head must
    /// be whole by `accepted + limit`.
    pub fn new(limit: Duration, accepted: Instant) -> HeadClock {
        HeadClock { limit, phase: Phase::Head(accepted + limit), h2: None }
    }

    /// The connection speaks HTTP/2, from its first byte on (the client
    /// preface, which this clock has not been fed yet). From now on the
    /// clock follows header blocks in the bytes, and
    /// [`HeadClock::head_complete`] and [`HeadClock::request_done`] are
    /// ignored.
    pub fn http2(&mut self) {
        if self.h2.is_none() {
            self.h2 = Some(Frames {
                preface: H2_PREFACE.len(),
                header: [0; 9],
                have: 0,
                started: None,
                payload: 0,
                ends_block: false,
            });
        }
    }

    /// Whether [`HeadClock::http2`] was called.
    pub fn is_http2(&self) -> bool {
        self.h2.is_some()
    }

    /// The instant by which the head being read must be whole, if one is.
    pub fn deadline(&self) -> Option<Instant> {
        match self.phase {
            Phase::Head(at) => Some(at),
            Phase::Request | Phase::Idle => None,
        }
    }

    /// Whether the deadline has passed at `now`.
    pub fn is_expired(&self, now: Instant) -> bool {
        self.deadline().is_some_and(|at| now >= at)
    }

    /// HTTP/1: the whole head is in; the clock stops.
    pub fn head_complete(&mut self) {
        if self.h2.is_none() {
            self.phase = Phase::Request;
        }
    }

    /// HTTP/1: the request is done; the connection waits for the next
    /// (keep-alive), and the clock starts again with its first byte.
    pub fn request_done(&mut self) {
        if self.h2.is_none() {
            self.phase = Phase::Idle;
        }
    }

    /// Account for `bytes`, just read from the client. `now` is asked at
    /// most once, and only when the time matters (a head starting).
    ///
    /// Cost: constant for HTTP/1; for HTTP/2, linear in the frame headers
    /// among `bytes` (payloads are skipped by length).
    pub fn read(&mut self, bytes: &[u8], now: impl FnOnce() -> Instant) {
        if bytes.is_empty() {
            return;
        }
        let mut now = Some(now);
        let mut at = None;
        let mut clock = move || *at.get_or_insert_with(|| now.take().map_or_else(Instant::now, |f| f()));
        let Some(frames) = self.h2.as_mut() else {
            if self.phase == Phase::Idle {
                self.phase = Phase::Head(clock() + self.limit);
            }
            return;
        };
        let mut rest = bytes;
        while !rest.is_empty() {
            if frames.preface > 0 {
                let n = frames.preface.min(rest.len());
                frames.preface -= n;
                rest = &rest[n..];
                continue;
            }
            if frames.payload > 0 {
                let n = frames.payload.min(rest.len());
                frames.payload -= n;
                rest = &rest[n..];
                if frames.payload == 0 && frames.ends_block {
                    self.phase = Phase::Request;
                }
                continue;
            }
            if frames.have == 0 {
                frames.started = Some(clock());
            }
            let n = (9 - frames.have).min(rest.len());
            frames.header[frames.have..frames.have + n].copy_from_slice(&rest[..n]);
            frames.have += n;
            rest = &rest[n..];
            if frames.have < 9 {
                continue;
            }
            frames.have = 0;
            let h = frames.header;
            let length = usize::from(h[0]) << 16 | usize::from(h[1]) << 8 | usize::from(h[2]);
            let (kind, flags) = (h[3], h[4]);
            if kind == HEADERS {
                let started = frames.started.unwrap_or_else(&mut clock);
                let due = started + self.limit;
                // The first head's deadline, counted from the accept, stays
                // if it is the earlier.
                self.phase = Phase::Head(match self.phase {
                    Phase::Head(at) => at.min(due),
                    Phase::Request | Phase::Idle => due,
                });
            }
            frames.ends_block = (kind == HEADERS || kind == CONTINUATION) && flags & END_HEADERS != 0;
            frames.payload = length;
            if length == 0 && frames.ends_block {
                self.phase = Phase::Request;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMIT: Duration = Duration::from_secs(20);

    fn secs(t0: Instant, s: u64) -> Instant {
        t0 + Duration::from_secs(s)
    }

    /// An HTTP/2 frame: length, type, flags, stream 1, payload.
    fn frame(kind: u8, flags: u8, payload: &[u8]) -> Vec<u8> {
        let len = payload.len();
        let mut f = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags, 0, 0, 0, 1];
        f.extend_from_slice(payload);
        f
    }

    #[test]
    fn http1_first_head_counts_from_the_accept() {
        let t0 = Instant::now();
        let mut c = HeadClock::new(LIMIT, t0);
        assert_eq!(c.deadline(), Some(secs(t0, 20)));
        // Trickled bytes do not move it.
        for s in 1..19 {
            c.read(b"G", || secs(t0, s));
            assert_eq!(c.deadline(), Some(secs(t0, 20)));
        }
        assert!(!c.is_expired(secs(t0, 19)) && c.is_expired(secs(t0, 20)));
        c.head_complete();
        assert_eq!(c.deadline(), None);
        // Body bytes run no clock.
        c.read(b"body", || panic!("no time needed"));
        assert_eq!(c.deadline(), None);
    }

    #[test]
    fn http1_keepalive_restarts_with_the_first_byte_of_the_next_head() {
        let t0 = Instant::now();
        let mut c = HeadClock::new(LIMIT, t0);
        c.head_complete();
        c.request_done();
        // Idle: the keep-alive timeout's business, not this clock's.
        assert_eq!(c.deadline(), None);
        c.read(b"", || panic!("nothing read"));
        assert_eq!(c.deadline(), None);
        c.read(b"GET /", || secs(t0, 100));
        assert_eq!(c.deadline(), Some(secs(t0, 120)));
        c.read(b"x", || secs(t0, 110));
        assert_eq!(c.deadline(), Some(secs(t0, 120)), "later bytes do not extend it");
        // A request done without its head ever read whole (a refused
        // request) returns to idle all the same.
        c.request_done();
        assert_eq!(c.deadline(), None);
    }

    #[test]
    fn http2_header_blocks_run_the_clock() {
        let t0 = Instant::now();
        let mut c = HeadClock::new(LIMIT, t0);
        c.http2();
        c.head_complete(); // Ignored: HTTP/2 heads are found in the frames.
        assert_eq!(c.deadline(), Some(secs(t0, 20)));
        let mut bytes = H2_PREFACE.to_vec();
        bytes.extend(frame(0x4, 0, &[0; 12])); // SETTINGS
        c.read(&bytes, || secs(t0, 1));
        assert_eq!(c.deadline(), Some(secs(t0, 20)), "no head yet");
        // The first HEADERS, without END_HEADERS, then its CONTINUATION with it.
        c.read(&frame(HEADERS, 0x1, &[0xaa; 30]), || secs(t0, 2));
        assert_eq!(c.deadline(), Some(secs(t0, 20)), "the accept's deadline is the earlier");
        let cont = frame(CONTINUATION, END_HEADERS, &[0xbb; 10]);
        c.read(&cont[..cont.len() - 1], || secs(t0, 3));
        assert!(c.deadline().is_some(), "not whole until its last byte");
        c.read(&cont[cont.len() - 1..], || secs(t0, 3));
        assert_eq!(c.deadline(), None);
        // DATA and WINDOW_UPDATE run no clock.
        c.read(&frame(0x0, 0x1, &[0; 100]), || secs(t0, 50));
        assert_eq!(c.deadline(), None);
        // A later HEADERS frame trickled one byte at a time: once its frame
        // header says what it is, its deadline runs from its first byte.
        let next = frame(HEADERS, END_HEADERS | 0x1, &[0xcc; 5]);
        for (i, b) in next.iter().enumerate() {
            c.read(std::slice::from_ref(b), || secs(t0, 100 + u64::try_from(i).unwrap()));
            let expected = match i {
                0..=7 => None,
                _ if i < next.len() - 1 => Some(secs(t0, 120)),
                _ => None,
            };
            assert_eq!(c.deadline(), expected, "byte {i}");
        }
        // An empty HEADERS frame with END_HEADERS ends its block at once.
        c.read(&frame(HEADERS, END_HEADERS, &[]), || secs(t0, 200));
        assert_eq!(c.deadline(), None);
    }

    #[test]
    fn http2_frames_split_anywhere_give_the_same_result() {
        let t0 = Instant::now();
        let mut bytes = H2_PREFACE.to_vec();
        bytes.extend(frame(0x4, 0, &[0; 6]));
        bytes.extend(frame(HEADERS, END_HEADERS, &[1; 40]));
        bytes.extend(frame(0x0, 0x1, &[2; 300]));
        for split in 0..bytes.len() {
            let mut c = HeadClock::new(LIMIT, t0);
            c.http2();
            c.read(&bytes[..split], || secs(t0, 1));
            c.read(&bytes[split..], || secs(t0, 2));
            assert_eq!(c.deadline(), None, "split at {split}");
        }
    }
}
