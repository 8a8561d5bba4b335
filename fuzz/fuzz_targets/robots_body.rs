//! The robots.txt content check of the loader (NUL bytes, UTF-16/32
//! byte-order marks, HTML documents), then the parse of what it passes. See
//! `fuzz/checks.rs`.
//!
//! Run: `cargo +nightly fuzz run robots_body`
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::robots_body(data));
