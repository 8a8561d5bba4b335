//! See `fuzz/checks.rs`: `checks::head_scrub`.
//!
//! Run: `cargo +nightly fuzz run head_scrub`
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::head_scrub(data));
