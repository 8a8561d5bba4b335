//! The PROXY protocol on a listener (issue #32, part 1), against the real
//! binary: headers written byte for byte by the test (v1 and v2, from a
//! trusted loopback "load balancer"), a real client's (`curl
//! --haproxy-protocol`), and the real HAProxy in front with `send-proxy`
//! and `send-proxy-v2`, to plain and HTTPS listeners.
//!
//! The robots.txt lets only Google in, so a Googlebot User-Agent is served
//! only when the address it is judged by is Google's (66.249.66.1, in the
//! published ranges); from 203.0.113.9, whose reverse DNS (a test server)
//! names another domain, it is a spoofed identity (403).

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::dns_server::{Answer, Server};
use common::*;

const ROBOTS: &str = "User-agent: *\nDisallow: /\n\nUser-agent: Googlebot\nAllow: /\n";

/// robotgate with a PROXY protocol listener on `{port}`, a plain listener
/// on `plain`, and (with `tls`) an HTTPS PROXY protocol listener on that
/// port with the certificate in `{dir}`; reverse DNS asks `dns`.
fn start(origin: &Origin, plain: u16, tls: Option<u16>, files: &[(&str, &[u8])], dns: Option<&Server>) -> Gate {
    let tls = tls.map_or(String::new(), |p| {
        format!("  - {{ address: \"127.0.0.1:{p}\", proxy_protocol: true, tls: {{ cert: \"{{dir}}/cert.pem\", key: \"{{dir}}/key.pem\" }} }}\n")
    });
    let config = TestConfig { upstream: &format!("\"{}\"", origin.addr), metrics: true, ..TestConfig::default() }
        .render()
        .replace(
            "listen: [\"127.0.0.1:{port}\"]\n",
            &format!("listen:\n  - {{ address: \"127.0.0.1:{{port}}\", proxy_protocol: true }}\n  - \"127.0.0.1:{plain}\"\n{tls}trusted_proxies: [\"127.0.0.1/32\"]\nlimits: {{ request_head_timeout: 3 }}\n"),
        );
    let config = match dns {
        Some(dns) => {
            config.replace("\"127.0.0.1:9\"], timeout_ms: 300", &format!("\"{}\"], timeout_ms: 2000", dns.addr))
        }
        None => config,
    };
    let mut all = vec![("robots.txt", ROBOTS.as_bytes())];
    all.extend_from_slice(files);
    Gate::start(&config, &all)
}

fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

/// A PROXY protocol v2 header: PROXY (or LOCAL without addresses), TCP over IPv4.
fn v2(source: Option<SocketAddr>, destination: SocketAddr) -> Vec<u8> {
    let mut h = b"\r\n\r\n\0\r\nQUIT\n".to_vec();
    match (source, destination) {
        (Some(SocketAddr::V4(s)), SocketAddr::V4(d)) => {
            h.extend_from_slice(&[0x21, 0x11, 0, 12]);
            h.extend_from_slice(&s.ip().octets());
            h.extend_from_slice(&d.ip().octets());
            h.extend_from_slice(&s.port().to_be_bytes());
            h.extend_from_slice(&d.port().to_be_bytes());
        }
        (None, _) => h.extend_from_slice(&[0x20, 0x00, 0, 0]),
        _ => unreachable!("IPv4 only here"),
    }
    h
}

/// A PROXY protocol v1 header, TCP over IPv4.
fn v1(source: SocketAddr, destination: SocketAddr) -> Vec<u8> {
    format!("PROXY TCP4 {} {} {} {}\r\n", source.ip(), destination.ip(), source.port(), destination.port()).into_bytes()
}

/// An HTTP/1.1 request for `/page` that closes the connection after its answer.
fn request(headers: &[(&str, &str)]) -> Vec<u8> {
    let mut r = "GET /page HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n".to_owned();
    for (k, v) in headers.iter().copied().chain(as_browser("http://localhost/", headers)) {
        r.push_str(&format!("{k}: {v}\r\n"));
    }
    r.push_str("\r\n");
    r.into_bytes()
}

