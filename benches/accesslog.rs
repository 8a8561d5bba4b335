//! `robotgate replay` reader throughput: parse 100,000 generated nginx
//! "combined" lines (a realistic mix of browsers and robots, IPv4 and IPv6,
//! some escaped User-Agents) from memory through `accesslog::Reader`, and
//! the same requests as Caddy JSON lines.
//!
//! Run: `cargo bench --no-default-features --bench accesslog`
//! (add `-- --warm-up-time 1 --measurement-time 3` for a quick run).

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use robotgate::accesslog::{Format, JsonFields, Reader};

const LINES: usize = 100_000;

/// A deterministic stream of pseudo-random numbers (xorshift64*).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
    }
}

const AGENTS: &[&str] = &[
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)",
    "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
    "Mozilla/5.0 (compatible; AhrefsBot/7.0; +http://ahrefs.com/robot/)",
    "curl/8.5.0",
    "-",
    r"Mozilla/5.0 \x22quoted\x22 (compatible; oddbot/0.1)",
];

const PATHS: &[&str] = &[
    "/",
    "/robots.txt",
    "/blog/2026/11/some-post",
    "/static/app.3f9a1c.js",
    "/search?q=rust+proxy&page=2",
    "/private/admin",
];

fn log() -> String {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut out = String::with_capacity(LINES * 220);
    for i in 0..LINES {
        let client = if rng.below(4) == 0 {
            format!("2001:db8:{:x}::{:x}", rng.below(65_536), rng.below(65_536))
        } else {
            format!("{}.{}.{}.{}", rng.below(223) + 1, rng.below(256), rng.below(256), rng.below(256))
        };
        let (h, m, s) = (i / 3600 % 24, i / 60 % 60, i % 60);
        let path = PATHS[rng.below(PATHS.len() as u64) as usize];
        let ua = AGENTS[rng.below(AGENTS.len() as u64) as usize];
        let status = [200, 200, 200, 304, 404, 301][rng.below(6) as usize];
        out.push_str(&format!(
            "{client} - - [23/Nov/2026:{h:02}:{m:02}:{s:02} +0000] \"GET {path} HTTP/1.1\" {status} {} \"https://example.com/\" \"{ua}\"\n",
            rng.below(100_000)
        ));
    }
    out
}

/// The same requests as Caddy's JSON access log lines.
fn caddy(combined: &str) -> String {
    let mut out = String::with_capacity(combined.len() * 2);
    let mut reader = Reader::new(combined.as_bytes(), Format::Combined);
    reader
        .for_each_entry(|_, e| {
            let line = serde_json::json!({
                "level": "info", "ts": e.time_unix.unwrap_or(0) as f64 + 0.25, "logger": "http.log.access",
                "msg": "handled request",
                "request": {"remote_ip": e.client, "remote_port": "51234", "client_ip": e.client, "proto": "HTTP/1.1",
                            "method": e.method, "host": "example.com", "uri": e.target,
                            "headers": {"User-Agent": [e.user_agent], "Accept": ["*/*"]}},
                "bytes_read": 0, "duration": 0.0012, "size": 1024, "status": e.status,
                "resp_headers": {"Server": ["Caddy"]}
            });
            out.push_str(&line.to_string());
            out.push('\n');
        })
        .unwrap();
    out
}

fn bench(c: &mut Criterion) {
    let text = log();
    let mut g = c.benchmark_group("accesslog");
    g.throughput(Throughput::Elements(LINES as u64));
    g.bench_function("combined_100k_lines", |b| {
        b.iter(|| {
            let mut reader = Reader::new(text.as_bytes(), Format::Combined);
            let mut n = 0u64;
            reader
                .for_each_entry(|_, e| {
                    n += e.target.len() as u64 + u64::from(e.status.unwrap_or(0)) + e.time_unix.unwrap_or(0) as u64;
                    black_box(&e);
                })
                .unwrap();
            assert_eq!(reader.malformed().count, 0);
            black_box(n)
        })
    });
    let json = caddy(&text);
    g.bench_function("caddy_json_100k_lines", |b| {
        b.iter(|| {
            let mut reader = Reader::new(json.as_bytes(), Format::Json(JsonFields::default()));
            let mut n = 0u64;
            reader.for_each_entry(|_, e| n += e.target.len() as u64 + u64::from(e.status.unwrap_or(0))).unwrap();
            assert_eq!(reader.malformed().count, 0);
            black_box(n)
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
