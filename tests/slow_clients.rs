//! Slow clients against the real binary (issue #32, part 5): request heads
//! trickled a byte at a time are cut at `limits.request_head_timeout`,
//! counted from the accept (or from the first byte of a later head on a
//! kept-alive connection), while an honest client next to them is served;
//! idle keep-alive connections close after `limits.keepalive_timeout`; over
//! HTTP/2, a connection whose first head is in is never cut by the head
//! deadline.

mod common;

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::*;

/// The deadline in these tests, in seconds; closing is asserted within
/// `MARGIN` of it.
const HEAD: u64 = 2;
const MARGIN: Duration = Duration::from_secs(8);

fn start(origin: &Origin, limits: &str, listen: &str) -> Gate {
    let config = TestConfig { upstream: &format!("\"{}\"", origin.addr), metrics: true, ..TestConfig::default() }
        .render()
        .replace("listen: [\"127.0.0.1:{port}\"]", listen);
    Gate::start(&format!("{config}limits: {limits}\n"), &[("robots.txt", b"User-agent: *\nDisallow: /private/\n")])
}

/// Whether the peer has closed `conn` (non-blocking): EOF or a reset. Any
/// answer bytes are appended to `got`.
fn closed(conn: &mut TcpStream, got: &mut Vec<u8>) -> bool {
    conn.set_nonblocking(true).unwrap();
    let mut buf = [0u8; 4096];
    let result = loop {
        match conn.read(&mut buf) {
            Ok(0) => break true,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == ErrorKind::WouldBlock => break false,
            Err(_) => break true,
        }
    };
    conn.set_nonblocking(false).unwrap();
    result
}

/// Read one HTTP/1.1 response (with a Content-Length) off `conn`: its status.
fn read_response(conn: &mut TcpStream) -> u16 {
    conn.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut data = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        if let Some(end) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&data[..end]).to_ascii_lowercase();
            let length: usize =
                head.lines().find_map(|l| l.strip_prefix("content-length:")).map_or(0, |v| v.trim().parse().unwrap());
            if data.len() >= end + 4 + length {
                return head.split(' ').nth(1).unwrap().parse().unwrap();
            }
        }
        let n = conn.read(&mut buf).expect("response");
        assert!(n > 0, "connection closed before a whole response: {:?}", String::from_utf8_lossy(&data));
        data.extend_from_slice(&buf[..n]);
    }
}

const TRICKLE: &[u8] = b"GET / HTTP/1.1\r\nHost: localhost\r\nUser-Agent: slowloris\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";

#[test]
fn trickled_heads_are_cut_at_the_deadline_while_an_honest_client_is_served() {
    let origin = Origin::start();
    let gate = start(
        &origin,
        &format!("{{ request_head_timeout: {HEAD}, keepalive_timeout: 30 }}"),
        "listen: [\"127.0.0.1:{port}\"]",
    );
    let started = Instant::now();
    let mut conns: Vec<TcpStream> = (0..20).map(|_| TcpStream::connect(("127.0.0.1", gate.port)).unwrap()).collect();
    let mut closed_at: Vec<Option<Duration>> = vec![None; conns.len()];
    let mut answers = vec![Vec::new(); conns.len()];
    // An honest client, once the trickling is under way.
    let url = gate.url("/page");
    let honest = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(1000));
        let t = Instant::now();
        let r = get(&url, &[("User-Agent", FIREFOX)]);
        (r.status, r.body, t.elapsed())
    });
    // One byte every half second on every connection still open.
    let mut sent = 0;
    while closed_at.iter().any(Option::is_none) && started.elapsed() < Duration::from_secs(HEAD) + MARGIN {
        for (i, conn) in conns.iter_mut().enumerate() {
            if closed_at[i].is_some() {
                continue;
            }
            let byte = &TRICKLE[sent.min(TRICKLE.len() - 1)..][..1];
            if conn.write_all(byte).is_err() || closed(conn, &mut answers[i]) {
                closed_at[i] = Some(started.elapsed());
            }
        }
        sent += 1;
        std::thread::sleep(Duration::from_millis(500));
    }
    let (status, body, took) = honest.join().unwrap();
    assert_eq!((status, body.as_str()), (200, "origin /page"), "the honest client is served");
    assert!(took < Duration::from_secs(2), "and promptly: {took:?}");
    for (i, at) in closed_at.iter().enumerate() {
        let at = at.unwrap_or_else(|| panic!("connection {i} still open after {:?}", started.elapsed()));
        assert!(at >= Duration::from_millis(HEAD * 1000 - 500), "connection {i} closed early, at {at:?}");
        assert!(at <= Duration::from_secs(HEAD) + MARGIN, "connection {i} closed at {at:?}");
        assert!(
            answers[i].is_empty(),
            "no answer to a head never finished: {:?}",
            String::from_utf8_lossy(&answers[i])
        );
    }
    println!("closed at {:?}", closed_at.iter().map(|d| d.unwrap().as_millis()).collect::<Vec<_>>());
    assert_eq!(metric(&gate, "robotgate_request_head_timeouts_total"), 20.0);
    assert_eq!(origin.hits(), 1, "only the honest request reached the origin");
}

