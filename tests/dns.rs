//! Forward-confirmed reverse DNS against a real DNS server on loopback.
//!
//! The server (`tests/common/dns_server.rs`) is `hickory-server` with a
//! handler of ours: it answers from a table, stays silent on demand, counts
//! what it is asked, and sends names a zone file could not hold (a dot inside
//! a label). Every test is bounded by the verifier's own timeout.

#![cfg(feature = "server")]

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use robotgate::identity::rdns::Failure;
use robotgate::server::verify::dns::{DnsConfig, DnsVerdict, DnsVerifier, Trouble};

mod common;

use common::dns_server::{Answer, Server, A, AAAA};

/// A verifier asking only `server`.
fn verifier(server: &Server, timeout_ms: u64, max_in_flight: usize) -> DnsVerifier {
    DnsVerifier::new(&DnsConfig {
        nameservers: vec![server.addr],
        timeout: Duration::from_millis(timeout_ms),
        max_in_flight,
        cache_entries: 1024,
    })
    .unwrap()
}

fn v4(s: &str) -> Ipv4Addr {
    s.parse().unwrap()
}

fn google() -> Vec<String> {
    vec!["googlebot.com".into(), "google.com".into()]
}

const GOOGLEBOT_PTR: &str = "1.66.249.66.in-addr.arpa";
const GOOGLEBOT_NAME: &str = "crawl-66-249-66-1.googlebot.com";

fn googlebot_table() -> Vec<(&'static str, Answer)> {
    vec![
        (GOOGLEBOT_PTR, Answer::Ptr(vec!["crawl-66-249-66-1", "googlebot", "com"])),
        (GOOGLEBOT_NAME, Answer::A(v4("66.249.66.1"))),
    ]
}

#[tokio::test]
async fn genuine_fcrdns_is_verified() {
    let v6: Ipv6Addr = "2001:4860:4801:10::1".parse().unwrap();
    let mut table = googlebot_table();
    // The IPv6 reverse name, nibble by nibble.
    let nibbles: String = v6.octets().iter().rev().map(|b| format!("{:x}.{:x}.", b & 0xf, b >> 4)).collect();
    let v6_ptr: &'static str = Box::leak(format!("{nibbles}ip6.arpa").into_boxed_str());
    table.push((v6_ptr, Answer::Ptr(vec!["crawl-v6", "GoogleBot", "com"])));
    table.push(("crawl-v6.googlebot.com", Answer::Aaaa(v6)));
    let server = Server::answering(&table);
    let dns = verifier(&server, 2000, 16);
    assert_eq!(
        dns.verify("66.249.66.1".parse().unwrap(), &google()).await,
        DnsVerdict::Verified { ptr: GOOGLEBOT_NAME.into() }
    );
    // A dual-stack socket's view of the same client: the same check.
    assert_eq!(
        dns.verify("::ffff:66.249.66.1".parse().unwrap(), &google()).await,
        DnsVerdict::Verified { ptr: GOOGLEBOT_NAME.into() }
    );
    assert_eq!(
        dns.verify(IpAddr::V6(v6), &google()).await,
        DnsVerdict::Verified { ptr: "crawl-v6.googlebot.com".into() }
    );
    assert_eq!(server.count_type(AAAA), 1, "an IPv6 client is confirmed by AAAA");
}

#[tokio::test]
async fn forward_mismatch_is_spoofed() {
    // An attacker's reverse zone names Google's host; Google's zone says otherwise.
    let mut table = googlebot_table();
    table.push(("1.2.0.192.in-addr.arpa", Answer::Ptr(vec!["crawl-66-249-66-1", "googlebot", "com"])));
    let server = Server::answering(&table);
    let dns = verifier(&server, 2000, 16);
    assert_eq!(
        dns.verify("192.0.2.1".parse().unwrap(), &google()).await,
        DnsVerdict::Spoofed { reason: Failure::ForwardMismatch { ptr: GOOGLEBOT_NAME.into() } }
    );
    assert_eq!(server.count_type(A), 1);
}

