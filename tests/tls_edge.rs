//! Issue #20 against the real binary, with certificates made here by
//! `openssl` and requests made by `curl` (both installed by `.ci/run`):
//! HTTP/2 by ALPN on an HTTPS listener and h2c on a plain one, decided
//! exactly as HTTP/1.1; a certificate per site chosen by SNI, the listener's
//! own for other names; a renewed pair in force without a restart, a broken
//! one refused with the last good one kept; expiry in `config check` and
//! in the metrics.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use common::*;

/// A self-signed certificate for `cn` (and its subjectAltName) valid `days`.
fn make_cert(dir: &Path, name: &str, cn: &str, org: &str, days: u32) {
    let ok = Command::new("openssl")
        .args(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"])
        .args(["-days", &days.to_string(), "-subj", &format!("/CN={cn}/O={org}")])
        .args(["-addext", &format!("subjectAltName=DNS:{cn}")])
        .arg("-keyout")
        .arg(dir.join(format!("{name}.key")))
        .arg("-out")
        .arg(dir.join(format!("{name}.pem")))
        .output()
        .expect("openssl runs")
        .status
        .success();
    assert!(ok, "certificate {name}");
}

/// `curl` over `--resolve`d names: (http version, status, subject of the
/// server's certificate, headers and body).
fn curl(args: &[&str]) -> (String, String, String) {
    // A browser's User-Agent comes with the headers that browser sends (issue #67).
    let ua = args.iter().position(|a| *a == "-A").and_then(|i| args.get(i + 1)).copied();
    let browser: Vec<String> = ua
        .map(|ua| as_browser("https://a.test/", &[("User-Agent", ua)]))
        .unwrap_or_default()
        .into_iter()
        .flat_map(|(k, v)| ["-H".to_owned(), format!("{k}: {v}")])
        .collect();
    let out = Command::new("curl")
        .args(["-sSk", "-v", "--max-time", "10", "-o", "-", "-w", "\n%{http_version} %{http_code}"])
        .args(&browser)
        .args(args)
        .output()
        .expect("curl runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let subject = stderr.lines().find(|l| l.contains("subject:")).unwrap_or("").trim().to_owned();
    let (body, tail) = stdout.rsplit_once('\n').unwrap_or(("", &stdout));
    (tail.to_owned(), subject, format!("{stderr}\n{body}"))
}

const ROBOTS: &str = "User-agent: *\nDisallow: /private/\nCrawl-delay: 30\n\nUser-agent: GPTBot\nDisallow: /\n\nUser-agent: AhrefsBot\nDisallow: /\n\nUser-agent: Googlebot\nAllow: /\n";
const ODD: &str = "OddCrawler/1.0 (+https://crawler.example/bot)";

fn config(origin: &Origin, certs: &Path, tls_port: u16) -> String {
    let c = certs.display();
    format!(
        r#"
listen:
  - address: "127.0.0.1:{{port}}"
    h2c: true
  - address: "127.0.0.1:{tls_port}"
    tls: {{ cert: {c}/own.pem, key: {c}/own.key }}
grace_period: 1
trusted_proxies: ["127.0.0.1/32"]
sites:
  - name: a
    hosts: ["a.test"]
    default: true
    upstream: "{origin}"
    robots: "{{dir}}/robots.txt"
    tls: {{ cert: {c}/a.pem, key: {c}/a.key }}
    policy:
      action: block
      categories:
        ai-crawler: {{ action: alternate, file: "{{dir}}/alt.html" }}
        seo: {{ action: noindex }}
  - name: b
    hosts: ["b.test"]
    upstream: "{origin}"
    robots: "{{dir}}/robots.txt"
    tls: {{ cert: {c}/b.pem, key: {c}/b.key }}
metrics:
  listen: "127.0.0.1:{{metrics}}"
verify:
  feeds: "{{dir}}/feeds"
  dns: {{ nameservers: ["127.0.0.1:9"], timeout_ms: 300 }}
log:
  violations: "{{dir}}/violations.jsonl"
  aggregate_window: 0
  level: info
"#,
        origin = origin.addr
    )
}

fn start() -> (Origin, tempfile::TempDir, u16, Gate) {
    let origin = Origin::start();
    let certs = tempfile::tempdir().unwrap();
    make_cert(certs.path(), "own", "fallback.test", "own", 30);
    make_cert(certs.path(), "a", "a.test", "site-a", 30);
    make_cert(certs.path(), "b", "b.test", "site-b", 30);
    let tls_port = free_port();
    let files: &[(&str, &[u8])] = &[("robots.txt", ROBOTS.as_bytes()), ("alt.html", b"<p>alternate</p>\n")];
    let gate = Gate::start(&config(&origin, certs.path(), tls_port), files);
    (origin, certs, tls_port, gate)
}

fn https(host: &str, port: u16, path: &str, extra: &[&str]) -> (String, String, String) {
    let resolve = format!("{host}:{port}:127.0.0.1");
    let url = format!("https://{host}:{port}{path}");
    let mut args = vec!["--resolve", &resolve];
    args.extend_from_slice(extra);
    args.push(&url);
    curl(&args)
}

#[test]
fn every_decision_is_the_same_over_http2_as_over_http1() {
    let (_origin, _certs, tls_port, gate) = start();
    // (what, User-Agent, client, path, status, a check on headers and body)
    let cases: &[(&str, &str, &str, &str, &str, &str)] = &[
        ("browser", FIREFOX, "192.0.2.1", "/private/x", "200", "origin /private/x"),
        ("allowed bot", GOOGLEBOT, "66.249.66.1", "/private/x", "200", "origin /private/x"),
        ("blocked bot", ODD, "192.0.2.2", "/private/x", "403", ""),
        ("crawl-delay", ODD, "192.0.2.3", "/page", "429", "retry-after"),
        // GPTBot from loopback: verified by the tests' own feed (`common::LOOPBACK_FEEDS`).
        ("alternate", GPTBOT, "127.0.0.4", "/page", "200", "<p>alternate</p>"),
        ("noindex", AHREFS, "192.0.2.5", "/page", "200", "x-robots-tag: noindex"),
    ];
    for (version, flag) in [("1.1", "--http1.1"), ("2", "--http2")] {
        for (what, ua, ip, path, status, check) in cases {
            // Another client over HTTP/2, so the pace starts afresh.
            let ip = format!("{ip}{}", if version == "2" { "0" } else { "" });
            if *what == "crawl-delay" {
                // The first request of the pace is admitted.
                let (first, _, _) =
                    https("a.test", tls_port, "/page", &[flag, "-A", ua, "-H", &format!("X-Forwarded-For: {ip}")]);
                assert_eq!(first, format!("{version} 200"), "{what} first over {version}");
            }
            let (got, _, text) =
                https("a.test", tls_port, path, &[flag, "-A", ua, "-H", &format!("X-Forwarded-For: {ip}")]);
            assert_eq!(got, format!("{version} {status}"), "{what} over HTTP/{version}");
            assert!(text.to_ascii_lowercase().contains(&check.to_ascii_lowercase()), "{what} over {version}: {text}");
        }
    }
    // h2c: HTTP/2 with prior knowledge on the plain listener.
    let (got, _, _) = curl(&["--http2-prior-knowledge", "-A", FIREFOX, &gate.url("/page")]);
    assert_eq!(got, "2 200");
    let (got, _, _) = curl(&["--http2-prior-knowledge", "-A", ODD, &gate.url("/private/y")]);
    assert_eq!(got, "2 403");
    // The same records for both: blocked, limited, alternate and noindex, twice each.
    let records = wait_lines(&gate.path("violations.jsonl"), 9);
    let count = |directive: &str, action: &str| {
        records
            .iter()
            .filter(|l| {
                l.contains(&format!("\"directive\":\"{directive}\"")) && l.contains(&format!("\"action\":\"{action}\""))
            })
            .count()
    };
    assert_eq!(count("disallow", "block"), 3, "{records:?}");
    assert_eq!(count("crawl-delay", "rate-limit"), 2, "{records:?}");
    assert_eq!(count("disallow", "alternate"), 2, "{records:?}");
    assert_eq!(count("disallow", "noindex"), 2, "{records:?}");
}

/// Accepts any certificate: the tests check which one was presented, not
/// who signed it (they are self-signed).
#[derive(Debug)]
struct AnyCert(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for AnyCert {
    fn verify_server_cert(
        &self,
        _: &rustls::pki_types::CertificateDer<'_>,
        _: &[rustls::pki_types::CertificateDer<'_>],
        _: &rustls::pki_types::ServerName<'_>,
        _: &[u8],
        _: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }
    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// GET `path` from `host` on the TLS port with a Rust HTTP/2 client (`h2`
/// over `tokio-rustls`, ALPN `h2` only): the status and the body.
fn h2_get(port: u16, host: &str, path: &str, headers: &[(&str, &str)]) -> (u16, String) {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .unwrap()
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyCert(provider)))
            .with_no_client_auth();
        config.alpn_protocols = vec![b"h2".to_vec()];
        let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        let name = rustls::pki_types::ServerName::try_from(host.to_owned()).unwrap();
        let tls = tokio_rustls::TlsConnector::from(Arc::new(config)).connect(name, tcp).await.unwrap();
        assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"h2"[..]), "ALPN chose h2");
        let (mut client, connection) = h2::client::handshake(tls).await.unwrap();
        tokio::spawn(connection);
        let mut req = http::Request::get(format!("https://{host}{path}"));
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let (response, _) = client.send_request(req.body(()).unwrap(), true).unwrap();
        let response = response.await.unwrap();
        let status = response.status().as_u16();
        let mut body = response.into_body();
        let mut bytes = Vec::new();
        while let Some(chunk) = body.data().await {
            let chunk = chunk.unwrap();
            let _ = body.flow_control().release_capacity(chunk.len());
            bytes.extend_from_slice(&chunk);
        }
        (status, String::from_utf8_lossy(&bytes).into_owned())
    })
}