/// Write `bytes` to `port` and read until the server closes: the response's
/// status and head, or `None` when the connection was dropped without one.
fn exchange(port: u16, bytes: &[u8]) -> Option<(u16, String)> {
    let mut conn = TcpStream::connect(("127.0.0.1", port)).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let _ = conn.write_all(bytes);
    let mut got = Vec::new();
    let _ = conn.read_to_end(&mut got);
    let text = String::from_utf8_lossy(&got).into_owned();
    let status = text.strip_prefix("HTTP/1.1 ")?.get(..3)?.parse().ok()?;
    Some((status, text))
}

fn header<'a>(response: &'a str, name: &str) -> Option<&'a str> {
    response.lines().take_while(|l| !l.is_empty()).find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

#[test]
fn the_header_names_the_client_that_is_judged() {
    let origin = Origin::start();
    let dns = Server::answering(&[("9.113.0.203.in-addr.arpa", Answer::Ptr(vec!["crawl", "evil", "example"]))]);
    let gate = start(&origin, free_port(), None, &[], Some(&dns));
    let dst = addr(&format!("127.0.0.1:{}", gate.port));
    let google = addr("66.249.66.1:51234");
    let elsewhere = addr("203.0.113.9:40000");
    for version in ["v2", "v1"] {
        let from = |source: SocketAddr, headers: &[(&str, &str)]| {
            let mut bytes = if version == "v2" { v2(Some(source), dst) } else { v1(source, dst) };
            bytes.extend(request(headers));
            exchange(gate.port, &bytes).unwrap_or_else(|| panic!("{version}: dropped"))
        };
        // From Google's address, a Googlebot is verified and let in.
        let (status, resp) = from(google, &[("User-Agent", GOOGLEBOT)]);
        assert_eq!(status, 200, "{version}: {resp}");
        assert_eq!(header(&resp, "x-seen-xff"), Some("66.249.66.1"), "{version}: the origin gets the client");
        // From elsewhere, the same claim is a spoofed identity.
        let (status, resp) = from(elsewhere, &[("User-Agent", GOOGLEBOT)]);
        assert_eq!(status, 403, "{version}: {resp}");
        // The client's own forwarding headers are not read, whatever they say.
        let claims = [
            ("User-Agent", GOOGLEBOT),
            ("X-Forwarded-For", "66.249.66.1"),
            ("Forwarded", "for=66.249.66.1"),
            ("X-Real-IP", "66.249.66.1"),
        ];
        assert_eq!(from(elsewhere, &claims).0, 403, "{version}: forwarding headers believed");
        // A browser is served, and the origin sees the header's client only.
        let (status, resp) = from(elsewhere, &[("User-Agent", FIREFOX), ("X-Forwarded-For", "66.249.66.1")]);
        assert_eq!(status, 200, "{version}: {resp}");
        assert_eq!(header(&resp, "x-seen-xff"), Some("203.0.113.9"), "{version}");
    }
    // LOCAL (a health check): the connection's own peer stands.
    let mut bytes = v2(None, dst);
    bytes.extend(request(&[("User-Agent", FIREFOX)]));
    let (status, resp) = exchange(gate.port, &bytes).expect("LOCAL is served");
    assert_eq!((status, header(&resp, "x-seen-xff")), (200, Some("127.0.0.1")));
    // A real client's header: curl's --haproxy-protocol (v1, its own address).
    let out = Command::new("curl")
        .args(["-s", "--max-time", "10", "--haproxy-protocol", "-o", "/dev/null", "-w", "%{http_code}"])
        .args(["-H", &format!("User-Agent: {FIREFOX}")])
        .args(
            as_browser("http://127.0.0.1/", &[("User-Agent", FIREFOX)])
                .iter()
                .flat_map(|(k, v)| ["-H".to_owned(), format!("{k}: {v}")]),
        )
        .arg(format!("http://127.0.0.1:{}/page", gate.port))
        .output()
        .expect("curl runs");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "200");
    let errors = gate.stderr();
    assert!(!errors.contains("connection dropped"), "no connection was dropped: {errors}");
    // The violation log names the client the header gave: the liar, never Google.
    let records = wait_lines(&gate.path("violations.jsonl"), 1);
    assert!(
        records.iter().any(|r| r.contains("\"client\":\"203.0.113.9\"") && r.contains("spoofed-identity")),
        "{records:?}"
    );
    assert!(records.iter().all(|r| r.contains("\"client\":\"203.0.113.9\"")), "{records:?}");
}

