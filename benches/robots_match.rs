//! robots.txt benchmarks: compile a 500 KiB file; one query against 10 and 10,000 rules.
//!
//! Run: `cargo bench --bench robots_match`

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use robotgate::robots::RobotsTxt;

/// A realistic file: a few groups, literal prefixes with shared stems, some wildcards.
fn robots_with_rules(n: usize) -> String {
    let mut s = String::from("User-agent: Googlebot\nDisallow: /search\nAllow: /search/about\n\nUser-agent: *\n");
    let sections = ["products", "category", "user", "archive", "tag", "api/v1", "static/img", "blog/2024"];
    for i in 0..n {
        let sec = sections[i % sections.len()];
        match i % 10 {
            0 => s.push_str(&format!("Disallow: /{sec}/*?sessionid={i}\n")),
            1 => s.push_str(&format!("Allow: /{sec}/public-{i}/\n")),
            2 => s.push_str(&format!("Disallow: /*.{i}.json$\n")),
            _ => s.push_str(&format!("Disallow: /{sec}/item-{i}/\n")),
        }
    }
    s.push_str("Sitemap: https://example.com/sitemap.xml\n");
    s
}

fn bench(c: &mut Criterion) {
    let mut big = robots_with_rules(1);
    let mut n = 1;
    while big.len() < 500 * 1024 {
        n *= 2;
        big = robots_with_rules(n);
    }
    let big = &big[..500 * 1024];
    let mut g = c.benchmark_group("compile");
    g.throughput(Throughput::Bytes(big.len() as u64));
    g.sample_size(20);
    g.bench_function("500KiB", |b| b.iter(|| RobotsTxt::compile(black_box(big.as_bytes()))));
    g.finish();

    let paths = [
        "/products/item-9999/details?color=red",
        "/blog/2024/a-post-about-robots",
        "/user/item-3/",
        "/static/img/logo.png",
        "/search?q=robots",
        "/",
    ];
    let mut g = c.benchmark_group("query");
    for rules in [10usize, 10_000] {
        let robots = RobotsTxt::compile(robots_with_rules(rules).as_bytes());
        let sel = robots.select(&["GPTBot"]);
        g.bench_with_input(BenchmarkId::new("check", rules), &rules, |b, _| {
            let mut i = 0;
            b.iter(|| {
                i = (i + 1) % paths.len();
                black_box(robots.check(&sel, black_box(paths[i].as_bytes())).allowed)
            })
        });
        g.bench_with_input(BenchmarkId::new("select+check", rules), &rules, |b, _| {
            let mut i = 0;
            b.iter(|| {
                i = (i + 1) % paths.len();
                let sel = robots.select(black_box(&["Googlebot-Image", "Googlebot"]));
                black_box(robots.check(&sel, black_box(paths[i].as_bytes())).allowed)
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