#[test]
fn a_rust_http2_client_gets_the_same_answers() {
    let (_origin, _certs, tls_port, gate) = start();
    let get = |ua: &str, ip: &str, path: &str| {
        let mut headers = vec![("user-agent", ua), ("x-forwarded-for", ip)];
        headers.extend(as_browser("https://a.test/", &[("User-Agent", ua)]));
        let headers: Vec<(String, &str)> = headers.into_iter().map(|(k, v)| (k.to_ascii_lowercase(), v)).collect();
        let headers: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (k.as_str(), *v)).collect();
        h2_get(tls_port, "a.test", path, &headers)
    };
    assert_eq!(get(FIREFOX, "192.0.2.1", "/private/x"), (200, "origin /private/x".to_owned()));
    assert_eq!(get(GOOGLEBOT, "66.249.66.1", "/private/x").0, 200, "allowed bot");
    assert_eq!(get(ODD, "192.0.2.2", "/private/x").0, 403, "blocked bot");
    assert_eq!(get(ODD, "192.0.2.3", "/page").0, 200);
    assert_eq!(get(ODD, "192.0.2.3", "/page").0, 429, "crawl-delay");
    assert_eq!(get(GPTBOT, "127.0.0.4", "/page"), (200, "<p>alternate</p>\n".to_owned()));
    assert_eq!(get(AHREFS, "192.0.2.5", "/page").0, 200, "noindex passes");
    // Recorded as over HTTP/1.1: one block, one limit, one alternate, one noindex.
    let records = wait_lines(&gate.path("violations.jsonl"), 4);
    let actions: Vec<&str> =
        records.iter().filter_map(|l| l.split("\"action\":\"").nth(1)?.split('"').next()).collect();
    assert_eq!(actions, ["block", "rate-limit", "alternate", "noindex"], "{records:?}");
}

