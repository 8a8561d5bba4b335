//! Compile a robots.txt and query it with an arbitrary agent and path. See `fuzz/checks.rs`.
//!
//! Run: `cargo +nightly fuzz run match_path`
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::match_path(data));
