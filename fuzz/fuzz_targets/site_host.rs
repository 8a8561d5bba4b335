//! See `fuzz/checks.rs`: `checks::site_host`.
//!
//! Run: `cargo +nightly fuzz run site_host`
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::site_host(data));
