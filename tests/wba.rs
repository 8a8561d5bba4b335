//! Web Bot Auth end to end through `server::verify::wba`: a key directory served on
//! loopback by the test, requests signed here per the draft (the signature
//! base written out by hand from RFC 9421 §2.5), verified through the
//! directory cache.
#![cfg(feature = "server")]

mod common;

use std::time::{SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use common::signer::{directory, new_key, ok, sign, thumbprint, Directory};
use ed25519_dalek::SigningKey;
use robotgate::identity::signature::{Limits, Reason, RequestParts, Verdict};
use robotgate::server::verify::wba::{verify_request, DirectoryCache, FetchError, FetchLimits};

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
        Signed { authority: authority.to_owned(), headers: sign(key, agent, authority) }
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
    let server = Directory::answering(ok(&directory(&key)));
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
    let server = Directory::answering(ok(&directory(&key)));
    let cache = test_cache();
    for _ in 0..3 {
        let v = Signed::new(&key, &server.url, "example.com").verify(&cache).await;
        assert!(matches!(v, Verdict::Verified { .. }), "{v:?}");
    }
    assert_eq!(server.hits(), 1, "one fetch for three requests");
    assert_eq!(cache.fetches(), 1);

    // Failures are cached too (negative TTL).
    let failing = Directory::answering(b"HTTP/1.1 500 Oops\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_vec());
    for _ in 0..2 {
        assert_eq!(cache.keys(&failing.url).await.unwrap_err(), FetchError::Status(500));
    }
    assert_eq!(failing.hits(), 1);
}

#[tokio::test]
async fn askers_at_once_share_one_fetch_and_fetches_are_bounded() {
    let key = new_key("together");
    let server = Directory::answering(ok(&directory(&key)));
    let cache = test_cache();
    // Eight signed requests at once, none cached: the first fetches, the
    // others wait for it.
    let asks: Vec<_> = (0..8).map(|_| Signed::new(&key, &server.url, "example.com")).collect();
    let verdicts = futures_util::future::join_all(asks.iter().map(|s| s.verify(&cache))).await;
    assert!(verdicts.iter().all(|v| matches!(v, Verdict::Verified { .. })), "{verdicts:?}");
    assert_eq!((server.hits(), cache.fetches()), (1, 1), "one fetch for eight askers at once");
    // Directories that never answer: IN_FLIGHT_MAX of them are fetched at
    // once, one more is refused at once and not cached.
    let silent: Vec<Directory> =
        (0..=robotgate::identity::signature::fetch::IN_FLIGHT_MAX).map(|_| Directory::silent()).collect();
    let cache = DirectoryCache::new(FetchLimits {
        allow_private: true,
        timeout: std::time::Duration::from_millis(500),
        ..FetchLimits::default()
    });
    let results = futures_util::future::join_all(silent.iter().map(|d| cache.keys(&d.url))).await;
    let busy = results.iter().filter(|r| matches!(r, Err(FetchError::Busy))).count();
    let timed_out = results.iter().filter(|r| matches!(r, Err(FetchError::Timeout))).count();
    assert_eq!((busy, timed_out), (1, silent.len() - 1), "{results:?}");
    assert_eq!(cache.fetches() as usize, silent.len() - 1);
    // Busy said nothing of its agent: asked again, it is fetched.
    let last = &silent.last().unwrap().url;
    assert_eq!(cache.keys(last).await.unwrap_err(), FetchError::Timeout);
}

#[tokio::test]
async fn redirecting_directory_is_refused() {
    let key = new_key("redirect");
    let target = Directory::answering(ok(&directory(&key)));
    let redirect = Directory::answering(
        format!("HTTP/1.1 302 Found\r\nLocation: {}/\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", target.url)
            .into_bytes(),
    );
    let cache = test_cache();
    assert_eq!(cache.keys(&redirect.url).await.unwrap_err(), FetchError::Redirect(302));
    assert_eq!(target.hits(), 0, "redirect not followed");
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
    let server = Directory::answering(ok(&big));
    assert_eq!(cache.keys(&server.url).await.unwrap_err(), FetchError::TooLarge(64 * 1024));
    // No length: read until close, stopped at the cap.
    let streamed = Directory::answering(
        format!("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n{big}").into_bytes(),
    );
    assert_eq!(cache.keys(&streamed.url).await.unwrap_err(), FetchError::TooLarge(64 * 1024));
    // Too many keys.
    let x = URL_SAFE_NO_PAD.encode(key.verifying_key().as_bytes());
    let one = format!(r#"{{"kty":"OKP","crv":"Ed25519","x":"{x}"}}"#);
    let many = Directory::answering(ok(&format!(r#"{{"keys":[{}]}}"#, vec![one; 17].join(","))));
    assert!(matches!(cache.keys(&many.url).await.unwrap_err(), FetchError::Directory(_)));
}

#[tokio::test]
async fn loopback_directory_is_refused_by_default() {
    let key = new_key("private");
    let server = Directory::answering(ok(&directory(&key)));
    let strict = DirectoryCache::new(FetchLimits::default());
    // http is refused first; an https URL on loopback hits the address rule.
    assert_eq!(strict.keys(&server.url).await.unwrap_err(), FetchError::NotHttps);
    let https = server.url.replace("http://", "https://");
    assert!(matches!(strict.keys(&https).await.unwrap_err(), FetchError::PrivateAddress(ip) if ip.is_loopback()));
    assert_eq!(server.hits(), 0, "nothing was sent");
    let v = Signed::new(&key, &server.url, "example.com").verify(&strict).await;
    assert_eq!(v, Verdict::Invalid { reason: Reason::DirectoryUnavailable });
}
