//! Read arbitrary bytes as a `Content-Usage` value and rule. See `fuzz/checks.rs`.
//!
//! Run: `cargo +nightly fuzz run content_usage`
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::content_usage(data));
