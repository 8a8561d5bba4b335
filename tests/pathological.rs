//! Hostile robots.txt files and User-Agents keep compile time, memory and
//! per-query time bounded. Bounds are generous (this is not a benchmark);
//! the measured figures are printed (`cargo test --release --test pathological -- --nocapture`).

use std::time::{Duration, Instant};

use robotgate::agent::Classifier;
use robotgate::robots::RobotsTxt;

fn timed<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let t = Instant::now();
    let v = f();
    (v, t.elapsed())
}

/// Worst single query over a few hostile paths.
fn worst_query(robots: &RobotsTxt, paths: &[Vec<u8>]) -> Duration {
    let sel = robots.select(&["foobot"]);
    paths
        .iter()
        .map(|p| {
            let (_, t) = timed(|| robots.check(&sel, p).allowed);
            let (_, t2) = timed(|| robots.allows("foobot", &String::from_utf8_lossy(p)).allowed);
            t.max(t2)
        })
        .max()
        .unwrap()
}

fn hostile_paths() -> Vec<Vec<u8>> {
    vec![
        b"/".to_vec(),
        vec![b'a'; 8192].into_iter().fold(b"/".to_vec(), |mut v, b| {
            v.push(b);
            v
        }),
        b"/".iter().chain(b"ab".repeat(4096).iter()).copied().collect(),
        b"/".iter().chain(b"$".repeat(8192).iter()).copied().collect(),
    ]
}

fn check(name: &str, body: &[u8], compile_bound: Duration, query_bound: Duration) {
    let (robots, compile) = timed(|| RobotsTxt::compile(body));
    let query = worst_query(&robots, &hostile_paths());
    println!(
        "{name}: {} bytes, {} rules, compile {:.1} ms, worst query {:.1} µs",
        body.len(),
        robots.rules().len(),
        compile.as_secs_f64() * 1e3,
        query.as_secs_f64() * 1e6
    );
    assert!(compile < compile_bound, "{name}: compile took {compile:?}");
    assert!(query < query_bound, "{name}: a query took {query:?}");
}

#[test]
fn thousands_of_stars() {
    let mut body = b"User-agent: *\nDisallow: /".to_vec();
    body.extend(std::iter::repeat_n(b'*', 10_000));
    body.extend_from_slice(b"x$\n");
    // And many short star rules, which go to the lazy DFA.
    for i in 0..2_000 {
        body.extend_from_slice(format!("Disallow: /*a*b*{i}*c$\n").as_bytes());
    }
    check("stars", &body, Duration::from_secs(5), Duration::from_millis(500));
}

#[test]
fn one_500_kib_line() {
    let mut body = b"User-agent: *\nDisallow: /".to_vec();
    body.extend(std::iter::repeat_n(b'a', 500 * 1024));
    check("long line", &body, Duration::from_secs(2), Duration::from_millis(50));
}

#[test]
fn a_hundred_thousand_rules() {
    let mut body = String::from("User-agent: *\n");
    for i in 0..100_000 {
        body.push_str(&format!("Disallow: /p{i}/\n"));
    }
    // Past 500 KiB the rest is ignored, so compile the whole file with a raised limit too.
    let (robots, compile) =
        timed(|| RobotsTxt::compile_with(body.as_bytes(), robotgate::robots::Options { max_bytes: usize::MAX }));
    assert_eq!(robots.rules().len(), 100_000);
    let sel = robots.select(&["x"]);
    let (v, q) = timed(|| robots.check(&sel, b"/p99999/x").allowed);
    println!(
        "100k rules (no size limit): compile {:.0} ms, query {:.1} µs",
        compile.as_secs_f64() * 1e3,
        q.as_secs_f64() * 1e6
    );
    assert!(!v);
    assert!(compile < Duration::from_secs(10));
    check("100k rules, default limit", body.as_bytes(), Duration::from_secs(5), Duration::from_millis(50));
}

#[test]
fn repeated_dollars_and_many_agents() {
    let mut body = String::new();
    for i in 0..5_000 {
        body.push_str(&format!("User-agent: bot{i}\nUser-agent: foobot\nDisallow: /{}\n", "$".repeat(50)));
    }
    check("dollars and agents", body.as_bytes(), Duration::from_secs(5), Duration::from_millis(50));
}

#[test]
fn hostile_user_agents() {
    let classifier = Classifier::builtin();
    let long = "Mozilla/5.0 (compatible; ".repeat(64 * 1024 / 25);
    let binary: Vec<u8> = (0..64 * 1024).map(|i| (i * 7 + 13) as u8).collect();
    let bots = "bot/1.0 crawler spider +http://x ".repeat(2000);
    let mut worst = Duration::ZERO;
    for ua in [long.as_bytes(), &binary, bots.as_bytes(), &[0u8; 65536][..], b""] {
        let (_, t) = timed(|| classifier.classify(ua).is_bot());
        worst = worst.max(t);
    }
    println!("hostile User-Agents (64 KiB): worst classify {:.1} µs", worst.as_secs_f64() * 1e6);
    assert!(worst < Duration::from_millis(50), "{worst:?}");
}
