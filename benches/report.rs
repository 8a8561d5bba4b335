//! `robotgate report` throughput: read and aggregate ~100,000 violation
//! records (~400 bytes each, a realistic mix of known and unknown robots,
//! some folded repeats and escaped strings) from memory, plain and gzip.
//!
//! Run: `cargo bench --no-default-features --bench report`
//! (add `-- --warm-up-time 1 --measurement-time 3` for a quick run).

use std::io::{Cursor, Write};

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use robotgate::report::{decoder, feed, Filter, Summary};

const RECORDS: usize = 100_000;

/// A deterministic stream of pseudo-random numbers (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// (bot, category, User-Agent) of robots the database knows.
const KNOWN: &[(&str, &str, &str)] = &[
    ("GPTBot", "ai-crawler", "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)"),
    ("ClaudeBot", "ai-crawler", "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; ClaudeBot/1.0; +claudebot@anthropic.com)"),
    ("Bytespider", "ai-crawler", "Mozilla/5.0 (Linux; Android 5.0) AppleWebKit/537.36 (KHTML, like Gecko) Mobile Safari/537.36 (compatible; Bytespider; spider-feedback@bytedance.com)"),
    ("AhrefsBot", "seo", "Mozilla/5.0 (compatible; AhrefsBot/7.0; +http://ahrefs.com/robot/)"),
    ("SemrushBot", "seo", "Mozilla/5.0 (compatible; SemrushBot/7~bl; +http://www.semrush.com/bot.html)"),
    ("Googlebot", "search", "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"),
    ("PerplexityBot", "ai-search", "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; PerplexityBot/1.0; +https://perplexity.ai/perplexitybot)"),
];

fn lines() -> String {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut out = String::with_capacity(RECORDS * 450);
    for i in 0..RECORDS {
        let (bot, category, ua) = if rng.below(10) < 7 {
            let (b, c, u) = KNOWN[rng.below(KNOWN.len() as u64) as usize];
            (Some(b.to_owned()), c, u.to_owned())
        } else {
            let n = rng.below(500);
            (
                Some(format!("Crawler{n}")),
                "other-bot",
                format!("Crawler{n}/1.{} (+https://crawler{n}.example/bot)", n % 7),
            )
        };
        let second = i * 86_400 * 7 / RECORDS;
        let time = format!(
            "2025-03-{:02}T{:02}:{:02}:{:02}Z",
            1 + second / 86_400,
            second / 3600 % 24,
            second / 60 % 60,
            second % 60
        );
        let line = 10 + rng.below(30);
        let action = ["block", "log", "noindex"][rng.below(3) as usize];
        let identity = if category == "other-bot" {
            None
        } else {
            Some(["verified", "spoofed", "unverifiable"][rng.below(3) as usize])
        };
        let record = serde_json::json!({
            "time": time,
            "site": if rng.below(10) == 0 { "blog" } else { "www" },
            "client": format!("203.0.{}.{}", rng.below(256), rng.below(256)),
            "method": "GET",
            "path": format!("/private/{}/page-{}.html?ref={}", rng.below(100), rng.below(5000), rng.below(10)),
            "host": "www.example.com",
            "user_agent": ua,
            "bot": bot,
            "category": category,
            "group": "*",
            "directive": "disallow",
            "pattern": format!("/private/{line}/"),
            "line": line,
            "robots_hash": "0123456789ab",
            "robots_seen": rng.below(2) == 0,
            "identity": identity,
            "action": action,
            "status": 403,
            "count": if rng.below(20) == 0 { 1 + rng.below(50) } else { 1 },
        });
        out.push_str(&serde_json::to_string(&record).expect("serializable"));
        out.push('\n');
    }
    out
}

fn bench(c: &mut Criterion) {
    let text = lines();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(text.as_bytes()).expect("in memory");
    let gz = gz.finish().expect("in memory");
    eprintln!("{RECORDS} records, {} bytes ({} per record), gzip {} bytes", text.len(), text.len() / RECORDS, gz.len());

    let mut group = c.benchmark_group("report");
    group.throughput(Throughput::Elements(RECORDS as u64));
    group.sample_size(20);
    group.bench_function("read+aggregate", |b| {
        b.iter(|| {
            let mut summary = Summary::new(Filter::default());
            feed(black_box(text.as_bytes()), "bench", &mut summary).expect("in memory");
            assert_eq!(summary.records(), RECORDS as u64);
            summary
        })
    });
    group.bench_function("read+aggregate gzip", |b| {
        b.iter(|| {
            let mut summary = Summary::new(Filter::default());
            let input = decoder(Cursor::new(black_box(gz.clone()))).expect("in memory");
            feed(input, "bench", &mut summary).expect("in memory");
            summary
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