#[test]
fn a_slow_second_head_on_a_kept_alive_connection_is_cut_too() {
    let origin = Origin::start();
    let gate = start(
        &origin,
        &format!("{{ request_head_timeout: {HEAD}, keepalive_timeout: 30 }}"),
        "listen: [\"127.0.0.1:{port}\"]",
    );
    let mut conn = TcpStream::connect(("127.0.0.1", gate.port)).unwrap();
    conn.write_all(b"GET /one HTTP/1.1\r\nHost: localhost\r\n\r\n").unwrap();
    assert_eq!(read_response(&mut conn), 200);
    // Idle for longer than the head deadline: the keep-alive timeout's
    // business, not the head's, so the connection stays.
    std::thread::sleep(Duration::from_millis(HEAD * 1000 + 500));
    let mut got = Vec::new();
    assert!(!closed(&mut conn, &mut got), "an idle kept-alive connection is not cut by the head deadline");
    // A whole head after the idle wait is served.
    conn.write_all(b"GET /two HTTP/1.1\r\nHost: localhost\r\n\r\n").unwrap();
    assert_eq!(read_response(&mut conn), 200);
    // The third head is trickled: cut within the deadline of its first byte.
    let first = Instant::now();
    let mut closed_after = None;
    for byte in TRICKLE.iter().cycle().take(60) {
        if conn.write_all(std::slice::from_ref(byte)).is_err() || closed(&mut conn, &mut got) {
            closed_after = Some(first.elapsed());
            break;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    let after = closed_after.expect("the trickled head was never cut");
    assert!(
        after >= Duration::from_millis(HEAD * 1000 - 300) && after <= Duration::from_secs(HEAD) + MARGIN,
        "{after:?}"
    );
    assert_eq!(origin.hits(), 2);
}

#[test]
fn idle_keepalive_connections_close_after_the_idle_timeout() {
    let origin = Origin::start();
    let gate = start(&origin, "{ request_head_timeout: 5, keepalive_timeout: 2 }", "listen: [\"127.0.0.1:{port}\"]");
    let mut conn = TcpStream::connect(("127.0.0.1", gate.port)).unwrap();
    conn.write_all(b"GET /one HTTP/1.1\r\nHost: localhost\r\n\r\n").unwrap();
    assert_eq!(read_response(&mut conn), 200);
    // Within the idle timeout the connection is reused.
    std::thread::sleep(Duration::from_millis(1000));
    conn.write_all(b"GET /two HTTP/1.1\r\nHost: localhost\r\n\r\n").unwrap();
    assert_eq!(read_response(&mut conn), 200);
    let idle = Instant::now();
    let mut got = Vec::new();
    let after = within(Duration::from_secs(10), || closed(&mut conn, &mut got)).expect("an idle connection stays open");
    assert!(after >= Duration::from_millis(1500) && after <= Duration::from_secs(2) + MARGIN, "closed after {after:?}");
    assert!(got.is_empty(), "{:?}", String::from_utf8_lossy(&got));
    println!("idle connection closed after {:?}", idle.elapsed());
}

/// An HTTP/2 frame on stream `stream`.
fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = u32::try_from(payload.len()).unwrap().to_be_bytes();
    let mut f = vec![len[1], len[2], len[3], kind, flags];
    f.extend_from_slice(&stream.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

#[test]
fn http2_heads_are_bounded_and_a_busy_connection_is_not() {
    let origin = Origin::start();
    let gate = start(
        &origin,
        &format!("{{ request_head_timeout: {HEAD}, keepalive_timeout: 5 }}"),
        "listen: [{ address: \"127.0.0.1:{port}\", h2c: true }]",
    );
    // An honest HTTP/2 client (prior knowledge): a request, a pause longer
    // than the head deadline, another request on the same connection, then
    // idle until the idle timeout closes the connection.
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let port = gate.port;
    let (first, second, closed_after) = rt.block_on(async move {
        let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        let (client, connection) = h2::client::handshake(tcp).await.unwrap();
        let connection = tokio::spawn(connection);
        let get = |path: &'static str| {
            let mut client = client.clone();
            async move {
                let req = http::Request::get(format!("http://localhost{path}")).body(()).unwrap();
                client = client.ready().await.unwrap();
                let (response, _) = client.send_request(req, true).unwrap();
                let response = response.await.unwrap();
                let status = response.status().as_u16();
                let mut body = response.into_body();
                while let Some(chunk) = body.data().await {
                    let _ = body.flow_control().release_capacity(chunk.unwrap().len());
                }
                status
            }
        };
        let first = get("/one").await;
        tokio::time::sleep(Duration::from_millis(HEAD * 1000 + 500)).await;
        let second = get("/two").await;
        let idle = Instant::now();
        drop(client);
        let _ = tokio::time::timeout(Duration::from_secs(10), connection).await;
        (first, second, idle.elapsed())
    });
    assert_eq!((first, second), (200, 200), "the second request, after the head deadline, is served");
    assert!(closed_after <= Duration::from_secs(5) + MARGIN, "idle HTTP/2 connection closed after {closed_after:?}");

    // A HEADERS frame trickled after the preface: cut at the deadline.
    let mut conn = TcpStream::connect(("127.0.0.1", gate.port)).unwrap();
    let started = Instant::now();
    let mut hello = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    hello.extend(frame(0x4, 0, 0, &[]));
    conn.write_all(&hello).unwrap();
    let headers = frame(0x1, 0x4 | 0x1, 1, &[0x82; 40]);
    let mut got = Vec::new();
    let mut closed_at = None;
    for byte in headers.iter().take(headers.len() - 1) {
        if conn.write_all(std::slice::from_ref(byte)).is_err() || closed(&mut conn, &mut got) {
            closed_at = Some(started.elapsed());
            break;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    let at = closed_at.expect("a trickled HTTP/2 head was never cut");
    assert!(at >= Duration::from_millis(HEAD * 1000 - 300) && at <= Duration::from_secs(HEAD) + MARGIN, "{at:?}");
    assert_eq!(origin.hits(), 2);
}