#[tokio::test]
async fn ptr_outside_the_suffixes_is_spoofed_without_a_forward_lookup() {
    let server = Server::answering(&[
        ("2.2.0.192.in-addr.arpa", Answer::Ptr(vec!["crawl", "evil", "example"])),
        ("crawl.evil.example", Answer::A(v4("192.0.2.2"))),
        // Labels `crawl.googlebot` and `com`: text that ends in `.googlebot.com`.
        ("3.2.0.192.in-addr.arpa", Answer::Ptr(vec!["crawl.googlebot", "com"])),
        ("crawl.googlebot.com", Answer::A(v4("192.0.2.3"))),
    ]);
    let dns = verifier(&server, 2000, 16);
    assert_eq!(
        dns.verify("192.0.2.2".parse().unwrap(), &google()).await,
        DnsVerdict::Spoofed { reason: Failure::OutsideSuffixes { ptr: "crawl.evil.example.".into() } }
    );
    match dns.verify("192.0.2.3".parse().unwrap(), &google()).await {
        DnsVerdict::Spoofed { reason: Failure::OutsideSuffixes { ptr } } => assert!(ptr.contains('\\'), "{ptr}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(server.count_type(A), 0, "names outside the suffixes are not looked up forward");
}

#[tokio::test]
async fn no_ptr_is_spoofed() {
    let server = Server::answering(&googlebot_table());
    let dns = verifier(&server, 2000, 16);
    assert_eq!(
        dns.verify("192.0.2.9".parse().unwrap(), &google()).await,
        DnsVerdict::Spoofed { reason: Failure::NoPtr }
    );
}

#[tokio::test]
async fn servfail_is_unverifiable() {
    let mut table = googlebot_table();
    table.push(("4.2.0.192.in-addr.arpa", Answer::Rcode(2)));
    let server = Server::answering(&table);
    let dns = verifier(&server, 2000, 16);
    match dns.verify("192.0.2.4".parse().unwrap(), &google()).await {
        DnsVerdict::Unverifiable { reason: Trouble::Resolver(_) } => {}
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn silent_server_is_unverifiable_within_the_timeout() {
    let server = Server::start(&googlebot_table(), true, Duration::ZERO);
    let dns = verifier(&server, 300, 16);
    let t = Instant::now();
    let v = dns.verify("66.249.66.1".parse().unwrap(), &google()).await;
    let took = t.elapsed();
    assert_eq!(v, DnsVerdict::Unverifiable { reason: Trouble::Timeout });
    assert!(took < Duration::from_secs(3), "{took:?}");
    assert!(took >= Duration::from_millis(250), "{took:?}");
    assert!(server.count() >= 1, "the server was asked");
    // Kept briefly: the next request does not wait again.
    let asked = server.count();
    let t = Instant::now();
    let v = dns.verify("66.249.66.1".parse().unwrap(), &google()).await;
    assert_eq!(v, DnsVerdict::Unverifiable { reason: Trouble::Timeout });
    assert!(t.elapsed() < Duration::from_millis(200), "from the cache: {:?}", t.elapsed());
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(server.count(), asked);
}

#[tokio::test]
async fn second_verify_is_served_from_the_cache() {
    let server = Server::answering(&googlebot_table());
    let dns = verifier(&server, 2000, 16);
    let ip: IpAddr = "66.249.66.1".parse().unwrap();
    assert_eq!(dns.cached(ip, &google()), None);
    let first = dns.verify(ip, &google()).await;
    assert!(matches!(first, DnsVerdict::Verified { .. }), "{first:?}");
    let asked = server.count();
    assert_eq!(asked, 2, "one PTR and one A");
    assert_eq!(dns.verify(ip, &google()).await, first);
    assert_eq!(dns.cached(ip, &google()), Some(first.clone()));
    assert_eq!(dns.cached("::ffff:66.249.66.1".parse().unwrap(), &google()), Some(first));
    assert_eq!(server.count(), asked, "the second verify did not reach the server");
    // Another bot's suffixes are another key.
    assert_eq!(dns.cached(ip, &["search.msn.com".to_owned()]), None);
    // Negative verdicts are cached too.
    let liar: IpAddr = "192.0.2.9".parse().unwrap();
    let v = dns.verify(liar, &google()).await;
    let asked = server.count();
    assert_eq!(dns.verify(liar, &google()).await, v);
    assert_eq!(dns.cached(liar, &google()), Some(v));
    assert_eq!(server.count(), asked);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checks_in_flight_are_capped() {
    let server = Server::start(&googlebot_table(), true, Duration::ZERO);
    let dns = Arc::new(verifier(&server, 1000, 2));
    let mut slow = Vec::new();
    for i in 1..=2u8 {
        let dns = dns.clone();
        slow.push(tokio::spawn(async move { dns.verify(IpAddr::V4(Ipv4Addr::new(192, 0, 2, i)), &google()).await }));
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let t = Instant::now();
    let v = dns.verify("192.0.2.200".parse().unwrap(), &google()).await;
    assert_eq!(v, DnsVerdict::Unverifiable { reason: Trouble::Busy });
    assert!(t.elapsed() < Duration::from_millis(250), "answered at once, not queued: {:?}", t.elapsed());
    assert_eq!(dns.cached("192.0.2.200".parse().unwrap(), &google()), None, "Busy is not cached");
    for s in slow {
        assert_eq!(s.await.unwrap(), DnsVerdict::Unverifiable { reason: Trouble::Timeout });
    }
    // Slots are released: a new check runs (and times out on the silent server).
    let v = dns.verify("192.0.2.201".parse().unwrap(), &google()).await;
    assert_eq!(v, DnsVerdict::Unverifiable { reason: Trouble::Timeout });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_checks_of_one_address_share_a_lookup() {
    let server = Server::start(&googlebot_table(), false, Duration::from_millis(150));
    let dns = Arc::new(verifier(&server, 2000, 16));
    let ip: IpAddr = "66.249.66.1".parse().unwrap();
    let tasks: Vec<_> = (0..5)
        .map(|_| {
            let dns = dns.clone();
            tokio::spawn(async move { dns.verify(ip, &google()).await })
        })
        .collect();
    for t in tasks {
        assert_eq!(t.await.unwrap(), DnsVerdict::Verified { ptr: GOOGLEBOT_NAME.into() });
    }
    assert_eq!(server.count(), 2, "one PTR and one A for five callers");
}

/// Google's real name after a long set of others: 24 PTR names do not fit
/// in 512 bytes, so the UDP answer comes back truncated and the whole set
/// only over TCP.
pub fn long_ptr_set() -> Vec<(&'static str, Answer)> {
    let mut table = Vec::new();
    for i in 0..24 {
        let label: &'static str = Box::leak(format!("customer-{i:02}-of-a-shared-hosting-provider").into_boxed_str());
        table.push((GOOGLEBOT_PTR, Answer::Ptr(vec![label, "hosting", "example"])));
    }
    table.extend(googlebot_table());
    table
}

#[tokio::test]
async fn every_ptr_name_is_read_and_a_truncated_answer_is_asked_again_over_tcp() {
    // Two names, the first outside Google's domains: the second confirms.
    let server = Server::answering(&[
        (GOOGLEBOT_PTR, Answer::Ptr(vec!["mail", "example", "net"])),
        (GOOGLEBOT_PTR, Answer::Ptr(vec!["crawl-66-249-66-1", "googlebot", "com"])),
        (GOOGLEBOT_NAME, Answer::A(v4("66.249.66.1"))),
    ]);
    let dns = verifier(&server, 2000, 16);
    assert_eq!(
        dns.verify("66.249.66.1".parse().unwrap(), &google()).await,
        DnsVerdict::Verified { ptr: GOOGLEBOT_NAME.into() }
    );
    // A set too long for UDP.
    let server = Server::answering(&long_ptr_set());
    let dns = verifier(&server, 2000, 16);
    assert_eq!(
        dns.verify("66.249.66.1".parse().unwrap(), &google()).await,
        DnsVerdict::Verified { ptr: GOOGLEBOT_NAME.into() }
    );
    assert!(server.count_tcp() >= 1, "the truncated answer was not asked again over TCP");
}

/// Issue 66, defect 10: a server that sends a long answer whole in one
/// datagram, far past the 1,232 bytes the question announced, and never
/// sets TC. hickory reads only what it announced, fails to parse the rest,
/// and the check ended unverifiable; it is asked again over TCP now and
/// judged: 50 names inside Google's domains that resolve elsewhere are
/// spoofed, and Google's real name after 24 others is verified.
#[tokio::test]
async fn an_answer_longer_than_announced_is_read_over_tcp_and_judged() {
    let mut table = Vec::new();
    for i in 0..50 {
        let label: &'static str = Box::leak(format!("crawl-{i:02}-of-fifty-names-for-one-address").into_boxed_str());
        table.push(("9.2.0.192.in-addr.arpa", Answer::Ptr(vec![label, "googlebot", "com"])));
        let name: &'static str = Box::leak(format!("{label}.googlebot.com").into_boxed_str());
        table.push((name, Answer::A(v4(&format!("203.0.113.{}", i + 1)))));
    }
    table.extend(long_ptr_set());
    let server = Server::whole_over_udp(&table);
    let dns = verifier(&server, 2000, 16);
    assert!(matches!(
        dns.verify("192.0.2.9".parse().unwrap(), &google()).await,
        DnsVerdict::Spoofed { reason: robotgate::identity::rdns::Failure::ForwardMismatch { .. } }
    ));
    assert_eq!(
        dns.verify("66.249.66.1".parse().unwrap(), &google()).await,
        DnsVerdict::Verified { ptr: GOOGLEBOT_NAME.into() }
    );
    assert!(server.count_tcp() >= 2, "the unreadable answers were not asked again over TCP");
}