#[test]
fn each_site_presents_its_own_certificate_and_a_renewal_needs_no_restart() {
    let (_origin, certs, tls_port, gate) = start();
    let subject = |host: &str| https(host, tls_port, "/page", &["-A", FIREFOX]).1;
    assert!(subject("a.test").contains("site-a"), "{}", subject("a.test"));
    assert!(subject("b.test").contains("site-b"), "{}", subject("b.test"));
    assert!(subject("other.test").contains("own"), "other names get the listener's own");
    let (version, _, _) = https("b.test", tls_port, "/page", &["--http2", "-A", FIREFOX]);
    assert_eq!(version, "2 200", "HTTP/2 by ALPN");

    // A connection opened before the renewal (openssl s_client, keep-alive).
    let mut before = Command::new("openssl")
        .args(["s_client", "-quiet", "-connect", &format!("127.0.0.1:{tls_port}"), "-servername", "a.test"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut to = before.stdin.take().unwrap();
    let mut from = BufReader::new(before.stdout.take().unwrap());
    let request = |to: &mut std::process::ChildStdin, from: &mut BufReader<std::process::ChildStdout>| {
        to.write_all(b"GET /page HTTP/1.1\r\nHost: a.test\r\nUser-Agent: Firefox/125.0\r\n\r\n").unwrap();
        let mut status = String::new();
        from.read_line(&mut status).unwrap();
        let mut len = 0;
        loop {
            let mut h = String::new();
            from.read_line(&mut h).unwrap();
            if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
                len = v.trim().parse().unwrap();
            }
            if h.trim().is_empty() {
                break;
            }
        }
        let mut body = vec![0; len];
        from.read_exact(&mut body).unwrap();
        status
    };
    assert!(request(&mut to, &mut from).starts_with("HTTP/1.1 200"));

    // Renewal as certbot does it: new files, then renamed over the old names.
    let dir = certs.path();
    make_cert(dir, "renewed", "a.test", "renewed", 60);
    std::fs::rename(dir.join("renewed.key"), dir.join("a.key")).unwrap();
    std::fs::rename(dir.join("renewed.pem"), dir.join("a.pem")).unwrap();
    let renewed = within(Duration::from_secs(2), || subject("a.test").contains("renewed"));
    let renewed = renewed.unwrap_or_else(|| panic!("the renewed certificate is not in force:\n{}", gate.stderr()));
    eprintln!("a renewed certificate was in force for new handshakes after {renewed:?}");
    // The connection made before it still works.
    assert!(request(&mut to, &mut from).starts_with("HTTP/1.1 200"), "the old connection was dropped");
    drop(to);
    let _ = before.kill();
    let _ = before.wait();

    // A key that does not fit: refused, the last good pair stays.
    std::fs::copy(dir.join("b.key"), dir.join("a.key")).unwrap();
    let refused = within(Duration::from_secs(5), || gate.stderr().contains("does not fit the certificate"));
    assert!(refused.is_some(), "{}", gate.stderr());
    assert!(subject("a.test").contains("renewed"));
    assert!(subject("b.test").contains("site-b"));

    // Expiry, as a metric.
    let expiry = metric(&gate, "robotgate_certificate_expiry_seconds{site=\"b\"}");
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as f64;
    assert!(expiry > now + 29.0 * 86_400.0 && expiry < now + 31.0 * 86_400.0, "{expiry}");
}

#[test]
fn config_check_warns_of_certificates_about_to_expire_or_naming_other_hosts() {
    let origin = Origin::start();
    let certs = tempfile::tempdir().unwrap();
    make_cert(certs.path(), "own", "fallback.test", "own", 30);
    make_cert(certs.path(), "a", "a.test", "site-a", 3); // expires in 3 days
    make_cert(certs.path(), "b", "elsewhere.test", "site-b", 30); // names another host
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("robots.txt"), ROBOTS).unwrap();
    std::fs::write(dir.path().join("alt.html"), "alt").unwrap();
    for (name, body) in LOOPBACK_FEEDS {
        let path = dir.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, body).unwrap();
    }
    let text = config(&origin, certs.path(), free_port())
        .replace("{port}", &free_port().to_string())
        .replace("{metrics}", &free_port().to_string())
        .replace("{dir}", dir.path().to_str().unwrap());
    let path = dir.path().join("robotgate.yaml");
    std::fs::write(&path, text).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_robotgate"))
        .args(["config", "check", "--config"])
        .arg(&path)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "warnings are not errors: {stdout}");
    assert!(stdout.contains("a: the certificate expires at") && stdout.contains("(warning)"), "{stdout}");
    assert!(stdout.contains("b: the certificate does not cover the host `b.test`"), "{stdout}");
    assert!(!stdout.contains("own:"), "{stdout}");
    // A key that does not fit its certificate is an error.
    std::fs::copy(certs.path().join("b.key"), certs.path().join("a.key")).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_robotgate"))
        .args(["config", "check", "--config"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stdout));
}

