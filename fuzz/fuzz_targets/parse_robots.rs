//! Parse, compile, query and lint arbitrary bytes as robots.txt. See `fuzz/checks.rs`.
//!
//! Run: `cargo +nightly fuzz run parse_robots`
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::parse_robots(data));