#[test]
fn without_a_valid_header_from_a_trusted_peer_the_connection_is_dropped() {
    let origin = Origin::start();
    let plain = free_port();
    let gate = start(&origin, plain, None, &[], None);
    let dst = addr(&format!("127.0.0.1:{}", gate.port));
    let browser = request(&[("User-Agent", FIREFOX)]);
    // No header: the request itself is not a header.
    assert_eq!(exchange(gate.port, &browser), None, "a plain request is dropped");
    // Headers that break the specification.
    let mut bad_version = v2(Some(addr("66.249.66.1:1")), dst);
    bad_version[12] = 0x31;
    let bad = [
        b"PROXY TCP4 66.249.66.1 127.0.0.1 51234\r\n".to_vec(),
        b"PROXY TCP6 66.249.66.1 127.0.0.1 1 2\r\n".to_vec(),
        format!("PROXY UNKNOWN {}\r\n", "x".repeat(120)).into_bytes(),
        bad_version,
    ];
    for header in bad {
        let mut bytes = header.clone();
        bytes.extend_from_slice(&browser);
        assert_eq!(exchange(gate.port, &bytes), None, "{:?}", String::from_utf8_lossy(&header));
    }
    // A header that never finishes is dropped within the time bound
    // (`request_head_timeout: 3` here, under the 5 s default).
    let mut slow = TcpStream::connect(("127.0.0.1", gate.port)).unwrap();
    slow.write_all(b"PROXY TCP4 66.249").unwrap();
    slow.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    let started = Instant::now();
    let mut got = Vec::new();
    let _ = slow.read_to_end(&mut got);
    let took = started.elapsed();
    assert!(got.is_empty() && took >= Duration::from_millis(2500) && took < Duration::from_secs(10), "{took:?}");
    // An untrusted peer (127.0.0.2; only 127.0.0.1 is trusted) is dropped
    // with a valid header: curl sends one from its own address.
    let out = Command::new("curl")
        .args(["-s", "--max-time", "10", "--interface", "127.0.0.2", "--haproxy-protocol", "-w", "%{http_code}"])
        .arg(format!("http://127.0.0.1:{}/page", gate.port))
        .output()
        .expect("curl runs");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "000", "no answer to an untrusted peer");
    assert!(!out.status.success());
    // The listener beside it takes no header, and serves as before.
    let (status, resp) = exchange(plain, &browser).expect("the plain listener answers");
    assert_eq!((status, header(&resp, "x-seen-xff")), (200, Some("127.0.0.1")));
    assert_eq!(origin.hits(), 1, "only the plain listener's request went upstream");
    for (reason, n) in
        [("missing", 1.0), ("invalid", 3.0), ("too_long", 1.0), ("timeout", 1.0), ("untrusted_peer", 1.0)]
    {
        let name = format!("robotgate_proxy_protocol_refused_total{{reason=\"{reason}\"}}");
        assert_eq!(metric(&gate, &name), n, "{reason}");
    }
}

