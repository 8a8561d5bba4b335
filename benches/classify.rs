//! User-Agent classification throughput over a realistic request mix: about
//! 90% browsers (desktop and mobile, current and old shapes) and 10% robots
//! (every sample of the builtin database, plus unknown robots and tools).
//!
//! Run: `cargo bench --bench classify -- --warm-up-time 1 --measurement-time 3`
//!
//! Also measures building the classifier from the builtin database (start-up
//! and reload cost).

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use robotgate::agent::{BotDb, Classifier};

/// Browser UA shapes, filled with varying versions below.
const BROWSERS: &[&str] = &[
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/{v}.0.0.0 Safari/537.36",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/{v}.0.0.0 Safari/537.36 Edg/{v}.0.0.0",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/{v}.0.0.0 Safari/537.36",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.{v} Safari/605.1.15",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:{v}.0) Gecko/20100101 Firefox/{v}.0",
    "Mozilla/5.0 (X11; Linux x86_64; rv:{v}.0) Gecko/20100101 Firefox/{v}.0",
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/{v}.0.0.0 Safari/537.36",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_{v} like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.{v} Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (iPad; CPU OS 16_{v} like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) CriOS/{v}.0.0.0 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/{v}.0.0.0 Mobile Safari/537.36",
    "Mozilla/5.0 (Linux; Android 14; SM-S918B) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/2{v}.0 Chrome/117.0.0.0 Mobile Safari/537.36",
    "Mozilla/5.0 (Linux; Android 13; Pixel 7 Build/TQ3A.230805.001; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/{v}.0.0.0 Mobile Safari/537.36 [FB_IAB/FB4A;FBAV/4{v}.0.0.0;]",
    "Mozilla/5.0 (Windows NT 10.0; WOW64; Trident/7.0; rv:11.0) like Gecko",
    "Mozilla/4.0 (compatible; MSIE {v}.0; Windows NT 6.1; Trident/4.0; SLCC2; .NET CLR 2.0.50727; Media Center PC 6.0)",
    "Opera/9.80 (J2ME/MIDP; Opera Mini/4.{v}.15410/22.401; U; en) Presto/2.5.25 Version/10.54",
    "Mozilla/5.0 (Java; U; en-US; samsung-gt-s5380) UCBrowser8.{v}.0.154/69/444/UCWEB Mobile UNTRUSTED/1.0",
    "Nokia6230i/2.0 (03.{v}) Profile/MIDP-2.0 Configuration/CLDC-1.1",
];

/// Robots not in any database, and tools.
const UNKNOWN: &[&str] = &[
    "Mozilla/5.0 (compatible; Zzyzxbot/{v}.0; +https://zzyzx.example/bot)",
    "QuuxCrawler/{v}.2 (quux@example.org)",
    "python-httpx/0.{v}.0",
    "Frobnicator/{v}.1",
    "",
];

fn mix(db: &BotDb) -> Vec<Vec<u8>> {
    let samples: Vec<&str> = db.bots().iter().flat_map(|b| b.samples.iter().map(String::as_str)).collect();
    let mut out = Vec::new();
    let mut bots = 0usize;
    let mut browsers = 0usize;
    let mut i = 0usize;
    // Until every sample was used once, at ~10% robots.
    while bots < samples.len().max(200) {
        if browsers < 9 * (bots + 1) {
            let t = BROWSERS[i % BROWSERS.len()];
            out.push(t.replace("{v}", &(60 + i % 67).to_string()).into_bytes());
            browsers += 1;
        } else {
            let ua = if bots % 8 == 7 || samples.is_empty() {
                UNKNOWN[bots % UNKNOWN.len()].replace("{v}", &(bots % 10).to_string())
            } else {
                samples[bots % samples.len()].to_owned()
            };
            out.push(ua.into_bytes());
            bots += 1;
        }
        i += 1;
    }
    out
}

fn bench(c: &mut Criterion) {
    let db = BotDb::builtin();
    let mut g = c.benchmark_group("build");
    g.sample_size(10);
    g.bench_function("builtin", |b| b.iter(|| Classifier::new(black_box(&db)).unwrap()));
    g.finish();

    let classifier = Classifier::builtin();
    let uas = mix(&db);
    let bytes: usize = uas.iter().map(Vec::len).sum();
    let mut g = c.benchmark_group("classify");
    g.throughput(Throughput::Elements(uas.len() as u64));
    g.bench_function(format!("mix_{}_uas_{}_bytes", uas.len(), bytes), |b| {
        b.iter(|| {
            let mut bots = 0usize;
            for ua in &uas {
                bots += usize::from(classifier.classify(black_box(ua)).is_bot());
            }
            bots
        })
    });
    let browsers: Vec<&Vec<u8>> = uas.iter().filter(|u| !classifier.classify(u).is_bot()).collect();
    g.throughput(Throughput::Elements(browsers.len() as u64));
    g.bench_function("browsers_only", |b| {
        b.iter(|| browsers.iter().filter(|ua| classifier.classify(black_box(ua)).is_bot()).count())
    });
    let robots: Vec<&Vec<u8>> = uas.iter().filter(|u| classifier.classify(u).is_bot()).collect();
    g.throughput(Throughput::Elements(robots.len() as u64));
    g.bench_function("robots_only", |b| {
        b.iter(|| robots.iter().filter(|ua| classifier.classify(black_box(ua)).is_bot()).count())
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
