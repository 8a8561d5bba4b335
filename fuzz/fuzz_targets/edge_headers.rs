//! See `fuzz/checks.rs`: `checks::edge_headers`.
//!
//! Run: `cargo +nightly fuzz run edge_headers`
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::edge_headers(data));
