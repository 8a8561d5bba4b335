//! Hostile robots.txt files and User-Agents keep compile time, memory and
//! per-query time bounded. Bounds are generous (this is not a benchmark);
//! the measured figures are printed (`cargo test --release --test pathological -- --nocapture`).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use robotgate::agent::Classifier;
use robotgate::robots::RobotsTxt;

/// The system allocator, counting live heap bytes and their high-water mark,
/// so each test can say how much memory a hostile input made robotgate use.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let now = LIVE.fetch_add(layout.size(), Relaxed) + layout.size();
            PEAK.fetch_max(now, Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Relaxed);
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// The counters are process-wide, so the tests of this file take turns.
fn exclusive() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// Heap used by `f`: (its result, bytes still held by the result, peak bytes
/// during the call), both relative to the heap before the call.
fn heap<T>(f: impl FnOnce() -> T) -> (T, usize, usize) {
    let before = LIVE.load(Relaxed);
    PEAK.store(before, Relaxed);
    let v = f();
    let held = LIVE.load(Relaxed).saturating_sub(before);
    (v, held, PEAK.load(Relaxed).saturating_sub(before))
}

const MIB: usize = 1024 * 1024;

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

/// Compiles `body`, then runs the hostile queries. Memory is bounded at
/// 64 MiB while compiling, 32 MiB held by the compiled file and 16 MiB more
/// during the queries, whatever the input (it is cut at 500 KiB).
fn check(name: &str, body: &[u8], compile_bound: Duration, query_bound: Duration) {
    let _turn = exclusive();
    let ((robots, compile), held, peak) = heap(|| timed(|| RobotsTxt::compile(body)));
    let (query, _, query_peak) = heap(|| worst_query(&robots, &hostile_paths()));
    println!(
        "{name}: {} bytes, {} rules, compile {:.1} ms (peak heap {:.1} MiB, held {:.1} MiB), worst query {:.1} µs (peak heap {:.0} KiB)",
        body.len(),
        robots.rules().len(),
        compile.as_secs_f64() * 1e3,
        peak as f64 / MIB as f64,
        held as f64 / MIB as f64,
        query.as_secs_f64() * 1e6,
        query_peak as f64 / 1024.0
    );
    assert!(compile < compile_bound, "{name}: compile took {compile:?}");
    assert!(query < query_bound, "{name}: a query took {query:?}");
    assert!(peak < 64 * MIB, "{name}: compiling peaked at {peak} bytes of heap");
    assert!(held < 32 * MIB, "{name}: the compiled file holds {held} bytes");
    assert!(query_peak < 16 * MIB, "{name}: the queries peaked at {query_peak} bytes of heap");
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
    // One line that fills the 500 KiB limit (a line crossing the limit is
    // dropped whole, so it ends just inside): kept, and cut at 16 KiB as
    // Google's parser cuts it.
    let mut body = b"User-agent: *\nDisallow: /".to_vec();
    body.extend(std::iter::repeat_n(b'a', 500 * 1024 - body.len() - 1));
    body.push(b'\n');
    assert_eq!(body.len(), 500 * 1024);
    check("long line", &body, Duration::from_secs(2), Duration::from_millis(50));
    let robots = RobotsTxt::compile(&body);
    assert_eq!(robots.rules().len(), 1);
    assert!(robots.rules()[0].pattern().len() <= robotgate::robots::parse::MAX_LINE_BYTES);
    // A line past the limit is ignored, with everything after it.
    body.insert(0, b'#');
    assert_eq!(RobotsTxt::compile(&body).rules().len(), 0);
}

#[test]
fn a_hundred_thousand_rules() {
    let turn = exclusive();
    let mut body = String::from("User-agent: *\n");
    for i in 0..100_000 {
        body.push_str(&format!("Disallow: /p{i}/\n"));
    }
    // Past 500 KiB the rest is ignored, so compile the whole file with a raised limit too.
    let (robots, compile) = timed(|| {
        RobotsTxt::compile_with(
            body.as_bytes(),
            robotgate::robots::Options { max_bytes: usize::MAX, ..Default::default() },
        )
    });
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
    drop((robots, turn));
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
    let _turn = exclusive();
    let classifier = Classifier::builtin();
    let long = "Mozilla/5.0 (compatible; ".repeat(64 * 1024 / 25);
    let binary: Vec<u8> = (0..64 * 1024).map(|i| (i * 7 + 13) as u8).collect();
    let bots = "bot/1.0 crawler spider +http://x ".repeat(2000);
    let mut worst = Duration::ZERO;
    let mut worst_heap = 0;
    for ua in [long.as_bytes(), &binary, bots.as_bytes(), &[0u8; 65536][..], b""] {
        let ((_, t), _, peak) = heap(|| timed(|| classifier.classify(ua).is_bot()));
        worst = worst.max(t);
        worst_heap = worst_heap.max(peak);
    }
    println!(
        "hostile User-Agents (64 KiB): worst classify {:.1} µs, peak heap {:.1} KiB",
        worst.as_secs_f64() * 1e6,
        worst_heap as f64 / 1024.0
    );
    assert!(worst < Duration::from_millis(50), "{worst:?}");
    // Only the first 4 KiB are examined; the answer is a few small strings.
    assert!(worst_heap < MIB, "classifying peaked at {worst_heap} bytes of heap");
}