/// An origin that speaks only HTTP/2 with prior knowledge (h2c), answering
/// `h2 origin PATH`; an HTTP/1.1 request fails its handshake.
fn h2_origin() -> std::net::SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    listener.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            while let Ok((sock, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let Ok(mut conn) = h2::server::handshake(sock).await else { return };
                    while let Some(Ok((req, mut respond))) = conn.accept().await {
                        let body = format!("h2 origin {}", req.uri().path());
                        let resp = http::Response::builder()
                            .status(200)
                            .header("content-length", body.len())
                            .body(())
                            .unwrap();
                        if let Ok(mut send) = respond.send_response(resp, false) {
                            let _ = send.send_data(bytes::Bytes::from(body), true);
                        }
                    }
                });
            }
        });
    });
    addr
}

#[test]
fn http2_to_the_origin_when_asked_and_no_certificate_means_no_handshake() {
    let origin = h2_origin();
    let certs = tempfile::tempdir().unwrap();
    make_cert(certs.path(), "a", "a.test", "site-a", 30);
    let (c, tls_port) = (certs.path().display(), free_port());
    let config = |h2: bool| {
        format!(
            r#"
listen:
  - "127.0.0.1:{{port}}"
  - address: "127.0.0.1:{tls_port}"
    tls: true
grace_period: 1
sites:
  - name: a
    hosts: ["a.test", "127.0.0.1"]
    default: true
    upstream: {{ address: "{origin}", h2: {h2} }}
    tls: {{ cert: {c}/a.pem, key: {c}/a.key }}
log: {{ violations: "{{dir}}/v.jsonl", level: warn }}
{VERIFY_LOOPBACK}"#
        )
    };
    let gate = Gate::start(&config(true), &[]);
    let resp = get(&gate.url("/page"), &[("User-Agent", FIREFOX)]);
    assert_eq!((resp.status, resp.body.as_str()), (200, "h2 origin /page"), "HTTP/2 to the origin");
    let (got, _, text) = https("a.test", tls_port, "/x", &["--http2", "-A", FIREFOX]);
    assert_eq!(got, "2 200", "HTTP/2 on both sides: {text}");
    // No certificate for the name and none of the listener's own: no handshake.
    let (got, _, _) = https("other.test", tls_port, "/x", &["-A", FIREFOX]);
    assert_eq!(got, "0 000", "a name no certificate covers fails the handshake");
    drop(gate);
    // The control: spoken to in HTTP/1.1, this origin fails.
    let gate = Gate::start(&config(false), &[]);
    assert_eq!(get(&gate.url("/page"), &[("User-Agent", FIREFOX)]).status, 502);
}
