//! Web Bot Auth end to end through `server::verify::wba`: a key directory served on
//! loopback by the test, requests signed here per the draft (the signature
//! base written out by hand from RFC 9421 §2.5), verified through the
//! directory cache.
#![cfg(feature = "server")]

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine as _;
use ed25519_dalek::{Signer as _, SigningKey};
use robotgate::identity::signature::{Limits, Reason, RequestParts, Verdict};
use robotgate::server::verify::wba::{verify_request, DirectoryCache, FetchError, FetchLimits};
use sha2::{Digest as _, Sha256};

/// A fresh Ed25519 key (seed from a per-process random state).
fn new_key(label: &str) -> SigningKey {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write(label.as_bytes());
    let seed: [u8; 32] = Sha256::digest(h.finish().to_le_bytes()).into();
    SigningKey::from_bytes(&seed)
}

/// RFC 7638 thumbprint of an Ed25519 JWK (members crv, kty, x: RFC 8037 A.3).
fn thumbprint(key: &SigningKey) -> String {
    let x = URL_SAFE_NO_PAD.encode(key.verifying_key().as_bytes());
    URL_SAFE_NO_PAD.encode(Sha256::digest(format!(r#"{{"crv":"Ed25519","kty":"OKP","x":"{x}"}}"#)))
}

fn directory(key: &SigningKey) -> String {
    let x = URL_SAFE_NO_PAD.encode(key.verifying_key().as_bytes());
    format!(r#"{{"keys":[{{"kty":"OKP","crv":"Ed25519","x":"{x}"}}]}}"#)
}

/// A loopback HTTP server answering every request with `response`; counts requests.
struct Server {
    url: String,
    hits: Arc<AtomicUsize>,
}

fn serve(response: Vec<u8>) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = hits.clone();
    std::thread::spawn(move || {
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
            let _ = stream.write_all(&response);
        }
    });
    Server { url, hits }
}

fn ok(body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/http-message-signatures-directory+json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}

/// A request signed per the draft: covers `@authority` and the
/// `Signature-Agent` member `agent1`.
struct Signed {
    authority: String,
    headers: Vec<(String, String)>,
}

impl Signed {
    fn new(key: &SigningKey, agent: &str, authority: &str) -> Signed {
        let t = now();
        let components = r#"("@authority" "signature-agent";key="agent1")"#;
        let params = format!(
            r#";created={};expires={};keyid="{}";alg="ed25519";tag="web-bot-auth""#,
            t - 5,
            t + 300,
            thumbprint(key)
        );
        let base = format!(
            "\"@authority\": {authority}\n\"signature-agent\";key=\"agent1\": \"{agent}\"\n\"@signature-params\": {components}{params}"
        );
        let sig = STANDARD.encode(key.sign(base.as_bytes()).to_bytes());
        Signed {
            authority: authority.to_owned(),
            headers: vec![
                ("Signature-Agent".into(), format!(r#"agent1="{agent}""#)),
                ("Signature-Input".into(), format!("sig1={components}{params}")),
                ("Signature".into(), format!("sig1=:{sig}:")),
            ],
        }
    }

    async fn verify(&self, cache: &DirectoryCache) -> Verdict {
        let headers: Vec<(&str, &str)> = self.headers.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
        let req = RequestParts {
            method: "GET",
            scheme: "https",
            authority: &self.authority,
            path: "/",
            query: None,
            headers: &headers,
        };
        verify_request(cache, &req, now(), &Limits::default()).await
    }
}

fn test_cache() -> DirectoryCache {
    DirectoryCache::new(FetchLimits { allow_private: true, ..FetchLimits::default() })
}

#[tokio::test]
async fn signed_request_verifies_and_one_changed_byte_does_not() {
    let key = new_key("e2e");
    let server = serve(ok(&directory(&key)));
    let cache = test_cache();
    let signed = Signed::new(&key, &server.url, "www.example.com");
    assert_eq!(signed.verify(&cache).await, Verdict::Verified { agent: server.url.clone(), keyid: thumbprint(&key) });
    let mut tampered = Signed::new(&key, &server.url, "www.example.com");
    tampered.authority = "www.example.con".into();
    assert_eq!(tampered.verify(&cache).await, Verdict::Invalid { reason: Reason::BadSignature });
}

#[tokio::test]
async fn directory_is_cached_per_agent() {
    let key = new_key("cache");
    let server = serve(ok(&directory(&key)));
    let cache = test_cache();
    for _ in 0..3 {
        let v = Signed::new(&key, &server.url, "example.com").verify(&cache).await;
        assert!(matches!(v, Verdict::Verified { .. }), "{v:?}");
    }
    assert_eq!(server.hits.load(Ordering::SeqCst), 1, "one fetch for three requests");
    assert_eq!(cache.fetches(), 1);

    // Failures are cached too (negative TTL).
    let failing = serve(b"HTTP/1.1 500 Oops\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_vec());
    for _ in 0..2 {
        assert_eq!(cache.keys(&failing.url).await.unwrap_err(), FetchError::Status(500));
    }
    assert_eq!(failing.hits.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn redirecting_directory_is_refused() {
    let key = new_key("redirect");
    let target = serve(ok(&directory(&key)));
    let redirect = serve(
        format!("HTTP/1.1 302 Found\r\nLocation: {}/\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", target.url)
            .into_bytes(),
    );
    let cache = test_cache();
    assert_eq!(cache.keys(&redirect.url).await.unwrap_err(), FetchError::Redirect(302));
    assert_eq!(target.hits.load(Ordering::SeqCst), 0, "redirect not followed");
    let v = Signed::new(&key, &redirect.url, "example.com").verify(&cache).await;
    assert_eq!(v, Verdict::Invalid { reason: Reason::DirectoryUnavailable });
}

#[tokio::test]
async fn oversized_directory_is_refused() {
    let key = new_key("big");
    let padding = " ".repeat(70 * 1024);
    let big = format!("{}{padding}", directory(&key));
    let cache = test_cache();
    // Declared length over the cap.
    let server = serve(ok(&big));
    assert_eq!(cache.keys(&server.url).await.unwrap_err(), FetchError::TooLarge(64 * 1024));
    // No length: read until close, stopped at the cap.
    let streamed = serve(
        format!("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n{big}").into_bytes(),
    );
    assert_eq!(cache.keys(&streamed.url).await.unwrap_err(), FetchError::TooLarge(64 * 1024));
    // Too many keys.
    let x = URL_SAFE_NO_PAD.encode(key.verifying_key().as_bytes());
    let one = format!(r#"{{"kty":"OKP","crv":"Ed25519","x":"{x}"}}"#);
    let many = serve(ok(&format!(r#"{{"keys":[{}]}}"#, vec![one; 17].join(","))));
    assert!(matches!(cache.keys(&many.url).await.unwrap_err(), FetchError::Directory(_)));
}

#[tokio::test]
async fn loopback_directory_is_refused_by_default() {
    let key = new_key("private");
    let server = serve(ok(&directory(&key)));
    let strict = DirectoryCache::new(FetchLimits::default());
    // http is refused first; an https URL on loopback hits the address rule.
    assert_eq!(strict.keys(&server.url).await.unwrap_err(), FetchError::NotHttps);
    let https = server.url.replace("http://", "https://");
    assert!(matches!(strict.keys(&https).await.unwrap_err(), FetchError::PrivateAddress(ip) if ip.is_loopback()));
    assert_eq!(server.hits.load(Ordering::SeqCst), 0, "nothing was sent");
    let v = Signed::new(&key, &server.url, "example.com").verify(&strict).await;
    assert_eq!(v, Verdict::Invalid { reason: Reason::DirectoryUnavailable });
}
