//! Parse, compile and lint arbitrary bytes as robots.txt.
//!
//! Run: `cargo +nightly fuzz run parse_robots`
#![no_main]

use libfuzzer_sys::fuzz_target;
use robotgate::robots::{lint, RobotsTxt};

fuzz_target!(|data: &[u8]| {
    let robots = RobotsTxt::compile(data);
    let _ = robots.allows("FooBot", "/");
    let _ = lint::lint(data);
});
