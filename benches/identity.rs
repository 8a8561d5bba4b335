//! IP range lookup cost with the builtin feeds: a verified address (in
//! Google's common-crawlers feed), an unverified one (in no feed), an IPv6
//! crawler address, and the full verdict for a Googlebot claim.
//!
//! Run: `cargo bench --no-default-features --bench identity -- --warm-up-time 1 --measurement-time 3`

use std::net::IpAddr;

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use robotgate::identity::{check, resolve, RangeTable};

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
}

criterion_group!(benches, bench);
criterion_main!(benches);
