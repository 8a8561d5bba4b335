//! Issue 66 (2, 12): a listener cannot be held shut by connections that
//! say nothing. robotgate runs with its ext_authz listener and its metrics
//! listener; the test opens as many silent TCP connections as each takes
//! (or more), and checks that they are closed by robotgate's deadlines and
//! that a real client is served again, within generous bounds.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::edge::wait_port;
use common::*;

/// robotgate with an ext_authz listener on `ext_authz`, and `limits` (a flow mapping).
fn start(origin: &Origin, ext_authz: u16, limits: &str) -> Gate {
    let config = format!(
        "listen: [\"127.0.0.1:{{port}}\"]\nmetrics: {{ listen: \"127.0.0.1:{{metrics}}\" }}\ngrace_period: 1\n\
         ext_authz: {{ listen: [\"127.0.0.1:{ext_authz}\"] }}\nlimits: {limits}\n\
         sites:\n  - name: s\n    hosts: [\"127.0.0.1\"]\n    default: true\n    upstream: \"{}\"\n    robots: \"{{dir}}/robots.txt\"\n\
         log:\n  violations: \"{{dir}}/violations.jsonl\"\n  level: warn\n",
        origin.addr
    );
    let gate = Gate::start(&config, &[("robots.txt", b"User-agent: *\nDisallow: /private/\n")]);
    wait_port(ext_authz, "robotgate's ext_authz listener", &gate.stderr_path);
    gate
}

/// Whether the peer has ended `s` (EOF or reset) by `deadline`.
fn ended_by(s: &mut TcpStream, deadline: Instant) -> bool {
    let mut buf = [0u8; 1024];
    while Instant::now() < deadline {
        s.set_read_timeout(Some(Duration::from_millis(100))).unwrap();
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
            Err(_) => return true,
        }
    }
    false
}

/// The HTTP/2 client preface and an empty SETTINGS frame.
fn h2_hello() -> Vec<u8> {
    let mut out = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    out.extend([0, 0, 0, 0x4, 0, 0, 0, 0, 0]);
    out
}

/// Issue 66 (2): `max_connections` silent connections to the ext_authz
/// listener (and one that sends the HTTP/2 preface and then nothing) are
/// closed by the head deadline, and a new connection is then served: its
/// preface is answered with the server's SETTINGS.
#[test]
fn silent_connections_cannot_hold_the_ext_authz_listener() {
    let origin = Origin::start();
    let port = free_port();
    let gate = start(&origin, port, "{ max_connections: 10, request_head_timeout: 2 }");
    let started = Instant::now();
    let mut silent: Vec<TcpStream> = (0..9).map(|_| TcpStream::connect(("127.0.0.1", port)).unwrap()).collect();
    let mut greeted = TcpStream::connect(("127.0.0.1", port)).unwrap();
    greeted.write_all(&h2_hello()).unwrap();
    silent.push(greeted);
    let deadline = started + Duration::from_secs(12);
    for (i, s) in silent.iter_mut().enumerate() {
        assert!(ended_by(s, deadline), "connection {i} still open after {:?}", started.elapsed());
    }
    println!("ten silent connections closed within {:?}", started.elapsed());
    // The places are free: a client that speaks is answered.
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(&h2_hello()).unwrap();
    let mut head = [0u8; 9];
    s.read_exact(&mut head).expect("the server's SETTINGS");
    assert_eq!(head[3], 0x4, "not a SETTINGS frame: {head:?}");
    let timed_out = metric(&gate, "robotgate_connections_timed_out_total{listener=\"ext_authz\",phase=\"head\"}");
    // The nine silent ones at least (the one that spoke may be ended by HTTP/2 itself).
    assert!(timed_out >= 9.0, "{timed_out}");
}

/// Issue 66 (12): 200 idle connections to the metrics listener (it takes
/// 64, and the head deadline is 20 s): a scrape is answered at once all
/// the same, in the place of the oldest connection that sent nothing.
#[test]
fn idle_connections_cannot_hold_the_metrics_listener() {
    let origin = Origin::start();
    let gate = start(&origin, free_port(), "{ request_head_timeout: 20 }");
    let idle: Vec<TcpStream> =
        (0..200).filter_map(|_| TcpStream::connect(("127.0.0.1", gate.metrics_port)).ok()).collect();
    assert_eq!(idle.len(), 200);
    std::thread::sleep(Duration::from_millis(500));
    let scrape = || {
        let mut s = TcpStream::connect(("127.0.0.1", gate.metrics_port)).ok()?;
        s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
        s.write_all(b"GET /metrics HTTP/1.1\r\nHost: m\r\nConnection: close\r\n\r\n").ok()?;
        let mut out = Vec::new();
        let _ = s.read_to_end(&mut out);
        Some(String::from_utf8_lossy(&out).into_owned())
    };
    let mut text = String::new();
    let served = within(Duration::from_secs(5), || {
        text = scrape().unwrap_or_default();
        text.starts_with("HTTP/1.1 200")
    });
    assert!(served.is_some(), "no scrape answered with 200 idle connections open");
    println!("a scrape answered after {:?} with 200 idle connections open", served.unwrap());
    assert!(text.contains("robotgate_connections_timed_out_total{listener=\"metrics\",phase=\"evicted\"}"), "{text}");
    // Twenty scrapes in a row, the idle connections still there: each answered.
    for i in 0..20 {
        assert!(scrape().is_some_and(|t| t.starts_with("HTTP/1.1 200")), "scrape {i} refused");
    }
    drop(idle);
}
