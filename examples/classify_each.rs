//! Classifies each User-Agent of a file (one per line) `N` times (env `N`,
//! default 200,000) and prints the mean time per classification. Run alone
//! for wall-clock figures, or one line at a time under callgrind for
//! instruction counts that do not depend on the machine's load:
//! `bash benches/classify_instructions.sh`.
//!
//! `cargo run --release --no-default-features --example classify_each -- FILE [LINE]`

use robotgate::agent::Classifier;
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let file = args.next().expect("usage: classify_each FILE [LINE]");
    let only: Option<usize> = args.next().map(|l| l.parse().expect("LINE is a number"));
    let n: usize = std::env::var("N").ok().and_then(|v| v.parse().ok()).unwrap_or(200_000);
    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{file}: {e}"));
    let classifier = Classifier::builtin();
    for (i, ua) in text.lines().enumerate().filter(|(i, _)| only.is_none_or(|l| l == *i + 1)) {
        let start = Instant::now();
        let mut bots = 0usize;
        for _ in 0..n {
            bots += usize::from(classifier.classify(std::hint::black_box(ua.as_bytes())).is_bot());
        }
        let ns = start.elapsed().as_nanos() as f64 / n.max(1) as f64;
        println!("{:>3} {ns:8.1} ns {} {ua}", i + 1, if bots > 0 { "robot  " } else { "browser" });
    }
}
