//! An HTTPS listener (Pingora's rustls): robots.txt served and rules enforced
//! over TLS, and the origin told the request came over https.
//! Uses the `openssl` and `curl` commands (`.ci/run` installs them).

mod common;

use std::process::Command;

use common::*;

fn curl(args: &[&str]) -> String {
    let out = Command::new("curl").args(["-sk", "--max-time", "10"]).args(args).output().expect("curl runs");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn https_listener_serves_and_enforces() {
    let origin = Origin::start();
    let certs = tempfile::tempdir().unwrap();
    let (cert, key) = (certs.path().join("cert.pem"), certs.path().join("key.pem"));
    let ok = Command::new("openssl")
        .args(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=localhost", "-keyout"])
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .expect("openssl runs")
        .status
        .success();
    assert!(ok, "certificate generated");
    let tls_port = free_port();
    let config = format!(
        r#"
listen:
  - "127.0.0.1:{{port}}"
  - address: "127.0.0.1:{tls_port}"
    tls: {{ cert: {cert}, key: {key} }}
grace_period: 1
sites:
  - hosts: ["localhost"]
    default: true
    upstream: "{origin}"
    robots: {{dir}}/robots.txt
log: {{ violations: {{dir}}/v.jsonl, level: warn }}
"#,
        cert = cert.display(),
        key = key.display(),
        origin = origin.addr
    );
    let _gate = Gate::start(&config, &[("robots.txt", b"User-agent: *\nDisallow: /private/\n")]);
    let base = format!("https://localhost:{tls_port}");
    assert_eq!(curl(&[&format!("{base}/robots.txt")]), "User-agent: *\nDisallow: /private/\n");
    let status = curl(&["-o", "/dev/null", "-w", "%{http_code}", "-A", GOOGLEBOT, &format!("{base}/private/x")]);
    assert_eq!(status, "403");
    let headers = curl(&["-D", "-", "-o", "/dev/null", "-A", FIREFOX, &format!("{base}/page")]);
    assert!(headers.to_ascii_lowercase().contains("x-seen-proto: https"), "{headers}");
}
