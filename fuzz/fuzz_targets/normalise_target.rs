//! Normalise arbitrary bytes as a request-target and check the normal form. See `fuzz/checks.rs`.
//!
//! Run: `cargo +nightly fuzz run normalise_target`
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::normalise_target(data));
