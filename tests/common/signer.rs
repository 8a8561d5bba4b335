//! Web Bot Auth for the tests that go through a host: an Ed25519 key, its
//! key directory served on loopback, and requests signed per the draft
//! (the signature base written out by hand from RFC 9421 §2.5).

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine as _;
use ed25519_dalek::{Signer as _, SigningKey};
use sha2::{Digest as _, Sha256};

/// A fresh Ed25519 key (its seed from a per-process random state and `label`).
pub fn new_key(label: &str) -> SigningKey {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write(label.as_bytes());
    let seed: [u8; 32] = Sha256::digest(h.finish().to_le_bytes()).into();
    SigningKey::from_bytes(&seed)
}

/// RFC 7638 thumbprint of `key` as an Ed25519 JWK (members crv, kty, x:
/// RFC 8037 A.3): the `keyid` a signature names.
pub fn thumbprint(key: &SigningKey) -> String {
    let x = URL_SAFE_NO_PAD.encode(key.verifying_key().as_bytes());
    URL_SAFE_NO_PAD.encode(Sha256::digest(format!(r#"{{"crv":"Ed25519","kty":"OKP","x":"{x}"}}"#)))
}

/// The key directory listing `key`.
pub fn directory(key: &SigningKey) -> String {
    let x = URL_SAFE_NO_PAD.encode(key.verifying_key().as_bytes());
    format!(r#"{{"keys":[{{"kty":"OKP","crv":"Ed25519","x":"{x}"}}]}}"#)
}

/// A 200 response carrying `body` as a key directory (the draft's media type).
pub fn ok(body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/http-message-signatures-directory+json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// A loopback HTTP server answering every request with `response` (or, when
/// `None`, reading the request and never answering); counts requests.
pub struct Directory {
    /// The agent URL (`http://127.0.0.1:port`).
    pub url: String,
    hits: Arc<AtomicUsize>,
}

impl Directory {
    /// `key`'s directory, served as the draft's media type.
    pub fn serving(key: &SigningKey) -> Directory {
        Directory::answering(ok(&directory(key)))
    }

    /// A server answering every request with `response`, as it is.
    pub fn answering(response: Vec<u8>) -> Directory {
        Directory::start(Some(response))
    }

    /// A server that takes requests and never answers them.
    pub fn silent() -> Directory {
        Directory::start(None)
    }

    /// `key`'s directory, each answer sent `delay` after its request came
    /// (each connection on a thread of its own).
    pub fn slow(key: &SigningKey, delay: std::time::Duration) -> Directory {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let hits = Arc::new(AtomicUsize::new(0));
        let counter = hits.clone();
        let response = ok(&directory(key));
        std::thread::spawn(move || {
            for stream in listener.incoming().take(64) {
                let Ok(mut stream) = stream else { continue };
                let (counter, response) = (counter.clone(), response.clone());
                std::thread::spawn(move || {
                    let mut buf = Vec::new();
                    let mut chunk = [0u8; 1024];
                    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                        match stream.read(&mut chunk) {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    }
                    counter.fetch_add(1, Ordering::SeqCst);
                    std::thread::sleep(delay);
                    let _ = stream.write_all(&response);
                });
            }
        });
        Directory { url, hits }
    }

    fn start(response: Option<Vec<u8>>) -> Directory {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let hits = Arc::new(AtomicUsize::new(0));
        let counter = hits.clone();
        std::thread::spawn(move || {
            let mut held = Vec::new();
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut buf = Vec::new();
                let mut chunk = [0u8; 1024];
                while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut chunk) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                counter.fetch_add(1, Ordering::SeqCst);
                match &response {
                    Some(r) => drop(stream.write_all(r)),
                    // Open and silent until the test ends (a bounded few).
                    None if held.len() < 64 => held.push(stream),
                    None => {}
                }
            }
        });
        Directory { url, hits }
    }

    /// Requests taken so far.
    pub fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }
}

/// The `Signature-Agent`, `Signature-Input` and `Signature` fields of a
/// request to `authority` signed by `key` as agent `agent` (member
/// `agent1`), over `@authority` and that member, tag `web-bot-auth`,
/// created 5 s ago, good for 5 minutes.
pub fn sign(key: &SigningKey, agent: &str, authority: &str) -> Vec<(String, String)> {
    sign_over(key, agent, authority, None)
}

/// As [`sign`], covering `@scheme` too when `scheme` is given: the
/// signature holds only for a request the verifier knows came that way.
pub fn sign_over(key: &SigningKey, agent: &str, authority: &str, scheme: Option<&str>) -> Vec<(String, String)> {
    let t = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs();
    let keyid = thumbprint(key);
    let (covered, scheme_line) = match scheme {
        Some(s) => (r#""@scheme" "#, format!("\"@scheme\": {s}\n")),
        None => ("", String::new()),
    };
    let components = format!(r#"({covered}"@authority" "signature-agent";key="agent1")"#);
    let params = format!(r#";created={};expires={};keyid="{keyid}";alg="ed25519";tag="web-bot-auth""#, t - 5, t + 300);
    let base = format!(
        "{scheme_line}\"@authority\": {authority}\n\"signature-agent\";key=\"agent1\": \"{agent}\"\n\"@signature-params\": {components}{params}"
    );
    let sig = STANDARD.encode(key.sign(base.as_bytes()).to_bytes());
    vec![
        ("Signature-Agent".into(), format!(r#"agent1="{agent}""#)),
        ("Signature-Input".into(), format!("sig1={components}{params}")),
        ("Signature".into(), format!("sig1=:{sig}:")),
    ]
}