/// A self-signed certificate for `localhost` in `dir` (`cert.pem`, `key.pem`).
fn make_cert(dir: &Path) {
    let ok = Command::new("openssl")
        .args(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2"])
        .args(["-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost"])
        .arg("-keyout")
        .arg(dir.join("key.pem"))
        .arg("-out")
        .arg(dir.join("cert.pem"))
        .output()
        .expect("openssl runs")
        .status
        .success();
    assert!(ok, "openssl made a certificate");
}

/// A running HAProxy, stopped on drop.
struct Haproxy(Child);

impl Drop for Haproxy {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// GET `url` with curl from 127.0.0.2 (so that the client HAProxy sees is
/// not HAProxy's own address): the status and the response head.
fn curl_from_127_0_0_2(url: &str, headers: &[(&str, &str)]) -> (String, String) {
    let mut cmd = Command::new("curl");
    cmd.args(["-s", "--max-time", "10", "--interface", "127.0.0.2", "-D", "-", "-o", "/dev/null"]);
    cmd.args(["-w", "%{http_code}"]);
    for (k, v) in headers.iter().copied().chain(as_browser(url, headers)) {
        cmd.args(["-H", &format!("{k}: {v}")]);
    }
    let out = cmd.arg(url).output().expect("curl runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (head, status) = text.rsplit_once("\r\n\r\n").unwrap_or(("", &text));
    (status.to_owned(), head.to_owned())
}

/// The `haproxy` binary: on `PATH`, or where Debian puts it (`/usr/sbin`,
/// which a non-root `PATH` may lack).
fn haproxy_binary() -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/usr/local/sbin")])
        .map(|dir| dir.join("haproxy"))
        .find(|p| p.is_file())
}

#[test]
fn haproxy_in_front_with_send_proxy_and_send_proxy_v2() {
    let Some(haproxy) = haproxy_binary() else {
        eprintln!("SKIPPED: no `haproxy` binary (Debian package `haproxy`, which .ci/run installs)");
        return;
    };
    let origin = Origin::start();
    let certs = tempfile::tempdir().unwrap();
    make_cert(certs.path());
    let cert = std::fs::read(certs.path().join("cert.pem")).unwrap();
    let key = std::fs::read(certs.path().join("key.pem")).unwrap();
    let tls_port = free_port();
    let gate = start(&origin, free_port(), Some(tls_port), &[("cert.pem", &cert), ("key.pem", &key)], None);
    let (v2_port, v1_port, tls_v2_port) = (free_port(), free_port(), free_port());
    // HTTP mode with `option forwardfor`: HAProxy also writes an
    // X-Forwarded-For, which a PROXY protocol listener does not read.
    let config = format!(
        "global\n    maxconn 64\n\
         defaults\n    mode http\n    option forwardfor\n    timeout connect 5s\n    timeout client 15s\n    timeout server 15s\n\
         frontend v2\n    bind 127.0.0.1:{v2_port}\n    default_backend v2\n\
         backend v2\n    server robotgate 127.0.0.1:{gate} send-proxy-v2\n\
         frontend v1\n    bind 127.0.0.1:{v1_port}\n    default_backend v1\n\
         backend v1\n    server robotgate 127.0.0.1:{gate} send-proxy\n\
         frontend tlsv2\n    bind 127.0.0.1:{tls_v2_port}\n    default_backend tlsv2\n\
         backend tlsv2\n    server robotgate 127.0.0.1:{tls_port} send-proxy-v2 ssl verify none sni str(localhost)\n",
        gate = gate.port
    );
    let config_path = gate.path("haproxy.cfg");
    std::fs::write(&config_path, config).unwrap();
    let child = Command::new(&haproxy)
        .arg("-db")
        .arg("-f")
        .arg(&config_path)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(gate.path("haproxy.log")).unwrap())
        .spawn()
        .expect("haproxy starts");
    let _haproxy = Haproxy(child);
    for port in [v2_port, v1_port, tls_v2_port] {
        let up = within(Duration::from_secs(10), || TcpStream::connect(("127.0.0.1", port)).is_ok());
        assert!(
            up.is_some(),
            "haproxy did not listen: {}",
            std::fs::read_to_string(gate.path("haproxy.log")).unwrap_or_default()
        );
    }
    for (name, port, proto) in [
        ("send-proxy-v2", v2_port, "http"),
        ("send-proxy", v1_port, "http"),
        ("send-proxy-v2 over TLS", tls_v2_port, "https"),
    ] {
        let url = format!("http://127.0.0.1:{port}/page");
        let (status, head) = curl_from_127_0_0_2(&url, &[("User-Agent", FIREFOX), ("X-Forwarded-For", "66.249.66.1")]);
        assert_eq!(status, "200", "{name}: {head}");
        // The client is HAProxy's client, 127.0.0.2: not HAProxy (127.0.0.1),
        // not what the client wrote.
        assert_eq!(header(&head, "x-seen-xff"), Some("127.0.0.2"), "{name}: {head}");
        assert_eq!(header(&head, "x-seen-proto"), Some(proto), "{name}");
    }
    assert_eq!(origin.hits(), 3);
    // Nothing was refused but the start-up check's bare connect.
    let refused = metric(&gate, "robotgate_proxy_protocol_refused_total");
    assert_eq!(
        refused,
        metric(&gate, "robotgate_proxy_protocol_refused_total{reason=\"closed\"}"),
        "{}",
        gate.stderr()
    );
}
