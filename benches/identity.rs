//! Identity's cost: the IP range lookup with the builtin feeds (a verified
//! address in Google's common-crawlers feed, an unverified one in no feed,
//! an IPv6 crawler address, the full verdict for a Googlebot claim), and
//! what it adds to a whole decision: `policy::decide` for Googlebot from
//! Google's own address with identity checked against the ranges, against
//! the same decision with identity off, and a browser's decision (which
//! does no identity work) with it on.
//!
//! Run: `cargo bench --no-default-features --bench identity -- --warm-up-time 1 --measurement-time 3`

use std::net::IpAddr;
use std::time::Instant;

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use robotgate::agent::Classifier;
use robotgate::identity::{check, resolve, ByRanges, Identify, Identity, RangeTable, RangesOnly};
use robotgate::policy::{decide, Clock, PolicyConfig, RequestFacts, SiteRules};
use robotgate::robots::RobotsTxt;
use robotgate::state::MemoryState;

const GOOGLEBOT: &[u8] = b"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";
const CHROME: &[u8] =
    b"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";

/// Identity off: every claim is taken as not made.
struct Off;

impl Identify for Off {
    fn identify(&self, _bot: usize, _client: Option<IpAddr>) -> Identity {
        Identity::NotClaimed
    }
}

fn bench(c: &mut Criterion) {
    let table = RangeTable::builtin();
    let verified: IpAddr = "66.249.66.1".parse().expect("literal");
    let unverified: IpAddr = "203.0.113.7".parse().expect("literal");
    let v6: IpAddr = "2001:4860:4801:10::1".parse().expect("literal");
    let googlebot = resolve(&table, &["google-common-crawlers"]).expect("builtin feed");

    c.bench_function("identity/lookup_verified_v4", |b| b.iter(|| table.lookup(black_box(verified))));
    c.bench_function("identity/lookup_unverified_v4", |b| b.iter(|| table.lookup(black_box(unverified))));
    c.bench_function("identity/lookup_verified_v6", |b| b.iter(|| table.lookup(black_box(v6))));
    c.bench_function("identity/check_googlebot_spoofed", |b| {
        b.iter(|| check(black_box(&googlebot), &table, black_box(unverified)))
    });
    c.bench_function("identity/builtin_compile", |b| b.iter(RangeTable::builtin));

    // A whole decision, with and without identity.
    let classifier = Classifier::builtin();
    let bots = classifier.db().bots();
    let feeds: Vec<_> = bots.iter().map(|b| resolve(&table, &b.ip_ranges).unwrap_or_default()).collect();
    let rdns: Vec<_> = bots.iter().map(|b| b.rdns_use()).collect();
    let ranges = RangesOnly(ByRanges { table: &table, feeds: &feeds, rdns: &rdns, complete_for: None });
    let robots = RobotsTxt::compile(b"User-agent: *\nDisallow: /private/\n");
    let policy = PolicyConfig::default();
    let site = SiteRules::new("s", &policy, Some(&robots));
    let state = MemoryState::new(1024);
    let clock = Clock::Fixed { instant: Instant::now(), unix_secs: 1_795_000_000 };
    let facts = |ua: &'static [u8]| RequestFacts {
        fetch: true,
        target: b"/shoes",
        user_agent: ua,
        client: Some(verified),
        crowd: false,
    };
    let (bot, browser) = (facts(GOOGLEBOT), facts(CHROME));
    let d = decide(&bot, &site, &classifier, &state, &ranges, clock);
    assert_eq!(d.identity, Identity::Verified, "Googlebot from Google's address");
    let mut group = c.benchmark_group("decide");
    group.bench_function("googlebot_identity_on", |b| {
        b.iter(|| decide(black_box(&bot), &site, &classifier, &state, &ranges, clock).identity)
    });
    group.bench_function("googlebot_identity_off", |b| {
        b.iter(|| decide(black_box(&bot), &site, &classifier, &state, &Off, clock).identity)
    });
    group.bench_function("browser_identity_on", |b| {
        b.iter(|| decide(black_box(&browser), &site, &classifier, &state, &ranges, clock).identity)
    });
    group.bench_function("browser_identity_off", |b| {
        b.iter(|| decide(black_box(&browser), &site, &classifier, &state, &Off, clock).identity)
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
