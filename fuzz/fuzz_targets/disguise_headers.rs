//! See `fuzz/checks.rs`: `checks::disguise_headers`.
//!
//! Run: `cargo +nightly fuzz run disguise_headers`
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::disguise_headers(data));
