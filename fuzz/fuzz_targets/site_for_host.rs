//! See `fuzz/checks.rs`: `checks::site_for_host`.
//!
//! Run: `cargo +nightly fuzz run site_for_host`
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::site_for_host(data));
